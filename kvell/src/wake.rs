//! Waking a worker that sleeps in its ring when a request arrives for it.
//!
//! A worker with I/O in flight and nothing new to do sleeps in `io_uring_enter` until
//! a completion; a request sent to it meanwhile waited in its queue for that
//! completion (up to a device read's latency), though it could be a cache hit answered
//! at once. On YCSB C zipfian at 4M items (12% of gets read the disk) the two workers
//! used 1.3-1.45 of the 2 cores that way, and on YCSB A uniform at 64 in flight a
//! request waited behind whatever completion came next (the tail: results/kvell-4m/
//! measurements.md, "Reads by the location found, and workers woken by requests").
//! So a worker arms its [`Wake`] before it
//! sleeps (`Worker::run`), its ring watches an eventfd (`Backend::
//! wake_on`), and a sender that finds the worker armed writes the eventfd: the
//! sleep ends as a completion would end it. The eventfd is written only while the
//! worker is armed (one write per sleep at most), so a worker that stays awake costs
//! its senders one fence and one load per request.
//!
//! Ordering (no lost wake-up): the worker stores `armed`, fences, then looks at its
//! queue once more before it sleeps; a sender queues its message, fences, then loads
//! `armed`. With both fences sequentially consistent, either the worker sees the
//! message or the sender sees the flag.
#![expect(
    unsafe_code,
    reason = "creating the eventfd and writing to it; each use has its SAFETY note"
)]

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering, fence};

pub(crate) struct Wake {
    fd: OwnedFd,
    armed: AtomicBool,
}

impl Wake {
    pub(crate) fn new() -> io::Result<Wake> {
        // SAFETY: eventfd takes no pointers; a negative result is an error.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Wake {
            // SAFETY: a fresh descriptor that nothing else owns.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            armed: AtomicBool::new(false),
        })
    }

    /// The eventfd a worker's ring watches.
    pub(crate) fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// A sender, after queuing a message for the worker: wakes it if it is armed.
    pub(crate) fn notify(&self) {
        fence(Ordering::SeqCst);
        if self.armed.load(Ordering::Relaxed) && self.armed.swap(false, Ordering::Relaxed) {
            let one: u64 = 1;
            // SAFETY: writes 8 bytes from a local to a descriptor this struct owns.
            // A failure (EAGAIN: the counter is full, so the ring is woken anyway)
            // needs no handling.
            unsafe { libc::write(self.fd(), (&raw const one).cast(), 8) };
        }
    }

    /// The worker, before it sleeps in its ring: senders wake it from now on. It must
    /// look at its queue once more after this (see the module note).
    pub(crate) fn arm(&self) {
        self.armed.store(true, Ordering::Relaxed);
        fence(Ordering::SeqCst);
    }

    /// The worker is awake again (or did not sleep).
    pub(crate) fn disarm(&self) {
        self.armed.store(false, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counter(w: &Wake) -> Option<u64> {
        let mut v: u64 = 0;
        // SAFETY: reads 8 bytes into a local from a descriptor `w` owns.
        let n = unsafe { libc::read(w.fd(), (&raw mut v).cast(), 8) };
        (n == 8).then_some(v)
    }

    #[test]
    fn only_an_armed_worker_is_woken_and_only_once() {
        let w = Wake::new().expect("eventfd");
        w.notify();
        assert_eq!(counter(&w), None, "not armed: no write");
        w.arm();
        w.notify();
        w.notify();
        assert_eq!(counter(&w), Some(1), "armed: one write for both");
        w.arm();
        w.disarm();
        w.notify();
        assert_eq!(counter(&w), None, "disarmed: no write");
    }
}
