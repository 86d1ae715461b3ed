//! `ycsb iomethods` (the paper's Table 3): random 4 KiB I/O on one file through mmap,
//! O_DIRECT pread/pwrite and io_uring; a table printed and the result written.

use clap::Args;
use kvtb_schema::{IoMethods, SCHEMA_VERSION};
use std::path::PathBuf;
use ycsb::iomethods::{self, Config, Step};
use ycsb::results::{unix_now, write_json};
use ycsb::{Error, Result, machine};

#[derive(Args, Debug)]
pub(super) struct IoMethodsArgs {
    /// Directory on the disk to measure (the file is written there and removed).
    #[arg(long, default_value = "data")]
    pub(super) data: PathBuf,
    /// Size of the file.
    #[arg(long, default_value = "4G")]
    pub(super) size: String,
    /// Seconds per point.
    #[arg(long, default_value_t = 3.0)]
    pub(super) seconds: f64,
    /// Thread counts for mmap, comma-separated (the paper: 1 and 8).
    #[arg(long, value_delimiter = ',', default_value = "1,8")]
    pub(super) mmap_threads: Vec<usize>,
    /// Where to write the result.
    #[arg(long, default_value = "results/iomethods.json")]
    pub(super) out: PathBuf,
}

pub(super) fn iomethods(a: &IoMethodsArgs) -> Result<()> {
    let bytes = kvapi::parse_bytes(&a.size).ok_or_else(|| {
        Error::usage(format!(
            "--size: expected a size such as 4G, got '{}'",
            a.size
        ))
    })?;
    if a.seconds.is_nan() || a.seconds <= 0.0 {
        return Err(Error::usage("--seconds must be positive"));
    }
    std::fs::create_dir_all(&a.data).map_err(|e| Error::io_at("cannot create", &a.data, e))?;
    let machine = machine::describe(Some(&a.data));
    let c = Config {
        file: a.data.join("kvtb-iomethods.dat"),
        file_bytes: bytes,
        seconds: a.seconds,
        mmap_threads: a.mmap_threads.clone(),
        seed: 1,
    };
    let started = unix_now();
    let r = iomethods::measure(&c, &mut show);
    let _ = std::fs::remove_file(&c.file);
    let points = r?;
    println!(
        "# I/O methods, 4 KiB random I/O: {}",
        machine::one_line(&machine)
    );
    println!("op        method    threads  qd      IOPS   mean us    p99 us  cpu us/IO");
    for p in &points {
        println!(
            "{:<9} {:<9} {:>7} {:>3} {:>9.0} {:>9.1} {:>9.1} {:>10.1}",
            p.op,
            p.method,
            p.threads,
            p.queue_depth,
            p.iops,
            p.lat_mean_us,
            p.lat_p99_us,
            p.cpu_us_per_io
        );
    }
    let doc = IoMethods {
        format: SCHEMA_VERSION,
        kind: IoMethods::KIND.into(),
        command: std::env::args().collect(),
        commit: env!("KVTB_COMMIT").into(),
        started_unix_s: started,
        file: c.file.display().to_string(),
        file_bytes: bytes / (1 << 20) * (1 << 20),
        memory_bytes: machine.memory_bytes.unwrap_or(0),
        machine,
        block_bytes: 4096,
        points,
        notes: iomethods::notes(&c),
    };
    write_json(&a.out, &doc)?;
    println!("result written to {}", a.out.display());
    Ok(())
}

/// The comparison's progress on standard error.
fn show(step: Step<'_>) {
    match step {
        Step::Filling { file, mib } => eprintln!("filling {} ({mib} MiB) ...", file.display()),
        Step::Measured(points) => {
            for p in points {
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
    }
}
