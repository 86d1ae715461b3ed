//! The real file system: pread/pwrite, fdatasync, optional O_DSYNC, and O_DIRECT
//! for the files opened with [`Vfs::open_direct`]: an aligned transfer goes straight
//! from the caller's buffer, any other through a 4 KiB-aligned bounce buffer (kept by
//! each thread for the next transfer), so callers pass any buffer.

use super::aligned::{ALIGN, AlignedBuf, is_aligned};
use super::storage::{Storage, Vfs};
use std::cell::RefCell;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::Arc;

/// Real files in a directory.
pub struct FileVfs {
    dir: PathBuf,
}

impl FileVfs {
    pub fn new(dir: impl Into<PathBuf>) -> FileVfs {
        FileVfs { dir: dir.into() }
    }
}

impl Vfs for FileVfs {
    fn open(&self, name: &str, dsync: bool) -> io::Result<Arc<dyn Storage>> {
        let mut o = OpenOptions::new();
        o.read(true).write(true).create(true).truncate(false);
        if dsync {
            o.custom_flags(libc::O_DSYNC);
        }
        Ok(Arc::new(FileStorage {
            file: o.open(self.dir.join(name))?,
            direct: false,
        }))
    }
    /// O_DIRECT, or buffered where the file system refuses it (EINVAL).
    fn open_direct(&self, name: &str, dsync: bool) -> io::Result<(Arc<dyn Storage>, bool)> {
        let mut o = OpenOptions::new();
        o.read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .custom_flags(libc::O_DIRECT | if dsync { libc::O_DSYNC } else { 0 });
        match o.open(self.dir.join(name)) {
            Ok(file) => Ok((Arc::new(FileStorage { file, direct: true }), true)),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                Ok((self.open(name, dsync)?, false))
            }
            Err(e) => Err(e),
        }
    }
    fn sync_dir(&self) -> io::Result<()> {
        File::open(&self.dir)?.sync_all()
    }
}

struct FileStorage {
    file: File,
    /// Opened with O_DIRECT: every transfer is whole aligned sectors from an aligned
    /// buffer.
    direct: bool,
}

/// The largest bounce buffer a thread keeps between transfers (larger ones are
/// allocated for the transfer).
const KEEP_BOUNCE: usize = 1 << 20;

thread_local! {
    static BOUNCE: RefCell<AlignedBuf> = RefCell::new(AlignedBuf::default());
}

/// Runs `f` on an aligned buffer of `len` bytes (content unspecified): this thread's
/// kept one when it is free and `len` is small enough, else a new one.
fn with_bounce<R>(len: usize, f: impl FnOnce(&mut [u8]) -> R) -> R {
    let kept = (len <= KEEP_BOUNCE)
        .then(|| BOUNCE.with(|b| b.try_borrow_mut().ok().map(|mut b| std::mem::take(&mut *b))))
        .flatten();
    let mut b = kept.unwrap_or_default();
    b.set_len(len);
    let r = f(&mut b);
    if len <= KEEP_BOUNCE {
        BOUNCE.with(|k| {
            if let Ok(mut k) = k.try_borrow_mut() {
                *k = b;
            }
        });
    }
    r
}

impl FileStorage {
    /// pread until `buf` is full or the file ends (the rest zero).
    fn read_full(&self, buf: &mut [u8], off: u64) -> io::Result<()> {
        let mut done = 0;
        while done < buf.len() {
            match self.file.read_at(&mut buf[done..], off + done as u64) {
                Ok(0) => {
                    buf[done..].fill(0);
                    break;
                }
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// The aligned span `[start, end)` around `len` bytes at `off`.
fn span(off: u64, len: usize) -> (u64, u64) {
    let a = ALIGN as u64;
    (off / a * a, (off + len as u64).div_ceil(a) * a)
}

impl Storage for FileStorage {
    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<()> {
        if !self.direct {
            return self.read_full(buf, off);
        }
        if is_aligned(buf, off) {
            return self.read_full(buf, off);
        }
        // O_DIRECT: read the aligned span into an aligned buffer, copy the part asked
        // for (a read at the end of the file is short: the rest reads as zero)
        let (start, end) = span(off, buf.len());
        with_bounce((end - start) as usize, |b| {
            self.read_full(b, start)?;
            let at = (off - start) as usize;
            buf.copy_from_slice(&b[at..at + buf.len()]);
            Ok(())
        })
    }
    fn write_at(&self, buf: &[u8], off: u64) -> io::Result<()> {
        if !self.direct {
            return self.file.write_all_at(buf, off);
        }
        if is_aligned(buf, off) {
            return self.file.write_all_at(buf, off);
        }
        let (start, end) = span(off, buf.len());
        with_bounce((end - start) as usize, |b| {
            if start != off || end != off + buf.len() as u64 {
                // a write of part of a page: read, modify, write the whole pages
                self.read_full(b, start)?;
            }
            let at = (off - start) as usize;
            b[at..at + buf.len()].copy_from_slice(buf);
            // A write that ends mid-page writes the whole page: past the end of the
            // file, the file then ends at the page's end. It is not trimmed back: a
            // trim measured before the write would cut a concurrent write further on
            // (the engine's files never depend on a length finer than a page).
            self.file.write_all_at(b, start)
        })
    }
    fn sync(&self) -> io::Result<()> {
        self.file.sync_data()
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }
    fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        Some(std::os::fd::AsRawFd::as_raw_fd(&self.file))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// O_DIRECT files read and write like buffered ones, at any offset and length.
    #[test]
    fn direct_files_read_and_write_like_buffered_ones() {
        let t = kvtestkit::TempDir::new("wal-direct");
        std::fs::create_dir_all(t.path()).unwrap();
        let vfs = FileVfs::new(t.path());
        let (d, direct) = vfs.open_direct("d", false).unwrap();
        let b = vfs.open("b", false).unwrap();
        assert!(direct, "this machine's file systems accept O_DIRECT");
        for (off, len) in [
            (0u64, 4096usize),
            (4096, 8192),
            (100, 10),
            (12288, 5000),
            (5, 1),
        ] {
            let data: Vec<u8> = (0..len).map(|i| (i as u64 * 7 + off) as u8).collect();
            d.write_at(&data, off).unwrap();
            b.write_at(&data, off).unwrap();
            // the direct file ends at the end of the last page written
            assert_eq!(
                d.len().unwrap(),
                b.len().unwrap().div_ceil(4096) * 4096,
                "after a write at {off}"
            );
        }
        let n = b.len().unwrap() as usize;
        let (mut x, mut y) = (vec![0u8; n + 3000], vec![0u8; n + 3000]);
        d.read_at(&mut x, 0).unwrap();
        b.read_at(&mut y, 0).unwrap();
        assert_eq!(x, y);
        let (mut x, mut y) = (vec![0u8; 77], vec![0u8; 77]);
        d.read_at(&mut x, 4000).unwrap();
        b.read_at(&mut y, 4000).unwrap();
        assert_eq!(x, y);
        // aligned transfers go straight from and to the caller's buffer
        let mut a = AlignedBuf::new(2 * ALIGN);
        for (i, v) in a.iter_mut().enumerate() {
            *v = (i * 13) as u8;
        }
        d.write_at(&a, 8192).unwrap();
        let mut r = AlignedBuf::new(2 * ALIGN);
        d.read_at(&mut r, 8192).unwrap();
        assert_eq!(&r[..], &a[..]);
        let mut y = vec![0u8; 2 * ALIGN];
        d.read_at(&mut y, 8192).unwrap();
        assert_eq!(&y[..], &a[..]);
    }
}
