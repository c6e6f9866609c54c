//! Wormhole: a concurrent ordered key-value index with `O(log L)` lookups
//! (Wu, Ni, Jiang, EuroSys '19; `shared/papers/wormhole.md`).
//!
//! Keys live in sorted leaves of up to 128 pairs linked into a *LeafList* (a B+-tree's leaf
//! level, §2.2). Each leaf has an *anchor* that separates it from its left neighbour, and
//! every prefix of every anchor is an item of a hash table, the *MetaTrieHT* (§2.3–2.4):
//! a trie over the anchors flattened into a hash table. A lookup finds the longest prefix
//! of its key present in the table by binary search on prefix length (Algorithm 1: about
//! `log2 L` probes, independent of the number of keys), steps to a sibling subtree's
//! leftmost or rightmost leaf (Algorithm 3), and finds the key in the leaf through a
//! hash-ordered tag array (§3.2).
//!
//! # Usage
//!
//! ```
//! use orrery_wormhole::Wormhole;
//! use orrery_core::{KvIndex, OrderedKvIndex, OrderedKvIndexExt};
//! use std::ops::{Bound, ControlFlow};
//!
//! let wh = Wormhole::new();
//! wh.insert(b"Jam", b"1").unwrap();
//! wh.insert(b"Jos", b"2").unwrap();
//! wh.insert(b"Au", b"3").unwrap();
//! assert_eq!(wh.get(b"Jos").as_deref(), Some(&b"2"[..]));
//! let mut keys = Vec::new();
//! wh.scan(Bound::Included(&b"B"[..]), &mut |k, _| {
//!     keys.push(k.to_vec());
//!     ControlFlow::Continue(())
//! });
//! assert_eq!(keys, [b"Jam".to_vec(), b"Jos".to_vec()]);
//! assert_eq!(wh.prefix_collect(b"J").len(), 2);
//! // Iterators, as for `BTreeMap`: ranges, both directions, seekable (see `Iter`).
//! let down: Vec<_> = wh.range(&b"B"[..]..).rev().map(|e| e.key().to_vec()).collect();
//! assert_eq!(down, [b"Jos".to_vec(), b"Jam".to_vec()]);
//! assert_eq!(wh.update(b"Au", |v| [v, b"!"].concat()), Ok(true)); // replace existing
//! assert_eq!(wh.compute(b"Bo", |old| old.map(<[u8]>::to_vec).or(Some(b"4".to_vec()))), Ok(false)); // upsert
//! ```
//!
//! The names and their meanings are the ones every Orrery index shares
//! ([`orrery_core::api`], "Naming"); options come from [`Config::builder`].
//!
//! # Parts (one module each)
//!
//! | module | paper | what |
//! |---|---|---|
//! | `anchor` | §2.2, §3.3 | anchor choice; proof that any bytes work without fat nodes |
//! | `leaf` | §3.2, Fig 7 | leaf layout, tag array, direct positioning, lazy sorting |
//! | `meta` | §2.3–2.4, §3.1, Fig 5–6 | MetaTrieHT items and 64-byte slot table |
//! | `items` | — | a table's items, placed by hash so that searches can prefetch them |
//! | `search` | Algorithms 1, 3 | binary search on prefix length, sibling step |
//! | `smo` | Algorithm 4, §2.5 | split, merge, RCU pair of tables, locking protocol |
//! | `iter` | Algorithm 2 | scans, double-ended seekable iterator, range delete, first/last |
//! | `batch` | — | `get_many`: a prefetch pipeline across keys |
//! | `kv` | — | one block per pair |
//!
//! # Consistency and concurrency (§2.5)
//!
//! Point operations are linearizable: each takes effect under its leaf's lock. Readers
//! never lock the MetaTrieHT; they pin an epoch guard (`orrery_core::sync`), search the
//! published table, lock one leaf, and restart if the leaf is newer than the table. Splits
//! and merges serialize on one mutex and publish a second copy of the table with one
//! pointer swap. The full protocol is in the `smo` module docs. Scans lock leaves hand over
//! hand and are not snapshots (see [`orrery_core::api`]). Callbacks (`get_with`, scan
//! visitors) run under a leaf lock and must not call back into the index.
//!
//! # Deviations from the paper (all argued in the module docs)
//!
//! * `⊥` is a flag bit in the item of the anchor instead of a reserved byte, so any byte
//!   strings work and there are no fat nodes (`anchor`).
//! * The shadow table catches up lazily, at the start of the next split or merge, instead
//!   of the writer waiting a grace period right after publishing (`smo`).
//! * Splits pick, near the middle, the split point with the shortest anchor (`anchor`).
//! * The paper's leaf items (childless anchors) are not items: their slot entry references
//!   the anchor's leaf directly (bit 47 of the entry), the anchor is kept in the leaf's
//!   header line, and the final full comparison of a search is made there. This removes
//!   most items and one dependent DRAM read from lookups once the MetaTrieHT is out of
//!   cache (`meta`, measured there and in `docs/wormhole.md`).
//! * Pairs of at most 16 bytes live in the leaf, in a cell per tag slot that is prefetched
//!   with the home tag line (one DRAM round trip per lookup after the MetaTrieHT instead of
//!   two); each leaf gets the inline area only when it is made for pairs that mostly fit
//!   (the head, and the right leaf of a split whose moving pairs are at least half small),
//!   so long-key sets do not pay for it and a set whose pair sizes change adapts. Pair blocks have a 2-byte header for keys under
//!   255 bytes (`leaf`, "Inline pairs"; `kv`).
//! * A leaf's tag array spreads its entries over all slots (holes carry their right
//!   neighbour's tag, so the array stays sorted) and direct positioning uses the capacity
//!   instead of the key count, so a lookup fetches the leaf header and its tag line in
//!   parallel instead of one after the other (`leaf`).
//!
//! * Items are one 64-byte line: they keep the first 7 prefix bytes, not the rest. The
//!   prefix of an item is a prefix of its leftmost leaf's anchor, so a search that ends on
//!   a longer item matched by tag verifies it against the anchor of the leaf it reaches
//!   through it (every leaf below an item extends its prefix). On `url` stored prefixes
//!   made items 128 bytes on average; this gave back 4.2 B/key (`meta`, "Prefix bytes past
//!   the seventh are not stored").
//! * Items live in an array per table at a position computed from their hash (or the next
//!   free one), and a search prefetches the item of its most likely final prefix length
//!   with its first slots, so the item read usually leaves the chain of dependent reads
//!   (`items`; [`Config::prefetch_items`]).
//! * A lookup or point write whose search trusted a tag match (a leaf entry, or an item
//!   longer than 7 bytes) compares its target leaf's anchor after searching the leaf,
//!   under its lock, so that the anchor block and the pair block are fetched in parallel;
//!   a mismatch restarts with exact probes (`search::finish`, with the argument that this
//!   keeps operations linearizable).
//!
//! # Memory placement and prefetching (not in the paper; measured)
//!
//! A lookup is a chain of dependent reads: MetaTrieHT slots, the matched item (none when the
//! search ends on a leaf entry), the leaf header and tag line, the pair block. On this project's machine (a VM, where a TLB miss
//! walks two levels of page tables) a random read with 4 KiB pages costs about 1.7× one
//! with 2 MiB pages, so every link of the chain lives in huge pages: leaves, pair blocks (`orrery_core::alloc::SizeClassPool`), and slot and item arrays of
//! 2 MiB or more (`meta`, `items`). The paper's C implementation gets the same effect from a
//! huge-page allocator. Algorithm 1 prefetches the slots of its first three rounds (the
//! top of the binary search tree over prefix lengths, at most 7 slots) so that they
//! arrive together, with the home position of the item of the most likely final length
//! (`items`), and every probe hit prefetches its item (one line). Inserts find their tag slot
//! with the lookup's walk from the home slot (the lines just read) and the nearest hole by
//! an outward search from there, and sort keys for a split by the 8 bytes after the
//! leaf's common prefix before falling back to `memcmp` (`leaf`, "Inserts", "Splits"). Measured effect, same
//! shared-machine runs (10M random 8-byte keys, thread-CPU time, `orrery-bench`): see
//! `docs/wormhole.md`.
//!
//! # Memory accounting
//!
//! Leaves and small pair blocks come from `orrery_core::alloc::SlabPool`s, i.e. from
//! `mmap`ed 2 MiB chunks, not from the global allocator (a counting global allocator sees
//! almost nothing; `memory_usage()` and RSS see it all). `structure_bytes` counts the leaf
//! pools' reserved chunks minus the inline pairs' bytes, anchors, both MetaTrieHTs (slot
//! and item arrays at their reserved size), and the unused part of the pair pools'
//! chunks; `key_value_bytes` counts the pair blocks at their slot
//! size (2- or 9-byte header, key, value, rounded up to 8 bytes; blocks over 256 bytes come
//! from the global allocator at their exact size) and inline pairs at their key and value
//! bytes. With [`Config::prefault`], `structure_bytes` also counts the populator's spare
//! chunk (at most one 2 MiB chunk, resident but in no pool yet: see
//! `orrery_core::alloc::Populator`). The sum is the memory held, with nothing counted twice.
//!
//! # Pre-faulting new chunks (not in the paper; measured)
//!
//! The first write into a fresh 2 MiB slab chunk makes the kernel clear the huge page
//! (4–14 ms on this project's VM), and the writer is an insert. With [`Config::prefault`]
//! (the default) the index's leaf and pair pools share one
//! `orrery_core::alloc::Populator`: once they hold 16 MiB, a background thread keeps one
//! chunk mapped and populated ahead of need, and a pool that needs a chunk takes it. The
//! thread's CPU time is not the inserting thread's; `docs/wormhole.md` reports wall-clock
//! and process CPU as well. The thread is joined when the index is dropped.

