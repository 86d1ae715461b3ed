//! Holding a run to its memory budget (`--memory SIZE`, `--memory-limit`).
//!
//! Every engine is measured from outside (resident memory, the page cache of its
//! files); an engine that reads through the OS page cache can only be bounded by the
//! kernel, with a memory cgroup that charges that page cache to the process. So a
//! `ycsb load`/`run` with a budget, where a cgroup can be made (root), runs itself
//! again as a child inside a cgroup of its own: the child joins it first thing, sets
//! its limit to the budget plus the driver's own charge just before the engine opens,
//! and the parent removes the cgroup when the child ends, reporting a kill at the
//! limit as the engine being over budget. Nothing outside the testbed's own processes
//! is touched, and every cgroup made is removed after its run (stale ones of killed
//! runs at the next start). Where no cgroup can be made, engines with direct I/O run
//! measured only, and an engine that reads through the OS page cache is refused with
//! what is missing, unless `--memory-limit none` asks to run it unbounded (its result
//! then says so and it is flagged).

use clap::ValueEnum;
use kvtb_schema::RunFile;
use std::path::{Path, PathBuf};
use std::process::Command;
use ycsb::memory::{Cgroup, CgroupVersion};
use ycsb::results::write_json;
use ycsb::{Error, Result};

/// The exit code of a run whose engine did not fit its memory budget.
pub(super) const EXIT_OVER_BUDGET: i32 = 3;

/// Where a supervisor tells its child which cgroup to join: `v1:PATH` or `v2:PATH`.
const CGROUP_ENV: &str = "KVTB_MEMORY_CGROUP";

/// Where the child writes its run file as it stands once the engine opened (the
/// engine as opened: its durability, settings and notes; the workload; the driving
/// mode), so that the record of a kill at the limit says what was run.
const OPENED_ENV: &str = "KVTB_OPENED_RECORD";

/// The child's run file once its engine opened, when its supervisor asked for it
/// (nothing otherwise; a failure to write it is only a warning: the run goes on).
pub(super) fn opened(report: &RunFile) {
    let Some(path) = std::env::var_os(OPENED_ENV) else {
        return;
    };
    if let Err(e) = write_json(Path::new(&path), report) {
        eprintln!("warning: the record of the opened engine was not written: {e}");
    }
}

/// `--memory-limit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(super) enum LimitMode {
    /// A memory cgroup where one can be made; else direct-I/O engines run measured
    /// only and engines that read through the OS page cache are refused.
    Auto,
    /// A memory cgroup, or fail.
    Cgroup,
    /// No cgroup: measure only (engines that read through the OS page cache are then
    /// not bounded, and flagged).
    None,
}

/// How this process is held to the budget.
pub(super) enum Bound {
    /// No `--memory`: nothing to hold.
    NoBudget,
    /// Inside a cgroup made for this run (its limit is set when the engine opens).
    Own(Cgroup),
    /// Inside a cgroup with a limit the user set (e.g. `systemd-run -p MemoryMax=`).
    Enclosing(Cgroup, u64),
    /// No cgroup: `why` says what is missing, or that `--memory-limit none` was asked.
    Unbounded { why: String, asked: bool },
}

impl Bound {
    pub(super) fn cgroup(&self) -> Option<&Cgroup> {
        match self {
            Bound::Own(c) | Bound::Enclosing(c, _) => Some(c),
            _ => None,
        }
    }

    /// The words for the result's `enforcement`.
    pub(super) fn describe(&self) -> String {
        match self {
            Bound::NoBudget => "none: no --memory budget".into(),
            Bound::Own(c) => format!(
                "memory cgroup {} of this run ({}): budget plus the driver's own charge at engine open plus room for the driver's growth (8 MiB, 2 MiB per recorder and 256 KiB per driving thread beyond one)",
                match c.version {
                    CgroupVersion::V1 => "v1, memory.limit_in_bytes",
                    CgroupVersion::V2 => "v2, memory.max",
                },
                c.path.display()
            ),
            Bound::Enclosing(c, l) => format!(
                "the enclosing memory cgroup's limit of {l} bytes ({})",
                c.path.display()
            ),
            Bound::Unbounded { why, asked: true } => {
                format!("none (--memory-limit none): measured only; {why}")
            }
            Bound::Unbounded { why, asked: false } => format!("none: measured only; {why}"),
        }
    }
}

/// What a run with a budget does: `Child(code)` when it ran in a child inside its
/// own cgroup (the caller exits with the code), else `Here(bound)`.
pub(super) enum Held {
    Child(i32),
    Here(Bound),
}

