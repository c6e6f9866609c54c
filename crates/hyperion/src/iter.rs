//! Ordered iteration: a double-ended, seekable [`Iter`] (the house `BatchIter`), fed by
//! ordered walks over the first-byte tries.
//!
//! A refill walks the tries in key order from its bound (ascending, or descending from
//! the back), each trie under its arena's lock (see "Locks"), and copies up to [`BATCH`]
//! pairs into the iterator's reusable [`PairBatch`]. No lock is held between refills, so a user may
//! keep an `Iter` while writing to the index. With key pre-processing the bounds are
//! transformed into the trie's key space and keys decoded back as they are copied.
//!
//! # Cost of a refill
//!
//! A refill does not keep a cursor from the previous one (none could stay valid: writers
//! of the arena run between refills, and they shift container bytes in place). It seeks
//! instead: at each container level the bound falls in, [`crate::node`]'s walk picks the
//! split part holding the bound's next byte, enters the part through its container jump
//! table, skips T-Node groups by their jump successors and parses only the S-Nodes of the
//! bound's T-Node before the bound's; then it reads nodes in place, one after the other.
//! A refill therefore costs the bytes it copies plus one seek per level (at most the
//! T-Nodes between two jump-table entries and the S-Nodes of one T-Node), not the size of
//! the containers before the bound. Going down, a level lists the offsets of its T-Node
//! groups up to the bound's (by jump successors) and decodes one group at a time.
//!
//! [`Hyperion::scan`], [`Hyperion::scan_rev`] and [`Hyperion::scan_prefix`] use the same
//! copies with growing batches (from [`BATCH`] to [`SCAN_BATCH`] pairs), so a long scan
//! seeks once per 1,024 pairs; `scan_prefix` stops its copies at the prefix's end;
//! [`Hyperion::remove_range`] walks with an [`Iter`] and removes key by key.
//!
//! # Cost of a copied pair
//!
//! A copy walks each trie through [`walk_trie`], which hands [`crate::node::walk`] (generic
//! over its visitor) the copy's closure, so the bound check and the append are compiled
//! into the walk's loop rather than called through a `dyn` pointer per key. Scans append
//! to a [`ScanBatch`], whose short keys and values (up to 32 bytes) are copied by
//! inlined 8-byte moves instead of a `memmove` call each; the iterators keep the house
//! [`PairBatch`].
//!
//! # Locks
//!
//! A copy holds one arena's lock ([`crate::arena::Arena::scan_lock`]: shared, or
//! exclusive when a writer kept the shared side closed, so that writers cannot starve
//! it) while it walks one trie and copies into a batch; the user's visitor or loop body
//! runs with no lock held. A copy locks only the arena of a trie it walks: empty tries
//! and an absent empty key are skipped without a lock, and a bound `Excluded([t])` ends
//! before trie `t`, whose arena is then not locked.

use std::ops::{Bound, ControlFlow, RangeBounds};

use orrery_core::batch::{BatchIter, BatchSource, Entry, PairBatch};

use crate::arena::ArenaInner;
use crate::{Hyperion, node, prep};

/// Pairs copied per refill of an [`Iter`].
pub const BATCH: usize = 64;

/// Most pairs copied at a time by [`Hyperion::scan`], [`Hyperion::scan_rev`] and
/// [`Hyperion::scan_prefix`] (each trie's pairs under its arena's lock). Their copies
/// start at [`BATCH`] pairs and double up to this: a long scan seeks from the root once
/// per 1,024 pairs, a short one copies at most about twice what it visits.
pub const SCAN_BATCH: usize = 1024;

