//! The options every workload-driving subcommand shares: which workload, and how to
//! drive the engine with it.

use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug, Clone)]
pub(super) struct WorkloadArgs {
    /// Workload: A..F (YCSB's core workloads) or a workload file.
    #[arg(short = 'w', long = "workload")]
    pub(super) workload: Option<String>,
    /// A YCSB property file (repeatable; later files override earlier ones).
    #[arg(short = 'P', value_name = "FILE")]
    pub(super) property_files: Vec<PathBuf>,
    /// A property override, key=value (repeatable; engine options are
    /// <engine>.<option>=value, e.g. -p sled.cache=1G).
    #[arg(short = 'p', value_name = "KEY=VALUE")]
    pub(super) props: Vec<String>,
    /// Seed of every random stream: the same seed gives the same operations.
    #[arg(long, default_value_t = 1)]
    pub(super) seed: u64,
}

#[derive(Args, Debug, Clone)]
pub(super) struct DriveArgs {
    /// Client threads (closed loop); YCSB's threadcount.
    #[arg(long)]
    pub(super) threads: Option<usize>,
    /// Target rate in operations per second, all threads together; latency is then
    /// also measured from each operation's intended start.
    #[arg(long)]
    pub(super) target: Option<f64>,
    /// Arrivals at the --target rate: constant (YCSB's evenly spaced schedule) or
    /// poisson (open loop with exponential gaps).
    #[arg(long, default_value = "constant")]
    pub(super) arrival: String,
    /// Keep this many requests in flight: from one injector through the engine's
    /// native asynchronous path, or (an engine without one) as --adapter says.
    #[arg(long)]
    pub(super) qd: Option<usize>,
    /// How --qd drives an engine without a native asynchronous path: threads (as many
    /// closed-loop client threads as requests in flight, each engine in its best mode)
    /// or pool (one injector through a thread-pool adapter, a thread hop per request).
    #[arg(long, default_value = "threads")]
    pub(super) adapter: String,
    /// Warm-up before the measured run: SECONDS at the start of the run phase left out
    /// of the measurement, or `auto`: a warm-up phase of the run's mix (without
    /// inserts or deletes) until the engine's cache hit ratio and throughput are steady
    /// (at most --warmup-max seconds), then the measured run.
    #[arg(long)]
    pub(super) warmup: Option<String>,
    /// The longest an `--warmup auto` warm-up runs, in seconds.
    #[arg(long, default_value_t = 60.0)]
    pub(super) warmup_max: f64,
    /// Stop the run phase after this many seconds (YCSB's maxexecutiontime).
    #[arg(long)]
    pub(super) duration: Option<f64>,
    /// Memory budget (e.g. 1G): everything an engine may hold for data and index (its
    /// caches, index, memtables or image, and the OS page cache of its files), given
    /// to the engine as `<engine>.memory` and measured; see --memory-limit.
    #[arg(long)]
    pub(super) memory: Option<String>,
    /// How --memory is enforced: auto (a memory cgroup of the run's own where one can
    /// be made, else measured only, refusing engines that read through the OS page
    /// cache), cgroup (a cgroup or fail) or none (measured only; such engines flagged).
    #[arg(long, value_enum, default_value = "auto")]
    pub(super) memory_limit: super::memory::LimitMode,
    /// Under --memory, resize the cache of an engine that can resize it (RocksDB's
    /// block cache, WiredTiger's cache) each second so that its measured memory stays within the budget:
    /// on (the default) or off (the engine's cache keeps the share its own rule gives
    /// it, and its allocator's overhead may take it over budget).
    #[arg(long, value_enum, default_value = "on")]
    pub(super) memory_governor: OnOff,
    /// Root of the data directories (an engine's default is <data>/<engine>).
    #[arg(long, default_value = "data")]
    pub(super) data: PathBuf,
    /// YCSB's status line on standard error every status.interval seconds (10): the
    /// operations so far, the current throughput and, per operation, the interval's
    /// count, max, min, mean and percentiles (instead of the progress output).
    #[arg(short = 's')]
    pub(super) status: bool,
    /// No progress output.
    #[arg(long)]
    pub(super) quiet: bool,
    /// A `ycsb device` result for the disk under the data directory; by default
    /// results/device/device-<disk>.json is used when it exists.
    #[arg(long)]
    pub(super) device_result: Option<PathBuf>,
}

/// The arguments that make a child `ycsb run` drive the same workload the same way.
pub(super) fn forward_args(w: &WorkloadArgs, d: &DriveArgs) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(x) = &w.workload {
        v.extend(["-w".to_string(), x.clone()]);
    }
    for f in &w.property_files {
        v.extend(["-P".to_string(), f.display().to_string()]);
    }
    for p in &w.props {
        v.extend(["-p".to_string(), p.clone()]);
    }
    v.extend(["--seed".to_string(), w.seed.to_string()]);
    let opt = |v: &mut Vec<String>, k: &str, x: Option<String>| {
        if let Some(x) = x {
            v.extend([k.to_string(), x]);
        }
    };
    opt(&mut v, "--threads", d.threads.map(|x| x.to_string()));
    opt(&mut v, "--target", d.target.map(|x| x.to_string()));
    opt(&mut v, "--qd", d.qd.map(|x| x.to_string()));
    if d.adapter != "threads" {
        v.extend(["--adapter".to_string(), d.adapter.clone()]);
    }
    opt(&mut v, "--memory", d.memory.clone());
    opt(&mut v, "--duration", d.duration.map(|x| x.to_string()));
    opt(&mut v, "--warmup", d.warmup.clone());
    v.extend(["--warmup-max".to_string(), d.warmup_max.to_string()]);
    v.extend([
        "--memory-limit".to_string(),
        match d.memory_limit {
            super::memory::LimitMode::Auto => "auto",
            super::memory::LimitMode::Cgroup => "cgroup",
            super::memory::LimitMode::None => "none",
        }
        .to_string(),
    ]);
    if d.memory_governor == OnOff::Off {
        v.extend(["--memory-governor".to_string(), "off".to_string()]);
    }
    opt(
        &mut v,
        "--device-result",
        d.device_result.as_ref().map(|p| p.display().to_string()),
    );
    if d.status {
        v.push("-s".to_string());
    }
    v.extend(["--arrival".to_string(), d.arrival.clone()]);
    v.extend(["--data".to_string(), d.data.display().to_string()]);
    v
}

/// A switch (`on` or `off`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum OnOff {
    On,
    Off,
}
