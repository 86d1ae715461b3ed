//! Plain pread/pwrite backend: asynchronous I/Os run when submitted, in order; with
//! `dsync`, one fdatasync per touched file ends each batch before anything completes.
#![deny(unsafe_code)]

use super::{Backend, FileId, IoDone, IoFlags, IoKind, IoReq};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

pub struct Psync {
    files: Files,
    queued: Vec<IoReq>,
    done: Vec<IoDone>,
}

impl Psync {
    pub fn new(flags: IoFlags) -> Psync {
        Psync {
            files: Files::new(flags),
            queued: Vec::new(),
            done: Vec::new(),
        }
    }
}

/// The slab files of one backend and their synchronous operations (open, length,
/// growth, blocking read and write, sync), shared by the psync and io_uring backends.
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

#[allow(unsafe_code)]
fn libc_fallocate(fd: i32, off: u64, len: u64) -> io::Result<()> {
    // SAFETY: fallocate on a valid open descriptor; no memory is passed.
    let r = unsafe { libc::fallocate(fd, 0, off as libc::off_t, len as libc::off_t) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

impl Backend for Psync {
    fn open(&mut self, path: &Path) -> io::Result<FileId> {
        self.files.open(path)
    }
    fn len(&self, file: FileId) -> io::Result<u64> {
        self.files.len(file)
    }
    fn set_len(&mut self, file: FileId, len: u64) -> io::Result<()> {
        self.files.set_len(file, len)
    }
    fn read(&mut self, file: FileId, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.files.read(file, offset, buf)
    }
    fn write(&mut self, file: FileId, offset: u64, buf: &[u8]) -> io::Result<()> {
        self.files.write(file, offset, buf)
    }
    fn sync(&mut self, file: FileId) -> io::Result<()> {
        self.files.sync(file)
    }
    fn push(&mut self, req: IoReq) -> Result<(), IoReq> {
        self.queued.push(req);
        Ok(())
    }
    fn submit(&mut self) -> io::Result<()> {
        let mut touched: Vec<FileId> = Vec::new();
        let start = self.done.len();
        for mut r in self.queued.drain(..) {
            let f = &self.files.get(r.file);
            let result = match r.kind {
                IoKind::Read => f.read_exact_at(&mut r.buf, r.offset),
                IoKind::Write => {
                    if !touched.contains(&r.file) {
                        touched.push(r.file);
                    }
                    f.write_all_at(&r.buf, r.offset)
                }
            };
            self.done.push(IoDone {
                tag: r.tag,
                kind: r.kind,
                buf: r.buf,
                result,
            });
        }
        if self.files.flags.dsync {
            for f in touched {
                if let Err(e) = self.files.get(f).sync_data() {
                    for d in &mut self.done[start..] {
                        if d.kind == IoKind::Write && d.result.is_ok() {
                            d.result = Err(io::Error::new(e.kind(), e.to_string()));
                        }
                    }
                }
            }
        }
        Ok(())
    }
    fn reap(&mut self, _wait: bool, out: &mut Vec<IoDone>) -> io::Result<()> {
        out.append(&mut self.done);
        Ok(())
    }
    fn name(&self) -> &'static str {
        "psync"
    }
}
