//! Measurement: HDR histograms per operation kind (nanoseconds internally), status
//! counts, and a per-second timeline of throughput, latency, process CPU and process
//! I/O sampled by a background thread from cheap per-thread counters.

use crate::workload::OpKind;
use base64::Engine as _;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const KINDS: usize = OpKind::ALL.len();
/// Latencies up to one hour are recorded exactly (3 significant digits); longer ones
/// saturate at one hour.
const MAX_NS: u64 = 3_600_000_000_000;

fn new_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_NS, 3).expect("valid histogram bounds")
}

/// The outcome of one operation, as counted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    NotFound,
    /// An engine error, by kind (`IO_ERROR`, `BAD_REQUEST`, ...).
    Error(&'static str),
    /// A read returned a value that is not what was written.
    Corrupt,
}

/// What one client thread (or injector) measured. Merged at the end of a run.
pub struct Recorder {
    actual: Vec<Histogram<u64>>,
    intended: Vec<Histogram<u64>>,
    queued: Vec<Histogram<u64>>,
    status: Vec<BTreeMap<String, u64>>,
    slot: Arc<Slot>,
    measuring_from: Instant,
    /// Bytes of keys and values returned to the driver (measured operations only).
    pub user_read_bytes: u64,
    /// Bytes of keys and values the driver wrote (measured operations only).
    pub user_write_bytes: u64,
    /// Whole operations measured (the parts of a read-modify-write are not counted).
    ops: u64,
    /// Whole operations measured that ended in an error or an unexpected value.
    errors: u64,
}

/// Per-thread live counters read by the sampler (one cache line pair each).
#[repr(align(128))]
#[derive(Default)]
pub struct Slot {
    ops: [AtomicU64; KINDS],
    errors: AtomicU64,
    latency_ns: AtomicU64,
}

impl Recorder {
    /// Operations that finish before `measuring_from` (warm-up) count in the
    /// timeline but not in the histograms.
    pub fn new(slot: Arc<Slot>, measuring_from: Instant) -> Recorder {
        Recorder {
            actual: (0..KINDS).map(|_| new_hist()).collect(),
            intended: (0..KINDS).map(|_| new_hist()).collect(),
            queued: (0..KINDS).map(|_| new_hist()).collect(),
            status: vec![BTreeMap::new(); KINDS],
            slot,
            measuring_from,
            user_read_bytes: 0,
            user_write_bytes: 0,
            ops: 0,
            errors: 0,
        }
    }

    /// Counts the user bytes an operation that ended at `end` moved.
    pub fn bytes(&mut self, end: Instant, read: u64, written: u64) {
        if end >= self.measuring_from {
            self.user_read_bytes += read;
            self.user_write_bytes += written;
        }
    }

    /// Records one operation. `intended` is when it should have started under a
    /// target rate (coordinated omission), `start` when it did.
    pub fn record(
        &mut self,
        kind: OpKind,
        intended: Option<Instant>,
        start: Instant,
        end: Instant,
        outcome: Outcome,
    ) {
        let ns = end.saturating_duration_since(start).as_nanos() as u64;
        self.slot.ops[kind.index()].fetch_add(1, Ordering::Relaxed);
        self.slot.latency_ns.fetch_add(ns, Ordering::Relaxed);
        let failed = !matches!(outcome, Outcome::Ok | Outcome::NotFound);
        if failed {
            self.slot.errors.fetch_add(1, Ordering::Relaxed);
        }
        if end >= self.measuring_from {
            self.ops += 1;
            self.errors += u64::from(failed);
        }
        self.record_part(kind, intended, start, end, outcome);
    }

    /// Records one part of an operation (the read or the update of a
    /// read-modify-write): its latency and status, as YCSB reports them, without
    /// counting it as an operation in the throughput.
    pub fn record_part(
        &mut self,
        kind: OpKind,
        intended: Option<Instant>,
        start: Instant,
        end: Instant,
        outcome: Outcome,
    ) {
        let i = kind.index();
        let ns = end.saturating_duration_since(start).as_nanos() as u64;
        if end < self.measuring_from {
            return;
        }
        self.actual[i].saturating_record(ns.max(1));
        if let Some(t0) = intended {
            let ins = end.saturating_duration_since(t0).as_nanos() as u64;
            self.intended[i].saturating_record(ins.max(1));
            let q = start.saturating_duration_since(t0).as_nanos() as u64;
            self.queued[i].saturating_record(q.max(1));
        }
        let name = match outcome {
            Outcome::Ok => "OK",
            Outcome::NotFound => "NOT_FOUND",
            Outcome::Error(k) => k,
            Outcome::Corrupt => "UNEXPECTED_VALUE",
        };
        *self.status[i].entry(name.to_string()).or_insert(0) += 1;
    }

