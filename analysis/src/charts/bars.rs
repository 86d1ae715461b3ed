//! Grouped bar charts: categories along x (optionally in labelled groups), one bar
//! per series in each category, linear or log y.

use super::axis::{tick, y_log_bounds};
use super::render::de;
use super::style::{bold, font};
use crate::error::Result;
use crate::text::human_count;
use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// A bar chart: categories along x (optionally in labelled groups), one bar per
/// series in each category.
pub(crate) struct Bars {
    pub(crate) title: String,
    pub(crate) y_desc: String,
    pub(crate) x_desc: String,
    /// (label, group index)
    pub(crate) categories: Vec<(String, usize)>,
    pub(crate) group_labels: Vec<String>,
    pub(crate) series: Vec<(String, RGBColor)>,
    /// `values[category][series]`
    pub(crate) values: Vec<Vec<Option<f64>>>,
    pub(crate) log: bool,
    /// Fixed y range (log charts sharing one scale); otherwise from the data.
    pub(crate) y_range: Option<(f64, f64)>,
    pub(crate) value_labels: bool,
    /// A horizontal mark across each category (the device's ceiling), if any.
    pub(crate) marks: Vec<Option<f64>>,
    /// A short black mark across single bars, `bar_marks[category][series]` (each
    /// run's own ceiling); unlabelled, the legend says what it is.
    pub(crate) bar_marks: Vec<Vec<Option<f64>>>,
    /// Text above single bars, `notes[category][series]`, in place of the value label.
    pub(crate) notes: Vec<Vec<Option<String>>>,
}

impl Bars {
    fn positions(&self) -> (Vec<f64>, f64) {
        let mut xs = Vec::new();
        let mut x = 0.0;
        let mut prev = None;
        for (_, g) in &self.categories {
            if prev.is_some_and(|p| p != *g) {
                x += 0.6;
            }
            xs.push(x + 0.5);
            x += 1.0;
            prev = Some(*g);
        }
        (xs, x.max(1.0))
    }

    pub(crate) fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<()> {
        let vals: Vec<f64> = self
            .values
            .iter()
            .flatten()
            .flatten()
            .chain(self.marks.iter().flatten())
            .chain(self.bar_marks.iter().flatten().flatten())
            .copied()
            .filter(|v| v.is_finite() && *v > 0.0)
            .collect();
        let max = vals.iter().copied().fold(0.0, f64::max);
        let min = vals.iter().copied().fold(f64::INFINITY, f64::min);
        if self.log {
            let (lo, hi) = self
                .y_range
                .unwrap_or_else(|| y_log_bounds(min.min(max), max));
            self.draw_on(area, (lo..hi).log_scale(), lo)
        } else {
            let hi = if max > 0.0 { max * 1.15 } else { 1.0 };
            self.draw_on(area, 0.0..hi, 0.0)
        }
    }

