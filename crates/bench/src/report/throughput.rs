//! Throughput sections: per dataset × keys × value size × workload × distribution, bar
//! plots (wall clock and CPU time) and a table; and key-count sweeps, Mops/s against keys.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use super::format::{file_safe, keys_label, opt};
use super::plot::{Bars, Lines, plot};
use crate::output::Record;
use crate::output::table::spread;

/// One section per dataset × keys × value size × workload × distribution: throughput
/// plots (wall clock and CPU time) and a table. Returns the number of plots written.
pub(super) fn throughput_sections(
    md: &mut String,
    dir: &Path,
    recs: &[&Record],
    indexes: &[String],
) -> Result<usize, String> {
    let mut groups: BTreeMap<(String, u64, usize, String, String), Vec<&Record>> = BTreeMap::new();
    for r in recs {
        groups
            .entry((
                r.dataset.clone(),
                r.keys,
                r.value_size,
                r.workload.clone(),
                r.dist.clone(),
            ))
            .or_default()
            .push(r);
    }
    // Plot names are `<dataset>-<workload>[-<dist>]`; when several key counts or value
    // sizes share one name (a suite run at 100K, 1M and 10M keys), the key count and value
    // size are appended so that no plot overwrites another.
    let mut stems_seen: BTreeMap<(String, String, String), usize> = BTreeMap::new();
    for (ds, _, _, wl, dist) in groups.keys() {
        *stems_seen
            .entry((ds.clone(), wl.clone(), dist.clone()))
            .or_default() += 1;
    }
    for ((ds, keys, vs, wl, dist), rs) in &groups {
        let mut threads: Vec<usize> = rs.iter().map(|r| r.threads).collect();
        threads.sort();
        threads.dedup();
        let idx: Vec<&String> = indexes
            .iter()
            .filter(|i| rs.iter().any(|r| &r.index == *i))
            .collect();
        let find = |i: &str, t: usize| rs.iter().find(|r| r.index == i && r.threads == t);
        let dist_part = if dist == "uniform" || dist == "-" {
            String::new()
        } else {
            format!("-{}", file_safe(dist))
        };
        let mut stem = format!("{}-{}{}", file_safe(ds), file_safe(wl), dist_part);
        if stems_seen[&(ds.clone(), wl.clone(), dist.clone())] > 1 {
            stem = format!("{stem}-{}-v{vs}", keys_label(*keys));
        }
        let title = format!(
            "{ds}, {} keys, {vs} B values: workload {wl}{}",
            keys_label(*keys),
            if dist_part.is_empty() {
                String::new()
            } else {
                format!(" ({dist})")
            }
        );
        let series = |f: &dyn Fn(&Record) -> f64| -> Vec<(String, Vec<Option<f64>>)> {
            threads
                .iter()
                .map(|&t| {
                    (
                        format!("{t} thread{}", if t == 1 { "" } else { "s" }),
                        idx.iter().map(|i| find(i, t).map(|r| f(r))).collect(),
                    )
                })
                .collect()
        };
        let categories: Vec<String> = idx.iter().map(|s| s.to_string()).collect();
        plot(
            dir,
            &stem,
            &Bars {
                title: title.clone(),
                y_label: "Mops/s, wall clock (median repeat)".into(),
                categories: categories.clone(),
                series: series(&|r| r.mops),
            },
        )?;
        plot(
            dir,
            &format!("{stem}-cpu"),
            &Bars {
                title: format!("{title} (CPU time)"),
                y_label: "Mops per thread-CPU second, summed over threads".into(),
                categories,
                series: series(&|r| r.mops_cpu),
            },
        )?;
        let _ = writeln!(
            *md,
            "## {title}\n\n![{title}]({stem}.png)\n![{title}, CPU time]({stem}-cpu.png)\n"
        );
        let _ = writeln!(
            *md,
            "| index | threads | Mops/s | spread | CPU Mops/s | CPU ns/op | DRAM/op | p50 ns | p99 ns | p999 ns | load Mops/s | repeats |"
        );
        let _ = writeln!(
            *md,
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        for i in &idx {
            for &t in &threads {
                if let Some(r) = find(i, t) {
                    let _ = writeln!(
                        md,
                        "| {} | {} | {:.3} | {} | {:.3} | {:.0} | {} | {} | {} | {} | {:.2} | {} |",
                        r.index,
                        t,
                        r.mops,
                        spread(r).map_or("-".into(), |s| format!("{s:.0}%")),
                        r.mops_cpu,
                        r.cpu_ns_per_op,
                        opt(r.dram_rt_per_op, 2),
                        r.p50_ns.map_or("n/a".into(), |v| v.to_string()),
                        r.p99_ns.map_or("n/a".into(), |v| v.to_string()),
                        r.p999_ns.map_or("n/a".into(), |v| v.to_string()),
                        r.load_mops,
                        r.repeats
                    );
                }
            }
        }
        md.push('\n');
    }

    Ok(2 * groups.len())
}

/// Key-count sweeps: for every dataset × value size × workload × dist measured at several
/// key counts, Mops/s against keys (one line per index and thread count). Returns the
/// number of plots written.
pub(super) fn sweeps(
    md: &mut String,
    dir: &Path,
    recs: &[&Record],
    indexes: &[String],
) -> Result<usize, String> {
    let mut groups: BTreeMap<(String, usize, String, String), Vec<&Record>> = BTreeMap::new();
    for r in recs {
        groups
            .entry((
                r.dataset.clone(),
                r.value_size,
                r.workload.clone(),
                r.dist.clone(),
            ))
            .or_default()
            .push(r);
    }
    let mut plots = 0;
    for ((ds, vs, wl, dist), rs) in &groups {
        let mut keys: Vec<u64> = rs.iter().map(|r| r.keys).collect();
        keys.sort();
        keys.dedup();
        if keys.len() < 3 {
            continue;
        }
        let mut lines: Vec<(String, usize)> = Vec::new();
        for i in indexes {
            let mut ts: Vec<usize> = rs
                .iter()
                .filter(|r| &r.index == i)
                .map(|r| r.threads)
                .collect();
            ts.sort();
            ts.dedup();
            lines.extend(ts.into_iter().map(|t| (i.clone(), t)));
        }
        let find = |i: &str, t: usize, k: u64| {
            rs.iter()
                .find(|r| r.index == i && r.threads == t && r.keys == k)
        };
        let title = format!("{ds}, {vs} B values: workload {wl} ({dist}) against key count");
        let stem = format!("{}-{}-sweep", file_safe(ds), file_safe(wl));
        let series = lines
            .iter()
            .map(|(i, t)| {
                let pts = keys
                    .iter()
                    .enumerate()
                    .filter_map(|(x, &k)| find(i, *t, k).map(|r| (x as f64, r.mops)))
                    .collect();
                (format!("{i}, {t} thr"), pts)
            })
            .collect();
        plot(
            dir,
            &stem,
            &Lines {
                title: title.clone(),
                x_label: "keys loaded".into(),
                y_label: "Mops/s, wall clock (median repeat)".into(),
                x_labels: Some(keys.iter().map(|&k| keys_label(k)).collect()),
                series,
                shade: Vec::new(),
            },
        )?;
        plots += 1;
        let _ = writeln!(md, "## {title}\n\n![{title}]({stem}.png)\n");
        let _ = write!(md, "| index | threads |");
        for &k in &keys {
            let _ = write!(md, " {} Mops/s (DRAM/op) |", keys_label(k));
        }
        let _ = writeln!(md, "\n|---|---:|{}", "---:|".repeat(keys.len()));
        for (i, t) in &lines {
            let _ = write!(md, "| {i} | {t} |");
            for &k in &keys {
                let cell = find(i, *t, k).map_or("-".into(), |r| {
                    format!("{:.3} ({})", r.mops, opt(r.dram_rt_per_op, 2))
                });
                let _ = write!(md, " {cell} |");
            }
            md.push('\n');
        }
        md.push('\n');
    }
    Ok(plots)
}
