//! `kvtb-report charts DIR`: every result file of a directory to charts and
//! `report.md`: the machine, one table per workload (engines as columns, the best
//! cell of each row in bold among the engines that count: not the null engine, not
//! one over its memory budget; where the files have memory figures, what each engine
//! held against its budget), the charts with a caption each, and the commands.

use crate::budget::{self, Standing};
use crate::charts::render::Rendered;
use crate::charts::results::render_all;
use crate::dataset::{Dataset, Group};
use crate::error::{Error, IoOp, Result};
use crate::model::{self, Measure, OpSummary, RunFile};
use crate::text::{human_bytes, machine_line, num, shell_quote, workload_line};
use crate::warning::{Warning, Written};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Renders every result file under `dir` into charts (PNG and SVG) and `report.md`
/// in `dir`; returns the files written. Unreadable and foreign `.json` files are
/// skipped with a warning; a directory without any result file is an error.
pub fn render_dir(dir: &Path, title: Option<&str>) -> Result<Written> {
    let found = model::load_dir(dir)?;
    if found.runs.is_empty() {
        return Err(Error::NoResults {
            dir: dir.to_path_buf(),
            skipped: found.skipped,
        });
    }
    let mut warnings: Vec<Warning> = found
        .skipped
        .iter()
        .cloned()
        .map(Warning::SkippedFile)
        .collect();
    let title = title.map(str::to_string).unwrap_or_else(|| {
        let name = dir
            .canonicalize()
            .ok()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| dir.display().to_string());
        format!("kvell-testbed results: {name}")
    });
    let ds = Dataset::new(title, found, dir);
    let charts = render_all(&ds, dir, &mut warnings)?;
    let mut files: Vec<PathBuf> = charts.iter().flat_map(|c| c.files.clone()).collect();
    let md = dir.join("report.md");
    std::fs::write(&md, markdown(&ds, &charts)).map_err(|e| Error::io(IoOp::Write, &md, e))?;
    files.push(md);
    Ok(Written { files, warnings })
}

/// The worst value of a percentile across the run phase's op kinds, as measured
/// (from the actual start) or from the intended start (open loop runs only).
fn worst_of(r: &RunFile, intended: bool, f: fn(&OpSummary) -> f64) -> Option<f64> {
    r.run()?
        .ops
        .iter()
        .filter(|o| {
            let m = o.measure().0;
            o.operations > 0 && m != Measure::Queue && (m == Measure::Intended) == intended
        })
        .map(f)
        .reduce(f64::max)
}

fn worst(r: &RunFile, f: fn(&OpSummary) -> f64) -> Option<f64> {
    worst_of(r, false, f)
}

type Getter = fn(&RunFile) -> Option<f64>;

type TextGetter = fn(&RunFile) -> String;

