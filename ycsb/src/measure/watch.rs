//! What the sampler watches beside the client threads' counters: the memory the
//! engine holds (the process's resident memory, the OS page cache of the engine's
//! files, the memory cgroup's charge, the engine's own `memory.*` gauges) and its
//! cache hit ratio, once a second; and what a phase held, built from those samples.

use crate::measure::govern::{Governor, trim_c_heap};
use crate::measure::recorder::histogram_bytes;
use crate::memory::{Cgroup, page_cache_of, proc_mem};
use kvapi::Engine;
use kvtb_schema::{MemoryUse, Sample};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The engine and where its memory is seen, for one run.
pub struct Watch {
    pub engine: Arc<dyn Engine>,
    /// The engine's data directories (their files' page cache is the engine's).
    pub dirs: Vec<PathBuf>,
    /// The memory cgroup the process runs in, if any.
    pub cgroup: Option<Cgroup>,
    /// `--memory`, in bytes.
    pub budget: Option<u64>,
    /// The process's resident memory before the engine opened (the driver's own).
    pub driver_rss: u64,
    /// The memory governor, when the engine's cache can be resized under a budget
    /// (see [`crate::measure::govern`]).
    pub governor: Option<Mutex<Governor>>,
}

impl Watch {
    /// The engine's share of a resident memory reading: less the driver's RSS before
    /// the open and `histograms`, the driver's histogram bytes.
    fn engine_rss(&self, rss: u64, histograms: u64) -> u64 {
        rss.saturating_sub(self.driver_rss)
            .saturating_sub(histograms)
    }

    /// A governor for `engine` under `budget`, if its cache can be resized.
    pub fn governor_for(engine: &dyn Engine, budget: Option<u64>) -> Option<Mutex<Governor>> {
        let budget = budget.filter(|b| *b > 0)?;
        let open = engine.cache_capacity().filter(|c| *c > 0)?;
        let g = Governor::new(budget, open);
        // the slow start: an engine that refuses is left as it opened, ungoverned
        engine.set_cache_capacity(g.capacity()).ok()?;
        Some(Mutex::new(g))
    }
}

/// The engine's own memory accounting: its `memory.*` gauges.
pub fn engine_accounting(engine: &dyn Engine) -> BTreeMap<String, u64> {
    engine
        .counters()
        .extra
        .into_iter()
        .filter_map(|(k, v)| k.strip_prefix("memory.").map(|p| (p.to_string(), v)))
        .collect()
}

/// The engine's cache hits and misses so far, where it counts them.
fn hits_misses(engine: &dyn Engine) -> (Option<(u64, u64)>, u64) {
    let c = engine.counters();
    let mem = c
        .extra
        .iter()
        .filter(|(k, _)| k.starts_with("memory."))
        .map(|(_, v)| *v)
        .sum();
    (c.cache_hits.zip(c.cache_misses), mem)
}

/// Per-second readings of a [`Watch`], carried from one sample to the next.
pub struct Reader {
    watch: Arc<Watch>,
    prev_hits: Option<(u64, u64)>,
}

impl Reader {
    pub fn new(watch: Arc<Watch>) -> Reader {
        if let Some(g) = &watch.governor {
            kvapi::sync::lock_handoff(g).begin_phase();
        }
        let prev_hits = hits_misses(watch.engine.as_ref()).0;
        Reader { watch, prev_hits }
    }

