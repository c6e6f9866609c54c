//! `orrery-bench report`: JSON-lines results → markdown tables and SVG + PNG plots.
//!
//! Output goes to `<out>/<name>/`: `tables.md` (machine facts, one throughput table and
//! plot per dataset × workload × distribution, one memory table and plot per dataset) and
//! the plots `<dataset>-<workload>[-<dist>].{svg,png}` (with `-<keys>-v<value size>`
//! appended when one run holds several key counts or value sizes of that cell),
//! `<dataset>-memory.{svg,png}`.
//! Indexes that report their own statistics (`Record::index_stats`: Hyperion's memory
//! manager) get a table each, "statistics after loading".
//! When a cell appears in several result lines (files appended over several runs), the
//! most recent line wins. Plots are drawn with `plotters` using a TrueType font found on the
//! system (DejaVu Sans or Liberation Sans; `ORRERY_BENCH_FONT=path.ttf` overrides).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use clap::Args;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::output::Record;
use crate::output::json;
use crate::output::table::spread;

/// Arguments of `report`.
#[derive(Args, Debug)]
pub(crate) struct ReportArgs {
    /// JSON-lines result files (from `run --json`).
    #[arg(long, required = true, num_args = 1..)]
    input: Vec<PathBuf>,
    /// Output directory.
    #[arg(long, default_value = "docs/results")]
    out: PathBuf,
    /// Report name: its subdirectory and title [default: the first input's file stem].
    #[arg(long)]
    name: Option<String>,
}

/// (dataset, keys, value size, workload, dist, index, threads).
type CellKey = (String, u64, usize, String, String, String, usize);

/// A grouped bar chart.
struct Bars {
    title: String,
    y_label: String,
    categories: Vec<String>,
    series: Vec<(String, Vec<Option<f64>>)>,
}

const COLORS: &[RGBColor] = &[
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation/LiberationSans-Regular.ttf",
    "/Library/Fonts/Arial.ttf",
];

/// Registers a system font as "sans-serif" once.
fn ensure_font() -> Result<(), String> {
    static FONT: OnceLock<Result<(), String>> = OnceLock::new();
    FONT.get_or_init(|| {
        let mut candidates: Vec<PathBuf> = Vec::new();
        if let Some(p) = std::env::var_os("ORRERY_BENCH_FONT") {
            candidates.push(p.into());
        }
        candidates.extend(FONT_PATHS.iter().map(PathBuf::from));
        for p in &candidates {
            if let Ok(bytes) = std::fs::read(p) {
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                    return Ok(());
                }
            }
        }
        Err(format!(
            "no TrueType font for the plots (looked at {}); install fonts-dejavu-core or set \
             ORRERY_BENCH_FONT=/path/to/font.ttf",
            FONT_PATHS.join(", ")
        ))
    })
    .clone()
}

fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, b: &Bars) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
    root.fill(&WHITE).map_err(e)?;
    let n = b.categories.len().max(1);
    let groups = b.series.len().max(1);
    let ymax = y_top(b.series.iter().flat_map(|s| s.1.iter().flatten().copied()));
    let mut chart = ChartBuilder::on(&root)
        .caption(&b.title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..ymax)
        .map_err(e)?;
    let cats = b.categories.clone();
    let label = move |x: &f64| -> String {
        let r = x.round();
        if (x - r).abs() < 1e-6 && r >= 0.0 && (r as usize) < cats.len() {
            cats[r as usize].clone()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n + 2)
        .x_label_formatter(&label)
        .y_desc(b.y_label.as_str())
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 15))
        .draw()
        .map_err(e)?;
    let width = 0.8 / groups as f64;
    for (g, (name, values)) in b.series.iter().enumerate() {
        let color = COLORS[g % COLORS.len()];
        let rects = values.iter().enumerate().filter_map(|(i, v)| {
            v.filter(|v| v.is_finite()).map(|v| {
                let x0 = i as f64 - 0.4 + g as f64 * width;
                Rectangle::new([(x0, 0.0), (x0 + width * 0.92, v)], color.filled())
            })
        });
        chart
            .draw_series(rects)
            .map_err(e)?
            .label(name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 12, y + 6)], color.filled()));
    }
    legend_and_present(&mut chart, &root)
}

