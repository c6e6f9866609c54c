//! The shared API (`KvIndex`, `OrderedKvIndex`), the source of [`Iter`](crate::Iter)
//! (`BatchSource`) and the std conversions (`IntoIterator`, `Extend`, `FromIterator`) over
//! the inherent methods of [`WormholeWith`].

use std::ops::Bound;

use orrery_core::batch::{BatchSource, Entry, PairBatch};

use crate::{Iter, WormholeWith};

orrery_core::index_traits!(impl[const OPTS: u32] WormholeWith<OPTS> as "Wormhole"; ordered);

/// [`Iter`]'s source: one leaf per batch.
impl<const OPTS: u32> BatchSource for WormholeWith<OPTS> {
    fn fill_front(&self, start: Bound<&[u8]>, out: &mut PairBatch) -> Option<Bound<Vec<u8>>> {
        self.raw.copy_leaf(start, out).map(Bound::Included)
    }

    fn fill_back(&self, end: Bound<&[u8]>, out: &mut PairBatch) -> Option<Bound<Vec<u8>>> {
        self.raw.copy_leaf_rev(end, out).map(Bound::Excluded)
    }
}

impl<'a, const OPTS: u32> IntoIterator for &'a WormholeWith<OPTS> {
    type Item = Entry;
    type IntoIter = Iter<'a, OPTS>;

    fn into_iter(self) -> Iter<'a, OPTS> {
        self.iter()
    }
}
