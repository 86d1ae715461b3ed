//! The I/O method comparison (`ycsb iomethods`, the paper's Table 3): random 4 KiB
//! reads and writes on one file through a shared memory mapping (page faults, with 1
//! and several threads), synchronous O_DIRECT pread/pwrite from one thread, and
//! O_DIRECT io_uring at queue depth 1 and 64.
//!
//! The paper ran on a file three times the size of RAM so that every mmap access
//! faults. A file that large takes minutes to write, so before each mmap point the
//! file's pages are dropped from the page cache (POSIX_FADV_DONTNEED after msync) and
//! readahead is turned off (MADV_RANDOM); the result states the major faults per
//! access that the kernel counted, so a reader sees how many accesses really went to
//! the disk.

mod mmap;

use crate::error::{Error, Result};
use crate::probe::{fill, open_direct, run_point};
use crate::procfs::usage;
use crate::rng::Rng;
use hdrhistogram::Histogram;
use kvell::io::AlignedBuf;
use kvtb_schema::IoPoint;
use mmap::{Mapping, drop_cache};
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const BLOCK: usize = 4096;

/// Settings of the comparison.
#[derive(Clone, Debug)]
pub struct Config {
    pub file: PathBuf,
    pub file_bytes: u64,
    pub seconds: f64,
    /// Thread counts for mmap (the paper: 1 and 8).
    pub mmap_threads: Vec<usize>,
    pub seed: u64,
}

/// CPU seconds (user + system) and major faults of this process so far.
fn cpu_and_faults() -> (f64, u64) {
    let u = usage();
    ((u.user + u.system).as_secs_f64(), u.major_faults)
}

#[expect(
    clippy::expect_used,
    reason = "constant histogram bounds (1 ns to 60 s, 3 digits) that hdrhistogram accepts"
)]
fn hist() -> Histogram<u64> {
    Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).expect("bounds")
}

/// The error of opening the file with O_DIRECT: the path and the reason.
fn opening_error(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        what: path.display().to_string(),
        path: Some(path.to_path_buf()),
        source,
    }
}

/// What the comparison tells its caller as it goes.
#[derive(Debug)]
pub enum Step<'a> {
    /// The file is being written once, `mib` MiB.
    Filling { file: &'a Path, mib: u64 },
    /// The points of one operation (`randwrite`, then `randread`) were measured.
    Measured(&'a [IoPoint]),
}

#[expect(
    clippy::expect_used,
    reason = "histograms of the same bounds always add"
)]
fn mmap_point(c: &Config, op: &str, threads: usize) -> Result<IoPoint> {
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&c.file)
        .map_err(|e| Error::io_at("opening", &c.file, e))?;
    drop_cache(&f)?;
    let map = Mapping::new(&f, c.file_bytes as usize)?;
    let pages = c.file_bytes / BLOCK as u64;
    let write = op == "randwrite";
    let (cpu0, flt0) = cpu_and_faults();
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs_f64(c.seconds);
    let results: Vec<(u64, Histogram<u64>)> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let map = &map;
                s.spawn(move || {
                    let mut rng = Rng::derive(c.seed, 100 + t as u64);
                    let mut h = hist();
                    let mut n = 0u64;
                    while Instant::now() < deadline {
                        let off =
                            (rng.below(pages) as usize) * BLOCK + rng.below(BLOCK as u64) as usize;
                        let t = Instant::now();
                        map.touch(off, write.then(|| (n as u8).wrapping_add(1)));
                        h.saturating_record(t.elapsed().as_nanos().max(1) as u64);
                        n += 1;
                    }
                    (n, h)
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| Error::failed("an mmap thread panicked"))
            })
            .collect::<Result<Vec<_>>>()
    })?;
    // Writes count once they are on the disk: the final msync is part of the time.
    if write {
        map.sync()?;
    }
    let elapsed = t0.elapsed().as_secs_f64();
    let (cpu1, flt1) = cpu_and_faults();
    let mut h = hist();
    let mut n = 0;
    for (k, one) in &results {
        n += k;
        h.add(one).expect("same bounds");
    }
    let n = n.max(1);
    let iops = n as f64 / elapsed;
    Ok(IoPoint {
        method: "mmap".into(),
        op: op.into(),
        threads,
        queue_depth: threads,
        iops,
        mib_per_s: iops * BLOCK as f64 / (1 << 20) as f64,
        lat_mean_us: h.mean() / 1000.0,
        lat_p99_us: h.value_at_quantile(0.99) as f64 / 1000.0,
        cpu_us_per_io: (cpu1 - cpu0) * 1e6 / n as f64,
        major_faults_per_io: Some((flt1 - flt0) as f64 / n as f64),
        seconds: elapsed,
    })
}

