//! io_uring backend: a ring per worker; reads and writes are pushed to the
//! submission queue and handed to the kernel in one `io_uring_enter` per batch.
//! Completions are reaped as they come (never "wait for the whole batch").
#![expect(
    unsafe_code,
    reason = "pushing a submission entry hands the kernel a buffer; SAFETY note at the push"
)]

use super::files::Files;
use super::{Backend, FileId, IoDone, IoFlags, IoKind, IoReq};
use io_uring::{IoUring, opcode, types};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::path::Path;

pub struct Uring {
    ring: IoUring,
    files: Files,
    /// In-flight requests by user_data; owns their buffers until completion.
    inflight: Vec<Option<IoReq>>,
    free_slots: Vec<usize>,
    count: usize,
    /// The eventfd that ends a wait (`Backend::wake_on`), and whether a poll of it is
    /// in the ring now.
    wake: Option<RawFd>,
    polling: bool,
}

/// The `user_data` of the eventfd's poll (I/O slots count up from 0).
const WAKE_TAG: u64 = u64::MAX;

impl Uring {
    pub fn new(flags: IoFlags, entries: u32) -> io::Result<Uring> {
        let entries = entries.clamp(1, 4096).next_power_of_two();
        Ok(Uring {
            ring: IoUring::new(entries)?,
            files: Files::new(flags),
            inflight: Vec::new(),
            free_slots: Vec::new(),
            count: 0,
            wake: None,
            polling: false,
        })
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
            });
        }
    }
}

impl Backend for Uring {
    fn open(&mut self, path: &Path) -> io::Result<FileId> {
        self.files.open(path)
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
        let fd = types::Fd(self.files.get(req.file).as_raw_fd());
        let len = req.buf.len() as u32;
        let slot = self.free_slots.pop().unwrap_or_else(|| {
            self.inflight.push(None);
            self.inflight.len() - 1
        });
        let entry = match req.kind {
            IoKind::Read => opcode::Read::new(fd, req.buf.as_mut_ptr(), len)
                .offset(req.offset)
                .build(),
            IoKind::Write => {
                let flags = if self.files.flags.dsync {
                    libc::RWF_DSYNC
                } else {
                    0
                };
                opcode::Write::new(fd, req.buf.as_ptr(), len)
                    .offset(req.offset)
                    .rw_flags(flags as _)
                    .build()
            }
        }
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
    fn name(&self) -> &'static str {
        "io_uring"
    }
    fn wake_on(&mut self, fd: RawFd) -> bool {
        self.wake = Some(fd);
        true
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
    }
}
