//! The 4 KiB-page array of the machine measurement.
//!
//! The huge-page array comes from `orrery::alloc::HugeArray` (the mechanism the structures
//! use). Its 4 KiB counterpart must be guaranteed *not* to get transparent huge pages even
//! when THP runs in `always` mode, which a `Vec` cannot promise, so it is an anonymous
//! mapping marked `MADV_NOHUGEPAGE`.

use std::ptr::NonNull;

/// An anonymous, zero-filled mapping of `len` bytes on 4 KiB pages, unmapped on drop.
pub(super) struct SmallPages {
    ptr: NonNull<u64>,
    len: usize,
}

impl SmallPages {
    /// Maps `len` bytes (a multiple of 8).
    pub(super) fn new(len: usize) -> Result<SmallPages, String> {
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
        // SAFETY: `p..p+len` is the mapping just created; madvise only sets a hint on it.
        // Where THP does not exist the call fails harmlessly: pages are 4 KiB anyway.
        let _ = unsafe { libc::madvise(p, len, libc::MADV_NOHUGEPAGE) };
        let ptr = NonNull::new(p.cast::<u64>()).ok_or("mmap returned null")?;
        Ok(SmallPages { ptr, len })
    }

    /// The region as `u64` words.
    pub(super) fn words(&mut self) -> &mut [u64] {
        // SAFETY: the mapping is `len` bytes, readable and writable, zero-filled (valid
        // u64s), page aligned, and borrowed mutably through `self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len / 8) }
    }
}

impl Drop for SmallPages {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping created in `new`; no borrow outlives `self`.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}
