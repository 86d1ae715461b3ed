//! Runs the load and run phases against an engine: closed loop with N client threads
//! (optionally throttled to a target rate, YCSB's `-target`), or asynchronous with a
//! queue depth from one injector thread (the KVell way).

use crate::device::Snapshot;
use crate::donequeue::DoneQueue;
use crate::generator::AckCounter;
use crate::measure::{OpSummary, Outcome, Recorder, Sample, Sampler, Tick};
use crate::value;
use crate::workload::{Op, OpKind, OpStream, Workload};
use kvapi::{AsyncEngine, Engine, Reply, Request};
use serde::Serialize;
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How to drive the engine.
#[derive(Clone, Debug, Serialize)]
pub struct Driving {
    /// Client threads in closed-loop mode.
    pub threads: usize,
    /// Requests in flight from one injector thread in asynchronous mode.
    pub queue_depth: Option<usize>,
    /// Target rate in operations per second (all threads together).
    pub target_ops: Option<f64>,
    /// Arrivals at the target rate: `constant` (evenly spaced, YCSB's) or `poisson`
    /// (exponential gaps).
    pub arrival: String,
    /// Seconds at the start of the run phase excluded from the measurement.
    pub warmup_s: f64,
    /// Time limit of the run phase in seconds (YCSB's maxexecutiontime).
    pub max_time_s: Option<f64>,
    pub seed: u64,
    /// Whether the engine's native asynchronous path was used (async mode only).
    pub native_async: Option<bool>,
}

impl Driving {
    pub fn describe(&self) -> String {
        let mut s = match self.queue_depth {
            Some(qd) => format!(
                "async, {qd} requests in flight from 1 injector ({})",
                match self.native_async {
                    Some(true) => "engine's native async path",
                    Some(false) => "thread-pool adapter",
                    None => "native async path, else a thread-pool adapter",
                }
            ),
            None => format!("closed loop, {} client thread(s)", self.threads),
        };
        if let Some(t) = self.target_ops {
            s.push_str(&format!(", target {t} ops/s ({} arrivals)", self.arrival));
        }
        s
    }
}

/// Where a phase runs: progress output and the data directory's block device.
#[derive(Clone, Debug, Default)]
pub struct Ctx {
    pub progress: bool,
    /// Kernel name of the block device under the data directory (e.g. `vda`).
    pub device: Option<String>,
}

static FIRST_ERROR: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Records the message of the first failed operation (for the final error line) and
/// gives its kind, the status it is counted under.
fn note_error(e: &kvapi::Error) -> &'static str {
    FIRST_ERROR.get_or_init(|| e.to_string());
    e.kind()
}

/// The message of the first operation that failed in this process, if any.
pub fn first_error() -> Option<&'static str> {
    FIRST_ERROR.get().map(String::as_str)
}

/// What one phase measured.
#[derive(Clone, Debug, Serialize)]
pub struct PhaseResult {
    pub phase: String,
    /// Wall time of the measured part (after warm-up), milliseconds.
    pub runtime_ms: f64,
    /// Operations measured (after warm-up).
    pub operations: u64,
    pub throughput_ops_sec: f64,
    /// Operations that ended with an error or an unexpected value.
    pub errors: u64,
    /// CPU seconds of the whole process over the measured part.
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    /// CPU microseconds per measured operation (user + system), and apart.
    pub cpu_us_per_op: f64,
    pub cpu_user_us_per_op: f64,
    pub cpu_sys_us_per_op: f64,
    /// Bytes of keys and values the driver read and wrote in the measured part.
    pub user_read_bytes: u64,
    pub user_write_bytes: u64,
    /// Bytes this process read from / wrote to storage (/proc/self/io).
    pub process_read_bytes: Option<u64>,
    pub process_write_bytes: Option<u64>,
    /// The data directory's device over the measured part.
    pub device: Option<crate::device::DeviceUse>,
    /// The device's ceiling for this phase's I/O mix, when a device result exists.
    pub ceiling: Option<Ceiling>,
    pub ops: Vec<OpSummary>,
    pub timeline: Vec<Sample>,
}

