//! What one client thread (or the injector) measures: HDR histograms per operation
//! kind (nanoseconds internally), status counts and user bytes, merged at the end of a
//! phase into the schema's [`OpSummary`]s; and the live per-thread counters the
//! sampler reads once a second.

use crate::workload::OpKind;
use base64::Engine as _;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use kvtb_schema::OpSummary;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

pub(crate) const KINDS: usize = OpKind::ALL.len();
/// Latencies up to one hour are recorded exactly (3 significant digits); longer ones
/// saturate at one hour.
const MAX_NS: u64 = 3_600_000_000_000;

#[expect(
    clippy::expect_used,
    reason = "constant bounds (1 ns to one hour, 3 digits) that hdrhistogram accepts"
)]
fn new_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_NS, 3).expect("valid histogram bounds")
}

/// The per-interval histograms (the status line, the timeline's percentiles): 2
/// significant digits (1%), a tenth of the memory of the phase's own.
#[expect(
    clippy::expect_used,
    reason = "constant bounds (1 ns to one hour, 2 digits) that hdrhistogram accepts"
)]
pub(crate) fn new_interval_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_NS, 2).expect("valid histogram bounds")
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

impl Outcome {
    fn name(&self) -> &'static str {
        match self {
            Outcome::Ok => "OK",
            Outcome::NotFound => "NOT_FOUND",
            Outcome::Error(k) => k,
            Outcome::Corrupt => "UNEXPECTED_VALUE",
        }
    }
}

/// Bytes of the recorders' histograms alive now, and their peak since
/// [`reset_histogram_peak`]: the driver's own memory that grows with its client
/// threads (about 270 KB a histogram, up to three per operation kind and thread), so
/// that a phase can leave it out of what the engine is said to hold.
static HISTOGRAM_BYTES: AtomicU64 = AtomicU64::new(0);
static HISTOGRAM_PEAK: AtomicU64 = AtomicU64::new(0);

/// The peak bytes of the recorders' histograms since the last reset.
pub fn histogram_peak() -> u64 {
    HISTOGRAM_PEAK.load(Ordering::Relaxed)
}

/// The bytes of the recorders' histograms alive now.
pub fn histogram_bytes() -> u64 {
    HISTOGRAM_BYTES.load(Ordering::Relaxed)
}

/// Starts a new peak at what is alive now (at a phase's start, with `VmHWM`'s).
pub fn reset_histogram_peak() {
    HISTOGRAM_PEAK.store(HISTOGRAM_BYTES.load(Ordering::Relaxed), Ordering::Relaxed);
}

/// The bytes a histogram's counts take (fixed by its bounds: it never resizes).
fn counts_bytes(h: &Histogram<u64>) -> u64 {
    (h.distinct_values() * size_of::<u64>()) as u64
}

/// A histogram made on first use: a phase allocates only for the kinds it runs.
#[derive(Default)]
struct Lazy(Option<Histogram<u64>>);

impl Drop for Lazy {
    fn drop(&mut self) {
        if let Some(h) = &self.0 {
            HISTOGRAM_BYTES.fetch_sub(counts_bytes(h), Ordering::Relaxed);
        }
    }
}

impl Lazy {
    fn hist(&mut self) -> &mut Histogram<u64> {
        self.0.get_or_insert_with(|| {
            let h = new_hist();
            let now =
                HISTOGRAM_BYTES.fetch_add(counts_bytes(&h), Ordering::Relaxed) + counts_bytes(&h);
            HISTOGRAM_PEAK.fetch_max(now, Ordering::Relaxed);
            h
        })
    }

    fn record(&mut self, ns: u64) {
        self.hist().saturating_record(ns.max(1));
    }

    #[expect(
        clippy::expect_used,
        reason = "every recorder's histograms have the same bounds, so adding cannot fail"
    )]
    fn add(&mut self, other: &Lazy) {
        if let Some(o) = &other.0 {
            self.hist().add(o).expect("same bounds");
        }
    }

    fn get(&self) -> Option<&Histogram<u64>> {
        self.0.as_ref().filter(|h| !h.is_empty())
    }
}

