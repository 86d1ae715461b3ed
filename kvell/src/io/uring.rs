//! io_uring backend: a ring per worker; reads and writes are pushed to the
//! submission queue and handed to the kernel in one `io_uring_enter` per batch.
//! Completions are reaped as they come (never "wait for the whole batch").
//!
//! How the ring is set up is [`RingSetup`] (`kvell.ring`). By default with the flags
//! fio and the device probe set (`COOP_TASKRUN`, `SINGLE_ISSUER`, `DEFER_TASKRUN`) plus
//! `TASKRUN_FLAG`: `COOP_TASKRUN` (a completion does not interrupt the
//! worker with an inter-processor interrupt to post it; in a virtual machine each
//! such interrupt is an exit of both virtual CPUs), `TASKRUN_FLAG` (the ring says
//! when completions wait to be posted, so that a reap without waiting enters the
//! kernel only then), `SINGLE_ISSUER | DEFER_TASKRUN` (completions are posted in a
//! batch when the worker asks for them; only the thread that made the ring may use
//! it, which holds: each worker makes its ring on its own thread, recovers and runs
//! there, and drops it there).
//!
//! An I/O whose buffer lies in the arena registered by [`Backend::register`] (the
//! worker's pooled buffers, `BufPool::with_arena`) is a `READ_FIXED` / `WRITE_FIXED`:
//! the kernel pinned the arena once, and does not pin the buffer's page at each I/O.
#![expect(
    unsafe_code,
    reason = "pushing a submission entry hands the kernel a buffer; SAFETY note at the push"
)]

use super::files::Files;
use super::{Arena, Backend, FileId, IoDone, IoFlags, IoKind, IoReq};
use io_uring::{IoUring, opcode, squeue, types};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::path::Path;

/// How a worker's ring is set up (`kvell.ring`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingSetup {
    /// `COOP_TASKRUN | TASKRUN_FLAG | SINGLE_ISSUER | DEFER_TASKRUN`: fio's flags (3.33
    /// and later, as `ycsb device`'s) plus `TASKRUN_FLAG`; on a kernel that refuses a
    /// flag, the next setting down.
    Defer,
    /// `COOP_TASKRUN | TASKRUN_FLAG` (kernel 5.19 and later).
    Coop,
    /// No flags: each completion is posted by task work that interrupts the worker.
    Plain,
}

impl RingSetup {
    pub fn name(self) -> &'static str {
        match self {
            RingSetup::Defer => "defer",
            RingSetup::Coop => "coop",
            RingSetup::Plain => "plain",
        }
    }

    /// The name of a backend set up this way ([`Backend::name`]), e.g. "io_uring
    /// (defer_taskrun, registered buffers, registered files)". With `buffers`: the
    /// worker's I/O buffers are registered with the ring; with `files`: its files.
    pub fn backend_name(self, buffers: bool, files: bool) -> String {
        let flag = match self {
            RingSetup::Defer => Some("defer_taskrun"),
            RingSetup::Coop => Some("coop_taskrun"),
            RingSetup::Plain => None,
        };
        let parts: Vec<&str> = [
            flag,
            buffers.then_some("registered buffers"),
            files.then_some("registered files"),
        ]
        .into_iter()
        .flatten()
        .collect();
        if parts.is_empty() {
            "io_uring".into()
        } else {
            format!("io_uring ({})", parts.join(", "))
        }
    }

    /// Every name a backend set up this way may have.
    pub fn backend_names(self) -> impl Iterator<Item = String> {
        [(false, false), (false, true), (true, false), (true, true)]
            .into_iter()
            .map(move |(b, f)| self.backend_name(b, f))
    }

    /// Every setup, from the most the kernel is asked for to the least.
    pub const ALL: [RingSetup; 3] = [RingSetup::Defer, RingSetup::Coop, RingSetup::Plain];

    pub fn parse(s: &str) -> Option<RingSetup> {
        RingSetup::ALL.into_iter().find(|r| r.name() == s)
    }

    /// The ring, set up as asked or, where the kernel refuses a flag (`EINVAL`), as
    /// the next setting down; with the setting it got.
    fn build(self, entries: u32) -> io::Result<(IoUring, RingSetup)> {
        let mut setup = self;
        loop {
            let mut b = IoUring::builder();
            match setup {
                RingSetup::Defer => {
                    b.setup_coop_taskrun()
                        .setup_taskrun_flag()
                        .setup_single_issuer()
                        .setup_defer_taskrun();
                }
                RingSetup::Coop => {
                    b.setup_coop_taskrun().setup_taskrun_flag();
                }
                RingSetup::Plain => {}
            }
            match (b.build(entries), setup) {
                (Ok(r), _) => return Ok((r, setup)),
                (Err(e), RingSetup::Defer) if e.raw_os_error() == Some(libc::EINVAL) => {
                    setup = RingSetup::Coop;
                }
                (Err(e), RingSetup::Coop) if e.raw_os_error() == Some(libc::EINVAL) => {
                    setup = RingSetup::Plain;
                }
                (Err(e), _) => return Err(e),
            }
        }
    }
}

