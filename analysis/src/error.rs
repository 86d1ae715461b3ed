//! The crate's errors: a file that cannot be read or written, a file that is not
//! what it should be, a chart that cannot be drawn, a directory without the data.
//!
//! Each error's text names the path it is about, as the user sees it from
//! `kvtb-report`; `source()` gives the underlying I/O, JSON or plotting error.

use std::error::Error as StdError;
use std::fmt;
use std::path::PathBuf;

/// The analysis's `Result`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong while reading results or writing charts and reports.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A file or directory could not be read, created or written.
    Io {
        op: IoOp,
        path: PathBuf,
        source: std::io::Error,
    },
    /// A file is there but is not the result file it should be.
    Parse { path: PathBuf, source: ParseError },
    /// A latency histogram of a result file does not decode.
    Histogram(HistogramError),
    /// Plotters failed while drawing (its error as plotters describes it).
    Plot(String),
    /// A finished chart could not be written to its file.
    PlotWrite {
        path: PathBuf,
        source: Box<dyn StdError + Send + Sync>,
    },
    /// The path given is not a directory.
    NotADirectory(PathBuf),
    /// A directory holds no `ycsb` result file; `skipped`: the `.json` files that were
    /// not one (`path: why`), for the binary to list before the error.
    NoResults { dir: PathBuf, skipped: Vec<String> },
    /// A directory holds none of the parts of a reproduce-paper run.
    NoPaperRun(PathBuf),
}

/// What was being done to the path of an [`Error::Io`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum IoOp {
    /// Reading a file.
    ReadFile,
    /// Listing a directory.
    ReadDir,
    /// Creating a directory.
    CreateDir,
    /// Writing a file.
    Write,
}

impl Error {
    /// An I/O error on `path`.
    pub fn io(op: IoOp, path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            op,
            path: path.into(),
            source,
        }
    }

    /// A file at `path` that does not parse.
    pub fn parse(path: impl Into<PathBuf>, source: ParseError) -> Error {
        Error::Parse {
            path: path.into(),
            source,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { op, path, source } => {
                let p = path.display();
                match op {
                    IoOp::ReadFile => write!(f, "{p}: cannot read: {source}"),
                    IoOp::ReadDir => write!(f, "cannot read {p}: {source}"),
                    IoOp::CreateDir => write!(f, "cannot create {p}: {source}"),
                    IoOp::Write => write!(f, "cannot write {p}: {source}"),
                }
            }
            Error::Parse { path, source } => write!(f, "{}: {source}", path.display()),
            Error::Histogram(e) => e.fmt(f),
            Error::Plot(why) => write!(f, "drawing failed: {why}"),
            Error::PlotWrite { path, source } => {
                write!(f, "cannot write {}: {source:?}", path.display())
            }
            Error::NotADirectory(p) => write!(f, "{} is not a directory", p.display()),
            Error::NoResults { dir, skipped } => {
                write!(f, "no ycsb result files (*.json) in {}", dir.display())?;
                if !skipped.is_empty() {
                    write!(f, " ({} skipped)", skipped.len())?;
                }
                Ok(())
            }
            Error::NoPaperRun(dir) => write!(
                f,
                "{} holds no part of a reproduce-paper run (manifest.json, device/, iomethods/, \
                 ycsb/, production/, itemsize/, recovery/, batch/)",
                dir.display()
            ),
        }
    }
}

impl StdError for Error {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            Error::Parse { source, .. } => Some(source),
            Error::Histogram(e) => Some(e),
            Error::PlotWrite { source, .. } => Some(source.as_ref()),
            Error::Plot(_)
            | Error::NotADirectory(_)
            | Error::NoResults { .. }
            | Error::NoPaperRun(_) => None,
        }
    }
}

impl From<HistogramError> for Error {
    fn from(e: HistogramError) -> Error {
        Error::Histogram(e)
    }
}

/// Why a JSON file is not the result file it should be: the schema's own reader error
/// (one definition for the driver that writes the files and this crate that reads them).
pub use kvtb_schema::Error as ParseError;

/// Why a `histogram_v2_base64` field does not decode.
#[derive(Debug)]
#[non_exhaustive]
pub enum HistogramError {
    NotBase64(base64::DecodeError),
    /// Base64, but not an HdrHistogram V2 (deflate) serialization.
    DoesNotDecode(hdrhistogram::serialization::DeserializeError),
}

impl fmt::Display for HistogramError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HistogramError::NotBase64(e) => write!(f, "histogram is not base64: {e}"),
            HistogramError::DoesNotDecode(e) => write!(f, "histogram does not decode: {e:?}"),
        }
    }
}

impl StdError for HistogramError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            HistogramError::NotBase64(e) => Some(e),
            HistogramError::DoesNotDecode(e) => Some(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_name_the_path_and_chain_the_cause() {
        let e = Error::io(
            IoOp::ReadFile,
            "x/y.json",
            std::io::Error::from(std::io::ErrorKind::NotFound),
        );
        assert!(e.to_string().starts_with("x/y.json: cannot read: "), "{e}");
        assert!(e.source().is_some());
        let e = Error::NoResults {
            dir: "d".into(),
            skipped: vec!["d/x.json: not JSON".into()],
        };
        assert_eq!(
            e.to_string(),
            "no ycsb result files (*.json) in d (1 skipped)"
        );
        let e = Error::parse("f.json", ParseError::NotARunFile { missing: "engine" });
        assert_eq!(
            e.to_string(),
            "f.json: not a ycsb result file (no `engine` field)"
        );
    }
}
