//! What the paper could not show: the WAL engine against KVell (write amplification,
//! recovery), and CPU microseconds per request on every workload.

use crate::budget::{contends, flagged};
use crate::charts::bars::Bars;
use crate::charts::figure::{Figure, Panel};
use crate::charts::legend::fills;
use crate::charts::style::{H, W, engine_colour};
use crate::dataset::{Entry, Group};
use crate::error::Result;
use crate::paper::chart::{
    Charts, PaperChart, caption, commands_of, durability_line, group_commands,
};
use crate::paper::format::fx;
use crate::paper::markdown::{Summary, code_block, engine_table_head, images};
use crate::paper::memory_rule::Gate;
use crate::paper::metrics::median_data_bytes;
use crate::paper::panels::recovery_bars;
use crate::paper::run::{DISTS, PaperRun, entry, stem};
use crate::paper::verdict::ratio;
use crate::text::{human_bytes, num};
use plotters::style::RGBColor;
use std::fmt::Write as _;

/// Draws the WAL-against-KVell and the CPU-per-request charts.
pub(super) fn draw(run: &PaperRun, out: &mut Charts) -> Result<()> {
    wal_vs_kvell(run, out)?;
    cpu_per_request(run, out)
}

/// The engines the WAL comparison is about.
const WAL_VS_KVELL: [&str; 2] = ["kvell", "wal"];

/// The write workloads (YCSB A, B, F) with a kvell or wal result.
fn wal_groups(run: &PaperRun) -> Vec<&Group> {
    ['a', 'b', 'f']
        .iter()
        .flat_map(|w| DISTS.iter().filter_map(move |d| run.ycsb(*w, d)))
        .filter(|g| WAL_VS_KVELL.iter().any(|e| entry(g, e).is_some()))
        .collect()
}

/// The commands of the WAL comparison's files: its runs, then the recoveries of
/// kvell and wal.
fn wal_commands(run: &PaperRun, gs: &[&Group]) -> Vec<String> {
    let mut cmds = group_commands(gs);
    for c in commands_of(
        run.recovery
            .iter()
            .filter(|(p, _)| WAL_VS_KVELL.contains(&stem(p).as_str()))
            .map(|(_, r)| &r.command),
    ) {
        if !cmds.contains(&c) {
            cmds.push(c);
        }
    }
    cmds
}

/// Every run result but the item-size sweep's: ycsb/ and production/.
fn cpu_groups(run: &PaperRun) -> Vec<&Group> {
    run.ds
        .groups
        .iter()
        .filter(|g| !g.label.contains('/'))
        .collect()
}

fn wal_vs_kvell(run: &PaperRun, out: &mut Charts) -> Result<()> {
    let engines = WAL_VS_KVELL;
    let gs = wal_groups(run);
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
            gs.iter().any(|g| entry(g, e).is_some())
                || run.recovery.iter().any(|(p, _)| stem(p) == **e)
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
                        entry(g, e).and_then(|x| x.run.run()?.device.as_ref()?.write_amplification)
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
    let cmds = wal_commands(run, &gs);
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

fn cpu_per_request(run: &PaperRun, out: &mut Charts) -> Result<()> {
    let gs = cpu_groups(run);
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
                .map(|e| entry(g, e).and_then(|x| x.run.run().map(|p| p.cpu_us_per_op)))
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

/// Writes the section "What the paper could not show" (no verdict: the paper has no
/// number to compare with).
pub(super) fn write(
    s: &mut String,
    run: &PaperRun,
    charts: &[PaperChart],
    link: &str,
    _summary: &mut Vec<Summary>,
) {
    s.push_str("## What the paper could not show\n\n");
    s.push_str("### The WAL engine against KVell\n\n");
    let gs = wal_groups(run);
    let cmds = wal_commands(run, &gs);
    if !cmds.is_empty() {
        code_block(s, &cmds);
    }
    if gs.is_empty() {
        s.push_str("No kvell or wal result on A, B or F.\n\n");
    } else {
        s.push_str("Device write amplification of the run phase (device bytes written / user bytes written; whole-disk counters):\n\n| workload | kvell | wal | wal/kvell |\n| --- | ---: | ---: | ---: |\n");
        for g in &gs {
            let wa = |e: &str| {
                entry(g, e).and_then(|x| x.run.run()?.device.as_ref()?.write_amplification)
            };
            let cell = |e: &str| match (wa(e), entry(g, e)) {
                (Some(x), Some(en)) => flagged(format!("{x:.2}"), &en.run),
                _ => "N/A".into(),
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} |",
                g.label,
                cell("kvell"),
                cell("wal"),
                Gate::of(&[entry(g, "wal"), entry(g, "kvell")])
                    .ratio(fx(ratio(wa("wal"), wa("kvell"))))
            );
        }
        s.push('\n');
    }
    let rec: Vec<String> = run
        .recovery
        .iter()
        .filter_map(|(p, r)| {
            let n = p.file_stem()?.to_string_lossy().into_owned();
            ["kvell", "wal"].contains(&n.as_str()).then(|| {
                format!(
                    "{n} {:.3} s for {}",
                    r.recovery_s_median,
                    median_data_bytes(r)
                        .map(human_bytes)
                        .unwrap_or_else(|| "N/A".into())
                )
            })
        })
        .collect();
    if !rec.is_empty() {
        let _ = writeln!(s, "Recovery: {}.\n", rec.join("; "));
    }
    images(
        s,
        &charts
            .iter()
            .filter(|c| c.chart.stem == "beyond-wal-vs-kvell")
            .collect::<Vec<_>>(),
        link,
    );
    s.push_str("### CPU microseconds per request\n\n");
    let gs = cpu_groups(run);
    if gs.is_empty() {
        s.push_str("No ycsb/ or production/ results.\n\n");
        return;
    }
    code_block(s, &group_commands(&gs));
    let engines = run.engines_in(&gs);
    s.push_str(
        "Run-phase CPU time of the whole process per request (user + system), lowest in bold:\n\n",
    );
    engine_table_head(s, run, "workload", "---", &engines, &[]);
    for g in &gs {
        let vals: Vec<(Option<f64>, Option<&Entry>)> = engines
            .iter()
            .map(|e| {
                let x = entry(g, e);
                (x.and_then(|x| x.run.run().map(|p| p.cpu_us_per_op)), x)
            })
            .collect();
        // the lowest among the engines that count (within budget, not null)
        let counted: Vec<f64> = vals
            .iter()
            .filter(|(_, x)| x.is_some_and(|x| contends(&x.run)))
            .filter_map(|(v, _)| *v)
            .collect();
        let best = counted.iter().copied().reduce(f64::min);
        let _ = write!(s, "| {} |", g.label);
        for (v, x) in vals {
            let counts = x.is_some_and(|x| contends(&x.run));
            let text = match v {
                Some(v) if counts && Some(v) == best && counted.len() > 1 => {
                    format!("**{}**", num(v))
                }
                Some(v) => num(v),
                None => "N/A".into(),
            };
            let text = match x {
                Some(x) if v.is_some() => flagged(text, &x.run),
                _ => text,
            };
            let _ = write!(s, " {text} |");
        }
        s.push('\n');
    }
    s.push('\n');
    images(
        s,
        &charts
            .iter()
            .filter(|c| c.chart.stem == "beyond-cpu-per-request")
            .collect::<Vec<_>>(),
        link,
    );
}
