//! [`SizeClassPool`]: variable-size blocks from one [`SlabPool`] per size class, with a
//! global-allocator fallback above the largest class.
//!
//! Structures keep many small variable-size blocks (key-value pairs, chain nodes, cached
//! records). Taking them from slab pools puts them in 2 MiB huge-page chunks (a random read
//! of a block then rarely misses the TLB) and makes allocation a pop from a per-thread
//! magazine. A block of `size` bytes goes to the smallest class whose slot holds it; a
//! block larger than the largest class comes from the global allocator with exactly `size`
//! bytes.

use std::alloc::Layout;
use std::fmt;
use std::ptr::NonNull;

use std::sync::Arc;

use super::slab::{DEFAULT_SPARE_CHUNKS, Spares};
use super::{MemCounter, Populator, SlabError, SlabPool};
use crate::api::Error;

/// Variable-size blocks from size-class slab pools, with a global-allocator fallback above
/// the largest class (layout, accounting and failure below).
///
/// ```
/// use orrery_core::alloc::SizeClassPool;
///
/// let pool = SizeClassPool::new(&[16, 32, 64], 8).unwrap();
/// assert_eq!(pool.class_of(20), Some(1));
/// assert_eq!(pool.block_bytes(20), 32);
/// assert_eq!(pool.block_bytes(100), 100); // above the largest class: exact size
///
/// let b = pool.try_alloc(20).unwrap();
/// assert_eq!(b.as_ptr() as usize % 32, 0);
/// // SAFETY: allocated above with this size, not used afterwards.
/// unsafe { pool.free(b, 20) };
/// ```
///
/// # Layout and invariants
///
/// - Class sizes are strictly ascending multiples of the pool's alignment `align` (a power
///   of two); every block, class or large, is aligned to at least `align`.
/// - A class slot is aligned to the largest power of two dividing its size, up to 64 (a
///   cache line), so a block never straddles more cache lines than its size requires. The
///   slot size is the class size (a multiple of that alignment): no padding.
/// - The class of a size is one table load: `lookup[ceil(size / align)]`, a byte per
///   `align` step up to the largest class.
/// - A block is freed with the `size` it was allocated with (or any size of the same
///   class, such as [`SizeClassPool::class_size`]); the pool does not store sizes.
///
/// # Accounting
///
/// [`reserved_bytes`](SizeClassPool::reserved_bytes) counts the huge-page chunks the class
/// pools took from the OS, [`large_bytes`](SizeClassPool::large_bytes) the bytes of live
/// large blocks, and [`bytes`](SizeClassPool::bytes) both: what a structure reports as the
/// memory of its blocks. [`live_bytes`](SizeClassPool::live_bytes) counts live blocks at
/// their slot size (plus large blocks).
///
/// # Failure
///
/// [`try_alloc`](SizeClassPool::try_alloc) returns
/// [`Error::OutOfMemory`] when a class pool cannot map a chunk or the global allocator
/// refuses a large block; nothing is counted then. Large blocks ask the test fail point
/// (`failpoint`, under `cfg(test)` or the `failpoints` feature) like every other allocation
/// point of this module.
pub struct SizeClassPool {
    /// One pool per class, in ascending size order.
    pools: Box<[SlabPool]>,
    /// `lookup[ceil(size / align)]` is the class of `size` (for sizes up to the largest).
    lookup: Box<[u8]>,
    /// `log2(align)`.
    shift: u32,
    /// Alignment every block has at least.
    align: usize,
    /// Bytes of live blocks above the largest class.
    large: MemCounter,
    /// Empty chunks kept for reuse by all the classes.
    spares: Arc<Spares>,
}

/// Alignment of a slot of `size` bytes: the largest power of two dividing it, up to a
/// cache line (and at least the pool's `align`).
fn class_align(size: usize, align: usize) -> usize {
    (size & size.wrapping_neg()).min(64).max(align)
}

impl SizeClassPool {
    /// Most classes one pool can have.
    pub const MAX_CLASSES: usize = 255;

    /// A pool with one class per entry of `sizes` (strictly ascending multiples of `align`,
    /// a power of two; at most [`MAX_CLASSES`](Self::MAX_CLASSES) of them). Maps nothing
    /// yet: each class takes its first chunk at its first block.
    ///
    /// Fails with [`SlabError`] when `align` is not a power of two, a size is not a
    /// positive multiple of `align`, the sizes are not strictly ascending or too many, or
    /// the largest exceeds [`MAX_OBJECT_SIZE`](super::MAX_OBJECT_SIZE).
    pub fn new(sizes: &[usize], align: usize) -> Result<SizeClassPool, SlabError> {
        if !align.is_power_of_two() {
            return Err(SlabError::InvalidAlign { align });
        }
        let shape_ok = !sizes.is_empty()
            && sizes.len() <= Self::MAX_CLASSES
            && sizes.windows(2).all(|w| w[0] < w[1])
            && sizes.iter().all(|&s| s > 0 && s.is_multiple_of(align));
        if !shape_ok {
            return Err(SlabError::InvalidClasses);
        }
        let spares = Arc::new(Spares::new(DEFAULT_SPARE_CHUNKS));
        let pools = sizes
            .iter()
            .map(|&s| SlabPool::with_spares(s, class_align(s, align), Arc::clone(&spares)))
            .collect::<Result<Box<[SlabPool]>, SlabError>>()?;
        let shift = align.trailing_zeros();
        let max = *sizes.last().unwrap_or(&align);
        let mut class = 0;
        let lookup = (0..=max >> shift)
            .map(|steps| {
                let size = (steps << shift).max(1);
                while sizes[class] < size {
                    class += 1;
                }
                class as u8
            })
            .collect();
        Ok(SizeClassPool {
            pools,
            lookup,
            shift,
            align,
            large: MemCounter::new(),
            spares,
        })
    }

