//! Memory for the structures: huge-page-backed regions and arrays, a fixed-size object pool,
//! and byte accounting.
//!
//! | type | what it is for |
//! |---|---|
//! | [`HugeRegion`] | raw zeroed memory, 2 MiB-aligned, advised to use huge pages |
//! | [`PageRegion`] | raw zeroed memory in whole 4 KiB pages, unmapped when dropped (blocks between the global allocator's and a huge page's) |
//! | [`BlockHeap`] | blocks of many sizes (256-byte granules) carved best-fit from 2 MiB chunks, free pages given back (blocks too varied for size classes, too many to map alone) |
//! | [`HugeArray`] | a zero-initialized `[T]` of integers or atomics (hash table bucket arrays) |
//! | [`ZeroedArray`] | a zero-initialized `[T]` on the heap while small, in a [`HugeRegion`] from 2 MiB (tables that grow by replacement) |
//! | [`SlabPool`] | fixed-size objects (nodes, leaves) carved from 2 MiB chunks, per-thread caches |
//! | [`SizeClassPool`] | variable-size blocks (pairs, nodes, records): a [`SlabPool`] per size class, the global allocator above the largest |
//! | [`Populator`] | a background thread keeping fresh chunks for slab pools faulted in |
//! | [`BackgroundThread`] | the lifecycle of a lazily started, parkable, joined helper thread |
//! | [`MemCounter`] | a padded atomic byte count a structure reports through `memory_usage()` |
//! | `failpoint` | tests only (`cfg(test)` or feature `failpoints`): make the Nth allocation fail |
//!
//! # Huge pages
//!
//! x86-64 maps memory in 4 KiB pages or 2 MiB huge pages. Index structures read memory at
//! random, and each 4 KiB page a random read lands on needs its own TLB entry; the TLB covers
//! only a few MiB, so a random read over a large structure usually also walks the page table.
//! With 2 MiB pages the page walk is shorter and its entries cache far better. On this
//! project's machine a dependent random read over 1 GiB costs about 360 ns with 4 KiB pages
//! and about 210 ns with huge pages (see `DESIGN.md`, "The machine, measured").
//!
//! Linux gives anonymous memory transparent huge pages (THP) either always, never, or — the
//! mode on our machine (`/sys/kernel/mm/transparent_hugepage/enabled` = `madvise`) — only to
//! ranges that ask with `madvise(MADV_HUGEPAGE)`. The kernel can only use a huge page for a
//! 2 MiB-aligned 2 MiB piece of a mapping, so [`HugeRegion`] maps `len` rounded up to 2 MiB
//! at a 2 MiB-aligned address (it maps one extra huge page and unmaps the unaligned head and
//! the tail), then advises `MADV_HUGEPAGE`. If the advice fails (THP disabled, another OS)
//! the region simply keeps 4 KiB pages: nothing else changes. The kernel zeroes the pages on
//! first touch, so regions and arrays start zeroed without a pass over them, and untouched
//! parts of a large table cost no physical memory yet.
//!
//! Under Miri, which has no `mmap`, regions come from `std::alloc::alloc_zeroed` with a
//! 2 MiB-aligned layout, so the same code and tests run there.
//!
//! ## What huge pages do not fix in a VM (measured)
//!
//! In a virtual machine a TLB miss walks the guest's page table *and*, for every guest
//! address it produces, the host's ("2D" walk). Guest huge pages shorten the guest half, but
//! the host half is as fine as the host backs guest memory, which the guest cannot choose.
//! On this project's VM (`orrery-bench machine --sweep`, see `docs/results/wormhole.md`,
//! "Lookups against key count") a dependent random read on fully THP-backed memory costs
//! about 173 ns over 256 MiB but 278 ns over 2 GiB: the latency keeps growing with the
//! working set long after the data left the L3, as the host's page-table lines for it leave
//! the caches. A second read within 32 KiB of the previous one costs about half of a
//! random one, and within the same 2 MiB guest page nothing less (`--locality`). That is
//! what a host mapping guest memory in 4 KiB pages produces (32 KiB is what one cache line
//! of 8-byte host page-table entries maps; no hardware counters in the VM to confirm it),
//! and then larger guest pages (1 GiB hugetlb, which this VM cannot reserve anyway) would
//! not help either. What does help is fewer dependent reads per
//! operation, and placing objects that are read one after the other within 32 KiB of each
//! other.
//!
//! # The slab pool
//!
//! [`SlabPool`] serves objects of one size and alignment (fixed at construction, up to
//! [`MAX_OBJECT_SIZE`]) from 2 MiB chunks. Memory goes back to the OS only when the pool is
//! dropped; freed objects are reused. Its hot path takes no shared lock: each thread keeps,
//! per pool, two magazines of free objects (Bonwick's magazine layer) and a run of
//! never-used objects; only refilling or flushing a whole magazine, or taking a new run,
//! takes the pool's spin lock. See [`SlabPool`] for the protocol.
//!
//! # Pre-faulting chunks
//!
//! The first write into a fresh chunk makes the kernel clear the whole 2 MiB page (4–14 ms
//! on this project's VM), charged to the thread that allocated from it. A [`Populator`]
//! takes that off the allocating threads: it keeps a reservoir of at most `spares` chunks
//! (default 1) mapped and populated (`madvise(MADV_POPULATE_WRITE)`,
//! [`HugeRegion::prefault`]) by a background thread, shared by every pool attached to it
//! ([`SlabPool::attach`]) — a chunk is raw zeroed memory, usable by any object size. A
//! pool needing a chunk takes the spare if there is one (else maps its own, as an
//! unattached pool does) and wakes the thread, which refills the reservoir and parks. The
//! thread starts once the attached pools have taken `start_after` chunks (default 8,
//! 16 MiB), so small structures never get one, and dropping the populator stops and joins
//! it ([`BackgroundThread`]) and unmaps the spares. Spare chunks belong to no pool:
//! [`Populator::spare_bytes`] reports them (a structure adds them to its `memory_usage()`),
//! and a pool counts a chunk from the moment it takes it, so nothing is counted twice.
//!
//! # Size classes
//!
//! [`SizeClassPool`] is the one allocator of variable-size blocks: every structure's pairs,
//! nodes or cached records come from it. A block goes to the smallest class that holds it
//! (one table load), each class being a [`SlabPool`] whose slots are aligned so that a
//! block never straddles more cache lines than its size needs; a block above the largest
//! class comes from the global allocator. See [`SizeClassPool`] for the layout.
//!
//! # Out of memory
//!
//! Every allocation here is fallible: it returns [`Error::OutOfMemory`](crate::Error) and
//! changes nothing when the OS (or the global allocator) refuses memory, so that structures
//! can report the error from the operation that needed the memory instead of aborting.
//! To test those paths, `failpoint` (compiled only under `cfg(test)` or the `failpoints`
//! feature) makes the Nth allocation of the calling thread fail: every slab object, region
//! mapping, heap-backed [`ZeroedArray`] and large [`SizeClassPool`] block asks it first.
//! The conformance suite drives it through every structure (`testing::check_out_of_memory`).
//!
//! # Accounting
//!
//! Every structure reports its bytes through `memory_usage()`. [`MemCounter`] is the shared
//! counter for that: regions and arrays made with `new_counted` add their *reserved* bytes
//! (rounded up to 2 MiB) to a counter on creation and subtract them on drop; a
//! [`SlabPool`] made with [`SlabPool::with_counter`] adds each chunk it maps. A pool also
//! reports its own figures: [`SlabPool::reserved_bytes`] (chunks taken from the OS) and
//! [`SlabPool::live_bytes`] (objects allocated and not yet freed, at their slot size).
//! Counters are updated with `Relaxed` atomics: a count publishes no other memory, and the
//! read-modify-write operations on one counter are totally ordered anyway (coherence), so a
//! counter never shows a free before the allocation it undoes when the free happens after
//! it. A reader racing with writers sees some recent value.

