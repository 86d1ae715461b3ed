//! Line charts: one line per series, linear or log on either axis, with the paper's
//! points as hollow circles and text beside points.

use super::axis::{tick, y_log_bounds};
use super::frame::no_data;
use super::render::de;
use super::style::{bold, font};
use crate::error::Result;
use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// One line of a line chart.
pub(crate) struct Line {
    /// Its legend entry; empty: none (the figure's legend names it), and a panel
    /// with no named line and none of the paper's points draws no legend.
    pub(crate) name: String,
    pub(crate) colour: RGBColor,
    pub(crate) points: Vec<(f64, f64)>,
    pub(crate) dashed: bool,
}

/// A line chart panel, linear or log on either axis.
pub(crate) struct Lines {
    pub(crate) title: String,
    pub(crate) x_desc: String,
    pub(crate) y_desc: String,
    pub(crate) log_x: bool,
    pub(crate) log_y: bool,
    pub(crate) lines: Vec<Line>,
    /// The paper's points: hollow black circles with a label.
    pub(crate) refs: Vec<(String, f64, f64)>,
    /// Text beside points of ours.
    pub(crate) labels: Vec<(f64, f64, String)>,
    /// Fixed upper end of a linear y axis.
    pub(crate) y_max: Option<f64>,
    pub(crate) legend_left: bool,
}

fn positive(v: f64, log: bool) -> bool {
    v.is_finite() && (!log || v > 0.0)
}

impl Lines {
    pub(crate) fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<()> {
        let pts: Vec<(f64, f64)> = self
            .lines
            .iter()
            .flat_map(|l| l.points.iter().copied())
            .chain(self.refs.iter().map(|r| (r.1, r.2)))
            .filter(|(x, y)| positive(*x, self.log_x) && positive(*y, self.log_y))
            .collect();
        if pts.is_empty() {
            return no_data(area, &format!("{}: no data", self.title));
        }
        let (x_lo, x_hi) = pts.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |a, p| {
            (a.0.min(p.0), a.1.max(p.0))
        });
        let (y_lo, y_hi) = pts.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |a, p| {
            (a.0.min(p.1), a.1.max(p.1))
        });
        let xr = if self.log_x {
            (x_lo / 1.4, x_hi * 1.4)
        } else {
            // linear x is time here: from 0
            (0.0_f64.min(x_lo), x_hi.max(1e-9) * 1.03)
        };
        let yr = if self.log_y {
            y_log_bounds(y_lo, y_hi)
        } else {
            (
                0.0,
                self.y_max
                    .unwrap_or(if y_hi > 0.0 { y_hi * 1.18 } else { 1.0 }),
            )
        };
        match (self.log_x, self.log_y) {
            (true, true) => self.draw_on(area, (xr.0..xr.1).log_scale(), (yr.0..yr.1).log_scale()),
            (true, false) => self.draw_on(area, (xr.0..xr.1).log_scale(), yr.0..yr.1),
            (false, true) => self.draw_on(area, xr.0..xr.1, (yr.0..yr.1).log_scale()),
            (false, false) => self.draw_on(area, xr.0..xr.1, yr.0..yr.1),
        }
    }

    fn draw_on<DB: DrawingBackend, X, Y>(
        &self,
        area: &DrawingArea<DB, Shift>,
        x: X,
        y: Y,
    ) -> Result<()>
    where
        X: AsRangedCoord<Value = f64>,
        X::CoordDescType: ValueFormatter<f64>,
        Y: AsRangedCoord<Value = f64>,
        Y::CoordDescType: ValueFormatter<f64>,
    {
        let mut chart = ChartBuilder::on(area)
            .caption(&self.title, bold(17))
            .margin(10)
            .margin_right(24)
            .x_label_area_size(52)
            .y_label_area_size(78)
            .build_cartesian_2d(x, y)
            .map_err(de)?;
        chart
            .configure_mesh()
            .x_desc(&self.x_desc)
            .y_desc(&self.y_desc)
            .x_label_formatter(&tick)
            .y_label_formatter(&tick)
            .axis_desc_style(font(15))
            .label_style(font(13))
            .light_line_style(RGBColor(240, 240, 240))
            .bold_line_style(RGBColor(215, 215, 215))
            .draw()
            .map_err(de)?;
        let (lx, ly) = (self.log_x, self.log_y);
        let ok = move |p: &(f64, f64)| positive(p.0, lx) && positive(p.1, ly);
        for l in &self.lines {
            let colour = l.colour;
            let pts: Vec<(f64, f64)> = l.points.iter().copied().filter(ok).collect();
            let anno = if l.dashed {
                chart
                    .draw_series(DashedLineSeries::new(
                        pts.clone(),
                        8,
                        5,
                        colour.stroke_width(2),
                    ))
                    .map_err(de)?
            } else {
                chart
                    .draw_series(LineSeries::new(pts.clone(), colour.stroke_width(2)))
                    .map_err(de)?
            };
            // an unnamed line stays out of the legend (a figure's own legend names it)
            if !l.name.is_empty() {
                anno.label(l.name.clone()).legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 16, y)], colour.stroke_width(2))
                });
            }
            if pts.len() < 40 {
                chart
                    .draw_series(pts.iter().map(|p| Circle::new(*p, 4, colour.filled())))
                    .map_err(de)?;
            }
        }
        let refs: Vec<_> = self.refs.iter().filter(|r| ok(&(r.1, r.2))).collect();
        if !refs.is_empty() {
            chart
                .draw_series(refs.iter().map(|r| {
                    EmptyElement::at((r.1, r.2))
                        + Circle::new((0, 0), 7, BLACK.stroke_width(2))
                        + Text::new(
                            r.0.clone(),
                            (10, -2),
                            font(13).pos(Pos::new(HPos::Left, VPos::Bottom)),
                        )
                }))
                .map_err(de)?
                .label("the paper (docs/paper-numbers.md)")
                .legend(|(x, y)| Circle::new((x + 8, y), 5, BLACK.stroke_width(2)));
        }
        let labels: Vec<_> = self
            .labels
            .iter()
            .filter(|l| ok(&(l.0, l.1)))
            .map(|l| {
                EmptyElement::at((l.0, l.1))
                    + Text::new(
                        l.2.clone(),
                        (0, -8),
                        font(12).pos(Pos::new(HPos::Center, VPos::Bottom)),
                    )
            })
            .collect();
        chart.draw_series(labels).map_err(de)?;
        if refs.is_empty() && self.lines.iter().all(|l| l.name.is_empty()) {
            return Ok(());
        }
        chart
            .configure_series_labels()
            .position(if self.legend_left {
                SeriesLabelPosition::UpperLeft
            } else {
                SeriesLabelPosition::UpperRight
            })
            .background_style(WHITE.mix(0.9))
            .border_style(RGBColor(180, 180, 180))
            .label_font(font(13))
            .draw()
            .map_err(de)?;
        Ok(())
    }
}
