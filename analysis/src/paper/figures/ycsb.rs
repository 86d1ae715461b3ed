//! Figs. 5 and 8: YCSB A-F throughput, uniform and zipfian keys, KVell/RocksDB and
//! (where it ran) KVell/WiredTiger against the paper's ratios.

use crate::budget::{contends, flagged};
use crate::charts::figure::{Figure, Panel};
use crate::charts::style::{H, W};
use crate::dataset::{Entry, Group};
use crate::error::Result;
use crate::paper::baseline::{
    NO_WIREDTIGER_RESULT, ROCKSDB, WIREDTIGER, compared, note_missing_wiredtiger,
};
use crate::paper::chart::{Charts, PaperChart, caption, durability_line, group_commands};
use crate::paper::format::{fx, ops_s, opt, pct};
use crate::paper::markdown::{Summary, charts_of, code_block, engine_table_head, images};
use crate::paper::memory_rule::{Gate, Gates};
use crate::paper::metrics::{ceiling, tput};
use crate::paper::panels::{engine_series, throughput_bars, throughput_legend};
use crate::paper::reasons::reasons;
use crate::paper::reference as paper;
use crate::paper::run::{PaperRun, WORKLOADS, entry};
use crate::paper::verdict::{Verdict, ratio, ratio_verdict};
use std::fmt::Write as _;

/// Draws Figs. 5 and 8.
pub(super) fn draw(run: &PaperRun, out: &mut Charts) -> Result<()> {
    for (fig, dist) in [("Fig. 5", "uniform"), ("Fig. 8", "zipfian")] {
        ycsb_bars(run, out, fig, dist)?;
    }
    Ok(())
}

/// A workload whose highest bar is under this fraction of the figure's highest is
/// drawn in a panel with a linear axis of its own (YCSB E: scans, tens of times
/// slower than point operations), so that neither hides the other's ratios.
const OWN_SCALE: f64 = 0.2;

/// The workloads of the figure split by scale: those near the figure's highest bar,
/// and those far below it (empty when none is).
fn by_scale<'a>(gs: &[&'a Group]) -> (Vec<&'a Group>, Vec<&'a Group>) {
    let top = |g: &Group| -> f64 {
        g.runs
            .iter()
            .filter_map(|e| tput(&e.run))
            .fold(0.0, f64::max)
    };
    let highest = gs.iter().map(|g| top(g)).fold(0.0, f64::max);
    gs.iter()
        .copied()
        .partition(|g| highest <= 0.0 || top(g) >= highest * OWN_SCALE)
}

fn workload_letter(g: &Group) -> String {
    g.label[..1].to_ascii_uppercase()
}

