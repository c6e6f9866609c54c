//! The charts of a report, drawn with `plotters` on an SVG and a PNG backend: grouped bars
//! ([`Bars`]: throughput and memory per index) and lines ([`Lines`]: key-count sweeps and
//! throughput over time with shaded windows). The plots use a TrueType font found on the
//! system (DejaVu Sans or Liberation Sans; `ORRERY_BENCH_FONT=path.ttf` overrides).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;

/// A grouped bar chart.
pub(super) struct Bars {
    pub(super) title: String,
    pub(super) y_label: String,
    pub(super) categories: Vec<String>,
    pub(super) series: Vec<(String, Vec<Option<f64>>)>,
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
pub(super) struct Lines {
    pub(super) title: String,
    pub(super) x_label: String,
    pub(super) y_label: String,
    pub(super) x_labels: Option<Vec<String>>,
    pub(super) series: Vec<(String, Vec<(f64, f64)>)>,
    pub(super) shade: Vec<(f64, f64)>,
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
pub(super) trait Chart {
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
pub(super) fn plot(dir: &Path, stem: &str, c: &impl Chart) -> Result<(), String> {
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
