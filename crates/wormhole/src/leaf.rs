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
//! # Inline pairs (deviation from the paper, measured)
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
//! through `place`). Measured on 10M
//! random 8-byte keys (`docs/wormhole.md`): lookups +14% (1 thread) and +25% (2 threads)
//! in thread-CPU throughput, memory 41.6 against 40.7 B/key.
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
//! # Inserts (measured)
//!
//! An insert whose tag run has no hole shifts entries toward the nearest hole. Loading 2M
//! random 8-byte keys, 54% of inserts shift, by 11.8 slots on average (leaves fill from
//! half to full between splits, and the last few inserts into a nearly full leaf shift
//! far). The nearest hole is searched *outward* from the insertion point, alternating
//! sides, so the search reads only the lines between the insertion point and that hole,
//! never cold tag lines far away on the other side (scanning each side up to its first
//! hole, one after the other, measured twice as costly in the load profile:
//! `docs/results/wormhole.md`, "Measurements behind the module docs"). A writer's search also prefetches the inline cells of the home slot (as a
//! lookup's does) and the tag and cell lines on both sides of the home line
//! (`prefetch_around`).
//!
//! # Splits (measured)
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
//! page faults of the new leaves' huge pages (about 9% of that profile, `clear_page` in
//! the kernel: on this VM the host backs guest memory lazily) are taken off the inserting
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

use std::alloc::Layout;
use std::ptr::NonNull;

use orrery_core::alloc::SlabPool;
use std::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU8, AtomicU16, AtomicU64, AtomicUsize, Ordering,
};

use crate::anchor::lcp;
use crate::deps::sync::{Backoff, RwSpinLock, RwSpinReadGuard, RwSpinWriteGuard};
use crate::kv::{INLINE_MAX, InlinePair, Kv, Pair};
use orrery_core::Error;

/// Mask of the 48-bit address field of a tag entry.
pub(crate) const ADDR_MASK: u64 = (1 << 48) - 1;

/// Largest supported leaf capacity (order entries are bytes).
pub(crate) const MAX_CAP: usize = 256;
/// Smallest supported leaf capacity.
pub(crate) const MIN_CAP: usize = 8;

/// The 16-bit leaf tag of a key hash: the low 16 bits of its CRC32C (§3.2).
#[inline]
pub(crate) fn leaf_tag(hash: u32) -> u16 {
    hash as u16
}

#[inline]
fn etag(e: u64) -> u16 {
    (e >> 48) as u16
}

/// An empty tag slot with no real entry to its right.
const HOLE_END: u64 = 0xFFFF << 48;

#[inline]
fn is_hole(e: u64) -> bool {
    e & ADDR_MASK == 0
}

/// A hole carrying the tag of the next real entry to its right.
#[inline]
fn hole(tag: u16) -> u64 {
    (tag as u64) << 48
}

/// The home slot of a tag: direct speculative positioning by capacity (§3.2).
#[inline]
pub(crate) fn home(tag: u16, cap: usize) -> usize {
    (tag as usize * cap) >> 16
}

/// Bit 47 of an entry: the pair is inline (block addresses are below `2^47`).
const INLINE_BIT: u64 = 1 << 47;

#[inline]
fn entry(tag: u16, kv: Kv) -> u64 {
    let addr = kv.addr() as u64;
    assert!(addr < INLINE_BIT, "pair address beyond 47 bits");
    ((tag as u64) << 48) | addr
}

/// An entry of an inline pair: the flag and the two lengths (the bytes are in the slot's
/// inline cell).
#[inline]
fn entry_inline(tag: u16, p: &InlinePair) -> u64 {
    let (k, v) = p.lens();
    ((tag as u64) << 48) | INLINE_BIT | ((k as u64) << 8) | v as u64
}

#[inline]
fn is_inline(e: u64) -> bool {
    e & INLINE_BIT != 0
}

/// Key and value lengths of an inline entry.
#[inline]
fn inline_lens(e: u64) -> (usize, usize) {
    (((e >> 8) & 0xFF) as usize, (e & 0xFF) as usize)
}

#[inline]
fn ekv(e: u64) -> Kv {
    debug_assert!(!is_inline(e) && !is_hole(e));
    // SAFETY: block entries are only made by `entry` from live blocks; callers read entries
    // of `[0, nr)` under the leaf lock, where every block is live.
    unsafe { Kv::from_addr((e & ADDR_MASK) as usize) }
}

/// Offset of the inline area in a leaf block of capacity `cap` (line-aligned, so that
/// four 16-byte cells share a line and cell `i` is in line `i / 4`).
#[inline]
fn inline_off(cap: usize) -> usize {
    (size_of::<Leaf>() + cap * 9).next_multiple_of(64)
}

/// Anchor bytes kept in the header line; longer anchors live in a heap block.
pub(crate) const ANCHOR_INLINE: usize = 12;

/// Leaf header (cache line 0). The tag and order arrays follow in the same block.
///
/// ```text
/// 0   lock       RwSpinLock word
/// 8   version    expected MetaTrieHT version
/// 16  prev, next neighbours
/// 32  nr, nr_sorted (u16), sorting (u8), cap (u16)
/// 40  anchor_len (u32)
/// 44  anchor_inline [u8; 12]: the anchor when it has at most 12 bytes
/// 56  anchor_heap   the whole anchor (a leaked `Box<[u8]>`) when longer, else null
/// ```
///
/// The anchor sits in the line a lookup reads anyway (the lock word), because a MetaTrieHT
/// *leaf entry* (see `meta`) references the leaf directly and MetaTrieHT items do not store
/// prefix bytes past the seventh: a search's final full comparison is made against its
/// target leaf's anchor.
#[repr(C, align(64))]
pub(crate) struct Leaf {
    lock: RwSpinLock<()>,
    /// Expected MetaTrieHT version; `u64::MAX` once the leaf was merged away.
    pub(crate) version: AtomicU64,
    /// Left neighbour (null for the first leaf).
    pub(crate) prev: AtomicPtr<Leaf>,
    /// Right neighbour (null for the last leaf).
    pub(crate) next: AtomicPtr<Leaf>,
    nr: AtomicU16,
    nr_sorted: AtomicU16,
    sorting: AtomicBool,
    /// [`KIND_INLINE_AREA`] | [`KIND_INLINE_ON`].
    kind: AtomicU8,
    cap: u16,
    anchor_len: u32,
    anchor_inline: [u8; ANCHOR_INLINE],
    anchor_heap: *mut u8,
}

const _: () = assert!(size_of::<Leaf>() == 64);
const _: () = assert!(std::mem::offset_of!(Leaf, kind) == 37);
const _: () = assert!(std::mem::offset_of!(Leaf, anchor_heap) == 56);

/// Version value of a leaf removed by a merge: every lookup that reaches it restarts.
pub(crate) const DEAD: u64 = u64::MAX;

/// Leaf kind bit: the block has an inline area (`INLINE_MAX` bytes per slot).
const KIND_INLINE_AREA: u8 = 1;
/// Leaf kind bit: small pairs may be stored inline (only with an inline area).
const KIND_INLINE_ON: u8 = 2;

fn block_layout(cap: usize, inline: bool) -> Layout {
    let size = if inline {
        inline_off(cap) + cap * INLINE_MAX
    } else {
        size_of::<Leaf>() + cap * 8 + cap
    };
    Layout::from_size_align(size.next_multiple_of(64), 64).expect("leaf layout")
}

/// A pool of plain leaf blocks (no inline area) of capacity `cap` (2 MiB huge-page
/// chunks, see `orrery_core::alloc`).
pub(crate) fn leaf_pool(cap: usize) -> SlabPool {
    let lay = block_layout(cap, false);
    SlabPool::new(lay.size(), lay.align())
        .unwrap_or_else(|e| unreachable!("leaf blocks fit the slab pool: {e}"))
}

/// Where leaf blocks come from: a plain [`SlabPool`] (plain leaves only) or the index's
/// [`LeafPools`] (either kind, chosen per leaf).
pub(crate) trait LeafAlloc {
    /// A block for a new leaf of capacity `cap`, with an inline area if `inline` asks for
    /// one and the source has such blocks; returns whether it has one. Fails with
    /// [`Error::OutOfMemory`] when no block can be had.
    fn alloc_block(&self, cap: usize, inline: bool) -> Result<(NonNull<u8>, bool), Error>;
    /// Returns a block.
    ///
    /// # Safety
    /// `p` came from [`LeafAlloc::alloc_block`] of `self` with the inline-area answer
    /// `inline`, and is not used afterwards.
    unsafe fn free_block(&self, p: NonNull<u8>, inline: bool);
}

impl LeafAlloc for SlabPool {
    fn alloc_block(&self, cap: usize, _inline: bool) -> Result<(NonNull<u8>, bool), Error> {
        debug_assert_eq!(self.object_size(), block_layout(cap, false).size());
        Ok((self.try_alloc()?, false))
    }

    unsafe fn free_block(&self, p: NonNull<u8>, inline: bool) {
        debug_assert!(!inline);
        // SAFETY: allocated from this pool (caller's contract).
        unsafe { self.free(p) }
    }
}

impl<P: LeafAlloc> LeafAlloc for std::sync::Arc<P> {
    fn alloc_block(&self, cap: usize, inline: bool) -> Result<(NonNull<u8>, bool), Error> {
        (**self).alloc_block(cap, inline)
    }

    unsafe fn free_block(&self, p: NonNull<u8>, inline: bool) {
        // SAFETY: forwarded from the caller.
        unsafe { (**self).free_block(p, inline) }
    }
}

/// The leaf blocks of an index: plain and inline-area pools, and how many leaves of each
/// kind are live.
///
/// Each leaf's kind is chosen when it is allocated (see "Inline pairs"): the head has an
/// inline area, and a split gives its new right leaf one when at least half of the pairs
/// moving there fit inline. [`LeafPools::prefetch_cells`] tells lookups, which must
/// prefetch before they have read the leaf's header, whether most leaves have cells.
pub(crate) struct LeafPools {
    cap: usize,
    plain: SlabPool,
    inline: SlabPool,
    /// Leaves with an inline area, and without, allocated and not yet unlinked.
    live_inline: AtomicUsize,
    live_plain: AtomicUsize,
    /// `live_inline >= live_plain`, kept up to date by `alloc_block` and `unlinked`.
    cells: AtomicBool,
}

