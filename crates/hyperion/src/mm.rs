//! Hyperion's memory manager (§3.2, Fig 9): superbins by 32-byte size class, metabins, bins
//! and chunks in large mappings, addressed by 5-byte Hyperion Pointers.
//!
//! # Hierarchy
//!
//! 64 *superbins*: superbin `i ∈ [1, 63]` serves chunks of `32·i` bytes; superbin 0 serves
//! *extended bins*, 16-byte chunks holding an extended Hyperion Pointer (eHP) for blocks
//! larger than 2,016 bytes. Every superbin has up to 2^14 *metabins* of 256 *bins* of 4,096
//! *chunks*. A bin's chunks live in one block: on the heap while it is under 2 MiB, else an
//! `orrery_core::alloc::HugeRegion`. The block is made for 8 chunks when the bin gets its
//! first chunk, doubles (moving the chunks: HPs name chunks by index) up to 4,096 chunks,
//! and is freed — memory returned — when its last chunk is freed (see [`Bin`] for why
//! bins grow instead of mapping all 4,096 chunks at once as the paper does). A
//! bin keeps a 4,096-bit occupancy map; a metabin a 256-bit map of its non-full bins; a
//! superbin the ordered set of its non-full bins (the paper keeps a list of 16 non-full
//! metabins; an ordered set gives the same "lowest non-full bin first" policy, which keeps
//! memory compact, without its refill logic). A metabin makes its bin slots as bins are
//! opened and is freed with its last bin (deviation, measured: 256 slots made eagerly in
//! each of the 63 size classes a growing container passes through cost 0.9 MB per arena,
//! 14.8 B/key of 32.7 at 1M random keys with 16 arenas; `docs/results/hyperion.md`).
//!
//! # Hyperion Pointer (5 bytes, little-endian 40-bit integer)
//!
//! ```text
//! bits 0..12  chunk    (0..4096)
//! bits 12..20 bin      (0..256)
//! bits 20..34 metabin  (0..2^14)
//! bits 34..40 superbin (0..64)
//! ```
//!
//! The trie stores only HPs, so it is independent of where the mappings are. An HP of
//! superbin 0 names an extended-bin chunk, whose 16 bytes are the eHP:
//! `[heap pointer u64][requested size u32][over-allocation u16][flags u16]`. The heap block
//! grows in steps of 256 bytes up to 8 KiB, 1 KiB up to 16 KiB and 4 KiB beyond (the
//! paper's increments), and comes from `orrery_core::alloc::SizeClassPool`'s large-block
//! path (the global allocator, behind the fail point tests use).
//!
//! # Accounting and failure
//!
//! [`MemoryManager::bytes`] is exact: the reserved bytes of every bin mapping, the heap
//! blocks of extended bins at their capacity, and the manager's own metadata. Every mapping
//! and heap block is fallible: out of memory is [`Error::OutOfMemory`] and changes nothing.
//! Chunks of existing bins never fail.
//!
//! # Chained extended bins (§3.2)
//!
//! Eight consecutive extended-bin chunks, the first at a chunk index that is a multiple of
//! 8, allocated and freed together ([`MemoryManager::alloc_chain`],
//! [`MemoryManager::free_chain`]); every slot's eHP carries flag [`FLAG_CHAIN`] (flags bit
//! 0) and a slot without a block is *void* (heap pointer 0). One Hyperion Pointer (the
//! first slot's) names the chain; the slots hold the parts of a split container
//! (`split.rs`), and [`MemoryManager::resolve`] picks the part for a key byte.
//! An extended block grows and shrinks behind its Hyperion Pointer
//! ([`MemoryManager::regrow`]: a new heap block, the eHP rewritten), so neither a part nor
//! any container over 2,016 bytes moves in the trie when its size changes.
//!
//! # Optimistic readers
//!
//! Readers that hold no lock (`opt.rs`) cannot walk the superbins' vectors, which writers
//! reallocate. They use the [`Dirs`] directory instead: per superbin an atomic pointer to
//! a table with one word per bin, `base | log2(chunks)` of the bin's memory (the base is
//! 64-byte aligned, so one atomic word gives a consistent address and length), 0 when the
//! bin is unmapped. A writer publishes a bin's word when it maps, grows or frees it, and
//! replaces a table by a larger copy when a bin id passes its end. A reader bounds-checks
//! the chunk index against the word and reads an eHP's fields with atomic loads,
//! validating its version before it follows the eHP's pointer (pointer and
//! capacity are two fields a writer changes one after the other).
//!
//! Nothing a reader may hold is freed at once: a bin's old memory after it grows, a freed
//! bin's memory, a replaced or emptied directory table, an extended heap block replaced by
//! [`MemoryManager::regrow`] or freed, and a voided chain slot's block are handed to the
//! `orrery_core::sync` epoch collector and freed once every reader pinned at that moment
//! has unpinned. A chunk freed inside a bin that stays mapped is reused at once: a reader
//! reading it sees garbage, which its version check rejects. [`MemoryManager::bytes`]
//! counts live memory only (retired blocks are not counted), and extended blocks are
//! zeroed when allocated so that a reader never reads uninitialized bytes.

use std::collections::BTreeSet;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicPtr, AtomicU8, Ordering};

/// A bin directory slot: the bin memory's address with `log2(chunks)` in its low 6 bits.
type Slot = AtomicPtr<u8>;

use std::alloc::Layout;

use orrery_core::alloc::{HUGE_PAGE_SIZE, HugeRegion, SizeClassPool};
use orrery_core::api::{Error, Result};

/// Size step of the superbins.
pub(crate) const STEP: usize = 32;
/// Largest chunk served from bins; larger blocks use extended bins.
pub(crate) const MAX_SMALL: usize = 2016;
/// Chunks per bin.
const CHUNKS_PER_BIN: usize = 4096;
/// Bins per metabin.
const BINS_PER_METABIN: usize = 256;
/// Metabins per superbin.
const METABINS: usize = 1 << 14;
/// Chunks a new bin has room for (it doubles up to [`CHUNKS_PER_BIN`]).
const FIRST_CHUNKS: usize = 8;
/// Bytes of an extended-bin chunk (one eHP).
const EXT_CHUNK: usize = 16;
/// Superbins.
const SUPERBINS: usize = 64;
/// eHP flag: the chunk is a slot of a chained extended bin.
pub(crate) const FLAG_CHAIN: u16 = 1;

/// A 5-byte Hyperion Pointer (see the [module docs](self)).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash, PartialOrd, Ord)]
pub(crate) struct Hp(u64);

impl Hp {
    /// Bytes an HP takes in a container.
    pub(crate) const BYTES: usize = 5;

