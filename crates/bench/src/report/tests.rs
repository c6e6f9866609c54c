//! The report's index-statistics table and its plots on degenerate values.

use super::memory::index_stats_section;
use super::plot::{Bars, Lines, plot};
use crate::output::Record;

/// A record of `index` on `dataset` at 1000 keys, with `stats` as its index statistics.
fn record(index: &str, workload: &str, stats: Option<&[(&str, f64)]>) -> Record {
    let json = format!(
        r#"{{"index":"{index}","dataset":"rand-int","keys":1000,"value_size":8,"workload":"{workload}","dist":"-","threads":1,"ops":1000,"secs":0.001,"mops":1.0,"mops_repeats":[1.0],"mops_cpu":1.0,"mops_cpu_repeats":[1.0],"bytes_per_key":60.0,"rss_bytes_per_key":40.0,"mem_usage_bytes_per_key":30.0,"p50_ns":100,"p99_ns":200,"p999_ns":300,"latency":"l","dram_rt_per_op":null,"ns_per_op":1000.0,"cpu_ns_per_op":1000.0,"load_mops":1.0,"load_threads":1,"repeats":1,"seed":42,"loadavg":1.0,"git_rev":"abc","machine":null,"suite":null,"unix_time":1}}"#
    );
    let mut r: Record = serde_json::from_str(&json).unwrap();
    r.index_stats = stats.map(|s| s.iter().map(|(k, v)| (k.to_string(), *v)).collect());
    r
}

/// Index statistics become one table per index, bytes per key, counts with their rate,
/// and the part of memory_usage() they do not cover; indexes without any get none.
#[test]
fn index_stats_table() {
    let stats: &[(&str, f64)] = &[("chunks", 500.0), ("chunk_bytes", 16_000.0)];
    let recs = [
        record("hyperion", "lookup", Some(&[("chunks", 1.0)])),
        record("hyperion", "load", Some(stats)),
        record("btreemap", "load", None),
    ];
    let refs: Vec<&Record> = recs.iter().collect();
    let mut md = String::new();
    index_stats_section(&mut md, &refs, &["hyperion".into(), "btreemap".into()]);
    assert!(md.contains("## hyperion: statistics after loading"), "{md}");
    assert!(!md.contains("btreemap"), "{md}");
    // From the load cell: 16 B/key of chunks, 500 chunks (0.5 per key), 30 - 16 = 14
    // B/key of memory_usage() not covered, RSS 40.
    assert!(
        md.contains("| rand-int | 1K | 16.00 | 500 (0.5000) | 30.00 | 14.00 | 40.00 |"),
        "{md}"
    );
}

/// A load stopped at the memory ceiling: its statistics are per key held, not per key
/// asked for (in the report's table and in `run`'s line).
#[test]
fn index_stats_of_a_stopped_load_are_per_key_held() {
    let stats: &[(&str, f64)] = &[("chunks", 500.0), ("chunk_bytes", 16_000.0)];
    let mut r = record("hyperion", "load", Some(stats));
    r.held_keys = Some(500);
    let mut md = String::new();
    index_stats_section(&mut md, &[&r], &["hyperion".into()]);
    assert!(
        md.contains("| rand-int | 1K | 32.00 | 500 (1.0000) | 30.00 | -2.00 | 40.00 |"),
        "{md}"
    );
    let line = crate::output::table::stats_line(&r).unwrap();
    assert!(line.contains("after loading 500 rand-int"), "{line}");
    assert!(line.contains("chunk_bytes 32.00 B/key"), "{line}");
}

/// Charts whose values are all zero or negative (e.g. a tiny load whose RSS did not
/// grow), or not finite, still draw: the y range must stay sane.
#[test]
fn degenerate_values_still_plot() {
    let dir = std::env::temp_dir().join(format!("orrery-plot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bars = |v: Vec<Option<f64>>| Bars {
        title: "t".into(),
        y_label: "y".into(),
        categories: vec!["a".into(), "b".into()],
        series: vec![("s".into(), v)],
    };
    for (i, v) in [
        vec![Some(0.0), Some(0.0)],
        vec![Some(-3.0), Some(0.0)],
        vec![Some(f64::INFINITY), Some(1.0)],
        vec![Some(f64::NAN), None],
    ]
    .into_iter()
    .enumerate()
    {
        plot(&dir, &format!("bars{i}"), &bars(v)).unwrap();
    }
    let lines = |pts: Vec<(f64, f64)>| Lines {
        title: "t".into(),
        x_label: "x".into(),
        y_label: "y".into(),
        x_labels: None,
        series: vec![("s".into(), pts)],
        shade: vec![],
    };
    for (i, pts) in [
        vec![(0.0, 0.0), (1.0, 0.0)],
        vec![(0.0, -1.0), (1e-9, -2.0)],
        vec![(0.0, f64::INFINITY), (1.0, 2.0)],
    ]
    .into_iter()
    .enumerate()
    {
        plot(&dir, &format!("lines{i}"), &lines(pts)).unwrap();
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
