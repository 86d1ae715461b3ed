//! The engine's three files over the I/O seam, each with the writes and reads the
//! engine makes of it (counted in [`Stats`]): the WAL (header block and the circular
//! log after it), the meta file (the image, page for page, each sealed with its
//! CRC) and the data file (large values in extents of whole blocks).

use crate::checkpoint::PageCopies;
use crate::extent::Extent;
use crate::format::{BLOCK, UNITS_PER_BLOCK, WalHeader};
use crate::io::Storage;
use crate::stats::{Stat, Stats};
use kvapi::{Error, Result};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The WAL file: block 0 the header's first copy, blocks 1..=n the circular log,
/// block n+1 the header's second copy.
pub struct WalFile {
    file: Arc<dyn Storage>,
    /// Blocks in the circular log.
    n: u64,
    /// fdatasync after each batch (in O_DSYNC mode every write is durable already).
    sync: bool,
    stats: Arc<Stats>,
    /// The sequence number of the last header written (or read at open).
    seq: std::sync::atomic::AtomicU64,
}

impl WalFile {
    /// `seq`: the sequence number of the header on disk (the next write goes to the
    /// other copy).
    pub fn new(file: Arc<dyn Storage>, n: u64, sync: bool, stats: Arc<Stats>, seq: u64) -> WalFile {
        WalFile {
            file,
            n,
            sync,
            stats,
            seq: std::sync::atomic::AtomicU64::new(seq),
        }
    }

    /// Where a batch of `len` bytes starting at unit `start` (a block boundary)
    /// goes: its byte range and the file offset of each write, one, or two when it
    /// wraps past the end of the log.
    pub fn pieces(&self, start: u64, len: usize) -> Vec<(std::ops::Range<usize>, u64)> {
        let n = self.n;
        let blocks = (len / BLOCK) as u64;
        let phys = (start / UNITS_PER_BLOCK) % n;
        let first = blocks.min(n - phys) as usize * BLOCK;
        let mut v = vec![(0..first, (1 + phys) * BLOCK as u64)];
        if first < len {
            v.push((first..len, BLOCK as u64));
        }
        v
    }

    /// Counts a batch of `bytes` in `writes` writes (one group commit).
    pub fn count_batch(&self, bytes: usize, writes: usize) {
        self.stats.add(Stat::Writes, writes as u64);
        self.stats.add(Stat::WalBytes, bytes as u64);
        self.stats.add(Stat::GroupCommits, 1);
    }

    /// Whether each batch needs a sync (`fdatasync` mode: in `dsync` mode every
    /// write is durable already, in `none-process` none is asked for).
    pub fn syncs(&self) -> bool {
        self.sync
    }

    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The file, for writes through the seam.
    pub fn storage(&self) -> Arc<dyn Storage> {
        self.file.clone()
    }

    /// The file's descriptor, for writes through an io_uring (`None`: a simulated
    /// file).
    pub fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        self.file.raw_fd()
    }

    /// Writes the header, with the next sequence number, to the copy the last
    /// write did not go to, and syncs it; returns it as written. Callers serialise
    /// header writes (the checkpointer's header lock).
    pub fn write_header(&self, h: &WalHeader) -> io::Result<WalHeader> {
        use std::sync::atomic::Ordering;
        let mut h = *h;
        h.seq = self.seq.load(Ordering::Acquire) + 1;
        self.file
            .write_at(&h.encode(), crate::format::header_at(h.seq, self.n))
            .and_then(|()| self.file.sync())?;
        self.seq.store(h.seq, Ordering::Release);
        self.stats.add(Stat::HeaderBytes, BLOCK as u64);
        self.stats.add(Stat::Writes, 1);
        Ok(h)
    }
}

/// Runs of consecutive pages are written with one write of up to this many pages.
const MAX_RUN: usize = 256;

/// The meta file: image page p at byte p * 4096.
pub struct MetaFile {
    file: Arc<dyn Storage>,
    stats: Arc<Stats>,
    /// The ring a checkpoint writes its pages through (made at the first checkpoint;
    /// `None` inside: the kernel gave none, and pages are written one at a time).
    ring: std::sync::Mutex<Option<Option<io_uring::IoUring>>>,
}

