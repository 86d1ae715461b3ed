//! The memory chart of a group (beside its throughput timeline): what each engine held over time against
//! its memory budget, across its phases (load, warm-up, run), and its cache hit ratio.
//!
//! Memory used is what the budget is checked against: the process's resident memory
//! beyond the driver's own (measured before the engine opened) plus the OS page cache
//! of the engine's files; the page cache is also drawn on its own (dashed). Drawn only
//! where the result files have the samples (schema version 3).

use super::axis::tick;
use super::caption::caption_for;
use super::frame::frame;
use super::legend::{Swatch, legend_box};
use super::render::{Chart, de};
use super::style::{GREY, H, STALL_COLOUR, W, bold, engine_colour, font};
use crate::budget::{self, Over};
use crate::dataset::{Dataset, Entry, Group};
use crate::error::Result;
use crate::model::{OVER_BUDGET, RunFile};
use crate::text::human_bytes;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// The memory chart of a group.
pub(crate) struct Memory<'a> {
    pub(crate) ds: &'a Dataset,
    pub(crate) group: &'a Group,
}

/// Whether any result of the group has per-second memory samples.
pub(crate) fn has_samples(g: &Group) -> bool {
    g.runs.iter().any(|e| {
        e.run
            .phases
            .iter()
            .flat_map(|p| &p.timeline)
            .any(|s| s.rss_bytes.is_some() || s.page_cache_bytes.is_some())
    })
}

/// Whether the driver's memory governor resized an engine's cache in any result of the
/// group.
fn governed(g: &Group) -> bool {
    g.runs.iter().any(|e| {
        e.run
            .phases
            .iter()
            .flat_map(|p| &p.timeline)
            .any(|s| s.cache_capacity_bytes.is_some())
    })
}

/// One sampling interval, on the time axis of the whole run (phases one after another).
struct Point {
    t: f64,
    used: Option<f64>,
    cache: Option<f64>,
    engine: Option<f64>,
    cgroup: Option<f64>,
    /// The cache capacity the driver's memory governor set (governed engines only).
    capacity: Option<f64>,
    hit: Option<f64>,
}

/// The phases of a run laid end to end: each phase's start on the common axis, its
/// name, and the points.
struct Track {
    starts: Vec<(f64, String)>,
    end: f64,
    points: Vec<Point>,
}

fn track(r: &RunFile) -> Track {
    let driver = r.memory.driver_rss_bytes;
    let mut t0 = 0.0;
    let mut starts = Vec::new();
    let mut points = Vec::new();
    for p in &r.phases {
        starts.push((t0, p.phase.clone()));
        let mut span = p.runtime_ms / 1000.0;
        for s in &p.timeline {
            span = span.max(s.t);
            points.push(Point {
                t: t0 + s.t,
                used: budget::used_at(s, driver).map(|b| b as f64),
                cache: s.page_cache_bytes.map(|b| b as f64),
                engine: s.engine_memory_bytes.filter(|b| *b > 0).map(|b| b as f64),
                cgroup: s.cgroup_bytes.map(|b| b as f64),
                capacity: s.cache_capacity_bytes.map(|b| b as f64),
                hit: s.cache_hit_ratio.map(|h| h * 100.0),
            });
        }
        t0 += span;
    }
    Track {
        starts,
        end: t0,
        points,
    }
}

/// The unit of a memory axis reaching `max` bytes: its size and name.
fn unit(max: f64) -> (f64, &'static str) {
    if max >= 8.0 * (1u64 << 30) as f64 {
        ((1u64 << 30) as f64, "GiB")
    } else {
        ((1u64 << 20) as f64, "MiB")
    }
}

