//! The paper's figures from a reproduce-paper directory (`kvtb-report paper`).
//!
//! Each chart is built from the files alone; a chart whose data is absent is not
//! drawn and a note says why.

use super::bars::Bars;
use super::cdf::{Cdf, engine_cdf};
use super::timeline::Timeline;
use super::*;
use crate::human_bytes;
use crate::model::ProbePoint;
use crate::paper::{self as pp, PaperRun, reference as paper};
use crate::report::shell_quote;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};

/// A chart of the paper run, with what made it.
#[derive(Clone, Debug)]
pub(crate) struct PaperChart {
    /// The paper's figure or table (`Fig. 5`, `Table 1`, `beyond the paper`).
    pub(crate) figure: String,
    pub(crate) chart: Rendered,
    /// Distinct command lines of the files the chart was drawn from.
    pub(crate) commands: Vec<String>,
}

/// One line of a line chart.
struct Line {
    name: String,
    colour: RGBColor,
    points: Vec<(f64, f64)>,
    dashed: bool,
}

/// A line chart panel, linear or log on either axis.
struct Lines {
    title: String,
    x_desc: String,
    y_desc: String,
    log_x: bool,
    log_y: bool,
    lines: Vec<Line>,
    /// The paper's points: hollow black circles with a label.
    refs: Vec<(String, f64, f64)>,
    /// Text beside points of ours.
    labels: Vec<(f64, f64, String)>,
    /// Fixed upper end of a linear y axis.
    y_max: Option<f64>,
    legend_left: bool,
}

/// A table drawn as an image.
struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

enum Panel {
    Bars(Bars),
    Lines(Lines),
    Table(Table),
}

/// Panels in a grid under one title, legend row and caption.
struct Figure {
    title: String,
    caption: Vec<String>,
    legend: Vec<(String, Swatch)>,
    cols: usize,
    panels: Vec<Panel>,
    size: (u32, u32),
}

impl Chart for Figure {
    fn size(&self) -> (u32, u32) {
        self.size
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let body = frame(root, &self.title, &self.caption)?;
        let body = if self.legend.is_empty() {
            body
        } else {
            legend_row(&body, &self.legend)?
        };
        let cols = self.cols.max(1);
        let rows = self.panels.len().div_ceil(cols).max(1);
        let areas = body.margin(0, 0, 10, 10).split_evenly((rows, cols));
        for (p, a) in self.panels.iter().zip(&areas) {
            match p {
                Panel::Bars(b) => b.draw(a)?,
                Panel::Lines(l) => l.draw(a)?,
                Panel::Table(t) => t.draw(a)?,
            }
        }
        Ok(())
    }
}

fn positive(v: f64, log: bool) -> bool {
    v.is_finite() && (!log || v > 0.0)
}

impl Lines {
    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
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
    ) -> Result<(), String>
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
            anno.label(l.name.clone()).legend(move |(x, y)| {
                PathElement::new([(x, y), (x + 16, y)], colour.stroke_width(2))
            });
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
                .label("the paper (REFERENCE.md)")
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

impl Table {
    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let body = font(15);
        let head = bold(15);
        let ncol = self.header.len();
        let mut widths = vec![0i32; ncol];
        for (i, h) in self.header.iter().enumerate() {
            widths[i] = area
                .estimate_text_size(h, &head)
                .map(|s| s.0 as i32)
                .unwrap_or(80);
        }
        for r in &self.rows {
            for (i, c) in r.iter().enumerate().take(ncol) {
                let w = area
                    .estimate_text_size(c, &body)
                    .map(|s| s.0 as i32)
                    .unwrap_or(80);
                widths[i] = widths[i].max(w);
            }
        }
        let pad = 28;
        let total: i32 = widths.iter().map(|w| w + pad).sum();
        let (w, _) = area.dim_in_pixel();
        let left = ((w as i32 - total) / 2).max(4);
        let row_h = 30;
        let top = 20;
        let mut x = left;
        for (i, h) in self.header.iter().enumerate() {
            area.draw(&Text::new(
                h.clone(),
                (x + widths[i] + pad / 2, top),
                head.clone().pos(Pos::new(HPos::Right, VPos::Top)),
            ))
            .map_err(de)?;
            x += widths[i] + pad;
        }
        area.draw(&PathElement::new(
            [(left, top + row_h - 6), (left + total, top + row_h - 6)],
            BLACK.stroke_width(1),
        ))
        .map_err(de)?;
        for (ri, r) in self.rows.iter().enumerate() {
            let y = top + row_h * (ri as i32 + 1);
            if ri % 2 == 1 {
                area.draw(&Rectangle::new(
                    [(left, y - 4), (left + total, y + row_h - 8)],
                    RGBColor(244, 244, 244).filled(),
                ))
                .map_err(de)?;
            }
            let mut x = left;
            for (i, c) in r.iter().enumerate().take(ncol) {
                // the first column left-aligned, numbers right-aligned
                let (px, hp) = if i == 0 {
                    (x + pad / 2, HPos::Left)
                } else {
                    (x + widths[i] + pad / 2, HPos::Right)
                };
                area.draw(&Text::new(
                    c.clone(),
                    (px, y),
                    body.clone().pos(Pos::new(hp, VPos::Top)),
                ))
                .map_err(de)?;
                x += widths[i] + pad;
            }
        }
        Ok(())
    }
}

/// Caption lines of every paper chart: the machine, the scale, then `extra`.
fn caption(run: &PaperRun, extra: &[String]) -> Vec<String> {
    let mut out = vec![match run.machine() {
        Some(m) => format!("Machine: {}", machine_line(&m)),
        None => "Machine: unknown".into(),
    }];
    out.push(run.scale_line());
    out.extend(extra.iter().cloned());
    out
}