#![deny(unsafe_op_in_unsafe_fn)]

mod anchor;
mod batch;
mod config;
mod items;
mod iter;
mod kv;
mod leaf;
mod meta;
mod plan;
mod search;
mod smo;
#[cfg(test)]
mod tests_unit;
mod traits;

use std::sync::{Arc, Mutex};

use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};

use orrery_core::alloc::Populator;
use orrery_core::api::{self, MemoryUsage, check_entry, check_key};

pub use config::{Config, ConfigBuilder};
pub use iter::Iter;
#[doc(hidden)]
pub use meta::MetaStats;
pub use orrery_core::api::ConfigError;
pub use orrery_core::batch::Entry;
#[doc(hidden)]
pub use search::SearchTrace;

use crate::deps::sync::{Backoff, Guard, StripedCounter};
use crate::kv::{InlinePair, Kv, Pair};
use crate::leaf::{LeafAccess, LeafPools, LeafPtr, ReadLeaf, WriteLeaf, leaf_tag};
use crate::meta::MetaTable;
use crate::smo::Writer;
use orrery_core::alloc::SizeClassPool;

/// The shared modules this crate uses.
mod deps {
    pub(crate) use orrery_core::{hash, sync};
}

pub(crate) use orrery_core::prefetch;

/// Counters of [`Wormhole::counts`]: keys.
const LEN: usize = 0;
/// Pair bytes: block slots, plus key and value bytes of inline pairs.
const KV_BYTES: usize = 1;
/// Key and value bytes of inline pairs (inside leaf blocks).
const INLINE_BYTES: usize = 2;

