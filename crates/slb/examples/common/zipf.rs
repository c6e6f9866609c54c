//! What the SLB examples share: the Zipfian generator of `orrery_core::testing::zipf` (the
//! one `orrery-bench` uses) and the examples' uniform source.

#![allow(dead_code, unused_imports)]

pub(crate) use orrery_core::testing::zipf::{Zipf, fnv64};

/// Xorshift64 step: the examples' uniform source.
pub(crate) fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}