fn encode(c: &Cgroup) -> String {
    let v = match c.version {
        CgroupVersion::V1 => "v1",
        CgroupVersion::V2 => "v2",
    };
    format!("{v}:{}", c.path.display())
}

/// The cgroup a supervisor made for this process, joined now (before any engine
/// memory is allocated, so all of it is charged there).
fn join_from_env() -> Result<Option<Cgroup>> {
    let Ok(v) = std::env::var(CGROUP_ENV) else {
        return Ok(None);
    };
    let (ver, path) = v.split_once(':').ok_or_else(|| {
        Error::usage(format!(
            "{CGROUP_ENV}: expected v1:PATH or v2:PATH, got '{v}'"
        ))
    })?;
    let version = match ver {
        "v1" => CgroupVersion::V1,
        "v2" => CgroupVersion::V2,
        _ => {
            return Err(Error::usage(format!(
                "{CGROUP_ENV}: unknown version '{ver}'"
            )));
        }
    };
    let cg = Cgroup {
        path: path.into(),
        version,
    };
    cg.add(std::process::id())
        .map_err(|e| Error::io_at("joining the memory cgroup", &cg.path, e))?;
    Ok(Some(cg))
}

/// Decides how a `ycsb load`/`run` of `engine` is held to `budget`; with a cgroup of
/// its own, runs the same command as a child inside it and returns its exit code.
/// `out` is where the run file goes: written here, as a record of the kill, when the
/// child is killed at the limit.
pub(super) fn hold(
    budget: Option<u64>,
    mode: LimitMode,
    engine: &str,
    out: Option<&Path>,
) -> Result<Held> {
    if let Some(cg) = join_from_env()? {
        return Ok(Held::Here(Bound::Own(cg)));
    }
    let Some(budget) = budget else {
        return Ok(Held::Here(Bound::NoBudget));
    };
    if mode == LimitMode::None {
        return Ok(Held::Here(Bound::Unbounded {
            why: "the OS page cache of an engine without direct I/O is not bounded".into(),
            asked: true,
        }));
    }
    if let Some((cg, limit)) = Cgroup::enclosing() {
        return Ok(Held::Here(Bound::Enclosing(cg, limit)));
    }
    let cg = match Cgroup::create(engine) {
        Ok(cg) => cg,
        Err(why) if mode == LimitMode::Auto => {
            return Ok(Held::Here(Bound::Unbounded { why, asked: false }));
        }
        Err(why) => return Err(Error::usage(format!("--memory-limit cgroup: {why}"))),
    };
    // beside the result file, removed once read (a stale one is removed first)
    let opened_at = out.map(|o| {
        let mut p = o.as_os_str().to_owned();
        p.push(".opened");
        PathBuf::from(p)
    });
    let mut child =
        Command::new(std::env::current_exe().map_err(|e| Error::io("finding the ycsb binary", e))?);
    child
        .args(std::env::args_os().skip(1))
        .env(CGROUP_ENV, encode(&cg));
    if let Some(p) = &opened_at {
        let _ = std::fs::remove_file(p);
        child.env(OPENED_ENV, p);
    }
    let status = child
        .status()
        .map_err(|e| Error::io("starting the run in its memory cgroup", e));
    let opened = opened_at.as_ref().and_then(|p| {
        let r = std::fs::read(p).ok()?;
        let _ = std::fs::remove_file(p);
        serde_json::from_slice::<RunFile>(&r).ok()
    });
    let kills = cg.oom_kills();
    let limit = cg.limit();
    let path = cg.path.clone();
    let removed = cg.remove();
    let status = status?;
    removed.map_err(|e| Error::io_at("removing the memory cgroup", &path, e))?;
    if kills > 0 {
        eprintln!(
            "error: {engine} was killed by the kernel at its memory limit ({} MiB: the budget of {} MiB plus the driver's own): over budget",
            limit.unwrap_or(0) >> 20,
            budget >> 20
        );
        if let Some(out) = out {
            write_json(out, &killed_record(engine, budget, limit, opened))?;
            eprintln!("result (the kill) written to {}", out.display());
        }
        return Ok(Held::Child(EXIT_OVER_BUDGET));
    }
    use std::os::unix::process::ExitStatusExt;
    Ok(Held::Child(
        status
            .code()
            .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)),
    ))
}

