//! Runs the load, run and replay phases against an engine: closed loop with N client
//! threads (optionally throttled to a target rate, YCSB's `-target`), or asynchronous
//! with a queue depth from one injector thread (the KVell way).
//!
//! A phase is set up once ([`phase`]: its clock, the timeline sampler, the warm-up
//! mark, the result); each phase ([`load`], [`run`], [`replay`]) says what one client
//! thread does and what the injector is fed. The threads are started in one place
//! ([`closed_loop`]), the injector lives in [`injector`], and one operation through
//! the blocking interface in [`blocking`].

mod ahead;
mod arrivals;
mod blocking;
mod closed_loop;
mod driver_cost;
mod injector;
mod load;
mod outcome;
mod phase;
mod replay;
mod run;
mod versions;
mod warmup;

pub use closed_loop::recorders_for;
pub use load::{load, load_items};
pub use outcome::{OVER_BUDGET_KIND, first_error, over_budget};
pub use phase::{Ctx, Notice, Progress, StopWhen};
pub use replay::replay;
pub use run::run;
pub use warmup::{criterion as warmup_criterion, warmup};