impl Hyperion {
    /// An iterator over all pairs in key order (ascending; `.rev()` for descending).
    pub fn iter(&self) -> Iter<'_> {
        BatchIter::all(self)
    }

    /// An iterator over the pairs whose keys fall in `range`, in key order (ascending;
    /// `.rev()` for descending), as `BTreeMap::range`. An empty or inverted range yields
    /// nothing (where `BTreeMap::range` panics).
    pub fn range<K, R>(&self, range: R) -> Iter<'_>
    where
        K: AsRef<[u8]> + ?Sized,
        R: RangeBounds<K>,
    {
        BatchIter::range(self, range)
    }

    fn to_trie(&self, b: Bound<&[u8]>) -> Bound<Vec<u8>> {
        b.map(|k| self.trie_key(k).to_vec())
    }

    /// The user's key for a trie key (decoding pre-processed keys).
    #[inline]
    fn user_key<'a>(&self, k: &'a [u8], scratch: &'a mut Vec<u8>) -> &'a [u8] {
        if self.config.preprocess {
            if prep::decode(k, scratch).is_none() {
                debug_assert!(false, "a stored key is a pre-processed key");
            }
            scratch
        } else {
            k
        }
    }

    /// Copies into `out`, ascending, up to `max` pairs from `start` on, stopping before
    /// the first key past `end`. Returns the bound the next pairs start at (`None`: no
    /// pair follows, or `end` was reached). Each trie is walked under its arena's lock
    /// (`Arena::scan_lock`); no user code runs under it.
    pub(crate) fn copy_front<S: Sink>(
        &self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        max: usize,
        out: &mut S,
    ) -> Option<Bound<Vec<u8>>> {
        let bound = self.to_trie(start);
        let bound = bound.as_ref().map(Vec::as_slice);
        let end = self.to_trie(end);
        let end = end.as_ref().map(Vec::as_slice);
        let before_end = |k: &[u8]| match end {
            Bound::Unbounded => true,
            Bound::Included(e) => k <= e,
            Bound::Excluded(e) => k < e,
        };
        let mut scratch = Vec::new();
        let mut last: Option<Vec<u8>> = None;
        let mut count = 0;
        let first = match bound {
            Bound::Unbounded | Bound::Included([]) => {
                if before_end(&[])
                    && !self.arenas[0].empty_is_absent()
                    && let Some(v) = self.arenas[0].scan_lock().empty()
                {
                    out.push(&[], v);
                    count += 1;
                }
                0
            }
            Bound::Included(k) | Bound::Excluded(k) => k.first().copied().unwrap_or(0),
        };
        // The last trie that may hold keys before `end`. (An end `Excluded([t])` ends
        // before every key of trie `t`: its arena is not locked just to find that out.)
        let top = match end {
            Bound::Unbounded => 255,
            Bound::Excluded(&[t]) => t.checked_sub(1)?,
            Bound::Included(e) | Bound::Excluded(e) => match e.first() {
                Some(&t) => t,
                None => return None,
            },
        };
        let mut buf = Vec::new();
        let mut past_end = false;
        let unbounded = matches!(end, Bound::Unbounded);
        for b in first..=top {
            let arena = &self.arenas[b as usize % self.arenas.len()];
            if arena.trie_is_empty(b) {
                continue;
            }
            let a = arena.scan_lock();
            let flow = walk_trie(&a, b, bound, false, &mut buf, &mut |k: &[u8], v: &[u8]| {
                if !unbounded && !before_end(k) {
                    past_end = true;
                    return ControlFlow::Break(());
                }
                out.push(self.user_key(k, &mut scratch), v);
                count += 1;
                if count >= max {
                    last = Some(k.to_vec());
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            });
            drop(a);
            if past_end {
                return None;
            }
            if flow.is_break() {
                let last = last.expect("set on break");
                let mut s = Vec::new();
                return Some(Bound::Excluded(self.user_key(&last, &mut s).to_vec()));
            }
        }
        None
    }

    /// Copies into `out`, ascending, the up to `max` pairs before `end` (the last ones).
    /// Returns the bound below which the previous pairs lie (`None`: none). Each trie is
    /// walked under its arena's lock (`Arena::scan_lock`); no user code runs under it.
    pub(crate) fn copy_back<S: Sink>(
        &self,
        end: Bound<&[u8]>,
        max: usize,
        out: &mut S,
    ) -> Option<Bound<Vec<u8>>> {
        let bound = self.to_trie(end);
        let bound = bound.as_ref().map(Vec::as_slice);
        // Pairs are found descending: collected in a batch of their own, then copied to
        // `out` ascending.
        let mut desc = ScanBatch::default();
        // The last trie that may hold keys before the bound (`Excluded([t])`: trie `t`
        // holds none, and its arena is not locked).
        let top = match bound {
            Bound::Unbounded => Some(255u8),
            Bound::Excluded(&[t]) => t.checked_sub(1),
            Bound::Included(k) | Bound::Excluded(k) => k.first().copied(),
        };
        let mut buf = Vec::new();
        let mut full = false;
        if let Some(top) = top {
            for b in (0..=top).rev() {
                let arena = &self.arenas[b as usize % self.arenas.len()];
                if arena.trie_is_empty(b) {
                    continue;
                }
                let a = arena.scan_lock();
                let flow = walk_trie(&a, b, bound, true, &mut buf, &mut |k: &[u8], v: &[u8]| {
                    desc.push(k, v);
                    if desc.len() >= max {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    }
                });
                drop(a);
                if flow.is_break() {
                    full = true;
                    break;
                }
            }
        }
        let empty_ok = !matches!(bound, Bound::Excluded([]));
        if !full
            && empty_ok
            && !self.arenas[0].empty_is_absent()
            && let Some(v) = self.arenas[0].scan_lock().empty()
        {
            desc.push(&[], v);
        }
        let mut scratch = Vec::new();
        for i in (0..desc.len()).rev() {
            let (k, v) = desc.pair(i);
            out.push(self.user_key(k, &mut scratch), v);
        }
        if full {
            let (k, _) = desc.pair(desc.len() - 1);
            return Some(Bound::Excluded(self.user_key(k, &mut scratch).to_vec()));
        }
        None
    }
}

