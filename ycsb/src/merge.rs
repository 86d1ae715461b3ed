//! `ycsb merge`: one result from several client processes (or machines) that drove
//! one store at the same time, so a user who drives a store from many clients gets one
//! honest summary.
//!
//! Per phase name (load, warmup, run):
//! - latency histograms are merged exactly (the HDR histograms every result carries),
//!   and each operation's summary is recomputed from the merged histogram; status
//!   counts add up;
//! - operations, errors, user bytes and CPU seconds add up; the phase's wall time runs
//!   from the earliest client's start to the latest client's end (wall-clock start
//!   times, schema version 3; older files: the longest runtime), and throughput is the
//!   total operations over that time;
//! - timelines are aligned by wall clock into one-second buckets: operations add up,
//!   each interval's latency count adds up, its mean is weighted, its max is the max,
//!   and its percentiles are the worst client's (an upper bound: per-interval
//!   histograms are not kept in the files);
//! - whole-device counters of clients on the same machine watched one device and are
//!   not added: the first client's are kept and a note says so; clients on different
//!   machines add up;
//! - the memory figures stay per client (each process's own), listed in the notes.

use crate::error::{Error, Result};
use crate::measure::summary;
use base64::Engine as _;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;
use kvtb_schema::{OpSummary, Phase, RunFile, Sample};
use std::collections::BTreeMap;

fn decode(b64: &str) -> Result<Histogram<u64>> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_err(|e| Error::failed(format!("a histogram is not base64: {e}")))?;
    Deserializer::new()
        .deserialize(&mut std::io::Cursor::new(bytes))
        .map_err(|e| Error::failed(format!("a histogram does not decode: {e:?}")))
}

/// The operations of several clients' phases, merged by name.
fn merge_ops(phases: &[&Phase]) -> Result<Vec<OpSummary>> {
    let mut names: Vec<String> = Vec::new();
    let mut hists: BTreeMap<String, Histogram<u64>> = BTreeMap::new();
    let mut status: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for p in phases {
        for o in &p.ops {
            if !names.contains(&o.name) {
                names.push(o.name.clone());
            }
            let h = decode(&o.histogram_v2_base64)?;
            match hists.get_mut(&o.name) {
                Some(m) => m.add(&h).map_err(|e| {
                    Error::failed(format!("histograms of {} differ: {e:?}", o.name))
                })?,
                None => {
                    hists.insert(o.name.clone(), h);
                }
            }
            let st = status.entry(o.name.clone()).or_default();
            for (k, v) in &o.status {
                *st.entry(k.clone()).or_insert(0) += v;
            }
        }
    }
    names
        .iter()
        .filter_map(|n| hists.get(n).map(|h| (n, h)))
        .map(|(n, h)| Ok(summary(n.clone(), h, status.remove(n).unwrap_or_default())))
        .collect()
}

/// The clients' timelines in one-second buckets of wall-clock time from `t0`.
fn merge_timeline(phases: &[&Phase], t0: u64) -> Vec<Sample> {
    let mut buckets: BTreeMap<u64, Sample> = BTreeMap::new();
    for p in phases {
        let start = p.started_unix_ms.unwrap_or(t0);
        for s in &p.timeline {
            let at_ms = start + (s.t * 1000.0) as u64;
            let sec = at_ms.saturating_sub(t0).div_ceil(1000).max(1);
            let b = buckets.entry(sec).or_insert_with(|| Sample {
                t: sec as f64,
                ..Sample::default()
            });
            b.warmup |= s.warmup;
            b.total_ops += s.total_ops;
            b.ops_per_sec += s.ops_per_sec;
            b.errors += s.errors;
            b.cpu_user_s += s.cpu_user_s;
            b.cpu_sys_s += s.cpu_sys_s;
            // per process, so they add up (the machine-wide counters, like the
            // device's, are not merged)
            if let Some(f) = s.major_faults {
                *b.major_faults.get_or_insert(0) += f;
            }
            for (k, v) in &s.ops {
                *b.ops.entry(k.clone()).or_insert(0) += v;
            }
            let n_before = b.total_ops - s.total_ops;
            if b.total_ops > 0 {
                b.avg_latency_us = (b.avg_latency_us * n_before as f64
                    + s.avg_latency_us * s.total_ops as f64)
                    / b.total_ops as f64;
            }
            for (op, l) in &s.latency {
                let m = b.latency.entry(op.clone()).or_default();
                let n = m.count + l.count;
                if n > 0 {
                    m.avg_us = (m.avg_us * m.count as f64 + l.avg_us * l.count as f64) / n as f64;
                }
                m.min_us = if m.count == 0 {
                    l.min_us
                } else {
                    m.min_us.min(l.min_us)
                };
                m.max_us = m.max_us.max(l.max_us);
                m.p50_us = m.p50_us.max(l.p50_us);
                m.p90_us = m.p90_us.max(l.p90_us);
                m.p99_us = m.p99_us.max(l.p99_us);
                m.p999_us = m.p999_us.max(l.p999_us);
                m.p9999_us = m.p9999_us.max(l.p9999_us);
                m.count = n;
            }
        }
    }
    buckets.into_values().collect()
}

