//! A trace turned into what a replay needs: the keys to load first, the operations
//! (with their scheduled times at a speed), and a description to compare traces by.

use super::record::{Record, TraceOp};
use crate::workload::Op;
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

/// What a replay must load first: every key whose first request is not a write, with
/// a value of the first non-zero size the trace gives it (or `default_size`).
pub fn preload_set(records: &[Record], default_size: usize) -> Vec<(String, usize)> {
    let mut first_write: HashMap<&str, bool> = HashMap::new();
    let mut size: HashMap<&str, usize> = HashMap::new();
    let mut order = Vec::new();
    for r in records {
        if !first_write.contains_key(r.key.as_str()) {
            first_write.insert(&r.key, r.op == TraceOp::Put);
            order.push(r.key.as_str());
        }
        if r.value_size > 0 {
            size.entry(&r.key).or_insert(r.value_size as usize);
        }
    }
    order
        .into_iter()
        .filter(|k| !first_write[k])
        .map(|k| (k.to_string(), size.get(k).copied().unwrap_or(default_size)))
        .collect()
}

/// The operations a replay issues. With `speed`, each carries its scheduled time
/// (the trace's time divided by the speed factor).
pub fn to_ops(records: &[Record], speed: Option<f64>, default_size: usize) -> Vec<Op> {
    records
        .iter()
        .map(|r| Op {
            kind: r.op.kind(),
            keynum: -1,
            key: r.key.clone(),
            value_len: if r.value_size > 0 {
                r.value_size as usize
            } else {
                default_size
            },
            scan_len: r.scan_len.max(1) as usize,
            at: speed.map(|s| Duration::from_secs_f64(r.time_us as f64 / 1e6 / s)),
            fields: 1,
            field: None,
        })
        .collect()
}

/// Counts per op and value-size quantiles, to compare a trace with its targets.
pub fn describe(records: &[Record]) -> String {
    let mut by_op: BTreeMap<&str, u64> = BTreeMap::new();
    for r in records {
        *by_op.entry(r.op.name()).or_insert(0) += 1;
    }
    let n = records.len().max(1) as f64;
    let mut sizes: Vec<u32> = records
        .iter()
        .filter(|r| r.value_size > 0)
        .map(|r| r.value_size)
        .collect();
    sizes.sort_unstable();
    let q = |p: f64| {
        sizes
            .get(((sizes.len() as f64 - 1.0) * p).round() as usize)
            .copied()
            .unwrap_or(0)
    };
    let keys: std::collections::HashSet<&str> = records.iter().map(|r| r.key.as_str()).collect();
    let mix: Vec<String> = by_op
        .iter()
        .map(|(k, v)| format!("{k} {v} ({:.1}%)", *v as f64 * 100.0 / n))
        .collect();
    format!(
        "{} requests, {} distinct keys; {}; value size p1 {} B, p50 {} B, p99 {} B, max {} B",
        records.len(),
        keys.len(),
        mix.join(", "),
        q(0.01),
        q(0.5),
        q(0.99),
        sizes.last().copied().unwrap_or(0)
    )
}
