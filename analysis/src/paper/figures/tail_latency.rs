//! Table 5: p99 and maximum latency on YCSB A, and the latency CDFs; RocksDB/KVell
//! and (where it ran) WiredTiger/KVell against the paper's ratios.

use crate::budget::flagged;
use crate::charts::bars::Bars;
use crate::charts::cdf::{Cdf, engine_cdf};
use crate::charts::figure::{Figure, Panel};
use crate::charts::legend::fills;
use crate::charts::style::{H, PCT_COLOURS, W};
use crate::dataset::{Entry, Group};
use crate::error::Result;
use crate::model::OpSummary;
use crate::paper::baseline::{
    Baseline, NO_WIREDTIGER_RESULT, ROCKSDB, WIREDTIGER, compared, note_missing_wiredtiger,
};
use crate::paper::chart::{Charts, PaperChart, caption, durability_line, group_commands};
use crate::paper::format::{fx, human_us, opt, paper_ms};
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
                paper_caption(engines.iter().any(|e| e == WIREDTIGER.engine)),
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

/// The caption line of the paper's numbers: WiredTiger's where its result is drawn.
fn paper_caption(wiredtiger: bool) -> String {
    let wt = |ms: f64| {
        if wiredtiger {
            format!(", WiredTiger {}", paper_ms(ms))
        } else {
            String::new()
        }
    };
    format!(
        "Run phase; the worst of the operation kinds (READ, UPDATE), measured from each \
         operation's start. Paper (Optane): p99 KVell {}, RocksDB {}{}; max KVell {}, \
         RocksDB {}{}.",
        paper_ms(paper::A_P99_MS_KVELL),
        paper_ms(paper::A_P99_MS_ROCKSDB),
        wt(paper::A_P99_MS_WIREDTIGER),
        paper_ms(paper::A_MAX_MS_KVELL),
        paper_ms(paper::A_MAX_MS_ROCKSDB),
        wt(paper::A_MAX_MS_WIREDTIGER),
    )
}

/// The paper's p99 and maximum latency of a baseline against KVell's (Table 5).
fn paper_ratios(b: Baseline) -> (f64, f64) {
    if b == WIREDTIGER {
        (
            paper::A_P99_MS_WIREDTIGER / paper::A_P99_MS_KVELL,
            paper::A_MAX_MS_WIREDTIGER / paper::A_MAX_MS_KVELL,
        )
    } else {
        (
            paper::A_P99_MS_ROCKSDB / paper::A_P99_MS_KVELL,
            paper::A_MAX_MS_ROCKSDB / paper::A_MAX_MS_KVELL,
        )
    }
}

/// A statistic of an operation kind's latency.
type Stat = fn(&OpSummary) -> f64;

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
    let (rp99, rmax) = paper_ratios(ROCKSDB);
    let (wp99, wmax) = paper_ratios(WIREDTIGER);
    let _ = writeln!(
        s,
        "**Paper** (docs/paper-numbers.md, Table 5): p99 KVell {}, RocksDB {} (RocksDB/KVell \
         {}), WiredTiger {} (WiredTiger/KVell {}); max KVell {}, RocksDB {} ({}), WiredTiger \
         {} ({}), PebblesDB {} (the paper's only; its p99 is not given). docs/paper-numbers.md \
         records no key distribution for them: both are compared.\n",
        paper_ms(paper::A_P99_MS_KVELL),
        paper_ms(paper::A_P99_MS_ROCKSDB),
        fx(Some(rp99)),
        paper_ms(paper::A_P99_MS_WIREDTIGER),
        fx(Some(wp99)),
        paper_ms(paper::A_MAX_MS_KVELL),
        paper_ms(paper::A_MAX_MS_ROCKSDB),
        fx(Some(rmax)),
        paper_ms(paper::A_MAX_MS_WIREDTIGER),
        fx(Some(wmax)),
        paper_ms(paper::A_MAX_MS_PEBBLESDB),
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
    let engines = run.engines_in(&gs);
    let pairs = compared(&engines);
    let mut gates = Gates::default();
    // per baseline: (held, compared, its gates)
    let mut tallies: Vec<(usize, usize, Gates)> = Vec::new();
    for b in &pairs {
        let _ = writeln!(
            s,
            "| workload | statistic | {}/KVell here | paper | verdict |\n| --- | --- | ---: | ---: | --- |",
            b.name
        );
        let (p99, max) = paper_ratios(*b);
        let mut verdicts = Vec::new();
        let mut own = Gates::default();
        for g in &gs {
            let gate = gates.add(own.add(Gate::of(&[entry(g, b.engine), entry(g, "kvell")])));
            for (stat, f, pr) in [
                ("p99", (|o: &OpSummary| o.p99_us) as Stat, p99),
                ("max", |o: &OpSummary| o.max_us, max),
            ] {
                let ours = ratio(
                    entry(g, b.engine).and_then(|e| worst(&e.run, f)),
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
        tallies.push((held, compared, own));
    }
    let others: String = pairs
        .iter()
        .zip(&tallies)
        .skip(1)
        .map(|(b, (held, compared, _))| {
            format!("; on {}/KVell: holds on {held} of {compared}", b.name)
        })
        .collect();
    let (held, compared, _) = &tallies[0];
    let _ = writeln!(
        s,
        "**Shape:** ratio rule on RocksDB/KVell latency: holds on {held} of {compared} \
         comparisons{others}.\n"
    );
    let wiredtiger_missing = note_missing_wiredtiger(s, &engines);
    gates.line(s);
    let failing: Vec<&str> = pairs
        .iter()
        .zip(&tallies)
        .filter(|(_, (held, compared, _))| held < compared)
        .map(|(b, _)| b.engine)
        .collect();
    if !failing.is_empty() {
        let names: Vec<&str> = std::iter::once("kvell").chain(failing.clone()).collect();
        let es: Vec<&Entry> = gs
            .iter()
            .flat_map(|g| names.iter().filter_map(|n| entry(g, n)))
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
            "- run-phase lengths: {} (the paper's multi-second maxima come from {} a short \
             run may not reach)\n",
            short.join(", "),
            if failing.contains(&WIREDTIGER.engine) {
                "maintenance (RocksDB's compactions, WiredTiger's checkpoints and evictions of \
                 dirty pages)"
            } else {
                "compactions"
            }
        );
    }
    for (b, (held, compared, own)) in pairs.iter().zip(&tallies) {
        summary.push(Summary {
            what: format!("Table 5: p99 and max latency, {}/KVell", b.name),
            verdict: format!("holds on {held} of {compared}{}", own.summary_note()),
        });
    }
    if wiredtiger_missing {
        summary.push(Summary {
            what: format!("Table 5: p99 and max latency, {}/KVell", WIREDTIGER.name),
            verdict: NO_WIREDTIGER_RESULT.into(),
        });
    }
    images(s, &charts_of(charts, "Table 5"), link);
}
