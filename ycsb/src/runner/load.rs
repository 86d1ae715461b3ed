//! The load phase: insert the records, each value version 0 of its key.

use super::closed_loop::{Mode, fan_out, mode, with_native};
use super::driver_cost::driver_cost;
use super::injector::{self, Plan};
use super::outcome::outcome_of;
use super::phase::{Clock, Ctx, Measured};
use crate::error::Result;
use crate::generator::AckCounter;
use crate::record;
use crate::workload::{Op, OpKind, OpStream, Workload};
use kvapi::Engine;
use kvtb_schema::{Driving, Phase};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Inserts the workload's records (`insertstart .. insertstart + insertcount`) with
/// value version 0.
pub fn load(engine: Arc<dyn Engine>, w: Arc<Workload>, d: &Driving, ctx: &Ctx) -> Result<Phase> {
    let (start, seed) = (w.insertstart, d.seed);
    // the load numbers its keys itself: the streams' counter is never used, so
    // the threads share one
    let acks = Arc::new(AckCounter::new(0));
    load_items(
        engine,
        w.insertcount as u64,
        // the injector's one stream is `u64::MAX` (stream 999999, as release builds
        // always made it: a plain add overflowed in debug builds)
        |t| OpStream::new(w.clone(), acks.clone(), seed, 1_000_000u64.wrapping_add(t)),
        |stream, i| {
            let n = start + i as i64;
            (w.key(n), stream.value_len_for(n))
        },
        w.fields,
        d,
        ctx,
        "load",
    )
}

/// Inserts `count` items, item `i` given by `item` with per-thread state from `init`
/// (called with the thread's index), through the driving mode of `d`. Values are
/// records of `fields` fields at version 0 of their key. The result states the
/// driver's own CPU per operation (see `driver_cost`).
#[expect(
    clippy::too_many_arguments,
    reason = "a phase's parts, each named at the call"
)]
pub fn load_items<S, I, F>(
    engine: Arc<dyn Engine>,
    count: u64,
    init: I,
    item: F,
    fields: usize,
    d: &Driving,
    ctx: &Ctx,
    phase: &str,
) -> Result<Phase>
where
    S: Send,
    I: Fn(u64) -> S + Sync,
    F: Fn(&mut S, u64) -> (String, usize) + Sync,
{
    let items = Items {
        count,
        init: &init,
        item: &item,
        fields,
    };
    let d = &with_native(&engine, d);
    let (mut p, _) = measure_load(engine, &items, d, ctx, phase, None)?;
    p.driver_cpu_us_per_op = driver_cost(d, |null, d| {
        let (_, own) = measure_load(null, &items, d, &Ctx::default(), phase, d.max_time_s)?;
        Ok(own)
    });
    Ok(p)
}

/// What a load inserts: `count` items, item `i` given by `item` with per-thread
/// state from `init`, values of `fields` fields.
struct Items<'a, I, F> {
    count: u64,
    init: &'a I,
    item: &'a F,
    fields: usize,
}

/// The load as measured (for at most `limit_s` seconds), and the CPU microseconds
/// per operation of its driver threads.
fn measure_load<S, I, F>(
    engine: Arc<dyn Engine>,
    items: &Items<'_, I, F>,
    d: &Driving,
    ctx: &Ctx,
    phase: &str,
    limit_s: Option<f64>,
) -> Result<(Phase, Option<f64>)>
where
    S: Send,
    I: Fn(u64) -> S + Sync,
    F: Fn(&mut S, u64) -> (String, usize) + Sync,
{
    let Items {
        count,
        init,
        item,
        fields,
    } = *items;
    let m = Measured::start(
        phase,
        phase,
        Clock::new(0.0, limit_s),
        Some(count),
        ctx,
        None,
    )?;
    let next = AtomicU64::new(0);
    let rec = match mode(&engine, d) {
        Mode::Injector(qd) => {
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
                        fields,
                        field: None,
                    }
                })
            });
            let plan = Plan {
                qd,
                target: None,
                verify: false,
                acks: None,
                poll_mark: false,
            };
            injector::drive(engine, &mut ops, &plan, &m)?
        }
        Mode::Threads(threads) => fan_out(threads, &m, |t, rec| {
            let mut state = init(t as u64);
            let mut buf = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= count || m.clock.over() {
                    break;
                }
                let (key, len) = item(&mut state, i);
                record::make_into(key.as_bytes(), 0, len, fields, &mut buf);
                let t0 = Instant::now();
                let r = engine.insert(key.as_bytes(), &buf);
                let t1 = Instant::now();
                let mut rec = rec.recorder();
                rec.record(OpKind::Insert, None, t0, t1, outcome_of(&r));
                rec.bytes(t1, 0, (key.len() + buf.len()) as u64);
            }
        })?,
    };
    let own = m.driver_cpu.us_per_op(rec.measured_ops());
    Ok((m.finish(rec), own))
}