pub struct Uring {
    ring: IoUring,
    /// How the ring was set up (what was asked for, or less where the kernel refused).
    setup: RingSetup,
    files: Files,
    /// In-flight requests by user_data; owns their buffers until completion.
    inflight: Vec<Option<IoReq>>,
    free_slots: Vec<usize>,
    count: usize,
    /// The eventfd that ends a wait (`Backend::wake_on`), and whether a poll of it is
    /// in the ring now.
    wake: Option<RawFd>,
    polling: bool,
    /// The registered arena (buffer index 0): an I/O whose buffer was cut from it
    /// is a `READ_FIXED` / `WRITE_FIXED`. Declared after `ring`, so the arena outlives
    /// the ring (and so the registration).
    fixed: Option<Arena>,
    /// Whether the ring has a table of [`FILE_TABLE`] registered files, a file's
    /// `FileId` its index there ([`Uring::register_file`]).
    file_table: bool,
    /// Which files are in the table (by `FileId`): their I/O names the index
    /// (`IOSQE_FIXED_FILE`) and the kernel takes no reference on the file per I/O.
    registered: Vec<bool>,
}

/// Entries of a ring's table of registered files: a worker opens one file per slab
/// class (`slab::NCLASS`, 21) and its clean-shutdown record; a file past the table
/// (or where the kernel has no sparse table, before 5.19) goes by its descriptor.
const FILE_TABLE: u32 = 64;

/// The `user_data` of the eventfd's poll (I/O slots count up from 0).
const WAKE_TAG: u64 = u64::MAX;

impl Uring {
    /// A ring of `entries` (rounded up to a power of two), set up as `setup` asks.
    /// The ring may only be used from the thread that calls this when `setup` is
    /// [`RingSetup::Defer`].
    pub fn new(flags: IoFlags, entries: u32, setup: RingSetup) -> io::Result<Uring> {
        let entries = entries.clamp(1, 4096).next_power_of_two();
        let (ring, setup) = setup.build(entries)?;
        let mut u = Uring {
            ring,
            setup,
            files: Files::new(flags),
            inflight: Vec::new(),
            free_slots: Vec::new(),
            count: 0,
            wake: None,
            polling: false,
            fixed: None,
            file_table: false,
            registered: Vec::new(),
        };
        u.file_table = u.ring.submitter().register_files_sparse(FILE_TABLE).is_ok();
        Ok(u)
    }

    /// Puts file `id` in the ring's table of registered files, if it has one with
    /// room: each I/O on it then saves the kernel a lookup of the descriptor and a
    /// reference on the file (`fget`/`fput`, 0.75% of all samples of YCSB C uniform on
    /// the RAM device; no change of rate measured, results/kvell-4m-ab/registered-
    /// files). fio's `--registerfiles` and the device probe submit the same way.
    fn register_file(&mut self, id: FileId) {
        if !self.file_table || id >= FILE_TABLE as usize {
            return;
        }
        let fd = self.files.get(id).as_raw_fd();
        let ok = self
            .ring
            .submitter()
            .register_files_update(id as u32, &[fd])
            .is_ok_and(|n| n == 1);
        if self.registered.len() <= id {
            self.registered.resize(id + 1, false);
        }
        self.registered[id] = ok;
    }

