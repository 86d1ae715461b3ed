//! `paper-repro.md` and the directory's `README.md`: figure by figure, the paper's
//! claim, our command and number, the ratio between engines next to the paper's, and
//! a verdict decided by a stated rule.

use super::reference as paper;
use super::{
    PaperRun, cache_hit_ratio, ceiling, cpu_fraction, entry, human_us, mean_latency_us,
    scans_per_s, steadiness, tput, utc, worst,
};
use crate::charts::paper::{PaperChart, best_point, io_label, median_data_bytes, patterns};
use crate::model::RunFile;
use crate::report::num;
use crate::{Entry, Group, human_bytes, human_count, machine_line};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Fewer measured sampling intervals than this say nothing about steadiness.
pub const MIN_INTERVALS: usize = 5;

/// Engines' ratios are compared with the paper's within this factor.
pub const RATIO_FACTOR: f64 = 2.0;

/// How a shape compares with the paper's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Holds,
    /// The engines are in the paper's order, the ratio is off by more than the factor.
    OrderOnly,
    DoesNotHold,
    NotComparable,
}

impl Verdict {
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::OrderOnly => "order holds, ratio off",
            Verdict::DoesNotHold => "does not hold",
            Verdict::NotComparable => "not comparable",
        }
    }
}

/// The ratio rule: the same ordering of the two engines (ratio on the same side of 1)
/// and our ratio within `RATIO_FACTOR` of the paper's.
pub fn ratio_verdict(ours: Option<f64>, paper: f64) -> Verdict {
    let Some(o) = ours.filter(|o| o.is_finite() && *o > 0.0) else {
        return Verdict::NotComparable;
    };
    if (o >= 1.0) != (paper >= 1.0) {
        return Verdict::DoesNotHold;
    }
    if (o / paper).max(paper / o) <= RATIO_FACTOR {
        Verdict::Holds
    } else {
        Verdict::OrderOnly
    }
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 && a.is_finite() => Some(a / b),
        _ => None,
    }
}

fn fx(x: Option<f64>) -> String {
    match x {
        Some(x) if x >= 100.0 => format!("{x:.0}x"),
        Some(x) if x >= 0.1 || x == 0.0 => format!("{x:.2}x"),
        Some(x) => format!("{}x", num(x)),
        None => "N/A".into(),
    }
}

fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

fn opt(x: Option<f64>, f: impl Fn(f64) -> String) -> String {
    x.map(f).unwrap_or_else(|| "N/A".into())
}

fn ops_s(x: f64) -> String {
    human_count(x)
}

/// The path from the directory of `from` (a file) to `to`, for a markdown link.
pub fn relative_link(from: &Path, to: &Path) -> String {
    let abs = |p: &Path| -> PathBuf {
        let p = if p.is_absolute() {
            p.to_path_buf()
        } else {
            std::env::current_dir().unwrap_or_default().join(p)
        };
        // a file not written yet: its directory canonical, then its name
        p.canonicalize()
            .unwrap_or_else(|_| match (p.parent(), p.file_name()) {
                (Some(d), Some(f)) => d.canonicalize().map(|d| d.join(f)).unwrap_or(p.clone()),
                _ => p.clone(),
            })
    };
    let base = abs(from
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new(".")));
    let to = abs(to);
    let b: Vec<_> = base.components().collect();
    let t: Vec<_> = to.components().collect();
    let common = b.iter().zip(&t).take_while(|(x, y)| x == y).count();
    let mut parts: Vec<String> = Vec::new();
    for _ in common..b.len() {
        parts.push("..".into());
    }
    for c in &t[common..] {
        parts.push(c.as_os_str().to_string_lossy().into_owned());
    }
    if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    }
}

fn code_block(s: &mut String, cmds: &[String]) {
    if cmds.is_empty() {
        s.push_str("**Command:** not recorded in the files.\n\n");
        return;
    }
    s.push_str(if cmds.len() == 1 {
        "**Command:**\n\n```sh\n"
    } else {
        "**Commands:**\n\n```sh\n"
    });
    for c in cmds {
        let _ = writeln!(s, "{c}");
    }
    s.push_str("```\n\n");
}

fn charts_of<'a>(charts: &'a [PaperChart], figure: &str) -> Vec<&'a PaperChart> {
    charts.iter().filter(|c| c.figure == figure).collect()
}

fn images(s: &mut String, charts: &[&PaperChart], link: &str) {
    for c in charts {
        let _ = writeln!(
            s,
            "![{}]({link}/{}.png)\n\n*{}* ([SVG]({link}/{}.svg))\n",
            c.chart.title, c.chart.stem, c.chart.caption, c.chart.stem
        );
    }
}

/// One row of the summary at the top.
struct Summary {
    what: String,
    verdict: String,
}

/// What the files say about why an engine ran as it did.
fn engine_facts(run: &PaperRun, e: &Entry) -> String {
    let r = &e.run;
    let mut parts = vec![format!("durability {}", run.durability(&e.label))];
    if let Some(p) = r.run() {
        if let Some(f) = cpu_fraction(r, p) {
            parts.push(format!("CPU busy {} of {} cores", pct(f), r.machine.cores));
        }
        if let Some(u) = p.device.as_ref().and_then(|d| d.utilisation) {
            parts.push(format!("disk busy {}", pct(u)));
        }
        if let Some(d) = p.device.as_ref().and_then(|d| d.ios_per_op) {
            parts.push(format!("{d:.2} device I/Os per request"));
        }
    }
    if let (_, Some(f)) = ceiling(r) {
        parts.push(format!("{} of its device ceiling", pct(f)));
    }
    if let Some(h) = cache_hit_ratio(r) {
        parts.push(format!(
            "cache hits {} of lookups{}",
            pct(h),
            if h >= 0.5 {
                " (reads largely served from memory)"
            } else {
                ""
            }
        ));
    }
    if let Some(p) = r.run() {
        if let Some(st) = p.counter_delta("stall_micros").filter(|x| *x > 0) {
            parts.push(format!("write stalls {}", human_us(st as f64)));
        }
        let cpu = cpu_fraction(r, p).unwrap_or(0.0);
        let disk = p
            .device
            .as_ref()
            .and_then(|d| d.utilisation)
            .unwrap_or(0.0)
            .max(ceiling(r).1.unwrap_or(0.0));
        parts.push(
            if cpu >= 0.85 {
                "so CPU-bound here"
            } else if disk >= 0.85 {
                "so disk-bound here"
            } else {
                "so neither CPU nor disk saturated (likely bound by latency at its queue depth)"
            }
            .into(),
        );
        if let Some(q) = r.driving.queue_depth {
            parts.push(format!("{q} requests in flight"));
        }
    }
    let rel = e
        .path
        .strip_prefix(&run.dir)
        .unwrap_or(&e.path)
        .display()
        .to_string();
    format!("{} ({rel}): {}", e.label, parts.join(", "))
}

/// Machine-level facts that make this machine differ from the paper's.
fn machine_facts(run: &PaperRun) -> Vec<String> {
    let mut out = Vec::new();
    if let Some((_, d)) = &run.device
        && let Some(b) = best_point(&d.points, "randread")
    {
        out.push(format!(
            "this disk's best 4 KiB random-read rate is {} IOPS (device/device.json), {:.2}x \
                 the paper's Optane {}K",
            human_count(b.iops),
            b.iops / (paper::DEVICE_KIOPS[0].1 * 1000.0),
            paper::DEVICE_KIOPS[0].1
        ));
    }
    let cores = run.cores();
    if cores > 0 {
        out.push(format!(
            "{cores} cores here against the paper's {}",
            paper::CORES
        ));
    }
    if let Some(m) = &run.manifest {
        let data = m.records.saturating_mul(m.value_bytes);
        if data > 0 && m.memory_bytes > 0 {
            out.push(format!(
                "memory {} for {} of data ({:.2} of it; the paper's cache: {:.2})",
                human_bytes(m.memory_bytes),
                human_bytes(data),
                m.memory_bytes as f64 / data as f64,
                paper::CACHE_FRACTION
            ));
        }
    }
    out
}

