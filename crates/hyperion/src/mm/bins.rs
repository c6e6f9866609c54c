//! Superbins, metabins and bins (the [module docs](super), "Hierarchy"): the bookkeeping
//! of which chunks are taken, and the memory a bin's chunks live in.

use std::collections::BTreeSet;
use std::ptr::NonNull;

use std::alloc::Layout;

use orrery_core::alloc::{HUGE_PAGE_SIZE, HugeRegion, PAGE_SIZE};
use orrery_core::api::{Error, Result};

use super::hp::{BINS_PER_METABIN, CHUNKS_PER_BIN, FIRST_CHUNKS};

/// Bytes from which a bin's memory is a mapping of its own, grown in place, instead of a
/// heap block: freeing it gives it back to the OS at once (the global allocator may keep
/// a freed block in its heap for good).
const PAGES_FROM: usize = 64 * 1024;

/// Where a bin's chunks live (see [`Caps`] for when each is used).
pub(super) enum BinMem {
    /// A heap block for a power of two of chunks under 64 KiB.
    Heap(NonNull<u8>, usize),
    /// A mapping for all [`CHUNKS_PER_BIN`] chunks (what the readers' directory lets a
    /// reader index) in 4 KiB pages (huge pages refused), of which the first `.1` bytes —
    /// whole 4 KiB pages, the bin's capacity — are held; the bin grows in place
    /// ([`BinMem::grow_in_place`]) and the rest of the mapping, untouched, costs address
    /// space, not memory.
    Pages(HugeRegion, usize),
    /// A full bin of 2 MiB and more: a mapping for [`CHUNKS_PER_BIN`] chunks in huge pages,
    /// of which the first `.1` bytes (whole huge pages, the chunks of a full bin) are
    /// written.
    Huge(HugeRegion, usize),
}

impl BinMem {
    /// Memory for `cap` chunks of the schedule `caps` ([`Caps::grown`], [`Caps::shrunk`]),
    /// zeroed.
    pub(super) fn new(cap: usize, caps: Caps) -> Result<BinMem> {
        let bytes = cap * caps.size;
        if caps.is_huge(cap) {
            let region = HugeRegion::new(CHUNKS_PER_BIN * caps.size)?;
            let touched = bytes.next_multiple_of(HUGE_PAGE_SIZE);
            debug_assert!(touched <= region.reserved_len());
            return Ok(BinMem::Huge(region, touched));
        }
        if bytes >= PAGES_FROM || !cap.is_power_of_two() {
            let region = HugeRegion::new(CHUNKS_PER_BIN * caps.size)?;
            // 4 KiB pages: only the pages chunks are written to become resident.
            region.no_huge_pages();
            return Ok(BinMem::Pages(region, bytes.next_multiple_of(PAGE_SIZE)));
        }
        let layout = Layout::from_size_align(bytes, 64).map_err(|_| Error::OutOfMemory)?;
        // SAFETY: `bytes` is positive (at least one chunk).
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        Ok(BinMem::Heap(
            NonNull::new(p).ok_or(Error::OutOfMemory)?,
            bytes,
        ))
    }

    pub(super) fn ptr(&self) -> *mut u8 {
        match self {
            BinMem::Heap(p, _) => p.as_ptr(),
            BinMem::Pages(r, _) | BinMem::Huge(r, _) => r.as_ptr(),
        }
    }

    /// Bytes held: what the bin's chunks may occupy, rounded up to whole pages (4 KiB or
    /// 2 MiB); the untouched rest of a mapping is not held.
    pub(super) fn bytes(&self) -> usize {
        match self {
            BinMem::Heap(_, n) | BinMem::Pages(_, n) | BinMem::Huge(_, n) => *n,
        }
    }

