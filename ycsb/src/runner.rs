//! Runs the load and run phases against an engine: closed loop with N client threads
//! (optionally throttled to a target rate, YCSB's `-target`), or asynchronous with a
//! queue depth from one injector thread (the KVell way).

use crate::generator::AckCounter;
use crate::measure::{OpSummary, Outcome, Recorder, Sample, Sampler, Tick, cpu_times};
use crate::value;
use crate::workload::{Op, OpKind, OpStream, Workload};
use kvapi::{AsyncEngine, Engine, Reply, Request};
use serde::Serialize;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, mpsc};
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
                    _ => "thread-pool adapter",
                }
            ),
            None => format!("closed loop, {} client thread(s)", self.threads),
        };
        if let Some(t) = self.target_ops {
            s.push_str(&format!(", target {t} ops/s"));
        }
        s
    }
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
    /// CPU microseconds per measured operation (user + system).
    pub cpu_us_per_op: f64,
    pub ops: Vec<OpSummary>,
    pub timeline: Vec<Sample>,
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
        Err(e) => Outcome::Error(e.kind()),
    }
}

fn read_outcome(key: &[u8], r: kvapi::Result<Option<Vec<u8>>>, verify: bool) -> Outcome {
    match r {
        Ok(Some(v)) if verify && !value::verify(key, &v) => Outcome::Corrupt,
        Ok(Some(_)) => Outcome::Ok,
        Ok(None) => Outcome::NotFound,
        Err(e) => Outcome::Error(e.kind()),
    }
}

