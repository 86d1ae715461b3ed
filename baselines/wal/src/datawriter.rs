//! The data writer of the native asynchronous path: writes large values to the data
//! file through an io_uring, up to [`DEPTH`] at once, O_DIRECT from aligned buffers,
//! so that `submit` never waits for a data write (issue 21, part 2: "the data write
//! still issued in parallel with the log commit and the transaction acknowledged
//! when both are durable", as DAOS's asynchronous `bio_iod_post`).
//!
//! One thread, one ring over the data file (the miss loader's pattern, `loader.rs`):
//! writes are queued by [`DataWrites::write`] (the value copied into a whole-block
//! aligned buffer by the caller), handed to the kernel in one system call per batch,
//! and each one's continuation runs on this thread once the value is durable: at
//! `fdatasync` durability after an fdatasync (`IORING_OP_FSYNC`, datasync) issued
//! after its write completed (one sync covers every write completed before it was
//! issued; writes completed meanwhile wait for the next: group commit, as the
//! committer's), at `dsync` when the write completes (the file is O_DSYNC), at
//! `none-process` when the write completes (O_DIRECT: in the device). A
//! continuation must not wait on the engine (a write waiting for log space waits for
//! a checkpoint, which waits for the data writes of transactions before it, which
//! this thread completes): the native path's clear the transaction's `data_pending`
//! or queue the rest of the request to the miss loader.
//!
//! A file without a descriptor (the simulated file system of the tests), `wal.uring
//! = off` or a kernel that refuses io_uring gets the same thread writing one value
//! at a time with [`DataFile::write`] (and its sync): the same continuations, in the
//! same order. Counters: `data_ring` (1 with io_uring, 0 without: never silent),
//! `data_peak_in_flight`.
#![expect(
    unsafe_code,
    reason = "io_uring submissions hand the kernel buffers; SAFETY notes at each"
)]

use crate::extent::Extent;
use crate::files::DataFile;
use crate::format::BLOCK;
use crate::io::aligned::AlignedBuf;
use crate::io::ring::{WAKE, Wake};
use crate::stats::Stat;
use io_uring::{IoUring, opcode, types};
use kvapi::{Error, Result};
use std::collections::VecDeque;
use std::os::fd::RawFd;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

/// Data writes in flight at most (the driver keeps 64 requests in flight).
pub const DEPTH: usize = 64;

/// Aligned buffers kept for reuse at most, and the largest kept: a steady load of
/// large values does not allocate one per write, and what is kept stays bounded.
const KEEP: usize = DEPTH;
const KEEP_MAX: usize = 256 << 10;

/// The user data of the fdatasync in the ring.
const SYNC: u64 = u64::MAX - 1;

/// What to do once a value is durable (or its write failed).
pub type Written = Box<dyn FnOnce(Result<()>) + Send>;

struct Job {
    x: Extent,
    buf: AlignedBuf,
    then: Written,
}

struct Queue {
    jobs: Vec<Job>,
    /// Buffers of finished writes, for the next ones.
    bufs: Vec<AlignedBuf>,
    /// The writer is stopping: new writes are made by their caller.
    stopped: bool,
}

struct Shared {
    queue: Mutex<Queue>,
    /// The eventfd (ring mode); `None`: the thread waits on `cv`.
    wake: Option<Wake>,
    cv: Condvar,
    data: Arc<DataFile>,
}

/// Where data writes are queued; cloned into the continuations that need it.
#[derive(Clone)]
pub struct DataWrites {
    shared: Arc<Shared>,
}

impl DataWrites {
    /// Writes `v` to extent `x` of the data file (whole blocks, the rest of the last
    /// one zero) and runs `then` once it is durable, on the writer's thread; on the
    /// caller's, blocking, when the writer has stopped.
    pub fn write(&self, x: Extent, v: &[u8], then: Written) {
        let buf = self.buffer(x, v);
        self.write_buf(x, buf, then)
    }

    /// `v` in a buffer of extent `x`'s whole blocks, for [`DataWrites::write_buf`].
    pub fn buffer(&self, x: Extent, v: &[u8]) -> AlignedBuf {
        let mut buf = self
            .shared
            .queue
            .lock()
            .ok()
            .and_then(|mut q| q.bufs.pop())
            .unwrap_or_default();
        buf.set_len(x.blocks as usize * BLOCK);
        buf[..v.len()].copy_from_slice(v);
        buf[v.len()..].fill(0);
        buf
    }

