//! CSV files with a header line, as our form and Meta's traces are: columns found by
//! name, fields read with the file and line named in every error.

use crate::error::{Error, Result};
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::Path;

pub(super) fn open(path: &Path) -> Result<std::fs::File> {
    std::fs::File::open(path).map_err(|e| Error::io_at("cannot open trace", path, e))
}

/// A parse error at `line` of `path` (`None`: the file as a whole).
pub(super) fn parse_error(path: &Path, line: Option<usize>, message: String) -> Error {
    Error::Parse {
        file: path.display().to_string(),
        line,
        message,
    }
}

/// A file that is wrong as a whole ("is empty", "is truncated: ...").
pub(super) fn invalid(path: &Path, problem: impl Into<String>) -> Error {
    Error::Invalid {
        file: path.display().to_string(),
        problem: problem.into(),
    }
}

/// An I/O error reading `path` at `line`.
pub(super) fn read_error(path: &Path, line: usize, source: std::io::Error) -> Error {
    Error::Io {
        what: format!("reading {}, line {line}", path.display()),
        path: Some(path.to_path_buf()),
        source,
    }
}

/// Column positions found by header name.
pub(super) struct Columns(HashMap<String, usize>);

impl Columns {
    fn new(header: &str) -> Columns {
        Columns(
            header
                .split(',')
                .enumerate()
                .map(|(i, c)| (c.trim().to_string(), i))
                .collect(),
        )
    }
    pub(super) fn need(&self, name: &str, path: &Path) -> Result<usize> {
        self.0
            .get(name)
            .copied()
            .ok_or_else(|| parse_error(path, None, format!("the header has no '{name}' column")))
    }
}

pub(super) fn field<'a>(
    cells: &[&'a str],
    i: usize,
    name: &str,
    path: &Path,
    line: usize,
) -> Result<&'a str> {
    cells
        .get(i)
        .map(|s| s.trim())
        .ok_or_else(|| parse_error(path, Some(line), format!("missing the '{name}' field")))
}

pub(super) fn num<T: std::str::FromStr>(
    s: &str,
    name: &str,
    path: &Path,
    line: usize,
) -> Result<T> {
    s.parse().map_err(|_| {
        parse_error(
            path,
            Some(line),
            format!("'{name}' is not a non-negative integer: '{s}'"),
        )
    })
}

/// Non-empty data lines of a CSV file with their line numbers.
pub(super) type Rows = Box<dyn Iterator<Item = Result<(usize, String)>>>;

/// The header's columns and the data lines of a CSV file with a header.
pub(super) fn csv_rows(path: &Path) -> Result<(Columns, Rows)> {
    let mut lines = BufReader::new(open(path)?).lines();
    let header = match lines.next() {
        Some(h) => h.map_err(|e| Error::io_at("reading", path, e))?,
        None => return Err(invalid(path, "is empty")),
    };
    let shown = path.to_path_buf();
    let rows = lines.enumerate().filter_map(move |(i, line)| match line {
        Ok(l) if l.trim().is_empty() => None,
        Ok(l) => Some(Ok((i + 2, l))),
        Err(e) => Some(Err(read_error(&shown, i + 2, e))),
    });
    Ok((Columns::new(&header), Box::new(rows)))
}
