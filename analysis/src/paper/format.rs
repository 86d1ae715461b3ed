//! Our numbers as text in the paper's report: ratios, percentages, latencies, rates,
//! dates.

use crate::text::{human_count, num};

/// A ratio: `2.25x`, `2462x`; `N/A` where there is none.
pub(crate) fn fx(x: Option<f64>) -> String {
    match x {
        Some(x) if x >= 100.0 => format!("{x:.0}x"),
        Some(x) if x >= 0.1 || x == 0.0 => format!("{x:.2}x"),
        Some(x) => format!("{}x", num(x)),
        None => "N/A".into(),
    }
}

/// A fraction as a whole percentage.
pub(crate) fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

/// A number formatted by `f`, `N/A` where there is none.
pub(crate) fn opt(x: Option<f64>, f: impl Fn(f64) -> String) -> String {
    x.map(f).unwrap_or_else(|| "N/A".into())
}

/// A rate in short form, without the unit.
pub(crate) fn ops_s(x: f64) -> String {
    human_count(x)
}

/// `12 s`, `850 ms`, `42 µs` from microseconds.
pub fn human_us(us: f64) -> String {
    if us >= 1e6 {
        format!("{:.2} s", us / 1e6)
    } else if us >= 1e3 {
        format!("{:.2} ms", us / 1e3)
    } else {
        format!("{us:.0} µs")
    }
}

/// A latency of the paper's, given in milliseconds: `2.4 ms`, `9.6 s`, `3 s`.
pub(crate) fn paper_ms(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{} s", ms / 1000.0)
    } else {
        format!("{ms} ms")
    }
}

/// Ops/s in short form with the unit.
pub fn ops(x: f64) -> String {
    format!("{} ops/s", human_count(x))
}

/// `2025-01-31 12:00 UTC` from Unix seconds.
pub fn utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // civil from days (Howard Hinnant's algorithm)
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        (rem % 3600) / 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc(1_796_007_484), "2026-11-30 02:58 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00 UTC");
    }
}
