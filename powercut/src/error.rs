//! The crate's errors.

use std::path::{Path, PathBuf};

/// What went wrong while recording, reading a recording or building an image.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// An I/O error on a path (the recording, the base copy, an image).
    Io {
        what: String,
        path: PathBuf,
        source: std::io::Error,
    },
    /// The recording does not read: a bad magic, a record cut short in the middle, a
    /// kind the reader does not know.
    Format(String),
    /// The run did something the layer cannot follow (a shared writable mapping of
    /// a recorded file, a rename across the recorded directory's edge, ...), or
    /// something the model does not describe (a collapsing fallocate).
    Unsupported(String),
    /// Replaying the whole recording onto the base copy does not give the
    /// directory the run left: some change was made through a path the layer does
    /// not see. The recording cannot stand for the run.
    Incomplete(Vec<String>),
    /// The layer did not answer the freeze in time.
    Timeout(String),
}

/// The crate's result.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub(crate) fn io(what: impl Into<String>, path: &Path, source: std::io::Error) -> Error {
        Error::Io {
            what: what.into(),
            path: path.to_path_buf(),
            source,
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Io { what, path, source } => {
                write!(f, "{what} {}: {source}", path.display())
            }
            Error::Format(s) => write!(f, "the recording does not read: {s}"),
            Error::Unsupported(s) => write!(f, "the recording layer cannot follow the run: {s}"),
            Error::Incomplete(d) => write!(
                f,
                "the recording is incomplete (replayed, it does not give the directory the run left): {}",
                d.join("; ")
            ),
            Error::Timeout(s) => write!(f, "{s}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
