//! KVell's batch size against average latency and throughput.

use crate::budget::flagged;
use crate::charts::figure::{Figure, Panel};
use crate::charts::lines::{Line, Lines};
use crate::charts::style::{H, W, engine_colour};
use crate::dataset::Entry;
use crate::error::Result;
use crate::model::RunFile;
use crate::paper::chart::{Charts, PaperChart, caption, commands_of};
use crate::paper::format::{fx, human_us, ops_s, opt, pct};
use crate::paper::markdown::{Summary, charts_of, code_block, images};
use crate::paper::memory_rule::{Gate, Gates};
use crate::paper::metrics::{ceiling, cpu_fraction, mean_latency_us, tput};
use crate::paper::reasons::machine_facts;
use crate::paper::reference as paper;
use crate::paper::run::{PaperRun, entry};
use crate::paper::verdict::{Verdict, ratio, ratio_verdict};
use std::fmt::Write as _;

/// Draws the figure's charts.
pub(super) fn draw(run: &PaperRun, out: &mut Charts) -> Result<()> {
    let pts: Vec<(u64, &Entry)> = run
        .batches
        .iter()
        .filter_map(|b| {
            run.group(&format!("batch/{b}"))
                .and_then(|g| entry(g, "kvell"))
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
        .filter_map(|(b, e)| mean_latency_us(&e.run).map(|l| (*b as f64, l)))
        .collect();
    let tp: Vec<(f64, f64)> = pts
        .iter()
        .filter_map(|(b, e)| tput(&e.run).map(|t| (*b as f64, t)))
        .collect();
    let labels: Vec<(f64, f64, String)> = pts
        .iter()
        .filter_map(|(b, e)| {
            let t = tput(&e.run)?;
            let f = ceiling(&e.run).1?;
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

/// Writes the figure's section of `paper-repro.md`.
pub(super) fn write(
    s: &mut String,
    run: &PaperRun,
    charts: &[PaperChart],
    link: &str,
    summary: &mut Vec<Summary>,
) {
    s.push_str("## KVell's batch size\n\n");
    let pts: Vec<(u64, &RunFile)> = run
        .batches
        .iter()
        .filter_map(|b| {
            run.group(&format!("batch/{b}"))
                .and_then(|g| entry(g, "kvell"))
                .map(|e| (*b, &e.run))
        })
        .collect();
    if pts.is_empty() {
        s.push_str("Skipped: no batch/b<B>/kvell.json.\n\n");
        return;
    }
    s.push_str(
        "**Paper** (docs/paper-numbers.md, text on KVell's batch size): batch 64 gives 158 µs average latency, batch 32 gives 76 µs \
         at 88% of the bandwidth (64/32 latency 2.08x).\n\n",
    );
    code_block(s, &commands_of(pts.iter().map(|(_, r)| &r.command)));
    s.push_str("| batch | engine queue depth | driver queue depth | average latency | ops/s | % of device ceiling |\n| ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (b, r) in &pts {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            flagged(b.to_string(), r),
            opt(r.engine.setting_f64("queue_depth"), |x| format!("{x:.0}")),
            r.driving
                .queue_depth
                .map(|q| q.to_string())
                .unwrap_or_else(|| "N/A".into()),
            opt(mean_latency_us(r), human_us),
            opt(tput(r), ops_s),
            opt(ceiling(r).1, pct)
        );
    }
    s.push('\n');
    let lat = |b: u64| {
        pts.iter()
            .find(|(x, _)| *x == b)
            .and_then(|(_, r)| mean_latency_us(r))
    };
    let pr = paper::BATCH_LATENCY_US[1].1 / paper::BATCH_LATENCY_US[0].1;
    let ours = ratio(lat(64), lat(32));
    let at = |b: u64| {
        run.group(&format!("batch/{b}"))
            .and_then(|g| entry(g, "kvell"))
    };
    let mut gates = Gates::default();
    let gate = gates.add(Gate::of(&[at(64), at(32)]));
    let v = gate.verdict(|| ratio_verdict(ours, pr));
    let f32 = pts
        .iter()
        .find(|(x, _)| *x == 32)
        .and_then(|(_, r)| ceiling(r).1);
    let _ = writeln!(
        s,
        "**Shape:** ratio rule on the average latency at batch 64 over batch 32: {} here \
         against {pr:.2}x -> **{}**. Batch 32 reaches {} of the device ceiling here (paper: {} \
         of the bandwidth).\n",
        gate.ratio(fx(ours)),
        gate.text(v),
        opt(f32, pct),
        pct(paper::BATCH32_BANDWIDTH_FRACTION)
    );
    gates.line(s);
    if v != Verdict::Holds && v.judged() {
        s.push_str("Likely reasons, from the files:\n\n");
        for f in machine_facts(run) {
            let _ = writeln!(s, "- {f}");
        }
        for (b, r) in &pts {
            if let Some(p) = r.run() {
                let _ = writeln!(
                    s,
                    "- batch {b}: CPU busy {}, disk busy {}",
                    opt(cpu_fraction(r, p), pct),
                    opt(p.device.as_ref().and_then(|d| d.utilisation), pct)
                );
            }
        }
        s.push('\n');
    }
    summary.push(Summary {
        what: "Batch: latency 64/32".into(),
        verdict: format!(
            "{} ({} vs {pr:.2}x){}",
            v.text(),
            gate.ratio(fx(ours)),
            gates.summary_note()
        ),
    });
    images(s, &charts_of(charts, "Batch"), link);
}
