//! The comparison table (`ycsb compare`): engines as columns, one row per metric, the
//! best cell of each row marked among the engines that count.
//!
//! An engine counts for "best" only when it is a real store held to its budget: the
//! null engine (the driver's own ceiling), an engine over its memory budget (more
//! than [`OVER_BUDGET`] of it, or killed at its limit) and an engine that failed are
//! shown but never starred, and the status row says why.

use super::summary::human_bytes;
use kvtb_schema::{OVER_BUDGET, OpSummary, Phase, RunFile};
use std::fmt::Write as _;

/// Why an engine's column is out of the comparison, if it is.
pub fn excluded(r: &RunFile) -> Option<String> {
    if r.engine.name == "null" {
        return Some("reference: the driver's own ceiling".into());
    }
    if let Some(failed) = r.engine.notes.iter().find(|n| n.starts_with("failed: ")) {
        return Some(failed.clone());
    }
    if r.memory.killed_at_limit {
        return Some(format!(
            "over budget: killed at its memory limit ({} budget)",
            r.memory.budget_bytes.map(human_bytes).unwrap_or_default()
        ));
    }
    if let Some((used, budget)) = r.over_budget() {
        // the phase that held the most, named when it is not the run the table shows
        let phase = r
            .phases
            .iter()
            .find(|p| p.memory.as_ref().is_some_and(|m| m.peak_used_bytes == used))
            .map(|p| format!(" (in its {} phase)", p.phase))
            .unwrap_or_default();
        return Some(format!(
            "over budget: {} of {}{phase}",
            human_bytes(used),
            human_bytes(budget)
        ));
    }
    if r.memory.refused_at_open {
        return Some("over budget: refused to open within its budget".into());
    }
    if r.phases
        .iter()
        .flat_map(|p| &p.ops)
        .any(|o| o.status.contains_key("OVER_BUDGET"))
    {
        return Some("over budget: refused writes that did not fit".into());
    }
    None
}

struct Row {
    name: &'static str,
    higher_is_better: Option<bool>,
    cells: Vec<Option<f64>>,
}

