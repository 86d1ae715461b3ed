//! `ycsb device`: the disk under a data directory measured (O_DIRECT, io_uring), a
//! table printed and the device result written, which runs then take their ceiling
//! from.

use clap::Args;
use kvtb_schema::{DeviceProbe, SCHEMA_VERSION};
use std::path::PathBuf;
use ycsb::probe::{ProbeConfig, Step};
use ycsb::results::{unix_now, write_json};
use ycsb::{Error, Result, machine, probe};

#[derive(Args, Debug)]
pub(super) struct DeviceArgs {
    /// Directory on the disk to measure (the probe file is written there).
    #[arg(long, default_value = "data")]
    pub(super) data: PathBuf,
    /// Size of the probe file (larger than the device's caches).
    #[arg(long, default_value = "2G")]
    pub(super) size: String,
    /// Queue depths to measure, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,4,16,64,128,256")]
    pub(super) qds: Vec<usize>,
    /// Seconds per point.
    #[arg(long, default_value_t = 2.0)]
    pub(super) seconds: f64,
    /// Fraction of reads in the mixed pattern (YCSB A: 0.5).
    #[arg(long, default_value_t = 0.5)]
    pub(super) mix: f64,
    /// Rings (each driven by a thread of its own, the I/Os in flight spread over
    /// them; a sequential pattern gives each ring its own stretch of the file) to try
    /// at each point, comma-separated; each point keeps the count that did the most
    /// I/Os and the result says which (`jobs`).
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    pub(super) jobs: Vec<usize>,
    /// Patterns to measure, comma-separated (seqread, randread, seqwrite, randwrite,
    /// mixed); all by default.
    #[arg(long, value_delimiter = ',')]
    pub(super) patterns: Vec<String>,
    /// Keep the probe file afterwards.
    #[arg(long)]
    pub(super) keep: bool,
    /// Use the probe file a previous `--keep` left, if it is at least --size long,
    /// instead of writing it again (the sequential write bandwidth is then not
    /// measured).
    #[arg(long)]
    pub(super) reuse: bool,
    /// Reads of the random patterns land in random 4 KiB frames of a region of this
    /// size (split over the rings), as in a page cache read into directly (the
    /// authors' C KVell), instead of each I/O slot's own buffer (fio); e.g. 1300M.
    #[arg(long, conflicts_with_all = ["copy_into", "check_reads"])]
    pub(super) read_into: Option<String>,
    /// Reads of the random patterns land in each slot's own buffer and are then
    /// copied into a random 4 KiB frame of a region of this size (split over the
    /// rings), as this project's KVell does with its page cache.
    #[arg(long, conflicts_with = "check_reads")]
    pub(super) copy_into: Option<String>,
    /// Checksum every read's bytes (CRC32, as KVell's recovery checks every item it
    /// scans) when it completes, sequential points included: the disk's rate for a
    /// reader that looks at what it read. On the development VM reading the bytes
    /// slowed the disk's sequential reads themselves (results/kvell-4m-ab/scan-rotation).
    #[arg(long)]
    pub(super) check_reads: bool,
    /// Hold this process's CPU use at this many cores while each point runs, the
    /// probe's own threads included, with spinning threads: the disk measured with the
    /// CPUs as busy as an engine's run kept them (the run's CPU seconds over its
    /// seconds), where a virtual disk slows when the guest's CPUs are busy; e.g. 0.9.
    #[arg(long)]
    pub(super) cpu_load: Option<f64>,
    /// Each I/O slot's buffer (and the fill's) in 4 KiB pages from the heap, as fio's
    /// are by default (`--mem=malloc`), instead of a mapping of its own in 2 MiB
    /// transparent huge pages: from 4 KiB pages the block layer splits a 1 MiB read
    /// on a virtio disk (256 segments, over its 254), and sequential reads measure
    /// far below what the engines' huge-page buffers get.
    #[arg(long)]
    pub(super) small_pages: bool,
    /// The sequential points' shapes, comma-separated, each READSxSIZE (reads in
    /// flight, bytes per read), each tried with every ring count of --jobs; each
    /// sequential pattern keeps the one that moved the most bytes and says which.
    #[arg(long, value_delimiter = ',', default_value = "8x1M,8x256K,16x256K")]
    pub(super) seq_shapes: Vec<String>,
    /// Instead of a probe file: read these existing files (comma-separated; never
    /// written) once front to back, all at once, one ring per file, with each shape of
    /// --seq-shapes (reads in flight per file), and keep the fastest: how fast the disk
    /// gives an engine's own data files to a reader that only reads them, e.g. the
    /// sequential ceiling of a recovery that reads each worker's slabs at once
    /// (scripts/kvell-recovery). Measures only that `seqread` point, one ring per file
    /// whatever --jobs says, the shapes in an order rotated from run to run; needs
    /// --out (the disk's default result keeps the whole probe's ceilings).
    #[arg(
        long,
        value_delimiter = ',',
        requires = "out",
        conflicts_with_all = [
            "reuse", "keep", "patterns", "read_into", "copy_into", "check_reads", "cpu_load",
            "qds", "jobs", "seconds", "size", "mix", "data"
        ]
    )]
    pub(super) read_files: Vec<PathBuf>,
    /// Where to write the result (default results/device/device-<disk>.json).
    #[arg(long)]
    pub(super) out: Option<PathBuf>,
}

