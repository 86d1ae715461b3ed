//! YCSB's text summary of a phase (`[OVERALL], Throughput(ops/sec), ...`), with the
//! engine's durability and cache stated and what its counters say.

use kvtb_schema::{Phase, RunFile};
use std::collections::BTreeMap;
use std::fmt::Write as _;

fn fmt_us(x: f64) -> String {
    if x < 10.0 {
        format!("{x:.3}")
    } else {
        format!("{x:.1}")
    }
}

/// A histogram as the result file holds it (V2 deflate, base64).
fn decode(b64: &str) -> Option<hdrhistogram::Histogram<u64>> {
    use base64::Engine as _;
    use hdrhistogram::serialization::Deserializer;
    let bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
    Deserializer::new()
        .deserialize(&mut std::io::Cursor::new(bytes))
        .ok()
}

/// The rows of YCSB's exporters from a text summary: every `[METRIC], measurement,
/// value` line, numbers as numbers.
pub fn export_rows(text: &str) -> Vec<(String, String, serde_json::Value)> {
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix('[')?;
            let (metric, rest) = rest.split_once("], ")?;
            let (measurement, value) = rest.rsplit_once(", ")?;
            let v = value.trim();
            let json = if let Ok(i) = v.parse::<i64>() {
                serde_json::Value::from(i)
            } else if let Some(x) = v.parse::<f64>().ok().filter(|x| x.is_finite()) {
                serde_json::Value::from(x)
            } else {
                serde_json::Value::from(v)
            };
            Some((metric.to_string(), measurement.to_string(), json))
        })
        .collect()
}

/// YCSB's JSON exporters: `array` the JSONArrayMeasurementsExporter's one pretty-printed
/// array, else the JSONMeasurementsExporter's objects one after another.
pub fn export_json(text: &str, array: bool) -> String {
    let objs: Vec<String> = export_rows(text)
        .into_iter()
        .map(|(m, me, v)| {
            format!(
                "{{\n  \"metric\" : {},\n  \"measurement\" : {},\n  \"value\" : {v}\n}}",
                serde_json::Value::from(m),
                serde_json::Value::from(me)
            )
        })
        .collect();
    if array {
        format!("[ {} ]", objs.join(", "))
    } else {
        objs.join(" ")
    }
}

/// YCSB's text summary of one phase, with the engine's durability and cache stated.
pub fn summary(report: &RunFile, phase: &Phase) -> String {
    let r = phase;
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
        if let Some(x) = d.read_iops {
            let _ = writeln!(s, "[DEVICE], ReadIOPS, {x:.0}");
        }
        if let Some(x) = d.write_iops {
            let _ = writeln!(s, "[DEVICE], WriteIOPS, {x:.0}");
        }
        if let Some(x) = d.utilisation {
            let _ = writeln!(s, "[DEVICE], Utilisation(%), {:.1}", x * 100.0);
        }
        if let Some(x) = d.ios_per_op {
            let _ = writeln!(s, "[DEVICE], IOsPerOperation, {x:.3}");
        }
        if let Some(x) = d.read_amplification {
            let _ = writeln!(s, "[DEVICE], ReadAmplification, {x:.2}");
        }
        if let Some(x) = d.write_amplification {
            let _ = writeln!(s, "[DEVICE], WriteAmplification, {x:.2}");
        }
    }
    if let Some(c) = &r.ceiling {
        if let Some(x) = c.device_iops {
            let _ = writeln!(s, "[CEILING], DeviceIOPSForMix, {x:.0}");
        }
        if let Some(x) = c.ceiling_ops_sec {
            let _ = writeln!(s, "[CEILING], Throughput(ops/sec), {x:.0}");
        }
        if let Some(x) = c.fraction {
            let _ = writeln!(s, "[CEILING], FractionReached(%), {:.1}", x * 100.0);
        }
    }
    for line in memory_lines(report, phase) {
        let _ = writeln!(s, "{line}");
    }
    for line in engine_lines(
        &phase.counters_before,
        &phase.counters_after,
        r.user_write_bytes,
    ) {
        let _ = writeln!(s, "{line}");
    }
    let chosen = crate::compat::percentiles(&report.properties)
        .ok()
        .flatten();
    for o in &r.ops {
        let n = &o.name;
        let _ = writeln!(s, "[{n}], Operations, {}", o.operations);
        let _ = writeln!(s, "[{n}], AverageLatency(us), {}", fmt_us(o.average_us));
        let _ = writeln!(s, "[{n}], MinLatency(us), {}", fmt_us(o.min_us));
        let _ = writeln!(s, "[{n}], MaxLatency(us), {}", fmt_us(o.max_us));
        match &chosen {
            // hdrhistogram.percentiles: those, from the operation's own histogram
            Some(list) => {
                let h = decode(&o.histogram_v2_base64);
                for &p in list {
                    let v = h
                        .as_ref()
                        .map(|h| h.value_at_quantile(p / 100.0) as f64 / 1000.0);
                    let _ = writeln!(
                        s,
                        "[{n}], {}, {}",
                        crate::compat::percentile_name(p),
                        v.map(fmt_us).unwrap_or_else(|| "N/A".into())
                    );
                }
            }
            None => {
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
            }
        }
        for (status, count) in &o.status {
            let _ = writeln!(s, "[{n}], Return={status}, {count}");
        }
    }
    s
}

