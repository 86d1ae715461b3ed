//! Figs. 4 and 7: throughput over time on YCSB A and E uniform: KVell steadier than
//! RocksDB, and on Fig. 4 steadier than WiredTiger where it ran.

use crate::budget::flagged;
use crate::charts::timeline::Timeline;
use crate::dataset::{Entry, Group};
use crate::error::Result;
use crate::paper::baseline::{
    Baseline, NO_WIREDTIGER_RESULT, ROCKSDB, WIREDTIGER, note_missing_wiredtiger,
};
use crate::paper::chart::{Charts, PaperChart, group_commands};
use crate::paper::format::{ops_s, opt, paper_ms};
use crate::paper::markdown::{Summary, charts_of, code_block, images};
use crate::paper::memory_rule::{Gate, Gates};
use crate::paper::metrics::{steadiness, tput};
use crate::paper::reasons::reasons;
use crate::paper::reference as paper;
use crate::paper::run::{PaperRun, entry};
use crate::paper::verdict::{MIN_INTERVALS, Verdict};
use crate::text::human_bytes;
use std::fmt::Write as _;

/// Draws Figs. 4 and 7.
pub(super) fn draw(run: &PaperRun, out: &mut Charts) -> Result<()> {
    for (fig, w) in [("Fig. 4", 'a'), ("Fig. 7", 'e')] {
        timeline(run, out, fig, w)?;
    }
    Ok(())
}

