//! Cuckoo Trie: an ordered key-value index whose trie nodes live in a key-eliminating
//! bucketized cuckoo hash table, built for memory-level parallelism (Zeitak and Morrison,
//! SOSP '21; `shared/papers/cuckoo-trie.md`).
//!
//! The trie's nodes are stored by name (the key prefix they stand for) in a cuckoo hash
//! table of 64-byte buckets (§4.1). Since the names of the nodes a search visits are the
//! prefixes of its key, their buckets can be fetched before the walk reaches them: a search
//! keeps the buckets of the next `D` prefixes in flight (Algorithm 1). Entries store no key
//! (§4.2): a node is recognized by its last symbol, its tag and colour, and its parent's
//! colour, through a peelable hash.
//!
//! # Usage
//!
//! ```
//! use orrery_cuckoo_trie::CuckooTrie;
//! use std::ops::{Bound, ControlFlow};
//!
//! let ct = CuckooTrie::new();
//! ct.insert(b"Jam", b"1").unwrap();
//! ct.insert(b"Jos", b"2").unwrap();
//! ct.insert(b"Au", b"3").unwrap();
//! assert_eq!(ct.get(b"Jos").as_deref(), Some(&b"2"[..]));
//! let mut keys = Vec::new();
//! ct.scan(Bound::Included(&b"B"[..]), &mut |k, _| {
//!     keys.push(k.to_vec());
//!     ControlFlow::Continue(())
//! });
//! assert_eq!(keys, [b"Jam".to_vec(), b"Jos".to_vec()]);
//! let down: Vec<_> = ct.range(&b"B"[..]..).rev().map(|e| e.key().to_vec()).collect();
//! assert_eq!(down, [b"Jos".to_vec(), b"Jam".to_vec()]);
//! assert_eq!(ct.update(b"Au", |v| [v, b"!"].concat()), Ok(true));
//! assert_eq!(ct.compute(b"Bo", |old| old.map(<[u8]>::to_vec).or(Some(b"4".to_vec()))), Ok(false));
//! ```
//!
//! The names and their meanings are the ones every Orrery index shares
//! ([`orrery_core::api`], "Naming"); options come from [`Config::builder`].
//!
//! # Consistency guarantees
//!
//! Those of [`orrery_core::api`]. Lookups and scans take no lock; writers lock only the
//! buckets they change, by compare-and-swap on the buckets' version/lock words (§5), so
//! writers to different parts of the trie run in parallel (protocol in `trie/mod.rs` and
//! `trie/update/`, and `docs/cuckoo-trie.md`).
//!
//! # Memory usage
//!
//! `structure_bytes` is the bucket array; `key_value_bytes` the record pools (keys and
//! values, with their 8-byte headers and size-class slack).
//!
//! # Modules
//!
//! | module | what it holds |
//! |---|---|
//! | `hash` | the peelable prefix hash `h`, tags, the two buckets of a hash |
//! | `bucket` | the bucket and entry layouts (bytes), the version/lock protocol of a bucket |
//! | `table` | `ENTRIESFOR`, `SEARCHBYPARENT`, `SEARCHBYCOLOR`, placement and relocation |
//! | `record` | the immutable key-value records leaves reference |
//! | `trie` | the engine (`trie/mod.rs`: the raw trie, node steps, the protocol); `lookup` (point lookups, `get_many` groups), `locate` (successor/predecessor search, subtree-max locators), `invariants` (the full-walk checker) |
//! | `trie/scan` | scans: a depth-first trie walk that keeps many nodes' buckets and leaves' records in flight, and the one batch-and-resume loop of every scan |
//! | `trie/leaf_list` | the paper's leaf-list scan, kept as the walk's reference (feature `bench-internals`) |
//! | `trie/grow` | growth and shrink (§5 "Resizing"): the frozen table copied cooperatively by the writers that meet it (`grow/copy.rs`: copy units and the finisher's table), into a larger table when a placement finds no room, into a smaller one when removals leave it under a quarter full |
//! | `trie/update` | insert (`update/insert.rs`), remove (`update/remove.rs`), read-modify-write under per-bucket writer locking (§5 "Updates"): what each update locks and why it suffices |
//! | `lockset` | the buckets one update locks, its private edits and its commit |
//! | `iter` | `iter`, `range` and the batch source of [`Iter`] |
//! | `config` | [`Config`] and its builder |

