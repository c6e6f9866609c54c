//! How figures are written in a report: file-name-safe stems, key counts (`10M`, `100K`),
//! optional numbers (`n/a`) and latency triples.

/// `s` with every character but ASCII letters, digits, `-` and `.` replaced by `_`.
pub(super) fn file_safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A key count as `10M`, `100K` or plainly.
pub(super) fn keys_label(k: u64) -> String {
    if k >= 1_000_000 && k.is_multiple_of(1_000_000) {
        format!("{}M", k / 1_000_000)
    } else if k >= 1000 && k.is_multiple_of(1000) {
        format!("{}K", k / 1000)
    } else {
        k.to_string()
    }
}

/// `v` with `prec` decimals, or `n/a`.
pub(super) fn opt(v: Option<f64>, prec: usize) -> String {
    v.map_or("n/a".into(), |x| format!("{x:.prec$}"))
}

/// `p50/p99/p999` of a latency triple, or `n/a`.
pub(super) fn pcts(p: Option<(u64, u64, u64)>) -> String {
    p.map_or("n/a".into(), |(a, b, c)| format!("{a}/{b}/{c}"))
}