/// What one client thread (or injector) measured. Merged at the end of a run.
pub struct Recorder {
    actual: [Lazy; KINDS],
    intended: [Lazy; KINDS],
    queued: [Lazy; KINDS],
    /// Counts per status, per kind: a short list of static names (no allocation per
    /// operation).
    status: [Vec<(&'static str, u64)>; KINDS],
    /// This interval's latencies per kind, handed to the slot when the sampler starts
    /// a new interval.
    interval: [Option<Histogram<u64>>; KINDS],
    interval_epoch: u64,
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

/// Where a client thread records its operations: a recorder of its own, or one it
/// shares with other client threads ([`Shared`]). [`Record::recorder`] is taken once
/// per operation, after the engine answered, for all that operation records.
pub trait Record {
    fn recorder(&mut self) -> RecorderRef<'_>;
}

/// A recorder to record into: owned by the thread, or locked until dropped.
pub enum RecorderRef<'a> {
    Own(&'a mut Recorder),
    Locked(std::sync::MutexGuard<'a, Recorder>),
}

impl std::ops::Deref for RecorderRef<'_> {
    type Target = Recorder;
    fn deref(&self) -> &Recorder {
        match self {
            RecorderRef::Own(r) => r,
            RecorderRef::Locked(g) => g,
        }
    }
}

impl std::ops::DerefMut for RecorderRef<'_> {
    fn deref_mut(&mut self) -> &mut Recorder {
        match self {
            RecorderRef::Own(r) => r,
            RecorderRef::Locked(g) => g,
        }
    }
}

impl Record for Recorder {
    fn recorder(&mut self) -> RecorderRef<'_> {
        RecorderRef::Own(self)
    }
}

/// A recorder shared by several client threads, locked for each operation's records
/// (never while the engine works). Many client threads on few cores share a few
/// recorders instead of keeping about 1.5 MiB of histograms each.
pub struct Shared<'a>(pub &'a Mutex<Recorder>);

impl Record for Shared<'_> {
    /// The recorder is measurement state with no invariant a panicking client thread
    /// could break halfway (it fails the phase anyway): a lock it held is taken over.
    fn recorder(&mut self) -> RecorderRef<'_> {
        RecorderRef::Locked(
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }
}

/// Per-thread live counters read by the sampler (one cache line pair each), and the
/// interval histograms the thread hands over when the sampler moves to the next
/// interval (`epoch`).
#[repr(align(128))]
#[derive(Default)]
pub struct Slot {
    pub(crate) ops: [AtomicU64; KINDS],
    pub(crate) errors: AtomicU64,
    pub(crate) latency_ns: AtomicU64,
    /// The sampler's interval number.
    pub(crate) epoch: AtomicU64,
    /// The interval whose histograms the thread last handed over.
    pub(crate) handed_epoch: AtomicU64,
    /// Interval histograms handed over by the thread, per kind: a hand-off slot (only
    /// ever swapped whole), taken by the sampler.
    pub(crate) handed: Mutex<Vec<(usize, Histogram<u64>)>>,
}

/// Adds `n` to a live counter of a [`Slot`]. A slot has one writer, its recorder
/// (through `&mut`, or under the lock of a shared one), and the sampler only reads:
/// a load and a store, not an atomic add (a locked instruction per counter per
/// operation, on the driver's busiest thread).
fn add(counter: &AtomicU64, n: u64) {
    counter.store(
        counter.load(Ordering::Relaxed).wrapping_add(n),
        Ordering::Relaxed,
    );
}

