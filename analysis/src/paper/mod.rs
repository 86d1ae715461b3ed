//! `kvtb-report paper DIR`: a reproduce-paper output directory to the paper's figures,
//! a README for the directory and `paper-repro.md`.
//!
//! The directory (every part optional):
//!
//! ```text
//! manifest.json                        kind "paper-run": scale, machine, command
//! device/device.json                   `ycsb device` (Tables 1, 2)
//! iomethods/iomethods.json             kind "iomethods" (Table 3)
//! ycsb/<a..f>-<uniform|zipfian>/<engine>.json     run results (Figs. 3-5, 7, 8, Table 5)
//! production/<production1|2>/<engine>.json        (Fig. 9)
//! itemsize/<bytes>/<engine>.json       YCSB E with <bytes>-byte values (Fig. 10)
//! recovery/<engine>.json               kind "recovery": reopen after SIGKILL
//! batch/b<B>/kvell.json                KVell with batch = queue depth = B
//! ```
//!
//! A missing part is skipped with a note; a file that is there but does not parse is
//! an error naming the file.

pub mod reference;
mod repro;

use crate::model::{
    DeviceProbe, IoMethods, Manifest, Measure, Phase, Recovery, RunFile, parse_kind, parse_probe,
    parse_run,
};
use crate::{Dataset, Entry, Group, engine_rank, human_bytes, human_count};
use std::path::{Path, PathBuf};

/// Workload letters and distributions of the YCSB section, in display order.
pub const WORKLOADS: [char; 6] = ['a', 'b', 'c', 'd', 'e', 'f'];
pub const DISTS: [&str; 2] = ["uniform", "zipfian"];
pub const PRODUCTION: [&str; 2] = ["production1", "production2"];

/// Everything found in a reproduce-paper directory.
#[derive(Clone, Debug)]
pub struct PaperRun {
    pub dir: PathBuf,
    pub manifest: Option<Manifest>,
    pub device: Option<(PathBuf, DeviceProbe)>,
    pub iomethods: Option<(PathBuf, IoMethods)>,
    pub recovery: Vec<(PathBuf, Recovery)>,
    /// Every run result, grouped: `a-uniform`, `production1`, `itemsize/64`,
    /// `batch/32`. The dataset's engine list gives each engine its colour.
    pub ds: Dataset,
    /// Item sizes and batch sizes found, increasing.
    pub itemsizes: Vec<u64>,
    pub batches: Vec<u64>,
    /// What was absent or skipped, one line each.
    pub notes: Vec<String>,
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: cannot read: {e}", path.display()))
}

fn subdirs(dir: &Path) -> Result<Vec<(String, PathBuf)>, String> {
    let mut out = Vec::new();
    let rd = std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    for e in rd {
        let e = e.map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        if e.path().is_dir() {
            out.push((e.file_name().to_string_lossy().into_owned(), e.path()));
        }
    }
    out.sort();
    Ok(out)
}