fn pread_point(c: &Config, op: &str) -> Result<IoPoint> {
    let f = open_direct(&c.file, false).map_err(|e| opening_error(&c.file, e))?;
    let mut buf = AlignedBuf::new(BLOCK);
    let pages = c.file_bytes / BLOCK as u64;
    let mut rng = Rng::derive(c.seed, 7);
    let mut h = hist();
    let (cpu0, _) = cpu_and_faults();
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs_f64(c.seconds);
    let mut n = 0u64;
    while Instant::now() < deadline {
        let off = rng.below(pages) * BLOCK as u64;
        let t = Instant::now();
        let b = &mut buf[..BLOCK];
        if op == "randwrite" {
            f.write_all_at(b, off)
        } else {
            f.read_exact_at(b, off)
        }
        .map_err(|e| Error::io(format!("{op} at {off}"), e))?;
        h.saturating_record(t.elapsed().as_nanos().max(1) as u64);
        n += 1;
    }
    let elapsed = t0.elapsed().as_secs_f64();
    let (cpu1, _) = cpu_and_faults();
    let n = n.max(1);
    let iops = n as f64 / elapsed;
    Ok(IoPoint {
        method: "pread".into(),
        op: op.into(),
        threads: 1,
        queue_depth: 1,
        iops,
        mib_per_s: iops * BLOCK as f64 / (1 << 20) as f64,
        lat_mean_us: h.mean() / 1000.0,
        lat_p99_us: h.value_at_quantile(0.99) as f64 / 1000.0,
        cpu_us_per_io: (cpu1 - cpu0) * 1e6 / n as f64,
        major_faults_per_io: None,
        seconds: elapsed,
    })
}

fn uring_point(c: &Config, op: &str, qd: usize) -> Result<IoPoint> {
    let f = open_direct(&c.file, false).map_err(|e| opening_error(&c.file, e))?;
    let mut rng = Rng::derive(c.seed, 11 + qd as u64);
    let (cpu0, _) = cpu_and_faults();
    let p = run_point(&f, c.file_bytes, op, qd, BLOCK, 0.5, c.seconds, &mut rng)?;
    let (cpu1, _) = cpu_and_faults();
    let n = (p.iops * p.seconds).max(1.0);
    Ok(IoPoint {
        method: "io_uring".into(),
        op: op.into(),
        threads: 1,
        queue_depth: qd,
        iops: p.iops,
        mib_per_s: p.mib_per_s,
        lat_mean_us: p.lat_mean_us,
        lat_p99_us: p.lat_p99_us,
        cpu_us_per_io: (cpu1 - cpu0) * 1e6 / n,
        major_faults_per_io: None,
        seconds: p.seconds,
    })
}

/// Fills the file and measures every method for random writes, then random reads,
/// telling `on` of the fill and of each operation's points.
pub fn measure(c: &Config, on: &mut dyn FnMut(Step<'_>)) -> Result<Vec<IoPoint>> {
    if c.file_bytes < (16 << 20) || c.mmap_threads.iter().any(|t| *t == 0 || *t > 1024) {
        return Err(Error::usage(
            "the file must be at least 16 MiB and mmap threads within 1..=1024",
        ));
    }
    let bytes = c.file_bytes / (1 << 20) * (1 << 20);
    if let Some(dir) = c.file.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io_at("cannot create", dir, e))?;
    }
    on(Step::Filling {
        file: &c.file,
        mib: bytes >> 20,
    });
    fill(&c.file, bytes, false)?;
    let c = Config {
        file_bytes: bytes,
        ..c.clone()
    };
    let mut points = Vec::new();
    for op in ["randwrite", "randread"] {
        for &t in &c.mmap_threads {
            points.push(mmap_point(&c, op, t)?);
        }
        points.push(pread_point(&c, op)?);
        for qd in [1, 64] {
            points.push(uring_point(&c, op, qd)?);
        }
        on(Step::Measured(
            &points[points.len() - c.mmap_threads.len() - 3..],
        ));
    }
    Ok(points)
}

/// The notes every result carries: how the file was kept out of memory.
pub fn notes(c: &Config) -> Vec<String> {
    vec![
        format!(
            "file of {} MiB; before each mmap point its pages were dropped from the page cache (msync + fsync + POSIX_FADV_DONTNEED) and readahead turned off (MADV_RANDOM); major_faults_per_io says how many accesses went to the disk (the paper used a file 3x RAM instead)",
            c.file_bytes >> 20
        ),
        "mmap writes dirty a byte of a random page (a fault reads the page first); the final msync is inside the measured time".into(),
        "pread and io_uring use O_DIRECT 4 KiB I/O at random 4 KiB-aligned offsets".into(),
        format!("{} s per point", c.seconds),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_every_method_on_a_small_file() {
        let dir = kvtestkit::conformance::TempDir::new("iomethods");
        let c = Config {
            file: dir.path().join("io.dat"),
            file_bytes: 16 << 20,
            seconds: 0.05,
            mmap_threads: vec![1, 2],
            seed: 3,
        };
        let pts = measure(&c, &mut |_| {}).unwrap();
        assert_eq!(pts.len(), 10);
        for p in &pts {
            assert!(p.iops > 0.0, "{p:?}");
            assert!(p.lat_p99_us > 0.0 && p.cpu_us_per_io >= 0.0, "{p:?}");
        }
        let mm = pts
            .iter()
            .find(|p| p.method == "mmap" && p.op == "randread" && p.threads == 1)
            .unwrap();
        // The cache was dropped first: at least some accesses faulted on the disk.
        assert!(mm.major_faults_per_io.unwrap() > 0.0, "{mm:?}");
        assert!(
            measure(
                &Config {
                    file_bytes: 1 << 20,
                    ..c.clone()
                },
                &mut |_| {}
            )
            .is_err()
        );
    }
}