/// A line chart: series of (x, y) points; `x_labels` names integer x positions when given
/// (categorical axis), and `shade` marks x ranges (drawn as light red bands).
struct Lines {
    title: String,
    x_label: String,
    y_label: String,
    x_labels: Option<Vec<String>>,
    series: Vec<(String, Vec<(f64, f64)>)>,
    shade: Vec<(f64, f64)>,
}

fn draw_lines<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, l: &Lines) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
    root.fill(&WHITE).map_err(e)?;
    let pts = || {
        l.series
            .iter()
            .flat_map(|s| s.1.iter())
            .filter(|p| p.0.is_finite() && p.1.is_finite())
    };
    let xmin = pts().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let xmax = pts().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
    let (xmin, xmax) = if xmin.is_finite() && xmax > xmin {
        (xmin, xmax)
    } else {
        (0.0, 1.0)
    };
    let pad = if l.x_labels.is_some() { 0.3 } else { 0.0 };
    let ymax = y_top(pts().map(|p| p.1));
    let mut chart = ChartBuilder::on(&root)
        .caption(&l.title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d((xmin - pad)..(xmax + pad), 0f64..ymax)
        .map_err(e)?;
    let labels = l.x_labels.clone();
    let fmt = move |x: &f64| -> String {
        match &labels {
            Some(v) => {
                let r = x.round();
                if (x - r).abs() < 1e-6 && r >= 0.0 && (r as usize) < v.len() {
                    v[r as usize].clone()
                } else {
                    String::new()
                }
            }
            None => format!("{x:.1}"),
        }
    };
    let mut mesh = chart.configure_mesh();
    if let Some(v) = &l.x_labels {
        mesh.x_labels(v.len() * 2 + 1);
    }
    mesh.x_label_formatter(&fmt)
        .x_desc(l.x_label.as_str())
        .y_desc(l.y_label.as_str())
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 15))
        .draw()
        .map_err(e)?;
    let band = RGBColor(255, 200, 200);
    chart
        .draw_series(
            l.shade
                .iter()
                .map(|&(a, b)| Rectangle::new([(a, 0.0), (b, ymax)], band.filled())),
        )
        .map_err(e)?;
    for (g, (name, points)) in l.series.iter().enumerate() {
        let color = COLORS[g % COLORS.len()];
        chart
            .draw_series(LineSeries::new(
                points
                    .iter()
                    .copied()
                    .filter(|p| p.0.is_finite() && p.1.is_finite()),
                color.stroke_width(2),
            ))
            .map_err(e)?
            .label(name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 2), (x + 12, y + 2)], color.filled()));
        chart
            .draw_series(
                points
                    .iter()
                    .filter(|p| p.0.is_finite() && p.1.is_finite())
                    .map(|&p| Circle::new(p, 3, color.filled())),
            )
            .map_err(e)?;
    }
    legend_and_present(&mut chart, &root)
}

/// Draws a chart's legend (upper right) and writes the drawing out: the common end of every
/// chart.
fn legend_and_present<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    root: &DrawingArea<DB, Shift>,
) -> Result<(), String> {
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(e)?;
    root.present().map_err(e)
}

/// A chart that can draw itself on any plotters backend.
trait Chart {
    fn draw_on<DB: DrawingBackend>(&self, root: DrawingArea<DB, Shift>) -> Result<(), String>
    where
        DB::ErrorType: 'static;
}

impl Chart for Bars {
    fn draw_on<DB: DrawingBackend>(&self, root: DrawingArea<DB, Shift>) -> Result<(), String>
    where
        DB::ErrorType: 'static,
    {
        draw(root, self)
    }
}

impl Chart for Lines {
    fn draw_on<DB: DrawingBackend>(&self, root: DrawingArea<DB, Shift>) -> Result<(), String>
    where
        DB::ErrorType: 'static,
    {
        draw_lines(root, self)
    }
}

/// The top of a chart's y axis: 15% above the largest finite value, or 1 when no value is
/// positive (plotters panics on a degenerate range, e.g. every value 0, as the memory
/// growth of a tiny load can be).
fn y_top(values: impl Iterator<Item = f64>) -> f64 {
    let m = values.filter(|v| v.is_finite()).fold(0.0f64, f64::max);
    if m > 0.0 { m * 1.15 } else { 1.0 }
}