fn reasons(s: &mut String, run: &PaperRun, entries: &[&Entry]) {
    s.push_str("Likely reasons, from the files:\n\n");
    for f in machine_facts(run) {
        let _ = writeln!(s, "- {f}");
    }
    for e in entries {
        let _ = writeln!(s, "- {}", engine_facts(run, e));
    }
    s.push('\n');
}

/// `paper-repro.md`.
pub fn paper_repro(
    run: &PaperRun,
    charts: &[PaperChart],
    chart_notes: &[String],
    link: &str,
    command: &str,
) -> String {
    let mut body = String::new();
    let mut summary: Vec<Summary> = Vec::new();
    device_section(&mut body, run, charts, link, &mut summary);
    iomethods_section(&mut body, run, charts, link, &mut summary);
    fig3_section(&mut body, run, charts, link, &mut summary);
    steadiness_section(&mut body, run, charts, link, &mut summary);
    ycsb_section(&mut body, run, charts, link, &mut summary);
    table5_section(&mut body, run, charts, link, &mut summary);
    fig9_section(&mut body, run, charts, link, &mut summary);
    fig10_section(&mut body, run, charts, link, &mut summary);
    recovery_section(&mut body, run, charts, link, &mut summary);
    batch_section(&mut body, run, charts, link, &mut summary);
    beyond_section(&mut body, run, charts, link);

    let mut s = String::new();
    let _ = writeln!(s, "# {}\n", run.ds.title);
    let _ = writeln!(
        s,
        "> Generated by `{command}` from the result files in {}. Do \
         not edit by hand: rerun the command to regenerate it. Every number of ours comes \
         from the files; the paper's numbers are constants of `analysis/src/paper/reference.rs`, \
         taken from the {}.\n",
        run.dir.display(),
        paper::SOURCE
    );
    header(&mut s, run);
    let _ = writeln!(
        s,
        "## How the verdicts are decided\n\n\
         - **Ratio rule** (most figures): the ratio between two engines here (e.g. \
         KVell/RocksDB) against the paper's. *holds*: same ordering of the engines (both \
         ratios on the same side of 1) and ours within a factor of {RATIO_FACTOR} of the \
         paper's; *order holds, ratio off*: same ordering, ratio further off; *does not \
         hold*: the ordering differs; *not comparable*: a number is missing.\n\
         - Where the paper gives no number (Figs. 3, 4, 7, 9 in REFERENCE.md) the section \
         states its qualitative rule.\n\
         - When a shape does not hold, the likely reasons list what the files show: the \
         disk's IOPS against the paper's Optane, the cores, memory against data, each \
         engine's durability class, CPU and disk busy, the fraction of the device ceiling \
         and the cache hit ratio.\n"
    );
    s.push_str("## Summary\n\n| figure | verdict |\n| --- | --- |\n");
    for r in &summary {
        let _ = writeln!(s, "| {} | {} |", r.what, r.verdict);
    }
    s.push('\n');
    s.push_str(&body);
    let notes: Vec<&String> = run.notes.iter().chain(chart_notes).collect();
    if !notes.is_empty() {
        s.push_str("## Skipped\n\n");
        for n in notes {
            let _ = writeln!(s, "- {n}");
        }
        s.push('\n');
    }
    s
}

fn header(s: &mut String, run: &PaperRun) {
    match run.machine() {
        Some(m) => {
            let _ = writeln!(s, "**Machine:** {}\n", machine_line(&m));
        }
        None => s.push_str("**Machine:** unknown\n\n"),
    }
    let _ = writeln!(s, "**Paper's machine:** {}.\n", paper::MACHINE);
    let _ = writeln!(s, "**{}**\n", run.scale_line());
    if let Some(m) = &run.manifest {
        if !m.command.is_empty() {
            let c: Vec<String> = m
                .command
                .iter()
                .map(|a| crate::report::shell_quote(a))
                .collect();
            let _ = write!(s, "**Run by:** `{}`", c.join(" "));
        }
        if m.started_unix_s > 0 {
            let _ = write!(s, " from {}", utc(m.started_unix_s));
            if m.finished_unix_s >= m.started_unix_s {
                let _ = write!(
                    s,
                    " to {} ({:.0} min)",
                    utc(m.finished_unix_s),
                    (m.finished_unix_s - m.started_unix_s) as f64 / 60.0
                );
            }
        }
        s.push_str("\n\n");
        for n in &m.notes {
            let _ = writeln!(s, "- {n}");
        }
        if !m.notes.is_empty() {
            s.push('\n');
        }
    }
    let engines: Vec<String> = run.ds.engines.iter().map(|e| run.engine_label(e)).collect();
    if !engines.is_empty() {
        let _ = writeln!(
            s,
            "**Engines (durability class):** {}\n",
            engines.join(", ")
        );
    }
}

