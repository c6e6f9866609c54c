//! A sorted set: two ordered Orrery indexes (Wormholes), the set-up of the Cuckoo Trie
//! paper's §6.8 where the sorted set's ordered structure is the index itself.
//!
//! - `by_member`: member → score (8 bytes, the order-preserving encoding below), which
//!   answers `ZSCORE` and the lexicographic ranges (`BYLEX`, where Redis assumes equal
//!   scores, so member order is the set's order);
//! - `by_score`: score (8 bytes) ++ member → empty, whose key order is the set's order
//!   (score, then member), which answers score and rank ranges in both directions.
//!
//! A set is reached through its key's stripe (`store`), which serialises its writers and
//! its readers, so the two indexes always agree when observed.

use std::ops::{Bound, ControlFlow};
use std::sync::Mutex;

use orrery::api::{MAX_KEY_LEN, ScanVisitor};
use orrery::reference::LockedBTreeMap;
use orrery::wormhole::Wormhole;
use orrery::{KvIndex, OrderedKvIndex};

/// Longest member (the score prefix takes 8 bytes of the index's key limit).
pub(crate) const MAX_MEMBER: usize = MAX_KEY_LEN - 8;

/// Encodes a score so that byte order is numeric order (`-0.0` is `0.0`).
pub(crate) fn score_key(score: f64) -> [u8; 8] {
    let score = if score == 0.0 { 0.0 } else { score };
    let bits = score.to_bits();
    let ordered = if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    };
    ordered.to_be_bytes()
}

/// Decodes [`score_key`].
pub(crate) fn key_score(key: &[u8]) -> f64 {
    let ordered = u64::from_be_bytes(key[..8].try_into().expect("score keys have 8 bytes"));
    let bits = if ordered >> 63 == 1 {
        ordered & !(1 << 63)
    } else {
        !ordered
    };
    f64::from_bits(bits)
}

/// One end of a score range.
pub(crate) type ScoreBound = Bound<f64>;

/// A range of keys of one of the set's indexes.
type KeyRange = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// Members at which a set moves from the small representation to Wormholes.
pub(crate) const PROMOTE_AT: usize = 128;

