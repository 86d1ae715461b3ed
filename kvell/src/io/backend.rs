//! The backend seam: page-granular synchronous calls (recovery, file growth) and
//! asynchronous push/submit/reap (the worker's hot path), as redb's `StorageBackend`
//! and foyer's `IoEngine` are.

use super::buf::{AlignedBuf, Arena};
use std::io;
use std::path::Path;
use std::time::Instant;

/// Index of a file opened through a backend.
pub type FileId = usize;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoKind {
    Read,
    Write,
}

/// One asynchronous page-aligned I/O. The buffer belongs to the backend until the
/// matching [`IoDone`] hands it back.
#[derive(Debug)]
pub struct IoReq {
    pub file: FileId,
    pub offset: u64,
    pub kind: IoKind,
    pub buf: AlignedBuf,
    pub tag: u64,
    /// When it was handed to the backend (its batch's time), carried to its
    /// [`IoDone`]: the I/O's time as its worker sees it (`Stats::slowest_io`).
    pub issued: Instant,
}

/// A completed [`IoReq`].
#[derive(Debug)]
pub struct IoDone {
    pub tag: u64,
    pub kind: IoKind,
    pub buf: AlignedBuf,
    pub result: io::Result<()>,
    /// The request's [`IoReq::issued`].
    pub issued: Instant,
}

/// How files are opened and writes completed.
#[derive(Clone, Copy, Debug)]
pub struct IoFlags {
    /// Open with O_DIRECT (bypass the OS page cache).
    pub direct: bool,
    /// Every write is durable on completion (RWF_DSYNC, or fdatasync per batch).
    pub dsync: bool,
}

/// A per-worker I/O backend. Offsets and lengths are multiples of [`PAGE`].
pub trait Backend: Send {
    /// Opens (creating if needed) a file.
    fn open(&mut self, path: &Path) -> io::Result<FileId>;
    /// The file's length in bytes.
    fn len(&self, file: FileId) -> io::Result<u64>;
    /// Grows (allocates) the file to `len` bytes; new bytes read as zeros.
    fn set_len(&mut self, file: FileId, len: u64) -> io::Result<()>;
    /// Synchronous read (recovery).
    fn read(&mut self, file: FileId, offset: u64, buf: &mut [u8]) -> io::Result<()>;
    /// Synchronous write (recovery repairs).
    fn write(&mut self, file: FileId, offset: u64, buf: &[u8]) -> io::Result<()>;
    /// Makes completed writes and the file's size durable (fsync).
    fn sync(&mut self, file: FileId) -> io::Result<()>;
    /// Makes the entries of the files created in directory `dir` durable (fsync of
    /// the directory): until then a power loss may take a new file away.
    fn sync_dir(&mut self, dir: &Path) -> io::Result<()>;
    /// Queues an asynchronous I/O; gives it back if the submission queue is full.
    fn push(&mut self, req: IoReq) -> Result<(), IoReq>;
    /// Hands queued I/Os to the device (one system call for the batch).
    fn submit(&mut self) -> io::Result<()>;
    /// Moves completed I/Os to `out`; with `wait`, blocks until at least one completes
    /// (only call it with I/O in flight).
    fn reap(&mut self, wait: bool, out: &mut Vec<IoDone>) -> io::Result<()>;
    /// Short name for notes ("io_uring", "psync", "sim").
    fn name(&self) -> String;
    /// Lets a write to the eventfd `fd` end a `reap` that waits, as a completion
    /// would (`crate::wake`); false if this backend cannot, and then nothing changes.
    fn wake_on(&mut self, fd: std::os::fd::RawFd) -> bool {
        let _ = fd;
        false
    }
    /// Registers `arena`'s memory with the kernel, so that I/O into buffers cut from
    /// it skips pinning their pages each time; the backend keeps the arena while
    /// registered. False where this backend cannot (or the kernel refuses: the
    /// locked-memory limit, for one), and then nothing changes.
    fn register(&mut self, arena: &Arena) -> bool {
        let _ = arena;
        false
    }
}
