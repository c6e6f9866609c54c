//! What the Mercury examples share: a key generator and CPU-time clocks (quick feedback
//! tools; `orrery-bench` is the benchmark).

#![allow(dead_code)]

/// SplitMix64 step: the examples' key source.
pub(crate) fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// User + system CPU seconds from a `/proc/.../stat` file (10 ms ticks; 0 where
/// unavailable). Fields 14 and 15 of the man page (utime, stime), counted from the state
/// field (3).
fn stat_cpu_secs(path: &str) -> f64 {
    let stat = std::fs::read_to_string(path).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

/// CPU seconds used by this process so far. On a shared machine CPU time compares work
/// fairly where wall time does not.
pub(crate) fn cpu_secs() -> f64 {
    stat_cpu_secs("/proc/self/stat")
}

/// CPU seconds used by the calling thread so far.
pub(crate) fn thread_cpu_secs() -> f64 {
    stat_cpu_secs("/proc/thread-self/stat")
}
