//! CPU load beside a probe point (`ycsb device --cpu-load CORES`): spinning threads
//! that hold this process's CPU use, the probe's own rings included, at CORES cores
//! while the point runs. The disk is then measured with the CPUs as busy as an
//! engine's run kept them, which is the ceiling that run could reach: on a virtual
//! machine the disk is served by the host on behalf of the guest's CPUs, and an
//! engine cannot do its reads without using those CPUs (issue 18, item 3).
//!
//! Each burner thread looks at the process's CPU time every quarter millisecond and
//! spins for the next quarter if the process is behind `cores` x the time since the
//! point started, sleeps otherwise: together they fill what the rings leave of the
//! target, and nothing when the rings alone use more.

use crate::procfs::process_cpu;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long a burner spins or sleeps before it looks again.
const SLICE: Duration = Duration::from_micros(250);

/// Whether the process, having used `used` of CPU in `wall` of time, is behind a load
/// of `cores` (so a burner should spin now).
pub(crate) fn behind(used: Duration, wall: Duration, cores: f64) -> bool {
    used.as_secs_f64() < cores * wall.as_secs_f64()
}

/// Burner threads for a load of `cores`: one per CPU the process may run on (a load
/// above that cannot be held, and is refused by the command).
pub(crate) fn burners(cores: Option<f64>) -> usize {
    match cores {
        Some(c) if c > 0.0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        _ => 0,
    }
}

/// One burner thread's loop: spins or sleeps in slices, holding the process at
/// `cores` from the moment it is called, until `stop`.
pub(crate) fn burn(cores: f64, stop: &AtomicBool) {
    let (c0, t0) = (process_cpu(), Instant::now());
    while !stop.load(Ordering::Relaxed) {
        if behind(process_cpu().saturating_sub(c0), t0.elapsed(), cores) {
            let s = Instant::now();
            while s.elapsed() < SLICE {
                std::hint::spin_loop();
            }
        } else {
            std::thread::sleep(SLICE);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn spins_only_while_behind_the_load() {
        let s = Duration::from_secs_f64;
        assert!(behind(s(0.4), s(1.0), 0.5));
        assert!(!behind(s(0.6), s(1.0), 0.5));
        assert!(behind(s(1.5), s(1.0), 2.0), "a load above one core");
        assert!(!behind(s(0.0), s(0.0), 1.0), "nothing owed at the start");
        assert_eq!(burners(None), 0);
        assert_eq!(burners(Some(0.0)), 0);
        assert!(burners(Some(0.5)) >= 1);
    }

    #[test]
    fn a_burner_uses_cpu_and_stops() {
        let stop = AtomicBool::new(false);
        let c0 = process_cpu();
        std::thread::scope(|s| {
            s.spawn(|| burn(1.0, &stop));
            std::thread::sleep(Duration::from_millis(100));
            stop.store(true, Ordering::Relaxed);
        });
        // a load of a whole core for 100 ms: the burner spun for some of it (how much
        // depends on what else the machine runs), and the scope's end shows it stopped
        assert!(process_cpu() - c0 > Duration::from_millis(5));
    }
}
