//! Panels more than one paper figure draws: throughput bars with each run's device
//! ceiling, and recovery-time bars.

use super::format::pct;
use super::metrics::{ceiling, median_data_bytes, tput};
use super::run::{PaperRun, entry, stem};
use crate::budget;
use crate::charts::bars::Bars;
use crate::charts::legend::{Swatch, fills};
use crate::charts::style::{STALL_COLOUR, engine_colour};
use crate::dataset::Group;
use crate::model::Recovery;
use crate::text::{human_bytes, human_count};
use plotters::style::{BLACK, RGBColor};

/// Grouped throughput bars on a linear axis: one category per group, one bar per
/// engine of `engines`, each run's ceiling marked and the fraction of it reached
/// written above the bar.
pub(crate) fn throughput_bars(
    gs: &[&Group],
    engines: &[String],
    series: &[(String, RGBColor)],
    cat_label: impl Fn(&Group) -> String,
    title: &str,
) -> Bars {
    let mut values = Vec::new();
    let mut marks = Vec::new();
    let mut notes = Vec::new();
    for g in gs {
        let mut v = Vec::new();
        let mut m = Vec::new();
        let mut n = Vec::new();
        for e in engines {
            let r = entry(g, e).map(|x| &x.run);
            let t = r.and_then(tput);
            let (c, f) = r.map(ceiling).unwrap_or((None, None));
            v.push(t);
            m.push(c);
            n.push(t.map(|t| {
                let label = match f {
                    Some(f) => format!("{} {}", human_count(t), pct(f)),
                    None => human_count(t),
                };
                match r.and_then(budget::over) {
                    Some(_) => format!("{label} OVER"),
                    None => label,
                }
            }));
        }
        values.push(v);
        marks.push(m);
        notes.push(n);
    }
    // a ceiling far above every bar (a run served from memory) would squash the bars:
    // left out, its fraction still in the label
    let top = values
        .iter()
        .flatten()
        .flatten()
        .copied()
        .fold(0.0, f64::max);
    for m in marks.iter_mut().flatten() {
        if m.is_some_and(|c| c > top * 4.0) {
            *m = None;
        }
    }
    Bars {
        title: title.into(),
        y_desc: "run-phase throughput (ops/s)".into(),
        x_desc: "workload".into(),
        categories: gs.iter().map(|g| (cat_label(g), 0)).collect(),
        group_labels: vec![],
        series: series.to_vec(),
        values,
        log: false,
        y_range: None,
        value_labels: false,
        marks: vec![],
        bar_marks: marks,
        notes,
    }
}

/// The engines of `gs` with their colours, in display order, for
/// [`throughput_bars`].
pub(crate) fn engine_series(
    run: &PaperRun,
    gs: &[&Group],
) -> (Vec<String>, Vec<(String, RGBColor)>) {
    let engines = run.engines_in(gs);
    let series = engines
        .iter()
        .map(|e| (run.engine_label(e), engine_colour(&run.ds, e)))
        .collect();
    (engines, series)
}

/// The legend of throughput bars drawn from `gs` into `panels`: the engines, `OVER`
/// where an engine went over its budget, the ceiling mark where one is drawn.
pub(crate) fn throughput_legend(
    gs: &[&Group],
    series: &[(String, RGBColor)],
    panels: &[&Bars],
) -> Vec<(String, Swatch)> {
    let mut legend = fills(series);
    let over = gs
        .iter()
        .flat_map(|g| &g.runs)
        .any(|e| budget::over(&e.run).is_some());
    if over {
        legend.push((
            "OVER: over its memory budget, left out of the verdicts".into(),
            Swatch::Cross(STALL_COLOUR),
        ));
    }
    if panels
        .iter()
        .any(|b| b.bar_marks.iter().flatten().any(Option::is_some))
    {
        legend.push((
            "device ceiling of the run's I/O mix (label: % reached)".into(),
            Swatch::Line(BLACK),
        ));
    }
    legend
}

/// Bars of the reopen time after SIGKILL, one per engine (only those of `only`,
/// where given), labelled with the time and the data size.
pub(crate) fn recovery_bars(run: &PaperRun, only: Option<&[&str]>) -> Option<Bars> {
    let rs: Vec<(String, &Recovery)> = run
        .recovery
        .iter()
        .map(|(p, r)| (stem(p), r))
        .filter(|(e, _)| only.is_none_or(|o| o.contains(&e.as_str())))
        .collect();
    if rs.is_empty() {
        return None;
    }
    let series: Vec<(String, RGBColor)> = rs
        .iter()
        .map(|(e, _)| (run.engine_label(e), engine_colour(&run.ds, e)))
        .collect();
    let values = vec![
        rs.iter()
            .map(|(_, r)| Some(r.recovery_s_median))
            .collect::<Vec<_>>(),
    ];
    let notes = vec![
        rs.iter()
            .map(|(_, r)| {
                Some(format!(
                    "{:.2} s, {}",
                    r.recovery_s_median,
                    median_data_bytes(r).map(human_bytes).unwrap_or("?".into())
                ))
            })
            .collect::<Vec<_>>(),
    ];
    Some(Bars {
        title: "reopen time after SIGKILL (median of the cycles; label: time, data size)".into(),
        y_desc: "recovery time (s)".into(),
        x_desc: String::new(),
        categories: vec![("recovery/<engine>.json".into(), 0)],
        group_labels: vec![],
        series,
        values,
        log: false,
        y_range: None,
        value_labels: false,
        marks: vec![],
        bar_marks: vec![],
        notes,
    })
}
