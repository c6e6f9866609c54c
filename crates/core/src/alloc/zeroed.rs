//! [`ZeroedArray`]: a fixed-length zeroed `[T]` that lives on the heap while small and in a
//! huge-page [`HugeRegion`] from 2 MiB on.

use std::alloc::Layout;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use super::region::{HUGE_PAGE_SIZE, HugeRegion, Zeroable};
use crate::api::Error;

/// Where the memory of a [`ZeroedArray`] comes from.
#[derive(Debug)]
enum Backing {
    /// `std::alloc::alloc_zeroed` with this layout (nothing allocated when its size is 0).
    Heap(Layout),
    /// A huge-page region.
    Huge(HugeRegion),
}

/// A fixed-length, zero-initialized array of `T`: a plain heap block below
/// [`HUGE_PAGE_SIZE`] bytes, a [`HugeRegion`] (2 MiB-aligned, huge-page-advised) from there
/// on, and always a heap block under Miri (whose 2 MiB allocations are slow to check).
///
/// For tables that start small and grow by replacement (a hash table's slot array, an
/// array of items placed by hash): small tables do not round up to 2 MiB, large ones get
/// huge pages (each random read of a large table can otherwise cost a TLB miss; see the
/// [module docs](super#huge-pages)).
///
/// Dereferences to `[T]`. [`as_ptr`](Self::as_ptr) gives a raw pointer to the first element
/// with the provenance of the whole allocation, for owners that hand out element addresses
/// which must stay usable while other elements are written (the slice methods would retag
/// them under Miri's aliasing model). Elements start as all-zero bytes, a valid `T` by
/// [`Zeroable`], and are dropped in place when the array is dropped.
pub struct ZeroedArray<T: Zeroable> {
    /// First element; aligned and dangling when nothing is allocated.
    ptr: NonNull<T>,
    len: usize,
    mem: Backing,
    _owns: PhantomData<T>,
}

// SAFETY: the array owns its elements like a `Box<[T]>`: sending it sends the `T`s.
unsafe impl<T: Zeroable + Send> Send for ZeroedArray<T> {}
// SAFETY: `&ZeroedArray<T>` gives `&[T]` (shareable when `T: Sync`) and a raw pointer, whose
// every use is an unsafe operation the caller synchronizes.
unsafe impl<T: Zeroable + Sync> Sync for ZeroedArray<T> {}

impl<T: Zeroable> ZeroedArray<T> {
    const ALIGN_OK: () = assert!(
        align_of::<T>() <= HUGE_PAGE_SIZE,
        "ZeroedArray element alignment exceeds 2 MiB"
    );

    /// An array of `len` zeroed elements. Fails with [`Error::OutOfMemory`] when the size
    /// overflows or the memory cannot be had.
    pub fn new(len: usize) -> Result<Self, Error> {
        let () = Self::ALIGN_OK;
        let layout = Layout::array::<T>(len).map_err(|_| Error::OutOfMemory)?;
        let (ptr, mem) = if layout.size() >= HUGE_PAGE_SIZE && !cfg!(miri) {
            let r = HugeRegion::new(layout.size())?;
            // The region is 2 MiB-aligned, hence aligned for `T` (`ALIGN_OK`).
            let p = NonNull::new(r.as_ptr().cast::<T>()).ok_or(Error::OutOfMemory)?;
            (p, Backing::Huge(r))
        } else if layout.size() == 0 {
            (NonNull::dangling(), Backing::Heap(layout))
        } else if super::fail_here() {
            return Err(Error::OutOfMemory);
        } else {
            // SAFETY: the layout has a non-zero size.
            let p = unsafe { std::alloc::alloc_zeroed(layout) };
            let p = NonNull::new(p.cast::<T>()).ok_or(Error::OutOfMemory)?;
            (p, Backing::Heap(layout))
        };
        Ok(ZeroedArray {
            ptr,
            len,
            mem,
            _owns: PhantomData,
        })
    }

    /// An array of `len` elements in `region`, which holds at least `len * size_of::<T>()`
    /// zeroed bytes (the constructor of [`HugeArray`](super::HugeArray), which is always
    /// huge).
    pub(super) fn in_region(region: HugeRegion, len: usize) -> Result<Self, Error> {
        let () = Self::ALIGN_OK;
        let bytes = len.checked_mul(size_of::<T>()).ok_or(Error::OutOfMemory)?;
        if region.len() < bytes {
            return Err(Error::OutOfMemory);
        }
        // The region is 2 MiB-aligned (dangling but aligned when empty), hence aligned for
        // `T` (`ALIGN_OK`).
        let ptr = NonNull::new(region.as_ptr().cast::<T>()).ok_or(Error::OutOfMemory)?;
        Ok(ZeroedArray {
            ptr,
            len,
            mem: Backing::Huge(region),
            _owns: PhantomData,
        })
    }

    /// [`HugeRegion::populate`] of the bytes of elements `range` (clamped to the length):
    /// `Ok(false)` when the OS offers no populate, or the array is a heap block.
    pub(super) fn populate(&self, range: std::ops::Range<usize>) -> Result<bool, Error> {
        let end = range.end.min(self.len);
        let start = range.start.min(end);
        match &self.mem {
            // No overflow: `end * size_of::<T>()` bytes of the array exist.
            Backing::Huge(r) => r.populate(start * size_of::<T>()..end * size_of::<T>()),
            Backing::Heap(_) => Ok(false),
        }
    }