/// Where a disk's device result is looked for by default.
pub(super) fn default_device_result(disk: &str) -> PathBuf {
    PathBuf::from(format!("results/device/device-{disk}.json"))
}

pub(super) fn device(a: &DeviceArgs) -> Result<()> {
    let bytes = kvapi::parse_bytes(&a.size).ok_or_else(|| {
        Error::usage(format!(
            "--size: expected a size such as 2G, got '{}'",
            a.size
        ))
    })?;
    if a.qds.is_empty() || a.qds.iter().any(|q| *q == 0 || *q > 4096) {
        return Err(Error::usage(
            "--qds: queue depths must be between 1 and 4096",
        ));
    }
    if a.jobs.is_empty() || a.jobs.iter().any(|j| *j == 0 || *j > 256) {
        return Err(Error::usage(
            "--jobs: ring counts must be between 1 and 256",
        ));
    }
    if a.seconds.is_nan() || a.seconds <= 0.0 || !(0.0..=1.0).contains(&a.mix) {
        return Err(Error::usage(
            "--seconds must be positive and --mix within [0, 1]",
        ));
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if let Some(c) = a.cpu_load
        && !(c > 0.0 && c <= cpus as f64)
    {
        return Err(Error::usage(format!(
            "--cpu-load: expected cores between 0 and the {cpus} this process may use, got {c}"
        )));
    }
    let region = |flag: &str, v: &str| -> Result<u64> {
        match kvapi::parse_bytes(v) {
            Some(b) if b >= 4096 => Ok(b),
            _ => Err(Error::usage(format!(
                "--{flag}: expected a size of at least 4K such as 1300M, got '{v}'"
            ))),
        }
    };
    let buffers = match (&a.read_into, &a.copy_into) {
        (Some(v), _) => probe::Buffers::ReadInto(region("read-into", v)?),
        (None, Some(v)) => probe::Buffers::CopyInto(region("copy-into", v)?),
        (None, None) if a.check_reads => probe::Buffers::Checked,
        (None, None) => probe::Buffers::Own,
    };
    let seq_shapes = a
        .seq_shapes
        .iter()
        .map(|s| parse_shape(s))
        .collect::<Result<Vec<_>>>()?;
    // the disk described: the probe file's, or that of the first file read
    let at = match a.read_files.first() {
        Some(f) => f.clone(),
        None => {
            std::fs::create_dir_all(&a.data)
                .map_err(|e| Error::io_at("cannot create", &a.data, e))?;
            a.data.clone()
        }
    };
    let machine = machine::describe(Some(&at));
    let disk = machine
        .disk
        .as_ref()
        .map(|d| d.device.clone())
        .unwrap_or_else(|| "unknown".into());
    let file = a.data.join("kvtb-device-probe.dat");
    let cfg = ProbeConfig {
        file: file.clone(),
        file_bytes: bytes,
        queue_depths: a.qds.clone(),
        seconds: a.seconds,
        mixed_read_fraction: a.mix,
        seed: 1,
        jobs: a.jobs.clone(),
        patterns: a.patterns.clone(),
        reuse: a.reuse,
        buffers,
        cpu_load: a.cpu_load,
        small_pages: a.small_pages,
        seq_shapes,
    };
    let started = unix_now();
    // the points, and the file (or files) they read with its bytes
    let (fill, points, file, bytes) = if a.read_files.is_empty() {
        let result = probe::probe(&cfg, &mut show);
        if !a.keep {
            let _ = std::fs::remove_file(&file);
        }
        let (fill, points) = result?;
        (fill, points, file, bytes)
    } else {
        let p = probe::probe_files(&a.read_files, &cfg.seq_shapes, a.small_pages, &mut show)?;
        let names: Vec<String> = a
            .read_files
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        let total = a
            .read_files
            .iter()
            .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
            .sum();
        (0.0, vec![p], PathBuf::from(names.join(",")), total)
    };
    println!("# device {disk}: {}", machine::one_line(&machine));
    let report = DeviceProbe {
        format: SCHEMA_VERSION,
        kind: DeviceProbe::KIND.into(),
        command: std::env::args().collect(),
        commit: env!("KVTB_COMMIT").into(),
        started_unix_s: started,
        machine,
        file: file.display().to_string(),
        file_bytes: bytes,
        fill_mib_per_s: fill,
        buffers: buffers.describe(),
        slot_pages: if a.small_pages { "4 KiB" } else { "2 MiB" }.into(),
        points,
    };
    if buffers == probe::Buffers::Checked {
        println!("# every pattern's {}", report.buffers);
    } else if !report.buffers.is_empty() {
        println!("# random patterns' {}", report.buffers);
    }
    if let Some(c) = a.cpu_load {
        println!("# the process held at {c} cores of CPU while each point ran (--cpu-load)");
    }
    println!(
        "# each I/O slot's buffer in {} pages{}",
        report.slot_pages,
        if a.small_pages {
            " from the heap (--small-pages)"
        } else {
            " (transparent huge pages; huge: the share the kernel gave)"
        }
    );
    println!("pattern    qd jobs   block      IOPS     MiB/s  mean us   p99 us  cores  huge");
    for p in &report.points {
        println!(
            "{:<9} {:>3} {:>4} {:>7} {:>9.0} {:>9.1} {:>8.1} {:>8.1} {:>6.2} {:>5}",
            p.pattern,
            p.queue_depth,
            p.jobs.unwrap_or(1),
            p.block_bytes,
            p.iops,
            p.mib_per_s,
            p.lat_mean_us,
            p.lat_p99_us,
            p.cpu_cores.unwrap_or(0.0),
            p.huge_page_fraction
                .map_or("-".into(), |h| format!("{h:.2}"))
        );
    }
    if fill > 0.0 {
        println!("sequential fill (1 MiB O_DIRECT writes, QD 1): {fill:.0} MiB/s");
    }
    if let (Some(m), Some(model)) = (report.iops("mixed", None), report.mix_iops(a.mix)) {
        println!(
            "best mixed IOPS {m:.0} vs harmonic model from read/write {model:.0} ({:+.0}%)",
            (m / model - 1.0) * 100.0
        );
    }
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| default_device_result(&disk));
    write_json(&out, &report)?;
    println!("device result written to {}", out.display());
    Ok(())
}

