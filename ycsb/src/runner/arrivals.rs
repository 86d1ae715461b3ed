//! Scheduled start times at a target rate, and waiting for them.

use crate::rng::Rng;
use std::time::{Duration, Instant};

/// Scheduled start times at a target rate: evenly spaced, or a Poisson process.
/// Latency measured from these times includes any queueing behind late requests
/// (coordinated omission corrected).
pub(super) struct Arrivals {
    start: Instant,
    mean_s: f64,
    /// The gaps of a Poisson process (exponential, `rand_distr`), else even spacing.
    gaps: Option<rand_distr::Exp<f64>>,
    rng: Rng,
    next_s: f64,
}

impl Arrivals {
    pub(super) fn new(
        start: Instant,
        rate: f64,
        poisson: bool,
        seed: u64,
        stream: u64,
    ) -> Arrivals {
        Arrivals {
            start,
            mean_s: 1.0 / rate,
            // a positive finite rate (the driver checks --target) gives a valid λ
            gaps: if poisson {
                rand_distr::Exp::new(rate).ok()
            } else {
                None
            },
            rng: Rng::derive(seed ^ 0xA771_7A15, stream),
            next_s: 0.0,
        }
    }

    pub(super) fn peek(&self) -> Instant {
        self.start + Duration::from_secs_f64(self.next_s)
    }

    pub(super) fn advance(&mut self) {
        self.next_s += match &self.gaps {
            Some(exp) => self.rng.sample(exp),
            None => self.mean_s,
        };
    }
}

/// Sleeps until `due`, if it is still ahead.
pub(super) fn wait_until(due: Instant) {
    let now = Instant::now();
    if due > now {
        std::thread::sleep(due - now);
    }
}
