//! Fig. 10: item size on YCSB E: KVell about flat, RocksDB falling.

use crate::budget::flagged;
use crate::charts::figure::{Figure, Panel};
use crate::charts::lines::{Line, Lines};
use crate::charts::style::{H, W, engine_colour};
use crate::dataset::{Entry, Group};
use crate::error::Result;
use crate::paper::chart::{Charts, PaperChart, caption, durability_line, group_commands};
use crate::paper::format::{fx, ops_s};
use crate::paper::markdown::{Summary, charts_of, code_block, engine_table_head, images};
use crate::paper::memory_rule::{Gate, Gates};
use crate::paper::metrics::scans_per_s;
use crate::paper::reasons::reasons;
use crate::paper::reference as paper;
use crate::paper::run::{PaperRun, entry};
use crate::paper::verdict::{Verdict, ratio, ratio_verdict};
use crate::text::human_bytes;
use std::fmt::Write as _;

/// Draws the figure's charts.
pub(super) fn draw(run: &PaperRun, out: &mut Charts) -> Result<()> {
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
                    entry(g, e)
                        .and_then(|x| scans_per_s(&x.run))
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

/// Writes the figure's section of `paper-repro.md`.
pub(super) fn write(
    s: &mut String,
    run: &PaperRun,
    charts: &[PaperChart],
    link: &str,
    summary: &mut Vec<Summary>,
) {
    s.push_str("## Fig. 10: item size on YCSB E\n\n");
    let gs: Vec<(u64, &Group)> = run
        .itemsizes
        .iter()
        .filter_map(|b| run.group(&format!("itemsize/{b}")).map(|g| (*b, g)))
        .collect();
    if gs.is_empty() {
        s.push_str("Skipped: no itemsize/.\n\n");
        return;
    }
    s.push_str(
        "**Paper** (docs/paper-numbers.md, Fig. 10, AWS): KVell about 67K scans/s flat from 64 B to 2 KiB; \
         RocksDB about 136K at 64 B falling to about 52K at 2 KiB (RocksDB/KVell 2.03x at \
         64 B, 0.78x at 2 KiB).\n\n",
    );
    let groups: Vec<&Group> = gs.iter().map(|(_, g)| *g).collect();
    code_block(s, &group_commands(&groups));
    let engines = run.engines_in(&groups);
    s.push_str("Scans per second:\n\n");
    engine_table_head(
        s,
        run,
        "value size",
        "---:",
        &engines,
        &[("RocksDB/KVell", "---:")],
    );
    let sc = |g: &Group, e: &str| entry(g, e).and_then(|x| scans_per_s(&x.run));
    let gate_of = |g: &Group| Gate::of(&[entry(g, "rocksdb"), entry(g, "kvell")]);
    for (b, g) in &gs {
        let _ = write!(s, "| {} |", human_bytes(*b));
        for e in &engines {
            let cell =
                entry(g, e).and_then(|x| scans_per_s(&x.run).map(|v| flagged(ops_s(v), &x.run)));
            let _ = write!(s, " {} |", cell.unwrap_or_else(|| "N/A".into()));
        }
        let _ = writeln!(
            s,
            " {} |",
            gate_of(g).ratio(fx(ratio(sc(g, "rocksdb"), sc(g, "kvell"))))
        );
    }
    s.push('\n');
    let (lo, hi) = (gs[0], gs[gs.len() - 1]);
    let p_lo = paper::ITEMSIZE_ROCKSDB_KSCANS[0].1 / paper::ITEMSIZE_KVELL_KSCANS;
    let p_hi = paper::ITEMSIZE_ROCKSDB_KSCANS[1].1 / paper::ITEMSIZE_KVELL_KSCANS;
    let mut gates = Gates::default();
    let g_lo = gates.add(gate_of(lo.1));
    let g_hi = if hi.0 == lo.0 {
        g_lo.clone()
    } else {
        gates.add(gate_of(hi.1))
    };
    let v_lo = g_lo.verdict(|| ratio_verdict(ratio(sc(lo.1, "rocksdb"), sc(lo.1, "kvell")), p_lo));
    let v_hi = g_hi.verdict(|| ratio_verdict(ratio(sc(hi.1, "rocksdb"), sc(hi.1, "kvell")), p_hi));
    let kv: Vec<f64> = gs.iter().filter_map(|(_, g)| sc(g, "kvell")).collect();
    let flat = if kv.len() >= 2 {
        let mx = kv.iter().copied().fold(0.0, f64::max);
        let mn = kv.iter().copied().fold(f64::INFINITY, f64::min);
        (mn > 0.0).then(|| mx / mn)
    } else {
        None
    };
    let v = match (v_lo, v_hi) {
        (Verdict::NotCompared, _) | (_, Verdict::NotCompared) => Verdict::NotCompared,
        (Verdict::Holds, Verdict::Holds) => Verdict::Holds,
        (Verdict::NotComparable, _) | (_, Verdict::NotComparable) => Verdict::NotComparable,
        (Verdict::DoesNotHold, _) | (_, Verdict::DoesNotHold) => Verdict::DoesNotHold,
        _ => Verdict::OrderOnly,
    };
    let _ = writeln!(
        s,
        "**Shape:** ratio rule on RocksDB/KVell at the smallest ({}: {}) and the largest \
         ({}: {}) item size against the paper's {p_lo:.2}x and {p_hi:.2}x -> **{}**. KVell's \
         spread across sizes (max/min): {} (paper: about 1).\n",
        human_bytes(lo.0),
        g_lo.text(v_lo),
        human_bytes(hi.0),
        g_hi.text(v_hi),
        v.text(),
        fx(flat)
    );
    gates.line(s);
    if v != Verdict::Holds && v.judged() {
        let es: Vec<&Entry> = [lo.1, hi.1]
            .iter()
            .flat_map(|g| ["kvell", "rocksdb"].into_iter().filter_map(|n| entry(g, n)))
            .collect();
        reasons(s, run, &es);
    }
    summary.push(Summary {
        what: "Fig. 10: item size, RocksDB/KVell at both ends".into(),
        verdict: format!("{}{}", v.text(), gates.summary_note()),
    });
    images(s, &charts_of(charts, "Fig. 10"), link);
}
