//! The comparison table (`ycsb compare`): engines as columns, one row per metric, the
//! best cell of each row marked.

use super::summary::human_bytes;
use kvtb_schema::{OpSummary, RunFile};
use std::fmt::Write as _;

/// A table with engines as columns, one row per metric, the best cell of each row
/// marked with `*`.
/// With `spread`, a row gives each engine's (min, max) run throughput over repeats.
pub fn compare_table(reports: &[RunFile], spread: Option<&[(f64, f64)]>) -> String {
    struct Row {
        name: &'static str,
        higher_is_better: Option<bool>,
        cells: Vec<Option<f64>>,
        text: Vec<String>,
    }
    let run = |r: &RunFile| r.run().cloned();
    let load = |r: &RunFile| r.load().cloned();
    // worst percentile across op kinds of the run phase
    let pct = |r: &RunFile, f: fn(&OpSummary) -> f64| {
        run(r).and_then(|p| {
            p.ops
                .iter()
                .filter(|o| !o.name.starts_with("Intended-"))
                .map(f)
                .reduce(f64::max)
        })
    };
    let mut rows = vec![
        Row {
            name: "load ops/s",
            higher_is_better: Some(true),
            cells: reports
                .iter()
                .map(|r| load(r).map(|p| p.throughput_ops_sec))
                .collect(),
            text: vec![],
        },
        Row {
            name: "run ops/s",
            higher_is_better: Some(true),
            cells: reports
                .iter()
                .map(|r| run(r).map(|p| p.throughput_ops_sec))
                .collect(),
            text: vec![],
        },
        Row {
            name: "p50 us (worst op)",
            higher_is_better: Some(false),
            cells: reports.iter().map(|r| pct(r, |o| o.p50_us)).collect(),
            text: vec![],
        },
        Row {
            name: "p99 us (worst op)",
            higher_is_better: Some(false),
            cells: reports.iter().map(|r| pct(r, |o| o.p99_us)).collect(),
            text: vec![],
        },
        Row {
            name: "p99.9 us (worst op)",
            higher_is_better: Some(false),
            cells: reports.iter().map(|r| pct(r, |o| o.p999_us)).collect(),
            text: vec![],
        },
        Row {
            name: "max us",
            higher_is_better: Some(false),
            cells: reports.iter().map(|r| pct(r, |o| o.max_us)).collect(),
            text: vec![],
        },
        Row {
            name: "I/Os per op",
            higher_is_better: Some(false),
            cells: reports
                .iter()
                .map(|r| run(r).and_then(|p| p.device.and_then(|d| d.ios_per_op)))
                .collect(),
            text: vec![],
        },
        Row {
            name: "write amplification",
            higher_is_better: Some(false),
            cells: reports
                .iter()
                .map(|r| run(r).and_then(|p| p.device.and_then(|d| d.write_amplification)))
                .collect(),
            text: vec![],
        },
        Row {
            name: "device util %",
            higher_is_better: None,
            cells: reports
                .iter()
                .map(|r| {
                    run(r).and_then(|p| p.device.and_then(|d| d.utilisation.map(|u| u * 100.0)))
                })
                .collect(),
            text: vec![],
        },
        Row {
            name: "% of device ceiling",
            higher_is_better: Some(true),
            cells: reports
                .iter()
                .map(|r| run(r).and_then(|p| p.ceiling.and_then(|c| c.fraction.map(|f| f * 100.0))))
                .collect(),
            text: vec![],
        },
        Row {
            name: "CPU us/op",
            higher_is_better: Some(false),
            cells: reports
                .iter()
                .map(|r| run(r).map(|p| p.cpu_us_per_op))
                .collect(),
            text: vec![],
        },
        Row {
            name: "errors",
            higher_is_better: None,
            cells: reports
                .iter()
                .map(|r| run(r).map(|p| p.errors as f64))
                .collect(),
            text: vec![],
        },
    ];
    for row in &mut rows {
        let best = match row.higher_is_better {
            Some(true) => row.cells.iter().flatten().cloned().reduce(f64::max),
            Some(false) => row.cells.iter().flatten().cloned().reduce(f64::min),
            None => None,
        };
        row.text = row
            .cells
            .iter()
            .map(|c| match c {
                Some(x) => {
                    let mark = if reports.len() > 1 && Some(*x) == best {
                        "*"
                    } else {
                        ""
                    };
                    format!(
                        "{}{mark}",
                        if *x >= 100.0 {
                            format!("{x:.0}")
                        } else {
                            format!("{x:.2}")
                        }
                    )
                }
                None => "N/A".into(),
            })
            .collect();
    }
    let mut text_rows: Vec<(String, Vec<String>)> = rows
        .into_iter()
        .map(|r| (r.name.to_string(), r.text))
        .collect();
    if let Some(sp) = spread {
        let cells = sp
            .iter()
            .map(|(lo, hi)| format!("{lo:.0}..{hi:.0}"))
            .collect();
        text_rows.insert(2, ("run ops/s min..max".into(), cells));
    }
    text_rows.push((
        "durability".into(),
        reports
            .iter()
            .map(|r| r.engine.durability.clone())
            .collect(),
    ));
    text_rows.push((
        "cache".into(),
        reports
            .iter()
            .map(|r| {
                r.engine
                    .cache_bytes
                    .map(human_bytes)
                    .unwrap_or_else(|| "none".into())
            })
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
    s
}