impl LeafPools {
    /// Pools for leaves of capacity `cap`.
    pub(crate) fn new(cap: usize) -> LeafPools {
        let lay = block_layout(cap, true);
        LeafPools {
            cap,
            plain: leaf_pool(cap),
            inline: SlabPool::new(lay.size(), lay.align())
                .unwrap_or_else(|e| unreachable!("leaf blocks fit the slab pool: {e}")),
            live_inline: AtomicUsize::new(0),
            live_plain: AtomicUsize::new(0),
            cells: AtomicBool::new(true),
        }
    }

    /// Whether at least half of the live leaves have an inline area: lookups then prefetch
    /// the inline cells of their home slot together with the tag line (for a plain leaf the
    /// prefetched line is not its own and goes unused).
    #[inline]
    pub(crate) fn prefetch_cells(&self) -> bool {
        self.cells.load(Ordering::Relaxed)
    }

    /// Leaves with an inline area and without, allocated and not unlinked: the leaves of
    /// the LeafList (tests and statistics).
    pub(crate) fn live(&self) -> (usize, usize) {
        (
            self.live_inline.load(Ordering::Relaxed),
            self.live_plain.load(Ordering::Relaxed),
        )
    }

    /// Counts a leaf of the kind `inline` out of the LeafList: a merge unlinked it (its
    /// block is freed after a grace period).
    pub(crate) fn unlinked(&self, inline: bool) {
        self.count(inline, -1);
    }

    /// Counts one more (`d = 1`) or one fewer (`d = -1`) leaf of a kind and refreshes the
    /// prefetch hint. Leaves are allocated and unlinked by structural writers (under the
    /// MetaTrieHT mutex), concurrently with lookups only: the hint is a relaxed flag that
    /// lookups read before they know the leaf, and at worst costs a useless (or a missing)
    /// prefetch.
    fn count(&self, inline: bool, d: isize) {
        let c = if inline {
            &self.live_inline
        } else {
            &self.live_plain
        };
        if d > 0 {
            c.fetch_add(1, Ordering::Relaxed);
        } else {
            c.fetch_sub(1, Ordering::Relaxed);
        }
        let (i, p) = self.live();
        let want = i >= p;
        if self.cells.load(Ordering::Relaxed) != want {
            self.cells.store(want, Ordering::Relaxed);
        }
    }

    /// Attaches both pools to the index's chunk populator (see `Config::prefault`).
    pub(crate) fn attach(&self, populator: &orrery_core::alloc::Populator) {
        self.plain.attach(populator);
        self.inline.attach(populator);
    }

    /// Bytes of huge-page chunks taken from the OS.
    pub(crate) fn reserved_bytes(&self) -> usize {
        self.plain.reserved_bytes() + self.inline.reserved_bytes()
    }
}

impl LeafAlloc for LeafPools {
    fn alloc_block(&self, cap: usize, inline: bool) -> Result<(NonNull<u8>, bool), Error> {
        debug_assert_eq!(cap, self.cap);
        let block = if inline {
            self.inline.try_alloc()?
        } else {
            self.plain.try_alloc()?
        };
        self.count(inline, 1);
        Ok((block, inline))
    }

    unsafe fn free_block(&self, p: NonNull<u8>, inline: bool) {
        let pool = if inline { &self.inline } else { &self.plain };
        // SAFETY: allocated from the pool of its kind (caller's contract).
        unsafe { pool.free(p) }
    }
}

impl std::fmt::Debug for LeafPools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeafPools")
            .field("cap", &self.cap)
            .field("live", &self.live())
            .finish()
    }
}

/// A raw pointer to a leaf block. Liveness is the caller's business (the epoch guard of
/// the operation, or ownership by the index).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LeafPtr(NonNull<Leaf>);

// SAFETY: a `LeafPtr` is an address; all access through it is synchronized by the leaf
// locks and the epoch scheme as described in the module docs.
unsafe impl Send for LeafPtr {}
// SAFETY: as above.
unsafe impl Sync for LeafPtr {}

impl LeafPtr {
    /// Allocates from `pool` (made for `cap`) an empty leaf with the given anchor and
    /// version, with an inline area if the pool has such blocks. Fails with
    /// [`Error::OutOfMemory`] (allocating nothing) when no block can be had.
    pub(crate) fn alloc(
        pool: &impl LeafAlloc,
        cap: usize,
        anchor: Box<[u8]>,
        version: u64,
    ) -> Result<LeafPtr, Error> {
        LeafPtr::alloc_kind(pool, cap, anchor, version, true)
    }

    /// As [`LeafPtr::alloc`], with an inline area only if `inline` (and the pool has such
    /// blocks). A block with an inline area takes inline pairs.
    pub(crate) fn alloc_kind(
        pool: &impl LeafAlloc,
        cap: usize,
        anchor: Box<[u8]>,
        version: u64,
        inline: bool,
    ) -> Result<LeafPtr, Error> {
        assert!((MIN_CAP..=MAX_CAP).contains(&cap));
        let anchor_len = u32::try_from(anchor.len()).expect("anchors are at most a key long");
        // The block first: on failure nothing has been taken apart yet.
        let (p, inline) = pool.alloc_block(cap, inline)?;
        let mut anchor_inline = [0u8; ANCHOR_INLINE];
        let anchor_heap = if anchor.len() <= ANCHOR_INLINE {
            anchor_inline[..anchor.len()].copy_from_slice(&anchor);
            std::ptr::null_mut()
        } else {
            Box::into_raw(anchor).cast::<u8>()
        };
        let p = p.cast::<Leaf>();
        let kind = if inline {
            KIND_INLINE_AREA | KIND_INLINE_ON
        } else {
            0
        };
        let hdr = Leaf {
            lock: RwSpinLock::new(()),
            version: AtomicU64::new(version),
            prev: AtomicPtr::new(std::ptr::null_mut()),
            next: AtomicPtr::new(std::ptr::null_mut()),
            nr: AtomicU16::new(0),
            nr_sorted: AtomicU16::new(0),
            sorting: AtomicBool::new(false),
            kind: AtomicU8::new(kind),
            cap: cap as u16,
            anchor_len,
            anchor_inline,
            anchor_heap,
        };
        // SAFETY: the block is large enough and aligned for the header.
        unsafe { p.as_ptr().write(hdr) };
        let lp = LeafPtr(p);
        // Arrays start initialized: all tag slots are holes (tag 0xFFFF: no real entry to
        // their right), the order array is zeroed.
        let tags = lp.base().wrapping_add(size_of::<Leaf>()).cast::<u64>();
        // SAFETY: the tag array lies inside the block right after the header, 8-aligned.
        unsafe { std::slice::from_raw_parts_mut(tags, cap) }.fill(HOLE_END);
        // SAFETY: the order array follows the tag array inside the block.
        unsafe { tags.cast::<u8>().wrapping_add(cap * 8).write_bytes(0, cap) };
        Ok(lp)
    }

    /// Frees the block (not the pairs it references) to `pool`.
    ///
    /// # Safety
    /// The leaf came from `pool`; no other thread can reach it any more, and it is not used
    /// afterwards.
    pub(crate) unsafe fn free(self, pool: &impl LeafAlloc) {
        // SAFETY: the header was initialized by `alloc` and the leaf is ours (contract).
        let h = unsafe { self.hdr() };
        if !h.anchor_heap.is_null() {
            let raw = std::ptr::slice_from_raw_parts_mut(h.anchor_heap, h.anchor_len as usize);
            // SAFETY: `anchor_heap` came from `Box::into_raw` of a boxed slice of this
            // length in `alloc`, and is freed only here, once.
            drop(unsafe { Box::from_raw(raw) });
        }
        let inline = h.kind.load(Ordering::Relaxed) & KIND_INLINE_AREA != 0;
        // SAFETY: allocated from `pool` with this kind, unused from now on (contract).
        unsafe { pool.free_block(self.0.cast(), inline) };
    }

    /// From a non-null raw pointer.
    #[inline]
    pub(crate) fn from_raw(p: *mut Leaf) -> Option<LeafPtr> {
        NonNull::new(p).map(LeafPtr)
    }

    /// The raw pointer.
    #[inline]
    pub(crate) fn as_raw(self) -> *mut Leaf {
        self.0.as_ptr()
    }

    #[inline]
    fn base(self) -> *mut u8 {
        self.0.as_ptr().cast()
    }

    /// The header.
    ///
    /// # Safety
    /// The leaf is live for `'a`.
    #[inline]
    pub(crate) unsafe fn hdr<'a>(self) -> &'a Leaf {
        // SAFETY: live per the contract.
        unsafe { self.0.as_ref() }
    }

    /// Prefetches the header line.
    #[inline]
    pub(crate) fn prefetch(self) {
        crate::prefetch(self.base());
    }

    /// Prefetches the tag line a lookup of `tag` reads first (its home slot) and, with
    /// `inline` (the index's leaves have inline areas), the inline cells of the home slot
    /// and the next two. They depend only on the tag and the capacity, so they are fetched
    /// together with the header.
    #[inline]
    pub(crate) fn prefetch_tags(self, tag: u16, cap: usize, inline: bool) {
        let i = home(tag, cap);
        crate::prefetch(
            self.base()
                .wrapping_add(size_of::<Leaf>() + i * 8)
                .cast_const(),
        );
        if inline {
            let c = self.base().wrapping_add(inline_off(cap) + i * INLINE_MAX);
            crate::prefetch(c.cast_const());
            crate::prefetch(c.wrapping_add(2 * INLINE_MAX).cast_const());
        }
    }