/// A sequential shape, READSxSIZE (`8x1M`): reads in flight (1-256) and bytes per
/// read (a multiple of 4096, up to 64 MiB).
fn parse_shape(s: &str) -> Result<(usize, usize)> {
    let bad = || {
        Error::usage(format!(
            "--seq-shapes: expected READSxSIZE such as 8x1M (1-256 reads in flight of a \
             multiple of 4K up to 64M), got '{s}'"
        ))
    };
    let (n, size) = s.trim().split_once(['x', 'X']).ok_or_else(bad)?;
    let n: usize = n.parse().map_err(|_| bad())?;
    let size = kvapi::parse_bytes(size).ok_or_else(bad)? as usize;
    if !(1..=256).contains(&n) || size == 0 || !size.is_multiple_of(4096) || size > 64 << 20 {
        return Err(bad());
    }
    Ok((n, size))
}

/// The probe's progress on standard error.
fn show(step: Step<'_>) {
    match step {
        Step::Filling { file, mib } => eprintln!("filling {} ({mib} MiB) ...", file.display()),
        Step::Tried(p) => eprintln!(
            "  tried {:>9} qd {:>3} bs {:>7} on {} ring(s): {:>9.0} IOPS {:>8.1} MiB/s",
            p.pattern,
            p.queue_depth,
            p.block_bytes,
            p.jobs.unwrap_or(1),
            p.iops,
            p.mib_per_s
        ),
        Step::Measured(p) => eprintln!(
            "{:>9} qd {:>3} jobs {:>2} bs {:>7}: {:>9.0} IOPS {:>8.1} MiB/s  lat mean {:>8.1} us p99 {:>8.1} us",
            p.pattern,
            p.queue_depth,
            p.jobs.unwrap_or(1),
            p.block_bytes,
            p.iops,
            p.mib_per_s,
            p.lat_mean_us,
            p.lat_p99_us
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_shape;

    #[test]
    fn sequential_shapes_parse_or_say_why_not() {
        assert_eq!(parse_shape("8x1M").unwrap(), (8, 1 << 20));
        assert_eq!(parse_shape(" 16X256K").unwrap(), (16, 256 << 10));
        for bad in [
            "8", "x1M", "0x1M", "300x4K", "8x1000", "8x128M", "ax1M", "8xlots",
        ] {
            let e = parse_shape(bad).unwrap_err().to_string();
            assert!(
                e.contains("--seq-shapes") && e.contains(bad.trim()),
                "{bad}: {e}"
            );
        }
    }
}
