//! The miss loader of the native asynchronous path: reads the meta pages that a get,
//! a scan or a write needs and that are not resident, up to [`DEPTH`] at once, so
//! that a request whose page was evicted does not stop the thread that submits the
//! others (before, `submit` read the page itself: one read at a time for the whole
//! engine, 8.4K ops/s on YCSB A uniform at a third of the data in memory).
//!
//! One thread, one io_uring over the meta file (as KVell's workers do): requests are
//! queued by `submit` ([`Loads::load`]), the thread hands their reads to the kernel
//! in one system call per batch, and each completion installs its page (with the
//! checks of `Store::fetch`: the CRC, a checkpoint's write overlapping the read) and,
//! once every page of a request is in, runs the request's continuation on this
//! thread: the get's reply, the scan's records, the write's `Writer::begin`. A new
//! request wakes the thread through an eventfd the ring always has a read on, so
//! the thread waits on one thing, its ring. Requests are served in the order they
//! came; a request's pages are read before the next request's, so the buffers held
//! stay near [`DEPTH`] pages.
//!
//! A file without a descriptor (the simulated file system of the tests) or a kernel
//! that refuses io_uring gets the same thread reading one page at a time with
//! `Store::fetch`: the same continuations, in the same order.
#![expect(
    unsafe_code,
    reason = "io_uring submissions hand the kernel buffers and the eventfd calls are libc; SAFETY notes at each"
)]

use crate::format::BLOCK;
use crate::image::{Miss, unseal};
use crate::io::ring::{WAKE, Wake};
use crate::stats::Stat;
use crate::store::{PageRead, Store};
use io_uring::{IoUring, opcode, types};
use kvapi::{Error, Result};
use std::collections::VecDeque;
use std::os::fd::RawFd;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

/// Page reads in flight at most: the driver keeps 64 requests in flight, and a
/// request needs at most two pages (a write: its record's page and a slot's), a scan
/// more, read in turn.
pub const DEPTH: usize = 64;

/// What to do once a request's pages are read: each page's bytes, or `None` where
/// they cannot be used (the page changed while it was read: look again); an error
/// (a failed read, a page failing its CRC) for the whole request.
pub type Then = Box<dyn for<'a> FnOnce(&'a Store, Result<Vec<Option<PageRead<'a>>>>) + Send>;

struct Job {
    pages: Vec<Miss>,
    then: Then,
}

struct Queue {
    jobs: Vec<Job>,
    /// The loader is stopping: new requests are read by their caller.
    stopped: bool,
}

struct Shared {
    queue: Mutex<Queue>,
    /// The eventfd (ring mode); `None`: the loader waits on `cv`.
    wake: Option<Wake>,
    cv: Condvar,
}

/// Where requests are queued for the loader; cloned into continuations that queue
/// again (a page that changed while it was read).
#[derive(Clone)]
pub struct Loads {
    shared: Arc<Shared>,
    store: Arc<Store>,
}

impl Loads {
    /// Reads `pages` (not resident when the caller looked) and then runs `then`, on
    /// the loader's thread; at once, on the caller's, when there is nothing to read,
    /// and with blocking reads when the loader has stopped.
    pub fn load(&self, pages: Vec<Miss>, then: Then) {
        if pages.is_empty() {
            return then(&self.store, Ok(Vec::new()));
        }
        let job = Job { pages, then };
        let job = match self.shared.queue.lock() {
            Ok(mut q) if !q.stopped => {
                q.jobs.push(job);
                None
            }
            _ => Some(job),
        };
        match job {
            Some(job) => read_blocking(&self.store, job),
            None => self.wake(),
        }
    }

    /// Runs `then` on the loader's thread (with no pages), after what is queued
    /// before it; on the caller's when the loader has stopped. For work that may
    /// wait on the engine and must not run on the thread that asks (the data
    /// writer's: a write waiting for log space would stop the data writes the
    /// checkpoint it waits for needs).
    pub fn defer(&self, then: Then) {
        let job = Job {
            pages: Vec::new(),
            then,
        };
        let job = match self.shared.queue.lock() {
            Ok(mut q) if !q.stopped => {
                q.jobs.push(job);
                None
            }
            _ => Some(job),
        };
        match job {
            Some(job) => (job.then)(&self.store, Ok(Vec::new())),
            None => self.wake(),
        }
    }