    /// Prefetches, for an insert of `tag`, the tag lines on both sides of the home line and
    /// (with `inline`) the inline-cell lines on both sides of those [`Self::prefetch_tags`]
    /// fetches: when the home run has no hole, the insert walks to the nearest hole and
    /// shifts the entries (and cells) in between, usually within these lines, which would
    /// otherwise be read one cold miss after the other (measured: module docs, "Inserts").
    #[inline]
    pub(crate) fn prefetch_around(self, tag: u16, cap: usize, inline: bool) {
        let i = home(tag, cap);
        let tags = self.base().wrapping_add(size_of::<Leaf>());
        if i >= 8 {
            crate::prefetch(tags.wrapping_add((i - 8) * 8).cast_const());
        }
        if i + 8 < cap {
            crate::prefetch(tags.wrapping_add((i + 8) * 8).cast_const());
        }
        if inline {
            let c = self.base().wrapping_add(inline_off(cap));
            if i >= 4 {
                crate::prefetch(c.wrapping_add((i - 4) * INLINE_MAX).cast_const());
            }
            if i + 6 < cap {
                crate::prefetch(c.wrapping_add((i + 6) * INLINE_MAX).cast_const());
            }
        }
    }

    /// Prefetches the order array (read and written by inserts and removals).
    #[inline]
    pub(crate) fn prefetch_order(self, cap: usize) {
        let o = self.base().wrapping_add(size_of::<Leaf>() + cap * 8);
        crate::prefetch(o.cast_const());
        crate::prefetch(o.wrapping_add(cap - 1).cast_const());
    }

    /// Prefetches what a scan of the leaf reads: the header line, the whole tag array and
    /// the order array. A scan reads the tag array in key order, which is random against
    /// its hash order: issued together these lines (adjacent, in one page) overlap instead
    /// of missing one after the other.
    #[inline]
    pub(crate) fn prefetch_for_scan(self, cap: usize) {
        let b = self.base().cast_const();
        crate::prefetch(b);
        for off in (size_of::<Leaf>()..size_of::<Leaf>() + cap * 9).step_by(64) {
            crate::prefetch(b.wrapping_add(off));
        }
    }

    /// Takes the shared lock.
    ///
    /// # Safety
    /// The leaf is live for `'a`.
    #[inline]
    pub(crate) unsafe fn read<'a>(self) -> ReadLeaf<'a> {
        // SAFETY: live per the contract.
        let g = unsafe { self.hdr() }.lock.read();
        ReadLeaf { ptr: self, _g: g }
    }

    /// Takes the exclusive lock.
    ///
    /// # Safety
    /// The leaf is live for `'a`.
    #[inline]
    pub(crate) unsafe fn write<'a>(self) -> WriteLeaf<'a> {
        // SAFETY: live per the contract.
        let g = unsafe { self.hdr() }.lock.write();
        WriteLeaf { ptr: self, _g: g }
    }

    /// Number of keys, read without the lock (a hint: exact only under the lock).
    #[inline]
    pub(crate) fn nr_hint(self) -> usize {
        // SAFETY: callers only pass live leaves (epoch-protected).
        unsafe { self.hdr() }.nr.load(Ordering::Relaxed) as usize
    }
}

impl Leaf {
    /// The anchor (immutable for the leaf's life).
    #[inline]
    pub(crate) fn anchor(&self) -> &[u8] {
        let n = self.anchor_len as usize;
        if self.anchor_heap.is_null() {
            &self.anchor_inline[..n]
        } else {
            // SAFETY: a non-null `anchor_heap` holds the `n` anchor bytes from `alloc`,
            // never written and freed only with the leaf.
            unsafe { std::slice::from_raw_parts(self.anchor_heap, n) }
        }
    }

    /// Whether the anchor equals `p` (the final comparison of a search that ended on a
    /// leaf entry; the length and, for short anchors, the bytes are in the header line).
    #[inline]
    pub(crate) fn anchor_is(&self, p: &[u8]) -> bool {
        self.anchor_len as usize == p.len() && self.anchor() == p
    }

    /// Whether the anchor equals `p`, followed by `b` when set (the check of a leaf entry,
    /// `search::Check`).
    #[inline]
    pub(crate) fn anchor_is_ext(&self, p: &[u8], b: Option<u8>) -> bool {
        let n = p.len() + usize::from(b.is_some());
        if self.anchor_len as usize != n {
            return false;
        }
        let a = self.anchor();
        a[..p.len()] == *p && b.is_none_or(|b| a[p.len()] == b)
    }

    /// Whether the anchor starts with `p`, followed by `b` when set (the check of an item
    /// that a search matched by tag, `search::Check`).
    #[inline]
    pub(crate) fn anchor_starts_with(&self, p: &[u8], b: Option<u8>) -> bool {
        let n = p.len() + usize::from(b.is_some());
        if (self.anchor_len as usize) < n {
            return false;
        }
        let a = self.anchor();
        a[..p.len()] == *p && b.is_none_or(|b| a[p.len()] == b)
    }

    /// Prefetches the anchor bytes that a check of `len` bytes (`search::Check`) would read
    /// outside the header line: the heap block of an anchor longer than 12 bytes (the
    /// lines of its first `len` bytes, at most two), when the anchor is long enough. A
    /// lookup issues it before it searches the leaf, so that the anchor and the pair block
    /// are fetched in parallel (`search`, deferred check).
    #[inline]
    pub(crate) fn prefetch_anchor(&self, len: usize) {
        if self.anchor_len as usize >= len && !self.anchor_heap.is_null() {
            let p = self.anchor_heap.cast_const();
            crate::prefetch(p);
            if len > 64 {
                crate::prefetch(p.wrapping_add(64));
            }
        }
    }

    /// The leaf's capacity.
    #[inline]
    pub(crate) fn cap(&self) -> usize {
        self.cap as usize
    }

    /// Whether new small pairs go to the inline area.
    #[inline]
    pub(crate) fn inline_on(&self) -> bool {
        self.kind.load(Ordering::Relaxed) & KIND_INLINE_ON != 0
    }

    /// The right neighbour.
    #[inline]
    pub(crate) fn next(&self) -> Option<LeafPtr> {
        LeafPtr::from_raw(self.next.load(Ordering::Acquire))
    }

    /// The left neighbour.
    #[inline]
    pub(crate) fn prev(&self) -> Option<LeafPtr> {
        LeafPtr::from_raw(self.prev.load(Ordering::Acquire))
    }
}

/// Read access to a locked leaf (shared or exclusive).
pub(crate) trait LeafAccess {
    /// The leaf. Implementors hold at least its shared lock while they exist.
    fn ptr(&self) -> LeafPtr;

    /// The header.
    #[inline]
    fn hdr(&self) -> &Leaf {
        // SAFETY: the lock is held, so the leaf is live (it is freed only after being
        // unlinked and a grace period, and never while locked).
        unsafe { self.ptr().hdr() }
    }

    /// Number of keys.
    #[inline]
    fn len(&self) -> usize {
        self.hdr().nr.load(Ordering::Relaxed) as usize
    }

    /// The tag array (all `C` slots, holes included).
    #[inline]
    fn tags(&self) -> &[u64] {
        let n = self.hdr().cap();
        let p = self
            .ptr()
            .base()
            .wrapping_add(size_of::<Leaf>())
            .cast::<u64>();
        // SAFETY: the tag array is inside the live block, initialized, and not written
        // while any lock is shared (writers hold the exclusive lock).
        unsafe { std::slice::from_raw_parts(p, n) }
    }

    /// Key and value of the real slot `i`.
    #[inline]
    fn pair(&self, i: usize) -> (&[u8], &[u8]) {
        let e = self.tags()[i];
        if is_inline(e) {
            let (k, v) = inline_lens(e);
            let c = inline_cell(self.ptr(), i);
            // SAFETY: an inline entry's cell holds its `k + v ≤ INLINE_MAX` bytes inside
            // the live block, written only under the exclusive lock (we hold a lock).
            let b = unsafe { std::slice::from_raw_parts(c, k + v) };
            (&b[..k], &b[k..])
        } else {
            let kv = ekv(e);
            // SAFETY: the block is live under the leaf lock.
            let k = unsafe { kv.key() };
            // SAFETY: as above.
            (k, unsafe { kv.value() })
        }
    }

    /// The key of the real slot `i`.
    #[inline]
    fn key(&self, i: usize) -> &[u8] {
        // SAFETY: we hold a lock for the borrow; the entry is slot `i`'s.
        unsafe { key_of(self.ptr(), self.tags()[i], i) }
    }

    /// The value of the real slot `i`.
    #[inline]
    fn value(&self, i: usize) -> &[u8] {
        self.pair(i).1
    }

    /// Finds `key` (with leaf tag `tag`) in the tag array: `Ok(tag index)` or
    /// `Err(insertion index)` (§3.2, Algorithm 3 `pointSearchLeaf`).
    #[inline]
    fn find_by_tag(&self, key: &[u8], tag: u16, direct: bool) -> Result<usize, usize> {
        let tags = self.tags();
        let n = tags.len();
        let mut i = if direct {
            // Direct speculative positioning, then walk to the first slot >= tag.
            let mut i = home(tag, n);
            while i > 0 && etag(tags[i - 1]) >= tag {
                i -= 1;
            }
            while i < n && etag(tags[i]) < tag {
                i += 1;
            }
            i
        } else {
            tags.partition_point(|&e| etag(e) < tag)
        };
        while i < n && etag(tags[i]) == tag {
            // SAFETY: we hold a lock; the entry is slot `i`'s (holes are skipped).
            if !is_hole(tags[i]) && unsafe { key_of(self.ptr(), tags[i], i) } == key {
                return Ok(i);
            }
            i += 1;
        }
        Err(i)
    }

    /// Whether the order array is fully sorted (acquire: the sorted order is visible).
    #[inline]
    fn is_sorted(&self) -> bool {
        self.hdr().nr_sorted.load(Ordering::Acquire) as usize == self.len()
    }

