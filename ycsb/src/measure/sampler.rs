//! The timeline: a background thread samples the client threads' live counters, the
//! process's CPU and I/O and the data disk's counters once a second into the schema's
//! [`Sample`]s, and hands each to a tick (the binary's progress output).

use crate::error::{Error, Result};
use crate::measure::recorder::{KINDS, Slot, new_interval_hist};
use crate::measure::watch::{Reader, Watch};
use crate::procfs::{diskstats, pressure, proc_io, steal, usage};
use crate::workload::OpKind;
use hdrhistogram::Histogram;
use kvtb_schema::{IntervalLatency, Sample};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Samples the live counters once a second until stopped.
pub struct Sampler {
    /// The client threads' counters: a list only ever appended to, holding no engine
    /// state, so a poisoned lock is taken over (`kvapi::sync::lock_handoff`).
    slots: Arc<Mutex<Vec<Arc<Slot>>>>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Vec<Sample>>>,
}

#[derive(Default, Clone, Copy)]
struct Totals {
    ops: [u64; KINDS],
    errors: u64,
    latency_ns: u64,
}

fn totals(slots: &[Arc<Slot>]) -> Totals {
    let mut t = Totals::default();
    for s in slots {
        for i in 0..KINDS {
            t.ops[i] += s.ops[i].load(Ordering::Relaxed);
        }
        t.errors += s.errors.load(Ordering::Relaxed);
        t.latency_ns += s.latency_ns.load(Ordering::Relaxed);
    }
    t
}

/// Operations a slot has recorded so far, all kinds.
fn slot_ops(s: &Slot) -> u64 {
    s.ops.iter().map(|o| o.load(Ordering::Relaxed)).sum()
}

/// The longest the sampler waits for a busy thread to hand its histograms over.
const HAND_OVER_WAIT: Duration = Duration::from_millis(50);