/// The run file of an engine killed at its memory limit: no phases, the kill stated;
/// the engine as it opened (its durability, settings, notes), the workload and the
/// driving mode where the child recorded them before it was killed (`opened`).
fn killed_record(
    engine: &str,
    budget: u64,
    limit: Option<u64>,
    opened: Option<RunFile>,
) -> RunFile {
    const KILLED: &str = "killed by the kernel at its memory limit: over budget";
    let mut r = match opened {
        Some(mut r) => {
            r.phases.clear();
            r.engine.notes.push(KILLED.into());
            r
        }
        None => ycsb::results::stub_run(engine, KILLED),
    };
    // what the child measured before the engine opened stays (its own share, the
    // page cache it dropped, whether the engine reads through the OS page cache)
    r.memory.budget_bytes = Some(budget);
    r.memory.enforcement =
        "memory cgroup of this run: the kernel killed the engine at its limit".into();
    r.memory.limit_bytes = limit;
    r.memory.killed_at_limit = true;
    r
}

/// Room in the limit for what the driver itself allocates after the engine opened
/// (its per-phase histograms and timeline, the thread-pool adapter's threads: 4 to 7
/// MiB at 64 requests in flight through the native path, the null engine's figure
/// shows it): without it, an engine that holds exactly its budget would be killed for
/// the driver's memory. It is counted in every engine's figure alike.
pub(super) const DRIVER_ROOM: u64 = 8 << 20;

/// Room per recorder beyond the first: each keeps about 1.5 MiB of histograms (the
/// null engine: 99 MiB at 64 threads against 3 MiB at one when every client thread had
/// its own; results/memory-budget/measurements.md, "Many client threads"), counted and
/// left out of the engine's figure but charged to the cgroup. Client threads beyond
/// one per core share recorders (`ycsb::runner::recorders_for`).
pub(super) const ROOM_PER_RECORDER: u64 = 2 << 20;

/// Room per driving thread beyond the first (client threads, or the thread-pool
/// adapter's threads at `--qd`): a stack and an allocator heap each, about 8 MiB for
/// 64 (smaps: 1.6-1.8 MiB of stacks, 5-6 MiB of mimalloc's arena). It was 2 MiB a
/// thread, but the room is memory an engine that reads through the OS page cache
/// fills (sled, the WAL engine's files): at 64 in flight that was 126 MiB of page
/// cache beyond the budget. What RocksDB's allocator keeps beyond its cache at 64
/// threads is the engine's, held by the memory governor (`measure/govern.rs`).
pub(super) const ROOM_PER_THREAD: u64 = 256 << 10;

/// The room for a driver of `client_threads` client threads, or at `--qd` (`qd` > 0)
/// of `qd` requests in flight: as many threads (the engine's own or the driver's,
/// not known before the engine opens) and one recorder per core among them.
pub(super) fn driver_room(client_threads: usize, qd: usize) -> u64 {
    let threads = if qd > 0 { qd } else { client_threads }.max(1);
    let recorders = ycsb::runner::recorders_for(threads);
    DRIVER_ROOM
        + ROOM_PER_RECORDER * (recorders - 1) as u64
        + ROOM_PER_THREAD * (threads - 1) as u64
}

/// Sets the limit of the run's own cgroup to the budget plus what the process is
/// charged now (the driver, before the engine opens) plus `room` ([`driver_room`]).
/// Swap is limited alike where the kernel accounts it, so the engine cannot swap its
/// way past the budget.
pub(super) fn set_limit(bound: &Bound, budget: Option<u64>, room: u64) -> Result<Option<u64>> {
    match (bound, budget) {
        (Bound::Own(cg), Some(b)) => {
            let now = cg.usage().unwrap_or(0);
            let limit = now + b + room;
            cg.set_limit(limit)
                .map_err(|e| Error::io_at("setting the memory limit of", &cg.path, e))?;
            let memsw = cg.path.join("memory.memsw.limit_in_bytes");
            if memsw.exists() {
                std::fs::write(&memsw, limit.to_string())
                    .map_err(|e| Error::io_at("setting the swap limit of", &cg.path, e))?;
            }
            Ok(Some(limit))
        }
        (Bound::Enclosing(_, l), _) => Ok(Some(*l)),
        _ => Ok(None),
    }
}

/// The refusal for an engine that reads through the OS page cache where nothing can
/// bound that cache.
pub(super) fn unbounded_refusal(engine: &str, why: &str) -> Error {
    Error::usage(format!(
        "{engine} reads through the OS page cache, which only a memory cgroup can hold to \
         --memory, and none can be made here: {why}. Run as root, start ycsb inside a \
         limited cgroup (e.g. `systemd-run --user --scope -p MemoryMax=SIZE ycsb ...` on a \
         cgroup v2 system), or pass --memory-limit none to run it unbounded (its result is \
         then flagged)"
    ))
}