    /// The order array `[0, nr)`. Only meaningful in key order when [`Self::is_sorted`].
    #[inline]
    fn order(&self) -> &[u8] {
        let n = self.len();
        let cap = self.hdr().cap();
        let p = self.ptr().base().wrapping_add(size_of::<Leaf>() + cap * 8);
        // SAFETY: inside the live block; written only under the exclusive lock or by the
        // sort-bit holder while `nr_sorted < nr`, and callers reading it in key order
        // first observed `nr_sorted == nr` (see module docs).
        unsafe { std::slice::from_raw_parts(p, n) }
    }

    /// Prefetches the pair block of the `j`-th smallest pair (its first two lines: header,
    /// key and the start of the value), unless the pair is inline (then it is in the leaf's
    /// cells, near the lines a scan reads anyway). Requires a sorted leaf and `j < len`.
    ///
    /// A scan knows every block address of a leaf from its tag array without dereferencing
    /// anything, so it can keep several block reads in flight instead of waiting for each.
    #[inline]
    fn prefetch_sorted_pair(&self, j: usize) {
        let i = self.order()[j] as usize;
        let e = self.tags()[i];
        if !is_inline(e) {
            let p = (e & ADDR_MASK) as usize as *const u8;
            crate::prefetch(p);
            crate::prefetch(p.wrapping_add(64));
        }
    }

    /// Key and value of the `j`-th smallest pair. Requires a sorted leaf.
    #[inline]
    fn sorted_pair(&self, j: usize) -> (&[u8], &[u8]) {
        debug_assert!(self.is_sorted());
        self.pair(self.order()[j] as usize)
    }

    /// Index in key order of the first key `>= key` (`> key` when `!inclusive`). Requires a
    /// sorted leaf.
    fn lower_bound(&self, key: &[u8], inclusive: bool) -> usize {
        let order = self.order();
        order.partition_point(|&i| {
            let k = self.key(i as usize);
            if inclusive { k < key } else { k <= key }
        })
    }

    /// Binary search of `key` in key order (requires a sorted leaf): `Ok(order index)` or
    /// `Err(insertion index)`. Used when `SortByTag` is off.
    fn find_sorted(&self, key: &[u8]) -> Result<usize, usize> {
        let order = self.order();
        order.binary_search_by(|&i| self.key(i as usize).cmp(key))
    }
}

/// The inline cell of slot `i` (inside the block only for leaves with an inline area).
#[inline]
fn inline_cell(p: LeafPtr, i: usize) -> *mut u8 {
    // SAFETY: live (callers hold a lock).
    let cap = unsafe { p.hdr() }.cap();
    p.base().wrapping_add(inline_off(cap) + i * INLINE_MAX)
}

/// The key of the real entry `e` at slot `i` of the locked leaf `p`, valid while the lock
/// is held.
///
/// # Safety
/// The caller holds a lock of `p` for `'a`, and `e` is the entry of slot `i`.
#[inline]
unsafe fn key_of<'a>(p: LeafPtr, e: u64, i: usize) -> &'a [u8] {
    if is_inline(e) {
        let (k, _) = inline_lens(e);
        // SAFETY: an inline entry's cell holds its key inside the live block (the caller
        // holds a lock; cells are written only under the exclusive lock).
        unsafe { std::slice::from_raw_parts(inline_cell(p, i), k) }
    } else {
        // SAFETY: the block is live under the leaf lock.
        unsafe { ekv(e).key() }
    }
}

/// A leaf under its shared lock.
pub(crate) struct ReadLeaf<'a> {
    ptr: LeafPtr,
    _g: RwSpinReadGuard<'a, ()>,
}

impl LeafAccess for ReadLeaf<'_> {
    #[inline]
    fn ptr(&self) -> LeafPtr {
        self.ptr
    }
}

impl ReadLeaf<'_> {
    /// Makes the order array sorted while holding only the shared lock (lazy sort by a
    /// scan, protected by the sort bit; see module docs).
    pub(crate) fn ensure_sorted(&self) {
        if self.is_sorted() {
            return;
        }
        let h = self.hdr();
        let backoff = Backoff::new();
        while h
            .sorting
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            backoff.snooze();
        }
        if !self.is_sorted() {
            // SAFETY: we hold the sort bit and `nr_sorted < nr`, so no other thread reads
            // or writes the order array (module docs); `nr` cannot change under the
            // shared lock.
            unsafe { sort_order(self.ptr) };
        }
        h.sorting.store(false, Ordering::Release);
    }
}

/// A leaf under its exclusive lock.
pub(crate) struct WriteLeaf<'a> {
    ptr: LeafPtr,
    _g: RwSpinWriteGuard<'a, ()>,
}

impl LeafAccess for WriteLeaf<'_> {
    #[inline]
    fn ptr(&self) -> LeafPtr {
        self.ptr
    }
}

/// The first 8 bytes of `k` as a big-endian integer, zero-padded. For keys `a`, `b`:
/// `prefix8(a) < prefix8(b)` implies `a < b` (at the first differing byte of the padded
/// prefixes either both keys have a byte, or the shorter key ended there and is a prefix of
/// the other up to that byte, which is then non-zero), so the prefixes order keys except
/// on ties.
#[inline]
fn prefix8(k: &[u8]) -> u64 {
    if let Some(b) = k.first_chunk::<8>() {
        // One load instead of a `memcpy` call (most keys of the sorted sets are this long).
        return u64::from_be_bytes(*b);
    }
    let mut b = [0u8; 8];
    b[..k.len()].copy_from_slice(k);
    u64::from_be_bytes(b)
}

/// Sorts the order array incrementally: sort the unsorted tail, merge it with the sorted
/// run (Algorithm 3 `incSort`), publish `nr_sorted = nr`.
///
/// # Safety
/// The caller has exclusive access to the order array (exclusive lock, or the sort bit of a
/// leaf with `nr_sorted < nr` under the shared lock).
unsafe fn sort_order(p: LeafPtr) {
    // SAFETY: live (caller holds a lock).
    let h = unsafe { p.hdr() };
    let n = h.nr.load(Ordering::Relaxed) as usize;
    let s = h.nr_sorted.load(Ordering::Relaxed) as usize;
    let cap = h.cap();
    let tags_p = p.base().wrapping_add(size_of::<Leaf>()).cast::<u64>();
    // SAFETY: tag array inside the block; not written concurrently (caller's contract).
    let tags = unsafe { std::slice::from_raw_parts(tags_p, cap) };
    let order_p = p.base().wrapping_add(size_of::<Leaf>() + cap * 8);
    // SAFETY: exclusive access to the order array per the contract.
    let order = unsafe { std::slice::from_raw_parts_mut(order_p, n) };
    // The tag array is read below in key order (random lines): fetch it whole first.
    for off in (0..cap * 8).step_by(64) {
        crate::prefetch(tags_p.cast::<u8>().wrapping_add(off));
    }
    // The comparisons below chase one pointer per block key; issue all the pair fetches up
    // front so that they overlap instead of missing one after the other.
    for &i in order.iter() {
        let e = tags[i as usize];
        if !is_inline(e) {
            crate::prefetch(ekv(e).as_ptr());
        }
    }
    // The keys of inline pairs are in the cells, read below in key order (random lines of
    // a leaf that is usually cold: a split reads each leaf once per ~64 inserts): fetch the
    // whole inline area at once instead of one miss after the other.
    if h.kind.load(Ordering::Relaxed) & KIND_INLINE_AREA != 0 {
        let cells = p.base().wrapping_add(inline_off(cap));
        for off in (0..cap * INLINE_MAX).step_by(64) {
            crate::prefetch(cells.wrapping_add(off).cast_const());
        }
    }
    let key = |i: u8| {
        // SAFETY: order entries name real slots, whose pairs are live under the lock.
        unsafe { key_of(p, tags[i as usize], i as usize) }
    };
    // Every key of the leaf starts with the same `l` bytes (long-key sets share long
    // prefixes: `http://www.`), which cannot order anything: skip them.
    let mut l = 0;
    if let Some((&first, rest)) = order.split_first() {
        let k0 = key(first);
        l = k0.len();
        for &i in rest {
            if l == 0 {
                break;
            }
            l = lcp(&k0[..l], key(i));
        }
    }
    // Sort keys: the 8 bytes after the common prefix as a big-endian integer (zero-padded;
    // a smaller padded prefix means a smaller key, see `prefix8`), then the suffix length
    // capped at 9, then the slot. Equal padded prefixes with suffix lengths below 9 order
    // by length (the shorter suffix is a prefix of the longer one), so only runs of equal
    // prefixes of suffixes longer than 8 bytes need a full comparison (`memcmp`); random
    // 8-byte keys never do. Plain integer comparisons replace a comparison closure.
    let mut ents = [0u128; MAX_CAP];
    for (e, &i) in ents.iter_mut().zip(order.iter()) {
        let k = &key(i)[l..];
        *e = ((prefix8(k) as u128) << 64) | ((k.len().min(9) as u128) << 8) | i as u128;
    }
    let ents = &mut ents[..n];
    let long_tie = |a: u128, b: u128| a >> 8 == b >> 8 && (a >> 8) & 0xFF == 9;
    let full = |a: u128, b: u128| key(a as u8)[l + 8..].cmp(&key(b as u8)[l + 8..]);
    let cmp = |a: u128, b: u128| {
        if long_tie(a, b) {
            full(a, b)
        } else {
            a.cmp(&b)
        }
    };
    // Sorts by sort key, then orders runs of long ties by full comparison.
    let sort = |v: &mut [u128]| {
        v.sort_unstable();
        let mut a = 0;
        while a < v.len() {
            let mut b = a + 1;
            while b < v.len() && long_tie(v[a], v[b]) {
                b += 1;
            }
            if b - a > 1 {
                v[a..b].sort_unstable_by(|x, y| full(*x, *y));
            }
            a = b;
        }
    };
    if s * 4 < n {
        // Short sorted run: one sort of everything is cheaper than a merge.
        sort(ents);
        for (o, e) in order.iter_mut().zip(ents.iter()) {
            *o = *e as u8;
        }
    } else {
        sort(&mut ents[s..]);
        let (mut i, mut j, mut o) = (0, s, 0);
        while i < s && j < n {
            if cmp(ents[j], ents[i]).is_lt() {
                order[o] = ents[j] as u8;
                j += 1;
            } else {
                order[o] = ents[i] as u8;
                i += 1;
            }
            o += 1;
        }
        for e in ents[i..s].iter().chain(ents[j..n].iter()) {
            order[o] = *e as u8;
            o += 1;
        }
    }
    h.nr_sorted.store(n as u16, Ordering::Release);
}