/// A concurrent ordered key-value index over byte strings: Wormhole (see the crate docs).
pub struct Wormhole {
    /// The published MetaTrieHT (from `Box::into_raw`).
    current: AtomicPtr<MetaTable>,
    /// The MetaTrieHT writer mutex and the shadow table.
    writer: Mutex<Writer>,
    /// The first leaf (anchor `""`; never removed).
    head: LeafPtr,
    /// Leaf blocks (shared with deferred frees, which may run after the index is dropped).
    pool: Arc<LeafPools>,
    cfg: Config,
    /// [`LEN`], [`KV_BYTES`] and [`INLINE_BYTES`], striped per thread.
    counts: StripedCounter<3>,
    /// Size-class pools of the pair blocks (`classes`, `kv`).
    kvp: SizeClassPool,
    leaves: AtomicUsize,
    anchor_bytes: AtomicUsize,
    meta_bytes: AtomicUsize,
    /// Restarts caused by stale tables (diagnostics).
    restarts: AtomicU64,
    /// Keeps a fresh chunk populated for the leaf and pair pools (`Config::prefault`;
    /// disabled: no thread). Its drop joins its thread.
    populator: Populator,
}

// SAFETY: all shared state is synchronized by leaf locks, the writer mutex and the epoch
// scheme (see `smo`); raw pointers are owned by the index.
unsafe impl Send for Wormhole {}
// SAFETY: as above.
unsafe impl Sync for Wormhole {}

impl Default for Wormhole {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Wormhole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wormhole")
            .field("config", &self.cfg)
            .field("len", &self.counts.sum(LEN))
            .field("leaves", &self.leaves.load(Ordering::Relaxed))
            .finish()
    }
}

/// Where a key is, or would go, in a locked leaf.
enum Pos {
    Found(usize),
    Absent { sorted_at: Option<usize> },
}

impl Wormhole {
    /// An empty index with the default [`Config`].
    ///
    /// Allocates the first leaf (taking the first 2 MiB chunk of the leaf pool) and the
    /// two MetaTrieHTs; if even that memory cannot be had it reports the failure as a
    /// failed `Box::new` does ([`std::alloc::handle_alloc_error`]). [`Wormhole::try_new`]
    /// returns the error instead.
    pub fn new() -> Self {
        Self::try_new().unwrap_or_else(|_| {
            std::alloc::handle_alloc_error(std::alloc::Layout::new::<MetaTable>())
        })
    }

    /// An empty index with the default [`Config`], or [`api::Error::OutOfMemory`] when its
    /// first leaf and MetaTrieHTs cannot be allocated.
    pub fn try_new() -> api::Result<Self> {
        Self::from_valid_config(Config::default())
    }

