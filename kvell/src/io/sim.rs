//! A simulated disk for crash tests: in-memory files where every page written since
//! the last flush is "written" but not "durable". [`SimDisk::crash`] freezes the disk
//! (later writes are lost) and builds the image a crash would leave: after a killed
//! process every completed write survives; after a power loss each non-durable page
//! independently survives or not (writes torn at 4 KiB), or, for a device whose atomic
//! write unit is a 512 B sector, each sector of each non-durable page does.

use super::{Backend, FileId, IoDone, IoFlags, IoKind, IoReq, PAGE};
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

#[derive(Default)]
struct SimFile {
    data: Vec<u8>,
    durable: Vec<u8>,
    dirty: BTreeSet<usize>,
}

#[derive(Default)]
struct State {
    files: BTreeMap<PathBuf, SimFile>,
    frozen: bool,
    fail_writes: bool,
    /// I/O operations so far (reads, writes, syncs, growths).
    ops: u64,
    /// Operation number (0-based) from which every operation fails.
    fail_at: Option<u64>,
    /// A crash armed by [`SimDisk::crash_at`]: it happens in the first write at or
    /// after this operation number, that write caught half-way (written, not durable).
    crash_at: Option<(u64, Crash)>,
}

impl State {
    /// A file opened through [`Sim::open`] (an error if a test removed it).
    fn file_mut(&mut self, path: &Path) -> io::Result<&mut SimFile> {
        self.files
            .get_mut(path)
            .ok_or_else(|| io::Error::other(format!("sim file {} is gone", path.display())))
    }

    /// Counts one operation; fails it if fault injection says so.
    fn step(&mut self) -> io::Result<()> {
        let n = self.ops;
        self.ops += 1;
        match self.fail_at {
            Some(f) if n >= f => Err(io::Error::other(format!(
                "injected I/O failure at operation {n}"
            ))),
            _ => Ok(()),
        }
    }

    /// Freezes the disk in the state `crash` leaves.
    fn crash(&mut self, crash: Crash) {
        self.frozen = true;
        self.crash_at = None;
        let mut x = match crash {
            Crash::Process => 0,
            Crash::Power(seed) | Crash::PowerSectors(seed) => {
                seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1
            }
        };
        let unit = match crash {
            Crash::PowerSectors(_) => SECTOR,
            _ => PAGE,
        };
        let mut coin = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x & 1 == 1
        };
        for f in self.files.values_mut() {
            for &p in &f.dirty {
                for u in (p * PAGE..(p + 1) * PAGE).step_by(unit) {
                    let keep = match crash {
                        Crash::Process => true,
                        Crash::Power(_) | Crash::PowerSectors(_) => coin(),
                    };
                    if keep {
                        let r = u..u + unit;
                        f.durable[r.clone()].copy_from_slice(&f.data[r]);
                    }
                }
            }
            f.dirty.clear();
            f.data = f.durable.clone();
        }
    }
}

/// A shared simulated disk; clone it to give it to an engine and keep a handle.
#[derive(Clone, Default)]
pub struct SimDisk(Arc<Mutex<State>>);

/// What a crash loses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Crash {
    /// The process is killed: completed writes survive, queued ones are lost.
    Process,
    /// Power loss: non-durable pages survive or not at random (seeded).
    Power(u64),
    /// Power loss on a device with 512 B atomic sectors: each 512 B sector of each
    /// non-durable page survives or not at random (seeded), so a page write is torn
    /// inside the page.
    PowerSectors(u64),
}

/// The atomic write unit of [`Crash::PowerSectors`].
pub const SECTOR: usize = 512;

impl SimDisk {
    pub fn new() -> SimDisk {
        SimDisk::default()
    }

    /// The disk's state. It is the simulated device, not engine state, and every
    /// change to it is a whole copy of bytes: a test thread that panicked holding it
    /// leaves a disk the engine may go on reading and writing, as a real one would.
    fn lock(&self) -> MutexGuard<'_, State> {
        kvapi::sync::lock_handoff(&self.0)
    }

    /// Freezes the disk in the state `crash` leaves; writes after this are dropped.
    pub fn crash(&self, crash: Crash) {
        self.lock().crash(crash);
    }

    /// Arms a crash inside the engine's I/O: the first write issued as operation `op`
    /// (see [`SimDisk::ops`]) or later is caught in flight (its pages written but not
    /// durable, even with O_DSYNC), then the disk crashes as [`SimDisk::crash`] does.
    pub fn crash_at(&self, op: u64, crash: Crash) {
        self.lock().crash_at = Some((op, crash));
    }

    /// Whether the disk has crashed (and not restarted).
    pub fn crashed(&self) -> bool {
        self.lock().frozen
    }

    /// Unfreezes the disk (after the crashed engine is dropped) for a reopen.
    pub fn restart(&self) {
        self.lock().frozen = false;
    }

    /// Makes every later write fail (to test poisoning).
    pub fn fail_writes(&self, fail: bool) {
        self.lock().fail_writes = fail;
    }

    /// I/O operations (reads, writes, syncs, growths) issued so far.
    pub fn ops(&self) -> u64 {
        self.lock().ops
    }

    /// Makes operation number `n` (0-based, see [`SimDisk::ops`]) and every later one
    /// fail; `None` stops the injection.
    pub fn fail_at(&self, n: Option<u64>) {
        self.lock().fail_at = n;
    }

    /// Direct access to a file's current bytes (tests corrupt or truncate it).
    pub fn edit(&self, path: &Path, f: impl FnOnce(&mut Vec<u8>)) {
        let mut s = self.lock();
        if let Some(file) = s.files.get_mut(path) {
            f(&mut file.data);
            file.durable = file.data.clone();
            file.dirty.clear();
        }
    }

    /// Paths of the files on the disk.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.lock().files.keys().cloned().collect()
    }
}

