//! The closed loop: client threads that each issue one operation at a time. The
//! threads are started, given their recorders and joined here, for every phase.

use super::phase::Measured;
use crate::error::{Error, Result};
use crate::measure::Recorder;

/// Runs `body(thread, recorder)` on `threads` client threads (at least one), each
/// recording on its own slot of the timeline, and merges what they measured.
pub(super) fn fan_out<F>(threads: usize, m: &Measured<'_>, body: F) -> Result<Recorder>
where
    F: Fn(usize, &mut Recorder) + Sync,
{
    let from = m.clock.measure_from;
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads.max(1))
            .map(|t| {
                let (slot, body, cpu) = (m.slot(), &body, &m.driver_cpu);
                s.spawn(move || {
                    cpu.track(|| {
                        let mut rec = Recorder::new(slot, from);
                        body(t, &mut rec);
                        rec.flush_interval();
                        rec
                    })
                })
            })
            .collect();
        let mut merged: Option<Recorder> = None;
        for h in handles {
            let rec = h
                .join()
                .map_err(|_| Error::failed("a client thread panicked"))?;
            match merged.as_mut() {
                Some(all) => all.merge(&rec),
                None => merged = Some(rec),
            }
        }
        merged.ok_or_else(|| Error::failed("no client thread ran"))
    })
}