/// Visits the keys of trie `b` of arena `a` (its root value, key `[b]`, included) that
/// pass `bound`, ascending or descending: [`crate::arena::ArenaInner::walk`] with the
/// visitor's type known, so a copy's closure is compiled into [`node::walk`]'s loop
/// instead of being called through a `dyn` pointer per key.
fn walk_trie<V>(
    a: &ArenaInner,
    b: u8,
    bound: Bound<&[u8]>,
    desc: bool,
    buf: &mut Vec<u8>,
    visit: &mut V,
) -> ControlFlow<()>
where
    V: FnMut(&[u8], &[u8]) -> ControlFlow<()>,
{
    let key = [b];
    let ok = |k: &[u8]| match (bound, desc) {
        (Bound::Unbounded, _) => true,
        (Bound::Included(x), false) => k >= x,
        (Bound::Excluded(x), false) => k > x,
        (Bound::Included(x), true) => k <= x,
        (Bound::Excluded(x), true) => k < x,
    };
    let val = a.get(&key).filter(|_| ok(&key));
    if !desc && let Some(v) = val {
        visit(&key, v)?;
    }
    if let Some(hp) = a.roots[b as usize].hp {
        buf.clear();
        buf.push(b);
        node::walk(&a.mm, hp, buf, bound, desc, visit)?;
    }
    if desc && let Some(v) = val {
        visit(&key, v)?;
    }
    ControlFlow::Continue(())
}

/// Where a copy puts its pairs: the iterator's [`PairBatch`] or a scan's [`ScanBatch`].
pub(crate) trait Sink {
    /// Appends a copy of a pair.
    fn push(&mut self, key: &[u8], value: &[u8]);
}

impl Sink for PairBatch {
    #[inline]
    fn push(&mut self, key: &[u8], value: &[u8]) {
        PairBatch::push(self, key, value);
    }
}

/// The pairs copied by one refill of [`Hyperion::scan`] and its kin: keys and values
/// appended to one byte buffer, two end offsets per pair, both reused across refills.
///
/// [`PairBatch`] (the iterators' batch) has the same layout; this one copies short keys
/// and values by 8-byte words instead of a `memmove` call per key and per value, which
/// took about a sixth of a full scan's time (`docs/results/hyperion.md`, scan work).
#[derive(Default)]
pub(crate) struct ScanBatch {
    bytes: Vec<u8>,
    /// Per pair: the end of its key (where its value starts), the end of its value (where
    /// the next key starts).
    ends: Vec<(usize, usize)>,
}