/// What the device could do for a phase's I/O mix, and how close the phase came.
#[derive(Clone, Debug, Serialize)]
pub struct Ceiling {
    /// The `ycsb device` result used.
    pub device_result: String,
    /// Fraction of reads among the phase's device I/Os.
    pub read_fraction: f64,
    /// The device's IOPS for that mix (harmonic combination of its best random 4 KiB
    /// read and write IOPS over the queue depths probed).
    pub device_iops: f64,
    pub ios_per_op: f64,
    /// device_iops / ios_per_op: the throughput the device allows at this I/O cost.
    pub ceiling_ops_sec: f64,
    /// Measured throughput / ceiling.
    pub fraction: f64,
    pub note: String,
}

/// The ceiling of a phase from its device use and a device result.
pub fn ceiling(
    r: &PhaseResult,
    path: &std::path::Path,
    d: &crate::probe::DeviceReport,
) -> Option<Ceiling> {
    let dev = r.device.as_ref()?;
    let ios = dev.reads + dev.writes;
    // An engine that served the phase from memory (below one device I/O per hundred
    // operations) is not bound by the device: no ceiling rather than an absurd one.
    if ios == 0 || dev.ios_per_op < 0.01 {
        return None;
    }
    let rf = dev.reads as f64 / ios as f64;
    let device_iops = d.mix_iops(rf)?;
    let ceiling_ops_sec = device_iops / dev.ios_per_op;
    Some(Ceiling {
        device_result: path.display().to_string(),
        read_fraction: rf,
        device_iops,
        ios_per_op: dev.ios_per_op,
        ceiling_ops_sec,
        fraction: r.throughput_ops_sec / ceiling_ops_sec,
        note: "counts device I/Os whatever their size: exact for 4 KiB random I/O engines (KVell), an estimate for engines issuing large sequential I/Os".into(),
    })
}

/// Scheduled start times at a target rate: evenly spaced, or a Poisson process.
/// Latency measured from these times includes any queueing behind late requests
/// (coordinated omission corrected).
struct Arrivals {
    start: Instant,
    mean_s: f64,
    poisson: bool,
    rng: crate::rng::Rng,
    next_s: f64,
}

impl Arrivals {
    fn new(start: Instant, rate: f64, poisson: bool, seed: u64, stream: u64) -> Arrivals {
        Arrivals {
            start,
            mean_s: 1.0 / rate,
            poisson,
            rng: crate::rng::Rng::derive(seed ^ 0xA771_7A15, stream),
            next_s: 0.0,
        }
    }
    fn peek(&self) -> Instant {
        self.start + Duration::from_secs_f64(self.next_s)
    }
    fn advance(&mut self) {
        self.next_s += if self.poisson {
            -(1.0 - self.rng.next_f64()).ln() * self.mean_s
        } else {
            self.mean_s
        };
    }
}

/// Shared state of one phase.
struct Phase {
    start: Instant,
    measure_from: Instant,
    deadline: Option<Instant>,
    stop: AtomicBool,
}

impl Phase {
    fn over(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || self.deadline.is_some_and(|d| Instant::now() >= d)
    }
}

fn outcome_of(r: &kvapi::Result<()>) -> Outcome {
    match r {
        Ok(()) => Outcome::Ok,
        Err(e) => Outcome::Error(note_error(e)),
    }
}

/// The outcome of a read that returned `v`, and the bytes (key and value) it read.
fn value_outcome(key: &[u8], v: Option<&Vec<u8>>, verify: bool) -> (Outcome, u64) {
    match v {
        Some(v) if verify && !value::verify(key, v) => {
            (Outcome::Corrupt, (key.len() + v.len()) as u64)
        }
        Some(v) => (Outcome::Ok, (key.len() + v.len()) as u64),
        None => (Outcome::NotFound, 0),
    }
}

