//! Chart 4: CPU time per operation (left), and per engine a small panel of its CPU
//! use over the run phase, user and system stacked, with the device's busy time, on
//! one axis: both as a share of the whole machine's cores or the device's time.

use super::axis::tick;
use super::bars::Bars;
use super::caption::caption_for;
use super::frame::frame;
use super::legend::{Swatch, fills, legend_row};
use super::render::{Chart, de};
use super::style::{H, LOAD_COLOUR, RUN_COLOUR, W, bold, font};
use crate::budget;
use crate::dataset::{Dataset, Entry, Group};
use crate::error::Result;
use crate::model::Phase;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Chart 4 of a group.
pub(crate) struct Cpu<'a> {
    pub(crate) ds: &'a Dataset,
    pub(crate) group: &'a Group,
}

/// User CPU: the darker, at the bottom of the stack.
const USER_COLOUR: RGBColor = RGBColor(0, 114, 178);
/// System CPU, stacked on the user CPU.
const SYSTEM_COLOUR: RGBColor = RGBColor(230, 159, 0);
const WARMUP_SHADE: RGBColor = RGBColor(225, 225, 225);

/// One sampling interval as shares of the machine: user and system CPU over all
/// cores, the device's busy fraction, in percent, each at most 100.
struct CpuPoint {
    t: f64,
    user: f64,
    system: f64,
    warmup: bool,
    device: Option<f64>,
}

/// The run phase's intervals as [`CpuPoint`]s, and how many values were above 100%
/// (drawn at 100%: the interval's counters are read a little apart).
fn cpu_points(p: &Phase, cores: f64) -> (Vec<CpuPoint>, usize) {
    let mut prev = 0.0;
    let mut out = Vec::new();
    let mut clamped = 0;
    let mut pct = |f: f64| {
        if f > 1.0 {
            clamped += 1;
        }
        f.clamp(0.0, 1.0) * 100.0
    };
    for s in &p.timeline {
        let dt = s.t - prev;
        prev = s.t;
        if dt > 1e-3 {
            let user = pct(s.cpu_user_s / dt / cores);
            let both = pct((s.cpu_user_s + s.cpu_sys_s) / dt / cores).max(user);
            out.push(CpuPoint {
                t: s.t,
                user,
                system: both - user,
                warmup: s.warmup,
                device: s.dev_util.map(&mut pct),
            });
        }
    }
    (out, clamped)
}

/// The machine's cores for `e`'s shares (1 where its file does not say).
fn cores_of(e: &Entry) -> f64 {
    e.run.machine.cores.max(1) as f64
}

impl Chart for Cpu<'_> {
    fn size(&self) -> (u32, u32) {
        (W, (330 + 170 * self.group.runs.len() as u32).max(H))
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()> {
        let series: Vec<(&Entry, Vec<CpuPoint>)> = self
            .group
            .runs
            .iter()
            .map(|e| {
                let pts = e.run.run().map(|p| cpu_points(p, cores_of(e)));
                (e, pts.map(|(p, _)| p).unwrap_or_default())
            })
            .collect();
        let clamped: usize = self
            .group
            .runs
            .iter()
            .filter_map(|e| e.run.run().map(|p| cpu_points(p, cores_of(e)).1))
            .sum();
        let mut cap = caption_for(self.ds, &[self.group]);
        cap.push(
            "CPU time is the whole driver process, engine and client threads together. \
             Right: its share of all the machine's cores per sampling interval, user and \
             system stacked, and the share of the interval the data disk was busy, on one \
             axis (100%: every core, or the device always busy)."
                .into(),
        );
        if clamped > 0 {
            cap.push(format!(
                "{clamped} value{} above 100% (the interval's counters read a little apart) \
                 drawn at 100%.",
                if clamped == 1 { "" } else { "s" }
            ));
        }
        let body = frame(
            root,
            &format!("{}: CPU, {}", self.ds.title, self.group.label),
            &cap,
        )?;
        let (left, right) = body.margin(0, 0, 10, 10).split_horizontally(440);
        self.per_operation(&left)?;
        let has_dev = series
            .iter()
            .any(|(_, v)| v.iter().any(|p| p.device.is_some()));
        let has_warmup = series.iter().any(|(_, v)| v.iter().any(|p| p.warmup));
        let mut legend = vec![
            ("user CPU".to_string(), Swatch::Fill(USER_COLOUR)),
            (
                "system CPU (stacked)".to_string(),
                Swatch::Fill(SYSTEM_COLOUR),
            ),
        ];
        if has_dev {
            legend.push(("device busy".to_string(), Swatch::Dashed(BLACK)));
        }
        if has_warmup {
            legend.push(("warm-up".to_string(), Swatch::Fill(WARMUP_SHADE)));
        }
        let right = legend_row(&right, &legend)?;
        let t_max = series
            .iter()
            .flat_map(|(_, v)| v.iter().map(|p| p.t))
            .fold(1.0, f64::max);
        let n = series.len().max(1);
        let panels = right.split_evenly((n, 1));
        for (i, ((e, pts), area)) in series.iter().zip(&panels).enumerate() {
            self.panel(e, pts, area, t_max, i + 1 == n)?;
        }
        Ok(())
    }
}

