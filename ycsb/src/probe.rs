//! The device roofline (`ycsb device`): what the disk under a data directory can do
//! with O_DIRECT and io_uring, measured on a file of our own: random 4 KiB reads,
//! writes and a read/write mix at queue depths 1..256, and sequential bandwidth.
//! Each run's result can then state the ceiling for its own I/O mix and the fraction
//! of it reached (the paper: KVell reaches 98% of what the Optane can do).

use crate::rng::Rng;
use hdrhistogram::Histogram;
use io_uring::{IoUring, opcode, types};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const BLOCK: usize = 4096;

/// A page-aligned buffer for O_DIRECT.
pub(crate) struct Aligned {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

impl Aligned {
    pub(crate) fn new(len: usize) -> Aligned {
        let layout =
            std::alloc::Layout::from_size_align(len.max(BLOCK), BLOCK).expect("valid layout");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "out of memory allocating {len} bytes");
        Aligned { ptr, layout }
    }
    pub(crate) fn slice_mut(&mut self) -> &mut [u8] {
        // SAFETY: ptr is valid for layout.size() bytes for our lifetime, uniquely borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

/// One measured point.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Point {
    /// `randread`, `randwrite`, `mixed`, `seqread` or `seqwrite`.
    pub pattern: String,
    pub queue_depth: usize,
    pub block_bytes: usize,
    /// Fraction of reads among the I/Os (1 for randread, 0 for randwrite).
    pub read_fraction: f64,
    pub iops: f64,
    pub mib_per_s: f64,
    pub lat_mean_us: f64,
    pub lat_p50_us: f64,
    pub lat_p99_us: f64,
    pub seconds: f64,
}

/// The result file of `ycsb device`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DeviceReport {
    pub kind: String,
    pub command: Vec<String>,
    pub started_unix_s: u64,
    pub machine: serde_json::Value,
    pub file: PathBuf,
    pub file_bytes: u64,
    /// Sequential O_DIRECT write bandwidth while filling the file (1 MiB writes, QD 1).
    pub fill_mib_per_s: f64,
    pub points: Vec<Point>,
}

impl DeviceReport {
    /// The best IOPS of a pattern over all queue depths, or at one depth.
    pub fn iops(&self, pattern: &str, qd: Option<usize>) -> Option<f64> {
        self.points
            .iter()
            .filter(|p| p.pattern == pattern && qd.is_none_or(|q| p.queue_depth == q))
            .map(|p| p.iops)
            .reduce(f64::max)
    }

    /// The device's IOPS for a mix with `read_fraction` reads: the harmonic
    /// combination of the best random read and write IOPS (each I/O takes its own
    /// share of device time). `mixed` points measured by the probe check this model.
    pub fn mix_iops(&self, read_fraction: f64) -> Option<f64> {
        let r = self.iops("randread", None)?;
        let w = self.iops("randwrite", None)?;
        Some(1.0 / (read_fraction / r + (1.0 - read_fraction) / w))
    }

    pub fn load(path: &Path) -> Result<DeviceReport, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let r: DeviceReport = serde_json::from_str(&text)
            .map_err(|e| format!("{} is not a device result: {e}", path.display()))?;
        if r.kind != "device" {
            return Err(format!(
                "{} is not a device result (kind '{}')",
                path.display(),
                r.kind
            ));
        }
        Ok(r)
    }
}

/// Settings of a probe.
#[derive(Clone, Debug)]
pub struct ProbeConfig {
    pub file: PathBuf,
    pub file_bytes: u64,
    pub queue_depths: Vec<usize>,
    pub seconds: f64,
    pub mixed_read_fraction: f64,
    pub seed: u64,
}

pub(crate) fn open_direct(path: &Path, create: bool) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(create)
        .truncate(false)
        .custom_flags(libc::O_DIRECT)
        .open(path)
}