    /// Adds another recorder's measurements to this one.
    pub fn merge(&mut self, other: &Recorder) {
        self.ops += other.ops;
        self.errors += other.errors;
        self.user_read_bytes += other.user_read_bytes;
        self.user_write_bytes += other.user_write_bytes;
        for i in 0..KINDS {
            self.actual[i].add(&other.actual[i]).expect("same bounds");
            self.intended[i]
                .add(&other.intended[i])
                .expect("same bounds");
            self.queued[i].add(&other.queued[i]).expect("same bounds");
            for (k, v) in &other.status[i] {
                *self.status[i].entry(k.clone()).or_insert(0) += v;
            }
        }
    }

    /// Per-kind summaries of the kinds that ran.
    pub fn summaries(&self) -> Vec<OpSummary> {
        let mut out = Vec::new();
        for kind in OpKind::ALL {
            let i = kind.index();
            let h = &self.actual[i];
            if h.is_empty() {
                continue;
            }
            out.push(OpSummary::from_hist(
                kind.ycsb_name().to_string(),
                h,
                self.status[i].clone(),
            ));
            // Under a target rate: latency from the scheduled start ("intended",
            // coordinated omission corrected) and the queueing delay before the start.
            let ih = &self.intended[i];
            if !ih.is_empty() {
                out.push(OpSummary::from_hist(
                    format!("Intended-{}", kind.ycsb_name()),
                    ih,
                    BTreeMap::new(),
                ));
                out.push(OpSummary::from_hist(
                    format!("Queue-{}", kind.ycsb_name()),
                    &self.queued[i],
                    BTreeMap::new(),
                ));
            }
        }
        out
    }

    /// Total measured operations.
    pub fn measured_ops(&self) -> u64 {
        self.ops
    }

    /// Measured operations that failed or returned an unexpected value.
    pub fn error_count(&self) -> u64 {
        self.errors
    }
}

/// Latency summary of one operation kind, in microseconds.
#[derive(Clone, Debug, Serialize)]
pub struct OpSummary {
    pub name: String,
    pub operations: u64,
    pub average_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p95_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub p9999_us: f64,
    /// Count per status (`OK`, `NOT_FOUND`, error kinds, `UNEXPECTED_VALUE`).
    pub status: BTreeMap<String, u64>,
    /// The histogram (nanoseconds), HdrHistogram V2 deflate encoding in base64, so
    /// runs can be merged later.
    pub histogram_v2_base64: String,
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

impl OpSummary {
    fn from_hist(name: String, h: &Histogram<u64>, status: BTreeMap<String, u64>) -> OpSummary {
        let mut buf = Vec::new();
        V2DeflateSerializer::new()
            .serialize(h, &mut buf)
            .expect("serialising a histogram into memory");
        OpSummary {
            name,
            operations: h.len(),
            average_us: h.mean() / 1000.0,
            min_us: us(h.min()),
            max_us: us(h.max()),
            p50_us: us(h.value_at_quantile(0.5)),
            p90_us: us(h.value_at_quantile(0.9)),
            p95_us: us(h.value_at_quantile(0.95)),
            p99_us: us(h.value_at_quantile(0.99)),
            p999_us: us(h.value_at_quantile(0.999)),
            p9999_us: us(h.value_at_quantile(0.9999)),
            status,
            histogram_v2_base64: base64::engine::general_purpose::STANDARD.encode(&buf),
        }
    }
}

/// CPU time of this process (user, system), from getrusage.
pub fn cpu_times() -> (Duration, Duration) {
    // SAFETY: getrusage writes into the zeroed struct we own; RUSAGE_SELF is valid.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

/// Bytes this process read from and wrote to storage (/proc/self/io `read_bytes`,
/// `write_bytes`); `None` where the kernel does not expose them.
pub fn proc_io() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/self/io").ok()?;
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    Some((field("read_bytes:")?, field("write_bytes:")?))
}

/// One second of a run.
#[derive(Clone, Debug, Serialize)]
pub struct Sample {
    /// Seconds since the phase started (end of this interval).
    pub t: f64,
    /// Whether the interval ended inside the warm-up.
    pub warmup: bool,
    /// Operations completed in the interval, per YCSB op name.
    pub ops: BTreeMap<String, u64>,
    pub total_ops: u64,
    pub ops_per_sec: f64,
    pub errors: u64,
    pub avg_latency_us: f64,
    /// CPU seconds used by the process in the interval (user, system).
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    /// Bytes the process read from / wrote to storage in the interval.
    pub proc_read_bytes: Option<u64>,
    pub proc_write_bytes: Option<u64>,
    /// The data directory's block device in the interval (whole-device counters).
    pub dev_read_iops: Option<f64>,
    pub dev_write_iops: Option<f64>,
    pub dev_read_bytes: Option<u64>,
    pub dev_write_bytes: Option<u64>,
    /// Fraction of the interval the device had I/O in flight.
    pub dev_util: Option<f64>,
}

/// Samples the live counters once a second until stopped.
pub struct Sampler {
    slots: Arc<std::sync::Mutex<Vec<Arc<Slot>>>>,
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

/// What the sampler calls each second with the latest sample (status lines).
pub type Tick = Box<dyn FnMut(&Sample) + Send>;

impl Sampler {
    /// Samples every second from `start`; `device` names the block device whose
    /// /proc/diskstats counters join each sample.
    pub fn start(
        start: Instant,
        warmup_until: Instant,
        device: Option<String>,
        mut tick: Tick,
    ) -> Sampler {
        let slots: Arc<std::sync::Mutex<Vec<Arc<Slot>>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (s2, stop2) = (slots.clone(), stop.clone());
        let handle = std::thread::Builder::new()
            .name("sampler".into())
            .spawn(move || {
                let mut out = Vec::new();
                let mut prev = Totals::default();
                let mut prev_cpu = cpu_times();
                let mut prev_io = proc_io();
                let mut prev_disk = device.as_deref().and_then(crate::device::diskstats);
                let mut prev_t = start;
                let mut n = 1u32;
                loop {
                    let due = start + Duration::from_secs(n as u64);
                    // wake at least every 50 ms to notice a stop
                    while Instant::now() < due && !stop2.load(Ordering::Relaxed) {
                        std::thread::sleep((due - Instant::now()).min(Duration::from_millis(50)));
                    }
                    let stopping = stop2.load(Ordering::Relaxed);
                    let now = Instant::now();
                    let cur = totals(&s2.lock().expect("slots"));
                    let cpu = cpu_times();
                    let io = proc_io();
                    let disk = device.as_deref().and_then(crate::device::diskstats);
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
                    let sample = Sample {
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
                        cpu_user_s: (cpu.0.saturating_sub(prev_cpu.0)).as_secs_f64(),
                        cpu_sys_s: (cpu.1.saturating_sub(prev_cpu.1)).as_secs_f64(),
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
                    };
                    // a final partial interval shorter than 100 ms adds only noise
                    if !stopping || dt > 0.1 {
                        tick(&sample);
                        out.push(sample);
                    }
                    if stopping {
                        return out;
                    }
                    prev = cur;
                    prev_cpu = cpu;
                    prev_io = io;
                    prev_disk = disk;
                    prev_t = now;
                    n += 1;
                }
            })
            .expect("spawning the sampler");
        Sampler {
            slots,
            stop,
            handle: Some(handle),
        }
    }

