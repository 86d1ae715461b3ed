//! Result files to charts and a report.
//!
//! Reads the JSON result files the `ycsb` driver writes (one per engine run), groups
//! them by workload, and renders, into the same directory, PNG and SVG charts
//! (throughput, tail latency, throughput over time, CPU, latency CDF) and a
//! `report.md` that ties them together with a table of the numbers. Everything is
//! computed from the files alone.
//!
//! ```no_run
//! let written = analysis::render_dir(std::path::Path::new("results/compare"), None)?;
//! # Ok::<(), String>(())
//! ```
//!
//! [`paper::render_paper`] does the same for a reproduce-paper directory: the paper's
//! figures, a README for the directory and `paper-repro.md`, which sets each of our
//! numbers next to the paper's (constants in [`paper::reference`]).

#![deny(unsafe_code)]

mod charts;
pub mod hist;
pub mod model;
pub mod paper;
mod report;

use model::{Loaded, Machine, RunFile};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The results of one workload, one per engine.
#[derive(Clone, Debug)]
pub struct Group {
    /// `workloada`, or `dir/workloada` when one directory holds several runs of a
    /// workload with the same engine.
    pub label: String,
    pub runs: Vec<Entry>,
}

/// One engine's result inside a group.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The engine's name, or the file's stem where two results of the group share an
    /// engine.
    pub label: String,
    pub path: PathBuf,
    pub run: RunFile,
}

/// Everything found in a directory, grouped and ordered for charts.
#[derive(Clone, Debug)]
pub struct Dataset {
    pub title: String,
    pub groups: Vec<Group>,
    /// Every engine label in display order; an engine's colour is its index here.
    pub engines: Vec<String>,
    pub skipped: Vec<String>,
    /// `ycsb device` results found beside the runs: what the disk can do.
    pub probes: Vec<(PathBuf, model::DeviceProbe)>,
    /// Extra lines for every chart's caption (the scale of a paper run).
    pub caption_notes: Vec<String>,
}

/// Engines in the order the design lists them; unknown ones before `null`.
pub(crate) fn engine_rank(name: &str) -> (u8, String) {
    let r = match name {
        "kvell" => 0,
        "wal" => 1,
        "rocksdb" => 2,
        "sled" => 3,
        "null" => 5,
        _ => 4,
    };
    (r, name.to_string())
}

impl Dataset {
    /// Groups loaded results by workload (and by sub-directory where needed).
    pub fn new(title: String, found: model::Found, root: &Path) -> Dataset {
        let model::Found {
            runs,
            probes,
            skipped,
        } = found;
        let rel_dir = |p: &Path| {
            p.parent()
                .and_then(|d| d.strip_prefix(root).ok())
                .map(|d| d.display().to_string())
                .unwrap_or_default()
        };
        let mut pairs = BTreeMap::<(String, String), usize>::new();
        for l in &runs {
            *pairs
                .entry((l.run.workload_name(), l.run.engine.name.clone()))
                .or_default() += 1;
        }
        let by_dir = pairs.values().any(|&n| n > 1);
        let mut groups: BTreeMap<String, Vec<Loaded>> = BTreeMap::new();
        for l in runs {
            let mut key = l.run.workload_name();
            let d = rel_dir(&l.path);
            if by_dir && !d.is_empty() {
                key = format!("{d}/{key}");
            }
            groups.entry(key).or_default().push(l);
        }
        let mut out = Vec::new();
        for (label, mut ls) in groups {
            ls.sort_by_key(|l| (engine_rank(&l.run.engine.name), l.path.clone()));
            let mut count = BTreeMap::<&str, usize>::new();
            for l in &ls {
                *count.entry(l.run.engine.name.as_str()).or_default() += 1;
            }
            let entries = ls
                .iter()
                .map(|l| {
                    let name = &l.run.engine.name;
                    let label = if count[name.as_str()] > 1 {
                        l.path
                            .file_stem()
                            .map(|s| s.to_string_lossy().into_owned())
                            .unwrap_or_else(|| name.clone())
                    } else {
                        name.clone()
                    };
                    Entry {
                        label,
                        path: l.path.clone(),
                        run: l.run.clone(),
                    }
                })
                .collect();
            out.push(Group {
                label,
                runs: entries,
            });
        }
        let mut engines: Vec<(String, (u8, String))> = Vec::new();
        for g in &out {
            for e in &g.runs {
                if !engines.iter().any(|(l, _)| *l == e.label) {
                    engines.push((e.label.clone(), engine_rank(&e.run.engine.name)));
                }
            }
        }
        engines.sort_by(|a, b| (&a.1, &a.0).cmp(&(&b.1, &b.0)));
        Dataset {
            title,
            groups: out,
            engines: engines.into_iter().map(|(l, _)| l).collect(),
            skipped,
            probes,
            caption_notes: Vec::new(),
        }
    }

    /// Distinct machines of the results (normally one). Results of one machine that
    /// differ only in the disk found (an engine without a data directory has none)
    /// count as one, with the disk that was found.
    pub fn machines(&self) -> Vec<Machine> {
        let mut ms: Vec<Machine> = Vec::new();
        for e in self.groups.iter().flat_map(|g| &g.runs) {
            let m = &e.run.machine;
            let same = |a: &Machine| {
                a.hostname == m.hostname
                    && a.cpu_model == m.cpu_model
                    && a.cores == m.cores
                    && a.memory_bytes == m.memory_bytes
                    && a.kernel == m.kernel
                    && (a.disk.is_none() || m.disk.is_none() || a.disk == m.disk)
            };
            match ms.iter_mut().find(|a| same(a)) {
                Some(a) => {
                    if a.disk.is_none() {
                        a.disk = m.disk.clone();
                    }
                }
                None => ms.push(m.clone()),
            }
        }
        ms
    }

