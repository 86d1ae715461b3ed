//! Chart 4: CPU time per operation, and CPU (and device) utilisation over time.

use super::axis::tick;
use super::bars::Bars;
use super::caption::caption_for;
use super::frame::frame;
use super::legend::{Swatch, fills, legend_box, legend_row};
use super::render::{Chart, de};
use super::style::{GREY, LOAD_COLOUR, RUN_COLOUR, bold, engine_colour, font};
use crate::dataset::{Dataset, Entry, Group};
use crate::error::Result;
use crate::model::Phase;
use plotters::coord::Shift;
use plotters::prelude::*;

/// Chart 4 of a group.
pub(crate) struct Cpu<'a> {
    pub(crate) ds: &'a Dataset,
    pub(crate) group: &'a Group,
}

/// CPU cores busy in one sampling interval, and the device's busy fraction.
struct CpuPoint {
    t: f64,
    cores: f64,
    warmup: bool,
    dev_util: Option<f64>,
}

fn cpu_cores(p: &Phase) -> Vec<CpuPoint> {
    let mut prev = 0.0;
    let mut out = Vec::new();
    for s in &p.timeline {
        let dt = s.t - prev;
        prev = s.t;
        if dt > 1e-3 {
            out.push(CpuPoint {
                t: s.t,
                cores: (s.cpu_user_s + s.cpu_sys_s) / dt,
                warmup: s.warmup,
                dev_util: s.dev_util,
            });
        }
    }
    out
}

impl Chart for Cpu<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()> {
        let mut cap = caption_for(self.ds, &[self.group]);
        cap.push(
            "CPU time is the whole driver process (user + system), engine and client threads together."
                .into(),
        );
        let body = frame(
            root,
            &format!("{}: CPU, {}", self.ds.title, self.group.label),
            &cap,
        )?;
        let (left, right) = body.margin(0, 0, 10, 10).split_horizontally(440);
        let series = vec![
            ("run phase".to_string(), RUN_COLOUR),
            ("load phase".to_string(), LOAD_COLOUR),
        ];
        let left = legend_row(&left, &fills(&series))?;
        Bars {
            title: "CPU time per operation".into(),
            y_desc: "CPU µs per operation (user + system)".into(),
            x_desc: "engine".into(),
            categories: self
                .group
                .runs
                .iter()
                .map(|e| (e.label.clone(), 0))
                .collect(),
            group_labels: vec![],
            series,
            values: self
                .group
                .runs
                .iter()
                .map(|e| {
                    vec![
                        e.run.run().map(|p| p.cpu_us_per_op),
                        e.run.load().map(|p| p.cpu_us_per_op),
                    ]
                })
                .collect(),
            log: false,
            y_range: None,
            value_labels: true,
            marks: vec![],
            bar_marks: vec![],
            notes: vec![],
        }
        .draw(&left)?;
        self.utilisation(&right)
    }
}

impl Cpu<'_> {
    fn utilisation<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<()> {
        let series: Vec<(&Entry, Vec<CpuPoint>)> = self
            .group
            .runs
            .iter()
            .map(|e| (e, e.run.run().map(cpu_cores).unwrap_or_default()))
            .collect();
        let cores = self
            .group
            .runs
            .iter()
            .map(|e| e.run.machine.cores)
            .max()
            .unwrap_or(0) as f64;
        let y_max = series
            .iter()
            .flat_map(|(_, v)| v.iter().map(|p| p.cores))
            .fold(cores, f64::max)
            .max(0.5)
            * 1.2;
        let t_max = series
            .iter()
            .flat_map(|(_, v)| v.iter().map(|p| p.t))
            .fold(1.0, f64::max);
        let has_dev = series
            .iter()
            .any(|(_, v)| v.iter().any(|p| p.dev_util.is_some()));
        let (area, legend_area) = area.split_horizontally(area.dim_in_pixel().0 - 190);
        let mut legend = Vec::new();
        let mut chart = ChartBuilder::on(&area)
            .caption(
                if has_dev {
                    "CPU and device utilisation over the run phase"
                } else {
                    "CPU utilisation over the run phase"
                },
                bold(18),
            )
            .margin(10)
            .margin_right(12)
            .x_label_area_size(52)
            .y_label_area_size(70)
            .right_y_label_area_size(if has_dev { 70 } else { 0 })
            .build_cartesian_2d(0.0..t_max * 1.02, 0.0..y_max)
            .map_err(de)?
            .set_secondary_coord(0.0..t_max * 1.02, 0.0..120.0);
        chart
            .configure_mesh()
            .x_desc("time since the run phase started (s)")
            .y_desc("CPU busy (cores)")
            .x_label_formatter(&tick)
            .y_label_formatter(&tick)
            .axis_desc_style(font(16))
            .label_style(font(14))
            .light_line_style(RGBColor(240, 240, 240))
            .bold_line_style(RGBColor(215, 215, 215))
            .draw()
            .map_err(de)?;
        if cores > 0.0 {
            chart
                .draw_series(DashedLineSeries::new(
                    [(0.0, cores), (t_max * 1.02, cores)],
                    8,
                    5,
                    BLACK.stroke_width(1),
                ))
                .map_err(de)?;
            legend.push((format!("machine: {cores} cores"), Swatch::Dashed(BLACK)));
        }
        for (e, pts) in &series {
            let colour = engine_colour(self.ds, &e.label);
            chart
                .draw_series(LineSeries::new(
                    pts.iter().map(|p| (p.t, p.cores)),
                    colour.stroke_width(2),
                ))
                .map_err(de)?;
            legend.push((format!("{}: CPU (cores)", e.label), Swatch::Line(colour)));
            chart
                .draw_series(pts.iter().map(|p| {
                    if p.warmup {
                        Circle::new((p.t, p.cores), 4, colour.stroke_width(2))
                    } else {
                        Circle::new((p.t, p.cores), 3, colour.filled())
                    }
                }))
                .map_err(de)?;
        }
        if has_dev {
            chart
                .configure_secondary_axes()
                .y_desc("device busy (%, dashed)")
                .y_labels(7)
                .y_label_formatter(&|v| if *v <= 100.0 { tick(v) } else { String::new() })
                .axis_desc_style(font(16))
                .label_style(font(14))
                .draw()
                .map_err(de)?;
            for (e, pts) in &series {
                let colour = engine_colour(self.ds, &e.label);
                let dev: Vec<(f64, f64)> = pts
                    .iter()
                    .filter_map(|p| p.dev_util.map(|u| (p.t, u * 100.0)))
                    .collect();
                if dev.is_empty() {
                    continue;
                }
                chart
                    .draw_secondary_series(DashedLineSeries::new(dev, 7, 4, colour.stroke_width(2)))
                    .map_err(de)?;
                legend.push((
                    format!("{}: device busy (%)", e.label),
                    Swatch::Dashed(colour),
                ));
            }
        }
        if series.iter().any(|(_, v)| v.iter().any(|p| p.warmup)) {
            legend.push(("warm-up sample".to_string(), Swatch::Hollow(GREY)));
        }
        legend_box(&legend_area, &legend, 40)
    }
}
