//! The I/O seam: every byte the engine reads or writes goes through [`Storage`], and
//! every file is opened through a [`Vfs`]. [`FileVfs`] is the real one (pread/pwrite,
//! fdatasync, optional O_DSYNC); [`MemVfs`] keeps what was written apart from what is
//! durable, so tests can build the files a crash would leave and inject I/O failures.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

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
}

/// Opens the engine's files by name.
pub trait Vfs: Send + Sync {
    /// Opens (creating if missing) `name`; with `dsync` every write is durable when it
    /// returns (O_DSYNC).
    fn open(&self, name: &str, dsync: bool) -> io::Result<Arc<dyn Storage>>;
}

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

/// Fault injection shared by the files of a [`MemVfs`]: every write, sync and set_len
/// counts as one operation; operation number `fail_at` (0-based) and every later one
/// fail, as if the machine stopped there.
#[derive(Default)]
pub struct Faults {
    ops: AtomicU64,
    fail_at: AtomicU64,
    /// Reads count (and fail) too.
    reads: std::sync::atomic::AtomicBool,
}

impl Faults {
    fn step(&self) -> io::Result<()> {
        let n = self.ops.fetch_add(1, Ordering::SeqCst);
        if n >= self.fail_at.load(Ordering::SeqCst) {
            Err(io::Error::other(format!(
                "injected failure at operation {n}"
            )))
        } else {
            Ok(())
        }
    }
}

#[derive(Default, Clone)]
struct MemInner {
    /// What reads see.
    written: Vec<u8>,
    /// What a crash leaves.
    durable: Vec<u8>,
    /// Writes since the last sync, oldest first (for torn crash images).
    pending: Vec<(u64, Vec<u8>)>,
}

/// An in-memory file that keeps written bytes apart from durable ones.
#[derive(Default)]
pub struct MemFile {
    inner: Mutex<MemInner>,
}

fn put(v: &mut Vec<u8>, off: u64, data: &[u8]) {
    let end = off as usize + data.len();
    if v.len() < end {
        v.resize(end, 0);
    }
    v[off as usize..end].copy_from_slice(data);
}

impl MemFile {
    /// The bytes reads currently see.
    pub fn written(&self) -> Vec<u8> {
        self.inner.lock().unwrap().written.clone()
    }
    /// The bytes a crash would leave (without torn writes).
    pub fn durable(&self) -> Vec<u8> {
        self.inner.lock().unwrap().durable.clone()
    }
    /// Replaces both views (to build corrupted or crashed images in tests).
    pub fn set_contents(&self, bytes: Vec<u8>) {
        let mut g = self.inner.lock().unwrap();
        g.durable = bytes.clone();
        g.written = bytes;
        g.pending.clear();
    }
}

struct MemHandle {
    file: Arc<MemFile>,
    dsync: bool,
    faults: Arc<Faults>,
}

impl Storage for MemHandle {
    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<()> {
        if self.faults.reads.load(Ordering::SeqCst) {
            self.faults.step()?;
        }
        let g = self.file.inner.lock().unwrap();
        let start = (off as usize).min(g.written.len());
        let end = (off as usize + buf.len()).min(g.written.len());
        let n = end - start;
        buf[..n].copy_from_slice(&g.written[start..end]);
        buf[n..].fill(0);
        Ok(())
    }
    fn write_at(&self, buf: &[u8], off: u64) -> io::Result<()> {
        self.faults.step()?;
        let mut g = self.file.inner.lock().unwrap();
        put(&mut g.written, off, buf);
        if self.dsync {
            put(&mut g.durable, off, buf);
        } else {
            g.pending.push((off, buf.to_vec()));
        }
        Ok(())
    }
    fn sync(&self) -> io::Result<()> {
        self.faults.step()?;
        let mut g = self.file.inner.lock().unwrap();
        let pending = std::mem::take(&mut g.pending);
        for (off, data) in pending {
            put(&mut g.durable, off, &data);
        }
        Ok(())
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self.file.inner.lock().unwrap().written.len() as u64)
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.faults.step()?;
        let mut g = self.file.inner.lock().unwrap();
        g.written.resize(len as usize, 0);
        // A size change is treated as durable at once (it is metadata the tests do
        // not tear); the engine syncs after it anyway.
        g.durable.resize(len as usize, 0);
        Ok(())
    }
}

/// In-memory files for crash tests.
#[derive(Clone, Default)]
pub struct MemVfs {
    files: Arc<Mutex<HashMap<String, Arc<MemFile>>>>,
    faults: Arc<Faults>,
}

impl MemVfs {
    pub fn new() -> MemVfs {
        let v = MemVfs::default();
        v.faults.fail_at.store(u64::MAX, Ordering::SeqCst);
        v
    }

    /// The file `name` (created empty if missing).
    pub fn file(&self, name: &str) -> Arc<MemFile> {
        self.files
            .lock()
            .unwrap()
            .entry(name.to_string())
            .or_default()
            .clone()
    }

    /// Write/sync/set_len operations so far.
    pub fn ops(&self) -> u64 {
        self.faults.ops.load(Ordering::SeqCst)
    }

    /// Counts reads as operations too (and fails them), for fault injection.
    pub fn count_reads(&self, on: bool) {
        self.faults.reads.store(on, Ordering::SeqCst);
    }

    /// Makes operation number `n` (counted from the start) and all later ones fail.
    pub fn fail_at(&self, n: u64) {
        self.faults.fail_at.store(n, Ordering::SeqCst);
    }

    /// A new file system holding what a crash would leave now: the durable bytes of
    /// every file, plus, when `torn_seed` is given, a pseudo-random subset of the
    /// unsynced writes applied in 512-byte sectors (a torn write).
    pub fn crash_image(&self, torn_seed: Option<u64>) -> MemVfs {
        let out = MemVfs::new();
        let mut x = torn_seed.unwrap_or(0) | 1;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut names: Vec<(String, Arc<MemFile>)> = self
            .files
            .lock()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        names.sort_by(|a, b| a.0.cmp(&b.0));
        // One instant for every file: all of them are locked before any is copied.
        // Copied one at a time, a checkpoint running on another thread could land
        // in the WAL header after the meta file was copied, and the image then
        // held a state no crash can leave (replay starting past transactions the
        // copied meta file lacks): the log-wrap crash test failed that way once.
        let guards: Vec<_> = names.iter().map(|(_, f)| f.inner.lock().unwrap()).collect();
        let states: Vec<_> = guards.iter().map(|g| (**g).clone()).collect();
        drop(guards);
        for ((name, _), g) in names.into_iter().zip(states) {
            let mut bytes = g.durable;
            if torn_seed.is_some() {
                for (off, data) in &g.pending {
                    for (i, sector) in data.chunks(512).enumerate() {
                        if rnd() % 2 == 0 {
                            put(&mut bytes, off + (i * 512) as u64, sector);
                        }
                    }
                }
            }
            out.file(&name).set_contents(bytes);
        }
        out
    }
}

impl Vfs for MemVfs {
    fn open(&self, name: &str, dsync: bool) -> io::Result<Arc<dyn Storage>> {
        Ok(Arc::new(MemHandle {
            file: self.file(name),
            dsync,
            faults: self.faults.clone(),
        }))
    }
}