/// The outcome of a scan that returned `pairs`, and the bytes it read.
fn pairs_outcome(pairs: &[kvapi::Pair], verify: bool) -> (Outcome, u64) {
    let bytes = pairs.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum();
    if verify && pairs.iter().any(|(k, v)| !value::verify(k, v)) {
        (Outcome::Corrupt, bytes)
    } else {
        (Outcome::Ok, bytes)
    }
}

fn read_outcome(key: &[u8], r: &kvapi::Result<Option<Vec<u8>>>, verify: bool) -> (Outcome, u64) {
    match r {
        Ok(v) => value_outcome(key, v.as_ref(), verify),
        Err(e) => (Outcome::Error(note_error(e)), 0),
    }
}

fn scan_outcome(r: &kvapi::Result<Vec<kvapi::Pair>>, verify: bool) -> (Outcome, u64) {
    match r {
        Ok(pairs) => pairs_outcome(pairs, verify),
        Err(e) => (Outcome::Error(note_error(e)), 0),
    }
}

/// Versions of written values: the writer's id in the high bits, a sequence below.
struct Versions {
    next: u64,
}

impl Versions {
    fn new(writer: usize) -> Versions {
        Versions {
            next: ((writer as u64 + 1) << 40) + 1,
        }
    }
    fn take(&mut self) -> u64 {
        self.next += 1;
        self.next
    }
}

/// Runs one operation through the blocking interface and records it.
fn exec_blocking(
    engine: &dyn Engine,
    op: &Op,
    versions: &mut Versions,
    buf: &mut Vec<u8>,
    verify: bool,
    rec: &mut Recorder,
    intended: Option<Instant>,
) {
    let key = op.key.as_bytes();
    let written = |len: usize| (key.len() + len) as u64;
    let start = Instant::now();
    match op.kind {
        OpKind::Read => {
            let (o, n) = read_outcome(key, &engine.get(key), verify);
            let end = Instant::now();
            rec.record(op.kind, intended, start, end, o);
            rec.bytes(end, n, 0);
        }
        OpKind::Update | OpKind::Insert => {
            value::make_into(key, versions.take(), op.value_len, buf);
            let r = if op.kind == OpKind::Insert {
                engine.insert(key, buf)
            } else {
                engine.update(key, buf)
            };
            let end = Instant::now();
            rec.record(op.kind, intended, start, end, outcome_of(&r));
            rec.bytes(end, 0, written(buf.len()));
        }
        OpKind::Delete => {
            let r = engine.delete(key);
            rec.record(op.kind, intended, start, Instant::now(), outcome_of(&r));
        }
        OpKind::Scan => {
            let (o, n) = scan_outcome(&engine.scan(key, op.scan_len), verify);
            let end = Instant::now();
            rec.record(op.kind, intended, start, end, o);
            rec.bytes(end, n, 0);
        }
        OpKind::ReadModifyWrite => {
            let (o, n) = read_outcome(key, &engine.get(key), verify);
            let mid = Instant::now();
            rec.record_part(OpKind::Read, intended, start, mid, o.clone());
            value::make_into(key, versions.take(), op.value_len, buf);
            let r = engine.update(key, buf);
            let end = Instant::now();
            rec.record_part(OpKind::Update, None, mid, end, outcome_of(&r));
            let whole = if matches!(o, Outcome::Ok | Outcome::NotFound) {
                outcome_of(&r)
            } else {
                o
            };
            rec.record(op.kind, intended, start, end, whole);
            rec.bytes(end, n, written(buf.len()));
        }
    }
}

/// Progress output: a bar on a terminal, a status line every 10 s otherwise.
fn progress(label: &str, total: Option<u64>) -> Tick {
    let label = label.to_string();
    if std::io::stderr().is_terminal() {
        let bar = match total {
            Some(n) => indicatif::ProgressBar::new(n),
            None => indicatif::ProgressBar::new_spinner(),
        };
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{prefix} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}",
            )
            .expect("valid template"),
        );
        bar.set_prefix(label);
        Box::new(move |s: &Sample| {
            bar.inc(s.total_ops);
            bar.set_message(format!("{:.0} ops/s", s.ops_per_sec));
        })
    } else {
        let mut done = 0u64;
        // Every 10 s by default; YCSB_STATUS_INTERVAL=N for every N seconds.
        let every = std::env::var("YCSB_STATUS_INTERVAL")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|n| *n > 0)
            .unwrap_or(10);
        Box::new(move |s: &Sample| {
            done += s.total_ops;
            let whole = s.t.round() as u64;
            if whole > 0 && whole.is_multiple_of(every) {
                eprintln!(
                    "[{label}] {whole} s: {done} operations; {:.0} current ops/sec",
                    s.ops_per_sec
                );
            }
        })
    }
}

