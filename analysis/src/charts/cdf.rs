//! Chart 5: the run-phase latency distribution per engine, from the HDR histograms.

use super::axis::{frac_tick, tick, y_log_bounds};
use super::caption::caption_for;
use super::frame::{frame, no_data};
use super::latency::run_ops;
use super::render::{Chart, de};
use super::style::{GREY, TEXT_GREY, bold, engine_colour, font};
use crate::dataset::{Dataset, Entry, Group};
use crate::error::Result;
use crate::hist;
use crate::text::human_count;
use crate::warning::Warning;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Chart 5 of a group (and the paper's Table 5 CDFs).
pub(crate) struct Cdf<'a> {
    pub(crate) ds: &'a Dataset,
    pub(crate) group: &'a Group,
    /// Decoded once (a bad histogram is reported once, not per backend).
    pub(crate) curves: Vec<Curve<'a>>,
}

/// The run-phase latency distribution of one engine, all op kinds together.
pub(crate) struct Curve<'a> {
    pub(crate) entry: &'a Entry,
    /// (µs, cumulative fraction)
    pub(crate) points: Vec<(f64, f64)>,
    /// From the intended-start histograms (the run had a target rate).
    pub(crate) intended: bool,
    pub(crate) ops: u64,
}

/// The run-phase latency distribution of an engine; a histogram that does not
/// decode is left out with a warning.
pub(crate) fn engine_cdf<'a>(e: &'a Entry, warnings: &mut Vec<Warning>) -> Option<Curve<'a>> {
    let ops = run_ops(&e.run);
    let intended = ops.iter().any(|o| o.is_intended());
    let mut hs = Vec::new();
    for o in ops.iter().filter(|o| o.is_intended() == intended) {
        match hist::decode(&o.histogram_v2_base64) {
            Ok(h) => hs.push(h),
            Err(error) => warnings.push(Warning::Histogram {
                path: e.path.clone(),
                op: o.name.clone(),
                error,
            }),
        }
    }
    let h = hist::merge(&hs)?;
    Some(Curve {
        entry: e,
        points: hist::cdf_us(&h),
        intended,
        ops: h.len(),
    })
}

impl Chart for Cdf<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()> {
        let curves = &self.curves;
        let mut cap = caption_for(self.ds, &[self.group]);
        let intended: Vec<&str> = curves
            .iter()
            .filter(|c| c.intended)
            .map(|c| c.entry.label.as_str())
            .collect();
        cap.push(format!(
            "All operation kinds of the run phase together, from the HDR histograms (3 significant digits).{}",
            if intended.is_empty() {
                String::new()
            } else {
                format!(
                    " Measured from each operation's intended start (coordinated omission corrected) for: {}.",
                    intended.join(", ")
                )
            }
        ));
        let body = frame(
            root,
            &format!(
                "{}: run-phase latency distribution, {}",
                self.ds.title, self.group.label
            ),
            &cap,
        )?;
        if curves.is_empty() {
            return no_data(&body, "no latency histograms in these results");
        }
        let x_lo = curves
            .iter()
            .flat_map(|c| c.points.first().map(|p| p.0))
            .fold(f64::INFINITY, f64::min);
        let x_hi = curves
            .iter()
            .flat_map(|c| c.points.last().map(|p| p.0))
            .fold(0.0, f64::max);
        let (x_lo, x_hi) = y_log_bounds(x_lo, x_hi);
        let (left, right) = body.margin(0, 0, 10, 10).split_horizontally(620);

        // left: the CDF
        let mut chart = ChartBuilder::on(&left)
            .caption("CDF", bold(18))
            .margin(10)
            .margin_right(24)
            .x_label_area_size(52)
            .y_label_area_size(70)
            .build_cartesian_2d((x_lo..x_hi).log_scale(), 0.0..100.0)
            .map_err(de)?;
        chart
            .configure_mesh()
            .x_desc("latency (µs, log scale)")
            .y_desc("operations at or below (%)")
            .x_label_formatter(&tick)
            .y_label_formatter(&tick)
            .axis_desc_style(font(16))
            .label_style(font(14))
            .light_line_style(RGBColor(240, 240, 240))
            .bold_line_style(RGBColor(215, 215, 215))
            .draw()
            .map_err(de)?;
        for c in curves {
            let (e, pts, n) = (c.entry, &c.points, c.ops);
            let colour = engine_colour(self.ds, &e.label);
            chart
                .draw_series(LineSeries::new(
                    steps(pts).into_iter().map(|(x, f)| (x, f * 100.0)),
                    colour.stroke_width(2),
                ))
                .map_err(de)?
                .label(format!("{} ({} ops)", e.label, human_count(n as f64)))
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 16, y)], colour.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.9))
            .border_style(RGBColor(180, 180, 180))
            .label_font(font(14))
            .draw()
            .map_err(de)?;

        // right: the tail, 1 - CDF on a log scale
        let min_tail = curves
            .iter()
            .map(|c| 1.0 / c.ops.max(1) as f64)
            .fold(1.0, f64::min)
            .max(1e-7);
        let y_lo = 10f64.powf(min_tail.log10().floor());
        let mut chart = ChartBuilder::on(&right)
            .caption("Tail: fraction of operations slower than x", bold(18))
            .margin(10)
            .margin_right(60)
            .x_label_area_size(52)
            .y_label_area_size(84)
            .build_cartesian_2d((x_lo..x_hi).log_scale(), (y_lo..1.0).log_scale())
            .map_err(de)?;
        chart
            .configure_mesh()
            .x_desc("latency (µs, log scale)")
            .y_desc("fraction slower (log scale)")
            .x_label_formatter(&tick)
            .y_label_formatter(&frac_tick)
            .axis_desc_style(font(16))
            .label_style(font(14))
            .light_line_style(RGBColor(240, 240, 240))
            .bold_line_style(RGBColor(215, 215, 215))
            .draw()
            .map_err(de)?;
        for (q, name) in [(1e-2, "p99"), (1e-3, "p99.9"), (1e-4, "p99.99")] {
            if q < y_lo {
                continue;
            }
            chart
                .draw_series(DashedLineSeries::new(
                    [(x_lo, q), (x_hi, q)],
                    6,
                    6,
                    GREY.stroke_width(1),
                ))
                .map_err(de)?;
            chart
                .draw_series([EmptyElement::at((x_hi, q))
                    + Text::new(
                        name,
                        (6, 0),
                        font(13)
                            .color(&TEXT_GREY)
                            .pos(Pos::new(HPos::Left, VPos::Center)),
                    )])
                .map_err(de)?;
        }
        for c in curves {
            let (e, pts) = (c.entry, &c.points);
            let colour = engine_colour(self.ds, &e.label);
            let tail: Vec<(f64, f64)> = steps(pts)
                .into_iter()
                .map(|(x, f)| (x, 1.0 - f))
                .filter(|p| p.1 >= y_lo * 0.999)
                .collect();
            chart
                .draw_series(LineSeries::new(tail, colour.stroke_width(2)))
                .map_err(de)?
                .label(e.label.clone())
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 16, y)], colour.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.9))
            .border_style(RGBColor(180, 180, 180))
            .label_font(font(14))
            .draw()
            .map_err(de)?;
        Ok(())
    }
}

/// A staircase through the CDF points: flat until the next bucket, then up; starts
/// at 0 at the first value.
fn steps(pts: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(pts.len() * 2 + 1);
    let mut prev_f = 0.0;
    for &(x, f) in pts {
        out.push((x, prev_f));
        out.push((x, f));
        prev_f = f;
    }
    out
}