    fn wake(&self) {
        match &self.shared.wake {
            Some(w) => w.kick(),
            None => self.shared.cv.notify_one(),
        }
    }
}

/// The loader's thread; stopped and joined when dropped, after every request queued
/// has run.
pub struct Loader {
    loads: Loads,
    thread: Option<JoinHandle<()>>,
}

impl Loader {
    /// Starts the loader over `store`'s meta file: with an io_uring when the file
    /// has a descriptor and the kernel gives a ring, else reading one page at a time.
    pub fn start(store: Arc<Store>) -> std::io::Result<Loader> {
        let fd = store.backing().and_then(|b| b.file.raw_fd());
        let ring = fd.and_then(|fd| {
            let ring = IoUring::new((2 * DEPTH) as u32).ok()?;
            let wake = Wake::new()?;
            Some((ring, fd, wake))
        });
        let (ring, wake) = match ring {
            Some((r, fd, w)) => (Some((r, fd)), Some(w)),
            None => (None, None),
        };
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                jobs: Vec::new(),
                stopped: false,
            }),
            wake,
            cv: Condvar::new(),
        });
        let loads = Loads { shared, store };
        let l = loads.clone();
        let thread = std::thread::Builder::new()
            .name("wal-loader".into())
            .spawn(move || match ring {
                Some((ring, fd)) => run_ring(&l, ring, fd),
                None => run_blocking(&l),
            })?;
        Ok(Loader {
            loads,
            thread: Some(thread),
        })
    }

    pub fn loads(&self) -> &Loads {
        &self.loads
    }
}

