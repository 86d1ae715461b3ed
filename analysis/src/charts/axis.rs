//! Axis numbers and log-scale bounds.

/// A log axis from `lo` to `hi`, widened to whole decades.
pub(crate) fn y_log_bounds(lo: f64, hi: f64) -> (f64, f64) {
    let lo = lo.max(1e-3);
    let hi = hi.max(lo * 10.0);
    (
        10f64.powf((lo * 0.9).log10().floor()),
        10f64.powf((hi * 1.1).log10().ceil()),
    )
}

fn trimmed(x: f64, decimals: usize) -> String {
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Axis numbers: `0.05`, `20`, `1k`, `2.5M`.
pub(crate) fn tick(v: &f64) -> String {
    let a = v.abs();
    for (div, suffix) in [(1e9, "G"), (1e6, "M"), (1e3, "k")] {
        if a >= div {
            return format!("{}{suffix}", trimmed(v / div, 2));
        }
    }
    if a >= 1.0 || a == 0.0 {
        trimmed(*v, 2)
    } else {
        trimmed(*v, 4)
    }
}

/// Fractions on a log axis: `1`, `0.1`, `0.001`, `1e-4`.
pub(crate) fn frac_tick(v: &f64) -> String {
    if *v >= 1e-3 {
        trimmed(*v, 3)
    } else {
        let k = v.log10().round();
        if (v / 10f64.powf(k) - 1.0).abs() < 1e-6 {
            format!("1e{k}")
        } else {
            format!("{v:.0e}")
        }
    }
}
