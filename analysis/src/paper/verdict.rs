//! How a shape of ours compares with the paper's, decided by a stated rule.

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
    /// An engine of the comparison went over its memory budget: no verdict (the
    /// memory rule, `memory_rule.rs`).
    NotCompared,
}

impl Verdict {
    /// Whether a verdict was reached (no number missing, no engine over budget).
    pub fn judged(self) -> bool {
        !matches!(self, Verdict::NotComparable | Verdict::NotCompared)
    }

    pub fn text(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::OrderOnly => "order holds, ratio off",
            Verdict::DoesNotHold => "does not hold",
            Verdict::NotComparable => "not comparable",
            Verdict::NotCompared => "not compared",
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

/// `a / b`, where both are there and `b` is positive.
pub(crate) fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 && a.is_finite() => Some(a / b),
        _ => None,
    }
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
}