fn finish(
    phase: &str,
    p: &Phase,
    rec: Recorder,
    sampler: Sampler,
    mark: Option<Snapshot>,
    ctx: &Ctx,
    end: Instant,
) -> PhaseResult {
    let timeline = sampler.finish();
    let last = Snapshot::take(ctx.device.as_deref());
    let measured = end.saturating_duration_since(p.measure_from);
    let secs = measured.as_secs_f64();
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
    let device = ctx
        .device
        .as_deref()
        .zip(mark.and_then(|m| m.disk))
        .zip(last.disk)
        .map(|((name, a), b)| {
            crate::device::device_use(
                name,
                &a,
                &b,
                secs,
                ops,
                rec.user_read_bytes,
                rec.user_write_bytes,
            )
        });
    PhaseResult {
        phase: phase.to_string(),
        runtime_ms: secs * 1000.0,
        operations: ops,
        throughput_ops_sec: if secs > 0.0 { ops as f64 / secs } else { 0.0 },
        errors: rec.error_count(),
        cpu_user_s: u,
        cpu_sys_s: s,
        cpu_us_per_op: per_op(u + s),
        cpu_user_us_per_op: per_op(u),
        cpu_sys_us_per_op: per_op(s),
        user_read_bytes: rec.user_read_bytes,
        user_write_bytes: rec.user_write_bytes,
        process_read_bytes: pio.map(|(a, b)| b.0.saturating_sub(a.0)),
        process_write_bytes: pio.map(|(a, b)| b.1.saturating_sub(a.1)),
        device,
        ceiling: None,
        ops: rec.summaries(),
        timeline,
    }
}

/// Takes a [`Snapshot`] at the end of the warm-up, from whichever thread sees it.
struct Mark {
    at: Instant,
    device: Option<String>,
    taken: std::sync::Mutex<Option<Snapshot>>,
}

impl Mark {
    fn new(at: Instant, device: Option<String>) -> Mark {
        let m = Mark {
            at,
            device,
            taken: std::sync::Mutex::new(None),
        };
        m.poll();
        m
    }
    fn poll(&self) {
        if Instant::now() >= self.at
            && let Ok(mut t) = self.taken.lock()
            && t.is_none()
        {
            *t = Some(Snapshot::take(self.device.as_deref()));
        }
    }
    fn get(&self) -> Option<Snapshot> {
        *self.taken.lock().expect("mark")
    }
}

/// Inserts the workload's records (`insertstart .. insertstart + insertcount`) with
/// value version 0.
pub fn load(engine: Arc<dyn Engine>, w: Arc<Workload>, d: &Driving, ctx: &Ctx) -> PhaseResult {
    let (start, seed) = (w.insertstart, d.seed);
    load_items(
        engine,
        w.insertcount as u64,
        |t| OpStream::new(w.clone(), Arc::new(AckCounter::new(0)), seed, 1_000_000 + t),
        |stream, i| {
            let n = start + i as i64;
            (w.key(n), stream.value_len_for(n))
        },
        d,
        ctx,
        "load",
    )
}

