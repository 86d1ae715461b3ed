//! An engine's memory against its budget, as its result file tells it: within, over
//! (and by how much), without a budget, or not measured (a file before schema 3); how
//! the budget was held; the warm-up before the run; the run's cache hit ratio.
//!
//! The rule (the driver's, `kvtb_schema::OVER_BUDGET`): an engine that held more than
//! 110% of its budget in any phase, was killed at its memory limit, or refused writes
//! that did not fit is over budget. It is shown, flagged wherever its numbers appear,
//! never marked best, and left out of every verdict. The null engine (the driver's
//! own ceiling) is never marked best either.

use crate::model::{MemoryUse, Phase, RunFile, Sample};
use crate::text::human_bytes;

/// Why an engine is over its budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Over {
    /// It held `used` bytes at its peak against `budget`.
    Used { used: u64, budget: u64 },
    /// The kernel killed it at its memory limit (the budget plus the driver's own).
    Killed { budget: u64 },
    /// It refused writes that did not fit its budget (an engine whose in-memory image
    /// outgrew it).
    Refused,
    /// It refused to open within its budget (it must hold more, whatever the data).
    RefusedOpen,
}

impl Over {
    /// `412.0 MiB of 162.8 MiB`, `killed at its memory limit (162.8 MiB budget)`.
    pub(crate) fn detail(self) -> String {
        match self {
            Over::Used { used, budget } => {
                format!("{} of {}", human_bytes(used), human_bytes(budget))
            }
            Over::Killed { budget } => format!(
                "killed at its memory limit ({} budget)",
                human_bytes(budget)
            ),
            Over::Refused => "refused writes that did not fit".into(),
            Over::RefusedOpen => "refused to open within its budget".into(),
        }
    }

    /// The flag beside its numbers: `over budget: 412.0 MiB of 162.8 MiB`.
    pub(crate) fn flag(self) -> String {
        format!("over budget: {}", self.detail())
    }
}

/// Where an engine stands against its memory budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Standing {
    /// Held within [`kvtb_schema::OVER_BUDGET`] of its budget in every phase.
    Within,
    Over(Over),
    /// Memory was measured, but the run had no budget (`--memory` not given).
    NoBudget,
    /// No memory figures: a result file before schema version 3 (or one that
    /// recorded none). Not known to be within any budget.
    NotMeasured,
}

/// Whether the file carries any memory figure (schema version 3).
pub(crate) fn measured(r: &RunFile) -> bool {
    !r.memory.is_unset() || r.phases.iter().any(|p| p.memory.is_some())
}

/// Where `r` stands against its budget.
pub(crate) fn standing(r: &RunFile) -> Standing {
    if let Some(budget) = r.memory.budget_bytes {
        if r.memory.killed_at_limit {
            return Standing::Over(Over::Killed { budget });
        }
        if let Some((used, budget)) = r.over_budget() {
            return Standing::Over(Over::Used { used, budget });
        }
    }
    if r.memory.refused_at_open {
        return Standing::Over(Over::RefusedOpen);
    }
    let refused = r
        .phases
        .iter()
        .flat_map(|p| &p.ops)
        .any(|o| o.status.contains_key("OVER_BUDGET"));
    if refused {
        return Standing::Over(Over::Refused);
    }
    if !r.phases.iter().any(|p| p.memory.is_some()) {
        return Standing::NotMeasured;
    }
    if r.memory.budget_bytes.is_none() {
        return Standing::NoBudget;
    }
    Standing::Within
}

/// Why `r` is over budget, if it is.
pub(crate) fn over(r: &RunFile) -> Option<Over> {
    match standing(r) {
        Standing::Over(o) => Some(o),
        _ => None,
    }
}

/// Whether `r` may be marked best: a real store (not the null engine, the driver's
/// own ceiling) that is not over its budget.
pub(crate) fn contends(r: &RunFile) -> bool {
    r.engine.name != "null" && over(r).is_none()
}

/// `cell`, followed by the over-budget flag of `r` where it has one.
pub(crate) fn flagged(cell: String, r: &RunFile) -> String {
    match over(r) {
        Some(o) => format!("{cell} [{}]", o.flag()),
        None => cell,
    }
}

/// The phase that held the most against the budget (the largest used / budget, else
/// the largest peak used): the one the budget check is about.
pub(crate) fn peak_phase(r: &RunFile) -> Option<&MemoryUse> {
    r.phases
        .iter()
        .filter_map(|p| p.memory.as_ref())
        .max_by(|a, b| {
            let key = |m: &MemoryUse| (m.used_over_budget.unwrap_or(0.0), m.peak_used_bytes);
            let (ka, kb) = (key(a), key(b));
            ka.0.total_cmp(&kb.0).then(ka.1.cmp(&kb.1))
        })
}

