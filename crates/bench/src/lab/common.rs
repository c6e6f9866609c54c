//! What several lab programs share: a SplitMix64 key stream and the CPU-time clocks.

/// SplitMix64 step: returns the next output of the stream whose state is `x` and advances
/// it (the stream the structures' old quick examples used, so their key sets are the same).
#[inline]
pub(crate) fn splitmix(x: &mut u64) -> u64 {
    let z = crate::rng::mix64(*x);
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z
}

/// CPU seconds used by this process so far (on a shared machine CPU time compares work
/// fairly where wall time does not).
pub(crate) use orrery::testing::clock::process_cpu_secs as cpu_secs;
/// CPU seconds used by the calling thread so far.
pub(crate) use orrery::testing::clock::thread_cpu_secs;

#[cfg(test)]
mod tests {
    #[test]
    fn splitmix_is_the_reference_stream() {
        // SplitMix64 as published: x += golden; mix(x).
        let mut x = 7u64;
        let mut y = 7u64;
        for _ in 0..4 {
            y = y.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = y;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            assert_eq!(super::splitmix(&mut x), z ^ (z >> 31));
        }
    }
}