fn device_section(
    s: &mut String,
    run: &PaperRun,
    charts: &[PaperChart],
    link: &str,
    summary: &mut Vec<Summary>,
) {
    s.push_str("## Tables 1 and 2: the device\n\n");
    let Some((path, d)) = &run.device else {
        s.push_str("Skipped: no device/device.json.\n\n");
        return;
    };
    let _ = writeln!(
        s,
        "**Paper** (REFERENCE.md, Optane 905P): random 4 KiB IOPS read 575K, write 550K, mixed 560K; random-write \
         latency 11 µs at QD1, 137 µs at QD64, 550 µs at QD256.\n"
    );
    code_block(s, &crate::charts::paper::commands_of([&d.command]));
    let _ = writeln!(
        s,
        "**Here** ({}): each pattern at its best queue depth.\n",
        path.strip_prefix(&run.dir).unwrap_or(path).display()
    );
    s.push_str(
        "| pattern | block | best QD | IOPS | MiB/s | mean µs | p99 µs | paper IOPS | ours / paper |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    let mut peaks = Vec::new();
    for pat in patterns(&d.points) {
        let Some(b) = best_point(&d.points, &pat) else {
            continue;
        };
        let pk = paper::DEVICE_KIOPS
            .iter()
            .find(|(p, _)| *p == pat)
            .map(|(_, k)| k * 1000.0);
        if pk.is_some() {
            peaks.push((pat.clone(), b.iops));
        }
        let _ = writeln!(
            s,
            "| {pat} | {} | {} | {} | {:.0} | {:.0} | {:.0} | {} | {} |",
            human_bytes(b.block_bytes as u64),
            b.queue_depth,
            num(b.iops),
            b.mib_per_s,
            b.lat_mean_us,
            b.lat_p99_us,
            opt(pk, num),
            fx(ratio(Some(b.iops), pk))
        );
    }
    s.push('\n');
    // Table 1 rule: random read, write and mixed peaks close together
    let spread = if peaks.len() >= 2 {
        let hi = peaks.iter().map(|p| p.1).fold(0.0, f64::max);
        let lo = peaks.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
        (lo > 0.0).then(|| hi / lo)
    } else {
        None
    };
    let paper_spread = 575.0 / 550.0;
    let v1 = match spread {
        None => Verdict::NotComparable,
        Some(x) if x <= 1.25 => Verdict::Holds,
        Some(_) => Verdict::DoesNotHold,
    };
    let _ = writeln!(
        s,
        "**Shape (Table 1):** rule: the random read, write and mixed peaks lie within a \
         factor of 1.25 of each other, as the paper's do ({paper_spread:.2}). Here: {} -> \
         **{}**.\n",
        fx(spread),
        v1.text()
    );
    summary.push(Summary {
        what: "Table 1: device IOPS by pattern".into(),
        verdict: format!("{} (spread {} vs {paper_spread:.2})", v1.text(), fx(spread)),
    });
    // Table 2: random-write latency against QD
    let mut rw: Vec<_> = d
        .points
        .iter()
        .filter(|p| p.pattern == "randwrite")
        .collect();
    rw.sort_by_key(|p| p.queue_depth);
    s.push_str("| randwrite QD | mean µs here | p99 µs here | MiB/s here | paper mean µs |\n| ---: | ---: | ---: | ---: | ---: |\n");
    for p in &rw {
        let pk = paper::RANDWRITE_LAT_US
            .iter()
            .find(|(q, _)| *q == p.queue_depth)
            .map(|(_, u)| format!("{u:.0}"))
            .unwrap_or_else(|| "-".into());
        let _ = writeln!(
            s,
            "| {} | {:.0} | {:.0} | {:.0} | {pk} |",
            p.queue_depth, p.lat_mean_us, p.lat_p99_us, p.mib_per_s
        );
    }
    s.push('\n');
    let at = |qd: usize| {
        rw.iter()
            .find(|p| p.queue_depth == qd)
            .map(|p| p.lat_mean_us)
    };
    let ours = ratio(at(256), at(1));
    let paper_r = paper::RANDWRITE_LAT_US[2].1 / paper::RANDWRITE_LAT_US[0].1;
    let rising = rw.windows(2).all(|w| w[1].lat_mean_us >= w[0].lat_mean_us);
    let v2 = match ratio_verdict(ours, paper_r) {
        Verdict::Holds if !rising => Verdict::OrderOnly,
        v => v,
    };
    let _ = writeln!(
        s,
        "**Shape (Table 2):** rule: the random-write latency rises with the queue depth at \
         every step, and its QD256/QD1 ratio is within a factor of {RATIO_FACTOR} of the \
         paper's ({paper_r:.0}x). Here: {}, QD256/QD1 = {} -> **{}**.\n",
        if rising {
            "rises at every step"
        } else {
            "does not rise at every step"
        },
        fx(ours),
        v2.text()
    );
    if v1 != Verdict::Holds || v2 != Verdict::Holds {
        let disk = run
            .machine()
            .and_then(|m| m.disk)
            .map(|d| {
                format!(
                    "- the data disk is {} ({}{}), not an Optane drive\n",
                    d.device,
                    d.model.unwrap_or_else(|| "model unknown".into()),
                    match d.rotational {
                        Some(true) => ", reported rotational: likely a virtual disk",
                        Some(false) => ", SSD",
                        None => "",
                    }
                )
            })
            .unwrap_or_default();
        let _ = writeln!(s, "Likely reasons, from the files:\n\n{disk}");
    }
    summary.push(Summary {
        what: "Table 2: random-write latency against queue depth".into(),
        verdict: format!("{} (QD256/QD1 {} vs {paper_r:.0}x)", v2.text(), fx(ours)),
    });
    images(s, &charts_of(charts, "Table 1"), link);
    images(s, &charts_of(charts, "Table 2"), link);
}

fn iomethods_section(
    s: &mut String,
    run: &PaperRun,
    charts: &[PaperChart],
    link: &str,
    summary: &mut Vec<Summary>,
) {
    s.push_str("## Table 3: I/O methods\n\n");
    let Some((_, io)) = &run.iomethods else {
        s.push_str("Skipped: no iomethods/iomethods.json.\n\n");
        return;
    };
    s.push_str(
        "**Paper** (REFERENCE.md, Optane, 4 KiB random writes, data set 3x RAM): mmap 1 thread \
         10K, mmap 8 threads 60K, direct I/O 1 thread 88K, AIO QD1 91K, AIO QD64 376K IOPS.\n\n",
    );
    code_block(s, &crate::charts::paper::commands_of([&io.command]));
    let _ = writeln!(
        s,
        "**Here:** file {} against {} of RAM ({:.1}x), {} B blocks.\n",
        human_bytes(io.file_bytes),
        human_bytes(io.memory_bytes),
        if io.memory_bytes > 0 {
            io.file_bytes as f64 / io.memory_bytes as f64
        } else {
            0.0
        },
        io.block_bytes
    );
    for n in &io.notes {
        let _ = writeln!(s, "- {n}");
    }
    if !io.notes.is_empty() {
        s.push('\n');
    }
    s.push_str("| method | op | threads | QD | IOPS | MiB/s | mean µs | p99 µs | CPU µs per I/O | major faults per I/O |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for p in &io.points {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.2} | {} |",
            p.method,
            p.op,
            p.threads,
            p.queue_depth,
            num(p.iops),
            p.mib_per_s,
            p.lat_mean_us,
            p.lat_p99_us,
            p.cpu_us_per_io,
            opt(p.major_faults_per_io, |x| format!("{x:.2}"))
        );
    }
    s.push('\n');
    // the paper's five points, matched to ours (random writes)
    let find = |method: &str, threads: usize, qd: usize| {
        let cands: Vec<_> = io
            .points
            .iter()
            .filter(|p| p.op == "randwrite" && p.method == method)
            .collect();
        cands
            .iter()
            .find(|p| p.threads == threads && p.queue_depth.max(1) == qd)
            .copied()
            .or_else(|| {
                // nearest configuration: most threads (mmap 8t) or deepest queue (QD64)
                if threads > 1 {
                    cands.iter().max_by_key(|p| p.threads).copied()
                } else if qd > 1 {
                    cands.iter().max_by_key(|p| p.queue_depth).copied()
                } else {
                    None
                }
            })
    };
    s.push_str("| paper's point (random writes) | paper IOPS | ours | our IOPS | ours / paper | CPU µs per I/O |\n| --- | ---: | --- | ---: | ---: | ---: |\n");
    let mut ours_v = Vec::new();
    for (m, t, q, k) in paper::IO_METHODS_KIOPS {
        let p = find(m, t, q);
        ours_v.push(p.map(|p| p.iops));
        let _ = writeln!(
            s,
            "| {m} {t} thread(s) QD{q} | {} | {} | {} | {} | {} |",
            num(k * 1000.0),
            p.map(io_label).unwrap_or_else(|| "N/A".into()),
            opt(p.map(|p| p.iops), num),
            fx(ratio(p.map(|p| p.iops), Some(k * 1000.0))),
            opt(p.map(|p| p.cpu_us_per_io), |x| format!("{x:.2}"))
        );
    }
    s.push('\n');
    let all: Option<Vec<f64>> = ours_v.iter().copied().collect();
    let ordered = all.as_ref().map(|v| v.windows(2).all(|w| w[0] <= w[1]));
    let our_r = ratio(ours_v[4], ours_v[0]);
    let paper_r = paper::IO_METHODS_KIOPS[4].3 / paper::IO_METHODS_KIOPS[0].3;
    let v = match (ordered, ratio_verdict(our_r, paper_r)) {
        (None, _) => Verdict::NotComparable,
        (Some(false), _) => Verdict::DoesNotHold,
        (Some(true), Verdict::Holds) => Verdict::Holds,
        (Some(true), _) => Verdict::OrderOnly,
    };
    let _ = writeln!(
        s,
        "**Shape:** rule: the five points in the paper's order (mmap 1 thread <= mmap 8 \
         threads <= direct I/O <= async QD1 <= async QD64) and async-QD64/mmap-1-thread within a \
         factor of {RATIO_FACTOR} of the paper's {paper_r:.1}x. Here: {}, ratio {} -> **{}**.\n",
        match ordered {
            Some(true) => "in order",
            Some(false) => "not in order",
            None => "points missing",
        },
        fx(our_r),
        v.text()
    );
    if v != Verdict::Holds {
        s.push_str("Likely reasons, from the files:\n\n");
        for f in machine_facts(run) {
            let _ = writeln!(s, "- {f}");
        }
        let faults: Vec<f64> = io
            .points
            .iter()
            .filter(|p| p.method == "mmap" && p.op == "randwrite")
            .filter_map(|p| p.major_faults_per_io)
            .collect();
        if !faults.is_empty() {
            let lo = faults.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = faults.iter().copied().fold(0.0, f64::max);
            let _ = writeln!(
                s,
                "- mmap random writes took {lo:.2} to {hi:.2} major faults per I/O{}",
                if hi < 0.5 {
                    ": mostly served from memory, not from the disk"
                } else {
                    ""
                }
            );
        } else if io.memory_bytes > 0 && (io.file_bytes as f64) < 3.0 * io.memory_bytes as f64 {
            let _ = writeln!(
                s,
                "- the file is {:.1}x RAM, not 3x as in the paper: mmap may be served from the \
                 page cache",
                io.file_bytes as f64 / io.memory_bytes as f64
            );
        }
        s.push('\n');
    }
    summary.push(Summary {
        what: "Table 3: I/O methods".into(),
        verdict: format!(
            "{} (async QD64 / mmap 1t {} vs {paper_r:.1}x)",
            v.text(),
            fx(our_r)
        ),
    });
    images(s, &charts_of(charts, "Table 3"), link);
}

