//! The expansion section: throughput and latency while an index restructured itself (its
//! probe said "expanding") against steady state, with a time series per result.

use std::fmt::Write as _;
use std::path::Path;

use super::format::{file_safe, keys_label, opt, pcts};
use super::plot::{Lines, plot};
use crate::output::Record;

/// Throughput while an index restructured itself (its probe said "expanding") against
/// steady state: a table, and per result a time-series plot with the expanding windows
/// shaded. Returns the number of plots written.
pub(super) fn expansions(md: &mut String, dir: &Path, recs: &[&Record]) -> Result<usize, String> {
    let with: Vec<&&Record> = recs.iter().filter(|r| r.split.is_some()).collect();
    if with.is_empty() {
        return Ok(0);
    }
    let _ = writeln!(
        md,
        "## Throughput while expanding vs steady state\n\n\
         Each thread samples the index's probe (for Mercury: is an expansion in progress?) \
         every 1024 operations; batches with the probe true at both ends count as expanding, \
         false at both ends as steady (per-thread rates summed over threads). Latencies: \
         the sampled operations with the probe read just before and after each, filed as \
         steady or expanding the same way (p50/p99/p999 ns).\n"
    );
    let _ = writeln!(
        md,
        "| index | dataset | keys | workload | threads | steady Mops/s | expanding Mops/s | ratio | time expanding | steady latency | expanding latency |"
    );
    let _ = writeln!(md, "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut plots = Vec::new();
    for r in &with {
        let Some(sp) = &r.split else { continue };
        let ratio = sp
            .steady_mops
            .zip(sp.expanding_mops)
            .map_or("n/a".into(), |(a, b)| format!("{:.2}", b / a));
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {ratio} | {:.0}% | {} | {} |",
            r.index,
            r.dataset,
            keys_label(r.keys),
            r.workload,
            r.threads,
            opt(sp.steady_mops, 3),
            opt(sp.expanding_mops, 3),
            100.0 * sp.expanding_share,
            pcts(sp.steady_latency),
            pcts(sp.expanding_latency)
        );
        let stem = format!(
            "expansion-{}-{}-{}-{}-{}t",
            file_safe(&r.index),
            file_safe(&r.dataset),
            keys_label(r.keys),
            file_safe(&r.workload),
            r.threads
        );
        let step = sp.series.get(1).map_or(1.0, |w| w[0]);
        let shade = sp
            .series
            .iter()
            .filter(|w| w[2] >= 0.5)
            .map(|w| (w[0], w[0] + step))
            .collect();
        let title = format!(
            "{} {} {} {}, {} thr: throughput over time",
            r.index,
            r.dataset,
            keys_label(r.keys),
            r.workload,
            r.threads
        );
        plot(
            dir,
            &stem,
            &Lines {
                title: title.clone(),
                x_label: "seconds (shaded: expansion in progress)".into(),
                y_label: "Mops/s per window".into(),
                x_labels: None,
                series: vec![(
                    r.index.clone(),
                    sp.series.iter().map(|w| (w[0], w[1])).collect(),
                )],
                shade,
            },
        )?;
        plots.push((title, stem));
    }
    md.push('\n');
    for (title, stem) in &plots {
        let _ = writeln!(md, "![{title}]({stem}.png)");
    }
    md.push('\n');
    Ok(plots.len())
}