    /// [`DataWrites::write`] of a value already in its buffer.
    pub fn write_buf(&self, x: Extent, buf: AlignedBuf, then: Written) {
        let s = &self.shared;
        let job = Job { x, buf, then };
        let job = match s.queue.lock() {
            Ok(mut q) if !q.stopped => {
                q.jobs.push(job);
                None
            }
            _ => Some(job),
        };
        match job {
            Some(job) => write_blocking(&s.data, job),
            None => match &s.wake {
                Some(w) => w.kick(),
                None => s.cv.notify_one(),
            },
        }
    }
}

/// The writer's thread; stopped and joined when dropped, after every write queued
/// has finished and run its continuation.
pub struct DataWriter {
    writes: DataWrites,
    thread: Option<JoinHandle<()>>,
}

impl DataWriter {
    /// Starts the writer over `data`: with an io_uring when `uring`, the file has a
    /// descriptor and the kernel gives a ring, else writing one value at a time.
    pub fn start(data: Arc<DataFile>, uring: bool) -> std::io::Result<DataWriter> {
        let fd = data.raw_fd().filter(|_| uring);
        let ring = fd.and_then(|fd| {
            let ring = IoUring::new((2 * DEPTH) as u32).ok()?;
            Some((ring, fd, Wake::new()?))
        });
        let (ring, wake) = match ring {
            Some((r, fd, w)) => (Some((r, fd)), Some(w)),
            None => (None, None),
        };
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                jobs: Vec::new(),
                bufs: Vec::new(),
                stopped: false,
            }),
            wake,
            cv: Condvar::new(),
            data,
        });
        let writes = DataWrites { shared };
        let w = writes.clone();
        let thread =
            std::thread::Builder::new()
                .name("wal-data".into())
                .spawn(move || match ring {
                    Some((ring, fd)) => run_ring(&w.shared, ring, fd),
                    None => run_blocking(&w.shared),
                })?;
        Ok(DataWriter {
            writes,
            thread: Some(thread),
        })
    }

    pub fn writes(&self) -> &DataWrites {
        &self.writes
    }
}

