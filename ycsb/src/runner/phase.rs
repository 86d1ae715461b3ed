//! One phase being measured: its clock (start, end of the warm-up, time limit, stop),
//! the timeline sampler, the snapshot taken when the warm-up ends, and the schema's
//! [`Phase`] built from what the client threads recorded.

use super::driver_cost::DriverCpu;
use crate::device::{Snapshot, device_use};
use crate::error::{Error, Result};
use crate::measure::watch::memory_use;
use crate::measure::{Recorder, Sampler, Slot, Tick, Watch};
use crate::measure::{histogram_peak, reset_histogram_peak};
use crate::memory::{proc_mem, reset_peak};
use kvtb_schema::{Phase, Sample};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Progress output for a phase that starts: its label and its total operations when
/// known; the tick it returns sees every timeline sample.
pub type Progress = Arc<dyn Fn(&str, Option<u64>) -> Tick + Send + Sync>;

/// An error that stops a phase early without failing it (an acknowledged insert that
/// does not fit YCSB's window); the phase's result still counts what ran.
pub type Notice = Arc<dyn Fn(&Error) + Send + Sync>;

/// Where a phase runs and who hears of it: the binary supplies the output, the
/// library prints nothing.
#[derive(Clone, Default)]
pub struct Ctx {
    /// Progress output; `None`: quiet.
    pub progress: Option<Progress>,
    /// Told of errors that stop a phase early.
    pub notice: Option<Notice>,
    /// Kernel name of the block device under the data directory (e.g. `vda`).
    pub device: Option<String>,
    /// The engine's memory and cache, sampled with the timeline.
    pub watch: Option<Arc<Watch>>,
}

/// Decides, from each timeline sample as it comes, whether a phase has done its job
/// (a warm-up that reached a steady state) and may stop.
pub type StopWhen = Box<dyn FnMut(&Sample) -> bool + Send>;

impl Ctx {
    fn tick(&self, label: &str, total: Option<u64>) -> Tick {
        match &self.progress {
            Some(p) => p(label, total),
            None => Box::new(|_| {}),
        }
    }

    pub(super) fn notice(&self, e: &Error) {
        if let Some(n) = &self.notice {
            n(e);
        }
    }
}

/// The clock of a phase, shared by its client threads.
pub(super) struct Clock {
    pub(super) start: Instant,
    /// The end of the warm-up: operations that end before it are not measured.
    pub(super) measure_from: Instant,
    deadline: Option<Instant>,
    stop: Arc<AtomicBool>,
}

impl Clock {
    /// A phase starting now, measured after `warmup_s` for at most `max_time_s`.
    pub(super) fn new(warmup_s: f64, max_time_s: Option<f64>) -> Clock {
        let start = Instant::now();
        let warm = Duration::from_secs_f64(warmup_s);
        Clock {
            start,
            measure_from: start + warm,
            deadline: max_time_s.map(|s| start + warm + Duration::from_secs_f64(s)),
            stop: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Whether the phase is over: stopped, or past its time limit.
    pub(super) fn over(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
            || self.deadline.is_some_and(|d| Instant::now() >= d)
            || super::outcome::over_budget().is_some()
    }

    /// Ends the phase early.
    pub(super) fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Takes a [`Snapshot`] at the end of the warm-up, from whichever thread sees it.
pub(super) struct Mark {
    at: Instant,
    device: Option<String>,
    /// A hand-off slot holding no engine state (a snapshot is only ever put in whole).
    taken: Mutex<Option<Snapshot>>,
}

impl Mark {
    fn new(at: Instant, device: Option<String>) -> Mark {
        let m = Mark {
            at,
            device,
            taken: Mutex::new(None),
        };
        m.poll();
        m
    }

    /// Takes the snapshot if the warm-up is over and it is not taken yet.
    pub(super) fn poll(&self) {
        if Instant::now() >= self.at {
            let mut t = kvapi::sync::lock_handoff(&self.taken);
            if t.is_none() {
                *t = Some(Snapshot::take(self.device.as_deref()));
            }
        }
    }

    fn get(&self) -> Option<Snapshot> {
        *kvapi::sync::lock_handoff(&self.taken)
    }
}

/// Marks device counters that other processes took part in: the whole device moved
/// clearly more than this process read and wrote (/proc/self/io, which counts the
/// I/O of every thread of the process, io_uring's workers included).
fn flag_other_io(d: &mut kvtb_schema::DeviceUse, proc_bytes: Option<u64>) {
    let (Some(p), Some(r), Some(w)) = (proc_bytes, d.read_bytes, d.write_bytes) else {
        return;
    };
    let dev = r + w;
    let other = dev.saturating_sub(p);
    if other > (dev / 4).max(4 << 20) {
        d.note = format!(
            "OTHER I/O ON THE DEVICE: it moved {} MiB while this process read and wrote {} MiB, so its per-operation figures include other processes' I/O ({})",
            dev >> 20,
            p >> 20,
            d.note
        );
    }
}

/// A phase being measured.
pub(super) struct Measured<'a> {
    name: String,
    started_unix_ms: u64,
    pub(super) clock: Clock,
    sampler: Sampler,
    pub(super) mark: Mark,
    pub(super) ctx: &'a Ctx,
    /// The CPU time of the phase's driver threads.
    pub(super) driver_cpu: DriverCpu,
}

impl<'a> Measured<'a> {
    /// Starts measuring phase `name` on `clock`: progress under `label` for `total`
    /// operations, the timeline, the warm-up mark; `stop_when` may end the phase
    /// after any sample.
    pub(super) fn start(
        name: &str,
        label: &str,
        clock: Clock,
        total: Option<u64>,
        ctx: &'a Ctx,
        stop_when: Option<StopWhen>,
    ) -> Result<Measured<'a>> {
        let mut tick = ctx.tick(label, total);
        if let Some(mut done) = stop_when {
            let stop = clock.stop.clone();
            tick = Box::new(move |s| {
                tick(s);
                if done(s) {
                    stop.store(true, Ordering::Relaxed);
                }
            });
        }
        // the peak resident size measured at the end belongs to this phase
        if ctx.watch.is_some() {
            let _ = reset_peak();
            reset_histogram_peak();
        }
        let sampler = Sampler::start(
            clock.start,
            clock.measure_from,
            ctx.device.clone(),
            ctx.watch.clone(),
            tick,
        )?;
        let mark = Mark::new(clock.measure_from, ctx.device.clone());
        Ok(Measured {
            name: name.to_string(),
            started_unix_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0),
            clock,
            sampler,
            mark,
            ctx,
            driver_cpu: DriverCpu::default(),
        })
    }

