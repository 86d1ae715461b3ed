//! The paper's baselines that run here, each compared with KVell by the figures that
//! have its column in the paper: RocksDB (its LSM tree) and WiredTiger (its B+ tree).
//! PebblesDB and TokuMX do not run here; their numbers are the paper's only.

/// A baseline of the paper that runs here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Baseline {
    /// The engine's name in the result files (`rocksdb`).
    pub(crate) engine: &'static str,
    /// As the paper names it (`RocksDB`).
    pub(crate) name: &'static str,
}

pub(crate) const ROCKSDB: Baseline = Baseline {
    engine: "rocksdb",
    name: "RocksDB",
};

pub(crate) const WIREDTIGER: Baseline = Baseline {
    engine: "wiredtiger",
    name: "WiredTiger",
};

/// The statement of the paper's systems that have no column of ours.
pub(crate) const NOT_OBTAINABLE: &str = "PebblesDB and TokuMX are not obtainable on this machine \
     (no maintained packages or builds for this system), so their columns are the paper's only";

/// The baselines a figure compares with KVell, given the engines with a result in
/// it: RocksDB always (its comparison reads "not comparable" without a result, as
/// it always has), WiredTiger where it has a result (older runs have none, and
/// render as they did).
pub(crate) fn compared(engines: &[String]) -> Vec<Baseline> {
    let mut out = vec![ROCKSDB];
    if engines.iter().any(|e| e == WIREDTIGER.engine) {
        out.push(WIREDTIGER);
    }
    out
}

/// The summary verdict of a KVell/WiredTiger comparison the run has no result for.
pub(crate) const NO_WIREDTIGER_RESULT: &str = "not comparable: no WiredTiger result in this run";

/// Where a figure has the paper's B+ tree column but the run no WiredTiger result
/// (older runs, builds without the `wiredtiger` feature), writes a line saying the
/// column is missing and returns true; writes nothing and returns false otherwise.
pub(crate) fn note_missing_wiredtiger(s: &mut String, engines: &[String]) -> bool {
    if engines.iter().any(|e| e == WIREDTIGER.engine) {
        return false;
    }
    s.push_str(
        "**WiredTiger (the paper's B+ tree):** no result in this run (a run from before its \
         adapter, or a build without the `wiredtiger` feature): its column is missing here, \
         its numbers above are the paper's only, and no KVell/WiredTiger verdict is given.\n\n",
    );
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wiredtiger_is_compared_only_where_it_has_a_result() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(compared(&names(&["kvell", "sled"])), vec![ROCKSDB]);
        assert_eq!(
            compared(&names(&["kvell", "wiredtiger"])),
            vec![ROCKSDB, WIREDTIGER]
        );
    }

    #[test]
    fn a_run_without_wiredtiger_says_its_column_is_missing() {
        let mut s = String::new();
        assert!(note_missing_wiredtiger(
            &mut s,
            &["kvell".into(), "rocksdb".into()]
        ));
        assert!(s.contains("no result in this run"), "{s}");
        let mut s = String::new();
        assert!(!note_missing_wiredtiger(&mut s, &["wiredtiger".into()]));
        assert!(s.is_empty());
    }
}