/// An entry on its way to a new slot (split, merge, rebuild): its tag word, its inline
/// cell (for an inline pair) and its key rank in the destination leaf.
#[derive(Clone, Copy)]
struct Moved {
    e: u64,
    cell: [u8; INLINE_MAX],
    rank: u8,
}

impl Moved {
    const EMPTY: Moved = Moved {
        e: HOLE_END,
        cell: [0; INLINE_MAX],
        rank: 0,
    };

    /// The pair this entry names (an inline pair is a copy of the cell).
    fn pair(&self) -> Pair {
        if is_inline(self.e) {
            let (k, v) = inline_lens(self.e);
            Pair::Inline(InlinePair::from_parts(k, v, self.cell))
        } else {
            Pair::Heap(ekv(self.e))
        }
    }

    /// Pair `p` with leaf tag `tag` at key rank `rank`.
    fn of(tag: u16, p: Pair, rank: u8) -> Moved {
        match p {
            Pair::Heap(kv) => Moved {
                e: entry(tag, kv),
                cell: [0; INLINE_MAX],
                rank,
            },
            Pair::Inline(ip) => Moved {
                e: entry_inline(tag, &ip),
                cell: *ip.data(),
                rank,
            },
        }
    }
}

impl WriteLeaf<'_> {
    #[inline]
    fn cap(&self) -> usize {
        self.hdr().cap()
    }

    /// The whole tag array (capacity), writable.
    #[inline]
    fn tags_all_mut(&mut self) -> &mut [u64] {
        let cap = self.cap();
        let p = self
            .ptr
            .base()
            .wrapping_add(size_of::<Leaf>())
            .cast::<u64>();
        // SAFETY: exclusive lock held; the array lies inside the live block.
        unsafe { std::slice::from_raw_parts_mut(p, cap) }
    }

    /// The whole order array (capacity), writable.
    #[inline]
    fn order_all_mut(&mut self) -> &mut [u8] {
        let cap = self.cap();
        let p = self.ptr.base().wrapping_add(size_of::<Leaf>() + cap * 8);
        // SAFETY: exclusive lock held; the array lies inside the live block.
        unsafe { std::slice::from_raw_parts_mut(p, cap) }
    }

    #[inline]
    fn set_len(&mut self, n: usize, sorted: usize) {
        let h = self.hdr();
        h.nr.store(n as u16, Ordering::Relaxed);
        h.nr_sorted.store(sorted as u16, Ordering::Relaxed);
    }

    /// The whole inline area (`INLINE_MAX` bytes per slot), writable; empty for a leaf
    /// without one.
    #[inline]
    fn inline_all_mut(&mut self) -> &mut [u8] {
        if self.hdr().kind.load(Ordering::Relaxed) & KIND_INLINE_AREA == 0 {
            return &mut [];
        }
        let cap = self.cap();
        let p = self.ptr.base().wrapping_add(inline_off(cap));
        // SAFETY: exclusive lock held; a leaf with an inline area has `cap` cells there.
        unsafe { std::slice::from_raw_parts_mut(p, cap * INLINE_MAX) }
    }

    /// Stores `p`'s bytes in the inline cell of slot `i` and returns its entry.
    #[inline]
    fn put_inline(&mut self, i: usize, tag: u16, p: &InlinePair) -> u64 {
        assert!(
            self.hdr().inline_on(),
            "inline pair in a leaf without inline pairs"
        );
        self.inline_all_mut()[i * INLINE_MAX..(i + 1) * INLINE_MAX].copy_from_slice(p.data());
        entry_inline(tag, p)
    }

    /// The pair of real slot `i` (a copy of an inline pair).
    fn take(&mut self, i: usize) -> Pair {
        let e = self.tags()[i];
        if is_inline(e) {
            let (k, v) = inline_lens(e);
            let mut data = [0u8; INLINE_MAX];
            data.copy_from_slice(&self.inline_all_mut()[i * INLINE_MAX..(i + 1) * INLINE_MAX]);
            Pair::Inline(InlinePair::from_parts(k, v, data))
        } else {
            Pair::Heap(ekv(e))
        }
    }

    /// Whether new small pairs of this leaf go inline.
    #[inline]
    pub(crate) fn inline_on(&self) -> bool {
        self.hdr().inline_on()
    }

    /// How many of the pairs of key ranks `[j, nr)` would fit inline (inline ones, and
    /// blocks of at most [`INLINE_MAX`] key and value bytes). The leaf must be sorted.
    pub(crate) fn small_from(&self, j: usize) -> usize {
        debug_assert!(self.is_sorted());
        self.order()[j.min(self.len())..]
            .iter()
            .filter(|&&o| {
                let e = self.tags()[o as usize];
                is_inline(e) || ekv(e).pair_len() <= INLINE_MAX
            })
            .count()
    }

    /// The value of real slot `i`, writable in place.
    #[inline]
    pub(crate) fn value_mut(&mut self, i: usize) -> &mut [u8] {
        let e = self.tags()[i];
        if is_inline(e) {
            let (k, v) = inline_lens(e);
            let off = i * INLINE_MAX + k;
            &mut self.inline_all_mut()[off..off + v]
        } else {
            // SAFETY: exclusive lock held: no other reference into the block exists, and
            // the borrow ends with `&mut self`'s.
            unsafe { ekv(e).value_mut() }
        }
    }

    /// Whether the leaf is full.
    #[inline]
    pub(crate) fn is_full(&self) -> bool {
        self.len() >= self.cap()
    }

    /// Sorts the order array (exclusive lock: no sort bit needed).
    pub(crate) fn sort(&mut self) {
        if !self.is_sorted() {
            // SAFETY: exclusive lock held.
            unsafe { sort_order(self.ptr) };
        }
    }

    /// Inserts a new pair with leaf tag `tag` into a non-full leaf, keeping the slots
    /// ordered by tag: into a hole of the right run when there is one (as close to the
    /// tag's home as the run allows), otherwise shifting entries toward the nearest hole.
    /// With `sorted_at = Some(j)` the key also goes to key-order position `j` (the leaf
    /// must be sorted; used when `SortByTag` is off), otherwise it is appended to the
    /// unsorted tail. An inline pair's bytes go to the cell of its slot, and the cells of
    /// shifted entries move with them. Returns the slot used.
    pub(crate) fn insert(&mut self, sorted_at: Option<usize>, tag: u16, pair: Pair) -> usize {
        let n = self.len();
        let s = self.hdr().nr_sorted.load(Ordering::Relaxed) as usize;
        let cap = self.cap();
        assert!(n < cap);
        let tags = self.tags_all_mut();
        // First slot whose tag is >= `tag` (slots are non-decreasing, holes included),
        // found by the lookup's walk from the home slot: it touches the tag lines the
        // lookup just read instead of a binary search's cold ones.
        let mut p = home(tag, cap);
        while p > 0 && etag(tags[p - 1]) >= tag {
            p -= 1;
        }
        while p < cap && etag(tags[p]) < tag {
            p += 1;
        }
        // `shift` = (first, last, delta): order entries naming slots in [first, last) move
        // by delta.
        let (pos, shift) = if p < cap && is_hole(tags[p]) {
            // `p` starts a run of holes; entries before it are < tag, the next real entry
            // after the run is >= tag. Take the slot of the run closest to home.
            let mut r = p;
            while r < cap && is_hole(tags[r]) {
                r += 1;
            }
            let q = home(tag, cap).clamp(p, r - 1);
            for h in &mut tags[p..q] {
                *h = hole(tag);
            }
            (q, None)
        } else {
            // Slot `p` (if any) is real, and so is `p - 1` (a hole there would carry a tag
            // >= `tag`). Shift toward the nearest hole.
            // The nearest hole, searched outward from `p`: only the tag lines around the
            // insertion point are read (scanning each side to its first hole read cold
            // lines far from it; measured in the module docs, "Inserts").
            let mut d = 0;
            let nearest = loop {
                if p + d < cap && is_hole(tags[p + d]) {
                    break Ok(p + d);
                }
                if d < p && is_hole(tags[p - 1 - d]) {
                    break Err(p - 1 - d);
                }
                assert!(p + d < cap || d < p, "a non-full leaf has a hole");
                d += 1;
            };
            match nearest {
                Ok(b) => {
                    tags.copy_within(p..b, p + 1);
                    (p, Some((p, b, 1i16)))
                }
                Err(a) => {
                    // Holes before `a` keep their tag: their next real entry moves to `a`.
                    tags.copy_within(a + 1..p, a);
                    (p - 1, Some((a + 1, p, -1i16)))
                }
            }
        };
        if let Some((first, last, d)) = shift {
            // Inline cells move with their entries.
            let to = (first as isize + d as isize) as usize;
            let cells = self.inline_all_mut();
            if !cells.is_empty() {
                cells.copy_within(first * INLINE_MAX..last * INLINE_MAX, to * INLINE_MAX);
            }
        }
        let e = match &pair {
            Pair::Heap(kv) => entry(tag, *kv),
            Pair::Inline(ip) => self.put_inline(pos, tag, ip),
        };
        self.tags_all_mut()[pos] = e;
        let order = self.order_all_mut();
        if let Some((first, last, d)) = shift {
            // Branch-free so that it vectorizes: `o - first < last - first` (wrapping)
            // tests `first <= o < last`.
            let (f, w, d) = (first as u16, (last - first) as u16, d as u8);
            for o in &mut order[..n] {
                let x = *o;
                let inside = (x as u16).wrapping_sub(f) < w;
                *o = if inside { x.wrapping_add(d) } else { x };
            }
        }
        match sorted_at {
            Some(j) => {
                debug_assert_eq!(s, n);
                order.copy_within(j..n, j + 1);
                order[j] = pos as u8;
                self.set_len(n + 1, n + 1);
            }
            None => {
                order[n] = pos as u8;
                self.set_len(n + 1, s);
            }
        }
        pos
    }

    /// Replaces the pair at tag index `i` (same key) and returns the old one (an inline
    /// pair as a copy).
    pub(crate) fn replace(&mut self, i: usize, pair: Pair) -> Pair {
        let old = self.take(i);
        let tag = etag(self.tags()[i]);
        let e = match &pair {
            Pair::Heap(kv) => entry(tag, *kv),
            Pair::Inline(ip) => self.put_inline(i, tag, ip),
        };
        self.tags_all_mut()[i] = e;
        old
    }

    /// Removes the pair at slot `ti` (which becomes a hole) and returns it (an inline pair
    /// as a copy).
    pub(crate) fn remove(&mut self, ti: usize) -> Pair {
        let taken = self.take(ti);
        let n = self.len();
        let mut s = self.hdr().nr_sorted.load(Ordering::Relaxed) as usize;
        let cap = self.cap();
        let tags = self.tags_all_mut();
        let old = tags[ti];
        debug_assert!(!is_hole(old));
        // The run of holes that now contains `ti` carries the tag of the next real entry.
        let mut first = ti;
        while first > 0 && is_hole(tags[first - 1]) {
            first -= 1;
        }
        let mut end = ti + 1;
        while end < cap && is_hole(tags[end]) {
            end += 1;
        }
        let t = if end < cap {
            hole(etag(tags[end]))
        } else {
            HOLE_END
        };
        for h in &mut tags[first..end] {
            *h = t;
        }
        let order = self.order_all_mut();
        let j = order[..n]
            .iter()
            .position(|&o| o as usize == ti)
            .expect("order is a permutation of the real slots");
        order.copy_within(j + 1..n, j);
        if j < s {
            s -= 1;
        }
        self.set_len(n - 1, s);
        taken
    }

    /// Replaces the contents with `pairs`, given in ascending key order as
    /// `(leaf tag, pair)`: entries go, in tag order, to their home slots or the first free
    /// slot after, pulled back from the end when they would not fit. Inline pairs (copies,
    /// so `pairs` may come from this leaf) go to their new slot's cell; the leaf must take
    /// inline pairs then. Leaves the leaf fully sorted.
    pub(crate) fn rebuild(&mut self, pairs: &[(u16, Pair)]) {
        let m = pairs.len();
        assert!(m <= self.cap());
        let mut keys = [0u32; MAX_CAP];
        for (j, &(t, _)) in pairs.iter().enumerate() {
            keys[j] = ((t as u32) << 8) | j as u32;
        }
        keys[..m].sort_unstable();
        let mut src = [Moved::EMPTY; MAX_CAP];
        for (s, &k) in src.iter_mut().zip(&keys[..m]) {
            let j = (k & 0xFF) as usize;
            let (tag, pair) = pairs[j];
            *s = Moved::of(tag, pair, j as u8);
        }
        self.place(&src[..m]);
    }

    /// Split (Algorithm 4): moves the pairs of key ranks `[j, nr)` to `right` (an empty
    /// leaf of the same capacity) and keeps ranks `[0, j)`, both spread around their home
    /// slots and fully sorted. The leaf must be sorted ([`Self::sort`]).
    ///
    /// Entries move as their tag words (a pair block's address or an inline entry's
    /// lengths) plus, for inline pairs, their 16-byte cells: no pair is copied out as a
    /// [`Pair`], nothing is allocated, and no tag sort is needed, because reading the
    /// slots in order yields each half already ordered by tag (measured: see the module
    /// docs, "Splits"). Only when `right`'s kind differs from this leaf's does each moving
    /// pair go through `convert` (given the pair and whether `right` takes inline pairs; it
    /// must return an inline pair only if `right` does, and may turn a block that fits into
    /// an inline pair); the tag stays.
    ///
    /// All conversions happen before either leaf is written. If one fails (turning an
    /// inline pair into a block needs memory), the pairs converted so far are handed to
    /// `discard` (only new blocks made from inline pairs, whose originals are still in this
    /// leaf: the failing direction is the only direction of that split) and the error is
    /// returned with both leaves unchanged.
    pub(crate) fn split_into(
        &mut self,
        right: &mut WriteLeaf<'_>,
        j: usize,
        convert: &mut dyn FnMut(Pair, bool) -> Result<Pair, Error>,
        discard: &mut dyn FnMut(Pair),
    ) -> Result<(), Error> {
        debug_assert!(self.is_sorted());
        let n = self.len();
        let cap = self.cap();
        assert!(0 < j && j < n && right.len() == 0 && right.cap() == cap);
        let mut rank = [0u8; MAX_CAP];
        for (r, &o) in self.order().iter().enumerate() {
            rank[o as usize] = r as u8;
        }
        let mut lo = [Moved::EMPTY; MAX_CAP];
        let mut hi = [Moved::EMPTY; MAX_CAP];
        let (mut nl, mut nh) = (0, 0);
        let has_cells = !self.inline_all_mut().is_empty();
        for (i, &r) in rank[..cap].iter().enumerate() {
            let e = self.tags()[i];
            if is_hole(e) {
                continue;
            }
            let mut m = Moved {
                e,
                cell: [0; INLINE_MAX],
                rank: r,
            };
            if has_cells && is_inline(e) {
                m.cell
                    .copy_from_slice(&self.inline_all_mut()[i * INLINE_MAX..(i + 1) * INLINE_MAX]);
            }
            if (m.rank as usize) < j {
                lo[nl] = m;
                nl += 1;
            } else {
                m.rank -= j as u8;
                hi[nh] = m;
                nh += 1;
            }
        }
        debug_assert_eq!(nl + nh, n);
        let to_inline = right.inline_on();
        if to_inline != self.inline_on() {
            let mut was_inline = [false; MAX_CAP];
            for k in 0..nh {
                let m = hi[k];
                was_inline[k] = is_inline(m.e);
                match convert(m.pair(), to_inline) {
                    Ok(p) => hi[k] = Moved::of(etag(m.e), p, m.rank),
                    Err(e) => {
                        for (c, &inl) in hi[..k].iter().zip(&was_inline[..k]) {
                            if inl && !is_inline(c.e) {
                                discard(c.pair());
                            }
                        }
                        return Err(e);
                    }
                }
            }
        }
        right.place(&hi[..nh]);
        self.place(&lo[..nl]);
        Ok(())
    }

    /// Replaces the contents with `src`, given in tag order with each entry's key rank
    /// (a permutation of `0..src.len()`): entries go to their home slots or the first free
    /// slot after, pulled back from the end when they would not fit; inline cells go with
    /// them. Leaves the leaf fully sorted.
    fn place(&mut self, src: &[Moved]) {
        let m = src.len();
        let cap = self.cap();
        assert!(m <= cap);
        let mut pos = [0usize; MAX_CAP];
        let mut next_free = 0;
        for (t, s) in src.iter().enumerate() {
            debug_assert!(t == 0 || etag(src[t - 1].e) <= etag(s.e));
            pos[t] = home(etag(s.e), cap).max(next_free);
            next_free = pos[t] + 1;
        }
        let mut limit = cap;
        for t in (0..m).rev() {
            pos[t] = pos[t].min(limit - 1);
            limit = pos[t];
        }
        let inline_on = self.hdr().inline_on();
        let mut ord = [0u8; MAX_CAP];
        {
            let cells = self.inline_all_mut();
            for (s, &p) in src.iter().zip(&pos[..m]) {
                if is_inline(s.e) {
                    assert!(inline_on, "inline pair in a leaf without inline pairs");
                    cells[p * INLINE_MAX..(p + 1) * INLINE_MAX].copy_from_slice(&s.cell);
                }
            }
        }
        let tags = self.tags_all_mut();
        // Fill from the right: a hole carries the tag of the next real entry after it.
        let mut next = HOLE_END;
        let mut t = m;
        for i in (0..cap).rev() {
            if t > 0 && pos[t - 1] == i {
                t -= 1;
                tags[i] = src[t].e;
                next = hole(etag(src[t].e));
                ord[src[t].rank as usize] = i as u8;
            } else {
                tags[i] = next;
            }
        }
        self.order_all_mut()[..m].copy_from_slice(&ord[..m]);
        self.set_len(m, m);
    }

    /// The pairs in key order as `(leaf tag, pair)` (sorts first; inline pairs are copied).
    pub(crate) fn sorted_pairs(&mut self) -> Vec<(u16, Pair)> {
        self.sort();
        let n = self.len();
        let mut out = Vec::with_capacity(n);
        for j in 0..n {
            let i = self.order()[j] as usize;
            out.push((etag(self.tags()[i]), self.take(i)));
        }
        out
    }

    /// Calls `f` with every pair block the leaf references, in slot order (no sort: for
    /// dropping the index, where the order does not matter). Inline pairs need no freeing
    /// and are skipped. The leaf is left as it is: the caller frees it next.
    pub(crate) fn for_each_block(&self, mut f: impl FnMut(Kv)) {
        for &e in self.tags() {
            if !is_hole(e) && !is_inline(e) {
                f(ekv(e));
            }
        }
    }

    /// Sets the expected MetaTrieHT version.
    #[inline]
    pub(crate) fn set_version(&self, v: u64) {
        self.hdr().version.store(v, Ordering::Release);
    }

    /// Sets the right neighbour.
    #[inline]
    pub(crate) fn set_next(&self, n: Option<LeafPtr>) {
        self.hdr().next.store(
            n.map_or(std::ptr::null_mut(), |p| p.as_raw()),
            Ordering::Release,
        );
    }

    /// Sets the left neighbour.
    #[inline]
    pub(crate) fn set_prev(&self, p: Option<LeafPtr>) {
        self.hdr().prev.store(
            p.map_or(std::ptr::null_mut(), |p| p.as_raw()),
            Ordering::Release,
        );
    }
}