    /// Fills the memory and hit-ratio fields of a sample.
    pub fn fill(&mut self, s: &mut Sample) {
        let w = &self.watch;
        s.rss_bytes = proc_mem().ok().map(|m| m.rss);
        s.page_cache_bytes = page_cache(&w.dirs);
        s.cgroup_bytes = w.cgroup.as_ref().and_then(Cgroup::usage);
        let (hm, mem) = hits_misses(w.engine.as_ref());
        s.engine_memory_bytes = Some(mem);
        if let (Some(g), Some(rss)) = (&w.governor, s.rss_bytes) {
            // the figure the budget is checked against, now (see `memory_use`)
            let used = w.engine_rss(rss, histogram_bytes()) + s.page_cache_bytes.unwrap_or(0);
            let mut g = kvapi::sync::lock_handoff(g);
            let before = g.capacity();
            if let Some(new) = g.step(used, Some(mem)) {
                // an engine that refuses keeps its capacity (reported as it is)
                if w.engine.set_cache_capacity(new).is_ok() && new < before {
                    trim_c_heap();
                }
            }
            s.cache_capacity_bytes = w.engine.cache_capacity();
        }
        s.cache_hit_ratio = hm.zip(self.prev_hits).and_then(|((h, m), (ph, pm))| {
            let (dh, dm) = (h.saturating_sub(ph), m.saturating_sub(pm));
            (dh + dm > 0).then(|| dh as f64 / (dh + dm) as f64)
        });
        self.prev_hits = hm;
    }
}

/// The page cache held by the files of `dirs` (directories that do not exist yet
/// hold nothing).
pub fn page_cache(dirs: &[PathBuf]) -> Option<u64> {
    let mut total = 0;
    let mut any = false;
    for d in dirs {
        if let Ok(n) = page_cache_of(d) {
            total += n;
            any = true;
        }
    }
    any.then_some(total)
}

/// What the engine held over a phase, from its timeline and the readings at its end.
/// `peak_rss` is the process's `VmHWM`, reset when the phase started; `histograms`
/// the peak bytes of the driver's histograms over the phase, left out of what the
/// engine is said to use (the driver's own memory, like its RSS before the open).
pub fn memory_use(w: &Watch, timeline: &[Sample], peak_rss: u64, histograms: u64) -> MemoryUse {
    let end_pc = page_cache(&w.dirs).unwrap_or(0);
    let rss: Vec<u64> = timeline.iter().filter_map(|s| s.rss_bytes).collect();
    let peak_pc = timeline
        .iter()
        .filter_map(|s| s.page_cache_bytes)
        .chain([end_pc])
        .max()
        .unwrap_or(0);
    let peak_rss = rss.iter().copied().chain([peak_rss]).max().unwrap_or(0);
    let engine_rss = |r: u64| w.engine_rss(r, histograms);
    // The peak of resident memory plus page cache at one moment: each sample's sum, and
    // `VmHWM` (a peak between samples) with the least page cache the phase held, which
    // it held at every moment. Adding the two peaks would count a page cache that comes
    // and goes (RocksDB's WAL, written through it, 2 to 21 MiB within seconds) on top
    // of a resident peak it never met.
    let least_pc = timeline
        .iter()
        .filter_map(|s| s.page_cache_bytes)
        .chain([end_pc])
        .min()
        .unwrap_or(0);
    let sampled = timeline
        .iter()
        .filter_map(|s| Some(engine_rss(s.rss_bytes?) + s.page_cache_bytes.unwrap_or(0)))
        .max()
        .unwrap_or(0);
    let peak_used = sampled.max(engine_rss(peak_rss) + least_pc);
    MemoryUse {
        peak_rss_bytes: peak_rss,
        mean_rss_bytes: if rss.is_empty() {
            0
        } else {
            rss.iter().sum::<u64>() / rss.len() as u64
        },
        peak_page_cache_bytes: peak_pc,
        end_page_cache_bytes: end_pc,
        peak_used_bytes: peak_used,
        driver_histogram_bytes: histograms,
        used_over_budget: w
            .budget
            .filter(|b| *b > 0)
            .map(|b| peak_used as f64 / b as f64),
        engine_accounting: engine_accounting(w.engine.as_ref()),
        cgroup_peak_bytes: w.cgroup.as_ref().and_then(Cgroup::peak),
        governor: w
            .governor
            .as_ref()
            .map(|g| kvapi::sync::lock_handoff(g).phase()),
    }
}