mod background;
mod blockheap;
mod classes;
#[cfg(any(test, feature = "failpoints"))]
pub mod failpoint;
mod os;
mod pages;
mod populate;
mod region;
mod slab;
mod zeroed;

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::sync::CachePadded;

pub use background::BackgroundThread;
pub use blockheap::BlockHeap;
pub use classes::SizeClassPool;
pub use pages::PageRegion;
pub use populate::{DEFAULT_SPARES, DEFAULT_START_AFTER, Populator, PopulatorStats};
pub use region::{HUGE_PAGE_SIZE, HugeArray, HugeRegion, PAGE_SIZE, Zeroable};
pub use slab::{CHUNK_SIZE, MAX_OBJECT_SIZE, SlabError, SlabPool};
pub use zeroed::ZeroedArray;

/// Whether the allocation about to be made must fail: asks the test fail point
/// (`failpoint`) under `cfg(test)` or the `failpoints` feature, and is a constant `false`
/// (no code at all) otherwise.
#[inline(always)]
fn fail_here() -> bool {
    #[cfg(any(test, feature = "failpoints"))]
    {
        failpoint::should_fail()
    }
    #[cfg(not(any(test, feature = "failpoints")))]
    {
        false
    }
}

/// A byte counter on its own cache lines ([`CachePadded`], so that counting does not
/// false-share with neighbouring data): `add`, `sub`, `get`.
///
/// All operations are `Relaxed` (see the [module docs](self#accounting)).
#[derive(Debug, Default)]
pub struct MemCounter {
    bytes: CachePadded<AtomicUsize>,
}

impl MemCounter {
    /// A counter at 0.
    pub const fn new() -> MemCounter {
        MemCounter {
            bytes: CachePadded::new(AtomicUsize::new(0)),
        }
    }

    /// Adds `n` bytes.
    #[inline]
    pub fn add(&self, n: usize) {
        self.bytes.fetch_add(n, Ordering::Relaxed);
    }

    /// Subtracts `n` bytes (previously added).
    #[inline]
    pub fn sub(&self, n: usize) {
        let old = self.bytes.fetch_sub(n, Ordering::Relaxed);
        debug_assert!(old >= n, "MemCounter underflow: {old} - {n}");
    }

    /// The current count in bytes.
    #[inline]
    pub fn get(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alloc_mem_counter() {
        const _: () = assert!(std::mem::align_of::<MemCounter>() == 128);
        let c = MemCounter::new();
        c.add(100);
        c.add(28);
        c.sub(64);
        assert_eq!(c.get(), 64);
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    for _ in 0..1000 {
                        c.add(3);
                        c.sub(1);
                    }
                });
            }
        });
        assert_eq!(c.get(), 64 + 4000);
    }
}
