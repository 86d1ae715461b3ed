//! The kvell-testbed driver: YCSB workloads with generators compatible with YCSB's,
//! measurement, result files and the `ycsb` command line.

pub mod cli;
pub mod crash;
pub mod device;
pub mod donequeue;
pub mod engines;
pub mod generator;
pub mod iomethods;
pub mod machine;
pub mod measure;
pub mod memory;
pub mod probe;
pub mod props;
pub mod recovery;
pub mod report;
pub mod rng;
pub mod runner;
pub mod trace;
pub mod value;
pub mod workload;
