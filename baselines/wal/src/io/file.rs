//! The real file system: pread/pwrite, fdatasync, optional O_DSYNC.

use super::storage::{Storage, Vfs};
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
        Ok(Arc::new(FileStorage(o.open(self.dir.join(name))?)))
    }
    fn sync_dir(&self) -> io::Result<()> {
        File::open(&self.dir)?.sync_all()
    }
}

struct FileStorage(File);

impl Storage for FileStorage {
    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<()> {
        let mut done = 0;
        while done < buf.len() {
            match self.0.read_at(&mut buf[done..], off + done as u64) {
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
    fn write_at(&self, buf: &[u8], off: u64) -> io::Result<()> {
        self.0.write_all_at(buf, off)
    }
    fn sync(&self) -> io::Result<()> {
        self.0.sync_data()
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
}