/// Inserts `count` items, item `i` given by `item` with per-thread state from `init`
/// (called with the thread's index), through the driving mode of `d`. Values are
/// version 0 of their key.
pub fn load_items<S, I, F>(
    engine: Arc<dyn Engine>,
    count: u64,
    init: I,
    item: F,
    d: &Driving,
    ctx: &Ctx,
    phase: &str,
) -> PhaseResult
where
    I: Fn(u64) -> S + Sync,
    F: Fn(&mut S, u64) -> (String, usize) + Sync,
{
    let start = Instant::now();
    let p = Phase {
        start,
        measure_from: start,
        deadline: None,
        stop: AtomicBool::new(false),
    };
    let tick: Tick = if ctx.progress {
        progress(phase, Some(count))
    } else {
        Box::new(|_| {})
    };
    let sampler = Sampler::start(start, start, ctx.device.clone(), tick);
    let mark0 = Snapshot::take(ctx.device.as_deref());
    let next = AtomicU64::new(0);
    let rec = if let Some(qd) = d.queue_depth {
        let (a, _) = kvapi::async_path(engine.clone(), qd).expect("starting the asynchronous path");
        let mut state = init(u64::MAX);
        let mut ops = std::iter::from_fn(|| {
            let i = next.fetch_add(1, Ordering::Relaxed);
            (i < count).then(|| {
                let (key, value_len) = item(&mut state, i);
                Op {
                    kind: OpKind::Insert,
                    keynum: -1,
                    key,
                    value_len,
                    scan_len: 0,
                    at: None,
                }
            })
        });
        run_async(
            a.as_ref(),
            &mut ops,
            qd,
            None,
            &p,
            sampler.slot(),
            false,
            None,
            None,
        )
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..d.threads.max(1))
                .map(|t| {
                    let (engine, slot) = (engine.clone(), sampler.slot());
                    let (p, next, init, item) = (&p, &next, &init, &item);
                    s.spawn(move || {
                        let mut rec = Recorder::new(slot, p.measure_from);
                        let mut state = init(t as u64);
                        let mut buf = Vec::new();
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            if i >= count {
                                break;
                            }
                            let (key, len) = item(&mut state, i);
                            value::make_into(key.as_bytes(), 0, len, &mut buf);
                            let t0 = Instant::now();
                            let r = engine.insert(key.as_bytes(), &buf);
                            let t1 = Instant::now();
                            rec.record(OpKind::Insert, None, t0, t1, outcome_of(&r));
                            rec.bytes(t1, 0, (key.len() + buf.len()) as u64);
                        }
                        rec
                    })
                })
                .collect();
            join_all(handles)
        })
    };
    let end = Instant::now();
    finish(phase, &p, rec, sampler, Some(mark0), ctx, end)
}

/// Replays operations (a trace) against the engine: closed loop from N threads that
/// take the next operation in trace order, or asynchronously with a queue depth. An
/// operation that carries a scheduled time (`at`, a timed replay) is not started
/// before it, and its intended latency counts from it.
pub fn replay(engine: Arc<dyn Engine>, ops: Arc<Vec<Op>>, d: &Driving, ctx: &Ctx) -> PhaseResult {
    let start = Instant::now();
    let warm = Duration::from_secs_f64(d.warmup_s);
    let p = Phase {
        start,
        measure_from: start + warm,
        deadline: d
            .max_time_s
            .map(|s| start + warm + Duration::from_secs_f64(s)),
        stop: AtomicBool::new(false),
    };
    let tick: Tick = if ctx.progress {
        progress("replay", Some(ops.len() as u64))
    } else {
        Box::new(|_| {})
    };
    let sampler = Sampler::start(start, p.measure_from, ctx.device.clone(), tick);
    let mark = Mark::new(p.measure_from, ctx.device.clone());
    let rec = if let Some(qd) = d.queue_depth {
        let (a, _) = kvapi::async_path(engine.clone(), qd).expect("starting the asynchronous path");
        let mut it = ops.iter().cloned();
        run_async(
            a.as_ref(),
            &mut it,
            qd,
            None,
            &p,
            sampler.slot(),
            false,
            None,
            Some(&mark),
        )
    } else {
        let next = AtomicU64::new(0);
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..d.threads.max(1))
                .map(|t| {
                    let (engine, slot, ops) = (engine.clone(), sampler.slot(), ops.clone());
                    let (p, next, mark) = (&p, &next, &mark);
                    s.spawn(move || {
                        let mut rec = Recorder::new(slot, p.measure_from);
                        let mut versions = Versions::new(t);
                        let mut buf = Vec::new();
                        while !p.over() {
                            let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                            let Some(op) = ops.get(i) else { break };
                            let intended = op.at.map(|at| p.start + at);
                            if let Some(due) = intended {
                                let now = Instant::now();
                                if due > now {
                                    std::thread::sleep(due - now);
                                }
                            }
                            exec_blocking(
                                engine.as_ref(),
                                op,
                                &mut versions,
                                &mut buf,
                                false,
                                &mut rec,
                                intended,
                            );
                            if i.is_multiple_of(256) {
                                mark.poll();
                            }
                        }
                        rec
                    })
                })
                .collect();
            join_all(handles)
        })
    };
    let end = Instant::now();
    mark.poll();
    finish("run", &p, rec, sampler, mark.get(), ctx, end)
}

