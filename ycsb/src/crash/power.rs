//! `ycsb crash --power`: power cuts for engines that write through the kernel's file
//! system (RocksDB, sled, WiredTiger, the WAL engine). The writer runs under the
//! powercut layer, which records its file calls and its protocol lines in one order;
//! before the kill the layer is frozen, and the recording must replay onto the copy
//! taken before the cycle to exactly the directory the child left (else the cycle
//! fails: something was written past the layer). At cuts (after syncs and
//! acknowledgements, at random records, at the end) the directories a power cut
//! could leave are built by powercut's ext4 data=ordered model (`synced`: only what
//! was synced; `all`: everything, what a kill leaves; random: unsynced changes
//! kept, dropped or torn at 512 B sectors), the engine opened on each, and every key
//! checked against the writes acknowledged before the cut (a write acknowledged after
//! it is pending there). Method and limits: powercut/DESIGN.md.

use super::model::Model;
use super::protocol;
use crate::error::{Error, Result};
use kvapi::Engine;
use kvtb_schema::{CrashCycle as Cycle, CrashPower};
use powercut::cuts::{self, Plan as CutPlan};
use powercut::{Durable, History, Recorder, State};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// How long the frozen child may take to finish its calls in flight.
pub const FREEZE_TIMEOUT: Duration = Duration::from_secs(60);

/// The model the images follow, as the result states it.
pub const MODEL: &str = "ext4 data=ordered, held to its promises (powercut)";

/// What a power audit needs besides the kill audit's own.
pub struct Power<'a> {
    /// The recording's work directory (emptied each cycle).
    pub work: PathBuf,
    /// Where each image is built (emptied for each).
    pub image: PathBuf,
    /// Cuts per cycle after syncs and acknowledgements, and at random records.
    pub at_events: usize,
    pub random_cuts: usize,
    /// Random states per cut, besides `synced` and `all`.
    pub random_states: usize,
    /// Whether the class allows acknowledged writes lost at a power cut.
    pub loss_allowed: bool,
    /// Opens the engine on a directory laid out as the audit's data directory.
    pub open_at: &'a dyn Fn(&Path) -> Result<Arc<dyn Engine>>,
}

/// One image that failed, for the audit's failure and the kept evidence.
pub struct Broken {
    pub what: String,
    /// Where the image was moved.
    pub kept: PathBuf,
}

fn perr(what: &str) -> impl FnOnce(powercut::Error) -> Error {
    let what = what.to_string();
    move |e| Error::failed(format!("{what}: {e}"))
}