fn group_cmds(gs: &[&Group]) -> Vec<String> {
    crate::charts::paper::group_commands(gs)
}

fn fig3_section(
    s: &mut String,
    run: &PaperRun,
    charts: &[PaperChart],
    link: &str,
    summary: &mut Vec<Summary>,
) {
    s.push_str("## Fig. 3: CPU and device utilisation, YCSB A uniform\n\n");
    let Some(g) = run.ycsb('a', "uniform") else {
        s.push_str("Skipped: no ycsb/a-uniform.\n\n");
        return;
    };
    s.push_str(
        "**Paper:** on the Optane drive RocksDB runs out of CPU while the drive has bandwidth \
         to spare; KVell keeps the drive busy (REFERENCE.md gives no numbers for this figure; \
         on YCSB A it puts KVell at 98% of the device ceiling).\n\n",
    );
    code_block(s, &group_cmds(&[g]));
    s.push_str("| engine | durability | ops/s | CPU busy (share of cores) | disk busy | % of device ceiling |\n| --- | --- | ---: | ---: | ---: | ---: |\n");
    let mut facts = Vec::new();
    for name in ["rocksdb", "kvell"] {
        let Some(e) = entry(g, name) else { continue };
        let p = e.run.run();
        let cpu = p.and_then(|p| cpu_fraction(&e.run, p));
        let dev = p.and_then(|p| p.device.as_ref()?.utilisation);
        facts.push((name, cpu, dev));
        let _ = writeln!(
            s,
            "| {name} | {} | {} | {} | {} | {} |",
            run.durability(name),
            opt(tput(&e.run), ops_s),
            opt(cpu, pct),
            opt(dev, pct),
            opt(ceiling(&e.run).1, pct)
        );
    }
    s.push('\n');
    let get = |n: &str| facts.iter().find(|f| f.0 == n).copied();
    let v = match (get("rocksdb"), get("kvell")) {
        (Some((_, Some(rc), Some(rd))), Some((_, _, Some(kd)))) => {
            if rc > rd && kd >= rd {
                Verdict::Holds
            } else {
                Verdict::DoesNotHold
            }
        }
        _ => Verdict::NotComparable,
    };
    let _ = writeln!(
        s,
        "**Shape:** rule: RocksDB's CPU busy share is above its disk busy share, and KVell \
         keeps the disk at least as busy as RocksDB does -> **{}**.\n",
        v.text()
    );
    if v == Verdict::DoesNotHold {
        let es: Vec<&Entry> = ["rocksdb", "kvell"]
            .iter()
            .filter_map(|n| entry(g, n))
            .collect();
        reasons(s, run, &es);
    }
    summary.push(Summary {
        what: "Fig. 3: RocksDB CPU-bound, KVell disk-bound".into(),
        verdict: v.text().into(),
    });
    images(s, &charts_of(charts, "Fig. 3"), link);
}

fn steadiness_section(
    s: &mut String,
    run: &PaperRun,
    charts: &[PaperChart],
    link: &str,
    summary: &mut Vec<Summary>,
) {
    s.push_str("## Figs. 4 and 7: throughput over time, YCSB A and E uniform\n\n");
    s.push_str(
        "**Paper:** RocksDB's throughput collapses periodically (maintenance: flushes and \
         compactions; its maximum latency on A is 9.6 s) while KVell's stays steady (maximum \
         3.9 ms) (REFERENCE.md, Table 5 numbers).\n\n",
    );
    let mut any = false;
    for (fig, w) in [("Fig. 4", 'a'), ("Fig. 7", 'e')] {
        let Some(g) = run.ycsb(w, "uniform") else {
            let _ = writeln!(s, "{fig}: skipped, no ycsb/{w}-uniform.\n");
            continue;
        };
        any = true;
        let _ = writeln!(s, "### {fig}: YCSB {} uniform\n", w.to_ascii_uppercase());
        code_block(s, &group_cmds(&[g]));
        s.push_str("| engine | durability | mean ops/s | variation (CV) | stalls (< 10% of median) | intervals |\n| --- | --- | ---: | ---: | ---: | ---: |\n");
        for e in &g.runs {
            let st = steadiness(&e.run);
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} |",
                e.label,
                run.durability(&e.label),
                opt(tput(&e.run), ops_s),
                opt(st.map(|x| x.0), |c| format!("{c:.2}")),
                st.map(|x| x.1.to_string()).unwrap_or_else(|| "N/A".into()),
                st.map(|x| x.2.to_string()).unwrap_or_else(|| "N/A".into())
            );
        }
        s.push('\n');
        let k = entry(g, "kvell").and_then(|e| steadiness(&e.run));
        let r = entry(g, "rocksdb").and_then(|e| steadiness(&e.run));
        let v = match (k, r) {
            (Some(k), Some(r)) if k.2.min(r.2) < MIN_INTERVALS => Verdict::NotComparable,
            (Some(k), Some(r)) => {
                if k.0 < r.0 && k.1 <= r.1 {
                    Verdict::Holds
                } else {
                    Verdict::DoesNotHold
                }
            }
            _ => Verdict::NotComparable,
        };
        let _ = writeln!(
            s,
            "**Shape:** rule: KVell's per-interval throughput varies less than RocksDB's \
             (lower coefficient of variation) and stalls no more often, judged only when both \
             runs have at least {MIN_INTERVALS} measured intervals -> **{}**.\n",
            v.text()
        );
        if v == Verdict::DoesNotHold {
            let es: Vec<&Entry> = ["rocksdb", "kvell"]
                .iter()
                .filter_map(|n| entry(g, n))
                .collect();
            reasons(s, run, &es);
            if let Some(e) = entry(g, "rocksdb")
                && let Some(p) = e.run.run()
            {
                let c = p.counter_delta("compaction_write_bytes");
                let _ = writeln!(
                    s,
                    "- rocksdb compacted {} during the run phase; {} sampling intervals in \
                         all (a short run may end before RocksDB's first compaction)\n",
                    c.map(human_bytes)
                        .unwrap_or_else(|| "an unknown amount".into()),
                    p.timeline.len()
                );
            }
        }
        summary.push(Summary {
            what: format!(
                "{fig}: KVell steadier than RocksDB, YCSB {}",
                w.to_ascii_uppercase()
            ),
            verdict: v.text().into(),
        });
        images(s, &charts_of(charts, fig), link);
    }
    if !any {
        s.push_str("Skipped: neither ycsb/a-uniform nor ycsb/e-uniform.\n\n");
    }
}

