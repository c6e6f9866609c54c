//! Ordered iteration: the batch source behind `CuckooTrie::iter` and `range` (written by
//! `orrery_core::index_api!`) and the double-ended, seekable [`Iter`](crate::Iter) (declared in the crate root; the house pattern of
//! Wormhole's `iter.rs`), fed by batches of the prefetching trie walk (`trie/scan.rs`) in either
//! direction.
//!
//! Ascending, a refill is one successor search for its start bound and then the walk
//! (`Raw::scan_batch`), which copies up to [`BATCH`] pairs into a [`PairBatch`] it reuses.
//! No guard is held between refills, so a user may keep an `Iter` while writing to the
//! index. Going down, a refill runs one predecessor search from the back bound and the
//! mirrored walk (`Raw::scan_batch_rev`), and stores the pairs ascending, as the front
//! does.

use std::ops::Bound;

use orrery_core::batch::{BatchSource, PairBatch};

use crate::CuckooTrie;
use crate::trie::ScanEnd;

/// Pairs copied per refill.
const BATCH: usize = 32;

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

/// [`Iter`](crate::Iter)'s source: up to `BATCH` pairs per batch, from the trie walk either way.
impl BatchSource for CuckooTrie {
    fn fill_front(&self, start: Bound<&[u8]>, out: &mut PairBatch) -> Option<Bound<Vec<u8>>> {
        self.copy_batch(start, out)
    }

    fn fill_back(&self, end: Bound<&[u8]>, out: &mut PairBatch) -> Option<Bound<Vec<u8>>> {
        self.copy_batch_rev(end, out)
    }
}