fn ycsb_bars(run: &PaperRun, out: &mut Charts, fig: &str, dist: &str) -> Result<()> {
    let gs: Vec<&Group> = WORKLOADS
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
    let (engines, series) = engine_series(run, &gs);
    let (near, far) = by_scale(&gs);
    let letters = |gs: &[&Group]| {
        gs.iter()
            .map(|g| workload_letter(g))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let bars = |gs: &[&Group], title: String| {
        throughput_bars(
            gs,
            &engines,
            &series,
            |g| format!("YCSB {}", workload_letter(g)),
            &title,
        )
    };
    let mut panels = vec![bars(&near, format!("YCSB {}, {dist} keys", letters(&near)))];
    if !far.is_empty() {
        panels.push(bars(
            &far,
            format!("YCSB {}: a scale of its own", letters(&far)),
        ));
    }
    let legend = throughput_legend(&gs, &series, &panels.iter().collect::<Vec<_>>());
    let split = if far.is_empty() {
        String::new()
    } else {
        format!(
            " YCSB {} (highest bar under {:.0}% of the figure's highest) has an axis of its own.",
            letters(&far),
            OWN_SCALE * 100.0
        )
    };
    let panel = if panels.len() == 1 {
        panels.into_iter().map(Panel::Bars).collect()
    } else {
        // widths by the number of workloads, plus room for each panel's axis
        let cells: Vec<(u32, Panel)> = [near.len(), far.len()]
            .into_iter()
            .zip(panels)
            .map(|(n, b)| (n as u32 * 4 + 2, Panel::Bars(b)))
            .collect();
        vec![Panel::Row(cells)]
    };
    let fig_ = Figure {
        title: format!("{}: YCSB throughput, {dist} ({fig})", run.ds.title),
        caption: caption(
            run,
            &[
                format!(
                    "Run-phase operations per second of each engine (E: scans and inserts), \
                     linear axes from 0.{split} Label above each bar: throughput and the \
                     fraction of the run's device ceiling (device IOPS for its read/write mix \
                     / device I/Os per operation) it reached; ceilings over 4x the highest bar \
                     of their panel are left out."
                ),
                durability_line(run, &engines),
            ],
        ),
        legend,
        cols: 1,
        panels: panel,
        size: (W + 320, H + 60),
    };
    let stem = format!("{}-ycsb-{dist}", fig.replace(". ", "").to_lowercase());
    out.add(
        fig,
        &stem,
        format!("YCSB A-F throughput, {dist}"),
        format!(
            "Throughput of every engine on YCSB A-F with {dist} keys (linear axes), each bar \
             with its run's device ceiling and the fraction of it reached; engines labelled \
             with their durability class."
        ),
        &fig_,
        group_commands(&gs),
    )
}

/// The paper's numbers of a figure: a table of its five systems (PebblesDB and
/// TokuMX, which do not run here, the paper's only) with KVell's ratios to the two
/// baselines we run.
fn paper_table(s: &mut String, fig: &str, dist: &str) {
    let _ = writeln!(
        s,
        "**Paper** (docs/paper-numbers.md, {fig}, thousand ops/s; PebblesDB and TokuMX: the \
         paper's only):\n"
    );
    let _ = write!(s, "| workload |");
    for name in paper::SYSTEMS {
        let _ = write!(s, " {name} |");
    }
    for b in [ROCKSDB, WIREDTIGER] {
        let _ = write!(s, " KVell/{} |", b.name);
    }
    s.push_str("\n| --- |");
    for _ in 0..paper::SYSTEMS.len() + 2 {
        s.push_str(" ---: |");
    }
    s.push('\n');
    for r in paper::YCSB_KOPS.iter().filter(|r| r.dist == dist) {
        let _ = write!(s, "| YCSB {} |", r.workload.to_ascii_uppercase());
        for k in r.all() {
            let _ = write!(s, " {k} |");
        }
        for b in [ROCKSDB, WIREDTIGER] {
            let _ = write!(s, " {} |", fx(r.of(b.engine).map(|x| r.kvell / x)));
        }
        s.push('\n');
    }
    s.push('\n');
    if dist == "uniform" {
        let _ = writeln!(
            s,
            "On A, KVell's {}K is {} of a {}K ceiling ({}K IOPS / {} I/Os per request).\n",
            paper::A_KVELL_KOPS,
            pct(paper::A_CEILING_FRACTION),
            paper::A_CEILING_KOPS,
            paper::A_DEVICE_KIOPS,
            paper::A_IOS_PER_REQUEST
        );
    }
}

/// KVell against one baseline across a figure's workloads: the verdicts reached,
/// the workloads where the ratio rule does not hold, the memory rule's gates.
#[derive(Default)]
struct Tally<'a> {
    held: usize,
    judged: usize,
    failing: Vec<&'a Group>,
    gates: Gates,
}

