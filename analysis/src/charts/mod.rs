//! The charts, each drawn once per backend (PNG through the bitmap backend, SVG).
//!
//! Text uses DejaVu Sans compiled in and registered with plotters' ab_glyph font
//! table, so rendering needs no system fonts.

use crate::model::{Measure, Phase, RunFile};
use crate::{Dataset, Entry, Group, engine_line, hist, human_count, machine_line, workload_line};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::{Path, PathBuf};
use std::sync::Once;

mod bars;
mod cdf;
mod cpu;
mod latency;
pub(crate) mod paper;
mod throughput;
mod timeline;

use cdf::{Cdf, engine_cdf};
use cpu::Cpu;
use latency::Latency;
use throughput::Throughput;
use timeline::Timeline;

const FONT: &str = "sans-serif";
const W: u32 = 1280;
const H: u32 = 720;

/// Colour-blind-safe palette (Okabe-Ito), engines in `Dataset::engines` order; the
/// `null` engine is always grey.
const PALETTE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(120, 94, 240),
];
const GREY: RGBColor = RGBColor(130, 130, 130);
const RUN_COLOUR: RGBColor = RGBColor(0, 114, 178);
const LOAD_COLOUR: RGBColor = RGBColor(230, 159, 0);
const STALL_COLOUR: RGBColor = RGBColor(200, 0, 0);
const TEXT_GREY: RGBColor = RGBColor(60, 60, 60);
/// Percentile bars, light to dark as the tail gets longer.
const PCT_COLOURS: [RGBColor; 4] = [
    RGBColor(158, 202, 225),
    RGBColor(66, 146, 198),
    RGBColor(8, 81, 156),
    RGBColor(8, 29, 88),
];

/// A chart written to disk.
#[derive(Clone, Debug)]
pub struct Rendered {
    /// File name without extension (`throughput`, `latency-workloada`).
    pub stem: String,
    pub title: String,
    /// One line saying what the chart shows.
    pub caption: String,
    /// The PNG and SVG files.
    pub files: Vec<PathBuf>,
}

fn fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let a = plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular())
            .is_ok();
        let b = plotters::style::register_font(FONT, FontStyle::Bold, dejavu::sans::bold()).is_ok();
        debug_assert!(a && b, "DejaVu fonts must parse");
    });
}

fn de<E: std::fmt::Debug>(e: E) -> String {
    format!("drawing failed: {e:?}")
}

fn font(size: u32) -> TextStyle<'static> {
    TextStyle::from((FONT, size).into_font()).color(&BLACK)
}

fn bold(size: u32) -> TextStyle<'static> {
    TextStyle::from((FONT, size).into_font().style(FontStyle::Bold)).color(&BLACK)
}

fn engine_colour(ds: &Dataset, label: &str) -> RGBColor {
    if label == "null" {
        GREY
    } else {
        PALETTE[ds.engine_index(label) % PALETTE.len()]
    }
}

/// Something drawn onto any plotters backend.
trait Chart {
    fn size(&self) -> (u32, u32) {
        (W, H)
    }
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>;
}

fn render<C: Chart>(c: &C, dir: &Path, stem: &str) -> Result<Vec<PathBuf>, String> {
    let size = c.size();
    let png = dir.join(format!("{stem}.png"));
    {
        let root = BitMapBackend::new(&png, size).into_drawing_area();
        c.draw(&root)?;
        root.present()
            .map_err(|e| format!("cannot write {}: {e:?}", png.display()))?;
    }
    let svg = dir.join(format!("{stem}.svg"));
    {
        let root = SVGBackend::new(&svg, size).into_drawing_area();
        c.draw(&root)?;
        root.present()
            .map_err(|e| format!("cannot write {}: {e:?}", svg.display()))?;
    }
    Ok(vec![png, svg])
}

/// Splits `text` into lines that fit `width` pixels in `style`.
fn wrap<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    text: &str,
    style: &TextStyle,
    width: u32,
) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in text.split(' ') {
        let cand = if cur.is_empty() {
            word.to_string()
        } else {
            format!("{cur} {word}")
        };
        let w = area
            .estimate_text_size(&cand, style)
            .map(|s| s.0)
            .unwrap_or(0);
        if w > width && !cur.is_empty() {
            lines.push(std::mem::take(&mut cur));
            cur = word.to_string();
        } else {
            cur = cand;
        }
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

/// White background, a title on top, caption lines at the bottom; returns the area
/// between them.
fn frame<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    caption: &[String],
) -> Result<DrawingArea<DB, Shift>, String> {
    root.fill(&WHITE).map_err(de)?;
    let (w, h) = root.dim_in_pixel();
    let cap_style = font(14).color(&TEXT_GREY);
    let lines: Vec<String> = caption
        .iter()
        .flat_map(|c| wrap(root, c, &cap_style, w - 24))
        .collect();
    let title_h = 46;
    let cap_h = 12 + 19 * lines.len() as u32;
    let (top, rest) = root.split_vertically(title_h);
    top.draw(&Text::new(
        title.to_string(),
        (w as i32 / 2, 12),
        bold(24).pos(Pos::new(HPos::Center, VPos::Top)),
    ))
    .map_err(de)?;
    let (body, cap) = rest.split_vertically(h - title_h - cap_h);
    cap.draw(&PathElement::new(
        vec![(12, 2), (w as i32 - 12, 2)],
        RGBColor(200, 200, 200),
    ))
    .map_err(de)?;
    for (i, l) in lines.iter().enumerate() {
        cap.draw(&Text::new(
            l.clone(),
            (12, 8 + 19 * i as i32),
            cap_style.clone(),
        ))
        .map_err(de)?;
    }
    Ok(body)
}