    /// The 40-bit value.
    #[inline]
    pub(crate) fn raw(self) -> u64 {
        self.0
    }

    /// An HP from its 40-bit value (higher bits dropped).
    #[inline]
    pub(crate) fn from_raw(v: u64) -> Hp {
        Hp(v & ((1 << 40) - 1))
    }

    fn new(superbin: usize, bin_id: usize, chunk: usize) -> Hp {
        debug_assert!(superbin < SUPERBINS && bin_id < METABINS * BINS_PER_METABIN);
        Hp(((superbin as u64) << 34) | ((bin_id as u64) << 12) | chunk as u64)
    }

    fn superbin(self) -> usize {
        (self.0 >> 34) as usize & (SUPERBINS - 1)
    }

    /// `metabin · 256 + bin`.
    fn bin_id(self) -> usize {
        (self.0 >> 12) as usize & (METABINS * BINS_PER_METABIN - 1)
    }

    fn chunk(self) -> usize {
        self.0 as usize & (CHUNKS_PER_BIN - 1)
    }

    /// Slot `i` of a chained extended bin whose first chunk is `self`.
    #[inline]
    pub(crate) fn slot(self, i: usize) -> Hp {
        debug_assert!(i < 8 && self.chunk().is_multiple_of(8));
        Hp(self.0 + i as u64)
    }

    /// The slot index of a chain slot (its chunk index mod 8) and the chain's first slot.
    #[inline]
    pub(crate) fn chain_of(self) -> (Hp, usize) {
        let i = self.chunk() % 8;
        (Hp(self.0 - i as u64), i)
    }

    /// The 5 stored bytes.
    pub(crate) fn to_bytes(self) -> [u8; 5] {
        let b = self.0.to_le_bytes();
        [b[0], b[1], b[2], b[3], b[4]]
    }

    /// Reads an HP from the first 5 bytes of `b`.
    #[inline]
    pub(crate) fn from_bytes(b: &[u8]) -> Hp {
        Hp(u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], 0, 0, 0]))
    }
}

/// Where a bin's chunks live: the heap while the bin is small, a huge-page region from
/// 2 MiB.
enum BinMem {
    Heap(NonNull<u8>, usize),
    Region(HugeRegion),
}

impl BinMem {
    fn new(bytes: usize) -> Result<BinMem> {
        if bytes >= HUGE_PAGE_SIZE {
            return Ok(BinMem::Region(HugeRegion::new(bytes)?));
        }
        let layout = Layout::from_size_align(bytes, 64).map_err(|_| Error::OutOfMemory)?;
        // SAFETY: `bytes` is positive (at least one chunk).
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        Ok(BinMem::Heap(
            NonNull::new(p).ok_or(Error::OutOfMemory)?,
            bytes,
        ))
    }

    fn ptr(&self) -> *mut u8 {
        match self {
            BinMem::Heap(p, _) => p.as_ptr(),
            BinMem::Region(r) => r.as_ptr(),
        }
    }

    /// Bytes held.
    fn bytes(&self) -> usize {
        match self {
            BinMem::Heap(_, n) => *n,
            BinMem::Region(r) => r.reserved_len(),
        }
    }
}

// SAFETY: a `BinMem` owns its block exclusively (the heap pointer is never shared by
// another owner); moving it to another thread — the epoch collector's, which drops a
// retired bin there — moves that ownership.
unsafe impl Send for BinMem {}

impl Drop for BinMem {
    fn drop(&mut self) {
        if let BinMem::Heap(p, n) = self {
            // The layout was valid when the block was allocated with it.
            let layout = Layout::from_size_align(*n, 64).unwrap_or_else(|_| Layout::new::<u8>());
            // SAFETY: allocated in `new` with this layout, freed once.
            unsafe { std::alloc::dealloc(p.as_ptr(), layout) };
        }
    }
}

/// One bin: up to 4,096 chunks in one block of memory, which grows (doubling, by moving:
/// Hyperion Pointers name chunks by index, not address) as chunks are taken. Deviation
/// from the paper, which maps all 4,096 chunks at once: at the scale of this machine's
/// benchmarks (millions, not billions, of keys) a full bin per size class and arena
/// (64 · 16 bins of 128 KiB–8 MiB, each at least a 2 MiB huge page) cost more than the
/// whole trie; `conformance_memory_usage` measured 354 MB for 1 MB of keys.
struct Bin {
    mem: BinMem,
    /// Chunks the memory holds.
    cap: usize,
    used: u32,
    /// Bit `i` set: chunk `i` is allocated.
    map: Box<[u64; CHUNKS_PER_BIN / 64]>,
}

/// One metabin: 256 bins and the map of the non-full ones.
#[derive(Default)]
struct Metabin {
    bins: Vec<Option<Bin>>,
    nonfull: [u64; BINS_PER_METABIN / 64],
}

/// One superbin: the metabins of one chunk size.
struct Superbin {
    chunk_size: usize,
    metabins: Vec<Option<Box<Metabin>>>,
    /// Bins with a free chunk, by id.
    nonfull: BTreeSet<u32>,
    /// Ids of unmapped bins below `next_id`.
    free_ids: BTreeSet<u32>,
    next_id: u32,
}

impl Superbin {
    fn bin(&self, id: usize) -> &Bin {
        self.metabins[id / BINS_PER_METABIN]
            .as_ref()
            .and_then(|m| m.bins[id % BINS_PER_METABIN].as_ref())
            .expect("a Hyperion Pointer names a mapped bin")
    }

    fn bin_mut(&mut self, id: usize) -> (&mut Bin, &mut [u64; 4]) {
        let m = self.metabins[id / BINS_PER_METABIN]
            .as_mut()
            .expect("a Hyperion Pointer names a mapped metabin");
        let bin = m.bins[id % BINS_PER_METABIN]
            .as_mut()
            .expect("a Hyperion Pointer names a mapped bin");
        (bin, &mut m.nonfull)
    }
}

/// Statistics of the manager, for the memory breakdown (Fig 14/16).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct MemStats {
    /// Allocated chunks, over all superbins 1..63.
    pub chunks: usize,
    /// Bytes of allocated chunks (at their chunk size).
    pub chunk_bytes: usize,
    /// Free chunks inside mapped bins (external fragmentation), in bytes.
    pub free_chunk_bytes: usize,
    /// Extended blocks and their bytes at capacity.
    pub extended: usize,
    /// Bytes of extended blocks at capacity.
    pub extended_bytes: usize,
    /// Bytes of metadata (bin maps, metabins, superbins).
    pub metadata_bytes: usize,
}