fn table(g: &Group) -> String {
    let mut rows: Vec<(&str, Option<bool>, Getter)> = vec![
        ("run ops/s", Some(true), |r| {
            r.run().map(|p| p.throughput_ops_sec)
        }),
        ("load ops/s", Some(true), |r| {
            r.load().map(|p| p.throughput_ops_sec)
        }),
        ("p50 µs (worst op)", Some(false), |r| {
            worst(r, |o| o.p50_us)
        }),
        ("p99 µs (worst op)", Some(false), |r| {
            worst(r, |o| o.p99_us)
        }),
        ("p99.9 µs (worst op)", Some(false), |r| {
            worst(r, |o| o.p999_us)
        }),
        ("max µs (worst op)", Some(false), |r| {
            worst(r, |o| o.max_us)
        }),
        ("CPU µs/op (run)", Some(false), |r| {
            r.run().map(|p| p.cpu_us_per_op)
        }),
        ("errors (run)", None, |r| r.run().map(|p| p.errors as f64)),
        ("run time (s)", None, |r| {
            r.run().map(|p| p.runtime_ms / 1000.0)
        }),
    ];
    let open_loop = g.runs.iter().any(|e| {
        e.run
            .run()
            .is_some_and(|p| p.ops.iter().any(OpSummary::is_intended))
    });
    if open_loop {
        rows.insert(
            6,
            (
                "p99.9 µs from intended start (worst op)",
                Some(false),
                |r| worst_of(r, true, |o| o.p999_us),
            ),
        );
        rows.insert(
            6,
            ("p99 µs from intended start (worst op)", Some(false), |r| {
                worst_of(r, true, |o| o.p99_us)
            }),
        );
    }
    // device columns, where the results have them
    let device: [(&str, Option<bool>, Getter); 4] = [
        ("device busy % (run)", None, |r| {
            r.run()?.device.as_ref()?.utilisation.map(|u| u * 100.0)
        }),
        ("device I/Os per op (run)", Some(false), |r| {
            r.run()?.device.as_ref()?.ios_per_op
        }),
        ("device read amplification (run)", Some(false), |r| {
            r.run()?.device.as_ref()?.read_amplification
        }),
        ("device write amplification (run)", Some(false), |r| {
            r.run()?.device.as_ref()?.write_amplification
        }),
    ];
    for row in device {
        if g.runs.iter().any(|e| (row.2)(&e.run).is_some()) {
            rows.push(row);
        }
    }
    let ceiling: Getter = |r| r.run()?.ceiling.as_ref()?.fraction.map(|f| f * 100.0);
    if g.runs.iter().any(|e| ceiling(&e.run).is_some()) {
        rows.push(("% of the device's ceiling (run)", Some(true), ceiling));
    }
    let mut s = String::from("| metric |");
    for e in &g.runs {
        match budget::over(&e.run) {
            Some(_) => {
                let _ = write!(s, " {} [over budget] |", e.label);
            }
            None => {
                let _ = write!(s, " {} |", e.label);
            }
        }
    }
    s.push_str("\n| --- |");
    for _ in &g.runs {
        s.push_str(" ---: |");
    }
    s.push('\n');
    // the best cell is chosen among the real stores held to their budget
    let contends: Vec<bool> = g.runs.iter().map(|e| budget::contends(&e.run)).collect();
    let contenders = contends.iter().filter(|c| **c).count();
    for (name, higher, get) in rows {
        let cells: Vec<Option<f64>> = g.runs.iter().map(|e| get(&e.run)).collect();
        let counted = || {
            cells
                .iter()
                .zip(&contends)
                .filter(|(_, c)| **c)
                .filter_map(|(x, _)| *x)
        };
        let best = match higher {
            Some(true) => counted().reduce(f64::max),
            Some(false) => counted().reduce(f64::min),
            None => None,
        };
        let _ = write!(s, "| {name} |");
        let integer = name.starts_with("errors");
        for (c, counts) in cells.into_iter().zip(&contends) {
            match c {
                Some(x) if integer => {
                    let _ = write!(s, " {x:.0} |");
                }
                Some(x) if *counts && contenders > 1 && Some(x) == best => {
                    let _ = write!(s, " **{}** |", num(x));
                }
                Some(x) => {
                    let _ = write!(s, " {} |", num(x));
                }
                None => s.push_str(" N/A |"),
            }
        }
        s.push('\n');
    }
    let text_rows: [(&str, TextGetter); 4] = [
        ("durability", |r| {
            if r.engine.durability.is_empty() {
                "N/A".into()
            } else {
                r.engine.durability.clone()
            }
        }),
        ("durability setting", |r| {
            if r.engine.durability_setting.is_empty() {
                "N/A".into()
            } else {
                r.engine.durability_setting.replace('|', "/")
            }
        }),
        ("cache", |r| {
            r.engine
                .cache_bytes
                .map(human_bytes)
                .unwrap_or_else(|| "none".into())
        }),
        ("direct I/O", |r| {
            match r.engine.direct_io {
                Some(true) => "yes",
                Some(false) => "no",
                None => "N/A",
            }
            .into()
        }),
    ];
    let memory = g.runs.iter().any(|e| budget::measured(&e.run));
    let rows = memory_rows()
        .into_iter()
        .filter(|_| memory)
        .chain(text_rows);
    for (name, get) in rows {
        let _ = write!(s, "| {name} |");
        for e in &g.runs {
            let _ = write!(s, " {} |", get(&e.run));
        }
        s.push('\n');
    }
    s
}