    /// Classes `step, 2·step, …, max` (`step` a multiple of `align`, `max` of `step`).
    pub fn with_step(step: usize, max: usize, align: usize) -> Result<SizeClassPool, SlabError> {
        if step == 0 || max / step > Self::MAX_CLASSES {
            return Err(SlabError::InvalidClasses);
        }
        let sizes: Vec<usize> = (1..=max / step).map(|c| c * step).collect();
        SizeClassPool::new(&sizes, align)
    }

    /// The class serving blocks of `size` bytes, or `None` above the largest class.
    #[inline]
    pub fn class_of(&self, size: usize) -> Option<usize> {
        // `ceil(size / align)` without overflow.
        let steps = (size >> self.shift) + usize::from(size & (self.align - 1) != 0);
        self.lookup.get(steps).map(|&c| c as usize)
    }

    /// The slot size of class `class` (panics if there is no such class).
    #[inline]
    pub fn class_size(&self, class: usize) -> usize {
        self.pools[class].object_size()
    }

    /// Number of classes.
    pub fn classes(&self) -> usize {
        self.pools.len()
    }

    /// The largest class size: blocks above it come from the global allocator.
    pub fn max_class_size(&self) -> usize {
        self.pools.last().map_or(0, SlabPool::object_size)
    }

    /// The alignment every block has at least.
    pub fn align(&self) -> usize {
        self.align
    }

    /// Bytes a block of `size` bytes occupies: its class's slot, or `size` above the
    /// largest class.
    #[inline]
    pub fn block_bytes(&self, size: usize) -> usize {
        match self.class_of(size) {
            Some(c) => self.class_size(c),
            None => size,
        }
    }

    /// A block of at least `size` bytes (exactly [`block_bytes`](Self::block_bytes)
    /// usable), aligned to [`align`](Self::align), uninitialized. Valid until freed with
    /// [`free`](Self::free) or the pool is dropped (large blocks: until freed).
    ///
    /// Fails with [`Error::OutOfMemory`] when the memory cannot be had; nothing changes
    /// then.
    #[inline]
    pub fn try_alloc(&self, size: usize) -> Result<NonNull<u8>, Error> {
        match self.class_of(size) {
            Some(c) => self.pools[c].try_alloc(),
            None => self.alloc_large(size),
        }
    }

    /// [`SlabPool::try_alloc_lower`] for the block of `size` bytes at `p` (from this
    /// pool): a block of the same class in the lowest chunk with room, under the
    /// conditions given there; `None` otherwise, and always above the largest class.
    pub fn try_alloc_lower(&self, p: NonNull<u8>, size: usize) -> Option<NonNull<u8>> {
        self.pools[self.class_of(size)?].try_alloc_lower(p)
    }

    #[cold]
    fn alloc_large(&self, size: usize) -> Result<NonNull<u8>, Error> {
        if super::fail_here() {
            return Err(Error::OutOfMemory);
        }
        let layout = Layout::from_size_align(size, self.align).map_err(|_| Error::OutOfMemory)?;
        // SAFETY: `size` exceeds the largest class, which is positive: a non-zero size.
        let p = NonNull::new(unsafe { std::alloc::alloc(layout) }).ok_or(Error::OutOfMemory)?;
        self.large.add(size);
        Ok(p)
    }

    /// Frees a block.
    ///
    /// # Safety
    ///
    /// `p` came from [`try_alloc`](Self::try_alloc) of this pool with a size of the same
    /// class as `size` (for a block above the largest class: exactly `size`), is freed
    /// once, and is not used afterwards.
    #[inline]
    pub unsafe fn free(&self, p: NonNull<u8>, size: usize) {
        match self.class_of(size) {
            // SAFETY: allocated from this class's pool (contract), unused from now on.
            Some(c) => unsafe { self.pools[c].free(p) },
            None => {
                self.large.sub(size);
                // The layout was valid when the block was allocated with it.
                let layout = Layout::from_size_align(size, self.align)
                    .unwrap_or_else(|_| Layout::new::<u8>());
                // SAFETY: allocated by the global allocator with this layout (contract).
                unsafe { std::alloc::dealloc(p.as_ptr(), layout) }
            }
        }
    }

    /// Attaches every class pool to a chunk populator (see [`SlabPool::attach`]).
    pub fn attach(&self, populator: &Populator) {
        for pool in &self.pools {
            pool.attach(populator);
        }
    }

