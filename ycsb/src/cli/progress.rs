//! What a phase shows while it runs: a bar on a terminal, a status line every 10 s
//! otherwise (`[run] 30 s: N operations; X current ops/sec`, which `ycsb recovery`
//! reads from its child), and errors that stop a phase early. With `-s` (YCSB's
//! `status=true`), YCSB's own status line every `status.interval` seconds on standard
//! error instead: the time, the operations so far, the current throughput, the time
//! to completion, and per operation the interval's count, max, min, mean and
//! percentiles, as YCSB's StatusThread prints them.

use kvtb_schema::Sample;
use std::io::IsTerminal;
use std::sync::Arc;
use ycsb::measure::{Tick, Watch};
use ycsb::runner::{Ctx, Notice, Progress};

/// YCSB's status line (`-s`): every `interval` seconds, prefixed by `label`.
#[derive(Clone, Debug)]
pub(super) struct Status {
    pub(super) interval: u64,
    pub(super) label: String,
}

/// The context a phase runs in: progress output unless `quiet`, YCSB's status lines
/// with `status`, notices always.
pub(super) fn ctx(
    progress: bool,
    status: Option<Status>,
    device: Option<String>,
    watch: Option<Arc<Watch>>,
) -> Ctx {
    let notice: Notice = Arc::new(|e| eprintln!("error: {e}"));
    let progress: Option<Progress> = match status {
        Some(s) => Some(Arc::new(move |_label: &str, total: Option<u64>| {
            ycsb_status(&s, total)
        })),
        None => progress.then(|| Arc::new(tick) as Progress),
    };
    Ctx {
        progress,
        notice: Some(notice),
        device,
        watch,
    }
}

/// The progress output of a phase labelled `label` of `total` operations.
fn tick(label: &str, total: Option<u64>) -> Tick {
    let label = label.to_string();
    if std::io::stderr().is_terminal() {
        let (bar, template) = match total {
            Some(n) => (
                indicatif::ProgressBar::new(n),
                "{prefix} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}",
            ),
            // a time-limited phase has no total: count up instead of a bar at 0/0
            None => (
                indicatif::ProgressBar::new_spinner(),
                "{prefix} [{elapsed_precise}] {spinner} {pos} operations {msg}",
            ),
        };
        if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
            bar.set_style(style);
        }
        bar.set_prefix(label);
        Box::new(move |s| {
            bar.inc(s.total_ops);
            bar.set_message(format!("{:.0} ops/s", s.ops_per_sec));
        })
    } else {
        let mut done = 0u64;
        // Every 10 s by default; YCSB_STATUS_INTERVAL=N for every N seconds.
        let every = std::env::var("YCSB_STATUS_INTERVAL")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|n| *n > 0)
            .unwrap_or(10);
        Box::new(move |s| {
            done += s.total_ops;
            let whole = s.t.round() as u64;
            if whole > 0 && whole.is_multiple_of(every) {
                eprintln!(
                    "[{label}] {whole} s: {done} operations; {:.0} current ops/sec",
                    s.ops_per_sec
                );
            }
        })
    }
}

