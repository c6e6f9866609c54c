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
mod prims;
mod record;
#[cfg_attr(not(test), allow(dead_code))]
mod table;
mod trie;

#[cfg(feature = "bench-internals")]
use std::ops::Bound;

#[cfg(feature = "bench-internals")]
use orrery_core::api::ScanVisitor;
use orrery_core::batch::BatchIter;

pub use config::{Config, ConfigBuilder};
pub use trie::GrowthStats;

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

impl std::fmt::Debug for CuckooTrie {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CuckooTrie")
            .field("len", &self.len())
            .field("config", &self.raw.config)
            .finish_non_exhaustive()
    }
}

/// What [`CuckooTrie::stats`] reports: the table's load and its resizing activity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Entries of the hash table: the trie's nodes (leaves, bitmap and jump nodes, the
    /// root), counted at each update's commit. With `slots` it gives the table's load
    /// factor; it is the node count the paper's Fig 11 memory figure is computed from (the
    /// table at 85% load).
    pub entries: usize,
    /// Slots of the current table (4 entry places a 64-byte bucket).
    pub slots: usize,
    /// Whether a growth or a shrink of the table (§5 "Resizing": freezing and
    /// cooperatively copying it into one of twice the buckets, or fewer after removals,
    /// `trie/grow/`) was in progress when the stats were taken. Lookups and scans never
    /// wait for it; writers help it.
    pub migrating: bool,
    /// Counts of growths and shrinks so far: completed, given up, and how many copy units
    /// writers other than the one that started a migration copied (cooperation).
    pub growth: GrowthStats,
}

impl CuckooTrie {
    /// The table's load and resizing activity (cheap: a few counters).
    pub fn stats(&self) -> Stats {
        Stats {
            entries: self.raw.entries(),
            slots: self.raw.slots(),
            migrating: self.raw.is_growing(),
            growth: self.raw.growth_stats(),
        }
    }

    /// Walks the whole trie and checks its structural invariants (every entry reachable
    /// once, child links, the tail rule, key order, the leaf list, the count); returns the
    /// number of keys, or what is wrong. For tests: call it with no concurrent writer. It
    /// reads every bucket (slow on a large index).
    #[doc(hidden)]
    pub fn check_invariants(&self) -> Result<usize, String> {
        self.raw.check_invariants()
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
}