    pub fn engine_index(&self, label: &str) -> usize {
        self.engines.iter().position(|e| e == label).unwrap_or(0)
    }
}

/// `1.5 GiB`-style size.
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

/// A rate or count in short form: `812`, `45.4k`, `3.60M`.
pub fn human_count(x: f64) -> String {
    let a = x.abs();
    if a >= 1e9 {
        format!("{:.2}G", x / 1e9)
    } else if a >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", x / 1e3)
    } else if a >= 1e3 {
        format!("{:.1}k", x / 1e3)
    } else if a >= 10.0 || x == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

/// One line describing a machine: CPU, cores, memory, disk.
pub fn machine_line(m: &Machine) -> String {
    let mut s = format!(
        "{}, {} cores, {} RAM",
        if m.cpu_model.is_empty() {
            "unknown CPU"
        } else {
            &m.cpu_model
        },
        if m.cores == 0 {
            "unknown".to_string()
        } else {
            m.cores.to_string()
        },
        m.memory_bytes
            .map(human_bytes)
            .unwrap_or_else(|| "unknown".into())
    );
    match &m.disk {
        Some(d) => {
            let mut parts = Vec::new();
            if let Some(model) = d.model.as_deref().filter(|s| !s.is_empty()) {
                parts.push(model.to_string());
            }
            match d.rotational {
                Some(true) => parts.push("rotational".into()),
                Some(false) => parts.push("SSD".into()),
                None => {}
            }
            if let Some(sz) = d.size_bytes {
                parts.push(human_bytes(sz));
            }
            if let Some(fs) = d.filesystem.as_deref().filter(|s| !s.is_empty()) {
                parts.push(fs.to_string());
            }
            s.push_str(&format!("; disk {}", d.device));
            if !parts.is_empty() {
                s.push_str(&format!(" ({})", parts.join(", ")));
            }
        }
        None => s.push_str("; disk unknown"),
    }
    if !m.os.is_empty() || !m.kernel.is_empty() {
        s.push_str(&format!("; {} kernel {}", m.os, m.kernel));
    }
    s
}

/// The workload and how it was driven, in one line.
pub fn workload_line(r: &RunFile) -> String {
    let mut s = r.workload_name();
    let rc = r.prop("recordcount").unwrap_or("?");
    let oc = r.prop("operationcount").unwrap_or("?");
    s.push_str(&format!(": {rc} records, {oc} operations"));
    if let Some(mix) = r.prop("mix") {
        s.push_str(&format!(" ({mix})"));
    }
    if let Some(d) = r.prop("requestdistribution") {
        s.push_str(&format!(", {d}"));
    }
    let d = &r.driving;
    match d.queue_depth {
        Some(qd) => s.push_str(&format!("; async, queue depth {qd}")),
        None => s.push_str(&format!("; closed loop, {} client thread(s)", d.threads)),
    }
    if let Some(t) = d.target_ops {
        s.push_str(&format!(", target {} ops/s", human_count(t)));
    }
    if d.warmup_s > 0.0 {
        s.push_str(&format!(", warm-up {} s", d.warmup_s));
    }
    if let Some(t) = d.max_time_s {
        s.push_str(&format!(", limit {t} s"));
    }
    s
}

/// An engine's fairness settings: durability class, cache and direct I/O.
pub fn engine_line(label: &str, r: &RunFile) -> String {
    let e = &r.engine;
    format!(
        "{label}: durability {}, cache {}, direct I/O {}",
        if e.durability.is_empty() {
            "?"
        } else {
            &e.durability
        },
        e.cache_bytes
            .map(human_bytes)
            .unwrap_or_else(|| "none".into()),
        match e.direct_io {
            Some(true) => "yes",
            Some(false) => "no",
            None => "n/a",
        }
    )
}

/// Renders every result file under `dir` into charts (PNG and SVG) and `report.md`
/// in `dir`; returns the files written. Unreadable and foreign `.json` files are
/// reported on stderr and skipped; a directory without any result file is an error.
pub fn render_dir(dir: &Path, title: Option<&str>) -> Result<Vec<PathBuf>, String> {
    let found = model::load_dir(dir)?;
    for s in &found.skipped {
        eprintln!("warning: skipped {s}");
    }
    if found.runs.is_empty() {
        return Err(format!(
            "no ycsb result files (*.json) in {}{}",
            dir.display(),
            if found.skipped.is_empty() {
                String::new()
            } else {
                format!(" ({} skipped)", found.skipped.len())
            }
        ));
    }
    let title = title.map(str::to_string).unwrap_or_else(|| {
        let name = dir
            .canonicalize()
            .ok()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| dir.display().to_string());
        format!("kvell-testbed results: {name}")
    });
    let ds = Dataset::new(title, found, dir);
    let charts = charts::render_all(&ds, dir)?;
    let mut written: Vec<PathBuf> = charts.iter().flat_map(|c| c.files.clone()).collect();
    let md = dir.join("report.md");
    std::fs::write(&md, report::markdown(&ds, &charts))
        .map_err(|e| format!("cannot write {}: {e}", md.display()))?;
    written.push(md);
    Ok(written)
}