fn json_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let rd = std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut out = Vec::new();
    for e in rd {
        let p = e
            .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
            .path();
        if p.is_file() && p.extension().is_some_and(|x| x == "json") {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

fn stem(p: &Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The run results of one directory, one per engine (the file's stem), ordered.
fn load_group(dir: &Path, label: String) -> Result<Group, String> {
    let mut runs = Vec::new();
    for path in json_files(dir)? {
        let run = parse_run(&read(&path)?).map_err(|why| format!("{}: {why}", path.display()))?;
        runs.push(Entry {
            label: stem(&path),
            path,
            run,
        });
    }
    runs.sort_by_key(|e| engine_rank(&e.label));
    Ok(Group { label, runs })
}

/// Reads a reproduce-paper directory. Absent parts become notes; a file that does
/// not parse is an error naming it; a directory with none of the parts is an error.
pub fn load(dir: &Path, title: Option<&str>) -> Result<PaperRun, String> {
    if !dir.is_dir() {
        return Err(format!("{} is not a directory", dir.display()));
    }
    let mut notes = Vec::new();
    let rel = |p: &Path| {
        p.strip_prefix(dir)
            .map(|r| r.display().to_string())
            .unwrap_or_else(|_| p.display().to_string())
    };
    let mut found_any = false;

    let mp = dir.join("manifest.json");
    let manifest = if mp.is_file() {
        found_any = true;
        Some(
            parse_kind::<Manifest>(&read(&mp)?, "paper-run")
                .map_err(|why| format!("{}: {why}", mp.display()))?,
        )
    } else {
        notes.push(
            "manifest.json: absent; the scale and the machine come from the result files"
                .to_string(),
        );
        None
    };

    let dp = dir.join("device/device.json");
    let device = if dp.is_file() {
        found_any = true;
        let text = read(&dp)?;
        let probe = parse_probe(&text).ok_or_else(|| {
            let why = parse_kind::<DeviceProbe>(&text, "device")
                .err()
                .unwrap_or_else(|| "not a `ycsb device` result".into());
            format!("{}: {why}", dp.display())
        })?;
        Some((dp, probe))
    } else {
        notes.push("device/device.json: absent; Tables 1 and 2 skipped".into());
        None
    };

    let ip = dir.join("iomethods/iomethods.json");
    let iomethods = if ip.is_file() {
        found_any = true;
        Some((
            ip.clone(),
            parse_kind::<IoMethods>(&read(&ip)?, "iomethods")
                .map_err(|why| format!("{}: {why}", ip.display()))?,
        ))
    } else {
        notes.push("iomethods/iomethods.json: absent; Table 3 skipped".into());
        None
    };

    let mut groups = Vec::new();
    let yd = dir.join("ycsb");
    if yd.is_dir() {
        found_any = true;
        let mut absent = Vec::new();
        for w in WORKLOADS {
            for d in DISTS {
                let name = format!("{w}-{d}");
                if !yd.join(&name).is_dir() {
                    absent.push(name);
                }
            }
        }
        for (name, p) in subdirs(&yd)? {
            let known = name.split_once('-').is_some_and(|(w, d)| {
                w.len() == 1 && WORKLOADS.contains(&(w.as_bytes()[0] as char)) && DISTS.contains(&d)
            });
            if !known {
                notes.push(format!(
                    "{}: not a <workload>-<distribution> name, skipped",
                    rel(&p)
                ));
                continue;
            }
            groups.push(load_group(&p, name)?);
        }
        if !absent.is_empty() {
            notes.push(format!("ycsb/: absent: {}", absent.join(", ")));
        }
    } else {
        notes.push("ycsb/: absent; Figs. 3, 4, 5, 7, 8 and Table 5 skipped".into());
    }

    let pd = dir.join("production");
    if pd.is_dir() {
        found_any = true;
        for (name, p) in subdirs(&pd)? {
            if !PRODUCTION.contains(&name.as_str()) {
                notes.push(format!("{}: unknown production workload, skipped", rel(&p)));
                continue;
            }
            groups.push(load_group(&p, name)?);
        }
        for w in PRODUCTION {
            if !pd.join(w).is_dir() {
                notes.push(format!("production/{w}: absent"));
            }
        }
    } else {
        notes.push("production/: absent; Fig. 9 skipped".into());
    }

    let mut itemsizes = Vec::new();
    let sd = dir.join("itemsize");
    if sd.is_dir() {
        found_any = true;
        for (name, p) in subdirs(&sd)? {
            match name.parse::<u64>() {
                Ok(b) => {
                    itemsizes.push(b);
                    groups.push(load_group(&p, format!("itemsize/{b}"))?);
                }
                Err(_) => notes.push(format!("{}: not a size in bytes, skipped", rel(&p))),
            }
        }
        itemsizes.sort();
        // groups were pushed in name order; put them in size order
    } else {
        notes.push("itemsize/: absent; Fig. 10 skipped".into());
    }

    let mut batches = Vec::new();
    let bd = dir.join("batch");
    if bd.is_dir() {
        found_any = true;
        for (name, p) in subdirs(&bd)? {
            match name.strip_prefix('b').and_then(|b| b.parse::<u64>().ok()) {
                Some(b) => {
                    batches.push(b);
                    groups.push(load_group(&p, format!("batch/{b}"))?);
                }
                None => notes.push(format!("{}: not a b<batch> name, skipped", rel(&p))),
            }
        }
        batches.sort();
    } else {
        notes.push("batch/: absent; the batch-size chart is skipped".into());
    }

    let mut recovery = Vec::new();
    let rd = dir.join("recovery");
    if rd.is_dir() {
        found_any = true;
        for p in json_files(&rd)? {
            let r = parse_kind::<Recovery>(&read(&p)?, "recovery")
                .map_err(|why| format!("{}: {why}", p.display()))?;
            recovery.push((p, r));
        }
        recovery.sort_by_key(|(p, _)| engine_rank(&stem(p)));
        if recovery.is_empty() {
            notes.push("recovery/: no result files; the recovery chart is skipped".into());
        }
    } else {
        notes.push("recovery/: absent; the recovery chart is skipped".into());
    }

    if !found_any {
        return Err(format!(
            "{} holds no part of a reproduce-paper run (manifest.json, device/, iomethods/, \
             ycsb/, production/, itemsize/, recovery/, batch/)",
            dir.display()
        ));
    }

    // engines the manifest lists but a section lacks
    if let Some(m) = &manifest {
        for g in &groups {
            if g.label.starts_with("batch/") || g.label.starts_with("itemsize/") {
                continue;
            }
            let missing: Vec<&str> = m
                .engines
                .iter()
                .filter(|e| !g.runs.iter().any(|r| &r.label == *e))
                .map(String::as_str)
                .collect();
            if !missing.is_empty() {
                notes.push(format!(
                    "{}/{}: no result for {}",
                    if g.label.starts_with("production") {
                        "production"
                    } else {
                        "ycsb"
                    },
                    g.label,
                    missing.join(", ")
                ));
            }
        }
        if rd.is_dir() {
            let missing: Vec<&str> = m
                .engines
                .iter()
                .filter(|e| !recovery.iter().any(|(p, _)| stem(p) == **e))
                .map(String::as_str)
                .collect();
            if !missing.is_empty() && !recovery.is_empty() {
                notes.push(format!("recovery/: no result for {}", missing.join(", ")));
            }
        }
    }

    // keep sections in a fixed order: ycsb by workload then distribution, production,
    // item sizes, batches, each numerically
    groups.sort_by_key(|g| group_order(&g.label));
    let mut engines: Vec<String> = Vec::new();
    let names = manifest
        .iter()
        .flat_map(|m| m.engines.iter().cloned())
        .chain(
            groups
                .iter()
                .flat_map(|g| g.runs.iter().map(|e| e.label.clone())),
        )
        .chain(recovery.iter().map(|(p, _)| stem(p)));
    for n in names {
        if !engines.contains(&n) {
            engines.push(n);
        }
    }
    engines.sort_by_key(|e| engine_rank(e));
    let title = title
        .map(str::to_string)
        .unwrap_or_else(|| match &manifest {
            Some(m) if !m.scale.is_empty() => {
                format!("Reproducing the KVell paper ({} scale)", m.scale)
            }
            _ => "Reproducing the KVell paper".to_string(),
        });
    let ds = Dataset {
        title,
        groups,
        engines,
        skipped: Vec::new(),
        probes: device.iter().cloned().collect(),
        caption_notes: Vec::new(),
    };
    let mut run = PaperRun {
        dir: dir.to_path_buf(),
        manifest,
        device,
        iomethods,
        recovery,
        ds,
        itemsizes,
        batches,
        notes,
    };
    let extra = vec![run.scale_line()];
    run.ds.caption_notes = extra;
    Ok(run)
}

fn group_order(label: &str) -> (u8, u64, String) {
    if let Some(b) = label.strip_prefix("itemsize/") {
        (2, b.parse().unwrap_or(0), String::new())
    } else if let Some(b) = label.strip_prefix("batch/") {
        (3, b.parse().unwrap_or(0), String::new())
    } else if label.starts_with("production") {
        (1, 0, label.to_string())
    } else {
        (0, 0, label.to_string())
    }
}

impl PaperRun {
    pub fn group(&self, label: &str) -> Option<&Group> {
        self.ds.groups.iter().find(|g| g.label == label)
    }

    pub fn ycsb(&self, w: char, dist: &str) -> Option<&Group> {
        self.group(&format!("{w}-{dist}"))
    }

    /// The machine: the manifest's, else the first result's.
    pub fn machine(&self) -> Option<crate::model::Machine> {
        if let Some(m) = self
            .manifest
            .as_ref()
            .filter(|m| m.machine.cores > 0 || !m.machine.cpu_model.is_empty())
        {
            return Some(m.machine.clone());
        }
        self.ds.machines().into_iter().next().or_else(|| {
            self.device
                .as_ref()
                .map(|(_, d)| d.machine.clone())
                .or_else(|| self.iomethods.as_ref().map(|(_, i)| i.machine.clone()))
        })
    }

    pub fn cores(&self) -> usize {
        self.machine().map(|m| m.cores).unwrap_or(0)
    }

    /// One line: the scale and what it means.
    pub fn scale_line(&self) -> String {
        match &self.manifest {
            Some(m) => format!(
                "Scale {}: {} records x {} values ({} of data), memory {}, queue depth {}, {}.",
                if m.scale.is_empty() { "?" } else { &m.scale },
                m.records,
                human_bytes(m.value_bytes),
                human_bytes(m.records.saturating_mul(m.value_bytes)),
                human_bytes(m.memory_bytes),
                m.queue_depth,
                match (m.run_seconds, m.timeline_seconds) {
                    (Some(r), Some(t)) =>
                        format!("{r} s per run ({t} s for the YCSB A and E uniform timelines)"),
                    (Some(r), None) => format!("{r} s per run"),
                    _ => format!(
                        "{} operations per run ({} on E)",
                        m.operations, m.scan_operations
                    ),
                }
            ),
            None => "Scale unknown (no manifest.json).".to_string(),
        }
    }

    /// The scale's name (`small`), `?` without a manifest.
    pub fn scale(&self) -> &str {
        self.manifest
            .as_ref()
            .map(|m| m.scale.as_str())
            .filter(|s| !s.is_empty())
            .unwrap_or("?")
    }

    /// The durability class of an engine, from any file that names it.
    pub fn durability(&self, engine: &str) -> String {
        self.ds
            .groups
            .iter()
            .flat_map(|g| &g.runs)
            .filter(|e| e.label == engine)
            .map(|e| e.run.engine.durability.clone())
            .chain(
                self.recovery
                    .iter()
                    .filter(|(p, _)| stem(p) == engine)
                    .map(|(_, r)| r.engine.durability.clone()),
            )
            .find(|d| !d.is_empty())
            .unwrap_or_else(|| "?".into())
    }

    /// `kvell (process)`: an engine with its durability class.
    pub fn engine_label(&self, engine: &str) -> String {
        format!("{engine} ({})", self.durability(engine))
    }

    /// The engines, in display order, with a result in any of `gs`.
    pub fn engines_in(&self, gs: &[&Group]) -> Vec<String> {
        self.ds
            .engines
            .iter()
            .filter(|e| gs.iter().any(|g| entry(g, e).is_some()))
            .cloned()
            .collect()
    }
}

/// An engine's result in a group.
pub fn entry<'a>(g: &'a Group, engine: &str) -> Option<&'a Entry> {
    g.runs.iter().find(|e| e.label == engine)
}

/// Run-phase throughput (operations per second).
pub fn tput(r: &RunFile) -> Option<f64> {
    r.run().map(|p| p.throughput_ops_sec)
}

/// Scans per second of a run phase (the SCAN operations only), else all operations.
pub fn scans_per_s(r: &RunFile) -> Option<f64> {
    let p = r.run()?;
    let scans = p
        .ops
        .iter()
        .find(|o| o.name == "SCAN")
        .map(|o| o.operations);
    match scans {
        Some(n) if p.runtime_ms > 0.0 => Some(n as f64 / (p.runtime_ms / 1000.0)),
        _ => Some(p.throughput_ops_sec),
    }
}

/// Run-phase ceiling (ops/s) and the fraction of it reached.
pub fn ceiling(r: &RunFile) -> (Option<f64>, Option<f64>) {
    match r.run().and_then(|p| p.ceiling.as_ref()) {
        Some(c) => (c.ceiling_ops_sec, c.fraction),
        None => (None, None),
    }
}

/// The worst value of a statistic across the run phase's op kinds (service time).
pub fn worst(r: &RunFile, f: fn(&crate::model::OpSummary) -> f64) -> Option<f64> {
    r.run()?
        .ops
        .iter()
        .filter(|o| o.operations > 0 && o.measure().0 == Measure::Service)
        .map(f)
        .reduce(f64::max)
}

/// Average latency (µs) over all the run phase's operations (service time).
pub fn mean_latency_us(r: &RunFile) -> Option<f64> {
    let ops: Vec<_> = r
        .run()?
        .ops
        .iter()
        .filter(|o| o.operations > 0 && o.measure().0 == Measure::Service)
        .collect();
    let n: u64 = ops.iter().map(|o| o.operations).sum();
    (n > 0).then(|| {
        ops.iter()
            .map(|o| o.average_us * o.operations as f64)
            .sum::<f64>()
            / n as f64
    })
}

/// CPU busy over a phase as a fraction of the machine's cores.
pub fn cpu_fraction(r: &RunFile, p: &Phase) -> Option<f64> {
    let secs = p.runtime_ms / 1000.0;
    let cores = r.machine.cores as f64;
    (secs > 0.0 && cores > 0.0).then(|| (p.cpu_user_s + p.cpu_sys_s) / secs / cores)
}

/// Cache hits among the engine's cache lookups over the run phase.
pub fn cache_hit_ratio(r: &RunFile) -> Option<f64> {
    let p = r.run()?;
    let h = p.counter_delta("cache_hits")?;
    let m = p.counter_delta("cache_misses")?;
    (h + m > 0).then(|| h as f64 / (h + m) as f64)
}

/// Per-interval throughput of the measured run: coefficient of variation and the
/// number of intervals below 10% of the median (stalls).
pub fn steadiness(r: &RunFile) -> Option<(f64, usize, usize)> {
    let p = r.run()?;
    let mut v: Vec<f64> = p
        .timeline
        .iter()
        .filter(|s| !s.warmup)
        .map(|s| s.ops_per_sec)
        .collect();
    if v.len() < 2 {
        return None;
    }
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / v.len() as f64;
    v.sort_by(f64::total_cmp);
    let med = v[v.len() / 2];
    let stalls = v.iter().filter(|x| **x < med * 0.1).count();
    Some((
        if mean > 0.0 { var.sqrt() / mean } else { 0.0 },
        stalls,
        v.len(),
    ))
}

/// `12 s`, `850 ms`, `42 µs` from microseconds.
pub fn human_us(us: f64) -> String {
    if us >= 1e6 {
        format!("{:.2} s", us / 1e6)
    } else if us >= 1e3 {
        format!("{:.2} ms", us / 1e3)
    } else {
        format!("{us:.0} µs")
    }
}

/// Ops/s in short form with the unit.
pub fn ops(x: f64) -> String {
    format!("{} ops/s", human_count(x))
}

/// `2025-01-31 12:00 UTC` from Unix seconds.
pub fn utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // civil from days (Howard Hinnant's algorithm)
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        (rem % 3600) / 60
    )
}

