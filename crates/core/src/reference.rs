//! The reference index: a `BTreeMap` behind a reader-writer lock.
//!
//! [`LockedBTreeMap`] is the semantic baseline of the conformance suite (its behaviour is the
//! specification, made executable) and the baseline peer of the benchmarks. Every operation
//! takes the one `RwLock`: readers share it, writers exclude everyone, so all operations are
//! trivially linearizable and scans are even snapshots (each scan holds the read lock).

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::api::{
    KvIndex, KvUpdate, MemoryUsage, OrderedKvIndex, Result, ScanVisitor, check_entry,
};
use crate::batch::{BatchSource, PairBatch};
use crate::raw::{self, RawIndex, WriteMode};

/// Estimated heap bytes of one `BTreeMap<Vec<u8>, Vec<u8>>` entry beyond its key and value
/// bytes: the two `Vec` headers (24 B each) in a node that is on average about 2/3 full
/// (std's nodes hold up to 11 entries), plus the node's share of parent pointers and edges.
const BTREE_ENTRY_OVERHEAD: usize = 80;

/// `std::collections::BTreeMap` behind a `std::sync::RwLock`: the reference semantics and the
/// baseline peer.
#[derive(Debug, Default)]
pub struct LockedBTreeMap {
    map: RwLock<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    map: BTreeMap<Vec<u8>, Vec<u8>>,
    key_value_bytes: usize,
}

impl LockedBTreeMap {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    // A panic while holding the lock cannot leave `Inner` half-updated in a way that breaks
    // its invariants (the map is always valid; the byte count is updated after), so a
    // poisoned lock is simply taken over.
    fn shared(&self) -> RwLockReadGuard<'_, Inner> {
        self.map.read().unwrap_or_else(|e| e.into_inner())
    }

    fn exclusive(&self) -> RwLockWriteGuard<'_, Inner> {
        self.map.write().unwrap_or_else(|e| e.into_inner())
    }
}

impl KvIndex for LockedBTreeMap {
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> bool {
        match self.shared().map.get(key) {
            Some(v) => {
                f(v);
                true
            }
            None => false,
        }
    }

    fn insert(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        check_entry(key, value)?;
        let mut inner = self.exclusive();
        match inner.map.get_mut(key) {
            Some(old) => {
                let old_len = old.len();
                old.clear();
                old.extend_from_slice(value);
                inner.key_value_bytes = inner.key_value_bytes - old_len + value.len();
                Ok(false)
            }
            None => {
                inner.map.insert(key.to_vec(), value.to_vec());
                inner.key_value_bytes += key.len() + value.len();
                Ok(true)
            }
        }
    }

    fn remove(&self, key: &[u8]) -> bool {
        let mut inner = self.exclusive();
        match inner.map.remove(key) {
            Some(v) => {
                inner.key_value_bytes -= key.len() + v.len();
                true
            }
            None => false,
        }
    }

    fn len(&self) -> usize {
        self.shared().map.len()
    }

    fn memory_usage(&self) -> MemoryUsage {
        let inner = self.shared();
        MemoryUsage {
            structure_bytes: size_of::<Self>() + inner.map.len() * BTREE_ENTRY_OVERHEAD,
            key_value_bytes: inner.key_value_bytes,
        }
    }
}

impl OrderedKvIndex for LockedBTreeMap {
    fn scan(&self, start: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
        let inner = self.shared();
        for (k, v) in inner.map.range::<[u8], _>((start, Bound::Unbounded)) {
            if visitor(k, v).is_break() {
                break;
            }
        }
    }

    fn scan_rev(&self, end: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
        let inner = self.shared();
        for (k, v) in inner.map.range::<[u8], _>((Bound::Unbounded, end)).rev() {
            if visitor(k, v).is_break() {
                break;
            }
        }
    }

    fn last(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        self.shared()
            .map
            .last_key_value()
            .map(|(k, v)| (k.clone(), v.clone()))
    }
}

