//! Configuration: from `kvell.*` options (the driver) or built directly (tests), the
//! engine's limits, and what `EngineInfo` says about them.

use crate::budget::Budget;
use crate::io::sim::{Sim, SimDisk};
use crate::io::uring::{RingSetup, Uring};
use crate::io::{Backend, IoFlags, PAGE, psync::Psync};
use crate::slab;
use kvapi::{Durability, EngineInfo, Error, Limits, Result};
use std::path::PathBuf;

/// The limits of this engine.
pub const LIMITS: Limits = Limits {
    max_key: slab::MAX_KEY,
    max_value: slab::MAX_VALUE,
    empty_key: true,
};

/// When a write is acknowledged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// After the O_DIRECT write completed (durability class `process`).
    Direct,
    /// After the write completed with RWF_DSYNC (psync: fdatasync per batch), class
    /// `power`.
    Flush,
}

/// When a worker's page-cache frames are made resident (`kvell.cache_setup`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheSetup {
    /// During the open, by a helper thread beside recovery's scan, as the authors'
    /// C code memsets its cache inside the recovery time it reports (the default;
    /// under a budget, as many frames as recovery leaves room for, the rest after).
    Open,
    /// After the open, by a helper thread in the idle scheduling class while the
    /// worker already serves (`PageCache::fill_beside`): the open does none of the
    /// kernel's zeroing, and the first requests run beside it.
    After,
}

impl CacheSetup {
    pub const ALL: [CacheSetup; 2] = [CacheSetup::Open, CacheSetup::After];

    pub fn name(self) -> &'static str {
        match self {
            CacheSetup::Open => "open",
            CacheSetup::After => "after",
        }
    }
}

/// Which I/O backend the workers use.
#[derive(Clone)]
pub enum IoMode {
    Uring,
    Psync,
    /// In-memory simulated disk (tests).
    Sim(SimDisk),
}

impl IoMode {
    fn name(&self) -> &'static str {
        match self {
            IoMode::Uring => "uring",
            IoMode::Psync => "psync",
            IoMode::Sim(_) => "sim",
        }
    }
}

#[derive(Clone)]
pub struct Config {
    /// One directory per disk; workers are assigned to them in contiguous blocks.
    pub dirs: Vec<PathBuf>,
    pub workers: usize,
    /// Page cache bytes, total across workers: fixed, unless a memory budget
    /// (`memory`) sizes the cache instead.
    pub cache_bytes: u64,
    /// The memory budget (`kvell.memory`), total across workers: each worker's page
    /// cache, index and fixed memory stay within `memory / workers`, the cache giving
    /// way as the index grows (see `budget.rs`). `None`: no budget, the cache is
    /// `cache_bytes`.
    pub memory: Option<u64>,
    /// `kvell.cache` was given with `kvell.memory`: the cache stays fixed at
    /// `cache_bytes`, overriding the budget's split (which is then only stated).
    pub cache_given: bool,
    pub queue_depth: usize,
    pub batch: usize,
    pub mode: Mode,
    pub io: IoMode,
    /// How each worker's io_uring is set up (`kvell.ring`: `defer`, `coop` or
    /// `plain`; see `io::uring`).
    pub ring: RingSetup,
    /// In-memory free-list entries per slab.
    pub freelist: usize,
    /// O_DIRECT (true unless asked otherwise).
    pub direct: bool,
    /// Item reads in flight per scan.
    pub scan_in_flight: usize,
    /// A CRC32 per item and tombstone (fixed when the database is created).
    pub checksum: bool,
    /// The bytes the device writes whole or not at all (`kvell.atomic_write`: 4096,
    /// the default, or 512 for a device that tears 512 B sectors). Recovery after an
    /// unclean shutdown takes a slot that fails its checks for a torn write only where
    /// a write of this unit could have torn it; anything else is `Corruption`.
    pub atomic_write: usize,
    /// When the page cache's frames are made resident (`kvell.cache_setup`).
    pub cache_setup: CacheSetup,
    /// The bytes of each of recovery's sequential reads (`kvell.recovery_read`, a
    /// multiple of 4096 from 4 KiB to 64 MiB); None: `recovery::piece_len`'s choice.
    pub recovery_read: Option<usize>,
    /// Recovery's sequential reads in flight per worker (`kvell.recovery_depth`, 2 to
    /// 256); None: eight.
    pub recovery_depth: Option<usize>,
    /// Options as given (for EngineInfo), when built from options.
    pub settings: Vec<(String, String)>,
}

impl Config {
    /// Defaults on one directory.
    pub fn new(dir: impl Into<PathBuf>) -> Config {
        Config {
            dirs: vec![dir.into()],
            workers: 2,
            cache_bytes: 256 << 20,
            memory: None,
            cache_given: false,
            queue_depth: 64,
            batch: 64,
            mode: Mode::Direct,
            io: IoMode::Uring,
            ring: RingSetup::Defer,
            freelist: 64,
            direct: true,
            scan_in_flight: 64,
            checksum: true,
            atomic_write: PAGE,
            cache_setup: CacheSetup::Open,
            recovery_read: None,
            recovery_depth: None,
            settings: Vec::new(),
        }
    }

