//! Sequential reads of a whole file through the backend's asynchronous path, the
//! next piece in flight while one is parsed (recovery's scan of a slab).

use crate::io::{AlignedBuf, Backend, FileId, IoDone, IoKind, IoReq};
use std::collections::VecDeque;

/// Bytes per sequential recovery read.
pub(super) const CHUNK: usize = 512 << 10;

/// Pieces in flight at once: 4 MiB per worker, cut from one mapping in 2 MiB pages
/// (`AlignedBuf::huge_pieces`), so that each read is one request to the device.
/// Measured on the development VM (2026-12-05, 4M items of 1 KiB, an open scanning
/// 2 GiB per worker): the reads alone, without parsing, took 1.45-1.55 s, as fio's
/// 2 x 2 MiB per file; the scan with its parsing 1.98-2.06 s at 2 x 2 MiB, where a
/// piece's parse (0.4 ms) left its worker one read in flight. Smaller pieces, more of
/// them, keep the device fed while one is parsed: in four alternating pairs of opens
/// under the C-code configuration's budget 8 x 512 KiB scanned in 1.81-2.21 s where
/// 2 x 2 MiB took 2.21-2.90 s (fio, 2 MiB reads of both files between the pairs,
/// 1.53-1.61 s); with a 64 MiB cache, 1.62-3.14 s against 2.15-3.79 s in the same
/// rounds (the disk drifted by 2x between rounds). 2 MiB x 4 put the reopen of
/// kvell/tests/memory_budget.rs over its budget (2026-12-03); this holds what 2 x 2 MiB
/// held.
const AHEAD: usize = 8;

/// Reads a file front to back in `chunk`-sized pieces through the backend's
/// asynchronous path, keeping the next pieces in flight while one is parsed.
pub(super) struct ReadAhead {
    file: FileId,
    len: u64,
    chunk: u64,
    /// Reads in flight at most: [`AHEAD`], fewer for chunks over [`CHUNK`] (a large
    /// class's slot), so that as many bytes are in flight as two of 2 MiB or two
    /// slots held before, whichever is more.
    ahead: usize,
    next_off: u64,
    pending: VecDeque<u64>,
    /// The buffers not in flight nor with the caller: cut at the first read, one per
    /// read that can be in flight, from one mapping in 2 MiB pages
    /// (`AlignedBuf::huge_pieces`: from 4 KiB pages a read of 1 MiB or more is over the
    /// 254 segments a virtio disk takes in one request, and split), each as long as a
    /// chunk or the whole file if shorter.
    spare: Vec<AlignedBuf>,
    done: Vec<IoDone>,
}

impl ReadAhead {
    pub(super) fn new(file: FileId, len: u64, chunk: u64) -> ReadAhead {
        let ahead = ((AHEAD * CHUNK) as u64 / chunk.max(1)).clamp(2, AHEAD as u64) as usize;
        ReadAhead {
            file,
            len,
            chunk,
            ahead,
            next_off: 0,
            pending: VecDeque::new(),
            spare: Vec::new(),
            done: Vec::new(),
        }
    }

    /// Puts a read in flight for every spare buffer (up to [`ReadAhead::ahead`]) and
    /// submits them.
    fn refill(&mut self, io: &mut dyn Backend) -> Result<(), (u64, std::io::Error)> {
        if self.next_off == 0 && self.spare.is_empty() && self.len > 0 {
            let reads = self.len.div_ceil(self.chunk).min(self.ahead as u64) as usize;
            self.spare = AlignedBuf::huge_pieces(reads, self.chunk.min(self.len) as usize);
        }
        let mut pushed = false;
        while self.pending.len() < self.ahead && self.next_off < self.len {
            let Some(mut buf) = self.spare.pop() else {
                break;
            };
            let n = self.chunk.min(self.len - self.next_off);
            buf.set_len(n as usize);
            let req = IoReq {
                file: self.file,
                offset: self.next_off,
                kind: IoKind::Read,
                buf,
                tag: self.next_off,
                issued: std::time::Instant::now(),
            };
            if let Err(req) = io.push(req) {
                self.spare.push(req.buf);
                break;
            }
            self.pending.push_back(self.next_off);
            self.next_off += n;
            pushed = true;
        }
        if pushed && let Some(&front) = self.pending.front() {
            io.submit().map_err(|e| (front, e))?;
        }
        Ok(())
    }

    /// The next piece (offset, bytes), or None at the end of the file.
    pub(super) fn next(
        &mut self,
        io: &mut dyn Backend,
    ) -> Result<Option<(u64, AlignedBuf)>, (u64, std::io::Error)> {
        // The first call starts the reads; later ones find them started by `recycle`
        // (a caller that keeps a piece leaves its buffer out of them).
        self.refill(io)?;
        let Some(&front) = self.pending.front() else {
            return Ok(None);
        };
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

    /// Gives back a piece [`ReadAhead::next`] returned and puts it in flight again
    /// at once: the caller then does work that takes a while (a run's sort) with as
    /// many reads in flight as before.
    pub(super) fn recycle(
        &mut self,
        io: &mut dyn Backend,
        buf: AlignedBuf,
    ) -> Result<(), (u64, std::io::Error)> {
        self.spare.push(buf);
        self.refill(io)
    }
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        // An error left reads in flight: their buffers are owned by the backend,
        // which completes (uring: waits for) them before it is dropped.
        self.pending.clear();
    }
}
