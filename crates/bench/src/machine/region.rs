//! Page-size-controlled memory for the machine measurement.
//!
//! The latency test needs the same 1 GiB array once on 4 KiB pages and once on transparent
//! huge pages. Both are anonymous mappings; the 4 KiB one is marked `MADV_NOHUGEPAGE` so
//! that THP in `always` mode cannot promote it, the huge one `MADV_HUGEPAGE` (THP in
//! `madvise` mode promotes only such regions).
//!
//! TODO(alloc): when `orrery::alloc::HugeRegion` lands on main, take the huge-page array
//! from it instead of mapping here, so that the benchmark measures exactly the mechanism the
//! structures use and the project has one huge-page mechanism.

use std::ptr::NonNull;

/// An anonymous, zero-filled mapping of `len` bytes, unmapped on drop.
pub(super) struct Region {
    ptr: NonNull<u64>,
    len: usize,
}

impl Region {
    /// Maps `len` bytes (a multiple of 2 MiB) with or without huge pages.
    pub(super) fn new(len: usize, huge: bool) -> Result<Region, String> {
        // SAFETY: an anonymous private mapping with no address hint touches no existing
        // memory; the result is checked for MAP_FAILED below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(format!(
                "cannot map {} MiB for the memory test: {}",
                len >> 20,
                std::io::Error::last_os_error()
            ));
        }
        let advice = if huge {
            libc::MADV_HUGEPAGE
        } else {
            libc::MADV_NOHUGEPAGE
        };
        // SAFETY: `p..p+len` is the mapping just created; madvise only sets a hint on it.
        // Failure (e.g. a kernel without THP) leaves ordinary pages, which is reported via
        // the THP status in the machine facts.
        let _ = unsafe { libc::madvise(p, len, advice) };
        let ptr = NonNull::new(p.cast::<u64>()).ok_or("mmap returned null")?;
        Ok(Region { ptr, len })
    }

    /// The region as `u64` words.
    pub(super) fn words(&mut self) -> &mut [u64] {
        // SAFETY: the mapping is `len` bytes, readable and writable, zero-filled (valid
        // u64s), 8-byte aligned (page aligned), and borrowed mutably through `self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len / 8) }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping created in `new`; no borrow outlives `self`.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}
