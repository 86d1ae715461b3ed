//! A description of the machine a result came from (the schema's [`Machine`]),
//! read from /proc and /sys.

use kvtb_schema::{Disk, Machine};
use std::path::Path;

fn read(p: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

/// Describes this machine; `data_dir` (if it exists) selects the disk reported.
pub fn describe(data_dir: Option<&Path>) -> Machine {
    // machine facts through sysinfo; the disk under the data (block sizes, model,
    // rotational) from /sys, which sysinfo does not describe
    let (cpu_model, total) = match sysinfo::System::new() {
        Ok(mut sys) => {
            sys.refresh_cpu_list(sysinfo::CpuRefreshKind::nothing());
            sys.refresh_memory_specifics(sysinfo::MemoryRefreshKind::nothing().with_ram());
            let cpu = sys
                .cpus()
                .first()
                .map(|c| c.brand().trim().to_string())
                .filter(|b| !b.is_empty());
            (cpu, sys.total_memory())
        }
        Err(_) => (None, 0),
    };
    let cpu_model = cpu_model.unwrap_or_else(|| "unknown".into());
    Machine {
        hostname: sysinfo::System::host_name().unwrap_or_default(),
        cpu_model,
        cores: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        memory_bytes: (total > 0).then_some(total),
        kernel: sysinfo::System::kernel_version().unwrap_or_default(),
        os: sysinfo::System::long_os_version().unwrap_or_else(|_| std::env::consts::OS.to_string()),
        disk: data_dir.and_then(disk_of),
    }
}

/// The machine in one line (cores, CPU, memory, kernel, disk).
pub fn one_line(m: &Machine) -> String {
    format!(
        "{} cores ({}), {:.1} GiB RAM, kernel {}{}",
        m.cores,
        m.cpu_model,
        m.memory_bytes.unwrap_or(0) as f64 / (1u64 << 30) as f64,
        m.kernel,
        m.disk
            .as_ref()
            .map(|d| format!(
                ", disk {}{}{}{}",
                d.device,
                d.model
                    .as_ref()
                    .map(|m| format!(" ({m})"))
                    .unwrap_or_default(),
                d.scheduler
                    .as_ref()
                    .map(|s| format!(", scheduler {s}"))
                    .unwrap_or_default(),
                d.write_cache
                    .as_ref()
                    .map(|w| format!(", {w} cache"))
                    .unwrap_or_default()
            ))
            .unwrap_or_default()
    )
}

/// The file system type under `path` (the longest mount point holding it), e.g.
/// `ext4`, `tmpfs`.
pub fn filesystem_of(path: &Path) -> Option<String> {
    let canon = std::fs::canonicalize(existing(path)?).ok()?;
    let mounts = read("/proc/self/mounts")?;
    mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_src, mnt, fs) = (f.next()?, f.next()?, f.next()?);
            canon.starts_with(mnt).then(|| (mnt.len(), fs.to_string()))
        })
        .max_by_key(|(n, _)| *n)
        .map(|(_, fs)| fs)
}

/// `path`, or the nearest directory above it that exists (a data directory not yet
/// made lies on the file system of its parent).
fn existing(path: &Path) -> Option<std::path::PathBuf> {
    let mut p = path.to_path_buf();
    while !p.exists() {
        p = p.parent()?.to_path_buf();
        if p.as_os_str().is_empty() {
            p = ".".into();
        }
    }
    Some(p)
}

/// File systems whose data lives in memory only.
pub fn in_memory_filesystem(fs: &str) -> bool {
    matches!(fs, "tmpfs" | "ramfs" | "devtmpfs")
}

/// The block device under `path`, via its st_dev and /sys/dev/block.
pub fn disk_of(path: &Path) -> Option<Disk> {
    use std::os::unix::fs::MetadataExt;
    let p = existing(path)?;
    let dev = std::fs::metadata(&p).ok()?.dev();
    // major/minor only decode the integer (safe functions of libc)
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let sys = std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")).ok()?;
    // a partition's directory has a `partition` file; its parent is the whole disk
    let whole = if sys.join("partition").exists() {
        sys.parent()?.to_path_buf()
    } else {
        sys
    };
    let device = whole.file_name()?.to_string_lossy().into_owned();
    let q = whole.join("queue");
    let filesystem = filesystem_of(&p);
    Some(Disk {
        model: read(whole.join("device/model")),
        rotational: read(q.join("rotational")).map(|r| r == "1"),
        size_bytes: read(whole.join("size"))
            .and_then(|s| s.parse::<u64>().ok())
            .map(|s| s * 512),
        logical_block_size: read(q.join("logical_block_size")).and_then(|s| s.parse().ok()),
        physical_block_size: read(q.join("physical_block_size")).and_then(|s| s.parse().ok()),
        filesystem,
        scheduler: read(q.join("scheduler")).and_then(|s| active_scheduler(&s)),
        hw_queues: std::fs::read_dir(whole.join("mq"))
            .ok()
            .map(|d| d.count() as u64),
        queue_tags: read(whole.join("mq/0/nr_tags")).and_then(|s| s.parse().ok()),
        write_cache: read(q.join("write_cache")),
        device,
    })
}

/// The scheduler in use, from a device's `queue/scheduler` (`none [mq-deadline] kyber`:
/// the one in brackets; a device with one choice lists it bare).
fn active_scheduler(text: &str) -> Option<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let bracketed = words
        .iter()
        .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'));
    match (bracketed, words.as_slice()) {
        (Some(w), _) => Some(w.to_string()),
        (None, [w]) => Some(w.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::active_scheduler;

    #[test]
    fn the_scheduler_in_use_is_the_one_in_brackets() {
        let s = |t: &str| active_scheduler(t);
        assert_eq!(
            s("none [mq-deadline] kyber").as_deref(),
            Some("mq-deadline")
        );
        assert_eq!(s("[none] mq-deadline").as_deref(), Some("none"));
        assert_eq!(s("none").as_deref(), Some("none"));
        assert_eq!(s("none mq-deadline"), None);
        assert_eq!(s(""), None);
    }
}