impl Cpu<'_> {
    /// CPU microseconds per operation of the run and load phases, per engine.
    fn per_operation<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<()> {
        let series = vec![
            ("run phase".to_string(), RUN_COLOUR),
            ("load phase".to_string(), LOAD_COLOUR),
        ];
        let area = legend_row(area, &fills(&series))?;
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
        .draw(&area)
    }

    /// One engine's run phase: user and system CPU stacked, the device's busy time
    /// dashed, the warm-up shaded.
    fn panel<DB: DrawingBackend>(
        &self,
        e: &Entry,
        pts: &[CpuPoint],
        area: &DrawingArea<DB, Shift>,
        t_max: f64,
        last: bool,
    ) -> Result<()> {
        let x_end = t_max * 1.02;
        let measured: Vec<&CpuPoint> = pts.iter().filter(|p| !p.warmup).collect();
        let mean = |f: &dyn Fn(&CpuPoint) -> f64| {
            (!measured.is_empty())
                .then(|| measured.iter().map(|p| f(p)).sum::<f64>() / measured.len() as f64)
        };
        let mut title = match (mean(&|p| p.user), mean(&|p| p.system)) {
            (Some(u), Some(s)) => format!(
                "{}: CPU {:.0}% of {} cores (user {u:.0}%, system {s:.0}%)",
                e.label,
                u + s,
                e.run.machine.cores
            ),
            _ => format!("{}: no timeline samples", e.label),
        };
        let dev: Vec<f64> = measured.iter().filter_map(|p| p.device).collect();
        if !dev.is_empty() {
            title.push_str(&format!(
                ", device busy {:.0}%",
                dev.iter().sum::<f64>() / dev.len() as f64
            ));
        }
        if let Some(o) = budget::over(&e.run) {
            title.push_str(&format!(" [{}]", o.flag()));
        }
        let mut chart = ChartBuilder::on(area)
            .caption(title, bold(15))
            .margin(4)
            .margin_right(16)
            .x_label_area_size(if last { 44 } else { 22 })
            .y_label_area_size(64)
            .build_cartesian_2d(0.0..x_end, 0.0..100.0)
            .map_err(de)?;
        chart
            .configure_mesh()
            .x_desc(if last {
                "time since the run phase started (s)"
            } else {
                ""
            })
            .y_desc("busy (%)")
            .y_labels(6)
            .x_labels(10)
            .x_label_formatter(&tick)
            .y_label_formatter(&tick)
            .axis_desc_style(font(14))
            .label_style(font(13))
            .light_line_style(RGBColor(240, 240, 240))
            .bold_line_style(RGBColor(215, 215, 215))
            .draw()
            .map_err(de)?;
        let warm_end = pts
            .iter()
            .filter(|p| p.warmup)
            .map(|p| p.t)
            .fold(0.0, f64::max);
        if warm_end > 0.0 {
            chart
                .draw_series([Rectangle::new(
                    [(0.0, 0.0), (warm_end, 100.0)],
                    WARMUP_SHADE.mix(0.6).filled(),
                )])
                .map_err(de)?;
        }
        if pts.is_empty() {
            chart
                .draw_series([Text::new(
                    "no timeline samples in this result",
                    (x_end / 2.0, 50.0),
                    font(15).pos(Pos::new(HPos::Center, VPos::Center)),
                )])
                .map_err(de)?;
            return Ok(());
        }
        // the stack: user CPU from 0, system CPU in the band above it
        let user: Vec<(f64, f64)> = pts.iter().map(|p| (p.t, p.user)).collect();
        let total: Vec<(f64, f64)> = pts.iter().map(|p| (p.t, p.user + p.system)).collect();
        let floor: Vec<(f64, f64)> = pts.iter().map(|p| (p.t, 0.0)).collect();
        for (top, bottom, colour) in [(&user, &floor, USER_COLOUR), (&total, &user, SYSTEM_COLOUR)]
        {
            let band: Vec<(f64, f64)> = top.iter().chain(bottom.iter().rev()).copied().collect();
            chart
                .draw_series([Polygon::new(band, colour.mix(0.8).filled())])
                .map_err(de)?;
            chart
                .draw_series(LineSeries::new(top.iter().copied(), colour.stroke_width(2)))
                .map_err(de)?;
            if pts.len() < 40 {
                chart
                    .draw_series(top.iter().map(|p| Circle::new(*p, 3, colour.filled())))
                    .map_err(de)?;
            }
        }
        let dev: Vec<(f64, f64)> = pts
            .iter()
            .filter_map(|p| p.device.map(|d| (p.t, d)))
            .collect();
        if !dev.is_empty() {
            chart
                .draw_series(DashedLineSeries::new(
                    dev.clone(),
                    7,
                    4,
                    BLACK.stroke_width(2),
                ))
                .map_err(de)?;
            if dev.len() < 40 {
                chart
                    .draw_series(dev.iter().map(|p| Circle::new(*p, 3, BLACK.filled())))
                    .map_err(de)?;
            }
        }
        Ok(())
    }
}