    /// The options this index was built with.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// An empty index with `cfg` (valid), or [`api::Error::OutOfMemory`].
    pub(crate) fn from_valid_config(cfg: Config) -> api::Result<Self> {
        let populator = if cfg.prefault {
            Populator::new()
        } else {
            Populator::disabled()
        };
        let pool = Arc::new(LeafPools::new(cfg.leaf_capacity));
        pool.attach(&populator);
        let head = LeafPtr::alloc(&pool, cfg.leaf_capacity, Box::new([]), 0)?;
        let tables = MetaTable::new(head).and_then(|t1| Ok((t1, MetaTable::new(head)?)));
        let (t1, t2) = match tables {
            Ok((t1, t2)) => (Box::new(t1), Box::new(t2)),
            Err(e) => {
                // SAFETY: the head was never published; nobody else has seen it.
                unsafe { head.free(&pool) };
                return Err(e);
            }
        };
        let kvp = kv::kv_pools();
        kvp.attach(&populator);
        let meta = t1.bytes() * 2;
        Ok(Wormhole {
            current: AtomicPtr::new(Box::into_raw(t1)),
            writer: Mutex::new(Writer::new(t2)),
            head,
            pool,
            cfg,
            counts: StripedCounter::new(),
            kvp,
            leaves: AtomicUsize::new(1),
            anchor_bytes: AtomicUsize::new(0),
            meta_bytes: AtomicUsize::new(meta),
            restarts: AtomicU64::new(0),
            populator,
        })
    }