/// The read-modify-writes through the one mechanism every structure uses
/// ([`crate::raw`]): the reference decides the edges as the structures do.
impl KvUpdate for LockedBTreeMap {
    fn compute_with(&self, key: &[u8], f: &mut crate::api::ComputeFn<'_>) -> Result<bool> {
        raw::compute(self, key, f)
    }

    fn update_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8]) -> Vec<u8>) -> Result<bool> {
        raw::update(self, key, f)
    }

    fn update_in_place_with(&self, key: &[u8], f: &mut dyn FnMut(&mut [u8])) -> Result<bool> {
        raw::update_in_place(self, key, f)
    }
}

/// The primitives, under the write lock.
impl RawIndex for LockedBTreeMap {
    fn read<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        self.shared().map.get(key).map(|v| f(v))
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        KvIndex::insert(self, key, value)
    }

    fn delete(&self, key: &[u8]) -> bool {
        KvIndex::remove(self, key)
    }

    fn write(
        &self,
        key: &[u8],
        _mode: WriteMode,
        decide: &mut dyn FnMut(Option<&[u8]>) -> raw::Decision,
    ) -> Result<bool> {
        let mut inner = self.exclusive();
        let old_len = inner.map.get(key).map(Vec::len);
        match decide(inner.map.get(key).map(Vec::as_slice)) {
            raw::Decision::Keep => {}
            raw::Decision::Store(v) => {
                inner.key_value_bytes += v.len();
                inner.key_value_bytes -= old_len.map_or(0, |n| n + key.len());
                inner.key_value_bytes += key.len();
                inner.map.insert(key.to_vec(), v);
            }
            raw::Decision::Remove => {
                if let Some(v) = inner.map.remove(key) {
                    inner.key_value_bytes -= key.len() + v.len();
                }
            }
        }
        Ok(old_len.is_some())
    }

    fn count(&self) -> usize {
        KvIndex::len(self)
    }

    fn bytes(&self) -> MemoryUsage {
        KvIndex::memory_usage(self)
    }
}

/// Pairs per [`BatchSource`] group: small, so that iterators over a few dozen keys refill
/// many times.
const GROUP: usize = 4;

/// The reference iterates as the structures do (`orrery_core::batch::BatchIter` over it),
/// in groups of four pairs, so the iterator checks can be run on it.
impl BatchSource for LockedBTreeMap {
    fn fill_front(&self, start: Bound<&[u8]>, out: &mut PairBatch) -> Option<Bound<Vec<u8>>> {
        let inner = self.shared();
        let mut it = inner.map.range::<[u8], _>((start, Bound::Unbounded));
        for (k, v) in it.by_ref().take(GROUP) {
            out.push(k, v);
        }
        it.next().map(|(k, _)| Bound::Included(k.clone()))
    }

    fn fill_back(&self, end: Bound<&[u8]>, out: &mut PairBatch) -> Option<Bound<Vec<u8>>> {
        let inner = self.shared();
        let mut it = inner.map.range::<[u8], _>((Bound::Unbounded, end)).rev();
        let group: Vec<_> = it.by_ref().take(GROUP).collect();
        for (k, v) in group.iter().rev() {
            out.push(k, v);
        }
        it.next().map(|(k, _)| Bound::Included(k.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::OrderedKvIndexExt;

    #[test]
    fn basic_operations() {
        let m = LockedBTreeMap::new();
        assert_eq!(m.insert(b"b", b"2"), Ok(true));
        assert_eq!(m.insert(b"a", b"1"), Ok(true));
        assert_eq!(m.insert(b"a", b"one"), Ok(false));
        assert_eq!(m.get(b"a"), Some(b"one".to_vec()));
        assert_eq!(m.len(), 2);
        assert_eq!(m.memory_usage().key_value_bytes, 1 + 3 + 1 + 1);
        assert_eq!(m.first().unwrap().0, b"a");
        assert_eq!(m.last().unwrap().0, b"b");
        assert_eq!(m.prefix_collect(b"a").len(), 1);
        assert!(m.remove(b"a"));
        assert!(!m.remove(b"a"));
        assert_eq!(m.memory_usage().key_value_bytes, 2);
    }
}
