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

use crate::probe::{Aligned, fill, open_direct, run_point};
use crate::rng::Rng;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};

const BLOCK: usize = 4096;

/// One measured method.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MethodPoint {
    /// `mmap`, `pread` (synchronous O_DIRECT pread/pwrite) or `io_uring` (O_DIRECT).
    pub method: String,
    /// `randread` or `randwrite`.
    pub op: String,
    pub threads: usize,
    pub queue_depth: usize,
    pub iops: f64,
    pub mib_per_s: f64,
    pub lat_mean_us: f64,
    pub lat_p99_us: f64,
    /// CPU time of this process (user + system) per I/O. Write-back of dirty mapped
    /// pages by the kernel's flusher threads is not in it.
    pub cpu_us_per_io: f64,
    /// Major page faults per access (mmap only): 1 means every access read the disk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub major_faults_per_io: Option<f64>,
    pub seconds: f64,
}

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

fn cpu_and_faults() -> (f64, u64) {
    // SAFETY: getrusage writes into the zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a rusage struct.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(ru.ru_utime) + secs(ru.ru_stime), ru.ru_majflt as u64)
}

fn hist() -> Histogram<u64> {
    Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).expect("bounds")
}

/// A shared, writable mapping of the whole file.
struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain memory shared by the threads of one measurement; they
// only do single-byte volatile reads and writes of distinct or racing bytes, which
// for this measurement need no ordering.
unsafe impl Sync for Mapping {}
unsafe impl Send for Mapping {}

impl Mapping {
    fn new(f: &std::fs::File, len: usize) -> Result<Mapping, String> {
        // SAFETY: a fresh shared mapping of `len` bytes of an open file; checked below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(format!("mmap: {}", std::io::Error::last_os_error()));
        }
        // SAFETY: the range is the mapping just made.
        unsafe { libc::madvise(ptr, len, libc::MADV_RANDOM) };
        Ok(Mapping {
            ptr: ptr.cast(),
            len,
        })
    }
    fn sync(&self) -> Result<(), String> {
        // SAFETY: the range is our mapping.
        if unsafe { libc::msync(self.ptr.cast(), self.len, libc::MS_SYNC) } != 0 {
            return Err(format!("msync: {}", std::io::Error::last_os_error()));
        }
        Ok(())
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping made in `new`, used by no one any more.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// Drops the file's pages from the page cache (dirty ones are written first).
fn drop_cache(f: &std::fs::File) -> Result<(), String> {
    f.sync_all().map_err(|e| format!("fsync: {e}"))?;
    // SAFETY: plain advice on an open descriptor.
    let r = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if r != 0 {
        return Err(format!(
            "posix_fadvise: {}",
            std::io::Error::from_raw_os_error(r)
        ));
    }
    Ok(())
}

fn mmap_point(c: &Config, op: &str, threads: usize) -> Result<MethodPoint, String> {
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&c.file)
        .map_err(|e| format!("opening {}: {e}", c.file.display()))?;
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
                        // SAFETY: off < len, inside the live mapping; a single byte.
                        unsafe {
                            let p = map.ptr.add(off);
                            if write {
                                std::ptr::write_volatile(p, (n as u8).wrapping_add(1));
                            } else {
                                std::ptr::read_volatile(p);
                            }
                        }
                        h.saturating_record(t.elapsed().as_nanos().max(1) as u64);
                        n += 1;
                    }
                    (n, h)
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("mmap thread"))
            .collect()
    });
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
    Ok(MethodPoint {
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

fn pread_point(c: &Config, op: &str) -> Result<MethodPoint, String> {
    let f = open_direct(&c.file, false).map_err(|e| format!("{}: {e}", c.file.display()))?;
    let mut buf = Aligned::new(BLOCK);
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
        let b = &mut buf.slice_mut()[..BLOCK];
        if op == "randwrite" {
            f.write_all_at(b, off)
        } else {
            f.read_exact_at(b, off)
        }
        .map_err(|e| format!("{op} at {off}: {e}"))?;
        h.saturating_record(t.elapsed().as_nanos().max(1) as u64);
        n += 1;
    }
    let elapsed = t0.elapsed().as_secs_f64();
    let (cpu1, _) = cpu_and_faults();
    let n = n.max(1);
    let iops = n as f64 / elapsed;
    Ok(MethodPoint {
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

fn uring_point(c: &Config, op: &str, qd: usize) -> Result<MethodPoint, String> {
    let f = open_direct(&c.file, false).map_err(|e| format!("{}: {e}", c.file.display()))?;
    let mut rng = Rng::derive(c.seed, 11 + qd as u64);
    let (cpu0, _) = cpu_and_faults();
    let p = run_point(&f, c.file_bytes, op, qd, BLOCK, 0.5, c.seconds, &mut rng)?;
    let (cpu1, _) = cpu_and_faults();
    let n = (p.iops * p.seconds).max(1.0);
    Ok(MethodPoint {
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

/// Fills the file and measures every method for random writes, then random reads;
/// one line per point on stderr.
pub fn measure(c: &Config) -> Result<Vec<MethodPoint>, String> {
    if c.file_bytes < (16 << 20) || c.mmap_threads.iter().any(|t| *t == 0 || *t > 1024) {
        return Err("the file must be at least 16 MiB and mmap threads within 1..=1024".into());
    }
    let bytes = c.file_bytes / (1 << 20) * (1 << 20);
    if let Some(dir) = c.file.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    eprintln!("filling {} ({} MiB) ...", c.file.display(), bytes >> 20);
    fill(&c.file, bytes)?;
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
        for p in &points[points.len() - c.mmap_threads.len() - 3..] {
            eprintln!(
                "{:>9} {:>8} threads {:>2} qd {:>2}: {:>8.0} IOPS  mean {:>8.1} us  p99 {:>8.1} us  cpu {:>6.1} us/IO{}",
                p.op,
                p.method,
                p.threads,
                p.queue_depth,
                p.iops,
                p.lat_mean_us,
                p.lat_p99_us,
                p.cpu_us_per_io,
                p.major_faults_per_io
                    .map(|f| format!("  major faults/IO {f:.2}"))
                    .unwrap_or_default()
            );
        }
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
        let pts = measure(&c).unwrap();
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
            measure(&Config {
                file_bytes: 1 << 20,
                ..c.clone()
            })
            .is_err()
        );
    }
}
