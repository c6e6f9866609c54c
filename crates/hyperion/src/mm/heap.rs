//! Where extended blocks live (the [module docs](super), "Extended blocks' memory"): below
//! [`PAGED_FROM`] the global allocator (through a `SizeClassPool`'s large-block path, which
//! asks the tests' fail point), from it a [`PageHeap`] shared by every index of the process,
//! whose freed pages go back to the OS.

use std::ptr::NonNull;
use std::sync::LazyLock;

use orrery_core::alloc::{PageHeap, SizeClassPool};
use orrery_core::api::Result;

use super::hp::STEP;

/// Capacity from which an extended block is whole pages of the shared [`PageHeap`]: from
/// 16 KiB the capacities step by 4 KiB (`extended_capacity`), so no page is wasted.
pub(super) const PAGED_FROM: usize = 16 * 1024;

/// The page heap of every Hyperion in the process.
static PAGES: LazyLock<PageHeap> = LazyLock::new(PageHeap::new);

/// The extended-block heap of one memory manager (shared with its retired blocks).
pub(super) struct ExtHeap {
    /// Blocks below [`PAGED_FROM`]: the pool's large-block path (the global allocator).
    small: SizeClassPool,
}

impl ExtHeap {
    pub(super) fn new() -> ExtHeap {
        ExtHeap {
            small: SizeClassPool::new(&[STEP], 8).expect("a valid one-class pool"),
        }
    }

    /// A block of `cap` bytes (an extended capacity, above any class of `small`),
    /// uninitialized.
    pub(super) fn try_alloc(&self, cap: usize) -> Result<NonNull<u8>> {
        debug_assert!(cap > self.small.max_class_size());
        if cap >= PAGED_FROM {
            PAGES.try_alloc(cap)
        } else {
            self.small.try_alloc(cap)
        }
    }

    /// Frees a block.
    ///
    /// # Safety
    ///
    /// `p` came from [`ExtHeap::try_alloc`] of this heap with `cap`, is freed once, and no
    /// reader can access it any more (its pages may be given back or unmapped).
    pub(super) unsafe fn free(&self, p: NonNull<u8>, cap: usize) {
        if cap >= PAGED_FROM {
            // SAFETY: from `PAGES` with `cap` (same test as in `try_alloc`); contract.
            unsafe { PAGES.free(p, cap) }
        } else {
            // SAFETY: from `small` with `cap`; contract.
            unsafe { self.small.free(p, cap) }
        }
    }
}

/// Bytes the shared page heap holds (diagnostics).
#[cfg(feature = "bench-internals")]
pub(crate) fn paged_bytes() -> usize {
    PAGES.held_bytes()
}