    /// A live-counter slot for a new client thread (or the injector).
    pub(super) fn slot(&self) -> Arc<Slot> {
        self.sampler.slot()
    }

    /// Ends the phase now and builds its result from what was recorded.
    pub(super) fn finish(self, rec: Recorder) -> Phase {
        let end = Instant::now();
        self.mark.poll();
        let mark = self.mark.get();
        let timeline = self.sampler.finish();
        let memory = self.ctx.watch.as_ref().map(|w| {
            let peak = proc_mem().map(|m| m.peak_rss).unwrap_or(0);
            memory_use(w, &timeline, peak, histogram_peak())
        });
        let device = self.ctx.device.as_deref();
        let last = Snapshot::take(device);
        let secs = end
            .saturating_duration_since(self.clock.measure_from)
            .as_secs_f64();
        let ops = rec.measured_ops();
        let per_op = |x: f64| if ops > 0 { x * 1e6 / ops as f64 } else { 0.0 };
        // no mark: the warm-up never ended, nothing was measured
        let (u, s) = mark.map_or((0.0, 0.0), |m| {
            (
                last.cpu.0.saturating_sub(m.cpu.0).as_secs_f64(),
                last.cpu.1.saturating_sub(m.cpu.1).as_secs_f64(),
            )
        });
        let pio = mark.and_then(|m| m.proc_io).zip(last.proc_io);
        let proc_bytes = pio.map(|(a, b)| b.0.saturating_sub(a.0) + b.1.saturating_sub(a.1));
        let device = device
            .zip(mark.and_then(|m| m.disk))
            .zip(last.disk)
            .map(|((name, a), b)| {
                device_use(
                    name,
                    &a,
                    &b,
                    secs,
                    ops,
                    rec.user_read_bytes,
                    rec.user_write_bytes,
                )
            });
        let device = device.map(|mut d| {
            flag_other_io(&mut d, proc_bytes);
            d
        });
        Phase {
            phase: self.name,
            started_unix_ms: Some(self.started_unix_ms),
            runtime_ms: secs * 1000.0,
            operations: ops,
            throughput_ops_sec: if secs > 0.0 { ops as f64 / secs } else { 0.0 },
            errors: rec.error_count(),
            cpu_user_s: u,
            cpu_sys_s: s,
            cpu_us_per_op: per_op(u + s),
            cpu_user_us_per_op: Some(per_op(u)),
            cpu_sys_us_per_op: Some(per_op(s)),
            user_read_bytes: rec.user_read_bytes,
            user_write_bytes: rec.user_write_bytes,
            process_read_bytes: pio.map(|(a, b)| b.0.saturating_sub(a.0)),
            process_write_bytes: pio.map(|(a, b)| b.1.saturating_sub(a.1)),
            device,
            ceiling: None,
            ops: rec.summaries(),
            timeline,
            counters_before: BTreeMap::new(),
            counters_after: BTreeMap::new(),
            memory,
            warmup: None,
            driver_cpu_us_per_op: None,
        }
    }
}
