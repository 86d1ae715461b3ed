//! One point of the device probe: a pattern at a queue depth, its I/Os spread over
//! one or several rings, each driven by a thread of its own (fio's `numjobs`), and
//! what the rings measured added up into one [`ProbePoint`].

use super::burn::{burn, burners};
use super::uring::{Buffers, Pattern, RingJob, RingResult, new_hist, run_ring};
use crate::error::{Error, Result};
use crate::procfs::process_cpu;
use crate::rng::Rng;
use kvtb_schema::ProbePoint;
use std::fs::File;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// What one point measures.
#[derive(Clone, Copy, Debug)]
pub struct PointSpec<'a> {
    /// `randread`, `randwrite`, `mixed`, `seqread` or `seqwrite`.
    pub pattern: &'a str,
    /// I/Os in flight, all rings together.
    pub qd: usize,
    /// Bytes per I/O.
    pub block: usize,
    /// Fraction of reads of the `mixed` pattern.
    pub read_fraction: f64,
    pub secs: f64,
    /// Rings (one thread each) the I/Os are spread over; at most `qd`.
    pub jobs: usize,
    /// Where reads land (a region is split evenly over the rings).
    pub buffers: Buffers,
    /// Cores of CPU this process is held at while the point runs, the rings
    /// included ([`super::burn`]); `None`: the rings alone.
    pub cpu_load: Option<f64>,
    /// Each slot's buffer in 4 KiB pages from the heap (fio's default) instead of
    /// 2 MiB pages (`ProbeConfig::small_pages`).
    pub small_pages: bool,
}

/// The queue depth of each of `jobs` rings keeping `qd` I/Os in flight together:
/// as even as it divides, the first rings taking one more.
pub(crate) fn split_depth(qd: usize, jobs: usize) -> Vec<usize> {
    let jobs = jobs.clamp(1, qd.max(1));
    (0..jobs)
        .map(|j| qd / jobs + usize::from(j < qd % jobs))
        .collect()
}

/// The point that `rings` measured together at queue depth `qd`: their I/Os added
/// up over the time from the first ring's start to the last ring's last completion,
/// their latency histograms merged.
#[expect(
    clippy::expect_used,
    reason = "histograms of the same constant bounds always add"
)]
pub(crate) fn merge(
    pattern: &str,
    qd: usize,
    block: usize,
    rings: &[RingResult],
) -> Result<ProbePoint> {
    let (Some(t0), Some(t_end)) = (
        rings.iter().map(|r| r.t0).min(),
        rings.iter().map(|r| r.t_end).max(),
    ) else {
        return Err(Error::failed("a probe point without rings"));
    };
    let mut hist = new_hist();
    for r in rings {
        hist.add(&r.hist).expect("same bounds");
    }
    let done: u64 = rings.iter().map(|r| r.done).sum();
    let reads: u64 = rings.iter().map(|r| r.reads).sum();
    let elapsed = t_end.saturating_duration_since(t0).as_secs_f64().max(1e-9);
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
        jobs: Some(rings.len()),
        cpu_cores: None,
        cpu_load: None,
        huge_page_fraction: {
            let (all, huge) = rings.iter().fold((0u64, Some(0u64)), |(a, h), r| {
                (a + r.buf_bytes, h.zip(r.huge_bytes).map(|(x, y)| x + y))
            });
            huge.filter(|_| all > 0).map(|h| h as f64 / all as f64)
        },
    })
}