/// Caption lines: the machine(s), the workload(s), each engine's fairness settings.
fn caption_for(ds: &Dataset, groups: &[&Group]) -> Vec<String> {
    let mut out = Vec::new();
    let ms = ds.machines();
    for m in &ms {
        out.push(format!("Machine: {}", machine_line(m)));
    }
    if ms.len() > 1 {
        out.push("Warning: the results come from different machines.".into());
    }
    for g in groups {
        if let Some(e) = g.runs.first() {
            let prefix = if g.label != e.run.workload_name() {
                format!("Workload [{}]: ", g.label)
            } else {
                "Workload ".into()
            };
            out.push(format!("{prefix}{}", workload_line(&e.run)));
        }
    }
    let mut seen: Vec<String> = Vec::new();
    for g in groups {
        for e in &g.runs {
            let l = engine_line(&e.label, &e.run);
            if !seen.contains(&l) {
                seen.push(l);
            }
        }
    }
    out.push(format!("Engines: {}", seen.join(" | ")));
    out.extend(ds.caption_notes.iter().cloned());
    out
}

fn y_log_bounds(lo: f64, hi: f64) -> (f64, f64) {
    let lo = lo.max(1e-3);
    let hi = hi.max(lo * 10.0);
    (
        10f64.powf((lo * 0.9).log10().floor()),
        10f64.powf((hi * 1.1).log10().ceil()),
    )
}

fn trimmed(x: f64, decimals: usize) -> String {
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Axis numbers: `0.05`, `20`, `1k`, `2.5M`.
fn tick(v: &f64) -> String {
    let a = v.abs();
    for (div, suffix) in [(1e9, "G"), (1e6, "M"), (1e3, "k")] {
        if a >= div {
            return format!("{}{suffix}", trimmed(v / div, 2));
        }
    }
    if a >= 1.0 || a == 0.0 {
        trimmed(*v, 2)
    } else {
        trimmed(*v, 4)
    }
}

/// Fractions on a log axis: `1`, `0.1`, `0.001`, `1e-4`.
fn frac_tick(v: &f64) -> String {
    if *v >= 1e-3 {
        trimmed(*v, 3)
    } else {
        let k = v.log10().round();
        if (v / 10f64.powf(k) - 1.0).abs() < 1e-6 {
            format!("1e{k}")
        } else {
            format!("{v:.0e}")
        }
    }
}

/// A row of legend items (colour swatch and name) across the top of `area`; returns
/// the area below it.
fn legend_row<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    items: &[(String, Swatch)],
) -> Result<DrawingArea<DB, Shift>, String> {
    let style = font(15);
    let widths: Vec<i32> = items
        .iter()
        .map(|(n, _)| {
            area.estimate_text_size(n, &style)
                .map(|s| s.0 as i32)
                .unwrap_or(60)
                + 22
                + 24
        })
        .collect();
    let total: i32 = widths.iter().sum();
    let (w, _) = area.dim_in_pixel();
    let (row, rest) = area.split_vertically(30);
    let mut x = (w as i32 - total) / 2;
    for ((n, sw), wd) in items.iter().zip(widths) {
        draw_swatch(&row, *sw, x - 1, 15)?;
        row.draw(&Text::new(
            n.clone(),
            (x + 22, 15),
            style.pos(Pos::new(HPos::Left, VPos::Center)),
        ))
        .map_err(de)?;
        x += wd;
    }
    Ok(rest)
}

/// How a legend entry is drawn.
#[derive(Clone, Copy)]
enum Swatch {
    Fill(RGBColor),
    Line(RGBColor),
    Dashed(RGBColor),
    Hollow(RGBColor),
    Cross(RGBColor),
}