/// The memory manager of one arena.
pub(crate) struct MemoryManager {
    superbins: Vec<Superbin>,
    /// Heap blocks of extended bins (large-block path only); shared with the retired
    /// blocks that the epoch collector frees later.
    heap: Arc<SizeClassPool>,
    /// The readers' directory of bin memory (see "Optimistic readers").
    dirs: Arc<Dirs>,
    /// Bytes of the directory's tables.
    dir_bytes: usize,
    /// Bytes of live extended heap blocks (at capacity).
    ext_bytes: usize,
    /// Exact bytes held (see the module docs).
    bytes: usize,
}

// SAFETY: the manager owns its mappings and heap blocks exclusively (raw pointers inside
// are only reached through `&self`/`&mut self`); moving it to another thread moves that
// ownership.
unsafe impl Send for MemoryManager {}
// SAFETY: `&MemoryManager` only reads chunks (shared slices); writes need `&mut`.
unsafe impl Sync for MemoryManager {}

/// Hands `x` to the epoch collector: dropped once every thread pinned now has unpinned
/// (memory an optimistic reader may still be reading).
fn retire<T: Send + 'static>(x: T) {
    orrery_core::sync::pin().defer(move || drop(x));
}

/// A retired extended heap block, freed to its pool when dropped.
struct RetiredBlock {
    pool: Arc<SizeClassPool>,
    ptr: NonNull<u8>,
    cap: usize,
}

// SAFETY: the block is owned by this value alone (its eHP was rewritten or its chunk
// freed); freeing it on another thread is what the pool's `free` allows (`&self`).
unsafe impl Send for RetiredBlock {}

impl Drop for RetiredBlock {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `pool.try_alloc(cap)` (an eHP records exactly that
        // capacity), nothing names it any more, and it is freed once, here.
        unsafe { self.pool.free(self.ptr, self.cap) };
    }
}

/// One superbin's table of bin memory for optimistic readers: slot `id` is
/// `base | log2(chunks)` of bin `id`'s memory (`base` is 64-byte aligned), 0 if unmapped.
struct BinDir {
    slots: Box<[Slot]>,
}

/// The readers' directory of bin memory: per superbin an [`AtomicPtr`] to its table of
/// bins (see "Optimistic readers" in the [module docs](self)). Written only by the
/// manager's owner (under the arena's write lock), read by pinned optimistic readers.
pub(crate) struct Dirs {
    sb: [AtomicPtr<BinDir>; SUPERBINS],
}

impl Dirs {
    fn new() -> Dirs {
        Dirs {
            sb: std::array::from_fn(|_| AtomicPtr::new(std::ptr::null_mut())),
        }
    }

    /// Makes room for bin `id` in superbin `sb`'s table (writer only): a larger table
    /// (copied, published, the old one retired through the epoch collector). Returns the
    /// bytes the tables grew by.
    fn reserve(&self, sb: usize, id: usize) -> Result<usize> {
        let cur = self.sb[sb].load(Ordering::Relaxed);
        let old: &[Slot] = if cur.is_null() {
            &[]
        } else {
            // SAFETY: only the owner replaces tables (it is the caller), so `cur` is live.
            unsafe { &(*cur).slots }
        };
        if id < old.len() {
            return Ok(0);
        }
        let len = (2 * old.len()).max(id + 1).max(16);
        let mut v: Vec<Slot> = Vec::new();
        v.try_reserve_exact(len).map_err(|_| Error::OutOfMemory)?;
        v.extend(old.iter().map(|w| Slot::new(w.load(Ordering::Relaxed))));
        v.resize_with(len, || Slot::new(std::ptr::null_mut()));
        let grown = (len - old.len()) * std::mem::size_of::<Slot>()
            + if cur.is_null() {
                std::mem::size_of::<BinDir>()
            } else {
                0
            };
        let new = Box::into_raw(Box::new(BinDir {
            slots: v.into_boxed_slice(),
        }));
        self.sb[sb].store(new, Ordering::Release);
        if !cur.is_null() {
            // SAFETY: `cur` came from `Box::into_raw` and was just unlinked; readers that
            // loaded it are pinned, so it is dropped after they unpin.
            retire(unsafe { Box::from_raw(cur) });
        }
        Ok(grown)
    }

    /// Unlinks and retires superbin `sb`'s table (writer only; its bins are all
    /// unmapped). Returns the bytes it held.
    fn clear(&self, sb: usize) -> usize {
        let cur = self.sb[sb].swap(std::ptr::null_mut(), Ordering::AcqRel);
        if cur.is_null() {
            return 0;
        }
        // SAFETY: `cur` came from `Box::into_raw` and was just unlinked; readers that
        // loaded it are pinned, so it is dropped after they unpin.
        let table = unsafe { Box::from_raw(cur) };
        let bytes = table.slots.len() * std::mem::size_of::<Slot>() + std::mem::size_of::<BinDir>();
        retire(table);
        bytes
    }

    /// Sets the slot of bin `id` of superbin `sb` (writer only; room made by
    /// [`Dirs::reserve`]): its memory of `chunks` chunks, or unmapped.
    fn publish(&self, sb: usize, id: usize, mem: Option<&BinMem>, chunks: usize) {
        let w = mem.map_or(std::ptr::null_mut(), |m| {
            debug_assert!((m.ptr() as usize).is_multiple_of(64) && chunks.is_power_of_two());
            m.ptr().map_addr(|a| a | chunks.trailing_zeros() as usize)
        });
        let d = self.sb[sb].load(Ordering::Relaxed);
        // SAFETY: the owner made room (`reserve`) before the first publish of `id`, and
        // only the owner replaces tables.
        unsafe { &(*d).slots[id] }.store(w, Ordering::Release);
    }

    /// The chunk `hp` names, for an optimistic reader; `None` when its bin is not mapped
    /// or has no such chunk (a stale or torn pointer: the reader's validation fails).
    ///
    /// The caller must be pinned (`orrery_core::sync::pin`) while it uses the block: bin
    /// memory and tables are retired through the epoch collector, so what a pinned reader
    /// loaded stays mapped.
    #[inline]
    pub(crate) fn chunk(&self, hp: Hp) -> Option<RawBlock> {
        let sb = hp.superbin();
        let d = self.sb[sb].load(Ordering::Acquire);
        if d.is_null() {
            return None;
        }
        // SAFETY: a published table is freed only through the epoch collector after it
        // was replaced, and the caller is pinned (contract).
        let w = unsafe { &(*d).slots }
            .get(hp.bin_id())?
            .load(Ordering::Acquire);
        let chunks = 1usize << (w.addr() & 63);
        if w.is_null() || hp.chunk() >= chunks {
            return None;
        }
        let size = if sb == 0 { EXT_CHUNK } else { sb * STEP };
        Some(RawBlock {
            ptr: w.map_addr(|a| a & !63).wrapping_add(hp.chunk() * size),
            len: size,
        })
    }