impl Drop for Loader {
    fn drop(&mut self) {
        let s = &self.loads.shared;
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

/// Reads `job`'s pages one at a time on this thread, then runs it.
fn read_blocking(store: &Store, job: Job) {
    let mut pages = Vec::with_capacity(job.pages.len());
    store.stats().max(Stat::LoaderPeak, 1);
    for &m in &job.pages {
        store.stats().add(Stat::LoaderReads, 1);
        match store.fetch(m) {
            Ok(p) => pages.push(p),
            Err(e) => return (job.then)(store, Err(e)),
        }
    }
    (job.then)(store, Ok(pages))
}

/// The loader without a ring: each request's pages read in turn.
fn run_blocking(l: &Loads) {
    loop {
        let jobs = {
            let Ok(mut q) = l.shared.queue.lock() else {
                return;
            };
            while q.jobs.is_empty() && !q.stopped {
                q = match l.shared.cv.wait(q) {
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
            read_blocking(&l.store, job);
        }
    }
}

/// A request whose pages are being read.
struct Active<'a> {
    then: Option<Then>,
    pages: Vec<Option<PageRead<'a>>>,
    left: usize,
    err: Option<Error>,
}

/// A read in flight: its request, the page's place in it, the page, its buffer.
struct Reading<'a> {
    job: usize,
    at: usize,
    miss: Miss,
    buf: PageRead<'a>,
}

/// The loader with a ring (see the module's note).
fn run_ring(l: &Loads, mut ring: IoUring, fd: RawFd) {
    let store: &Store = &l.store;
    let Some(wake) = l.shared.wake.as_ref() else {
        return run_blocking(l);
    };
    store.stats().set(Stat::LoaderRing, 1);
    let mut active: Vec<Option<Active<'_>>> = Vec::new();
    let mut free_jobs: Vec<usize> = Vec::new();
    let mut reading: Vec<Option<Reading<'_>>> = (0..DEPTH).map(|_| None).collect();
    let mut free_slots: Vec<usize> = (0..DEPTH).rev().collect();
    let mut waiting: VecDeque<(usize, usize, Miss)> = VecDeque::new();
    let mut armed = false;
    loop {
        if !armed {
            armed = wake.arm(&mut ring);
        }
        // New requests: their pages join the reads waiting for a slot.
        let (jobs, stopped) = match l.shared.queue.lock() {
            Ok(mut q) => (std::mem::take(&mut q.jobs), q.stopped),
            Err(_) => (Vec::new(), true),
        };
        for job in jobs {
            if job.pages.is_empty() {
                // deferred work (`Loads::defer`): nothing to read
                (job.then)(store, Ok(Vec::new()));
                continue;
            }
            let id = free_jobs.pop().unwrap_or_else(|| {
                active.push(None);
                active.len() - 1
            });
            waiting.extend(job.pages.iter().enumerate().map(|(i, &m)| (id, i, m)));
            active[id] = Some(Active {
                then: Some(job.then),
                pages: job.pages.iter().map(|_| None).collect(),
                left: job.pages.len(),
                err: None,
            });
        }
        while let Some(slot) = free_slots.pop() {
            let Some((job, at, miss)) = waiting.pop_front() else {
                free_slots.push(slot);
                break;
            };
            let mut buf = match store.page_buf() {
                Ok(b) => b,
                Err(e) => {
                    free_slots.push(slot);
                    finish_one(store, &mut active, &mut free_jobs, job, at, Err(e));
                    continue;
                }
            };
            let e = opcode::Read::new(types::Fd(fd), buf.as_mut_ptr(), BLOCK as u32)
                .offset(miss.page as u64 * BLOCK as u64)
                .build()
                .user_data(slot as u64);
            // SAFETY: the buffer is owned by `reading[slot]` until its completion is
            // reaped below (or the ring is dropped, after every read is reaped); the
            // heap memory behind it does not move when the `PageRead` does.
            if unsafe { ring.submission().push(&e) }.is_err() {
                free_slots.push(slot);
                waiting.push_front((job, at, miss));
                break;
            }
            reading[slot] = Some(Reading { job, at, miss, buf });
        }
        let in_flight = DEPTH - free_slots.len();
        store.stats().max(Stat::LoaderPeak, in_flight as u64);
        if stopped && in_flight == 0 && waiting.is_empty() {
            break;
        }
        // Wait for a completion; the eventfd's read completes when a request comes.
        wake.sleeping(true);
        let more = l
            .shared
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
            // The ring failed: read what is left one page at a time.
            // the kernel may still write the buffers of reads in flight: they are
            // leaked (at most DEPTH pages, once), never reused
            for r in reading.iter_mut().filter_map(Option::take) {
                waiting.push_front((r.job, r.at, r.miss));
                std::mem::forget(r.buf);
            }
            while let Some((job, at, miss)) = waiting.pop_front() {
                let p = store.fetch(miss);
                finish_one(store, &mut active, &mut free_jobs, job, at, p);
            }
            store.stats().set(Stat::LoaderRing, 0);
            // and the eventfd's read may still be armed: its counter is leaked too
            wake.abandon();
            return run_blocking(l);
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
            let slot = ud as usize;
            let Some(mut r) = reading.get_mut(slot).and_then(Option::take) else {
                continue;
            };
            free_slots.push(slot);
            if res == -libc::EINTR || res == -libc::EAGAIN {
                waiting.push_front((r.job, r.at, r.miss));
                continue;
            }
            store.stats().add(Stat::LoaderReads, 1);
            let page = if res < 0 {
                Err(Error::io(
                    format!("reading meta page {}", r.miss.page),
                    std::io::Error::from_raw_os_error(-res),
                ))
            } else {
                // past the end of the file the page reads as zero (as `read_at`)
                r.buf[res as usize..].fill(0);
                let ok = unseal(&mut r.buf, r.miss.page as usize);
                store.loaded(r.miss, r.buf, ok)
            };
            finish_one(store, &mut active, &mut free_jobs, r.job, r.at, page);
        }
    }
    // Every page read is reaped. The eventfd's read may still be armed: complete it
    // before the ring goes.
    if armed {
        wake.disarm(&mut ring);
    }
}

/// One page of request `job` is in (or failed): when it was the last, the request
/// runs.
fn finish_one<'a>(
    store: &'a Store,
    active: &mut [Option<Active<'a>>],
    free_jobs: &mut Vec<usize>,
    job: usize,
    at: usize,
    page: Result<Option<PageRead<'a>>>,
) {
    let Some(a) = active.get_mut(job).and_then(Option::as_mut) else {
        return;
    };
    match page {
        Ok(p) => a.pages[at] = p,
        Err(e) => {
            a.err.get_or_insert(e);
        }
    }
    a.left -= 1;
    if a.left > 0 {
        return;
    }
    let Some(mut a) = active[job].take() else {
        return;
    };
    free_jobs.push(job);
    if let Some(then) = a.then.take() {
        match a.err {
            Some(e) => then(store, Err(e)),
            None => then(store, Ok(a.pages)),
        }
    }
}
