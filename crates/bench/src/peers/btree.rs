//! `std::collections::BTreeMap` peers: `btreemap` is Orrery's reference
//! [`LockedBTreeMap`](orrery::reference::LockedBTreeMap) (a `RwLock` around the map) and
//! registers through the same path as every Orrery structure; `btreemap-st` is the plain
//! map with no lock at all, for one-thread runs only (Wormhole §4 compares against
//! thread-unsafe indexes this way).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};

use orrery::api::ScanVisitor;
use orrery::api::check_entry;
use orrery::{KvIndex, MemoryUsage, OrderedKvIndex, Result};

static NEXT_THREAD: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static THREAD: u64 = NEXT_THREAD.fetch_add(1, Ordering::Relaxed);
}

/// A number unique to the calling thread for the life of the process.
fn thread_number() -> u64 {
    THREAD.with(|t| *t)
}

/// A plain `BTreeMap` usable from the one thread that created it.
///
/// # Concurrency protocol
/// None: the map is owned by its creating thread. Every operation first checks that it runs
/// on that thread and panics otherwise (the registry flags this index single-threaded, so
/// the benchmark never shares it; the panic guards that invariant, it is not an input
/// error). The `RefCell` then catches re-entry from a scan visitor.
pub(crate) struct StBTreeMap {
    owner: u64,
    map: RefCell<BTreeMap<Vec<u8>, Vec<u8>>>,
}

// SAFETY: the only shared state is the `RefCell`, and `with` lets only the creating thread
// (`owner`, a number never reused by another thread) touch it, so the cell is never accessed
// from two threads. Moving the whole map to another thread (Send) is fine: BTreeMap is Send.
unsafe impl Sync for StBTreeMap {}

impl StBTreeMap {
    /// An empty map owned by the calling thread.
    pub(crate) fn new() -> StBTreeMap {
        StBTreeMap {
            owner: thread_number(),
            map: RefCell::new(BTreeMap::new()),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut BTreeMap<Vec<u8>, Vec<u8>>) -> R) -> R {
        assert_eq!(
            thread_number(),
            self.owner,
            "btreemap-st is single-threaded: used from a thread other than its creator"
        );
        f(&mut self.map.borrow_mut())
    }
}

impl KvIndex for StBTreeMap {
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> bool {
        self.with(|m| match m.get(key) {
            Some(v) => {
                f(v);
                true
            }
            None => false,
        })
    }

    fn insert(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        check_entry(key, value)?;
        Ok(self.with(|m| match m.get_mut(key) {
            Some(v) => {
                v.clear();
                v.extend_from_slice(value);
                false
            }
            None => {
                m.insert(key.to_vec(), value.to_vec());
                true
            }
        }))
    }

    fn remove(&self, key: &[u8]) -> bool {
        self.with(|m| m.remove(key).is_some())
    }

    fn len(&self) -> usize {
        self.with(|m| m.len())
    }

    fn memory_usage(&self) -> MemoryUsage {
        MemoryUsage::default()
    }
}

impl OrderedKvIndex for StBTreeMap {
    fn scan(&self, start: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
        self.with(|m| {
            for (k, v) in m.range::<[u8], _>((start, Bound::Unbounded)) {
                if visitor(k, v).is_break() {
                    break;
                }
            }
        })
    }

    fn last(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        self.with(|m| m.last_key_value().map(|(k, v)| (k.clone(), v.clone())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn st_btreemap_matches_model() {
        let m = StBTreeMap::new();
        crate::peers::tests::differential(&m, Some(&m), 0, 3);
    }

    #[test]
    fn st_btreemap_refuses_other_threads() {
        let m = StBTreeMap::new();
        let r = std::thread::scope(|s| s.spawn(|| m.len()).join());
        assert!(r.is_err());
    }
}
