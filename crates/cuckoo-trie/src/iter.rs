//! Ordered iteration: a double-ended, seekable [`Iter`] (the house pattern of Wormhole's
//! `iter.rs`), fed by batches of successor or predecessor searches.
//!
//! Range iteration in the paper is "a sequence of successor searches from the range start
//! key" (§5); a refill here runs up to [`BATCH`] of them under one epoch guard, each
//! validated and restarted on its own (`trie.rs`), and copies the pairs into a
//! [`PairBatch`] it reuses. No guard is held between refills, so a user may keep an `Iter`
//! while writing to the index. Going down, a refill runs predecessor searches from the
//! back bound and stores the pairs ascending, as the front does.

use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use orrery_core::batch::{Entry, PairBatch};

use crate::CuckooTrie;

/// Pairs copied per refill.
pub const BATCH: usize = 32;

impl CuckooTrie {
    /// An iterator over all pairs in key order (ascending; `.rev()` for descending).
    pub fn iter(&self) -> Iter<'_> {
        Iter::new(self, Bound::Unbounded, Bound::Unbounded)
    }

    /// An iterator over the pairs whose keys fall in `range`, in key order (ascending;
    /// `.rev()` for descending), as `BTreeMap::range`. Any [`RangeBounds`] over byte
    /// strings works: `ct.range(&b"a"[..]..&b"m"[..])`, `ct.range(b"k".to_vec()..)`, or a
    /// pair of [`Bound`]s. An empty or inverted range yields nothing (where
    /// `BTreeMap::range` panics).
    pub fn range<K, R>(&self, range: R) -> Iter<'_>
    where
        K: AsRef<[u8]> + ?Sized,
        R: RangeBounds<K>,
    {
        Iter::new(
            self,
            range.start_bound().map(AsRef::as_ref),
            range.end_bound().map(AsRef::as_ref),
        )
    }

    /// Copies up to [`BATCH`] pairs from `start` on, ascending, into `out`; returns where
    /// the next batch starts, or `None` when the keys ran out.
    fn copy_batch(&self, start: Bound<&[u8]>, out: &mut PairBatch) -> Option<Bound<Vec<u8>>> {
        let g = orrery_core::sync::pin();
        let mut from = start;
        for _ in 0..BATCH {
            let (k, v) = self.raw.seek(from, true, &g)?;
            out.push(k, v);
            from = Bound::Excluded(k);
        }
        Some(owned(from))
    }

    /// Copies up to [`BATCH`] pairs below `end` (the largest ones), in ascending order, into
    /// `out`; returns the bound below which the next batch lies, or `None` when the keys
    /// ran out.
    fn copy_batch_rev(&self, end: Bound<&[u8]>, out: &mut PairBatch) -> Option<Bound<Vec<u8>>> {
        let g = orrery_core::sync::pin();
        let mut from = end;
        let mut pairs: Vec<(&[u8], &[u8])> = Vec::with_capacity(BATCH);
        let mut more = true;
        for _ in 0..BATCH {
            match self.raw.seek(from, false, &g) {
                Some((k, v)) => {
                    pairs.push((k, v));
                    from = Bound::Excluded(k);
                }
                None => {
                    more = false;
                    break;
                }
            }
        }
        for &(k, v) in pairs.iter().rev() {
            out.push(k, v);
        }
        more.then(|| owned(from))
    }
}

/// Overwrites `slot` with `Excluded(key)`, reusing its allocation.
fn set_excluded(slot: &mut Bound<Vec<u8>>, key: &[u8]) {
    let mut v = match std::mem::replace(slot, Bound::Unbounded) {
        Bound::Included(v) | Bound::Excluded(v) => v,
        Bound::Unbounded => Vec::new(),
    };
    v.clear();
    v.extend_from_slice(key);
    *slot = Bound::Excluded(v);
}

fn owned(b: Bound<&[u8]>) -> Bound<Vec<u8>> {
    b.map(<[u8]>::to_vec)
}

fn borrowed(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    b.as_ref().map(Vec::as_slice)
}

/// Whether `k` is below an upper limit.
fn below(k: &[u8], limit: Bound<&[u8]>) -> bool {
    match limit {
        Bound::Included(x) => k <= x,
        Bound::Excluded(x) => k < x,
        Bound::Unbounded => true,
    }
}

/// Whether `k` is above a lower limit.
fn above(k: &[u8], limit: Bound<&[u8]>) -> bool {
    match limit {
        Bound::Included(x) => k >= x,
        Bound::Excluded(x) => k > x,
        Bound::Unbounded => true,
    }
}