    /// Grows a mapping in 4 KiB pages in place to hold `bytes` (rounded up to whole
    /// pages): the pages were mapped, untouched, when it was made, so no chunk moves and
    /// the readers' directory does not change. `false` (nothing done) for other memory.
    pub(super) fn grow_in_place(&mut self, bytes: usize) -> bool {
        match self {
            BinMem::Pages(r, held) => {
                let t = bytes.next_multiple_of(PAGE_SIZE);
                debug_assert!(t >= *held && t <= r.reserved_len());
                *held = t;
                true
            }
            _ => false,
        }
    }

    /// Chunks an optimistic reader may index in a bin of capacity `cap` (a power of two:
    /// the readers' directory stores its logarithm): `cap` itself for a heap block, all
    /// [`CHUNKS_PER_BIN`] a mapping is made for otherwise.
    pub(super) fn reach(&self, cap: usize) -> usize {
        match self {
            BinMem::Heap(..) => cap,
            _ => CHUNKS_PER_BIN,
        }
    }
}

/// The capacity schedule of the bins of one chunk size: how many chunks a bin's memory
/// holds as it grows and shrinks, and which memory holds it ([`BinMem`]).
///
/// - Under 64 KiB: a heap block for a power of two of chunks, from [`FIRST_CHUNKS`]; it
///   doubles (by copying, cheap at that size) and halves.
/// - From 64 KiB until the bin is full: a mapping made once for all 4,096 chunks, in
///   4 KiB pages, holding whole 4 KiB pages' worth of chunks; the bin grows *in place*,
///   one page at a time: no copy, no new mapping, nothing for the readers' directory to
///   learn (it bounds the bin at 4,096 chunks from the start). Only the pages chunks have
///   been written to are resident.
/// - A full bin whose chunks take 2 MiB or more: huge pages, filled — what whole huge
///   pages below 4,096 chunks hold ([`Caps::full`]; a class-33 bin of 1,056-byte chunks
///   holds 3,971 chunks in 4 MiB, where 4,096 of them would take 6 MiB). The bin moves
///   there (one copy) when it grows to full capacity.
///
/// Why not huge pages while growing (as the paper, which maps every bin whole, and as this
/// manager did: doubling into huge-page regions): a huge page becomes resident whole at
/// its first write, so every (arena, size class)'s last, growing bin held on average half
/// a huge page of free chunks, and doubling held up to half the bin as free capacity — at
/// 100M keys with pre-processing, where nearly every (arena, class) has a single, growing
/// bin, that was most of the free chunk bytes. 4 KiB pages bound it to one page a bin;
/// full bins — nearly all the chunks at scale — keep the huge pages' TLB reach, and a
/// grown bin's single copy into them is paid once per ~4,000 chunks.
#[derive(Clone, Copy, Debug)]
pub(super) struct Caps {
    size: usize,
    full: usize,
}

impl Caps {
    /// The schedule of `size`-byte chunks.
    pub(super) const fn new(size: usize) -> Caps {
        let whole = CHUNKS_PER_BIN * size;
        let full = if whole <= HUGE_PAGE_SIZE {
            CHUNKS_PER_BIN
        } else {
            whole / HUGE_PAGE_SIZE * HUGE_PAGE_SIZE / size
        };
        Caps { size, full }
    }

    /// Chunks a full bin holds (at most [`CHUNKS_PER_BIN`]).
    #[inline]
    pub(super) fn full(self) -> usize {
        self.full
    }

    /// Whether a bin of capacity `cap` is held in huge pages: full, of a size class whose
    /// 4,096 chunks take 2 MiB or more (its full bin fills whole huge pages).
    pub(super) fn is_huge(self, cap: usize) -> bool {
        cap == self.full && CHUNKS_PER_BIN * self.size >= HUGE_PAGE_SIZE
    }

    /// Chunks `pages` whole 4 KiB pages hold, at most [`Caps::full`].
    fn in_pages(self, pages: usize) -> usize {
        (pages * PAGE_SIZE / self.size).min(self.full)
    }

