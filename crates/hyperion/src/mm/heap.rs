//! Where extended blocks live (the [module docs](super), "Extended blocks' memory"): a
//! [`BlockHeap`] shared by every index of the process, whose freed pages go back to the OS
//! (the global allocator, which the paper's `malloc` stands for, kept them).

use std::ptr::NonNull;
use std::sync::LazyLock;

use orrery_core::alloc::BlockHeap;
use orrery_core::api::Result;

/// The extended-block heap of every Hyperion in the process.
static HEAP: LazyLock<BlockHeap> = LazyLock::new(BlockHeap::new);

// Extended capacities are multiples of 256 bytes (`extended_capacity`): no granule is
// rounded up.
const _: () = assert!(BlockHeap::GRANULE == 256);

/// A handle on the extended-block heap (shared by a memory manager and its retired
/// blocks).
pub(super) struct ExtHeap;

impl ExtHeap {
    pub(super) fn new() -> ExtHeap {
        ExtHeap
    }

    /// A block of `cap` bytes (an extended capacity), uninitialized.
    pub(super) fn try_alloc(&self, cap: usize) -> Result<NonNull<u8>> {
        HEAP.try_alloc(cap)
    }

    /// Frees a block.
    ///
    /// # Safety
    ///
    /// `p` came from [`ExtHeap::try_alloc`] with `cap`, is freed once, and no reader can
    /// access it any more (its pages may be given back or unmapped).
    pub(super) unsafe fn free(&self, p: NonNull<u8>, cap: usize) {
        // SAFETY: the caller's contract.
        unsafe { HEAP.free(p, cap) }
    }
}

/// Bytes the shared heap holds (diagnostics).
#[cfg(feature = "bench-internals")]
pub(crate) fn paged_bytes() -> usize {
    HEAP.held_bytes()
}
