//! The shared API (`KvIndex`, `OrderedKvIndex`), the source of [`Iter`](crate::Iter)
//! (`BatchSource`) and the std conversions (`IntoIterator`, `Extend`, `FromIterator`) over
//! the inherent methods of [`WormholeWith`].

use std::ops::Bound;

use orrery_core::ScanVisitor;
use orrery_core::api::{self, KvIndex, MemoryUsage, OrderedKvIndex};
use orrery_core::batch::{BatchSource, Entry, PairBatch};

use crate::{Iter, WormholeWith};

impl<const OPTS: u32> KvIndex for WormholeWith<OPTS> {
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> bool {
        WormholeWith::get_with(self, key, f).is_some()
    }

    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        WormholeWith::get(self, key)
    }

    fn contains_key(&self, key: &[u8]) -> bool {
        WormholeWith::contains_key(self, key)
    }

    fn insert(&self, key: &[u8], value: &[u8]) -> api::Result<bool> {
        WormholeWith::insert(self, key, value)
    }

    fn remove(&self, key: &[u8]) -> bool {
        WormholeWith::remove(self, key)
    }

    fn len(&self) -> usize {
        WormholeWith::len(self)
    }

    fn memory_usage(&self) -> MemoryUsage {
        WormholeWith::memory_usage(self)
    }

    fn get_many(&self, keys: &[&[u8]], f: &mut dyn FnMut(usize, Option<&[u8]>)) {
        WormholeWith::get_many(self, keys, f)
    }
}

impl<const OPTS: u32> OrderedKvIndex for WormholeWith<OPTS> {
    fn scan(&self, start: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
        WormholeWith::scan(self, start, visitor)
    }

    fn last(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        WormholeWith::last(self)
    }

    fn first(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        WormholeWith::first(self)
    }
}

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

/// Bulk loading, as for `BTreeMap`: later pairs replace earlier ones with the same key.
///
/// # Panics
///
/// On a key or value over the limits ([`api::MAX_KEY_LEN`], [`api::MAX_VALUE_LEN`]);
/// [`WormholeWith::insert_all`] returns the error instead.
impl<K: AsRef<[u8]>, V: AsRef<[u8]>, const OPTS: u32> Extend<(K, V)> for WormholeWith<OPTS> {
    fn extend<T: IntoIterator<Item = (K, V)>>(&mut self, pairs: T) {
        if let Err(e) = self.insert_all(pairs) {
            panic!("Wormhole::extend: {e}");
        }
    }
}

/// Builds an index with the default [`Config`](crate::Config) from pairs (see [`Extend`]
/// for the panic on over-long input).
impl<K: AsRef<[u8]>, V: AsRef<[u8]>, const OPTS: u32> FromIterator<(K, V)> for WormholeWith<OPTS> {
    fn from_iter<T: IntoIterator<Item = (K, V)>>(pairs: T) -> Self {
        let mut wh = WormholeWith::new();
        wh.extend(pairs);
        wh
    }
}
