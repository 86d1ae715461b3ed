//! Fig. 3: CPU and device utilisation over time on YCSB A uniform: RocksDB runs out
//! of CPU, KVell keeps the drive busy.

use crate::budget::flagged;
use crate::charts::figure::{Figure, Panel};
use crate::charts::legend::Swatch;
use crate::charts::lines::{Line, Lines};
use crate::charts::style::{W, engine_colour};
use crate::dataset::Entry;
use crate::error::Result;
use crate::paper::chart::{Charts, PaperChart, caption, durability_line, group_commands};
use crate::paper::format::{ops_s, opt, pct};
use crate::paper::markdown::{Summary, charts_of, code_block, images};
use crate::paper::memory_rule::{Gate, Gates};
use crate::paper::metrics::{ceiling, cpu_fraction, tput};
use crate::paper::reasons::reasons;
use crate::paper::run::{PaperRun, entry};
use crate::paper::verdict::Verdict;
use crate::text::human_count;
use plotters::style::BLACK;
use std::fmt::Write as _;

/// A busy fraction as a percentage, at most 100% (counted in `clamped` when above)
/// and at least 0.
fn busy_pct(fraction: f64, clamped: &mut usize) -> f64 {
    if fraction > 1.0 {
        *clamped += 1;
    }
    fraction.clamp(0.0, 1.0) * 100.0
}

