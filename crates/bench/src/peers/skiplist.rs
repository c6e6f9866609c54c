//! `skiplist`: crossbeam-skiplist's lock-free `SkipMap`.
//!
//! `SkipMap::insert` replaces silently, so the adapter inserts with `get_or_insert` and
//! recognises its own value by address: a new key costs one traversal, overwriting an
//! existing key a second one (`insert`). Empty values have no distinct address, so for
//! them a lookup first tells whether the key was present.

use std::ops::Bound;

use crossbeam_skiplist::SkipMap;
use orrery::api::ScanVisitor;
use orrery::api::check_entry;
use orrery::{KvIndex, MemoryUsage, OrderedKvIndex, Result};

/// crossbeam-skiplist behind Orrery's API.
#[derive(Default)]
pub(crate) struct SkipList {
    map: SkipMap<Box<[u8]>, Box<[u8]>>,
}

impl KvIndex for SkipList {
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> bool {
        match self.map.get(key) {
            Some(e) => {
                f(e.value());
                true
            }
            None => false,
        }
    }

    fn insert(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        check_entry(key, value)?;
        if value.is_empty() {
            let new = !self.map.contains_key(key);
            self.map.insert(key.into(), value.into());
            return Ok(new);
        }
        let v: Box<[u8]> = value.into();
        let ours = v.as_ptr();
        let entry = self.map.get_or_insert(key.into(), v);
        if entry.value().as_ptr() == ours {
            return Ok(true);
        }
        self.map.insert(key.into(), value.into());
        Ok(false)
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

impl OrderedKvIndex for SkipList {
    fn scan(&self, start: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
        for e in self.map.range::<[u8], _>((start, Bound::Unbounded)) {
            if visitor(e.key(), e.value()).is_break() {
                break;
            }
        }
    }

    fn last(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        self.map
            .back()
            .map(|e| (e.key().to_vec(), e.value().to_vec()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skiplist_matches_model() {
        let m = SkipList::default();
        crate::peers::tests::differential(&m, Some(&m), 0, 4);
        let e = SkipList::default();
        crate::peers::tests::differential(&e, Some(&e), 0, 0);
    }
}
