//! Leaves of the LeafList (§2.2, §3.2, Fig 7): a hash-ordered tag array with direct
//! speculative positioning for point lookups, and a key-order array that is appended
//! unsorted and sorted lazily for scans and splits.
//!
//! # Layout (byte level), capacity `C` (8 ≤ C ≤ 256, default 128)
//!
//! One block, 64-byte aligned: `H + 8·C + C` bytes rounded to 64 for a *plain* leaf
//! (`H = size_of::<Leaf>() = 64`; 1216 bytes for `C = 128`), plus `16·C` bytes of inline
//! cells for a leaf with an *inline area* (3264 bytes for `C = 128`):
//!
//! ```text
//! line 0  Leaf header: lock word, version, prev, next, nr, nr_sorted, sort bit, kind, C,
//!         and the anchor (inline up to 12 bytes, else a pointer; see `Leaf`)
//! +H      tags:  [u64; C]   slot = tag16 << 48 | ref48 (a real entry), or a *hole*
//!                           (ref 0) carrying the tag of the next real entry to its right
//!                           (0xFFFF if none); the C slots are non-decreasing by tag.
//!                           ref48 = a pair block's address (bit 47 clear), or, for an
//!                           inline pair, 1 << 47 | klen << 8 | vlen
//! +H+8C   order: [u8;  C]   slot indexes of the nr real entries: [0, nr_sorted) in key
//!                           order, then the unsorted tail [nr_sorted, nr) in insertion order
//! +I      cells: [[u8; 16]; C]  (inline area only; I = H + 9C rounded up to 64) cell i
//!                           holds the key then the value of slot i's inline pair
//! ```
//!
//! A lookup reads line 0, the tag line at the tag's *home* slot `tag · C / 2^16` (direct
//! speculative positioning, §3.2) and its neighbours, then the pair: the inline cell of the
//! matching slot, or the pair block whose address the slot holds.
//!
//! # Inline pairs (deviation from the paper)
//!
//! In the paper (and in a plain leaf here) every pair is a separate block, so a lookup
//! makes two dependent DRAM round trips after the MetaTrieHT: the leaf (header and tag
//! line, fetched together, see below) and then the pair block, whose address is in the tag
//! line. A pair of at most 16 bytes (key + value, `kv::INLINE_MAX`) is instead kept in the
//! leaf, in the cell of its tag slot; cells are in the same (hash) order as the slots, so
//! the cells at the home slot are a function of the tag alone and are prefetched together
//! with the header and the tag line (`LeafPtr::prefetch_tags`): one round trip per lookup
//! after the MetaTrieHT. Entries that shift on an insert carry their cells along; splits
//! and merges move inline pairs as copies of their cells (`split_into`, `rebuild`; both
//! through `place`). On short pairs this makes lookups clearly faster for about 1 B/key
//! (measured: `docs/results/wormhole.md`, "Figures moved from the leaf module docs").
//!
//! The inline area costs `16·C` bytes per leaf whether used or not, which long-key sets
//! cannot afford (`az`, `url`: +23 B/key). So each leaf's kind is chosen when it is made:
//! the head has an inline area, and a split gives its new right leaf one when at least half
//! of the pairs moving there fit inline (`WriteLeaf::small_from`; the split has just sorted
//! the leaf, so the pair headers it reads are cached). A leaf with an inline area takes
//! inline pairs; pairs that do not fit are blocks in either kind. A pair moving between
//! leaves of different kinds changes form (`Wormhole::convert_pair`, through
//! `split_into`'s `convert` and the merge): an inline pair becomes a block in a plain leaf,
//! and a block that fits becomes an inline pair in a leaf with an area (its block freed at
//! once: pair blocks are only read under the leaf lock, which the writer holds). So a key
//! set whose pair sizes change over time gets new leaves of the right kind as it grows;
//! the left half of a split keeps its block and its kind (replacing it would change the
//! leaf every MetaTrieHT reference names). Lookups must choose whether to prefetch the
//! home slot's cells before the leaf's header arrives: they do while at least half of the
//! leaves have an inline area (`LeafPools::prefetch_cells`).
//!
//! **Deviation:** the paper packs the `nr` entries at the front and positions at
//! `tag · nr / 2^16`, so the tag line can only be fetched after the header (which holds
//! `nr`) has arrived: two dependent DRAM round trips. Spreading the entries over all `C`
//! slots with holes makes the home slot depend on the tag alone, so the header and the tag
//! line are fetched in parallel. Because holes carry their right neighbour's tag, the slot
//! sequence stays sorted and the paper's walk (`while tags[i-1] >= t: i--; while tags[i] <
//! t: i++`) works unchanged. An insert fills a hole of the right run when there is one,
//! else shifts entries toward the nearest hole (as the paper shifts toward the end); order
//! entries naming shifted slots are adjusted (one pass over `nr` bytes). A split or merge
//! rebuilds the slots spread around their homes. The order array is only read by scans and
//! splits.
//!
//! # Inserts
//!
//! An insert whose tag run has no hole shifts entries toward the nearest hole. About half
//! of the inserts of a random load shift, by about a dozen slots on average (leaves fill
//! from half to full between splits, and the last few inserts into a nearly full leaf
//! shift far; figures: `docs/results/wormhole.md`, "Figures moved from the leaf module
//! docs"). The nearest hole is searched *outward* from the insertion point, alternating
//! sides, so the search reads only the lines between the insertion point and that hole,
//! never cold tag lines far away on the other side (scanning each side up to its first
//! hole, one after the other, measured twice as costly in the load profile:
//! `docs/results/wormhole.md`, "Measurements behind the module docs"). A writer's search also prefetches the inline cells of the home slot (as a
//! lookup's does) and the tag and cell lines on both sides of the home line
//! (`prefetch_around`).
//!
//! # Splits
//!
//! A split (Algorithm 4) sorts the full leaf (the lazy incremental sort of §3.2: the
//! unsorted tail, then a merge), and then `split_into` moves the upper half to the new
//! leaf and re-spreads the lower half. Entries move as their 8-byte tag words plus, for
//! inline pairs, their 16-byte cells: reading the source slots in order gives each half
//! already in tag order, so no tag sort, no `Pair` copies and no allocation are needed. The sort uses
//! integer sort keys built from the 8 bytes after the prefix that all keys of the leaf
//! share (see `sort_order`), and prefetches the whole tag array and inline area first:
//! a leaf is split once per ~64 inserts, so its lines are cold, and reading keys in key
//! order would miss on one random line after the other. What remains of the split path's
//! cost is mostly reading the cold leaf (profile: `docs/results/wormhole.md`,
//! "Measurements behind the module docs"). The first-touch
//! page faults of the new leaves' huge pages (`clear_page` in the kernel, a visible share
//! of that profile where the host backs guest memory lazily) are taken off the inserting
//! thread by the index's chunk populator (`Config::prefault`, see the crate docs): a new
//! leaf chunk is usually one a background thread populated ahead of need.
//!
//! # Invariants
//!
//! * `nr ≤ C` real slots; all `C` slots are sorted by their top 16 bits; a hole's tag is
//!   the tag of the next real slot to its right (`0xFFFF` if none); `order[0..nr)` lists
//!   the real slots exactly once; `order[0..nr_sorted)` lists them in ascending key order.
//! * Every key `k` in the leaf satisfies `anchor ≤ k < next.anchor` (see `anchor`).
//!
//! # Concurrency (§2.5)
//!
//! Each leaf has a reader-writer lock. Writers (insert, remove, split, merge) hold it
//! exclusively; point lookups and scans hold it shared. The only mutation under the shared
//! lock is lazy sorting of the order array by a scan (inline cells, like pair blocks, are
//! written only under the exclusive lock): the scanner takes the leaf's *sort
//! bit*, sorts, and publishes `nr_sorted = nr` with release ordering; readers only read the
//! order array after observing `nr_sorted == nr` (acquire), and nobody sorts a leaf whose
//! `nr_sorted == nr`, so sorting never races with reading. `version` is the expected
//! MetaTrieHT version (see `smo`); `u64::MAX` marks a leaf removed by a merge. `prev` and
//! `next` change only under the MetaTrieHT writer mutex plus the write locks of the leaves
//! involved, and a leaf is freed through the epoch scheme after it was unlinked.
//!
//! # Files
//!
//! | file | what |
//! |---|---|
//! | `entry` | the 64-bit tag entries (tag, inline bit, address or inline lengths), holes, home slots |
//! | `header` | the header line (`Leaf`), its layout checked at compile time, the anchor |
//! | `pool` | leaf block layout, the pools leaves come from, counts of leaf kinds |
//! | `ptr` | `LeafPtr`: prefetches and taking the lock |
//! | `access` | `LeafAccess` (reads under either lock), `ReadLeaf`, `WriteLeaf`, tag search |
//! | `sort` | the lazy incremental sort of the order array |
//! | `write` | inserts, removes, replacements, split and merge of entries under the exclusive lock |

mod access;
mod entry;
mod header;
mod pool;
mod ptr;
mod sort;
mod write;

#[cfg(test)]
#[allow(clippy::multiple_unsafe_ops_per_block)]
mod tests;

use std::alloc::Layout;
use std::ptr::NonNull;

use orrery_core::alloc::SlabPool;
use std::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU8, AtomicU16, AtomicU64, AtomicUsize, Ordering,
};

use crate::anchor::lcp;
use crate::kv::{INLINE_MAX, InlinePair, Kv, Pair};
use orrery_core::Error;
use orrery_core::sync::{Backoff, RwSpinLock, RwSpinReadGuard, RwSpinWriteGuard};

#[allow(unused_imports)]
pub(crate) use self::access::*;
#[allow(unused_imports)]
pub(crate) use self::entry::*;
#[allow(unused_imports)]
pub(crate) use self::header::*;
#[allow(unused_imports)]
pub(crate) use self::pool::*;
#[allow(unused_imports)]
pub(crate) use self::ptr::*;
#[allow(unused_imports)]
pub(crate) use self::sort::*;
#[allow(unused_imports)]
pub(crate) use self::write::*;