pub struct Sim {
    disk: SimDisk,
    flags: IoFlags,
    files: Vec<PathBuf>,
    queued: Vec<IoReq>,
    done: Vec<IoDone>,
}

impl Sim {
    pub fn new(disk: SimDisk, flags: IoFlags) -> Sim {
        Sim {
            disk,
            flags,
            files: Vec::new(),
            queued: Vec::new(),
            done: Vec::new(),
        }
    }

    fn do_write(&self, file: FileId, offset: u64, buf: &[u8]) -> io::Result<()> {
        let mut s = self.disk.lock();
        s.step()?;
        if s.fail_writes {
            return Err(io::Error::other("simulated write failure"));
        }
        if s.frozen {
            return Ok(());
        }
        let f = s.file_mut(&self.files[file])?;
        let off = offset as usize;
        let end = off + buf.len();
        if f.data.len() < end {
            f.data.resize(end, 0);
            f.durable.resize(end, 0);
        }
        f.data[off..end].copy_from_slice(buf);
        // An armed crash catches this write in flight: written, not yet durable.
        let crash = match s.crash_at {
            Some((at, c)) if s.ops > at => Some(c),
            _ => None,
        };
        let f = s.file_mut(&self.files[file])?;
        if self.flags.dsync && crash.is_none() {
            f.durable[off..end].copy_from_slice(buf);
        } else {
            f.dirty.extend(off / PAGE..end.div_ceil(PAGE));
        }
        if let Some(c) = crash {
            s.crash(c);
        }
        Ok(())
    }

    fn do_read(&self, file: FileId, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let mut s = self.disk.lock();
        s.step()?;
        let f = s.file_mut(&self.files[file])?;
        let off = offset as usize;
        if off + buf.len() > f.data.len() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "read past end",
            ));
        }
        buf.copy_from_slice(&f.data[off..off + buf.len()]);
        Ok(())
    }
}

impl Backend for Sim {
    fn open(&mut self, path: &Path) -> io::Result<FileId> {
        self.disk
            .lock()
            .files
            .entry(path.to_path_buf())
            .or_default();
        self.files.push(path.to_path_buf());
        Ok(self.files.len() - 1)
    }
    fn len(&self, file: FileId) -> io::Result<u64> {
        let s = self.disk.lock();
        Ok(s.files[&self.files[file]].data.len() as u64)
    }
    fn set_len(&mut self, file: FileId, len: u64) -> io::Result<()> {
        let mut s = self.disk.lock();
        s.step()?;
        if s.frozen {
            return Ok(());
        }
        let f = s.file_mut(&self.files[file])?;
        if (len as usize) > f.data.len() {
            f.data.resize(len as usize, 0);
            f.durable.resize(len as usize, 0);
        }
        Ok(())
    }
    fn read(&mut self, file: FileId, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.do_read(file, offset, buf)
    }
    fn write(&mut self, file: FileId, offset: u64, buf: &[u8]) -> io::Result<()> {
        self.do_write(file, offset, buf)
    }
    fn sync(&mut self, file: FileId) -> io::Result<()> {
        let mut s = self.disk.lock();
        s.step()?;
        if s.frozen {
            return Ok(());
        }
        let f = s.file_mut(&self.files[file])?;
        for &p in &f.dirty {
            let r = p * PAGE..(p + 1) * PAGE;
            f.durable[r.clone()].copy_from_slice(&f.data[r]);
        }
        f.dirty.clear();
        Ok(())
    }
    fn push(&mut self, req: IoReq) -> Result<(), IoReq> {
        self.queued.push(req);
        Ok(())
    }
    fn submit(&mut self) -> io::Result<()> {
        let queued = std::mem::take(&mut self.queued);
        for mut r in queued {
            let result = match r.kind {
                IoKind::Read => self.do_read(r.file, r.offset, &mut r.buf),
                IoKind::Write => self.do_write(r.file, r.offset, &r.buf),
            };
            self.done.push(IoDone {
                tag: r.tag,
                kind: r.kind,
                buf: r.buf,
                result,
            });
        }
        Ok(())
    }
    fn reap(&mut self, _wait: bool, out: &mut Vec<IoDone>) -> io::Result<()> {
        out.append(&mut self.done);
        Ok(())
    }
    fn name(&self) -> &'static str {
        "sim"
    }
}