    /// The eHP of the extended-bin chunk `e`: (heap pointer, capacity, flags), read with
    /// atomic loads; possibly torn (validate before using the pointer).
    #[inline]
    fn ehp(e: RawBlock) -> (usize, usize, u16) {
        // Two aligned 8-byte loads: `[ptr]` and `[size u32][over u16][flags u16]`.
        let (p, w) = (e.u64_at(0).unwrap_or(0), e.u64_at(8).unwrap_or(0));
        let cap = (w & 0xFFFF_FFFF) as usize + ((w >> 32) & 0xFFFF) as usize;
        (p as usize, cap, (w >> 48) as u16)
    }

    /// The block `hp` names (for an extended `hp`, its heap block), for an optimistic
    /// reader; `None` when it cannot be reached consistently. `valid` is the reader's
    /// validation: it is called between reading an eHP and using its pointer, so that a
    /// pointer and capacity from two different writes are never combined.
    #[inline]
    pub(crate) fn block(&self, hp: Hp, valid: &dyn Fn() -> bool) -> Option<RawBlock> {
        self.container(hp, None, valid)
    }

    /// For an optimistic reader: which of the 8 slots of the chain `hp` hold a part
    /// (`Some(Some(_))`), `Some(None)` when `hp` is not a chain, `None` when it cannot be
    /// read consistently (each slot's eHP is read once; validate before trusting it).
    #[inline]
    pub(crate) fn chain_parts(&self, hp: Hp) -> Option<Option<[bool; 8]>> {
        if hp.superbin() != 0 {
            return Some(None);
        }
        let (_, _, flags) = Self::ehp(self.chunk(hp)?);
        if flags & FLAG_CHAIN == 0 {
            return Some(None);
        }
        if !hp.chunk().is_multiple_of(8) {
            return None;
        }
        let mut parts = [false; 8];
        for (i, p) in parts.iter_mut().enumerate() {
            *p = Self::ehp(self.chunk(hp.slot(i))?).0 != 0;
        }
        Some(Some(parts))
    }

    /// The container a key whose next byte is `k0` continues in below `hp` —
    /// [`MemoryManager::resolve`] then [`Dirs::block`], reading each eHP once — for an
    /// optimistic reader. `k0 = None`: `hp` itself, chained or not.
    #[inline]
    pub(crate) fn container(
        &self,
        hp: Hp,
        k0: Option<u8>,
        valid: &dyn Fn() -> bool,
    ) -> Option<RawBlock> {
        let c = self.chunk(hp)?;
        if hp.superbin() != 0 {
            return Some(c);
        }
        let (mut ptr, mut cap, flags) = Self::ehp(c);
        if let Some(k0) = k0
            && flags & FLAG_CHAIN != 0
        {
            if !hp.chunk().is_multiple_of(8) {
                return None;
            }
            // The slot `k0 / 32`, or the nearest non-void one below it (ends at slot 0).
            let mut i = usize::from(k0 / 32);
            while i > 0 {
                let (p, cp, _) = Self::ehp(self.chunk(hp.slot(i))?);
                if p != 0 {
                    (ptr, cap) = (p, cp);
                    break;
                }
                i -= 1;
            }
        }
        if ptr == 0 || !valid() {
            return None;
        }
        Some(RawBlock {
            ptr: ptr as *const u8,
            len: cap,
        })
    }
}

impl Drop for Dirs {
    fn drop(&mut self) {
        for d in &self.sb {
            let d = d.load(Ordering::Relaxed);
            if !d.is_null() {
                // SAFETY: the current tables came from `Box::into_raw` and are owned by
                // the directory; nobody reads them once it is dropped.
                drop(unsafe { Box::from_raw(d) });
            }
        }
    }
}

/// Bytes an optimistic reader may read: `len` bytes at `ptr`, which stay mapped while the
/// reader is pinned (everything a writer frees is retired through the epoch collector),
/// but which a writer may change at any time: every read is bounds-checked and atomic, and
/// what it returns means something only once the reader's version validates.
#[derive(Clone, Copy)]
pub(crate) struct RawBlock {
    ptr: *const u8,
    len: usize,
}

impl RawBlock {
    /// Bytes readable.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Byte `i`, `None` past the end.
    #[inline(always)]
    pub(crate) fn byte(&self, i: usize) -> Option<u8> {
        if i >= self.len {
            return None;
        }
        // SAFETY: `i < len`, so the byte lies in the block, which stays mapped and
        // initialized while the reader is pinned (see the type docs; bins are zeroed when
        // made, extended blocks when allocated). A writer may store to it concurrently
        // with plain (non-atomic) stores under the arena's write lock, with the arena's
        // version odd: this relaxed atomic load may then return any value the byte held,
        // which the reader's validation rejects — the seqlock read of Mercury's and the
        // Cuckoo Trie's versions, except that their writers store atomically too; here the
        // writers' container code works on `&mut [u8]` (see `docs/hyperion.md`,
        // "Concurrency protocol", on this mixed access). The load is never duplicated or
        // widened by the compiler, so a value once checked stays the value used.
        let a = unsafe { AtomicU8::from_ptr(self.ptr.wrapping_add(i).cast_mut()) };
        Some(a.load(Ordering::Relaxed))
    }

    /// The aligned 8 bytes at `i` (little-endian), `None` past the end or unaligned.
    #[inline(always)]
    pub(crate) fn u64_at(&self, i: usize) -> Option<u64> {
        if i.checked_add(8)? > self.len {
            return None;
        }
        let p = self.ptr.wrapping_add(i);
        if !(p as usize).is_multiple_of(8) {
            return None;
        }
        // SAFETY: as in `byte`: the 8 bytes lie in the block, mapped and initialized while
        // the reader is pinned; `p` is 8-aligned; the value is validated before use.
        let a = unsafe { std::sync::atomic::AtomicU64::from_ptr(p.cast_mut().cast()) };
        Some(u64::from_le(a.load(Ordering::Relaxed)))
    }

    /// Prefetches the line holding byte `i` (a hint; any address).
    #[inline]
    pub(crate) fn prefetch(&self, i: usize) {
        orrery_core::prefetch(self.ptr.wrapping_add(i));
    }
}

/// Capacity of an extended block holding `size` bytes: the paper's increments.
pub(crate) fn extended_capacity(size: usize) -> usize {
    let step = if size <= 8 * 1024 {
        256
    } else if size <= 16 * 1024 {
        1024
    } else {
        4096
    };
    size.div_ceil(step) * step
}

