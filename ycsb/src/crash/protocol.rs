//! What the child tells the parent, one line per event, on its standard output (a
//! pipe whose contents outlive the child):
//!
//! ```text
//! READY <path>              the engine is open, writes follow (path: none, native or pool)
//! P <version> <key> <len>   a put is about to be issued
//! D <version> <key>         a delete is about to be issued
//! A <version>               that write was acknowledged
//! OPENING / OPENED          a recovering child began / finished opening the engine
//! ```
//!
//! Every line is written whole, under one lock, with one `write` to the pipe: the
//! order of the lines is one serialised order of the events of all the child's
//! threads. A `P` line is written before its call is made and an `A` line after it
//! returned, so an `A` before a `P` in the stream means that write was acknowledged
//! before the other was issued. Positions in the stream are what the model compares.

use super::plan::{Op, Write, show};
use crate::error::{Error, Result, lock};
use std::collections::HashMap;
use std::sync::Mutex;

pub const READY: &str = "READY";
pub const OPENING: &str = "OPENING";
pub const OPENED: &str = "OPENED";

/// The writing end: lines from any thread, serialised.
pub struct Pipe {
    out: Mutex<Box<dyn std::io::Write + Send>>,
}

impl Pipe {
    pub fn new(out: Box<dyn std::io::Write + Send>) -> Pipe {
        Pipe {
            out: Mutex::new(out),
        }
    }

    /// Writes one line and flushes it (one `write` for a line shorter than the
    /// pipe's atomic size).
    pub fn line(&self, line: &str) -> Result<()> {
        let mut s = String::with_capacity(line.len() + 1);
        s.push_str(line);
        s.push('\n');
        let mut out = lock(&self.out, "the pipe to the parent")?;
        out.write_all(s.as_bytes())
            .and_then(|()| out.flush())
            .map_err(|e| Error::io("writing to the parent", e))
    }

    /// The line announcing `w`, before its call.
    pub fn pending(&self, w: &Write, key: &str) -> Result<()> {
        match w.op {
            Op::Put { len } => self.line(&format!("P {} {key} {len}", w.version)),
            Op::Delete => self.line(&format!("D {} {key}", w.version)),
        }
    }

    /// The line acknowledging the write of `version`, after its call returned.
    pub fn acked(&self, version: u64) -> Result<()> {
        self.line(&format!("A {version}"))
    }
}

/// One write the child announced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issued {
    pub version: u64,
    pub key: String,
    pub op: Op,
    /// Position of its `P`/`D` line in the stream.
    pub issued_at: usize,
    /// Position of its `A` line; `None`: still pending at the kill.
    pub acked_at: Option<usize>,
}

/// What one child reported.
#[derive(Debug, Default)]
pub struct Events {
    /// The word after `READY`, if the child said it.
    pub ready: Option<String>,
    pub opening: bool,
    pub opened: bool,
    /// In the order they were issued.
    pub writes: Vec<Issued>,
}

fn bad(n: usize, line: &str, why: &str) -> Error {
    Error::failed(format!("line {} from the child, '{line}': {why}", n + 1))
}

/// Reads the child's lines. The last one may be cut short by the kill and is then
/// ignored; any other line that is not of the protocol is an error, as are an
/// acknowledgement of a write never announced and a version announced twice.
pub fn parse(lines: &[String]) -> Result<Events> {
    let mut ev = Events::default();
    let mut by_version: HashMap<u64, usize> = HashMap::new();
    for (n, l) in lines.iter().enumerate() {
        match parse_line(&mut ev, &mut by_version, n, l) {
            Ok(()) => {}
            // a line cut by the kill
            Err(_) if n + 1 == lines.len() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(ev)
}

fn parse_line(
    ev: &mut Events,
    by_version: &mut HashMap<u64, usize>,
    n: usize,
    l: &str,
) -> Result<()> {
    let num = |s: &str| s.parse::<u64>().map_err(|_| bad(n, l, "not a number"));
    let (version, key, op) = match l.split(' ').collect::<Vec<_>>().as_slice() {
        [READY] => {
            ev.ready = Some(String::new());
            return Ok(());
        }
        [READY, path] => {
            ev.ready = Some(path.to_string());
            return Ok(());
        }
        [OPENING] => {
            ev.opening = true;
            return Ok(());
        }
        [OPENED] => {
            ev.opened = true;
            return Ok(());
        }
        ["A", v] => {
            let version = num(v)?;
            let Some(&i) = by_version.get(&version) else {
                return Err(bad(n, l, "acknowledges a write never announced"));
            };
            if ev.writes[i].acked_at.replace(n).is_some() {
                return Err(bad(n, l, &format!("{} acknowledged twice", show(version))));
            }
            return Ok(());
        }
        ["P", v, key, len] => (
            num(v)?,
            *key,
            Op::Put {
                len: num(len)? as usize,
            },
        ),
        ["D", v, key] => (num(v)?, *key, Op::Delete),
        _ => return Err(bad(n, l, "not a line of the protocol")),
    };
    if key.is_empty() {
        return Err(bad(n, l, "no key"));
    }
    if by_version.insert(version, ev.writes.len()).is_some() {
        return Err(bad(n, l, "version announced twice"));
    }
    ev.writes.push(Issued {
        version,
        key: key.to_string(),
        op,
        issued_at: n,
        acked_at: None,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn writes_pair_with_their_acknowledgements_in_stream_order() {
        let ev = parse(&lines(&[
            "READY pool",
            "P 5 k1 100",
            "D 6 k1",
            "A 6",
            "P 7 k2 10",
            "A 5",
            "A",
        ]))
        .unwrap();
        assert_eq!(ev.ready.as_deref(), Some("pool"));
        assert_eq!(ev.writes.len(), 3);
        let at: Vec<_> = ev
            .writes
            .iter()
            .map(|w| (w.issued_at, w.acked_at))
            .collect();
        assert_eq!(at, [(1, Some(5)), (2, Some(3)), (4, None)]);
        assert_eq!(ev.writes[1].op, Op::Delete);
        assert_eq!(ev.writes[0].op, Op::Put { len: 100 });
    }

    #[test]
    fn lines_outside_the_protocol_are_errors_unless_cut_by_the_kill() {
        for bad in [
            &["P k x 1", "A 1"][..],
            &["A 3", "READY"],
            &["P 3 k 1", "P 3 k 1", "A 3"],
            &["P 3 k 1", "A 3", "A 3", "READY"],
            &["hello", "READY"],
        ] {
            assert!(parse(&lines(bad)).is_err(), "{bad:?}");
        }
        assert_eq!(parse(&lines(&["P 3 k 1", "A"])).unwrap().writes.len(), 1);
        assert!(parse(&lines(&["OPENING", "OPENED"])).unwrap().opened);
    }
}
