//! scc peers: `scc-tree` (`scc::TreeIndex`, a lock-free B+-tree optimised for reads) and
//! `scc-hash` (`scc::HashMap`).
//!
//! `TreeIndex` has no upsert that reports whether the key was new: the adapter tries
//! `insert_sync` (one traversal for a new key) and on failure `upsert_sync` (a second one).
//! `HashMap::upsert_sync` returns the old value, so it needs a single call.

use std::ops::Bound;

use orrery::api::ScanVisitor;
use orrery::api::check_entry;
use orrery::{KvIndex, MemoryUsage, OrderedKvIndex, Result};
use scc::{Guard, HashMap, TreeIndex};

use super::Hasher;

/// `scc::TreeIndex` behind Orrery's API.
#[derive(Default)]
pub(crate) struct SccTree {
    tree: TreeIndex<Box<[u8]>, Box<[u8]>>,
}

impl KvIndex for SccTree {
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> bool {
        self.tree.peek_with(key, |_, v| f(v)).is_some()
    }

    fn insert(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        check_entry(key, value)?;
        match self.tree.insert_sync(key.into(), value.into()) {
            Ok(()) => Ok(true),
            Err((k, v)) => {
                self.tree.upsert_sync(k, v);
                Ok(false)
            }
        }
    }

    fn remove(&self, key: &[u8]) -> bool {
        self.tree.remove_sync(key)
    }

    fn len(&self) -> usize {
        self.tree.len()
    }

    fn memory_usage(&self) -> MemoryUsage {
        MemoryUsage::default()
    }
}

impl OrderedKvIndex for SccTree {
    fn scan(&self, start: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
        let guard = Guard::new();
        for (k, v) in self
            .tree
            .range::<[u8], _>((start, Bound::Unbounded), &guard)
        {
            if visitor(k, v).is_break() {
                break;
            }
        }
    }

    fn last(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        let guard = Guard::new();
        self.tree
            .iter(&guard)
            .next_back()
            .map(|(k, v)| (k.to_vec(), v.to_vec()))
    }
}

/// `scc::HashMap` (with foldhash) behind Orrery's API.
pub(crate) struct SccHash {
    map: HashMap<Box<[u8]>, Box<[u8]>, Hasher>,
}

impl Default for SccHash {
    fn default() -> Self {
        SccHash {
            map: HashMap::with_hasher(Hasher::default()),
        }
    }
}

impl KvIndex for SccHash {
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> bool {
        self.map.read_sync(key, |_, v| f(v)).is_some()
    }

    fn insert(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        check_entry(key, value)?;
        Ok(self.map.upsert_sync(key.into(), value.into()).is_none())
    }

    fn remove(&self, key: &[u8]) -> bool {
        self.map.remove_sync(key).is_some()
    }

    fn len(&self) -> usize {
        self.map.len()
    }

    fn memory_usage(&self) -> MemoryUsage {
        MemoryUsage::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scc_peers_match_model() {
        let t = SccTree::default();
        crate::peers::tests::differential(&t, Some(&t), 0, 4);
        crate::peers::tests::differential(&SccHash::default(), None, 0, 4);
    }
}
