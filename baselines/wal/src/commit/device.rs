//! How the committer's writes and syncs reach the WAL file: through an io_uring
//! ([`RingIo`]: many in flight, completions as the device gives them), or through
//! the [`Storage`] seam ([`SeamIo`]: for a file without a descriptor, the tests'
//! simulated one, or with `wal.uring=off`). The seam version performs each
//! operation when it is reaped, not when it is issued, and reaps them in a
//! pseudo-random order: the tests' crash images then hold what a device with many
//! writes in flight can leave (a later batch written, an earlier one not).
#![expect(
    unsafe_code,
    reason = "io_uring submissions hand the kernel the committer's buffers; SAFETY notes at each"
)]

use crate::io::Storage;
use crate::io::ring::{WAKE, Wake};
use io_uring::{IoUring, opcode, types};
use std::collections::HashMap;
use std::io;
use std::os::fd::RawFd;
use std::sync::Arc;

/// The tag of a sync's completion (writes are tagged by the committer).
pub const SYNC: u64 = u64::MAX - 1;

/// Completions: each operation's tag and result.
pub type Reaped = Vec<(u64, io::Result<()>)>;

/// Where the committer issues its writes and syncs.
pub trait LogIo {
    /// Issues a write of `buf` at byte `off`. The caller keeps `buf`'s memory where it
    /// is, unchanged, until the write's completion is reaped (or leaks it, if
    /// [`LogIo::wait`] fails).
    fn write(&mut self, tag: u64, buf: &[u8], off: u64) -> io::Result<()>;
    /// Issues a sync (fdatasync) of the writes completed so far.
    fn sync(&mut self) -> io::Result<()>;
    /// Reaps completions into `out`: waits for one unless `has_work` says there is
    /// new work (then returns at once, maybe with none). A ring also returns when
    /// woken. An error: the ring failed, and what was in flight is unknown.
    fn wait(&mut self, has_work: &dyn Fn() -> bool, out: &mut Reaped) -> io::Result<()>;
    /// Called once, when nothing is in flight, before the committer ends.
    fn finish(&mut self) {}
}

/// A write in flight: its buffer (address and length), where it goes, bytes done.
struct Pending {
    at: usize,
    len: usize,
    off: u64,
    done: usize,
}

/// The WAL file through an io_uring.
pub struct RingIo {
    ring: IoUring,
    fd: RawFd,
    wake: Arc<Wake>,
    armed: bool,
    writes: HashMap<u64, Pending>,
}

impl RingIo {
    /// A ring for `fd` holding `depth` operations, or `None` where the kernel gives
    /// none.
    pub fn new(fd: RawFd, depth: u32) -> Option<RingIo> {
        Some(RingIo {
            ring: IoUring::new(depth.next_power_of_two()).ok()?,
            fd,
            wake: Arc::new(Wake::new()?),
            armed: false,
            writes: HashMap::new(),
        })
    }

    /// What wakes the committer in [`LogIo::wait`].
    pub fn wake(&self) -> Arc<Wake> {
        self.wake.clone()
    }

