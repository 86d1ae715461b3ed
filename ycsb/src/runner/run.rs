//! The run phase: the workload's operation mix until `operationcount` operations or
//! the time limit, each client thread drawing from its own seeded stream.

use super::arrivals::{Arrivals, wait_until};
use super::blocking::exec_blocking;
use super::closed_loop::{Mode, fan_out, mode, with_native};
use super::driver_cost::driver_cost;
use super::injector::{self, Plan};
use super::phase::{Clock, Ctx, Measured, StopWhen};
use super::versions::Versions;
use crate::error::Result;
use crate::generator::AckCounter;
use crate::workload::{OpKind, OpStream, Workload};
use kvapi::Engine;
use kvtb_schema::{Driving, Phase};
use std::sync::Arc;

/// The run phase: the workload's operation mix until `operationcount` operations or
/// the time limit.
/// The result states the driver's own CPU per operation (see `driver_cost`).
pub fn run(engine: Arc<dyn Engine>, w: Arc<Workload>, d: &Driving, ctx: &Ctx) -> Result<Phase> {
    let d = &with_native(&engine, d);
    let (mut phase, _) = measure_run(engine, w.clone(), d, ctx, "run", "run", None)?;
    phase.driver_cpu_us_per_op = driver_cost(d, |null, d| {
        measure_run(null, w, d, &Ctx::default(), "run", "run", None).map(|(_, own)| own)
    });
    Ok(phase)
}

/// The run phase under another name (`warmup`), ended early when `stop_when` says so.
pub(super) fn run_phase(
    engine: Arc<dyn Engine>,
    w: Arc<Workload>,
    d: &Driving,
    ctx: &Ctx,
    name: &str,
    label: &str,
    stop_when: Option<StopWhen>,
) -> Result<Phase> {
    measure_run(engine, w, d, ctx, name, label, stop_when).map(|(p, _)| p)
}

/// The run phase as measured, and the CPU microseconds per operation of its driver
/// threads.
fn measure_run(
    engine: Arc<dyn Engine>,
    w: Arc<Workload>,
    d: &Driving,
    ctx: &Ctx,
    name: &str,
    label: &str,
    stop_when: Option<StopWhen>,
) -> Result<(Phase, Option<f64>)> {
    // operationcount=0 is no limit, as in YCSB (the time limit ends the phase)
    let opcount = if (d.max_time_s.is_some() && name == "warmup") || w.operationcount == 0 {
        u64::MAX
    } else {
        w.operationcount as u64
    };
    let clock = Clock::new(d.warmup_s, d.max_time_s);
    let total = (d.max_time_s.is_none() && opcount != u64::MAX).then_some(opcount);
    let m = Measured::start(name, label, clock, total, ctx, stop_when)?;
    let acks = Arc::new(AckCounter::new(w.recordcount));
    let poisson = d.arrival == "poisson";
    let rec = match mode(&engine, d) {
        Mode::Injector(qd) => {
            let mut stream = OpStream::new(w.clone(), acks.clone(), d.seed, 0);
            let mut issued = 0u64;
            let mut ops = std::iter::from_fn(|| {
                (issued < opcount).then(|| {
                    issued += 1;
                    stream.next_op()
                })
            });
            let plan = Plan {
                qd,
                target: d.target_ops.map(|r| (r, poisson)),
                verify: w.dataintegrity,
                acks: Some(&acks),
                poll_mark: true,
            };
            injector::drive(engine, &mut ops, &plan, &m)?
        }
        Mode::Threads(threads) => fan_out(threads, &m, |t, rec| {
            // YCSB splits the operation count evenly over the threads.
            let budget =
                opcount / threads as u64 + u64::from((t as u64) < opcount % threads as u64);
            let mut arrivals = d.target_ops.map(|r| {
                Arrivals::new(m.clock.start, r / threads as f64, poisson, d.seed, t as u64)
            });
            let verify = w.dataintegrity;
            let mut stream = OpStream::new(w.clone(), acks.clone(), d.seed, t as u64);
            let mut versions = Versions::new(t);
            let mut buf = Vec::new();
            let mut i = 0u64;
            while i < budget && !m.clock.over() {
                let intended = arrivals.as_ref().map(Arrivals::peek);
                if let Some(a) = arrivals.as_mut() {
                    a.advance();
                }
                if let Some(due) = intended {
                    wait_until(due);
                }
                let op = stream.next_op();
                exec_blocking(
                    engine.as_ref(),
                    &op,
                    &mut versions,
                    &mut buf,
                    verify,
                    rec,
                    intended,
                );
                if op.kind == OpKind::Insert
                    && let Err(e) = stream.acknowledge_insert(op.keynum)
                {
                    m.ctx.notice(&e);
                    m.clock.stop();
                }
                if i.is_multiple_of(256) {
                    m.mark.poll();
                }
                i += 1;
            }
        })?,
    };
    let own = m.driver_cpu.us_per_op(rec.measured_ops());
    Ok((m.finish(rec), own))
}
