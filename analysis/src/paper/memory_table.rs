//! The "Memory" section of `paper-repro.md` and the directory's `README.md`: what
//! each engine held against its budget in each result, how the budget was held, the
//! warm-up before the run and the run's cache hit ratio.

use super::format::pct;
use super::memory_rule::NOT_MEASURED;
use super::run::PaperRun;
use crate::budget::{self, Standing};
use crate::model::OVER_BUDGET;
use crate::text::human_bytes;
use std::fmt::Write as _;

/// The section: one row per result and engine; a line instead where no file has
/// memory figures.
pub(crate) fn memory_section(s: &mut String, run: &PaperRun) {
    s.push_str("## Memory\n\n");
    let entries: Vec<(&str, &crate::dataset::Entry)> = run
        .ds
        .groups
        .iter()
        .flat_map(|g| g.runs.iter().map(move |e| (g.label.as_str(), e)))
        .collect();
    if !entries.iter().any(|(_, e)| budget::measured(&e.run)) {
        let _ = writeln!(
            s,
            "{}: the result files carry no memory figures, so no engine is known to be \
             within its budget (the scale's memory is what each engine's cache option was \
             set to, not what it held).\n",
            capitalised(NOT_MEASURED)
        );
        return;
    }
    let _ = writeln!(
        s,
        "Memory used: the peak, over the phases of a run, of the process's resident memory \
         beyond the driver's own (measured before the engine opened) plus the OS page cache \
         of the engine's files. Over budget: more than {:.0}% of the budget in any phase, \
         killed at the memory limit, or writes refused for want of memory.\n",
        OVER_BUDGET * 100.0
    );
    s.push_str(
        "| results | engine | budget | used (peak) | of it page cache | used / budget | bound | warm-up | cache hit ratio (run) | standing |\n\
         | --- | --- | ---: | ---: | ---: | ---: | --- | --- | ---: | --- |\n",
    );
    let bytes = |x: Option<u64>| x.map(human_bytes).unwrap_or_else(|| "N/A".into());
    for (label, e) in entries {
        let r = &e.run;
        let peak = budget::peak_phase(r);
        let _ = writeln!(
            s,
            "| {label} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            e.label,
            r.memory
                .budget_bytes
                .map(human_bytes)
                .unwrap_or_else(|| "none".into()),
            bytes(peak.map(|m| m.peak_used_bytes)),
            bytes(peak.map(|m| m.peak_page_cache_bytes)),
            peak.and_then(|m| m.used_over_budget)
                .map(|x| format!("{x:.2}"))
                .unwrap_or_else(|| "N/A".into()),
            budget::bound(r),
            budget::warmup(r),
            r.run()
                .and_then(budget::mean_hit_ratio)
                .map(pct)
                .unwrap_or_else(|| "N/A".into()),
            match budget::standing(r) {
                Standing::Within => "within budget".to_string(),
                Standing::Over(o) => format!("**{}**", o.flag()),
                Standing::NoBudget => "no budget".into(),
                Standing::NotMeasured => "not measured".into(),
            }
        );
    }
    s.push('\n');
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}