/// Writes the whole file once (reads of never-written extents would not reach the
/// device) and returns the sequential write bandwidth in MiB/s.
pub(crate) fn fill(path: &Path, bytes: u64) -> Result<f64, String> {
    let f = open_direct(path, true).map_err(|e| {
        format!(
            "cannot open {} with O_DIRECT (a tmpfs or network filesystem?): {e}",
            path.display()
        )
    })?;
    let chunk = 1 << 20;
    let mut buf = Aligned::new(chunk);
    let mut rng = Rng::new(99);
    for b in buf.slice_mut().chunks_exact_mut(8) {
        b.copy_from_slice(&rng.next_u64().to_le_bytes());
    }
    let t = Instant::now();
    let mut off = 0u64;
    while off < bytes {
        f.write_at(&buf.slice_mut()[..chunk], off)
            .map_err(|e| format!("writing the probe file {}: {e}", path.display()))?;
        off += chunk as u64;
    }
    f.sync_all()
        .map_err(|e| format!("syncing the probe file: {e}"))?;
    Ok(bytes as f64 / (1 << 20) as f64 / t.elapsed().as_secs_f64())
}

/// Runs one pattern at one queue depth for `secs` seconds.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_point(
    f: &File,
    file_bytes: u64,
    pattern: &str,
    qd: usize,
    block: usize,
    read_fraction: f64,
    secs: f64,
    rng: &mut Rng,
) -> Result<Point, String> {
    let mut ring: IoUring = IoUring::new(qd.next_power_of_two().max(2) as u32)
        .map_err(|e| format!("io_uring setup: {e}"))?;
    let mut bufs = Aligned::new(qd * block);
    let base = bufs.slice_mut().as_mut_ptr();
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
    let mut push = |ring: &mut IoUring,
                    slot: usize,
                    rng: &mut Rng,
                    starts: &mut [Instant]|
     -> Result<(), String> {
        let is_read = pattern == "randread"
            || pattern == "seqread"
            || (pattern == "mixed" && rng.next_f64() < read_fraction);
        let off = next_offset(rng);
        // SAFETY: slot < qd, so the slice [slot*block, (slot+1)*block) lies inside `bufs`.
        let ptr = unsafe { base.add(slot * block) };
        let sqe = if is_read {
            opcode::Read::new(fd, ptr, block as u32).offset(off).build()
        } else {
            opcode::Write::new(fd, ptr, block as u32)
                .offset(off)
                .build()
        }
        .user_data(slot as u64 | if is_read { 1 << 32 } else { 0 });
        starts[slot] = Instant::now();
        // SAFETY: the buffer of `slot` is not reused until its completion is reaped, and
        // `bufs`, the file and the ring all outlive every submitted I/O (we drain below).
        unsafe {
            ring.submission()
                .push(&sqe)
                .map_err(|_| "submission queue full".to_string())
        }
    };
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs_f64(secs);
    for slot in 0..qd {
        push(&mut ring, slot, rng, &mut starts)?;
    }
    let mut in_flight = qd;
    let mut done = 0u64;
    let mut t_end = t0;
    while in_flight > 0 {
        ring.submit_and_wait(1)
            .map_err(|e| format!("io_uring_enter: {e}"))?;
        let cqes: Vec<(u64, i32)> = ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        let now = Instant::now();
        for (ud, res) in cqes {
            in_flight -= 1;
            if res < 0 {
                return Err(format!(
                    "{pattern} I/O failed: {}",
                    std::io::Error::from_raw_os_error(-res)
                ));
            }
            let slot = (ud & 0xffff_ffff) as usize;
            if ud >> 32 == 1 {
                reads += 1;
            }
            hist.saturating_record(now.duration_since(starts[slot]).as_nanos().max(1) as u64);
            done += 1;
            t_end = now;
            if now < deadline {
                push(&mut ring, slot, rng, &mut starts)?;
                in_flight += 1;
            }
        }
    }
    let elapsed = t_end.duration_since(t0).as_secs_f64().max(1e-9);
    let iops = done as f64 / elapsed;
    Ok(Point {
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

/// Runs the whole probe, printing a line per point to stderr.
pub fn probe(c: &ProbeConfig) -> Result<(f64, Vec<Point>), String> {
    if c.file_bytes < (16 << 20) {
        return Err("the probe file must be at least 16 MiB".into());
    }
    let bytes = c.file_bytes / (1 << 20) * (1 << 20);
    if let Some(dir) = c.file.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    eprintln!("filling {} ({} MiB) ...", c.file.display(), bytes >> 20);
    let fill_mib = fill(&c.file, bytes)?;
    let f =
        open_direct(&c.file, false).map_err(|e| format!("opening {}: {e}", c.file.display()))?;
    let mut rng = Rng::new(c.seed);
    let mut points = Vec::new();
    // Reads first, then writes, then the mix: a read measured right after writes runs
    // while the device (or the host under a virtual disk) still writes back, and reads
    // slower than it can. A pause lets the fill and each write pattern settle.
    let mut plan: Vec<(&str, usize, usize)> = Vec::new();
    plan.push(("seqread", 8, 1 << 20));
    for pat in ["randread", "seqwrite", "randwrite", "mixed"] {
        if pat == "seqwrite" {
            plan.push(("seqwrite", 8, 1 << 20));
            continue;
        }
        for &qd in &c.queue_depths {
            plan.push((pat, qd, BLOCK));
        }
    }
    let settle = Duration::from_secs_f64((c.seconds / 2.0).clamp(0.0, 3.0));
    std::thread::sleep(settle);
    let mut last = "";
    for (pat, qd, block) in plan {
        if pat != last && last != "seqread" && last != "randread" && !last.is_empty() {
            std::thread::sleep(settle);
        }
        last = pat;
        let p = run_point(
            &f,
            bytes,
            pat,
            qd,
            block,
            c.mixed_read_fraction,
            c.seconds,
            &mut rng,
        )?;
        eprintln!(
            "{:>9} qd {:>3} bs {:>7}: {:>9.0} IOPS {:>8.1} MiB/s  lat mean {:>8.1} us p99 {:>8.1} us",
            p.pattern,
            p.queue_depth,
            p.block_bytes,
            p.iops,
            p.mib_per_s,
            p.lat_mean_us,
            p.lat_p99_us
        );
        points.push(p);
    }
    Ok((fill_mib, points))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(points: Vec<Point>) -> DeviceReport {
        DeviceReport {
            kind: "device".into(),
            command: vec![],
            started_unix_s: 0,
            machine: serde_json::Value::Null,
            file: PathBuf::new(),
            file_bytes: 0,
            fill_mib_per_s: 0.0,
            points,
        }
    }

    fn pt(pattern: &str, qd: usize, iops: f64) -> Point {
        Point {
            pattern: pattern.into(),
            queue_depth: qd,
            block_bytes: 4096,
            read_fraction: 0.0,
            iops,
            mib_per_s: 0.0,
            lat_mean_us: 0.0,
            lat_p50_us: 0.0,
            lat_p99_us: 0.0,
            seconds: 1.0,
        }
    }

    #[test]
    fn ceiling_model_is_harmonic() {
        let r = report(vec![
            pt("randread", 1, 10_000.0),
            pt("randread", 64, 150_000.0),
            pt("randwrite", 64, 50_000.0),
        ]);
        assert_eq!(r.iops("randread", None), Some(150_000.0));
        assert_eq!(r.iops("randread", Some(1)), Some(10_000.0));
        assert!((r.mix_iops(1.0).unwrap() - 150_000.0).abs() < 1e-6);
        assert!((r.mix_iops(0.0).unwrap() - 50_000.0).abs() < 1e-6);
        let half = r.mix_iops(0.5).unwrap();
        assert!((half - 75_000.0).abs() < 1e-6, "{half}");
    }

    #[test]
    fn probes_a_small_file() {
        let dir = kvtestkit::conformance::TempDir::new("probe");
        let c = ProbeConfig {
            file: dir.path().join("probe.dat"),
            file_bytes: 16 << 20,
            queue_depths: vec![1, 8],
            seconds: 0.05,
            mixed_read_fraction: 0.5,
            seed: 1,
        };
        let (fill, points) = probe(&c).unwrap();
        assert!(fill > 0.0);
        assert_eq!(points.len(), 8);
        assert!(
            points
                .iter()
                .all(|p| p.iops > 0.0 && p.lat_p99_us >= p.lat_p50_us)
        );
        let mixed = points
            .iter()
            .find(|p| p.pattern == "mixed" && p.queue_depth == 8)
            .unwrap();
        assert!(
            mixed.read_fraction > 0.1 && mixed.read_fraction < 0.9,
            "{}",
            mixed.read_fraction
        );
    }
}