/// Joins the client threads of a phase and merges what they measured.
fn join_all(handles: Vec<std::thread::ScopedJoinHandle<'_, Recorder>>) -> Recorder {
    merge(
        handles
            .into_iter()
            .map(|h| h.join().expect("client thread panicked"))
            .collect(),
    )
}

fn merge(mut recs: Vec<Recorder>) -> Recorder {
    let mut first = recs.remove(0);
    for r in &recs {
        first.merge(r);
    }
    first
}

/// The run phase: the workload's operation mix until `operationcount` operations or
/// the time limit.
pub fn run(engine: Arc<dyn Engine>, w: Arc<Workload>, d: &Driving, ctx: &Ctx) -> PhaseResult {
    let start = Instant::now();
    let warm = Duration::from_secs_f64(d.warmup_s);
    let p = Phase {
        start,
        measure_from: start + warm,
        deadline: d
            .max_time_s
            .map(|s| start + warm + Duration::from_secs_f64(s)),
        stop: AtomicBool::new(false),
    };
    let opcount = w.operationcount as u64;
    let tick: Tick = if ctx.progress {
        progress("run", (d.max_time_s.is_none()).then_some(opcount))
    } else {
        Box::new(|_| {})
    };
    let sampler = Sampler::start(start, p.measure_from, ctx.device.clone(), tick);
    let cpu = Mark::new(p.measure_from, ctx.device.clone());
    let acks = Arc::new(AckCounter::new(w.recordcount));
    let rec = if let Some(qd) = d.queue_depth {
        let (a, _) = kvapi::async_path(engine.clone(), qd).expect("starting the asynchronous path");
        let mut stream = OpStream::new(w.clone(), acks.clone(), d.seed, 0);
        let mut issued = 0u64;
        let mut ops = std::iter::from_fn(|| {
            (issued < opcount).then(|| {
                issued += 1;
                stream.next_op()
            })
        });
        run_async(
            a.as_ref(),
            &mut ops,
            qd,
            d.target_ops.map(|r| (r, d.arrival == "poisson")),
            &p,
            sampler.slot(),
            w.dataintegrity,
            Some(&acks),
            Some(&cpu),
        )
    } else {
        let threads = d.threads.max(1);
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    // YCSB splits the operation count evenly over the threads.
                    let budget =
                        opcount / threads as u64 + u64::from((t as u64) < opcount % threads as u64);
                    let (engine, w, acks, slot) =
                        (engine.clone(), w.clone(), acks.clone(), sampler.slot());
                    let poisson = d.arrival == "poisson";
                    let mut arrivals = d.target_ops.map(|r| {
                        Arrivals::new(start, r / threads as f64, poisson, d.seed, t as u64)
                    });
                    let (p, cpu) = (&p, &cpu);
                    s.spawn(move || {
                        let verify = w.dataintegrity;
                        let mut rec = Recorder::new(slot, p.measure_from);
                        let mut stream = OpStream::new(w, acks, d.seed, t as u64);
                        let mut versions = Versions::new(t);
                        let mut buf = Vec::new();
                        let mut i = 0u64;
                        while i < budget && !p.over() {
                            let intended = arrivals.as_ref().map(Arrivals::peek);
                            if let Some(a) = arrivals.as_mut() {
                                a.advance();
                            }
                            if let Some(due) = intended {
                                let now = Instant::now();
                                if due > now {
                                    std::thread::sleep(due - now);
                                }
                            }
                            let op = stream.next_op();
                            exec_blocking(
                                engine.as_ref(),
                                &op,
                                &mut versions,
                                &mut buf,
                                verify,
                                &mut rec,
                                intended,
                            );
                            if op.kind == OpKind::Insert
                                && let Err(e) = stream.acknowledge_insert(op.keynum)
                            {
                                eprintln!("error: {e}");
                                p.stop.store(true, Ordering::Relaxed);
                            }
                            if i.is_multiple_of(256) {
                                cpu.poll();
                            }
                            i += 1;
                        }
                        rec
                    })
                })
                .collect();
            join_all(handles)
        })
    };
    let end = Instant::now();
    cpu.poll();
    finish("run", &p, rec, sampler, cpu.get(), ctx, end)
}