#[cfg(test)]
#[allow(clippy::multiple_unsafe_ops_per_block)]
mod tests {
    use super::*;
    use crate::deps::hash::crc32c;
    use orrery_core::alloc::SizeClassPool;
    use std::collections::BTreeMap;

    type Model = BTreeMap<Vec<u8>, Vec<u8>>;

    fn tag_of(k: &[u8]) -> u16 {
        leaf_tag(crc32c(k))
    }

    /// A pair as the index makes it: inline when the leaf takes inline pairs and it fits.
    fn mk(w: &WriteLeaf<'_>, kvp: &SizeClassPool, k: &[u8], v: &[u8]) -> Pair {
        match InlinePair::new(k, v).filter(|_| w.inline_on()) {
            Some(ip) => Pair::Inline(ip),
            None => Pair::Heap(Kv::new(kvp, k, v).unwrap()),
        }
    }

    fn check(w: &WriteLeaf<'_>, model: &Model) {
        assert_eq!(w.len(), model.len());
        let tags = w.tags();
        for win in tags.windows(2) {
            assert!(etag(win[0]) <= etag(win[1]));
        }
        let mut seen: Vec<usize> = w.order().iter().map(|&o| o as usize).collect();
        seen.sort_unstable();
        let real: Vec<usize> = (0..tags.len()).filter(|&i| !is_hole(tags[i])).collect();
        assert_eq!(seen, real, "order names exactly the real slots");
        // A hole carries the tag of the next real slot to its right.
        let mut next = HOLE_END;
        for &e in tags.iter().rev() {
            if is_hole(e) {
                assert_eq!(e, next);
            } else {
                next = hole(etag(e));
            }
        }
        for (k, v) in model {
            for direct in [true, false] {
                let i = w.find_by_tag(k, tag_of(k), direct).expect("present");
                assert_eq!(w.pair(i), (k.as_slice(), v.as_slice()));
                // Small pairs are inline exactly when the leaf takes inline pairs.
                let small = k.len() + v.len() <= INLINE_MAX;
                assert_eq!(
                    is_inline(tags[i]),
                    small && w.inline_on(),
                    "inline placement"
                );
            }
        }
        assert!(
            w.find_by_tag(b"absent-key", tag_of(b"absent-key"), true)
                .is_err()
        );
    }