    /// Bytes of huge-page chunks the class pools took from the OS and did not give back
    /// (their chunks less the pages given back, and the empty chunks kept for reuse).
    pub fn reserved_bytes(&self) -> usize {
        self.pools.iter().map(SlabPool::chunk_bytes).sum::<usize>() + self.spares.bytes()
    }

    /// Bytes of live blocks above the largest class.
    pub fn large_bytes(&self) -> usize {
        self.large.get()
    }

    /// Bytes held: class chunks plus live large blocks.
    pub fn bytes(&self) -> usize {
        self.reserved_bytes() + self.large_bytes()
    }

    /// Bytes of class chunks not holding a live block (free slots and not yet carved
    /// space): the pool's overhead beyond [`live_bytes`](Self::live_bytes).
    pub fn slack_bytes(&self) -> usize {
        let live: usize = self.pools.iter().map(SlabPool::live_bytes).sum();
        self.reserved_bytes().saturating_sub(live)
    }

    /// Bytes of live blocks, class blocks at their slot size (exact when no thread
    /// allocates concurrently, see [`SlabPool::live_bytes`]).
    pub fn live_bytes(&self) -> usize {
        self.pools.iter().map(SlabPool::live_bytes).sum::<usize>() + self.large_bytes()
    }
}

impl fmt::Debug for SizeClassPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SizeClassPool")
            .field("classes", &self.pools.len())
            .field("max_class_size", &self.max_class_size())
            .field("align", &self.align)
            .field("reserved_bytes", &self.reserved_bytes())
            .field("large_bytes", &self.large_bytes())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alloc_classes_lookup_matches_linear_search() {
        let sizes = [16, 32, 48, 64, 80, 192, 256, 384, 4096];
        let pool = SizeClassPool::new(&sizes, 16).unwrap();
        for size in 0..=5000 {
            let want = sizes.iter().position(|&c| c >= size.max(1));
            assert_eq!(pool.class_of(size), want, "size {size}");
            match want {
                Some(c) => assert_eq!(pool.block_bytes(size), sizes[c]),
                None => assert_eq!(pool.block_bytes(size), size),
            }
        }
        assert_eq!(pool.max_class_size(), 4096);
        assert_eq!(pool.classes(), sizes.len());
    }

    #[test]
    fn alloc_classes_alloc_free_reuse_and_count() {
        let p = SizeClassPool::with_step(8, 64, 8).unwrap();
        assert_eq!(p.block_bytes(1), 8);
        assert_eq!(p.block_bytes(25), 32);
        let mut blocks = Vec::new();
        for size in [1usize, 8, 9, 24, 64, 65, 200] {
            let b = p.try_alloc(size).unwrap();
            assert_eq!(b.as_ptr() as usize % 8, 0);
            let bb = p.block_bytes(size);
            assert_eq!(b.as_ptr() as usize % class_align(bb, 8).min(64), 0);
            // SAFETY: the block has at least `size` writable bytes.
            unsafe { b.as_ptr().write_bytes(size as u8, size) };
            blocks.push((b, size));
        }
        for &(b, size) in &blocks {
            // SAFETY: written above, still live.
            let got = unsafe { std::slice::from_raw_parts(b.as_ptr(), size) };
            assert!(got.iter().all(|&x| x == size as u8));
        }
        assert_eq!(p.large_bytes(), 65 + 200);
        assert_eq!(p.live_bytes(), 8 + 8 + 16 + 24 + 64 + 65 + 200);
        assert!(p.bytes() >= p.live_bytes());
        for (b, size) in blocks {
            // SAFETY: allocated above with this size, not used afterwards.
            unsafe { p.free(b, size) };
        }
        assert_eq!(p.live_bytes(), 0);
        assert_eq!(p.large_bytes(), 0);
    }

    #[test]
    fn alloc_classes_cache_line_alignment() {
        let p = SizeClassPool::new(&[32, 64, 128, 192], 8).unwrap();
        for (size, align) in [(32, 32), (64, 64), (128, 64), (192, 64)] {
            let b = p.try_alloc(size).unwrap();
            assert_eq!(b.as_ptr() as usize % align, 0, "class {size}");
            // SAFETY: allocated above with this size, not used afterwards.
            unsafe { p.free(b, size) };
        }
    }

    #[test]
    fn alloc_classes_invalid_parameters() {
        assert_eq!(
            SizeClassPool::new(&[16], 3).unwrap_err(),
            SlabError::InvalidAlign { align: 3 }
        );
        for bad in [&[][..], &[16, 16], &[32, 16], &[12], &[0, 8]] {
            assert_eq!(
                SizeClassPool::new(bad, 8).unwrap_err(),
                SlabError::InvalidClasses,
                "{bad:?}"
            );
        }
        assert!(matches!(
            SizeClassPool::new(&[8, 1 << 30], 8).unwrap_err(),
            SlabError::ObjectTooLarge { .. }
        ));
        assert_eq!(
            SizeClassPool::with_step(0, 64, 8).unwrap_err(),
            SlabError::InvalidClasses
        );
    }
}
