//! A simulated disk for crash tests: in-memory files that keep what the kernel holds
//! ("written") apart from what the device and the file system have made durable, as a
//! real file system does until it is synced:
//! - a page written since the file's last sync is not durable (with `dsync`, a write
//!   is durable on completion, and so is the file size it needs to be read back);
//! - a file's size (growth by `set_len`, or a write past the end) is durable only once
//!   the file is synced;
//! - a new file's directory entry is durable only once its directory is synced
//!   ([`Backend::sync_dir`]); a file created and synced but whose directory was not
//!   may be gone after a power loss.
//!
//! [`SimDisk::crash`] freezes the disk (later operations change nothing) and decides
//! the image the crash leaves, applied by [`SimDisk::restart`]: after a killed process
//! everything the kernel held survives; after a power loss each non-durable page
//! independently survives or not (writes torn at 4 KiB; or, for a device whose atomic
//! write unit is a 512 B sector, each sector of each non-durable page does), each
//! size change not yet synced survives or not, and each directory entry not yet synced
//! survives or not (the file is then gone), all drawn from the crash's seed. The
//! frozen engine keeps the view it had until it is dropped.

use super::{Backend, FileId, IoDone, IoFlags, IoKind, IoReq, PAGE};
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

#[derive(Default)]
struct SimFile {
    /// What reads see (the kernel's view).
    data: Vec<u8>,
    /// The device's bytes at each offset (as long as `data`; what lies past
    /// `durable_len` is reachable only if the size change survives).
    durable: Vec<u8>,
    /// Pages written since they were last made durable.
    dirty: BTreeSet<usize>,
    /// The file size the file system has made durable.
    durable_len: usize,
    /// The file's directory entry is durable.
    entry: bool,
    /// The image a crash left (bytes, or `None`: the file is gone), applied at
    /// restart.
    after: Option<Option<Vec<u8>>>,
}

impl SimFile {
    /// A file whose every byte, size and entry are durable (a test's edit, or what a
    /// restart found).
    fn settled(data: Vec<u8>) -> SimFile {
        SimFile {
            durable: data.clone(),
            durable_len: data.len(),
            data,
            dirty: BTreeSet::new(),
            entry: true,
            after: None,
        }
    }

    fn resize(&mut self, len: usize) {
        self.data.resize(len, 0);
        self.durable.resize(len, 0);
    }

    /// An fsync: every written page and the size are durable.
    fn sync(&mut self) {
        for &p in &self.dirty {
            let r = p * PAGE..((p + 1) * PAGE).min(self.data.len());
            self.durable[r.clone()].copy_from_slice(&self.data[r]);
        }
        self.dirty.clear();
        self.durable_len = self.data.len();
    }
}

#[derive(Default)]
struct State {
    files: BTreeMap<PathBuf, SimFile>,
    frozen: bool,
    fail_writes: bool,
    /// I/O operations so far (opens, reads, writes, syncs, growths).
    ops: u64,
    /// Operation number (0-based) from which every operation fails.
    fail_at: Option<u64>,
    /// The one operation number that fails.
    fail_op: Option<u64>,
    /// A crash armed by [`SimDisk::crash_at`]: it happens in the first write at or
    /// after this operation number, that write caught half-way (written, not durable).
    crash_at: Option<(u64, Crash)>,
    /// A crash armed by [`SimDisk::cut_power_at`]: it happens before this operation
    /// number, whatever the operation.
    cut_at: Option<(u64, Crash)>,
    /// Each asynchronous read holds its submit this long (`SimDisk::slow_reads`).
    slow_reads: Option<std::time::Duration>,
}

/// A failed operation.
fn injected(n: u64) -> io::Error {
    io::Error::other(format!("injected I/O failure at operation {n}"))
}

impl State {
    /// A file opened through [`Sim::open`] (an error if a test removed it).
    fn file_mut(&mut self, path: &Path) -> io::Result<&mut SimFile> {
        self.files
            .get_mut(path)
            .ok_or_else(|| io::Error::other(format!("sim file {} is gone", path.display())))
    }

    /// Counts one operation; crashes first if a power cut is armed for it; fails it
    /// if fault injection says so (the error carries the operation's number).
    fn step(&mut self) -> Result<(), (u64, io::Error)> {
        let n = self.ops;
        self.ops += 1;
        if let Some((at, c)) = self.cut_at
            && n >= at
        {
            self.crash(c);
        }
        let fails = matches!(self.fail_at, Some(f) if n >= f) || self.fail_op == Some(n);
        if fails { Err((n, injected(n))) } else { Ok(()) }
    }

