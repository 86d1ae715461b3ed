//! `ycsb shell --engine E`: read, insert, update, delete and scan single keys of a
//! store, one command a line (go-ycsb's shell, for one-blob records): the way to look
//! at what a run left behind, or to poke an engine by hand.
//!
//! ```text
//! read KEY            the value (text, or hex when it is not text) and its length
//! insert KEY VALUE    store VALUE (the rest of the line) under KEY
//! update KEY VALUE    the same (engines treat both as upserts)
//! delete KEY
//! scan KEY COUNT      up to COUNT pairs from KEY on, in key order
//! help, quit
//! ```

use clap::Args;
use kvapi::Engine;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use ycsb::{Error, Result, engines};

#[derive(Args, Debug)]
pub(super) struct ShellArgs {
    /// Engine whose store to open.
    #[arg(long)]
    pub(super) engine: String,
    /// Engine options, <engine>.<option>=value (repeatable), e.g. -p kvell.workers=2.
    #[arg(short = 'p', value_name = "KEY=VALUE")]
    pub(super) props: Vec<String>,
    /// Root of the data directories (the engine's default is <data>/<engine>).
    #[arg(long, default_value = "data")]
    pub(super) data: PathBuf,
}

/// A value shown as text when it is printable, else as hex (the first 64 bytes).
fn show(v: &[u8]) -> String {
    match std::str::from_utf8(v) {
        Ok(s) if s.chars().all(|c| !c.is_control() || c == '\t') => s.to_string(),
        _ => {
            let hex: String = v.iter().take(64).map(|b| format!("{b:02x}")).collect();
            if v.len() > 64 {
                format!("0x{hex}...")
            } else {
                format!("0x{hex}")
            }
        }
    }
}

/// Runs one command line against the engine; `Ok(false)` ends the shell.
fn command(engine: &dyn Engine, line: &str, out: &mut dyn Write) -> Result<bool> {
    let line = line.trim();
    let (cmd, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let rest = rest.trim_start();
    let (key, arg) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let e = |what: &str, err: kvapi::Error| Error::engine(format!("{what} {key}"), err);
    let w = |out: &mut dyn Write, s: String| {
        writeln!(out, "{s}").map_err(|err| Error::io("writing the shell's output", err))
    };
    match cmd {
        "" => {}
        "quit" | "exit" => return Ok(false),
        "help" => w(
            out,
            "read KEY | insert KEY VALUE | update KEY VALUE | delete KEY | scan KEY COUNT | quit"
                .into(),
        )?,
        "read" if !key.is_empty() => match engine.get(key.as_bytes()).map_err(|x| e("read", x))? {
            Some(v) => w(out, format!("{key} ({} bytes): {}", v.len(), show(&v)))?,
            None => w(out, format!("{key}: not found"))?,
        },
        "insert" | "update" if !key.is_empty() => {
            let v = arg.as_bytes();
            if cmd == "insert" {
                engine
                    .insert(key.as_bytes(), v)
                    .map_err(|x| e("insert", x))?;
            } else {
                engine
                    .update(key.as_bytes(), v)
                    .map_err(|x| e("update", x))?;
            }
            w(out, format!("{cmd} {key}: ok ({} bytes)", v.len()))?;
        }
        "delete" if !key.is_empty() => {
            engine.delete(key.as_bytes()).map_err(|x| e("delete", x))?;
            w(out, format!("delete {key}: ok"))?;
        }
        "scan" if !key.is_empty() => {
            let n: usize = arg
                .trim()
                .parse()
                .map_err(|_| Error::usage(format!("scan {key} {arg}: expected a count")))?;
            let pairs = engine.scan(key.as_bytes(), n).map_err(|x| e("scan", x))?;
            for (k, v) in &pairs {
                w(out, format!("{} ({} bytes): {}", show(k), v.len(), show(v)))?;
            }
            w(out, format!("{} pairs", pairs.len()))?;
        }
        _ => w(out, format!("unknown command '{line}' (help for the list)"))?,
    }
    Ok(true)
}

pub(super) fn shell(a: &ShellArgs) -> Result<()> {
    if !engines::is_built(&a.engine) {
        return Err(Error::usage(format!(
            "unknown or unbuilt engine '{}' (built: {})",
            a.engine,
            engines::built().join(", ")
        )));
    }
    let mut props = ycsb::props::Properties::new();
    for o in &a.props {
        ycsb::props::set_override(o, &mut props)?;
    }
    let opts = engines::options(&a.engine, &props, &a.data, None);
    let engine = engines::open(&a.engine, &opts)?;
    let stdin = std::io::stdin();
    let mut out = std::io::stdout();
    let interactive = std::io::IsTerminal::is_terminal(&stdin);
    loop {
        if interactive {
            let _ = write!(out, "{}> ", a.engine);
            let _ = out.flush();
        }
        let mut line = String::new();
        let n = stdin
            .lock()
            .read_line(&mut line)
            .map_err(|e| Error::io("reading the shell's input", e))?;
        if n == 0 {
            break;
        }
        match command(engine.as_ref(), &line, &mut out) {
            Ok(true) => {}
            Ok(false) => break,
            // a refused command is reported and the shell goes on
            Err(e) => {
                let _ = writeln!(out, "error: {e}");
            }
        }
    }
    engine
        .close()
        .map_err(|e| Error::engine(format!("closing {}", a.engine), e))
}
