//! The `ycsb` command line.

use crate::engines;
use crate::generator::AckCounter;
use crate::machine::Machine;
use crate::props::{self, Properties};
use crate::report::{self, EngineReport, PhaseReport, RunReport};
use crate::runner::{self, Driving};
use crate::workload::{OpKind, OpStream, Workload, unknown_properties};
use clap::{Args, Parser, Subcommand};
use kvapi::Engine;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// YCSB's core workloads, shipped in workloads/ and embedded so that `-w A` works
/// from any directory.
const CORE: [(&str, &str); 6] = [
    ("workloada", include_str!("../../workloads/workloada")),
    ("workloadb", include_str!("../../workloads/workloadb")),
    ("workloadc", include_str!("../../workloads/workloadc")),
    ("workloadd", include_str!("../../workloads/workloadd")),
    ("workloade", include_str!("../../workloads/workloade")),
    ("workloadf", include_str!("../../workloads/workloadf")),
];

#[derive(Parser, Debug)]
#[command(
    name = "ycsb",
    version,
    about = "YCSB driver of kvell-testbed: load, run and compare key-value engines",
    after_help = "YCSB-style single-dash options (-threads N, -target OPS) are accepted too.\nEngines: kvell, wal, rocksdb, sled, null (see `ycsb engines`)."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Insert the workload's records into an engine.
    Load(PhaseArgs),
    /// Run the workload's operation mix against an engine.
    Run(RunArgs),
    /// Load and run several engines one after another on the same seeded workload and
    /// print one table with the engines as columns.
    Compare(CompareArgs),
    /// Write the exact operation sequence a run would issue to a CSV file, without
    /// touching an engine.
    Trace(TraceCmd),
    /// Measure the disk under a data directory (O_DIRECT, io_uring): random 4 KiB
    /// read, write and mixed IOPS at several queue depths, and sequential bandwidth;
    /// runs then state the ceiling for their I/O mix and the fraction reached.
    Device(DeviceArgs),
    /// Compare I/O methods on one file (the paper's Table 3): random 4 KiB reads and
    /// writes through mmap (1 and several threads), synchronous O_DIRECT pread/pwrite,
    /// and io_uring at queue depth 1 and 64.
    Iomethods(IoMethodsArgs),
    /// Recovery time after a crash: load the records, run the workload in a child
    /// process, kill it with SIGKILL, reopen the engine (timed) and check the records.
    Recovery(RecoveryArgs),
    /// Durability audit: kill a writing child with SIGKILL at random moments, reopen,
    /// and check every acknowledged write (and the recovery time).
    Crash(CrashArgs),
    /// The writer `ycsb crash` starts and kills (not for direct use).
    #[command(hide = true)]
    CrashChild(CrashChildArgs),
    /// List the engines of this build.
    Engines,
    /// Print this machine's description (CPU, memory, kernel, the disk under --data)
    /// as JSON, the object every result file carries.
    Machine {
        /// A directory on the disk to describe.
        #[arg(long, default_value = ".")]
        data: PathBuf,
    },
}

