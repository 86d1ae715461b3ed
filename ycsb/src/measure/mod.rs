//! Measurement: what each client thread records ([`Recorder`]) and the per-second
//! timeline a background thread samples from their live counters ([`Sampler`]).

pub mod govern;
mod recorder;
mod sampler;
pub mod watch;

pub(crate) use recorder::summary;
pub use recorder::{
    Outcome, Record, Recorder, RecorderRef, Shared, Slot, histogram_bytes, histogram_peak,
    reset_histogram_peak,
};
pub use sampler::{Sampler, Tick};
pub use watch::Watch;
