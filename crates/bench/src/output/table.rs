//! The aligned table for people, printed row by row as results complete.

use super::Record;

/// Column headers and widths.
const COLS: &[(&str, usize)] = &[
    ("index", 17),
    ("dataset", 9),
    ("wl", 10),
    ("dist", 11),
    ("thr", 3),
    ("Mops/s", 8),
    ("spread", 6),
    ("cpuMops", 8),
    ("cpu ns", 7),
    ("DRAM/op", 7),
    ("B/key", 7),
    ("rssB/k", 7),
    ("memB/k", 7),
    ("p50", 7),
    ("p99", 7),
    ("p999", 7),
    ("load", 6),
];

fn line(cells: &[String]) -> String {
    let mut out = String::new();
    for (i, (c, (_, w))) in cells.iter().zip(COLS).enumerate() {
        if i > 0 {
            out.push_str("  ");
        }
        // Text columns left-aligned, numbers right-aligned.
        if i < 4 {
            out.push_str(&format!("{c:<w$}"));
        } else {
            out.push_str(&format!("{c:>w$}"));
        }
    }
    out.trim_end().to_string()
}

/// The header line.
pub(crate) fn header() -> String {
    let cells: Vec<String> = COLS.iter().map(|(h, _)| h.to_string()).collect();
    line(&cells)
}

fn opt(v: Option<f64>, prec: usize) -> String {
    v.map_or("n/a".into(), |x| format!("{x:.prec$}"))
}

/// Spread of the repeats: (max − min) / median, in percent.
pub(crate) fn spread(r: &Record) -> Option<f64> {
    if r.mops_repeats.len() < 2 || r.mops <= 0.0 {
        return None;
    }
    let max = r.mops_repeats.iter().cloned().fold(f64::MIN, f64::max);
    let min = r.mops_repeats.iter().cloned().fold(f64::MAX, f64::min);
    Some((max - min) / r.mops * 100.0)
}

/// One row.
pub(crate) fn row(r: &Record) -> String {
    let cells = vec![
        r.index.clone(),
        r.dataset.clone(),
        r.workload.clone(),
        r.dist.clone(),
        r.threads.to_string(),
        format!("{:.3}", r.mops),
        spread(r).map_or("-".into(), |s| format!("{s:.0}%")),
        format!("{:.3}", r.mops_cpu),
        format!("{:.0}", r.cpu_ns_per_op),
        opt(r.dram_rt_per_op, 2),
        format!("{:.1}", r.bytes_per_key),
        opt(r.rss_bytes_per_key, 1),
        opt(r.mem_usage_bytes_per_key, 1),
        r.p50_ns.map_or("n/a".into(), |v| v.to_string()),
        r.p99_ns.map_or("n/a".into(), |v| v.to_string()),
        r.p999_ns.map_or("n/a".into(), |v| v.to_string()),
        if r.workload == "load" {
            "-".into()
        } else {
            format!("{:.2}", r.load_mops)
        },
    ];
    line(&cells)
}

/// What the columns mean.
pub(crate) fn legend(latency: &str, lat_4k_ns: Option<f64>) -> String {
    format!(
        "Mops/s: wall-clock throughput, median of the repeats (spread = (max-min)/median).\n\
         cpuMops: the same repeat's sum over threads of ops per thread-CPU-second (immune to other \
         work on the machine);\n  cpu ns: thread-CPU ns per op. DRAM/op: cpu ns over one \
         dependent DRAM read{}.\n\
         B/key: live heap bytes added by the load per key (counting global allocator: memory a \
         structure maps itself,\n  e.g. orrery::alloc huge-page regions, is not in it but is in \
         RSS and memB/k); rssB/k: RSS growth per key;\n  memB/k: the index's own \
         memory_usage() per key (n/a: it does not report).\n\
         p50/p99/p999: {latency}.\n\
         load: Mops/s of the load that prepared the index.",
        lat_4k_ns.map_or(String::new(), |l| format!(" ({l:.0} ns, 4 KiB pages)"))
    )
}

/// The expansion split of a result (indexes with a probe), as one indented line.
pub(crate) fn split_line(r: &Record) -> Option<String> {
    let s = r.split.as_ref()?;
    let f = |v: Option<f64>| v.map_or("n/a".into(), |x| format!("{x:.3}"));
    let p = |v: Option<(u64, u64, u64)>| v.map_or("n/a".into(), |(a, b, c)| format!("{a}/{b}/{c}"));
    let ratio = s
        .steady_mops
        .zip(s.expanding_mops)
        .map_or("n/a".into(), |(a, b)| format!("{:.2}", b / a));
    let cpu_ratio = s
        .steady_cpu_mops
        .zip(s.expanding_cpu_mops)
        .map_or("n/a".into(), |(a, b)| format!("{:.2}", b / a));
    Some(format!(
        "    {} while expanding: {} Mops/s vs steady {} Mops/s (ratio {ratio}; expanding {:.0}% of the time); per thread-CPU second {} vs {} (ratio {cpu_ratio}); latency p50/p99/p999 ns while expanding {} vs steady {}",
        r.index,
        f(s.expanding_mops),
        f(s.steady_mops),
        100.0 * s.expanding_share,
        f(s.expanding_cpu_mops),
        f(s.steady_cpu_mops),
        p(s.expanding_latency),
        p(s.steady_latency),
    ))
}

/// One stat of `Record::index_stats` for people: a count with its per-key rate, or bytes
/// (names ending in `_bytes`) per key and in MiB.
pub(crate) fn stat(name: &str, v: f64, keys: u64) -> String {
    let per_key = v / keys.max(1) as f64;
    if name.ends_with("_bytes") {
        format!("{per_key:.2} B/key ({:.1} MiB)", v / (1 << 20) as f64)
    } else {
        format!("{v:.0} ({per_key:.4}/key)")
    }
}

/// For a load stopped at the memory ceiling: the keys held and the RSS then, as one
/// indented line (the row's per-key figures are over the keys held).
pub(crate) fn ceiling_line(r: &Record) -> Option<String> {
    let held = r.held_keys?;
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    Some(format!(
        "    {} {}: load stopped at the memory ceiling ({:.0} MiB): {held} of {} keys held \
         at RSS {:.0} MiB; the other cells of this load were skipped",
        r.index,
        r.dataset,
        mib(r.max_rss_bytes.unwrap_or(0)),
        r.keys,
        mib(r.held_rss_bytes.unwrap_or(0)),
    ))
}

/// The index's own statistics after its load (`Record::index_stats`), as one indented line.
pub(crate) fn stats_line(r: &Record) -> Option<String> {
    let s = r.index_stats.as_ref()?;
    let parts: Vec<String> = s
        .iter()
        .map(|(k, v)| format!("{k} {}", stat(k, *v, r.keys_loaded())))
        .collect();
    Some(format!(
        "    {} after loading {} {}: {}",
        r.index,
        r.keys_loaded(),
        r.dataset,
        parts.join(", ")
    ))
}
