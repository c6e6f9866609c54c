//! Large collections: their elements in shared indexes under composite keys `id ++ …`
//! (`crate::layout::keys`), and their bookkeeping (element count, a list's first
//! position and node table) in a table by id. Hashes, sets and sorted sets share one
//! ordered index (a [`Wormhole`]): their scans, ranges and random probes walk key ranges.
//! Lists share one hash table (a [`Mercury`]) of packed nodes, `id ++ node number → run of
//! elements` (as Redis's quicklist): the list's order is its [`Nodes`] table here (node
//! numbers and element counts, head to tail), so every node is found by a walk of that
//! table and one point lookup, which a hash table answers without an ordered index's
//! search; measured in `docs/server.md`.
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
//!
//! # Large strings
//!
//! A string too long for the index's values (`MAX_VALUE_LEN`, 1 MiB with the header) is
//! stored out of line: its key's value is a header of encoding `Large` and an 8-byte id
//! (`value`), and its bytes are one reference-counted heap buffer ([`Blob`]) in a table
//! by id, here, next to the collections' table (ids come from one counter, so an id
//! names a collection or a string, never both). A buffer is created before the key
//! names it and removed after the key no longer does, both under the key's stripe. A
//! lock-free reader that found the id takes a reference (an `Arc` clone under the
//! table shard's mutex) and reads without any lock; if the buffer is already gone the
//! key changed after its lookup, and the reader looks the key up again
//! (`Store::read`). `docs/server.md` ("Large strings") says why this rather than chunks.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use orrery::mercury::Mercury;
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
    /// Whether this is a list (its elements are in the positions table).
    pub(crate) list: bool,
    /// A list's nodes, head to tail (empty for the other types). Changed only under the
    /// key's stripe, with `head` and `len`, so that the append-only file's rewrite, which
    /// holds no stripe, reads the three and the nodes' bytes consistently under this lock.
    pub(crate) nodes: Mutex<Nodes>,
    /// A set's pending random picks for `SPOP`, or a sorted set's run of members at one
    /// end for `ZPOPMIN`/`ZPOPMAX` (see [`Picks`]). Empty for the other types.
    pub(crate) picks: Mutex<Picks>,
}

/// Element keys read in one run and kept for the next pops (at most a few, about 1 KiB).
/// Any of them may be gone since: a pop checks by removing.
#[derive(Debug, Default)]
pub(crate) struct Picks {
    /// A set's: element keys read after a random point of the hash order, popped at
    /// random (`crate::coll`'s set). A sorted set's: the order keys at one end of its
    /// order, each followed by the 8 bytes of its stored score, the end's first last (so
    /// that a pop takes `Vec::pop`); the run stays exact because an insert whose order key
    /// falls within it drops it (`crate::coll`'s sorted set).
    pub(crate) keys: Vec<Vec<u8>>,
    /// A sorted set's run is from the high end (`ZPOPMAX`'s), else the low end.
    pub(crate) max: bool,
    /// A sorted set's runs read since its run was last dropped (by an insert within it,
    /// or a pop from the other end): the next run reads `2^refills - 1` members (at most
    /// 15) beyond what its pop takes, so that pops between inserts that keep dropping the
    /// run read little more than they take.
    pub(crate) refills: u32,
}

/// One node of a large list: a run of elements under `id ++ no` in the positions table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Node {
    /// The node's number (its key's second half); unique within the list, not ordered.
    pub(crate) no: u64,
    /// Elements in the node (at least 1).
    pub(crate) count: u32,
    /// Bytes of the node's run.
    pub(crate) bytes: u32,
}

/// A large list's node table: its nodes head to tail, and the next unused node number.
#[derive(Debug, Default)]
pub(crate) struct Nodes {
    /// The nodes, head to tail.
    pub(crate) list: VecDeque<Node>,
    /// The next node number to hand out.
    pub(crate) next: u64,
}

impl Nodes {
    /// A fresh node number.
    pub(crate) fn fresh(&mut self) -> u64 {
        let n = self.next;
        self.next = self.next.wrapping_add(1);
        n
    }
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

    /// A list's node table, locked (see [`Meta::nodes`]).
    pub(crate) fn lock_nodes(&self) -> MutexGuard<'_, Nodes> {
        self.nodes.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A set's pending random picks, locked (see [`Meta::picks`]).
    pub(crate) fn lock_picks(&self) -> MutexGuard<'_, Picks> {
        self.picks.lock().unwrap_or_else(|p| p.into_inner())
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

/// The bytes of a large string, shared by the table and its readers.
pub(crate) type Blob = Arc<Vec<u8>>;

/// One shard of the large strings' table: id → bytes.
type BlobShard = Mutex<HashMap<u64, Blob>>;

/// The element index and the table of large collections.
pub(crate) struct Large {
    pub(crate) elements: Wormhole,
    pub(crate) positions: Mercury,
    shards: Box<[Shard]>,
    blobs: Box<[BlobShard]>,
    /// The bytes of every large string in the table (for the memory limit).
    blob_bytes: AtomicUsize,
    next_id: AtomicU64,
}

impl Large {
    pub(crate) fn new() -> Large {
        Large {
            elements: Wormhole::new(),
            positions: Mercury::with_config(Default::default())
                .unwrap_or_else(|e| unreachable!("Mercury's defaults are valid: {e}")),
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            blobs: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            blob_bytes: AtomicUsize::new(0),
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

    /// A new, empty collection (a list with `list`): its id and bookkeeping.
    pub(crate) fn create(&self, list: bool) -> (u64, Arc<Meta>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let meta = Arc::new(Meta {
            list,
            ..Meta::default()
        });
        self.shard(id).insert(id, meta.clone());
        (id, meta)
    }

    fn blob_shard(&self, id: u64) -> MutexGuard<'_, HashMap<u64, Blob>> {
        self.blobs[id as usize % SHARDS]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Stores the bytes of a large string under a new id (not yet named by any key).
    pub(crate) fn create_blob(&self, bytes: Vec<u8>) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.blob_bytes.fetch_add(bytes.len(), Ordering::Relaxed);
        self.blob_shard(id).insert(id, Arc::new(bytes));
        id
    }

    /// The bytes of the large string `id`, if it still exists.
    pub(crate) fn blob(&self, id: u64) -> Option<Blob> {
        self.blob_shard(id).get(&id).cloned()
    }

    /// The bytes of every large string.
    pub(crate) fn blob_bytes(&self) -> usize {
        self.blob_bytes.load(Ordering::Relaxed)
    }

    /// Removes collection or large string `id` and its elements or bytes (the bytes are
    /// freed when the last reader drops its reference).
    pub(crate) fn drop_collection(&self, id: u64) {
        let removed = self.blob_shard(id).remove(&id);
        if let Some(b) = removed {
            self.blob_bytes.fetch_sub(b.len(), Ordering::Relaxed);
            return;
        }
        let Some(meta) = self.shard(id).remove(&id) else {
            return;
        };
        if meta.list {
            let mut g = meta.lock_nodes();
            for n in g.list.drain(..) {
                self.positions.remove(&crate::layout::list_key(id, n.no));
            }
        } else {
            let (lo, hi) = id_bounds(id);
            self.elements.remove_range(
                lo.as_ref().map(Vec::as_slice),
                hi.as_ref().map(Vec::as_slice),
            );
        }
    }
}