    /// The capacity a bin of capacity `cap` grows to so that it holds chunk `need - 1`:
    /// the next power of two while that stays under 64 KiB, else the fewest whole 4 KiB
    /// pages (at least 64 KiB) that hold `need` chunks. `need` is at most [`Caps::full`].
    pub(super) fn grown(self, cap: usize, need: usize) -> usize {
        debug_assert!(need <= self.full && need > cap);
        let mut c = cap.next_power_of_two();
        while c < need {
            c *= 2;
        }
        if c * self.size < PAGES_FROM {
            return c;
        }
        let pages = (need * self.size)
            .div_ceil(PAGE_SIZE)
            .max(PAGES_FROM / PAGE_SIZE);
        self.in_pages(pages)
    }

    /// The capacity a bin of capacity `cap` shrinks to: the largest one of the schedule
    /// that is at most half of `cap` (the bin halves), `None` below 2·[`FIRST_CHUNKS`].
    pub(super) fn shrunk(self, cap: usize) -> Option<usize> {
        let half = cap / 2;
        if half < FIRST_CHUNKS {
            return None;
        }
        if half * self.size >= PAGES_FROM {
            // Whole 4 KiB pages holding at most `half` chunks (at least 64 KiB of them).
            return Some(self.in_pages(half * self.size / PAGE_SIZE));
        }
        Some(1 << half.ilog2())
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

/// One bin: up to 4,096 chunks in one block of memory, which grows as chunks are taken
/// (doubling by moving under 64 KiB — Hyperion Pointers name chunks by index, not
/// address —, in place from there, moved once into huge pages when full: [`Caps`]). Deviation
/// from the paper, which maps all 4,096 chunks at once: at the scale of this machine's
/// benchmarks (millions, not billions, of keys) a full bin per size class and arena
/// (64 · 16 bins of 128 KiB–8 MiB, each at least a 2 MiB huge page) cost more than the
/// whole trie (measured: `docs/results/hyperion.md`, "Status, verification and
/// optimistic-read figures").
pub(super) struct Bin {
    pub(super) mem: BinMem,
    /// Chunks the memory holds.
    pub(super) cap: usize,
    pub(super) used: u32,
    /// Bit `i` set: chunk `i` is allocated.
    pub(super) map: Box<[u64; CHUNKS_PER_BIN / 64]>,
}

/// One metabin: 256 bins and the map of the non-full ones.
#[derive(Default)]
pub(super) struct Metabin {
    pub(super) bins: Vec<Option<Bin>>,
    pub(super) nonfull: [u64; BINS_PER_METABIN / 64],
}

/// One superbin: the metabins of one chunk size.
pub(super) struct Superbin {
    pub(super) chunk_size: usize,
    /// The capacity schedule of its bins.
    pub(super) caps: Caps,
    pub(super) metabins: Vec<Option<Box<Metabin>>>,
    /// Bins with a free chunk, by id.
    pub(super) nonfull: BTreeSet<u32>,
    /// Ids of unmapped bins below `next_id`.
    pub(super) free_ids: BTreeSet<u32>,
    pub(super) next_id: u32,
}

impl Superbin {
    pub(super) fn bin(&self, id: usize) -> &Bin {
        self.metabins[id / BINS_PER_METABIN]
            .as_ref()
            .and_then(|m| m.bins[id % BINS_PER_METABIN].as_ref())
            .expect("a Hyperion Pointer names a mapped bin")
    }

    pub(super) fn bin_mut(&mut self, id: usize) -> (&mut Bin, &mut [u64; 4]) {
        let m = self.metabins[id / BINS_PER_METABIN]
            .as_mut()
            .expect("a Hyperion Pointer names a mapped metabin");
        let bin = m.bins[id % BINS_PER_METABIN]
            .as_mut()
            .expect("a Hyperion Pointer names a mapped bin");
        (bin, &mut m.nonfull)
    }
}