impl Drop for DataWriter {
    fn drop(&mut self) {
        let s = &self.writes.shared;
        if let Ok(mut q) = s.queue.lock() {
            q.stopped = true;
        }
        match &s.wake {
            Some(w) => w.write(),
            None => s.cv.notify_all(),
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The failure of a data write, as the continuation gets it.
fn failed(what: &str, e: std::io::Error) -> Error {
    Error::io(format!("data file {what}"), e)
}

/// Writes (and syncs) `job`'s value on this thread, then runs its continuation.
fn write_blocking(data: &DataFile, job: Job) {
    let r = data
        .write(&job.x, &job.buf[..job.x.len as usize])
        .map_err(|e| failed("write", e));
    (job.then)(r)
}

/// The writer without a ring: each value written in turn.
fn run_blocking(s: &Shared) {
    s.data.stats().max(Stat::DataPeak, 1);
    loop {
        let jobs = {
            let Ok(mut q) = s.queue.lock() else {
                return;
            };
            while q.jobs.is_empty() && !q.stopped {
                q = match s.cv.wait(q) {
                    Ok(q) => q,
                    Err(_) => return,
                };
            }
            if q.jobs.is_empty() {
                return;
            }
            std::mem::take(&mut q.jobs)
        };
        for job in jobs {
            write_blocking(&s.data, job);
        }
    }
}

/// A write in flight: its job and the bytes of it written so far.
struct Writing {
    job: Job,
    done: usize,
}

/// Gives a finished write's buffer back for reuse (while few and small).
fn recycle(s: &Shared, buf: AlignedBuf) {
    if buf.held() <= KEEP_MAX + BLOCK
        && let Ok(mut q) = s.queue.lock()
        && q.bufs.len() < KEEP
    {
        q.bufs.push(buf);
    }
}

/// The writer with a ring (see the module's note).
fn run_ring(s: &Shared, mut ring: IoUring, fd: RawFd) {
    let Some(wake) = s.wake.as_ref() else {
        return run_blocking(s);
    };
    let stats = s.data.stats();
    stats.set(Stat::DataRing, 1);
    let syncs = s.data.syncs();
    let mut writing: Vec<Option<Writing>> = (0..DEPTH).map(|_| None).collect();
    let mut free_slots: Vec<usize> = (0..DEPTH).rev().collect();
    let mut waiting: VecDeque<Writing> = VecDeque::new();
    // written, waiting for a sync to be issued; covered by the sync in flight
    let mut unsynced: Vec<Job> = Vec::new();
    let mut syncing: Option<Vec<Job>> = None;
    let mut armed = false;
    loop {
        if !armed {
            armed = wake.arm(&mut ring);
        }
        let (jobs, stopped) = match s.queue.lock() {
            Ok(mut q) => (std::mem::take(&mut q.jobs), q.stopped),
            Err(_) => (Vec::new(), true),
        };
        waiting.extend(jobs.into_iter().map(|job| Writing { job, done: 0 }));
        if syncing.is_none() && !unsynced.is_empty() {
            let e = opcode::Fsync::new(types::Fd(fd))
                .flags(types::FsyncFlags::DATASYNC)
                .build()
                .user_data(SYNC);
            // SAFETY: an fsync hands the kernel no memory.
            if unsafe { ring.submission().push(&e) }.is_ok() {
                syncing = Some(std::mem::take(&mut unsynced));
            }
        }
        while let Some(slot) = free_slots.pop() {
            let Some(w) = waiting.pop_front() else {
                free_slots.push(slot);
                break;
            };
            let rest = &w.job.buf[w.done..];
            let e = opcode::Write::new(types::Fd(fd), rest.as_ptr(), rest.len() as u32)
                .offset(w.job.x.start as u64 * BLOCK as u64 + w.done as u64)
                .build()
                .user_data(slot as u64);
            // SAFETY: the buffer is owned by `writing[slot]` until its completion is
            // reaped below (or leaked if the ring fails); its heap memory does not
            // move when the `Writing` does.
            if unsafe { ring.submission().push(&e) }.is_err() {
                free_slots.push(slot);
                waiting.push_front(w);
                break;
            }
            writing[slot] = Some(w);
        }
        let in_flight = DEPTH - free_slots.len();
        stats.max(Stat::DataPeak, in_flight as u64);
        if stopped && in_flight == 0 && waiting.is_empty() && syncing.is_none() {
            if unsynced.is_empty() {
                break;
            }
            continue;
        }
        wake.sleeping(true);
        let more = s
            .queue
            .lock()
            .map_or(true, |q| !q.jobs.is_empty() || q.stopped);
        let r = if more && !stopped {
            wake.sleeping(false);
            ring.submit()
        } else {
            ring.submit_and_wait(1)
        };
        wake.sleeping(false);
        if let Err(e) = r
            && e.raw_os_error() != Some(libc::EINTR)
            && e.raw_os_error() != Some(libc::EBUSY)
        {
            // The ring failed: write what is left one value at a time. The kernel
            // may still read the buffers of writes in flight: their bytes are
            // written again from copies, and the buffers leaked (at most DEPTH,
            // once), never reused.
            let mut left: Vec<Job> = syncing.take().unwrap_or_default();
            left.append(&mut unsynced);
            for w in writing.iter_mut().filter_map(Option::take) {
                let mut buf = AlignedBuf::default();
                buf.set_len(w.job.buf.len());
                buf.copy_from_slice(&w.job.buf);
                let Job { x, buf: old, then } = w.job;
                std::mem::forget(old);
                left.push(Job { x, buf, then });
            }
            left.extend(waiting.drain(..).map(|w| w.job));
            for job in left {
                write_blocking(&s.data, job);
            }
            stats.set(Stat::DataRing, 0);
            wake.abandon();
            return run_blocking(s);
        }
        let done: Vec<(u64, i32)> = ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        for (ud, res) in done {
            if ud == WAKE {
                armed = false;
                continue;
            }
            if ud == SYNC {
                let covered = syncing.take().unwrap_or_default();
                for job in covered {
                    let r = if res < 0 {
                        Err(failed("sync", std::io::Error::from_raw_os_error(-res)))
                    } else {
                        Ok(())
                    };
                    (job.then)(r);
                    recycle(s, job.buf);
                }
                continue;
            }
            let slot = ud as usize;
            let Some(mut w) = writing.get_mut(slot).and_then(Option::take) else {
                continue;
            };
            free_slots.push(slot);
            if res == -libc::EINTR || res == -libc::EAGAIN {
                waiting.push_front(w);
                continue;
            }
            if res <= 0 {
                let e = if res == 0 {
                    std::io::Error::new(std::io::ErrorKind::WriteZero, "a write wrote nothing")
                } else {
                    std::io::Error::from_raw_os_error(-res)
                };
                (w.job.then)(Err(failed("write", e)));
                continue;
            }
            w.done += res as usize;
            if w.done < w.job.buf.len() {
                waiting.push_front(w);
                continue;
            }
            stats.add(Stat::DataBytes, w.job.x.len as u64);
            stats.add(Stat::Writes, 1);
            if syncs {
                unsynced.push(w.job);
            } else {
                (w.job.then)(Ok(()));
                recycle(s, w.job.buf);
            }
        }
    }
    if armed {
        wake.disarm(&mut ring);
    }
}