/// Capacity a block of `size` bytes gets: the next multiple of 32 up to 2,016 bytes, the
/// extended increments beyond.
pub(crate) fn capacity_for(size: usize) -> usize {
    if size <= MAX_SMALL {
        size.max(1).div_ceil(STEP) * STEP
    } else {
        extended_capacity(size)
    }
}

impl MemoryManager {
    /// An empty manager: maps nothing.
    pub(crate) fn new() -> MemoryManager {
        let superbins = (0..SUPERBINS)
            .map(|i| Superbin {
                chunk_size: if i == 0 { EXT_CHUNK } else { i * STEP },
                metabins: Vec::new(),
                nonfull: BTreeSet::new(),
                free_ids: BTreeSet::new(),
                next_id: 0,
            })
            .collect();
        MemoryManager {
            superbins,
            heap: Arc::new(SizeClassPool::new(&[STEP], 8).expect("a valid one-class pool")),
            dirs: Arc::new(Dirs::new()),
            dir_bytes: 0,
            ext_bytes: 0,
            bytes: SUPERBINS * std::mem::size_of::<Superbin>() + std::mem::size_of::<Dirs>(),
        }
    }

    /// Exact bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// The readers' directory of this manager's bin memory.
    pub(crate) fn dirs(&self) -> Arc<Dirs> {
        Arc::clone(&self.dirs)
    }

    /// Retires an extended heap block that nothing names any more: freed once the
    /// readers pinned now have unpinned.
    fn retire_block(&self, ptr: NonNull<u8>, cap: usize) {
        retire(RetiredBlock {
            pool: Arc::clone(&self.heap),
            ptr,
            cap,
        });
    }

    /// Opens a new (empty) bin in superbin `sb`; returns its id.
    fn open_bin(&mut self, sb: usize) -> Result<usize> {
        let s = &mut self.superbins[sb];
        let id = match s.free_ids.first() {
            Some(&id) => id,
            None if (s.next_id as usize) < METABINS * BINS_PER_METABIN => s.next_id,
            None => return Err(Error::OutOfMemory),
        } as usize;
        let mem = BinMem::new(FIRST_CHUNKS * s.chunk_size)?;
        // The readers' directory gets room for the bin before anything changes.
        let grown = self.dirs.reserve(sb, id)?;
        self.dir_bytes += grown;
        self.bytes += grown;
        let s = &mut self.superbins[sb];
        self.dirs.publish(sb, id, Some(&mem), FIRST_CHUNKS);
        let mut added = mem.bytes() + std::mem::size_of::<[u64; 64]>();
        let (mi, bi) = (id / BINS_PER_METABIN, id % BINS_PER_METABIN);
        if s.metabins.len() <= mi {
            s.metabins.resize_with(mi + 1, || None);
        }
        let m = s.metabins[mi].get_or_insert_with(|| {
            added += std::mem::size_of::<Metabin>();
            Box::<Metabin>::default()
        });
        if m.bins.len() <= bi {
            // Bin slots are made as bins are opened (lowest ids first), not 256 at once.
            let before = m.bins.capacity();
            m.bins.resize_with(bi + 1, || None);
            added += (m.bins.capacity() - before) * std::mem::size_of::<Option<Bin>>();
        }
        m.bins[bi] = Some(Bin {
            mem,
            cap: FIRST_CHUNKS,
            used: 0,
            map: Box::new([0; 64]),
        });
        m.nonfull[bi / 64] |= 1 << (bi % 64);
        if id as u32 == s.next_id {
            s.next_id += 1;
        } else {
            s.free_ids.remove(&(id as u32));
        }
        s.nonfull.insert(id as u32);
        self.bytes += added;
        Ok(id)
    }

    /// A chunk of superbin `sb`.
    fn alloc_chunk(&mut self, sb: usize) -> Result<Hp> {
        let id = match self.superbins[sb].nonfull.first() {
            Some(&id) => id as usize,
            None => self.open_bin(sb)?,
        };
        let bin = self.superbins[sb].bin(id);
        let word = bin
            .map
            .iter()
            .position(|w| *w != u64::MAX)
            .expect("a non-full bin has a free chunk");
        let index = word * 64 + bin.map[word].trailing_ones() as usize;
        self.take(sb, id, index, 1)
    }

    /// Eight consecutive chunks of superbin `sb`, the first at an index that is a multiple
    /// of 8 (a chained extended bin, §3.2); returns the first.
    fn alloc_run8(&mut self, sb: usize) -> Result<Hp> {
        let s = &self.superbins[sb];
        let found = s.nonfull.iter().find_map(|&id| {
            let bin = s.bin(id as usize);
            (0..CHUNKS_PER_BIN / 8)
                .find(|&r| (bin.map[r / 8] >> ((r % 8) * 8)) & 0xFF == 0)
                .map(|r| (id as usize, r * 8))
        });
        let (id, index) = match found {
            Some(f) => f,
            None => (self.open_bin(sb)?, 0),
        };
        self.take(sb, id, index, 8)
    }

    /// Marks chunks `index..index + n` of bin `id` (free, within one map word) allocated,
    /// growing the bin's memory to hold them first.
    fn take(&mut self, sb: usize, id: usize, index: usize, n: usize) -> Result<Hp> {
        let s = &mut self.superbins[sb];
        let csize = s.chunk_size;
        let (bin, nonfull) = s.bin_mut(id);
        if index + n > bin.cap {
            let mut cap = bin.cap * 2;
            while cap < index + n {
                cap *= 2;
            }
            let cap = cap.min(CHUNKS_PER_BIN);
            let mem = BinMem::new(cap * csize)?;
            // SAFETY: both blocks are live and distinct; the old one holds `bin.cap` chunks.
            unsafe { std::ptr::copy_nonoverlapping(bin.mem.ptr(), mem.ptr(), bin.cap * csize) };
            self.bytes = self.bytes + mem.bytes() - bin.mem.bytes();
            self.dirs.publish(sb, id, Some(&mem), cap);
            // Readers may still read the old chunks: freed after they unpin.
            retire(std::mem::replace(&mut bin.mem, mem));
            bin.cap = cap;
        }
        let (word, bit) = (index / 64, index % 64);
        let mask = if n == 64 {
            u64::MAX
        } else {
            ((1u64 << n) - 1) << bit
        };
        debug_assert_eq!(bin.map[word] & mask, 0, "chunks are free");
        bin.map[word] |= mask;
        bin.used += n as u32;
        if bin.used as usize == CHUNKS_PER_BIN {
            let bi = id % BINS_PER_METABIN;
            nonfull[bi / 64] &= !(1 << (bi % 64));
            s.nonfull.remove(&(id as u32));
        }
        Ok(Hp::new(sb, id, index))
    }