fn merge_phase(name: &str, phases: &[&Phase], same_machine: bool) -> Result<Phase> {
    let starts: Vec<u64> = phases.iter().filter_map(|p| p.started_unix_ms).collect();
    let aligned = starts.len() == phases.len();
    let t0 = starts.iter().copied().min().unwrap_or(0);
    // the phase's wall time: earliest start to latest end (else the longest runtime)
    let runtime_ms = if aligned {
        phases
            .iter()
            .filter_map(|p| p.started_unix_ms.map(|s| s as f64 + p.runtime_ms))
            .fold(0.0, f64::max)
            - t0 as f64
    } else {
        phases.iter().map(|p| p.runtime_ms).fold(0.0, f64::max)
    };
    let sum = |f: fn(&Phase) -> u64| phases.iter().map(|p| f(p)).sum::<u64>();
    let sumf = |f: fn(&Phase) -> f64| phases.iter().map(|p| f(p)).sum::<f64>();
    let operations = sum(|p| p.operations);
    let (u, s) = (sumf(|p| p.cpu_user_s), sumf(|p| p.cpu_sys_s));
    let per_op = |x: f64| {
        if operations > 0 {
            x * 1e6 / operations as f64
        } else {
            0.0
        }
    };
    let device = if same_machine {
        phases.first().and_then(|p| p.device.clone()).map(|mut d| {
            d.note = format!(
                "the first client's view of the device: the clients ran on one machine and watched the same device ({})",
                d.note
            );
            d
        })
    } else {
        None
    };
    Ok(Phase {
        phase: name.to_string(),
        started_unix_ms: aligned.then_some(t0),
        runtime_ms,
        operations,
        throughput_ops_sec: if runtime_ms > 0.0 {
            operations as f64 * 1000.0 / runtime_ms
        } else {
            0.0
        },
        errors: sum(|p| p.errors),
        cpu_user_s: u,
        cpu_sys_s: s,
        cpu_us_per_op: per_op(u + s),
        cpu_user_us_per_op: Some(per_op(u)),
        cpu_sys_us_per_op: Some(per_op(s)),
        user_read_bytes: sum(|p| p.user_read_bytes),
        user_write_bytes: sum(|p| p.user_write_bytes),
        process_read_bytes: phases.iter().map(|p| p.process_read_bytes).sum(),
        process_write_bytes: phases.iter().map(|p| p.process_write_bytes).sum(),
        device,
        ceiling: None,
        ops: merge_ops(phases)?,
        timeline: if aligned {
            merge_timeline(phases, t0)
        } else {
            Vec::new()
        },
        counters_before: BTreeMap::new(),
        counters_after: BTreeMap::new(),
        memory: None,
        warmup: None,
        // each client's driver cost, weighted by its operations (unknown if one's is)
        driver_cpu_us_per_op: phases
            .iter()
            .map(|p| p.driver_cpu_us_per_op.map(|d| d * p.operations as f64))
            .sum::<Option<f64>>()
            .filter(|_| operations > 0)
            .map(|total| total / operations as f64),
    })
}

