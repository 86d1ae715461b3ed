//! The driver's text output: YCSB's summary of each phase and the comparison table.

mod summary;
mod table;

pub use summary::{engine_lines, export_json, export_rows, human_bytes, summary};
pub use table::compare_table;
