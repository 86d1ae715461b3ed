//! Recovery at open, per worker and in parallel: `recover.rs` drives it, `slab_scan.rs`
//! reads each slab (newest copy wins, tombstones to free lists), `repair.rs` writes
//! the tombstones an unclean shutdown needs, `report.rs` counts and describes them,
//! `readahead.rs` keeps the scan's reads sequential and in flight, `runs.rs` sorts and
//! merges the copies the scan finds while its reads are in flight. The clean-shutdown
//! record it reads is `clean.rs`.

mod readahead;
mod recover;
mod repair;
mod report;
mod runs;
mod slab_scan;

pub(crate) use readahead::Reads;
pub(crate) use recover::{Recovered, recover};
pub(crate) use report::Repairs;
