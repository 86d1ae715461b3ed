//! The warm-up before a measured run: the run's own mix (inserts and deletes turned
//! into reads, so the key set stays the same), from a stream of its own, until the
//! engine's cache reaches a steady state or a time limit passes. Every engine is then
//! measured from a warm cache, not from whatever its own load left in it.
//!
//! Steady means: over the last [`WINDOW`] one-second intervals, throughput within
//! ±[`TPUT_SPREAD`] of its mean, and the engine's cache hit ratio within
//! [`HIT_SPREAD`] (absolute) where the engine counts hits and misses; for an engine that
//! does not, the bytes the process read from storage per operation (every cache's
//! misses, /proc/self/io) within ±[`READ_SPREAD`] of their mean or [`READ_FLOOR`]
//! bytes. At least [`MIN_SECONDS`] always run.

use super::phase::{Ctx, StopWhen};
use super::run::run_phase;
use crate::error::Result;
use crate::workload::Workload;
use kvapi::Engine;
use kvtb_schema::{Driving, Phase, Sample, Warmup};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

pub const WINDOW: usize = 3;
pub const MIN_SECONDS: f64 = 3.0;
pub const TPUT_SPREAD: f64 = 0.10;
pub const HIT_SPREAD: f64 = 0.01;
pub const READ_SPREAD: f64 = 0.05;
pub const READ_FLOOR: f64 = 64.0;
/// The warm-up's operation stream: its own, so the measured run's stream is the same
/// for every engine.
const STREAM_SEED: u64 = 0x5741_524d_5550;

/// The criterion in words, for the result.
pub fn criterion(max_s: f64) -> String {
    format!(
        "the run's mix without inserts or deletes until, over {WINDOW} one-second intervals, \
         throughput stays within ±{:.0}% and the cache hit ratio within {:.0} point (or, \
         for an engine without a hit counter, storage bytes read per operation within \
         ±{:.0}%); at least {MIN_SECONDS} s, at most {max_s} s",
        TPUT_SPREAD * 100.0,
        HIT_SPREAD * 100.0,
        READ_SPREAD * 100.0
    )
}

/// One interval as the criterion sees it.
#[derive(Clone, Copy, Debug)]
struct Point {
    t: f64,
    ops_s: f64,
    hit: Option<f64>,
    read_per_op: Option<f64>,
}

fn point(s: &Sample) -> Point {
    Point {
        t: s.t,
        ops_s: s.ops_per_sec,
        hit: s.cache_hit_ratio,
        read_per_op: s
            .proc_read_bytes
            .filter(|_| s.total_ops > 0)
            .map(|b| b as f64 / s.total_ops as f64),
    }
}

fn spread(xs: &[f64]) -> (f64, f64) {
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mean = xs.iter().sum::<f64>() / xs.len() as f64;
    (hi - lo, mean)
}

/// Whether the last [`WINDOW`] points are steady.
fn steady(w: &VecDeque<Point>) -> bool {
    if w.len() < WINDOW || w.back().is_none_or(|p| p.t < MIN_SECONDS) {
        return false;
    }
    let tput: Vec<f64> = w.iter().map(|p| p.ops_s).collect();
    let (d, mean) = spread(&tput);
    if mean <= 0.0 || d > 2.0 * TPUT_SPREAD * mean {
        return false;
    }
    let hits: Option<Vec<f64>> = w.iter().map(|p| p.hit).collect();
    if let Some(h) = hits {
        return spread(&h).0 <= HIT_SPREAD;
    }
    let reads: Option<Vec<f64>> = w.iter().map(|p| p.read_per_op).collect();
    match reads {
        Some(r) => {
            let (d, mean) = spread(&r);
            d <= (2.0 * READ_SPREAD * mean).max(READ_FLOOR)
        }
        None => true,
    }
}

/// The state the stop rule keeps, shared with the result.
#[derive(Default)]
struct Seen {
    window: VecDeque<Point>,
    steady: bool,
}

/// Runs the warm-up for at most `max_s` seconds; the phase is named `warmup` and
/// carries how long it took and whether it became steady.
pub fn warmup(
    engine: Arc<dyn Engine>,
    w: &Workload,
    d: &Driving,
    ctx: &Ctx,
    max_s: f64,
) -> Result<Phase> {
    let wl = Arc::new(w.for_warmup());
    let mut dw = d.clone();
    dw.warmup_s = 0.0;
    dw.max_time_s = Some(max_s);
    dw.seed = d.seed ^ STREAM_SEED;
    // a hand-off slot: only the stop rule writes it, the result reads it at the end
    let seen = Arc::new(Mutex::new(Seen::default()));
    let s2 = seen.clone();
    let stop: StopWhen = Box::new(move |s| {
        let mut g = kvapi::sync::lock_handoff(&s2);
        g.window.push_back(point(s));
        if g.window.len() > WINDOW {
            g.window.pop_front();
        }
        g.steady = steady(&g.window);
        g.steady
    });
    let mut p = run_phase(engine, wl, &dw, ctx, "warmup", "warm-up", Some(stop))?;
    let g = kvapi::sync::lock_handoff(&seen);
    let last = g.window.back().copied();
    p.warmup = Some(Warmup {
        seconds: p.runtime_ms / 1000.0,
        operations: p.operations,
        steady: g.steady,
        criterion: criterion(max_s),
        hit_ratio: last.and_then(|l| l.hit),
        read_bytes_per_op: last.and_then(|l| l.read_per_op),
    });
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts(v: &[(f64, f64, Option<f64>, Option<f64>)]) -> VecDeque<Point> {
        v.iter()
            .map(|&(t, ops_s, hit, read_per_op)| Point {
                t,
                ops_s,
                hit,
                read_per_op,
            })
            .collect()
    }

    #[test]
    fn steady_needs_a_stable_hit_ratio_and_throughput() {
        // hit ratio still climbing
        assert!(!steady(&pts(&[
            (3.0, 100.0, Some(0.60), None),
            (4.0, 100.0, Some(0.65), None),
            (5.0, 100.0, Some(0.70), None)
        ])));
        // flat hit ratio and throughput
        assert!(steady(&pts(&[
            (3.0, 100.0, Some(0.850), None),
            (4.0, 104.0, Some(0.853), None),
            (5.0, 98.0, Some(0.856), None)
        ])));
        // throughput still rising
        assert!(!steady(&pts(&[
            (3.0, 60.0, Some(0.85), None),
            (4.0, 80.0, Some(0.85), None),
            (5.0, 100.0, Some(0.85), None)
        ])));
        // too early, too few points
        assert!(!steady(&pts(&[
            (1.0, 100.0, Some(0.85), None),
            (2.0, 100.0, Some(0.85), None),
            (2.5, 100.0, Some(0.85), None)
        ])));
        assert!(!steady(&pts(&[(5.0, 100.0, Some(0.85), None)])));
    }

    #[test]
    fn without_a_hit_counter_reads_per_op_decide() {
        assert!(!steady(&pts(&[
            (3.0, 100.0, None, Some(3000.0)),
            (4.0, 100.0, None, Some(2500.0)),
            (5.0, 100.0, None, Some(2000.0))
        ])));
        assert!(steady(&pts(&[
            (3.0, 100.0, None, Some(2000.0)),
            (4.0, 100.0, None, Some(2040.0)),
            (5.0, 100.0, None, Some(1990.0))
        ])));
        // served from memory: a few bytes per op either way
        assert!(steady(&pts(&[
            (3.0, 100.0, None, Some(0.0)),
            (4.0, 100.0, None, Some(30.0)),
            (5.0, 100.0, None, Some(0.0))
        ])));
    }
}