    fn free_all(w: &mut WriteLeaf<'_>, kvp: &SizeClassPool) {
        for (_, p) in w.sorted_pairs() {
            // SAFETY: the test owns every pair.
            unsafe { p.free(kvp) };
        }
        w.rebuild(&[]);
    }

    /// Values of 4, 12 (key + value = 16: the largest inline pair) and 13 bytes (one byte
    /// too long) for 4-byte keys.
    fn val(i: u32) -> Vec<u8> {
        let len = [4usize, 12, 13][i as usize % 3];
        (0..len).map(|j| (i as usize + j) as u8).collect()
    }

    fn insert_find_remove_sort_with(pool: &impl LeafAlloc, n: usize) {
        let kvp = crate::kv::kv_pools();
        let leaf = LeafPtr::alloc(pool, n, Box::new([]), 0).unwrap();
        let mut model = Model::new();
        {
            // SAFETY: the test owns the leaf.
            let mut w = unsafe { leaf.write() };
            for i in 0..n as u32 {
                let k = (i.wrapping_mul(2_654_435_761)).to_be_bytes().to_vec();
                let t = tag_of(&k);
                assert!(w.find_by_tag(&k, t, true).is_err());
                let p = mk(&w, &kvp, &k, &val(i));
                w.insert(None, t, p);
                model.insert(k, val(i));
                if i % 7 == 0 {
                    w.sort();
                    assert!(w.is_sorted());
                    // Shifts must carry the inline cells along: check everything often.
                    check(&w, &model);
                }
            }
            assert!(w.is_full());
            check(&w, &model);
            let sorted: Vec<Vec<u8>> = w
                .sorted_pairs()
                .iter()
                // SAFETY: live.
                .map(|(_, p)| unsafe { p.key() }.to_vec())
                .collect();
            assert_eq!(sorted, model.keys().cloned().collect::<Vec<_>>());
            // Remove every third key; unsorted tail mixes with removals.
            let keys: Vec<Vec<u8>> = model.keys().cloned().collect();
            for (j, k) in keys.iter().enumerate() {
                if j % 3 == 0 {
                    let i = w.find_by_tag(k, tag_of(k), false).unwrap();
                    let p = w.remove(i);
                    // SAFETY: live until freed below.
                    assert_eq!(unsafe { p.key() }, k.as_slice());
                    // SAFETY: removed from the leaf, owned by the test.
                    unsafe { p.free(&kvp) };
                    model.remove(k);
                }
            }
            check(&w, &model);
            // Lower bound on sorted order.
            w.sort();
            let first = model.keys().next().unwrap().clone();
            assert_eq!(w.lower_bound(&first, true), 0);
            assert_eq!(w.lower_bound(&first, false), 1);
            assert_eq!(w.find_sorted(&first), Ok(0));
            assert_eq!(w.sorted_pair(0).0, first.as_slice());
            // Replace: grow past the inline limit, shrink back into it, change in place.
            for new in [vec![1u8; 13], vec![2u8; 3], vec![3u8; 12], vec![4u8; 40]] {
                let i = w.find_by_tag(&first, tag_of(&first), true).unwrap();
                let p = mk(&w, &kvp, &first, &new);
                let old = w.replace(i, p);
                // SAFETY: live until freed.
                assert_eq!(unsafe { old.key() }, first.as_slice());
                // SAFETY: replaced, owned by the test.
                unsafe { old.free(&kvp) };
                model.insert(first.clone(), new);
                check(&w, &model);
            }
            for k in model.keys().cloned().collect::<Vec<_>>() {
                let i = w.find_by_tag(&k, tag_of(&k), true).unwrap();
                w.value_mut(i).iter_mut().for_each(|b| *b ^= 0x5A);
                model
                    .get_mut(&k)
                    .unwrap()
                    .iter_mut()
                    .for_each(|b| *b ^= 0x5A);
            }
            check(&w, &model);
            free_all(&mut w, &kvp);
        }
        // SAFETY: unlocked and owned.
        unsafe { leaf.free(pool) };
    }

    /// The lazy sort with keys whose first 8 bytes after a shared prefix tie (suffixes
    /// longer than 8 bytes need the full comparison), keys that are prefixes of others,
    /// trailing zeros, and both the full sort and the merge of a tail into a sorted run.
    #[test]
    fn sort_long_ties_and_common_prefixes() {
        let n = if cfg!(miri) { 20 } else { 64 };
        for prefix in [&b""[..], &b"ab"[..], &b"http://www.example.com/"[..]] {
            for mid_sort in [false, true] {
                let pools = LeafPools::new(n);
                let kvp = crate::kv::kv_pools();
                let leaf = LeafPtr::alloc(&pools, n, Box::new([]), 0).unwrap();
                let mut model = Model::new();
                // SAFETY: the test owns the leaf.
                let mut w = unsafe { leaf.write() };
                let mut i = 0u32;
                while model.len() < n {
                    let b = (i / 7) as u8;
                    let mut k = prefix.to_vec();
                    match i % 7 {
                        0 => k.push(b),
                        1 => k.extend([b, 0]),
                        2 => k.extend(
                            b"12345678"
                                .iter()
                                .chain(&[b])
                                .chain(&[0u8; 2][..i as usize % 3]),
                        ),
                        3 => k.extend(b"12345678"),
                        4 => k.extend(b"1234567"),
                        5 => k.extend(b"12345678\xFF".iter().chain(&[b, b])),
                        _ => k.extend([0xFF, b, 0, 0, 0, 0, 0, 0, 0, b]),
                    }
                    i += 1;
                    if model.contains_key(&k) {
                        continue;
                    }
                    let v = [b; 3];
                    let p = mk(&w, &kvp, &k, &v);
                    w.insert(None, tag_of(&k), p);
                    model.insert(k, v.to_vec());
                    if mid_sort && model.len() == n / 2 {
                        w.sort();
                    }
                }
                w.sort();
                let got: Vec<Vec<u8>> = (0..w.len()).map(|j| w.sorted_pair(j).0.to_vec()).collect();
                assert_eq!(got, model.keys().cloned().collect::<Vec<_>>(), "{prefix:?}");
                check(&w, &model);
                free_all(&mut w, &kvp);
                drop(w);
                // SAFETY: unlocked and owned.
                unsafe { leaf.free(&pools) };
            }
        }
    }

    /// The index's conversion of a pair moving into a leaf of the other kind (see
    /// `Wormhole::convert_pair`), without the memory counters.
    fn convert(kvp: &SizeClassPool, p: Pair, inline: bool) -> Pair {
        match p {
            Pair::Inline(ip) if !inline => Pair::Heap(Kv::new(kvp, ip.key(), ip.value()).unwrap()),
            Pair::Heap(kv) if inline => {
                // SAFETY: the test owns the block.
                let (k, v) = unsafe { (kv.key(), kv.value()) };
                match InlinePair::new(k, v) {
                    Some(ip) => {
                        // SAFETY: replaced by its copy, never used again.
                        unsafe { kv.free(kvp) };
                        Pair::Inline(ip)
                    }
                    None => p,
                }
            }
            _ => p,
        }
    }