fn ycsb_section(
    s: &mut String,
    run: &PaperRun,
    charts: &[PaperChart],
    link: &str,
    summary: &mut Vec<Summary>,
) {
    for (fig, dist) in [("Fig. 5", "uniform"), ("Fig. 8", "zipfian")] {
        let _ = writeln!(s, "## {fig}: YCSB A-F, {dist}\n");
        let gs: Vec<&Group> = super::WORKLOADS
            .iter()
            .filter_map(|w| run.ycsb(*w, dist))
            .collect();
        if gs.is_empty() {
            let _ = writeln!(s, "Skipped: no ycsb/<w>-{dist}.\n");
            continue;
        }
        let paper_line: Vec<String> = paper::YCSB_KOPS
            .iter()
            .filter(|r| r.1 == dist)
            .map(|r| {
                format!(
                    "{} RocksDB {}K / KVell {}K",
                    r.0.to_ascii_uppercase(),
                    r.2,
                    r.3
                )
            })
            .collect();
        let _ = writeln!(
            s,
            "**Paper** (REFERENCE.md, thousand ops/s): {}{}.\n",
            paper_line.join("; "),
            if dist == "uniform" {
                "; on A KVell's 420K is 98% of a 428K ceiling (500K IOPS / 1.17 I/Os per request)"
            } else {
                ""
            }
        );
        code_block(s, &group_cmds(&gs));
        let engines = run.engines_in(&gs);
        s.push_str("Run-phase ops/s (fraction of the run's device ceiling):\n\n");
        engine_table_head(
            s,
            run,
            "workload",
            "---",
            &engines,
            &[
                ("KVell/RocksDB here", "---:"),
                ("paper", "---:"),
                ("verdict", "---"),
            ],
        );
        let mut held = 0;
        let mut judged = 0;
        let mut failing: Vec<&Group> = Vec::new();
        for g in &gs {
            let w = g.label.chars().next().unwrap_or('?');
            let _ = write!(s, "| {} |", w.to_ascii_uppercase());
            let best = engines
                .iter()
                .filter_map(|e| entry(g, e).and_then(|x| tput(&x.run)))
                .fold(0.0, f64::max);
            for e in &engines {
                let cell = entry(g, e).and_then(|x| {
                    let t = tput(&x.run)?;
                    let b = if t == best && engines.len() > 1 {
                        format!("**{}**", ops_s(t))
                    } else {
                        ops_s(t)
                    };
                    Some(match ceiling(&x.run).1 {
                        Some(f) => format!("{b} ({})", pct(f)),
                        None => b,
                    })
                });
                let _ = write!(s, " {} |", cell.unwrap_or_else(|| "N/A".into()));
            }
            let ours = ratio(
                entry(g, "kvell").and_then(|x| tput(&x.run)),
                entry(g, "rocksdb").and_then(|x| tput(&x.run)),
            );
            let pr = paper::YCSB_KOPS
                .iter()
                .find(|r| r.0 == w && r.1 == dist)
                .map(|r| r.3 / r.2);
            let v = match pr {
                Some(p) => ratio_verdict(ours, p),
                None => Verdict::NotComparable,
            };
            if v != Verdict::NotComparable {
                judged += 1;
                if v == Verdict::Holds {
                    held += 1;
                } else {
                    failing.push(g);
                }
            }
            let _ = writeln!(
                s,
                " {} | {} | {} |",
                fx(ours),
                match pr {
                    Some(p) => format!("{p:.2}x"),
                    None => "no number".into(),
                },
                if pr.is_none() {
                    "no paper number".into()
                } else {
                    v.text().to_string()
                }
            );
        }
        s.push('\n');
        let _ = writeln!(
            s,
            "**Shape:** ratio rule on KVell/RocksDB per workload: holds on {held} of {judged} \
             workloads with a paper number.\n"
        );
        if dist == "uniform"
            && let Some(k) = run.ycsb('a', "uniform").and_then(|g| entry(g, "kvell"))
        {
            let (c, f) = ceiling(&k.run);
            let _ = writeln!(
                s,
                "KVell on A uniform: {} of a {} ops/s ceiling here ({} device IOPS for the \
                     mix / {} I/Os per request); paper: {} of {}K ({}K IOPS / {}).\n",
                opt(f, pct),
                opt(c, ops_s),
                opt(
                    k.run.run().and_then(|p| p.ceiling.as_ref()?.device_iops),
                    ops_s
                ),
                opt(
                    k.run.run().and_then(|p| p.ceiling.as_ref()?.ios_per_op),
                    |x| format!("{x:.2}")
                ),
                pct(paper::A_CEILING_FRACTION),
                paper::A_CEILING_KOPS,
                paper::A_DEVICE_KIOPS,
                paper::A_IOS_PER_REQUEST
            );
        }
        for g in &failing {
            let _ = writeln!(s, "{} does not match the paper's ratio.", g.label);
            let es: Vec<&Entry> = ["kvell", "rocksdb"]
                .iter()
                .filter_map(|n| entry(g, n))
                .collect();
            reasons(s, run, &es);
        }
        summary.push(Summary {
            what: format!("{fig}: YCSB {dist}, KVell/RocksDB"),
            verdict: format!("holds on {held} of {judged} workloads"),
        });
        images(s, &charts_of(charts, fig), link);
    }
}

