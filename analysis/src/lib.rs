//! Result files to charts and a report.
//!
//! Reads the JSON result files the `ycsb` driver writes (one per engine run), groups
//! them by workload, and renders, into the same directory, PNG and SVG charts
//! (throughput, tail latency, throughput over time, latency percentiles over time,
//! memory over time, CPU, latency CDF) and a `report.md` that ties them together with
//! a table of the numbers. An
//! engine over its memory budget is flagged wherever its numbers appear and never
//! marked best. Everything is computed from the files alone.
//!
//! ```no_run
//! let written = analysis::render_dir(std::path::Path::new("results/compare"), None)?;
//! for w in &written.warnings {
//!     eprintln!("{w}");
//! }
//! # Ok::<(), analysis::Error>(())
//! ```
//!
//! [`paper::render_paper`] does the same for a reproduce-paper directory: the paper's
//! figures, a README for the directory and `paper-repro.md`, which sets each of our
//! numbers next to the paper's (constants in [`paper::reference`], each with where in
//! the paper it comes from in `docs/paper-numbers.md`).
//!
//! The library prints nothing: what it has to tell comes back as [`Warning`]s with
//! the files it wrote, and failures as [`Error`]s.

mod budget;
mod charts;
mod dataset;
mod error;
pub mod hist;
pub mod model;
pub mod paper;
mod report;
mod text;
mod warning;

pub use dataset::{Dataset, Entry, Group};
pub use error::{Error, HistogramError, IoOp, ParseError, Result};
pub use report::render_dir;
pub use text::{engine_line, human_bytes, human_count, machine_line, workload_line};
pub use warning::{Warning, Written};
