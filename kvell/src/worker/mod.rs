//! A worker: one thread that owns a share of the keys (chosen by key hash, see
//! `route.rs`), its own index, page cache, slab files, free lists and I/O ring.
//!
//! A request's way, file by file:
//! - `run.rs`: the event loop takes requests from the bounded queue, steps each as
//!   far as it can go without waiting, hands queued I/O to the backend and reaps
//!   completions as they arrive (it never waits for a whole batch);
//! - `keys.rs`: a write first takes its key (per-key write ordering);
//! - `read.rs` (gets) and `write.rs` (puts, deletes) find the slot in the index and
//!   the unit (page or large slot) that holds it, answer from the page cache, or
//!   prepare the unit's image and queue its I/O;
//! - `units.rs`: at most one I/O per unit is in flight; requests that need a busy unit
//!   wait there (a write may still join a prepared one);
//! - `queue.rs`: the I/O queue: batches of at most `batch`, at most `queue_depth` in
//!   flight, writes of consecutive pages joined into one I/O;
//! - `complete.rs`: a completion puts the page in the cache, acknowledges the requests
//!   that were waiting for the write, and steps the ones waiting for the unit;
//! - `memory.rs`: once per turn, the page cache is fitted to the memory budget and
//!   the memory gauges are stored;
//! - `state.rs` holds the worker's state, `op.rs` a request as the worker keeps it.

mod complete;
mod keys;
mod memory;
mod op;
mod queue;
mod read;
mod run;
mod state;
mod units;
mod write;

pub(crate) use queue::buffer_pool;
pub(crate) use state::{Parts, Worker};
