//! The closed loop: client threads that each issue one operation at a time. The
//! threads are started, given where to record and joined here, for every phase; and
//! here it is decided how a phase is driven.

use super::phase::Measured;
use crate::error::{Error, Result};
use crate::measure::{Record, Recorder, Shared};
use kvapi::Engine;
use kvtb_schema::Driving;
use std::sync::{Arc, Mutex};

/// How a phase is driven.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    /// One injector with this many requests in flight, through the engine's native
    /// asynchronous path (or the thread-pool adapter, when asked for).
    Injector(usize),
    /// This many closed-loop client threads.
    Threads(usize),
}

/// The mode for `d`: `--qd N` is one injector where the engine has a native
/// asynchronous path, and N closed-loop client threads where it has not (each
/// engine in its best mode at the same requests in flight: the thread-pool adapter
/// costs a thread hop per request, up to half the throughput of an engine serving
/// from memory, see DESIGN.md), unless `--adapter pool` asks for the adapter.
/// `d.native_async` (set once the engine is open, kept for the driver's null-engine
/// calibration) decides where it is known.
pub(super) fn mode(engine: &Arc<dyn Engine>, d: &Driving) -> Mode {
    let Some(qd) = d.queue_depth else {
        return Mode::Threads(d.threads.max(1));
    };
    let native = d
        .native_async
        .unwrap_or_else(|| engine.clone().native_async().is_some());
    if native || d.adapter.as_deref() == Some("pool") {
        Mode::Injector(qd.max(1))
    } else {
        Mode::Threads(qd.max(1))
    }
}

/// `d` with whether the engine has a native asynchronous path filled in (at `--qd`),
/// so that the driver's calibration on the null engine drives it the same way.
pub(super) fn with_native(engine: &Arc<dyn Engine>, d: &Driving) -> Driving {
    let mut d = d.clone();
    if d.queue_depth.is_some() && d.native_async.is_none() {
        d.native_async = Some(engine.clone().native_async().is_some());
    }
    d
}

/// Recorders for `threads` client threads: one each up to the number of cores, then
/// shared (a thread records into recorder `thread % recorders`).
pub fn recorders_for(threads: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    threads.clamp(1, cores.max(1))
}

/// Runs `body(thread, recorder)` on `threads` client threads (at least one), each
/// recording on a recorder of its own or, beyond [`recorders_for`], one it shares, and
/// merges what they measured.
pub(super) fn fan_out<F>(threads: usize, m: &Measured<'_>, body: F) -> Result<Recorder>
where
    F: Fn(usize, &mut dyn Record) + Sync,
{
    let threads = threads.max(1);
    let from = m.clock.measure_from;
    let n = recorders_for(threads);
    let shared: Vec<Mutex<Recorder>> = if n < threads {
        (0..n)
            .map(|_| Mutex::new(Recorder::new(m.slot(), from)))
            .collect()
    } else {
        Vec::new()
    };
    let owned = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (body, cpu, shared) = (&body, &m.driver_cpu, &shared);
                let slot = shared.is_empty().then(|| m.slot());
                s.spawn(move || {
                    cpu.track(|| match slot {
                        Some(slot) => {
                            let mut rec = Recorder::new(slot, from);
                            body(t, &mut rec);
                            rec.flush_interval();
                            Some(rec)
                        }
                        None => {
                            body(t, &mut Shared(&shared[t % shared.len()]));
                            None
                        }
                    })
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| Error::failed("a client thread panicked"))
            })
            .collect::<Result<Vec<Option<Recorder>>>>()
    })?;
    let mut all = owned
        .into_iter()
        .flatten()
        .chain(shared.into_iter().map(|r| {
            let mut rec = r
                .into_inner()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            rec.flush_interval();
            rec
        }));
    let mut merged = all
        .next()
        .ok_or_else(|| Error::failed("no client thread ran"))?;
    for rec in all {
        merged.merge(&rec);
    }
    Ok(merged)
}

#[cfg(test)]
#[path = "closed_loop_tests.rs"]
mod tests;
