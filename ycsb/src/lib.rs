//! The kvell-testbed driver: YCSB workloads with generators compatible with YCSB's,
//! measurement, and the result documents of the `ycsb` command (whose command line,
//! in `src/cli/`, is part of the binary only: this library prints nothing).
//!
//! What a request's way through the driver reads like, by module:
//! - the workload: [`props`] (property files), [`workload`] (YCSB's core workload and
//!   the operation streams), [`generator`] (YCSB's distributions), [`rng`], [`value`]
//!   (values that verify themselves), [`trace`] (traces to replay);
//! - the engines: [`engines`] (opening one by name);
//! - driving them: [`runner`] (closed loop, injector, replay), [`donequeue`] (the
//!   injector's completion queue);
//! - measuring: [`measure`] (recorders and the timeline), [`procfs`] (what the kernel
//!   counts), [`device`] (device use and ceiling), [`machine`];
//! - the results: [`results`] (documents of the `kvtb-schema` crate, written and
//!   read), [`report`] (YCSB's text summary, the comparison table);
//! - the other measurements: [`probe`] (the device roofline), [`iomethods`] (the
//!   paper's Table 3), [`recovery`] (reopen time after a kill), [`crash`] (the
//!   durability audit).
//!
//! Errors are [`Error`]; the binary prints them.

pub mod compat;
pub mod crash;
pub mod device;
pub mod donequeue;
pub mod engines;
pub mod error;
pub mod generator;
pub mod iomethods;
pub mod machine;
pub mod measure;
pub mod memory;
pub mod merge;
pub mod probe;
pub mod procfs;
pub mod props;
pub mod record;
pub mod recovery;
pub mod report;
pub mod results;
pub mod rng;
pub mod runner;
pub mod trace;
pub mod value;
pub mod workload;

pub use error::{Error, Result};