impl ScanBatch {
    /// Removes every pair, keeping the buffers.
    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    /// Number of pairs.
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// The `i`-th pair (`i < len`).
    #[inline]
    pub(crate) fn pair(&self, i: usize) -> (&[u8], &[u8]) {
        let start = if i == 0 { 0 } else { self.ends[i - 1].1 };
        let (k, v) = self.ends[i];
        (&self.bytes[start..k], &self.bytes[k..v])
    }
}

impl Sink for ScanBatch {
    #[inline(always)]
    fn push(&mut self, key: &[u8], value: &[u8]) {
        self.bytes.reserve(key.len() + value.len());
        append(&mut self.bytes, key);
        let k = self.bytes.len();
        append(&mut self.bytes, value);
        self.ends.push((k, self.bytes.len()));
    }
}

/// Appends `s` to `v` by inlined moves when it is at most 32 bytes long (longer: by
/// `extend_from_slice`): under 8 bytes one byte at a time; else 8-byte words, the last one
/// (when the length is not a multiple of 8) being `s`'s last 8 bytes, written over the
/// previous word's tail.
#[inline(always)]
fn append(v: &mut Vec<u8>, s: &[u8]) {
    let n = s.len();
    if n > 32 {
        v.extend_from_slice(s);
        return;
    }
    if n < 8 {
        for &b in s {
            v.push(b);
        }
        return;
    }
    let mut words = s.chunks_exact(8);
    for w in words.by_ref() {
        let w: &[u8; 8] = w.try_into().expect("8-byte chunks");
        v.extend_from_slice(w);
    }
    let rem = words.remainder().len();
    if rem > 0 {
        v.truncate(v.len() - (8 - rem));
        let w: &[u8; 8] = s[n - 8..].try_into().expect("8 bytes");
        v.extend_from_slice(w);
    }
}

/// An iterator over a key range of a [`Hyperion`], in key order from either end: a
/// seekable cursor that copies up to [`BATCH`] pairs at a time into a reusable arena.
///
/// Made by [`Hyperion::iter`] and [`Hyperion::range`]. It implements [`Iterator`] and
/// [`DoubleEndedIterator`] (`.rev()` yields descending keys; both ends may be used, and they
/// stop where they meet). Items are [`Entry`]s, handles into the batch; [`Iter::next_pair`]
/// and [`Iter::next_back_pair`] lend the pair as slices instead. No lock is held between
/// calls; under concurrent writers it is not a snapshot ([`orrery_core::api`]).
///
/// ```
/// use orrery_hyperion::Hyperion;
/// use std::ops::Bound;
/// let h = Hyperion::new();
/// for i in 0u32..1000 {
///     h.insert(&i.to_be_bytes(), b"v").unwrap();
/// }
/// let mut it = h.iter();
/// assert_eq!(it.next_pair().map(|(k, _)| k.to_vec()), Some(0u32.to_be_bytes().to_vec()));
/// it.seek(Bound::Excluded(&500u32.to_be_bytes()));
/// assert_eq!(it.next().unwrap().key(), 501u32.to_be_bytes());
/// assert_eq!(it.next_back().unwrap().key(), 999u32.to_be_bytes());
/// assert_eq!(it.count(), 497);
/// ```
pub type Iter<'a> = BatchIter<&'a Hyperion>;

/// [`Iter`]'s source: ordered walks of up to [`BATCH`] pairs per batch.
impl BatchSource for Hyperion {
    fn fill_front(&self, start: Bound<&[u8]>, out: &mut PairBatch) -> Option<Bound<Vec<u8>>> {
        self.copy_front(start, Bound::Unbounded, BATCH, out)
    }

    fn fill_back(&self, end: Bound<&[u8]>, out: &mut PairBatch) -> Option<Bound<Vec<u8>>> {
        self.copy_back(end, BATCH, out)
    }
}

impl<'a> IntoIterator for &'a Hyperion {
    type Item = Entry;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::ops::{Bound, ControlFlow};

    use crate::{Config, Hyperion};