fn durability_line(run: &PaperRun, engines: &[String]) -> String {
    let parts: Vec<String> = engines
        .iter()
        .map(|e| format!("{e} {}", run.durability(e)))
        .collect();
    format!(
        "Durability class (none: lost on a crash; process: survives a process crash; power: \
         survives power loss): {}.",
        parts.join(", ")
    )
}

pub(crate) fn commands_of<'a>(cs: impl IntoIterator<Item = &'a Vec<String>>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in cs {
        let s = c
            .iter()
            .map(|a| shell_quote(a))
            .collect::<Vec<_>>()
            .join(" ");
        if !s.is_empty() && !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

pub(crate) fn group_commands(gs: &[&Group]) -> Vec<String> {
    commands_of(
        gs.iter()
            .flat_map(|g| g.runs.iter().map(|e| &e.run.command)),
    )
}

fn pct(f: f64) -> String {
    format!("{:.0}%", f * 100.0)
}

struct Out<'a> {
    dir: &'a Path,
    charts: Vec<PaperChart>,
    notes: Vec<String>,
}

impl Out<'_> {
    fn add<C: Chart>(
        &mut self,
        figure: &str,
        stem: &str,
        title: String,
        description: String,
        chart: &C,
        commands: Vec<String>,
    ) -> Result<(), String> {
        let files = render(chart, self.dir, stem)?;
        self.charts.push(PaperChart {
            figure: figure.into(),
            chart: Rendered {
                stem: stem.into(),
                title,
                caption: description,
                files,
            },
            commands,
        });
        Ok(())
    }

    fn skip(&mut self, what: &str, why: &str) {
        self.notes.push(format!("{what}: not drawn, {why}"));
    }
}

/// Renders every chart the directory's files allow into `dir`; returns the charts
/// and a note for each chart that could not be drawn.
pub(crate) fn render_all(
    run: &PaperRun,
    dir: &Path,
) -> Result<(Vec<PaperChart>, Vec<String>), String> {
    fonts();
    let mut out = Out {
        dir,
        charts: Vec::new(),
        notes: Vec::new(),
    };
    device_charts(run, &mut out)?;
    iomethods_chart(run, &mut out)?;
    fig3(run, &mut out)?;
    for (fig, w) in [("Fig. 4", 'a'), ("Fig. 7", 'e')] {
        timeline(run, &mut out, fig, w)?;
    }
    for (fig, dist) in [("Fig. 5", "uniform"), ("Fig. 8", "zipfian")] {
        ycsb_bars(run, &mut out, fig, dist)?;
    }
    table5(run, &mut out)?;
    fig9(run, &mut out)?;
    fig10(run, &mut out)?;
    recovery(run, &mut out)?;
    batch(run, &mut out)?;
    wal_vs_kvell(run, &mut out)?;
    cpu_per_request(run, &mut out)?;
    Ok((out.charts, out.notes))
}

/// Patterns of a device probe in display order.
pub(crate) fn patterns(points: &[ProbePoint]) -> Vec<String> {
    let order = ["randread", "randwrite", "mixed", "seqread", "seqwrite"];
    let mut ps: Vec<String> = Vec::new();
    for p in points {
        if !ps.contains(&p.pattern) {
            ps.push(p.pattern.clone());
        }
    }
    ps.sort_by_key(|p| order.iter().position(|o| o == p).unwrap_or(order.len()));
    ps
}

/// The point of a pattern with the most IOPS.
pub(crate) fn best_point<'a>(points: &'a [ProbePoint], pattern: &str) -> Option<&'a ProbePoint> {
    points
        .iter()
        .filter(|p| p.pattern == pattern)
        .max_by(|a, b| a.iops.total_cmp(&b.iops))
}

