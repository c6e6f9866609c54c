//! Ordered iteration: a double-ended, seekable [`Iter`] (the house pattern of Wormhole's
//! `iter.rs`), fed by batches of the prefetching trie walk (`trie/scan.rs`) in either
//! direction.
//!
//! Ascending, a refill is one successor search for its start bound and then the walk
//! (`Raw::scan_batch`), which copies up to [`BATCH`] pairs into a [`PairBatch`] it reuses.
//! No guard is held between refills, so a user may keep an `Iter` while writing to the
//! index. Going down, a refill runs one predecessor search from the back bound and the
//! mirrored walk (`Raw::scan_batch_rev`), and stores the pairs ascending, as the front
//! does.

use std::ops::Bound;

use orrery_core::batch::{BatchIter, BatchSource, PairBatch};

use crate::CuckooTrie;
use crate::trie::ScanEnd;

/// Pairs copied per refill.
pub const BATCH: usize = 32;

impl CuckooTrie {
    /// Copies up to [`BATCH`] pairs from `start` on, ascending, into `out`; returns where
    /// the next batch starts, or `None` when the keys ran out.
    fn copy_batch(&self, start: Bound<&[u8]>, out: &mut PairBatch) -> Option<Bound<Vec<u8>>> {
        let g = orrery_core::sync::pin();
        let end = self.raw.scan_batch(start, &g, BATCH, &mut |k, v| {
            out.push(k, v);
            std::ops::ControlFlow::Continue(())
        });
        match end {
            ScanEnd::More(k) => Some(Bound::Excluded(k.to_vec())),
            ScanEnd::Done | ScanEnd::Stopped => None,
        }
    }

    /// Copies up to [`BATCH`] pairs below `end` (the largest ones), in ascending order, into
    /// `out`; returns the bound below which the next batch lies, or `None` when the keys
    /// ran out.
    fn copy_batch_rev(&self, end: Bound<&[u8]>, out: &mut PairBatch) -> Option<Bound<Vec<u8>>> {
        let g = orrery_core::sync::pin();
        let mut pairs: Vec<(&[u8], &[u8])> = Vec::with_capacity(BATCH);
        let end = self.raw.scan_batch_rev(end, &g, BATCH, &mut |k, v| {
            pairs.push((k, v));
            std::ops::ControlFlow::Continue(())
        });
        for &(k, v) in pairs.iter().rev() {
            out.push(k, v);
        }
        match end {
            ScanEnd::More(k) => Some(Bound::Excluded(k.to_vec())),
            ScanEnd::Done | ScanEnd::Stopped => None,
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
/// No lock or guard is held between calls: each refill copies up to [`BATCH`] pairs under
/// an epoch guard (one successor or predecessor search, then the prefetching trie walk of
/// `trie/scan.rs`) and records where to resume
/// (after the last key copied going up, below the smallest going down), so a user may keep
/// an `Iter` while writing to the index. Under concurrent writers it is not a snapshot, as a scan is not
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
pub type Iter<'a> = BatchIter<&'a CuckooTrie>;

/// [`Iter`]'s source: up to [`BATCH`] pairs per batch, from the trie walk either way.
impl BatchSource for CuckooTrie {
    fn fill_front(&self, start: Bound<&[u8]>, out: &mut PairBatch) -> Option<Bound<Vec<u8>>> {
        self.copy_batch(start, out)
    }

    fn fill_back(&self, end: Bound<&[u8]>, out: &mut PairBatch) -> Option<Bound<Vec<u8>>> {
        self.copy_batch_rev(end, out)
    }
}
