//! Sequential reads of a whole file through the backend's asynchronous path, the
//! next piece in flight while one is parsed (recovery's scan of a slab).

use crate::io::{AlignedBuf, Backend, FileId, IoDone, IoKind, IoReq};
use std::collections::VecDeque;

/// Pieces in flight at once, each cut from one mapping in 2 MiB pages
/// (`AlignedBuf::huge_pieces`), so that each read is one request to the device.
/// Measured on the development VM (2026-12-05, 4M items of 1 KiB, an open scanning
/// 2 GiB per worker): the reads alone, without parsing, took 1.45-1.55 s, as fio's
/// 2 x 2 MiB per file; the scan with its parsing 1.98-2.06 s at 2 x 2 MiB, where a
/// piece's parse (0.4 ms) left its worker one read in flight. Smaller pieces, more of
/// them, keep the device fed while one is parsed: in four alternating pairs of opens
/// under the C-code configuration's budget 8 x 512 KiB scanned in 1.81-2.21 s where
/// 2 x 2 MiB took 2.21-2.90 s (fio, 2 MiB reads of both files between the pairs,
/// 1.53-1.61 s); with a 64 MiB cache, 1.62-3.14 s against 2.15-3.79 s in the same
/// rounds (the disk drifted by 2x between rounds). Twice the bytes in flight, eight
/// pieces of 1 MiB, scanned faster again: see [`piece_len`].
const AHEAD: usize = 8;

/// The length of a piece for a worker with `budget` bytes (None: no budget): 1 MiB
/// (8 MiB in flight) where that is at most 1/64 of the budget, else 512 KiB (4 MiB
/// in flight). On the AMD VM (2026-12-06, 4M items of 1 KiB under the C-code
/// configuration's budget, 682 MB per worker), opens of a data set loaded once and
/// reopened (results/kvell-4m-ab/read-ahead/explore/summary.md): eight reads of 512 KiB
/// scanned slowest in 7 of 8 rounds against eight of 1 MiB, sixteen of 512 KiB and
/// sixteen of 1 MiB (scan medians 2.20 s against 1.70, 1.76 and 1.74); sixteen gained
/// nothing over eight of 1 MiB. Opens right after a fresh load told the two builds
/// apart less (`scripts/kvell-recovery --rounds 12 --ycsb-b`,
/// results/kvell-4m-ab/read-ahead/summary.md: R median 0.72 against 0.60, but the old
/// build's open over the new one's 0.76-1.09 round by round, median 0.95). A small
/// budget keeps 4 MiB: 8 MiB put the reopen of kvell/tests/memory_budget.rs (a 24 MiB
/// budget) over it (2026-12-03).
pub(crate) fn piece_len(budget: Option<u64>) -> usize {
    const LARGE: usize = 1 << 20;
    match budget {
        Some(b) if b < 64 * (AHEAD * LARGE) as u64 => 512 << 10,
        _ => LARGE,
    }
}

/// The shape of recovery's sequential reads: `depth` reads of `piece` bytes in
/// flight per worker. By default [`piece_len`] and [`AHEAD`]; `kvell.recovery_read`
/// and `kvell.recovery_depth` set either (issue 18, item 4: the disk's best
/// sequential shape differs between hosts and hours, see DESIGN.md, Recovery).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reads {
    pub(crate) piece: usize,
    pub(crate) depth: usize,
}

impl Reads {
    /// The default shape for a worker with `budget` bytes (None: no budget).
    pub(crate) fn default_for(budget: Option<u64>) -> Reads {
        Reads {
            piece: piece_len(budget),
            depth: AHEAD,
        }
    }

    /// The bytes the reads hold in flight.
    pub(crate) fn in_flight(self) -> usize {
        self.depth * self.piece
    }

    /// Reads in flight at most for reads of `chunk` bytes (the piece, or a large
    /// class's slot if longer): the depth, fewer for a chunk over the piece, so that
    /// as many bytes are in flight as the shape's or two chunks, whichever is more.
    pub(crate) fn ahead(self, chunk: u64) -> usize {
        (self.in_flight() as u64 / chunk.max(1)).clamp(2, self.depth.max(2) as u64) as usize
    }

    /// The buffer bytes a [`ReadAhead`] of `chunk`-byte reads holds at most.
    pub(crate) fn held(self, chunk: u64) -> u64 {
        self.ahead(chunk) as u64 * chunk
    }
}

