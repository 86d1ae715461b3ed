//! YCSB property files (`-P FILE`) and overrides (`-p key=value`).

use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::path::Path;

/// Resolved properties: later sources override earlier ones.
pub type Properties = BTreeMap<String, String>;

/// Parses a Java-style property file: `key=value` or `key: value` per line, `#` and
/// `!` comments, blank lines, and lines continued with a trailing backslash. A line
/// with no separator is an error naming the file and line, so a mangled file is not
/// silently half-read.
pub fn parse(text: &str, origin: &str, into: &mut Properties) -> Result<()> {
    let mut pending = String::new();
    let mut start_line = 0;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_start();
        if pending.is_empty() {
            if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
                continue;
            }
            start_line = i + 1;
        }
        if let Some(stripped) = line.strip_suffix('\\') {
            pending.push_str(stripped);
            continue;
        }
        pending.push_str(line);
        let entry = std::mem::take(&mut pending);
        let at_line = |message: String| Error::Parse {
            file: origin.to_string(),
            line: Some(start_line),
            message,
        };
        let sep = entry
            .find(['=', ':'])
            .ok_or_else(|| at_line(format!("expected key=value, got '{}'", entry.trim())))?;
        let key = entry[..sep].trim();
        if key.is_empty() {
            return Err(at_line("empty property name".into()));
        }
        into.insert(key.to_string(), entry[sep + 1..].trim().to_string());
    }
    if !pending.is_empty() {
        return Err(Error::Parse {
            file: origin.to_string(),
            line: Some(start_line),
            message: "file ends inside a continued line".into(),
        });
    }
    Ok(())
}

/// Reads and parses a property file.
pub fn load_file(path: &Path, into: &mut Properties) -> Result<()> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::io_at("cannot read property file", path, e))?;
    parse(&text, &path.display().to_string(), into)
}

/// Applies one `-p key=value` override.
pub fn set_override(arg: &str, into: &mut Properties) -> Result<()> {
    let (k, v) = arg
        .split_once('=')
        .ok_or_else(|| Error::usage(format!("-p {arg}: expected key=value")))?;
    let k = k.trim();
    if k.is_empty() {
        return Err(Error::usage(format!("-p {arg}: empty property name")));
    }
    into.insert(k.to_string(), v.trim().to_string());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_comments_separators_and_continuations() {
        let mut p = Properties::new();
        parse(
            "# comment\n! also\n\nrecordcount=1000\nworkload : site.ycsb.CoreWorkload\nlong=a\\\n  b\n",
            "t",
            &mut p,
        )
        .unwrap();
        assert_eq!(p["recordcount"], "1000");
        assert_eq!(p["workload"], "site.ycsb.CoreWorkload");
        assert_eq!(p["long"], "ab");
    }

    #[test]
    fn malformed_lines_are_reported_with_line_numbers() {
        let mut p = Properties::new();
        let e = parse("a=1\nthis line has no separator\n", "wl", &mut p)
            .unwrap_err()
            .to_string();
        assert!(e.contains("wl, line 2"), "{e}");
        assert!(parse("=3\n", "wl", &mut p).is_err());
        assert!(set_override("noequals", &mut p).is_err());
        set_override("readproportion=0.5", &mut p).unwrap();
        assert_eq!(p["readproportion"], "0.5");
    }
}
