//! Result files (JSON) and the YCSB-style text summary.

use crate::machine::Machine;
use crate::runner::{Driving, PhaseResult};
use kvapi::{Counters, EngineInfo};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// Format version of the result files.
pub const FORMAT: u32 = 1;

/// An engine as configured for a run.
#[derive(Clone, Debug, Serialize)]
pub struct EngineReport {
    pub name: String,
    /// `none`, `process` or `power`.
    pub durability: String,
    pub durability_setting: String,
    pub cache_bytes: Option<u64>,
    pub direct_io: Option<bool>,
    pub settings: BTreeMap<String, String>,
    pub notes: Vec<String>,
    pub max_key: usize,
    pub max_value: usize,
}

impl EngineReport {
    pub fn from_info(i: &EngineInfo) -> EngineReport {
        EngineReport {
            name: i.engine.clone(),
            durability: i.durability.as_str().into(),
            durability_setting: i.durability_setting.clone(),
            cache_bytes: i.cache_bytes,
            direct_io: i.direct_io,
            settings: i.settings.iter().cloned().collect(),
            notes: i.notes.clone(),
            max_key: i.limits.max_key,
            max_value: i.limits.max_value,
        }
    }
}

/// Engine counters at a point in time; `null` means the engine cannot report it.
pub fn counters_map(c: &Counters) -> BTreeMap<String, Option<u64>> {
    c.entries().into_iter().collect()
}

/// A phase with the engine's counters around it.
#[derive(Clone, Debug, Serialize)]
pub struct PhaseReport {
    #[serde(flatten)]
    pub result: PhaseResult,
    pub counters_before: BTreeMap<String, Option<u64>>,
    pub counters_after: BTreeMap<String, Option<u64>>,
}

/// One result file: everything needed to judge and reproduce a run.
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    pub format: u32,
    pub testbed_version: String,
    /// The command line that produced the result.
    pub command: Vec<String>,
    /// Seconds since the Unix epoch when the run started.
    pub started_unix_s: u64,
    pub machine: Machine,
    pub engine: EngineReport,
    /// The workload's name (`workloada`, a file) and every resolved property.
    pub workload: String,
    pub properties: BTreeMap<String, String>,
    /// Derived workload parameters (value size, mix, distribution).
    pub workload_resolved: BTreeMap<String, String>,
    pub driving: Driving,
    pub phases: Vec<PhaseReport>,
}

impl RunReport {
    pub fn write(&self, path: &Path) -> Result<(), String> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let json = serde_json::to_string_pretty(self)
            .map_err(|e| format!("serialising the result: {e}"))?;
        std::fs::write(path, json + "\n")
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    }
}

fn fmt_us(x: f64) -> String {
    if x < 10.0 {
        format!("{x:.3}")
    } else {
        format!("{x:.1}")
    }
}

