//! Hash-table peers: `dashmap` (sharded `RwLock`s), `papaya` (lock-free, incremental
//! resizing) and `hashbrown` behind one `std::sync::RwLock` (the hash-table analogue of
//! the locked B-tree baseline). All use foldhash. Each `insert` is a single call that
//! returns the previous value.

use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use dashmap::DashMap;
use orrery::api::check_entry;
use orrery::{KvIndex, MemoryUsage, Result};

use super::Hasher;

/// `dashmap::DashMap` behind Orrery's API.
pub(crate) struct Dash {
    map: DashMap<Box<[u8]>, Box<[u8]>, Hasher>,
}

impl Default for Dash {
    fn default() -> Self {
        Dash {
            map: DashMap::with_hasher(Hasher::default()),
        }
    }
}

impl KvIndex for Dash {
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> bool {
        match self.map.get(key) {
            Some(v) => {
                f(&v);
                true
            }
            None => false,
        }
    }

    fn insert(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        check_entry(key, value)?;
        Ok(self.map.insert(key.into(), value.into()).is_none())
    }

    fn remove(&self, key: &[u8]) -> bool {
        self.map.remove(key).is_some()
    }

    fn len(&self) -> usize {
        self.map.len()
    }

    fn memory_usage(&self) -> MemoryUsage {
        MemoryUsage::default()
    }
}

/// `papaya::HashMap` behind Orrery's API (one guard per operation).
pub(crate) struct Papaya {
    map: papaya::HashMap<Box<[u8]>, Box<[u8]>, Hasher>,
}

impl Default for Papaya {
    fn default() -> Self {
        Papaya {
            map: papaya::HashMap::with_hasher(Hasher::default()),
        }
    }
}

impl KvIndex for Papaya {
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> bool {
        let guard = self.map.guard();
        match self.map.get(key, &guard) {
            Some(v) => {
                f(v);
                true
            }
            None => false,
        }
    }

    fn insert(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        check_entry(key, value)?;
        let guard = self.map.guard();
        Ok(self.map.insert(key.into(), value.into(), &guard).is_none())
    }

    fn remove(&self, key: &[u8]) -> bool {
        let guard = self.map.guard();
        self.map.remove(key, &guard).is_some()
    }

    fn len(&self) -> usize {
        self.map.len()
    }

    fn memory_usage(&self) -> MemoryUsage {
        MemoryUsage::default()
    }
}

/// The map inside [`LockedHashbrown`].
type Map = hashbrown::HashMap<Box<[u8]>, Box<[u8]>, Hasher>;

/// `hashbrown::HashMap` behind a `std::sync::RwLock`.
#[derive(Default)]
pub(crate) struct LockedHashbrown {
    map: RwLock<Map>,
}

impl LockedHashbrown {
    // A panic while the lock is held cannot leave the map invalid, so poison is ignored.
    fn read(&self) -> RwLockReadGuard<'_, Map> {
        self.map.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Map> {
        self.map.write().unwrap_or_else(|e| e.into_inner())
    }
}

impl KvIndex for LockedHashbrown {
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> bool {
        match self.read().get(key) {
            Some(v) => {
                f(v);
                true
            }
            None => false,
        }
    }

    fn insert(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        check_entry(key, value)?;
        Ok(self.write().insert(key.into(), value.into()).is_none())
    }

    fn remove(&self, key: &[u8]) -> bool {
        self.write().remove(key).is_some()
    }

    fn len(&self) -> usize {
        self.read().len()
    }

    fn memory_usage(&self) -> MemoryUsage {
        MemoryUsage::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::tests::differential;

    #[test]
    fn hash_peers_match_model() {
        differential(&Dash::default(), None, 0, 4);
        differential(&Papaya::default(), None, 0, 4);
        differential(&LockedHashbrown::default(), None, 0, 4);
    }
}