fn table5_section(
    s: &mut String,
    run: &PaperRun,
    charts: &[PaperChart],
    link: &str,
    summary: &mut Vec<Summary>,
) {
    s.push_str("## Table 5: tail latency on YCSB A\n\n");
    let gs: Vec<&Group> = ["uniform", "zipfian"]
        .iter()
        .filter_map(|d| run.ycsb('a', d))
        .collect();
    if gs.is_empty() {
        s.push_str("Skipped: no ycsb/a-uniform nor ycsb/a-zipfian.\n\n");
        return;
    }
    s.push_str(
        "**Paper** (REFERENCE.md): p99 KVell 2.4 ms, RocksDB 5.4 ms (RocksDB/KVell 2.25x); \
         max KVell 3.9 ms, RocksDB 9.6 s (2462x). REFERENCE.md does not say which key \
         distribution: both are compared.\n\n",
    );
    code_block(s, &group_cmds(&gs));
    s.push_str("Worst operation kind of the run phase, measured from each operation's start.\n\n| workload | engine | durability | p99 | max |\n| --- | --- | --- | ---: | ---: |\n");
    for g in &gs {
        for e in &g.runs {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} |",
                g.label,
                e.label,
                run.durability(&e.label),
                opt(worst(&e.run, |o| o.p99_us), human_us),
                opt(worst(&e.run, |o| o.max_us), human_us)
            );
        }
    }
    s.push('\n');
    s.push_str("| workload | statistic | RocksDB/KVell here | paper | verdict |\n| --- | --- | ---: | ---: | --- |\n");
    let mut verdicts = Vec::new();
    for g in &gs {
        for (stat, f, pr) in [
            (
                "p99",
                (|o: &crate::model::OpSummary| o.p99_us) as fn(&crate::model::OpSummary) -> f64,
                paper::A_P99_MS_ROCKSDB / paper::A_P99_MS_KVELL,
            ),
            (
                "max",
                |o: &crate::model::OpSummary| o.max_us,
                paper::A_MAX_MS_ROCKSDB / paper::A_MAX_MS_KVELL,
            ),
        ] {
            let ours = ratio(
                entry(g, "rocksdb").and_then(|e| worst(&e.run, f)),
                entry(g, "kvell").and_then(|e| worst(&e.run, f)),
            );
            let v = ratio_verdict(ours, pr);
            verdicts.push(v);
            let _ = writeln!(
                s,
                "| {} | {stat} | {} | {pr:.2}x | {} |",
                g.label,
                fx(ours),
                v.text()
            );
        }
    }
    s.push('\n');
    let held = verdicts.iter().filter(|v| **v == Verdict::Holds).count();
    let _ = writeln!(
        s,
        "**Shape:** ratio rule on RocksDB/KVell latency: holds on {held} of {} comparisons.\n",
        verdicts.len()
    );
    if held < verdicts.len() {
        let es: Vec<&Entry> = gs
            .iter()
            .flat_map(|g| ["kvell", "rocksdb"].into_iter().filter_map(|n| entry(g, n)))
            .collect();
        if let Some(g) = gs.first() {
            let es1: Vec<&Entry> = es
                .iter()
                .copied()
                .filter(|e| g.runs.iter().any(|x| x.path == e.path))
                .collect();
            reasons(s, run, &es1);
        }
        let short: Vec<String> = es
            .iter()
            .filter_map(|e| {
                let p = e.run.run()?;
                Some(format!("{} {:.1} s", e.label, p.runtime_ms / 1000.0))
            })
            .collect();
        let _ = writeln!(
            s,
            "- run-phase lengths: {} (the paper's multi-second maxima come from compactions \
             a short run may not reach)\n",
            short.join(", ")
        );
    }
    summary.push(Summary {
        what: "Table 5: p99 and max latency, RocksDB/KVell".into(),
        verdict: format!("holds on {held} of {}", verdicts.len()),
    });
    images(s, &charts_of(charts, "Table 5"), link);
}

fn fig9_section(
    s: &mut String,
    run: &PaperRun,
    charts: &[PaperChart],
    link: &str,
    summary: &mut Vec<Summary>,
) {
    s.push_str("## Fig. 9: production workloads\n\n");
    let gs: Vec<&Group> = super::PRODUCTION
        .iter()
        .filter_map(|w| run.group(w))
        .collect();
    if gs.is_empty() {
        s.push_str("Skipped: no production/.\n\n");
        return;
    }
    s.push_str(
        "**Paper:** KVell ahead of RocksDB on both production workloads (REFERENCE.md gives \
         no number for this figure, so only the ordering is judged).\n\n",
    );
    code_block(s, &group_cmds(&gs));
    s.push_str("| workload | engine | durability | ops/s | % of device ceiling | CPU µs/op |\n| --- | --- | --- | ---: | ---: | ---: |\n");
    for g in &gs {
        for e in &g.runs {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} |",
                g.label,
                e.label,
                run.durability(&e.label),
                opt(tput(&e.run), ops_s),
                opt(ceiling(&e.run).1, pct),
                opt(e.run.run().map(|p| p.cpu_us_per_op), |x| format!("{x:.1}"))
            );
        }
    }
    s.push('\n');
    let mut verdicts = Vec::new();
    for g in &gs {
        let r = ratio(
            entry(g, "kvell").and_then(|e| tput(&e.run)),
            entry(g, "rocksdb").and_then(|e| tput(&e.run)),
        );
        let v = match r {
            None => Verdict::NotComparable,
            Some(x) if x > 1.0 => Verdict::Holds,
            Some(_) => Verdict::DoesNotHold,
        };
        verdicts.push(v);
        let _ = writeln!(
            s,
            "- {}: KVell/RocksDB {} -> **{}**",
            g.label,
            fx(r),
            v.text()
        );
    }
    s.push_str("\n**Shape:** rule: KVell/RocksDB above 1 on each workload.\n\n");
    if verdicts.contains(&Verdict::DoesNotHold) {
        let es: Vec<&Entry> = gs
            .iter()
            .flat_map(|g| ["kvell", "rocksdb"].into_iter().filter_map(|n| entry(g, n)))
            .collect();
        reasons(s, run, &es);
    }
    let held = verdicts.iter().filter(|v| **v == Verdict::Holds).count();
    summary.push(Summary {
        what: "Fig. 9: production, KVell ahead of RocksDB".into(),
        verdict: format!("holds on {held} of {}", verdicts.len()),
    });
    images(s, &charts_of(charts, "Fig. 9"), link);
}

fn fig10_section(
    s: &mut String,
    run: &PaperRun,
    charts: &[PaperChart],
    link: &str,
    summary: &mut Vec<Summary>,
) {
    s.push_str("## Fig. 10: item size on YCSB E\n\n");
    let gs: Vec<(u64, &Group)> = run
        .itemsizes
        .iter()
        .filter_map(|b| run.group(&format!("itemsize/{b}")).map(|g| (*b, g)))
        .collect();
    if gs.is_empty() {
        s.push_str("Skipped: no itemsize/.\n\n");
        return;
    }
    s.push_str(
        "**Paper** (REFERENCE.md, AWS): KVell about 67K scans/s flat from 64 B to 2 KiB; \
         RocksDB about 136K at 64 B falling to about 52K at 2 KiB (RocksDB/KVell 2.03x at \
         64 B, 0.78x at 2 KiB).\n\n",
    );
    let groups: Vec<&Group> = gs.iter().map(|(_, g)| *g).collect();
    code_block(s, &group_cmds(&groups));
    let engines = run.engines_in(&groups);
    s.push_str("Scans per second:\n\n");
    engine_table_head(
        s,
        run,
        "value size",
        "---:",
        &engines,
        &[("RocksDB/KVell", "---:")],
    );
    let sc = |g: &Group, e: &str| entry(g, e).and_then(|x| scans_per_s(&x.run));
    for (b, g) in &gs {
        let _ = write!(s, "| {} |", human_bytes(*b));
        for e in &engines {
            let _ = write!(s, " {} |", opt(sc(g, e), ops_s));
        }
        let _ = writeln!(s, " {} |", fx(ratio(sc(g, "rocksdb"), sc(g, "kvell"))));
    }
    s.push('\n');
    let (lo, hi) = (gs[0], gs[gs.len() - 1]);
    let p_lo = paper::ITEMSIZE_ROCKSDB_KSCANS[0].1 / paper::ITEMSIZE_KVELL_KSCANS;
    let p_hi = paper::ITEMSIZE_ROCKSDB_KSCANS[1].1 / paper::ITEMSIZE_KVELL_KSCANS;
    let v_lo = ratio_verdict(ratio(sc(lo.1, "rocksdb"), sc(lo.1, "kvell")), p_lo);
    let v_hi = ratio_verdict(ratio(sc(hi.1, "rocksdb"), sc(hi.1, "kvell")), p_hi);
    let kv: Vec<f64> = gs.iter().filter_map(|(_, g)| sc(g, "kvell")).collect();
    let flat = if kv.len() >= 2 {
        let mx = kv.iter().copied().fold(0.0, f64::max);
        let mn = kv.iter().copied().fold(f64::INFINITY, f64::min);
        (mn > 0.0).then(|| mx / mn)
    } else {
        None
    };
    let v = match (v_lo, v_hi) {
        (Verdict::Holds, Verdict::Holds) => Verdict::Holds,
        (Verdict::NotComparable, _) | (_, Verdict::NotComparable) => Verdict::NotComparable,
        (Verdict::DoesNotHold, _) | (_, Verdict::DoesNotHold) => Verdict::DoesNotHold,
        _ => Verdict::OrderOnly,
    };
    let _ = writeln!(
        s,
        "**Shape:** ratio rule on RocksDB/KVell at the smallest ({}: {}) and the largest \
         ({}: {}) item size against the paper's {p_lo:.2}x and {p_hi:.2}x -> **{}**. KVell's \
         spread across sizes (max/min): {} (paper: about 1).\n",
        human_bytes(lo.0),
        v_lo.text(),
        human_bytes(hi.0),
        v_hi.text(),
        v.text(),
        fx(flat)
    );
    if v != Verdict::Holds && v != Verdict::NotComparable {
        let es: Vec<&Entry> = [lo.1, hi.1]
            .iter()
            .flat_map(|g| ["kvell", "rocksdb"].into_iter().filter_map(|n| entry(g, n)))
            .collect();
        reasons(s, run, &es);
    }
    summary.push(Summary {
        what: "Fig. 10: item size, RocksDB/KVell at both ends".into(),
        verdict: v.text().into(),
    });
    images(s, &charts_of(charts, "Fig. 10"), link);
}