    /// Freezes the disk and decides the image `crash` leaves (see the module note).
    fn crash(&mut self, crash: Crash) {
        self.frozen = true;
        self.crash_at = None;
        self.cut_at = None;
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
        let power = crash != Crash::Process;
        let mut coin = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x & 1 == 1
        };
        for f in self.files.values_mut() {
            if f.after.is_some() {
                continue; // an earlier crash decided it
            }
            if !power {
                f.after = Some(Some(f.data.clone()));
                continue;
            }
            let mut durable = f.durable.clone();
            for &p in &f.dirty {
                for u in (p * PAGE..((p + 1) * PAGE).min(f.data.len())).step_by(unit) {
                    if coin() {
                        let r = u..(u + unit).min(f.data.len());
                        durable[r.clone()].copy_from_slice(&f.data[r]);
                    }
                }
            }
            let len = if f.durable_len == f.data.len() || coin() {
                f.data.len()
            } else {
                f.durable_len
            };
            durable.resize(len, 0);
            let gone = !f.entry && coin();
            f.after = Some((!gone).then_some(durable));
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
    /// Power loss: non-durable pages survive or not at random (seeded), and so do
    /// size changes and directory entries not yet synced.
    Power(u64),
    /// Power loss on a device with 512 B atomic sectors: each 512 B sector of each
    /// non-durable page survives or not at random (seeded), so a page write is torn
    /// inside the page; size changes and entries as for [`Crash::Power`].
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

    /// Arms a power cut (or a kill) just before operation `op`, whatever it is (a
    /// file creation, a write, a sync of a file or of a directory, a growth): that
    /// operation and every later one change nothing.
    pub fn cut_power_at(&self, op: u64, crash: Crash) {
        self.lock().cut_at = Some((op, crash));
    }

    /// Whether the disk has crashed (and not restarted).
    pub fn crashed(&self) -> bool {
        self.lock().frozen
    }

    /// After the crashed engine is dropped: the disk holds the image the crash left
    /// (files gone, sizes and pages as decided), all of it durable now, for a reopen.
    pub fn restart(&self) {
        let mut s = self.lock();
        s.frozen = false;
        let files = std::mem::take(&mut s.files);
        for (path, f) in files {
            match f.after {
                None => {
                    s.files.insert(path, f);
                }
                Some(Some(data)) => {
                    s.files.insert(path, SimFile::settled(data));
                }
                Some(None) => {}
            }
        }
    }

    /// Makes every later write fail (to test poisoning).
    pub fn fail_writes(&self, fail: bool) {
        self.lock().fail_writes = fail;
    }

    /// I/O operations (opens, reads, writes, syncs, growths) issued so far.
    pub fn ops(&self) -> u64 {
        self.lock().ops
    }

    /// Makes operation number `n` (0-based, see [`SimDisk::ops`]) and every later one
    /// fail; `None` stops the injection. A failed write of several pages may have
    /// landed some of them first (a prefix chosen by its operation number; a single
    /// page write that failed has landed when that number is odd), as a device that
    /// reports an error after writing part of a request.
    pub fn fail_at(&self, n: Option<u64>) {
        self.lock().fail_at = n;
    }

    /// Makes only operation number `n` fail (as [`SimDisk::fail_at`] does); `None`
    /// stops it.
    pub fn fail_op(&self, n: Option<u64>) {
        self.lock().fail_op = n;
    }

    /// Makes every later asynchronous read hold the thread that submits it for `d`
    /// (the simulated backend does its I/O inside the submit: a slow device, for the
    /// worker's `slowest.*` counters); `None` stops it.
    pub fn slow_reads(&self, d: Option<std::time::Duration>) {
        self.lock().slow_reads = d;
    }

    /// Direct access to a file's current bytes (tests corrupt or truncate it); the
    /// result is durable.
    pub fn edit(&self, path: &Path, f: impl FnOnce(&mut Vec<u8>)) {
        let mut s = self.lock();
        if let Some(file) = s.files.get_mut(path) {
            f(&mut file.data);
            *file = SimFile::settled(std::mem::take(&mut file.data));
        }
    }

    /// Removes a file (a test's damage: a lost file).
    pub fn remove(&self, path: &Path) {
        self.lock().files.remove(path);
    }

    /// Paths of the files on the disk.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.lock().files.keys().cloned().collect()
    }

