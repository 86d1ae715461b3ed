//! The driver's own CPU per operation, stated in every result beside the run's CPU
//! per operation (`Phase::driver_cpu_us_per_op`).
//!
//! What the driver costs cannot be told apart from what the engine costs in the run
//! itself: a closed-loop client thread runs the engine's code, and an engine's
//! completions run the injector's. So after each measured phase the same phase (the
//! same workload, seed and driving mode: threads or queue depth, target rate) runs
//! again for a short while on the null engine, whose requests do nothing, and the
//! CPU time of the driver's own threads there (the client threads, or the injector
//! and the thread that draws its operations, each read from
//! `/proc/thread-self/schedstat` at its start and end) per operation is the driver's
//! share. Reading the threads, not the process, keeps the engine's own background
//! threads (still open, compacting, flushing) out of it. The null engine's reads
//! find nothing, so the checking of values read (`dataintegrity`) is not in it. A
//! run on the null engine is calibrated the same way, so the figure means one thing
//! in every result.

use crate::error::Result;
use kvapi::Engine;
use kvtb_schema::Driving;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// How long the null engine runs the phase again.
const CALIBRATION_S: f64 = 0.5;

/// The calling thread's CPU time so far, in nanoseconds (the scheduler's time on a
/// CPU, /proc/thread-self/schedstat); `None` where the kernel does not say.
fn thread_cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// The CPU time of a phase's driver threads, each adding its own when it ends.
#[derive(Debug, Default)]
pub(super) struct DriverCpu {
    ns: AtomicU64,
    threads: AtomicU64,
    /// A thread whose CPU time could not be read.
    unknown: AtomicBool,
}

impl DriverCpu {
    /// Runs `f` on this thread, counting the CPU time it takes as the driver's.
    pub(super) fn track<R>(&self, f: impl FnOnce() -> R) -> R {
        let before = thread_cpu_ns();
        let r = f();
        match (before, thread_cpu_ns()) {
            (Some(a), Some(b)) => {
                self.ns.fetch_add(b.saturating_sub(a), Ordering::Relaxed);
                self.threads.fetch_add(1, Ordering::Relaxed);
            }
            _ => self.unknown.store(true, Ordering::Relaxed),
        }
        r
    }

    /// CPU microseconds per operation of the threads tracked, over `ops` operations.
    pub(super) fn us_per_op(&self, ops: u64) -> Option<f64> {
        let counted = self.threads.load(Ordering::Relaxed) > 0;
        (ops > 0 && counted && !self.unknown.load(Ordering::Relaxed))
            .then(|| self.ns.load(Ordering::Relaxed) as f64 / 1000.0 / ops as f64)
    }
}

/// The driver's CPU microseconds per operation for a phase driven as `d` says: the
/// phase run again by `again` on the null engine for at most [`CALIBRATION_S`]
/// seconds, `again` giving the CPU per operation of its driver threads. A
/// calibration that fails leaves the driver's share unknown; the run it is for
/// stands.
pub(super) fn driver_cost(
    d: &Driving,
    again: impl FnOnce(Arc<dyn Engine>, &Driving) -> Result<Option<f64>>,
) -> Option<f64> {
    let d = Driving {
        warmup_s: 0.0,
        warmup_until_steady_max_s: None,
        max_time_s: Some(d.max_time_s.map_or(CALIBRATION_S, |t| t.min(CALIBRATION_S))),
        // the engine's mode, not the null engine's: an engine without a native
        // asynchronous path was driven by client threads, and so is the calibration
        ..d.clone()
    };
    let null: Arc<dyn Engine> = Arc::new(baselines::null::NullEngine);
    again(null, &d).ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_that_works_counts_its_cpu_time() {
        let cpu = DriverCpu::default();
        assert_eq!(cpu.us_per_op(10), None, "no thread tracked yet");
        let spun = cpu.track(|| {
            let t = std::time::Instant::now();
            let mut x = 0u64;
            while t.elapsed() < std::time::Duration::from_millis(20) {
                x = std::hint::black_box(x.wrapping_add(1));
            }
            x
        });
        assert!(spun > 0);
        if thread_cpu_ns().is_some() {
            // 20 ms of spinning over 1000 operations: up to 20 us each (less on a busy machine)
            let us = cpu.us_per_op(1000).unwrap();
            assert!(us > 0.5 && us <= 1000.0, "{us}");
            assert_eq!(cpu.us_per_op(0), None);
        }
    }
}