    fn split_into_case(pool: &impl LeafAlloc, n: usize, j: usize, kinds: (bool, bool)) {
        let kvp = crate::kv::kv_pools();
        let left = LeafPtr::alloc_kind(pool, n, Box::new([]), 0, kinds.0).unwrap();
        let right = LeafPtr::alloc_kind(pool, n, Box::new([]), 0, kinds.1).unwrap();
        let mut model = Model::new();
        // SAFETY: the test owns both leaves.
        let (mut lw, mut rw) = unsafe { (left.write(), right.write()) };
        for i in 0..n as u32 {
            let k = i.wrapping_mul(0x9E37_79B9).to_be_bytes().to_vec();
            let p = mk(&lw, &kvp, &k, &val(i));
            lw.insert(None, tag_of(&k), p);
            model.insert(k, val(i));
        }
        lw.sort();
        let mut converted = 0;
        lw.split_into(
            &mut rw,
            j,
            &mut |p, inline| {
                converted += 1;
                Ok(convert(&kvp, p, inline))
            },
            &mut |_| unreachable!("no conversion fails"),
        )
        .unwrap();
        // Pairs are converted exactly when the kinds differ, one call per moving pair.
        let differ = lw.inline_on() != rw.inline_on();
        assert_eq!(converted, if differ { n - j } else { 0 });
        // The right leaf holds every pair in its own kind's form.
        for &e in rw.tags() {
            if !is_hole(e) && rw.inline_on() && differ {
                assert!(is_inline(e) || ekv(e).pair_len() > INLINE_MAX);
            }
            if !is_hole(e) && !rw.inline_on() {
                assert!(!is_inline(e));
            }
        }
        let mut it = model.into_iter();
        let ml: Model = it.by_ref().take(j).collect();
        let mr: Model = it.collect();
        for (w, m) in [(&lw, &ml), (&rw, &mr)] {
            check(w, m);
            assert!(w.is_sorted());
            let got: Vec<Vec<u8>> = (0..w.len()).map(|x| w.sorted_pair(x).0.to_vec()).collect();
            assert_eq!(got, m.keys().cloned().collect::<Vec<_>>(), "j {j}");
        }
        free_all(&mut lw, &kvp);
        free_all(&mut rw, &kvp);
        drop((lw, rw));
        // SAFETY: unlocked and owned.
        unsafe { left.free(pool) };
        // SAFETY: as above.
        unsafe { right.free(pool) };
    }

    /// `split_into` at the middle and at both extremes, for leaves with and without an
    /// inline area and between the kinds: both halves hold exactly their key ranges, sorted,
    /// with valid arrays, and a right leaf of the other kind holds its pairs in its form.
    #[test]
    fn split_into_halves() {
        let n = if cfg!(miri) { 16 } else { 128 };
        for j in [1, n / 2, n - 1] {
            for kinds in [(true, true), (true, false), (false, true), (false, false)] {
                split_into_case(&LeafPools::new(n), n, j, kinds);
            }
            split_into_case(&leaf_pool(n), n, j, (true, true));
        }
    }

    /// Inserts whose tags all have their home at one end of the leaf: every insert after
    /// the first few shifts, toward the right at the left end and toward the left at the
    /// right end (the nearest hole is searched outward).
    #[test]
    fn inserts_shift_toward_nearest_hole() {
        let cap = 16;
        let pools = LeafPools::new(cap);
        let kvp = crate::kv::kv_pools();
        let leaf = LeafPtr::alloc(&pools, cap, Box::new([]), 0).unwrap();
        let mut model = Model::new();
        // SAFETY: owned.
        let mut w = unsafe { leaf.write() };
        let (mut lo, mut hi) = (0, 0);
        let mut i = 0u32;
        while model.len() < cap {
            let k = i.to_le_bytes().to_vec();
            i += 1;
            let h = home(tag_of(&k), cap);
            let take = if h == 0 && lo < cap / 2 {
                lo += 1;
                true
            } else if h == cap - 1 && hi < cap / 2 {
                hi += 1;
                true
            } else {
                false
            };
            if take {
                let p = mk(&w, &kvp, &k, b"v");
                let slot = w.insert(None, tag_of(&k), p);
                model.insert(k.clone(), b"v".to_vec());
                assert_eq!(w.find_by_tag(&k, tag_of(&k), true), Ok(slot));
                check(&w, &model);
            }
        }
        assert!(w.is_full());
        free_all(&mut w, &kvp);
        drop(w);
        // SAFETY: owned, unlocked.
        unsafe { leaf.free(&pools) };
    }

    #[test]
    fn insert_find_remove_sort_plain() {
        let n = if cfg!(miri) { 24 } else { 128 };
        insert_find_remove_sort_with(&leaf_pool(n), n);
    }

    #[test]
    fn insert_find_remove_sort_inline() {
        let n = if cfg!(miri) { 24 } else { 128 };
        let pools = LeafPools::new(n);
        insert_find_remove_sort_with(&pools, n);
        // Dense shifting: a small leaf filled and drained twice.
        insert_find_remove_sort_with(&LeafPools::new(MIN_CAP), MIN_CAP);
    }

    /// Splits and merges as `smo` does them: inline pairs move between leaves through
    /// `sorted_pairs` and `rebuild` (including a rebuild of a leaf from its own pairs).
    #[test]
    fn rebuild_moves_inline_pairs() {
        let n = if cfg!(miri) { 16 } else { 64 };
        let pools = LeafPools::new(n);
        let kvp = crate::kv::kv_pools();
        let left = LeafPtr::alloc(&pools, n, Box::new([]), 0).unwrap();
        let right = LeafPtr::alloc(&pools, n, Box::new(*b"r"), 0).unwrap();
        let mut model = Model::new();
        // SAFETY: the test owns both leaves.
        let (mut lw, mut rw) = unsafe { (left.write(), right.write()) };
        for i in 0..n as u32 {
            let k = i.wrapping_mul(0x9E37_79B9).to_le_bytes().to_vec();
            let p = mk(&lw, &kvp, &k, &val(i));
            lw.insert(None, tag_of(&k), p);
            model.insert(k, val(i));
        }
        let pairs = lw.sorted_pairs();
        let j = pairs.len() / 2;
        rw.rebuild(&pairs[j..]);
        lw.rebuild(&pairs[..j]);
        let (ml, mr): (Model, Model) = {
            let mut it = model.clone().into_iter();
            let l: Model = it.by_ref().take(j).collect();
            (l, it.collect())
        };
        check(&lw, &ml);
        check(&rw, &mr);
        // Merge back (right into left), the right leaf emptied.
        let mut all = lw.sorted_pairs();
        all.extend(rw.sorted_pairs());
        lw.rebuild(&all);
        rw.rebuild(&[]);
        check(&lw, &model);
        check(&rw, &Model::new());
        free_all(&mut lw, &kvp);
        drop((lw, rw));
        // SAFETY: unlocked and owned.
        unsafe { left.free(&pools) };
        // SAFETY: as above.
        unsafe { right.free(&pools) };
    }

    /// A plain leaf from the index's pools stores every pair as a block; the pools count
    /// the live leaves of each kind and hint cell prefetches while most leaves have cells.
    #[test]
    fn plain_leaf_stores_blocks_and_pools_count_kinds() {
        let pools = LeafPools::new(16);
        let kvp = crate::kv::kv_pools();
        let head = LeafPtr::alloc(&pools, 16, Box::new([]), 0).unwrap();
        assert_eq!((pools.live(), pools.prefetch_cells()), ((1, 0), true));
        let leaf = LeafPtr::alloc_kind(&pools, 16, Box::new([]), 0, false).unwrap();
        assert_eq!((pools.live(), pools.prefetch_cells()), ((1, 1), true));
        let other = LeafPtr::alloc_kind(&pools, 16, Box::new([]), 0, false).unwrap();
        assert_eq!((pools.live(), pools.prefetch_cells()), ((1, 2), false));
        // SAFETY: owned.
        let mut w = unsafe { leaf.write() };
        assert!(!w.inline_on());
        let mut model = Model::new();
        for i in 0..10u32 {
            let k = i.to_be_bytes().to_vec();
            let p = mk(&w, &kvp, &k, b"v");
            assert!(matches!(p, Pair::Heap(_)));
            w.insert(None, tag_of(&k), p);
            model.insert(k, b"v".to_vec());
        }
        check(&w, &model);
        w.sort();
        assert_eq!(w.small_from(0), 10);
        assert_eq!(w.small_from(7), 3);
        free_all(&mut w, &kvp);
        drop(w);
        // SAFETY: owned, unlocked.
        unsafe { leaf.free(&pools) };
        pools.unlinked(false);
        assert_eq!((pools.live(), pools.prefetch_cells()), ((1, 1), true));
        // SAFETY: as above.
        unsafe { other.free(&pools) };
        // SAFETY: as above.
        unsafe { head.free(&pools) };
    }

    #[test]
    fn sorted_mode_insert_and_shared_sort() {
        let pools = LeafPools::new(16);
        let kvp = crate::kv::kv_pools();
        let leaf = LeafPtr::alloc(&pools, 16, Box::new(*b"anc"), 3).unwrap();
        let mut model = Model::new();
        {
            // SAFETY: owned.
            let mut w = unsafe { leaf.write() };
            for i in [5u8, 1, 9, 3, 7, 0, 2] {
                let k = vec![i, i];
                let v = vec![i; 1 + 3 * i as usize];
                let t = tag_of(&k);
                let j = w.find_sorted(&k).unwrap_err();
                let p = mk(&w, &kvp, &k, &v);
                w.insert(Some(j), t, p);
                model.insert(k, v);
                assert!(w.is_sorted());
            }
            check(&w, &model);
            // Append unsorted, then let a reader sort.
            for i in [4u8, 8, 6] {
                let k = vec![i, i];
                let t = tag_of(&k);
                let p = mk(&w, &kvp, &k, &[i]);
                w.insert(None, t, p);
                model.insert(k, vec![i]);
            }
            assert!(!w.is_sorted());
        }
        {
            // SAFETY: owned.
            let r = unsafe { leaf.read() };
            r.ensure_sorted();
            assert!(r.is_sorted());
            let got: Vec<(Vec<u8>, Vec<u8>)> = (0..r.len())
                .map(|j| {
                    let (k, v) = r.sorted_pair(j);
                    (k.to_vec(), v.to_vec())
                })
                .collect();
            assert_eq!(got, model.clone().into_iter().collect::<Vec<_>>());
            // SAFETY: owned.
            assert_eq!(unsafe { leaf.hdr() }.anchor(), b"anc");
        }
        // SAFETY: owned.
        let mut w = unsafe { leaf.write() };
        free_all(&mut w, &kvp);
        drop(w);
        // SAFETY: owned.
        unsafe { leaf.free(&pools) };
    }
}
