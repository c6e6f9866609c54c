//! Key-count sweeps of what a load leaves behind (the `scale` suite, issue 37): load rate,
//! bytes per key (`memory_usage()` and RSS growth) and DRAM round trips per lookup against
//! the key count, one plot each per dataset and value size, and the largest count each
//! index held (a load stopped at the memory ceiling, `held_keys`, counts what it held).
//!
//! The x axis is the sweep's counts in order, evenly spaced: the `scale` suite's counts
//! step by about 3.16× (half decades), so the axis is the key count on a log scale. Lookup
//! and `get_many` rates against the count are `throughput`'s sweeps.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use super::format::{file_safe, keys_label};
use super::plot::{Lines, plot};
use crate::output::Record;

/// One figure a sweep plots: its name, axis label and how to read it from a record.
type Metric = (&'static str, &'static str, fn(&Record) -> Option<f64>);

const METRICS: [Metric; 4] = [
    ("load", "load Mops/s (wall clock)", |r| Some(r.load_mops)),
    ("memory-usage", "memory_usage() bytes per key", |r| {
        r.mem_usage_bytes_per_key
    }),
    ("rss", "RSS growth of the load, bytes per key", |r| {
        r.rss_bytes_per_key
    }),
    ("dram", "DRAM round trips per lookup (1 thread)", |r| {
        r.dram_rt_per_op
    }),
];

/// The record a (dataset, value size, index, count) point is read from: the 1-thread
/// `lookup` cell (whose record carries its load's figures), else any cell of that load.
fn point<'a>(rs: &[&'a Record], index: &str, keys: u64) -> Option<&'a Record> {
    let of = |r: &&&Record| r.index == index && r.keys == keys;
    rs.iter()
        .filter(of)
        .find(|r| r.workload == "lookup" && r.threads == 1)
        .or_else(|| rs.iter().find(of))
        .copied()
}

/// Writes the sweeps (datasets with at least 3 key counts) and the largest-count table;
/// returns the number of plots.
pub(super) fn scale_sections(
    md: &mut String,
    dir: &Path,
    recs: &[&Record],
    indexes: &[String],
) -> Result<usize, String> {
    let mut groups: BTreeMap<(String, usize), Vec<&Record>> = BTreeMap::new();
    for r in recs {
        groups
            .entry((r.dataset.clone(), r.value_size))
            .or_default()
            .push(r);
    }
    let mut plots = 0;
    for ((ds, vs), rs) in &groups {
        let mut keys: Vec<u64> = rs.iter().map(|r| r.keys).collect();
        keys.sort();
        keys.dedup();
        if keys.len() < 3 {
            continue;
        }
        for (name, label, get) in METRICS {
            let series: Vec<(String, Vec<(f64, f64)>)> = indexes
                .iter()
                .map(|i| {
                    let pts = keys
                        .iter()
                        .enumerate()
                        .filter_map(|(x, &k)| {
                            let r = point(rs, i, k).filter(|r| r.held_keys.is_none())?;
                            get(r).map(|y| (x as f64, y))
                        })
                        .collect();
                    (i.clone(), pts)
                })
                .filter(|(_, p): &(String, Vec<_>)| !p.is_empty())
                .collect();
            if series.is_empty() {
                continue;
            }
            let title = format!("{ds}, {vs} B values: {label} against key count");
            let stem = format!("{}-v{vs}-{name}-sweep", file_safe(ds));
            plot(
                dir,
                &stem,
                &Lines {
                    title: title.clone(),
                    x_label: "keys loaded (log scale)".into(),
                    y_label: label.into(),
                    x_labels: Some(keys.iter().map(|&k| keys_label(k)).collect()),
                    series,
                    shade: Vec::new(),
                },
            )?;
            plots += 1;
            let _ = writeln!(md, "## {title}\n\n![{title}]({stem}.png)\n");
        }
        let _ = writeln!(
            md,
            "## {ds}, {vs} B values: the most keys each index held\n\n\
             | index | largest count loaded | stopped at the ceiling with | RSS then |\n\
             |---|---:|---:|---:|"
        );
        for i in indexes {
            let mine: Vec<&&Record> = rs.iter().filter(|r| &r.index == i).collect();
            if mine.is_empty() {
                continue;
            }
            let full = mine
                .iter()
                .filter(|r| r.held_keys.is_none())
                .map(|r| r.keys)
                .max();
            let stop = mine
                .iter()
                .filter_map(|r| r.held_keys.zip(r.held_rss_bytes))
                .max();
            let _ = writeln!(
                md,
                "| {i} | {} | {} | {} |",
                full.map_or("-".into(), keys_label),
                stop.map_or("-".into(), |(h, _)| h.to_string()),
                stop.map_or("-".into(), |(_, b)| format!(
                    "{:.2} GiB",
                    b as f64 / (1u64 << 30) as f64
                )),
            );
        }
        md.push('\n');
    }
    Ok(plots)
}