/// Writes the sections of Figs. 5 and 8.
pub(super) fn write(
    s: &mut String,
    run: &PaperRun,
    charts: &[PaperChart],
    link: &str,
    summary: &mut Vec<Summary>,
) {
    for (fig, dist) in [("Fig. 5", "uniform"), ("Fig. 8", "zipfian")] {
        let _ = writeln!(s, "## {fig}: YCSB A-F, {dist}\n");
        let gs: Vec<&Group> = WORKLOADS
            .iter()
            .filter_map(|w| run.ycsb(*w, dist))
            .collect();
        if gs.is_empty() {
            let _ = writeln!(s, "Skipped: no ycsb/<w>-{dist}.\n");
            continue;
        }
        paper_table(s, fig, dist);
        code_block(s, &group_commands(&gs));
        let engines = run.engines_in(&gs);
        let pairs = compared(&engines);
        s.push_str("Run-phase ops/s (fraction of the run's device ceiling):\n\n");
        let heads: Vec<String> = pairs
            .iter()
            .flat_map(|b| {
                [
                    format!("KVell/{} here", b.name),
                    "paper".into(),
                    "verdict".into(),
                ]
            })
            .collect();
        let extra: Vec<(&str, &str)> = heads
            .iter()
            .zip(["---:", "---:", "---"].iter().cycle())
            .map(|(h, a)| (h.as_str(), *a))
            .collect();
        engine_table_head(s, run, "workload", "---", &engines, &extra);
        let mut tallies: Vec<Tally> = pairs.iter().map(|_| Tally::default()).collect();
        let mut gates = Gates::default();
        for g in &gs {
            let w = g.label.chars().next().unwrap_or('?');
            let _ = write!(s, "| {} |", w.to_ascii_uppercase());
            // the best among the engines that count (within budget, not null)
            let contenders: Vec<f64> = engines
                .iter()
                .filter_map(|e| entry(g, e))
                .filter(|x| contends(&x.run))
                .filter_map(|x| tput(&x.run))
                .collect();
            let best = contenders.iter().copied().fold(0.0, f64::max);
            for e in &engines {
                let cell = entry(g, e).and_then(|x| {
                    let t = tput(&x.run)?;
                    let b = if t == best && contenders.len() > 1 && contends(&x.run) {
                        format!("**{}**", ops_s(t))
                    } else {
                        ops_s(t)
                    };
                    Some(flagged(
                        match ceiling(&x.run).1 {
                            Some(f) => format!("{b} ({})", pct(f)),
                            None => b,
                        },
                        &x.run,
                    ))
                });
                let _ = write!(s, " {} |", cell.unwrap_or_else(|| "N/A".into()));
            }
            for (b, t) in pairs.iter().zip(&mut tallies) {
                let ours = ratio(
                    entry(g, "kvell").and_then(|x| tput(&x.run)),
                    entry(g, b.engine).and_then(|x| tput(&x.run)),
                );
                let pr = paper::YCSB_KOPS
                    .iter()
                    .find(|r| r.workload == w && r.dist == dist)
                    .and_then(|r| Some(r.kvell / r.of(b.engine)?));
                let gate = gates.add(
                    t.gates
                        .add(Gate::of(&[entry(g, "kvell"), entry(g, b.engine)])),
                );
                let v = match pr {
                    Some(p) => gate.verdict(|| ratio_verdict(ours, p)),
                    None => Verdict::NotComparable,
                };
                if v.judged() {
                    t.judged += 1;
                    if v == Verdict::Holds {
                        t.held += 1;
                    } else {
                        t.failing.push(g);
                    }
                }
                let _ = write!(
                    s,
                    " {} | {} | {} |",
                    gate.ratio(fx(ours)),
                    match pr {
                        Some(p) => format!("{p:.2}x"),
                        None => "no number".into(),
                    },
                    if pr.is_none() {
                        "no paper number".into()
                    } else {
                        gate.text(v)
                    }
                );
            }
            s.push('\n');
        }
        s.push('\n');
        let others: String = pairs
            .iter()
            .zip(&tallies)
            .skip(1)
            .map(|(b, t)| format!("; on KVell/{}: holds on {} of {}", b.name, t.held, t.judged))
            .collect();
        let (held, judged) = (tallies[0].held, tallies[0].judged);
        let _ = writeln!(
            s,
            "**Shape:** ratio rule on KVell/RocksDB per workload: holds on {held} of {judged} \
             workloads with a paper number{others}.\n"
        );
        let wiredtiger_missing = note_missing_wiredtiger(s, &engines);
        gates.line(s);
        if dist == "uniform"
            && let Some(k) = run.ycsb('a', "uniform").and_then(|g| entry(g, "kvell"))
        {
            let (c, f) = ceiling(&k.run);
            let _ = writeln!(
                s,
                "KVell on A uniform: {} of a {} ops/s ceiling here ({} device IOPS for the \
                     mix / {} I/Os per request); paper: {} of {}K ({}K IOPS / {}).\n",
                opt(f, pct),
                opt(c, ops_s),
                opt(
                    k.run.run().and_then(|p| p.ceiling.as_ref()?.device_iops),
                    ops_s
                ),
                opt(
                    k.run.run().and_then(|p| p.ceiling.as_ref()?.ios_per_op),
                    |x| format!("{x:.2}")
                ),
                pct(paper::A_CEILING_FRACTION),
                paper::A_CEILING_KOPS,
                paper::A_DEVICE_KIOPS,
                paper::A_IOS_PER_REQUEST
            );
        }
        for (b, t) in pairs.iter().zip(&tallies) {
            for g in &t.failing {
                if pairs.len() == 1 {
                    let _ = writeln!(s, "{} does not match the paper's ratio.", g.label);
                } else {
                    let _ = writeln!(
                        s,
                        "{} does not match the paper's KVell/{} ratio.",
                        g.label, b.name
                    );
                }
                let es: Vec<&Entry> = ["kvell", b.engine]
                    .iter()
                    .filter_map(|n| entry(g, n))
                    .collect();
                reasons(s, run, &es);
            }
        }
        for (b, t) in pairs.iter().zip(&tallies) {
            summary.push(Summary {
                what: format!("{fig}: YCSB {dist}, KVell/{}", b.name),
                verdict: format!(
                    "holds on {} of {} workloads{}",
                    t.held,
                    t.judged,
                    t.gates.summary_note()
                ),
            });
        }
        if wiredtiger_missing {
            summary.push(Summary {
                what: format!("{fig}: YCSB {dist}, KVell/{}", WIREDTIGER.name),
                verdict: NO_WIREDTIGER_RESULT.into(),
            });
        }
        images(s, &charts_of(charts, fig), link);
    }
}
