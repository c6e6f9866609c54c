//! Test doubles shared by the integration tests.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use orrery_core::api::{self, KvIndex, MemoryUsage, Result};
use orrery_core::reference::LockedBTreeMap;

/// A point (unordered) index: `std::collections::HashMap` behind a `Mutex`, standing in for
/// the hash-table peers of orrery-bench.
#[derive(Default)]
pub(crate) struct HashIndex {
    map: Mutex<HashMap<Vec<u8>, Vec<u8>>>,
}

impl HashIndex {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<Vec<u8>, Vec<u8>>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl KvIndex for HashIndex {
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> bool {
        match self.map().get(key) {
            Some(v) => {
                f(v);
                true
            }
            None => false,
        }
    }

    fn insert(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        api::check_entry(key, value)?;
        Ok(self.map().insert(key.to_vec(), value.to_vec()).is_none())
    }

    fn remove(&self, key: &[u8]) -> bool {
        self.map().remove(key).is_some()
    }

    fn len(&self) -> usize {
        self.map().len()
    }

    fn memory_usage(&self) -> MemoryUsage {
        let map = self.map();
        MemoryUsage {
            structure_bytes: map.capacity() * 56,
            key_value_bytes: map.iter().map(|(k, v)| k.len() + v.len()).sum(),
        }
    }
}

/// `LockedBTreeMap` whose lookups yield the CPU at random points, to widen the windows in
/// which a reader that missed the SLB races with writers.
#[derive(Default)]
pub(crate) struct SlowIndex {
    inner: LockedBTreeMap,
    /// Draws so far of the yield decision.
    draws: AtomicU64,
}

impl SlowIndex {
    pub(crate) fn new() -> Self {
        SlowIndex {
            inner: LockedBTreeMap::new(),
            draws: AtomicU64::new(0),
        }
    }

    /// Yields with probability 6/16: the counter's next value, mixed by the test RNG's
    /// stream derivation (a counter-based generator every thread can share).
    fn maybe_yield(&self) {
        let n = self.draws.fetch_add(1, Ordering::Relaxed);
        let x = orrery_core::testing::rng::derive(orrery_core::testing::rng::DEFAULT_SEED, n);
        if (x >> 60) < 6 {
            std::thread::yield_now();
        }
    }
}

impl KvIndex for SlowIndex {
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> bool {
        self.maybe_yield();
        let found = self.inner.get_with(key, f);
        self.maybe_yield();
        found
    }

    // Writes do not yield: the SLB holds the key's stripe across them, and the interesting
    // window is a reader's, between its miss and its emission.
    fn insert(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        self.inner.insert(key, value)
    }

    fn remove(&self, key: &[u8]) -> bool {
        self.inner.remove(key)
    }

    fn len(&self) -> usize {
        self.inner.len()
    }

    fn memory_usage(&self) -> MemoryUsage {
        self.inner.memory_usage()
    }
}