/// A legend as a column of entries at the top left of `area` (beside a chart, so it
/// never hides data).
fn legend_box<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    items: &[(String, Swatch)],
    top: i32,
) -> Result<(), String> {
    let style = font(13);
    for (i, (name, sw)) in items.iter().enumerate() {
        let y = top + 10 + 20 * i as i32;
        let x = 6;
        draw_swatch(area, *sw, x, y)?;
        area.draw(&Text::new(
            name.clone(),
            (x + 26, y),
            style.clone().pos(Pos::new(HPos::Left, VPos::Center)),
        ))
        .map_err(de)?;
    }
    Ok(())
}

/// A legend symbol, 18 pixels wide, its left end at `x`, centred on `y`.
fn draw_swatch<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    sw: Swatch,
    x: i32,
    y: i32,
) -> Result<(), String> {
    match sw {
        Swatch::Fill(c) => area.draw(&Rectangle::new([(x, y - 6), (x + 18, y + 6)], c.filled())),
        Swatch::Line(c) => area.draw(&PathElement::new([(x, y), (x + 18, y)], c.stroke_width(2))),
        Swatch::Dashed(c) => area
            .draw(&PathElement::new([(x, y), (x + 6, y)], c))
            .and_then(|_| area.draw(&PathElement::new([(x + 11, y), (x + 18, y)], c))),
        Swatch::Hollow(c) => area.draw(&Circle::new((x + 9, y), 4, c.stroke_width(2))),
        Swatch::Cross(c) => area.draw(&Cross::new((x + 9, y), 5, c.stroke_width(3))),
    }
    .map_err(de)
}

fn fills(series: &[(String, RGBColor)]) -> Vec<(String, Swatch)> {
    series
        .iter()
        .map(|(n, c)| (n.clone(), Swatch::Fill(*c)))
        .collect()
}

fn no_data<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, what: &str) -> Result<(), String> {
    let (w, h) = area.dim_in_pixel();
    area.draw(&Text::new(
        what.to_string(),
        (w as i32 / 2, h as i32 / 2),
        font(20).pos(Pos::new(HPos::Center, VPos::Center)),
    ))
    .map_err(de)
}

/// The run phase's latency summaries (service time and, under a target rate, from
/// the intended start; queueing delays are left out).
fn run_ops(r: &RunFile) -> Vec<&crate::model::OpSummary> {
    r.run()
        .map(|p| {
            p.ops
                .iter()
                .filter(|o| o.operations > 0 && o.measure().0 != Measure::Queue)
                .collect()
        })
        .unwrap_or_default()
}

fn file_part(label: &str) -> String {
    label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Renders every chart of the dataset into `dir`.
pub fn render_all(ds: &Dataset, dir: &Path) -> Result<Vec<Rendered>, String> {
    fonts();
    let mut out = Vec::new();
    let multi = ds.groups.len() > 1;
    let stem = |base: &str, g: &Group| {
        if multi {
            format!("{base}-{}", file_part(&g.label))
        } else {
            base.to_string()
        }
    };
    out.push(Rendered {
        stem: "throughput".into(),
        title: "Throughput".into(),
        caption: format!(
            "Operations per second of the measured run phase (blue) and of the load phase \
             (orange), per engine{}.",
            if multi { ", grouped by workload" } else { "" }
        ),
        files: render(&Throughput { ds }, dir, "throughput")?,
    });
    for g in &ds.groups {
        let s = stem("latency", g);
        out.push(Rendered {
            title: format!("Latency, {}", g.label),
            caption: "Run-phase latency percentiles (p50, p99, p99.9, max) per operation kind \
                      and engine, log scale."
                .into(),
            files: render(&Latency { ds, group: g }, dir, &s)?,
            stem: s,
        });
        let s = stem("timeline", g);
        out.push(Rendered {
            title: format!("Throughput over time, {}", g.label),
            caption: "Run-phase operations per second in each sampling interval; warm-up \
                      shaded, stalls marked."
                .into(),
            files: render(&Timeline { ds, group: g }, dir, &s)?,
            stem: s,
        });
        let s = stem("cpu", g);
        out.push(Rendered {
            title: format!("CPU, {}", g.label),
            caption: "CPU microseconds per operation (left) and CPU cores busy over the run \
                      phase, with the device's busy time where measured (right)."
                .into(),
            files: render(&Cpu { ds, group: g }, dir, &s)?,
            stem: s,
        });
        let s = stem("cdf", g);
        out.push(Rendered {
            title: format!("Latency distribution, {}", g.label),
            caption: "Run-phase latency CDF (left) and tail, the fraction of operations \
                      slower than a latency (right), log scales."
                .into(),
            files: render(
                &Cdf {
                    ds,
                    group: g,
                    curves: g
                        .runs
                        .iter()
                        .filter_map(engine_cdf)
                        .filter(|c| !c.points.is_empty())
                        .collect(),
                },
                dir,
                &s,
            )?,
            stem: s,
        });
    }
    Ok(out)
}
