//! [`PageRegion`]: zeroed anonymous memory in whole 4 KiB pages, unmapped when dropped.
//!
//! For blocks too large to leave to the global allocator (which may keep freed memory for
//! itself: glibc's `malloc` returns the middle of its heap to the OS only when asked) and
//! too small to round up to a 2 MiB [`HugeRegion`](super::HugeRegion): dropping one gives
//! its pages back to the OS at once.

use std::ops::Range;
use std::ptr::NonNull;

use super::os;
use super::region::PAGE_SIZE;
use crate::api::Error;

/// Zeroed, page-aligned anonymous memory of whole pages, unmapped on `Drop`.
///
/// Like [`HugeRegion`](super::HugeRegion) it is the owner of raw bytes: the code that
/// accesses them through [`as_ptr`](Self::as_ptr) synchronizes its accesses.
#[derive(Debug)]
pub struct PageRegion {
    /// Start of the mapping (page-aligned).
    ptr: NonNull<u8>,
    /// Length mapped: the length asked for rounded up to whole pages (at least one).
    reserved: usize,
}

// SAFETY: a `PageRegion` owns its mapping exclusively (like a `Box<[u8]>`); sending it to
// another thread moves that ownership, and `munmap` may be called from any thread.
unsafe impl Send for PageRegion {}
// SAFETY: `&PageRegion` only exposes the address and length; accesses through the raw
// pointer are the caller's to synchronize.
unsafe impl Sync for PageRegion {}

impl PageRegion {
    /// Maps `len` bytes rounded up to whole pages (at least one), zeroed.
    ///
    /// Fails with [`Error::OutOfMemory`] when the length overflows or the OS refuses.
    pub fn new(len: usize) -> Result<PageRegion, Error> {
        let reserved = len
            .max(1)
            .checked_next_multiple_of(PAGE_SIZE)
            .filter(|&r| r <= isize::MAX as usize)
            .ok_or(Error::OutOfMemory)?;
        if super::fail_here() {
            return Err(Error::OutOfMemory);
        }
        Ok(PageRegion {
            ptr: os::map_pages(reserved)?,
            reserved,
        })
    }

    /// Start of the region: page-aligned, valid for reads and writes of
    /// [`reserved_len`](Self::reserved_len) bytes while the region lives.
    #[inline]
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Bytes mapped (whole pages).
    #[inline]
    pub fn reserved_len(&self) -> usize {
        self.reserved
    }

    /// Gives the pages of bytes `range` (page-aligned, inside the region) back to the OS,
    /// as [`HugeRegion::discard`](super::HugeRegion::discard) does: they read as zero
    /// afterwards. Returns whether the OS took them.
    ///
    /// # Safety
    ///
    /// Nobody accesses the bytes of `range` during the call, and nobody relies on their
    /// contents afterwards.
    ///
    /// # Panics
    ///
    /// If the range is not page-aligned or not inside the region.
    pub unsafe fn discard(&self, range: Range<usize>) -> bool {
        assert!(
            range.start.is_multiple_of(PAGE_SIZE)
                && range.end.is_multiple_of(PAGE_SIZE)
                && range.start <= range.end
                && range.end <= self.reserved,
            "discard of {range:?}: not whole pages inside a {}-byte region",
            self.reserved
        );
        if range.is_empty() {
            return true;
        }
        // SAFETY: page-aligned and inside our live mapping (checked above); nobody accesses
        // the bytes meanwhile or needs them afterwards (contract).
        unsafe { os::discard(self.ptr.as_ptr().wrapping_add(range.start), range.len()) }
    }
}

impl Drop for PageRegion {
    fn drop(&mut self) {
        // SAFETY: `ptr` and `reserved` describe the live mapping made by `os::map_pages` in
        // `new`, unmapped only here, once.
        unsafe { os::unmap_pages(self.ptr, self.reserved) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alloc_pages_zeroed_writable_discarded() {
        let r = PageRegion::new(3 * PAGE_SIZE + 1).unwrap();
        assert_eq!(r.reserved_len(), 4 * PAGE_SIZE);
        assert_eq!(r.as_ptr() as usize % PAGE_SIZE, 0);
        let byte = |i: usize| {
            // SAFETY: `i` is inside the live region, used by this thread only.
            unsafe { r.as_ptr().wrapping_add(i).read() }
        };
        assert_eq!(byte(5), 0);
        // SAFETY: the whole region is ours, used by this thread only.
        unsafe { r.as_ptr().write_bytes(7, 4 * PAGE_SIZE) };
        // SAFETY: nobody else uses the region.
        unsafe { r.discard(PAGE_SIZE..3 * PAGE_SIZE) };
        assert_eq!(
            (byte(0), byte(2 * PAGE_SIZE), byte(3 * PAGE_SIZE)),
            (7, 0, 7)
        );
        assert_eq!(PageRegion::new(0).unwrap().reserved_len(), PAGE_SIZE);
        assert!(PageRegion::new(usize::MAX).is_err());
    }
}
