//! The seam itself: every byte the engine reads or writes goes through a [`Storage`],
//! and every file is opened through a [`Vfs`].

use std::io;
use std::sync::Arc;

/// One file: read, write, sync, len, set_len.
pub trait Storage: Send + Sync {
    /// Fills `buf` from `off`; bytes past the end of the file read as zero.
    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<()>;
    fn write_at(&self, buf: &[u8], off: u64) -> io::Result<()>;
    /// Makes every completed write durable (fdatasync).
    fn sync(&self) -> io::Result<()>;
    fn len(&self) -> io::Result<u64>;
    fn set_len(&self, len: u64) -> io::Result<()>;
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }
    /// The file's descriptor, for reads submitted to an io_uring (the miss loader):
    /// `None` for a simulated file, which is then read with [`Storage::read_at`].
    fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        None
    }
}

/// Opens the engine's files by name.
pub trait Vfs: Send + Sync {
    /// Opens (creating if missing) `name`; with `dsync` every write is durable when it
    /// returns (O_DSYNC).
    fn open(&self, name: &str, dsync: bool) -> io::Result<Arc<dyn Storage>>;
    /// Opens (creating if missing) `name` bypassing the OS page cache (O_DIRECT)
    /// where the file system allows it, O_DSYNC with `dsync`; the flag says whether
    /// it bypasses the page cache. The default,
    /// and a simulated file system, has no page cache to bypass.
    fn open_direct(&self, name: &str, dsync: bool) -> io::Result<(Arc<dyn Storage>, bool)> {
        Ok((self.open(name, dsync)?, false))
    }
    /// Makes the names of the files created so far durable (fsync of the directory):
    /// until then a power cut may leave a file that was created missing.
    fn sync_dir(&self) -> io::Result<()>;
}
