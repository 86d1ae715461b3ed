//! One ring of the device probe: a pattern at a queue depth for a while, through
//! io_uring on an O_DIRECT file, from the thread that calls it.
//!
//! The ring is set up and fed as fio's io_uring engine does (fio 3.33 and later):
//! `COOP_TASKRUN` (no interrupt of the task for each completion),
//! `SINGLE_ISSUER | DEFER_TASKRUN` (completions are run in a batch when the task asks
//! for them, not from an interrupt), a completion queue as deep as the submission
//! queue, non-vectored `READ`/`WRITE`. Each loop waits for at least one completion,
//! takes one clock reading per batch, reaps the completion queue in place (no
//! allocation per loop) and submits each refill by itself as soon as it is queued, as
//! fio does at its default `iodepth_batch_submit=1`. Handing the refills of a batch
//! over in one `io_uring_enter` instead was slower at queue depths 16 and 64 on the
//! development VM's virtio disk, by more than the 5% the probe may differ from fio
//! (results/device/submit-each-tried.md: fio and both forms alternating). The file is registered with the ring (`IOSQE_FIXED_FILE`: no file
//! lookup per I/O); the buffers are not (fio's default, `fixedbufs` off).
//!
//! Where reads land is [`Buffers`]: by default in each I/O slot's own buffer, as fio's
//! (so the few hundred KiB of them stay in the CPU caches); or, as a storage engine's
//! page cache, in random 4 KiB frames of a region as large as that cache, directly
//! (the authors' C KVell reads into its cache pages) or copied there from the slot's
//! buffer on completion (this project's KVell). On the development VM's virtio disk
//! reads that land directly in a region of 1.3 GB did 0.80-0.91 of the reads into the
//! slots' own buffers, and reads copied there 0.88-0.98, in four alternating series
//! (`scripts/device-buffers`; the latest in results/device/buffers-vda.md).
#![expect(
    unsafe_code,
    reason = "io_uring submission takes raw buffer pointers the kernel writes into"
)]

use crate::error::{Error, Result};
use crate::rng::Rng;
use hdrhistogram::Histogram;
use io_uring::{IoUring, opcode, squeue, types};
use std::fs::File;
use std::os::unix::io::AsRawFd;
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// An access pattern of the probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pattern {
    RandRead,
    RandWrite,
    /// Random reads and writes, each I/O a read with the mix's read fraction.
    Mixed,
    SeqRead,
    SeqWrite,
}

impl Pattern {
    pub(crate) fn parse(name: &str) -> Result<Pattern> {
        Ok(match name {
            "randread" => Pattern::RandRead,
            "randwrite" => Pattern::RandWrite,
            "mixed" => Pattern::Mixed,
            "seqread" => Pattern::SeqRead,
            "seqwrite" => Pattern::SeqWrite,
            other => {
                return Err(Error::usage(format!(
                    "unknown probe pattern '{other}' (randread, randwrite, mixed, seqread, seqwrite)"
                )));
            }
        })
    }

    fn sequential(self) -> bool {
        matches!(self, Pattern::SeqRead | Pattern::SeqWrite)
    }
}

/// Where a probe's reads land.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Buffers {
    /// Each I/O slot's own buffer (fio).
    Own,
    /// A random 4 KiB frame of a region of this many bytes (all rings together).
    ReadInto(u64),
    /// The slot's own buffer, then copied into a random 4 KiB frame of a region of
    /// this many bytes (all rings together) when the read completes.
    CopyInto(u64),
    /// The slot's own buffer, each read's bytes then checksummed (CRC32, as
    /// recovery's scan checks every item it reads) when it completes: the disk's rate
    /// for a reader that looks at every byte it read. On the development VM that costs
    /// the reads themselves, not only the CPU (results/kvell-4m-ab/scan-rotation).
    Checked,
}