fn device_charts(run: &PaperRun, out: &mut Out) -> Result<(), String> {
    let Some((_, probe)) = &run.device else {
        out.skip("Tables 1, 2 (device)", "no device/device.json");
        return Ok(());
    };
    let cmds = commands_of([&probe.command]);
    let rows: Vec<Vec<String>> = patterns(&probe.points)
        .iter()
        .filter_map(|pat| {
            let b = best_point(&probe.points, pat)?;
            let paper = paper::DEVICE_KIOPS
                .iter()
                .find(|(p, _)| p == pat)
                .map(|(_, k)| k * 1000.0);
            Some(vec![
                pat.clone(),
                human_bytes(b.block_bytes as u64),
                b.queue_depth.to_string(),
                human_count(b.iops),
                format!("{:.0}", b.mib_per_s),
                format!("{:.0}", b.lat_mean_us),
                format!("{:.0}", b.lat_p99_us),
                paper.map(human_count).unwrap_or_else(|| "-".into()),
                paper
                    .map(|k| format!("{:.2}", b.iops / k))
                    .unwrap_or_else(|| "-".into()),
            ])
        })
        .collect();
    let n_rows = rows.len() as u32;
    let table = Figure {
        title: format!("{}: what the disk can do (Table 1)", run.ds.title),
        caption: caption(
            run,
            &[format!(
                "Each pattern at the queue depth that gave the most IOPS, from device/device.json \
                 ({} probe file, sequential fill {:.0} MiB/s). Paper: {}.",
                human_bytes(probe.file_bytes),
                probe.fill_mib_per_s,
                paper::MACHINE
            )],
        ),
        legend: vec![],
        cols: 1,
        panels: vec![Panel::Table(Table {
            header: [
                "pattern",
                "block",
                "best QD",
                "IOPS",
                "MiB/s",
                "mean µs",
                "p99 µs",
                "paper IOPS",
                "ours / paper",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        })],
        size: (W, 300 + 30 * n_rows),
    };
    out.add(
        "Table 1",
        "table1-device",
        "Device: IOPS and bandwidth per access pattern".into(),
        "Random and sequential read/write IOPS and MiB/s of this disk (best queue depth), \
         next to the paper's Optane."
            .into(),
        &table,
        cmds.clone(),
    )?;
    let pats = patterns(&probe.points);
    let colour = |i: usize| PALETTE[i % PALETTE.len()];
    let series = |f: fn(&ProbePoint) -> f64| -> Vec<Line> {
        pats.iter()
            .enumerate()
            .map(|(i, pat)| {
                let mut pts: Vec<(f64, f64)> = probe
                    .points
                    .iter()
                    .filter(|p| &p.pattern == pat)
                    .map(|p| (p.queue_depth as f64, f(p)))
                    .collect();
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                let block = probe
                    .points
                    .iter()
                    .find(|p| &p.pattern == pat)
                    .map(|p| human_bytes(p.block_bytes as u64))
                    .unwrap_or_default();
                Line {
                    name: format!("{pat} ({block})"),
                    colour: colour(i),
                    points: pts,
                    dashed: pat.starts_with("seq"),
                }
            })
            .collect()
    };
    let panel = |title: &str, y: &str, log_y: bool, lines: Vec<Line>, refs| Lines {
        title: title.into(),
        x_desc: "queue depth (log scale)".into(),
        y_desc: y.into(),
        log_x: true,
        log_y,
        lines,
        refs,
        labels: vec![],
        y_max: None,
        legend_left: true,
    };
    let refs: Vec<(String, f64, f64)> = paper::RANDWRITE_LAT_US
        .iter()
        .map(|(qd, us)| (format!("paper randwrite {us:.0} µs"), *qd as f64, *us))
        .collect();
    let fig = Figure {
        title: format!(
            "{}: latency and bandwidth against queue depth (Table 2)",
            run.ds.title
        ),
        caption: caption(
            run,
            &[
                "One point per (pattern, queue depth) of device/device.json; random patterns \
                 4 KiB, sequential ones (dashed) as their block size says."
                    .into(),
            ],
        ),
        legend: vec![],
        cols: 3,
        panels: vec![
            Panel::Lines(panel(
                "mean latency",
                "mean latency (µs, log scale)",
                true,
                series(|p| p.lat_mean_us),
                refs,
            )),
            Panel::Lines(panel(
                "p99 latency",
                "p99 latency (µs, log scale)",
                true,
                series(|p| p.lat_p99_us),
                vec![],
            )),
            Panel::Lines(panel(
                "bandwidth",
                "bandwidth (MiB/s)",
                false,
                series(|p| p.mib_per_s),
                vec![],
            )),
        ],
        size: (W + 400, H),
    };
    out.add(
        "Table 2",
        "table2-device-qd",
        "Device: latency and bandwidth against queue depth".into(),
        "Mean and p99 latency and bandwidth of each access pattern against the queue depth \
         (log x), with the paper's random-write latencies."
            .into(),
        &fig,
        cmds,
    )
}

fn iomethods_chart(run: &PaperRun, out: &mut Out) -> Result<(), String> {
    let Some((_, io)) = &run.iomethods else {
        out.skip("Table 3 (I/O methods)", "no iomethods/iomethods.json");
        return Ok(());
    };
    if io.points.is_empty() {
        out.skip("Table 3 (I/O methods)", "iomethods.json has no points");
        return Ok(());
    }
    let mut ops: Vec<String> = Vec::new();
    for p in &io.points {
        if !ops.contains(&p.op) {
            ops.push(p.op.clone());
        }
    }
    // the paper measured random writes: those first
    ops.sort_by_key(|o| (o != "randwrite", o.clone()));
    let mut cats = Vec::new();
    let mut iops = Vec::new();
    let mut cpu = Vec::new();
    let mut notes = Vec::new();
    for (gi, op) in ops.iter().enumerate() {
        for p in io.points.iter().filter(|p| &p.op == op) {
            cats.push((io_label(p), gi));
            iops.push(vec![Some(p.iops)]);
            cpu.push(vec![Some(p.cpu_us_per_io)]);
            notes.push(vec![Some(format!(
                "{} ({:.1} µs CPU)",
                human_count(p.iops),
                p.cpu_us_per_io
            ))]);
        }
    }
    let bars = |title: &str, y: &str, values, notes, colour| Bars {
        title: title.into(),
        y_desc: y.into(),
        x_desc: "method (t: threads, qd: I/Os in flight per thread)".into(),
        categories: cats.clone(),
        group_labels: ops.clone(),
        series: vec![(title.to_string(), colour)],
        values,
        log: false,
        y_range: None,
        value_labels: true,
        marks: vec![],
        bar_marks: vec![],
        notes,
    };
    let fig = Figure {
        title: format!("{}: I/O methods, 4 KiB random I/O (Table 3)", run.ds.title),
        caption: caption(
            run,
            &[format!(
                "From iomethods/iomethods.json: a {} file ({:.1}x the machine's {} RAM), {} B \
                 blocks. Paper (random writes, data set 3x RAM): mmap 1 thread 10K, mmap 8 \
                 threads 60K, direct I/O 1 thread 88K, AIO QD1 91K, AIO QD64 376K IOPS.",
                human_bytes(io.file_bytes),
                if io.memory_bytes > 0 {
                    io.file_bytes as f64 / io.memory_bytes as f64
                } else {
                    0.0
                },
                human_bytes(io.memory_bytes),
                io.block_bytes
            )],
        ),
        legend: vec![],
        cols: 1,
        panels: vec![
            Panel::Bars(bars(
                "IOPS (label: IOPS and CPU µs per I/O)",
                "I/Os per second",
                iops,
                notes,
                RUN_COLOUR,
            )),
            Panel::Bars(bars(
                "CPU time per I/O",
                "CPU µs per I/O (user + system)",
                cpu,
                vec![],
                LOAD_COLOUR,
            )),
        ],
        size: (W, 1100),
    };
    out.add(
        "Table 3",
        "table3-iomethods",
        "I/O methods: IOPS and CPU per I/O".into(),
        "IOPS of mmap, pread/pwrite (direct I/O) and io_uring at several thread counts and \
         queue depths, with the CPU microseconds each I/O cost."
            .into(),
        &fig,
        commands_of([&io.command]),
    )
}

/// `mmap 8t`, `io_uring qd64`, `pread 1t`.
pub(crate) fn io_label(p: &crate::model::IoPoint) -> String {
    let mut s = format!("{} {}t", p.method, p.threads);
    if p.queue_depth > 1 || p.method == "io_uring" {
        s.push_str(&format!(" qd{}", p.queue_depth));
    }
    s
}

fn fig3(run: &PaperRun, out: &mut Out) -> Result<(), String> {
    let Some(g) = run.ycsb('a', "uniform") else {
        out.skip("Fig. 3 (CPU and device utilisation)", "no ycsb/a-uniform");
        return Ok(());
    };
    let entries: Vec<&Entry> = ["rocksdb", "kvell"]
        .iter()
        .filter_map(|e| pp::entry(g, e))
        .collect();
    if entries.is_empty() {
        out.skip(
            "Fig. 3 (CPU and device utilisation)",
            "ycsb/a-uniform has neither rocksdb nor kvell",
        );
        return Ok(());
    }
    let mut panels = Vec::new();
    for e in &entries {
        let p = e.run.run().cloned().unwrap_or_default();
        let cores = e.run.machine.cores.max(1) as f64;
        let mut prev = 0.0;
        let mut cpu = Vec::new();
        let mut dev = Vec::new();
        for s in &p.timeline {
            let dt = s.t - prev;
            prev = s.t;
            if dt > 1e-3 {
                cpu.push((s.t, (s.cpu_user_s + s.cpu_sys_s) / dt / cores * 100.0));
                if let Some(u) = s.dev_util {
                    dev.push((s.t, u * 100.0));
                }
            }
        }
        let colour = engine_colour(&run.ds, &e.label);
        let mut lines = vec![Line {
            name: format!("CPU busy (% of {} cores)", e.run.machine.cores),
            colour,
            points: cpu,
            dashed: false,
        }];
        if !dev.is_empty() {
            lines.push(Line {
                name: "device busy (%)".into(),
                colour: BLACK,
                points: dev,
                dashed: true,
            });
        }
        panels.push(Panel::Lines(Lines {
            title: format!(
                "{}: {} ops/s, CPU {}, device {}",
                run.engine_label(&e.label),
                human_count(p.throughput_ops_sec),
                pp::cpu_fraction(&e.run, &p).map(pct).unwrap_or("?".into()),
                p.device
                    .as_ref()
                    .and_then(|d| d.utilisation)
                    .map(pct)
                    .unwrap_or("?".into())
            ),
            x_desc: "time since the run phase started (s)".into(),
            y_desc: "busy (%)".into(),
            log_x: false,
            log_y: false,
            lines,
            refs: vec![],
            labels: vec![],
            y_max: Some(125.0),
            legend_left: false,
        }));
    }
    let labels: Vec<String> = entries.iter().map(|e| e.label.clone()).collect();
    let fig = Figure {
        title: format!(
            "{}: CPU and device utilisation, YCSB A uniform (Fig. 3)",
            run.ds.title
        ),
        caption: caption(
            run,
            &[
                "Run phase of ycsb/a-uniform, one point per sampling interval: CPU time of the \
                 whole driver process (user + system) over the machine's cores, and the \
                 fraction of the interval the data disk was busy (/proc/diskstats)."
                    .into(),
                durability_line(run, &labels),
            ],
        ),
        legend: vec![],
        cols: 1,
        panels,
        size: (W, 260 + 330 * entries.len() as u32),
    };
    out.add(
        "Fig. 3",
        "fig3-cpu-device-a-uniform",
        "CPU and device utilisation over time, RocksDB and KVell, YCSB A uniform".into(),
        "CPU busy (share of the cores) and disk busy over the run phase: which resource \
         each engine runs out of first."
            .into(),
        &fig,
        group_commands(&[g]),
    )
}

fn timeline(run: &PaperRun, out: &mut Out, fig: &str, w: char) -> Result<(), String> {
    let Some(g) = run.ycsb(w, "uniform") else {
        out.skip(
            &format!("{fig} (throughput over time)"),
            &format!("no ycsb/{w}-uniform"),
        );
        return Ok(());
    };
    let stem = format!(
        "{}-timeline-{w}-uniform",
        fig.replace(". ", "").to_lowercase()
    );
    out.add(
        fig,
        &stem,
        format!(
            "Throughput over time, YCSB {} uniform",
            w.to_ascii_uppercase()
        ),
        format!(
            "Operations per second in each sampling interval of the run phase, one panel per \
             engine, stalls (intervals under 10% of the median) marked{}.",
            if w == 'e' {
                " (E: scans and inserts)"
            } else {
                ""
            }
        ),
        &Timeline {
            ds: &run.ds,
            group: g,
        },
        group_commands(&[g]),
    )
}

/// Grouped throughput bars: one category per group, one bar per engine, each run's
/// ceiling marked and the fraction of it reached written above the bar.
fn throughput_bars(
    run: &PaperRun,
    gs: &[&Group],
    cat_label: impl Fn(&Group) -> String,
    title: &str,
    log: bool,
) -> (Bars, Vec<(String, Swatch)>, Vec<String>) {
    let engines = run.engines_in(gs);
    let mut values = Vec::new();
    let mut marks = Vec::new();
    let mut notes = Vec::new();
    for g in gs {
        let mut v = Vec::new();
        let mut m = Vec::new();
        let mut n = Vec::new();
        for e in &engines {
            let r = pp::entry(g, e).map(|x| &x.run);
            let t = r.and_then(pp::tput);
            let (c, f) = r.map(pp::ceiling).unwrap_or((None, None));
            v.push(t);
            m.push(c);
            n.push(t.map(|t| match f {
                Some(f) => format!("{} {}", human_count(t), pct(f)),
                None => human_count(t),
            }));
        }
        values.push(v);
        marks.push(m);
        notes.push(n);
    }
    // a ceiling far above every bar (a run served from memory) would squash the bars:
    // left out, its fraction still in the label
    let top = values
        .iter()
        .flatten()
        .flatten()
        .copied()
        .fold(0.0, f64::max);
    for m in marks.iter_mut().flatten() {
        if m.is_some_and(|c| c > top * 4.0) {
            *m = None;
        }
    }
    let series: Vec<(String, RGBColor)> = engines
        .iter()
        .map(|e| (run.engine_label(e), engine_colour(&run.ds, e)))
        .collect();
    let mut legend = fills(&series);
    if marks.iter().flatten().any(Option::is_some) {
        legend.push((
            "device ceiling of the run's I/O mix (label: % reached)".into(),
            Swatch::Line(BLACK),
        ));
    }
    (
        Bars {
            title: title.into(),
            y_desc: if log {
                "run-phase throughput (ops/s, log scale)".into()
            } else {
                "run-phase throughput (ops/s)".into()
            },
            x_desc: "workload".into(),
            categories: gs.iter().map(|g| (cat_label(g), 0)).collect(),
            group_labels: vec![],
            series,
            values,
            log,
            y_range: None,
            value_labels: false,
            marks: vec![],
            bar_marks: marks,
            notes,
        },
        legend,
        engines,
    )
}

fn ycsb_bars(run: &PaperRun, out: &mut Out, fig: &str, dist: &str) -> Result<(), String> {
    let gs: Vec<&Group> = pp::WORKLOADS
        .iter()
        .filter_map(|w| run.ycsb(*w, dist))
        .collect();
    if gs.is_empty() {
        out.skip(
            &format!("{fig} (YCSB {dist})"),
            &format!("no ycsb/<w>-{dist} directory"),
        );
        return Ok(());
    }
    let (bars, legend, engines) = throughput_bars(
        run,
        &gs,
        |g| format!("YCSB {}", g.label[..1].to_ascii_uppercase()),
        &format!("YCSB A-F, {dist} keys"),
        true,
    );
    let fig_ = Figure {
        title: format!("{}: YCSB throughput, {dist} ({fig})", run.ds.title),
        caption: caption(
            run,
            &[
                "Run-phase operations per second of each engine (E: scans and inserts). Label \
                 above each bar: throughput and the fraction of the run's device ceiling \
                 (device IOPS for its read/write mix / device I/Os per operation) it reached; \
                 ceilings over 4x the highest bar are left out."
                    .into(),
                durability_line(run, &engines),
            ],
        ),
        legend,
        cols: 1,
        panels: vec![Panel::Bars(bars)],
        size: (W + 320, H + 60),
    };
    let stem = format!("{}-ycsb-{dist}", fig.replace(". ", "").to_lowercase());
    out.add(
        fig,
        &stem,
        format!("YCSB A-F throughput, {dist}"),
        format!(
            "Throughput of every engine on YCSB A-F with {dist} keys, each bar with its run's \
             device ceiling and the fraction of it reached; engines labelled with their \
             durability class."
        ),
        &fig_,
        group_commands(&gs),
    )
}

fn table5(run: &PaperRun, out: &mut Out) -> Result<(), String> {
    let gs: Vec<&Group> = DIST_A.iter().filter_map(|d| run.ycsb('a', d)).collect();
    if gs.is_empty() {
        out.skip(
            "Table 5 (tail latency)",
            "no ycsb/a-uniform nor ycsb/a-zipfian",
        );
        return Ok(());
    }
    let engines = run.engines_in(&gs);
    let mut cats = Vec::new();
    let mut values = Vec::new();
    let mut notes = Vec::new();
    for (gi, g) in gs.iter().enumerate() {
        for e in &engines {
            let Some(x) = pp::entry(g, e) else { continue };
            cats.push((e.clone(), gi));
            let p99 = pp::worst(&x.run, |o| o.p99_us);
            let max = pp::worst(&x.run, |o| o.max_us);
            values.push(vec![p99, max]);
            notes.push(vec![p99.map(pp::human_us), max.map(pp::human_us)]);
        }
    }
    let series = vec![
        ("p99".to_string(), PCT_COLOURS[1]),
        ("maximum".to_string(), PCT_COLOURS[3]),
    ];
    let fig = Figure {
        title: format!("{}: tail latency on YCSB A (Table 5)", run.ds.title),
        caption: caption(
            run,
            &[
                "Run phase; the worst of the operation kinds (READ, UPDATE), measured from each \
                 operation's start. Paper (Optane): p99 KVell 2.4 ms, RocksDB 5.4 ms; max \
                 KVell 3.9 ms, RocksDB 9.6 s."
                    .into(),
                durability_line(run, &engines),
            ],
        ),
        legend: fills(&series),
        cols: 1,
        panels: vec![Panel::Bars(Bars {
            title: "p99 and maximum latency per engine".into(),
            y_desc: "latency (µs, log scale)".into(),
            x_desc: "engine".into(),
            categories: cats,
            group_labels: gs.iter().map(|g| format!("YCSB {}", g.label)).collect(),
            series,
            values,
            log: true,
            y_range: None,
            value_labels: false,
            marks: vec![],
            bar_marks: vec![],
            notes,
        })],
        size: (W, H),
    };
    out.add(
        "Table 5",
        "table5-tail-a",
        "Tail latency on YCSB A".into(),
        "p99 and maximum latency per engine on YCSB A, uniform and zipfian (log scale).".into(),
        &fig,
        group_commands(&gs),
    )?;
    for g in gs {
        let curves: Vec<_> = g
            .runs
            .iter()
            .filter_map(engine_cdf)
            .filter(|c| !c.points.is_empty())
            .collect();
        if curves.is_empty() {
            out.skip(
                &format!("Table 5 latency CDF ({})", g.label),
                "no latency histograms",
            );
            continue;
        }
        out.add(
            "Table 5",
            &format!("table5-cdf-{}", g.label),
            format!("Latency CDF, YCSB {}", g.label),
            format!(
                "Run-phase latency distribution of every engine on YCSB {} (CDF and tail), \
                 from the HDR histograms.",
                g.label
            ),
            &Cdf {
                ds: &run.ds,
                group: g,
                curves,
            },
            group_commands(&[g]),
        )?;
    }
    Ok(())
}

const DIST_A: [&str; 2] = ["uniform", "zipfian"];

fn fig9(run: &PaperRun, out: &mut Out) -> Result<(), String> {
    let gs: Vec<&Group> = pp::PRODUCTION.iter().filter_map(|w| run.group(w)).collect();
    if gs.is_empty() {
        out.skip("Fig. 9 (production workloads)", "no production/ directory");
        return Ok(());
    }
    let (bars, legend, engines) =
        throughput_bars(run, &gs, |g| g.label.clone(), "production workloads", false);
    let fig = Figure {
        title: format!("{}: production workloads (Fig. 9)", run.ds.title),
        caption: caption(
            run,
            &[
                "Run-phase operations per second per engine; label: throughput and the \
                 fraction of the run's device ceiling reached."
                    .into(),
                durability_line(run, &engines),
            ],
        ),
        legend,
        cols: 1,
        panels: vec![Panel::Bars(bars)],
        size: (W, H),
    };
    out.add(
        "Fig. 9",
        "fig9-production",
        "Production workloads".into(),
        "Throughput of every engine on the two production workloads.".into(),
        &fig,
        group_commands(&gs),
    )
}

fn fig10(run: &PaperRun, out: &mut Out) -> Result<(), String> {
    let gs: Vec<(u64, &Group)> = run
        .itemsizes
        .iter()
        .filter_map(|b| run.group(&format!("itemsize/{b}")).map(|g| (*b, g)))
        .collect();
    if gs.is_empty() {
        out.skip("Fig. 10 (item sizes)", "no itemsize/ results");
        return Ok(());
    }
    let groups: Vec<&Group> = gs.iter().map(|(_, g)| *g).collect();
    let engines = run.engines_in(&groups);
    let lines: Vec<Line> = engines
        .iter()
        .map(|e| Line {
            name: run.engine_label(e),
            colour: engine_colour(&run.ds, e),
            points: gs
                .iter()
                .filter_map(|(b, g)| {
                    pp::entry(g, e)
                        .and_then(|x| pp::scans_per_s(&x.run))
                        .map(|s| (*b as f64, s))
                })
                .collect(),
            dashed: false,
        })
        .collect();
    let fig = Figure {
        title: format!("{}: item size on YCSB E (Fig. 10)", run.ds.title),
        caption: caption(
            run,
            &[
                "Scans per second of the run phase (SCAN operations over the run time) with \
                 values of each size, from itemsize/<bytes>/. Paper (AWS): KVell about 67K \
                 scans/s at every size; RocksDB 136K at 64 B falling to 52K at 2 KiB."
                    .into(),
                durability_line(run, &engines),
            ],
        ),
        legend: vec![],
        cols: 1,
        panels: vec![Panel::Lines(Lines {
            title: "scans per second against item size".into(),
            x_desc: "value size (bytes, log scale)".into(),
            y_desc: "scans per second".into(),
            log_x: true,
            log_y: false,
            lines,
            refs: vec![],
            labels: vec![],
            y_max: None,
            legend_left: false,
        })],
        size: (W, H),
    };
    out.add(
        "Fig. 10",
        "fig10-itemsize",
        "Item size sweep on YCSB E".into(),
        "Scans per second against the item size (64 B .. 2 KiB), one line per engine.".into(),
        &fig,
        group_commands(&groups),
    )
}

/// The median of the cycles' data sizes.
pub(crate) fn median_data_bytes(r: &crate::model::Recovery) -> Option<u64> {
    let mut v: Vec<u64> = r.cycles.iter().map(|c| c.data_bytes).collect();
    v.sort();
    v.get(v.len() / 2).copied()
}

fn recovery_bars(run: &PaperRun, only: Option<&[&str]>) -> Option<Bars> {
    let rs: Vec<(String, &crate::model::Recovery)> = run
        .recovery
        .iter()
        .map(|(p, r)| (pp_stem(p), r))
        .filter(|(e, _)| only.is_none_or(|o| o.contains(&e.as_str())))
        .collect();
    if rs.is_empty() {
        return None;
    }
    let series: Vec<(String, RGBColor)> = rs
        .iter()
        .map(|(e, _)| (run.engine_label(e), engine_colour(&run.ds, e)))
        .collect();
    let n = series.len();
    let values = vec![
        rs.iter()
            .map(|(_, r)| Some(r.recovery_s_median))
            .collect::<Vec<_>>(),
    ];
    let notes = vec![
        rs.iter()
            .map(|(_, r)| {
                Some(format!(
                    "{:.2} s, {}",
                    r.recovery_s_median,
                    median_data_bytes(r).map(human_bytes).unwrap_or("?".into())
                ))
            })
            .collect::<Vec<_>>(),
    ];
    let _ = n;
    Some(Bars {
        title: "reopen time after SIGKILL (median of the cycles; label: time, data size)".into(),
        y_desc: "recovery time (s)".into(),
        x_desc: String::new(),
        categories: vec![("recovery/<engine>.json".into(), 0)],
        group_labels: vec![],
        series,
        values,
        log: false,
        y_range: None,
        value_labels: false,
        marks: vec![],
        bar_marks: vec![],
        notes,
    })
}

fn pp_stem(p: &Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn recovery(run: &PaperRun, out: &mut Out) -> Result<(), String> {
    let Some(bars) = recovery_bars(run, None) else {
        out.skip("Recovery", "no recovery/<engine>.json");
        return Ok(());
    };
    let engines: Vec<String> = run.recovery.iter().map(|(p, _)| pp_stem(p)).collect();
    let cycles: Vec<String> = run
        .recovery
        .iter()
        .map(|(p, r)| {
            format!(
                "{}: {} cycle(s), killed after {:.1} s median, {} records missing",
                pp_stem(p),
                r.cycles.len(),
                median(r.cycles.iter().map(|c| c.run_s_before_kill).collect()).unwrap_or(0.0),
                r.cycles.iter().map(|c| c.missing_records).sum::<u64>()
            )
        })
        .collect();
    let legend = fills(&bars.series);
    let fig = Figure {
        title: format!("{}: recovery after a SIGKILL during YCSB A", run.ds.title),
        caption: caption(
            run,
            &[
                format!(
                    "Each engine is killed with SIGKILL while running YCSB A, then reopened and \
                     every acknowledged record checked. {}.",
                    cycles.join("; ")
                ),
                "Paper: 100 GB on 8 NVMe drives, KVell 6.6 s, RocksDB 18 s.".into(),
                durability_line(run, &engines),
            ],
        ),
        legend,
        cols: 1,
        panels: vec![Panel::Bars(bars)],
        size: (W, H),
    };
    out.add(
        "Recovery",
        "recovery",
        "Recovery time after SIGKILL".into(),
        "Time to reopen each engine after a SIGKILL during YCSB A (median over the cycles), \
         with the size of its data."
            .into(),
        &fig,
        commands_of(run.recovery.iter().map(|(_, r)| &r.command)),
    )
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

fn batch(run: &PaperRun, out: &mut Out) -> Result<(), String> {
    let pts: Vec<(u64, &Entry)> = run
        .batches
        .iter()
        .filter_map(|b| {
            run.group(&format!("batch/{b}"))
                .and_then(|g| pp::entry(g, "kvell"))
                .map(|e| (*b, e))
        })
        .collect();
    if pts.is_empty() {
        out.skip("Batch size", "no batch/b<B>/kvell.json");
        return Ok(());
    }
    let colour = engine_colour(&run.ds, "kvell");
    let lat: Vec<(f64, f64)> = pts
        .iter()
        .filter_map(|(b, e)| pp::mean_latency_us(&e.run).map(|l| (*b as f64, l)))
        .collect();
    let tp: Vec<(f64, f64)> = pts
        .iter()
        .filter_map(|(b, e)| pp::tput(&e.run).map(|t| (*b as f64, t)))
        .collect();
    let labels: Vec<(f64, f64, String)> = pts
        .iter()
        .filter_map(|(b, e)| {
            let t = pp::tput(&e.run)?;
            let f = pp::ceiling(&e.run).1?;
            Some((*b as f64, t, format!("{} of ceiling", pct(f))))
        })
        .collect();
    let refs: Vec<(String, f64, f64)> = paper::BATCH_LATENCY_US
        .iter()
        .map(|(b, us)| (format!("paper: batch {b}, {us:.0} µs"), *b as f64, *us))
        .collect();
    let fig = Figure {
        title: format!("{}: KVell batch size (YCSB A uniform)", run.ds.title),
        caption: caption(
            run,
            &[
                "KVell with batch = engine queue depth = B and the driver keeping 2B requests in \
                 flight (batch/b<B>/kvell.json). Latency: all run-phase operations, from each \
                 operation's start. Paper: batch 64 gives 158 µs, batch 32 gives 76 µs at 88% \
                 of the bandwidth."
                    .into(),
            ],
        ),
        legend: vec![],
        cols: 2,
        panels: vec![
            Panel::Lines(Lines {
                title: "average latency".into(),
                x_desc: "batch size (log scale)".into(),
                y_desc: "average latency (µs)".into(),
                log_x: true,
                log_y: false,
                lines: vec![Line {
                    name: "kvell".into(),
                    colour,
                    points: lat,
                    dashed: false,
                }],
                refs,
                labels: vec![],
                y_max: None,
                legend_left: true,
            }),
            Panel::Lines(Lines {
                title: "throughput (label: fraction of the device ceiling)".into(),
                x_desc: "batch size (log scale)".into(),
                y_desc: "run-phase throughput (ops/s)".into(),
                log_x: true,
                log_y: false,
                lines: vec![Line {
                    name: "kvell".into(),
                    colour,
                    points: tp,
                    dashed: false,
                }],
                refs: vec![],
                labels,
                y_max: None,
                legend_left: true,
            }),
        ],
        size: (W, H),
    };
    let entries: Vec<&Vec<String>> = pts.iter().map(|(_, e)| &e.run.command).collect();
    out.add(
        "Batch",
        "batch-kvell",
        "KVell batch size against latency and throughput".into(),
        "KVell's average latency and throughput against its batch size (= queue depth), with \
         the paper's two points."
            .into(),
        &fig,
        commands_of(entries),
    )
}

fn wal_vs_kvell(run: &PaperRun, out: &mut Out) -> Result<(), String> {
    let engines = ["kvell", "wal"];
    let gs: Vec<&Group> = ['a', 'b', 'f']
        .iter()
        .flat_map(|w| DIST_A.iter().filter_map(move |d| run.ycsb(*w, d)))
        .filter(|g| engines.iter().any(|e| pp::entry(g, e).is_some()))
        .collect();
    let rec = recovery_bars(run, Some(&engines));
    if gs.is_empty() && rec.is_none() {
        out.skip(
            "WAL vs KVell",
            "no kvell or wal result on A/B/F nor in recovery/",
        );
        return Ok(());
    }
    let present: Vec<String> = engines
        .iter()
        .filter(|e| {
            gs.iter().any(|g| pp::entry(g, e).is_some())
                || run.recovery.iter().any(|(p, _)| pp_stem(p) == **e)
        })
        .map(|e| e.to_string())
        .collect();
    let series: Vec<(String, RGBColor)> = present
        .iter()
        .map(|e| (run.engine_label(e), engine_colour(&run.ds, e)))
        .collect();
    let mut panels = Vec::new();
    if !gs.is_empty() {
        let values: Vec<Vec<Option<f64>>> = gs
            .iter()
            .map(|g| {
                present
                    .iter()
                    .map(|e| {
                        pp::entry(g, e)
                            .and_then(|x| x.run.run()?.device.as_ref()?.write_amplification)
                    })
                    .collect()
            })
            .collect();
        let notes = values
            .iter()
            .map(|r| r.iter().map(|v| v.map(|v| format!("{v:.2}"))).collect())
            .collect();
        panels.push(Panel::Bars(Bars {
            title: "write amplification (device bytes written / user bytes written)".into(),
            y_desc: "write amplification (x)".into(),
            x_desc: "workload".into(),
            categories: gs.iter().map(|g| (g.label.clone(), 0)).collect(),
            group_labels: vec![],
            series: series.clone(),
            values,
            log: false,
            y_range: None,
            value_labels: false,
            marks: vec![],
            bar_marks: vec![],
            notes,
        }));
    }
    if let Some(b) = rec {
        panels.push(Panel::Bars(b));
    }
    let n = panels.len();
    let mut cmds = group_commands(&gs);
    for c in commands_of(
        run.recovery
            .iter()
            .filter(|(p, _)| engines.contains(&pp_stem(p).as_str()))
            .map(|(_, r)| &r.command),
    ) {
        if !cmds.contains(&c) {
            cmds.push(c);
        }
    }
    let fig = Figure {
        title: format!("{}: the WAL engine against KVell", run.ds.title),
        caption: caption(
            run,
            &[
                "Not in the paper. Write amplification from the run phase's device counters \
                 (whole disk) on YCSB A, B and F; recovery time from recovery/."
                    .into(),
                durability_line(run, &present),
            ],
        ),
        legend: fills(&series),
        cols: n,
        panels,
        size: (W, H),
    };
    out.add(
        "Beyond the paper",
        "beyond-wal-vs-kvell",
        "WAL against KVell: write amplification and recovery".into(),
        "What the paper could not show: the DAOS-style WAL engine against KVell, device write \
         amplification on the write workloads and recovery time."
            .into(),
        &fig,
        cmds,
    )
}

fn cpu_per_request(run: &PaperRun, out: &mut Out) -> Result<(), String> {
    let gs: Vec<&Group> = run
        .ds
        .groups
        .iter()
        .filter(|g| !g.label.contains('/'))
        .collect();
    if gs.is_empty() {
        out.skip("CPU per request", "no ycsb/ or production/ results");
        return Ok(());
    }
    let engines = run.engines_in(&gs);
    let series: Vec<(String, RGBColor)> = engines
        .iter()
        .map(|e| (run.engine_label(e), engine_colour(&run.ds, e)))
        .collect();
    let values: Vec<Vec<Option<f64>>> = gs
        .iter()
        .map(|g| {
            engines
                .iter()
                .map(|e| pp::entry(g, e).and_then(|x| x.run.run().map(|p| p.cpu_us_per_op)))
                .collect()
        })
        .collect();
    let fig = Figure {
        title: format!("{}: CPU time per request", run.ds.title),
        caption: caption(
            run,
            &[
                "Not in the paper. Run-phase CPU time of the whole driver process (user + \
                 system, engine and client together) per operation; E's operations are \
                 mostly scans."
                    .into(),
                durability_line(run, &engines),
            ],
        ),
        legend: fills(&series),
        cols: 1,
        panels: vec![Panel::Bars(Bars {
            title: "CPU µs per request, every workload".into(),
            y_desc: "CPU µs per operation (log scale)".into(),
            x_desc: "workload".into(),
            categories: gs.iter().map(|g| (g.label.clone(), 0)).collect(),
            group_labels: vec![],
            series,
            values,
            log: true,
            y_range: None,
            value_labels: false,
            marks: vec![],
            bar_marks: vec![],
            notes: vec![],
        })],
        size: (W + 520, H),
    };
    out.add(
        "Beyond the paper",
        "beyond-cpu-per-request",
        "CPU microseconds per request".into(),
        "Each engine's CPU microseconds per request on every workload.".into(),
        &fig,
        group_commands(&gs),
    )
}
