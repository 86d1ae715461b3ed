//! Result files grouped for charts: one group per workload, one entry per engine,
//! and the engines in the order the design lists them (an engine's colour).

use crate::model::{self, Loaded, Machine, RunFile};
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

impl Group {
    /// The run that describes the group's workload: the first that names one (a run
    /// killed at its memory limit names none), else the first.
    pub fn describing(&self) -> Option<&Entry> {
        self.runs
            .iter()
            .find(|e| !e.run.workload.is_empty())
            .or(self.runs.first())
    }
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
        // a run file that names no workload (an engine killed at its memory limit, a
        // run that failed) belongs with the other runs of its directory
        let mut dir_workload = BTreeMap::<PathBuf, String>::new();
        for l in runs.iter().filter(|l| !l.run.workload.is_empty()) {
            if let Some(d) = l.path.parent() {
                dir_workload
                    .entry(d.to_path_buf())
                    .or_insert_with(|| l.run.workload_name());
            }
        }
        let workload_of = |l: &Loaded| {
            l.path
                .parent()
                .filter(|_| l.run.workload.is_empty())
                .and_then(|d| dir_workload.get(d).cloned())
                .unwrap_or_else(|| l.run.workload_name())
        };
        let mut pairs = BTreeMap::<(String, String), usize>::new();
        for l in &runs {
            *pairs
                .entry((workload_of(l), l.run.engine.name.clone()))
                .or_default() += 1;
        }
        let by_dir = pairs.values().any(|&n| n > 1);
        let mut groups: BTreeMap<String, Vec<Loaded>> = BTreeMap::new();
        for l in runs {
            let mut key = workload_of(&l);
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
    /// count as one, with the disk that was found; a result that names no machine at
    /// all (the stand-in file of a run that failed) counts only where no other does.
    pub fn machines(&self) -> Vec<Machine> {
        let mut ms: Vec<Machine> = Vec::new();
        let unknown = |m: &Machine| m.cores == 0 && m.cpu_model.is_empty() && m.hostname.is_empty();
        let runs: Vec<&Entry> = self.groups.iter().flat_map(|g| &g.runs).collect();
        let any_known = runs.iter().any(|e| !unknown(&e.run.machine));
        for e in runs {
            let m = &e.run.machine;
            if any_known && unknown(m) {
                continue;
            }
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
