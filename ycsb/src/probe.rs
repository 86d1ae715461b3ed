//! The device roofline (`ycsb device`): what the disk under a data directory can do
//! with O_DIRECT and io_uring, measured on a file of our own: random 4 KiB reads,
//! writes and a read/write mix at queue depths 1..256, and sequential bandwidth.
//! Each run's result can then state the ceiling for its own I/O mix and the fraction
//! of it reached (the paper: KVell reaches 98% of what the Optane can do).

mod burn;
mod point;
mod uring;

pub use point::{PointSpec, measure_files, measure_point, run_point};
pub use uring::Buffers;

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
    /// Ring counts to try at each random point (each ring driven by a thread of its
    /// own, the I/Os in flight spread over them); the point keeps the count that
    /// did the most I/Os and says which. Counts above a point's queue depth are
    /// skipped. The sequential points use one ring.
    pub jobs: Vec<usize>,
    /// Patterns to measure (`seqread`, `randread`, `seqwrite`, `randwrite`, `mixed`);
    /// empty: all, in that order.
    pub patterns: Vec<String>,
    /// Use the file as it is if it is at least `file_bytes` long, instead of writing
    /// it first (the fill bandwidth is then reported as 0).
    pub reuse: bool,
    /// Where the random points' reads land ([`Buffers::Checked`]: every point's
    /// reads, the sequential ones' too, checksummed where they land).
    pub buffers: Buffers,
    /// Cores of CPU the process is held at while each point runs, the probe's own
    /// threads included (`ycsb device --cpu-load`); `None`: the probe alone.
    pub cpu_load: Option<f64>,
    /// Each I/O slot's buffer (and the fill's) in 4 KiB pages from the heap, as fio's
    /// default (`--mem=malloc`), instead of a mapping of its own in 2 MiB pages
    /// (`AlignedBuf::huge`: a large I/O one segment, as the engines' large reads).
    pub small_pages: bool,
    /// The sequential points' shapes, (reads in flight, bytes per read), each tried
    /// with every ring count; each sequential pattern keeps the shape and count that
    /// moved the most bytes and says which (`queue_depth`, `block_bytes`, `jobs`).
    /// Empty: [`SEQ_SHAPES`].
    pub seq_shapes: Vec<(usize, usize)>,
}

/// The sequential shapes tried by default: eight reads of 1 MiB (recovery's default),
/// and of 256 KiB, eight and sixteen. On the development VM's disk eight of 256 KiB
/// read 14-28% more than eight of 1 MiB in one hour with fio
/// (results/kvell-4m/measurements.md, "Sequential read sizes with fio"): a probe of
/// one shape states the disk's sequential bandwidth only for that shape.
pub const SEQ_SHAPES: [(usize, usize); 3] = [(8, 1 << 20), (8, 256 << 10), (16, 256 << 10)];