/// Draws the figure's charts.
pub(super) fn draw(run: &PaperRun, out: &mut Charts) -> Result<()> {
    let Some(g) = run.ycsb('a', "uniform") else {
        out.skip("Fig. 3 (CPU and device utilisation)", "no ycsb/a-uniform");
        return Ok(());
    };
    let entries: Vec<&Entry> = ["rocksdb", "kvell"]
        .iter()
        .filter_map(|e| entry(g, e))
        .collect();
    if entries.is_empty() {
        out.skip(
            "Fig. 3 (CPU and device utilisation)",
            "ycsb/a-uniform has neither rocksdb nor kvell",
        );
        return Ok(());
    }
    let mut panels = Vec::new();
    let mut legend = Vec::new();
    let mut clamped = 0;
    for e in &entries {
        let p = e.run.run().cloned().unwrap_or_default();
        let cores = e.run.machine.cores.max(1) as f64;
        let mut prev = 0.0;
        let mut cpu = Vec::new();
        let mut dev = Vec::new();
        for s in &p.timeline {
            let dt = s.t - prev;
            prev = s.t;
            if dt > 1e-3 {
                cpu.push((
                    s.t,
                    busy_pct((s.cpu_user_s + s.cpu_sys_s) / dt / cores, &mut clamped),
                ));
                if let Some(u) = s.dev_util {
                    dev.push((s.t, busy_pct(u, &mut clamped)));
                }
            }
        }
        let colour = engine_colour(&run.ds, &e.label);
        legend.push((
            format!("{}: CPU busy (% of {} cores)", e.label, e.run.machine.cores),
            Swatch::Line(colour),
        ));
        // named in the figure's legend: no legend inside the panel to hide the lines
        let mut lines = vec![Line {
            name: String::new(),
            colour,
            points: cpu,
            dashed: false,
        }];
        if !dev.is_empty() {
            lines.push(Line {
                name: String::new(),
                colour: BLACK,
                points: dev,
                dashed: true,
            });
        }
        panels.push(Panel::Lines(Lines {
            title: format!(
                "{}: {} ops/s, CPU {}, device {}",
                run.engine_label(&e.label),
                human_count(p.throughput_ops_sec),
                cpu_fraction(&e.run, &p).map(pct).unwrap_or("?".into()),
                p.device
                    .as_ref()
                    .and_then(|d| d.utilisation)
                    .map(pct)
                    .unwrap_or("?".into())
            ),
            x_desc: "time since the run phase started (s)".into(),
            y_desc: "busy (%)".into(),
            log_x: false,
            log_y: false,
            lines,
            refs: vec![],
            labels: vec![],
            y_max: Some(100.0),
            legend_left: false,
        }));
    }
    legend.push((
        "device busy (% of the interval)".into(),
        Swatch::Dashed(BLACK),
    ));
    let labels: Vec<String> = entries.iter().map(|e| e.label.clone()).collect();
    let mut notes = vec![
        "Run phase of ycsb/a-uniform, one point per sampling interval: CPU time of the \
         whole driver process (user + system) over the machine's cores, and the \
         fraction of the interval the data disk was busy (/proc/diskstats); both \
         fractions of the whole machine or device, so 100% is the top."
            .to_string(),
    ];
    if clamped > 0 {
        notes.push(format!(
            "{clamped} sample{} above 100% (the interval's counters read a little apart) \
             drawn at 100%.",
            if clamped == 1 { "" } else { "s" }
        ));
    }
    notes.push(durability_line(run, &labels));
    let fig = Figure {
        title: format!(
            "{}: CPU and device utilisation, YCSB A uniform (Fig. 3)",
            run.ds.title
        ),
        caption: caption(run, &notes),
        legend,
        cols: 1,
        panels,
        size: (W, 290 + 330 * entries.len() as u32),
    };
    out.add(
        "Fig. 3",
        "fig3-cpu-device-a-uniform",
        "CPU and device utilisation over time, RocksDB and KVell, YCSB A uniform".into(),
        "CPU busy (share of the cores) and disk busy over the run phase: which resource \
         each engine runs out of first."
            .into(),
        &fig,
        group_commands(&[g]),
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
    s.push_str("## Fig. 3: CPU and device utilisation, YCSB A uniform\n\n");
    let Some(g) = run.ycsb('a', "uniform") else {
        s.push_str("Skipped: no ycsb/a-uniform.\n\n");
        return;
    };
    s.push_str(
        "**Paper:** on the Optane drive RocksDB runs out of CPU while the drive has bandwidth \
         to spare; KVell keeps the drive busy (docs/paper-numbers.md: no numbers for this figure; \
         on YCSB A it puts KVell at 98% of the device ceiling).\n\n",
    );
    code_block(s, &group_commands(&[g]));
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
            "| {} | {} | {} | {} | {} | {} |",
            flagged(name.to_string(), &e.run),
            run.durability(name),
            opt(tput(&e.run), ops_s),
            opt(cpu, pct),
            opt(dev, pct),
            opt(ceiling(&e.run).1, pct)
        );
    }
    s.push('\n');
    let get = |n: &str| facts.iter().find(|f| f.0 == n).copied();
    let mut gates = Gates::default();
    let gate = gates.add(Gate::of(&[entry(g, "rocksdb"), entry(g, "kvell")]));
    let v = gate.verdict(|| match (get("rocksdb"), get("kvell")) {
        (Some((_, Some(rc), Some(rd))), Some((_, _, Some(kd)))) => {
            if rc > rd && kd >= rd {
                Verdict::Holds
            } else {
                Verdict::DoesNotHold
            }
        }
        _ => Verdict::NotComparable,
    });
    let _ = writeln!(
        s,
        "**Shape:** rule: RocksDB's CPU busy share is above its disk busy share, and KVell \
         keeps the disk at least as busy as RocksDB does -> **{}**.\n",
        gate.text(v)
    );
    gates.line(s);
    if v == Verdict::DoesNotHold {
        let es: Vec<&Entry> = ["rocksdb", "kvell"]
            .iter()
            .filter_map(|n| entry(g, n))
            .collect();
        reasons(s, run, &es);
    }
    summary.push(Summary {
        what: "Fig. 3: RocksDB CPU-bound, KVell disk-bound".into(),
        verdict: format!("{}{}", gate.text(v), gates.summary_note()),
    });
    images(s, &charts_of(charts, "Fig. 3"), link);
}
