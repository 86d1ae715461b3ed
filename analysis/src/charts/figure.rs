//! A figure: panels (bars, lines, tables) in a grid under one title, legend row and
//! caption.

use super::bars::Bars;
use super::frame::frame;
use super::legend::{Swatch, legend_row};
use super::lines::Lines;
use super::render::Chart;
use super::table::Table;
use crate::error::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

/// One panel of a figure.
pub(crate) enum Panel {
    Bars(Bars),
    Lines(Lines),
    Table(Table),
    /// Panels side by side in one cell, each as wide as its share of the weights.
    Row(Vec<(u32, Panel)>),
}

impl Panel {
    fn draw<DB: DrawingBackend>(&self, a: &DrawingArea<DB, Shift>) -> Result<()> {
        match self {
            Panel::Bars(b) => b.draw(a),
            Panel::Lines(l) => l.draw(a),
            Panel::Table(t) => t.draw(a),
            Panel::Row(ps) => {
                let total: u32 = ps.iter().map(|(w, _)| *w).sum::<u32>().max(1);
                let width = a.dim_in_pixel().0;
                let mut at = 0u32;
                let mut breaks = Vec::new();
                for (w, _) in ps.iter().take(ps.len().saturating_sub(1)) {
                    at += w;
                    breaks.push((u64::from(width) * u64::from(at) / u64::from(total)) as i32);
                }
                let areas = a.split_by_breakpoints(breaks, [] as [i32; 0]);
                for ((_, p), area) in ps.iter().zip(&areas) {
                    p.draw(area)?;
                }
                Ok(())
            }
        }
    }
}

/// Panels in a grid under one title, legend row and caption.
pub(crate) struct Figure {
    pub(crate) title: String,
    pub(crate) caption: Vec<String>,
    pub(crate) legend: Vec<(String, Swatch)>,
    pub(crate) cols: usize,
    pub(crate) panels: Vec<Panel>,
    pub(crate) size: (u32, u32),
}

impl Chart for Figure {
    fn size(&self) -> (u32, u32) {
        self.size
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()> {
        let body = frame(root, &self.title, &self.caption)?;
        let body = if self.legend.is_empty() {
            body
        } else {
            legend_row(&body, &self.legend)?
        };
        let cols = self.cols.max(1);
        let rows = self.panels.len().div_ceil(cols).max(1);
        let areas = body.margin(0, 0, 10, 10).split_evenly((rows, cols));
        for (p, a) in self.panels.iter().zip(&areas) {
            p.draw(a)?;
        }
        Ok(())
    }
}