    fn free_chunk(&mut self, hp: Hp) {
        let sb = hp.superbin();
        let s = &mut self.superbins[sb];
        let id = hp.bin_id();
        let (bin, nonfull) = s.bin_mut(id);
        let c = hp.chunk();
        debug_assert!(
            bin.map[c / 64] & (1 << (c % 64)) != 0,
            "double free of {hp:?}"
        );
        bin.map[c / 64] &= !(1 << (c % 64));
        bin.used -= 1;
        let bi = id % BINS_PER_METABIN;
        nonfull[bi / 64] |= 1 << (bi % 64);
        if bin.used == 0 {
            nonfull[bi / 64] &= !(1 << (bi % 64));
            let mi = id / BINS_PER_METABIN;
            let m = s.metabins[mi].as_mut().expect("mapped");
            let bin = m.bins[bi].take().expect("mapped");
            self.bytes -= bin.mem.bytes() + std::mem::size_of::<[u64; 64]>();
            self.dirs.publish(sb, id, None, 0);
            // Readers may still read its chunks: unmapped after they unpin.
            retire(bin.mem);
            if m.bins.iter().all(Option::is_none) {
                // The metabin's last bin: free the metabin too.
                self.bytes -= std::mem::size_of::<Metabin>()
                    + m.bins.capacity() * std::mem::size_of::<Option<Bin>>();
                s.metabins[mi] = None;
                if s.metabins.iter().all(Option::is_none) {
                    // The superbin's last bin: its readers' table goes too.
                    let freed = self.dirs.clear(sb);
                    self.dir_bytes -= freed;
                    self.bytes -= freed;
                }
            }
            s.nonfull.remove(&(id as u32));
            if id as u32 + 1 == s.next_id {
                s.next_id -= 1;
            } else {
                s.free_ids.insert(id as u32);
            }
        } else {
            s.nonfull.insert(id as u32);
        }
    }

    /// A block of at least `size` bytes ([`capacity_for`]`(size)` usable), zeroed only if
    /// fresh: callers write every byte they later read.
    pub(crate) fn alloc(&mut self, size: usize) -> Result<Hp> {
        if size <= MAX_SMALL {
            return self.alloc_chunk(size.max(1).div_ceil(STEP));
        }
        let cap = extended_capacity(size);
        let block = self.heap.try_alloc(cap)?;
        // SAFETY: `block` is a fresh block of `cap` bytes. Zeroed so that an optimistic
        // reader, which may read any byte of the block, never reads uninitialized memory.
        unsafe { std::ptr::write_bytes(block.as_ptr(), 0, cap) };
        let hp = match self.alloc_chunk(0) {
            Ok(hp) => hp,
            Err(e) => {
                // SAFETY: `block` came from `self.heap` with capacity `cap` just now and is
                // not used after this free.
                unsafe { self.heap.free(block, cap) };
                return Err(e);
            }
        };
        let e = self.chunk_mut_raw(hp, EXT_CHUNK);
        e[..8].copy_from_slice(&(block.as_ptr() as u64).to_le_bytes());
        e[8..12].copy_from_slice(&(size as u32).to_le_bytes());
        e[12..14].copy_from_slice(&((cap - size) as u16).to_le_bytes());
        e[14..16].copy_from_slice(&0u16.to_le_bytes());
        self.bytes += cap;
        self.ext_bytes += cap;
        Ok(hp)
    }

    /// Moves the extended block `hp` to a new heap block for `size` bytes (capacity
    /// [`extended_capacity`]`(size)`), keeping its Hyperion Pointer: the eHP is rewritten
    /// (the paper's realloc path; the trie is not touched). `fill(old, new)` writes the new
    /// block from the old one; bytes of the new block it does not write are zero. Fails,
    /// changing nothing, when the new block cannot be had.
    pub(crate) fn regrow(
        &mut self,
        hp: Hp,
        size: usize,
        fill: impl FnOnce(&[u8], &mut [u8]),
    ) -> Result<()> {
        debug_assert_eq!(hp.superbin(), 0, "only extended blocks regrow");
        let cap = extended_capacity(size);
        let block = self.heap.try_alloc(cap)?;
        let (old, old_cap) = self.extended(hp);
        // SAFETY: `block` is a fresh block of `cap` bytes; zeroing makes it initialized.
        unsafe { std::ptr::write_bytes(block.as_ptr(), 0, cap) };
        // SAFETY: `old` is the live block of `old_cap` bytes the eHP names; `&mut self`
        // makes this the only reference to it.
        let src = unsafe { std::slice::from_raw_parts(old.as_ptr(), old_cap) };
        // SAFETY: `block` is initialized (above), `cap` bytes, and distinct from `old`.
        let dst = unsafe { std::slice::from_raw_parts_mut(block.as_ptr(), cap) };
        fill(src, dst);
        // The eHP is rewritten below; readers may still read the old block.
        self.retire_block(old, old_cap);
        let e = self.chunk_mut_raw(hp, EXT_CHUNK);
        e[..8].copy_from_slice(&(block.as_ptr() as u64).to_le_bytes());
        e[8..12].copy_from_slice(&(size as u32).to_le_bytes());
        e[12..14].copy_from_slice(&((cap - size) as u16).to_le_bytes());
        self.bytes = self.bytes + cap - old_cap;
        self.ext_bytes = self.ext_bytes + cap - old_cap;
        Ok(())
    }

    /// Whether `hp` names an extended block (superbin 0).
    #[inline]
    pub(crate) fn is_extended(hp: Hp) -> bool {
        hp.superbin() == 0
    }

    /// Frees a block.
    pub(crate) fn free(&mut self, hp: Hp) {
        if hp.superbin() == 0 && !self.is_void(hp) {
            let (ptr, cap) = self.extended(hp);
            // The eHP's chunk is freed below, so the block is not named again.
            self.retire_block(ptr, cap);
            self.bytes -= cap;
            self.ext_bytes -= cap;
        }
        self.free_chunk(hp);
    }

    /// A chained extended bin (§3.2): eight consecutive extended-bin chunks, allocated and
    /// freed together, every slot void (heap pointer 0) and flagged [`FLAG_CHAIN`].
    /// Returns the Hyperion Pointer of the first; slot `i` is `hp.slot(i)`.
    pub(crate) fn alloc_chain(&mut self) -> Result<Hp> {
        let base = self.alloc_run8(0)?;
        for i in 0..8 {
            let e = self.chunk_mut_raw(base.slot(i), EXT_CHUNK);
            e.fill(0);
            e[14..16].copy_from_slice(&FLAG_CHAIN.to_le_bytes());
        }
        Ok(base)
    }