impl MetaFile {
    /// `uring`: write a checkpoint's pages through an io_uring (else by pwrite).
    pub fn new(file: Arc<dyn Storage>, stats: Arc<Stats>, uring: bool) -> MetaFile {
        MetaFile {
            file,
            stats,
            ring: std::sync::Mutex::new((!uring).then_some(None)),
        }
    }

    /// Writes page copies (in page order), each sealed with its CRC, coalescing runs
    /// of consecutive pages up to 1 MiB per write, up to 64 writes in flight through
    /// an io_uring on a real file (one after another on a file without a descriptor,
    /// or without a ring); returns the bytes written. The caller syncs.
    pub fn write_pages(&self, c: &PageCopies) -> io::Result<u64> {
        let pages = &c.pages;
        let mut runs: Vec<(&[u8], u64)> = Vec::new();
        let mut i = 0;
        while i < pages.len() {
            let mut j = i + 1;
            while j < pages.len() && pages[j] == pages[j - 1] + 1 && j - i < MAX_RUN {
                j += 1;
            }
            // consecutive pages are consecutive in the copy buffer, sealed already
            runs.push((
                &c.bytes[i * BLOCK..j * BLOCK],
                pages[i] as u64 * BLOCK as u64,
            ));
            i = j;
        }
        let bytes: u64 = runs.iter().map(|(b, _)| b.len() as u64).sum();
        let mut ring = self
            .ring
            .lock()
            .map_err(|_| io::Error::other("the meta file's ring lock is poisoned"))?;
        let ring = ring.get_or_insert_with(crate::io::ring::ring);
        match (self.file.raw_fd(), ring.as_mut()) {
            (Some(fd), Some(ring)) if runs.len() > 1 => {
                crate::io::ring::write_all(ring, fd, &runs)?;
            }
            _ => {
                for &(b, off) in &runs {
                    self.file.write_at(b, off)?;
                }
            }
        }
        self.stats.add(Stat::Writes, runs.len() as u64);
        Ok(bytes)
    }

    pub fn sync(&self) -> io::Result<()> {
        self.file.sync()
    }
}

/// The data file: large values in extents of whole 4 KiB blocks.
pub struct DataFile {
    file: Arc<dyn Storage>,
    /// fdatasync after each value (in O_DSYNC mode every write is durable already).
    sync: bool,
    path: PathBuf,
    stats: Arc<Stats>,
}

impl DataFile {
    pub fn new(file: Arc<dyn Storage>, sync: bool, path: PathBuf, stats: Arc<Stats>) -> DataFile {
        DataFile {
            file,
            sync,
            path,
            stats,
        }
    }

    /// Where it lies, for errors.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's descriptor, for writes submitted to an io_uring (the data writer
    /// of the native path); `None` for a simulated file.
    pub fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        self.file.raw_fd()
    }

    /// Whether a value is durable only after an fdatasync (`fdatasync` durability;
    /// at `dsync` the file is O_DSYNC, at `none-process` nothing is synced).
    pub fn syncs(&self) -> bool {
        self.sync
    }

    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Writes (and syncs) the value of extent `x`.
    pub fn write(&self, x: &Extent, v: &[u8]) -> io::Result<()> {
        self.file.write_at(v, x.start as u64 * BLOCK as u64)?;
        if self.sync {
            self.file.sync()?;
        }
        self.stats.add(Stat::DataBytes, v.len() as u64);
        self.stats.add(Stat::Writes, 1);
        Ok(())
    }

    /// Makes every value written so far durable (whatever the mode).
    pub fn sync(&self) -> io::Result<()> {
        self.file.sync()
    }

    /// Reads the value of extent `x`; `None` if it fails the record's CRC.
    pub fn read(&self, x: &Extent) -> Result<Option<Vec<u8>>> {
        let mut v = vec![0u8; x.len as usize];
        self.file
            .read_at(&mut v, x.start as u64 * BLOCK as u64)
            .map_err(|e| Error::io("reading the data file", e))?;
        self.stats.add(Stat::BytesRead, v.len() as u64);
        self.stats.add(Stat::Reads, 1);
        Ok((crc32fast::hash(&v) == x.crc).then_some(v))
    }
}