/// YCSB's text summary of one phase, with the engine's durability and cache stated.
pub fn summary(report: &RunReport, phase: &PhaseReport) -> String {
    let r = &phase.result;
    let e = &report.engine;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# {} phase, engine {}, {}",
        r.phase,
        e.name,
        report.driving.describe()
    );
    let _ = writeln!(
        s,
        "# durability {} ({}); cache {}; direct I/O {}",
        e.durability,
        e.durability_setting,
        e.cache_bytes
            .map(human_bytes)
            .unwrap_or_else(|| "none".into()),
        e.direct_io
            .map(|d| if d { "yes" } else { "no" })
            .unwrap_or("n/a")
    );
    for n in &e.notes {
        let _ = writeln!(s, "# note: {n}");
    }
    let _ = writeln!(s, "[OVERALL], RunTime(ms), {:.0}", r.runtime_ms);
    let _ = writeln!(
        s,
        "[OVERALL], Throughput(ops/sec), {:.1}",
        r.throughput_ops_sec
    );
    let _ = writeln!(s, "[CPU], User(s), {:.3}", r.cpu_user_s);
    let _ = writeln!(s, "[CPU], System(s), {:.3}", r.cpu_sys_s);
    let _ = writeln!(s, "[CPU], PerOperation(us), {:.2}", r.cpu_us_per_op);
    if let Some(d) = &r.device {
        let _ = writeln!(s, "[DEVICE], Device, {}", d.device);
        let _ = writeln!(s, "[DEVICE], ReadIOPS, {:.0}", d.read_iops);
        let _ = writeln!(s, "[DEVICE], WriteIOPS, {:.0}", d.write_iops);
        let _ = writeln!(s, "[DEVICE], Utilisation(%), {:.1}", d.utilisation * 100.0);
        let _ = writeln!(s, "[DEVICE], IOsPerOperation, {:.3}", d.ios_per_op);
        if let Some(x) = d.read_amplification {
            let _ = writeln!(s, "[DEVICE], ReadAmplification, {x:.2}");
        }
        if let Some(x) = d.write_amplification {
            let _ = writeln!(s, "[DEVICE], WriteAmplification, {x:.2}");
        }
    }
    if let Some(c) = &r.ceiling {
        let _ = writeln!(s, "[CEILING], DeviceIOPSForMix, {:.0}", c.device_iops);
        let _ = writeln!(
            s,
            "[CEILING], Throughput(ops/sec), {:.0}",
            c.ceiling_ops_sec
        );
        let _ = writeln!(
            s,
            "[CEILING], FractionReached(%), {:.1}",
            c.fraction * 100.0
        );
    }
    for line in engine_lines(
        &phase.counters_before,
        &phase.counters_after,
        r.user_write_bytes,
    ) {
        let _ = writeln!(s, "{line}");
    }
    for o in &r.ops {
        let n = &o.name;
        let _ = writeln!(s, "[{n}], Operations, {}", o.operations);
        let _ = writeln!(s, "[{n}], AverageLatency(us), {}", fmt_us(o.average_us));
        let _ = writeln!(s, "[{n}], MinLatency(us), {}", fmt_us(o.min_us));
        let _ = writeln!(s, "[{n}], MaxLatency(us), {}", fmt_us(o.max_us));
        let _ = writeln!(s, "[{n}], 50thPercentileLatency(us), {}", fmt_us(o.p50_us));
        let _ = writeln!(s, "[{n}], 90thPercentileLatency(us), {}", fmt_us(o.p90_us));
        let _ = writeln!(s, "[{n}], 95thPercentileLatency(us), {}", fmt_us(o.p95_us));
        let _ = writeln!(s, "[{n}], 99thPercentileLatency(us), {}", fmt_us(o.p99_us));
        let _ = writeln!(s, "[{n}], 99.9PercentileLatency(us), {}", fmt_us(o.p999_us));
        let _ = writeln!(
            s,
            "[{n}], 99.99PercentileLatency(us), {}",
            fmt_us(o.p9999_us)
        );
        for (status, count) in &o.status {
            let _ = writeln!(s, "[{n}], Return={status}, {count}");
        }
    }
    s
}

/// What the engine's counters say about a phase: cache hit ratio, index bytes per
/// item, and the share of each `phase_ns.*` phase in the engine's accounted time
/// (the paper's "20% B-tree, 20% I/O, 60% waiting" breakdown); with the bytes the
/// driver wrote, the engine's own write amplification, and its write stalls.
pub fn engine_lines(
    before: &BTreeMap<String, Option<u64>>,
    after: &BTreeMap<String, Option<u64>>,
    user_write_bytes: u64,
) -> Vec<String> {
    let delta = |k: &str| -> Option<u64> {
        let a = (*after.get(k)?)?;
        Some(a.saturating_sub(before.get(k).copied().flatten().unwrap_or(0)))
    };
    let now = |k: &str| after.get(k).copied().flatten();
    let mut out = Vec::new();
    if let (Some(h), Some(m)) = (delta("cache_hits"), delta("cache_misses"))
        && h + m > 0
    {
        out.push(format!(
            "[ENGINE], CacheHitRatio(%), {:.1}",
            h as f64 * 100.0 / (h + m) as f64
        ));
    }
    if let (Some(i), Some(items)) = (now("index_bytes"), now("items"))
        && items > 0
    {
        out.push(format!(
            "[ENGINE], IndexBytesPerItem, {:.1}",
            i as f64 / items as f64
        ));
    }
    if let Some(w) = delta("device_bytes_written")
        && user_write_bytes > 0
    {
        out.push(format!(
            "[ENGINE], WriteAmplification, {:.2}",
            w as f64 / user_write_bytes as f64
        ));
    }
    if let Some(st) = delta("stall_micros") {
        out.push(format!(
            "[ENGINE], WriteStall(ms), {:.1}",
            st as f64 / 1000.0
        ));
    }
    let phases: Vec<(&str, u64)> = after
        .keys()
        .filter_map(|k| {
            k.strip_prefix("phase_ns.")
                .map(|name| (name, delta(k).unwrap_or(0)))
        })
        .collect();
    let total: u64 = phases.iter().map(|(_, v)| v).sum();
    if total > 0 {
        for (name, v) in phases {
            out.push(format!(
                "[ENGINE], Time.{name}(%), {:.1}",
                v as f64 * 100.0 / total as f64
            ));
        }
    }
    out
}

pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut x = b as f64;
    let mut u = 0;
    while x >= 1024.0 && u < UNITS.len() - 1 {
        x /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{x:.1} {}", UNITS[u])
    }
}

/// A table with engines as columns, one row per metric, the best cell of each row
/// marked with `*`.
/// With `spread`, a row gives each engine's (min, max) run throughput over repeats.
pub fn compare_table(reports: &[RunReport], spread: Option<&[(f64, f64)]>) -> String {
    struct Row {
        name: &'static str,
        higher_is_better: Option<bool>,
        cells: Vec<Option<f64>>,
        text: Vec<String>,
    }
    let run = |r: &RunReport| {
        r.phases
            .iter()
            .find(|p| p.result.phase == "run")
            .map(|p| p.result.clone())
    };
    let load = |r: &RunReport| {
        r.phases
            .iter()
            .find(|p| p.result.phase == "load")
            .map(|p| p.result.clone())
    };
    // worst percentile across op kinds of the run phase
    let pct = |r: &RunReport, f: fn(&crate::measure::OpSummary) -> f64| {
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
                .map(|r| run(r).and_then(|p| p.device.map(|d| d.ios_per_op)))
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
                .map(|r| run(r).and_then(|p| p.device.map(|d| d.utilisation * 100.0)))
                .collect(),
            text: vec![],
        },
        Row {
            name: "% of device ceiling",
            higher_is_better: Some(true),
            cells: reports
                .iter()
                .map(|r| run(r).and_then(|p| p.ceiling.map(|c| c.fraction * 100.0)))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_lines_derive_ratios_and_phase_shares() {
        let m = |v: &[(&str, Option<u64>)]| {
            v.iter()
                .map(|(k, x)| (k.to_string(), *x))
                .collect::<BTreeMap<_, _>>()
        };
        let before = m(&[
            ("cache_hits", Some(100)),
            ("cache_misses", Some(100)),
            ("phase_ns.index", Some(0)),
            ("phase_ns.wait", Some(0)),
        ]);
        let after = m(&[
            ("cache_hits", Some(400)),
            ("cache_misses", Some(200)),
            ("items", Some(1000)),
            ("index_bytes", Some(19_000)),
            ("phase_ns.index", Some(200)),
            ("phase_ns.wait", Some(600)),
            ("device_reads", None),
        ]);
        let lines = engine_lines(&before, &after, 0);
        assert!(
            lines.contains(&"[ENGINE], CacheHitRatio(%), 75.0".to_string()),
            "{lines:?}"
        );
        assert!(
            lines.contains(&"[ENGINE], IndexBytesPerItem, 19.0".to_string()),
            "{lines:?}"
        );
        assert!(
            lines.contains(&"[ENGINE], Time.index(%), 25.0".to_string()),
            "{lines:?}"
        );
        assert!(
            lines.contains(&"[ENGINE], Time.wait(%), 75.0".to_string()),
            "{lines:?}"
        );
        assert!(engine_lines(&BTreeMap::new(), &BTreeMap::new(), 0).is_empty());
        let w = m(&[
            ("device_bytes_written", Some(3000)),
            ("stall_micros", Some(2500)),
        ]);
        let lines = engine_lines(&BTreeMap::new(), &w, 1000);
        assert!(
            lines.contains(&"[ENGINE], WriteAmplification, 3.00".to_string()),
            "{lines:?}"
        );
        assert!(
            lines.contains(&"[ENGINE], WriteStall(ms), 2.5".to_string()),
            "{lines:?}"
        );
    }
}
