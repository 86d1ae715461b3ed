//! The `ycsb` command line: the clap types of the subcommands and the dispatch to
//! them, one file per subcommand. Part of the binary only; it prints what the
//! library measures and every error.

mod args;
mod compare;
mod crash;
mod device;
mod engine_run;
mod engines;
mod iomethods;
mod machine;
mod memory;
mod merge;
mod progress;
mod recovery;
mod run;
mod session;
mod shell;
mod table;
mod trace;
mod workloads;

use clap::{Parser, Subcommand};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

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
    Load(run::PhaseArgs),
    /// Run the workload's operation mix against an engine.
    Run(run::RunArgs),
    /// Load and run several engines one after another on the same seeded workload and
    /// print one table with the engines as columns.
    Compare(compare::CompareArgs),
    /// Write the exact operation sequence a run would issue to a CSV file, without
    /// touching an engine.
    Trace(trace::TraceCmd),
    /// Measure the disk under a data directory (O_DIRECT, io_uring): random 4 KiB
    /// read, write and mixed IOPS at several queue depths, and sequential bandwidth;
    /// runs then state the ceiling for their I/O mix and the fraction reached.
    Device(device::DeviceArgs),
    /// Compare I/O methods on one file (the paper's Table 3): random 4 KiB reads and
    /// writes through mmap (1 and several threads), synchronous O_DIRECT pread/pwrite,
    /// and io_uring at queue depth 1 and 64.
    Iomethods(iomethods::IoMethodsArgs),
    /// Recovery time after a crash: load the records, run the workload in a child
    /// process, kill it with SIGKILL, reopen the engine (timed) and check the records.
    Recovery(recovery::RecoveryArgs),
    /// Durability audit: kill a writing child with SIGKILL at random moments, reopen,
    /// and check every acknowledged write (and the recovery time).
    Crash(crash::CrashArgs),
    /// The writer `ycsb crash` starts and kills (not for direct use).
    #[command(hide = true)]
    CrashChild(crash::CrashChildArgs),
    /// One result from several clients that drove one store at once: histograms
    /// merged exactly, timelines aligned by wall clock.
    Merge(merge::MergeArgs),
    /// Read, insert, update, delete and scan single keys of an engine's store, one
    /// command a line (help for the list).
    Shell(shell::ShellArgs),
    /// The comparison table of the run files in a directory (one per engine).
    Table(table::TableArgs),
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

/// The files and directories a command will write, checked before any work: a
/// result that cannot be written is found at the start, not after the run.
fn check_outputs(cmd: &Cmd) -> ycsb::Result<()> {
    use ycsb::results::check_writable;
    let files: Vec<&std::path::Path> = match cmd {
        Cmd::Load(a) => a.out.iter().map(|p| p.as_path()).collect(),
        Cmd::Run(a) => a.phase.out.iter().map(|p| p.as_path()).collect(),
        Cmd::Crash(a) => a.out.iter().map(|p| p.as_path()).collect(),
        Cmd::Recovery(a) => a.out.iter().map(|p| p.as_path()).collect(),
        Cmd::Device(a) => a.out.iter().map(|p| p.as_path()).collect(),
        Cmd::Iomethods(a) => vec![a.out.as_path()],
        Cmd::Merge(a) => a.out.iter().map(|p| p.as_path()).collect(),
        Cmd::Trace(t) => match &t.sub {
            Some(trace::TraceSub::Convert(c)) => vec![c.out.as_path()],
            Some(_) => vec![],
            None => t
                .generate
                .out
                .iter()
                .map(|p| p.as_path())
                .filter(|p| p.as_os_str() != "-")
                .collect(),
        },
        _ => vec![],
    };
    for f in files {
        check_writable(f)?;
    }
    if let Cmd::Compare(a) = cmd {
        check_writable(&a.out_dir.join(".ycsb-write-check"))?;
    }
    Ok(())
}

/// YCSB's habits that name a binding instead of an engine (`-db sled`, `ycsb load
/// basic -P ...`): pointed to `--engine` rather than left to a generic parse error.
fn binding_habit(args: &[String]) -> Option<String> {
    let engine_hint = "this driver chooses the engine with --engine NAME (see `ycsb engines`)";
    if let Some(i) = args.iter().position(|a| a == "-db" || a == "--db") {
        let what = args.get(i + 1).map(String::as_str).unwrap_or("");
        return Some(format!(
            "-db {what}: YCSB's binding option; {engine_hint}, e.g. --engine sled"
        ));
    }
    match (args.get(1).map(String::as_str), args.get(2)) {
        (Some("load" | "run"), Some(b)) if !b.starts_with('-') => Some(format!(
            "'{b}' after '{}' looks like a YCSB binding name; {engine_hint}",
            args[1]
        )),
        _ => None,
    }
}

fn dispatch(cmd: &Cmd) -> ycsb::Result<()> {
    check_outputs(cmd)?;
    match cmd {
        Cmd::Load(a) => run::phases(a, true, false),
        Cmd::Run(a) => match &a.trace {
            Some(file) => run::replay(a, file),
            None => run::phases(&a.phase, a.load, true),
        },
        Cmd::Compare(a) => compare::compare(a),
        Cmd::Trace(t) => trace::trace(t),
        Cmd::Device(a) => device::device(a),
        Cmd::Iomethods(a) => iomethods::iomethods(a),
        Cmd::Recovery(a) => recovery::recovery(a),
        Cmd::Crash(a) => crash::crash(a),
        Cmd::CrashChild(a) => crash::child(a),
        Cmd::Machine { data } => machine::machine(data),
        Cmd::Merge(a) => merge::merge(a),
        Cmd::Shell(a) => shell::shell(a),
        Cmd::Table(a) => table::table(a),
        Cmd::Engines => {
            engines::engines();
            Ok(())
        }
    }
}

/// Entry point; returns the process exit code (2: usage, as clap reports it; 1: the
/// command failed, the error printed; 3: the engine did not fit its memory budget).
pub fn main() -> i32 {
    let args = normalise_args(std::env::args());
    if let Some(why) = binding_habit(&args) {
        eprintln!("error: {why}");
        return 2;
    }
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    match dispatch(&cli.cmd) {
        Ok(()) => 0,
        Err(e) => {
            let _ = std::io::stdout().flush();
            eprintln!("error: {e}");
            if std::io::stderr().is_terminal() {
                eprintln!("(ycsb --help for usage)");
            }
            if matches!(e, ycsb::Error::OverBudget(_)) {
                memory::EXIT_OVER_BUDGET
            } else {
                1
            }
        }
    }
}
