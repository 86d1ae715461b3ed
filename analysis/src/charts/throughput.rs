//! Chart 1: run- and load-phase throughput per engine, grouped by workload, with the
//! device's ceiling where a `ycsb device` result was used.

use super::bars::Bars;
use super::caption::caption_for;
use super::frame::frame;
use super::legend::{Swatch, fills, legend_row};
use super::render::Chart;
use super::style::{LOAD_COLOUR, RUN_COLOUR};
use crate::budget;
use crate::dataset::{Dataset, Group};
use crate::error::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

/// Chart 1 of a dataset.
pub(crate) struct Throughput<'a> {
    pub(crate) ds: &'a Dataset,
}

impl Throughput<'_> {
    fn bars(&self) -> Bars {
        let mut categories = Vec::new();
        let mut values = Vec::new();
        let mut marks = Vec::new();
        for (gi, g) in self.ds.groups.iter().enumerate() {
            for e in &g.runs {
                let label = match budget::over(&e.run) {
                    Some(_) => format!("{} (over budget)", e.label),
                    None => e.label.clone(),
                };
                categories.push((label, gi));
                marks.push(
                    e.run
                        .run()
                        .and_then(|p| p.ceiling.as_ref())
                        .and_then(|c| c.ceiling_ops_sec),
                );
                values.push(vec![
                    e.run.run().map(|p| p.throughput_ops_sec),
                    e.run.load().map(|p| p.throughput_ops_sec),
                ]);
            }
        }
        let vals: Vec<f64> = values
            .iter()
            .flatten()
            .flatten()
            .chain(marks.iter().flatten())
            .copied()
            .collect();
        let max = vals.iter().copied().fold(0.0, f64::max);
        let min = vals
            .iter()
            .copied()
            .filter(|v| *v > 0.0)
            .fold(f64::INFINITY, f64::min);
        // engines an order of magnitude apart (the null engine against a real one)
        let log = max > 0.0 && min.is_finite() && max / min > 30.0;
        Bars {
            title: String::new(),
            y_desc: format!(
                "throughput (operations/s{})",
                if log { ", log scale" } else { "" }
            ),
            x_desc: if self.ds.groups.len() > 1 {
                "engine, grouped by workload".into()
            } else {
                "engine".into()
            },
            categories,
            group_labels: self.ds.groups.iter().map(|g| g.label.clone()).collect(),
            series: vec![
                ("run phase".into(), RUN_COLOUR),
                ("load phase".into(), LOAD_COLOUR),
            ],
            values,
            log,
            y_range: None,
            value_labels: true,
            marks,
            bar_marks: vec![],
            notes: vec![],
        }
    }
}

impl Chart for Throughput<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()> {
        let groups: Vec<&Group> = self.ds.groups.iter().collect();
        let body = frame(
            root,
            &format!("{}: throughput", self.ds.title),
            &caption_for(self.ds, &groups),
        )?;
        let bars = self.bars();
        let mut legend = fills(&bars.series);
        if bars.marks.iter().any(Option::is_some) {
            legend.push((
                "device ceiling for the run's I/O mix".to_string(),
                Swatch::Line(BLACK),
            ));
        }
        let body = legend_row(&body.margin(0, 0, 10, 10), &legend)?;
        bars.draw(&body)
    }
}