/// Renders a reproduce-paper directory: charts into `DIR/charts/`, `DIR/README.md`
/// and `paper-repro.md` (at `md`, default `DIR/paper-repro.md`). Returns the files
/// written.
pub fn render_paper(
    dir: &Path,
    md: Option<&Path>,
    title: Option<&str>,
) -> Result<Vec<PathBuf>, String> {
    let run = load(dir, title)?;
    for n in &run.notes {
        eprintln!("note: {n}");
    }
    let charts_dir = dir.join("charts");
    std::fs::create_dir_all(&charts_dir)
        .map_err(|e| format!("cannot create {}: {e}", charts_dir.display()))?;
    let (charts, chart_notes) = crate::charts::paper::render_all(&run, &charts_dir)?;
    for n in &chart_notes {
        eprintln!("note: {n}");
    }
    let mut written: Vec<PathBuf> = charts.iter().flat_map(|c| c.chart.files.clone()).collect();
    let md_arg = md;
    let md = md
        .map(Path::to_path_buf)
        .unwrap_or_else(|| dir.join("paper-repro.md"));
    if let Some(parent) = md.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    let mut command = format!("kvtb-report paper {}", dir.display());
    if let Some(m) = md_arg {
        command.push_str(&format!(" --md {}", m.display()));
    }
    if let Some(t) = title {
        command.push_str(&format!(" --title {}", crate::report::shell_quote(t)));
    }
    let readme = dir.join("README.md");
    std::fs::write(
        &readme,
        repro::readme(&run, &charts, &chart_notes, &md, &command),
    )
    .map_err(|e| format!("cannot write {}: {e}", readme.display()))?;
    written.push(readme);
    let link = repro::relative_link(&md, &charts_dir);
    std::fs::write(
        &md,
        repro::paper_repro(&run, &charts, &chart_notes, &link, &command),
    )
    .map_err(|e| format!("cannot write {}: {e}", md.display()))?;
    written.push(md);
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc(1_796_007_484), "2026-11-30 02:58 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00 UTC");
    }
}
