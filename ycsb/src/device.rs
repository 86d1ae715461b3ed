//! Device accounting: the block device's own counters (/proc/diskstats) around and
//! during a run, and the snapshot of process CPU and I/O taken with them.

use crate::measure::{cpu_times, proc_io};
use serde::Serialize;
use std::time::Duration;

/// Cumulative counters of one block device, from /proc/diskstats.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiskStats {
    pub reads: u64,
    pub read_bytes: u64,
    pub writes: u64,
    pub write_bytes: u64,
    /// Milliseconds the device had I/O in flight (busy time).
    pub io_ticks_ms: u64,
    pub flushes: u64,
}

/// Parses the line of `device` in a /proc/diskstats text.
pub fn parse_diskstats(text: &str, device: &str) -> Option<DiskStats> {
    text.lines().find_map(|l| {
        let mut f = l.split_whitespace();
        let (_maj, _min, name) = (f.next()?, f.next()?, f.next()?);
        if name != device {
            return None;
        }
        let v: Vec<u64> = f.map(|x| x.parse().unwrap_or(0)).collect();
        let at = |i: usize| v.get(i).copied().unwrap_or(0);
        Some(DiskStats {
            reads: at(0),
            read_bytes: at(2) * 512,
            writes: at(4),
            write_bytes: at(6) * 512,
            io_ticks_ms: at(9),
            flushes: at(15),
        })
    })
}

/// The device's counters now.
pub fn diskstats(device: &str) -> Option<DiskStats> {
    parse_diskstats(&std::fs::read_to_string("/proc/diskstats").ok()?, device)
}

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

/// What the device did between two snapshots, and what it means per request.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceUse {
    pub device: String,
    pub reads: u64,
    pub writes: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub flushes: u64,
    /// Fraction of the time the device had I/O in flight.
    pub utilisation: f64,
    pub read_iops: f64,
    pub write_iops: f64,
    /// Device I/Os (reads + writes) per operation of the driver.
    pub ios_per_op: f64,
    /// Device bytes read per byte the driver read (keys and values returned).
    pub read_amplification: Option<f64>,
    /// Device bytes written per byte the driver wrote (keys and values).
    pub write_amplification: Option<f64>,
    /// Whole-device counters include every process's I/O on this device.
    pub note: String,
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
    DeviceUse {
        device: device.to_string(),
        reads,
        writes,
        read_bytes: rb,
        write_bytes: wb,
        flushes: d(a.flushes, b.flushes),
        utilisation: if secs > 0.0 { (d(a.io_ticks_ms, b.io_ticks_ms) as f64 / 1000.0 / secs).min(1.0) } else { 0.0 },
        read_iops: per_sec(reads),
        write_iops: per_sec(writes),
        ios_per_op: ratio(reads + writes, ops).unwrap_or(0.0),
        read_amplification: ratio(rb, user_read),
        write_amplification: ratio(wb, user_written),
        note: "whole-device counters (/proc/diskstats): I/O of other processes on the same device is included".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_diskstats_line() {
        let text = " 7 0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n 254 0 vda 312978 4822 20031738 211706 470378 20361 14047360 128033 0 66788 372126 7578 70 1971992 2729 142418 29657\n";
        let s = parse_diskstats(text, "vda").unwrap();
        assert_eq!(s.reads, 312_978);
        assert_eq!(s.read_bytes, 20_031_738 * 512);
        assert_eq!(s.writes, 470_378);
        assert_eq!(s.write_bytes, 14_047_360 * 512);
        assert_eq!(s.io_ticks_ms, 66_788);
        assert_eq!(s.flushes, 142_418);
        assert!(parse_diskstats(text, "sda").is_none());
    }

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
        assert_eq!(u.ios_per_op, 1.5);
        assert_eq!(u.read_amplification, Some(4.0));
        assert_eq!(u.write_amplification, Some(4.0));
        assert_eq!(u.utilisation, 0.5);
        assert_eq!(u.read_iops, 1000.0);
        let none = device_use("vda", &a, &b, 1.0, 0, 0, 0);
        assert_eq!(none.read_amplification, None);
    }
}
