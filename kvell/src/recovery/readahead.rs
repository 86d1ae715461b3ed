//! Sequential reads of a whole file through the backend's asynchronous path, the
//! next piece in flight while one is parsed (recovery's scan of a slab).

use crate::io::{AlignedBuf, Backend, FileId, IoDone, IoKind, IoReq};
use std::collections::VecDeque;

/// Bytes per sequential recovery read.
pub(super) const CHUNK: usize = 2 << 20;

/// Pieces in flight at once. Deeper read-ahead (1 MiB x 4 and x 8 per worker, so that
/// the worker whose scan ends last keeps as much in flight alone as the device
/// probe's sequential read, 8 x 1 MiB) made no difference measurable on the
/// development VM's drifting disk (4M items of 1 KiB, alternating with the probe,
/// 2026-12-03), and 2 MiB x 4 put the reopen of kvell/tests/memory_budget.rs over its
/// budget.
const AHEAD: usize = 2;

/// Reads a file front to back in `chunk`-sized pieces through the backend's
/// asynchronous path, keeping the next piece in flight while one is parsed.
pub(super) struct ReadAhead {
    file: FileId,
    len: u64,
    chunk: u64,
    next_off: u64,
    pending: VecDeque<u64>,
    spare: Vec<AlignedBuf>,
    done: Vec<IoDone>,
}

impl ReadAhead {
    pub(super) fn new(file: FileId, len: u64, chunk: u64) -> ReadAhead {
        ReadAhead {
            file,
            len,
            chunk,
            next_off: 0,
            pending: VecDeque::new(),
            spare: Vec::new(),
            done: Vec::new(),
        }
    }

    /// The next piece (offset, bytes), or None at the end of the file.
    pub(super) fn next(
        &mut self,
        io: &mut dyn Backend,
    ) -> Result<Option<(u64, AlignedBuf)>, (u64, std::io::Error)> {
        while self.pending.len() < AHEAD && self.next_off < self.len {
            let n = self.chunk.min(self.len - self.next_off);
            // In 2 MiB pages: from 4 KiB pages a 2 MiB read is 512 segments, which
            // the block layer splits into three requests on a virtio disk (254 per
            // request). Measured against 4 KiB pages in alternating opens of 4M items
            // (scripts/kvell-recovery --rounds 4, 2026-12-05): opens 2.9-4.1 s
            // against 2.9-4.5, no gain the drifting disk let show; kept because each
            // read is then one request, as the probe's, at no cost in memory.
            let buf = match self.spare.pop() {
                Some(b) if b.len() as u64 == n => b,
                _ => AlignedBuf::huge(n as usize),
            };
            let req = IoReq {
                file: self.file,
                offset: self.next_off,
                kind: IoKind::Read,
                buf,
                tag: self.next_off,
            };
            if let Err(req) = io.push(req) {
                self.spare.push(req.buf);
                break;
            }
            self.pending.push_back(self.next_off);
            self.next_off += n;
        }
        let Some(&front) = self.pending.front() else {
            return Ok(None);
        };
        io.submit().map_err(|e| (front, e))?;
        loop {
            if let Some(pos) = self.done.iter().position(|d| d.tag == front) {
                let d = self.done.swap_remove(pos);
                self.pending.pop_front();
                d.result.map_err(|e| (front, e))?;
                return Ok(Some((front, d.buf)));
            }
            io.reap(true, &mut self.done).map_err(|e| (front, e))?;
        }
    }

    pub(super) fn recycle(&mut self, buf: AlignedBuf) {
        if buf.len() as u64 == self.chunk {
            self.spare.push(buf);
        }
    }
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        // An error left reads in flight: their buffers are owned by the backend,
        // which completes (uring: waits for) them before it is dropped.
        self.pending.clear();
    }
}
