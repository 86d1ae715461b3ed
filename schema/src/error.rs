//! Why a file is not a readable result document.

use std::fmt;
use std::path::PathBuf;

/// Why a text or a file is not a result document this reader can use.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The text is not JSON.
    NotJson(serde_json::Error),
    /// The JSON is not an object.
    NotAnObject,
    /// A run file must have `engine` and `phases`; this one lacks the one named.
    NotARunFile { missing: &'static str },
    /// A document of a kind was expected; this one has no `kind`.
    NoKind { expected: String },
    /// A document of another kind.
    WrongKind { found: String, expected: String },
    /// A `format` this reader does not know (as written in the file).
    UnknownVersion { found: String, newest: u32 },
    /// The document has the right kind and version but does not fit its type; `kind`
    /// is `None` for a run file.
    Invalid {
        kind: Option<String>,
        source: serde_json::Error,
    },
    /// A file or directory that cannot be read.
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NotJson(e) => write!(f, "not JSON: {e}"),
            Error::NotAnObject => write!(f, "not a JSON object"),
            Error::NotARunFile { missing } => {
                write!(f, "not a ycsb result file (no `{missing}` field)")
            }
            Error::NoKind { expected } => {
                write!(f, "no `kind` field (expected \"{expected}\")")
            }
            Error::WrongKind { found, expected } => {
                write!(f, "`kind` is \"{found}\", expected \"{expected}\"")
            }
            Error::UnknownVersion { found, newest } => write!(
                f,
                "format {found} is not a schema version this reader knows (1 to {}): a file \
                 from a newer driver?",
                newest
            ),
            Error::Invalid { kind: None, source } => {
                write!(f, "not a ycsb result file: {source}")
            }
            Error::Invalid {
                kind: Some(k),
                source,
            } => write!(f, "not a valid \"{k}\" file: {source}"),
            Error::Io { path, source } => write!(f, "cannot read {}: {source}", path.display()),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::NotJson(e) | Error::Invalid { source: e, .. } => Some(e),
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