/// Vertical lines at the phase starts (after the first) and the phase names on top.
fn phase_marks<DB: DrawingBackend, X, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    tr: &Track,
    y_top: f64,
) -> Result<()>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    // names of phases too close to the previous one go a line lower
    let (x0, x1) = (chart.x_range().start, chart.x_range().end);
    let mut prev: Option<f64> = None;
    let mut line = 0;
    for (i, (t, name)) in tr.starts.iter().enumerate() {
        line = match prev {
            Some(p) if (t - p) < (x1 - x0) * 0.07 => (line + 1) % 3,
            _ => 0,
        };
        prev = Some(*t);
        let y = y_top * (1.0 - 0.075 * line as f64);
        if i > 0 {
            chart
                .draw_series(DashedLineSeries::new(
                    [(*t, 0.0), (*t, y_top)],
                    4,
                    4,
                    GREY.stroke_width(1),
                ))
                .map_err(de)?;
        }
        let label = if name == "warmup" { "warm-up" } else { name };
        chart
            .draw_series([Text::new(
                label.to_string(),
                (*t + (x1 - x0) * 0.004, y),
                font(13).pos(Pos::new(HPos::Left, VPos::Top)),
            )])
            .map_err(de)?;
    }
    Ok(())
}

impl Chart for Memory<'_> {
    fn size(&self) -> (u32, u32) {
        (W, (230 + 240 * self.group.runs.len() as u32).max(H))
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()> {
        let mut cap = caption_for(self.ds, &[self.group]);
        cap.push(format!(
            "Memory used: the process's resident memory beyond the driver's own (measured \
             before the engine opened) plus the OS page cache of the engine's files, at the \
             end of each sampling interval (about 1 s); the page cache alone dashed; the \
             engine's own accounting (its memory.* gauges) thin where it reports them. \
             Black dashed: the budget; red: {:.0}% of it, above which an engine is over \
             budget (judged on each phase's peak). Phases (load, warm-up, run) one after \
             another. Right: the engine's cache hit ratio per interval, where it counts hits.",
            OVER_BUDGET * 100.0
        ));
        if governed(self.group) {
            cap.push(
                "Dotted: the cache capacity the driver's memory governor set, for an engine \
                 whose cache it resizes to hold the measured memory within the budget."
                    .to_string(),
            );
        }
        let body = frame(
            root,
            &format!("{}: memory over time, {}", self.ds.title, self.group.label),
            &cap,
        )?;
        let tracks: Vec<Track> = self.group.runs.iter().map(|e| track(&e.run)).collect();
        let t_max = tracks.iter().map(|t| t.end).fold(1.0, f64::max);
        let hits = tracks
            .iter()
            .any(|t| t.points.iter().any(|p| p.hit.is_some()));
        let panels = body
            .margin(0, 0, 10, 10)
            .split_evenly((self.group.runs.len(), 1));
        for (i, ((e, tr), area)) in self.group.runs.iter().zip(&tracks).zip(&panels).enumerate() {
            let last = i + 1 == self.group.runs.len();
            self.panel(e, tr, area, t_max, hits, last)?;
        }
        Ok(())
    }
}