/// The memory rows of a group whose files have memory figures: the budget, what the
/// engine held at the peak of its phases (and the page cache part of it), used /
/// budget, how the budget was held, the warm-up, the run's cache hit ratio, and where
/// the engine stands.
fn memory_rows() -> [(&'static str, TextGetter); 8] {
    fn bytes(x: Option<u64>) -> String {
        x.map(human_bytes).unwrap_or_else(|| "N/A".into())
    }
    [
        ("memory budget", |r| {
            r.memory
                .budget_bytes
                .map(human_bytes)
                .unwrap_or_else(|| "none".into())
        }),
        ("memory used (peak of the phases)", |r| {
            bytes(budget::peak_phase(r).map(|m| m.peak_used_bytes))
        }),
        ("of it OS page cache", |r| {
            bytes(budget::peak_phase(r).map(|m| m.peak_page_cache_bytes))
        }),
        ("used / budget", |r| {
            match budget::peak_phase(r).and_then(|m| m.used_over_budget) {
                Some(x) => format!("{x:.2}"),
                None if r.memory.killed_at_limit => "killed".into(),
                None => "N/A".into(),
            }
        }),
        ("memory bound", |r| budget::bound(r).into()),
        ("warm-up", budget::warmup),
        ("cache hit ratio (run, mean)", |r| {
            r.run()
                .and_then(budget::mean_hit_ratio)
                .map(|h| format!("{:.1}%", h * 100.0))
                .unwrap_or_else(|| "N/A".into())
        }),
        ("memory standing", |r| match budget::standing(r) {
            Standing::Within => "within budget".into(),
            Standing::Over(o) => format!("**{}**", o.flag()),
            Standing::NoBudget => "no budget".into(),
            Standing::NotMeasured => "not measured".into(),
        }),
    ]
}

/// Who is not counted for the best cell of a group's table, and why.
fn not_counted(g: &Group) -> Vec<String> {
    g.runs
        .iter()
        .filter_map(|e| {
            if e.run.engine.name == "null" {
                Some(format!("{} (the driver's own ceiling)", e.label))
            } else {
                budget::over(&e.run).map(|o| format!("{} ({})", e.label, o.flag()))
            }
        })
        .collect()
}

/// `report.md` of a dataset and its charts.
fn markdown(ds: &Dataset, charts: &[Rendered]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# {}\n", ds.title);
    let ms = ds.machines();
    for m in &ms {
        let _ = writeln!(s, "**Machine:** {}\n", machine_line(m));
    }
    if ms.len() > 1 {
        s.push_str("**Warning:** these results come from different machines.\n\n");
    }
    for g in &ds.groups {
        let _ = writeln!(s, "## {}\n", g.label);
        if let Some(e) = g.describing() {
            let _ = writeln!(s, "{}\n", workload_line(&e.run));
        }
        s.push_str(&table(g));
        let out = not_counted(g);
        if g.runs.len() > 1 && out.is_empty() {
            s.push_str("\nBest cell of each row in bold. ");
        } else if g.runs.len() > 1 {
            let _ = write!(
                s,
                "\nBest cell of each row in bold, among the engines that count: not {}. ",
                out.join(", ")
            );
        } else {
            s.push('\n');
        }
        s.push_str(
            "Percentiles are the worst across the run phase's operation kinds, measured \
             from each operation's actual start unless said otherwise. N/A: not in the result.\n\n",
        );
        for e in &g.runs {
            for n in &e.run.engine.notes {
                let _ = writeln!(s, "- {}: {n}", e.label);
            }
        }
        if g.runs.iter().any(|e| !e.run.engine.notes.is_empty()) {
            s.push('\n');
        }
    }
    s.push_str("## Charts\n\n");
    for c in charts {
        let _ = writeln!(s, "### {}\n", c.title);
        let _ = writeln!(s, "![{}]({}.png)\n", c.title, c.stem);
        let _ = writeln!(s, "*{}* ([SVG]({}.svg))\n", c.caption, c.stem);
    }
    if !ds.probes.is_empty() {
        s.push_str("## Device\n\n");
        for (path, p) in &ds.probes {
            let _ = writeln!(
                s,
                "`ycsb device` result {} ({}; sequential fill {:.0} MiB/s):\n",
                path.display(),
                machine_line(&p.machine),
                p.fill_mib_per_s
            );
            s.push_str(
                "| pattern | queue depth | block | IOPS | MiB/s | p50 µs | p99 µs |\n\
                 | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n",
            );
            for q in &p.points {
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {:.1} | {:.1} | {:.1} |",
                    q.pattern,
                    q.queue_depth,
                    human_bytes(q.block_bytes as u64),
                    num(q.iops),
                    q.mib_per_s,
                    q.lat_p50_us,
                    q.lat_p99_us
                );
            }
            s.push('\n');
        }
    }
    s.push_str("## Commands\n\nThe command lines that produced these results:\n\n```sh\n");
    let mut seen: Vec<String> = Vec::new();
    let commands = ds
        .groups
        .iter()
        .flat_map(|g| &g.runs)
        .map(|e| &e.run.command)
        .chain(ds.probes.iter().map(|(_, p)| &p.command));
    for command in commands {
        let c: Vec<String> = command.iter().map(|a| shell_quote(a)).collect();
        let c = c.join(" ");
        if !c.is_empty() && !seen.contains(&c) {
            let _ = writeln!(s, "{c}");
            seen.push(c);
        }
    }
    s.push_str("```\n");
    if !ds.skipped.is_empty() {
        s.push_str("\n## Skipped files\n\n");
        for k in &ds.skipped {
            let _ = writeln!(s, "- {k}");
        }
    }
    s
}
