//! "Likely reasons, from the files": what the machine and each engine's run show when
//! a shape does not hold.

use super::format::{human_us, pct};
use super::metrics::{best_point, cache_hit_ratio, ceiling, cpu_fraction};
use super::reference as paper;
use super::run::PaperRun;
use crate::budget;
use crate::dataset::Entry;
use crate::text::{human_bytes, human_count};
use std::fmt::Write as _;

/// What the files say about why an engine ran as it did.
pub(crate) fn engine_facts(run: &PaperRun, e: &Entry) -> String {
    let r = &e.run;
    let mut parts = vec![format!("durability {}", run.durability(&e.label))];
    if let Some(p) = r.run() {
        if let Some(f) = cpu_fraction(r, p) {
            parts.push(format!("CPU busy {} of {} cores", pct(f), r.machine.cores));
        }
        if let Some(u) = p.device.as_ref().and_then(|d| d.utilisation) {
            parts.push(format!("disk busy {}", pct(u)));
        }
        if let Some(d) = p.device.as_ref().and_then(|d| d.ios_per_op) {
            parts.push(format!("{d:.2} device I/Os per request"));
        }
    }
    if let (_, Some(f)) = ceiling(r) {
        parts.push(format!("{} of its device ceiling", pct(f)));
    }
    if let Some(h) = cache_hit_ratio(r) {
        parts.push(format!(
            "cache hits {} of lookups{}",
            pct(h),
            if h >= 0.5 {
                " (reads largely served from memory)"
            } else {
                ""
            }
        ));
    }
    if let Some(m) = budget::peak_phase(r) {
        parts.push(match (r.memory.budget_bytes, budget::over(r)) {
            (_, Some(o)) => o.flag(),
            (Some(b), None) => format!(
                "held {} of its {} memory budget ({}, of it {} OS page cache)",
                human_bytes(m.peak_used_bytes),
                human_bytes(b),
                budget::bound(r),
                human_bytes(m.peak_page_cache_bytes)
            ),
            (None, None) => format!(
                "held {} (no memory budget; of it {} OS page cache)",
                human_bytes(m.peak_used_bytes),
                human_bytes(m.peak_page_cache_bytes)
            ),
        });
    }
    if let Some(p) = r.run() {
        if let Some(st) = p.counter_delta("stall_micros").filter(|x| *x > 0) {
            parts.push(format!("write stalls {}", human_us(st as f64)));
        }
        let cpu = cpu_fraction(r, p).unwrap_or(0.0);
        let disk = p
            .device
            .as_ref()
            .and_then(|d| d.utilisation)
            .unwrap_or(0.0)
            .max(ceiling(r).1.unwrap_or(0.0));
        parts.push(
            if cpu >= 0.85 {
                "so CPU-bound here"
            } else if disk >= 0.85 {
                "so disk-bound here"
            } else {
                "so neither CPU nor disk saturated (likely bound by latency at its queue depth)"
            }
            .into(),
        );
        if let Some(q) = r.driving.queue_depth {
            parts.push(format!("{q} requests in flight"));
        }
    }
    let rel = e
        .path
        .strip_prefix(&run.dir)
        .unwrap_or(&e.path)
        .display()
        .to_string();
    format!("{} ({rel}): {}", e.label, parts.join(", "))
}

/// Machine-level facts that make this machine differ from the paper's.
pub(crate) fn machine_facts(run: &PaperRun) -> Vec<String> {
    let mut out = Vec::new();
    if let Some((_, d)) = &run.device
        && let Some(b) = best_point(&d.points, "randread")
    {
        out.push(format!(
            "this disk's best 4 KiB random-read rate is {} IOPS (device/device.json), {:.2}x \
                 the paper's Optane {}K",
            human_count(b.iops),
            b.iops / (paper::DEVICE_KIOPS[0].1 * 1000.0),
            paper::DEVICE_KIOPS[0].1
        ));
    }
    let cores = run.cores();
    if cores > 0 {
        out.push(format!(
            "{cores} cores here against the paper's {}",
            paper::CORES
        ));
    }
    if let Some(m) = &run.manifest {
        let data = m.records.saturating_mul(m.value_bytes);
        if data > 0 && m.memory_bytes > 0 {
            out.push(format!(
                "memory {} for {} of data ({:.2} of it; the paper's cache: {:.2})",
                human_bytes(m.memory_bytes),
                human_bytes(data),
                m.memory_bytes as f64 / data as f64,
                paper::CACHE_FRACTION
            ));
        }
    }
    out
}

/// "Likely reasons, from the files": the machine's facts, then each entry's.
pub(crate) fn reasons(s: &mut String, run: &PaperRun, entries: &[&Entry]) {
    s.push_str("Likely reasons, from the files:\n\n");
    for f in machine_facts(run) {
        let _ = writeln!(s, "- {f}");
    }
    for e in entries {
        let _ = writeln!(s, "- {}", engine_facts(run, e));
    }
    s.push('\n');
}
