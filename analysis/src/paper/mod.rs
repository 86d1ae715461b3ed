//! `kvtb-report paper DIR`: a reproduce-paper output directory to the paper's figures,
//! a README for the directory and `paper-repro.md`.
//!
//! The way down: [`render_paper`] loads the directory ([`load`]) into a [`PaperRun`],
//! draws every figure of [`figures`] and writes `README.md` and `paper-repro.md` from
//! the figures' sections. Each figure owns its chart, its table and its verdict; the
//! pieces they share sit below them: the chart sink and captions (`chart`), shared
//! panels, the markdown writer, the likely reasons, the verdict rules (and the memory
//! rule: verdicts only between engines within their budget), the memory table, number
//! formats and the metrics read off the result files.

mod baseline;
mod chart;
mod figures;
mod format;
mod load;
mod markdown;
mod memory_rule;
mod memory_table;
mod metrics;
mod panels;
mod readme;
mod reasons;
pub mod reference;
mod render;
mod repro;
mod run;
mod verdict;

pub use format::{human_us, ops, utc};
pub use load::load;
pub use metrics::{
    cache_hit_ratio, ceiling, cpu_fraction, mean_latency_us, scans_per_s, steadiness, tput, worst,
};
pub use render::render_paper;
pub use run::{DISTS, PRODUCTION, PaperRun, WORKLOADS, entry};
