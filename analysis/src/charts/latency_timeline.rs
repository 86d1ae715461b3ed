//! Chart 3b: run-phase latency percentiles per sampling interval (p50, p99, p99.9
//! and max, from each interval's HDR histogram: schema version 3), one row of panels
//! per engine and one column per operation kind, on one log scale.

use super::axis::{tick, y_log_bounds};
use super::caption::caption_for;
use super::frame::frame;
use super::latency::op_order;
use super::legend::{Swatch, legend_row};
use super::render::{Chart, de};
use super::style::{H, PCT_COLOURS, W, bold, font};
use crate::budget;
use crate::dataset::{Dataset, Entry, Group};
use crate::error::Result;
use crate::model::IntervalLatency;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Reads one percentile off an interval's latencies.
type Percentile = fn(&IntervalLatency) -> f64;

/// The percentiles drawn, with their legend names, lightest (p50) to darkest (max).
const PERCENTILES: [(&str, Percentile); 4] = [
    ("p50", |l| l.p50_us),
    ("p99", |l| l.p99_us),
    ("p99.9", |l| l.p999_us),
    ("max", |l| l.max_us),
];
const WARMUP_SHADE: RGBColor = RGBColor(225, 225, 225);

/// Whether any run of `g` has per-interval latencies in its run phase.
pub(crate) fn has_interval_latency(g: &Group) -> bool {
    g.runs.iter().any(|e| {
        e.run
            .run()
            .is_some_and(|p| p.timeline.iter().any(|s| !s.latency.is_empty()))
    })
}

/// Chart 3b of a group.
pub(crate) struct LatencyTimeline<'a> {
    pub(crate) ds: &'a Dataset,
    pub(crate) group: &'a Group,
}

impl LatencyTimeline<'_> {
    /// The operation kinds of the group's interval latencies, in YCSB's order.
    fn kinds(&self) -> Vec<String> {
        let mut ks: Vec<String> = Vec::new();
        for e in &self.group.runs {
            for s in e.run.run().map(|p| p.timeline.as_slice()).unwrap_or(&[]) {
                for k in s.latency.keys() {
                    if !ks.contains(k) {
                        ks.push(k.clone());
                    }
                }
            }
        }
        ks.sort_by_key(|k| op_order(k));
        ks
    }
}

impl Chart for LatencyTimeline<'_> {
    fn size(&self) -> (u32, u32) {
        (W, (250 + 230 * self.group.runs.len() as u32).max(H))
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()> {
        let mut cap = caption_for(self.ds, &[self.group]);
        cap.push(
            "One point per sampling interval (about 1 s): the percentiles of the operations \
             that completed in it (HDR histogram of the interval, 2 significant digits), \
             log scale, the same for every panel; max dashed. Shaded: warm-up (not \
             measured)."
                .into(),
        );
        let body = frame(
            root,
            &format!(
                "{}: run-phase latency over time, {}",
                self.ds.title, self.group.label
            ),
            &cap,
        )?;
        let mut legend: Vec<(String, Swatch)> = PERCENTILES
            .iter()
            .zip(PCT_COLOURS)
            .map(|((n, _), c)| {
                let sw = if *n == "max" {
                    Swatch::Dashed(c)
                } else {
                    Swatch::Line(c)
                };
                (n.to_string(), sw)
            })
            .collect();
        let warmup = self
            .group
            .runs
            .iter()
            .filter_map(|e| e.run.run())
            .any(|p| p.timeline.iter().any(|s| s.warmup));
        if warmup {
            legend.push(("warm-up".into(), Swatch::Fill(WARMUP_SHADE)));
        }
        let body = legend_row(&body.margin(0, 0, 10, 10), &legend)?;
        let kinds = self.kinds();
        let all: Vec<f64> = self
            .group
            .runs
            .iter()
            .filter_map(|e| e.run.run())
            .flat_map(|p| &p.timeline)
            .flat_map(|s| s.latency.values())
            .flat_map(|l| PERCENTILES.iter().map(move |(_, f)| f(l)))
            .filter(|v| v.is_finite() && *v > 0.0)
            .collect();
        let lo = all.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = all.iter().copied().fold(0.0, f64::max);
        let range = y_log_bounds(if lo.is_finite() { lo } else { 1.0 }, hi.max(1.0));
        let t_max = self
            .group
            .runs
            .iter()
            .filter_map(|e| e.run.run())
            .flat_map(|p| p.timeline.iter().map(|s| s.t))
            .fold(1.0, f64::max);
        let rows = self.group.runs.len().max(1);
        let cols = kinds.len().max(1);
        let cells = body.split_evenly((rows, cols));
        for (r, e) in self.group.runs.iter().enumerate() {
            for (c, k) in kinds.iter().enumerate() {
                let panel = Panel {
                    e,
                    kind: k,
                    range,
                    t_max,
                    first_col: c == 0,
                    last_row: r + 1 == rows,
                };
                panel.draw(&cells[r * cols + c])?;
            }
        }
        Ok(())
    }
}

