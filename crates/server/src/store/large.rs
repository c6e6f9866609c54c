//! Large collections: their elements in one shared ordered index (a [`Wormhole`]) under
//! composite keys `id ++ …` (`crate::layout::keys`), and their bookkeeping (element count,
//! a list's first position) in a table by id.
//!
//! Why one shared index rather than one index per collection, and why only past the
//! compact thresholds: measured in `docs/server.md` ("Representation"). In short: a
//! Wormhole reserves about 2 MiB when built, so an index per collection costs megabytes
//! per key; composite keys cost the 8-byte id (and a 4-byte hash) per element and nothing
//! per collection; the compact form costs neither, but every change rewrites it.
//!
//! A collection's elements and its [`Meta`] change only under its key's stripe; the
//! append-only file's rewrite reads both without it (the index's scans are safe under
//! concurrent writes; the counts are atomics).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use orrery::wormhole::Wormhole;

use crate::layout::id_bounds;

/// The bookkeeping of one large collection.
#[derive(Debug, Default)]
pub(crate) struct Meta {
    /// Number of elements (fields, members, list elements).
    pub(crate) len: AtomicU64,
    /// A list's first position (its elements are at `head .. head + len`); 0 for the
    /// other types.
    pub(crate) head: AtomicU64,
}

impl Meta {
    /// Number of elements.
    pub(crate) fn len(&self) -> u64 {
        self.len.load(Ordering::Relaxed)
    }

    /// Adds `n` (negative: removes) to the count.
    pub(crate) fn add(&self, n: i64) {
        let v = self.len().saturating_add_signed(n);
        self.len.store(v, Ordering::Relaxed);
    }

    /// A list's first position.
    pub(crate) fn head(&self) -> u64 {
        self.head.load(Ordering::Relaxed)
    }

    /// Sets a list's span: first position and length.
    pub(crate) fn set_span(&self, head: u64, len: u64) {
        self.head.store(head, Ordering::Relaxed);
        self.len.store(len, Ordering::Relaxed);
    }
}

const SHARDS: usize = 64;

/// One shard of the table: id → bookkeeping.
type Shard = Mutex<HashMap<u64, Arc<Meta>>>;

/// The element index and the table of large collections.
pub(crate) struct Large {
    pub(crate) elements: Wormhole,
    shards: Box<[Shard]>,
    next_id: AtomicU64,
}

impl Large {
    pub(crate) fn new() -> Large {
        Large {
            elements: Wormhole::new(),
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            next_id: AtomicU64::new(1),
        }
    }

    fn shard(&self, id: u64) -> MutexGuard<'_, HashMap<u64, Arc<Meta>>> {
        self.shards[id as usize % SHARDS]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// The collection with id `id`, if it exists.
    pub(crate) fn get(&self, id: u64) -> Option<Arc<Meta>> {
        self.shard(id).get(&id).cloned()
    }

    /// A new, empty collection: its id and bookkeeping.
    pub(crate) fn create(&self) -> (u64, Arc<Meta>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let meta = Arc::new(Meta::default());
        self.shard(id).insert(id, meta.clone());
        (id, meta)
    }

    /// Removes collection `id` and its elements.
    pub(crate) fn drop_collection(&self, id: u64) {
        if self.shard(id).remove(&id).is_some() {
            let (lo, hi) = id_bounds(id);
            self.elements.remove_range(
                lo.as_ref().map(Vec::as_slice),
                hi.as_ref().map(Vec::as_slice),
            );
        }
    }
}