    type Map = BTreeMap<Vec<u8>, Vec<u8>>;

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    fn owned(b: Bound<&Vec<u8>>) -> Bound<Vec<u8>> {
        b.map(Clone::clone)
    }

    /// A scan visitor that collects pairs into `got` until it holds `n`.
    fn take(
        got: &mut Vec<(Vec<u8>, Vec<u8>)>,
        n: usize,
    ) -> impl FnMut(&[u8], &[u8]) -> ControlFlow<()> + '_ {
        move |k, v| {
            got.push((k.to_vec(), v.to_vec()));
            if got.len() == n {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        }
    }

    /// Compares scans, reverse scans and iterators from `lo`/`hi` with the map's, up to
    /// `n` pairs each way.
    fn check_from(h: &Hyperion, m: &Map, lo: Bound<&Vec<u8>>, hi: Bound<&Vec<u8>>, n: usize) {
        let mut got = Vec::new();
        h.scan(lo.map(Vec::as_slice), &mut take(&mut got, n));
        let want: Vec<_> = m
            .range((owned(lo), Bound::Unbounded))
            .take(n)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert_eq!(got, want, "scan from {lo:?}");
        got.clear();
        h.scan_rev(hi.map(Vec::as_slice), &mut take(&mut got, n));
        let want: Vec<_> = m
            .range((Bound::Unbounded, owned(hi)))
            .rev()
            .take(n)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert_eq!(got, want, "scan_rev from {hi:?}");
        let inverted = match (lo, hi) {
            (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
                a > b || (a == b && !matches!((lo, hi), (Bound::Included(_), Bound::Included(_))))
            }
            _ => false,
        };
        if inverted {
            assert_eq!(
                h.range::<[u8], _>((lo.map(Vec::as_slice), hi.map(Vec::as_slice)))
                    .count(),
                0
            );
            return;
        }
        let r = (owned(lo), owned(hi));
        let mut it = h.range::<[u8], _>((lo.map(Vec::as_slice), hi.map(Vec::as_slice)));
        let mut mi = m.range(r);
        // Alternate ends.
        for i in 0..2 * n {
            let (g, w) = if i % 3 == 0 {
                (
                    it.next_back_pair().map(|(k, _)| k.to_vec()),
                    mi.next_back().map(|(k, _)| k.clone()),
                )
            } else {
                (
                    it.next_pair().map(|(k, _)| k.to_vec()),
                    mi.next().map(|(k, _)| k.clone()),
                )
            };
            assert_eq!(g, w, "range {lo:?}..{hi:?} step {i}");
            if g.is_none() {
                break;
            }
        }
    }

