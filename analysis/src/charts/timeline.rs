//! Chart 3: run-phase throughput per sampling interval, one panel per engine, with
//! warm-up and stalls marked.

use super::axis::tick;
use super::caption::caption_for;
use super::frame::frame;
use super::legend::{Swatch, legend_box};
use super::render::{Chart, de};
use super::style::{H, STALL_COLOUR, W, bold, engine_colour, font};
use crate::budget;
use crate::dataset::{Dataset, Entry, Group};
use crate::error::Result;
use crate::model::Phase;
use crate::text::human_count;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Chart 3 of a group (and the paper's Figs. 4 and 7).
pub(crate) struct Timeline<'a> {
    pub(crate) ds: &'a Dataset,
    pub(crate) group: &'a Group,
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

/// Samples of the run phase below this fraction of the median rate count as stalls.
const STALL_FRACTION: f64 = 0.1;

impl Chart for Timeline<'_> {
    fn size(&self) -> (u32, u32) {
        (W, (230 + 210 * self.group.runs.len() as u32).max(H))
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()> {
        let mut cap = caption_for(self.ds, &[self.group]);
        cap.push(format!(
            "One point per sampling interval (about 1 s). Shaded: warm-up (not measured). \
             Red crosses: stalls, intervals below {:.0}% of the engine's median rate. \
             Each engine has its own y scale.",
            STALL_FRACTION * 100.0
        ));
        let body = frame(
            root,
            &format!(
                "{}: run-phase throughput over time, {}",
                self.ds.title, self.group.label
            ),
            &cap,
        )?;
        let t_max = self
            .group
            .runs
            .iter()
            .filter_map(|e| e.run.run())
            .flat_map(|p| p.timeline.iter().map(|s| s.t))
            .fold(1.0, f64::max);
        let panels = body
            .margin(0, 0, 10, 10)
            .split_evenly((self.group.runs.len(), 1));
        for (i, (e, area)) in self.group.runs.iter().zip(&panels).enumerate() {
            let last = i + 1 == self.group.runs.len();
            self.panel(e, area, t_max, last)?;
        }
        Ok(())
    }
}

impl Timeline<'_> {
    fn panel<DB: DrawingBackend>(
        &self,
        e: &Entry,
        area: &DrawingArea<DB, Shift>,
        t_max: f64,
        last: bool,
    ) -> Result<()> {
        let colour = engine_colour(self.ds, &e.label);
        let empty = Phase::default();
        let p = e.run.run().unwrap_or(&empty);
        let ts = &p.timeline;
        let y_max = ts
            .iter()
            .map(|s| s.ops_per_sec)
            .fold(p.throughput_ops_sec, f64::max)
            .max(e.run.driving.target_ops.unwrap_or(0.0))
            .max(1.0)
            * 1.18;
        let (area, legend_area) = area.split_horizontally(area.dim_in_pixel().0 - 230);
        let mut legend = Vec::new();
        let mut chart = ChartBuilder::on(&area)
            .caption(
                format!(
                    "{}: {} sample{}, run average {} ops/s{}{}",
                    e.label,
                    ts.len(),
                    if ts.len() == 1 { "" } else { "s" },
                    human_count(p.throughput_ops_sec),
                    if ts.len() < 3 {
                        " (too short a run for a timeline: see --duration)"
                    } else {
                        ""
                    },
                    match budget::over(&e.run) {
                        Some(o) => format!(" [{}]", o.flag()),
                        None => String::new(),
                    }
                ),
                bold(16),
            )
            .margin(6)
            .margin_right(12)
            .x_label_area_size(if last { 46 } else { 26 })
            .y_label_area_size(78)
            .build_cartesian_2d(0.0..t_max * 1.02, 0.0..y_max)
            .map_err(de)?;
        chart
            .configure_mesh()
            .x_desc(if last {
                "time since the run phase started (s)"
            } else {
                ""
            })
            .y_desc("ops/s")
            .y_labels(5)
            .x_labels(12)
            .x_label_formatter(&tick)
            .y_label_formatter(&tick)
            .axis_desc_style(font(16))
            .label_style(font(14))
            .light_line_style(RGBColor(240, 240, 240))
            .bold_line_style(RGBColor(215, 215, 215))
            .draw()
            .map_err(de)?;
        // the warm-up as configured, or as far as samples say it went
        let warm_end = ts
            .iter()
            .filter(|s| s.warmup)
            .map(|s| s.t)
            .fold(e.run.driving.warmup_s, f64::max);
        if warm_end > 0.0 {
            chart
                .draw_series([Rectangle::new(
                    [(0.0, 0.0), (warm_end, y_max)],
                    RGBColor(225, 225, 225).mix(0.6).filled(),
                )])
                .map_err(de)?;
            legend.push((
                "warm-up (not measured)".to_string(),
                Swatch::Fill(RGBColor(215, 215, 215)),
            ));
        }
        if p.throughput_ops_sec > 0.0 {
            chart
                .draw_series(DashedLineSeries::new(
                    [
                        (0.0, p.throughput_ops_sec),
                        (t_max * 1.02, p.throughput_ops_sec),
                    ],
                    8,
                    5,
                    colour.mix(0.6).stroke_width(1),
                ))
                .map_err(de)?;
            legend.push(("run-phase average".to_string(), Swatch::Dashed(colour)));
        }
        if let Some(target) = e.run.driving.target_ops.filter(|t| *t > 0.0) {
            chart
                .draw_series(DashedLineSeries::new(
                    [(0.0, target), (t_max * 1.02, target)],
                    3,
                    4,
                    BLACK.stroke_width(1),
                ))
                .map_err(de)?;
            legend.push((
                format!("target rate ({} ops/s)", human_count(target)),
                Swatch::Dashed(BLACK),
            ));
        }
        chart
            .draw_series(LineSeries::new(
                ts.iter().map(|s| (s.t, s.ops_per_sec)),
                colour.stroke_width(2),
            ))
            .map_err(de)?;
        legend.push((
            format!("{} ops/s per interval", e.label),
            Swatch::Line(colour),
        ));
        chart
            .draw_series(
                ts.iter()
                    .filter(|s| !s.warmup)
                    .map(|s| Circle::new((s.t, s.ops_per_sec), 3, colour.filled())),
            )
            .map_err(de)?;
        if ts.iter().any(|s| s.warmup) {
            chart
                .draw_series(
                    ts.iter()
                        .filter(|s| s.warmup)
                        .map(|s| Circle::new((s.t, s.ops_per_sec), 4, colour.stroke_width(2))),
                )
                .map_err(de)?;
            legend.push(("warm-up sample".to_string(), Swatch::Hollow(colour)));
        }
        let med = median(
            ts.iter()
                .filter(|s| !s.warmup)
                .map(|s| s.ops_per_sec)
                .collect(),
        );
        if let Some(m) = med {
            let stalls: Vec<_> = ts
                .iter()
                .filter(|s| !s.warmup && s.ops_per_sec < m * STALL_FRACTION)
                .map(|s| Cross::new((s.t, s.ops_per_sec), 6, STALL_COLOUR.stroke_width(3)))
                .collect();
            if !stalls.is_empty() {
                chart.draw_series(stalls).map_err(de)?;
                legend.push((
                    format!("stall (< {:.0}% of median)", STALL_FRACTION * 100.0),
                    Swatch::Cross(STALL_COLOUR),
                ));
            }
        }
        if ts.is_empty() {
            chart
                .draw_series([Text::new(
                    "no timeline samples in this result",
                    (t_max / 2.0, y_max / 2.0),
                    font(16).pos(Pos::new(HPos::Center, VPos::Center)),
                )])
                .map_err(de)?;
        }
        legend_box(&legend_area, &legend, 30)
    }
}
