//! The device roofline (`ycsb device`): what the disk under a data directory can do
//! with O_DIRECT and io_uring, measured on a file of our own: random 4 KiB reads,
//! writes and a read/write mix at queue depths 1..256, and sequential bandwidth.
//! Each run's result can then state the ceiling for its own I/O mix and the fraction
//! of it reached (the paper: KVell reaches 98% of what the Optane can do).

mod uring;

pub use uring::run_point;

use crate::error::{Error, Result};
use crate::rng::Rng;
use kvell::io::AlignedBuf;
use kvtb_schema::ProbePoint;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const BLOCK: usize = 4096;

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

/// What a probe (or the I/O method comparison) tells its caller as it goes.
#[derive(Debug)]
pub enum Step<'a> {
    /// The file is being written once, `mib` MiB.
    Filling { file: &'a Path, mib: u64 },
    /// A point was measured.
    Measured(&'a ProbePoint),
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
pub(crate) fn fill(path: &Path, bytes: u64) -> Result<f64> {
    let f = open_direct(path, true).map_err(|e| Error::Io {
        what: format!(
            "cannot open {} with O_DIRECT (a tmpfs or network filesystem?)",
            path.display()
        ),
        path: Some(path.to_path_buf()),
        source: e,
    })?;
    let chunk = 1 << 20;
    let mut buf = AlignedBuf::new(chunk);
    let mut rng = Rng::new(99);
    for b in buf.chunks_exact_mut(8) {
        b.copy_from_slice(&rng.next_u64().to_le_bytes());
    }
    let t = Instant::now();
    let mut off = 0u64;
    while off < bytes {
        f.write_at(&buf[..chunk], off)
            .map_err(|e| Error::io_at("writing the probe file", path, e))?;
        off += chunk as u64;
    }
    f.sync_all()
        .map_err(|e| Error::io("syncing the probe file", e))?;
    Ok(bytes as f64 / (1 << 20) as f64 / t.elapsed().as_secs_f64())
}

/// Runs the whole probe, telling `on` of the fill and of each point; returns the fill
/// bandwidth (MiB/s) and the points.
pub fn probe(c: &ProbeConfig, on: &mut dyn FnMut(Step<'_>)) -> Result<(f64, Vec<ProbePoint>)> {
    if c.file_bytes < (16 << 20) {
        return Err(Error::usage("the probe file must be at least 16 MiB"));
    }
    let bytes = c.file_bytes / (1 << 20) * (1 << 20);
    if let Some(dir) = c.file.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io_at("cannot create", dir, e))?;
    }
    on(Step::Filling {
        file: &c.file,
        mib: bytes >> 20,
    });
    let fill_mib = fill(&c.file, bytes)?;
    let f = open_direct(&c.file, false).map_err(|e| Error::io_at("opening", &c.file, e))?;
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
        on(Step::Measured(&p));
        points.push(p);
    }
    Ok((fill_mib, points))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let (fill, points) = probe(&c, &mut |_| {}).unwrap();
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
