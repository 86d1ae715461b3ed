//! Device accounting: what the data directory's block device did around and during a
//! phase (from snapshots of the kernel's counters), and the ceiling a `ycsb device`
//! result sets for the phase's I/O mix.

use crate::procfs::{DiskStats, cpu_times, diskstats, proc_io};
use kvtb_schema::{Ceiling, DeviceProbe, DeviceUse, Phase};
use std::path::Path;
use std::time::Duration;

/// Process CPU, process I/O and device counters at one moment.
#[derive(Clone, Copy, Debug)]
pub struct Snapshot {
    pub cpu: (Duration, Duration),
    pub proc_io: Option<(u64, u64)>,
    pub disk: Option<DiskStats>,
}

impl Snapshot {
    pub fn take(device: Option<&str>) -> Snapshot {
        Snapshot {
            cpu: cpu_times(),
            proc_io: proc_io(),
            disk: device.and_then(diskstats),
        }
    }
}

/// Device use between `a` and `b` over `secs`, for `ops` operations that read
/// `user_read` and wrote `user_written` bytes.
pub fn device_use(
    device: &str,
    a: &DiskStats,
    b: &DiskStats,
    secs: f64,
    ops: u64,
    user_read: u64,
    user_written: u64,
) -> DeviceUse {
    let d = |x: u64, y: u64| y.saturating_sub(x);
    let (reads, writes) = (d(a.reads, b.reads), d(a.writes, b.writes));
    let (rb, wb) = (
        d(a.read_bytes, b.read_bytes),
        d(a.write_bytes, b.write_bytes),
    );
    let ratio = |x: u64, y: u64| (y > 0).then(|| x as f64 / y as f64);
    let per_sec = |x: u64| if secs > 0.0 { x as f64 / secs } else { 0.0 };
    let busy = if secs > 0.0 {
        (d(a.io_ticks_ms, b.io_ticks_ms) as f64 / 1000.0 / secs).min(1.0)
    } else {
        0.0
    };
    DeviceUse {
        device: device.to_string(),
        reads: Some(reads),
        writes: Some(writes),
        read_bytes: Some(rb),
        write_bytes: Some(wb),
        flushes: Some(d(a.flushes, b.flushes)),
        utilisation: Some(busy),
        read_iops: Some(per_sec(reads)),
        write_iops: Some(per_sec(writes)),
        ios_per_op: Some(ratio(reads + writes, ops).unwrap_or(0.0)),
        read_amplification: ratio(rb, user_read),
        write_amplification: ratio(wb, user_written),
        note: "whole-device counters (/proc/diskstats): I/O of other processes on the same device is included".into(),
    }
}

/// The ceiling of a phase from its device use and a device result read from `path`.
pub fn ceiling(r: &Phase, path: &Path, d: &DeviceProbe) -> Option<Ceiling> {
    let dev = r.device.as_ref()?;
    let ios = dev.reads.unwrap_or(0) + dev.writes.unwrap_or(0);
    let ios_per_op = dev.ios_per_op.unwrap_or(0.0);
    // An engine that served the phase from memory (below one device I/O per hundred
    // operations) is not bound by the device: no ceiling rather than an absurd one.
    if ios == 0 || ios_per_op < 0.01 {
        return None;
    }
    let rf = dev.reads.unwrap_or(0) as f64 / ios as f64;
    let device_iops = d.mix_iops(rf)?;
    let ceiling_ops_sec = device_iops / ios_per_op;
    Some(Ceiling {
        device_result: path.display().to_string(),
        read_fraction: Some(rf),
        device_iops: Some(device_iops),
        ios_per_op: Some(ios_per_op),
        ceiling_ops_sec: Some(ceiling_ops_sec),
        fraction: Some(r.throughput_ops_sec / ceiling_ops_sec),
        note: "counts device I/Os whatever their size: exact for 4 KiB random I/O engines (KVell), an estimate for engines issuing large sequential I/Os".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derives_amplification_and_ios_per_op() {
        let a = DiskStats::default();
        let b = DiskStats {
            reads: 1000,
            read_bytes: 4_096_000,
            writes: 500,
            write_bytes: 2_048_000,
            io_ticks_ms: 500,
            flushes: 0,
        };
        let u = device_use("vda", &a, &b, 1.0, 1000, 1_024_000, 512_000);
        assert_eq!(u.ios_per_op, Some(1.5));
        assert_eq!(u.read_amplification, Some(4.0));
        assert_eq!(u.write_amplification, Some(4.0));
        assert_eq!(u.utilisation, Some(0.5));
        assert_eq!(u.read_iops, Some(1000.0));
        let none = device_use("vda", &a, &b, 1.0, 0, 0, 0);
        assert_eq!(none.read_amplification, None);
    }
}