/// The later of two start bounds (the one admitting fewer keys).
fn later_start<'k>(a: Bound<&'k [u8]>, b: Bound<&'k [u8]>) -> Bound<&'k [u8]> {
    use std::cmp::Ordering::*;
    match (a, b) {
        (Bound::Unbounded, x) | (x, Bound::Unbounded) => x,
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => {
            match x.cmp(y) {
                Less => b,
                Greater => a,
                Equal if matches!(a, Bound::Excluded(_)) => a,
                Equal => b,
            }
        }
    }
}

/// The earlier of two end bounds (the one admitting fewer keys).
fn earlier_end<'k>(a: Bound<&'k [u8]>, b: Bound<&'k [u8]>) -> Bound<&'k [u8]> {
    use std::cmp::Ordering::*;
    match (a, b) {
        (Bound::Unbounded, x) | (x, Bound::Unbounded) => x,
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => {
            match x.cmp(y) {
                Less => a,
                Greater => b,
                Equal if matches!(a, Bound::Excluded(_)) => a,
                Equal => b,
            }
        }
    }
}

/// One end of an [`Iter`]: the batch it reads, where it stands in it, where it reloads.
struct End {
    batch: Arc<PairBatch>,
    /// Front: index of the next pair. Back: one past the index of the next pair.
    pos: usize,
    /// Front: the next batch holds the keys from this bound on. Back: the keys below it.
    /// `None`: this end has passed the last key.
    resume: Option<Bound<Vec<u8>>>,
    /// The other end's limit while this end has yielded nothing from its current batch:
    /// the range's (or the last seek's) bound, or the last key this end yielded from an
    /// earlier batch (excluded).
    limit: Bound<Vec<u8>>,
}

impl End {
    fn new(bound: Bound<&[u8]>) -> End {
        End {
            batch: Arc::default(),
            pos: 0,
            resume: Some(owned(bound)),
            limit: owned(bound),
        }
    }
}

/// An iterator over a key range of a [`CuckooTrie`], in key order from either end: a
/// seekable cursor that copies up to [`BATCH`] pairs at a time into a reusable arena.
///
/// Made by [`CuckooTrie::iter`] and [`CuckooTrie::range`]. It implements [`Iterator`] and
/// [`DoubleEndedIterator`] (`.rev()` yields descending keys; both ends may be used, and they
/// stop where they meet). Items are [`Entry`]s: handles into the arena (a reference count),
/// so iterating allocates nothing per pair; the arena is refilled in place once per batch
/// when no entry of the previous batch is still held. [`Iter::next_pair`] and
/// [`Iter::next_back_pair`] lend the pair as slices instead.
///
/// No lock or guard is held between calls: each refill runs up to [`BATCH`] successor (or
/// predecessor) searches under an epoch guard and records where to resume (after the last
/// key copied going up, below the smallest going down), so a user may keep an `Iter` while
/// writing to the index. Under concurrent writers it is not a snapshot, as a scan is not
/// ([`orrery_core::api`]): keys come strictly ascending from the front and strictly
/// descending from the back, every pair yielded was present with that value at some
/// moment, and every key present throughout (and in range) is yielded once.
///
/// ```
/// use orrery_cuckoo_trie::CuckooTrie;
/// use std::ops::Bound;
/// let ct = CuckooTrie::new();
/// for i in 0u32..1000 {
///     ct.insert(&i.to_be_bytes(), b"v").unwrap();
/// }
/// let mut it = ct.iter();
/// assert_eq!(it.next_pair().map(|(k, _)| k.to_vec()), Some(0u32.to_be_bytes().to_vec()));
/// it.seek(Bound::Excluded(&500u32.to_be_bytes()));
/// assert_eq!(it.next().unwrap().key(), 501u32.to_be_bytes());
/// assert_eq!(it.next_back().unwrap().key(), 999u32.to_be_bytes());
/// assert_eq!(it.count(), 497);
/// let down: Vec<_> = ct.range(&10u32.to_be_bytes()[..]..&13u32.to_be_bytes()[..]).rev().collect();
/// assert_eq!(down.len(), 3);
/// assert_eq!(down[0].key(), 12u32.to_be_bytes());
/// ```
pub struct Iter<'a> {
    ct: &'a CuckooTrie,
    /// The range's bounds (seeks stay inside them).
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    front: End,
    back: End,
}

impl std::fmt::Debug for Iter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Iter")
            .field("lo", &self.lo)
            .field("hi", &self.hi)
            .finish_non_exhaustive()
    }
}

impl<'a> Iter<'a> {
    fn new(ct: &'a CuckooTrie, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> Self {
        Iter {
            ct,
            lo: owned(lo),
            hi: owned(hi),
            front: End::new(lo),
            back: End::new(hi),
        }
    }