    /// The first element, as a raw pointer valid for the whole array (see the type docs).
    #[inline]
    pub fn as_ptr(&self) -> *mut T {
        self.ptr.as_ptr()
    }

    /// Bytes reserved for the array: its size, rounded up to 2 MiB when it is huge.
    pub fn reserved_bytes(&self) -> usize {
        match &self.mem {
            Backing::Heap(l) => l.size(),
            Backing::Huge(r) => r.reserved_len(),
        }
    }

    /// Whether the array lives in a huge-page region.
    pub fn is_huge(&self) -> bool {
        matches!(self.mem, Backing::Huge(_))
    }
}

impl<T: Zeroable + Copy> ZeroedArray<T> {
    /// A copy of the array (same length and elements), or [`Error::OutOfMemory`].
    pub fn try_clone(&self) -> Result<Self, Error> {
        let c = ZeroedArray::new(self.len)?;
        // SAFETY: both arrays hold `len` elements of `T` and are distinct allocations;
        // `T: Copy`, so a bitwise copy is a valid copy.
        unsafe { std::ptr::copy_nonoverlapping(self.as_ptr(), c.as_ptr(), self.len) };
        Ok(c)
    }
}

impl<T: Zeroable> Deref for ZeroedArray<T> {
    type Target = [T];

    #[inline]
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` is aligned and valid for `len` elements (dangling only when the size
        // is 0), every element is a valid `T` (zeroed, `T: Zeroable`, or written since
        // through `&mut self`), and the memory lives as long as `self`.
        unsafe { std::slice::from_raw_parts(self.as_ptr(), self.len) }
    }
}

impl<T: Zeroable> DerefMut for ZeroedArray<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`; `&mut self` makes this the only reference to the elements.
        unsafe { std::slice::from_raw_parts_mut(self.as_ptr(), self.len) }
    }
}

impl<T: Zeroable> Drop for ZeroedArray<T> {
    fn drop(&mut self) {
        if std::mem::needs_drop::<T>() {
            let elems: *mut [T] = &mut **self;
            // SAFETY: the elements are valid `T`s owned by the array and never used again.
            unsafe { std::ptr::drop_in_place(elems) };
        }
        if let Backing::Heap(layout) = self.mem
            && layout.size() != 0
        {
            // SAFETY: allocated in `new` with this layout, freed only here.
            unsafe { std::alloc::dealloc(self.ptr.as_ptr().cast(), layout) };
        }
        // A huge region unmaps itself.
    }
}

impl<T: Zeroable + std::fmt::Debug> std::fmt::Debug for ZeroedArray<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZeroedArray")
            .field("len", &self.len)
            .field("reserved_bytes", &self.reserved_bytes())
            .field("huge", &self.is_huge())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    #[test]
    fn small_arrays_are_heap_blocks_and_start_zeroed() {
        let mut a = ZeroedArray::<u64>::new(1000).unwrap();
        assert!(!a.is_huge());
        assert_eq!(a.len(), 1000);
        assert_eq!(a.reserved_bytes(), 8000);
        assert!(a.iter().all(|&x| x == 0));
        a[999] = 7;
        let b = a.try_clone().unwrap();
        assert_eq!(b[999], 7);
        assert_ne!(a.as_ptr(), b.as_ptr());
        assert_eq!(
            a.as_ptr().wrapping_add(999).cast_const(),
            &a[999] as *const u64
        );
    }

    #[test]
    fn empty_arrays_allocate_nothing() {
        let a = ZeroedArray::<u64>::new(0).unwrap();
        assert!(a.is_empty());
        assert_eq!(a.reserved_bytes(), 0);
    }

    #[test]
    fn large_arrays_use_huge_regions_outside_miri() {
        let n = HUGE_PAGE_SIZE / 8;
        let a = ZeroedArray::<AtomicU64>::new(n).unwrap();
        assert_eq!(a.is_huge(), !cfg!(miri));
        a[n - 1].store(5, Ordering::Relaxed);
        assert_eq!(a[n - 1].load(Ordering::Relaxed), 5);
        assert!(a.reserved_bytes() >= HUGE_PAGE_SIZE);
    }

    #[test]
    fn oversized_arrays_are_an_error() {
        assert!(matches!(
            ZeroedArray::<u64>::new(usize::MAX / 4),
            Err(Error::OutOfMemory)
        ));
    }

    #[test]
    fn raw_element_pointers_survive_writes_to_other_elements() {
        let a = ZeroedArray::<u64>::new(4).unwrap();
        let (p0, p1) = (a.as_ptr(), a.as_ptr().wrapping_add(1));
        // SAFETY: both pointers are in bounds of `a`, which no reference is borrowing.
        unsafe { p0.write(1) };
        // SAFETY: as above.
        unsafe { p1.write(2) };
        // SAFETY: as above.
        let x = unsafe { p0.read() };
        // SAFETY: as above.
        let y = unsafe { p1.read() };
        assert_eq!((x, y), (1, 2));
    }
}