// Subtree-max locators are laid out and unit-tested but not used by the trie (see
// `trie/mod.rs`, "The leaf list"): their codec items are otherwise dead.
#[cfg_attr(not(test), allow(dead_code))]
mod bucket;
mod config;
#[cfg_attr(not(test), allow(dead_code))]
mod hash;
mod iter;
mod lockset;
mod record;
#[cfg_attr(not(test), allow(dead_code))]
mod table;
mod trie;

use std::ops::{Bound, ControlFlow};

use orrery_core::api::{self, MemoryUsage, ScanVisitor};
use orrery_core::batch::BatchIter;

pub use config::{Config, ConfigBuilder};
pub use trie::GrowthStats;
use trie::{Decision, Mode};

/// Keys [`CuckooTrie::remove_range`] collects by one scan before removing them: bounds
/// the memory a large range delete holds (the keys copied) without a search per key.
const RANGE_DELETE_BATCH: usize = 1024;

/// An iterator over a key range of a [`CuckooTrie`], in key order from either end: a
/// seekable cursor that copies a batch of pairs at a time into a reusable arena.
///
/// Made by [`CuckooTrie::iter`] and [`CuckooTrie::range`]. It implements [`Iterator`] and
/// [`DoubleEndedIterator`] (`.rev()` yields descending keys; both ends may be used, and they
/// stop where they meet). Items are [`Entry`](orrery_core::batch::Entry)s: handles into the arena (a reference count),
/// so iterating allocates nothing per pair; the arena is refilled in place once per batch
/// when no entry of the previous batch is still held. [`Iter::next_pair`] and
/// [`Iter::next_back_pair`] lend the pair as slices instead.
///
/// No lock or guard is held between calls: each refill copies a batch of pairs (a few dozen) under
/// an epoch guard (one successor or predecessor search, then the prefetching trie walk of
/// `trie/scan.rs`) and records where to resume
/// (after the last key copied going up, below the smallest going down), so a user may keep
/// an `Iter` while writing to the index. Under concurrent writers it is not a snapshot, as a scan is not
/// ([`orrery_core::api`]): keys come strictly ascending from the front and strictly
/// descending from the back, every pair yielded was present with that value at some
/// moment, and every key present throughout (and in range) is yielded once.
///
/// ```
/// use orrery_cuckoo_trie::CuckooTrie;
/// use std::ops::Bound;
/// let ct = CuckooTrie::new();
/// for i in 0u32..1000 {
///     ct.insert(&i.to_be_bytes(), b"v").unwrap();
/// }
/// let mut it = ct.iter();
/// assert_eq!(it.next_pair().map(|(k, _)| k.to_vec()), Some(0u32.to_be_bytes().to_vec()));
/// it.seek(Bound::Excluded(&500u32.to_be_bytes()));
/// assert_eq!(it.next().unwrap().key(), 501u32.to_be_bytes());
/// assert_eq!(it.next_back().unwrap().key(), 999u32.to_be_bytes());
/// assert_eq!(it.count(), 497);
/// let down: Vec<_> = ct.range(&10u32.to_be_bytes()[..]..&13u32.to_be_bytes()[..]).rev().collect();
/// assert_eq!(down.len(), 3);
/// assert_eq!(down[0].key(), 12u32.to_be_bytes());
/// ```
pub type Iter<'a> = BatchIter<&'a CuckooTrie>;

/// A concurrent ordered key-value index over byte strings: a Cuckoo Trie.
///
/// See the [crate docs](crate) for an example and the guarantees.
pub struct CuckooTrie {
    raw: trie::Raw,
}

impl Default for CuckooTrie {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for CuckooTrie {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CuckooTrie")
            .field("len", &self.len())
            .field("config", &self.raw.config)
            .finish_non_exhaustive()
    }
}