/// Runs each of `jobs` on a thread of its own, with the burners of a CPU load of
/// `cpu_load` cores beside them ([`burn`]), all started together, so that the
/// process's CPU is counted from the rings' start to their end; returns the rings'
/// results and that CPU use, in cores.
fn run_rings(jobs: Vec<RingJob<'_>>, cpu_load: Option<f64>) -> Result<(Vec<RingResult>, f64)> {
    let n_burn = burners(cpu_load);
    let start = Barrier::new(jobs.len() + n_burn + 1);
    let stop = AtomicBool::new(false);
    let mut cpu = (std::time::Duration::ZERO, 0.0);
    let results: Vec<Result<RingResult>> = std::thread::scope(|s| {
        for _ in 0..n_burn {
            let (start, stop) = (&start, &stop);
            let cores = cpu_load.unwrap_or(0.0);
            s.spawn(move || {
                start.wait();
                burn(cores, stop);
            });
        }
        let handles: Vec<_> = jobs
            .into_iter()
            .map(|job| {
                let start = &start;
                s.spawn(move || run_ring(job, start))
            })
            .collect();
        start.wait();
        let (c0, t0) = (process_cpu(), Instant::now());
        let joined = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::failed("a probe ring's thread panicked")))
            })
            .collect();
        cpu = (process_cpu().saturating_sub(c0), t0.elapsed().as_secs_f64());
        stop.store(true, Ordering::Relaxed);
        joined
    });
    let rings = results.into_iter().collect::<Result<Vec<_>>>()?;
    Ok((rings, cpu.0.as_secs_f64() / cpu.1.max(1e-9)))
}

/// Measures one point on `f` (`file_bytes` long, opened with O_DIRECT). Each ring
/// draws its own random offsets over the whole file (a stream derived from `rng`);
/// a sequential pattern gives each ring its own stretch of the file.
pub fn measure_point(
    f: &File,
    file_bytes: u64,
    spec: &PointSpec<'_>,
    rng: &mut Rng,
) -> Result<ProbePoint> {
    let pattern = Pattern::parse(spec.pattern)?;
    if spec.qd == 0 || spec.block == 0 || !spec.block.is_multiple_of(4096) {
        return Err(Error::usage(
            "a probe point needs a queue depth and a block size in 4 KiB units",
        ));
    }
    let blocks = file_bytes / spec.block as u64;
    let depths = split_depth(spec.qd, spec.jobs);
    let n = depths.len() as u64;
    if blocks < n {
        return Err(Error::usage(
            "the probe file is smaller than one block per ring",
        ));
    }
    if let Buffers::ReadInto(b) | Buffers::CopyInto(b) = spec.buffers
        && b < spec.block as u64 * n
    {
        return Err(Error::usage(format!(
            "a region of {b} bytes holds less than one {}-byte block for each of {n} rings",
            spec.block
        )));
    }
    let seed = rng.next_u64();
    let jobs = depths
        .iter()
        .enumerate()
        .map(|(j, &qd)| {
            let (first, len) = match pattern {
                Pattern::SeqRead | Pattern::SeqWrite => (j as u64 * (blocks / n), blocks / n),
                _ => (0, blocks),
            };
            RingJob {
                file: f,
                first,
                blocks: len,
                block: spec.block,
                pattern,
                qd,
                read_fraction: spec.read_fraction,
                secs: spec.secs,
                rng: Rng::derive(seed, j as u64),
                buffers: spec.buffers.per_ring(depths.len()),
                small_pages: spec.small_pages,
                once: false,
            }
        })
        .collect();
    let (rings, cores) = run_rings(jobs, spec.cpu_load)?;
    let mut p = merge(spec.pattern, spec.qd, spec.block, &rings)?;
    p.cpu_cores = Some(cores);
    p.cpu_load = spec.cpu_load.filter(|c| *c > 0.0);
    Ok(p)
}