fn recovery_section(
    s: &mut String,
    run: &PaperRun,
    charts: &[PaperChart],
    link: &str,
    summary: &mut Vec<Summary>,
) {
    s.push_str("## Recovery after a SIGKILL during YCSB A\n\n");
    if run.recovery.is_empty() {
        s.push_str("Skipped: no recovery/<engine>.json.\n\n");
        return;
    }
    s.push_str(
        "**Paper** (REFERENCE.md, 100 GB on 8 NVMe drives): KVell 6.6 s, RocksDB 18 s \
         (RocksDB/KVell 2.73x).\n\n",
    );
    code_block(
        s,
        &crate::charts::paper::commands_of(run.recovery.iter().map(|(_, r)| &r.command)),
    );
    s.push_str("| engine | durability | data size | recovery (median) | cycles | records verified | records missing | records |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    let mut times = Vec::new();
    for (p, r) in &run.recovery {
        let name = p
            .file_stem()
            .map(|x| x.to_string_lossy().into_owned())
            .unwrap_or_default();
        times.push((name.clone(), r.recovery_s_median));
        let _ = writeln!(
            s,
            "| {name} | {} | {} | {:.3} s | {} | {} | {} | {} |",
            if r.engine.durability.is_empty() {
                "?"
            } else {
                &r.engine.durability
            },
            median_data_bytes(r)
                .map(human_bytes)
                .unwrap_or_else(|| "N/A".into()),
            r.recovery_s_median,
            r.cycles.len(),
            r.cycles.iter().map(|c| c.verified_records).sum::<u64>(),
            r.cycles.iter().map(|c| c.missing_records).sum::<u64>(),
            r.records
        );
    }
    s.push('\n');
    let t = |n: &str| times.iter().find(|x| x.0 == n).map(|x| x.1);
    let pr = paper::RECOVERY_S_ROCKSDB / paper::RECOVERY_S_KVELL;
    let ours = ratio(t("rocksdb"), t("kvell"));
    let v = ratio_verdict(ours, pr);
    let _ = writeln!(
        s,
        "**Shape:** ratio rule on RocksDB/KVell recovery time: {} here against {pr:.2}x -> \
         **{}**.\n",
        fx(ours),
        v.text()
    );
    if v != Verdict::Holds && v != Verdict::NotComparable {
        s.push_str("Likely reasons, from the files:\n\n");
        for f in machine_facts(run) {
            let _ = writeln!(s, "- {f}");
        }
        for (p, r) in &run.recovery {
            let _ = writeln!(
                s,
                "- {}: {} of data against the paper's {} GB on 8 drives; durability {}",
                p.file_stem()
                    .map(|x| x.to_string_lossy())
                    .unwrap_or_default(),
                median_data_bytes(r)
                    .map(human_bytes)
                    .unwrap_or_else(|| "N/A".into()),
                paper::RECOVERY_GB,
                r.engine.durability
            );
        }
        s.push('\n');
    }
    summary.push(Summary {
        what: "Recovery: RocksDB/KVell".into(),
        verdict: format!("{} ({} vs {pr:.2}x)", v.text(), fx(ours)),
    });
    images(s, &charts_of(charts, "Recovery"), link);
}

fn batch_section(
    s: &mut String,
    run: &PaperRun,
    charts: &[PaperChart],
    link: &str,
    summary: &mut Vec<Summary>,
) {
    s.push_str("## KVell's batch size\n\n");
    let pts: Vec<(u64, &RunFile)> = run
        .batches
        .iter()
        .filter_map(|b| {
            run.group(&format!("batch/{b}"))
                .and_then(|g| entry(g, "kvell"))
                .map(|e| (*b, &e.run))
        })
        .collect();
    if pts.is_empty() {
        s.push_str("Skipped: no batch/b<B>/kvell.json.\n\n");
        return;
    }
    s.push_str(
        "**Paper** (REFERENCE.md): batch 64 gives 158 µs average latency, batch 32 gives 76 µs \
         at 88% of the bandwidth (64/32 latency 2.08x).\n\n",
    );
    code_block(
        s,
        &crate::charts::paper::commands_of(pts.iter().map(|(_, r)| &r.command)),
    );
    s.push_str("| batch | engine queue depth | driver queue depth | average latency | ops/s | % of device ceiling |\n| ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (b, r) in &pts {
        let _ = writeln!(
            s,
            "| {b} | {} | {} | {} | {} | {} |",
            opt(r.engine.setting_f64("queue_depth"), |x| format!("{x:.0}")),
            r.driving
                .queue_depth
                .map(|q| q.to_string())
                .unwrap_or_else(|| "N/A".into()),
            opt(mean_latency_us(r), human_us),
            opt(tput(r), ops_s),
            opt(ceiling(r).1, pct)
        );
    }
    s.push('\n');
    let lat = |b: u64| {
        pts.iter()
            .find(|(x, _)| *x == b)
            .and_then(|(_, r)| mean_latency_us(r))
    };
    let pr = paper::BATCH_LATENCY_US[1].1 / paper::BATCH_LATENCY_US[0].1;
    let ours = ratio(lat(64), lat(32));
    let v = ratio_verdict(ours, pr);
    let f32 = pts
        .iter()
        .find(|(x, _)| *x == 32)
        .and_then(|(_, r)| ceiling(r).1);
    let _ = writeln!(
        s,
        "**Shape:** ratio rule on the average latency at batch 64 over batch 32: {} here \
         against {pr:.2}x -> **{}**. Batch 32 reaches {} of the device ceiling here (paper: {} \
         of the bandwidth).\n",
        fx(ours),
        v.text(),
        opt(f32, pct),
        pct(paper::BATCH32_BANDWIDTH_FRACTION)
    );
    if v != Verdict::Holds && v != Verdict::NotComparable {
        s.push_str("Likely reasons, from the files:\n\n");
        for f in machine_facts(run) {
            let _ = writeln!(s, "- {f}");
        }
        for (b, r) in &pts {
            if let Some(p) = r.run() {
                let _ = writeln!(
                    s,
                    "- batch {b}: CPU busy {}, disk busy {}",
                    opt(cpu_fraction(r, p), pct),
                    opt(p.device.as_ref().and_then(|d| d.utilisation), pct)
                );
            }
        }
        s.push('\n');
    }
    summary.push(Summary {
        what: "Batch: latency 64/32".into(),
        verdict: format!("{} ({} vs {pr:.2}x)", v.text(), fx(ours)),
    });
    images(s, &charts_of(charts, "Batch"), link);
}

fn beyond_section(s: &mut String, run: &PaperRun, charts: &[PaperChart], link: &str) {
    s.push_str("## What the paper could not show\n\n");
    s.push_str("### The WAL engine against KVell\n\n");
    let gs: Vec<&Group> = ['a', 'b', 'f']
        .iter()
        .flat_map(|w| {
            ["uniform", "zipfian"]
                .into_iter()
                .filter_map(move |d| run.ycsb(*w, d))
        })
        .filter(|g| entry(g, "kvell").is_some() || entry(g, "wal").is_some())
        .collect();
    if gs.is_empty() {
        s.push_str("No kvell or wal result on A, B or F.\n\n");
    } else {
        s.push_str("Device write amplification of the run phase (device bytes written / user bytes written; whole-disk counters):\n\n| workload | kvell | wal | wal/kvell |\n| --- | ---: | ---: | ---: |\n");
        for g in &gs {
            let wa = |e: &str| {
                entry(g, e).and_then(|x| x.run.run()?.device.as_ref()?.write_amplification)
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} |",
                g.label,
                opt(wa("kvell"), |x| format!("{x:.2}")),
                opt(wa("wal"), |x| format!("{x:.2}")),
                fx(ratio(wa("wal"), wa("kvell")))
            );
        }
        s.push('\n');
    }
    let rec: Vec<String> = run
        .recovery
        .iter()
        .filter_map(|(p, r)| {
            let n = p.file_stem()?.to_string_lossy().into_owned();
            ["kvell", "wal"].contains(&n.as_str()).then(|| {
                format!(
                    "{n} {:.3} s for {}",
                    r.recovery_s_median,
                    median_data_bytes(r)
                        .map(human_bytes)
                        .unwrap_or_else(|| "N/A".into())
                )
            })
        })
        .collect();
    if !rec.is_empty() {
        let _ = writeln!(s, "Recovery: {}.\n", rec.join("; "));
    }
    images(
        s,
        &charts
            .iter()
            .filter(|c| c.chart.stem == "beyond-wal-vs-kvell")
            .collect::<Vec<_>>(),
        link,
    );
    s.push_str("### CPU microseconds per request\n\n");
    let gs: Vec<&Group> = run
        .ds
        .groups
        .iter()
        .filter(|g| !g.label.contains('/'))
        .collect();
    if gs.is_empty() {
        s.push_str("No ycsb/ or production/ results.\n\n");
        return;
    }
    let engines = run.engines_in(&gs);
    s.push_str(
        "Run-phase CPU time of the whole process per request (user + system), lowest in bold:\n\n",
    );
    engine_table_head(s, run, "workload", "---", &engines, &[]);
    for g in &gs {
        let vals: Vec<Option<f64>> = engines
            .iter()
            .map(|e| entry(g, e).and_then(|x| x.run.run().map(|p| p.cpu_us_per_op)))
            .collect();
        let best = vals.iter().flatten().copied().reduce(f64::min);
        let _ = write!(s, "| {} |", g.label);
        for v in vals {
            let _ = write!(
                s,
                " {} |",
                match v {
                    Some(x) if Some(x) == best && engines.len() > 1 => format!("**{}**", num(x)),
                    Some(x) => num(x),
                    None => "N/A".into(),
                }
            );
        }
        s.push('\n');
    }
    s.push('\n');
    images(
        s,
        &charts
            .iter()
            .filter(|c| c.chart.stem == "beyond-cpu-per-request")
            .collect::<Vec<_>>(),
        link,
    );
}

