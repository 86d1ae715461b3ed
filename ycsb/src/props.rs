//! YCSB property files (`-P FILE`) and overrides (`-p key=value`).
//!
//! Files are read as `java.util.Properties.load` reads them (YCSB's Client loads its
//! `-P` files that way), so a YCSB workload file means here what it means to YCSB:
//! - a natural line ending in an odd number of backslashes continues on the next line,
//!   whose leading whitespace is dropped;
//! - a line whose first non-blank character is `#` or `!` is a comment (not inside a
//!   continuation), a line of blanks is ignored (blanks: space, tab, form feed);
//! - the key runs from the first non-blank character to the first unescaped `=`, `:`
//!   or blank; blanks around the separator are skipped, so `k=v`, `k: v`, `k v` and
//!   `k = v` all give `v`; a key alone gives the empty value;
//! - the value is the rest of the line, trailing blanks kept (as Java keeps them:
//!   `recordcount=1000 ` is then refused as a number, with the reason);
//! - escapes `\t \n \r \f \\ \uXXXX` in keys and values; any other `\c` is `c`;
//! - a later occurrence of a key wins.
//!
//! One difference, on purpose: a malformed `\u` escape is an error naming the file and
//! line (Java throws without saying where).

use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::path::Path;

/// Resolved properties: later sources override earlier ones.
pub type Properties = BTreeMap<String, String>;

fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\x0c')
}

/// The logical lines of a properties text: (first line number, the joined line with
/// continuations resolved, escapes still in place).
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut cur: Option<(usize, String)> = None;
    // Java ends lines at \n, \r or \r\n
    let normalised = text.replace("\r\n", "\n").replace('\r', "\n");
    for (i, raw) in normalised.split('\n').enumerate() {
        let line = raw.trim_start_matches(is_blank);
        let continuing = cur.is_some();
        if !continuing && (line.is_empty() || line.starts_with('#') || line.starts_with('!')) {
            continue;
        }
        let trailing = line.chars().rev().take_while(|&c| c == '\\').count();
        let (body, more) = if trailing % 2 == 1 {
            (&line[..line.len() - 1], true)
        } else {
            (line, false)
        };
        let entry = cur.get_or_insert_with(|| (i + 1, String::new()));
        entry.1.push_str(body);
        if !more && let Some(done) = cur.take() {
            out.push(done);
        }
    }
    if let Some(done) = cur.take() {
        out.push(done);
    }
    out
}

/// Resolves the escapes of a key or value.
fn unescape(s: &str) -> std::result::Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            None => {}
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\x0c'),
            Some('u') => {
                let hex: String = it.by_ref().take(4).collect();
                let cp = (hex.len() == 4)
                    .then(|| u32::from_str_radix(&hex, 16).ok())
                    .flatten()
                    .and_then(char::from_u32)
                    .ok_or_else(|| format!("malformed \\u escape '\\u{hex}'"))?;
                out.push(cp);
            }
            Some(other) => out.push(other),
        }
    }
    Ok(out)
}

/// Splits a logical line into its raw key and raw value (escapes unresolved).
fn split_entry(line: &str) -> (&str, &str) {
    let mut escaped = false;
    let mut key_end = line.len();
    for (i, c) in line.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        if c == '\\' {
            escaped = true;
        } else if c == '=' || c == ':' || is_blank(c) {
            key_end = i;
            break;
        }
    }
    let key = &line[..key_end];
    let mut rest = line[key_end..].trim_start_matches(is_blank);
    if let Some(r) = rest.strip_prefix(['=', ':']) {
        rest = r.trim_start_matches(is_blank);
    }
    (key, rest)
}

/// Parses a properties text as Java does (see the module doc); `origin` names it in
/// errors.
pub fn parse(text: &str, origin: &str, into: &mut Properties) -> Result<()> {
    for (line, entry) in logical_lines(text) {
        let at_line = |message: String| Error::Parse {
            file: origin.to_string(),
            line: Some(line),
            message,
        };
        let (k, v) = split_entry(&entry);
        let key = unescape(k).map_err(at_line)?;
        let value = unescape(v).map_err(at_line)?;
        into.insert(key, value);
    }
    Ok(())
}

/// Reads and parses a property file.
pub fn load_file(path: &Path, into: &mut Properties) -> Result<()> {
    let bytes =
        std::fs::read(path).map_err(|e| Error::io_at("cannot read property file", path, e))?;
    // Java's Properties.load(InputStream) reads ISO-8859-1: every byte is one character
    let text: String = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => e.into_bytes().iter().map(|&b| b as char).collect(),
    };
    parse(&text, &path.display().to_string(), into)
}

/// Applies one `-p key=value` override (split at the first `=`; the key and value are
/// trimmed, unlike YCSB's, so that `-p "a = b"` means `a=b`).
pub fn set_override(arg: &str, into: &mut Properties) -> Result<()> {
    let (k, v) = arg.split_once('=').ok_or_else(|| {
        Error::usage(format!(
            "-p {arg}: expected key=value (e.g. -p operationcount=99999)"
        ))
    })?;
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

    fn parsed(text: &str) -> Properties {
        let mut p = Properties::new();
        parse(text, "t", &mut p).unwrap();
        p
    }

    #[test]
    fn parses_comments_separators_and_continuations() {
        let p = parsed(
            "# comment\n! also\n\nrecordcount=1000\nworkload : site.ycsb.CoreWorkload\nlong=a\\\n  b\n",
        );
        assert_eq!(p["recordcount"], "1000");
        assert_eq!(p["workload"], "site.ycsb.CoreWorkload");
        assert_eq!(p["long"], "ab");
    }

    #[test]
    fn java_separators_escapes_and_blanks() {
        let p = parsed(concat!(
            "recordcount 500\n",
            "a = b # not a comment\n",
            "c:d\n",
            "e==f\n",
            "key\\ with\\ spaces=v\n",
            "cheeses\n",
            "trail=1000 \n",
            "esc=tab\\there\\u0041\\q\n",
            "even=two\\\\\n",
            "next=line\n",
            "  # indented comment\n",
            "cont=x\\\n# part of the value\n",
            "dup=1\ndup=2\n",
        ));
        assert_eq!(p["recordcount"], "500");
        assert_eq!(p["a"], "b # not a comment");
        assert_eq!(p["c"], "d");
        assert_eq!(p["e"], "=f");
        assert_eq!(p["key with spaces"], "v");
        assert_eq!(p["cheeses"], "");
        assert_eq!(p["trail"], "1000 ", "Java keeps trailing blanks");
        assert_eq!(p["esc"], "tab\thereAq");
        assert_eq!(
            p["even"], "two\\",
            "an even run of backslashes does not continue"
        );
        assert_eq!(p["next"], "line");
        assert_eq!(p["cont"], "x# part of the value");
        assert_eq!(p["dup"], "2");
        assert_eq!(p.len(), 12);
    }

    #[test]
    fn malformed_escapes_and_overrides_are_reported() {
        let mut p = Properties::new();
        let e = parse("a=1\nb=\\u12\n", "wl", &mut p)
            .unwrap_err()
            .to_string();
        assert!(e.contains("wl, line 2") && e.contains("\\u"), "{e}");
        assert!(set_override("noequals", &mut p).is_err());
        assert!(set_override("=3", &mut p).is_err());
        set_override("readproportion=0.5", &mut p).unwrap();
        assert_eq!(p["readproportion"], "0.5");
    }
}
