//! [`Cursor`]: an owning iterator over an [`Index`], what every Python iterator object of
//! the package holds.
//!
//! Ordered structures: `orrery::batch::BatchIter` over a [`Source`] that owns an `Arc` of
//! the structure, so the cursor lives as long as Python keeps it. It copies one group of
//! pairs at a time (a Wormhole leaf, a batch of Cuckoo Trie or Hyperion successors) under
//! the structure's protection and holds no lock or guard between calls, so other threads
//! may write while it is alive, and it gives the Rust iterators' guarantees: keys strictly
//! ascending (descending when reversed), every pair yielded present with that value at
//! some moment, every key present for the whole iteration yielded exactly once. Mercury:
//! its table walk (`crate::owned`), the same guarantees without the order.

use std::ops::Bound;
use std::sync::Arc;

use orrery::Entry;
use orrery::batch::{BatchIter, BatchSource, PairBatch};
use orrery::cuckoo_trie::CuckooTrie;
use orrery::hyperion::Hyperion;
use orrery::wormhole::Wormhole;

use crate::index::Index;
use crate::owned::OwnedMercuryIter;

/// An ordered structure, owned, as a `BatchSource`.
pub(crate) enum Source {
    Wormhole(Arc<Wormhole>),
    CuckooTrie(Arc<CuckooTrie>),
    Hyperion(Arc<Hyperion>),
}

impl BatchSource for Source {
    fn fill_front(&self, start: Bound<&[u8]>, out: &mut PairBatch) -> Option<Bound<Vec<u8>>> {
        match self {
            Source::Wormhole(w) => w.fill_front(start, out),
            Source::CuckooTrie(c) => c.fill_front(start, out),
            Source::Hyperion(h) => h.fill_front(start, out),
        }
    }

    fn fill_back(&self, end: Bound<&[u8]>, out: &mut PairBatch) -> Option<Bound<Vec<u8>>> {
        match self {
            Source::Wormhole(w) => w.fill_back(end, out),
            Source::CuckooTrie(c) => c.fill_back(end, out),
            Source::Hyperion(h) => h.fill_back(end, out),
        }
    }
}

/// An owning iterator over an index's pairs (see the module docs for its guarantees).
pub(crate) enum Cursor {
    /// Ordered: both ends usable.
    Ordered(BatchIter<Source>),
    /// Mercury: forward only, in no order.
    Hash(OwnedMercuryIter),
}

impl Cursor {
    /// Every pair of `index` (an SLB: of the structure it wraps).
    pub(crate) fn all(index: &Index) -> Cursor {
        Self::range(index, Bound::Unbounded, Bound::Unbounded)
    }

    /// The pairs of `index` with keys between `lo` and `hi`; for Mercury the bounds must be
    /// unbounded (callers check that a map is ordered before they pass bounds).
    pub(crate) fn range(index: &Index, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> Cursor {
        match index.base() {
            Index::Wormhole(w) => {
                Cursor::Ordered(BatchIter::new(Source::Wormhole(w.clone()), lo, hi))
            }
            Index::CuckooTrie(c) => {
                Cursor::Ordered(BatchIter::new(Source::CuckooTrie(c.clone()), lo, hi))
            }
            Index::Hyperion(h) => {
                Cursor::Ordered(BatchIter::new(Source::Hyperion(h.clone()), lo, hi))
            }
            Index::Mercury(m) => {
                debug_assert!(matches!((lo, hi), (Bound::Unbounded, Bound::Unbounded)));
                Cursor::Hash(OwnedMercuryIter::new(m.clone()))
            }
            Index::SlbOrdered(..) | Index::SlbHash(..) => unreachable!("base() is no SLB"),
        }
    }

    /// `f` on the next pair from the front (the back when `back`: ordered cursors only),
    /// lent from the cursor's batch without a copy; `None` at the end.
    #[inline]
    pub(crate) fn with_next<R>(
        &mut self,
        back: bool,
        f: impl FnOnce(&[u8], &[u8]) -> R,
    ) -> Option<R> {
        match self {
            Cursor::Ordered(it) => {
                let (k, v) = if back {
                    it.next_back_pair()?
                } else {
                    it.next_pair()?
                };
                Some(f(k, v))
            }
            Cursor::Hash(it) => {
                debug_assert!(!back, "Mercury has no order to reverse");
                let e = it.next()?;
                Some(f(e.key(), e.value()))
            }
        }
    }

    /// The next pair from the front, or from the back when `back` (ordered cursors only).
    #[inline]
    pub(crate) fn next(&mut self, back: bool) -> Option<Entry> {
        match self {
            Cursor::Ordered(it) if back => it.next_back(),
            Cursor::Ordered(it) => it.next(),
            Cursor::Hash(it) => {
                debug_assert!(!back, "Mercury has no order to reverse");
                it.next()
            }
        }
    }
}
