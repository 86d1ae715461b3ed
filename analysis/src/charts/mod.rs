//! The charts, each drawn once per backend (PNG through the bitmap backend, SVG).
//!
//! Primitives first (style, axis, frame, legend, render; bars, lines, tables and
//! figures of panels), then the charts of a result directory (throughput, latency,
//! timeline, latency timeline, memory, CPU, CDF) and `results::render_all`, which draws them. The paper's
//! figures are built from the same primitives.

pub(crate) mod axis;
pub(crate) mod bars;
pub(crate) mod caption;
pub(crate) mod cdf;
pub(crate) mod cpu;
pub(crate) mod figure;
pub(crate) mod frame;
pub(crate) mod latency;
pub(crate) mod latency_timeline;
pub(crate) mod legend;
pub(crate) mod lines;
pub(crate) mod memory;
pub(crate) mod render;
pub(crate) mod results;
pub(crate) mod style;
pub(crate) mod table;
pub(crate) mod throughput;
pub(crate) mod timeline;
