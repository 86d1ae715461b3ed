//! Fig. 9: the production workloads, KVell ahead of RocksDB.

use crate::budget::flagged;
use crate::charts::figure::{Figure, Panel};
use crate::charts::style::{H, W};
use crate::dataset::{Entry, Group};
use crate::error::Result;
use crate::paper::chart::{Charts, PaperChart, caption, durability_line, group_commands};
use crate::paper::format::{fx, ops_s, opt, pct};
use crate::paper::markdown::{Summary, charts_of, code_block, images};
use crate::paper::memory_rule::{Gate, Gates};
use crate::paper::metrics::{ceiling, tput};
use crate::paper::panels::{engine_series, throughput_bars, throughput_legend};
use crate::paper::reasons::reasons;
use crate::paper::run::{PRODUCTION, PaperRun, entry};
use crate::paper::verdict::{Verdict, ratio};
use std::fmt::Write as _;

/// Draws the figure's charts.
pub(super) fn draw(run: &PaperRun, out: &mut Charts) -> Result<()> {
    let gs: Vec<&Group> = PRODUCTION.iter().filter_map(|w| run.group(w)).collect();
    if gs.is_empty() {
        out.skip("Fig. 9 (production workloads)", "no production/ directory");
        return Ok(());
    }
    let (engines, series) = engine_series(run, &gs);
    let bars = throughput_bars(
        &gs,
        &engines,
        &series,
        |g| g.label.clone(),
        "production workloads",
    );
    let legend = throughput_legend(&gs, &series, &[&bars]);
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

/// Writes the figure's section of `paper-repro.md`.
pub(super) fn write(
    s: &mut String,
    run: &PaperRun,
    charts: &[PaperChart],
    link: &str,
    summary: &mut Vec<Summary>,
) {
    s.push_str("## Fig. 9: production workloads\n\n");
    let gs: Vec<&Group> = PRODUCTION.iter().filter_map(|w| run.group(w)).collect();
    if gs.is_empty() {
        s.push_str("Skipped: no production/.\n\n");
        return;
    }
    s.push_str(
        "**Paper:** KVell ahead of RocksDB on both production workloads (docs/paper-numbers.md \
         has no number for this figure, so only the ordering is judged).\n\n",
    );
    code_block(s, &group_commands(&gs));
    s.push_str("| workload | engine | durability | ops/s | % of device ceiling | CPU µs/op |\n| --- | --- | --- | ---: | ---: | ---: |\n");
    for g in &gs {
        for e in &g.runs {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} |",
                g.label,
                flagged(e.label.clone(), &e.run),
                run.durability(&e.label),
                opt(tput(&e.run), ops_s),
                opt(ceiling(&e.run).1, pct),
                opt(e.run.run().map(|p| p.cpu_us_per_op), |x| format!("{x:.1}"))
            );
        }
    }
    s.push('\n');
    let mut verdicts = Vec::new();
    let mut gates = Gates::default();
    for g in &gs {
        let r = ratio(
            entry(g, "kvell").and_then(|e| tput(&e.run)),
            entry(g, "rocksdb").and_then(|e| tput(&e.run)),
        );
        let gate = gates.add(Gate::of(&[entry(g, "kvell"), entry(g, "rocksdb")]));
        let v = gate.verdict(|| match r {
            None => Verdict::NotComparable,
            Some(x) if x > 1.0 => Verdict::Holds,
            Some(_) => Verdict::DoesNotHold,
        });
        verdicts.push(v);
        let _ = writeln!(
            s,
            "- {}: KVell/RocksDB {} -> **{}**",
            g.label,
            gate.ratio(fx(r)),
            gate.text(v)
        );
    }
    s.push_str("\n**Shape:** rule: KVell/RocksDB above 1 on each workload.\n\n");
    gates.line(s);
    if verdicts.contains(&Verdict::DoesNotHold) {
        let es: Vec<&Entry> = gs
            .iter()
            .flat_map(|g| ["kvell", "rocksdb"].into_iter().filter_map(|n| entry(g, n)))
            .collect();
        reasons(s, run, &es);
    }
    let held = verdicts.iter().filter(|v| **v == Verdict::Holds).count();
    let compared = verdicts
        .iter()
        .filter(|v| **v != Verdict::NotCompared)
        .count();
    summary.push(Summary {
        what: "Fig. 9: production, KVell ahead of RocksDB".into(),
        verdict: format!("holds on {held} of {compared}{}", gates.summary_note()),
    });
    images(s, &charts_of(charts, "Fig. 9"), link);
}
