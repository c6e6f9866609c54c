//! The only code that asks the OS for memory: 2 MiB-aligned zeroed mappings.
//!
//! On Unix (outside Miri) the mapping is an anonymous private `mmap`, over-mapped by one huge
//! page and trimmed to a 2 MiB-aligned start, then advised `MADV_HUGEPAGE` on Linux. Under
//! Miri (which has no `mmap`) and on other systems it is `std::alloc::alloc_zeroed` with a
//! 2 MiB-aligned layout, so the same callers run unchanged under Miri.

use std::ptr::NonNull;

use super::region::HUGE_PAGE_SIZE;
use crate::api::Error;

/// A dangling, 2 MiB-aligned pointer: the start of every empty region (valid for zero-sized
/// accesses at any alignment up to 2 MiB).
pub(super) fn dangling_huge_aligned() -> NonNull<u8> {
    // `HUGE_PAGE_SIZE` is non-zero; the pointer has no provenance and is never dereferenced
    // for a non-zero size.
    NonNull::new(std::ptr::without_provenance_mut(HUGE_PAGE_SIZE)).unwrap_or(NonNull::dangling())
}

#[cfg(all(unix, not(miri)))]
mod imp {
    use std::ptr::NonNull;

    use super::{Error, HUGE_PAGE_SIZE};

