//! [`prefetch`]: the one software prefetch hint every structure uses.
//!
//! Index structures spend most of a lookup waiting for DRAM; issuing the read of a line
//! the lookup (or the next key of a batch) will need before it is needed overlaps those
//! waits (see `DESIGN.md`, "The machine, measured"). The hint is a plain x86-64 SSE
//! instruction, part of the baseline, that never faults and changes no program state; on
//! other targets, and under Miri (which does not model it), it compiles to nothing.

/// Hints the CPU to fetch the cache line holding `p` into all cache levels (`prefetcht0`).
/// Any address is fine, even a dangling or null one: the hint never faults and never
/// changes what the program computes.
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: SSE is part of the x86-64 baseline; a prefetch is a hint that never faults
        // and has no effect on program semantics, whatever the address.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast()) };
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    #[test]
    fn prefetch_any_address() {
        let x = [1u64; 16];
        super::prefetch(x.as_ptr());
        super::prefetch(std::ptr::null::<u8>());
        super::prefetch(std::ptr::dangling::<u32>());
        assert_eq!(x[3], 1);
    }
}
