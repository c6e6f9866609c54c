//! The shared API (`KvIndex`, `OrderedKvIndex`) and the std conversions (`Extend`,
//! `FromIterator`) over the inherent methods of [`Wormhole`].

use std::ops::Bound;

use orrery_core::ScanVisitor;
use orrery_core::api::{self, KvIndex, MemoryUsage, OrderedKvIndex};

use crate::Wormhole;

impl KvIndex for Wormhole {
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> bool {
        Wormhole::get_with(self, key, f).is_some()
    }

    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        Wormhole::get(self, key)
    }

    fn contains_key(&self, key: &[u8]) -> bool {
        Wormhole::contains_key(self, key)
    }

    fn insert(&self, key: &[u8], value: &[u8]) -> api::Result<bool> {
        Wormhole::insert(self, key, value)
    }

    fn remove(&self, key: &[u8]) -> bool {
        Wormhole::remove(self, key)
    }

    fn len(&self) -> usize {
        Wormhole::len(self)
    }

    fn memory_usage(&self) -> MemoryUsage {
        Wormhole::memory_usage(self)
    }

    fn get_many(&self, keys: &[&[u8]], f: &mut dyn FnMut(usize, Option<&[u8]>)) {
        Wormhole::get_many(self, keys, f)
    }
}

impl Wormhole {
    /// Inserts (upserts) every pair of `pairs`; returns how many keys were new. Stops at
    /// the first pair over the limits and returns its error: the pairs before it stay
    /// inserted, it and those after it are not.
    pub fn insert_all<K, V>(&self, pairs: impl IntoIterator<Item = (K, V)>) -> api::Result<usize>
    where
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        let mut new = 0;
        for (k, v) in pairs {
            new += usize::from(self.insert(k.as_ref(), v.as_ref())?);
        }
        Ok(new)
    }
}

/// Bulk loading, as for `BTreeMap`: later pairs replace earlier ones with the same key.
///
/// # Panics
///
/// On a key or value over the limits ([`api::MAX_KEY_LEN`], [`api::MAX_VALUE_LEN`]);
/// [`Wormhole::insert_all`] returns the error instead.
impl<K: AsRef<[u8]>, V: AsRef<[u8]>> Extend<(K, V)> for Wormhole {
    fn extend<T: IntoIterator<Item = (K, V)>>(&mut self, pairs: T) {
        if let Err(e) = self.insert_all(pairs) {
            panic!("Wormhole::extend: {e}");
        }
    }
}

/// Builds an index with the default [`Config`](crate::Config) from pairs (see [`Extend`] for the panic
/// on over-long input).
impl<K: AsRef<[u8]>, V: AsRef<[u8]>> FromIterator<(K, V)> for Wormhole {
    fn from_iter<T: IntoIterator<Item = (K, V)>>(pairs: T) -> Self {
        let mut wh = Wormhole::new();
        wh.extend(pairs);
        wh
    }
}

impl OrderedKvIndex for Wormhole {
    fn scan(&self, start: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
        Wormhole::scan(self, start, visitor)
    }

    fn last(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        Wormhole::last(self)
    }

    fn first(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        Wormhole::first(self)
    }
}