    /// Maps `len` zeroed bytes at a 2 MiB-aligned address. `len` is a non-zero multiple of
    /// `HUGE_PAGE_SIZE`, at most `isize::MAX - HUGE_PAGE_SIZE`.
    pub(in crate::alloc) fn map_huge(len: usize) -> Result<NonNull<u8>, Error> {
        debug_assert!(len != 0 && len.is_multiple_of(HUGE_PAGE_SIZE));
        // Over-map by one huge page so that a 2 MiB-aligned start exists inside the mapping.
        let over = len + HUGE_PAGE_SIZE;
        // SAFETY: a fresh anonymous private mapping at an address of the kernel's choosing;
        // it aliases nothing.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                over,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return Err(Error::OutOfMemory);
        }
        let addr = raw as usize;
        let start = (addr + HUGE_PAGE_SIZE - 1) & !(HUGE_PAGE_SIZE - 1);
        let head = start - addr;
        let tail = over - head - len;
        if head != 0 {
            // SAFETY: `[raw, raw + head)` is the unaligned front of our own fresh mapping,
            // page-aligned at both ends (mmap returns page-aligned addresses and `start` is
            // 2 MiB-aligned), and nobody uses it.
            unsafe { libc::munmap(raw, head) };
        }
        if tail != 0 {
            // SAFETY: `[start + len, raw + over)` is the back of our own fresh mapping, past
            // the part we keep, page-aligned at both ends.
            unsafe { libc::munmap(raw.cast::<u8>().wrapping_add(head + len).cast(), tail) };
        }
        let ptr = raw.cast::<u8>().wrapping_add(head);
        #[cfg(target_os = "linux")]
        {
            // Ask for transparent huge pages (THP in `madvise` mode honours only regions that
            // ask). Failure (THP disabled, old kernel) leaves ordinary 4 KiB pages: ignored.
            // SAFETY: `[ptr, ptr + len)` is our own mapping; the advice changes no contents.
            let _ = unsafe { libc::madvise(ptr.cast(), len, libc::MADV_HUGEPAGE) };
        }
        NonNull::new(ptr).ok_or(Error::OutOfMemory)
    }

    /// Unmaps a mapping made by [`map_huge`].
    ///
    /// # Safety
    ///
    /// `ptr` and `len` are exactly a live mapping returned by `map_huge(len)`, not used
    /// afterwards.
    pub(in crate::alloc) unsafe fn unmap_huge(ptr: NonNull<u8>, len: usize) {
        // SAFETY: by the caller's contract, the range is our own live mapping.
        let rc = unsafe { libc::munmap(ptr.as_ptr().cast(), len) };
        debug_assert_eq!(rc, 0, "munmap failed");
    }

    /// Maps `len` zeroed bytes (a non-zero multiple of the page size) at a page-aligned
    /// address of the kernel's choosing, without huge-page advice.
    pub(in crate::alloc) fn map_pages(len: usize) -> Result<NonNull<u8>, Error> {
        // SAFETY: a fresh anonymous private mapping at an address of the kernel's choosing;
        // it aliases nothing.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return Err(Error::OutOfMemory);
        }
        NonNull::new(raw.cast()).ok_or(Error::OutOfMemory)
    }

    /// Unmaps a mapping made by [`map_pages`].
    ///
    /// # Safety
    ///
    /// `ptr` and `len` are exactly a live mapping returned by `map_pages(len)`, not used
    /// afterwards.
    pub(in crate::alloc) unsafe fn unmap_pages(ptr: NonNull<u8>, len: usize) {
        // SAFETY: by the caller's contract, the range is our own live mapping.
        let rc = unsafe { libc::munmap(ptr.as_ptr().cast(), len) };
        debug_assert_eq!(rc, 0, "munmap failed");
    }

    /// Gives the pages of `[ptr, ptr + len)` back to the OS (`madvise(MADV_DONTNEED)`):
    /// they stop counting in the resident set, the mapping stays, and the next access to
    /// one of them finds a fresh zeroed page (a huge page that is only partly given back is
    /// split into 4 KiB pages). Returns whether the pages were given back; when not, their
    /// contents are unchanged and they stay resident.
    ///
    /// # Safety
    ///
    /// `ptr` is page-aligned, `len` a multiple of the page size, the range lies inside a
    /// live mapping of ours, and nobody accesses its bytes during the call or expects their
    /// contents afterwards (they read as zero).
    pub(in crate::alloc) unsafe fn discard(ptr: *mut u8, len: usize) -> bool {
        // SAFETY: by the caller's contract the range is ours and its contents are dead;
        // MADV_DONTNEED on a private anonymous mapping only drops pages (later reads see
        // zeros), it never invalidates the mapping.
        unsafe { libc::madvise(ptr.cast(), len, libc::MADV_DONTNEED) == 0 }
    }

    /// Advises the kernel not to back `[ptr, ptr + len)` with transparent huge pages any
    /// more (`madvise(MADV_NOHUGEPAGE)`): `khugepaged` no longer collapses its 4 KiB pages
    /// into a huge page — which would make every page of the 2 MiB resident again, the
    /// ones given back with them. Failure leaves the advice as it was: ignored.
    /// `ptr` is page-aligned and the range lies inside a live mapping of ours.
    pub(in crate::alloc) fn no_huge(ptr: *mut u8, len: usize) {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: the range is inside our own live mapping (caller's contract); the
            // advice changes no contents and no mapping.
            let _ = unsafe { libc::madvise(ptr.cast(), len, libc::MADV_NOHUGEPAGE) };
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (ptr, len);
    }

    /// Makes the pages of `[ptr, ptr + len)` resident and writable, as if each had been
    /// written (`madvise(MADV_POPULATE_WRITE)`, Linux 5.14+), without changing any byte.
    /// `ptr` is page-aligned and the range lies inside a live mapping of ours.
    ///
    /// Returns `Ok(true)` when the kernel populated the range, `Ok(false)` when it cannot
    /// (older kernel or another OS: the caller may touch the pages instead), and
    /// [`Error::OutOfMemory`] when it ran out of memory doing so.
    pub(in crate::alloc) fn populate_write(ptr: *mut u8, len: usize) -> Result<bool, Error> {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: the range is inside our own live mapping (caller's contract); the
            // advice only faults pages in, it changes no contents and no mapping, so
            // concurrent accesses to the range by other threads are unaffected.
            let rc = unsafe { libc::madvise(ptr.cast(), len, libc::MADV_POPULATE_WRITE) };
            if rc == 0 {
                return Ok(true);
            }
            match std::io::Error::last_os_error().raw_os_error() {
                // The kernel does not know the advice.
                Some(libc::EINVAL) => Ok(false),
                Some(libc::ENOMEM | libc::EFAULT) => Err(Error::OutOfMemory),
                // EINTR (a fatal signal pending) and anything else: not populated, the
                // pages fault on first use as usual.
                _ => Ok(false),
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (ptr, len);
            Ok(false)
        }
    }
}

#[cfg(not(all(unix, not(miri))))]
mod imp {
    use std::alloc::Layout;
    use std::ptr::NonNull;

    use super::{Error, HUGE_PAGE_SIZE};

    fn layout(len: usize) -> Result<Layout, Error> {
        Layout::from_size_align(len, HUGE_PAGE_SIZE).map_err(|_| Error::OutOfMemory)
    }

    /// Allocates `len` zeroed bytes at a 2 MiB-aligned address from the global allocator.
    /// `len` is a non-zero multiple of `HUGE_PAGE_SIZE`.
    pub(in crate::alloc) fn map_huge(len: usize) -> Result<NonNull<u8>, Error> {
        let layout = layout(len)?;
        // SAFETY: `layout` has a non-zero size (`len != 0`, checked by the caller).
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        NonNull::new(ptr).ok_or(Error::OutOfMemory)
    }

    /// Allocates `len` zeroed bytes (a non-zero multiple of the page size), page-aligned,
    /// from the global allocator.
    pub(in crate::alloc) fn map_pages(len: usize) -> Result<NonNull<u8>, Error> {
        let layout = Layout::from_size_align(len, super::super::region::PAGE_SIZE)
            .map_err(|_| Error::OutOfMemory)?;
        // SAFETY: `layout` has a non-zero size (`len != 0`, checked by the caller).
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        NonNull::new(ptr).ok_or(Error::OutOfMemory)
    }

    /// Frees an allocation made by [`map_pages`].
    ///
    /// # Safety
    ///
    /// `ptr` and `len` are exactly a live allocation returned by `map_pages(len)`, not used
    /// afterwards.
    pub(in crate::alloc) unsafe fn unmap_pages(ptr: NonNull<u8>, len: usize) {
        let Ok(layout) = Layout::from_size_align(len, super::super::region::PAGE_SIZE) else {
            return;
        };
        // SAFETY: by the caller's contract, `ptr` was allocated with this same layout.
        unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) };
    }

    /// Frees an allocation made by [`map_huge`].
    ///
    /// # Safety
    ///
    /// `ptr` and `len` are exactly a live allocation returned by `map_huge(len)`, not used
    /// afterwards.
    pub(in crate::alloc) unsafe fn unmap_huge(ptr: NonNull<u8>, len: usize) {
        let Ok(layout) = layout(len) else { return };
        // SAFETY: by the caller's contract, `ptr` was allocated with this same layout.
        unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) };
    }

    /// Without `madvise` (Miri, non-Unix) the pages cannot be given back; they are zeroed
    /// instead, which is what a read of a discarded page returns, so that the callers'
    /// logic (and its tests under Miri) runs the same. Returns `false`: nothing was given
    /// back.
    ///
    /// # Safety
    ///
    /// As the Unix `discard`: the range is inside a live allocation of ours and its bytes
    /// are not accessed by anyone else during the call.
    pub(in crate::alloc) unsafe fn discard(ptr: *mut u8, len: usize) -> bool {
        // SAFETY: the range is ours and unused (contract).
        unsafe { ptr.write_bytes(0, len) };
        false
    }

    /// No huge pages here (Miri, non-Unix): nothing to advise.
    pub(in crate::alloc) fn no_huge(ptr: *mut u8, len: usize) {
        let _ = (ptr, len);
    }

    /// No way to populate pages here (Miri, non-Unix): the caller touches them instead.
    pub(in crate::alloc) fn populate_write(ptr: *mut u8, len: usize) -> Result<bool, Error> {
        let _ = (ptr, len);
        Ok(false)
    }
}

pub(super) use imp::{
    discard, map_huge, map_pages, no_huge, populate_write, unmap_huge, unmap_pages,
};