fn timeline(run: &PaperRun, out: &mut Charts, fig: &str, w: char) -> Result<()> {
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

/// The steadiness rule: KVell's per-interval throughput varies less than the
/// baseline's (lower coefficient of variation) and stalls no more often, judged only
/// when both runs have at least `MIN_INTERVALS` measured intervals.
fn steadier(g: &Group, b: Baseline, gate: &Gate) -> Verdict {
    let k = entry(g, "kvell").and_then(|e| steadiness(&e.run));
    let r = entry(g, b.engine).and_then(|e| steadiness(&e.run));
    gate.verdict(|| match (k, r) {
        (Some(k), Some(r)) if k.2.min(r.2) < MIN_INTERVALS => Verdict::NotComparable,
        (Some(k), Some(r)) => {
            if k.0 < r.0 && k.1 <= r.1 {
                Verdict::Holds
            } else {
                Verdict::DoesNotHold
            }
        }
        _ => Verdict::NotComparable,
    })
}

/// The baselines a timeline is judged against: Fig. 4 has the paper's B+ tree
/// (WiredTiger's fluctuations) beside RocksDB, Fig. 7 RocksDB only.
fn judged_against(fig: &str, g: &Group) -> Vec<Baseline> {
    let mut out = vec![ROCKSDB];
    if fig == "Fig. 4" && entry(g, WIREDTIGER.engine).is_some() {
        out.push(WIREDTIGER);
    }
    out
}

/// Writes the section of Figs. 4 and 7.
pub(super) fn write(
    s: &mut String,
    run: &PaperRun,
    charts: &[PaperChart],
    link: &str,
    summary: &mut Vec<Summary>,
) {
    s.push_str("## Figs. 4 and 7: throughput over time, YCSB A and E uniform\n\n");
    let _ = writeln!(
        s,
        "**Paper:** RocksDB's throughput collapses periodically (maintenance: flushes and \
         compactions; its maximum latency on A is {}) while KVell's stays steady (maximum \
         {}) (docs/paper-numbers.md, Table 5 numbers). In Fig. 4 the B+ tree's throughput \
         fluctuates too: WiredTiger's maximum latency on A is {}.\n",
        paper_ms(paper::A_MAX_MS_ROCKSDB),
        paper_ms(paper::A_MAX_MS_KVELL),
        paper_ms(paper::A_MAX_MS_WIREDTIGER)
    );
    let mut any = false;
    for (fig, w) in [("Fig. 4", 'a'), ("Fig. 7", 'e')] {
        let Some(g) = run.ycsb(w, "uniform") else {
            let _ = writeln!(s, "{fig}: skipped, no ycsb/{w}-uniform.\n");
            continue;
        };
        any = true;
        let _ = writeln!(s, "### {fig}: YCSB {} uniform\n", w.to_ascii_uppercase());
        code_block(s, &group_commands(&[g]));
        s.push_str("| engine | durability | mean ops/s | variation (CV) | stalls (< 10% of median) | intervals |\n| --- | --- | ---: | ---: | ---: | ---: |\n");
        for e in &g.runs {
            let st = steadiness(&e.run);
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} |",
                flagged(e.label.clone(), &e.run),
                run.durability(&e.label),
                opt(tput(&e.run), ops_s),
                opt(st.map(|x| x.0), |c| format!("{c:.2}")),
                st.map(|x| x.1.to_string()).unwrap_or_else(|| "N/A".into()),
                st.map(|x| x.2.to_string()).unwrap_or_else(|| "N/A".into())
            );
        }
        s.push('\n');
        let mut gates = Gates::default();
        let mut verdicts = Vec::new();
        for b in judged_against(fig, g) {
            let mut own = Gates::default();
            let gate = gates.add(own.add(Gate::of(&[entry(g, "kvell"), entry(g, b.engine)])));
            let v = steadier(g, b, &gate);
            if b == ROCKSDB {
                let _ = writeln!(
                    s,
                    "**Shape:** rule: KVell's per-interval throughput varies less than RocksDB's \
                     (lower coefficient of variation) and stalls no more often, judged only when \
                     both runs have at least {MIN_INTERVALS} measured intervals -> **{}**.\n",
                    gate.text(v)
                );
            } else {
                let _ = writeln!(
                    s,
                    "**Shape:** the same rule, KVell against {} -> **{}**.\n",
                    b.name,
                    gate.text(v)
                );
            }
            verdicts.push((b, v, gate, own));
        }
        let labels: Vec<String> = g.runs.iter().map(|e| e.label.clone()).collect();
        let wiredtiger_missing = fig == "Fig. 4" && note_missing_wiredtiger(s, &labels);
        gates.line(s);
        for (b, v, _, _) in &verdicts {
            if *v != Verdict::DoesNotHold {
                continue;
            }
            let es: Vec<&Entry> = [b.engine, "kvell"]
                .iter()
                .filter_map(|n| entry(g, n))
                .collect();
            reasons(s, run, &es);
            if let Some(e) = entry(g, b.engine)
                && let Some(p) = e.run.run()
            {
                if *b == ROCKSDB {
                    let c = p.counter_delta("compaction_write_bytes");
                    let _ = writeln!(
                        s,
                        "- rocksdb compacted {} during the run phase; {} sampling intervals in \
                         all (a short run may end before RocksDB's first compaction)\n",
                        c.map(human_bytes)
                            .unwrap_or_else(|| "an unknown amount".into()),
                        p.timeline.len()
                    );
                } else {
                    let n = |c: &str| {
                        p.counter_delta(c)
                            .map(|x| x.to_string())
                            .unwrap_or_else(|| "an unknown number of".into())
                    };
                    let _ = writeln!(
                        s,
                        "- wiredtiger ran {} checkpoints and its request threads evicted {} \
                         pages during the run phase; {} sampling intervals in all (a short run \
                         may end before its cache fills with dirty pages)\n",
                        n("checkpoints"),
                        n("pages_evicted_by_application_threads"),
                        p.timeline.len()
                    );
                }
            }
        }
        for (b, v, gate, own) in &verdicts {
            summary.push(Summary {
                what: format!(
                    "{fig}: KVell steadier than {}, YCSB {}",
                    b.name,
                    w.to_ascii_uppercase()
                ),
                verdict: format!("{}{}", gate.text(*v), own.summary_note()),
            });
        }
        if wiredtiger_missing {
            summary.push(Summary {
                what: format!(
                    "{fig}: KVell steadier than {}, YCSB {}",
                    WIREDTIGER.name,
                    w.to_ascii_uppercase()
                ),
                verdict: NO_WIREDTIGER_RESULT.into(),
            });
        }
        images(s, &charts_of(charts, fig), link);
    }
    if !any {
        s.push_str("Skipped: neither ycsb/a-uniform nor ycsb/e-uniform.\n\n");
    }
}