fn scan_outcome(r: kvapi::Result<Vec<kvapi::Pair>>, verify: bool) -> Outcome {
    match r {
        Ok(pairs) if verify && pairs.iter().any(|(k, v)| !value::verify(k, v)) => Outcome::Corrupt,
        Ok(_) => Outcome::Ok,
        Err(e) => Outcome::Error(e.kind()),
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
    let start = Instant::now();
    match op.kind {
        OpKind::Read => {
            let o = read_outcome(key, engine.get(key), verify);
            rec.record(op.kind, intended, start, Instant::now(), o);
        }
        OpKind::Update | OpKind::Insert => {
            value::make_into(key, versions.take(), op.value_len, buf);
            let r = if op.kind == OpKind::Insert {
                engine.insert(key, buf)
            } else {
                engine.update(key, buf)
            };
            rec.record(op.kind, intended, start, Instant::now(), outcome_of(&r));
        }
        OpKind::Delete => {
            let r = engine.delete(key);
            rec.record(op.kind, intended, start, Instant::now(), outcome_of(&r));
        }
        OpKind::Scan => {
            let o = scan_outcome(engine.scan(key, op.scan_len), verify);
            rec.record(op.kind, intended, start, Instant::now(), o);
        }
        OpKind::ReadModifyWrite => {
            let o = read_outcome(key, engine.get(key), verify);
            let mid = Instant::now();
            rec.record(OpKind::Read, intended, start, mid, o.clone());
            value::make_into(key, versions.take(), op.value_len, buf);
            let r = engine.update(key, buf);
            let end = Instant::now();
            rec.record(OpKind::Update, None, mid, end, outcome_of(&r));
            let whole = if matches!(o, Outcome::Ok | Outcome::NotFound) {
                outcome_of(&r)
            } else {
                o
            };
            rec.record(op.kind, intended, start, end, whole);
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
        Box::new(move |s: &Sample| {
            done += s.total_ops;
            let whole = s.t.round() as u64;
            if whole > 0 && whole.is_multiple_of(10) {
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
    cpu0: Option<(Duration, Duration)>,
    end: Instant,
) -> PhaseResult {
    let timeline = sampler.finish();
    let measured = end.saturating_duration_since(p.measure_from);
    let ops = rec.measured_ops();
    let cpu1 = cpu_times();
    let (u, s) = match cpu0 {
        Some(c0) => (
            cpu1.0.saturating_sub(c0.0).as_secs_f64(),
            cpu1.1.saturating_sub(c0.1).as_secs_f64(),
        ),
        // warm-up never ended: take the CPU of the measured timeline seconds
        None => (0.0, 0.0),
    };
    let secs = measured.as_secs_f64();
    PhaseResult {
        phase: phase.to_string(),
        runtime_ms: secs * 1000.0,
        operations: ops,
        throughput_ops_sec: if secs > 0.0 { ops as f64 / secs } else { 0.0 },
        errors: rec.error_count(),
        cpu_user_s: u,
        cpu_sys_s: s,
        cpu_us_per_op: if ops > 0 {
            (u + s) * 1e6 / ops as f64
        } else {
            0.0
        },
        ops: rec.summaries(),
        timeline,
    }
}

/// Captures process CPU at the end of the warm-up, from whichever thread sees it.
struct CpuMark {
    at: Instant,
    taken: std::sync::Mutex<Option<(Duration, Duration)>>,
}

impl CpuMark {
    fn new(at: Instant) -> CpuMark {
        let c = CpuMark {
            at,
            taken: std::sync::Mutex::new(None),
        };
        if Instant::now() >= at {
            *c.taken.lock().expect("cpu mark") = Some(cpu_times());
        }
        c
    }
    fn poll(&self) {
        if Instant::now() >= self.at
            && let Ok(mut t) = self.taken.lock()
            && t.is_none()
        {
            *t = Some(cpu_times());
        }
    }
    fn get(&self) -> Option<(Duration, Duration)> {
        *self.taken.lock().expect("cpu mark")
    }
}

/// Inserts the workload's records (`insertstart .. insertstart + insertcount`) with
/// value version 0.
pub fn load(
    engine: Arc<dyn Engine>,
    w: Arc<Workload>,
    d: &Driving,
    show_progress: bool,
) -> PhaseResult {
    let start = Instant::now();
    let p = Phase {
        start,
        measure_from: start,
        deadline: None,
        stop: AtomicBool::new(false),
    };
    let tick: Tick = if show_progress {
        progress("load", Some(w.insertcount as u64))
    } else {
        Box::new(|_| {})
    };
    let sampler = Sampler::start(start, start, tick);
    let cpu0 = cpu_times();
    let next = Arc::new(AtomicI64::new(w.insertstart));
    let end_key = w.insertstart + w.insertcount;
    let rec = if let Some(qd) = d.queue_depth {
        let (a, _) = kvapi::async_path(engine.clone(), qd);
        let mut stream = OpStream::new(w.clone(), Arc::new(AckCounter::new(0)), d.seed, u64::MAX);
        let mut ops = std::iter::from_fn(|| {
            let n = next.fetch_add(1, Ordering::Relaxed);
            (n < end_key).then(|| Op {
                kind: OpKind::Insert,
                keynum: n,
                key: w.key(n),
                value_len: stream.next_value_len(),
                scan_len: 0,
            })
        });
        run_async(
            a.as_ref(),
            &mut ops,
            qd,
            None,
            &p,
            sampler.slot(),
            w.dataintegrity,
            None,
            None,
        )
    } else {
        let recs: Vec<Recorder> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..d.threads)
                .map(|t| {
                    let (engine, w, next, slot) =
                        (engine.clone(), w.clone(), next.clone(), sampler.slot());
                    let p = &p;
                    s.spawn(move || {
                        let mut rec = Recorder::new(slot, p.measure_from);
                        let mut stream = OpStream::new(
                            w.clone(),
                            Arc::new(AckCounter::new(0)),
                            d.seed,
                            1_000_000 + t as u64,
                        );
                        let mut buf = Vec::new();
                        loop {
                            let n = next.fetch_add(1, Ordering::Relaxed);
                            if n >= end_key {
                                break;
                            }
                            let key = w.key(n);
                            let len = stream.next_value_len();
                            value::make_into(key.as_bytes(), 0, len, &mut buf);
                            let t0 = Instant::now();
                            let r = engine.insert(key.as_bytes(), &buf);
                            rec.record(OpKind::Insert, None, t0, Instant::now(), outcome_of(&r));
                        }
                        rec
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("load thread panicked"))
                .collect()
        });
        merge(recs)
    };
    let end = Instant::now();
    finish("load", &p, rec, sampler, Some(cpu0), end)
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
pub fn run(
    engine: Arc<dyn Engine>,
    w: Arc<Workload>,
    d: &Driving,
    show_progress: bool,
) -> PhaseResult {
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
    let tick: Tick = if show_progress {
        progress("run", (d.max_time_s.is_none()).then_some(opcount))
    } else {
        Box::new(|_| {})
    };
    let sampler = Sampler::start(start, p.measure_from, tick);
    let cpu = CpuMark::new(p.measure_from);
    let acks = Arc::new(AckCounter::new(w.recordcount));
    let rec = if let Some(qd) = d.queue_depth {
        let (a, _) = kvapi::async_path(engine.clone(), qd);
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
            d.target_ops,
            &p,
            sampler.slot(),
            w.dataintegrity,
            Some(&acks),
            Some(&cpu),
        )
    } else {
        let threads = d.threads.max(1);
        let recs: Vec<Recorder> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    // YCSB splits the operation count evenly over the threads.
                    let budget =
                        opcount / threads as u64 + u64::from((t as u64) < opcount % threads as u64);
                    let (engine, w, acks, slot) =
                        (engine.clone(), w.clone(), acks.clone(), sampler.slot());
                    let interval = d
                        .target_ops
                        .map(|r| Duration::from_secs_f64(threads as f64 / r));
                    let (p, cpu) = (&p, &cpu);
                    s.spawn(move || {
                        let verify = w.dataintegrity;
                        let mut rec = Recorder::new(slot, p.measure_from);
                        let mut stream = OpStream::new(w, acks, d.seed, t as u64);
                        let mut versions = Versions::new(t);
                        let mut buf = Vec::new();
                        let mut i = 0u64;
                        while i < budget && !p.over() {
                            let intended = interval.map(|iv| p.start + iv.mul_f64(i as f64));
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
            handles
                .into_iter()
                .map(|h| h.join().expect("client thread panicked"))
                .collect()
        });
        merge(recs)
    };
    let end = Instant::now();
    cpu.poll();
    finish("run", &p, rec, sampler, cpu.get(), end)
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

fn reply_outcome(key: &[u8], r: &kvapi::Result<Reply>, verify: bool) -> Outcome {
    match r {
        Ok(Reply::Done) => Outcome::Ok,
        Ok(Reply::Value(Some(v))) if verify && !value::verify(key, v) => Outcome::Corrupt,
        Ok(Reply::Value(Some(_))) => Outcome::Ok,
        Ok(Reply::Value(None)) => Outcome::NotFound,
        Ok(Reply::Pairs(p)) if verify && p.iter().any(|(k, v)| !value::verify(k, v)) => {
            Outcome::Corrupt
        }
        Ok(Reply::Pairs(_)) => Outcome::Ok,
        Err(e) => Outcome::Error(e.kind()),
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
    target: Option<f64>,
    p: &Phase,
    slot: Arc<crate::measure::Slot>,
    verify: bool,
    acks: Option<&AckCounter>,
    cpu: Option<&CpuMark>,
) -> Recorder {
    let mut rec = Recorder::new(slot, p.measure_from);
    let (tx, rx) = mpsc::channel::<Done>();
    let mut in_flight = 0usize;
    let mut versions = Versions::new(usize::MAX >> 24);
    let interval = target.map(|r| Duration::from_secs_f64(1.0 / r));
    let mut issued = 0u64;
    let mut exhausted = false;
    let submit = |op: &Op, stage: Stage, intended: Option<Instant>, version: u64| {
        let tx = tx.clone();
        let req = request_for(op, version, matches!(stage, Stage::RmwRead));
        let (keynum, key, value_len) = (op.keynum, op.key.clone(), op.value_len);
        let start = Instant::now();
        a.submit(
            req,
            Box::new(move |result| {
                let _ = tx.send(Done {
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
            let intended = interval.map(|iv| p.start + iv.mul_f64(issued as f64));
            if let Some(due) = intended
                && due > Instant::now()
            {
                if in_flight > 0 {
                    break; // handle completions while waiting
                }
                std::thread::sleep(due - Instant::now());
            }
            let Some(op) = ops.next() else {
                exhausted = true;
                break;
            };
            issued += 1;
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
        let wait = if exhausted || interval.is_none() {
            rx.recv().ok()
        } else {
            rx.recv_timeout(Duration::from_micros(200)).ok()
        };
        let mut next = wait;
        while let Some(done) = next {
            in_flight -= 1;
            let key = done.key.as_bytes();
            let outcome = reply_outcome(key, &done.result, verify);
            match done.stage {
                Stage::Single(kind) => {
                    rec.record(kind, done.intended, done.start, done.end, outcome);
                    if kind == OpKind::Insert
                        && let Some(acks) = acks
                        && let Err(e) = acks.acknowledge(done.keynum)
                    {
                        eprintln!("error: {e}");
                        p.stop.store(true, Ordering::Relaxed);
                    }
                }
                Stage::RmwRead => {
                    rec.record(OpKind::Read, done.intended, done.start, done.end, outcome);
                    let op = Op {
                        kind: OpKind::ReadModifyWrite,
                        keynum: done.keynum,
                        key: done.key.clone(),
                        value_len: done.value_len,
                        scan_len: 0,
                    };
                    // keep the RMW's original start in `intended` position via a stage
                    let first_start = done.start;
                    let tx2 = tx.clone();
                    let req = request_for(&op, versions.take(), false);
                    let t = Instant::now();
                    let (keynum, k2, vl, intended) =
                        (op.keynum, op.key, op.value_len, done.intended);
                    a.submit(
                        req,
                        Box::new(move |result| {
                            let _ = tx2.send(Done {
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
                    rec.record(OpKind::Update, None, read_done, done.end, outcome.clone());
                    rec.record(
                        OpKind::ReadModifyWrite,
                        done.intended,
                        done.start,
                        done.end,
                        outcome,
                    );
                }
            }
            next = rx.try_recv().ok();
        }
        if let Some(c) = cpu {
            c.poll();
        }
    }
    rec
}
