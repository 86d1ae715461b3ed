//! What a rendering has to tell without failing: files skipped, parts of a run
//! absent, histograms that do not decode. The library returns them with the files
//! it wrote; the binary prints them.

use crate::error::Error;
use std::fmt;
use std::path::PathBuf;

/// One thing worth telling the user, in the order it came up.
#[derive(Debug)]
#[non_exhaustive]
pub enum Warning {
    /// A `.json` file that is not a readable result file (`path: why`).
    SkippedFile(String),
    /// A part of a reproduce-paper run that is absent, or a chart not drawn.
    Note(String),
    /// A latency histogram left out of a chart.
    Histogram {
        path: PathBuf,
        /// The operation kind (`READ`).
        op: String,
        error: Error,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::SkippedFile(s) => write!(f, "warning: skipped {s}"),
            Warning::Note(n) => write!(f, "note: {n}"),
            Warning::Histogram { path, op, error } => write!(
                f,
                "warning: {}: {op} histogram skipped: {error}",
                path.display()
            ),
        }
    }
}

/// The files a rendering wrote, and what it had to tell.
#[derive(Debug, Default)]
pub struct Written {
    pub files: Vec<PathBuf>,
    pub warnings: Vec<Warning>,
}
