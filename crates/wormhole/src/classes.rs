//! Size-class pools: variable-size blocks (key-value pairs) from huge-page slabs (`orrery_core::alloc::SlabPool`), one pool per size class.
//!
//! Why (measured, see the crate docs): a lookup dereferences a pair block at a random
//! address; over a large index, with 4 KiB pages from the global
//! allocator each of those reads usually misses the TLB as well as the caches, and on this
//! project's machine a page walk costs about as much as another DRAM read. Slabs are 2 MiB
//! huge pages, so the walk disappears. Allocation is also cheaper than `malloc` (a pop from
//! a per-thread magazine).
//!
//! A block of `size` bytes goes to class `ceil(size / step)`: a slot of `class · step`
//! bytes aligned to `align`. Blocks larger than `max` come from the global allocator
//! (`size` bytes, `align`); the caller passes the same `size` to [`ClassPools::free`].
//! Memory goes back to the OS when the pools are dropped (with the index); freed slots are
//! reused by later allocations of the same class.

use std::alloc::{Layout, alloc, dealloc, handle_alloc_error};
use std::ptr::NonNull;

use orrery_core::alloc::{Populator, SlabPool};

/// A set of slab pools for sizes `step, 2·step, …, max`.
pub(crate) struct ClassPools {
    step: usize,
    align: usize,
    max: usize,
    pools: Box<[SlabPool]>,
}

impl ClassPools {
    /// Pools for sizes up to `max` in steps of `step` (a multiple of `align`, a power of two).
    pub(crate) fn new(step: usize, align: usize, max: usize) -> ClassPools {
        debug_assert!(step.is_multiple_of(align) && max.is_multiple_of(step));
        let pools = (1..=max / step)
            .map(|c| SlabPool::new(c * step, align).expect("size classes fit the slab pool"))
            .collect();
        ClassPools {
            step,
            align,
            max,
            pools,
        }
    }

    #[inline]
    fn class(&self, size: usize) -> Option<usize> {
        (size <= self.max).then(|| size.max(1).div_ceil(self.step) - 1)
    }

    fn big_layout(&self, size: usize) -> Layout {
        Layout::from_size_align(size, self.align).expect("block layout")
    }

    /// Bytes a block of `size` bytes occupies (its slot, or `size` for a large block).
    #[inline]
    pub(crate) fn block_bytes(&self, size: usize) -> usize {
        match self.class(size) {
            Some(c) => (c + 1) * self.step,
            None => size,
        }
    }

    /// A block of at least `size` (> 0) bytes, aligned to `align`, uninitialized.
    #[inline]
    pub(crate) fn alloc(&self, size: usize) -> NonNull<u8> {
        match self.class(size) {
            Some(c) => self.pools[c].alloc(),
            None => {
                let lay = self.big_layout(size);
                // SAFETY: `size` > `max` > 0: a non-zero size.
                let raw = unsafe { alloc(lay) };
                NonNull::new(raw).unwrap_or_else(|| handle_alloc_error(lay))
            }
        }
    }

    /// Frees a block.
    ///
    /// # Safety
    /// `p` came from [`ClassPools::alloc`] of these pools with the same `size`, and is not
    /// used afterwards.
    #[inline]
    pub(crate) unsafe fn free(&self, p: NonNull<u8>, size: usize) {
        match self.class(size) {
            // SAFETY: allocated from this class's pool (same size), unused from now on.
            Some(c) => unsafe { self.pools[c].free(p) },
            // SAFETY: allocated by the global allocator with this layout.
            None => unsafe { dealloc(p.as_ptr(), self.big_layout(size)) },
        }
    }

    /// Attaches every pool to the index's chunk populator (see `Config::prefault`).
    pub(crate) fn attach(&self, populator: &Populator) {
        for pool in &self.pools {
            pool.attach(populator);
        }
    }

    /// Bytes of huge-page chunks the pools took from the OS.
    pub(crate) fn reserved_bytes(&self) -> usize {
        self.pools.iter().map(SlabPool::reserved_bytes).sum()
    }

    /// Bytes of the pools' slots in use (exact when no thread allocates concurrently).
    pub(crate) fn live_bytes(&self) -> usize {
        self.pools.iter().map(SlabPool::live_bytes).sum()
    }
}

impl std::fmt::Debug for ClassPools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClassPools")
            .field("step", &self.step)
            .field("max", &self.max)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_alloc_free_reuse() {
        let p = ClassPools::new(8, 8, 64);
        assert_eq!(p.block_bytes(1), 8);
        assert_eq!(p.block_bytes(24), 24);
        assert_eq!(p.block_bytes(25), 32);
        assert_eq!(p.block_bytes(100), 100);
        let mut blocks = Vec::new();
        for size in [1usize, 8, 9, 24, 64, 65, 200] {
            let b = p.alloc(size);
            assert_eq!(b.as_ptr() as usize % 8, 0);
            // SAFETY: the block has at least `size` writable bytes.
            unsafe { b.as_ptr().write_bytes(size as u8, size) };
            blocks.push((b, size));
        }
        for &(b, size) in &blocks {
            // SAFETY: written above, still live.
            let got = unsafe { std::slice::from_raw_parts(b.as_ptr(), size) };
            assert!(got.iter().all(|&x| x == size as u8));
        }
        assert!(p.live_bytes() >= 8 + 8 + 16 + 24 + 64);
        for (b, size) in blocks {
            // SAFETY: allocated above with this size, not used afterwards.
            unsafe { p.free(b, size) };
        }
        assert_eq!(p.live_bytes(), 0);
    }
}