fn fmt_num(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

/// The run phase's worst value of a percentile across op kinds.
fn worst(p: &Phase, f: fn(&OpSummary) -> f64) -> Option<f64> {
    p.ops
        .iter()
        .filter(|o| !o.name.starts_with("Intended-"))
        .map(f)
        .reduce(f64::max)
}

fn measured_rows(reports: &[RunFile]) -> Vec<Row> {
    let col = |f: &dyn Fn(&RunFile) -> Option<f64>| reports.iter().map(f).collect();
    let run = |r: &RunFile| r.run().cloned();
    vec![
        Row {
            name: "load ops/s",
            higher_is_better: Some(true),
            cells: col(&|r| r.load().map(|p| p.throughput_ops_sec)),
        },
        Row {
            name: "run ops/s",
            higher_is_better: Some(true),
            cells: col(&|r| run(r).map(|p| p.throughput_ops_sec)),
        },
        Row {
            name: "p50 us (worst op)",
            higher_is_better: Some(false),
            cells: col(&|r| run(r).and_then(|p| worst(&p, |o| o.p50_us))),
        },
        Row {
            name: "p99 us (worst op)",
            higher_is_better: Some(false),
            cells: col(&|r| run(r).and_then(|p| worst(&p, |o| o.p99_us))),
        },
        Row {
            name: "p99.9 us (worst op)",
            higher_is_better: Some(false),
            cells: col(&|r| run(r).and_then(|p| worst(&p, |o| o.p999_us))),
        },
        Row {
            name: "max us",
            higher_is_better: Some(false),
            cells: col(&|r| run(r).and_then(|p| worst(&p, |o| o.max_us))),
        },
        Row {
            // a phase served from memory (page cache) does few device I/Os: not a win
            name: "I/Os per op",
            higher_is_better: None,
            cells: col(&|r| run(r).and_then(|p| p.device.and_then(|d| d.ios_per_op))),
        },
        Row {
            name: "write amplification",
            higher_is_better: Some(false),
            cells: col(&|r| run(r).and_then(|p| p.device.and_then(|d| d.write_amplification))),
        },
        Row {
            name: "device util %",
            higher_is_better: None,
            cells: col(&|r| {
                run(r).and_then(|p| p.device.and_then(|d| d.utilisation.map(|u| u * 100.0)))
            }),
        },
        Row {
            name: "% of device ceiling",
            higher_is_better: Some(true),
            cells: col(&|r| {
                run(r).and_then(|p| p.ceiling.and_then(|c| c.fraction.map(|f| f * 100.0)))
            }),
        },
        Row {
            name: "CPU us/op",
            higher_is_better: Some(false),
            cells: col(&|r| run(r).map(|p| p.cpu_us_per_op)),
        },
        Row {
            name: "errors",
            higher_is_better: None,
            cells: col(&|r| run(r).map(|p| p.errors as f64)),
        },
    ]
}

/// The cells of a measured row, the best of the engines that count starred.
fn row_text(row: &Row, counts: &[bool]) -> Vec<String> {
    let counted = || {
        row.cells
            .iter()
            .zip(counts)
            .filter(|(_, c)| **c)
            .filter_map(|(x, _)| *x)
    };
    let best = match row.higher_is_better {
        Some(true) => counted().reduce(f64::max),
        Some(false) => counted().reduce(f64::min),
        None => None,
    };
    let n_counted = counts.iter().filter(|c| **c).count();
    row.cells
        .iter()
        .zip(counts)
        .map(|(c, counts)| match c {
            Some(x) => {
                let mark = if *counts && n_counted > 1 && Some(*x) == best {
                    "*"
                } else {
                    ""
                };
                format!("{}{mark}", fmt_num(*x))
            }
            None => "N/A".into(),
        })
        .collect()
}

/// The memory rows: the budget, what each engine held at its peak (resident memory
/// beyond the driver's own, plus the OS page cache of its files), used / budget, and
/// how the budget was held.
fn memory_rows(reports: &[RunFile]) -> Vec<(String, Vec<String>)> {
    let bytes = |x: Option<u64>| x.map(human_bytes).unwrap_or_else(|| "N/A".into());
    let mem = |r: &RunFile| r.memory_use().cloned();
    let col = |f: &dyn Fn(&RunFile) -> String| reports.iter().map(f).collect::<Vec<_>>();
    vec![
        (
            "memory budget".into(),
            col(&|r| bytes(r.memory.budget_bytes)),
        ),
        (
            "memory used (peak)".into(),
            col(&|r| bytes(mem(r).map(|m| m.peak_used_bytes))),
        ),
        (
            "  of it OS page cache".into(),
            col(&|r| bytes(mem(r).map(|m| m.peak_page_cache_bytes))),
        ),
        (
            "used / budget".into(),
            col(&|r| match (
                r.memory.killed_at_limit,
                mem(r).and_then(|m| m.used_over_budget),
            ) {
                (true, _) => "killed".into(),
                (_, Some(x)) if x > OVER_BUDGET => format!("{x:.2} OVER"),
                (_, Some(x)) => format!("{x:.2}"),
                (_, None) => "N/A".into(),
            }),
        ),
        (
            "peak RSS (driver incl.)".into(),
            col(&|r| bytes(mem(r).map(|m| m.peak_rss_bytes))),
        ),
        (
            "engine's own accounting".into(),
            col(&|r| {
                mem(r)
                    .filter(|m| !m.engine_accounting.is_empty())
                    .map(|m| human_bytes(m.engine_accounting.values().sum()))
                    .unwrap_or_else(|| "N/A".into())
            }),
        ),
        (
            "memory bound".into(),
            col(&|r| {
                let e = &r.memory.enforcement;
                if r.memory.budget_bytes.is_none() {
                    "no budget".into()
                } else if e.starts_with("memory cgroup") {
                    "cgroup".into()
                } else if e.starts_with("the enclosing") {
                    "enclosing cgroup".into()
                } else if r.memory.uses_os_page_cache {
                    "UNBOUNDED page cache".into()
                } else {
                    "measured".into()
                }
            }),
        ),
        (
            "warm-up s".into(),
            col(
                &|r| match r.phase("warmup").and_then(|p| p.warmup.clone()) {
                    Some(w) if w.steady => format!("{:.0} steady", w.seconds),
                    Some(w) => format!("{:.0} NOT steady", w.seconds),
                    None => "none (cold)".into(),
                },
            ),
        ),
        (
            "cache hit ratio".into(),
            col(&|r| {
                r.run()
                    .and_then(|p| hit_ratio(&p.timeline))
                    .map(|h| format!("{:.1}%", h * 100.0))
                    .unwrap_or_else(|| "N/A".into())
            }),
        ),
    ]
}

/// The mean cache hit ratio over the measured samples of a phase.
fn hit_ratio(t: &[kvtb_schema::Sample]) -> Option<f64> {
    let v: Vec<f64> = t
        .iter()
        .filter(|s| !s.warmup)
        .filter_map(|s| s.cache_hit_ratio)
        .collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// A table with engines as columns, one row per metric, the best cell of each
/// measured row marked with `*` among the engines that count (see [`excluded`]).
/// With `spread`, a row gives each engine's (min, max) run throughput over repeats.
pub fn compare_table(reports: &[RunFile], spread: Option<&[(f64, f64)]>) -> String {
    let out: Vec<Option<String>> = reports.iter().map(excluded).collect();
    let counts: Vec<bool> = out.iter().map(Option::is_none).collect();
    let mut text_rows: Vec<(String, Vec<String>)> = measured_rows(reports)
        .iter()
        .map(|r| (r.name.to_string(), row_text(r, &counts)))
        .collect();
    if let Some(sp) = spread {
        let cells = sp
            .iter()
            .map(|(lo, hi)| format!("{lo:.0}..{hi:.0}"))
            .collect();
        text_rows.insert(2, ("run ops/s min..max".into(), cells));
    }
    text_rows.extend(memory_rows(reports));
    text_rows.push((
        "durability".into(),
        reports
            .iter()
            .map(|r| r.engine.durability.clone())
            .collect(),
    ));
    text_rows.push((
        "direct I/O".into(),
        reports
            .iter()
            .map(|r| {
                r.engine
                    .direct_io
                    .map(|d| if d { "yes" } else { "no" }.to_string())
                    .unwrap_or_else(|| "n/a".into())
            })
            .collect(),
    ));
    let w0 = text_rows
        .iter()
        .map(|r| r.0.len())
        .max()
        .unwrap_or(0)
        .max(6);
    let widths: Vec<usize> = (0..reports.len())
        .map(|i| {
            text_rows
                .iter()
                .map(|r| r.1[i].len())
                .chain([reports[i].engine.name.len()])
                .max()
                .unwrap_or(4)
        })
        .collect();
    let mut s = String::new();
    let _ = write!(s, "{:w0$}", "metric");
    for (i, r) in reports.iter().enumerate() {
        let _ = write!(s, "  {:>w$}", r.engine.name, w = widths[i]);
    }
    s.push('\n');
    for (name, cells) in &text_rows {
        let _ = write!(s, "{name:w0$}");
        for (i, c) in cells.iter().enumerate() {
            let _ = write!(s, "  {c:>w$}", w = widths[i]);
        }
        s.push('\n');
    }
    s.push_str("(* best in row)\n");
    for (r, why) in reports.iter().zip(&out) {
        if let Some(why) = why {
            let _ = writeln!(s, "not counted for best: {}: {why}", r.engine.name);
        }
    }
    s
}