    /// Scans from many bounds — keys, non-keys, prefixes — in a big split root container
    /// (plus embedded and child containers, path-compressed and out-of-line values) match
    /// a `BTreeMap`, both ways, before and after removing a third of the keys.
    #[test]
    fn scans_from_many_bounds_in_a_split_container() {
        let h = Hyperion::with_config(Config::builder().arenas(1).build().unwrap()).unwrap();
        let mut m = Map::new();
        let mut r = Rng(0x2545_F491_4F6C_DD1D);
        let n = 24_000;
        for i in 0..n {
            let x = r.next();
            let mut k = vec![b'x'];
            match i % 8 {
                // Short keys ending at T-Nodes and S-Nodes.
                0 => k.push(x as u8),
                1 => k.extend_from_slice(&(x as u16).to_be_bytes()),
                // Shared 3-byte prefixes: embedded containers and child containers.
                2 | 3 => {
                    k.extend_from_slice(&[(x >> 8) as u8 & 0x7, (x >> 16) as u8, 0x55]);
                    k.extend_from_slice(&(x as u32).to_be_bytes()[..(x as usize >> 40) % 5]);
                }
                _ => k.extend_from_slice(&(x as u32).to_be_bytes()),
            }
            let v = (i as u64).to_le_bytes()[..(x as usize >> 50) % 9].to_vec();
            let v = if i % 97 == 0 {
                [v.as_slice(), &[7; 20]].concat()
            } else {
                v
            };
            h.insert(&k, &v).unwrap();
            m.insert(k, v);
        }
        {
            let a = h.arenas[0].read();
            let root = a.roots[b'x' as usize].hp.expect("trie x");
            assert!(a.mm.is_chain(root), "the root container was split");
        }
        let all: Vec<_> = h.iter().map(|e| e.into_pair()).collect();
        assert_eq!(
            all,
            m.iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect::<Vec<_>>()
        );
        let rev: Vec<_> = h.iter().rev().map(|e| e.key().to_vec()).collect();
        assert!(rev.iter().eq(m.keys().rev()));
        // Whole scans: many copies of growing batches.
        let mut got = Vec::new();
        h.scan(Bound::Unbounded, &mut |k, v| {
            got.push((k.to_vec(), v.to_vec()));
            ControlFlow::Continue(())
        });
        assert_eq!(got, all);
        got.clear();
        h.scan_rev(Bound::Unbounded, &mut |k, v| {
            got.push((k.to_vec(), v.to_vec()));
            ControlFlow::Continue(())
        });
        got.reverse();
        assert_eq!(got, all);
        for round in 0..2 {
            let keys: Vec<Vec<u8>> = m.keys().cloned().collect();
            for j in 0..300 {
                let x = r.next();
                let mut b = match j % 4 {
                    0 => keys[x as usize % keys.len()].clone(),
                    1 => {
                        let mut k = keys[x as usize % keys.len()].clone();
                        k.truncate(1 + (x >> 32) as usize % k.len());
                        k
                    }
                    2 => {
                        let mut k = keys[x as usize % keys.len()].clone();
                        k.push((x >> 40) as u8);
                        k
                    }
                    _ => (x.to_be_bytes()[..(x >> 60) as usize % 9]).to_vec(),
                };
                if j % 50 == 0 {
                    b = vec![b'x'];
                }
                let c = keys[(x >> 20) as usize % keys.len()].clone();
                let (lo, hi) = if b <= c { (b, c) } else { (c, b) };
                let bounds = [
                    (Bound::Included(&lo), Bound::Included(&hi)),
                    (Bound::Excluded(&lo), Bound::Excluded(&hi)),
                    (Bound::Included(&lo), Bound::Excluded(&lo)),
                    (Bound::Excluded(&hi), Bound::Unbounded),
                    (Bound::Unbounded, Bound::Included(&lo)),
                ];
                let (l, u) = bounds[j % bounds.len()];
                check_from(&h, &m, l, u, 40);
            }
            if round == 0 {
                let keys: Vec<Vec<u8>> = m.keys().cloned().collect();
                for k in keys.iter().step_by(3) {
                    assert!(h.remove(k));
                    m.remove(k);
                }
                // A range removal across parts.
                let lo = vec![b'x', 0x30];
                let hi = vec![b'x', 0x90, 0x10];
                let want = m.range(lo.clone()..hi.clone()).count();
                let got = h.remove_range(Bound::Included(&lo), Bound::Excluded(&hi));
                assert_eq!(got, want);
                m.retain(|k, _| !(k >= &lo && k < &hi));
            }
        }
        // The house iterator checks (ascending, descending, both ends, ranges and seeks
        // at sampled keys) against the full scan, on the big split container.
        orrery_core::testing::fuzz::check_batch_iterators(&h);
        for p in [
            &[b'x', 0x05][..],
            b"x",
            &[b'x', 0xFF],
            &[b'x', 0x05, 0x55],
            b"w",
        ] {
            let mut got = Vec::new();
            h.scan_prefix(p, &mut |k, _| {
                got.push(k.to_vec());
                ControlFlow::Continue(())
            });
            let want: Vec<_> = m.keys().filter(|k| k.starts_with(p)).cloned().collect();
            assert_eq!(got, want, "prefix {p:?}");
        }
    }

