//! The paper's figures and tables, one module each, in the order of `paper-repro.md`.
//!
//! Each module has `draw` (its charts, into the chart sink, or a note saying why
//! not) and `write` (its section of `paper-repro.md`: the paper's claim, the command,
//! our table, the verdict by its rule and, where it does not hold, the likely
//! reasons). Adding a figure is adding a module and a line to [`FIGURES`].

use super::chart::{Charts, PaperChart};
use super::markdown::Summary;
use super::run::PaperRun;
use crate::error::Result;

mod batch;
mod beyond;
mod cpu_device;
mod device;
mod iomethods;
mod itemsize;
mod production;
mod recovery;
mod tail_latency;
mod timelines;
mod ycsb;

/// One figure (or table) of the paper.
pub(crate) struct PaperFigure {
    /// Draws the figure's charts.
    pub(crate) draw: fn(&PaperRun, &mut Charts) -> Result<()>,
    /// Writes its section of `paper-repro.md`: (body, run, the charts drawn, the link
    /// from the markdown file to the charts, the summary rows).
    pub(crate) write: fn(&mut String, &PaperRun, &[PaperChart], &str, &mut Vec<Summary>),
}

/// Every figure, in the order the charts are drawn and the sections written.
pub(crate) const FIGURES: [PaperFigure; 11] = [
    PaperFigure {
        draw: device::draw,
        write: device::write,
    },
    PaperFigure {
        draw: iomethods::draw,
        write: iomethods::write,
    },
    PaperFigure {
        draw: cpu_device::draw,
        write: cpu_device::write,
    },
    PaperFigure {
        draw: timelines::draw,
        write: timelines::write,
    },
    PaperFigure {
        draw: ycsb::draw,
        write: ycsb::write,
    },
    PaperFigure {
        draw: tail_latency::draw,
        write: tail_latency::write,
    },
    PaperFigure {
        draw: production::draw,
        write: production::write,
    },
    PaperFigure {
        draw: itemsize::draw,
        write: itemsize::write,
    },
    PaperFigure {
        draw: recovery::draw,
        write: recovery::write,
    },
    PaperFigure {
        draw: batch::draw,
        write: batch::write,
    },
    PaperFigure {
        draw: beyond::draw,
        write: beyond::write,
    },
];