/// Reads each of `files` (opened with O_DIRECT, each with its length) once front to
/// back, all at once, one ring per file keeping `qd` reads of `block` bytes in flight:
/// how fast the disk gives these very bytes to a reader that does nothing with them,
/// in the shape of an engine whose workers each read their own files at once
/// (`ycsb device --read-files`). The point's `queue_depth` is the reads in flight in
/// all (`qd` times the files), its `jobs` the files. A file's tail short of a whole
/// block is not read.
pub fn measure_files(
    files: &[(&File, u64)],
    qd: usize,
    block: usize,
    small_pages: bool,
) -> Result<ProbePoint> {
    if files.is_empty() || qd == 0 || block == 0 || !block.is_multiple_of(4096) {
        return Err(Error::usage(
            "reading files needs files, a queue depth and a block size in 4 KiB units",
        ));
    }
    if let Some((_, len)) = files.iter().find(|(_, len)| *len < block as u64) {
        return Err(Error::usage(format!(
            "a file of {len} bytes is shorter than one {block}-byte read"
        )));
    }
    let jobs = files
        .iter()
        .enumerate()
        .map(|(j, &(file, len))| RingJob {
            file,
            first: 0,
            blocks: len / block as u64,
            block,
            pattern: Pattern::SeqRead,
            qd,
            read_fraction: 1.0,
            secs: 0.0,
            rng: Rng::derive(7, j as u64),
            buffers: Buffers::Own,
            small_pages,
            once: true,
        })
        .collect();
    let (rings, cores) = run_rings(jobs, None)?;
    let mut p = merge("seqread", qd * files.len(), block, &rings)?;
    p.cpu_cores = Some(cores);
    Ok(p)
}