    /// The published table, alive for the guard's lifetime.
    #[inline]
    fn table<'g>(&self, _guard: &'g Guard) -> &'g MetaTable {
        // SAFETY: the published pointer is always a live table; a table stops being
        // published only by a swap, after which the writer writes it only once every
        // guard pinned before the swap was dropped (`smo`), and tables are freed only when
        // the index is dropped.
        unsafe { &*self.current.load(Ordering::Acquire) }
    }

    /// Version of the published table (writer side, under the mutex).
    fn published_version(&self) -> u64 {
        // SAFETY: called under the writer mutex: the published table cannot change.
        unsafe { &*self.current.load(Ordering::Acquire) }.version
    }

    /// Number of lookups that restarted because their table was stale (diagnostics).
    #[doc(hidden)]
    pub fn restarts(&self) -> u64 {
        self.restarts.load(Ordering::Relaxed)
    }

    /// Item and slot counts of the published MetaTrieHT (diagnostics; takes the writer
    /// mutex, so the table does not change while it is walked).
    #[doc(hidden)]
    pub fn meta_stats(&self) -> MetaStats {
        let _w = self.lock_writer_for_validation();
        // SAFETY: under the writer mutex the published table is neither swapped nor freed.
        unsafe { &*self.current.load(Ordering::Acquire) }.stats()
    }

    /// What the chunk populator did (diagnostics; see [`Config::prefault`]).
    #[doc(hidden)]
    pub fn populator_stats(&self) -> orrery_core::alloc::PopulatorStats {
        self.populator.stats()
    }

    /// What the search of `key` in the published table does: range, rounds, prefetch
    /// batches, longest matching prefix (diagnostics, for `examples/wormhole_az.rs`).
    #[doc(hidden)]
    pub fn debug_search_trace(&self, key: &[u8]) -> SearchTrace {
        let g = deps::sync::pin();
        search::trace(self.table(&g), key, &self.cfg)
    }

    /// Anchor length → number of anchors, of the published table (diagnostics).
    #[doc(hidden)]
    pub fn debug_anchor_lens(&self) -> Vec<(usize, usize)> {
        let g = deps::sync::pin();
        self.table(&g).anchor_lens()
    }

    /// Number of leaves (diagnostics).
    #[doc(hidden)]
    pub fn leaf_count(&self) -> usize {
        self.leaves.load(Ordering::Relaxed)
    }

    /// Prefetches the tag line the leaf search will read first, so that it arrives together
    /// with the leaf header the lock acquisition fetches (see `leaf`).
    #[inline]
    fn prefetch_home(&self, tg: &search::Target) {
        if self.cfg.sort_by_tag && self.cfg.direct_pos {
            tg.leaf.prefetch_tags(
                leaf_tag(tg.hash),
                self.cfg.leaf_capacity,
                self.pool.prefetch_cells(),
            );
        }
    }

    /// Searches `key` (with exact probes if `exact`) and read-locks its target leaf,
    /// restarting on stale tables. The target's [`search::Target::check`] may still be
    /// pending: the caller compares the leaf's anchor before trusting the leaf.
    #[inline]
    fn read_locate<'g>(
        &self,
        key: &[u8],
        g: &'g Guard,
        exact: bool,
    ) -> (ReadLeaf<'g>, search::Target) {
        let backoff = Backoff::new();
        loop {
            let t = self.table(g);
            let v = t.version;
            let tg = if exact {
                search::locate_exact(t, key, &self.cfg)
            } else {
                search::locate_in(t, key, &self.cfg)
            };
            if let Some(tg) = tg {
                self.prefetch_home(&tg);
                // SAFETY: reached through the published table under `g`.
                let r = unsafe { tg.leaf.read() };
                if r.hdr().version.load(Ordering::Acquire) <= v {
                    return (r, tg);
                }
            }
            self.restarts.fetch_add(1, Ordering::Relaxed);
            backoff.snooze();
        }
    }

    /// Searches `key` and read-locks its target leaf, restarting on stale tables and on
    /// tag false positives (the deferred check is made at once: scans use it).
    #[inline]
    fn read_target<'g>(&self, key: &[u8], g: &'g Guard) -> (ReadLeaf<'g>, u32) {
        let mut exact = false;
        loop {
            let (r, tg) = self.read_locate(key, g, exact);
            match tg.check {
                Some(c) if !c.holds(r.hdr(), key) => exact = true,
                _ => return (r, tg.hash),
            }
        }
    }

    /// Searches `key` and write-locks its target leaf, restarting on stale tables and on
    /// tag matches that the leaf's anchor disproves (the pending
    /// [`search::Target::check`], made under the lock before anything is written).
    #[inline]
    fn write_target<'g>(&self, key: &[u8], g: &'g Guard) -> (WriteLeaf<'g>, u32) {
        let backoff = Backoff::new();
        let mut exact = false;
        loop {
            let t = self.table(g);
            let v = t.version;
            let tg = if exact {
                search::locate_exact(t, key, &self.cfg)
            } else {
                search::locate_in(t, key, &self.cfg)
            };
            if let Some(tg) = tg {
                self.prefetch_home(&tg);
                tg.leaf.prefetch_order(self.cfg.leaf_capacity);
                if self.cfg.sort_by_tag && self.cfg.direct_pos {
                    tg.leaf.prefetch_around(
                        leaf_tag(tg.hash),
                        self.cfg.leaf_capacity,
                        self.pool.prefetch_cells(),
                    );
                }
                // SAFETY: reached through the published table under `g`.
                let w = unsafe { tg.leaf.write() };
                if let Some(c) = tg.check
                    && !c.holds(w.hdr(), key)
                {
                    exact = true;
                    continue;
                }
                if w.hdr().version.load(Ordering::Acquire) <= v {
                    return (w, tg.hash);
                }
            }
            self.restarts.fetch_add(1, Ordering::Relaxed);
            backoff.snooze();
        }
    }

    /// Where `key` (full CRC32C `hash`) is or would go in a locked leaf.
    #[inline]
    fn position(&self, l: &impl LeafAccess, key: &[u8], hash: u32) -> Pos {
        let tag = leaf_tag(hash);
        if self.cfg.sort_by_tag {
            match l.find_by_tag(key, tag, self.cfg.direct_pos) {
                Ok(i) => Pos::Found(i),
                Err(_) => Pos::Absent { sorted_at: None },
            }
        } else {
            match l.find_sorted(key) {
                Ok(j) => Pos::Found(l.order()[j] as usize),
                Err(j) => Pos::Absent { sorted_at: Some(j) },
            }
        }
    }

    /// Calls `f` with the value of `key` (zero-copy, under the leaf's shared lock) and
    /// returns its result, or `None` if the key is absent.
    ///
    /// `f` must be short and must not call back into the index.
    #[inline]
    pub fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        if check_key(key).is_err() {
            return None;
        }
        let g = deps::sync::pin();
        let mut exact = false;
        loop {
            let (r, tg) = self.read_locate(key, &g, exact);
            if let Some(c) = tg.check {
                // The search trusted a tag match (a leaf entry, or an item over 7 bytes):
                // fetch the anchor while the leaf is searched, and compare it before using
                // the result (`search::finish`, deferred check). A mismatch restarts
                // exactly.
                r.hdr().prefetch_anchor(c.len());
            }
            let pos = self.position(&r, key, tg.hash);
            if let Some(c) = tg.check
                && !c.holds(r.hdr(), key)
            {
                exact = true;
                continue;
            }
            return match pos {
                Pos::Found(i) => Some(f(r.value(i))),
                Pos::Absent { .. } => None,
            };
        }
    }

    /// A copy of the value stored under `key`.
    pub fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.get_with(key, <[u8]>::to_vec)
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.get_with(key, |_| ()).is_some()
    }

    /// Inserts or replaces; `Ok(true)` if the key was new.
    pub fn insert(&self, key: &[u8], value: &[u8]) -> api::Result<bool> {
        check_entry(key, value)?;
        loop {
            let g = deps::sync::pin();
            let (mut w, hash) = self.write_target(key, &g);
            match self.position(&w, key, hash) {
                Pos::Found(i) => {
                    self.replace_value(&mut w, i, key, value)?;
                    return Ok(false);
                }
                Pos::Absent { sorted_at } if !w.is_full() => {
                    let p = self.new_pair(&w, key, value)?;
                    w.insert(sorted_at, leaf_tag(hash), p);
                    self.counts.add(LEN, 1);
                    return Ok(true);
                }
                Pos::Absent { .. } => {
                    drop(w);
                    drop(g);
                    self.split(key)?;
                }
            }
        }
    }

    /// Replaces the value of real slot `i` (in place when the length is unchanged, else by
    /// a new pair). On [`api::Error::OutOfMemory`] the old value stays.
    fn replace_value(
        &self,
        w: &mut WriteLeaf<'_>,
        i: usize,
        key: &[u8],
        value: &[u8],
    ) -> api::Result<()> {
        let ov = w.value_mut(i);
        if ov.len() == value.len() {
            ov.copy_from_slice(value);
            return Ok(());
        }
        let p = self.new_pair(w, key, value)?;
        let old = w.replace(i, p);
        // SAFETY: unlinked from the leaf under the exclusive lock, not used again.
        unsafe { self.drop_pair(old) };
        Ok(())
    }

    /// A new pair for leaf `w`: inline when the leaf takes inline pairs and it fits, else a
    /// block. Counted in the memory counters. Fails with [`api::Error::OutOfMemory`]
    /// (counting nothing) when the block cannot be allocated.
    fn new_pair(&self, w: &WriteLeaf<'_>, key: &[u8], value: &[u8]) -> api::Result<Pair> {
        let p = match InlinePair::new(key, value).filter(|_| w.inline_on()) {
            Some(ip) => Pair::Inline(ip),
            None => Pair::Heap(Kv::new(&self.kvp, key, value)?),
        };
        // SAFETY: a fresh block is live.
        self.counts
            .add(KV_BYTES, unsafe { p.bytes(&self.kvp) } as isize);
        self.counts.add(INLINE_BYTES, p.inline_bytes() as isize);
        Ok(p)
    }

    /// Undoes [`Wormhole::convert_pair`] of an inline pair into the block `q`, whose inline
    /// original stays in its leaf: frees `q` and counts the original's bytes again (the
    /// conversion uncounted them).
    ///
    /// # Safety
    /// `q` is such a block, referenced by no leaf, not used again.
    unsafe fn unconvert_pair(&self, q: Pair) {
        let Pair::Heap(kv) = q else {
            unreachable!("only an inline pair made into a block is unconverted");
        };
        let n = kv.pair_len() as isize;
        // SAFETY: unreachable and unused from now on (contract).
        unsafe { self.drop_pair(q) };
        self.counts.add(KV_BYTES, n);
        self.counts.add(INLINE_BYTES, n);
    }

    /// Uncounts and frees a pair taken out of the index.
    ///
    /// # Safety
    /// `p` was unlinked from its leaf under the exclusive lock (readers of pairs always
    /// hold the leaf lock, so nobody can reach a block any more) and is not used again.
    unsafe fn drop_pair(&self, p: Pair) {
        // SAFETY: still live (contract).
        self.counts
            .add(KV_BYTES, -(unsafe { p.bytes(&self.kvp) } as isize));
        self.counts.add(INLINE_BYTES, -(p.inline_bytes() as isize));
        // SAFETY: unreachable and unused from now on (contract).
        unsafe { p.free(&self.kvp) };
    }

    /// `p` in the form a leaf that takes inline pairs (`inline`) or does not should hold:
    /// an inline pair becomes a block for a leaf without, a block that fits becomes an
    /// inline pair for a leaf with (its block freed); anything else stays. Keeps the memory
    /// counters right. For pairs moving between leaves of different kinds (splits and
    /// merges, under the write locks of both leaves).
    ///
    /// Only an inline pair becoming a block needs memory: on [`api::Error::OutOfMemory`]
    /// `p` is untouched (nothing to free: it was a copy).
    fn convert_pair(&self, p: Pair, inline: bool) -> api::Result<Pair> {
        let q = match p {
            Pair::Inline(ip) if !inline => Pair::Heap(Kv::new(&self.kvp, ip.key(), ip.value())?),
            Pair::Heap(kv) if inline => {
                // SAFETY: the block is live: its leaf is write-locked by the caller.
                let k = unsafe { kv.key() };
                // SAFETY: as above.
                let v = unsafe { kv.value() };
                match InlinePair::new(k, v) {
                    Some(ip) => Pair::Inline(ip),
                    None => return Ok(p),
                }
            }
            _ => return Ok(p),
        };
        // SAFETY: `q` is fresh (a new block, or a copy).
        self.counts
            .add(KV_BYTES, unsafe { q.bytes(&self.kvp) } as isize);
        self.counts.add(INLINE_BYTES, q.inline_bytes() as isize);
        // SAFETY: the old form is no longer referenced: the caller stores `q` in its place,
        // under the leaf locks every reader of a pair holds.
        unsafe { self.drop_pair(p) };
        Ok(q)
    }

    /// Removes `key`; whether it was present. Merges the leaf with a neighbour when their
    /// combined size falls to 3/4 of a leaf.
    pub fn remove(&self, key: &[u8]) -> bool {
        if check_key(key).is_err() {
            return false;
        }
        let g = deps::sync::pin();
        let (mut w, hash) = self.write_target(key, &g);
        let Pos::Found(i) = self.position(&w, key, hash) else {
            return false;
        };
        let p = w.remove(i);
        self.counts.add(LEN, -1);
        // SAFETY: removed under the exclusive lock.
        unsafe { self.drop_pair(p) };
        let merge = self.wants_merge(&w);
        drop(w);
        drop(g);
        if merge {
            self.try_merge(key);
        }
        true
    }

    /// Whether a leaf (just shrunk) and one of its neighbours fit in one leaf.
    fn wants_merge(&self, w: &WriteLeaf<'_>) -> bool {
        let n = w.len();
        let limit = self.cfg.merge_size();
        if n > limit {
            return false;
        }
        let h = w.hdr();
        let small = |p: Option<LeafPtr>| p.is_some_and(|p| n + p.nr_hint() <= limit);
        small(h.prev()) || small(h.next())
    }

    /// Atomically computes the entry of `key` under its leaf's exclusive lock (upsert or
    /// remove, like `HashMap::entry` / dashmap's `compute`): `f` gets the current value
    /// (`None` if absent) and returns the new one (`None` removes the key, or leaves it
    /// absent). Returns whether the key was present before.
    ///
    /// `f` must not call into the index. It is called exactly once; if the new value is
    /// too long, or the key is, the index is unchanged and the error is returned (an
    /// over-long key is rejected before `f` is called).
    pub fn compute<F>(&self, key: &[u8], f: F) -> api::Result<bool>
    where
        F: FnOnce(Option<&[u8]>) -> Option<Vec<u8>>,
    {
        check_key(key)?;
        let mut f = Some(f);
        loop {
            let g = deps::sync::pin();
            let (mut w, hash) = self.write_target(key, &g);
            match self.position(&w, key, hash) {
                Pos::Found(i) => {
                    let old = w.value(i);
                    let new = (f.take().expect("called once"))(Some(old));
                    match new {
                        Some(v) => {
                            check_entry(key, &v)?;
                            self.replace_value(&mut w, i, key, &v)?;
                        }
                        None => {
                            let p = w.remove(i);
                            self.counts.add(LEN, -1);
                            // SAFETY: removed under the exclusive lock.
                            unsafe { self.drop_pair(p) };
                            let merge = self.wants_merge(&w);
                            drop(w);
                            drop(g);
                            if merge {
                                self.try_merge(key);
                            }
                        }
                    }
                    return Ok(true);
                }
                Pos::Absent { sorted_at } if !w.is_full() => {
                    if let Some(v) = (f.take().expect("called once"))(None) {
                        check_entry(key, &v)?;
                        let p = self.new_pair(&w, key, &v)?;
                        w.insert(sorted_at, leaf_tag(hash), p);
                        self.counts.add(LEN, 1);
                    }
                    return Ok(false);
                }
                Pos::Absent { .. } => {
                    drop(w);
                    drop(g);
                    self.split(key)?;
                }
            }
        }
    }

    /// Atomically replaces the value of an existing key by `f(old value)` (any length up to
    /// the limit) under its leaf's exclusive lock; returns `Ok(false)` without calling `f`
    /// if the key is absent. An over-long key gets [`api::Error::KeyTooLong`] and a new
    /// value over the limit [`api::Error::ValueTooLong`]; the index is then unchanged.
    ///
    /// `f` must not call into the index.
    pub fn update(&self, key: &[u8], f: impl FnOnce(&[u8]) -> Vec<u8>) -> api::Result<bool> {
        check_key(key)?;
        let g = deps::sync::pin();
        let (mut w, hash) = self.write_target(key, &g);
        match self.position(&w, key, hash) {
            Pos::Found(i) => {
                let v = f(w.value(i));
                check_entry(key, &v)?;
                self.replace_value(&mut w, i, key, &v)?;
                Ok(true)
            }
            Pos::Absent { .. } => Ok(false),
        }
    }

    /// Atomically applies `f` to the bytes of the value of an existing key (same length,
    /// rewritten in place) under its leaf's exclusive lock; returns `Ok(false)` without
    /// calling `f` if the key is absent, [`api::Error::KeyTooLong`] for an over-long key.
    ///
    /// `f` must not call into the index.
    pub fn update_in_place(&self, key: &[u8], f: impl FnOnce(&mut [u8])) -> api::Result<bool> {
        check_key(key)?;
        let g = deps::sync::pin();
        let (mut w, hash) = self.write_target(key, &g);
        match self.position(&w, key, hash) {
            Pos::Found(i) => {
                f(w.value_mut(i));
                Ok(true)
            }
            Pos::Absent { .. } => Ok(false),
        }
    }

    /// Number of keys (exact when no writer runs concurrently).
    pub fn len(&self) -> usize {
        self.counts.sum(LEN)
    }

    /// Whether the index holds no key.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes held (see the crate docs for what is counted where).
    pub fn memory_usage(&self) -> MemoryUsage {
        MemoryUsage {
            // Inline pairs are inside leaf blocks and counted as key-value bytes.
            structure_bytes: self
                .pool
                .reserved_bytes()
                .saturating_sub(self.counts.sum(INLINE_BYTES))
                + self.kvp.slack_bytes()
                + self.anchor_bytes.load(Ordering::Relaxed)
                + self.meta_bytes.load(Ordering::Relaxed)
                + self.populator.spare_bytes(),
            key_value_bytes: self.counts.sum(KV_BYTES),
        }
    }
}

