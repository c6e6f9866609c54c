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
//! [`Wormhole`] has every optimization of the paper; [`WormholeWith`] with a bit set of
//! [`ablation`] builds the variants of its Fig 11 (same results, different speed).
//!
//! # Parts (one module each)
//!
//! `lib.rs` is the public API over the engine `raw::RawWormhole` (as in Mercury): it
//! documents and forwards; the engine's modules do the work.
//!
//! | module | paper | what |
//! |---|---|---|
//! | `raw` | §2.5 | the engine: state, finding and locking a key's leaf, lookups, pair accounting |
//! | `write` | Algorithm 2 | point writes: insert, remove, compute, update |
//! | `smo` | Algorithm 4, §2.5 | split, merge, locking protocol |
//! | `compact` | — | giving memory back: eager merges while sparse, moving leaves and pair blocks to lower chunks |
//! | `tables` | §2.5 | the RCU pair of MetaTrieHTs: published table, shadow, writer mutex |
//! | `search` | Algorithms 1, 3 | binary search on prefix length, sibling step |
//! | `plan` | — | the search plan: where Algorithm 1 probes |
//! | `meta` | §2.3–2.4, §3.1, Fig 5–6 | MetaTrieHT items and 64-byte slot table |
//! | `items` | — | a table's items, placed by hash so that searches can prefetch them |
//! | `leaf` | §3.2, Fig 7 | leaf layout, tag array, direct positioning, lazy sorting |
//! | `anchor` | §2.2, §3.3 | anchor choice; proof that any bytes work without fat nodes |
//! | `kv` | — | one block per pair |
//! | `iter` | Algorithm 2 | scans, range delete, first/last (the `Iter` cursor's leaf copies) |
//! | `batch` | — | `get_many`: a prefetch pipeline across keys |
//! | [`ablation`] | Fig 11 | the optimizations as a const parameter of the index type |
//! | `config` | — | [`Config`] and its builder |
//! | `traits` | — | `KvIndex`, `OrderedKvIndex`, `Iter`'s source, `Extend`, `FromIterator` |
//!
//! Imports run one way: `lib` → `raw`, `write`/`smo`/`compact`/`iter`/`batch` → `raw` → `tables`,
//! `search` → `meta`/`plan` → `leaf`/`items` → `kv`/`anchor`; no two modules import
//! each other (`scripts/module-deps.py` prints the graph).
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
//! size (2-, 4- or 9-byte header, key, value, rounded up to 8 bytes; blocks over 512 bytes
//! come from the global allocator at their exact size) and inline pairs at their key and value
//! bytes. With [`Config::prefault`], `structure_bytes` also counts the populator's spare
//! chunk (at most one 2 MiB chunk, resident but in no pool yet: see
//! `orrery_core::alloc::Populator`). The sum is the memory held, with nothing counted twice.
//!
//! After mass removals the index gives its memory back (`compact`): leaves merge more
//! eagerly while they are sparse, and leaves (with their pair blocks) move to lower slab
//! chunks so that the high chunks drain and go back to the OS ([`Stats::moves`]).
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

pub mod ablation;
mod anchor;
mod batch;
mod compact;
mod config;
mod items;
mod iter;
mod kv;
mod leaf;
mod meta;
mod plan;
mod raw;
mod search;
mod smo;
mod tables;
#[cfg(test)]
mod tests_unit;
mod traits;
mod write;

#[cfg(feature = "bench-internals")]
use orrery_core::alloc::PopulatorStats;
use orrery_core::batch::BatchIter;

use crate::raw::RawWormhole;

pub use config::{Config, ConfigBuilder};
#[cfg(feature = "bench-internals")]
pub use meta::MetaStats;
pub use orrery_core::api::ConfigError;
pub use orrery_core::batch::Entry;
#[cfg(feature = "bench-internals")]
pub use search::SearchTrace;

/// What [`WormholeWith::stats`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Leaves in the LeafList.
    pub leaves: usize,
    /// Lookups that restarted because the MetaTrieHT they searched was replaced meanwhile.
    pub restarts: u64,
    /// Leaves moved to a lower slab chunk to give memory back (see the crate docs,
    /// "Memory accounting").
    pub moves: u64,
}

/// A concurrent ordered key-value index over byte strings: Wormhole with every
/// optimization of the paper (see the crate docs).
pub type Wormhole = WormholeWith<{ ablation::ALL }>;

/// Wormhole with the Fig 11 optimizations `OPTS` compiled in (a bit set of
/// [`ablation`]'s constants); [`Wormhole`] is `WormholeWith<{ ablation::ALL }>`, and
/// the other values exist to reproduce the paper's ablation. Every variant gives the same
/// results; only speed differs.
pub struct WormholeWith<const OPTS: u32> {
    raw: RawWormhole<OPTS>,
}