    /// The configuration from `kvell.*` options; its values are checked at open.
    pub fn from_options(o: &kvapi::Options) -> Result<Config> {
        let dirs: Vec<PathBuf> = o
            .string("dir", "data/kvell")
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
            .collect();
        let mut c = Config::new("");
        c.dirs = dirs;
        c.workers = o.usize("workers", 2)?;
        if o.is_set("memory") {
            c.memory = Some(o.bytes("memory", 0)?);
        }
        c.cache_given = o.is_set("cache");
        if c.memory.is_none() || c.cache_given {
            c.cache_bytes = o.bytes("cache", 256 << 20)?;
        }
        c.queue_depth = o.usize("queue_depth", 64)?;
        c.batch = o.usize("batch", 64)?;
        c.mode = match o
            .choice("durability", "direct", &["direct", "flush"])?
            .as_str()
        {
            "flush" => Mode::Flush,
            _ => Mode::Direct,
        };
        c.io = match o.choice("io", "uring", &["uring", "psync"])?.as_str() {
            "psync" => IoMode::Psync,
            _ => IoMode::Uring,
        };
        let ring = o.choice("ring", "defer", &RingSetup::ALL.map(RingSetup::name))?;
        c.ring = RingSetup::parse(&ring).unwrap_or(RingSetup::Defer);
        c.freelist = o.usize("freelist", 64)?;
        c.direct = o.bool("direct", true)?;
        c.scan_in_flight = o.usize("scan_in_flight", 64)?;
        c.checksum = o.bool("checksum", true)?;
        c.atomic_write = match o.choice("atomic_write", "4096", &["4096", "512"])?.as_str() {
            "512" => 512,
            _ => PAGE,
        };
        let setup = o.choice(
            "cache_setup",
            "open",
            &CacheSetup::ALL.map(CacheSetup::name),
        )?;
        c.cache_setup = CacheSetup::ALL
            .into_iter()
            .find(|s| s.name() == setup)
            .unwrap_or(CacheSetup::Open);
        if o.is_set("recovery_read") {
            let r = o.bytes("recovery_read", 0)?;
            c.recovery_read = Some(usize::try_from(r).unwrap_or(usize::MAX));
        }
        if o.is_set("recovery_depth") {
            c.recovery_depth = Some(o.usize("recovery_depth", 0)?);
        }
        o.finish()?;
        c.settings = o.resolved();
        // the values are checked where every configuration passes, options or not:
        // at open (`validate`)
        Ok(c)
    }

