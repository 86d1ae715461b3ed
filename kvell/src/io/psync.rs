//! Plain pread/pwrite backend: asynchronous I/Os run when submitted, in order; with
//! `dsync`, one fdatasync per touched file ends each batch before anything completes.

use super::files::Files;
use super::{Backend, FileId, IoDone, IoFlags, IoKind, IoReq};
use std::io;
use std::os::unix::fs::FileExt;
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
    fn sync_dir(&mut self, dir: &Path) -> io::Result<()> {
        super::files::sync_dir(dir)
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
                issued: r.issued,
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
    fn name(&self) -> String {
        "psync".into()
    }
}