impl Buffers {
    /// The share of one of `rings` rings.
    pub(crate) fn per_ring(self, rings: usize) -> Buffers {
        let n = rings.max(1) as u64;
        match self {
            Buffers::Own => Buffers::Own,
            Buffers::Checked => Buffers::Checked,
            Buffers::ReadInto(b) => Buffers::ReadInto(b / n),
            Buffers::CopyInto(b) => Buffers::CopyInto(b / n),
        }
    }

    /// What the result says (empty for [`Buffers::Own`]).
    pub fn describe(self) -> String {
        match self {
            Buffers::Own => String::new(),
            Buffers::Checked => {
                "reads into each slot's own buffer, every read's bytes checksummed (CRC32) when it completes".into()
            }
            Buffers::ReadInto(b) => format!(
                "reads into random 4 KiB frames of {b} bytes (split over the rings), as a page cache read into directly"
            ),
            Buffers::CopyInto(b) => format!(
                "reads into each slot's own buffer, then copied into a random 4 KiB frame of {b} bytes (split over the rings)"
            ),
        }
    }

    fn region(self) -> u64 {
        match self {
            Buffers::Own | Buffers::Checked => 0,
            Buffers::ReadInto(b) | Buffers::CopyInto(b) => b,
        }
    }
}

/// What one ring is asked to do.
pub(crate) struct RingJob<'a> {
    pub(crate) file: &'a File,
    /// Blocks of the file this ring addresses: `[first, first + blocks)`.
    pub(crate) first: u64,
    pub(crate) blocks: u64,
    pub(crate) block: usize,
    pub(crate) pattern: Pattern,
    pub(crate) qd: usize,
    pub(crate) read_fraction: f64,
    pub(crate) secs: f64,
    pub(crate) rng: Rng,
    pub(crate) buffers: Buffers,
    /// The slots' buffers in 4 KiB pages from the heap, not 2 MiB pages.
    pub(crate) small_pages: bool,
    /// A sequential ring reads (or writes) each block of its stretch once and stops,
    /// whatever `secs` says (`ycsb device --read-files`).
    pub(crate) once: bool,
}

/// What one ring measured.
pub(crate) struct RingResult {
    pub(crate) done: u64,
    pub(crate) reads: u64,
    /// Latency of each I/O, nanoseconds.
    pub(crate) hist: Histogram<u64>,
    /// When this ring started (after every ring was set up) and reaped its last I/O.
    pub(crate) t0: Instant,
    pub(crate) t_end: Instant,
    /// Bytes of the slots' buffers, and of those the kernel backed with huge pages
    /// (None where it does not say).
    pub(crate) buf_bytes: u64,
    pub(crate) huge_bytes: Option<u64>,
}

#[expect(
    clippy::expect_used,
    reason = "constant histogram bounds (1 ns to 60 s, 3 digits) that hdrhistogram accepts"
)]
pub(crate) fn new_hist() -> Histogram<u64> {
    Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).expect("bounds")
}

/// A ring set up as fio sets up its own, falling back flag by flag on kernels that
/// refuse one (as fio does).
fn fio_ring(entries: u32) -> Result<IoUring> {
    let tries: [fn(&mut io_uring::Builder, u32); 3] = [
        |b, e| {
            b.setup_cqsize(e)
                .setup_coop_taskrun()
                .setup_single_issuer()
                .setup_defer_taskrun();
        },
        |b, e| {
            b.setup_cqsize(e).setup_coop_taskrun();
        },
        |b, e| {
            b.setup_cqsize(e);
        },
    ];
    let mut last = None;
    for t in tries {
        let mut b = IoUring::builder();
        t(&mut b, entries);
        match b.build(entries) {
            Ok(r) => return Ok(r),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => last = Some(e),
            Err(e) => return Err(Error::io("io_uring setup", e)),
        }
    }
    match last {
        Some(e) => Err(Error::io("io_uring setup", e)),
        None => IoUring::new(entries).map_err(|e| Error::io("io_uring setup", e)),
    }
}