    fn drain(&mut self, out: &mut Vec<IoDone>) {
        for cqe in self.ring.completion() {
            if cqe.user_data() == WAKE_TAG {
                self.polling = false;
                if let Some(fd) = self.wake {
                    // Reset the counter, so that the next poll waits again.
                    let mut v: u64 = 0;
                    // SAFETY: reads 8 bytes into a local; the descriptor is the
                    // worker's eventfd, open while the engine is (non-blocking: an
                    // empty counter is EAGAIN, ignored).
                    unsafe { libc::read(fd, (&raw mut v).cast(), 8) };
                }
                continue;
            }
            let slot = cqe.user_data() as usize;
            let Some(req) = self.inflight.get_mut(slot).and_then(Option::take) else {
                continue;
            };
            self.free_slots.push(slot);
            self.count -= 1;
            let r = cqe.result();
            let result = if r < 0 {
                Err(io::Error::from_raw_os_error(-r))
            } else if (r as usize) < req.buf.len() {
                Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("short {:?}: {r} of {} bytes", req.kind, req.buf.len()),
                ))
            } else {
                Ok(())
            };
            out.push(IoDone {
                tag: req.tag,
                kind: req.kind,
                buf: req.buf,
                result,
                issued: req.issued,
            });
        }
    }
}

impl Backend for Uring {
    fn open(&mut self, path: &Path) -> io::Result<FileId> {
        let id = self.files.open(path)?;
        self.register_file(id);
        Ok(id)
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
    fn push(&mut self, mut req: IoReq) -> Result<(), IoReq> {
        if self.ring.submission().is_full() {
            return Err(req);
        }
        // A registered file goes by its index in the ring's table, with
        // `IOSQE_FIXED_FILE` set on the entry below.
        let registered = self.registered.get(req.file).copied().unwrap_or(false);
        let fd = types::Fd(if registered {
            req.file as RawFd
        } else {
            self.files.get(req.file).as_raw_fd()
        });
        let len = req.buf.len() as u32;
        let slot = self.free_slots.pop().unwrap_or_else(|| {
            self.inflight.push(None);
            self.inflight.len() - 1
        });
        let fixed = self.fixed.as_ref().is_some_and(|a| a.holds(&req.buf));
        let flags = if self.files.flags.dsync {
            libc::RWF_DSYNC
        } else {
            0
        };
        let entry = match (req.kind, fixed) {
            (IoKind::Read, false) => opcode::Read::new(fd, req.buf.as_mut_ptr(), len)
                .offset(req.offset)
                .build(),
            (IoKind::Read, true) => opcode::ReadFixed::new(fd, req.buf.as_mut_ptr(), len, 0)
                .offset(req.offset)
                .build(),
            (IoKind::Write, false) => opcode::Write::new(fd, req.buf.as_ptr(), len)
                .offset(req.offset)
                .rw_flags(flags as _)
                .build(),
            (IoKind::Write, true) => opcode::WriteFixed::new(fd, req.buf.as_ptr(), len, 0)
                .offset(req.offset)
                .rw_flags(flags as _)
                .build(),
        }
        .flags(if registered {
            squeue::Flags::FIXED_FILE
        } else {
            squeue::Flags::empty()
        })
        .user_data(slot as u64);
        // SAFETY: the buffer is heap memory owned by `req`, which is stored in
        // `inflight` until its completion is reaped (and Drop waits for every
        // in-flight I/O), so it stays valid and untouched while the kernel uses it;
        // the file descriptor stays open as long as `self.files`.
        let pushed = unsafe { self.ring.submission().push(&entry) };
        if pushed.is_err() {
            self.free_slots.push(slot);
            return Err(req);
        }
        self.inflight[slot] = Some(req);
        self.count += 1;
        Ok(())
    }
    fn submit(&mut self) -> io::Result<()> {
        loop {
            match self.ring.submit() {
                Ok(_) => return Ok(()),
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) => return Err(e),
            }
        }
    }
    fn reap(&mut self, wait: bool, out: &mut Vec<IoDone>) -> io::Result<()> {
        let before = out.len();
        // Completions whose posting waits for the worker (COOP_TASKRUN's task work,
        // DEFER_TASKRUN's deferred list) are posted by an enter with GETEVENTS, which
        // `submit` makes when the ring's flag says some wait.
        // A transient refusal (EAGAIN, EBUSY) only leaves them for the next entry.
        if self.setup != RingSetup::Plain && self.ring.submission().taskrun() {
            match self.submit() {
                Err(e) if !matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EBUSY)) => {
                    return Err(e);
                }
                _ => {}
            }
        }
        self.drain(out);
        if wait && out.len() == before && self.count > 0 {
            if let Some(fd) = self.wake
                && !self.polling
            {
                let poll = opcode::PollAdd::new(types::Fd(fd), libc::POLLIN as u32)
                    .build()
                    .user_data(WAKE_TAG);
                // SAFETY: a poll hands the kernel no memory of ours; the descriptor
                // outlives the ring (the worker holds its `Wake`).
                self.polling = unsafe { self.ring.submission().push(&poll) }.is_ok();
            }
            loop {
                match self.ring.submit_and_wait(1) {
                    Ok(_) => break,
                    Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                    Err(e) => return Err(e),
                }
            }
            self.drain(out);
        }
        Ok(())
    }
    fn wake_on(&mut self, fd: RawFd) -> bool {
        self.wake = Some(fd);
        true
    }
    fn register(&mut self, arena: &Arena) -> bool {
        if self.fixed.is_some() {
            return false;
        }
        let (at, len) = arena.span();
        let iov = libc::iovec {
            iov_base: at as *mut libc::c_void,
            iov_len: len,
        };
        // SAFETY: the arena's mapping stays mapped while `self.fixed` holds the arena,
        // which is dropped after the ring (field order) and so after the kernel lets
        // go of the registration; the kernel pins the pages, and no frame of the page
        // cache lies in an arena (its memory is given back to the OS page by page,
        // which pinned pages would not be).
        if unsafe { self.ring.submitter().register_buffers(&[iov]) }.is_err() {
            return false;
        }
        self.fixed = Some(arena.clone());
        true
    }
    fn name(&self) -> String {
        // Files: those opened so far (a worker opens every slab before it asks).
        let files = !self.registered.is_empty() && self.registered.iter().all(|&r| r);
        self.setup.backend_name(self.fixed.is_some(), files)
    }
}

