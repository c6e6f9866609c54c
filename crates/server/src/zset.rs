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

use std::ops::Bound;

use orrery::api::MAX_KEY_LEN;
use orrery::wormhole::Wormhole;

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

/// One sorted set; see the [module docs](self).
pub(crate) struct ZSet {
    by_member: Wormhole,
    by_score: Wormhole,
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

fn take(it: impl Iterator<Item = (Vec<u8>, f64)>, limit: Limit) -> Vec<(Vec<u8>, f64)> {
    let it = it.skip(limit.offset);
    match limit.count {
        Some(n) => it.take(n).collect(),
        None => it.collect(),
    }
}

fn successor(k: [u8; 8]) -> Option<[u8; 8]> {
    u64::from_be_bytes(k).checked_add(1).map(u64::to_be_bytes)
}

impl ZSet {
    /// An empty set, or `None` without memory for it.
    pub(crate) fn new() -> Option<ZSet> {
        Some(ZSet {
            by_member: Wormhole::try_new().ok()?,
            by_score: Wormhole::try_new().ok()?,
        })
    }

    /// Number of members.
    pub(crate) fn len(&self) -> usize {
        self.by_member.len()
    }

    /// The member's score.
    pub(crate) fn score(&self, member: &[u8]) -> Option<f64> {
        self.by_member.get_with(member, key_score)
    }

    fn score_entry(score: f64, member: &[u8]) -> Vec<u8> {
        let mut k = Vec::with_capacity(8 + member.len());
        k.extend_from_slice(&score_key(score));
        k.extend_from_slice(member);
        k
    }

    /// Sets the member's score; `Err` when out of memory (the set is then unchanged).
    pub(crate) fn insert(&self, member: &[u8], score: f64) -> Result<(), orrery::Error> {
        let old = self.score(member);
        if old.is_some_and(|o| score_key(o) == score_key(score)) {
            return Ok(());
        }
        self.by_score
            .insert(&Self::score_entry(score, member), b"")?;
        if let Err(e) = self.by_member.insert(member, &score_key(score)) {
            self.by_score.remove(&Self::score_entry(score, member));
            return Err(e);
        }
        if let Some(o) = old {
            self.by_score.remove(&Self::score_entry(o, member));
        }
        Ok(())
    }

    /// Removes the member; whether it was present.
    pub(crate) fn remove(&self, member: &[u8]) -> bool {
        let Some(old) = self.score(member) else {
            return false;
        };
        self.by_member.remove(member);
        self.by_score.remove(&Self::score_entry(old, member));
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
        Some((lo, hi))
    }

    fn valid(lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
        match (lo, hi) {
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
        let Some((lo, hi)) = Self::score_bounds(min, max) else {
            return Vec::new();
        };
        if !Self::valid(&lo, &hi) {
            return Vec::new();
        }
        let it = self.by_score.range::<Vec<u8>, _>((lo, hi));
        let map = |e: orrery::Entry| (e.key()[8..].to_vec(), key_score(e.key()));
        if rev {
            take(it.rev().map(map), limit)
        } else {
            take(it.map(map), limit)
        }
    }

    /// Number of members with scores in the range.
    pub(crate) fn count_by_score(&self, min: ScoreBound, max: ScoreBound) -> usize {
        match Self::score_bounds(min, max) {
            Some((lo, hi)) if Self::valid(&lo, &hi) => {
                self.by_score.range::<Vec<u8>, _>((lo, hi)).count()
            }
            _ => 0,
        }
    }

    /// Members in `[min, max]` by member order, ascending or descending.
    pub(crate) fn range_by_lex(
        &self,
        min: Bound<Vec<u8>>,
        max: Bound<Vec<u8>>,
        rev: bool,
        limit: Limit,
    ) -> Vec<(Vec<u8>, f64)> {
        if !Self::valid(&min, &max) {
            return Vec::new();
        }
        let it = self.by_member.range::<Vec<u8>, _>((min, max));
        let map = |e: orrery::Entry| (e.key().to_vec(), key_score(e.value()));
        if rev {
            take(it.rev().map(map), limit)
        } else {
            take(it.map(map), limit)
        }
    }

    /// Number of members in a lexicographic range.
    pub(crate) fn count_by_lex(&self, min: Bound<Vec<u8>>, max: Bound<Vec<u8>>) -> usize {
        if !Self::valid(&min, &max) {
            return 0;
        }
        self.by_member.range::<Vec<u8>, _>((min, max)).count()
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
        let it = self.by_score.iter();
        let map = |e: orrery::Entry| (e.key()[8..].to_vec(), key_score(e.key()));
        if rev {
            take(it.rev().map(map), limit)
        } else {
            take(it.map(map), limit)
        }
    }

    /// The member's rank (0 for the lowest score), counting from the end with `rev`.
    pub(crate) fn rank(&self, member: &[u8], rev: bool) -> Option<usize> {
        let score = self.score(member)?;
        let key = Self::score_entry(score, member);
        let below = self.by_score.range::<Vec<u8>, _>(..key).count();
        Some(if rev { self.len() - 1 - below } else { below })
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
        let z = ZSet::new().unwrap();
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
}