    /// Frees a chained extended bin: the blocks of its slots and its eight chunks.
    pub(crate) fn free_chain(&mut self, base: Hp) {
        for i in 0..8 {
            self.free(base.slot(i));
        }
    }

    /// Whether the eHP chunk `hp` (superbin 0) is void (a chain slot without a block).
    #[inline]
    pub(crate) fn is_void(&self, hp: Hp) -> bool {
        self.chunk_raw(hp, EXT_CHUNK)[..8] == [0; 8]
    }

    /// Whether `hp` names a chained extended bin (its first slot).
    #[inline]
    pub(crate) fn is_chain(&self, hp: Hp) -> bool {
        hp.superbin() == 0 && self.chunk_raw(hp, EXT_CHUNK)[14] & FLAG_CHAIN as u8 != 0
    }

    /// The container a key whose next byte is `k0` is in: `hp` itself, or for a chain
    /// the slot `k0 / 32`, or the nearest non-void slot below it (§3.3, Fig 11).
    #[inline]
    pub(crate) fn resolve(&self, hp: Hp, k0: u8) -> Hp {
        if hp.superbin() != 0 || !self.is_chain(hp) {
            return hp;
        }
        let mut i = usize::from(k0 / 32);
        while i > 0 && self.is_void(hp.slot(i)) {
            i -= 1;
        }
        hp.slot(i)
    }

    /// Prefetches what [`MemoryManager::resolve`] and [`MemoryManager::get`] read first
    /// for `hp` and a key whose next byte is `k0`: the chunk (for an extended HP its eHP;
    /// for a chain also the eHP of slot `k0 / 32`, in the same bin).
    #[inline]
    pub(crate) fn prefetch(&self, hp: Hp, k0: u8) {
        let s = &self.superbins[hp.superbin()];
        let base = s.bin(hp.bin_id()).mem.ptr();
        let c = hp.chunk();
        orrery_core::prefetch(base.wrapping_add(c * s.chunk_size));
        if hp.superbin() == 0 && c.is_multiple_of(8) {
            // Only a hint: if `hp` is no chain this address is not read.
            orrery_core::prefetch(base.wrapping_add((c + usize::from(k0 / 32)) * s.chunk_size));
        }
    }

    /// Gives the void chain slot `slot` a zeroed block for `size` bytes.
    pub(crate) fn fill_slot(&mut self, slot: Hp, size: usize) -> Result<()> {
        debug_assert!(self.is_void(slot));
        let cap = extended_capacity(size);
        let block = self.heap.try_alloc(cap)?;
        // SAFETY: `block` is a fresh block of `cap` bytes; zeroing makes it initialized.
        unsafe { std::ptr::write_bytes(block.as_ptr(), 0, cap) };
        let e = self.chunk_mut_raw(slot, EXT_CHUNK);
        e[..8].copy_from_slice(&(block.as_ptr() as u64).to_le_bytes());
        e[8..12].copy_from_slice(&(size as u32).to_le_bytes());
        e[12..14].copy_from_slice(&((cap - size) as u16).to_le_bytes());
        self.bytes += cap;
        self.ext_bytes += cap;
        Ok(())
    }

    /// Frees the block of chain slot `slot`, leaving it void.
    pub(crate) fn void_slot(&mut self, slot: Hp) {
        if self.is_void(slot) {
            return;
        }
        let (ptr, cap) = self.extended(slot);
        // The eHP is voided below, so the block is not named again.
        self.retire_block(ptr, cap);
        self.bytes -= cap;
        self.ext_bytes -= cap;
        self.chunk_mut_raw(slot, EXT_CHUNK)[..14].fill(0);
    }

    /// The heap block and capacity of an extended HP.
    fn extended(&self, hp: Hp) -> (NonNull<u8>, usize) {
        let e = self.chunk_raw(hp, EXT_CHUNK);
        let ptr = u64::from_le_bytes(e[..8].try_into().expect("8 bytes")) as usize as *mut u8;
        let size = u32::from_le_bytes(e[8..12].try_into().expect("4 bytes")) as usize;
        let over = u16::from_le_bytes(e[12..14].try_into().expect("2 bytes")) as usize;
        (
            NonNull::new(ptr).expect("an eHP holds a block"),
            size + over,
        )
    }

    /// Usable bytes of a block.
    #[inline]
    pub(crate) fn capacity(&self, hp: Hp) -> usize {
        match hp.superbin() {
            0 => self.extended(hp).1,
            sb => sb * STEP,
        }
    }

    #[inline]
    fn chunk_raw(&self, hp: Hp, len: usize) -> &[u8] {
        let s = &self.superbins[hp.superbin()];
        let bin = s.bin(hp.bin_id());
        let c = hp.chunk();
        debug_assert!(
            bin.map[c / 64] & (1 << (c % 64)) != 0,
            "{hp:?} is not allocated"
        );
        debug_assert!(len <= s.chunk_size);
        // SAFETY: chunk `c` lies inside the bin's mapping (`c < 4096`, mapping of 4096
        // chunks), which lives as long as `&self` (bins are unmapped only through
        // `&mut self`); chunk memory is only written through `&mut self`.
        unsafe { std::slice::from_raw_parts(bin.mem.ptr().wrapping_add(c * s.chunk_size), len) }
    }

    fn chunk_mut_raw(&mut self, hp: Hp, len: usize) -> &mut [u8] {
        let s = &self.superbins[hp.superbin()];
        let bin = s.bin(hp.bin_id());
        let c = hp.chunk();
        debug_assert!(len <= s.chunk_size);
        // SAFETY: as in `chunk_raw`; `&mut self` makes this the only reference into the
        // manager's memory.
        unsafe { std::slice::from_raw_parts_mut(bin.mem.ptr().wrapping_add(c * s.chunk_size), len) }
    }

    /// The bytes of a block (its whole capacity).
    #[inline]
    pub(crate) fn get(&self, hp: Hp) -> &[u8] {
        match hp.superbin() {
            0 => {
                let (p, cap) = self.extended(hp);
                // SAFETY: the eHP names a live heap block of `cap` bytes owned by this
                // manager, freed only through `&mut self`.
                unsafe { std::slice::from_raw_parts(p.as_ptr(), cap) }
            }
            sb => self.chunk_raw(hp, sb * STEP),
        }
    }

