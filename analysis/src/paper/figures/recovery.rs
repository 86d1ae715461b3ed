//! Recovery after a SIGKILL during YCSB A: reopen time, RocksDB/KVell and (where it
//! ran) WiredTiger/KVell.

use crate::charts::figure::{Figure, Panel};
use crate::charts::legend::fills;
use crate::charts::style::{H, W};
use crate::error::Result;
use crate::paper::baseline::{
    Baseline, NO_WIREDTIGER_RESULT, ROCKSDB, WIREDTIGER, compared, note_missing_wiredtiger,
};
use crate::paper::chart::{Charts, PaperChart, caption, commands_of, durability_line};
use crate::paper::format::fx;
use crate::paper::markdown::{Summary, charts_of, code_block, images};
use crate::paper::memory_rule::{Gate, Gates, RECOVERY_NOT_MEASURED};
use crate::paper::metrics::{median, median_data_bytes};
use crate::paper::panels::recovery_bars;
use crate::paper::reasons::machine_facts;
use crate::paper::reference as paper;
use crate::paper::run::{PaperRun, stem};
use crate::paper::verdict::{Verdict, ratio, ratio_verdict};
use crate::text::human_bytes;
use std::fmt::Write as _;

/// Draws the figure's charts.
pub(super) fn draw(run: &PaperRun, out: &mut Charts) -> Result<()> {
    let Some(bars) = recovery_bars(run, None) else {
        out.skip("Recovery", "no recovery/<engine>.json");
        return Ok(());
    };
    let engines: Vec<String> = run.recovery.iter().map(|(p, _)| stem(p)).collect();
    let cycles: Vec<String> = run
        .recovery
        .iter()
        .map(|(p, r)| {
            format!(
                "{}: {} cycle(s), killed after {:.1} s median, {} records missing",
                stem(p),
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
                format!(
                    "Paper: {} GB on 8 NVMe drives, KVell {} s, RocksDB {} s{}.",
                    paper::RECOVERY_GB,
                    paper::RECOVERY_S_KVELL,
                    paper::RECOVERY_S_ROCKSDB,
                    if engines.iter().any(|e| e == WIREDTIGER.engine) {
                        format!(", WiredTiger {} s", paper::RECOVERY_S_WIREDTIGER)
                    } else {
                        String::new()
                    }
                ),
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

/// The paper's recovery time of a baseline against KVell's.
fn paper_ratio(b: Baseline) -> f64 {
    if b == WIREDTIGER {
        paper::RECOVERY_S_WIREDTIGER / paper::RECOVERY_S_KVELL
    } else {
        paper::RECOVERY_S_ROCKSDB / paper::RECOVERY_S_KVELL
    }
}

/// Writes the figure's section of `paper-repro.md`.
pub(super) fn write(
    s: &mut String,
    run: &PaperRun,
    charts: &[PaperChart],
    link: &str,
    summary: &mut Vec<Summary>,
) {
    s.push_str("## Recovery after a SIGKILL during YCSB A\n\n");
    if run.recovery.is_empty() {
        s.push_str("Skipped: no recovery/<engine>.json.\n\n");
        return;
    }
    let _ = writeln!(
        s,
        "**Paper** (docs/paper-numbers.md, text on recovery, {} GB on 8 NVMe drives): KVell {} \
         s, RocksDB {} s (RocksDB/KVell {}), WiredTiger {} s (WiredTiger/KVell {}).\n",
        paper::RECOVERY_GB,
        paper::RECOVERY_S_KVELL,
        paper::RECOVERY_S_ROCKSDB,
        fx(Some(paper_ratio(ROCKSDB))),
        paper::RECOVERY_S_WIREDTIGER,
        fx(Some(paper_ratio(WIREDTIGER))),
    );
    code_block(
        s,
        &commands_of(run.recovery.iter().map(|(_, r)| &r.command)),
    );
    s.push_str("| engine | durability | data size | recovery (median) | cycles | records verified | records missing | records |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    let mut times = Vec::new();
    for (p, r) in &run.recovery {
        let name = p
            .file_stem()
            .map(|x| x.to_string_lossy().into_owned())
            .unwrap_or_default();
        times.push((name.clone(), r.recovery_s_median));
        let _ = writeln!(
            s,
            "| {name} | {} | {} | {:.3} s | {} | {} | {} | {} |",
            if r.engine.durability.is_empty() {
                "?"
            } else {
                &r.engine.durability
            },
            median_data_bytes(r)
                .map(human_bytes)
                .unwrap_or_else(|| "N/A".into()),
            r.recovery_s_median,
            r.cycles.len(),
            r.cycles.iter().map(|c| c.verified_records).sum::<u64>(),
            r.cycles.iter().map(|c| c.missing_records).sum::<u64>(),
            r.records
        );
    }
    s.push('\n');
    let t = |n: &str| times.iter().find(|x| x.0 == n).map(|x| x.1);
    let names: Vec<String> = times.iter().map(|x| x.0.clone()).collect();
    let pairs = compared(&names);
    let mut verdicts = Vec::new();
    for b in &pairs {
        let pr = paper_ratio(*b);
        let ours = ratio(t(b.engine), t("kvell"));
        let v = ratio_verdict(ours, pr);
        let _ = writeln!(
            s,
            "**Shape:** ratio rule on {}/KVell recovery time: {} here against {pr:.2}x -> \
             **{}**.\n",
            b.name,
            fx(ours),
            v.text()
        );
        verdicts.push((b, v, ours, pr));
    }
    let wiredtiger_missing = note_missing_wiredtiger(s, &names);
    // recovery results carry no memory figures: never known to be within a budget
    let mut gates = Gates::default();
    gates.add(Gate::Unknown(RECOVERY_NOT_MEASURED));
    gates.line(s);
    if verdicts
        .iter()
        .any(|(_, v, _, _)| *v != Verdict::Holds && *v != Verdict::NotComparable)
    {
        s.push_str("Likely reasons, from the files:\n\n");
        for f in machine_facts(run) {
            let _ = writeln!(s, "- {f}");
        }
        for (p, r) in &run.recovery {
            let _ = writeln!(
                s,
                "- {}: {} of data against the paper's {} GB on 8 drives; durability {}",
                p.file_stem()
                    .map(|x| x.to_string_lossy())
                    .unwrap_or_default(),
                median_data_bytes(r)
                    .map(human_bytes)
                    .unwrap_or_else(|| "N/A".into()),
                paper::RECOVERY_GB,
                r.engine.durability
            );
        }
        s.push('\n');
    }
    for (b, v, ours, pr) in verdicts {
        summary.push(Summary {
            what: format!("Recovery: {}/KVell", b.name),
            verdict: format!(
                "{} ({} vs {pr:.2}x){}",
                v.text(),
                fx(ours),
                gates.summary_note()
            ),
        });
    }
    if wiredtiger_missing {
        summary.push(Summary {
            what: format!("Recovery: {}/KVell", WIREDTIGER.name),
            verdict: NO_WIREDTIGER_RESULT.into(),
        });
    }
    images(s, &charts_of(charts, "Recovery"), link);
}