impl<const OPTS: u32> std::fmt::Debug for WormholeWith<OPTS> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wormhole")
            .field("opts", &OPTS)
            .field("config", &self.raw.cfg)
            .field("len", &self.raw.len())
            .field("leaves", &self.raw.leaf_count())
            .finish()
    }
}

impl<const OPTS: u32> WormholeWith<OPTS> {
    /// Item and slot counts of the published MetaTrieHT (diagnostics; takes the writer
    /// mutex, so the table does not change while it is walked).
    #[cfg(feature = "bench-internals")]
    pub fn meta_stats(&self) -> MetaStats {
        self.raw.meta_stats()
    }

    /// What the chunk populator did (diagnostics; see [`Config::prefault`]).
    #[cfg(feature = "bench-internals")]
    pub fn populator_stats(&self) -> PopulatorStats {
        self.raw.populator_stats()
    }

    /// What the search of `key` in the published table does: range, rounds, prefetch
    /// batches, longest matching prefix (diagnostics, for `orrery-bench lab wormhole_az`).
    #[cfg(feature = "bench-internals")]
    pub fn debug_search_trace(&self, key: &[u8]) -> SearchTrace {
        self.raw.debug_search_trace(key)
    }

    /// Anchor length → number of anchors, of the published table (diagnostics).
    #[cfg(feature = "bench-internals")]
    pub fn debug_anchor_lens(&self) -> Vec<(usize, usize)> {
        self.raw.debug_anchor_lens()
    }

    /// The structure's shape: leaves, and lookups that restarted because their table was
    /// stale (cheap: counters).
    pub fn stats(&self) -> Stats {
        Stats {
            leaves: self.raw.leaf_count(),
            restarts: self.raw.restarts(),
            moves: self.raw.moves.load(std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// Walks the whole structure and checks every invariant: leaf order and anchor ranges,
    /// per-leaf arrays, the byte counters, both MetaTrieHTs against the LeafList. Returns
    /// the number of keys, or the first broken invariant (its failed check's message). A
    /// test helper: it takes the writer mutex and must not run concurrently with writers.
    pub fn check_invariants(&self) -> Result<usize, String> {
        // The walk asserts as it goes (deep inside the tables' own checks); a failed check
        // is reported as its message.
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.raw.debug_validate()))
            .map(|()| self.raw.len())
            .map_err(|p| {
                p.downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "invariant check failed".to_string())
            })
    }
}

/// An iterator over a key range of a [`WormholeWith`], in key order from either end: a
/// seekable cursor that copies one leaf at a time into a reusable arena.
///
/// Made by [`WormholeWith::iter`] and [`WormholeWith::range`]. It implements [`Iterator`] and
/// [`DoubleEndedIterator`] (`.rev()` yields descending keys; both ends may be used, and they
/// stop where they meet). Items are [`Entry`]s: handles into the arena (a reference count),
/// so iterating allocates nothing per pair; the arena is refilled in place once per leaf
/// when no entry of the previous leaf is still held. [`Iter::next_pair`] and
/// [`Iter::next_back_pair`] lend the pair as slices instead.
///
/// No lock or guard is held between calls: each refill copies one leaf's pairs under its
/// shared lock and records where to resume (the next leaf's anchor going up, the leaf's
/// own anchor going down), so a user may keep an `Iter` while writing to the index. Under
/// concurrent writers it is not a snapshot, as a scan is not ([`orrery_core::api`]): keys
/// come strictly ascending from the front and strictly descending from the back, every
/// pair yielded was present with that value at some moment, and every key present
/// throughout (and in range) is yielded once.
///
/// ```
/// use orrery_wormhole::Wormhole;
/// use std::ops::Bound;
/// let wh = Wormhole::new();
/// for i in 0u32..1000 {
///     wh.insert(&i.to_be_bytes(), b"v").unwrap();
/// }
/// let mut it = wh.iter();
/// assert_eq!(it.next_pair().map(|(k, _)| k.to_vec()), Some(0u32.to_be_bytes().to_vec()));
/// it.seek(Bound::Excluded(&500u32.to_be_bytes()));
/// assert_eq!(it.next().unwrap().key(), 501u32.to_be_bytes());
/// assert_eq!(it.next_back().unwrap().key(), 999u32.to_be_bytes());
/// assert_eq!(it.count(), 497);
/// let down: Vec<_> = wh.range(&10u32.to_be_bytes()[..]..&13u32.to_be_bytes()[..]).rev().collect();
/// assert_eq!(down.len(), 3);
/// assert_eq!(down[0].key(), 12u32.to_be_bytes());
/// ```
pub type Iter<'a, const OPTS: u32 = { ablation::ALL }> = BatchIter<&'a WormholeWith<OPTS>>;
