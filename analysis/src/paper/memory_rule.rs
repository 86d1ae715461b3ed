//! The memory rule: the paper's verdicts are computed only between engines within
//! their memory budget.
//!
//! - An engine over budget (more than 110% of it in any phase, killed at its memory
//!   limit, or refusing writes that did not fit: `crate::budget`) is shown, flagged,
//!   and every comparison it is part of reads "not compared: <engine> over budget
//!   (<used> of <budget>)" instead of a verdict.
//! - A result file without memory figures (before schema version 3) is not known to
//!   be within any budget: its comparisons keep the verdict they had, with the note
//!   "memory not measured (results before schema 3)".
//! - A run without a budget (`--memory` not given) is measured but not bounded: its
//!   verdicts stand with the note "no memory budget".
//! - Otherwise (every engine within its budget) the verdict stands as the figure's
//!   rule gives it.

use super::verdict::Verdict;
use crate::budget::{self, Standing};
use crate::dataset::Entry;
use crate::model::OVER_BUDGET;
use std::fmt::Write as _;

/// The note of a comparison between result files without memory figures.
pub(crate) const NOT_MEASURED: &str = "memory not measured (results before schema 3)";

/// The note of a comparison where an engine ran without a memory budget.
pub(crate) const NO_BUDGET: &str = "no memory budget (run without --memory)";

/// The note of a comparison of recovery times (recovery results carry no memory
/// figures).
pub(crate) const RECOVERY_NOT_MEASURED: &str =
    "memory not measured (recovery results carry no memory figures)";

/// The rule as `paper-repro.md` states it above the verdicts.
pub(crate) fn rule_text() -> String {
    format!(
        "- **Memory rule**: verdicts are computed only between engines within their memory \
         budget. An engine that held more than {:.0}% of its budget in any phase (its \
         resident memory beyond the driver's own plus the OS page cache of its files), was \
         killed at its memory limit or refused writes that did not fit is shown, flagged \
         *over budget: <used> of <budget>* wherever its numbers appear, never marked best, \
         and each comparison it is part of reads *not compared: <engine> over budget \
         (<used> of <budget>)*. Result files without memory figures (written before schema \
         version 3) are not known to be within any budget: their verdicts are computed as \
         before and carry the note *{NOT_MEASURED}*.\n",
        OVER_BUDGET * 100.0
    )
}

/// What the memory rule says about one comparison.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Gate {
    /// Every engine compared was within its budget.
    Within,
    /// An engine compared is not known to be within a budget (no memory figures, or
    /// no budget): the verdict stands, with the note saying why.
    Unknown(&'static str),
    /// An engine compared went over its budget: `rocksdb over budget (412.0 MiB of
    /// 162.8 MiB)`, for each such engine.
    Over(String),
}

impl Gate {
    /// The gate of a comparison between `entries` (absent engines left out).
    pub(crate) fn of(entries: &[Option<&Entry>]) -> Gate {
        let present: Vec<&Entry> = entries.iter().flatten().copied().collect();
        let over: Vec<String> = present
            .iter()
            .filter_map(|e| {
                budget::over(&e.run).map(|o| format!("{} over budget ({})", e.label, o.detail()))
            })
            .collect();
        if !over.is_empty() {
            return Gate::Over(over.join("; "));
        }
        let standings: Vec<Standing> = present.iter().map(|e| budget::standing(&e.run)).collect();
        if standings.contains(&Standing::NotMeasured) {
            return Gate::Unknown(NOT_MEASURED);
        }
        if standings.contains(&Standing::NoBudget) {
            return Gate::Unknown(NO_BUDGET);
        }
        Gate::Within
    }

    /// The verdict `judge` gives, unless an engine is over budget.
    pub(crate) fn verdict(&self, judge: impl FnOnce() -> Verdict) -> Verdict {
        match self {
            Gate::Over(_) => Verdict::NotCompared,
            _ => judge(),
        }
    }

    /// A verdict as text: `not compared: rocksdb over budget (...)` where the gate
    /// says so, else the verdict's own words.
    pub(crate) fn text(&self, v: Verdict) -> String {
        match (self, v) {
            (Gate::Over(why), Verdict::NotCompared) => format!("not compared: {why}"),
            _ => v.text().into(),
        }
    }

    /// A ratio's text, flagged where an engine of it is over budget.
    pub(crate) fn ratio(&self, text: String) -> String {
        match self {
            Gate::Over(_) => format!("{text} [over budget]"),
            _ => text,
        }
    }
}

/// The gates of a section's comparisons: its memory line and its summary's note.
#[derive(Default)]
pub(crate) struct Gates {
    over: Vec<String>,
    not_compared: usize,
    unknown: Vec<&'static str>,
    within: usize,
}

impl Gates {
    /// Records `g` (one comparison) and returns it.
    pub(crate) fn add(&mut self, g: Gate) -> Gate {
        match &g {
            Gate::Within => self.within += 1,
            Gate::Unknown(why) => {
                if !self.unknown.contains(why) {
                    self.unknown.push(why);
                }
            }
            Gate::Over(why) => {
                self.not_compared += 1;
                for w in why.split("; ") {
                    if !self.over.iter().any(|o| o == w) {
                        self.over.push(w.to_string());
                    }
                }
            }
        }
        g
    }

    /// The section's line on memory, after its shape.
    pub(crate) fn line(&self, s: &mut String) {
        if self.over.is_empty() && self.unknown.is_empty() && self.within == 0 {
            return;
        }
        s.push_str("**Memory:** ");
        let mut parts = Vec::new();
        if !self.over.is_empty() {
            parts.push(format!(
                "{}: shown flagged, {} comparison{} not compared",
                self.over.join("; "),
                self.not_compared,
                if self.not_compared == 1 { "" } else { "s" }
            ));
        }
        for why in &self.unknown {
            parts.push(format!(
                "{}: the engines are not known to be within the same budget; verdicts are \
                 computed as before",
                why.strip_prefix("memory ").unwrap_or(why)
            ));
        }
        if self.over.is_empty() && self.unknown.is_empty() {
            parts.push(format!(
                "every engine compared held within {:.0}% of its budget",
                OVER_BUDGET * 100.0
            ));
        }
        let _ = writeln!(s, "{}.\n", parts.join(". "));
    }

    /// The note the section's summary row carries, if any: `; 2 not compared (over
    /// budget)`, `; memory not measured`.
    pub(crate) fn summary_note(&self) -> String {
        let mut s = String::new();
        if self.not_compared > 0 {
            let _ = write!(s, "; {} not compared (over budget)", self.not_compared);
        }
        for why in &self.unknown {
            let _ = write!(s, "; {}", why.split(" (").next().unwrap_or(why));
        }
        s
    }
}
