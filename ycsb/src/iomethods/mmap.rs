//! A shared, writable memory mapping of a file, touched a byte at a time (the mmap
//! method of the I/O comparison), and dropping a file's pages from the page cache.
#![expect(
    unsafe_code,
    reason = "mmap, madvise, msync, munmap and posix_fadvise are libc calls on raw pointers and descriptors"
)]

use crate::error::{Error, Result};
use std::os::unix::io::AsRawFd;

/// A shared, writable mapping of the first `len` bytes of a file.
pub(super) struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain memory shared by the threads of one measurement; they
// only do single-byte volatile reads and writes of distinct or racing bytes, which
// for this measurement need no ordering.
unsafe impl Sync for Mapping {}
// SAFETY: as for Sync; the mapping belongs to no thread.
unsafe impl Send for Mapping {}

impl Mapping {
    /// Maps `len` bytes of `f` with random-access advice (no readahead).
    pub(super) fn new(f: &std::fs::File, len: usize) -> Result<Mapping> {
        // SAFETY: a fresh shared mapping of `len` bytes of an open file; checked below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(Error::io("mmap", std::io::Error::last_os_error()));
        }
        // SAFETY: the range is the mapping just made.
        unsafe { libc::madvise(ptr, len, libc::MADV_RANDOM) };
        Ok(Mapping {
            ptr: ptr.cast(),
            len,
        })
    }

    /// Reads the byte at `off`, or writes `value` there; an offset past the mapping
    /// touches nothing.
    pub(super) fn touch(&self, off: usize, value: Option<u8>) {
        if off >= self.len {
            return;
        }
        // SAFETY: off < len, inside the live mapping; a single byte.
        unsafe {
            let p = self.ptr.add(off);
            match value {
                Some(v) => std::ptr::write_volatile(p, v),
                None => {
                    std::ptr::read_volatile(p);
                }
            }
        }
    }

    /// Writes the mapping's dirty pages to the file (msync, MS_SYNC).
    pub(super) fn sync(&self) -> Result<()> {
        // SAFETY: the range is our mapping.
        if unsafe { libc::msync(self.ptr.cast(), self.len, libc::MS_SYNC) } != 0 {
            return Err(Error::io("msync", std::io::Error::last_os_error()));
        }
        Ok(())
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping made in `new`, used by no one any more.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// Drops the file's pages from the page cache (dirty ones are written first).
pub(super) fn drop_cache(f: &std::fs::File) -> Result<()> {
    f.sync_all().map_err(|e| Error::io("fsync", e))?;
    // SAFETY: plain advice on an open descriptor.
    let r = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if r != 0 {
        return Err(Error::io(
            "posix_fadvise",
            std::io::Error::from_raw_os_error(r),
        ));
    }
    Ok(())
}