/// Reads a file front to back in `chunk`-sized pieces through the backend's
/// asynchronous path, keeping the next pieces in flight while one is parsed.
pub(super) struct ReadAhead {
    file: FileId,
    len: u64,
    chunk: u64,
    /// Reads in flight at most: the shape's depth, fewer for chunks over the piece (a
    /// large class's slot), so that as many bytes are in flight as the shape's or two
    /// slots, whichever is more.
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
    /// `chunk`: the bytes of each read (the shape's piece, or a large class's slot if
    /// longer).
    pub(super) fn new(file: FileId, len: u64, chunk: u64, shape: Reads) -> ReadAhead {
        let ahead = shape.ahead(chunk);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Pieces of 1 MiB where eight of them are at most 1/64 of the worker's budget
    /// (or there is none), else 512 KiB; the bytes in flight follow.
    #[test]
    fn the_piece_follows_the_budget() {
        assert_eq!(piece_len(None), 1 << 20);
        assert_eq!(piece_len(Some(682_666_666)), 1 << 20); // the C-code configuration
        assert_eq!(piece_len(Some(512 << 20)), 1 << 20);
        assert_eq!(piece_len(Some((512 << 20) - 1)), 512 << 10);
        assert_eq!(piece_len(Some(24 << 20)), 512 << 10);
        assert_eq!(Reads::default_for(None).in_flight(), 8 << 20);
        assert_eq!(Reads::default_for(Some(24 << 20)).in_flight(), 4 << 20);
    }

    /// A backend that counts what is asked of it.
    struct Counting {
        inner: crate::io::sim::Sim,
        in_flight: usize,
        most: usize,
        sizes: Vec<usize>,
    }

    impl Backend for Counting {
        fn open(&mut self, path: &std::path::Path) -> std::io::Result<FileId> {
            self.inner.open(path)
        }
        fn len(&self, file: FileId) -> std::io::Result<u64> {
            self.inner.len(file)
        }
        fn set_len(&mut self, file: FileId, len: u64) -> std::io::Result<()> {
            self.inner.set_len(file, len)
        }
        fn read(&mut self, file: FileId, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
            self.inner.read(file, offset, buf)
        }
        fn write(&mut self, file: FileId, offset: u64, buf: &[u8]) -> std::io::Result<()> {
            self.inner.write(file, offset, buf)
        }
        fn sync(&mut self, file: FileId) -> std::io::Result<()> {
            self.inner.sync(file)
        }
        fn sync_dir(&mut self, dir: &std::path::Path) -> std::io::Result<()> {
            self.inner.sync_dir(dir)
        }
        fn push(&mut self, req: IoReq) -> Result<(), IoReq> {
            let n = req.buf.len();
            self.inner.push(req)?;
            self.sizes.push(n);
            self.in_flight += 1;
            self.most = self.most.max(self.in_flight);
            Ok(())
        }
        fn submit(&mut self) -> std::io::Result<()> {
            self.inner.submit()
        }
        fn reap(&mut self, wait: bool, out: &mut Vec<IoDone>) -> std::io::Result<()> {
            let before = out.len();
            self.inner.reap(wait, out)?;
            self.in_flight -= out.len() - before;
            Ok(())
        }
        fn name(&self) -> String {
            "counting".into()
        }
    }

    /// The shape given is the shape read: every read of the piece's length (the last
    /// one what is left), never more in flight than the depth, every byte once and in
    /// order; and with a chunk over the piece (a large class's slot), two in flight.
    #[test]
    fn reads_in_the_shape_given() {
        let dir = std::path::Path::new("/sim");
        let mut io = Counting {
            inner: crate::io::sim::Sim::new(
                crate::io::sim::SimDisk::new(),
                crate::io::IoFlags {
                    direct: true,
                    dsync: false,
                },
            ),
            in_flight: 0,
            most: 0,
            sizes: Vec::new(),
        };
        let f = io.open(&dir.join("f")).unwrap();
        let len: u64 = 100 * 4096;
        io.set_len(f, len).unwrap();
        let bytes: Vec<u8> = (0..len).map(|i| (i / 4096) as u8).collect();
        io.write(f, 0, &bytes).unwrap();
        let shape = Reads {
            piece: 3 * 4096,
            depth: 5,
        };
        let mut ra = ReadAhead::new(f, len, shape.piece as u64, shape);
        let mut seen = Vec::new();
        while let Some((off, buf)) = ra.next(&mut io).unwrap() {
            assert_eq!(off, seen.len() as u64);
            seen.extend_from_slice(&buf);
            ra.recycle(&mut io, buf).unwrap();
        }
        assert!(seen == bytes, "the bytes read are not the file's");
        assert_eq!(io.most, 5);
        assert_eq!(io.sizes.len(), 34);
        assert!(
            io.sizes[..33].iter().all(|&n| n == 3 * 4096),
            "{:?}",
            io.sizes
        );
        assert_eq!(io.sizes[33], 4096);
        // a chunk of 16 pieces: two reads in flight, as `held` counts
        assert_eq!(shape.ahead(16 * 3 * 4096), 2);
        assert_eq!(shape.held(16 * 3 * 4096), 2 * 16 * 3 * 4096);
        assert_eq!(shape.held(shape.piece as u64), shape.in_flight() as u64);
    }
}