impl Drop for Uring {
    fn drop(&mut self) {
        // Buffers of in-flight I/Os must outlive the kernel's use of them.
        let mut sink = Vec::new();
        while self.count > 0 {
            if self.ring.submit_and_wait(1).is_err() && self.count > 0 {
                // Cannot wait: leak the buffers rather than free memory in use.
                for r in self.inflight.drain(..).flatten() {
                    std::mem::forget(r);
                }
                return;
            }
            self.drain(&mut sink);
            sink.clear();
        }
        // The table's references to the files go now, not when the kernel tears the
        // ring down after its descriptor is closed (a work item, later): a database
        // deleted right after its engine closed gives its space back at once (the
        // full-disk test reuses it at once), as it did before files were registered.
        if self.file_table {
            let _ = self.ring.submitter().unregister_files();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::AlignedBuf;
    use crate::io::{IoKind, PAGE};
    use std::time::{Duration, Instant};

    /// Under each setup, pages written and read back through the ring come back as
    /// written, and a reap that does not wait finds every completion in the end:
    /// under COOP_TASKRUN and DEFER_TASKRUN a completion is posted only when the
    /// worker enters the kernel for it, so a reap that only looked at the completion
    /// queue would spin here until the deadline.
    #[test]
    fn every_setup_completes_reaped_without_waiting() {
        let dir = kvtestkit::conformance::TempDir::new("uring-setup");
        std::fs::create_dir_all(dir.path()).unwrap();
        for setup in RingSetup::ALL {
            // O_DIRECT: buffered reads and writes may complete inside the submit, never
            // through the deferred path this test is about
            let flags = IoFlags {
                direct: true,
                dsync: false,
            };
            let mut u = Uring::new(flags, 8, setup).unwrap();
            let f = match u.open(&dir.path().join(format!("{}.dat", setup.name()))) {
                Ok(f) => f,
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    eprintln!("skipped: no O_DIRECT under {}", dir.path().display());
                    return;
                }
                Err(e) => panic!("{e}"),
            };
            u.set_len(f, 16 * PAGE as u64).unwrap();
            let reap_all = |u: &mut Uring, n: usize| -> Vec<IoDone> {
                let mut out = Vec::new();
                let deadline = Instant::now() + Duration::from_secs(10);
                while out.len() < n {
                    assert!(
                        Instant::now() < deadline,
                        "{setup:?}: {} of {n} completions reaped without waiting",
                        out.len()
                    );
                    u.reap(false, &mut out).unwrap();
                }
                out
            };
            for kind in [IoKind::Write, IoKind::Read] {
                for p in 0..8u64 {
                    let mut buf = AlignedBuf::new(PAGE);
                    buf.fill(if kind == IoKind::Write {
                        p as u8 + 1
                    } else {
                        0
                    });
                    let req = IoReq {
                        file: f,
                        offset: p * PAGE as u64,
                        kind,
                        buf,
                        tag: p,
                        issued: std::time::Instant::now(),
                    };
                    assert!(u.push(req).is_ok());
                }
                u.submit().unwrap();
                let done = reap_all(&mut u, 8);
                for d in done {
                    assert!(d.result.is_ok(), "{setup:?}: {:?}", d.result);
                    assert_eq!(d.kind, kind);
                    if kind == IoKind::Read {
                        assert!(d.buf.iter().all(|&b| b == d.tag as u8 + 1), "{setup:?}");
                    }
                }
            }
            assert!(u.name().starts_with("io_uring"));
        }
    }

    /// Files in the ring's table go by their index there, those past it by their
    /// descriptor, and each write lands in its own file: written through the ring, a
    /// page of each file's own byte, then read back outside it.
    #[test]
    fn writes_reach_their_own_file_registered_or_not() {
        let dir = kvtestkit::conformance::TempDir::new("uring-files");
        std::fs::create_dir_all(dir.path()).unwrap();
        let flags = IoFlags {
            direct: true,
            dsync: false,
        };
        let mut u = Uring::new(flags, 8, RingSetup::Defer).unwrap();
        let n = FILE_TABLE as usize + 2;
        let mut ids = Vec::new();
        for i in 0..n {
            match u.open(&dir.path().join(format!("{i}.dat"))) {
                Ok(f) => ids.push(f),
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    eprintln!("skipped: no O_DIRECT under {}", dir.path().display());
                    return;
                }
                Err(e) => panic!("{e}"),
            }
        }
        if u.file_table {
            assert!(ids[..FILE_TABLE as usize].iter().all(|&f| u.registered[f]));
        } else {
            eprintln!("no table of registered files on this kernel: every file by descriptor");
        }
        assert!(!u.registered.get(ids[n - 1]).copied().unwrap_or(false));
        // The first, one in the table, the last in it and the two past it.
        let some = [0, 7, FILE_TABLE as usize - 1, n - 2, n - 1];
        for &i in &some {
            u.set_len(ids[i], PAGE as u64).unwrap();
            let mut buf = AlignedBuf::new(PAGE);
            buf.fill(i as u8 + 1);
            let req = IoReq {
                file: ids[i],
                offset: 0,
                kind: IoKind::Write,
                buf,
                tag: i as u64,
                issued: Instant::now(),
            };
            assert!(u.push(req).is_ok());
        }
        u.submit().unwrap();
        let mut done = Vec::new();
        while done.len() < some.len() {
            u.reap(true, &mut done).unwrap();
        }
        assert!(
            done.iter().all(|d| d.result.is_ok()),
            "{:?}",
            done.iter().map(|d| &d.result).collect::<Vec<_>>()
        );
        for &i in &some {
            let got = std::fs::read(dir.path().join(format!("{i}.dat"))).unwrap();
            assert!(
                got.len() == PAGE && got.iter().all(|&b| b == i as u8 + 1),
                "file {i}"
            );
        }
    }
}