    /// Pushes `e`, submitting what is queued when the submission queue is full.
    fn push(&mut self, e: &io_uring::squeue::Entry) -> io::Result<()> {
        loop {
            // SAFETY: the entries the committer pushes are writes from buffers it
            // keeps until their completions are reaped (see `LogIo::write`), and
            // syncs, which take no memory.
            if unsafe { self.ring.submission().push(e) }.is_ok() {
                return Ok(());
            }
            match self.ring.submit() {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// (Re)issues the rest of write `tag`.
    fn issue(&mut self, tag: u64) -> io::Result<()> {
        let Some(p) = self.writes.get(&tag) else {
            return Ok(());
        };
        let e = opcode::Write::new(
            types::Fd(self.fd),
            (p.at + p.done) as *const u8,
            (p.len - p.done) as u32,
        )
        .offset(p.off + p.done as u64)
        .build()
        .user_data(tag);
        self.push(&e)
    }

    fn issue_sync(&mut self) -> io::Result<()> {
        let e = opcode::Fsync::new(types::Fd(self.fd))
            .flags(types::FsyncFlags::DATASYNC)
            .build()
            .user_data(SYNC);
        self.push(&e)
    }
}

impl LogIo for RingIo {
    fn write(&mut self, tag: u64, buf: &[u8], off: u64) -> io::Result<()> {
        self.writes.insert(
            tag,
            Pending {
                at: buf.as_ptr() as usize,
                len: buf.len(),
                off,
                done: 0,
            },
        );
        self.issue(tag)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.issue_sync()
    }

    fn wait(&mut self, has_work: &dyn Fn() -> bool, out: &mut Reaped) -> io::Result<()> {
        if !self.armed {
            self.armed = self.wake.arm(&mut self.ring);
        }
        // work queued after this look writes the eventfd, whose read completes
        self.wake.sleeping(true);
        let r = if has_work() {
            self.wake.sleeping(false);
            self.ring.submit()
        } else {
            self.ring.submit_and_wait(1)
        };
        self.wake.sleeping(false);
        match r {
            Ok(_) => {}
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINTR | libc::EBUSY)) => {}
            Err(e) => {
                self.wake.abandon();
                return Err(e);
            }
        }
        let done: Vec<(u64, i32)> = self
            .ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        for (tag, res) in done {
            if tag == WAKE {
                self.armed = false;
                continue;
            }
            if res == -libc::EINTR || res == -libc::EAGAIN {
                if tag == SYNC {
                    self.issue_sync()?;
                } else {
                    self.issue(tag)?;
                }
                continue;
            }
            if tag == SYNC {
                out.push((SYNC, result(res)));
                continue;
            }
            let Some(p) = self.writes.get_mut(&tag) else {
                continue;
            };
            if res > 0 && p.done + (res as usize) < p.len {
                // a short write: the rest again
                p.done += res as usize;
                self.issue(tag)?;
                continue;
            }
            self.writes.remove(&tag);
            let r = match res {
                0 => Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "a WAL write wrote nothing",
                )),
                r => result(r),
            };
            out.push((tag, r));
        }
        Ok(())
    }

    fn finish(&mut self) {
        if self.armed {
            self.wake.disarm(&mut self.ring);
            self.armed = false;
        }
    }
}

fn result(res: i32) -> io::Result<()> {
    if res < 0 {
        Err(io::Error::from_raw_os_error(-res))
    } else {
        Ok(())
    }
}

/// How many times the seam looks for new transactions, 30 us apart, before it
/// reaps an operation (a device's latency, in which batches pile up).
const SEAM_LATENCY_POLLS: u32 = 3;

/// An operation issued through the seam, performed when reaped.
enum SeamOp {
    Write(u64, Vec<u8>, u64),
    Sync,
}

/// The WAL file through the [`Storage`] seam, operations reaped one at a time in a
/// pseudo-random order (performed then), and only when the committer has had no new
/// transactions to take for a moment.
pub struct SeamIo {
    file: Arc<dyn Storage>,
    issued: Vec<SeamOp>,
    rnd: u64,
}

impl SeamIo {
    pub fn new(file: Arc<dyn Storage>) -> SeamIo {
        SeamIo {
            file,
            issued: Vec::new(),
            rnd: 0x9e37_79b9_7f4a_7c15,
        }
    }
}

impl LogIo for SeamIo {
    fn write(&mut self, tag: u64, buf: &[u8], off: u64) -> io::Result<()> {
        self.issued.push(SeamOp::Write(tag, buf.to_vec(), off));
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        self.issued.push(SeamOp::Sync);
        Ok(())
    }

    fn wait(&mut self, has_work: &dyn Fn() -> bool, out: &mut Reaped) -> io::Result<()> {
        // New transactions first, and a moment for them to come, as a device takes
        // time to complete a write: so batches pile up in flight here too.
        if self.issued.is_empty() {
            return Ok(());
        }
        for _ in 0..SEAM_LATENCY_POLLS {
            if has_work() {
                return Ok(());
            }
            std::thread::sleep(std::time::Duration::from_micros(30));
        }
        self.rnd ^= self.rnd << 13;
        self.rnd ^= self.rnd >> 7;
        self.rnd ^= self.rnd << 17;
        let op = self
            .issued
            .swap_remove((self.rnd % self.issued.len() as u64) as usize);
        out.push(match op {
            SeamOp::Write(tag, b, off) => (tag, self.file.write_at(&b, off)),
            SeamOp::Sync => (SYNC, self.file.sync()),
        });
        Ok(())
    }
}
