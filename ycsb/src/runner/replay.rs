//! The replay of a trace: its operations in trace order, from client threads that take
//! the next one each, or from the injector. An operation that carries a scheduled
//! time (`at`, a timed replay) is not started before it, and its intended latency
//! counts from it.

use super::arrivals::wait_until;
use super::blocking::exec_blocking;
use super::closed_loop::fan_out;
use super::injector::{self, Plan};
use super::phase::{Clock, Ctx, Measured};
use super::versions::Versions;
use crate::error::Result;
use crate::workload::Op;
use kvapi::Engine;
use kvtb_schema::{Driving, Phase};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Replays `ops` against the engine through the driving mode of `d`; the result is
/// the run phase's.
pub fn replay(engine: Arc<dyn Engine>, ops: Arc<Vec<Op>>, d: &Driving, ctx: &Ctx) -> Result<Phase> {
    let clock = Clock::new(d.warmup_s, d.max_time_s);
    let m = Measured::start("run", "replay", clock, Some(ops.len() as u64), ctx, None)?;
    let rec = if let Some(qd) = d.queue_depth {
        let mut it = ops.iter().cloned();
        let plan = Plan {
            qd,
            target: None,
            verify: false,
            acks: None,
            poll_mark: true,
        };
        injector::drive(engine, &mut it, &plan, &m)?
    } else {
        let next = AtomicU64::new(0);
        fan_out(d.threads, &m, |t, rec| {
            let mut versions = Versions::new(t);
            let mut buf = Vec::new();
            while !m.clock.over() {
                let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                let Some(op) = ops.get(i) else { break };
                let intended = op.at.map(|at| m.clock.start + at);
                if let Some(due) = intended {
                    wait_until(due);
                }
                exec_blocking(
                    engine.as_ref(),
                    op,
                    &mut versions,
                    &mut buf,
                    false,
                    rec,
                    intended,
                );
                if i.is_multiple_of(256) {
                    m.mark.poll();
                }
            }
        })?
    };
    Ok(m.finish(rec))
}
