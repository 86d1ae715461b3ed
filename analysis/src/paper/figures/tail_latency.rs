//! Table 5: p99 and maximum latency on YCSB A, and the latency CDFs.

use crate::budget::flagged;
use crate::charts::bars::Bars;
use crate::charts::cdf::{Cdf, engine_cdf};
use crate::charts::figure::{Figure, Panel};
use crate::charts::legend::fills;
use crate::charts::style::{H, PCT_COLOURS, W};
use crate::dataset::{Entry, Group};
use crate::error::Result;
use crate::paper::chart::{Charts, PaperChart, caption, durability_line, group_commands};
use crate::paper::format::{fx, human_us, opt};
use crate::paper::markdown::{Summary, charts_of, code_block, images};
use crate::paper::memory_rule::{Gate, Gates};
use crate::paper::metrics::worst;
use crate::paper::reasons::reasons;
use crate::paper::reference as paper;
use crate::paper::run::{DISTS, PaperRun, entry};
use crate::paper::verdict::{Verdict, ratio, ratio_verdict};
use std::fmt::Write as _;

/// Draws the figure's charts.
pub(super) fn draw(run: &PaperRun, out: &mut Charts) -> Result<()> {
    let gs: Vec<&Group> = DISTS.iter().filter_map(|d| run.ycsb('a', d)).collect();
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
            let Some(x) = entry(g, e) else { continue };
            cats.push((e.clone(), gi));
            let p99 = worst(&x.run, |o| o.p99_us);
            let max = worst(&x.run, |o| o.max_us);
            values.push(vec![p99, max]);
            notes.push(vec![p99.map(human_us), max.map(human_us)]);
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
            .filter_map(|e| engine_cdf(e, &mut out.warnings))
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

/// Writes the figure's section of `paper-repro.md`.
pub(super) fn write(
    s: &mut String,
    run: &PaperRun,
    charts: &[PaperChart],
    link: &str,
    summary: &mut Vec<Summary>,
) {
    s.push_str("## Table 5: tail latency on YCSB A\n\n");
    let gs: Vec<&Group> = ["uniform", "zipfian"]
        .iter()
        .filter_map(|d| run.ycsb('a', d))
        .collect();
    if gs.is_empty() {
        s.push_str("Skipped: no ycsb/a-uniform nor ycsb/a-zipfian.\n\n");
        return;
    }
    s.push_str(
        "**Paper** (docs/paper-numbers.md, Table 5): p99 KVell 2.4 ms, RocksDB 5.4 ms (RocksDB/KVell 2.25x); \
         max KVell 3.9 ms, RocksDB 9.6 s (2462x). docs/paper-numbers.md records no key \
         distribution for them: both are compared.\n\n",
    );
    code_block(s, &group_commands(&gs));
    s.push_str("Worst operation kind of the run phase, measured from each operation's start.\n\n| workload | engine | durability | p99 | max |\n| --- | --- | --- | ---: | ---: |\n");
    for g in &gs {
        for e in &g.runs {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} |",
                g.label,
                flagged(e.label.clone(), &e.run),
                run.durability(&e.label),
                opt(worst(&e.run, |o| o.p99_us), human_us),
                opt(worst(&e.run, |o| o.max_us), human_us)
            );
        }
    }
    s.push('\n');
    s.push_str("| workload | statistic | RocksDB/KVell here | paper | verdict |\n| --- | --- | ---: | ---: | --- |\n");
    let mut verdicts = Vec::new();
    let mut gates = Gates::default();
    for g in &gs {
        let gate = gates.add(Gate::of(&[entry(g, "rocksdb"), entry(g, "kvell")]));
        for (stat, f, pr) in [
            (
                "p99",
                (|o: &crate::model::OpSummary| o.p99_us) as fn(&crate::model::OpSummary) -> f64,
                paper::A_P99_MS_ROCKSDB / paper::A_P99_MS_KVELL,
            ),
            (
                "max",
                |o: &crate::model::OpSummary| o.max_us,
                paper::A_MAX_MS_ROCKSDB / paper::A_MAX_MS_KVELL,
            ),
        ] {
            let ours = ratio(
                entry(g, "rocksdb").and_then(|e| worst(&e.run, f)),
                entry(g, "kvell").and_then(|e| worst(&e.run, f)),
            );
            let v = gate.verdict(|| ratio_verdict(ours, pr));
            verdicts.push(v);
            let _ = writeln!(
                s,
                "| {} | {stat} | {} | {pr:.2}x | {} |",
                g.label,
                gate.ratio(fx(ours)),
                gate.text(v)
            );
        }
    }
    s.push('\n');
    let held = verdicts.iter().filter(|v| **v == Verdict::Holds).count();
    let compared = verdicts
        .iter()
        .filter(|v| **v != Verdict::NotCompared)
        .count();
    let _ = writeln!(
        s,
        "**Shape:** ratio rule on RocksDB/KVell latency: holds on {held} of {compared} comparisons.\n"
    );
    gates.line(s);
    if held < compared {
        let es: Vec<&Entry> = gs
            .iter()
            .flat_map(|g| ["kvell", "rocksdb"].into_iter().filter_map(|n| entry(g, n)))
            .collect();
        if let Some(g) = gs.first() {
            let es1: Vec<&Entry> = es
                .iter()
                .copied()
                .filter(|e| g.runs.iter().any(|x| x.path == e.path))
                .collect();
            reasons(s, run, &es1);
        }
        let short: Vec<String> = es
            .iter()
            .filter_map(|e| {
                let p = e.run.run()?;
                Some(format!("{} {:.1} s", e.label, p.runtime_ms / 1000.0))
            })
            .collect();
        let _ = writeln!(
            s,
            "- run-phase lengths: {} (the paper's multi-second maxima come from compactions \
             a short run may not reach)\n",
            short.join(", ")
        );
    }
    summary.push(Summary {
        what: "Table 5: p99 and max latency, RocksDB/KVell".into(),
        verdict: format!("holds on {held} of {compared}{}", gates.summary_note()),
    });
    images(s, &charts_of(charts, "Table 5"), link);
}
