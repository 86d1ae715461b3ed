//! The committer thread: takes the queued transactions as one batch, packed into
//! whole blocks (`Log::take_batch`), issues its writes (two when it wraps past the
//! end of the log) and goes on taking batches while earlier ones are in flight, up
//! to `wal.log_depth` batches (4 by default); in `fdatasync` mode one sync at a time covers the batches
//! written before it was issued (group commit of syncs). The log is written up to
//! the longest run of finished batches from the oldest ([`pipeline`]); the
//! completions of asynchronous writes this makes ready run here, on this thread,
//! without a hop to another. Several batches in flight are safe because each starts
//! a block no other batch writes, and because a transaction's stamp
//! (`complete_back`) never names a batch complete before its sync completed: a crash
//! may leave a later batch without an earlier one, and replay then drops the later
//! one, counted, as never acknowledged.
//!
//! With an io_uring over the WAL file ([`device::RingIo`]) the committer waits in
//! its ring, for completions or for new transactions (an eventfd writers write while
//! it sleeps); without one ([`device::SeamIo`]), it waits on the log's condition
//! variable while nothing is in flight.

mod device;
mod pipeline;

use crate::files::WalFile;
use crate::format::{BLOCK, UNITS_PER_BLOCK};
use crate::io::aligned::AlignedBuf;
use crate::log::{Log, Take};
use crate::stats::Stat;
use device::{LogIo, RingIo, SYNC, SeamIo};
use kvapi::Reply;
use pipeline::Pipeline;

/// A batch buffer larger than this is freed after its batch, not kept.
const KEEP_BUF: usize = 1 << 20;

/// Runs until the log stops or the engine is poisoned. A failed write or sync
/// poisons the engine; the committer then waits for what it has in flight and ends.
/// `uring`: write through an io_uring where the file has a descriptor; `depth`:
/// batches in flight at most (`wal.log_depth`).
pub fn committer(log: &Log, wal: &WalFile, uring: bool, depth: usize) {
    let ring = uring
        .then(|| wal.raw_fd())
        .flatten()
        .and_then(|fd| RingIo::new(fd, (2 * depth + 2) as u32));
    wal.stats().set(Stat::LogRing, ring.is_some() as u64);
    match ring {
        Some(r) => {
            log.set_ring_wake(r.wake());
            run(log, wal, r, depth);
        }
        None => run(log, wal, SeamIo::new(wal.storage()), depth),
    }
}

fn run(log: &Log, wal: &WalFile, mut io: impl LogIo, depth: usize) {
    let mut p: Pipeline<AlignedBuf> = Pipeline::new(wal.syncs());
    let mut pool: Vec<AlignedBuf> = Vec::new();
    // operations issued and not reaped: the committer ends only when none is left
    let mut outstanding = 0usize;
    let mut stopping = false;
    let mut failed = false;
    let mut reaped = Vec::new();
    let fail = |e: std::io::Error, failed: &mut bool| {
        if !*failed {
            log.write_failed(format!("WAL write failed: {e}"));
        }
        *failed = true;
    };
    loop {
        // the batches written so far are synced before the committer may wait for
        // new transactions
        if !failed && p.wants_sync() {
            match io.sync() {
                Ok(()) => {
                    p.sync_issued();
                    outstanding += 1;
                }
                Err(e) => fail(e, &mut failed),
            }
        }
        while !stopping && !failed && p.len() < depth && p.may_take() {
            let mut buf = pool.pop().unwrap_or_default();
            match log.take_batch(outstanding == 0, &mut buf) {
                Ok(Take::Batch(start)) => {
                    let len = buf.len();
                    let pieces = wal.pieces(start, len);
                    let end = start + (len / BLOCK) as u64 * UNITS_PER_BLOCK;
                    let id = p.push(end, pieces.len() as u8, buf);
                    wal.count_batch(len, pieces.len());
                    wal.stats().max(Stat::LogPeak, p.len() as u64);
                    for (k, (range, off)) in pieces.into_iter().enumerate() {
                        let Some(b) = p.buf(id) else { break };
                        match io.write(2 * id + k as u64, &b[range], off) {
                            Ok(()) => outstanding += 1,
                            Err(e) => fail(e, &mut failed),
                        }
                    }
                }
                Ok(Take::Empty) => {
                    pool.push(buf);
                    break;
                }
                Ok(Take::Stop) | Err(_) => {
                    pool.push(buf);
                    stopping = true;
                }
            }
        }
        if outstanding == 0 {
            if stopping || failed {
                break;
            }
            continue;
        }
        reaped.clear();
        // new transactions matter only while the committer takes them
        let taking = !stopping && !failed && p.len() < depth && p.may_take();
        if let Err(e) = io.wait(&|| taking && log.has_work(), &mut reaped) {
            // The ring failed: what is in flight is unknown, and the kernel may still
            // write from the buffers: they are leaked, never reused.
            fail(e, &mut failed);
            for b in p.drain() {
                std::mem::forget(b);
            }
            return;
        }
        for (tag, r) in reaped.drain(..) {
            outstanding -= 1;
            match r {
                Err(e) => fail(e, &mut failed),
                Ok(()) if tag == SYNC => p.sync_done(),
                Ok(()) => p.write_done(tag / 2),
            }
        }
        if failed {
            continue;
        }
        if let Some((end, bufs)) = p.advance() {
            for b in bufs {
                if b.held() <= KEEP_BUF && pool.len() < depth {
                    pool.push(b);
                }
            }
            match log.written(end) {
                Ok(acks) => {
                    for d in acks.into_values().flatten() {
                        d(Ok(Reply::Done));
                    }
                }
                Err(_) => stopping = true,
            }
        }
    }
    io.finish();
}