impl Recorder {
    /// Operations that finish before `measuring_from` (warm-up) count in the
    /// timeline but not in the histograms. `slot` must be this recorder's alone: its
    /// live counters are written with a plain load and store (one writer), so two
    /// recorders on one slot would lose counts.
    pub fn new(slot: Arc<Slot>, measuring_from: Instant) -> Recorder {
        Recorder {
            actual: Default::default(),
            intended: Default::default(),
            queued: Default::default(),
            status: Default::default(),
            interval: Default::default(),
            interval_epoch: slot.epoch.load(Ordering::Relaxed),
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
        let i = kind.index();
        add(&self.slot.ops[i], 1);
        add(&self.slot.latency_ns, ns);
        let failed = !matches!(outcome, Outcome::Ok | Outcome::NotFound);
        if failed {
            add(&self.slot.errors, 1);
        }
        if end >= self.measuring_from {
            self.ops += 1;
            self.errors += u64::from(failed);
        }
        let epoch = self.slot.epoch.load(Ordering::Relaxed);
        if epoch != self.interval_epoch {
            self.hand_over(epoch);
        }
        self.interval[i]
            .get_or_insert_with(new_interval_hist)
            .saturating_record(ns.max(1));
        self.record_part(kind, intended, start, end, outcome);
    }

    /// Hands this interval's histograms to the slot for the sampler.
    fn hand_over(&mut self, epoch: u64) {
        self.interval_epoch = epoch;
        let mut handed = kvapi::sync::lock_handoff(&self.slot.handed);
        for (i, h) in self.interval.iter_mut().enumerate() {
            if let Some(h) = h.as_mut().filter(|h| !h.is_empty()) {
                let full = std::mem::replace(h, new_interval_hist());
                handed.push((i, full));
            }
        }
        drop(handed);
        self.slot.handed_epoch.store(epoch, Ordering::Release);
    }

    /// Hands over what is left of the last interval (the end of a phase); the
    /// sampler then waits for this thread no more.
    pub fn flush_interval(&mut self) {
        self.hand_over(self.interval_epoch);
        self.slot.handed_epoch.store(u64::MAX, Ordering::Release);
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
        self.actual[i].record(ns);
        if let Some(t0) = intended {
            self.intended[i].record(end.saturating_duration_since(t0).as_nanos() as u64);
            self.queued[i].record(start.saturating_duration_since(t0).as_nanos() as u64);
        }
        let name = outcome.name();
        let counts = &mut self.status[i];
        match counts.iter_mut().find(|(n, _)| *n == name) {
            Some((_, c)) => *c += 1,
            None => counts.push((name, 1)),
        }
    }

    /// Adds another recorder's measurements to this one.
    pub fn merge(&mut self, other: &Recorder) {
        self.ops += other.ops;
        self.errors += other.errors;
        self.user_read_bytes += other.user_read_bytes;
        self.user_write_bytes += other.user_write_bytes;
        for i in 0..KINDS {
            self.actual[i].add(&other.actual[i]);
            self.intended[i].add(&other.intended[i]);
            self.queued[i].add(&other.queued[i]);
            for &(k, v) in &other.status[i] {
                match self.status[i].iter_mut().find(|(n, _)| *n == k) {
                    Some((_, c)) => *c += v,
                    None => self.status[i].push((k, v)),
                }
            }
        }
    }

    fn status_map(&self, i: usize) -> BTreeMap<String, u64> {
        self.status[i]
            .iter()
            .map(|&(k, v)| (k.to_string(), v))
            .collect()
    }

    /// Per-kind summaries of the kinds that ran.
    pub fn summaries(&self) -> Vec<OpSummary> {
        let mut out = Vec::new();
        for kind in OpKind::ALL {
            let i = kind.index();
            let Some(h) = self.actual[i].get() else {
                continue;
            };
            out.push(summary(kind.ycsb_name().to_string(), h, self.status_map(i)));
            // Under a target rate: latency from the scheduled start ("intended",
            // coordinated omission corrected) and the queueing delay before the start.
            if let (Some(ih), Some(qh)) = (self.intended[i].get(), self.queued[i].get()) {
                out.push(summary(
                    format!("Intended-{}", kind.ycsb_name()),
                    ih,
                    BTreeMap::new(),
                ));
                out.push(summary(
                    format!("Queue-{}", kind.ycsb_name()),
                    qh,
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

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// The latency summary of one histogram, in microseconds, with the histogram itself.
#[expect(
    clippy::expect_used,
    reason = "serialising a histogram into a Vec does no I/O that could fail"
)]
pub(crate) fn summary(
    name: String,
    h: &Histogram<u64>,
    status: BTreeMap<String, u64>,
) -> OpSummary {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

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