    fn draw_on<DB: DrawingBackend, Y>(
        &self,
        area: &DrawingArea<DB, Shift>,
        y: Y,
        y_lo: f64,
    ) -> Result<()>
    where
        Y: AsRangedCoord<Value = f64>,
        Y::CoordDescType: ValueFormatter<f64>,
    {
        let (xs, x_end) = self.positions();
        let multi_group = self.group_labels.len() > 1;
        let mut chart = ChartBuilder::on(area)
            .caption(&self.title, bold(18))
            .margin(10)
            .margin_right(20)
            .x_label_area_size(if multi_group { 74 } else { 52 })
            .y_label_area_size(78)
            .build_cartesian_2d(0.0..x_end, y)
            .map_err(de)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_labels(8)
            .y_label_formatter(&tick)
            .y_desc(&self.y_desc)
            .x_desc(&self.x_desc)
            .axis_desc_style(font(16))
            .label_style(font(14))
            .light_line_style(RGBColor(235, 235, 235))
            .bold_line_style(RGBColor(215, 215, 215))
            .draw()
            .map_err(de)?;
        let n = self.series.len().max(1) as f64;
        let bw = 0.8 / n;
        let px_per_x = chart.plotting_area().dim_in_pixel().0 as f64 / x_end;
        for (si, (_, colour)) in self.series.iter().enumerate() {
            let rects: Vec<_> = self
                .values
                .iter()
                .zip(&xs)
                .filter_map(|(row, &x)| {
                    let v = row.get(si).copied().flatten()?;
                    if !(v.is_finite() && v > y_lo) {
                        return None;
                    }
                    let x0 = x - 0.4 + bw * si as f64;
                    Some(Rectangle::new(
                        [(x0 + 0.01, y_lo), (x0 + bw - 0.01, v)],
                        colour.filled(),
                    ))
                })
                .collect();
            chart.draw_series(rects).map_err(de)?;
            let bar_marks: Vec<_> = self
                .bar_marks
                .iter()
                .zip(&xs)
                .filter_map(|(row, &x)| {
                    let m = row.get(si).copied().flatten()?;
                    if !(m.is_finite() && m > y_lo) {
                        return None;
                    }
                    let x0 = x - 0.4 + bw * si as f64;
                    Some(PathElement::new(
                        [(x0 - 0.01, m), (x0 + bw + 0.01, m)],
                        BLACK.stroke_width(3),
                    ))
                })
                .collect();
            chart.draw_series(bar_marks).map_err(de)?;
            let notes: Vec<_> = self
                .notes
                .iter()
                .zip(&self.values)
                .zip(&xs)
                .filter_map(|((row, vals), &x)| {
                    let n = row.get(si).cloned().flatten()?;
                    let v = vals.get(si).copied().flatten()?;
                    if !(v.is_finite() && v > y_lo) {
                        return None;
                    }
                    let xc = x - 0.4 + bw * (si as f64 + 0.5);
                    Some(
                        EmptyElement::at((xc, v))
                            + Text::new(
                                n,
                                (0, -3),
                                font(12).pos(Pos::new(HPos::Center, VPos::Bottom)),
                            ),
                    )
                })
                .collect();
            chart.draw_series(notes).map_err(de)?;
            if self.value_labels {
                let labels: Vec<_> = self
                    .values
                    .iter()
                    .zip(&xs)
                    .enumerate()
                    .filter_map(|(ci, (row, &x))| {
                        let v = row.get(si).copied().flatten()?;
                        if !(v.is_finite() && v > y_lo) {
                            return None;
                        }
                        if self
                            .notes
                            .get(ci)
                            .and_then(|r| r.get(si))
                            .is_some_and(Option::is_some)
                        {
                            return None;
                        }
                        let xc = x - 0.4 + bw * (si as f64 + 0.5);
                        Some(
                            EmptyElement::at((xc, v))
                                + Text::new(
                                    human_count(v),
                                    (0, -3),
                                    font(13).pos(Pos::new(HPos::Center, VPos::Bottom)),
                                ),
                        )
                    })
                    .collect();
                chart.draw_series(labels).map_err(de)?;
            }
        }
        let marks: Vec<_> = self
            .marks
            .iter()
            .zip(&xs)
            .filter_map(|(m, &x)| {
                let m = (*m)?;
                (m.is_finite() && m > y_lo).then(|| {
                    // over the first series' bar (the run phase)
                    let (x0, x1) = (x - 0.42, x - 0.38 + bw);
                    EmptyElement::at(((x0 + x1) / 2.0, m))
                        + PathElement::new(
                            [
                                (-((x1 - x0) * px_per_x / 2.0) as i32, 0),
                                (((x1 - x0) * px_per_x / 2.0) as i32, 0),
                            ],
                            BLACK.stroke_width(3),
                        )
                        + Text::new(
                            format!("ceiling {}", human_count(m)),
                            (0, -4),
                            font(13).pos(Pos::new(HPos::Center, VPos::Bottom)),
                        )
                })
            })
            .collect();
        chart.draw_series(marks).map_err(de)?;
        // category labels under the axis, group labels under those
        let cat_labels: Vec<_> = self
            .categories
            .iter()
            .zip(&xs)
            .map(|((l, _), &x)| {
                EmptyElement::at((x, y_lo))
                    + Text::new(
                        l.clone(),
                        (0, 7),
                        font(15).pos(Pos::new(HPos::Center, VPos::Top)),
                    )
            })
            .collect();
        chart.draw_series(cat_labels).map_err(de)?;
        if multi_group {
            for (gi, gl) in self.group_labels.iter().enumerate() {
                let gx: Vec<f64> = self
                    .categories
                    .iter()
                    .zip(&xs)
                    .filter(|((_, g), _)| *g == gi)
                    .map(|(_, &x)| x)
                    .collect();
                if gx.is_empty() {
                    continue;
                }
                let mid = (gx[0] + gx[gx.len() - 1]) / 2.0;
                chart
                    .draw_series([EmptyElement::at((mid, y_lo))
                        + Text::new(
                            gl.clone(),
                            (0, 28),
                            bold(15).pos(Pos::new(HPos::Center, VPos::Top)),
                        )])
                    .map_err(de)?;
            }
        }
        Ok(())
    }
}