/// One result from the results of clients that drove the same engine at once.
pub fn merge(runs: &[RunFile], command: Vec<String>) -> Result<RunFile> {
    let first = runs
        .first()
        .ok_or_else(|| Error::usage("ycsb merge: give at least two result files"))?;
    if runs.len() < 2 {
        return Err(Error::usage("ycsb merge: give at least two result files"));
    }
    for r in runs {
        if r.engine.name != first.engine.name {
            return Err(Error::usage(format!(
                "ycsb merge: the results are of different engines ({} and {}): merge the clients of one store",
                first.engine.name, r.engine.name
            )));
        }
    }
    let same_machine = runs
        .iter()
        .all(|r| r.machine.hostname == first.machine.hostname);
    let mut names: Vec<String> = Vec::new();
    for r in runs {
        for p in &r.phases {
            if !names.contains(&p.phase) {
                names.push(p.phase.clone());
            }
        }
    }
    let mut phases = Vec::new();
    for n in &names {
        let ps: Vec<&Phase> = runs.iter().filter_map(|r| r.phase(n)).collect();
        phases.push(merge_phase(n, &ps, same_machine)?);
    }
    let mut out = first.clone();
    out.command = command;
    out.phases = phases;
    out.engine.notes.push(format!(
        "merged from {} client results{}; latency histograms merged exactly, timeline percentiles are the worst client's per second",
        runs.len(),
        if same_machine { " on one machine" } else { " on several machines" }
    ));
    for (i, r) in runs.iter().enumerate() {
        if let Some(m) = r.memory_use() {
            out.engine.notes.push(format!(
                "client {} ({}): peak memory used {} MiB",
                i + 1,
                r.machine.hostname,
                m.peak_used_bytes >> 20
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kvtb_schema::Engine;

    fn phase(start_ms: u64, lat_us: &[u64]) -> Phase {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
        for l in lat_us {
            h.record(l * 1000).unwrap();
        }
        Phase {
            phase: "run".into(),
            started_unix_ms: Some(start_ms),
            runtime_ms: 2000.0,
            operations: lat_us.len() as u64,
            ops: vec![summary(
                "READ".into(),
                &h,
                BTreeMap::from([("OK".into(), lat_us.len() as u64)]),
            )],
            timeline: vec![
                Sample {
                    t: 1.0,
                    total_ops: 1,
                    ..Sample::default()
                },
                Sample {
                    t: 2.0,
                    total_ops: lat_us.len() as u64 - 1,
                    ..Sample::default()
                },
            ],
            ..Phase::default()
        }
    }

    fn run(host: &str, p: Phase) -> RunFile {
        RunFile {
            format: 3,
            testbed_version: String::new(),
            command: vec![],
            commit: String::new(),
            started_unix_s: 0,
            machine: kvtb_schema::Machine {
                hostname: host.into(),
                ..Default::default()
            },
            engine: Engine {
                name: "kvell".into(),
                durability: String::new(),
                durability_setting: String::new(),
                cache_bytes: None,
                direct_io: None,
                settings: Default::default(),
                notes: vec![],
                max_key: 0,
                max_value: 0,
            },
            workload: String::new(),
            properties: Default::default(),
            workload_resolved: Default::default(),
            driving: Default::default(),
            memory: Default::default(),
            phases: vec![p],
            close_error: None,
        }
    }

    #[test]
    fn histograms_merge_exactly_and_time_spans_both_clients() {
        let a = run("h", phase(1_000_000, &[100, 100, 100, 100]));
        let b = run("h", phase(1_001_000, &[10_000, 10_000, 10_000, 10_000]));
        let m = merge(&[a, b], vec!["ycsb".into(), "merge".into()]).unwrap();
        let p = m.run().unwrap();
        assert_eq!(p.operations, 8);
        // 1,000,000 ms to 1,003,000 ms
        assert!((p.runtime_ms - 3000.0).abs() < 1e-6, "{}", p.runtime_ms);
        let r = &p.ops[0];
        assert_eq!(r.operations, 8);
        assert_eq!(r.status["OK"], 8);
        // half the reads at 100 us, half at 10 ms: the median is exactly the faster
        // client's value and p90 the slower one's, which averaging summaries cannot give
        assert!((r.p50_us - 100.0).abs() < 1.0, "{}", r.p50_us);
        assert!((r.p90_us - 10_000.0).abs() < 10.0, "{}", r.p90_us);
        // timelines aligned by wall clock: seconds 1..3
        let ts: Vec<(f64, u64)> = p.timeline.iter().map(|s| (s.t, s.total_ops)).collect();
        assert_eq!(ts, vec![(1.0, 1), (2.0, 4), (3.0, 3)]);
        assert!(m.engine.notes.iter().any(|n| n.contains("merged from 2")));
    }

    #[test]
    fn different_engines_are_refused() {
        let a = run("h", phase(0, &[1]));
        let mut b = run("h", phase(0, &[1]));
        b.engine.name = "sled".into();
        assert!(merge(&[a.clone(), b], vec![]).is_err());
        assert!(merge(&[a], vec![]).is_err());
    }
}