    /// The bytes of a block (its whole capacity), writable.
    pub(crate) fn get_mut(&mut self, hp: Hp) -> &mut [u8] {
        match hp.superbin() {
            0 => {
                let (p, cap) = self.extended(hp);
                // SAFETY: as in `get`; `&mut self` makes this the only reference to it.
                unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), cap) }
            }
            sb => self.chunk_mut_raw(hp, sb * STEP),
        }
    }

    /// The chunk and fragmentation breakdown.
    pub(crate) fn stats(&self) -> MemStats {
        let mut st = MemStats {
            metadata_bytes: SUPERBINS * std::mem::size_of::<Superbin>(),
            ..MemStats::default()
        };
        for (i, s) in self.superbins.iter().enumerate() {
            for m in s.metabins.iter().flatten() {
                st.metadata_bytes += std::mem::size_of::<Metabin>()
                    + m.bins.capacity() * std::mem::size_of::<Option<Bin>>();
                for b in m.bins.iter().flatten() {
                    st.metadata_bytes += std::mem::size_of::<[u64; 64]>();
                    if i == 0 {
                        // Extended-bin chunks (eHPs) count as metadata.
                        st.metadata_bytes += b.mem.bytes();
                        st.extended += b.used as usize;
                    } else {
                        st.chunks += b.used as usize;
                        st.chunk_bytes += b.used as usize * s.chunk_size;
                        st.free_chunk_bytes += b.mem.bytes() - b.used as usize * s.chunk_size;
                    }
                }
            }
        }
        st.extended_bytes = self.ext_bytes;
        st.metadata_bytes += std::mem::size_of::<Dirs>() + self.dir_bytes;
        st
    }
}

impl Drop for MemoryManager {
    fn drop(&mut self) {
        // Extended blocks live on the heap: free them (bin mappings unmap themselves).
        let mut ext = Vec::new();
        if let Some(s) = self.superbins.first() {
            for (mi, m) in s.metabins.iter().enumerate() {
                let Some(m) = m else { continue };
                for (bi, b) in m.bins.iter().enumerate() {
                    let Some(b) = b else { continue };
                    for (w, word) in b.map.iter().enumerate() {
                        let mut word = *word;
                        while word != 0 {
                            let bit = word.trailing_zeros() as usize;
                            word &= word - 1;
                            ext.push(Hp::new(0, mi * BINS_PER_METABIN + bi, w * 64 + bit));
                        }
                    }
                }
            }
        }
        for hp in ext {
            self.free(hp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mm_hp_round_trip() {
        let hp = Hp::new(63, (1 << 22) - 1, 4095);
        assert_eq!(Hp::from_bytes(&hp.to_bytes()), hp);
        assert_eq!(
            (hp.superbin(), hp.bin_id(), hp.chunk()),
            (63, (1 << 22) - 1, 4095)
        );
        let hp = Hp::new(1, 300, 7);
        assert_eq!(Hp::from_bytes(&hp.to_bytes()), hp);
    }

    #[test]
    fn mm_alloc_write_free_returns_memory() {
        let mut mm = MemoryManager::new();
        let base = mm.bytes();
        let mut hps = Vec::new();
        for (i, size) in [1usize, 32, 33, 100, 2016, 2017, 9000, 20_000]
            .iter()
            .enumerate()
        {
            let hp = mm.alloc(*size).unwrap();
            assert!(mm.capacity(hp) >= *size);
            assert_eq!(mm.capacity(hp), capacity_for(*size));
            mm.get_mut(hp)[..*size].fill(i as u8);
            hps.push((hp, *size, i as u8));
        }
        for &(hp, size, b) in &hps {
            assert!(mm.get(hp)[..size].iter().all(|&x| x == b));
        }
        assert!(mm.bytes() > base);
        for (hp, _, _) in hps {
            mm.free(hp);
        }
        assert_eq!(mm.bytes(), mm.stats().metadata_bytes);
        assert_eq!(mm.stats().chunks, 0);
        assert_eq!(mm.stats().extended_bytes, 0);
    }

    /// An extended block regrows behind the same Hyperion Pointer (content kept, new
    /// capacity); a chained extended bin resolves keys to the nearest non-void slot at or
    /// below `k / 32`, and frees everything.
    #[test]
    fn mm_regrow_and_chains() {
        let mut mm = MemoryManager::new();
        let base_bytes = mm.bytes();
        let hp = mm.alloc(3000).unwrap();
        mm.get_mut(hp)[..3000].fill(7);
        mm.regrow(hp, 9000, |src, dst| {
            dst[..3000].copy_from_slice(&src[..3000])
        })
        .unwrap();
        assert_eq!(mm.capacity(hp), extended_capacity(9000));
        assert!(mm.get(hp)[..3000].iter().all(|&b| b == 7));
        assert!(mm.get(hp)[3000..9000].iter().all(|&b| b == 0));
        mm.regrow(hp, 2100, |src, dst| {
            dst[..2100].copy_from_slice(&src[..2100])
        })
        .unwrap();
        assert_eq!(mm.capacity(hp), extended_capacity(2100));
        let chain = mm.alloc_chain().unwrap();
        assert!(mm.is_chain(chain) && !mm.is_chain(hp));
        assert_eq!(chain.chain_of(), (chain, 0));
        mm.fill_slot(chain.slot(0), 2500).unwrap();
        mm.fill_slot(chain.slot(5), 3000).unwrap();
        mm.get_mut(chain.slot(5))[0] = 5;
        assert_eq!(mm.resolve(chain, 0), chain.slot(0));
        assert_eq!(mm.resolve(chain, 159), chain.slot(0));
        assert_eq!(mm.resolve(chain, 160), chain.slot(5));
        assert_eq!(mm.resolve(chain, 255), chain.slot(5));
        assert_eq!(mm.get(mm.resolve(chain, 200))[0], 5);
        assert_eq!(chain.slot(5).chain_of(), (chain, 5));
        mm.void_slot(chain.slot(5));
        assert!(mm.is_void(chain.slot(5)));
        assert_eq!(mm.resolve(chain, 255), chain.slot(0));
        mm.free_chain(chain);
        mm.free(hp);
        assert_eq!(mm.bytes(), base_bytes);
        assert_eq!(mm.stats().extended, 0);
    }

    #[test]
    fn mm_fills_a_bin_and_opens_the_next() {
        let mut mm = MemoryManager::new();
        let n = if cfg!(miri) { 300 } else { CHUNKS_PER_BIN + 10 };
        let hps: Vec<Hp> = (0..n).map(|_| mm.alloc(32).unwrap()).collect();
        let mut sorted = hps.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), n, "every chunk is distinct");
        assert_eq!(mm.stats().chunks, n);
        for hp in &hps {
            mm.free(*hp);
        }
        assert_eq!(mm.stats().chunks, 0);
        assert_eq!(mm.stats().free_chunk_bytes, 0, "empty bins are unmapped");
    }
}