impl Memory<'_> {
    /// The line over an engine's panels: where it stands against its budget.
    fn title(&self, e: &Entry, tr: &Track) -> String {
        let r = &e.run;
        let over = budget::over(r);
        let peak = budget::peak_phase(r);
        let mut t = format!("{}: ", e.label);
        if over.is_some() {
            t.push_str("OVER BUDGET, ");
        }
        t.push_str(&match (peak, r.memory.budget_bytes, over) {
            (_, _, Some(o @ (Over::Killed { .. } | Over::Refused | Over::RefusedOpen))) => {
                o.detail()
            }
            (Some(m), Some(b), _) => format!(
                "peak used {} of a {} budget ({:.2}); bound: {}",
                human_bytes(m.peak_used_bytes),
                human_bytes(b),
                m.used_over_budget.unwrap_or(0.0),
                budget::bound(r)
            ),
            (Some(m), None, _) => {
                format!("peak used {}, no budget", human_bytes(m.peak_used_bytes))
            }
            (None, _, _) if tr.points.is_empty() => "no memory samples in this result".into(),
            (None, _, _) => "no memory figures".into(),
        });
        t
    }

    fn panel<DB: DrawingBackend>(
        &self,
        e: &Entry,
        tr: &Track,
        area: &DrawingArea<DB, Shift>,
        t_max: f64,
        hits: bool,
        last: bool,
    ) -> Result<()> {
        let colour = engine_colour(self.ds, &e.label);
        let r = &e.run;
        let (head, area) = area.split_vertically(26);
        let head_style = if budget::over(r).is_some() {
            bold(15).color(&STALL_COLOUR)
        } else {
            bold(15)
        };
        head.draw(&Text::new(
            self.title(e, tr),
            (92, 6),
            head_style.pos(Pos::new(HPos::Left, VPos::Top)),
        ))
        .map_err(de)?;
        let (area, legend_area) = area.split_horizontally(area.dim_in_pixel().0 - 230);
        let (mem_area, hit_area) = if hits {
            let w = area.dim_in_pixel().0;
            let (a, b) = area.split_horizontally(w * 64 / 100);
            (a, Some(b))
        } else {
            (area, None)
        };
        let top = tr
            .points
            .iter()
            .flat_map(|p| [p.used, p.cache, p.engine, p.cgroup, p.capacity])
            .flatten()
            .chain(r.memory.budget_bytes.map(|b| b as f64 * OVER_BUDGET))
            .fold(1024.0 * 1024.0, f64::max);
        let (size, unit_name) = unit(top);
        let budget = r.memory.budget_bytes.map(|b| b as f64 / size);
        let y_max = top / size * 1.22;
        let mut legend = Vec::new();
        let mut chart = ChartBuilder::on(&mem_area)
            .margin(6)
            .margin_right(12)
            .x_label_area_size(if last { 46 } else { 26 })
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..t_max * 1.02, 0.0..y_max)
            .map_err(de)?;
        chart
            .configure_mesh()
            .x_desc(if last {
                "time since the first phase started (s)"
            } else {
                ""
            })
            .y_desc(format!("memory ({unit_name})"))
            .y_labels(5)
            .x_labels(10)
            .x_label_formatter(&tick)
            .y_label_formatter(&tick)
            .axis_desc_style(font(16))
            .label_style(font(13))
            .light_line_style(RGBColor(240, 240, 240))
            .bold_line_style(RGBColor(215, 215, 215))
            .draw()
            .map_err(de)?;
        phase_marks(&mut chart, tr, y_max)?;
        if let Some(b) = budget {
            chart
                .draw_series(DashedLineSeries::new(
                    [(0.0, b), (t_max * 1.02, b)],
                    8,
                    5,
                    BLACK.stroke_width(2),
                ))
                .map_err(de)?;
            legend.push((
                format!("budget {}", human_bytes((b * size) as u64)),
                Swatch::Dashed(BLACK),
            ));
            chart
                .draw_series(DashedLineSeries::new(
                    [(0.0, b * OVER_BUDGET), (t_max * 1.02, b * OVER_BUDGET)],
                    3,
                    4,
                    STALL_COLOUR.stroke_width(1),
                ))
                .map_err(de)?;
            legend.push((
                format!("{:.0}% of budget", OVER_BUDGET * 100.0),
                Swatch::Dashed(STALL_COLOUR),
            ));
        }
        let series = |f: fn(&Point) -> Option<f64>| -> Vec<(f64, f64)> {
            tr.points
                .iter()
                .filter_map(|p| f(p).map(|v| (p.t, v / size)))
                .collect()
        };
        let used = series(|p| p.used);
        chart
            .draw_series(LineSeries::new(
                used.iter().copied(),
                colour.stroke_width(2),
            ))
            .map_err(de)?;
        chart
            .draw_series(used.iter().map(|p| Circle::new(*p, 2, colour.filled())))
            .map_err(de)?;
        legend.push(("memory used".to_string(), Swatch::Line(colour)));
        let cache = series(|p| p.cache);
        if !cache.is_empty() {
            chart
                .draw_series(DashedLineSeries::new(cache, 6, 4, colour.stroke_width(2)))
                .map_err(de)?;
            legend.push(("of it OS page cache".to_string(), Swatch::Dashed(colour)));
        }
        let own = series(|p| p.engine);
        if !own.is_empty() {
            chart
                .draw_series(LineSeries::new(own, colour.mix(0.55).stroke_width(1)))
                .map_err(de)?;
            legend.push(("engine's own accounting".to_string(), Swatch::Line(GREY)));
        }
        let capacity = series(|p| p.capacity);
        if !capacity.is_empty() {
            chart
                .draw_series(DashedLineSeries::new(
                    capacity,
                    2,
                    3,
                    colour.mix(0.8).stroke_width(1),
                ))
                .map_err(de)?;
            legend.push((
                "cache capacity (governed)".to_string(),
                Swatch::Dashed(GREY),
            ));
        }
        let cg = series(|p| p.cgroup);
        if !cg.is_empty() {
            chart
                .draw_series(LineSeries::new(cg, BLACK.mix(0.5).stroke_width(1)))
                .map_err(de)?;
            legend.push((
                "cgroup charge (driver incl.)".to_string(),
                Swatch::Line(BLACK),
            ));
        }
        if tr.points.is_empty() {
            chart
                .draw_series([Text::new(
                    "no memory samples in this result",
                    (t_max / 2.0, y_max / 2.0),
                    font(16).pos(Pos::new(HPos::Center, VPos::Center)),
                )])
                .map_err(de)?;
        }
        if let Some(hit_area) = hit_area {
            self.hit_panel(tr, &hit_area, t_max, colour, last)?;
        }
        legend_box(&legend_area, &legend, 30)
    }

    fn hit_panel<DB: DrawingBackend>(
        &self,
        tr: &Track,
        area: &DrawingArea<DB, Shift>,
        t_max: f64,
        colour: RGBColor,
        last: bool,
    ) -> Result<()> {
        let mut chart = ChartBuilder::on(area)
            .margin(6)
            .margin_right(12)
            .x_label_area_size(if last { 46 } else { 26 })
            .y_label_area_size(56)
            .build_cartesian_2d(0.0..t_max * 1.02, 0.0..110.0)
            .map_err(de)?;
        chart
            .configure_mesh()
            .x_desc(if last { "time (s)" } else { "" })
            .y_desc("cache hit ratio (%)")
            .y_labels(6)
            .x_labels(5)
            .x_label_formatter(&tick)
            .y_label_formatter(&|v| if *v <= 100.0 { tick(v) } else { String::new() })
            .axis_desc_style(font(16))
            .label_style(font(13))
            .light_line_style(RGBColor(240, 240, 240))
            .bold_line_style(RGBColor(215, 215, 215))
            .draw()
            .map_err(de)?;
        phase_marks(&mut chart, tr, 110.0)?;
        let hit: Vec<(f64, f64)> = tr
            .points
            .iter()
            .filter_map(|p| p.hit.map(|h| (p.t, h)))
            .collect();
        if hit.is_empty() {
            chart
                .draw_series([Text::new(
                    "no hit ratio reported",
                    (t_max / 2.0, 50.0),
                    font(14).pos(Pos::new(HPos::Center, VPos::Center)),
                )])
                .map_err(de)?;
            return Ok(());
        }
        chart
            .draw_series(LineSeries::new(hit.iter().copied(), colour.stroke_width(2)))
            .map_err(de)?;
        chart
            .draw_series(hit.iter().map(|p| Circle::new(*p, 2, colour.filled())))
            .map_err(de)?;
        Ok(())
    }
}