/// YCSB's `#.##` (at most two decimals, no trailing zeros).
fn num(x: f64) -> String {
    let s = format!("{x:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() || s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// YCSB's "est completion in" text for `secs` seconds.
fn remaining(secs: u64) -> String {
    let (d, h, m, s) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    let unit = |n: u64, one: &str| {
        if n == 0 {
            String::new()
        } else if n == 1 {
            format!("1 {one} ")
        } else {
            format!("{n} {one}s ")
        }
    };
    let mut out = unit(d, "day") + &unit(h, "hour");
    if d == 0 {
        out += &unit(m, "minute");
    }
    if out.is_empty() {
        out = unit(s.max(1), "second");
    }
    out
}

/// One status line of YCSB's StatusThread for the interval that ends with `s`.
pub(super) fn status_line(st: &Status, s: &Sample, done: u64, total: Option<u64>) -> String {
    let now = chrono_like_now();
    let mut line = format!("{}{now} {} sec: {done} operations; ", st.label, s.t as u64);
    if done > 0 {
        line += &format!("{} current ops/sec; ", num(s.ops_per_sec));
    }
    if let Some(t) = total
        && t > done
        && done > 0
        && s.t > 0.0
    {
        let rate = done as f64 / s.t;
        line += &format!(
            "est completion in {}",
            remaining(((t - done) as f64 / rate).ceil() as u64)
        );
    }
    for (op, l) in &s.latency {
        line += &format!(
            "[{op}: Count={}, Max={}, Min={}, Avg={}, 50={}, 90={}, 99={}, 99.9={}, 99.99={}] ",
            l.count,
            l.max_us.round() as u64,
            l.min_us.round() as u64,
            num(l.avg_us),
            num(l.p50_us),
            num(l.p90_us),
            num(l.p99_us),
            num(l.p999_us),
            num(l.p9999_us)
        );
    }
    line
}

/// The wall-clock time as YCSB's status line shows it (`yyyy-MM-dd HH:mm:ss:SSS`, UTC).
fn chrono_like_now() -> String {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // civil date from days since 1970-01-01 (Howard Hinnant's algorithm)
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}:{:03}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        d.subsec_millis()
    )
}

fn ycsb_status(st: &Status, total: Option<u64>) -> Tick {
    let st = st.clone();
    let mut done = 0u64;
    let mut acc = Sample::default();
    Box::new(move |s: &Sample| {
        done += s.total_ops;
        // the latency of an interval longer than a second: the seconds merged
        for (op, l) in &s.latency {
            let a = acc.latency.entry(op.clone()).or_default();
            let n = a.count + l.count;
            if n > 0 {
                a.avg_us = (a.avg_us * a.count as f64 + l.avg_us * l.count as f64) / n as f64;
            }
            a.max_us = a.max_us.max(l.max_us);
            a.min_us = if a.count == 0 {
                l.min_us
            } else {
                a.min_us.min(l.min_us)
            };
            // percentiles of merged seconds are not exact: the worst second's stands in
            for (x, y) in [
                (&mut a.p50_us, l.p50_us),
                (&mut a.p90_us, l.p90_us),
                (&mut a.p99_us, l.p99_us),
                (&mut a.p999_us, l.p999_us),
                (&mut a.p9999_us, l.p9999_us),
            ] {
                *x = x.max(y);
            }
            a.count = n;
        }
        acc.total_ops += s.total_ops;
        let whole = s.t.round() as u64;
        if whole > 0 && whole.is_multiple_of(st.interval.max(1)) {
            let shown = Sample {
                t: s.t,
                ops_per_sec: acc.total_ops as f64 / st.interval.max(1) as f64,
                latency: std::mem::take(&mut acc.latency),
                ..Sample::default()
            };
            acc.total_ops = 0;
            eprintln!("{}", status_line(&st, &shown, done, total));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kvtb_schema::IntervalLatency;

    #[test]
    fn the_status_line_is_ycsbs() {
        let mut s = Sample {
            t: 10.0,
            ops_per_sec: 12345.678,
            ..Sample::default()
        };
        s.latency.insert(
            "READ".into(),
            IntervalLatency {
                count: 1234,
                min_us: 87.0,
                max_us: 5119.0,
                avg_us: 312.456,
                p50_us: 290.0,
                p90_us: 402.0,
                p99_us: 901.0,
                p999_us: 2003.0,
                p9999_us: 5119.0,
            },
        );
        let st = Status {
            interval: 10,
            label: String::new(),
        };
        let line = status_line(&st, &s, 123_456, Some(246_912));
        assert!(
            line.contains(
                " 10 sec: 123456 operations; 12345.68 current ops/sec; est completion in "
            ),
            "{line}"
        );
        assert!(
            line.ends_with("[READ: Count=1234, Max=5119, Min=87, Avg=312.46, 50=290, 90=402, 99=901, 99.9=2003, 99.99=5119] "),
            "{line}"
        );
        assert_eq!(remaining(125), "2 minutes ");
        assert_eq!(remaining(3600 * 25), "1 day 1 hour ");
        assert_eq!(num(2.0), "2");
        assert_eq!(num(2.5), "2.5");
    }
}