    /// Repositions the front at the first key `>= key` (`Included`), `> key` (`Excluded`),
    /// or the start of the range (`Unbounded`); a bound before the range's start means its
    /// start. The front may move backwards as well as forwards; keys the back has already
    /// yielded stay excluded.
    pub fn seek(&mut self, start: Bound<&[u8]>) {
        let start = owned(later_start(start, borrowed(&self.lo)));
        PairBatch::refill(&mut self.front.batch);
        self.front.pos = 0;
        self.front.limit = start.clone();
        self.front.resume = Some(start);
    }

    /// Repositions the back at the last key `<= key` (`Included`), `< key` (`Excluded`), or
    /// the end of the range (`Unbounded`); a bound past the range's end means its end. Keys
    /// the front has already yielded stay excluded.
    pub fn seek_back(&mut self, end: Bound<&[u8]>) {
        let end = owned(earlier_end(end, borrowed(&self.hi)));
        let b = PairBatch::refill(&mut self.back.batch);
        self.back.pos = b.len();
        self.back.limit = end.clone();
        self.back.resume = Some(end);
    }

    /// The front's lower limit for the back: the last key the front yielded, or its bound.
    fn front_limit(&self) -> Bound<&[u8]> {
        if self.front.pos > 0 {
            Bound::Excluded(self.front.batch.key(self.front.pos - 1))
        } else {
            borrowed(&self.front.limit)
        }
    }

    /// The back's upper limit for the front: the last key the back yielded, or its bound.
    fn back_limit(&self) -> Bound<&[u8]> {
        if self.back.pos < self.back.batch.len() {
            Bound::Excluded(self.back.batch.key(self.back.pos))
        } else {
            borrowed(&self.back.limit)
        }
    }

    /// Whether the front has a next pair (at `front.pos`), refilling as needed.
    fn front_ready(&mut self) -> bool {
        loop {
            if self.front.pos < self.front.batch.len() {
                return below(self.front.batch.key(self.front.pos), self.back_limit());
            }
            let Some(from) = self.front.resume.take() else {
                return false;
            };
            let start_ok = match &from {
                Bound::Included(k) | Bound::Excluded(k) => below(k, self.back_limit()),
                Bound::Unbounded => true,
            };
            if !start_ok {
                self.front.resume = Some(from);
                return false;
            }
            let f = &mut self.front;
            if f.pos > 0 {
                set_excluded(&mut f.limit, f.batch.key(f.pos - 1));
            }
            let batch = PairBatch::refill(&mut self.front.batch);
            self.front.resume = self.ct.copy_batch(borrowed(&from), batch);
            self.front.pos = 0;
        }
    }

    /// Whether the back has a next pair (at `back.pos - 1`), refilling as needed.
    fn back_ready(&mut self) -> bool {
        loop {
            if self.back.pos > 0 {
                return above(self.back.batch.key(self.back.pos - 1), self.front_limit());
            }
            let Some(from) = self.back.resume.take() else {
                return false;
            };
            let end_ok = match &from {
                Bound::Included(k) | Bound::Excluded(k) => above(k, self.front_limit()),
                Bound::Unbounded => true,
            };
            if !end_ok {
                self.back.resume = Some(from);
                return false;
            }
            let b = &mut self.back;
            if b.pos < b.batch.len() {
                set_excluded(&mut b.limit, b.batch.key(b.pos));
            }
            let batch = PairBatch::refill(&mut self.back.batch);
            self.back.resume = self.ct.copy_batch_rev(borrowed(&from), batch);
            self.back.pos = batch.len();
        }
    }

    /// The next pair from the front, lent from the iterator's arena (no allocation).
    pub fn next_pair(&mut self) -> Option<(&[u8], &[u8])> {
        if !self.front_ready() {
            return None;
        }
        self.front.pos += 1;
        Some(self.front.batch.pair(self.front.pos - 1))
    }

    /// The next pair from the back (descending), lent from the iterator's arena.
    pub fn next_back_pair(&mut self) -> Option<(&[u8], &[u8])> {
        if !self.back_ready() {
            return None;
        }
        self.back.pos -= 1;
        Some(self.back.batch.pair(self.back.pos))
    }
}

impl Iterator for Iter<'_> {
    type Item = Entry;

    fn next(&mut self) -> Option<Entry> {
        if !self.front_ready() {
            return None;
        }
        self.front.pos += 1;
        Some(Entry::new(&self.front.batch, self.front.pos - 1))
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Entry> {
        if !self.back_ready() {
            return None;
        }
        self.back.pos -= 1;
        Some(Entry::new(&self.back.batch, self.back.pos))
    }
}

impl<'a> IntoIterator for &'a CuckooTrie {
    type Item = Entry;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}