impl Power<'_> {
    /// Prepares the recording of this cycle: the data directory as the previous
    /// clean close left it is the base.
    pub fn prepare(&self, data: &Path) -> Result<Recorder> {
        Recorder::prepare(data, &self.work).map_err(perr("preparing the recording"))
    }

    /// Checks the images of one recorded cycle: `model` is the key states before the
    /// cycle (cloned for each image), `cycle` counts into `c` and `sum`. `Ok(Some)`:
    /// an image lost what the class promises, held a corrupt value or did not open.
    #[expect(clippy::too_many_arguments, reason = "one cycle's parts")]
    pub fn check(
        &self,
        rec: &Recorder,
        data: &Path,
        model: &Model,
        cycle: u64,
        seed: u64,
        c: &mut Cycle,
        sum: &mut CrashPower,
    ) -> Result<Option<Broken>> {
        let recording = rec.recording().map_err(perr("reading the recording"))?;
        sum.recorded_ops += recording.records.len() as u64;
        sum.recorded_bytes += recording.bytes.len() as u64;
        let mut h = History::new(recording, &rec.base())
            .map_err(perr("the recording cannot stand for the run"))?;
        h.verify(data)
            .map_err(perr("the recording cannot stand for the run"))?;
        let lines = h.lines();
        let acks: Vec<usize> = lines
            .iter()
            .filter(|(l, _)| l.starts_with("A "))
            .map(|&(_, i)| i)
            .collect();
        let plan = CutPlan {
            at_events: self.at_events,
            random: self.random_cuts,
            seed: seed ^ cycle.wrapping_mul(0x9E37_79B9_7F4A_7C15),
        };
        let mut images = 0;
        for cut in cuts::choose(&h, &acks, plan) {
            sum.cuts += 1;
            // what the child had said when the power failed
            let said: Vec<String> = lines
                .iter()
                .filter(|(_, i)| *i < cut.index)
                .map(|(l, _)| l.clone())
                .collect();
            let events = protocol::parse(&said)?;
            let d = Durable::at(&h, cut.index);
            let mut rng = powercut::rng::Rng::new(plan.seed ^ cut.index as u64);
            let mut states = vec![State::synced(&d), State::all(&d)];
            states.extend((0..self.random_states).map(|_| State::random(&d, &mut rng)));
            for s in states {
                let name = s.variant.name();
                powercut::layer::remove_tree(&self.image).map_err(perr("clearing the image"))?;
                powercut::image::build(&h, &s, &self.image).map_err(perr("building an image"))?;
                images += 1;
                sum.images += 1;
                *sum.images_by_state.entry(name.to_string()).or_default() += 1;
                let at = format!(
                    "the power-cut image '{name}' at record {} of {} ({} cut; {})",
                    cut.index,
                    h.recording.records.len(),
                    cut.why.name(),
                    s.describe(&h, &d)
                );
                let mut ic = Cycle {
                    cycle,
                    ..Cycle::default()
                };
                // a class that promises nothing across a power cut may refuse an
                // image with an error (counted); for class power that is a failure
                let refused = |sum: &mut CrashPower, what: String| {
                    if self.loss_allowed {
                        sum.refused += 1;
                        None
                    } else {
                        Some(what)
                    }
                };
                // an engine that panics on a damaged directory is caught and counted
                let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    let engine = (self.open_at)(&self.image).map_err(|e| (true, e))?;
                    let mut m = model.clone();
                    let checked = m.check(engine.as_ref(), cycle, &events, &mut ic);
                    let closed = engine.close();
                    drop(engine);
                    Ok::<_, (bool, Error)>((checked, closed))
                }));
                let problem = match caught {
                    Err(p) => {
                        sum.panicked += 1;
                        let why = p
                            .downcast_ref::<&str>()
                            .map(|s| s.to_string())
                            .or_else(|| p.downcast_ref::<String>().cloned())
                            .unwrap_or_default();
                        refused(sum, format!("{at}: the engine panicked: {why}"))
                    }
                    Ok(Err((_, e))) => refused(sum, format!("{at} does not open: {e}")),
                    Ok(Ok((checked, closed))) => match (checked, closed) {
                        (Err(e), _) => refused(sum, format!("{at}: the check failed: {e}")),
                        (Ok(()), Err(e)) => {
                            Some(format!("{at}: closing after the check failed: {e}"))
                        }
                        (Ok(()), Ok(())) => {
                            sum.acknowledged_at_cuts += ic.acknowledged;
                            sum.lost += ic.lost;
                            sum.corrupt += ic.corrupt;
                            (ic.corrupt > 0 || (ic.lost > 0 && !self.loss_allowed)).then(|| {
                                format!(
                                    "{at}: {} keys lost and {} corrupt: {}",
                                    ic.lost,
                                    ic.corrupt,
                                    ic.problems.join("; ")
                                )
                            })
                        }
                    },
                };
                if let Some(what) = problem {
                    let kept = data.with_file_name(format!(
                        "{}-power-cycle{cycle}-{name}-{}",
                        data.file_name()
                            .map_or_else(|| "data".into(), |n| n.to_string_lossy()),
                        cut.index
                    ));
                    powercut::layer::remove_tree(&kept).map_err(perr("clearing a kept image"))?;
                    powercut::image::build(&h, &s, &kept).map_err(perr("keeping an image"))?;
                    c.power_images = Some(images);
                    return Ok(Some(Broken { what, kept }));
                }
            }
        }
        powercut::layer::remove_tree(&self.image).map_err(perr("clearing the image"))?;
        c.power_images = Some(images);
        Ok(None)
    }
}
