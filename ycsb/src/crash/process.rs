//! A child process of the audit: its standard output and standard error read by
//! threads (so a full pipe never blocks it), killed with SIGKILL, and how it ended.

use crate::error::{Error, Result};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

/// Lines of the child's standard error kept for the report.
const STDERR_LINES: usize = 20;
/// How long the child's pipes may stay open after it died (a process it started
/// would hold them).
const DRAIN: Duration = Duration::from_secs(30);

/// How a child ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// By the parent's SIGKILL: the only end the audit accepts.
    Killed,
    /// It exited by itself with this code.
    Exited(i32),
    /// Another signal (a crash: SIGSEGV, SIGABRT from a panic that aborts, ...).
    Signal(i32),
}

impl std::fmt::Display for End {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            End::Killed => f.write_str("killed by SIGKILL"),
            End::Exited(c) => write!(f, "exited by itself with code {c}"),
            End::Signal(s) => write!(f, "ended by signal {s}"),
        }
    }
}

/// What a dead child left.
pub struct Ended {
    pub end: End,
    /// Every line of its standard output, in order.
    pub lines: Vec<String>,
    /// When each line reached the parent.
    pub times: Vec<Instant>,
    /// The last lines of its standard error.
    pub stderr: Vec<String>,
}

impl Ended {
    /// When the first line `word` reached the parent.
    pub fn time_of(&self, word: &str) -> Option<Instant> {
        let i = self.lines.iter().position(|l| l == word)?;
        self.times.get(i).copied()
    }
}

/// A running child.
pub struct Running {
    child: Child,
    out: Receiver<(Instant, String)>,
    err: Receiver<(Instant, String)>,
    lines: Vec<String>,
    times: Vec<Instant>,
}

fn read_lines(r: impl Read + Send + 'static, what: &str) -> Result<Receiver<(Instant, String)>> {
    let (tx, rx) = channel();
    std::thread::Builder::new()
        .name(format!("crash-{what}"))
        .spawn(move || {
            let mut r = BufReader::new(r);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match r.read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let l = String::from_utf8_lossy(&buf);
                        let l = l.trim_end_matches(['\n', '\r']).to_string();
                        if tx.send((Instant::now(), l)).is_err() {
                            break;
                        }
                    }
                }
            }
        })
        .map_err(|e| Error::io(format!("starting the reader of the child's {what}"), e))?;
    Ok(rx)
}

impl Running {
    /// Starts `cmd` with its standard output and error piped to reader threads.
    pub fn spawn(mut cmd: Command) -> Result<Running> {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .map_err(|e| Error::io(format!("starting the child {cmd:?}"), e))?;
        let (Some(o), Some(e)) = (child.stdout.take(), child.stderr.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::failed("the child's output is not a pipe"));
        };
        Ok(Running {
            child,
            out: read_lines(o, "stdout")?,
            err: read_lines(e, "stderr")?,
            lines: Vec::new(),
            times: Vec::new(),
        })
    }

    /// Waits up to `timeout` for a line that is `word` or starts with `word `: true
    /// when it came, false when the child's output ended or the time ran out.
    pub fn wait_for(&mut self, word: &str, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.out.recv_timeout(left) {
                Ok((t, l)) => {
                    let hit = l == word || l.strip_prefix(word).is_some_and(|r| r.starts_with(' '));
                    self.lines.push(l);
                    self.times.push(t);
                    if hit {
                        return true;
                    }
                }
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return false,
            }
        }
    }

    /// Whether the child still runs.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Sleeps `d`, or less when the child ends before: true when it still runs. A
    /// writer that fails (a full disk, an engine error) is reported at once rather
    /// than after the whole kill delay.
    pub fn sleep_while_alive(&mut self, d: Duration) -> bool {
        let deadline = Instant::now() + d;
        loop {
            if !self.alive() {
                return false;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return true;
            }
            std::thread::sleep(left.min(Duration::from_millis(5)));
        }
    }

    /// Kills the child with SIGKILL (a child already dead is only reaped), waits for
    /// it, and reads what it left on its pipes.
    pub fn kill(mut self) -> Result<Ended> {
        let _ = self.child.kill();
        let status = self
            .child
            .wait()
            .map_err(|e| Error::io("waiting for the child", e))?;
        let end = match (status.code(), status.signal()) {
            (_, Some(9)) => End::Killed,
            (_, Some(s)) => End::Signal(s),
            (Some(c), None) => End::Exited(c),
            (None, None) => End::Signal(0),
        };
        let deadline = Instant::now() + DRAIN;
        loop {
            match self
                .out
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok((t, l)) => {
                    self.lines.push(l);
                    self.times.push(t);
                }
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(Error::failed(
                        "the child's standard output stayed open after it died (held by a process it started?)",
                    ));
                }
            }
        }
        let mut stderr = VecDeque::new();
        while let Ok((_, l)) = self
            .err
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            if stderr.len() == STDERR_LINES {
                stderr.pop_front();
            }
            stderr.push_back(l);
        }
        Ok(Ended {
            end,
            lines: self.lines,
            times: self.times,
            stderr: stderr.into(),
        })
    }
}
