//! Wormhole's side of the one API: the primitives of `orrery_core::raw` on
//! [`RawWormhole`], the source of [`Iter`](crate::Iter) (`BatchSource`), and the public
//! methods and traits written over them by `orrery_core::index_api!`.

use std::ops::Bound;

use orrery_core::api::{self, Decision, MemoryUsage, ScanVisitor};
use orrery_core::batch::{BatchSource, PairBatch, scan_back};
use orrery_core::raw::{RawIndex, RawOrdered, WriteMode};

use crate::raw::RawWormhole;
use crate::{Config, WormholeWith};

impl<const OPTS: u32> RawIndex for RawWormhole<OPTS> {
    #[inline]
    fn read<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        self.get_with(key, f)
    }

    #[inline]
    fn read_many(&self, keys: &[&[u8]], f: &mut dyn FnMut(usize, Option<&[u8]>)) {
        self.get_many(keys, f)
    }

    #[inline]
    fn put(&self, key: &[u8], value: &[u8]) -> api::Result<bool> {
        self.insert(key, value)
    }

    #[inline]
    fn delete(&self, key: &[u8]) -> bool {
        self.remove(key)
    }

    fn write(
        &self,
        key: &[u8],
        mode: WriteMode,
        decide: &mut dyn FnMut(Option<&[u8]>) -> Decision,
    ) -> api::Result<bool> {
        RawWormhole::write(self, key, mode, decide)
    }

    fn write_in_place(&self, key: &[u8], f: &mut dyn FnMut(&mut [u8])) -> api::Result<bool> {
        RawWormhole::write_in_place(self, key, f)
    }

    fn count(&self) -> usize {
        self.len()
    }

    fn bytes(&self) -> MemoryUsage {
        self.memory_usage()
    }
}

impl<const OPTS: u32> RawOrdered for RawWormhole<OPTS> {
    fn scan(&self, start: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
        RawWormhole::scan(self, start, visitor)
    }

    /// Leaf by leaf downwards, each copied under its shared lock (the iterator's walk).
    fn scan_rev(&self, end: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
        scan_back(end, visitor, |end, out| {
            self.copy_leaf_rev(end, out).map(Bound::Excluded)
        })
    }

    fn first(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        RawWormhole::first(self)
    }

    fn last(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        RawWormhole::last(self)
    }

    fn remove_range(&self, start: Bound<&[u8]>, end: Bound<&[u8]>) -> usize {
        RawWormhole::remove_range(self, start, end)
    }
}

impl<const OPTS: u32> WormholeWith<OPTS> {
    /// The engine the API is written over.
    #[inline]
    fn raw(&self) -> &RawWormhole<OPTS> {
        &self.raw
    }

    fn build(config: Config) -> api::Result<Self> {
        Ok(WormholeWith {
            raw: RawWormhole::new(config)?,
        })
    }

    fn config_ref(&self) -> &Config {
        &self.raw.cfg
    }
}

orrery_core::index_api!(point impl[const OPTS: u32] WormholeWith<OPTS> as "Wormhole");
orrery_core::index_api!(ordered impl[const OPTS: u32] WormholeWith<OPTS>, iter);
orrery_core::index_api!(new impl[const OPTS: u32] WormholeWith<OPTS> as "Wormhole", Config);

/// [`Iter`](crate::Iter)'s source: one leaf per batch.
impl<const OPTS: u32> BatchSource for WormholeWith<OPTS> {
    fn fill_front(&self, start: Bound<&[u8]>, out: &mut PairBatch) -> Option<Bound<Vec<u8>>> {
        self.raw.copy_leaf(start, out).map(Bound::Included)
    }

    fn fill_back(&self, end: Bound<&[u8]>, out: &mut PairBatch) -> Option<Bound<Vec<u8>>> {
        self.raw.copy_leaf_rev(end, out).map(Bound::Excluded)
    }
}
