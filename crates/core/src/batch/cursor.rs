//! [`BatchIter`]: the double-ended, seekable iterator every ordered structure returns from
//! `iter()` and `range(r)`, over a [`BatchSource`] that copies one group of pairs at a time
//! (a Wormhole leaf, a run of Cuckoo Trie successor searches) into a reusable [`PairBatch`].
//!
//! Each end keeps its own batch, the position in it, where to resume (the bound of the
//! next group going up, of the previous group going down) and the limit the other end must
//! not pass: the range's (or the last seek's) bound, or the last key this end yielded. The
//! two ends stop where they meet, so every key is yielded once however `next` and
//! `next_back` are interleaved. No lock or guard is held between calls: the source takes
//! whatever protection it needs while it copies, so a user may keep an iterator while
//! writing to the index. Under concurrent writers an iterator is not a snapshot, as a scan
//! is not ([`crate::api`]): keys come strictly ascending from the front and strictly
//! descending from the back, every pair yielded was present with that value at some moment,
//! and every key present throughout (and in range) is yielded once.

use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use super::{Entry, PairBatch};

/// A structure an ordered [`BatchIter`] reads from, one group of pairs per call.
pub trait BatchSource {
    /// Copies into `out`, ascending, the pairs of the group where `start` falls, from
    /// `start` on (possibly none, when the group holds no key at or after it). Returns the
    /// bound the next group starts at, or `None` when no group follows.
    fn fill_front(&self, start: Bound<&[u8]>, out: &mut PairBatch) -> Option<Bound<Vec<u8>>>;

    /// Copies into `out`, ascending, the pairs of the last group holding keys before `end`
    /// (`<=` for `Included`, all for `Unbounded`) that lie before `end`. Returns the bound
    /// below which the previous group lies, or `None` when none does.
    fn fill_back(&self, end: Bound<&[u8]>, out: &mut PairBatch) -> Option<Bound<Vec<u8>>>;
}

impl<T: BatchSource + ?Sized> BatchSource for &T {
    fn fill_front(&self, start: Bound<&[u8]>, out: &mut PairBatch) -> Option<Bound<Vec<u8>>> {
        (**self).fill_front(start, out)
    }

    fn fill_back(&self, end: Bound<&[u8]>, out: &mut PairBatch) -> Option<Bound<Vec<u8>>> {
        (**self).fill_back(end, out)
    }
}

/// A descending callback scan over a source's `fill_back` groups (`end` and below,
/// descending, until the visitor breaks): for structures whose descending walk is their
/// iterator's. Each group is copied under the source's protection, then visited.
pub fn scan_back(
    end: Bound<&[u8]>,
    visitor: &mut crate::api::ScanVisitor<'_>,
    mut fill_back: impl FnMut(Bound<&[u8]>, &mut PairBatch) -> Option<Bound<Vec<u8>>>,
) {
    let mut batch = PairBatch::default();
    let mut next = fill_back(end, &mut batch);
    loop {
        for i in (0..batch.len()).rev() {
            let (k, v) = batch.pair(i);
            if visitor(k, v).is_break() {
                return;
            }
        }
        let Some(end) = next else { return };
        batch.clear();
        next = fill_back(borrowed(&end), &mut batch);
    }
}

/// One end of a [`BatchIter`]: the batch it reads, where it stands in it, where it reloads.
struct End {
    batch: Arc<PairBatch>,
    /// Front: index of the next pair. Back: one past the index of the next pair.
    pos: usize,
    /// Front: the next batch holds the keys from this bound on. Back: the keys below it.
    /// `None`: this end has passed the last group.
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

/// An iterator over a key range of an ordered structure, in key order from either end: a
/// seekable cursor that copies one group of pairs at a time into a reusable arena.
///
/// It implements [`Iterator`] and [`DoubleEndedIterator`] (`.rev()` yields descending keys;
/// both ends may be used, and they stop where they meet). Items are [`Entry`]s: handles
/// into the arena (a reference count), so iterating allocates nothing per pair; the arena
/// is refilled in place once per group when no entry of the previous group is still held.
/// [`BatchIter::next_pair`] and [`BatchIter::next_back_pair`] lend the pair as slices
/// instead. See the module docs for what it guarantees under concurrent writers.
pub struct BatchIter<S> {
    src: S,
    /// The range's bounds (seeks stay inside them).
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    front: End,
    back: End,
}

impl<S> std::fmt::Debug for BatchIter<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchIter")
            .field("lo", &self.lo)
            .field("hi", &self.hi)
            .finish_non_exhaustive()
    }
}

impl<S: BatchSource> BatchIter<S> {
    /// An iterator over the keys of `src` between `lo` and `hi`; an empty or inverted range
    /// yields nothing.
    pub fn new(src: S, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> Self {
        BatchIter {
            src,
            lo: owned(lo),
            hi: owned(hi),
            front: End::new(lo),
            back: End::new(hi),
        }
    }

    /// An iterator over every key of `src`: what a structure's `iter()` returns.
    pub fn all(src: S) -> Self {
        Self::new(src, Bound::Unbounded, Bound::Unbounded)
    }

    /// An iterator over the keys of `src` in `range`, any [`RangeBounds`] over byte strings
    /// (`&b"a"[..]..&b"m"[..]`, `b"k".to_vec()..`, or a pair of [`Bound`]s): what a
    /// structure's `range(r)` returns. An empty or inverted range yields nothing (where
    /// `BTreeMap::range` panics).
    pub fn range<K, R>(src: S, range: R) -> Self
    where
        K: AsRef<[u8]> + ?Sized,
        R: RangeBounds<K>,
    {
        Self::new(
            src,
            range.start_bound().map(AsRef::as_ref),
            range.end_bound().map(AsRef::as_ref),
        )
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
            self.front.resume = self.src.fill_front(borrowed(&from), batch);
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
            self.back.resume = self.src.fill_back(borrowed(&from), batch);
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

impl<S: BatchSource> Iterator for BatchIter<S> {
    type Item = Entry;

    fn next(&mut self) -> Option<Entry> {
        if !self.front_ready() {
            return None;
        }
        self.front.pos += 1;
        Some(Entry::new(&self.front.batch, self.front.pos - 1))
    }
}

impl<S: BatchSource> DoubleEndedIterator for BatchIter<S> {
    fn next_back(&mut self) -> Option<Entry> {
        if !self.back_ready() {
            return None;
        }
        self.back.pos -= 1;
        Some(Entry::new(&self.back.batch, self.back.pos))
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