/// Writes `<stem>.svg` and `<stem>.png` of a chart.
fn plot(dir: &Path, stem: &str, c: &impl Chart) -> Result<(), String> {
    ensure_font()?;
    let size = (960, 540);
    let svg = dir.join(format!("{stem}.svg"));
    c.draw_on(SVGBackend::new(&svg, size).into_drawing_area())
        .map_err(|x| format!("{}: {x}", svg.display()))?;
    let png = dir.join(format!("{stem}.png"));
    c.draw_on(BitMapBackend::new(&png, size).into_drawing_area())
        .map_err(|x| format!("{}: {x}", png.display()))?;
    Ok(())
}

fn file_safe(s: &str) -> String {
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

fn keys_label(k: u64) -> String {
    if k >= 1_000_000 && k.is_multiple_of(1_000_000) {
        format!("{}M", k / 1_000_000)
    } else if k >= 1000 && k.is_multiple_of(1000) {
        format!("{}K", k / 1000)
    } else {
        k.to_string()
    }
}

fn opt(v: Option<f64>, prec: usize) -> String {
    v.map_or("n/a".into(), |x| format!("{x:.prec$}"))
}

/// Runs `report`.
pub(crate) fn run(a: &ReportArgs) -> Result<(), String> {
    let mut all = Vec::new();
    for p in &a.input {
        all.extend(json::read(p)?);
    }
    if all.is_empty() {
        return Err("the input holds no results".into());
    }
    let name = match &a.name {
        Some(n) => n.clone(),
        None => a.input[0]
            .file_stem()
            .map_or("report".into(), |s| s.to_string_lossy().into_owned()),
    };
    let dir = a.out.join(file_safe(&name));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let cells = latest_per_cell(all);
    let recs: Vec<&Record> = cells.values().collect();
    let indexes = index_order(&recs);
    let mut md = String::new();
    let _ = writeln!(md, "# {name}\n");
    let _ = writeln!(
        md,
        "Generated by `orrery-bench report` from {}.\n",
        a.input
            .iter()
            .map(|p| format!("`{}`", p.display()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    machine_section(&mut md, &recs);
    settings_section(&mut md, &recs);
    let mut plots = throughput_sections(&mut md, &dir, &recs, &indexes)?;
    plots += memory_sections(&mut md, &dir, &recs, &indexes)?;
    plots += sweeps(&mut md, &dir, &recs, &indexes)?;
    plots += expansions(&mut md, &dir, &recs)?;
    index_stats_section(&mut md, &recs, &indexes);
    if let Some(r) = recs.first() {
        let _ = writeln!(
            md,
            "Columns: Mops/s is wall-clock throughput of the median repeat (spread = (max - min) \
             / median over the repeats); CPU Mops/s sums each thread's operations per second of \
             its own CPU time (what the threads reach with a core each: robust to other work on \
             the machine, optimistic under lock contention since blocked time is not CPU time); \
             CPU ns/op is thread-CPU time per operation; DRAM/op is CPU ns/op over one dependent \
             DRAM read with 4 KiB pages. Latency: {}.\n",
            r.latency
        );
    }
    let path = dir.join("tables.md");
    std::fs::write(&path, md).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    println!(
        "wrote {} and {} plots (SVG + PNG) in {}",
        path.display(),
        plots,
        dir.display()
    );
    Ok(())
}

/// The latest record of each cell (dataset, keys, value size, workload, distribution,
/// index, threads).
fn latest_per_cell(all: Vec<Record>) -> BTreeMap<CellKey, Record> {
    let mut cells: BTreeMap<CellKey, Record> = BTreeMap::new();
    for r in all {
        let k = (
            r.dataset.clone(),
            r.keys,
            r.value_size,
            r.workload.clone(),
            r.dist.clone(),
            r.index.clone(),
            r.threads,
        );
        match cells.get(&k) {
            Some(old) if old.unix_time > r.unix_time => {}
            _ => {
                cells.insert(k, r);
            }
        }
    }
    cells
}

/// The indexes of `recs`: as registered, then others by name.
fn index_order(recs: &[&Record]) -> Vec<String> {
    let registered: Vec<&str> = crate::registry::entries().iter().map(|e| e.name).collect();
    let mut indexes: Vec<String> = recs.iter().map(|r| r.index.clone()).collect();
    indexes.sort_by_key(|i| {
        (
            registered.iter().position(|r| r == i).unwrap_or(usize::MAX),
            i.clone(),
        )
    });
    indexes.dedup();

    indexes
}

/// One section per dataset × keys × value size × workload × distribution: throughput
/// plots (wall clock and CPU time) and a table. Returns the number of plots written.
fn throughput_sections(
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

/// One section per dataset × keys × value size: memory per key (median over the index's
/// results), a plot and a table. Returns the number of plots written.
fn memory_sections(
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
fn index_stats_section(md: &mut String, recs: &[&Record], indexes: &[String]) {
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
            let per_key = |v: f64| v / (*keys).max(1) as f64;
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

/// The settings the results ran with (`Record::settings`), one line per distinct set.
fn settings_section(md: &mut String, recs: &[&Record]) {
    let mut seen: Vec<String> = Vec::new();
    let mut unrecorded = 0;
    for r in recs {
        match &r.settings {
            Some(s) => {
                let line = s.switches.to_string();
                if !seen.contains(&line) {
                    seen.push(line);
                }
            }
            None => unrecorded += 1,
        }
    }
    let _ = writeln!(md, "Settings:\n");
    for line in &seen {
        let _ = writeln!(md, "- `{line}`");
    }
    if unrecorded > 0 {
        let _ = writeln!(
            md,
            "- {unrecorded} results from before settings were recorded (their switches are unknown)"
        );
    }
    md.push('\n');
}

/// Key-count sweeps: for every dataset × value size × workload × dist measured at several
/// key counts, Mops/s against keys (one line per index and thread count). Returns the
/// number of plots written.
fn sweeps(
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

/// `p50/p99/p999` of a latency triple, or `n/a`.
fn pcts(p: Option<(u64, u64, u64)>) -> String {
    p.map_or("n/a".into(), |(a, b, c)| format!("{a}/{b}/{c}"))
}

/// Throughput while an index restructured itself (its probe said "expanding") against
/// steady state: a table, and per result a time-series plot with the expanding windows
/// shaded. Returns the number of plots written.
fn expansions(md: &mut String, dir: &Path, recs: &[&Record]) -> Result<usize, String> {
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

fn machine_section(md: &mut String, recs: &[&Record]) {
    let mut revs: Vec<&str> = recs.iter().map(|r| r.git_rev.as_str()).collect();
    revs.sort();
    revs.dedup();
    let loads: Vec<f64> = recs.iter().filter_map(|r| r.loadavg).collect();
    if let Some(m) = recs.iter().map(|r| &r.machine).find(|m| !m.is_null()) {
        let g = |k: &str| {
            m.get(k)
                .map_or("?".into(), |v| v.to_string().trim_matches('"').to_string())
        };
        let _ = writeln!(
            md,
            "**Machine:** {}, {} cores, {} GiB, kernel {}, THP {}. Dependent random DRAM read: \
             {} ns (4 KiB pages), {} ns (huge pages); best independent-read rate {} ns/read.\n",
            g("cpu"),
            g("cores"),
            g("mem_gib"),
            g("kernel"),
            g("thp"),
            g("lat_4k_ns"),
            g("lat_huge_ns"),
            g("mlp_best_ns")
        );
    }
    let mut mallocs: Vec<&str> = recs.iter().filter_map(|r| r.malloc.as_deref()).collect();
    mallocs.sort();
    mallocs.dedup();
    if !mallocs.is_empty() {
        let _ = writeln!(md, "**Malloc:** {}.\n", mallocs.join("; "));
    }
    let _ = writeln!(md, "**Revisions:** {}.", revs.join(", "));
    if !loads.is_empty() {
        let min = loads.iter().cloned().fold(f64::MAX, f64::min);
        let max = loads.iter().cloned().fold(f64::MIN, f64::max);
        let _ = writeln!(
            md,
            "**1-minute load average while recording:** {min:.1} to {max:.1} (other work on the \
             machine shows here).\n"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
