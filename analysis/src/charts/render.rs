//! A chart drawn once per backend: PNG through the bitmap backend, then SVG.

use super::style::{H, W};
use crate::error::{Error, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// A chart written to disk.
#[derive(Clone, Debug)]
pub(crate) struct Rendered {
    /// File name without extension (`throughput`, `latency-workloada`).
    pub(crate) stem: String,
    pub(crate) title: String,
    /// One line saying what the chart shows.
    pub(crate) caption: String,
    /// The PNG and SVG files.
    pub(crate) files: Vec<PathBuf>,
}

/// Something drawn onto any plotters backend.
pub(crate) trait Chart {
    fn size(&self) -> (u32, u32) {
        (W, H)
    }
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()>;
}

/// Draws `c` into `dir/stem.png` and `dir/stem.svg`; returns the two paths.
pub(crate) fn render<C: Chart>(c: &C, dir: &Path, stem: &str) -> Result<Vec<PathBuf>> {
    let size = c.size();
    let png = dir.join(format!("{stem}.png"));
    {
        let root = BitMapBackend::new(&png, size).into_drawing_area();
        c.draw(&root)?;
        root.present().map_err(|e| Error::PlotWrite {
            path: png.clone(),
            source: Box::new(e),
        })?;
    }
    let svg = dir.join(format!("{stem}.svg"));
    {
        let root = SVGBackend::new(&svg, size).into_drawing_area();
        c.draw(&root)?;
        root.present().map_err(|e| Error::PlotWrite {
            path: svg.clone(),
            source: Box::new(e),
        })?;
    }
    Ok(vec![png, svg])
}

/// A plotters drawing error, as plotters' `Debug` describes it.
pub(crate) fn de<E: std::fmt::Debug>(e: E) -> Error {
    Error::Plot(format!("{e:?}"))
}
