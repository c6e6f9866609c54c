//! Superbins, metabins and bins (the [module docs](super), "Hierarchy"): the bookkeeping
//! of which chunks are taken, and the memory a bin's chunks live in.

use std::collections::BTreeSet;
use std::ptr::NonNull;

use std::alloc::Layout;

use orrery_core::alloc::{HUGE_PAGE_SIZE, HugeRegion, PageRegion};
use orrery_core::api::{Error, Result};

use super::hp::{BINS_PER_METABIN, CHUNKS_PER_BIN, FIRST_CHUNKS};

/// Bytes from which a bin's memory is mapped in whole pages instead of taken from the
/// heap: freeing it then gives it back to the OS at once (the global allocator may keep a
/// freed block in its heap for good).
const PAGES_FROM: usize = 64 * 1024;

/// Where a bin's chunks live: the heap while the bin is small, whole pages from 64 KiB, a
/// huge-page region from 2 MiB.
pub(super) enum BinMem {
    Heap(NonNull<u8>, usize),
    Pages(PageRegion),
    /// A huge-page region mapped for [`CHUNKS_PER_BIN`] chunks (what the readers'
    /// directory lets a reader index) of which only the first `.1` bytes (whole huge
    /// pages) are ever written: the rest of the mapping is never touched, so it costs
    /// address space, not memory (see [`Caps`]).
    Region(HugeRegion, usize),
}

impl BinMem {
    /// Memory for `cap` chunks of `size` bytes, zeroed. `cap` comes from [`Caps`]: a
    /// power of two, or what whole huge pages hold (then it is held in huge pages, even
    /// when a full bin's chunks come just short of 2 MiB).
    pub(super) fn new(cap: usize, size: usize) -> Result<BinMem> {
        let bytes = cap * size;
        if bytes >= HUGE_PAGE_SIZE || !cap.is_power_of_two() {
            debug_assert!(cap <= CHUNKS_PER_BIN);
            let region = HugeRegion::new(CHUNKS_PER_BIN * size)?;
            let touched = bytes.next_multiple_of(HUGE_PAGE_SIZE);
            debug_assert!(touched <= region.reserved_len());
            return Ok(BinMem::Region(region, touched));
        }
        debug_assert!(
            cap.is_power_of_two(),
            "below 2 MiB a bin's capacity doubles"
        );
        if bytes >= PAGES_FROM {
            return Ok(BinMem::Pages(PageRegion::new(bytes)?));
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
            BinMem::Pages(r) => r.as_ptr(),
            BinMem::Region(r, _) => r.as_ptr(),
        }
    }

    /// Bytes held: what the bin's chunks may occupy, rounded up to whole pages (huge
    /// pages for a region; its untouched rest is not held).
    pub(super) fn bytes(&self) -> usize {
        match self {
            BinMem::Heap(_, n) => *n,
            BinMem::Pages(r) => r.reserved_len(),
            BinMem::Region(_, touched) => *touched,
        }
    }

    /// Chunks an optimistic reader may index in a bin of capacity `cap` (a power of two:
    /// the readers' directory stores its logarithm): `cap` itself, or for a region all
    /// [`CHUNKS_PER_BIN`] it is mapped for.
    pub(super) fn reach(&self, cap: usize) -> usize {
        match self {
            BinMem::Region(..) => CHUNKS_PER_BIN,
            _ => cap,
        }
    }
}

/// The capacity schedule of the bins of one chunk size: how many chunks a bin's memory
/// holds as it grows and shrinks.
///
/// Below 2 MiB a bin holds a power of two of chunks, from [`FIRST_CHUNKS`]: it doubles to
/// grow and halves to shrink. From 2 MiB its memory is a huge-page region, which is held
/// in whole 2 MiB pages (the last one is faulted in whole the first time a chunk in it is
/// written), so there the capacity is what those whole pages hold, and a full bin holds
/// what whole huge pages below 4,096 chunks hold. A class-33 bin (1,056-byte chunks)
/// holds 3,971 chunks in 4 MiB, where 4,096 of them (4.1 MiB) would take 6 MiB;
/// over classes 17–63 rounding 4,096 chunks up to whole huge pages left 0–47 % of a full
/// bin's memory unused, which is what containers of 600 bytes and more — random keys
/// past a few hundred million, or any load with pre-processing — live in.
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

    /// Capacity `c` (a power of two) as held: from 2 MiB, what the whole huge pages its
    /// chunks touch hold, at most [`Caps::full`].
    fn fit(self, c: usize) -> usize {
        let bytes = c * self.size;
        if bytes <= HUGE_PAGE_SIZE {
            return c.min(self.full);
        }
        (bytes.next_multiple_of(HUGE_PAGE_SIZE) / self.size).min(self.full)
    }

    /// The capacity a bin of capacity `cap` grows to so that it holds chunk `need - 1`:
    /// doubled (until it holds it), as held ([`Caps::fit`]). `need` is at most
    /// [`Caps::full`].
    pub(super) fn grown(self, cap: usize, need: usize) -> usize {
        debug_assert!(need <= self.full && need > cap);
        let mut c = cap.next_power_of_two();
        while c < need {
            c *= 2;
        }
        self.fit(c)
    }

    /// The capacity a bin of capacity `cap` shrinks to: the largest one of the schedule
    /// below `cap` (half a power of two, or what the huge pages of a smaller power of two
    /// hold), `None` at [`FIRST_CHUNKS`].
    pub(super) fn shrunk(self, cap: usize) -> Option<usize> {
        let mut p = cap.next_power_of_two() / 2;
        while p >= FIRST_CHUNKS {
            let t = self.fit(p);
            if t < cap {
                return Some(t);
            }
            p /= 2;
        }
        None
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
