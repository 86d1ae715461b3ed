//! The replay of a trace: its operations in trace order, from client threads that take
//! the next one each, or from the injector. An operation that carries a scheduled
//! time (`at`, a timed replay) is not started before it, and its intended latency
//! counts from it.

use super::arrivals::wait_until;
use super::blocking::exec_blocking;
use super::closed_loop::{Mode, fan_out, mode, with_native};
use super::driver_cost::driver_cost;
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
/// The result states the driver's own CPU per operation (see `driver_cost`).
pub fn replay(engine: Arc<dyn Engine>, ops: Arc<Vec<Op>>, d: &Driving, ctx: &Ctx) -> Result<Phase> {
    let d = &with_native(&engine, d);
    let (mut phase, _) = measure_replay(engine, ops.clone(), d, ctx)?;
    phase.driver_cpu_us_per_op = driver_cost(d, |null, d| {
        measure_replay(null, ops, d, &Ctx::default()).map(|(_, own)| own)
    });
    Ok(phase)
}

/// The replay as measured, and the CPU microseconds per operation of its driver
/// threads.
fn measure_replay(
    engine: Arc<dyn Engine>,
    ops: Arc<Vec<Op>>,
    d: &Driving,
    ctx: &Ctx,
) -> Result<(Phase, Option<f64>)> {
    let clock = Clock::new(d.warmup_s, d.max_time_s);
    let m = Measured::start("run", "replay", clock, Some(ops.len() as u64), ctx, None)?;
    let rec = match mode(&engine, d) {
        Mode::Injector(qd) => {
            let mut it = ops.iter().cloned();
            let plan = Plan {
                qd,
                target: None,
                verify: false,
                acks: None,
                poll_mark: true,
            };
            injector::drive(engine, &mut it, &plan, &m)?
        }
        Mode::Threads(threads) => {
            let next = AtomicU64::new(0);
            fan_out(threads, &m, |t, rec| {
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
        }
    };
    let own = m.driver_cpu.us_per_op(rec.measured_ops());
    Ok((m.finish(rec), own))
}