#[derive(Args, Debug)]
struct CrashArgs {
    /// Engine to audit.
    #[arg(long)]
    engine: String,
    /// Kill-and-recover cycles.
    #[arg(long, default_value_t = 10)]
    cycles: u64,
    /// Distinct keys written (small, so keys are overwritten and deleted often).
    #[arg(long, default_value_t = 500)]
    keys: u64,
    /// The child is killed between these many milliseconds after its engine opened.
    #[arg(long, value_delimiter = ',', default_value = "50,400")]
    kill_after_ms: Vec<u64>,
    /// Engine options, <engine>.<option>=value (repeatable).
    #[arg(short = 'p', value_name = "KEY=VALUE")]
    props: Vec<String>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Root of the data directory (the engine's is <data>/crash-<engine>, wiped first).
    #[arg(long, default_value = "data")]
    data: PathBuf,
    /// Write the JSON result here.
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct CrashChildArgs {
    #[arg(long)]
    engine: String,
    #[arg(long)]
    data: PathBuf,
    #[arg(long)]
    keys: u64,
    #[arg(long)]
    seed: u64,
    #[arg(long)]
    cycle: u64,
    #[arg(short = 'p')]
    props: Vec<String>,
}

#[derive(Args, Debug)]
struct DeviceArgs {
    /// Directory on the disk to measure (the probe file is written there).
    #[arg(long, default_value = "data")]
    data: PathBuf,
    /// Size of the probe file (larger than the device's caches).
    #[arg(long, default_value = "2G")]
    size: String,
    /// Queue depths to measure, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,4,16,64,128,256")]
    qds: Vec<usize>,
    /// Seconds per point.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Fraction of reads in the mixed pattern (YCSB A: 0.5).
    #[arg(long, default_value_t = 0.5)]
    mix: f64,
    /// Keep the probe file afterwards.
    #[arg(long)]
    keep: bool,
    /// Where to write the result (default results/device/device-<disk>.json).
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct IoMethodsArgs {
    /// Directory on the disk to measure (the file is written there and removed).
    #[arg(long, default_value = "data")]
    data: PathBuf,
    /// Size of the file.
    #[arg(long, default_value = "4G")]
    size: String,
    /// Seconds per point.
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// Thread counts for mmap, comma-separated (the paper: 1 and 8).
    #[arg(long, value_delimiter = ',', default_value = "1,8")]
    mmap_threads: Vec<usize>,
    /// Where to write the result.
    #[arg(long, default_value = "results/iomethods.json")]
    out: PathBuf,
}

#[derive(Args, Debug)]
struct RecoveryArgs {
    /// Engine to crash and reopen.
    #[arg(long)]
    engine: String,
    #[command(flatten)]
    workload: WorkloadArgs,
    #[command(flatten)]
    drive: DriveArgs,
    /// Seconds the workload runs in the child before the kill.
    #[arg(long, default_value_t = 5.0)]
    run_seconds: f64,
    /// Kill-and-reopen cycles.
    #[arg(long, default_value_t = 1)]
    cycles: u64,
    /// Records read back after each reopen (evenly spaced over the key space; 0 = all).
    #[arg(long, default_value_t = 10000)]
    verify: u64,
    /// Write the JSON result here.
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Args, Debug, Clone)]
struct WorkloadArgs {
    /// Workload: A..F (YCSB's core workloads) or a workload file.
    #[arg(short = 'w', long = "workload")]
    workload: Option<String>,
    /// A YCSB property file (repeatable; later files override earlier ones).
    #[arg(short = 'P', value_name = "FILE")]
    property_files: Vec<PathBuf>,
    /// A property override, key=value (repeatable; engine options are
    /// <engine>.<option>=value, e.g. -p sled.cache=1G).
    #[arg(short = 'p', value_name = "KEY=VALUE")]
    props: Vec<String>,
    /// Seed of every random stream: the same seed gives the same operations.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[derive(Args, Debug, Clone)]
struct DriveArgs {
    /// Client threads (closed loop); YCSB's threadcount.
    #[arg(long)]
    threads: Option<usize>,
    /// Target rate in operations per second, all threads together; latency is then
    /// also measured from each operation's intended start.
    #[arg(long)]
    target: Option<f64>,
    /// Arrivals at the --target rate: constant (YCSB's evenly spaced schedule) or
    /// poisson (open loop with exponential gaps).
    #[arg(long, default_value = "constant")]
    arrival: String,
    /// Drive asynchronously from one injector with this many requests in flight.
    #[arg(long)]
    qd: Option<usize>,
    /// Seconds at the start of the run phase left out of the measurement.
    #[arg(long)]
    warmup: Option<f64>,
    /// Stop the run phase after this many seconds (YCSB's maxexecutiontime).
    #[arg(long)]
    duration: Option<f64>,
    /// Memory budget: the cache size given to each engine (e.g. 1G), unless an
    /// engine's own cache option is set.
    #[arg(long)]
    memory: Option<String>,
    /// Root of the data directories (an engine's default is <data>/<engine>).
    #[arg(long, default_value = "data")]
    data: PathBuf,
    /// Print periodic status (accepted for YCSB compatibility; status is on by
    /// default, see --quiet).
    #[arg(short = 's')]
    status: bool,
    /// No progress output.
    #[arg(long)]
    quiet: bool,
    /// A `ycsb device` result for the disk under the data directory; by default
    /// results/device/device-<disk>.json is used when it exists.
    #[arg(long)]
    device_result: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct PhaseArgs {
    /// Engine: kvell, wal, rocksdb, sled or null.
    #[arg(long)]
    engine: String,
    #[command(flatten)]
    workload: WorkloadArgs,
    #[command(flatten)]
    drive: DriveArgs,
    /// Remove the engine's existing data directory first (only if it holds data of
    /// that same engine).
    #[arg(long)]
    fresh: bool,
    /// Write the JSON result here.
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct RunArgs {
    #[command(flatten)]
    phase: PhaseArgs,
    /// Load the records first, in the same process.
    #[arg(long)]
    load: bool,
    /// Replay this trace (our CSV or binary form; see `ycsb trace convert`) instead
    /// of a workload. Keys read before they are written are loaded first.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Replay at the trace's recorded times divided by this factor (2 = twice as
    /// fast); without it the replay is closed loop.
    #[arg(long)]
    speed: Option<f64>,
    /// Value size for keys whose size the trace does not give.
    #[arg(long, default_value_t = 100)]
    default_value_size: usize,
}

#[derive(Args, Debug)]
struct CompareArgs {
    /// Engines to compare, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "sled,null")]
    engines: Vec<String>,
    #[command(flatten)]
    workload: WorkloadArgs,
    #[command(flatten)]
    drive: DriveArgs,
    /// Directory for the per-engine JSON results.
    #[arg(long, default_value = "results/compare")]
    out_dir: PathBuf,
    /// Run the whole comparison this many times, alternating the engine order; the
    /// table shows each engine's median run and the spread.
    #[arg(long, default_value_t = 1)]
    repeat: usize,
}

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
struct TraceCmd {
    #[command(subcommand)]
    sub: Option<TraceSub>,
    #[command(flatten)]
    generate: TraceArgs,
}

#[derive(Subcommand, Debug)]
enum TraceSub {
    /// Convert a trace into our format: Meta's kvcache CSV (CacheLib), Twitter's
    /// cache-trace CSV, libCacheSim's oracleGeneral binary, or our CSV/binary.
    Convert(ConvertArgs),
    /// Describe a trace in our format: requests per op, distinct keys, value sizes.
    Stats {
        /// The trace (our CSV or binary form).
        file: PathBuf,
    },
}

#[derive(Args, Debug)]
struct ConvertArgs {
    /// Input format: meta, twitter, oracle, csv or bin.
    #[arg(long)]
    from: String,
    /// The input file.
    input: PathBuf,
    /// The output file.
    #[arg(long)]
    out: PathBuf,
    /// Output form: csv or bin.
    #[arg(long, default_value = "csv")]
    format: String,
    /// Key size for formats without one (oracle).
    #[arg(long, default_value_t = 16)]
    key_size: usize,
}

#[derive(Args, Debug)]
struct TraceArgs {
    #[command(flatten)]
    workload: WorkloadArgs,
    /// Which phase's operations: load or run.
    #[arg(long, default_value = "run")]
    phase: String,
    /// The file to write ("-" for standard output).
    #[arg(long, required = true)]
    out: Option<PathBuf>,
    /// Output form: csv or bin.
    #[arg(long, default_value = "csv")]
    format: String,
}

/// YCSB spells some long options with one dash.
fn normalise_args(args: impl Iterator<Item = String>) -> Vec<String> {
    args.map(|a| match a.as_str() {
        "-threads" => "--threads".into(),
        "-target" => "--target".into(),
        "-load" => "--load".into(),
        _ => a,
    })
    .collect()
}

fn workload_dirs() -> Vec<PathBuf> {
    let mut v = Vec::new();
    if let Some(d) = std::env::var_os("KVTESTBED_WORKLOADS") {
        v.push(PathBuf::from(d));
    }
    v.push(PathBuf::from("workloads"));
    v.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../workloads"));
    v
}

/// Resolves `-w NAME` into (display name, property text).
fn resolve_workload(name: &str) -> Result<(String, String), String> {
    let lower = name.to_ascii_lowercase();
    let canonical = if lower.len() == 1 && ("a"..="f").contains(&lower.as_str()) {
        format!("workload{lower}")
    } else {
        name.to_string()
    };
    let as_path = Path::new(&canonical);
    if as_path.is_file() {
        let text = std::fs::read_to_string(as_path)
            .map_err(|e| format!("cannot read {canonical}: {e}"))?;
        return Ok((canonical, text));
    }
    if !canonical.contains('/') {
        for d in workload_dirs() {
            let p = d.join(&canonical);
            if p.is_file() {
                let text = std::fs::read_to_string(&p)
                    .map_err(|e| format!("cannot read {}: {e}", p.display()))?;
                return Ok((canonical, text));
            }
        }
        if let Some((_, text)) = CORE.iter().find(|(n, _)| *n == canonical) {
            return Ok((canonical, text.to_string()));
        }
    }
    Err(format!(
        "unknown workload '{name}' (A..F, or a workload file such as workloads/workloada)"
    ))
}

/// Properties from -w, -P and -p, in that order of precedence (lowest first).
fn resolve_properties(a: &WorkloadArgs) -> Result<(String, Properties), String> {
    let mut p = Properties::new();
    let mut name = String::from("(properties)");
    if let Some(w) = &a.workload {
        let (n, text) = resolve_workload(w)?;
        props::parse(&text, &n, &mut p)?;
        name = n;
    }
    for f in &a.property_files {
        props::load_file(f, &mut p)?;
        if a.workload.is_none() {
            name = f.display().to_string();
        }
    }
    for o in &a.props {
        props::set_override(o, &mut p)?;
    }
    if a.workload.is_none() && a.property_files.is_empty() {
        return Err("no workload: give -w A..F or -P FILE".into());
    }
    Ok((name, p))
}

fn prop_f64(p: &Properties, k: &str) -> Result<Option<f64>, String> {
    match p.get(k) {
        None => Ok(None),
        Some(v) => match v.parse::<f64>() {
            Ok(x) if x.is_finite() && x >= 0.0 => Ok(Some(x)),
            _ => Err(format!(
                "property {k}: expected a non-negative number, got '{v}'"
            )),
        },
    }
}

fn driving(d: &DriveArgs, p: &Properties, seed: u64) -> Result<Driving, String> {
    let threads = match d.threads {
        Some(t) => t,
        None => prop_f64(p, "threadcount")?.map(|x| x as usize).unwrap_or(1),
    };
    if threads == 0 {
        return Err("--threads must be at least 1".into());
    }
    if d.qd == Some(0) {
        return Err("--qd must be at least 1".into());
    }
    let target = match d.target {
        Some(t) => Some(t),
        None => prop_f64(p, "target")?.filter(|t| *t > 0.0),
    };
    if let Some(t) = target
        && !(t.is_finite() && t > 0.0)
    {
        return Err(format!("--target must be a positive rate, got {t}"));
    }
    let warmup = match d.warmup {
        Some(w) => w,
        None => prop_f64(p, "warmuptime")?.unwrap_or(0.0),
    };
    let max_time = match d.duration {
        Some(x) => Some(x),
        None => prop_f64(p, "maxexecutiontime")?.filter(|x| *x > 0.0),
    };
    if warmup < 0.0 || max_time.is_some_and(|x| x <= 0.0) {
        return Err("--warmup must not be negative and --duration must be positive".into());
    }
    if d.arrival != "constant" && d.arrival != "poisson" {
        return Err(format!(
            "--arrival: expected constant or poisson, got '{}'",
            d.arrival
        ));
    }
    Ok(Driving {
        arrival: d.arrival.clone(),
        threads,
        queue_depth: d.qd,
        target_ops: target,
        warmup_s: warmup,
        max_time_s: max_time,
        seed,
        native_async: None,
    })
}

fn memory(d: &DriveArgs) -> Result<Option<u64>, String> {
    d.memory
        .as_deref()
        .map(|m| {
            kvapi::parse_bytes(m)
                .ok_or_else(|| format!("--memory: expected a size such as 512M or 1G, got '{m}'"))
        })
        .transpose()
}

fn resolved_workload(w: &Workload) -> std::collections::BTreeMap<String, String> {
    let mut m = std::collections::BTreeMap::new();
    m.insert("recordcount".into(), w.recordcount.to_string());
    m.insert("operationcount".into(), w.operationcount.to_string());
    m.insert("value_bytes_max".into(), w.max_value_len().to_string());
    m.insert("value_length".into(), format!("{:?}", w.value_len));
    m.insert("scan_length".into(), format!("{:?}", w.scan_len));
    m.insert("requestdistribution".into(), w.request_distribution.clone());
    m.insert(
        "insertorder".into(),
        if w.ordered_inserts {
            "ordered"
        } else {
            "hashed"
        }
        .into(),
    );
    m.insert(
        "mix".into(),
        w.mix
            .iter()
            .map(|(k, x)| format!("{}={x:.4}", k.ycsb_name()))
            .collect::<Vec<_>>()
            .join(","),
    );
    m.insert("dataintegrity".into(), w.dataintegrity.to_string());
    m
}

/// Removes an engine's data directory if it holds that engine's data (or is empty).
fn wipe_engine_dir(engine: &str, dir: &Path) -> Result<(), String> {
    if !dir.exists() {
        return Ok(());
    }
    let marker = std::fs::read_to_string(dir.join(kvapi::MARKER_FILE)).ok();
    let empty = std::fs::read_dir(dir)
        .map(|mut d| d.next().is_none())
        .unwrap_or(false);
    match marker {
        Some(m) if m.trim() == engine => {}
        _ if empty => {}
        Some(m) => {
            return Err(format!(
                "{} holds a {} database, not {engine}: not removing it",
                dir.display(),
                m.trim()
            ));
        }
        None => {
            return Err(format!(
                "{} holds files of no known engine: not removing it",
                dir.display()
            ));
        }
    }
    std::fs::remove_dir_all(dir).map_err(|e| format!("cannot remove {}: {e}", dir.display()))
}

struct Session {
    replay: Option<Replay>,
    device_result: Option<PathBuf>,
    name: String,
    props: Properties,
    workload: Arc<Workload>,
    drive: Driving,
    progress: bool,
    command: Vec<String>,
}

fn warn_unknown(p: &Properties, engines: &[&str]) {
    for k in unknown_properties(p, engines) {
        eprintln!("warning: unknown property '{k}' is ignored (a typo?)");
    }
}

/// Opens `engine`, runs the requested phases and returns the report.
fn run_engine(
    s: &Session,
    engine_name: &str,
    opts_root: &Path,
    mem: Option<u64>,
    fresh: bool,
    phases: (bool, bool),
) -> Result<RunReport, String> {
    let opts = engines::options(engine_name, &s.props, opts_root, mem);
    let dir = opts.is_set("dir").then(|| opts.path("dir", ""));
    if fresh && let Some(d) = &dir {
        for one in d.display().to_string().split(',') {
            wipe_engine_dir(engine_name, Path::new(one.trim()))?;
        }
    }
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let t_open = std::time::Instant::now();
    let engine: Arc<dyn Engine> = engines::open(engine_name, &opts)?;
    let open_s = t_open.elapsed().as_secs_f64();
    let info = engine.info();
    let mut drive = s.drive.clone();
    if drive.queue_depth.is_some() {
        drive.native_async = Some(engine.clone().native_async().is_some());
    }
    let machine = Machine::describe(dir.as_deref());
    let device_result = s.device_result.clone().or_else(|| {
        machine
            .disk
            .as_ref()
            .map(|d| default_device_result(&d.device))
            .filter(|p| p.is_file())
    });
    let roofline = match &device_result {
        Some(p) => Some((p.clone(), crate::probe::DeviceReport::load(p)?)),
        None => None,
    };
    let ctx = runner::Ctx {
        progress: s.progress,
        device: machine.disk.as_ref().map(|d| d.device.clone()),
    };
    let mut report = RunReport {
        format: report::FORMAT,
        testbed_version: env!("CARGO_PKG_VERSION").into(),
        command: s.command.clone(),
        started_unix_s: started,
        machine,
        engine: EngineReport::from_info(&info),
        workload: s.name.clone(),
        properties: s.props.clone(),
        workload_resolved: resolved_workload(&s.workload),
        driving: drive.clone(),
        phases: vec![],
    };
    report
        .engine
        .settings
        .insert("open_seconds".into(), format!("{open_s:.3}"));
    let (do_load, do_run) = phases;
    let mut out = std::io::stdout();
    // Runs a phase between two readings of the engine's counters, adds the device
    // ceiling, prints the summary and keeps the result.
    let mut phase = |report: &mut RunReport, f: &dyn Fn() -> runner::PhaseResult| {
        let before = engine.counters();
        let mut r = f();
        r.ceiling = roofline
            .as_ref()
            .and_then(|(p, d)| runner::ceiling(&r, p, d));
        let ph = PhaseReport {
            result: r,
            counters_before: report::counters_map(&before),
            counters_after: report::counters_map(&engine.counters()),
        };
        let _ = write!(out, "{}", report::summary(report, &ph));
        report.phases.push(ph);
    };
    if let Some(rp) = &s.replay {
        report.workload_resolved = std::collections::BTreeMap::from([
            ("trace".to_string(), rp.file.display().to_string()),
            ("trace_contents".to_string(), rp.description.clone()),
            (
                "preloaded_keys".to_string(),
                format!(
                    "{} keys read before written, loaded first",
                    rp.preload.len()
                ),
            ),
            (
                "timing".to_string(),
                rp.speed.map_or("closed loop".to_string(), |sp| {
                    format!("recorded times / {sp}")
                }),
            ),
            (
                "unknown_ops_skipped".to_string(),
                format!("{:?}", rp.unknown_ops),
            ),
        ]);
        if !rp.preload.is_empty() {
            let items = rp.preload.clone();
            phase(&mut report, &|| {
                runner::load_items(
                    engine.clone(),
                    items.len() as u64,
                    |_| (),
                    |_, i| items[i as usize].clone(),
                    &drive,
                    &ctx,
                    "load",
                )
            });
        }
        phase(&mut report, &|| {
            runner::replay(engine.clone(), rp.ops.clone(), &drive, &ctx)
        });
    } else {
        if do_load {
            phase(&mut report, &|| {
                runner::load(engine.clone(), s.workload.clone(), &drive, &ctx)
            });
        }
        if do_run {
            if !do_load && engine_name != "null" {
                let first = s.workload.key(s.workload.insertstart);
                if let Ok(None) = engine.get(first.as_bytes()) {
                    eprintln!(
                        "warning: the first record ({first}) is missing from {engine_name}: load the data first (`ycsb load` with the same workload) or pass --load"
                    );
                }
            }
            phase(&mut report, &|| {
                runner::run(engine.clone(), s.workload.clone(), &drive, &ctx)
            });
        }
    }
    engine
        .close()
        .map_err(|e| format!("closing {engine_name}: {e}"))?;
    Ok(report)
}

fn session(w: &WorkloadArgs, d: &DriveArgs, engines_for_props: &[&str]) -> Result<Session, String> {
    let (name, props) = resolve_properties(w)?;
    warn_unknown(&props, engines_for_props);
    let workload = Arc::new(Workload::from_properties(&props)?);
    let drive = driving(d, &props, w.seed)?;
    Ok(Session {
        replay: None,
        device_result: d.device_result.clone(),
        name,
        props,
        workload,
        drive,
        progress: !d.quiet,
        command: std::env::args().collect(),
    })
}

fn cmd_phase(a: &PhaseArgs, phases: (bool, bool)) -> Result<(), String> {
    if !engines::ALL.contains(&a.engine.as_str()) {
        return Err(format!(
            "unknown engine '{}' (known: {})",
            a.engine,
            engines::built().join(", ")
        ));
    }
    let s = session(&a.workload, &a.drive, engines::ALL)?;
    let mem = memory(&a.drive)?;
    let report = run_engine(&s, &a.engine, &a.drive.data, mem, a.fresh, phases)?;
    if let Some(out) = &a.out {
        report.write(out)?;
        eprintln!("result written to {}", out.display());
    }
    let errors: u64 = report.phases.iter().map(|p| p.result.errors).sum();
    if errors > 0 {
        eprintln!("warning: {errors} operations failed; see the Return= lines");
    }
    // An I/O error, a refusal after one, or corruption means the store failed: the
    // run is not a measurement, so the command fails (results are written first).
    let fatal: u64 = report
        .phases
        .iter()
        .flat_map(|p| &p.result.ops)
        .flat_map(|o| &o.status)
        .filter(|(s, _)| matches!(s.as_str(), "IO_ERROR" | "POISONED" | "CORRUPTION" | "ERROR"))
        .map(|(_, n)| n)
        .sum();
    if fatal > 0 {
        return Err(format!(
            "the engine failed: {fatal} operations ended in IO_ERROR, POISONED, CORRUPTION or \
             ERROR; the first: {}",
            crate::runner::first_error().unwrap_or("(no message)")
        ));
    }
    Ok(())
}

fn crash_props(props: &[String]) -> Result<Properties, String> {
    let mut p = Properties::new();
    for o in props {
        props::set_override(o, &mut p)?;
    }
    Ok(p)
}

fn cmd_crash_child(a: &CrashChildArgs) -> Result<(), String> {
    let p = crash_props(&a.props)?;
    let engine = engines::open(&a.engine, &engines::options(&a.engine, &p, &a.data, None))?;
    crate::crash::child(engine, a.keys, a.seed, a.cycle)
}

fn cmd_crash(a: &CrashArgs) -> Result<(), String> {
    if !engines::is_built(&a.engine) || a.engine == "null" {
        return Err(format!(
            "unknown, unbuilt or stateless engine '{}' (auditable: {})",
            a.engine,
            engines::built()
                .iter()
                .filter(|e| **e != "null")
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if a.kill_after_ms.len() != 2
        || a.kill_after_ms[0] > a.kill_after_ms[1]
        || a.cycles == 0
        || a.keys == 0
    {
        return Err(
            "--kill-after-ms takes MIN,MAX with MIN <= MAX; --cycles and --keys must be positive"
                .into(),
        );
    }
    let p = crash_props(&a.props)?;
    let root = a.data.join(format!("crash-{}", a.engine));
    let dir = root.join(&a.engine);
    wipe_engine_dir(&a.engine, &dir)?;
    let opts = || engines::options(&a.engine, &p, &root, None);
    let engine = engines::open(&a.engine, &opts())?;
    let info = engine.info();
    engine.close().map_err(|e| e.to_string())?;
    drop(engine);
    let exe = std::env::current_exe().map_err(|e| format!("locating ycsb: {e}"))?;
    let spawn = |cycle: u64| {
        let mut c = std::process::Command::new(&exe);
        c.arg("crash-child")
            .arg("--engine")
            .arg(&a.engine)
            .arg("--data")
            .arg(&root);
        c.arg("--keys")
            .arg(a.keys.to_string())
            .arg("--seed")
            .arg(a.seed.to_string())
            .arg("--cycle")
            .arg(cycle.to_string());
        for o in &a.props {
            c.arg("-p").arg(o);
        }
        c
    };
    let open =
        || engines::open(&a.engine, &opts()).map_err(|e| format!("reopening after a kill: {e}"));
    eprintln!(
        "auditing {} ({} class: {}), {} cycles",
        a.engine, info.durability, info.durability_setting, a.cycles
    );
    let cycles = crate::crash::audit(
        a.cycles,
        a.seed,
        (a.kill_after_ms[0], a.kill_after_ms[1]),
        &spawn,
        &open,
    )?;
    let sum = |f: fn(&crate::crash::Cycle) -> u64| cycles.iter().map(f).sum::<u64>();
    let (acked, lost, corrupt) = (sum(|c| c.acknowledged), sum(|c| c.lost), sum(|c| c.corrupt));
    let mut rec: Vec<f64> = cycles.iter().map(|c| c.recovery_s).collect();
    rec.sort_by(f64::total_cmp);
    let (p50, max) = (rec[rec.len() / 2], rec[rec.len() - 1]);
    println!(
        "engine    durability  cycles  acknowledged  keys checked  lost  corrupt  recovery p50  recovery max"
    );
    println!(
        "{:<9} {:<11} {:>6} {:>13} {:>13} {:>5} {:>8} {:>11.3}s {:>12.3}s",
        a.engine,
        info.durability,
        a.cycles,
        acked,
        sum(|c| c.keys_checked),
        lost,
        corrupt,
        p50,
        max
    );
    for c in cycles.iter().filter(|c| !c.problems.is_empty()).take(3) {
        for pr in &c.problems {
            println!("  cycle {}: {pr}", c.cycle);
        }
    }
    if let Some(out) = &a.out {
        let j = serde_json::json!({
            "kind": "crash",
            "command": std::env::args().collect::<Vec<_>>(),
            "machine": Machine::describe(Some(&root)),
            "engine": EngineReport::from_info(&info),
            "cycles": cycles,
            "acknowledged": acked, "lost": lost, "corrupt": corrupt,
            "recovery_p50_s": p50, "recovery_max_s": max,
        });
        if let Some(d) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(d)
                .map_err(|e| format!("cannot create {}: {e}", d.display()))?;
        }
        std::fs::write(
            out,
            serde_json::to_string_pretty(&j).map_err(|e| e.to_string())? + "\n",
        )
        .map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    }
    let _ = std::fs::remove_dir_all(&root);
    if corrupt > 0 {
        return Err(format!(
            "{corrupt} keys held values that were never written or fail their checks"
        ));
    }
    if lost > 0 {
        if info.durability >= kvapi::Durability::Process {
            return Err(format!(
                "PROMISE BROKEN: {lost} acknowledged writes lost although {} promises durability class {}",
                a.engine, info.durability
            ));
        }
        println!("{lost} acknowledged writes lost: allowed by durability class none");
    } else {
        println!("no acknowledged write lost");
    }
    Ok(())
}

/// A trace to replay, prepared once.
struct Replay {
    file: PathBuf,
    ops: Arc<Vec<crate::workload::Op>>,
    preload: Arc<Vec<(String, usize)>>,
    description: String,
    unknown_ops: std::collections::BTreeMap<String, u64>,
    speed: Option<f64>,
}

fn cmd_replay(a: &RunArgs) -> Result<(), String> {
    let file = a.trace.clone().expect("checked by the caller");
    if let Some(sp) = a.speed
        && !(sp.is_finite() && sp > 0.0)
    {
        return Err(format!("--speed must be a positive factor, got {sp}"));
    }
    let t = crate::trace::read(&file)?;
    if t.records.is_empty() {
        return Err(format!(
            "{} holds no request this testbed can replay",
            file.display()
        ));
    }
    let replay = Replay {
        description: crate::trace::describe(&t.records),
        preload: Arc::new(crate::trace::preload_set(&t.records, a.default_value_size)),
        ops: Arc::new(crate::trace::to_ops(
            &t.records,
            a.speed,
            a.default_value_size,
        )),
        unknown_ops: t.unknown_ops,
        speed: a.speed,
        file,
    };
    for (op, n) in &replay.unknown_ops {
        eprintln!("warning: {n} requests with op '{op}' are not replayed");
    }
    let mut w = a.phase.workload.clone();
    if w.workload.is_none() && w.property_files.is_empty() {
        // engine options may still come with -p; the workload itself is the trace
        w.workload = Some("C".into());
    }
    let mut s = session(&w, &a.phase.drive, engines::ALL)?;
    s.name = format!("trace:{}", replay.file.display());
    s.replay = Some(replay);
    let mem = memory(&a.phase.drive)?;
    let report = run_engine(
        &s,
        &a.phase.engine,
        &a.phase.drive.data,
        mem,
        a.phase.fresh,
        (true, true),
    )?;
    if let Some(out) = &a.phase.out {
        report.write(out)?;
        eprintln!("result written to {}", out.display());
    }
    Ok(())
}

fn cmd_compare(a: &CompareArgs) -> Result<(), String> {
    if a.engines.is_empty() {
        return Err("--engines: give at least one engine".into());
    }
    for e in &a.engines {
        if !engines::is_built(e) {
            return Err(format!(
                "unknown or unbuilt engine '{e}' (built: {})",
                engines::built().join(", ")
            ));
        }
    }
    let s = session(&a.workload, &a.drive, engines::ALL)?;
    let mem = memory(&a.drive)?;
    if a.repeat == 0 {
        return Err("--repeat must be at least 1".into());
    }
    let root = a.drive.data.join("compare");
    let mut runs: Vec<Vec<RunReport>> = vec![Vec::new(); a.engines.len()];
    for rep in 0..a.repeat {
        // alternate the order so that no engine always runs on a warmer (or more
        // worn) disk than the others
        let mut order: Vec<usize> = (0..a.engines.len()).collect();
        if rep % 2 == 1 {
            order.reverse();
        }
        for i in order {
            let e = &a.engines[i];
            eprintln!(
                "== {e} (repeat {}/{}): load and run {} ({})",
                rep + 1,
                a.repeat,
                s.name,
                s.drive.describe()
            );
            let r = run_engine(&s, e, &root, mem, true, (true, true))?;
            let name = if a.repeat == 1 {
                format!("{e}.json")
            } else {
                format!("{e}-r{}.json", rep + 1)
            };
            r.write(&a.out_dir.join(name))?;
            runs[i].push(r);
        }
    }
    let run_tput = |r: &RunReport| {
        r.phases
            .iter()
            .find(|p| p.result.phase == "run")
            .map(|p| p.result.throughput_ops_sec)
            .unwrap_or(0.0)
    };
    let mut reports = Vec::new();
    let mut spread = Vec::new();
    for mut v in runs {
        v.sort_by(|x, y| run_tput(x).total_cmp(&run_tput(y)));
        spread.push((run_tput(&v[0]), run_tput(&v[v.len() - 1])));
        reports.push(v.swap_remove(v.len() / 2));
    }
    let classes: std::collections::BTreeSet<&str> = reports
        .iter()
        .filter(|r| r.engine.name != "null")
        .map(|r| r.engine.durability.as_str())
        .collect();
    println!(
        "\n== {} ({} records, {} operations, {}, seed {})",
        s.name,
        s.workload.recordcount,
        s.workload.operationcount,
        s.drive.describe(),
        s.drive.seed
    );
    print!(
        "{}",
        report::compare_table(&reports, (a.repeat > 1).then_some(&spread[..]))
    );
    if a.repeat > 1 {
        println!(
            "(each column is the engine's median run of {} by run ops/s)",
            a.repeat
        );
    }
    if classes.len() > 1 {
        let list: Vec<String> = reports
            .iter()
            .map(|r| format!("{}={}", r.engine.name, r.engine.durability))
            .collect();
        println!(
            "WARNING: the engines promise different durability ({}): this is not a like-for-like comparison",
            list.join(", ")
        );
    }
    println!("results written to {}", a.out_dir.display());
    Ok(())
}

fn default_device_result(disk: &str) -> PathBuf {
    PathBuf::from(format!("results/device/device-{disk}.json"))
}

fn cmd_device(a: &DeviceArgs) -> Result<(), String> {
    let bytes = kvapi::parse_bytes(&a.size)
        .ok_or_else(|| format!("--size: expected a size such as 2G, got '{}'", a.size))?;
    if a.qds.is_empty() || a.qds.iter().any(|q| *q == 0 || *q > 4096) {
        return Err("--qds: queue depths must be between 1 and 4096".into());
    }
    if a.seconds.is_nan() || a.seconds <= 0.0 || !(0.0..=1.0).contains(&a.mix) {
        return Err("--seconds must be positive and --mix within [0, 1]".into());
    }
    std::fs::create_dir_all(&a.data)
        .map_err(|e| format!("cannot create {}: {e}", a.data.display()))?;
    let machine = Machine::describe(Some(&a.data));
    let disk = machine
        .disk
        .as_ref()
        .map(|d| d.device.clone())
        .unwrap_or_else(|| "unknown".into());
    let file = a.data.join("kvtb-device-probe.dat");
    let cfg = crate::probe::ProbeConfig {
        file: file.clone(),
        file_bytes: bytes,
        queue_depths: a.qds.clone(),
        seconds: a.seconds,
        mixed_read_fraction: a.mix,
        seed: 1,
    };
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let result = crate::probe::probe(&cfg);
    if !a.keep {
        let _ = std::fs::remove_file(&file);
    }
    let (fill, points) = result?;
    let report = crate::probe::DeviceReport {
        kind: "device".into(),
        command: std::env::args().collect(),
        started_unix_s: started,
        machine: serde_json::to_value(&machine).map_err(|e| e.to_string())?,
        file,
        file_bytes: bytes,
        fill_mib_per_s: fill,
        points,
    };
    println!("# device {disk}: {}", machine.one_line());
    println!("pattern    qd   block      IOPS     MiB/s  mean us   p99 us");
    for p in &report.points {
        println!(
            "{:<9} {:>3} {:>7} {:>9.0} {:>9.1} {:>8.1} {:>8.1}",
            p.pattern,
            p.queue_depth,
            p.block_bytes,
            p.iops,
            p.mib_per_s,
            p.lat_mean_us,
            p.lat_p99_us
        );
    }
    println!("sequential fill (1 MiB O_DIRECT writes, QD 1): {fill:.0} MiB/s");
    if let (Some(m), Some(model)) = (report.iops("mixed", None), report.mix_iops(a.mix)) {
        println!(
            "best mixed IOPS {m:.0} vs harmonic model from read/write {model:.0} ({:+.0}%)",
            (m / model - 1.0) * 100.0
        );
    }
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| default_device_result(&disk));
    if let Some(d) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    }
    let json = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
    std::fs::write(&out, json + "\n")
        .map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    println!("device result written to {}", out.display());
    Ok(())
}

fn write_json(out: &Path, j: &serde_json::Value) -> Result<(), String> {
    if let Some(d) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    }
    std::fs::write(
        out,
        serde_json::to_string_pretty(j).map_err(|e| e.to_string())? + "\n",
    )
    .map_err(|e| format!("cannot write {}: {e}", out.display()))
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn cmd_iomethods(a: &IoMethodsArgs) -> Result<(), String> {
    let bytes = kvapi::parse_bytes(&a.size)
        .ok_or_else(|| format!("--size: expected a size such as 4G, got '{}'", a.size))?;
    if a.seconds.is_nan() || a.seconds <= 0.0 {
        return Err("--seconds must be positive".into());
    }
    std::fs::create_dir_all(&a.data)
        .map_err(|e| format!("cannot create {}: {e}", a.data.display()))?;
    let machine = Machine::describe(Some(&a.data));
    let c = crate::iomethods::Config {
        file: a.data.join("kvtb-iomethods.dat"),
        file_bytes: bytes,
        seconds: a.seconds,
        mmap_threads: a.mmap_threads.clone(),
        seed: 1,
    };
    let started = unix_now();
    let r = crate::iomethods::measure(&c);
    let _ = std::fs::remove_file(&c.file);
    let points = r?;
    println!("# I/O methods, 4 KiB random I/O: {}", machine.one_line());
    println!("op        method    threads  qd      IOPS   mean us    p99 us  cpu us/IO");
    for p in &points {
        println!(
            "{:<9} {:<9} {:>7} {:>3} {:>9.0} {:>9.1} {:>9.1} {:>10.1}",
            p.op,
            p.method,
            p.threads,
            p.queue_depth,
            p.iops,
            p.lat_mean_us,
            p.lat_p99_us,
            p.cpu_us_per_io
        );
    }
    let j = serde_json::json!({
        "kind": "iomethods",
        "command": std::env::args().collect::<Vec<_>>(),
        "started_unix_s": started,
        "machine": machine,
        "file": c.file,
        "file_bytes": bytes / (1 << 20) * (1 << 20),
        "memory_bytes": machine.memory_bytes,
        "block_bytes": 4096,
        "points": points,
        "notes": crate::iomethods::notes(&c),
    });
    write_json(&a.out, &j)?;
    println!("result written to {}", a.out.display());
    Ok(())
}

/// The arguments that make a child `ycsb run` drive the same workload the same way.
fn forward_args(w: &WorkloadArgs, d: &DriveArgs) -> Vec<String> {
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
    opt(&mut v, "--memory", d.memory.clone());
    opt(&mut v, "--warmup", d.warmup.map(|x| x.to_string()));
    opt(
        &mut v,
        "--device-result",
        d.device_result.as_ref().map(|p| p.display().to_string()),
    );
    v.extend(["--arrival".to_string(), d.arrival.clone()]);
    v.extend(["--data".to_string(), d.data.display().to_string()]);
    v
}

fn cmd_recovery(a: &RecoveryArgs) -> Result<(), String> {
    if !engines::is_built(&a.engine) || a.engine == "null" {
        return Err(format!(
            "unknown, unbuilt or stateless engine '{}' (built: {})",
            a.engine,
            engines::built().join(", ")
        ));
    }
    if !(a.run_seconds.is_finite() && a.run_seconds > 0.0) || a.cycles == 0 {
        return Err("--run-seconds must be positive and --cycles at least 1".into());
    }
    let mut s = session(&a.workload, &a.drive, engines::ALL)?;
    s.progress = false;
    let mem = memory(&a.drive)?;
    eprintln!(
        "loading {} records into {} ...",
        s.workload.recordcount, a.engine
    );
    let load = run_engine(&s, &a.engine, &a.drive.data, mem, true, (true, false))?;
    let exe = std::env::current_exe().map_err(|e| format!("locating ycsb: {e}"))?;
    let mut child_args = vec!["run".to_string(), "--engine".into(), a.engine.clone()];
    child_args.extend(forward_args(&a.workload, &a.drive));
    // The child runs far longer than the kill comes, reporting every second.
    child_args.extend([
        "--duration".into(),
        "1000000".into(),
        "-p".into(),
        "operationcount=1000000000000".into(),
    ]);
    let opts = engines::options(&a.engine, &s.props, &a.drive.data, mem);
    let r = crate::recovery::measure(
        &crate::recovery::Plan {
            exe,
            child_args,
            run_seconds: a.run_seconds,
            cycles: a.cycles,
            verify: a.verify,
        },
        &s.workload,
        &|| engines::open(&a.engine, &opts),
        &opts.path("dir", ""),
    )?;
    let value_bytes = s.workload.max_value_len() as u64;
    println!(
        "engine    durability  records  cycles  data MiB  recovery median  max       verified  missing"
    );
    let max = r.cycles.iter().map(|c| c.recovery_s).fold(0.0, f64::max);
    let missing: u64 = r.cycles.iter().map(|c| c.missing_records).sum();
    println!(
        "{:<9} {:<11} {:>7} {:>7} {:>9.0} {:>15.3}s {:>8.3}s {:>9} {:>8}",
        a.engine,
        load.engine.durability,
        s.workload.recordcount,
        a.cycles,
        r.cycles.last().map_or(0, |c| c.data_bytes) as f64 / (1 << 20) as f64,
        r.median_s,
        max,
        r.cycles.iter().map(|c| c.verified_records).sum::<u64>(),
        missing
    );
    if let Some(out) = &a.out {
        let j = serde_json::json!({
            "kind": "recovery",
            "command": std::env::args().collect::<Vec<_>>(),
            "started_unix_s": load.started_unix_s,
            "machine": load.machine,
            "engine": load.engine,
            "workload": s.name,
            "records": s.workload.recordcount,
            "value_bytes": value_bytes,
            "cycles": r.cycles,
            "recovery_s_median": r.median_s,
            "counters_after_open": r.counters_after_open,
        });
        write_json(out, &j)?;
        println!("result written to {}", out.display());
    }
    if missing > 0 {
        return Err(format!(
            "{missing} loaded records were missing after recovery"
        ));
    }
    Ok(())
}

fn write_trace(records: &[crate::trace::Record], out: &Path, format: &str) -> Result<(), String> {
    let mut sink: Box<dyn Write> = if out.as_os_str() == "-" {
        Box::new(std::io::BufWriter::new(std::io::stdout()))
    } else {
        Box::new(std::io::BufWriter::new(
            std::fs::File::create(out)
                .map_err(|e| format!("cannot create {}: {e}", out.display()))?,
        ))
    };
    let r = match format {
        "csv" => crate::trace::write_csv(records, &mut sink),
        "bin" => crate::trace::write_bin(records, &mut sink),
        other => return Err(format!("--format: expected csv or bin, got '{other}'")),
    };
    r.and_then(|()| sink.flush())
        .map_err(|e| format!("writing {}: {e}", out.display()))
}

fn cmd_trace(a: &TraceArgs) -> Result<(), String> {
    use crate::trace::{Record, TraceOp};
    let (_name, props) = resolve_properties(&a.workload)?;
    warn_unknown(&props, engines::ALL);
    let w = Arc::new(Workload::from_properties(&props)?);
    let mut records = Vec::new();
    match a.phase.as_str() {
        "load" => {
            let mut stream = OpStream::new(
                w.clone(),
                Arc::new(AckCounter::new(0)),
                a.workload.seed,
                1_000_000,
            );
            for n in w.insertstart..w.insertstart + w.insertcount {
                let len = stream.value_len_for(n);
                records.push(Record {
                    time_us: 0,
                    op: TraceOp::Put,
                    key: w.key(n),
                    value_size: len as u32,
                    scan_len: 0,
                });
            }
        }
        "run" => {
            // the stream one client thread (or the async injector) issues
            let mut stream = OpStream::new(
                w.clone(),
                Arc::new(AckCounter::new(w.recordcount)),
                a.workload.seed,
                0,
            );
            for _ in 0..w.operationcount {
                let op = stream.next_op();
                if op.kind == OpKind::Insert {
                    stream.acknowledge_insert(op.keynum)?;
                }
                let top = match op.kind {
                    OpKind::Read => TraceOp::Get,
                    OpKind::Insert | OpKind::Update => TraceOp::Put,
                    OpKind::Scan => TraceOp::Scan,
                    OpKind::ReadModifyWrite => TraceOp::Rmw,
                    OpKind::Delete => TraceOp::Delete,
                };
                records.push(Record {
                    time_us: 0,
                    op: top,
                    key: op.key,
                    value_size: op.value_len as u32,
                    scan_len: op.scan_len as u32,
                });
            }
        }
        other => return Err(format!("--phase: expected load or run, got '{other}'")),
    }
    write_trace(
        &records,
        a.out.as_deref().unwrap_or(Path::new("-")),
        &a.format,
    )
}

fn cmd_convert(c: &ConvertArgs) -> Result<(), String> {
    use crate::trace;
    let t = match c.from.as_str() {
        "meta" => trace::convert_meta(&c.input)?,
        "twitter" => trace::convert_twitter(&c.input)?,
        "oracle" => trace::convert_oracle(&c.input, c.key_size)?,
        "csv" => trace::read_csv(&c.input)?,
        "bin" => trace::read_bin(&c.input)?,
        other => {
            return Err(format!(
                "--from: expected meta, twitter, oracle, csv or bin, got '{other}'"
            ));
        }
    };
    write_trace(&t.records, &c.out, &c.format)?;
    eprintln!(
        "converted {}: {}",
        c.input.display(),
        trace::describe(&t.records)
    );
    for (op, n) in &t.unknown_ops {
        eprintln!("warning: {n} requests with op '{op}' have no equivalent and were left out");
    }
    Ok(())
}

/// Entry point; returns the process exit code.
pub fn main() -> i32 {
    let args = normalise_args(std::env::args());
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    let r = match &cli.cmd {
        Cmd::Load(a) => cmd_phase(a, (true, false)),
        Cmd::Run(a) if a.trace.is_some() => cmd_replay(a),
        Cmd::Run(a) => cmd_phase(&a.phase, (a.load, true)),
        Cmd::Compare(a) => cmd_compare(a),
        Cmd::Trace(t) => match &t.sub {
            Some(TraceSub::Convert(c)) => cmd_convert(c),
            Some(TraceSub::Stats { file }) => crate::trace::read(file).map(|t| {
                println!("{}", crate::trace::describe(&t.records));
                for (op, n) in &t.unknown_ops {
                    println!("unknown op {op}: {n} requests (not replayed)");
                }
            }),
            None => cmd_trace(&t.generate),
        },
        Cmd::Device(a) => cmd_device(a),
        Cmd::Iomethods(a) => cmd_iomethods(a),
        Cmd::Recovery(a) => cmd_recovery(a),
        Cmd::Crash(a) => cmd_crash(a),
        Cmd::CrashChild(a) => cmd_crash_child(a),
        Cmd::Machine { data } => serde_json::to_string_pretty(&Machine::describe(Some(data)))
            .map(|j| println!("{j}"))
            .map_err(|e| e.to_string()),
        Cmd::Engines => {
            for e in engines::ALL {
                println!(
                    "{e}{}",
                    if engines::is_built(e) {
                        ""
                    } else {
                        " (not in this build)"
                    }
                );
            }
            Ok(())
        }
    };
    match r {
        Ok(()) => 0,
        Err(e) => {
            let _ = std::io::stdout().flush();
            eprintln!("error: {e}");
            if std::io::stderr().is_terminal() {
                eprintln!("(ycsb --help for usage)");
            }
            1
        }
    }
}
