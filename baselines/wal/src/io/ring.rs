//! Many writes in flight through an io_uring: a checkpoint's meta pages (random
//! pages, one write each unless consecutive) go to the device up to [`DEPTH`] at
//! once instead of one after another. Written before, one at a time from one thread,
//! a checkpoint of a few thousand pages took most of a second, and writers waited
//! for it (YCSB A at 1M records and a third of the data in memory, 2026-12-03: the
//! slowest update took 0.9 s).
#![expect(
    unsafe_code,
    reason = "io_uring submissions hand the kernel borrowed buffers; SAFETY note at the push"
)]

use io_uring::{IoUring, opcode, types};
use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;

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