/// Moves every client thread to interval `epoch` and gathers the histograms of the
/// interval that ends: each thread hands its own over at its next operation, so the
/// sampler waits for the threads that recorded operations in the interval (an idle
/// thread has nothing to hand), up to [`HAND_OVER_WAIT`]: on a busy machine a thread
/// may not run for milliseconds. `seen` holds each slot's operation count at the
/// previous interval's end.
fn interval_latency(
    slots: &Mutex<Vec<Arc<Slot>>>,
    epoch: u64,
    seen: &mut Vec<u64>,
) -> BTreeMap<String, IntervalLatency> {
    let slots: Vec<Arc<Slot>> = kvapi::sync::lock_handoff(slots).clone();
    seen.resize(slots.len(), 0);
    let now_ops: Vec<u64> = slots.iter().map(|s| slot_ops(s)).collect();
    for s in &slots {
        s.epoch.store(epoch, Ordering::Relaxed);
    }
    let busy: Vec<&Arc<Slot>> = slots
        .iter()
        .zip(seen.iter())
        .zip(&now_ops)
        .filter(|((_, was), now)| *now != *was)
        .map(|((s, _), _)| s)
        .collect();
    *seen = now_ops;
    let waited = Instant::now();
    std::thread::sleep(Duration::from_millis(2));
    while waited.elapsed() < HAND_OVER_WAIT
        && busy
            .iter()
            .any(|s| s.handed_epoch.load(Ordering::Acquire) < epoch)
    {
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut merged: Vec<Option<Histogram<u64>>> = (0..KINDS).map(|_| None).collect();
    for s in &slots {
        let handed = std::mem::take(&mut *kvapi::sync::lock_handoff(&s.handed));
        for (i, h) in handed {
            let m = merged[i].get_or_insert_with(new_interval_hist);
            // same bounds: adding cannot fail
            let _ = m.add(&h);
        }
    }
    let us = |ns: u64| ns as f64 / 1000.0;
    OpKind::ALL
        .iter()
        .filter_map(|k| {
            let h = merged[k.index()].as_ref().filter(|h| !h.is_empty())?;
            Some((
                k.ycsb_name().to_string(),
                IntervalLatency {
                    count: h.len(),
                    min_us: us(h.min()),
                    max_us: us(h.max()),
                    avg_us: h.mean() / 1000.0,
                    p50_us: us(h.value_at_quantile(0.5)),
                    p90_us: us(h.value_at_quantile(0.9)),
                    p99_us: us(h.value_at_quantile(0.99)),
                    p999_us: us(h.value_at_quantile(0.999)),
                    p9999_us: us(h.value_at_quantile(0.9999)),
                },
            ))
        })
        .collect()
}

/// What the sampler calls each second with the latest sample (status lines).
pub type Tick = Box<dyn FnMut(&Sample) + Send>;

impl Sampler {
    /// Samples every second from `start`; `device` names the block device whose
    /// /proc/diskstats counters join each sample, `watch` the engine whose memory and
    /// cache hit ratio join it.
    pub fn start(
        start: Instant,
        warmup_until: Instant,
        device: Option<String>,
        watch: Option<Arc<Watch>>,
        mut tick: Tick,
    ) -> Result<Sampler> {
        let slots: Arc<Mutex<Vec<Arc<Slot>>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (s2, stop2) = (slots.clone(), stop.clone());
        let handle = std::thread::Builder::new()
            .name("sampler".into())
            .spawn(move || {
                let mut out = Vec::new();
                let mut prev = Totals::default();
                let mut prev_use = usage();
                let mut prev_steal = steal();
                let mut prev_psi = pressure();
                let mut prev_io = proc_io();
                let mut prev_disk = device.as_deref().and_then(diskstats);
                let mut prev_t = start;
                let mut reader = watch.map(Reader::new);
                let mut n = 1u32;
                let mut seen = Vec::new();
                loop {
                    let due = start + Duration::from_secs(n as u64);
                    // wake at least every 50 ms to notice a stop
                    while Instant::now() < due && !stop2.load(Ordering::Relaxed) {
                        std::thread::sleep((due - Instant::now()).min(Duration::from_millis(50)));
                    }
                    let stopping = stop2.load(Ordering::Relaxed);
                    let latency = interval_latency(&s2, n as u64, &mut seen);
                    let now = Instant::now();
                    let cur = totals(&kvapi::sync::lock_handoff(&s2));
                    let used = usage();
                    let stolen = steal();
                    let psi = pressure();
                    let io = proc_io();
                    let disk = device.as_deref().and_then(diskstats);
                    let dd = disk.zip(prev_disk);
                    let dt = now.duration_since(prev_t).as_secs_f64();
                    let mut ops = BTreeMap::new();
                    let mut total = 0;
                    for k in OpKind::ALL {
                        let d = cur.ops[k.index()] - prev.ops[k.index()];
                        if d > 0 {
                            ops.insert(k.ycsb_name().to_string(), d);
                        }
                        total += d;
                    }
                    let lat = cur.latency_ns - prev.latency_ns;
                    let mut sample = Sample {
                        t: now.duration_since(start).as_secs_f64(),
                        warmup: now < warmup_until,
                        ops,
                        total_ops: total,
                        ops_per_sec: if dt > 0.0 { total as f64 / dt } else { 0.0 },
                        errors: cur.errors - prev.errors,
                        avg_latency_us: if total > 0 {
                            lat as f64 / total as f64 / 1000.0
                        } else {
                            0.0
                        },
                        cpu_user_s: (used.user.saturating_sub(prev_use.user)).as_secs_f64(),
                        cpu_sys_s: (used.system.saturating_sub(prev_use.system)).as_secs_f64(),
                        major_faults: Some(used.major_faults.saturating_sub(prev_use.major_faults)),
                        steal_s: stolen
                            .zip(prev_steal)
                            .map(|(a, b)| a.saturating_sub(b).as_secs_f64()),
                        cpu_pressure_s: psi
                            .0
                            .zip(prev_psi.0)
                            .map(|(a, b)| a.saturating_sub(b).as_secs_f64()),
                        memory_pressure_s: psi
                            .1
                            .zip(prev_psi.1)
                            .map(|(a, b)| a.saturating_sub(b).as_secs_f64()),
                        proc_read_bytes: io.zip(prev_io).map(|(a, b)| a.0.saturating_sub(b.0)),
                        proc_write_bytes: io.zip(prev_io).map(|(a, b)| a.1.saturating_sub(b.1)),
                        dev_read_iops: dd
                            .map(|(a, b)| a.reads.saturating_sub(b.reads) as f64 / dt.max(1e-9)),
                        dev_write_iops: dd
                            .map(|(a, b)| a.writes.saturating_sub(b.writes) as f64 / dt.max(1e-9)),
                        dev_read_bytes: dd.map(|(a, b)| a.read_bytes.saturating_sub(b.read_bytes)),
                        dev_write_bytes: dd
                            .map(|(a, b)| a.write_bytes.saturating_sub(b.write_bytes)),
                        dev_util: dd.map(|(a, b)| {
                            (a.io_ticks_ms.saturating_sub(b.io_ticks_ms) as f64
                                / 1000.0
                                / dt.max(1e-9))
                            .min(1.0)
                        }),
                        latency,
                        ..Sample::default()
                    };
                    if let Some(r) = reader.as_mut() {
                        r.fill(&mut sample);
                    }
                    // a final partial interval shorter than 100 ms adds only noise
                    if !stopping || dt > 0.1 {
                        tick(&sample);
                        out.push(sample);
                    }
                    if stopping {
                        return out;
                    }
                    prev = cur;
                    prev_use = used;
                    prev_steal = stolen;
                    prev_psi = psi;
                    prev_io = io;
                    prev_disk = disk;
                    prev_t = now;
                    n += 1;
                }
            })
            .map_err(|e| Error::io("starting the sampler thread", e))?;
        Ok(Sampler {
            slots,
            stop,
            handle: Some(handle),
        })
    }

    /// A live-counter slot for a new client thread.
    pub fn slot(&self) -> Arc<Slot> {
        let s = Arc::new(Slot::default());
        kvapi::sync::lock_handoff(&self.slots).push(s.clone());
        s
    }

    /// Stops sampling and returns the timeline.
    pub fn finish(mut self) -> Vec<Sample> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .map(|h| h.join().unwrap_or_default())
            .unwrap_or_default()
    }
}