impl Wormhole {
    /// Walks the whole structure and panics on any broken invariant: leaf order and anchor
    /// ranges, per-leaf arrays, both MetaTrieHTs against the LeafList. A test helper: it
    /// takes the writer mutex and must not run concurrently with writers.
    #[doc(hidden)]
    pub fn debug_validate(&self) {
        let wr = self.lock_writer_for_validation();
        let g = deps::sync::pin();
        let mut leaves: Vec<(Vec<u8>, LeafPtr)> = Vec::new();
        let mut p = Some(self.head);
        let mut prev: Option<LeafPtr> = None;
        let mut count = 0;
        let mut last_key: Option<Vec<u8>> = None;
        // Bytes of the pairs as they are stored (blocks' slots, inline key and value
        // bytes), and live leaves with and without inline pairs.
        let (mut kv_bytes, mut inline_bytes) = (0, 0);
        let mut kinds = (0, 0);
        while let Some(leaf) = p {
            // SAFETY: linked leaves are live; pinned.
            let mut w = unsafe { leaf.write() };
            assert_eq!(
                w.hdr().prev().map(LeafPtr::as_raw),
                prev.map(LeafPtr::as_raw)
            );
            assert_ne!(w.hdr().version.load(Ordering::Relaxed), leaf::DEAD);
            let anchor = w.hdr().anchor().to_vec();
            if let Some((a, _)) = leaves.last() {
                assert!(a < &anchor, "anchors ascend");
            } else {
                assert!(anchor.is_empty());
            }
            if w.inline_on() {
                kinds.0 += 1;
            } else {
                kinds.1 += 1;
            }
            for (tag, kv) in w.sorted_pairs() {
                // SAFETY: live under the lock.
                kv_bytes += unsafe { kv.bytes(&self.kvp) };
                inline_bytes += kv.inline_bytes();
                // SAFETY: live under the lock.
                let k = unsafe { kv.key() };
                assert!(k >= anchor.as_slice(), "key below its leaf's anchor");
                assert_eq!(leaf_tag(deps::hash::crc32c(k)), tag);
                if let Some(l) = &last_key {
                    assert!(l.as_slice() < k, "keys ascend across the list");
                }
                last_key = Some(k.to_vec());
                count += 1;
            }
            leaves.push((anchor, leaf));
            prev = Some(leaf);
            p = w.hdr().next();
        }
        assert_eq!(count, self.len());
        assert_eq!(leaves.len(), self.leaf_count());
        assert_eq!(
            kv_bytes,
            self.counts.sum(KV_BYTES),
            "key_value_bytes counter"
        );
        assert_eq!(
            inline_bytes,
            self.counts.sum(INLINE_BYTES),
            "inline bytes counter"
        );
        assert_eq!(kinds, self.pool.live(), "leaves of each kind");
        self.table(&g).check(&leaves);
        wr.shadow_ref().check(&leaves);
    }
}

impl Drop for Wormhole {
    fn drop(&mut self) {
        let mut p = Some(self.head);
        while let Some(leaf) = p {
            {
                // SAFETY: `&mut self`: no other thread uses the index; leaves in the list
                // are live.
                let w = unsafe { leaf.write() };
                p = w.hdr().next();
                w.for_each_block(|kv| {
                    // SAFETY: the index owns its pairs and is being dropped; each block is
                    // referenced by exactly one slot of one leaf.
                    unsafe { kv.free(&self.kvp) }
                });
            }
            // SAFETY: unreachable from now on; from this index's pool.
            unsafe { leaf.free(&self.pool) };
        }
        let w = self.writer.get_mut().unwrap_or_else(|e| e.into_inner());
        // SAFETY: no reader exists (`&mut self`).
        unsafe { w.free_shadow() };
        // SAFETY: the published table came from `Box::into_raw` and has no readers.
        drop(unsafe { Box::from_raw(*self.current.get_mut()) });
    }
}