/// What a probe (or the I/O method comparison) tells its caller as it goes.
#[derive(Debug)]
pub enum Step<'a> {
    /// The file is being written once, `mib` MiB.
    Filling { file: &'a Path, mib: u64 },
    /// A point was measured with one of several ring counts.
    Tried(&'a ProbePoint),
    /// A point was measured (with the best of the ring counts tried).
    Measured(&'a ProbePoint),
}

/// An I/O buffer of `len` bytes: in 2 MiB pages (`AlignedBuf::huge`), or with
/// `small_pages` in 4 KiB pages from the heap, as fio's by default.
pub(crate) fn slot_buf(len: usize, small_pages: bool) -> AlignedBuf {
    if small_pages {
        AlignedBuf::new(len)
    } else {
        AlignedBuf::huge(len)
    }
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
pub(crate) fn fill(path: &Path, bytes: u64, small_pages: bool) -> Result<f64> {
    let f = open_direct(path, true).map_err(|e| Error::Io {
        what: format!(
            "cannot open {} with O_DIRECT (a tmpfs or network filesystem?)",
            path.display()
        ),
        path: Some(path.to_path_buf()),
        source: e,
    })?;
    let chunk = 1 << 20;
    let mut buf = slot_buf(chunk, small_pages);
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
    let reusable =
        c.reuse && std::fs::metadata(&c.file).is_ok_and(|m| m.is_file() && m.len() >= bytes);
    let fill_mib = if reusable {
        0.0
    } else {
        on(Step::Filling {
            file: &c.file,
            mib: bytes >> 20,
        });
        fill(&c.file, bytes, c.small_pages)?
    };
    let f = open_direct(&c.file, false).map_err(|e| Error::io_at("opening", &c.file, e))?;
    let mut rng = Rng::new(c.seed);
    let mut points = Vec::new();
    // Reads first, then writes, then the mix: a read measured right after writes runs
    // while the device (or the host under a virtual disk) still writes back, and reads
    // slower than it can. A pause lets the fill and each write pattern settle.
    const ORDER: [&str; 5] = ["seqread", "randread", "seqwrite", "randwrite", "mixed"];
    if let Some(bad) = c.patterns.iter().find(|p| !ORDER.contains(&p.as_str())) {
        return Err(Error::usage(format!(
            "unknown probe pattern '{bad}' (seqread, randread, seqwrite, randwrite, mixed)"
        )));
    }
    let wanted = |p: &str| c.patterns.is_empty() || c.patterns.iter().any(|w| w == p);
    // Each point: its pattern and the (queue depth, block) shapes it tries.
    let mut plan: Vec<(&str, Vec<(usize, usize)>)> = Vec::new();
    for pat in ORDER.into_iter().filter(|p| wanted(p)) {
        if pat.starts_with("seq") {
            let shapes: &[(usize, usize)] = if c.seq_shapes.is_empty() {
                &SEQ_SHAPES
            } else {
                &c.seq_shapes
            };
            plan.push((pat, shapes.to_vec()));
            continue;
        }
        for &qd in &c.queue_depths {
            plan.push((pat, vec![(qd, BLOCK)]));
        }
    }
    let settle = Duration::from_secs_f64((c.seconds / 2.0).clamp(0.0, 3.0));
    if !reusable {
        std::thread::sleep(settle);
    }
    let mut last = "";
    for (pat, shapes) in plan {
        if pat != last && last != "seqread" && last != "randread" && !last.is_empty() {
            std::thread::sleep(settle);
        }
        last = pat;
        // Sequential points try the ring counts too (each ring its own stretch of the
        // file): one ring of 8 x 1 MiB read a third less than KVell's recovery, two
        // rings of 2 x 2 MiB, in the same hour (scripts/kvell-recovery, 2026-12-04),
        // so one ring understated the disk's sequential reads.
        let one = [1];
        let tries: &[usize] = if c.jobs.is_empty() { &one } else { &c.jobs };
        let spec = |qd, block, jobs| PointSpec {
            pattern: pat,
            qd,
            block,
            read_fraction: c.mixed_read_fraction,
            secs: c.seconds,
            jobs,
            // a sequential point reads into its own buffers, checked or not
            buffers: if pat.starts_with("seq") && c.buffers != Buffers::Checked {
                Buffers::Own
            } else {
                c.buffers
            },
            cpu_load: c.cpu_load,
            small_pages: c.small_pages,
        };
        // the shape and ring count that moved the most bytes (at one block size, the
        // most I/Os)
        let several = tries.len() > 1 || shapes.len() > 1;
        let mut best: Option<ProbePoint> = None;
        for &(qd, block) in &shapes {
            for &jobs in tries.iter().filter(|&&j| j >= 1 && j <= qd) {
                let p = measure_point(&f, bytes, &spec(qd, block, jobs), &mut rng)?;
                if several {
                    on(Step::Tried(&p));
                }
                if best.as_ref().is_none_or(|b| p.mib_per_s > b.mib_per_s) {
                    best = Some(p);
                }
            }
        }
        // a point whose every ring count exceeds its depth runs on one ring
        let p = match best {
            Some(p) => p,
            None => {
                let (qd, block) = shapes[0];
                measure_point(&f, bytes, &spec(qd, block, 1), &mut rng)?
            }
        };
        on(Step::Measured(&p));
        points.push(p);
    }
    Ok((fill_mib, points))
}

/// Reads `paths` (existing files, never written) once front to back with each of
/// `shapes` (reads in flight per file, bytes per read; empty: [`SEQ_SHAPES`]), all
/// files at once, one ring each ([`measure_files`]), telling `on` of each try; returns
/// the try that moved the most bytes per second. The shapes go in an order rotated
/// from run to run (by the clock's seconds), so that no shape always reads first:
/// each one reads the same bytes the one before it just read.
pub fn probe_files(
    paths: &[PathBuf],
    shapes: &[(usize, usize)],
    small_pages: bool,
    on: &mut dyn FnMut(Step<'_>),
) -> Result<ProbePoint> {
    let mut files = Vec::with_capacity(paths.len());
    for p in paths {
        let f = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(p)
            .map_err(|e| Error::io_at("opening with O_DIRECT", p, e))?;
        let len = f
            .metadata()
            .map_err(|e| Error::io_at("reading the length of", p, e))?
            .len();
        files.push((f, len, p));
    }
    let refs: Vec<(&File, u64)> = files.iter().map(|(f, l, _)| (f, *l)).collect();
    let mut shapes: Vec<(usize, usize)> = if shapes.is_empty() {
        SEQ_SHAPES.to_vec()
    } else {
        shapes.to_vec()
    };
    let turn = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as usize;
    let n = shapes.len();
    shapes.rotate_left(turn % n.max(1));
    for &(qd, block) in &shapes {
        if let Some((_, len, p)) = files.iter().find(|(_, len, _)| *len < block as u64) {
            return Err(Error::usage(format!(
                "{} is {len} bytes, shorter than one read of the {qd}x{block} shape: \
                 give --seq-shapes with reads no longer than the shortest file",
                p.display()
            )));
        }
    }
    let mut best: Option<ProbePoint> = None;
    for &(qd, block) in &shapes {
        let p = measure_files(&refs, qd, block, small_pages)?;
        on(Step::Tried(&p));
        if best.as_ref().is_none_or(|b| p.mib_per_s > b.mib_per_s) {
            best = Some(p);
        }
    }
    let p = best.ok_or_else(|| Error::usage("no shape to read the files with"))?;
    on(Step::Measured(&p));
    Ok(p)
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
            jobs: vec![1],
            patterns: vec![],
            reuse: false,
            buffers: Buffers::Own,
            cpu_load: None,
            small_pages: false,
            seq_shapes: vec![(4, 1 << 20), (8, 64 << 10)],
        };
        let (fill, points) = probe(&c, &mut |_| {}).unwrap();
        assert!(fill > 0.0);
        assert_eq!(points.len(), 8);
        assert!(
            points
                .iter()
                .all(|p| p.iops > 0.0 && p.lat_p99_us >= p.lat_p50_us)
        );
        // each sequential pattern one point, of one of the shapes tried
        for pat in ["seqread", "seqwrite"] {
            let seq: Vec<_> = points.iter().filter(|p| p.pattern == pat).collect();
            assert_eq!(seq.len(), 1, "{pat}");
            let shape = (seq[0].queue_depth, seq[0].block_bytes);
            assert!(c.seq_shapes.contains(&shape), "{pat}: {shape:?}");
        }
        // the files read once each, whole, all at once: every byte of both, once
        let other = dir.path().join("other.dat");
        std::fs::copy(&c.file, &other).unwrap();
        let read = probe_files(
            &[c.file.clone(), other],
            &[(4, 1 << 20), (2, 256 << 10)],
            false,
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(read.jobs, Some(2));
        let bytes = read.iops * read.seconds * read.block_bytes as f64;
        assert!(
            (bytes - (32u64 << 20) as f64).abs() < 1.0,
            "{bytes} bytes read, {read:?}"
        );
        assert!(probe_files(&[dir.path().join("absent")], &[], false, &mut |_| {}).is_err());
        let e = probe_files(
            std::slice::from_ref(&c.file),
            &[(2, 32 << 20)],
            false,
            &mut |_| {},
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("probe.dat") && e.contains("shorter than one read"),
            "{e}"
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