/// How the budget was held, in a word or two: `cgroup`, `cgroup (enclosing)`,
/// `measured`, `unbounded page cache`, `killed`, `no budget`, `not measured`.
pub(crate) fn bound(r: &RunFile) -> &'static str {
    let m = &r.memory;
    if m.killed_at_limit {
        "killed"
    } else if m.is_unset() {
        "not measured"
    } else if m.budget_bytes.is_none() {
        "no budget"
    } else if m.enforcement.starts_with("memory cgroup") {
        "cgroup"
    } else if m.enforcement.starts_with("the enclosing") {
        "cgroup (enclosing)"
    } else if m.uses_os_page_cache {
        "unbounded page cache"
    } else {
        "measured"
    }
}

/// The warm-up before the measured run: `12 s, steady`, `30 s, not steady`, `none`.
pub(crate) fn warmup(r: &RunFile) -> String {
    match r.phase("warmup").and_then(|p| p.warmup.as_ref()) {
        Some(w) if w.steady => format!("{:.0} s, steady", w.seconds),
        Some(w) => format!("{:.0} s, not steady", w.seconds),
        None if r.driving.warmup_s > 0.0 => format!("{} s (fixed, in the run)", r.driving.warmup_s),
        None => "none".into(),
    }
}

/// The mean cache hit ratio over the measured samples of a phase, where the engine
/// reports one per interval; else its hits among its lookups over the phase, from
/// its counters.
pub(crate) fn mean_hit_ratio(p: &Phase) -> Option<f64> {
    let v: Vec<f64> = p
        .timeline
        .iter()
        .filter(|s| !s.warmup)
        .filter_map(|s| s.cache_hit_ratio)
        .collect();
    if !v.is_empty() {
        return Some(v.iter().sum::<f64>() / v.len() as f64);
    }
    let h = p.counter_delta("cache_hits")?;
    let m = p.counter_delta("cache_misses")?;
    (h + m > 0).then(|| h as f64 / (h + m) as f64)
}

/// What the engine held at the end of an interval: its resident memory beyond the
/// driver's own, plus the page cache of its files; `None` without a sample of either.
pub(crate) fn used_at(s: &Sample, driver_rss: u64) -> Option<u64> {
    if s.rss_bytes.is_none() && s.page_cache_bytes.is_none() {
        return None;
    }
    Some(s.rss_bytes.unwrap_or(0).saturating_sub(driver_rss) + s.page_cache_bytes.unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::parse_run;

    fn run(memory: &str, used_over_budget: Option<f64>, status: &str) -> RunFile {
        let phase_memory = match used_over_budget {
            Some(r) => format!(
                r#", "memory": {{"peak_used_bytes": {}, "used_over_budget": {r}}}"#,
                (r * 100.0 * 1048576.0) as u64
            ),
            None => String::new(),
        };
        let text = format!(
            r#"{{"format": 3, "engine": {{"name": "kvell"}}{memory},
                "phases": [{{"phase": "run", "ops": [{{"name": "INSERT", "status": {{"{status}": 1}}}}]{phase_memory}}}]}}"#
        );
        parse_run(&text).unwrap()
    }

    const BUDGET: &str = r#", "memory": {"budget_bytes": 104857600, "enforcement": "memory cgroup v2, memory.max", "driver_rss_bytes": 1}"#;

    #[test]
    fn the_budget_rule() {
        // 110% is room for measurement: at it, within; above it, over
        assert_eq!(standing(&run(BUDGET, Some(1.10), "OK")), Standing::Within);
        assert_eq!(
            standing(&run(BUDGET, Some(1.11), "OK")),
            Standing::Over(Over::Used {
                used: 116391936,
                budget: 104857600
            })
        );
        assert_eq!(
            over(&run(BUDGET, Some(1.11), "OK"))
                .map(Over::flag)
                .as_deref(),
            Some("over budget: 111.0 MiB of 100.0 MiB")
        );
        let killed = BUDGET.replace(r#""driver_rss_bytes": 1"#, r#""killed_at_limit": true"#);
        assert_eq!(
            over(&run(&killed, None, "OK")).map(Over::flag).as_deref(),
            Some("over budget: killed at its memory limit (100.0 MiB budget)")
        );
        assert_eq!(bound(&run(&killed, None, "OK")), "killed");
        assert_eq!(
            standing(&run(BUDGET, Some(0.5), "OVER_BUDGET")),
            Standing::Over(Over::Refused)
        );
        // no memory figures: not measured, not over, still contends for best
        let old = run("", None, "OK");
        assert_eq!(standing(&old), Standing::NotMeasured);
        assert!(!measured(&old) && contends(&old));
        assert_eq!(bound(&old), "not measured");
        let no_budget =
            r#", "memory": {"enforcement": "none: no --memory budget", "driver_rss_bytes": 1}"#;
        assert_eq!(
            standing(&run(no_budget, Some(0.0), "OK")),
            Standing::NoBudget
        );
        assert_eq!(bound(&run(BUDGET, Some(0.5), "OK")), "cgroup");
        assert!(!contends(&run(BUDGET, Some(2.0), "OK")));
        assert_eq!(
            flagged("12k".into(), &run(BUDGET, Some(2.0), "OK")),
            "12k [over budget: 200.0 MiB of 100.0 MiB]"
        );
    }
}
