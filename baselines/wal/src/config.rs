//! The engine's options (`wal.*` properties) and the limits it enforces.

use crate::format::BLOCK;
use kvapi::{Error, Limits, Options, Result};
use std::path::PathBuf;

pub const ENGINE_NAME: &str = "wal";
pub const MAX_KEY: usize = 1024;
pub const MAX_VALUE: usize = 64 << 20;
/// Why a budget refuses: what `Error::OverBudget` says the engine must hold.
pub const OVER_BUDGET: &str = "the WAL engine keeps its ordered index and page table in \
    memory, and a page cache of at least 64 pages";

/// How an acknowledged write reaches the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Write a batch of transactions, then fdatasync (power).
    Fdatasync,
    /// WAL and data files opened with O_DSYNC (power).
    Dsync,
    /// Write only: survives a killed process, not a power loss.
    NoneProcess,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Fdatasync => "fdatasync",
            Mode::Dsync => "dsync",
            Mode::NoneProcess => "none-process",
        }
    }
}

/// Resolved options.
#[derive(Clone, Debug)]
pub struct Config {
    pub dir: PathBuf,
    /// WAL file bytes (header block included), used only when the WAL is created.
    pub log_size: u64,
    pub mode: Mode,
    pub checkpoint_pct: u64,
    pub checkpoint_ms: u64,
    /// With a bounded page cache, a checkpoint starts when dirty pages pass this
    /// percentage of the dirty limit (writers wait at 100%); 100: only at the limit.
    pub checkpoint_dirty_pct: u64,
    /// `wal.uring` (on): the committer's WAL writes and syncs and a checkpoint's
    /// meta pages go through io_urings, many in flight; off: by pwrite and
    /// fdatasync, one after another (`ycsb crash --power` sets it: its recording
    /// layer sees the C library's calls, not io_uring's).
    pub uring: bool,
    /// `wal.log_depth` (4): group-commit batches the committer keeps in flight at
    /// most (1: one batch written, and synced, before the next is taken). With
    /// fdatasync, one batch at most waits for a sync not yet issued.
    pub log_depth: usize,
    /// Values of this many bytes or more go to the data file.
    pub large_value: usize,
    /// Large values above this many bytes are written (and synced) before the WAL
    /// record; smaller large values are written in parallel with it.
    pub data_first: usize,
    /// The page cache's size without a memory budget (`wal.cache`, 0 = unbounded).
    pub cache: u64,
    /// The memory budget (`wal.memory`): the index and the page table, then the page
    /// cache in what they leave; a new key whose index entry would leave the cache
    /// less than its least is refused (`Error::OverBudget`), and so is an open whose
    /// index does not fit. `None`: no budget.
    pub memory: Option<u64>,
    /// Every option as resolved, for the result file.
    pub settings: Vec<(String, String)>,
}

impl Config {
    pub fn from_options(opts: &Options) -> Result<Config> {
        let dir = opts.path("dir", "data/wal");
        let log_size = opts.bytes("log_size", 256 << 20)?;
        let mode = match opts
            .choice(
                "durability",
                "fdatasync",
                &["fdatasync", "dsync", "none-process"],
            )?
            .as_str()
        {
            "dsync" => Mode::Dsync,
            "none-process" => Mode::NoneProcess,
            _ => Mode::Fdatasync,
        };
        let checkpoint_pct = opts.u64("checkpoint_pct", 50)?;
        let checkpoint_ms = opts.u64("checkpoint_ms", 5000)?;
        let checkpoint_dirty_pct = opts.u64("checkpoint_dirty_pct", 50)?;
        let uring = opts.choice("uring", "on", &["on", "off"])? == "on";
        // 4: at 1, 4 and 16 YCSB A at 1M records ran within the disk's noise, and the
        // deeper the pipeline the smaller each batch (results/wal/depth-1m: 1.4, 1.9
        // and 2.1 KB of log per 1 KiB update)
        let log_depth = opts.u64("log_depth", 4)?;
        let large_value = opts.bytes("large_value", 4096)? as usize;
        let data_first = opts.bytes("data_first", 32 << 10)? as usize;
        let cache = opts.bytes("cache", 0)?;
        let memory = if opts.is_set("memory") {
            Some(opts.bytes("memory", 0)?)
        } else {
            None
        };
        opts.finish()?;
        if log_size < 17 * BLOCK as u64 {
            return Err(Error::InvalidArgument(format!(
                "wal.log_size must be at least {} bytes (16 log blocks and the header)",
                17 * BLOCK
            )));
        }
        // ids hold the offset in the log in 16-byte units in 32 bits
        if (log_size / BLOCK as u64 - 1) * crate::format::UNITS_PER_BLOCK > u32::MAX as u64 {
            return Err(Error::InvalidArgument(
                "wal.log_size is too large: at most 64 GiB".into(),
            ));
        }
        if !(1..=95).contains(&checkpoint_pct) {
            return Err(Error::InvalidArgument(
                "wal.checkpoint_pct must be between 1 and 95".into(),
            ));
        }
        if !(1..=64).contains(&log_depth) {
            return Err(Error::InvalidArgument(
                "wal.log_depth must be between 1 and 64".into(),
            ));
        }
        if !(1..=100).contains(&checkpoint_dirty_pct) {
            return Err(Error::InvalidArgument(
                "wal.checkpoint_dirty_pct must be between 1 and 100".into(),
            ));
        }
        Ok(Config {
            dir,
            log_size,
            mode,
            checkpoint_pct,
            checkpoint_dirty_pct,
            uring,
            log_depth: log_depth as usize,
            checkpoint_ms: checkpoint_ms.max(1),
            large_value,
            data_first,
            cache,
            memory,
            settings: opts.resolved(),
        })
    }

    /// The defaults for `dir`, as if no option were given.
    #[expect(
        clippy::expect_used,
        reason = "the defaults with only `dir` given always parse"
    )]
    pub fn with_dir(dir: &std::path::Path) -> Config {
        let d = dir.to_string_lossy().into_owned();
        Config::from_options(&Options::new(ENGINE_NAME, &[("dir", &d)])).expect("defaults")
    }
}

/// What keys and values the engine accepts.
pub fn limits() -> Limits {
    Limits {
        max_key: MAX_KEY,
        max_value: MAX_VALUE,
        empty_key: true,
    }
}