    /// Checks the settings, at every open (a `Config` from options or built by hand).
    pub(crate) fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(Error::InvalidArgument(format!("kvell.{m}")));
        if self.dirs.is_empty() {
            return bad("dir: no directory given");
        }
        if self.workers == 0 || self.workers > 1024 {
            return bad("workers: must be between 1 and 1024");
        }
        if self.workers < self.dirs.len() {
            return bad("workers: need at least one worker per directory");
        }
        if self.queue_depth == 0 || self.queue_depth > 4096 {
            return bad("queue_depth: must be between 1 and 4096");
        }
        if self.batch == 0 {
            return bad("batch: must be at least 1");
        }
        if self.freelist == 0 {
            return bad("freelist: must be at least 1");
        }
        if self.atomic_write != 512 && self.atomic_write != PAGE {
            return bad("atomic_write: must be 512 or 4096");
        }
        if let Some(r) = self.recovery_read
            && (!r.is_multiple_of(PAGE) || !(PAGE..=64 << 20).contains(&r))
        {
            return bad("recovery_read: must be a multiple of 4096 from 4K to 64M");
        }
        if let Some(d) = self.recovery_depth
            && !(2..=256).contains(&d)
        {
            return bad("recovery_depth: must be between 2 and 256");
        }
        // recovery's read buffers, held beside the page cache's first frames, within
        // reason and within a quarter of a worker's budget
        let held = self.recovery_reads().in_flight() as u64;
        if held > 1 << 30 {
            return bad(&format!(
                "recovery_read x recovery_depth: {held} bytes in flight per worker, over 1G"
            ));
        }
        if let Some(b) = self.budget()
            && (self.recovery_read.is_some() || self.recovery_depth.is_some())
            && held > b.bytes / 4
        {
            return bad(&format!(
                "recovery_read x recovery_depth: {held} bytes in flight per worker, over a \
                 quarter of its memory budget ({} bytes)",
                b.bytes
            ));
        }
        Ok(())
    }

    /// Each worker's budget, when a budget sizes the cache (`kvell.memory` without
    /// `kvell.cache`).
    pub(crate) fn budget(&self) -> Option<Budget> {
        match self.memory {
            Some(m) if !self.cache_given => Some(Budget::per_worker(m, self.workers)),
            _ => None,
        }
    }

    /// The shape of recovery's sequential reads: `kvell.recovery_read` and
    /// `kvell.recovery_depth` where given, else `recovery::Reads::default_for`.
    pub(crate) fn recovery_reads(&self) -> crate::recovery::Reads {
        let d = crate::recovery::Reads::default_for(self.budget().map(|b| b.bytes));
        crate::recovery::Reads {
            piece: self.recovery_read.unwrap_or(d.piece),
            depth: self.recovery_depth.unwrap_or(d.depth),
        }
    }

    /// Page cache bytes across workers: the capacity under a budget, else fixed.
    pub(crate) fn cache_capacity(&self) -> u64 {
        match self.budget() {
            Some(b) => b.cache_frames() as u64 * PAGE as u64 * self.workers as u64,
            None => self.cache_bytes,
        }
    }

    pub(crate) fn format(&self) -> slab::Format {
        slab::Format {
            checksum: self.checksum,
        }
    }

    pub(crate) fn queue_capacity(&self) -> usize {
        (self.queue_depth * 4).max(256)
    }

    pub(crate) fn dir_of(&self, worker: usize) -> PathBuf {
        self.dirs[worker * self.dirs.len() / self.workers].clone()
    }

    pub(crate) fn backend(&self) -> Result<Box<dyn Backend>> {
        let flags = IoFlags {
            direct: self.direct,
            dsync: self.mode == Mode::Flush,
        };
        Ok(match &self.io {
            IoMode::Uring => Box::new(
                Uring::new(flags, self.queue_depth as u32, self.ring).map_err(|e| {
                    Error::io(
                        "creating an io_uring (is io_uring allowed here? try kvell.io=psync)",
                        e,
                    )
                })?,
            ),
            IoMode::Psync => Box::new(Psync::new(flags)),
            IoMode::Sim(d) => Box::new(Sim::new(d.clone(), flags)),
        })
    }

    pub(crate) fn info(&self, recovery_us: u64, recovery_bytes: u64) -> EngineInfo {
        let (durability, setting) = match self.mode {
            Mode::Direct => (
                Durability::Process,
                "direct: acknowledged when the in-place O_DIRECT write completed (no flush)",
            ),
            Mode::Flush => (
                Durability::Power,
                "flush: acknowledged when the in-place write completed with RWF_DSYNC",
            ),
        };
        let mut settings = vec![
            ("dir".to_string(), join(&self.dirs)),
            ("workers".into(), self.workers.to_string()),
            ("cache".into(), self.cache_capacity().to_string()),
            ("queue_depth".into(), self.queue_depth.to_string()),
            ("batch".into(), self.batch.to_string()),
            (
                "durability".into(),
                format!("{:?}", self.mode).to_lowercase(),
            ),
            ("io".into(), self.io.name().into()),
            ("ring".into(), self.ring.name().into()),
            ("freelist".into(), self.freelist.to_string()),
            ("direct".into(), self.direct.to_string()),
            ("scan_in_flight".into(), self.scan_in_flight.to_string()),
            ("checksum".into(), self.checksum.to_string()),
            ("atomic_write".into(), self.atomic_write.to_string()),
            ("cache_setup".into(), self.cache_setup.name().into()),
        ];
        let mut notes = Vec::new();
        match (self.memory, self.budget()) {
            (Some(m), Some(b)) => {
                settings.push(("memory".into(), m.to_string()));
                settings.push(("memory_split".into(), b.describe(self.workers)));
                notes.extend(Budget::notes());
            }
            (Some(m), None) => {
                settings.push(("memory".into(), m.to_string()));
                settings.push((
                    "memory_split".into(),
                    format!(
                        "kvell.cache overrides the budget: a fixed page cache of {} bytes \
                         ({} per worker), the index and fixed memory on top",
                        self.cache_bytes,
                        self.cache_bytes / self.workers as u64
                    ),
                ));
            }
            _ => {}
        }
        for (k, v) in &self.settings {
            if !settings.iter().any(|(s, _)| s == k) {
                settings.push((k.clone(), v.clone()));
            }
        }
        settings.push(("recovery_us".into(), recovery_us.to_string()));
        settings.push(("recovery_bytes".into(), recovery_bytes.to_string()));
        let reads = self.recovery_reads();
        settings.push((
            "recovery_read_ahead".into(),
            format!(
                "{} reads of {} bytes in flight per worker",
                reads.depth, reads.piece
            ),
        ));
        notes.extend([
            "large items (over 4 KiB) bypass the page cache".to_string(),
            "a page with I/O in flight is written from its own buffer, never a cache frame"
                .to_string(),
        ]);
        if !self.direct {
            notes.push(
                "kvell.direct=false: buffered I/O, the OS page cache of the slabs is used too, \
                 outside any budget (bounded only by the driver's memory cgroup)"
                    .into(),
            );
        }
        EngineInfo {
            engine: "kvell".into(),
            durability,
            durability_setting: setting.into(),
            cache_bytes: Some(self.cache_capacity()),
            direct_io: Some(self.direct),
            settings,
            notes,
            limits: LIMITS,
        }
    }
}

fn join(d: &[PathBuf]) -> String {
    d.iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(",")
}
