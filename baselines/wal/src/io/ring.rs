//! Many writes in flight through an io_uring: a checkpoint's meta pages (random
//! pages, one write each unless consecutive) go to the device up to [`DEPTH`] at
//! once instead of one after another. Written before, one at a time from one thread,
//! a checkpoint of a few thousand pages took most of a second, and writers waited
//! for it (YCSB A at 1M records and a third of the data in memory, 2026-12-03: the
//! slowest update took 0.9 s). And [`Wake`]: how a thread that waits in its ring
//! (the miss loader, the committer) is woken for new work.
#![expect(
    unsafe_code,
    reason = "io_uring submissions hand the kernel borrowed buffers, and the eventfd calls are libc; SAFETY notes at each"
)]

use io_uring::{IoUring, opcode, types};
use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Writes in flight at most.
pub const DEPTH: usize = 64;

/// A ring for [`write_all`], or `None` where the kernel gives none.
pub fn ring() -> Option<IoUring> {
    IoUring::new(DEPTH as u32).ok()
}

/// Writes each `(bytes, offset)` of `runs` whole to `fd` (a short write is continued),
/// up to [`DEPTH`] at once. Every write submitted is reaped before this returns, also
/// after an error (the first is returned), so the kernel is done with the buffers.
pub fn write_all(ring: &mut IoUring, fd: RawFd, runs: &[(&[u8], u64)]) -> io::Result<()> {
    // (run, bytes of it written) of the writes to submit, and of those in flight
    let mut todo: VecDeque<(usize, usize)> = (0..runs.len()).map(|i| (i, 0)).collect();
    let mut slots: Vec<Option<(usize, usize)>> = vec![None; DEPTH];
    let mut free: Vec<usize> = (0..DEPTH).rev().collect();
    let mut err: Option<io::Error> = None;
    loop {
        while err.is_none() {
            let Some(slot) = free.pop() else { break };
            let Some((i, done)) = todo.pop_front() else {
                free.push(slot);
                break;
            };
            let (b, off) = runs[i];
            let rest = &b[done..];
            let e = opcode::Write::new(types::Fd(fd), rest.as_ptr(), rest.len() as u32)
                .offset(off + done as u64)
                .build()
                .user_data(slot as u64);
            // SAFETY: `rest` borrows from `runs`, which outlives this call, and every
            // write submitted is reaped before it returns.
            if unsafe { ring.submission().push(&e) }.is_err() {
                free.push(slot);
                todo.push_front((i, done));
                break;
            }
            slots[slot] = Some((i, done));
        }
        if free.len() == DEPTH {
            return err.map_or(Ok(()), Err);
        }
        match ring.submit_and_wait(1) {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
            Err(e) => {
                // the ring itself failed: wait for what is in flight, then give up
                err.get_or_insert(e);
                if ring.submit_and_wait(DEPTH - free.len()).is_err() {
                    return Err(err.unwrap_or_else(|| io::Error::other("io_uring failed")));
                }
            }
        }
        let done: Vec<(u64, i32)> = ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        for (ud, res) in done {
            let Some((i, done)) = slots.get_mut(ud as usize).and_then(Option::take) else {
                continue;
            };
            free.push(ud as usize);
            let len = runs[i].0.len();
            if res == -libc::EINTR || res == -libc::EAGAIN {
                todo.push_front((i, done));
            } else if res < 0 {
                err.get_or_insert(io::Error::from_raw_os_error(-res));
            } else if res == 0 {
                err.get_or_insert(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "a write wrote nothing",
                ));
            } else if done + (res as usize) < len {
                todo.push_front((i, done + res as usize));
            }
        }
    }
}

/// The user data of a [`Wake`]'s read in a ring.
pub const WAKE: u64 = u64::MAX;

/// How a thread that waits in its io_uring is woken for new work: an eventfd the
/// ring always has a read on ([`Wake::arm`]), written by whoever queues work while
/// the thread sleeps (the miss loader's requests, the committer's transactions).
pub struct Wake {
    fd: OwnedFd,
    /// The thread is about to wait in its ring: new work must write the eventfd.
    sleeping: AtomicBool,
    /// Where the armed read puts the counter (boxed: it must not move while the
    /// kernel may write it).
    counter: Mutex<Box<u64>>,
}

impl Wake {
    /// A new eventfd (close-on-exec), or `None`.
    pub fn new() -> Option<Wake> {
        // SAFETY: eventfd takes no pointers; a non-negative result is a new
        // descriptor that we own.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        // SAFETY: as above, the descriptor is ours alone.
        let fd = (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })?;
        Some(Wake {
            fd,
            sleeping: AtomicBool::new(false),
            counter: Mutex::new(Box::new(0)),
        })
    }

    /// Wakes the thread if it sleeps in its ring.
    pub fn kick(&self) {
        if self.sleeping.swap(false, Ordering::SeqCst) {
            self.write();
        }
    }

    /// Adds one to the eventfd's counter (completes the armed read).
    pub fn write(&self) {
        let one = 1u64;
        // SAFETY: writes 8 bytes from a live u64; a failure (the counter full) leaves
        // a wake-up pending anyway.
        unsafe {
            libc::write(self.fd.as_raw_fd(), (&one as *const u64).cast(), 8);
        }
    }

    /// The thread is about to wait (`true`) or is awake (`false`). Set it before
    /// the last look for work: work queued after that look writes the eventfd.
    pub fn sleeping(&self, on: bool) {
        self.sleeping.store(on, Ordering::SeqCst);
    }

    /// Puts the eventfd's read in `ring` (user data [`WAKE`]); `false` when the
    /// submission queue is full (try again after the next submit).
    pub fn arm(&self, ring: &mut IoUring) -> bool {
        let Ok(mut c) = self.counter.lock() else {
            return false;
        };
        let p: *mut u64 = &mut **c;
        let e = opcode::Read::new(types::Fd(self.fd.as_raw_fd()), p.cast::<u8>(), 8)
            .build()
            .user_data(WAKE);
        // SAFETY: the counter is boxed (it does not move) and lives as long as this
        // `Wake`; whoever arms it calls `disarm` before the ring or this goes.
        unsafe { ring.submission().push(&e) }.is_ok()
    }

    /// Completes the armed read in `ring` (the kernel is then done with the
    /// counter); completions other than the read's are dropped.
    pub fn disarm(&self, ring: &mut IoUring) {
        self.write();
        loop {
            if ring.submit_and_wait(1).is_err() {
                return self.abandon();
            }
            if ring.completion().any(|c| c.user_data() == WAKE) {
                return;
            }
        }
    }

    /// Leaks the counter an armed read may still write (the ring failed and cannot
    /// be waited on); a fresh one serves the next `arm`.
    pub fn abandon(&self) {
        if let Ok(mut c) = self.counter.lock() {
            std::mem::forget(std::mem::replace(&mut *c, Box::new(0)));
        }
    }
}