/// An ordered index a set can live in, with the descending walk the trait lacks.
trait SetIndex: OrderedKvIndex {
    /// Visits the pairs of `[lo, hi]` in descending key order until `f` breaks.
    fn rev_range(&self, lo: Bound<&[u8]>, hi: Bound<&[u8]>, f: &mut ScanVisitor<'_>);
}

impl SetIndex for Wormhole {
    fn rev_range(&self, lo: Bound<&[u8]>, hi: Bound<&[u8]>, f: &mut ScanVisitor<'_>) {
        for e in self.range::<[u8], _>((lo, hi)).rev() {
            if f(e.key(), e.value()).is_break() {
                return;
            }
        }
    }
}

impl SetIndex for LockedBTreeMap {
    fn rev_range(&self, lo: Bound<&[u8]>, hi: Bound<&[u8]>, f: &mut ScanVisitor<'_>) {
        // Small sets only (at most PROMOTE_AT members): collect, then walk backwards.
        let mut all = Vec::new();
        self.scan_range(lo, hi, &mut |k, v| {
            all.push((k.to_vec(), v.to_vec()));
            ControlFlow::Continue(())
        });
        for (k, v) in all.iter().rev() {
            if f(k, v).is_break() {
                return;
            }
        }
    }
}

/// The two indexes of a set.
struct Indexes {
    by_member: Box<dyn SetIndex>,
    by_score: Box<dyn SetIndex>,
    large: bool,
}

/// One sorted set; see the [module docs](self). Small sets (up to [`PROMOTE_AT`]
/// members) live in two of Orrery's reference B-trees, whose footprint is a few hundred
/// bytes, and move to two Wormholes (each reserving megabytes up front) when they grow;
/// as Redis keeps small sets in a listpack.
pub(crate) struct ZSet {
    // Every access holds the key's stripe, so this lock is never contended; it exists so
    // that a promotion can swap the indexes behind a shared `Arc<ZSet>`.
    inner: Mutex<Indexes>,
}

/// Which pairs a range asks for: skip `offset`, then at most `count` (`None`: all).
#[derive(Clone, Copy)]
pub(crate) struct Limit {
    pub(crate) offset: usize,
    pub(crate) count: Option<usize>,
}

impl Limit {
    /// Everything.
    pub(crate) const ALL: Limit = Limit {
        offset: 0,
        count: None,
    };
}

fn successor(k: [u8; 8]) -> Option<[u8; 8]> {
    u64::from_be_bytes(k).checked_add(1).map(u64::to_be_bytes)
}

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// Walks `[lo, hi]` of `index` in either direction, applying `limit`, mapping each pair.
fn walk(
    index: &dyn SetIndex,
    range: &KeyRange,
    rev: bool,
    limit: Limit,
    map: impl Fn(&[u8], &[u8]) -> (Vec<u8>, f64),
) -> Vec<(Vec<u8>, f64)> {
    let mut out = Vec::new();
    if limit.count == Some(0) {
        return out;
    }
    let mut skip = limit.offset;
    let mut f = |k: &[u8], v: &[u8]| {
        if skip > 0 {
            skip -= 1;
            return ControlFlow::Continue(());
        }
        out.push(map(k, v));
        if limit.count.is_some_and(|c| out.len() >= c) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    let (lo, hi) = (as_ref(&range.0), as_ref(&range.1));
    if rev {
        index.rev_range(lo, hi, &mut f);
    } else {
        index.scan_range(lo, hi, &mut f);
    }
    out
}

fn count(index: &dyn SetIndex, range: &KeyRange) -> usize {
    let mut n = 0;
    index.scan_range(as_ref(&range.0), as_ref(&range.1), &mut |_, _| {
        n += 1;
        ControlFlow::Continue(())
    });
    n
}

fn by_score_pair(k: &[u8], _: &[u8]) -> (Vec<u8>, f64) {
    (k[8..].to_vec(), key_score(k))
}

fn by_member_pair(k: &[u8], v: &[u8]) -> (Vec<u8>, f64) {
    (k.to_vec(), key_score(v))
}

impl ZSet {
    /// An empty (small) set.
    pub(crate) fn new() -> ZSet {
        ZSet {
            inner: Mutex::new(Indexes {
                by_member: Box::new(LockedBTreeMap::new()),
                by_score: Box::new(LockedBTreeMap::new()),
                large: false,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Indexes> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Number of members.
    pub(crate) fn len(&self) -> usize {
        self.lock().by_member.len()
    }

    /// The member's score.
    pub(crate) fn score(&self, member: &[u8]) -> Option<f64> {
        let mut out = None;
        self.lock()
            .by_member
            .get_with(member, &mut |v| out = Some(key_score(v)));
        out
    }

    fn score_entry(score: f64, member: &[u8]) -> Vec<u8> {
        let mut k = Vec::with_capacity(8 + member.len());
        k.extend_from_slice(&score_key(score));
        k.extend_from_slice(member);
        k
    }

    /// Moves a small set that has reached [`PROMOTE_AT`] members into two Wormholes.
    fn promote(ix: &mut Indexes) -> Result<(), orrery::Error> {
        if ix.large || ix.by_member.len() < PROMOTE_AT {
            return Ok(());
        }
        let by_member = Wormhole::try_new()?;
        let by_score = Wormhole::try_new()?;
        let mut res = Ok(());
        ix.by_member.scan(Bound::Unbounded, &mut |k, v| {
            res = by_member.insert(k, v).map(drop);
            if res.is_err() {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        res.clone()?;
        ix.by_score.scan(Bound::Unbounded, &mut |k, v| {
            res = by_score.insert(k, v).map(drop);
            if res.is_err() {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        res?;
        *ix = Indexes {
            by_member: Box::new(by_member),
            by_score: Box::new(by_score),
            large: true,
        };
        Ok(())
    }

    /// Sets the member's score; `Err` when out of memory (the set is then unchanged).
    #[cfg(test)]
    pub(crate) fn insert(&self, member: &[u8], score: f64) -> Result<(), orrery::Error> {
        self.insert_known(member, score, self.score(member))
    }

    /// [`ZSet::insert`] for a caller that has just read the member's score `old` (under
    /// the key's stripe, so it is still current): one lookup less.
    pub(crate) fn insert_known(
        &self,
        member: &[u8],
        score: f64,
        old: Option<f64>,
    ) -> Result<(), orrery::Error> {
        if old.is_some_and(|o| score_key(o) == score_key(score)) {
            return Ok(());
        }
        let mut ix = self.lock();
        if old.is_none() {
            Self::promote(&mut ix)?;
        }
        ix.by_score.insert(&Self::score_entry(score, member), b"")?;
        if let Err(e) = ix.by_member.insert(member, &score_key(score)) {
            ix.by_score.remove(&Self::score_entry(score, member));
            return Err(e);
        }
        if let Some(o) = old {
            ix.by_score.remove(&Self::score_entry(o, member));
        }
        Ok(())
    }

    /// Up to `n` members after `after` (from the first when `None`) in member order, with
    /// their scores; the set's lock is held for this chunk only.
    pub(crate) fn members_after(&self, after: Option<&[u8]>, n: usize) -> Vec<(Vec<u8>, f64)> {
        let mut out = Vec::new();
        let start = after.map_or(Bound::Unbounded, Bound::Excluded);
        self.lock().by_member.scan(start, &mut |k, v| {
            out.push((k.to_vec(), key_score(v)));
            if out.len() >= n {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        out
    }

    /// Removes the member; whether it was present.
    pub(crate) fn remove(&self, member: &[u8]) -> bool {
        let Some(old) = self.score(member) else {
            return false;
        };
        let ix = self.lock();
        ix.by_member.remove(member);
        ix.by_score.remove(&Self::score_entry(old, member));
        true
    }

    fn score_bounds(min: ScoreBound, max: ScoreBound) -> Option<KeyRange> {
        let lo = match min {
            Bound::Unbounded => Bound::Unbounded,
            Bound::Included(s) => Bound::Included(score_key(s).to_vec()),
            Bound::Excluded(s) => Bound::Included(successor(score_key(s))?.to_vec()),
        };
        let hi = match max {
            Bound::Unbounded => Bound::Unbounded,
            Bound::Included(s) => match successor(score_key(s)) {
                Some(k) => Bound::Excluded(k.to_vec()),
                None => Bound::Unbounded,
            },
            Bound::Excluded(s) => Bound::Excluded(score_key(s).to_vec()),
        };
        Some((lo, hi)).filter(Self::valid)
    }

    fn valid(range: &KeyRange) -> bool {
        match range {
            (Bound::Included(a), Bound::Included(b)) => a <= b,
            (Bound::Included(a) | Bound::Excluded(a), Bound::Excluded(b))
            | (Bound::Excluded(a), Bound::Included(b)) => a < b,
            _ => true,
        }
    }

    /// Members with scores in `[min, max]` (bounds as given), ascending or descending.
    pub(crate) fn range_by_score(
        &self,
        min: ScoreBound,
        max: ScoreBound,
        rev: bool,
        limit: Limit,
    ) -> Vec<(Vec<u8>, f64)> {
        match Self::score_bounds(min, max) {
            Some(r) => walk(&*self.lock().by_score, &r, rev, limit, by_score_pair),
            None => Vec::new(),
        }
    }

    /// Number of members with scores in the range.
    pub(crate) fn count_by_score(&self, min: ScoreBound, max: ScoreBound) -> usize {
        Self::score_bounds(min, max).map_or(0, |r| count(&*self.lock().by_score, &r))
    }

    /// Members in `[min, max]` by member order, ascending or descending.
    pub(crate) fn range_by_lex(
        &self,
        min: Bound<Vec<u8>>,
        max: Bound<Vec<u8>>,
        rev: bool,
        limit: Limit,
    ) -> Vec<(Vec<u8>, f64)> {
        let r = (min, max);
        if !Self::valid(&r) {
            return Vec::new();
        }
        walk(&*self.lock().by_member, &r, rev, limit, by_member_pair)
    }

    /// Number of members in a lexicographic range.
    pub(crate) fn count_by_lex(&self, min: Bound<Vec<u8>>, max: Bound<Vec<u8>>) -> usize {
        let r = (min, max);
        if !Self::valid(&r) {
            return 0;
        }
        count(&*self.lock().by_member, &r)
    }

    /// Members at ranks `start..=stop` (already clamped to the set), ascending or descending.
    pub(crate) fn range_by_rank(
        &self,
        start: usize,
        stop: usize,
        rev: bool,
    ) -> Vec<(Vec<u8>, f64)> {
        let limit = Limit {
            offset: start,
            count: Some(stop + 1 - start),
        };
        let all = (Bound::Unbounded, Bound::Unbounded);
        walk(&*self.lock().by_score, &all, rev, limit, by_score_pair)
    }

    /// The member's rank (0 for the lowest score), counting from the end with `rev`.
    pub(crate) fn rank(&self, member: &[u8], rev: bool) -> Option<usize> {
        let score = self.score(member)?;
        let below_key = (
            Bound::Unbounded,
            Bound::Excluded(Self::score_entry(score, member)),
        );
        let ix = self.lock();
        let below = count(&*ix.by_score, &below_key);
        Some(if rev {
            ix.by_member.len() - 1 - below
        } else {
            below
        })
    }

    /// Whether the set has moved to Wormholes.
    #[cfg(test)]
    fn is_large(&self) -> bool {
        self.lock().large
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn score_keys_sort_numerically() {
        let xs = [
            f64::NEG_INFINITY,
            -1e300,
            -1.5,
            -0.0,
            0.0,
            1e-300,
            1.5,
            2.0,
            f64::INFINITY,
        ];
        for w in xs.windows(2) {
            assert!(score_key(w[0]) <= score_key(w[1]), "{} {}", w[0], w[1]);
        }
        for x in xs {
            assert_eq!(key_score(&score_key(x)), if x == 0.0 { 0.0 } else { x });
        }
    }

    #[test]
    fn ranges_ranks_and_updates() {
        let z = ZSet::new();
        for (m, s) in [("a", 1.0), ("b", 2.0), ("c", 2.0), ("d", 3.0)] {
            z.insert(m.as_bytes(), s).unwrap();
        }
        z.insert(b"a", 4.0).unwrap();
        assert_eq!(z.len(), 4);
        let names = |v: Vec<(Vec<u8>, f64)>| {
            v.into_iter()
                .map(|(m, _)| String::from_utf8(m).unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(z.range_by_rank(0, 3, false)), ["b", "c", "d", "a"]);
        assert_eq!(names(z.range_by_rank(1, 2, true)), ["d", "c"]);
        let r = z.range_by_score(Bound::Excluded(2.0), Bound::Unbounded, false, Limit::ALL);
        assert_eq!(names(r), ["d", "a"]);
        let r = z.range_by_score(Bound::Included(2.0), Bound::Included(3.0), true, Limit::ALL);
        assert_eq!(names(r), ["d", "c", "b"]);
        assert_eq!(
            z.count_by_score(Bound::Included(5.0), Bound::Included(1.0)),
            0
        );
        assert_eq!(z.rank(b"a", false), Some(3));
        assert_eq!(z.rank(b"a", true), Some(0));
        assert!(z.remove(b"c"));
        assert!(!z.remove(b"c"));
        let lim = Limit {
            offset: 1,
            count: Some(1),
        };
        let r = z.range_by_lex(Bound::Included(b"a".to_vec()), Bound::Unbounded, false, lim);
        assert_eq!(names(r), ["b"]);
        assert_eq!(
            z.count_by_lex(
                Bound::Excluded(b"a".to_vec()),
                Bound::Included(b"d".to_vec())
            ),
            2
        );
    }

    #[test]
    fn promotion_keeps_every_member_and_both_orders() {
        let z = ZSet::new();
        let n = PROMOTE_AT * 3;
        for i in 0..n {
            z.insert(format!("m{i:04}").as_bytes(), -(i as f64))
                .unwrap();
            assert_eq!(z.is_large(), i >= PROMOTE_AT, "after {} members", i + 1);
        }
        assert_eq!(z.len(), n);
        let asc = z.range_by_rank(0, n - 1, false);
        assert_eq!(asc.len(), n);
        assert_eq!(
            asc[0],
            (format!("m{:04}", n - 1).into_bytes(), -((n - 1) as f64))
        );
        let desc = z.range_by_score(Bound::Unbounded, Bound::Unbounded, true, Limit::ALL);
        assert_eq!(desc.iter().rev().cloned().collect::<Vec<_>>(), asc);
        assert_eq!(z.rank(b"m0000", false), Some(n - 1));
        assert_eq!(z.count_by_lex(Bound::Unbounded, Bound::Unbounded), n);
        let lim = Limit {
            offset: 2,
            count: Some(3),
        };
        let lex = z.range_by_lex(Bound::Unbounded, Bound::Unbounded, true, lim);
        let names: Vec<_> = lex.into_iter().map(|(m, _)| m).collect();
        let want: Vec<Vec<u8>> = (0..3)
            .map(|i| format!("m{:04}", n - 3 - i).into_bytes())
            .collect();
        assert_eq!(names, want);
    }
}
