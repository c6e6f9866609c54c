//! Sampled operation latency (HDR histogram).
//!
//! Timing every operation would add two clock reads (tens of ns) to each, so one operation
//! in `every` is timed by itself with `Instant::now()` on both sides and recorded in an HDR
//! histogram (3 significant digits). The figures are therefore "percentiles of the
//! single-operation latency of a uniform 1-in-N sample, clock overhead included"; the
//! overhead of one timing pair is measured and reported next to them so it can be read
//! against the numbers. A scan counts as one operation.

use std::time::Instant;

use hdrhistogram::Histogram;

/// A latency histogram in nanoseconds (1 ns .. 100 s).
pub(crate) fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("constant bounds are valid")
}

/// Nanoseconds one `Instant::now()` pair costs (median of many).
pub(crate) fn timer_overhead_ns() -> u64 {
    let mut samples: Vec<u64> = (0..1001)
        .map(|_| {
            let t = Instant::now();
            let u = Instant::now();
            u.duration_since(t).as_nanos() as u64
        })
        .collect();
    samples.sort_unstable();
    samples[samples.len() / 2]
}

/// p50, p99, p999 in ns (`None` when nothing was sampled).
pub(crate) fn percentiles(h: &Histogram<u64>) -> Option<(u64, u64, u64)> {
    if h.is_empty() {
        return None;
    }
    Some((
        h.value_at_quantile(0.5),
        h.value_at_quantile(0.99),
        h.value_at_quantile(0.999),
    ))
}