    /// A scan batch returns every pair as pushed, for key and value lengths around the
    /// word copy's cases (0–7 bytes, whole words, remainders, over 32 bytes).
    #[test]
    fn scan_batch_round_trips_every_length() {
        let mut b = super::ScanBatch::default();
        for round in 0..2 {
            b.clear();
            let mut want = Vec::new();
            for i in 0..80usize {
                let k: Vec<u8> = (0..i).map(|j| (j * 7 + i + round) as u8).collect();
                let v: Vec<u8> = (0..(80 - i)).map(|j| (j * 3 + i) as u8).collect();
                super::Sink::push(&mut b, &k, &v);
                want.push((k, v));
            }
            assert_eq!(b.len(), want.len());
            for (i, (k, v)) in want.iter().enumerate() {
                assert_eq!(b.pair(i), (&k[..], &v[..]), "pair {i}");
            }
        }
    }

    /// Full and partial scans both ways over one trie whose containers hold thousands of
    /// keys each (so refills of 64 to 1,024 pairs stop and resume inside containers, at
    /// S-Nodes, path-compressed suffixes and embedded containers), with long keys (over
    /// 32 bytes: copied whole; over 127: long suffixes) and values from empty to 40 bytes
    /// (over 8: out of line), against a `BTreeMap`.
    #[test]
    fn scans_resume_inside_containers_with_long_keys_and_values() {
        let h = Hyperion::with_config(Config::builder().arenas(1).build().unwrap()).unwrap();
        let mut m = Map::new();
        let mut r = Rng(0x1234_5678_9ABC_DEF1);
        for i in 0..12_000u32 {
            let x = r.next();
            let mut k = vec![b'k', (x >> 56) as u8 & 0x3];
            k.extend_from_slice(&(x as u32).to_be_bytes()[..1 + i as usize % 4]);
            match i % 5 {
                0 => k.extend((0..(x >> 8) as usize % 60).map(|j| j as u8)),
                1 if i % 35 == 1 => k.extend((0..130 + (x >> 8) as usize % 40).map(|j| j as u8)),
                _ => {}
            }
            let v: Vec<u8> = (0..(x >> 20) as usize % 41)
                .map(|j| j as u8 ^ i as u8)
                .collect();
            h.insert(&k, &v).unwrap();
            m.insert(k, v);
        }
        let all: Vec<_> = m.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        let mut got = Vec::new();
        h.scan(Bound::Unbounded, &mut |k, v| {
            got.push((k.to_vec(), v.to_vec()));
            ControlFlow::Continue(())
        });
        assert_eq!(got, all, "ascending full scan");
        got.clear();
        h.scan_rev(Bound::Unbounded, &mut |k, v| {
            got.push((k.to_vec(), v.to_vec()));
            ControlFlow::Continue(())
        });
        got.reverse();
        assert_eq!(got, all, "descending full scan");
        // Long scans from bounds inside the set: 3,000 pairs cross several refills.
        let keys: Vec<&Vec<u8>> = m.keys().collect();
        for j in 0..12 {
            let b = keys[(r.next() as usize) % keys.len()];
            check_from(&h, &m, Bound::Included(b), Bound::Excluded(b), 3000);
            let mut p = b.clone();
            p.truncate(2 + j % 3);
            check_from(&h, &m, Bound::Excluded(&p), Bound::Included(&p), 3000);
        }
    }

    /// The fuzz target's checks on fixed pseudo-random inputs: differential runs against
    /// the model, then `check_batch_iterators`, on the default configuration, one arena
    /// with a 256-byte ejection threshold, and pre-processing.
    #[test]
    fn differential_then_batch_iterators() {
        use orrery_core::testing::fuzz::{check_batch_iterators, ops_from_bytes, run_differential};
        let mut r = Rng(0x9E37_79B9_7F4A_7C15);
        for len in [64usize, 512, 4096, 16384] {
            let data: Vec<u8> = (0..len).map(|_| r.next() as u8).collect();
            let ops = ops_from_bytes(&data);
            let configs = [
                Config::default(),
                Config::builder()
                    .arenas(1)
                    .eject_threshold(256)
                    .build()
                    .unwrap(),
                Config::builder().preprocess(true).build().unwrap(),
            ];
            for c in configs {
                let h = Hyperion::with_config(c).unwrap();
                run_differential(&h, &ops);
                check_batch_iterators(&h);
            }
        }
    }
}
