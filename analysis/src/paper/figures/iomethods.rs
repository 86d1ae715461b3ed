//! Table 3: I/O methods (mmap, direct I/O, io_uring), IOPS and CPU per I/O.

use crate::charts::bars::Bars;
use crate::charts::figure::{Figure, Panel};
use crate::charts::style::{LOAD_COLOUR, RUN_COLOUR, W};
use crate::error::Result;
use crate::paper::chart::{Charts, PaperChart, caption, commands_of};
use crate::paper::format::{fx, opt};
use crate::paper::markdown::{Summary, charts_of, code_block, images};
use crate::paper::metrics::io_label;
use crate::paper::reasons::machine_facts;
use crate::paper::reference as paper;
use crate::paper::run::PaperRun;
use crate::paper::verdict::{RATIO_FACTOR, Verdict, ratio, ratio_verdict};
use crate::text::{human_bytes, human_count, num};
use std::fmt::Write as _;

/// Draws the figure's charts.
pub(super) fn draw(run: &PaperRun, out: &mut Charts) -> Result<()> {
    let Some((_, io)) = &run.iomethods else {
        out.skip("Table 3 (I/O methods)", "no iomethods/iomethods.json");
        return Ok(());
    };
    if io.points.is_empty() {
        out.skip("Table 3 (I/O methods)", "iomethods.json has no points");
        return Ok(());
    }
    let mut ops: Vec<String> = Vec::new();
    for p in &io.points {
        if !ops.contains(&p.op) {
            ops.push(p.op.clone());
        }
    }
    // the paper measured random writes: those first
    ops.sort_by_key(|o| (o != "randwrite", o.clone()));
    let mut cats = Vec::new();
    let mut iops = Vec::new();
    let mut cpu = Vec::new();
    let mut notes = Vec::new();
    for (gi, op) in ops.iter().enumerate() {
        for p in io.points.iter().filter(|p| &p.op == op) {
            cats.push((io_label(p), gi));
            iops.push(vec![Some(p.iops)]);
            cpu.push(vec![Some(p.cpu_us_per_io)]);
            notes.push(vec![Some(format!(
                "{} ({:.1} µs CPU)",
                human_count(p.iops),
                p.cpu_us_per_io
            ))]);
        }
    }
    let bars = |title: &str, y: &str, values, notes, colour| Bars {
        title: title.into(),
        y_desc: y.into(),
        x_desc: "method (t: threads, qd: I/Os in flight per thread)".into(),
        categories: cats.clone(),
        group_labels: ops.clone(),
        series: vec![(title.to_string(), colour)],
        values,
        log: false,
        y_range: None,
        value_labels: true,
        marks: vec![],
        bar_marks: vec![],
        notes,
    };
    let fig = Figure {
        title: format!("{}: I/O methods, 4 KiB random I/O (Table 3)", run.ds.title),
        caption: caption(
            run,
            &[format!(
                "From iomethods/iomethods.json: a {} file ({:.1}x the machine's {} RAM), {} B \
                 blocks. Paper (random writes, data set 3x RAM): mmap 1 thread 10K, mmap 8 \
                 threads 60K, direct I/O 1 thread 88K, AIO QD1 91K, AIO QD64 376K IOPS.",
                human_bytes(io.file_bytes),
                if io.memory_bytes > 0 {
                    io.file_bytes as f64 / io.memory_bytes as f64
                } else {
                    0.0
                },
                human_bytes(io.memory_bytes),
                io.block_bytes
            )],
        ),
        legend: vec![],
        cols: 1,
        panels: vec![
            Panel::Bars(bars(
                "IOPS (label: IOPS and CPU µs per I/O)",
                "I/Os per second",
                iops,
                notes,
                RUN_COLOUR,
            )),
            Panel::Bars(bars(
                "CPU time per I/O",
                "CPU µs per I/O (user + system)",
                cpu,
                vec![],
                LOAD_COLOUR,
            )),
        ],
        size: (W, 1100),
    };
    out.add(
        "Table 3",
        "table3-iomethods",
        "I/O methods: IOPS and CPU per I/O".into(),
        "IOPS of mmap, pread/pwrite (direct I/O) and io_uring at several thread counts and \
         queue depths, with the CPU microseconds each I/O cost."
            .into(),
        &fig,
        commands_of([&io.command]),
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
    s.push_str("## Table 3: I/O methods\n\n");
    let Some((_, io)) = &run.iomethods else {
        s.push_str("Skipped: no iomethods/iomethods.json.\n\n");
        return;
    };
    s.push_str(
        "**Paper** (docs/paper-numbers.md, Table 3, Optane, 4 KiB random writes, data set 3x RAM): mmap 1 thread \
         10K, mmap 8 threads 60K, direct I/O 1 thread 88K, AIO QD1 91K, AIO QD64 376K IOPS.\n\n",
    );
    code_block(s, &commands_of([&io.command]));
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