enum Stage {
    Single(OpKind),
    RmwRead,
    RmwUpdate { read_done: Instant },
}

struct Done {
    stage: Stage,
    keynum: i64,
    key: String,
    value_len: usize,
    intended: Option<Instant>,
    start: Instant,
    end: Instant,
    result: kvapi::Result<Reply>,
}

fn request_for(op: &Op, version: u64, rmw_read: bool) -> Request {
    let key = op.key.as_bytes().to_vec();
    match op.kind {
        OpKind::Read => Request::Get { key },
        OpKind::ReadModifyWrite if rmw_read => Request::Get { key },
        OpKind::Insert => {
            let value = value::make(&key, version, op.value_len);
            Request::Insert { key, value }
        }
        OpKind::Update | OpKind::ReadModifyWrite => {
            let value = value::make(&key, version, op.value_len);
            Request::Update { key, value }
        }
        OpKind::Delete => Request::Delete { key },
        OpKind::Scan => Request::Scan {
            start: key,
            count: op.scan_len,
        },
    }
}

/// The outcome of an asynchronous request and the user bytes it read.
fn reply_outcome(key: &[u8], r: &kvapi::Result<Reply>, verify: bool) -> (Outcome, u64) {
    match r {
        Ok(Reply::Done) => (Outcome::Ok, 0),
        Ok(Reply::Value(v)) => value_outcome(key, v.as_ref(), verify),
        Ok(Reply::Pairs(p)) => pairs_outcome(p, verify),
        Err(e) => (Outcome::Error(note_error(e)), 0),
    }
}

