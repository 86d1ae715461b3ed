//! What the kernel counts for this process and the data disk: CPU time and major
//! faults (getrusage), storage I/O (/proc/self/io) and a block device's counters
//! (/proc/diskstats). The sampler, the phase snapshots and the I/O method comparison
//! all read them here.
#![expect(
    unsafe_code,
    reason = "getrusage and clock_gettime fill libc structs through raw pointers"
)]

use std::time::Duration;

/// The process's resource use (getrusage, RUSAGE_SELF).
#[derive(Clone, Copy, Debug, Default)]
pub struct Usage {
    pub user: Duration,
    pub system: Duration,
    /// Page faults that had to read the disk.
    pub major_faults: u64,
}

/// Resource use of this process so far.
pub fn usage() -> Usage {
    // SAFETY: getrusage writes into the zeroed struct we own; RUSAGE_SELF is valid.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Usage {
        user: tv(ru.ru_utime),
        system: tv(ru.ru_stime),
        major_faults: ru.ru_majflt as u64,
    }
}

/// CPU time of this process (user, system).
pub fn cpu_times() -> (Duration, Duration) {
    let u = usage();
    (u.user, u.system)
}

/// CPU time of this process so far, all threads, user and system together, to the
/// nanosecond (CLOCK_PROCESS_CPUTIME_ID; getrusage's microseconds are too coarse for
/// the probe's CPU load, which reads it every quarter millisecond).
pub fn process_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own; the clock id is valid.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        let (u, s) = cpu_times();
        return u + s;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Bytes this process read from and wrote to storage (/proc/self/io `read_bytes`,
/// `write_bytes`); `None` where the kernel does not expose them.
pub fn proc_io() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/self/io").ok()?;
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    Some((field("read_bytes:")?, field("write_bytes:")?))
}

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

/// The CPU time the hypervisor took from this machine's virtual CPUs so far (all
/// CPUs: /proc/stat's `steal`, read from the host's steal clock, so it adds up exactly
/// though it is reported at the scheduler's tick; 0 on bare metal).
pub fn parse_steal(text: &str, hz: u64) -> Option<Duration> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    // user nice system idle iowait irq softirq steal guest guest_nice
    let steal: u64 = line.split_whitespace().nth(8)?.parse().ok()?;
    (hz > 0).then(|| Duration::from_nanos(steal.saturating_mul(1_000_000_000) / hz))
}

/// The machine's stolen CPU time now.
pub fn steal() -> Option<Duration> {
    // SAFETY: sysconf only reads a configuration value.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    parse_steal(
        &std::fs::read_to_string("/proc/stat").ok()?,
        u64::try_from(hz).ok()?,
    )
}

/// The `some` total of a pressure-stall file: how long, in all, at least one task of
/// the machine was held up (waiting for a CPU, or stalled on memory: reclaim,
/// compaction, refaults).
pub fn parse_pressure(text: &str) -> Option<Duration> {
    let line = text.lines().find(|l| l.starts_with("some "))?;
    let us: u64 = line
        .split_whitespace()
        .find_map(|f| f.strip_prefix("total="))?
        .parse()
        .ok()?;
    Some(Duration::from_micros(us))
}

/// The machine's CPU and memory pressure-stall totals now (/proc/pressure; None
/// where the kernel has no PSI).
pub fn pressure() -> (Option<Duration>, Option<Duration>) {
    let read = |kind: &str| {
        std::fs::read_to_string(format!("/proc/pressure/{kind}"))
            .ok()
            .and_then(|t| parse_pressure(&t))
    };
    (read("cpu"), read("memory"))
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
    fn parses_steal_and_pressure() {
        let text = "cpu  1000 50 300 90000 20 7 3 250 0 0\ncpu0 500 25 150 45000 10 3 1 125 0 0\n";
        assert_eq!(parse_steal(text, 100), Some(Duration::from_millis(2_500)));
        assert!(parse_steal("cpu  1 2 3\n", 100).is_none(), "too few fields");
        assert!(parse_steal("intr 1\n", 100).is_none());
        let psi = "some avg10=1.13 avg60=2.33 avg300=1.62 total=5575046460\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
        assert_eq!(
            parse_pressure(psi),
            Some(Duration::from_micros(5_575_046_460))
        );
        assert!(parse_pressure("full avg10=0.00 total=3\n").is_none());
        assert!(steal().is_some(), "/proc/stat is readable on Linux");
    }
}