/// The `[MEMORY]` section: the budget and how it was held, what the engine held at its
/// peak (resident memory beyond the driver's own plus the OS page cache of its files),
/// used/budget (flagged above 110%), the engine's own accounting; and, after a
/// warm-up, how long it took and whether it became steady.
pub fn memory_lines(report: &RunFile, phase: &Phase) -> Vec<String> {
    let mut out = Vec::new();
    let b = &report.memory;
    let mib = |x: u64| format!("{:.1}", x as f64 / (1 << 20) as f64);
    if let Some(w) = &phase.warmup {
        out.push(format!("[WARMUP], Seconds, {:.1}", w.seconds));
        out.push(format!("[WARMUP], Operations, {}", w.operations));
        out.push(format!("[WARMUP], Steady, {}", w.steady));
        if let Some(h) = w.hit_ratio {
            out.push(format!("[WARMUP], CacheHitRatio(%), {:.1}", h * 100.0));
        }
        if let Some(r) = w.read_bytes_per_op {
            out.push(format!("[WARMUP], StorageReadBytesPerOperation, {r:.0}"));
        }
    }
    let Some(m) = &phase.memory else {
        return out;
    };
    if let Some(budget) = b.budget_bytes {
        out.push(format!("[MEMORY], Budget(MiB), {}", mib(budget)));
    }
    out.push(format!("[MEMORY], Enforcement, {}", b.enforcement));
    if let Some(l) = b.limit_bytes {
        out.push(format!("[MEMORY], Limit(MiB), {}", mib(l)));
    }
    out.push(format!(
        "[MEMORY], DriverRSS(MiB), {}",
        mib(b.driver_rss_bytes)
    ));
    if m.driver_histogram_bytes > 0 {
        out.push(format!(
            "[MEMORY], DriverHistograms(MiB), {}",
            mib(m.driver_histogram_bytes)
        ));
    }
    out.push(format!("[MEMORY], PeakRSS(MiB), {}", mib(m.peak_rss_bytes)));
    out.push(format!("[MEMORY], MeanRSS(MiB), {}", mib(m.mean_rss_bytes)));
    out.push(format!(
        "[MEMORY], PeakPageCacheOfFiles(MiB), {}",
        mib(m.peak_page_cache_bytes)
    ));
    out.push(format!(
        "[MEMORY], PeakUsed(MiB), {}",
        mib(m.peak_used_bytes)
    ));
    if let Some(r) = m.used_over_budget {
        out.push(format!("[MEMORY], UsedOverBudget, {r:.2}"));
        if m.over_budget() {
            out.push(format!(
                "[MEMORY], OVER BUDGET, {} MiB of {} MiB",
                mib(m.peak_used_bytes),
                b.budget_bytes.map(mib).unwrap_or_default()
            ));
        }
    }
    if let Some(c) = m.cgroup_peak_bytes {
        out.push(format!("[MEMORY], CgroupPeak(MiB), {}", mib(c)));
    }
    for (k, v) in &m.engine_accounting {
        out.push(format!("[MEMORY], Engine.{k}(MiB), {}", mib(*v)));
    }
    if let Some(g) = &m.governor {
        out.push(format!(
            "[MEMORY], GovernedCache(MiB), opened with {}, phase {} -> {} (smallest {}), {} resizes",
            mib(g.open_bytes),
            mib(g.start_bytes),
            mib(g.end_bytes),
            mib(g.min_bytes),
            g.adjustments
        ));
    }
    if b.page_cache_evicted_bytes > 0 {
        out.push(format!(
            "[MEMORY], PageCacheDroppedBeforeOpen(MiB), {}",
            mib(b.page_cache_evicted_bytes)
        ));
    }
    out
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
    // The engine's longest of each stage since its open (`slowest.<stage>_us`, a
    // maximum: KVell's I/O, queue wait, loop turn and wait for a completion), stated
    // for the phase only where it rose in it; otherwise the phase's is at most the
    // one before it.
    for (k, a) in after {
        let (Some(stage), Some(a)) = (
            k.strip_prefix("slowest.")
                .and_then(|n| n.strip_suffix("_us")),
            *a,
        ) else {
            continue;
        };
        let b = before.get(k).copied().flatten();
        out.push(match b {
            Some(b) if b >= a => {
                format!("[ENGINE], Slowest.{stage}(us), <= {a} (set before this phase)")
            }
            _ => format!("[ENGINE], Slowest.{stage}(us), {a}"),
        });
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
        let slow = engine_lines(
            &m(&[("slowest.io_us", Some(900)), ("slowest.turn_us", Some(50))]),
            &m(&[("slowest.io_us", Some(1200)), ("slowest.turn_us", Some(50))]),
            0,
        );
        assert!(
            slow.contains(&"[ENGINE], Slowest.io(us), 1200".to_string()),
            "{slow:?}"
        );
        assert!(
            slow.contains(&"[ENGINE], Slowest.turn(us), <= 50 (set before this phase)".to_string()),
            "{slow:?}"
        );
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