    /// An fsync of directory `dir`: the entries of its files are durable.
    pub(crate) fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut s = self.lock();
        s.step().map_err(|(_, e)| e)?;
        if !s.frozen {
            for (p, f) in s.files.iter_mut() {
                if p.parent() == Some(dir) {
                    f.entry = true;
                }
            }
        }
        Ok(())
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
        let off = offset as usize;
        let end = off + buf.len();
        if let Err((n, e)) = s.step() {
            // A device may report an error after writing part of a request: a prefix
            // of its pages lands (not durable).
            let pages = buf.len().div_ceil(PAGE) as u64;
            let landed = (n % (pages + 1)) as usize * PAGE;
            if landed > 0 && !s.frozen && !s.fail_writes {
                let f = s.file_mut(&self.files[file])?;
                let stop = (off + landed).min(end);
                if f.data.len() < stop {
                    f.resize(stop);
                }
                f.data[off..stop].copy_from_slice(&buf[..stop - off]);
                f.dirty.extend(off / PAGE..stop.div_ceil(PAGE));
            }
            return Err(e);
        }
        if s.fail_writes {
            return Err(io::Error::other("simulated write failure"));
        }
        if s.frozen {
            return Ok(());
        }
        let f = s.file_mut(&self.files[file])?;
        if f.data.len() < end {
            f.resize(end);
        }
        f.data[off..end].copy_from_slice(buf);
        // An armed crash catches this write in flight: written, not yet durable.
        let crash = match s.crash_at {
            Some((at, c)) if s.ops > at => Some(c),
            _ => None,
        };
        let f = s.file_mut(&self.files[file])?;
        if self.flags.dsync && crash.is_none() {
            // O_DSYNC: the data and the size needed to read it back are durable.
            f.durable[off..end].copy_from_slice(buf);
            f.durable_len = f.durable_len.max(end);
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
        s.step().map_err(|(_, e)| e)?;
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
        let mut s = self.disk.lock();
        s.step().map_err(|(_, e)| e)?;
        let frozen = s.frozen;
        s.files
            .entry(path.to_path_buf())
            .or_insert_with(|| SimFile {
                // created after a crash: the frozen engine sees it, the restart does not
                after: frozen.then_some(None),
                ..SimFile::default()
            });
        drop(s);
        self.files.push(path.to_path_buf());
        Ok(self.files.len() - 1)
    }
    fn len(&self, file: FileId) -> io::Result<u64> {
        let mut s = self.disk.lock();
        Ok(s.file_mut(&self.files[file])?.data.len() as u64)
    }
    fn set_len(&mut self, file: FileId, len: u64) -> io::Result<()> {
        let mut s = self.disk.lock();
        s.step().map_err(|(_, e)| e)?;
        if s.frozen {
            return Ok(());
        }
        let f = s.file_mut(&self.files[file])?;
        if (len as usize) > f.data.len() {
            f.resize(len as usize);
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
        s.step().map_err(|(_, e)| e)?;
        if s.frozen {
            return Ok(());
        }
        s.file_mut(&self.files[file])?.sync();
        Ok(())
    }
    fn sync_dir(&mut self, dir: &Path) -> io::Result<()> {
        self.disk.sync_dir(dir)
    }
    fn push(&mut self, req: IoReq) -> Result<(), IoReq> {
        self.queued.push(req);
        Ok(())
    }
    fn submit(&mut self) -> io::Result<()> {
        let queued = std::mem::take(&mut self.queued);
        for mut r in queued {
            // Not sleeping with the disk's lock held (a temporary in an `if let`
            // lives through its block).
            let slow = match r.kind {
                IoKind::Read => self.disk.lock().slow_reads,
                IoKind::Write => None,
            };
            if let Some(d) = slow {
                std::thread::sleep(d);
            }
            let result = match r.kind {
                IoKind::Read => self.do_read(r.file, r.offset, &mut r.buf),
                IoKind::Write => self.do_write(r.file, r.offset, &r.buf),
            };
            self.done.push(IoDone {
                tag: r.tag,
                kind: r.kind,
                buf: r.buf,
                result,
                issued: r.issued,
            });
        }
        Ok(())
    }
    fn reap(&mut self, _wait: bool, out: &mut Vec<IoDone>) -> io::Result<()> {
        out.append(&mut self.done);
        Ok(())
    }
    fn name(&self) -> String {
        "sim".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sim(disk: &SimDisk, dsync: bool) -> Sim {
        Sim::new(
            disk.clone(),
            IoFlags {
                direct: true,
                dsync,
            },
        )
    }

    fn page(b: u8) -> Vec<u8> {
        vec![b; PAGE]
    }

    /// What survives a power loss, over many seeds: (file kept, its length).
    fn outcomes(setup: impl Fn(&mut Sim, &SimDisk)) -> BTreeSet<(bool, usize)> {
        let mut seen = BTreeSet::new();
        for seed in 0..64 {
            let disk = SimDisk::new();
            let mut io = sim(&disk, false);
            setup(&mut io, &disk);
            disk.crash(Crash::Power(seed));
            drop(io);
            disk.restart();
            let mut len = 0;
            disk.edit(Path::new("/d/f"), |b| len = b.len());
            seen.insert((disk.paths().contains(&PathBuf::from("/d/f")), len));
        }
        seen
    }

    #[test]
    fn a_new_file_is_durable_only_once_its_directory_is_synced() {
        let created = outcomes(|io, _| {
            let f = io.open(Path::new("/d/f")).unwrap();
            io.write(f, 0, &page(1)).unwrap();
            io.sync(f).unwrap();
        });
        assert!(
            created.contains(&(false, 0)),
            "{created:?}: the entry may be lost"
        );
        assert!(created.contains(&(true, PAGE)), "{created:?}");
        let synced = outcomes(|io, _| {
            let f = io.open(Path::new("/d/f")).unwrap();
            io.write(f, 0, &page(1)).unwrap();
            io.sync(f).unwrap();
            io.sync_dir(Path::new("/d")).unwrap();
        });
        assert_eq!(synced, BTreeSet::from([(true, PAGE)]));
    }

    #[test]
    fn a_growth_is_durable_only_once_the_file_is_synced() {
        let setup = |sync: bool| {
            move |io: &mut Sim, _: &SimDisk| {
                let f = io.open(Path::new("/d/f")).unwrap();
                io.sync_dir(Path::new("/d")).unwrap();
                io.set_len(f, 4 * PAGE as u64).unwrap();
                if sync {
                    io.sync(f).unwrap();
                }
            }
        };
        let grown = outcomes(setup(false));
        assert_eq!(grown, BTreeSet::from([(true, 0), (true, 4 * PAGE)]));
        assert_eq!(outcomes(setup(true)), BTreeSet::from([(true, 4 * PAGE)]));
    }

    #[test]
    fn a_dsync_write_makes_its_data_and_the_size_it_needs_durable() {
        for seed in 0..16 {
            let disk = SimDisk::new();
            let mut io = sim(&disk, true);
            let f = io.open(Path::new("/d/f")).unwrap();
            io.sync_dir(Path::new("/d")).unwrap();
            io.write(f, PAGE as u64, &page(7)).unwrap();
            disk.crash(Crash::Power(seed));
            drop(io);
            disk.restart();
            disk.edit(Path::new("/d/f"), |b| {
                assert_eq!(b.len(), 2 * PAGE);
                assert!(b[PAGE..].iter().all(|&x| x == 7));
            });
        }
    }

    #[test]
    fn a_killed_process_keeps_everything_the_kernel_held() {
        let disk = SimDisk::new();
        let mut io = sim(&disk, false);
        let f = io.open(Path::new("/d/f")).unwrap();
        io.set_len(f, 2 * PAGE as u64).unwrap();
        io.write(f, 0, &page(3)).unwrap();
        disk.crash(Crash::Process);
        io.write(f, PAGE as u64, &page(4)).unwrap(); // after the crash: dropped
        drop(io);
        disk.restart();
        disk.edit(Path::new("/d/f"), |b| {
            assert_eq!(b.len(), 2 * PAGE);
            assert!(b[..PAGE].iter().all(|&x| x == 3));
            assert!(b[PAGE..].iter().all(|&x| x == 0));
        });
    }

    #[test]
    fn a_power_cut_before_an_operation_stops_it_and_every_later_one() {
        let disk = SimDisk::new();
        let mut io = sim(&disk, false);
        let f = io.open(Path::new("/d/f")).unwrap();
        io.sync_dir(Path::new("/d")).unwrap();
        disk.cut_power_at(disk.ops() + 1, Crash::Power(1));
        io.write(f, 0, &page(1)).unwrap(); // before the cut
        io.sync(f).unwrap(); // the cut: not done
        assert!(disk.crashed());
        let g = io.open(Path::new("/d/g")).unwrap(); // after it: never on the disk
        io.write(g, 0, &page(2)).unwrap();
        drop(io);
        disk.restart();
        assert_eq!(disk.paths(), vec![PathBuf::from("/d/f")]);
    }

    #[test]
    fn a_failed_write_may_land_a_prefix_of_its_pages() {
        let mut landed = BTreeSet::new();
        for n in 0..4 {
            let disk = SimDisk::new();
            let mut io = sim(&disk, false);
            let f = io.open(Path::new("/d/f")).unwrap();
            for _ in 0..n {
                io.sync(f).unwrap();
            }
            disk.fail_op(Some(disk.ops()));
            let mut two = page(5);
            two.extend(page(6));
            assert!(io.write(f, 0, &two).is_err());
            let len = io.len(f).unwrap() as usize;
            landed.insert(len / PAGE);
        }
        assert_eq!(landed, BTreeSet::from([0, 1, 2]));
    }
}
