//! The two children of the audit: the writer it kills (`writer`: client threads with
//! blocking calls and an injector keeping requests in flight through the asynchronous
//! path, all writing the plan's writes and reporting them on the pipe), and the child
//! that only reopens the engine, to be killed during recovery (`recover`).
//!
//! Neither ends by itself while all is well: the writer writes until it is killed, and
//! returns an error (its process then exits 1 with the message) as soon as a write
//! fails, the pipe breaks or any thread panics; the parent fails a cycle whose child
//! ended any other way than by its SIGKILL.

use super::plan::{Op, Plan, Write, show, version};
use super::protocol::{OPENED, OPENING, Pipe, READY};
use crate::error::{Error, Result};
use crate::value;
use kvapi::{AsyncEngine, Engine, Request};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How the writer drives the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Drive {
    /// Client threads issuing blocking calls.
    pub writers: usize,
    /// Requests kept in flight through `kvapi::async_path` from one injector thread
    /// (0: none).
    pub qd: usize,
}

static PANICS: AtomicUsize = AtomicUsize::new(0);

/// Counts panics on every thread of the process, engine threads included, after the
/// usual report.
fn count_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            prev(info);
            PANICS.fetch_add(1, Ordering::SeqCst);
        }));
    });
}

struct Shared {
    pipe: Pipe,
    plan: Plan,
    cycle: u64,
    next: AtomicU64,
    stop: AtomicBool,
    failure: Mutex<Option<Error>>,
}

impl Shared {
    /// The next write of the plan.
    fn take(&self) -> Result<Write> {
        let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        if n > u32::MAX as u64 {
            return Err(Error::failed("more than 2^32 writes in one cycle"));
        }
        Ok(self.plan.write(version(self.cycle, n)))
    }

    /// Records the first failure and stops every thread.
    fn fail(&self, e: Error) {
        let mut f = kvapi::sync::lock_handoff(&self.failure);
        if f.is_none() {
            *f = Some(e);
        }
        self.stop.store(true, Ordering::SeqCst);
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// One client thread: announce, call, acknowledge, until stopped.
fn blocking_writer(s: &Shared, engine: &dyn Engine) -> Result<()> {
    let mut buf = Vec::new();
    while !s.stopped() {
        let w = s.take()?;
        let key = Plan::key_name(w.key);
        s.pipe.pending(&w, &key)?;
        match w.op {
            Op::Put { len } => {
                value::make_into(key.as_bytes(), w.version, len, &mut buf);
                engine.update(key.as_bytes(), &buf)
            }
            Op::Delete => engine.delete(key.as_bytes()),
        }
        .map_err(|e| Error::engine(format!("write {} of {key}", show(w.version)), e))?;
        s.pipe.acked(w.version)?;
    }
    Ok(())
}

/// The injector: keeps `qd` writes in flight; each completion acknowledges its write
/// and lets the next one go.
fn injector(s: &Arc<Shared>, path: &dyn AsyncEngine, qd: usize) -> Result<()> {
    let (slot, slots) = channel::<()>();
    for _ in 0..qd {
        let _ = slot.send(());
    }
    while !s.stopped() {
        match slots.recv_timeout(Duration::from_millis(100)) {
            Ok(()) => {}
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => break,
        }
        let w = s.take()?;
        let key = Plan::key_name(w.key);
        s.pipe.pending(&w, &key)?;
        let request = match w.op {
            Op::Put { len } => Request::Update {
                value: value::make(key.as_bytes(), w.version, len),
                key: key.into_bytes(),
            },
            Op::Delete => Request::Delete {
                key: key.into_bytes(),
            },
        };
        let (s2, slot, v) = (s.clone(), slot.clone(), w.version);
        path.submit(
            request,
            Box::new(move |r| {
                let r = r
                    .map_err(|e| Error::engine(format!("asynchronous write {}", show(v)), e))
                    .and_then(|_| s2.pipe.acked(v));
                match r {
                    Ok(()) => {
                        let _ = slot.send(());
                    }
                    Err(e) => s2.fail(e),
                }
            }),
        );
    }
    Ok(())
}

/// The writer of cycle `cycle`: reports `READY <path>` (the asynchronous path: none,
/// native or pool), then writes the plan's writes with `drive` until killed. Returns
/// only with the error that stopped it.
pub fn writer(
    engine: Arc<dyn Engine>,
    plan: Plan,
    cycle: u64,
    drive: Drive,
    out: Box<dyn std::io::Write + Send>,
) -> Result<()> {
    count_panics();
    let path = match drive.qd {
        0 => None,
        qd => Some(
            kvapi::async_path(engine.clone(), qd)
                .map_err(|e| Error::engine("the asynchronous path", e))?,
        ),
    };
    let shared = Arc::new(Shared {
        pipe: Pipe::new(out),
        plan,
        cycle,
        next: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        failure: Mutex::new(None),
    });
    let kind = match &path {
        None => "none",
        Some((_, true)) => "native",
        Some((_, false)) => "pool",
    };
    shared.pipe.line(&format!("{READY} {kind}"))?;
    for i in 0..drive.writers {
        let (s, e) = (shared.clone(), engine.clone());
        std::thread::Builder::new()
            .name(format!("crash-writer-{i}"))
            .spawn(move || {
                if let Err(err) = blocking_writer(&s, e.as_ref()) {
                    s.fail(err);
                }
            })
            .map_err(|e| Error::io("starting a writer thread", e))?;
    }
    if let Some((path, _)) = path {
        let s = shared.clone();
        let qd = drive.qd;
        std::thread::Builder::new()
            .name("crash-injector".into())
            .spawn(move || {
                if let Err(err) = injector(&s, path.as_ref(), qd) {
                    s.fail(err);
                }
            })
            .map_err(|e| Error::io("starting the injector thread", e))?;
    }
    loop {
        std::thread::sleep(Duration::from_millis(20));
        if PANICS.load(Ordering::SeqCst) > 0 {
            return Err(Error::failed(
                "a thread of the writer panicked (its message is above)",
            ));
        }
        if shared.stopped() {
            return Err(kvapi::sync::lock_handoff(&shared.failure)
                .take()
                .unwrap_or_else(|| Error::failed("the writer stopped")));
        }
    }
}

/// The recovering child: `OPENING`, the open (the engine's recovery), `OPENED`, then
/// it waits to be killed (an error after ten minutes, should the parent be gone).
pub fn recover(
    open: &dyn Fn() -> Result<Arc<dyn Engine>>,
    out: Box<dyn std::io::Write + Send>,
) -> Result<()> {
    count_panics();
    let pipe = Pipe::new(out);
    pipe.line(OPENING)?;
    let engine = open()?;
    pipe.line(OPENED)?;
    for _ in 0..6000 {
        std::thread::sleep(Duration::from_millis(100));
        if PANICS.load(Ordering::SeqCst) > 0 {
            return Err(Error::failed(
                "a thread of the recovering engine panicked (its message is above)",
            ));
        }
    }
    drop(engine);
    Err(Error::failed(
        "the recovering child was not killed within ten minutes",
    ))
}
