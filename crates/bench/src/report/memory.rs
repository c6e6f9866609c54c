//! Memory sections: bytes per key per index (counting allocator, RSS growth,
//! `memory_usage()`), and the statistics indexes report about themselves after a load.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use super::format::{file_safe, keys_label, opt};
use super::plot::{Bars, plot};
use crate::output::Record;

/// One section per dataset × keys × value size: memory per key (median over the index's
/// results), a plot and a table. Returns the number of plots written.
pub(super) fn memory_sections(
    md: &mut String,
    dir: &Path,
    recs: &[&Record],
    indexes: &[String],
) -> Result<usize, String> {
    let mut mem: BTreeMap<(String, u64, usize), Vec<&Record>> = BTreeMap::new();
    for r in recs {
        mem.entry((r.dataset.clone(), r.keys, r.value_size))
            .or_default()
            .push(r);
    }
    let mut mem_stems: BTreeMap<&str, usize> = BTreeMap::new();
    for (ds, _, _) in mem.keys() {
        *mem_stems.entry(ds.as_str()).or_default() += 1;
    }
    for ((ds, keys, vs), rs) in &mem {
        let idx: Vec<&String> = indexes
            .iter()
            .filter(|i| rs.iter().any(|r| &r.index == *i))
            .collect();
        let med = |i: &str, f: &dyn Fn(&Record) -> Option<f64>| -> Option<f64> {
            let mut v: Vec<f64> = rs
                .iter()
                .filter(|r| r.index == i)
                .filter_map(|r| f(r))
                .collect();
            v.sort_by(f64::total_cmp);
            (!v.is_empty()).then(|| v[(v.len() - 1) / 2])
        };
        let mut stem = format!("{}-memory", file_safe(ds));
        if mem_stems[ds.as_str()] > 1 {
            stem = format!("{stem}-{}-v{vs}", keys_label(*keys));
        }
        let title = format!(
            "{ds}, {} keys, {vs} B values: memory per key",
            keys_label(*keys)
        );
        let alloc: Vec<Option<f64>> = idx
            .iter()
            .map(|i| med(i, &|r| Some(r.bytes_per_key)))
            .collect();
        let rss: Vec<Option<f64>> = idx
            .iter()
            .map(|i| med(i, &|r| r.rss_bytes_per_key))
            .collect();
        plot(
            dir,
            &stem,
            &Bars {
                title: title.clone(),
                y_label: "bytes per key".into(),
                categories: idx.iter().map(|s| s.to_string()).collect(),
                series: vec![
                    ("heap (counting allocator)".into(), alloc.clone()),
                    ("RSS growth".into(), rss.clone()),
                ],
            },
        )?;
        let _ = writeln!(*md, "## {title}\n\n![{title}]({stem}.png)\n");
        let _ = writeln!(
            *md,
            "| index | heap B/key | RSS B/key | memory_usage() B/key |"
        );
        let _ = writeln!(*md, "|---|---:|---:|---:|");
        for (j, i) in idx.iter().enumerate() {
            let _ = writeln!(
                md,
                "| {i} | {} | {} | {} |",
                opt(alloc[j], 1),
                opt(rss[j], 1),
                opt(med(i, &|r| r.mem_usage_bytes_per_key), 1)
            );
        }
        md.push('\n');
    }
    Ok(mem.len())
}

/// The indexes' own statistics after loading (`Record::index_stats`: Hyperion's memory
/// manager, the paper's Fig 14/16), one table per index: a row per dataset and key count
/// (from its `load` cell when there is one), counts with their per-key rate, bytes per key,
/// and what of `memory_usage()` the byte figures do not cover.
pub(super) fn index_stats_section(md: &mut String, recs: &[&Record], indexes: &[String]) {
    for index in indexes {
        let mut rows: BTreeMap<(String, u64), &Record> = BTreeMap::new();
        for r in recs
            .iter()
            .filter(|r| &r.index == index && r.index_stats.is_some())
        {
            let k = (r.dataset.clone(), r.keys);
            let better = |old: &Record| (r.workload == "load") && old.workload != "load";
            match rows.get(&k) {
                Some(old) if !better(old) => {}
                _ => {
                    rows.insert(k, r);
                }
            }
        }
        if rows.is_empty() {
            continue;
        }
        let mut names: Vec<&String> = rows
            .values()
            .flat_map(|r| r.index_stats.iter().flat_map(|s| s.keys()))
            .collect();
        names.sort();
        names.dedup();
        let _ = writeln!(
            md,
            "## {index}: statistics after loading
"
        );
        let head: Vec<String> = names
            .iter()
            .map(|n| {
                if n.ends_with("_bytes") {
                    format!("{n} B/key")
                } else {
                    format!("{n} (per key)")
                }
            })
            .collect();
        let _ = writeln!(
            md,
            "| dataset | keys | {} | memory_usage() B/key | rest of memory_usage() B/key | RSS B/key |",
            head.join(" | ")
        );
        let _ = writeln!(
            md,
            "|---|---:|{}---:|---:|---:|",
            "---:|".repeat(names.len())
        );
        for ((ds, keys), r) in &rows {
            let stats = r.index_stats.as_ref().expect("filtered on index_stats");
            // Over the keys held: a load stopped at the ceiling holds fewer than `keys`.
            let per_key = |v: f64| v / r.keys_loaded().max(1) as f64;
            let cells: Vec<String> = names
                .iter()
                .map(|n| match stats.get(*n) {
                    None => "n/a".into(),
                    Some(&v) if n.ends_with("_bytes") => format!("{:.2}", per_key(v)),
                    Some(&v) => format!("{v:.0} ({:.4})", per_key(v)),
                })
                .collect();
            let covered: f64 = stats
                .iter()
                .filter(|(n, _)| n.ends_with("_bytes"))
                .map(|(_, v)| per_key(*v))
                .sum();
            let _ = writeln!(
                md,
                "| {ds} | {} | {} | {} | {} | {} |",
                keys_label(*keys),
                cells.join(" | "),
                opt(r.mem_usage_bytes_per_key, 2),
                opt(r.mem_usage_bytes_per_key.map(|m| m - covered), 2),
                opt(r.rss_bytes_per_key, 2),
            );
        }
        md.push('\n');
    }
}