/// One injector keeps up to `qd` requests in flight: it submits until the window is
/// full, then handles completions (delivered over a channel from the engine's
/// threads) and refills. With a target rate, a request is not submitted before its
/// scheduled time, and its intended latency counts from that time.
#[allow(clippy::too_many_arguments)]
fn run_async(
    a: &dyn AsyncEngine,
    ops: &mut dyn Iterator<Item = Op>,
    qd: usize,
    target: Option<(f64, bool)>,
    p: &Phase,
    slot: Arc<crate::measure::Slot>,
    verify: bool,
    acks: Option<&AckCounter>,
    cpu: Option<&Mark>,
) -> Recorder {
    let mut rec = Recorder::new(slot, p.measure_from);
    let queue = Arc::new(DoneQueue::<Done>::default());
    let mut batch: Vec<Done> = Vec::new();
    // The injector is woken once an eighth of the queue depth has completed (see
    // `donequeue`): enough to refill in batches, few enough to keep the engine busy.
    let refill = (qd / 8).max(1);
    let mut in_flight = 0usize;
    let mut versions = Versions::new(usize::MAX >> 24);
    let mut arrivals = target.map(|(r, poisson)| Arrivals::new(p.start, r, poisson, 0, 0));
    let mut exhausted = false;
    let mut pending: Option<Op> = None;
    let submit = |op: &Op, stage: Stage, intended: Option<Instant>, version: u64| {
        let tx = queue.clone();
        let req = request_for(op, version, matches!(stage, Stage::RmwRead));
        let (keynum, key, value_len) = (op.keynum, op.key.clone(), op.value_len);
        let start = Instant::now();
        a.submit(
            req,
            Box::new(move |result| {
                tx.push(Done {
                    stage,
                    keynum,
                    key,
                    value_len,
                    intended,
                    start,
                    end: Instant::now(),
                    result,
                });
            }),
        );
    };
    loop {
        while in_flight < qd && !exhausted {
            if p.over() {
                exhausted = true;
                break;
            }
            let Some(op) = pending.take().or_else(|| ops.next()) else {
                exhausted = true;
                break;
            };
            // a trace's own schedule, else the target rate's
            let intended = match op.at {
                Some(at) => Some(p.start + at),
                None => arrivals.as_ref().map(Arrivals::peek),
            };
            if let Some(due) = intended
                && due > Instant::now()
            {
                if in_flight > 0 {
                    pending = Some(op);
                    break; // handle completions while waiting
                }
                std::thread::sleep(due - Instant::now());
            }
            if let Some(a) = arrivals.as_mut() {
                a.advance();
            }
            let stage = if op.kind == OpKind::ReadModifyWrite {
                Stage::RmwRead
            } else {
                Stage::Single(op.kind)
            };
            submit(&op, stage, intended, versions.take());
            in_flight += 1;
        }
        if in_flight == 0 && exhausted {
            break;
        }
        if exhausted || (arrivals.is_none() && pending.is_none()) {
            let want = if exhausted { 1 } else { refill.min(in_flight) };
            queue.take(want, None, &mut batch);
        } else {
            queue.take(1, Some(Duration::from_micros(200)), &mut batch);
        }
        for done in batch.drain(..) {
            in_flight -= 1;
            let key = done.key.as_bytes();
            let (outcome, read) = reply_outcome(key, &done.result, verify);
            let written = (key.len() + done.value_len) as u64;
            match done.stage {
                Stage::Single(kind) => {
                    rec.record(kind, done.intended, done.start, done.end, outcome);
                    let w = if matches!(kind, OpKind::Insert | OpKind::Update) {
                        written
                    } else {
                        0
                    };
                    rec.bytes(done.end, read, w);
                    if kind == OpKind::Insert
                        && let Some(acks) = acks
                        && let Err(e) = acks.acknowledge(done.keynum)
                    {
                        eprintln!("error: {e}");
                        p.stop.store(true, Ordering::Relaxed);
                    }
                }
                Stage::RmwRead => {
                    rec.record_part(OpKind::Read, done.intended, done.start, done.end, outcome);
                    rec.bytes(done.end, read, 0);
                    let op = Op {
                        kind: OpKind::ReadModifyWrite,
                        keynum: done.keynum,
                        key: done.key.clone(),
                        value_len: done.value_len,
                        scan_len: 0,
                        at: None,
                    };
                    // keep the RMW's original start in `intended` position via a stage
                    let first_start = done.start;
                    let tx2 = queue.clone();
                    let req = request_for(&op, versions.take(), false);
                    let t = Instant::now();
                    let (keynum, k2, vl, intended) =
                        (op.keynum, op.key, op.value_len, done.intended);
                    a.submit(
                        req,
                        Box::new(move |result| {
                            tx2.push(Done {
                                stage: Stage::RmwUpdate { read_done: t },
                                keynum,
                                key: k2,
                                value_len: vl,
                                intended,
                                start: first_start,
                                end: Instant::now(),
                                result,
                            });
                        }),
                    );
                    in_flight += 1;
                }
                Stage::RmwUpdate { read_done } => {
                    rec.record_part(OpKind::Update, None, read_done, done.end, outcome.clone());
                    rec.bytes(done.end, 0, written);
                    rec.record(
                        OpKind::ReadModifyWrite,
                        done.intended,
                        done.start,
                        done.end,
                        outcome,
                    );
                }
            }
        }
        if let Some(c) = cpu {
            c.poll();
        }
    }
    rec
}
