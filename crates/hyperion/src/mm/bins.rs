//! Superbins, metabins and bins (the [module docs](super), "Hierarchy"): the bookkeeping
//! of which chunks are taken, and the memory a bin's chunks live in.

use std::collections::BTreeSet;
use std::ptr::NonNull;

use std::alloc::Layout;

use orrery_core::alloc::{HUGE_PAGE_SIZE, HugeRegion, PageRegion};
use orrery_core::api::{Error, Result};

use super::hp::{BINS_PER_METABIN, CHUNKS_PER_BIN};

/// Bytes from which a bin's memory is mapped in whole pages instead of taken from the
/// heap: freeing it then gives it back to the OS at once (the global allocator may keep a
/// freed block in its heap for good).
const PAGES_FROM: usize = 64 * 1024;

/// Where a bin's chunks live: the heap while the bin is small, whole pages from 64 KiB, a
/// huge-page region from 2 MiB.
pub(super) enum BinMem {
    Heap(NonNull<u8>, usize),
    Pages(PageRegion),
    Region(HugeRegion),
}

impl BinMem {
    pub(super) fn new(bytes: usize) -> Result<BinMem> {
        if bytes >= HUGE_PAGE_SIZE {
            return Ok(BinMem::Region(HugeRegion::new(bytes)?));
        }
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
            BinMem::Region(r) => r.as_ptr(),
        }
    }

    /// Bytes held.
    pub(super) fn bytes(&self) -> usize {
        match self {
            BinMem::Heap(_, n) => *n,
            BinMem::Pages(r) => r.reserved_len(),
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