/// One point from one ring (the I/O method comparison's io_uring points).
#[expect(
    clippy::too_many_arguments,
    reason = "the settings of one point, each caller varying a different few"
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
    let spec = PointSpec {
        pattern,
        qd,
        block,
        read_fraction,
        secs,
        jobs: 1,
        buffers: Buffers::Own,
        cpu_load: None,
        small_pages: false,
    };
    measure_point(f, file_bytes, &spec, rng)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn depth_is_split_evenly_and_adds_up() {
        assert_eq!(split_depth(64, 1), vec![64]);
        assert_eq!(split_depth(64, 2), vec![32, 32]);
        assert_eq!(split_depth(5, 2), vec![3, 2]);
        assert_eq!(split_depth(1, 4), vec![1], "never more rings than I/Os");
        for qd in 1..=300 {
            for jobs in 1..=8 {
                let d = split_depth(qd, jobs);
                assert_eq!(d.iter().sum::<usize>(), qd);
                assert!(d.iter().all(|&x| x >= 1));
                assert!(d.iter().max().unwrap() - d.iter().min().unwrap() <= 1);
            }
        }
    }

    fn ring(done: u64, reads: u64, t0: Instant, ms: u64, lat_ns: u64) -> RingResult {
        let mut hist = new_hist();
        for _ in 0..done {
            hist.record(lat_ns).unwrap();
        }
        RingResult {
            done,
            reads,
            hist,
            t0,
            t_end: t0 + Duration::from_millis(ms),
            buf_bytes: 4096,
            huge_bytes: Some(0),
        }
    }

    #[test]
    fn rings_add_up_into_one_point() {
        let t0 = Instant::now();
        let rings = [
            ring(1000, 500, t0, 1000, 10_000),
            ring(3000, 1000, t0 + Duration::from_millis(10), 990, 30_000),
        ];
        let p = merge("mixed", 64, 4096, &rings).unwrap();
        assert_eq!(p.jobs, Some(2));
        assert_eq!(p.queue_depth, 64);
        assert!((p.seconds - 1.0).abs() < 1e-6, "{}", p.seconds);
        assert!((p.iops - 4000.0).abs() < 1e-3, "{}", p.iops);
        assert!((p.read_fraction - 0.375).abs() < 1e-9);
        // 1000 I/Os of 10 us and 3000 of 30 us: a mean of 25 us
        assert!((p.lat_mean_us - 25.0).abs() < 0.1, "{}", p.lat_mean_us);
        assert!(p.lat_p99_us > 29.0 && p.lat_p50_us > 29.0);
        assert!(merge("mixed", 64, 4096, &[]).is_err());
    }

    /// A point of 8 in flight on 4 KiB blocks, half of a mix reads.
    fn spec(pattern: &str, jobs: usize, secs: f64, buffers: Buffers) -> PointSpec<'_> {
        PointSpec {
            pattern,
            qd: 8,
            block: 4096,
            read_fraction: 0.5,
            secs,
            jobs,
            buffers,
            cpu_load: None,
            small_pages: false,
        }
    }

    #[test]
    fn a_point_of_several_rings_adds_up() {
        let dir = kvtestkit::conformance::TempDir::new("probe-point");
        std::fs::create_dir_all(dir.path()).unwrap();
        let path = dir.path().join("p.dat");
        super::super::fill(&path, 16 << 20, false).unwrap();
        let f = super::super::open_direct(&path, false).unwrap();
        let mut rng = Rng::new(3);
        for (pattern, jobs) in [("randread", 2), ("mixed", 3), ("seqread", 2)] {
            let p = measure_point(
                &f,
                16 << 20,
                &spec(pattern, jobs, 0.05, Buffers::Own),
                &mut rng,
            )
            .unwrap();
            assert_eq!(p.jobs, Some(jobs), "{pattern}");
            assert_eq!(p.queue_depth, 8);
            assert!(p.iops > 0.0 && p.seconds >= 0.05, "{pattern}: {p:?}");
            match pattern {
                "mixed" => assert!(p.read_fraction > 0.1 && p.read_fraction < 0.9),
                _ => assert_eq!(p.read_fraction, 1.0),
            }
        }
        // reads landing in a region (directly or copied there) are counted the same
        for buffers in [
            Buffers::ReadInto(1 << 20),
            Buffers::CopyInto(1 << 20),
            Buffers::Checked,
        ] {
            for pattern in ["randread", "mixed"] {
                let p = measure_point(&f, 16 << 20, &spec(pattern, 2, 0.05, buffers), &mut rng)
                    .unwrap();
                assert!(p.iops > 0.0 && p.read_fraction > 0.1, "{buffers:?}: {p:?}");
            }
        }
        // a point under a CPU load says so, and every point the cores it used
        let mut loaded = spec("randread", 2, 0.05, Buffers::Own);
        loaded.cpu_load = Some(0.5);
        let p = measure_point(&f, 16 << 20, &loaded, &mut rng).unwrap();
        assert_eq!(p.cpu_load, Some(0.5));
        assert!(p.cpu_cores.is_some_and(|c| c > 0.0), "{p:?}");
        let p = measure_point(
            &f,
            16 << 20,
            &spec("randread", 1, 0.05, Buffers::Own),
            &mut rng,
        )
        .unwrap();
        assert_eq!(p.cpu_load, None);
        assert!(p.cpu_cores.is_some());
        // a region too small to give every ring a frame is refused, not ignored
        let small = spec("randread", 2, 0.01, Buffers::ReadInto(4096));
        assert!(measure_point(&f, 16 << 20, &small, &mut rng).is_err());
        assert_eq!(
            Buffers::ReadInto(1 << 20).per_ring(2),
            Buffers::ReadInto(1 << 19)
        );
        assert_eq!(
            Buffers::CopyInto(3 << 20).per_ring(3),
            Buffers::CopyInto(1 << 20)
        );
        assert_eq!(Buffers::Own.per_ring(2), Buffers::Own);
        assert!(Buffers::Own.describe().is_empty());
        assert_eq!(Buffers::Checked.per_ring(2), Buffers::Checked);
        assert!(Buffers::Checked.describe().contains("checksummed"));
        // checked sequential reads are counted as the plain ones
        let p = measure_point(
            &f,
            16 << 20,
            &spec("seqread", 1, 0.05, Buffers::Checked),
            &mut rng,
        )
        .unwrap();
        assert!(p.iops > 0.0 && p.read_fraction == 1.0, "{p:?}");
        assert!(Buffers::ReadInto(4096).describe().contains("4096 bytes"));
        let bad = spec("sideways", 1, 0.01, Buffers::Own);
        assert!(measure_point(&f, 16 << 20, &bad, &mut rng).is_err());
    }
}
