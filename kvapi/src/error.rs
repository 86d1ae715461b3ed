use std::fmt;
use std::io;
use std::path::PathBuf;

/// Errors of every engine, in one enum so the driver can count them by kind.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// An I/O error, with what was being done.
    Io { context: String, source: io::Error },
    /// A key, value or option the engine refuses; nothing was written.
    InvalidArgument(String),
    /// On-disk data that fails its checks.
    Corruption {
        file: PathBuf,
        offset: u64,
        detail: String,
    },
    /// The directory holds another engine's data (or unrelated files).
    WrongEngine {
        dir: PathBuf,
        expected: String,
        found: String,
    },
    /// Another process (or handle) has the directory open.
    Locked { dir: PathBuf },
    /// An earlier write or sync failed, or a thread panicked holding engine state; the
    /// engine refuses writes until reopened.
    Poisoned(String),
    /// The engine was closed.
    Closed,
    /// The operation or option is not supported by this engine.
    Unsupported(String),
    /// The engine cannot do this within its memory budget (`<engine>.memory`): a
    /// write that would grow what it must keep in memory beyond the budget (the
    /// write is not applied), or an open whose data does not fit. `what` says what
    /// must be held and why; `needed` and `budget` are bytes.
    OverBudget {
        what: String,
        needed: u64,
        budget: u64,
    },
    /// An error reported by a third-party engine library.
    Engine(String),
}

/// Result alias of the interface.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An I/O error with context.
    pub fn io(context: impl Into<String>, source: io::Error) -> Error {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// A short name of the error's kind, for per-status counts.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Io { .. } => "IO_ERROR",
            Error::InvalidArgument(_) => "BAD_REQUEST",
            Error::Corruption { .. } => "CORRUPTION",
            Error::WrongEngine { .. } => "WRONG_ENGINE",
            Error::Locked { .. } => "LOCKED",
            Error::Poisoned(_) => "POISONED",
            Error::Closed => "CLOSED",
            Error::Unsupported(_) => "NOT_IMPLEMENTED",
            Error::OverBudget { .. } => "OVER_BUDGET",
            Error::Engine(_) => "ERROR",
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { context, source } => write!(f, "{context}: {source}"),
            Error::InvalidArgument(m) => write!(f, "invalid argument: {m}"),
            Error::Corruption {
                file,
                offset,
                detail,
            } => write!(
                f,
                "corruption in {} at offset {offset}: {detail}",
                file.display()
            ),
            Error::WrongEngine {
                dir,
                expected,
                found,
            } => write!(
                f,
                "{} holds {found}, not a {expected} database; choose another directory",
                dir.display()
            ),
            Error::Locked { dir } => write!(
                f,
                "{} is in use by another process or handle",
                dir.display()
            ),
            Error::Poisoned(m) => write!(
                f,
                "engine refuses writes after an earlier failure ({m}); reopen it"
            ),
            Error::Closed => write!(f, "engine is closed"),
            Error::Unsupported(m) => write!(f, "not supported: {m}"),
            Error::OverBudget {
                what,
                needed,
                budget,
            } => write!(
                f,
                "over the memory budget: {what}; {} MiB needed, budget {} MiB",
                mib(*needed),
                mib(*budget)
            ),
            Error::Engine(m) => write!(f, "{m}"),
        }
    }
}

/// Bytes in MiB with one decimal.
fn mib(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / (1u64 << 20) as f64)
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl From<io::Error> for Error {
    fn from(source: io::Error) -> Error {
        Error::Io {
            context: "I/O error".into(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn over_budget_names_both_figures() {
        let e = Error::OverBudget {
            what: "the engine keeps its whole image in memory".into(),
            needed: 3 << 20,
            budget: 1 << 19,
        };
        assert_eq!(e.kind(), "OVER_BUDGET");
        assert_eq!(
            e.to_string(),
            "over the memory budget: the engine keeps its whole image in memory; 3.0 MiB \
             needed, budget 0.5 MiB"
        );
    }
}