impl CuckooTrie {
    /// An empty index with the default [`Config`].
    ///
    /// # Panics
    /// If the initial table (64 KiB) cannot be allocated; [`CuckooTrie::try_new`] returns
    /// the error instead.
    pub fn new() -> Self {
        Self::try_new().unwrap_or_else(|e| panic!("CuckooTrie::new: {e}"))
    }

    /// An empty index with the default [`Config`], or [`api::Error::OutOfMemory`].
    pub fn try_new() -> api::Result<Self> {
        Ok(CuckooTrie {
            raw: trie::Raw::new(Config::default())?,
        })
    }

    /// An empty index with the given options, validated first ([`Config::validate`]);
    /// [`api::ConfigError::OutOfMemory`] when the initial table cannot be allocated.
    pub fn with_config(config: Config) -> Result<Self, api::ConfigError> {
        config.validate()?;
        Ok(CuckooTrie {
            raw: trie::Raw::new(config).map_err(|_| api::ConfigError::OutOfMemory)?,
        })
    }

    /// The options the index was built with.
    pub fn config(&self) -> &Config {
        &self.raw.config
    }

    /// Zero-copy lookup: `f`'s result on the value of `key`, `None` when absent. `f` runs
    /// under an epoch guard: it must be short and must not call back into the index.
    pub fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        if key.len() > api::MAX_KEY_LEN {
            return None;
        }
        let g = orrery_core::sync::pin();
        self.raw.lookup(key, &g).map(|(_, v)| f(v))
    }

    /// A copy of the value of `key`.
    pub fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.get_with(key, <[u8]>::to_vec)
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.get_with(key, |_| ()).is_some()
    }

    /// Looks up every key of `keys`, calling `f(i, value)` in order of `i`. Keys are
    /// walked in groups of 16 whose searches advance in rounds, one step per key per round,
    /// each step reading what the same walk prefetched a round before (the primary bucket
    /// of the next prefix; the secondary one only when the node is not in the primary; the
    /// record once the leaf is read), so the DRAM reads of different keys' walks overlap
    /// (memory-level parallelism across operations; `trie/lookup.rs`, `Raw::lookup_group`).
    /// Nothing is allocated. Each lookup is linearizable on its own.
    pub fn get_many(&self, keys: &[&[u8]], f: &mut dyn FnMut(usize, Option<&[u8]>)) {
        let g = orrery_core::sync::pin();
        let mut out = [None; trie::GROUP];
        let mut group: [&[u8]; trie::GROUP] = [&[]; trie::GROUP];
        let mut base = 0;
        while base < keys.len() {
            // Over-long keys are absent: they are answered without a walk.
            let mut n = 0;
            let mut idx = [0usize; trie::GROUP];
            let mut end = base;
            while end < keys.len() && n < trie::GROUP {
                if keys[end].len() <= api::MAX_KEY_LEN {
                    group[n] = keys[end];
                    idx[n] = end;
                    n += 1;
                }
                end += 1;
            }
            self.raw.lookup_group(&group[..n], &g, &mut out[..n]);
            let mut m = 0;
            for (i, _) in keys.iter().enumerate().take(end).skip(base) {
                if m < n && idx[m] == i {
                    f(i, out[m].map(|(_, v)| v));
                    m += 1;
                } else {
                    f(i, None);
                }
            }
            base = end;
        }
    }

    /// Inserts or replaces the value of `key`; `Ok(true)` if the key was new.
    pub fn insert(&self, key: &[u8], value: &[u8]) -> api::Result<bool> {
        api::check_entry(key, value)?;
        let present =
            self.raw
                .upsert(key, &mut |_| Decision::Store(value.to_vec()), Mode::INSERT)?;
        Ok(!present)
    }

    /// Removes `key`; returns whether it was present.
    ///
    /// A removal that leaves the trie's entries under a quarter of the table's slots
    /// shrinks the table (the same cooperative migration as a growth, into the smallest
    /// table that holds the entries at most half full, never below
    /// [`Config::initial_buckets`]), so this call may take as long as a growth. A shrink
    /// that cannot run (out of memory for the smaller table) does not fail the removal:
    /// the key is removed and the table keeps its size; the shrink is tried again once the
    /// entries have halved ([`GrowthStats::abandoned_shrinks`]).
    pub fn remove(&self, key: &[u8]) -> bool {
        key.len() <= api::MAX_KEY_LEN && self.raw.remove(key)
    }

    /// Upsert or remove by `f(current)`: `Some(v)` stores `v`, `None` removes the key (or
    /// leaves it absent). Returns `Ok(was present)`. Atomic: `f` runs while the buckets
    /// the change writes are locked (the key's leaf, or every bucket an insert of the key
    /// writes), and its result is applied before any other writer can change the key.
    pub fn compute<F>(&self, key: &[u8], f: F) -> api::Result<bool>
    where
        F: FnOnce(Option<&[u8]>) -> Option<Vec<u8>>,
    {
        api::check_key(key)?;
        let mut c = api::ComputeOnce::new(f);
        let present = self
            .raw
            .upsert(key, &mut |old| c.decide(old), Mode::COMPUTE)?;
        c.finish(present)
    }

    /// Replaces the value of an existing key by `f(old)`; `Ok(false)` without calling `f`
    /// when absent; never inserts.
    pub fn update(&self, key: &[u8], f: impl FnOnce(&[u8]) -> Vec<u8>) -> api::Result<bool> {
        if key.len() > api::MAX_KEY_LEN {
            return Ok(false);
        }
        let mut c = api::ComputeOnce::new(|old: Option<&[u8]>| old.map(f));
        let present = self
            .raw
            .upsert(key, &mut |old| c.decide(old), Mode::UPDATE)?;
        c.finish(present)
    }

    /// Rewrites the value of an existing key through `f` (same length). Records are
    /// immutable (readers read them without locks), so this copies the value, lets `f`
    /// change the copy, and publishes it as a new record.
    pub fn update_in_place(&self, key: &[u8], f: impl FnOnce(&mut [u8])) -> api::Result<bool> {
        self.update(key, |old| {
            let mut v = old.to_vec();
            f(&mut v);
            v
        })
    }

    /// Upserts every pair, stopping at the first error; returns how many keys were new.
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

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.raw.len()
    }

    /// Whether the index is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether a growth or a shrink of the table (§5 "Resizing": freezing and
    /// cooperatively copying it into one of twice the buckets, or fewer after removals,
    /// `trie/grow/`) is in progress right now. Lookups and scans never wait for it;
    /// writers help it. For benchmarks and tests (the throughput and latency of
    /// operations that overlap a migration).
    pub fn is_growing(&self) -> bool {
        self.raw.is_growing()
    }

    /// Counts of growths and shrinks so far: completed, given up, and how many copy units
    /// writers other than the one that started a migration copied (cooperation).
    pub fn growth_stats(&self) -> GrowthStats {
        self.raw.growth_stats()
    }

    /// Walks the whole trie and checks its structural invariants (every entry reachable
    /// once, child links, the tail rule, key order, the leaf list, the count); returns the
    /// number of keys, or what is wrong. For tests: call it with no concurrent writer. It
    /// reads every bucket (slow on a large index).
    #[doc(hidden)]
    pub fn check_invariants(&self) -> Result<usize, String> {
        self.raw.check_invariants()
    }

    /// Entries of the hash table: the trie's nodes (leaves, bitmap and jump nodes, the
    /// root), counted at each update's commit. With [`CuckooTrie::slots`] it gives the
    /// table's load factor; it is the node count the paper's Fig 11 memory figure is
    /// computed from (the table at 85% load).
    pub fn entries(&self) -> usize {
        self.raw.entries()
    }

    /// Slots of the current table (4 entry places a 64-byte bucket).
    pub fn slots(&self) -> usize {
        self.raw.slots()
    }

    /// Bytes held: the bucket array, and the record pools.
    pub fn memory_usage(&self) -> MemoryUsage {
        let (table, records) = self.raw.bytes();
        MemoryUsage {
            structure_bytes: table,
            key_value_bytes: records,
        }
    }

    /// Visits pairs in ascending key order from `start` until the visitor breaks: one
    /// successor search, then a depth-first walk of the trie that keeps the buckets of the
    /// next nodes and the records of the next leaves in flight (`trie/scan.rs`), in
    /// batches of a few hundred pairs under one epoch guard each.
    pub fn scan(&self, start: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
        self.raw
            .scan_resumable(start, visitor, trie::Raw::scan_batch);
    }

    /// [`CuckooTrie::scan`] by the paper's leaf list (§4.4: one successor search, then the
    /// leaves' next-leaf locators, one dependent chain of reads per key): the reference the
    /// trie walk is measured against (`orrery-bench lab cuckoo_trie_scan_walk`). Same
    /// guarantees. Feature `bench-internals` only.
    #[cfg(feature = "bench-internals")]
    #[doc(hidden)]
    pub fn scan_leaf_list(&self, start: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
        self.raw
            .scan_resumable(start, visitor, trie::Raw::scan_batch_list);
    }

    /// Visits, in descending key order, the pairs below `end` until the visitor breaks:
    /// one predecessor search, then the walk of [`CuckooTrie::scan`] mirrored, in batches
    /// of a few hundred pairs under one epoch guard each.
    pub fn scan_rev(&self, end: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
        self.raw
            .scan_resumable(end, visitor, trie::Raw::scan_batch_rev);
    }

    /// Removes every key within the bounds `start..end`; returns how many this call
    /// removed. Keys are collected by ascending scans of up to a thousand keys, each batch then removed key by key (each removal linearizable on its own, a
    /// removal may shrink the table: [`CuckooTrie::remove`]). Not atomic as a whole: a
    /// key inserted into the range during the call may survive it, and a concurrent
    /// remover may take keys first (they are not counted here).
    pub fn remove_range(&self, start: Bound<&[u8]>, end: Bound<&[u8]>) -> usize {
        let beyond = |k: &[u8]| match end {
            Bound::Included(e) => k > e,
            Bound::Excluded(e) => k >= e,
            Bound::Unbounded => false,
        };
        let mut removed = 0;
        let mut from: Bound<Vec<u8>> = start.map(<[u8]>::to_vec);
        let mut batch: Vec<Vec<u8>> = Vec::new();
        loop {
            batch.clear();
            let mut ended = true;
            self.scan(from.as_ref().map(Vec::as_slice), &mut |k, _| {
                if beyond(k) {
                    return ControlFlow::Break(());
                }
                batch.push(k.to_vec());
                if batch.len() == RANGE_DELETE_BATCH {
                    ended = false;
                    return ControlFlow::Break(());
                }
                ControlFlow::Continue(())
            });
            for k in &batch {
                removed += usize::from(self.remove(k));
            }
            match batch.pop() {
                Some(last) if !ended => from = Bound::Excluded(last),
                _ => return removed,
            }
        }
    }

    /// Visits the pairs whose key starts with `prefix`, ascending.
    pub fn scan_prefix(&self, prefix: &[u8], visitor: &mut ScanVisitor<'_>) {
        self.scan(Bound::Included(prefix), &mut |k, v| {
            if k.starts_with(prefix) {
                visitor(k, v)
            } else {
                ControlFlow::Break(())
            }
        });
    }

    /// The pair with the smallest key.
    pub fn first(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        let g = orrery_core::sync::pin();
        self.raw
            .seek(Bound::Unbounded, true, &g)
            .map(|(k, v)| (k.to_vec(), v.to_vec()))
    }

    /// The pair with the largest key.
    pub fn last(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        let g = orrery_core::sync::pin();
        self.raw
            .seek(Bound::Unbounded, false, &g)
            .map(|(k, v)| (k.to_vec(), v.to_vec()))
    }
}

orrery_core::index_traits!(impl[] CuckooTrie as "CuckooTrie"; ordered + scan_prefix);