/// The directory's `README.md`: every chart with a line on what it shows and the
/// commands that made its files.
pub fn readme(
    run: &PaperRun,
    charts: &[PaperChart],
    chart_notes: &[String],
    md: &Path,
    command: &str,
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# {}\n", run.ds.title);
    let _ = writeln!(
        s,
        "> Generated by `{command}`; do not edit by hand. The figure-by-figure \
         comparison with the paper is in [{}]({}).\n",
        md.file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_else(|| "paper-repro.md".into()),
        relative_link(&run.dir.join("README.md"), md)
    );
    header(&mut s, run);
    s.push_str("## Charts\n\n");
    for c in charts {
        let _ = writeln!(s, "### {}: {}\n", c.figure, c.chart.title);
        let _ = writeln!(s, "{}\n", c.chart.caption);
        let _ = writeln!(
            s,
            "![{}](charts/{}.png)\n\n[SVG](charts/{}.svg)\n",
            c.chart.title, c.chart.stem, c.chart.stem
        );
        if c.commands.is_empty() {
            s.push_str("Made from files that record no command.\n\n");
        } else {
            s.push_str("Made from the files these commands wrote:\n\n```sh\n");
            for cmd in &c.commands {
                let _ = writeln!(s, "{cmd}");
            }
            s.push_str("```\n\n");
        }
    }
    let notes: Vec<&String> = run.notes.iter().chain(chart_notes).collect();
    if !notes.is_empty() {
        s.push_str("## Skipped\n\n");
        for n in notes {
            let _ = writeln!(s, "- {n}");
        }
    }
    s
}

/// A markdown table head: a first column, one right-aligned column per engine
/// (labelled with its durability class), then `extra` columns as (name, alignment).
fn engine_table_head(
    s: &mut String,
    run: &PaperRun,
    first: &str,
    first_align: &str,
    engines: &[String],
    extra: &[(&str, &str)],
) {
    let _ = write!(s, "| {first} |");
    for e in engines {
        let _ = write!(s, " {} |", run.engine_label(e));
    }
    for (name, _) in extra {
        let _ = write!(s, " {name} |");
    }
    let _ = write!(s, "\n| {first_align} |");
    for _ in engines {
        s.push_str(" ---: |");
    }
    for (_, align) in extra {
        let _ = write!(s, " {align} |");
    }
    s.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ratio_rule() {
        assert_eq!(ratio_verdict(Some(3.0), 8.0), Verdict::OrderOnly);
        assert_eq!(ratio_verdict(Some(5.0), 8.0), Verdict::Holds);
        assert_eq!(ratio_verdict(Some(0.9), 8.0), Verdict::DoesNotHold);
        assert_eq!(ratio_verdict(Some(0.5), 0.78), Verdict::Holds);
        assert_eq!(ratio_verdict(None, 2.0), Verdict::NotComparable);
    }

    #[test]
    fn relative_links() {
        let d = std::env::temp_dir().join(format!("kvtb-rel-{}", std::process::id()));
        std::fs::create_dir_all(d.join("run/charts")).unwrap();
        std::fs::create_dir_all(d.join("docs")).unwrap();
        assert_eq!(
            relative_link(&d.join("run/paper-repro.md"), &d.join("run/charts")),
            "charts"
        );
        assert_eq!(
            relative_link(&d.join("docs/paper-repro.md"), &d.join("run/charts")),
            "../run/charts"
        );
        let _ = std::fs::remove_dir_all(&d);
    }
}