/// Runs one ring: sets it up, waits at `start` until every ring of the point is set
/// up, then keeps `job.qd` I/Os in flight for `job.secs` seconds and reaps the last
/// ones.
pub(crate) fn run_ring(job: RingJob<'_>, start: &Barrier) -> Result<RingResult> {
    let RingJob {
        file,
        first,
        blocks,
        block,
        pattern,
        qd,
        read_fraction,
        secs,
        mut rng,
        buffers,
        small_pages,
        once,
    } = job;
    let once = once && pattern.sequential();
    // The region reads land in or are copied to, mapped and touched before the
    // barrier: no ring's clock starts while another still faults its region in.
    let frames = (buffers.region() / block as u64) as usize;
    let set_up = (|| -> Result<(IoUring, Option<kvell::io::PageMem>)> {
        let ring = fio_ring(qd.next_power_of_two().max(2) as u32)?;
        ring.submitter()
            .register_files(&[file.as_raw_fd()])
            .map_err(|e| Error::io("registering the probe file with io_uring", e))?;
        let region = if frames > 0 {
            let mut m = kvell::io::PageMem::new(frames * block / 4096, false)
                .map_err(|e| Error::io("mapping the probe's buffer region", e))?;
            m.populate(0..frames * block / 4096)
                .map_err(|e| Error::io("touching the probe's buffer region", e))?;
            Some(m)
        } else {
            None
        };
        Ok((ring, region))
    })();
    // every ring reaches the barrier, set up or not, so that no other ring waits forever
    start.wait();
    let (mut ring, mut region) = set_up?;
    let mut bufs = super::slot_buf(qd * block, small_pages);
    for b in bufs.chunks_exact_mut(8) {
        b.copy_from_slice(&rng.next_u64().to_le_bytes());
    }
    let base = bufs.as_mut_ptr();
    let region_base = region.as_mut().map(|m| m.as_mut_ptr());
    let frame = move |r: &mut Rng| r.below(frames as u64) as usize * block;
    let (mut read_rng, mut copy_rng) = (
        Rng::derive(rng.next_u64(), 1),
        Rng::derive(rng.next_u64(), 2),
    );
    let fd = types::Fixed(0);
    let mut starts = vec![Instant::now(); qd];
    let mut seq_next = 0u64;
    let mut hist = new_hist();
    let mut next = |rng: &mut Rng| -> (bool, u64) {
        let is_read = match pattern {
            Pattern::RandRead | Pattern::SeqRead => true,
            Pattern::RandWrite | Pattern::SeqWrite => false,
            Pattern::Mixed => rng.next_f64() < read_fraction,
        };
        let b = if pattern.sequential() {
            let o = seq_next % blocks;
            seq_next += 1;
            o
        } else {
            rng.below(blocks)
        };
        (is_read, (first + b) * block as u64)
    };
    let mut sqe_for = |slot: usize, is_read: bool, off: u64| -> squeue::Entry {
        // slot < qd, so [slot*block, (slot+1)*block) lies inside `bufs`; a frame is
        // a block of the region. Two reads in flight may land in the same frame: the
        // probe never looks at what it read.
        let ptr = match (buffers, region_base) {
            (Buffers::ReadInto(_), Some(r)) if is_read => r.wrapping_add(frame(&mut read_rng)),
            _ => base.wrapping_add(slot * block),
        };
        if is_read {
            opcode::Read::new(fd, ptr, block as u32).offset(off).build()
        } else {
            opcode::Write::new(fd, ptr, block as u32)
                .offset(off)
                .build()
        }
        .user_data(slot as u64 | if is_read { 1 << 32 } else { 0 })
    };
    let t0 = Instant::now();
    // with `once`, no deadline: the stretch's blocks end the ring
    let deadline = (!once).then(|| t0 + Duration::from_secs_f64(secs));
    // I/Os issued: with `once`, no more than the stretch's blocks
    let mut issued = 0u64;
    let (submitter, mut sq, mut cq) = ring.split();
    // After a failure no I/O is pushed, but those in flight are reaped before the
    // buffer is freed: the kernel may still write into it until then.
    let mut failed: Option<Error> = None;
    let mut in_flight = 0usize;
    for (slot, start) in starts.iter_mut().enumerate() {
        if once && issued >= blocks {
            break;
        }
        issued += 1;
        let (is_read, off) = next(&mut rng);
        // SAFETY: the buffer of `slot` is not reused until its completion is reaped,
        // and `bufs`, the file and the ring all outlive every submitted I/O: every one
        // is reaped below before they are dropped, or the buffer is leaked.
        if unsafe { sq.push(&sqe_for(slot, is_read, off)) }.is_err() {
            failed = Some(Error::failed("submission queue full"));
            break;
        }
        *start = t0;
        in_flight += 1;
    }
    let (mut done, mut reads) = (0u64, 0u64);
    let mut sum = 0u32;
    let mut t_end = t0;
    while in_flight > 0 {
        sq.sync();
        if let Err(e) = submitter.submit_and_wait(1) {
            if matches!(
                e.raw_os_error(),
                Some(libc::EINTR | libc::EAGAIN | libc::EBUSY)
            ) {
                continue;
            }
            // I/Os the ring cannot reap any more may still land in the buffer: keep it
            // allocated rather than free memory the kernel writes into.
            std::mem::forget(bufs);
            std::mem::forget(region);
            return Err(Error::io("io_uring_enter", e));
        }
        // the kernel has taken what was queued: room for the refills
        sq.sync();
        cq.sync();
        let now = Instant::now();
        let refill = deadline.is_none_or(|d| now < d) && failed.is_none();
        for cqe in &mut cq {
            in_flight -= 1;
            let (ud, res) = (cqe.user_data(), cqe.result());
            if res < 0 {
                failed.get_or_insert_with(|| {
                    Error::io(
                        format!("{pattern:?} I/O failed"),
                        std::io::Error::from_raw_os_error(-res),
                    )
                });
                continue;
            }
            let slot = (ud & 0xffff_ffff) as usize;
            reads += ud >> 32;
            if let (Buffers::CopyInto(_), Some(r), 1) = (buffers, region_base, ud >> 32) {
                let to = frame(&mut copy_rng);
                // SAFETY: the slot's read has completed, so the kernel no longer
                // writes its buffer; `to + block` lies inside the region (a frame of
                // it), which no I/O uses under CopyInto.
                unsafe {
                    std::ptr::copy_nonoverlapping(base.add(slot * block), r.add(to), block);
                }
            }
            if let (Buffers::Checked, 1) = (buffers, ud >> 32) {
                // SAFETY: the slot's read has completed, so the kernel no longer writes
                // its buffer, which lies inside `bufs` (slot < qd).
                let read = unsafe { std::slice::from_raw_parts(base.add(slot * block), block) };
                sum ^= crc32fast::hash(read);
            }
            hist.saturating_record(now.duration_since(starts[slot]).as_nanos().max(1) as u64);
            done += 1;
            t_end = now;
            if refill && failed.is_none() && !(once && issued >= blocks) {
                issued += 1;
                let (is_read, off) = next(&mut rng);
                // SAFETY: as above; `slot`'s I/O has just been reaped.
                match unsafe { sq.push(&sqe_for(slot, is_read, off)) } {
                    Ok(()) => {
                        starts[slot] = now;
                        in_flight += 1;
                        // handed to the kernel at once, by itself (see the module's note);
                        // a failed submit leaves it queued for the next io_uring_enter
                        sq.sync();
                        let _ = submitter.submit();
                    }
                    Err(_) => failed = Some(Error::failed("submission queue full")),
                }
            }
        }
        // hand the kernel the completions just reaped before the next wait: with the
        // ring's head left stale, that wait saw them still there and came back at once,
        // one empty io_uring_enter more per I/O (fio publishes its head first)
        cq.sync();
    }
    drop((submitter, sq, cq));
    drop(region);
    std::hint::black_box(sum);
    let (buf_bytes, huge_bytes) = (bufs.capacity() as u64, bufs.huge_bytes());
    if let Some(e) = failed {
        return Err(e);
    }
    Ok(RingResult {
        done,
        reads,
        hist,
        t0,
        t_end,
        buf_bytes,
        huge_bytes,
    })
}
