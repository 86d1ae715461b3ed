//! Numbers read off result files: throughput, ceilings, latencies, CPU, steadiness,
//! the device probe's best points, recovery data sizes.

use crate::model::{IoPoint, Measure, OpSummary, Phase, ProbePoint, Recovery, RunFile};

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
pub fn worst(r: &RunFile, f: fn(&OpSummary) -> f64) -> Option<f64> {
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

/// Patterns of a device probe in display order.
pub(crate) fn patterns(points: &[ProbePoint]) -> Vec<String> {
    let order = ["randread", "randwrite", "mixed", "seqread", "seqwrite"];
    let mut ps: Vec<String> = Vec::new();
    for p in points {
        if !ps.contains(&p.pattern) {
            ps.push(p.pattern.clone());
        }
    }
    ps.sort_by_key(|p| order.iter().position(|o| o == p).unwrap_or(order.len()));
    ps
}

/// The point of a pattern with the most IOPS.
pub(crate) fn best_point<'a>(points: &'a [ProbePoint], pattern: &str) -> Option<&'a ProbePoint> {
    points
        .iter()
        .filter(|p| p.pattern == pattern)
        .max_by(|a, b| a.iops.total_cmp(&b.iops))
}

/// `mmap 8t`, `io_uring qd64`, `pread 1t`.
pub(crate) fn io_label(p: &IoPoint) -> String {
    let mut s = format!("{} {}t", p.method, p.threads);
    if p.queue_depth > 1 || p.method == "io_uring" {
        s.push_str(&format!(" qd{}", p.queue_depth));
    }
    s
}

/// The median of the cycles' data sizes.
pub(crate) fn median_data_bytes(r: &Recovery) -> Option<u64> {
    let mut v: Vec<u64> = r.cycles.iter().map(|c| c.data_bytes).collect();
    v.sort();
    v.get(v.len() / 2).copied()
}

/// The median (the upper one of an even count).
pub(crate) fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}
