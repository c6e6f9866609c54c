//! The test arrays of the machine measurement that `orrery::alloc` does not provide.
//!
//! The transparent-huge-page array comes from `orrery::alloc::HugeArray` (the mechanism the
//! structures use). Two others are mapped here:
//!
//! * [`Pages::small`]: 4 KiB pages guaranteed *not* to get transparent huge pages even when
//!   THP runs in `always` mode (which a `Vec` cannot promise): an anonymous mapping marked
//!   `MADV_NOHUGEPAGE`.
//! * [`Pages::giant`]: 1 GiB hugetlb pages (`MAP_HUGETLB | MAP_HUGE_1GB`). These exist only
//!   if the administrator reserved them (`/sys/kernel/mm/hugepages/hugepages-1048576kB`);
//!   otherwise the mapping fails and the caller reports the size as unavailable.
//!
//! [`anon_huge_bytes`] reads back from `/proc/self/smaps` how much of a mapping the kernel
//! really backs with transparent huge pages (`AnonHugePages`), so a "huge page" figure can
//! be checked rather than assumed.

use std::ptr::NonNull;

/// Size of a 1 GiB page.
pub(super) const GIANT_PAGE: usize = 1 << 30;

/// An anonymous, zero-filled mapping, unmapped on drop.
pub(super) struct Pages {
    ptr: NonNull<u64>,
    /// Bytes usable (asked for).
    len: usize,
    /// Bytes mapped (rounded up to the page size).
    mapped: usize,
}

impl Pages {
    /// Maps `len` bytes (a multiple of 8) on 4 KiB pages.
    pub(super) fn small(len: usize) -> Result<Pages, String> {
        let p = Self::map(len, len, 0)?;
        // SAFETY: `p..p+len` is the mapping just created; madvise only sets a hint on it.
        // Where THP does not exist the call fails harmlessly: pages are 4 KiB anyway.
        let _ = unsafe { libc::madvise(p.ptr.as_ptr().cast(), len, libc::MADV_NOHUGEPAGE) };
        Ok(p)
    }

    /// Maps `len` bytes (a multiple of 8) on reserved 1 GiB hugetlb pages.
    #[cfg(target_os = "linux")]
    pub(super) fn giant(len: usize) -> Result<Pages, String> {
        let mapped = len.div_ceil(GIANT_PAGE) * GIANT_PAGE;
        Self::map(len, mapped, libc::MAP_HUGETLB | libc::MAP_HUGE_1GB)
    }

    /// 1 GiB pages exist only on Linux.
    #[cfg(not(target_os = "linux"))]
    pub(super) fn giant(_len: usize) -> Result<Pages, String> {
        Err("1 GiB pages need Linux hugetlb".into())
    }

    fn map(len: usize, mapped: usize, extra_flags: libc::c_int) -> Result<Pages, String> {
        // SAFETY: an anonymous private mapping with no address hint touches no existing
        // memory; the result is checked for MAP_FAILED below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                mapped,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | extra_flags,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(format!(
                "cannot map {} MiB for the memory test: {}",
                mapped >> 20,
                std::io::Error::last_os_error()
            ));
        }
        let ptr = NonNull::new(p.cast::<u64>()).ok_or("mmap returned null")?;
        Ok(Pages { ptr, len, mapped })
    }

    /// The region as `u64` words.
    pub(super) fn words(&mut self) -> &mut [u64] {
        // SAFETY: the mapping is at least `len` bytes, readable and writable, zero-filled
        // (valid u64s), page aligned, and borrowed mutably through `self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len / 8) }
    }
}

impl Drop for Pages {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping created in `map`; no borrow outlives `self`.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.mapped) };
    }
}

/// Bytes of `[addr, addr + len)` that `/proc/self/smaps` reports as `AnonHugePages`
/// (summed over the mappings that overlap the range, each counted whole), or `None` where
/// smaps is unavailable.
pub(super) fn anon_huge_bytes(addr: usize, len: usize) -> Option<usize> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    Some(anon_huge_in(&smaps, addr, len))
}

/// The parser behind [`anon_huge_bytes`], on the text of an smaps file.
fn anon_huge_in(smaps: &str, addr: usize, len: usize) -> usize {
    let mut total = 0usize;
    let mut inside = false;
    for line in smaps.lines() {
        let mut words = line.split_whitespace();
        let Some(first) = words.next() else { continue };
        if let Some((lo, hi)) = first.split_once('-')
            && let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
        {
            inside = lo < addr + len && addr < hi;
        } else if inside && first == "AnonHugePages:" {
            let kib: usize = words.next().and_then(|v| v.parse().ok()).unwrap_or(0);
            total += kib << 10;
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smaps_parser_counts_only_overlapping_mappings() {
        let smaps = "\
7f0000000000-7f0000400000 rw-p 00000000 00:00 0
Size:               4096 kB
AnonHugePages:      2048 kB
7f0000400000-7f0000800000 rw-p 00000000 00:00 0
Size:               4096 kB
AnonHugePages:      4096 kB
7f0000800000-7f0000a00000 rw-p 00000000 00:00 0 [heap]
AnonHugePages:      1024 kB
";
        let base = 0x7f00_0000_0000usize;
        assert_eq!(anon_huge_in(smaps, base, 0x40_0000), 2048 << 10);
        assert_eq!(anon_huge_in(smaps, base + 0x40_0000, 0x10), 4096 << 10);
        assert_eq!(anon_huge_in(smaps, base + 0x3f_f000, 0x2000), 6144 << 10);
        assert_eq!(anon_huge_in(smaps, base + 0xa0_0000, 0x1000), 0);
    }

    #[test]
    fn small_pages_are_zeroed_and_writable() {
        let mut p = Pages::small(1 << 20).unwrap();
        let w = p.words();
        assert_eq!(w.len(), (1 << 20) / 8);
        assert!(w.iter().all(|&x| x == 0));
        w[w.len() - 1] = 7;
        assert_eq!(p.words()[(1 << 20) / 8 - 1], 7);
    }
}
