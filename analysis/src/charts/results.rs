//! The charts of a result directory (`kvtb-report charts`): throughput of every
//! group, then latency, timeline, latency timeline (where the files have per-interval
//! latencies), memory (where the files have its samples), CPU and latency CDF of
//! each group.

use super::cdf::{Cdf, engine_cdf};
use super::cpu::Cpu;
use super::latency::Latency;
use super::latency_timeline::{LatencyTimeline, has_interval_latency};
use super::memory::{Memory, has_samples};
use super::render::{Rendered, render};
use super::style::fonts;
use super::throughput::Throughput;
use super::timeline::Timeline;
use crate::dataset::{Dataset, Group};
use crate::error::Result;
use crate::warning::Warning;
use std::path::Path;

/// A group label as part of a file name.
fn file_part(label: &str) -> String {
    label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Renders every chart of the dataset into `dir`; a histogram that does not decode
/// is left out of its chart with a warning.
pub(crate) fn render_all(
    ds: &Dataset,
    dir: &Path,
    warnings: &mut Vec<Warning>,
) -> Result<Vec<Rendered>> {
    fonts();
    let mut out = Vec::new();
    let multi = ds.groups.len() > 1;
    let stem = |base: &str, g: &Group| {
        if multi {
            format!("{base}-{}", file_part(&g.label))
        } else {
            base.to_string()
        }
    };
    out.push(Rendered {
        stem: "throughput".into(),
        title: "Throughput".into(),
        caption: format!(
            "Operations per second of the measured run phase (blue) and of the load phase \
             (orange), per engine{}.",
            if multi { ", grouped by workload" } else { "" }
        ),
        files: render(&Throughput { ds }, dir, "throughput")?,
    });
    for g in &ds.groups {
        let s = stem("latency", g);
        out.push(Rendered {
            title: format!("Latency, {}", g.label),
            caption: "Run-phase latency percentiles (p50, p99, p99.9, max) per operation kind \
                      and engine, log scale."
                .into(),
            files: render(&Latency { ds, group: g }, dir, &s)?,
            stem: s,
        });
        let s = stem("timeline", g);
        out.push(Rendered {
            title: format!("Throughput over time, {}", g.label),
            caption: "Run-phase operations per second in each sampling interval; warm-up \
                      shaded, stalls marked."
                .into(),
            files: render(&Timeline { ds, group: g }, dir, &s)?,
            stem: s,
        });
        if has_interval_latency(g) {
            let s = stem("latency-timeline", g);
            out.push(Rendered {
                title: format!("Latency over time, {}", g.label),
                caption: "Run-phase p50, p99, p99.9 and maximum latency in each sampling \
                          interval, per engine and operation kind, log scale; warm-up shaded."
                    .into(),
                files: render(&LatencyTimeline { ds, group: g }, dir, &s)?,
                stem: s,
            });
        }
        if has_samples(g) {
            let s = stem("memory", g);
            out.push(Rendered {
                title: format!("Memory over time, {}", g.label),
                caption: "Memory each engine used (resident memory beyond the driver's own \
                          plus the OS page cache of its files; page cache dashed) against its \
                          budget, across the load, warm-up and run phases; right: its cache \
                          hit ratio."
                    .into(),
                files: render(&Memory { ds, group: g }, dir, &s)?,
                stem: s,
            });
        }
        let s = stem("cpu", g);
        out.push(Rendered {
            title: format!("CPU, {}", g.label),
            caption: "CPU microseconds per operation (left) and, per engine, its user and \
                      system CPU over the run phase as a share of the machine's cores, with \
                      the device's busy time where measured (right)."
                .into(),
            files: render(&Cpu { ds, group: g }, dir, &s)?,
            stem: s,
        });
        let s = stem("cdf", g);
        out.push(Rendered {
            title: format!("Latency distribution, {}", g.label),
            caption: "Run-phase latency CDF (left) and tail, the fraction of operations \
                      slower than a latency (right), log scales."
                .into(),
            files: render(
                &Cdf {
                    ds,
                    group: g,
                    curves: g
                        .runs
                        .iter()
                        .filter_map(|e| engine_cdf(e, warnings))
                        .filter(|c| !c.points.is_empty())
                        .collect(),
                },
                dir,
                &s,
            )?,
            stem: s,
        });
    }
    Ok(out)
}
