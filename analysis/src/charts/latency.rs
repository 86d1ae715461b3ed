//! Chart 2: p50, p99, p99.9 and max latency per engine, one panel per op kind.

use super::axis::y_log_bounds;
use super::bars::Bars;
use super::caption::caption_for;
use super::frame::{frame, no_data};
use super::legend::{fills, legend_row};
use super::render::Chart;
use super::style::{H, PCT_COLOURS, W};
use crate::dataset::{Dataset, Group};
use crate::error::Result;
use crate::model::{Measure, OpSummary, RunFile};
use plotters::coord::Shift;
use plotters::prelude::*;

/// The run phase's latency summaries (service time and, under a target rate, from
/// the intended start; queueing delays are left out).
pub(crate) fn run_ops(r: &RunFile) -> Vec<&OpSummary> {
    r.run()
        .map(|p| {
            p.ops
                .iter()
                .filter(|o| o.operations > 0 && o.measure().0 != Measure::Queue)
                .collect()
        })
        .unwrap_or_default()
}

/// YCSB op kinds in a fixed order; coordinated-omission-corrected ones last.
pub(crate) fn op_order(name: &str) -> (bool, usize, String) {
    let base = name.strip_prefix("Intended-").unwrap_or(name);
    let i = [
        "READ",
        "UPDATE",
        "INSERT",
        "SCAN",
        "READ-MODIFY-WRITE",
        "DELETE",
    ]
    .iter()
    .position(|k| *k == base)
    .unwrap_or(6);
    (name.starts_with("Intended-"), i, name.to_string())
}

/// Chart 2 of a group.
pub(crate) struct Latency<'a> {
    pub(crate) ds: &'a Dataset,
    pub(crate) group: &'a Group,
}

impl Latency<'_> {
    fn kinds(&self) -> Vec<String> {
        let mut ks: Vec<String> = Vec::new();
        for e in &self.group.runs {
            for o in run_ops(&e.run) {
                if !ks.contains(&o.name) {
                    ks.push(o.name.clone());
                }
            }
        }
        ks.sort_by_key(|k| op_order(k));
        ks
    }

    /// Panels in rows of at most three: measured latencies first, then those from
    /// the intended start.
    fn rows(&self) -> Vec<Vec<String>> {
        let (intended, actual): (Vec<String>, Vec<String>) = self
            .kinds()
            .into_iter()
            .partition(|k| k.starts_with("Intended-"));
        [actual, intended]
            .iter()
            .flat_map(|set| set.chunks(3).map(<[String]>::to_vec))
            .collect()
    }
}

impl Chart for Latency<'_> {
    fn size(&self) -> (u32, u32) {
        (W, H + 380 * self.rows().len().saturating_sub(1) as u32)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()> {
        let body = frame(
            root,
            &format!("{}: run-phase latency, {}", self.ds.title, self.group.label),
            &caption_for(self.ds, &[self.group]),
        )?;
        let rows = self.rows();
        if rows.is_empty() {
            return no_data(&body, "no run-phase latencies in these results");
        }
        let cols = rows.iter().map(Vec::len).max().unwrap_or(1);
        let pct = |o: &crate::model::OpSummary| [o.p50_us, o.p99_us, o.p999_us, o.max_us];
        let all: Vec<f64> = self
            .group
            .runs
            .iter()
            .flat_map(|e| run_ops(&e.run))
            .flat_map(pct)
            .filter(|v| *v > 0.0)
            .collect();
        let lo = all.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = all.iter().copied().fold(0.0, f64::max);
        let range = y_log_bounds(if lo.is_finite() { lo } else { 1.0 }, hi);
        let series: Vec<(String, RGBColor)> = ["p50", "p99", "p99.9", "max"]
            .iter()
            .zip(PCT_COLOURS)
            .map(|(n, c)| (n.to_string(), c))
            .collect();
        let body = legend_row(&body.margin(0, 0, 10, 10), &fills(&series))?;
        let cells = body.split_evenly((rows.len(), cols));
        let panels = rows.iter().enumerate().flat_map(|(r, row)| {
            row.iter()
                .enumerate()
                .map(move |(c, k)| (k, c, r * cols + c))
        });
        for (k, i, cell) in panels {
            let area = &cells[cell];
            let mut categories = Vec::new();
            let mut values = Vec::new();
            for e in &self.group.runs {
                if let Some(o) = run_ops(&e.run).into_iter().find(|o| &o.name == k) {
                    categories.push((e.label.clone(), 0));
                    values.push(pct(o).iter().map(|v| Some(*v)).collect());
                }
            }
            let title = match k.strip_prefix("Intended-") {
                Some(b) => format!("{b} (from intended start)"),
                None => k.clone(),
            };
            Bars {
                title,
                y_desc: if i == 0 {
                    "latency (µs, log scale)".into()
                } else {
                    String::new()
                },
                x_desc: "engine".into(),
                categories,
                group_labels: vec![],
                series: series.clone(),
                values,
                log: true,
                y_range: Some(range),
                value_labels: false,
                marks: vec![],
                bar_marks: vec![],
                notes: vec![],
            }
            .draw(area)?;
        }
        Ok(())
    }
}
