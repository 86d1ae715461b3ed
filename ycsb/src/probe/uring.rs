//! One point of the device probe: a pattern at a queue depth for a while, through
//! io_uring on an O_DIRECT file (the raw I/O of the probe and of `ycsb iomethods`).
#![expect(
    unsafe_code,
    reason = "io_uring submission takes raw buffer pointers the kernel writes into"
)]

use crate::error::{Error, Result};
use crate::rng::Rng;
use hdrhistogram::Histogram;
use io_uring::{IoUring, opcode, types};
use kvell::io::AlignedBuf;
use kvtb_schema::ProbePoint;
use std::fs::File;
use std::os::unix::io::AsRawFd;
use std::time::{Duration, Instant};

/// Runs one pattern (`randread`, `randwrite`, `mixed`, `seqread`, `seqwrite`) at
/// queue depth `qd` with `block`-byte I/Os for `secs` seconds.
#[expect(
    clippy::too_many_arguments,
    reason = "the settings of one point, each caller varying a different few; a struct would be built per call"
)]
#[expect(
    clippy::expect_used,
    reason = "constant histogram bounds (1 ns to 60 s, 3 digits) that hdrhistogram accepts"
)]
pub fn run_point(
    f: &File,
    file_bytes: u64,
    pattern: &str,
    qd: usize,
    block: usize,
    read_fraction: f64,
    secs: f64,
    rng: &mut Rng,
) -> Result<ProbePoint> {
    let mut ring: IoUring = IoUring::new(qd.next_power_of_two().max(2) as u32)
        .map_err(|e| Error::io("io_uring setup", e))?;
    let mut bufs = AlignedBuf::new(qd * block);
    let base = bufs.as_mut_ptr();
    let blocks = file_bytes / block as u64;
    let fd = types::Fd(f.as_raw_fd());
    let mut starts = vec![Instant::now(); qd];
    let mut seq_next = 0u64;
    let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).expect("bounds");
    let mut next_offset = |rng: &mut Rng| -> u64 {
        if pattern.starts_with("seq") {
            let o = (seq_next % blocks) * block as u64;
            seq_next += 1;
            o
        } else {
            rng.below(blocks) * block as u64
        }
    };
    let mut reads = 0u64;
    let mut push =
        |ring: &mut IoUring, slot: usize, rng: &mut Rng, starts: &mut [Instant]| -> Result<()> {
            let is_read = pattern == "randread"
                || pattern == "seqread"
                || (pattern == "mixed" && rng.next_f64() < read_fraction);
            let off = next_offset(rng);
            // slot < qd, so [slot*block, (slot+1)*block) lies inside `bufs`
            let ptr = base.wrapping_add(slot * block);
            let sqe = if is_read {
                opcode::Read::new(fd, ptr, block as u32).offset(off).build()
            } else {
                opcode::Write::new(fd, ptr, block as u32)
                    .offset(off)
                    .build()
            }
            .user_data(slot as u64 | if is_read { 1 << 32 } else { 0 });
            starts[slot] = Instant::now();
            // SAFETY: the buffer of `slot` is not reused until its completion is reaped,
            // and `bufs`, the file and the ring all outlive every submitted I/O: every
            // one is reaped below before they are dropped, or the buffer is leaked.
            unsafe {
                ring.submission()
                    .push(&sqe)
                    .map_err(|_| Error::failed("submission queue full"))
            }
        };
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs_f64(secs);
    // After a failure no I/O is pushed, but those in flight are reaped before the
    // buffer is freed: the kernel may still write into it until then.
    let mut failed: Option<Error> = None;
    let mut in_flight = 0;
    for slot in 0..qd {
        match push(&mut ring, slot, rng, &mut starts) {
            Ok(()) => in_flight += 1,
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    let mut done = 0u64;
    let mut t_end = t0;
    while in_flight > 0 {
        if let Err(e) = ring.submit_and_wait(1) {
            // I/Os the ring cannot reap any more may still land in the buffer: keep it
            // allocated rather than free memory the kernel writes into.
            std::mem::forget(bufs);
            return Err(Error::io("io_uring_enter", e));
        }
        let cqes: Vec<(u64, i32)> = ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        let now = Instant::now();
        for (ud, res) in cqes {
            in_flight -= 1;
            if res < 0 {
                failed.get_or_insert_with(|| {
                    Error::io(
                        format!("{pattern} I/O failed"),
                        std::io::Error::from_raw_os_error(-res),
                    )
                });
                continue;
            }
            let slot = (ud & 0xffff_ffff) as usize;
            if ud >> 32 == 1 {
                reads += 1;
            }
            hist.saturating_record(now.duration_since(starts[slot]).as_nanos().max(1) as u64);
            done += 1;
            t_end = now;
            if now < deadline && failed.is_none() {
                match push(&mut ring, slot, rng, &mut starts) {
                    Ok(()) => in_flight += 1,
                    Err(e) => failed = Some(e),
                }
            }
        }
    }
    if let Some(e) = failed {
        return Err(e);
    }
    let elapsed = t_end.duration_since(t0).as_secs_f64().max(1e-9);
    let iops = done as f64 / elapsed;
    Ok(ProbePoint {
        pattern: pattern.into(),
        queue_depth: qd,
        block_bytes: block,
        read_fraction: if done > 0 {
            reads as f64 / done as f64
        } else {
            0.0
        },
        iops,
        mib_per_s: iops * block as f64 / (1 << 20) as f64,
        lat_mean_us: hist.mean() / 1000.0,
        lat_p50_us: hist.value_at_quantile(0.5) as f64 / 1000.0,
        lat_p99_us: hist.value_at_quantile(0.99) as f64 / 1000.0,
        seconds: elapsed,
    })
}
