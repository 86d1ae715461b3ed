//! A reproduce-paper directory as loaded: its parts, the run results grouped, and what
//! the files say about the machine, the scale and each engine.

use crate::dataset::{Dataset, Entry, Group};
use crate::model::{DeviceProbe, IoMethods, Machine, Manifest, Recovery};
use crate::text::human_bytes;
use std::path::{Path, PathBuf};

/// Workload letters and distributions of the YCSB section, in display order.
pub const WORKLOADS: [char; 6] = ['a', 'b', 'c', 'd', 'e', 'f'];
pub const DISTS: [&str; 2] = ["uniform", "zipfian"];

/// The production workloads (Fig. 9).
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

impl PaperRun {
    pub fn group(&self, label: &str) -> Option<&Group> {
        self.ds.groups.iter().find(|g| g.label == label)
    }

    pub fn ycsb(&self, w: char, dist: &str) -> Option<&Group> {
        self.group(&format!("{w}-{dist}"))
    }

    /// The machine: the manifest's, else the first result's.
    pub fn machine(&self) -> Option<Machine> {
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

/// A file's name without its extension (an engine's name in the paper run).
pub(crate) fn stem(p: &Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}
