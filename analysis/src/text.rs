//! Numbers, sizes, machines, workloads and command lines as text, for the reports and
//! the chart captions.

use crate::model::{Machine, RunFile};

/// `1.5 GiB`-style size.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut x = b as f64;
    let mut u = 0;
    while x >= 1024.0 && u < UNITS.len() - 1 {
        x /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{x:.1} {}", UNITS[u])
    }
}

/// A rate or count in short form: `812`, `45.4k`, `3.60M`.
pub fn human_count(x: f64) -> String {
    let a = x.abs();
    if a >= 1e9 {
        format!("{:.2}G", x / 1e9)
    } else if a >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", x / 1e3)
    } else if a >= 1e3 {
        format!("{:.1}k", x / 1e3)
    } else if a >= 10.0 || x == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

/// One line describing a machine: CPU, cores, memory, disk.
pub fn machine_line(m: &Machine) -> String {
    let mut s = format!(
        "{}, {} cores, {} RAM",
        if m.cpu_model.is_empty() {
            "unknown CPU"
        } else {
            &m.cpu_model
        },
        if m.cores == 0 {
            "unknown".to_string()
        } else {
            m.cores.to_string()
        },
        m.memory_bytes
            .map(human_bytes)
            .unwrap_or_else(|| "unknown".into())
    );
    match &m.disk {
        Some(d) => {
            let mut parts = Vec::new();
            if let Some(model) = d.model.as_deref().filter(|s| !s.is_empty()) {
                parts.push(model.to_string());
            }
            match d.rotational {
                Some(true) => parts.push("rotational".into()),
                Some(false) => parts.push("SSD".into()),
                None => {}
            }
            if let Some(sz) = d.size_bytes {
                parts.push(human_bytes(sz));
            }
            if let Some(fs) = d.filesystem.as_deref().filter(|s| !s.is_empty()) {
                parts.push(fs.to_string());
            }
            s.push_str(&format!("; disk {}", d.device));
            if !parts.is_empty() {
                s.push_str(&format!(" ({})", parts.join(", ")));
            }
        }
        None => s.push_str("; disk unknown"),
    }
    if !m.os.is_empty() || !m.kernel.is_empty() {
        s.push_str(&format!("; {} kernel {}", m.os, m.kernel));
    }
    s
}

/// The workload and how it was driven, in one line.
pub fn workload_line(r: &RunFile) -> String {
    let mut s = r.workload_name();
    let rc = r.prop("recordcount").unwrap_or("?");
    let oc = r.prop("operationcount").unwrap_or("?");
    s.push_str(&format!(": {rc} records, {oc} operations"));
    if let Some(mix) = r.prop("mix") {
        s.push_str(&format!(" ({mix})"));
    }
    if let Some(d) = r.prop("requestdistribution") {
        s.push_str(&format!(", {d}"));
    }
    let d = &r.driving;
    match d.queue_depth {
        Some(qd) => s.push_str(&format!("; async, queue depth {qd}")),
        None => s.push_str(&format!("; closed loop, {} client thread(s)", d.threads)),
    }
    if let Some(t) = d.target_ops {
        s.push_str(&format!(", target {} ops/s", human_count(t)));
    }
    if d.warmup_s > 0.0 {
        s.push_str(&format!(", warm-up {} s", d.warmup_s));
    }
    if let Some(t) = d.max_time_s {
        s.push_str(&format!(", limit {t} s"));
    }
    s
}

/// An engine's fairness settings: durability class, cache and direct I/O.
pub fn engine_line(label: &str, r: &RunFile) -> String {
    let e = &r.engine;
    format!(
        "{label}: durability {}, cache {}, direct I/O {}",
        if e.durability.is_empty() {
            "?"
        } else {
            &e.durability
        },
        e.cache_bytes
            .map(human_bytes)
            .unwrap_or_else(|| "none".into()),
        match e.direct_io {
            Some(true) => "yes",
            Some(false) => "no",
            None => "n/a",
        }
    )
}

/// A number for a table: thousands separators from 100 up, two decimals from 1,
/// three significant digits below.
pub(crate) fn num(x: f64) -> String {
    if x >= 100.0 {
        // thousands separators, no decimals
        let s = format!("{x:.0}");
        let mut out = String::new();
        for (i, c) in s.chars().enumerate() {
            if i > 0 && (s.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        out
    } else if x.abs() >= 1.0 || x == 0.0 {
        format!("{x:.2}")
    } else {
        // three significant digits
        let digits = (2 - x.abs().log10().floor() as i32).max(0) as usize;
        format!("{x:.digits$}")
    }
}

/// A command-line argument as a shell would need it (quoted where not plain).
pub(crate) fn shell_quote(a: &str) -> String {
    if !a.is_empty()
        && a.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=,:@%+".contains(c))
    {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_get_separators() {
        assert_eq!(num(3604471.2), "3,604,471");
        assert_eq!(num(199.0), "199");
        assert_eq!(num(8.5626), "8.56");
        assert_eq!(num(0.012380), "0.0124");
        assert_eq!(num(0.5), "0.500");
        assert_eq!(num(0.0), "0.00");
        assert_eq!(shell_quote("-p"), "-p");
        assert_eq!(shell_quote("a b"), "'a b'");
    }
}
