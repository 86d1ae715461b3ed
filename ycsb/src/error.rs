//! The driver's errors: one enum for the crate, each variant carrying what a user
//! needs to read (the binary prints its `Display`), with the cause chained as its
//! `source()`.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// Result alias of the driver.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a command, a phase or a measurement could not go on.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A request the driver refuses: a bad option or property, an unknown engine or
    /// workload, a directory it will not touch. The message is what the user sees.
    Usage(String),
    /// A file, directory, process or thread operation failed: what was being done
    /// (naming the path, where there is one) and the error.
    Io {
        what: String,
        path: Option<PathBuf>,
        source: std::io::Error,
    },
    /// An engine operation failed: what was being done (empty: nothing to add) and
    /// the engine's error.
    Engine {
        context: String,
        source: kvapi::Error,
    },
    /// A workload, property or trace file that does not parse, at a line where one
    /// is to blame (`file` is the path or the workload's name).
    Parse {
        file: String,
        line: Option<usize>,
        message: String,
    },
    /// A file that is wrong as a whole: empty, truncated, not of its format.
    Invalid { file: String, problem: String },
    /// JSON that could not be encoded or decoded.
    Json {
        what: String,
        source: serde_json::Error,
    },
    /// A result document the schema refuses (an unknown version, a wrong kind).
    Schema(kvtb_schema::Error),
    /// A thread panicked while holding a lock of the driver's own state.
    Poisoned(String),
    /// A run, audit or measurement that failed: the engine failed, writes were lost,
    /// a child process did not behave.
    Failed(String),
    /// An error, with what was being done when it happened.
    Context { context: String, source: Box<Error> },
    /// The engine could not stay within its memory budget: it refused a write that
    /// would not fit, or the kernel stopped it at its memory limit. A result in its
    /// own right, not a failure of the driver (`ycsb` exits with 3).
    OverBudget(String),
}

impl Error {
    /// A usage error with the message the user sees.
    pub fn usage(message: impl Into<String>) -> Error {
        Error::Usage(message.into())
    }

    /// A failure of a run, an audit or a measurement.
    pub fn failed(message: impl Into<String>) -> Error {
        Error::Failed(message.into())
    }

    /// An I/O error while doing `what` (no single path to name).
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            what: what.into(),
            path: None,
            source,
        }
    }

    /// An I/O error while doing `action` on `path` ("cannot read", "writing", ...).
    pub fn io_at(action: &str, path: &Path, source: std::io::Error) -> Error {
        Error::Io {
            what: format!("{action} {}", path.display()),
            path: Some(path.to_path_buf()),
            source,
        }
    }

    /// An engine error while doing `context`.
    pub fn engine(context: impl Into<String>, source: kvapi::Error) -> Error {
        Error::Engine {
            context: context.into(),
            source,
        }
    }

    /// This error, with what was being done when it happened.
    pub fn context(self, context: impl Into<String>) -> Error {
        Error::Context {
            context: context.into(),
            source: Box::new(self),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m) | Error::Poisoned(m) | Error::Failed(m) | Error::OverBudget(m) => {
                f.write_str(m)
            }
            Error::Io { what, source, .. } => write!(f, "{what}: {source}"),
            Error::Engine { context, source } if context.is_empty() => write!(f, "{source}"),
            Error::Engine { context, source } => write!(f, "{context}: {source}"),
            Error::Parse {
                file,
                line: Some(line),
                message,
            } => write!(f, "{file}, line {line}: {message}"),
            Error::Parse {
                file,
                line: None,
                message,
            } => write!(f, "{file}: {message}"),
            Error::Invalid { file, problem } => write!(f, "{file} {problem}"),
            Error::Json { what, source } => write!(f, "{what}: {source}"),
            Error::Schema(e) => write!(f, "{e}"),
            Error::Context { context, source } => write!(f, "{context}: {source}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            Error::Engine { source, .. } => Some(source),
            Error::Json { source, .. } => Some(source),
            Error::Schema(e) => Some(e),
            Error::Context { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(source: std::io::Error) -> Error {
        Error::io("I/O error", source)
    }
}

impl From<kvapi::Error> for Error {
    fn from(source: kvapi::Error) -> Error {
        Error::engine("", source)
    }
}

impl From<serde_json::Error> for Error {
    fn from(source: serde_json::Error) -> Error {
        Error::Json {
            what: "JSON".into(),
            source,
        }
    }
}

impl From<kvtb_schema::Error> for Error {
    fn from(e: kvtb_schema::Error) -> Error {
        Error::Schema(e)
    }
}

/// Locks state of the driver's own under the workspace's policy (`kvapi::sync`): a
/// lock a panicking thread held is [`Error::Poisoned`], never silently taken over.
pub(crate) fn lock<'a, T>(m: &'a Mutex<T>, what: &str) -> Result<MutexGuard<'a, T>> {
    kvapi::sync::lock(m, what).map_err(|e| match e {
        kvapi::Error::Poisoned(m) => Error::Poisoned(m),
        other => Error::from(other),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_what_failed_and_chain_the_cause() {
        let io = std::io::Error::from(std::io::ErrorKind::NotFound);
        let e = Error::io_at("cannot read", Path::new("/x/y"), io);
        assert!(e.to_string().starts_with("cannot read /x/y: "), "{e}");
        assert!(std::error::Error::source(&e).is_some());
        let e = Error::engine("sled", kvapi::Error::Closed).context("reopening after a kill");
        assert_eq!(
            e.to_string(),
            "reopening after a kill: sled: engine is closed"
        );
        let p = Error::Parse {
            file: "wl".into(),
            line: Some(2),
            message: "expected key=value".into(),
        };
        assert_eq!(p.to_string(), "wl, line 2: expected key=value");
        let m = std::sync::Arc::new(Mutex::new(0));
        let m2 = m.clone();
        let _ = std::thread::spawn(move || {
            let _g = m2.lock();
            panic!("poison it");
        })
        .join();
        let e = lock(&m, "the window").unwrap_err();
        assert!(
            matches!(&e, Error::Poisoned(w) if w.contains("the window")),
            "{e}"
        );
    }
}
