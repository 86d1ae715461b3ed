//! Tables 1 and 2: what the disk can do, each access pattern at its best queue depth,
//! and latency and bandwidth against the queue depth.

use crate::charts::figure::{Figure, Panel};
use crate::charts::lines::{Line, Lines};
use crate::charts::style::{H, PALETTE, W};
use crate::charts::table::Table;
use crate::error::Result;
use crate::model::ProbePoint;
use crate::paper::chart::{Charts, PaperChart, caption, commands_of};
use crate::paper::format::{fx, opt};
use crate::paper::markdown::{Summary, charts_of, code_block, images};
use crate::paper::metrics::{best_point, patterns};
use crate::paper::reference as paper;
use crate::paper::run::PaperRun;
use crate::paper::verdict::{RATIO_FACTOR, Verdict, ratio, ratio_verdict};
use crate::text::{human_bytes, human_count, num};
use std::fmt::Write as _;

/// Draws the figure's charts.
pub(super) fn draw(run: &PaperRun, out: &mut Charts) -> Result<()> {
    let Some((_, probe)) = &run.device else {
        out.skip("Tables 1, 2 (device)", "no device/device.json");
        return Ok(());
    };
    let cmds = commands_of([&probe.command]);
    let rows: Vec<Vec<String>> = patterns(&probe.points)
        .iter()
        .filter_map(|pat| {
            let b = best_point(&probe.points, pat)?;
            let paper = paper::DEVICE_KIOPS
                .iter()
                .find(|(p, _)| p == pat)
                .map(|(_, k)| k * 1000.0);
            Some(vec![
                pat.clone(),
                human_bytes(b.block_bytes as u64),
                b.queue_depth.to_string(),
                human_count(b.iops),
                format!("{:.0}", b.mib_per_s),
                format!("{:.0}", b.lat_mean_us),
                format!("{:.0}", b.lat_p99_us),
                paper.map(human_count).unwrap_or_else(|| "-".into()),
                paper
                    .map(|k| format!("{:.2}", b.iops / k))
                    .unwrap_or_else(|| "-".into()),
            ])
        })
        .collect();
    let n_rows = rows.len() as u32;
    let table = Figure {
        title: format!("{}: what the disk can do (Table 1)", run.ds.title),
        caption: caption(
            run,
            &[format!(
                "Each pattern at the queue depth that gave the most IOPS, from device/device.json \
                 ({} probe file, sequential fill {:.0} MiB/s). Paper: {}.",
                human_bytes(probe.file_bytes),
                probe.fill_mib_per_s,
                paper::MACHINE
            )],
        ),
        legend: vec![],
        cols: 1,
        panels: vec![Panel::Table(Table {
            header: [
                "pattern",
                "block",
                "best QD",
                "IOPS",
                "MiB/s",
                "mean µs",
                "p99 µs",
                "paper IOPS",
                "ours / paper",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        })],
        size: (W, 300 + 30 * n_rows),
    };
    out.add(
        "Table 1",
        "table1-device",
        "Device: IOPS and bandwidth per access pattern".into(),
        "Random and sequential read/write IOPS and MiB/s of this disk (best queue depth), \
         next to the paper's Optane."
            .into(),
        &table,
        cmds.clone(),
    )?;
    let pats = patterns(&probe.points);
    let colour = |i: usize| PALETTE[i % PALETTE.len()];
    let series = |f: fn(&ProbePoint) -> f64| -> Vec<Line> {
        pats.iter()
            .enumerate()
            .map(|(i, pat)| {
                let mut pts: Vec<(f64, f64)> = probe
                    .points
                    .iter()
                    .filter(|p| &p.pattern == pat)
                    .map(|p| (p.queue_depth as f64, f(p)))
                    .collect();
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                let block = probe
                    .points
                    .iter()
                    .find(|p| &p.pattern == pat)
                    .map(|p| human_bytes(p.block_bytes as u64))
                    .unwrap_or_default();
                Line {
                    name: format!("{pat} ({block})"),
                    colour: colour(i),
                    points: pts,
                    dashed: pat.starts_with("seq"),
                }
            })
            .collect()
    };
    let panel = |title: &str, y: &str, log_y: bool, lines: Vec<Line>, refs| Lines {
        title: title.into(),
        x_desc: "queue depth (log scale)".into(),
        y_desc: y.into(),
        log_x: true,
        log_y,
        lines,
        refs,
        labels: vec![],
        y_max: None,
        legend_left: true,
    };
    let refs: Vec<(String, f64, f64)> = paper::RANDWRITE_LAT_US
        .iter()
        .map(|(qd, us)| (format!("paper randwrite {us:.0} µs"), *qd as f64, *us))
        .collect();
    let fig = Figure {
        title: format!(
            "{}: latency and bandwidth against queue depth (Table 2)",
            run.ds.title
        ),
        caption: caption(
            run,
            &[
                "One point per (pattern, queue depth) of device/device.json; random patterns \
                 4 KiB, sequential ones (dashed) as their block size says."
                    .into(),
            ],
        ),
        legend: vec![],
        cols: 3,
        panels: vec![
            Panel::Lines(panel(
                "mean latency",
                "mean latency (µs, log scale)",
                true,
                series(|p| p.lat_mean_us),
                refs,
            )),
            Panel::Lines(panel(
                "p99 latency",
                "p99 latency (µs, log scale)",
                true,
                series(|p| p.lat_p99_us),
                vec![],
            )),
            Panel::Lines(panel(
                "bandwidth",
                "bandwidth (MiB/s)",
                false,
                series(|p| p.mib_per_s),
                vec![],
            )),
        ],
        size: (W + 400, H),
    };
    out.add(
        "Table 2",
        "table2-device-qd",
        "Device: latency and bandwidth against queue depth".into(),
        "Mean and p99 latency and bandwidth of each access pattern against the queue depth \
         (log x), with the paper's random-write latencies."
            .into(),
        &fig,
        cmds,
    )
}

/// Writes the figure's section of `paper-repro.md`.
pub(super) fn write(
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
        "**Paper** (docs/paper-numbers.md, Tables 1 and 2, Optane 905P): random 4 KiB IOPS read 575K, write 550K, mixed 560K; random-write \
         latency 11 µs at QD1, 137 µs at QD64, 550 µs at QD256.\n"
    );
    code_block(s, &commands_of([&d.command]));
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
