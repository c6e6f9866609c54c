//! What the Mercury examples share: a key generator and CPU-time clocks (quick feedback
//! tools; `orrery-bench` is the benchmark).

#![allow(dead_code, unused_imports)]

/// SplitMix64 step: the examples' key source.
pub(crate) fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// CPU seconds used by this process so far. On a shared machine CPU time compares work
/// fairly where wall time does not.
pub(crate) use orrery_core::testing::clock::process_cpu_secs as cpu_secs;
/// CPU seconds used by the calling thread so far.
pub(crate) use orrery_core::testing::clock::thread_cpu_secs;
