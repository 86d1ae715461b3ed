//! The files of one backend and their synchronous operations (open, length, growth,
//! blocking read and write, sync of a file or of its directory), shared by the psync
//! and io_uring backends.
#![expect(
    unsafe_code,
    reason = "fallocate is a libc call; its one use has its SAFETY note"
)]

use super::{FileId, IoFlags};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

/// The files opened through one backend, by [`FileId`].
pub struct Files {
    pub flags: IoFlags,
    files: Vec<File>,
}

impl Files {
    pub fn new(flags: IoFlags) -> Files {
        Files {
            flags,
            files: Vec::new(),
        }
    }
    pub fn get(&self, file: FileId) -> &File {
        &self.files[file]
    }
    pub fn open(&mut self, path: &Path) -> io::Result<FileId> {
        self.files.push(open_file(path, self.flags.direct)?);
        Ok(self.files.len() - 1)
    }
    pub fn len(&self, file: FileId) -> io::Result<u64> {
        Ok(self.files[file].metadata()?.len())
    }
    pub fn set_len(&self, file: FileId, len: u64) -> io::Result<()> {
        grow(&self.files[file], len)
    }
    pub fn read(&self, file: FileId, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.files[file].read_exact_at(buf, offset)
    }
    pub fn write(&self, file: FileId, offset: u64, buf: &[u8]) -> io::Result<()> {
        self.files[file].write_all_at(buf, offset)?;
        if self.flags.dsync {
            self.files[file].sync_data()?;
        }
        Ok(())
    }
    pub fn sync(&self, file: FileId) -> io::Result<()> {
        self.files[file].sync_all()
    }
}

/// fsync of a directory: the entries of the files created in it are durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Opens a slab file, with O_DIRECT if asked.
pub fn open_file(path: &Path, direct: bool) -> io::Result<File> {
    let mut o = OpenOptions::new();
    o.read(true).write(true).create(true).truncate(false);
    if direct {
        o.custom_flags(libc::O_DIRECT);
    }
    o.open(path)
}

/// Grows a file with fallocate (falls back to set_len where fallocate is refused).
pub fn grow(file: &File, len: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let cur = file.metadata()?.len();
    if len <= cur {
        return Ok(());
    }
    let r = libc_fallocate(file.as_raw_fd(), cur, len - cur);
    if r.is_err() {
        file.set_len(len)?;
    }
    Ok(())
}

fn libc_fallocate(fd: i32, off: u64, len: u64) -> io::Result<()> {
    // SAFETY: fallocate on a valid open descriptor; no memory is passed.
    let r = unsafe { libc::fallocate(fd, 0, off as libc::off_t, len as libc::off_t) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