    /// A live-counter slot for a new client thread.
    pub fn slot(&self) -> Arc<Slot> {
        let s = Arc::new(Slot::default());
        self.slots.lock().expect("slots").push(s.clone());
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorder_counts_statuses_and_skips_warmup() {
        let slot = Arc::new(Slot::default());
        let t0 = Instant::now();
        let mut r = Recorder::new(slot.clone(), t0 + Duration::from_millis(10));
        r.record(
            OpKind::Read,
            None,
            t0,
            t0 + Duration::from_micros(5),
            Outcome::Ok,
        );
        let t1 = t0 + Duration::from_millis(20);
        r.record(
            OpKind::Read,
            None,
            t1,
            t1 + Duration::from_micros(100),
            Outcome::Ok,
        );
        r.record(
            OpKind::Read,
            None,
            t1,
            t1 + Duration::from_micros(300),
            Outcome::NotFound,
        );
        r.record(
            OpKind::Update,
            Some(t1),
            t1 + Duration::from_millis(1),
            t1 + Duration::from_millis(2),
            Outcome::Error("IO_ERROR"),
        );
        assert_eq!(
            slot.ops[OpKind::Read.index()].load(Ordering::Relaxed),
            3,
            "timeline counts warm-up too"
        );
        assert_eq!(r.measured_ops(), 3);
        // the parts of a read-modify-write are reported but not counted as operations
        r.record_part(
            OpKind::Read,
            None,
            t1,
            t1 + Duration::from_micros(200),
            Outcome::Error("IO_ERROR"),
        );
        assert_eq!(r.measured_ops(), 3);
        assert_eq!(r.error_count(), 1);
        let s = r.summaries();
        let read = s.iter().find(|s| s.name == "READ").unwrap();
        assert_eq!(
            read.operations, 3,
            "the part is reported under its own kind"
        );
        assert_eq!(read.status["IO_ERROR"], 1);
        assert_eq!(read.status["OK"], 1);
        assert_eq!(read.status["NOT_FOUND"], 1);
        assert!((99.0..=101.0).contains(&read.min_us), "{}", read.min_us);
        let intended = s.iter().find(|s| s.name == "Intended-UPDATE").unwrap();
        assert!(
            intended.p50_us > 1900.0,
            "intended latency counts the delay before the start"
        );
        let update = s.iter().find(|s| s.name == "UPDATE").unwrap();
        assert!(update.p50_us < 1100.0);
    }
}