/// One engine's percentiles of one operation kind over the run phase.
struct Panel<'a> {
    e: &'a Entry,
    kind: &'a str,
    range: (f64, f64),
    t_max: f64,
    first_col: bool,
    last_row: bool,
}

impl Panel<'_> {
    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<()> {
        let timeline = self
            .e
            .run
            .run()
            .map(|p| p.timeline.as_slice())
            .unwrap_or(&[]);
        let pts: Vec<(f64, bool, &IntervalLatency)> = timeline
            .iter()
            .filter_map(|s| Some((s.t, s.warmup, s.latency.get(self.kind)?)))
            .filter(|(_, _, l)| l.count > 0)
            .collect();
        let mut title = format!("{}: {}", self.e.label, self.kind);
        if let Some(o) = budget::over(&self.e.run) {
            title.push_str(&format!(" [{}]", o.flag()));
        }
        let x_end = self.t_max * 1.02;
        let (lo, hi) = self.range;
        let mut chart = ChartBuilder::on(area)
            .caption(title, bold(15))
            .margin(4)
            .margin_right(14)
            .x_label_area_size(if self.last_row { 44 } else { 22 })
            .y_label_area_size(if self.first_col { 72 } else { 48 })
            .build_cartesian_2d(0.0..x_end, (lo..hi).log_scale())
            .map_err(de)?;
        chart
            .configure_mesh()
            .x_desc(if self.last_row {
                "time since the run phase started (s)"
            } else {
                ""
            })
            .y_desc(if self.first_col {
                "latency (µs, log scale)"
            } else {
                ""
            })
            .x_labels(8)
            .x_label_formatter(&tick)
            .y_label_formatter(&tick)
            .axis_desc_style(font(14))
            .label_style(font(13))
            .light_line_style(RGBColor(240, 240, 240))
            .bold_line_style(RGBColor(215, 215, 215))
            .draw()
            .map_err(de)?;
        let warm_end = pts.iter().filter(|p| p.1).map(|p| p.0).fold(0.0, f64::max);
        if warm_end > 0.0 {
            chart
                .draw_series([Rectangle::new(
                    [(0.0, lo), (warm_end, hi)],
                    WARMUP_SHADE.mix(0.6).filled(),
                )])
                .map_err(de)?;
        }
        if pts.is_empty() {
            chart
                .draw_series([Text::new(
                    format!("no per-interval {} latency in this result", self.kind),
                    (x_end / 2.0, (lo * hi).sqrt()),
                    font(14).pos(Pos::new(HPos::Center, VPos::Center)),
                )])
                .map_err(de)?;
            return Ok(());
        }
        for ((name, f), colour) in PERCENTILES.iter().zip(PCT_COLOURS) {
            let line: Vec<(f64, f64)> = pts
                .iter()
                .map(|(t, _, l)| (*t, f(l)))
                .filter(|(_, v)| v.is_finite() && *v > 0.0)
                .collect();
            if *name == "max" {
                chart
                    .draw_series(DashedLineSeries::new(
                        line.clone(),
                        7,
                        4,
                        colour.stroke_width(2),
                    ))
                    .map_err(de)?;
            } else {
                chart
                    .draw_series(LineSeries::new(line.clone(), colour.stroke_width(2)))
                    .map_err(de)?;
            }
            if line.len() < 40 {
                chart
                    .draw_series(line.iter().map(|p| Circle::new(*p, 3, colour.filled())))
                    .map_err(de)?;
            }
        }
        Ok(())
    }
}
