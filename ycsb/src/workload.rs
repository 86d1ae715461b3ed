//! The core workload: YCSB's `CoreWorkload` properties resolved into a validated
//! [`Workload`], and per-thread [`OpStream`]s that draw operations from it.

use crate::error::{Error, Result};
use crate::generator::{
    AckCounter, KeyChooser, LengthGen, ScrambledZipfian, ZIPFIAN_CONSTANT, Zipfian, key_name,
};
use crate::props::Properties;
use crate::rng::Rng;
use std::sync::Arc;

/// Operation kinds, named as YCSB names them in its output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpKind {
    Read,
    Update,
    Insert,
    Scan,
    ReadModifyWrite,
    Delete,
}

impl OpKind {
    pub const ALL: [OpKind; 6] = [
        OpKind::Read,
        OpKind::Update,
        OpKind::Insert,
        OpKind::Scan,
        OpKind::ReadModifyWrite,
        OpKind::Delete,
    ];

    pub fn index(self) -> usize {
        self as usize
    }

    /// YCSB's name for it (`[READ]`, `[READ-MODIFY-WRITE]`, ...).
    pub fn ycsb_name(self) -> &'static str {
        match self {
            OpKind::Read => "READ",
            OpKind::Update => "UPDATE",
            OpKind::Insert => "INSERT",
            OpKind::Scan => "SCAN",
            OpKind::ReadModifyWrite => "READ-MODIFY-WRITE",
            OpKind::Delete => "DELETE",
        }
    }

    /// The op name of the trace format.
    pub fn trace_name(self) -> &'static str {
        match self {
            OpKind::Read => "GET",
            OpKind::Update | OpKind::Insert => "PUT",
            OpKind::Scan => "SCAN",
            OpKind::ReadModifyWrite => "RMW",
            OpKind::Delete => "DELETE",
        }
    }
}

/// How value sizes are chosen (`valuesizes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueSizes {
    /// Drawn from the field-length distribution at every write (YCSB).
    Drawn,
    /// Fixed by the key's rank, as the KVell authors' production benchmark does:
    /// the first 1% of keys 100 B, up to 82% 400 B, up to 98% 1 KiB, the rest 4 KiB.
    ProductionCode,
    /// Fixed per key within 250 B..1 KiB with a median of 400 B, as the paper
    /// describes the production items.
    ProductionPaper,
}

impl ValueSizes {
    /// The value size of key number `n` of `count`, for the per-key kinds.
    pub fn of_key(self, n: i64, count: i64) -> Option<usize> {
        let count = count.max(1);
        match self {
            ValueSizes::Drawn => None,
            ValueSizes::ProductionCode => {
                let rank = (n.max(0) as i128 * 100 / count as i128) as i64;
                Some(match rank {
                    r if r < 1 => 100,
                    r if r < 82 => 400,
                    r if r < 98 => 1024,
                    _ => 4096,
                })
            }
            ValueSizes::ProductionPaper => {
                let u = (crate::generator::fnvhash64(n ^ 0x5eed) as u64 % 1_000_000) as f64
                    / 1_000_000.0;
                Some(if u < 0.5 {
                    250 + (u * 2.0 * 150.0) as usize
                } else {
                    400 + ((u - 0.5) * 2.0 * 624.0) as usize
                })
            }
        }
    }
}

/// A resolved, validated workload.
#[derive(Clone, Debug)]
pub struct Workload {
    pub recordcount: i64,
    pub operationcount: i64,
    pub insertstart: i64,
    pub insertcount: i64,
    /// (kind, normalised proportion), zero proportions left out.
    pub mix: Vec<(OpKind, f64)>,
    pub ordered_inserts: bool,
    pub zeropadding: usize,
    pub value_len: LengthGen,
    /// Value sizes drawn per write (`constant`, YCSB's) or fixed per key.
    pub value_sizes: ValueSizes,
    pub scan_len: LengthGen,
    pub chooser: KeyChooser,
    pub request_distribution: String,
    pub dataintegrity: bool,
    /// Fields per record (YCSB's fieldcount; 1 with `valuesize`): the slots of a
    /// record (see `record.rs`).
    pub fields: usize,
    /// Whether an update writes every field (`writeallfields=true`) or one field
    /// (YCSB's default: read the record, replace one field, write it back).
    pub write_all_fields: bool,
    /// The key prefix (go-ycsb's `keyprefix`; YCSB's is always `user`).
    pub key_prefix: String,
}

fn get<'a>(p: &'a Properties, k: &str, default: &'a str) -> &'a str {
    p.get(k).map(|s| s.as_str()).unwrap_or(default)
}

fn int(p: &Properties, k: &str, default: i64) -> Result<i64> {
    let v = get(p, k, "");
    if v.is_empty() {
        return Ok(default);
    }
    let n: i64 = v
        .parse()
        .map_err(|_| Error::usage(format!("property {k}: expected an integer, got '{v}'")))?;
    if n < 0 {
        return Err(Error::usage(format!(
            "property {k}: must not be negative, got {n}"
        )));
    }
    Ok(n)
}

fn float(p: &Properties, k: &str, default: f64) -> Result<f64> {
    let v = get(p, k, "");
    if v.is_empty() {
        return Ok(default);
    }
    let x: f64 = v
        .parse()
        .map_err(|_| Error::usage(format!("property {k}: expected a number, got '{v}'")))?;
    if !x.is_finite() || x < 0.0 {
        return Err(Error::usage(format!(
            "property {k}: must be a non-negative number, got '{v}'"
        )));
    }
    Ok(x)
}

fn boolean(p: &Properties, k: &str, default: bool) -> Result<bool> {
    match get(p, k, if default { "true" } else { "false" }) {
        "true" | "TRUE" | "True" | "1" => Ok(true),
        "false" | "FALSE" | "False" | "0" => Ok(false),
        other => Err(Error::usage(format!(
            "property {k}: expected true or false, got '{other}'"
        ))),
    }
}

impl Workload {
    /// Resolves YCSB core-workload properties, with YCSB's defaults.
    pub fn from_properties(p: &Properties) -> Result<Workload> {
        let recordcount = int(p, "recordcount", 1000)?;
        let operationcount = int(p, "operationcount", 1000)?;
        let insertstart = int(p, "insertstart", 0)?;
        let insertcount = int(p, "insertcount", recordcount.saturating_sub(insertstart))?;
        let mut mix = Vec::new();
        for (kind, key, default) in [
            (OpKind::Read, "readproportion", 0.95),
            (OpKind::Update, "updateproportion", 0.05),
            (OpKind::Insert, "insertproportion", 0.0),
            (OpKind::Scan, "scanproportion", 0.0),
            (OpKind::ReadModifyWrite, "readmodifywriteproportion", 0.0),
            (OpKind::Delete, "deleteproportion", 0.0),
        ] {
            let x = float(p, key, default)?;
            if x > 0.0 {
                mix.push((kind, x));
            }
        }
        let sum: f64 = mix.iter().map(|(_, x)| x).sum();
        if sum <= 0.0 {
            return Err(Error::usage(
                "all operation proportions are zero: set at least one of readproportion, updateproportion, insertproportion, scanproportion, readmodifywriteproportion, deleteproportion",
            ));
        }
        for m in &mut mix {
            m.1 /= sum;
        }
        let ordered_inserts = match get(p, "insertorder", "hashed") {
            "hashed" => false,
            "ordered" => true,
            other => {
                return Err(Error::usage(format!(
                    "property insertorder: expected hashed or ordered, got '{other}'"
                )));
            }
        };
        let zeropadding = int(p, "zeropadding", 1)? as usize;
        let theta = float(p, "zipfianconstant", ZIPFIAN_CONSTANT)?;
        if !(0.0..1.0).contains(&theta) || theta == 0.0 {
            return Err(Error::usage(format!(
                "property zipfianconstant: must be in (0, 1), got {theta}"
            )));
        }
        // value size: one blob of fieldcount x fieldlength bytes, or `valuesize`
        let value_len = if p.contains_key("valuesize") {
            LengthGen::Constant(int(p, "valuesize", 1000)?)
        } else {
            let fieldcount = int(p, "fieldcount", 10)?;
            let fieldlength = int(p, "fieldlength", 100)?;
            let minfield = int(p, "minfieldlength", 1)?;
            match get(p, "fieldlengthdistribution", "constant") {
                "constant" => LengthGen::Constant(fieldcount * fieldlength),
                "uniform" => LengthGen::Uniform {
                    lb: fieldcount * minfield.min(fieldlength),
                    ub: fieldcount * fieldlength,
                },
                "zipfian" => LengthGen::Zipfian(Zipfian::new(
                    fieldcount * minfield.min(fieldlength),
                    fieldcount * fieldlength,
                    theta,
                )),
                "histogram" => {
                    let f = get(p, "fieldlengthhistogram", "hist.txt");
                    let text = std::fs::read_to_string(f).map_err(|e| {
                        Error::usage(format!(
                            "property fieldlengthhistogram: cannot read {f}: {e}"
                        ))
                    })?;
                    LengthGen::histogram(&text, f, fieldcount).map_err(Error::usage)?
                }
                other => {
                    return Err(Error::usage(format!(
                        "property fieldlengthdistribution: expected constant, uniform, zipfian or histogram, got '{other}'"
                    )));
                }
            }
        };
        let value_sizes = match get(p, "valuesizes", "constant") {
            "constant" | "drawn" => ValueSizes::Drawn,
            "production" => ValueSizes::ProductionCode,
            "production_paper" => ValueSizes::ProductionPaper,
            other => {
                return Err(Error::usage(format!(
                    "property valuesizes: expected constant, production or production_paper, got '{other}'"
                )));
            }
        };
        let minscan = int(p, "minscanlength", 1)?;
        let maxscan = int(p, "maxscanlength", 1000)?;
        if maxscan < minscan {
            return Err(Error::usage(format!(
                "maxscanlength ({maxscan}) is below minscanlength ({minscan})"
            )));
        }
        let scan_len = match get(p, "scanlengthdistribution", "uniform") {
            "uniform" => LengthGen::Uniform {
                lb: minscan,
                ub: maxscan,
            },
            "zipfian" => LengthGen::Zipfian(Zipfian::new(minscan, maxscan, theta)),
            "constant" => LengthGen::Constant(maxscan),
            other => {
                return Err(Error::usage(format!(
                    "property scanlengthdistribution: expected uniform, zipfian or constant, got '{other}'"
                )));
            }
        };
        let insert_prop = mix
            .iter()
            .find(|(k, _)| *k == OpKind::Insert)
            .map(|m| m.1)
            .unwrap_or(0.0);
        let dist = get(p, "requestdistribution", "uniform").to_string();
        if insertcount == 0 && dist != "latest" && dist != "exponential" {
            return Err(Error::usage(
                "recordcount (or insertcount) is 0: nothing to read",
            ));
        }
        let hi = insertstart + insertcount - 1;
        let chooser = match dist.as_str() {
            "uniform" => KeyChooser::Uniform {
                lb: insertstart,
                ub: hi,
            },
            "zipfian" => {
                let expected_new = (operationcount as f64 * insert_prop * 2.0) as i64;
                KeyChooser::Zipfian(ScrambledZipfian::new(insertstart, hi + expected_new, theta))
            }
            "unscrambledzipfian" => {
                let expected_new = (operationcount as f64 * insert_prop * 2.0) as i64;
                KeyChooser::UnscrambledZipfian(Zipfian::new(insertstart, hi + expected_new, theta))
            }
            "latest" => KeyChooser::Latest(Zipfian::new(0, (recordcount - 1).max(0), theta)),
            "hotspot" => {
                let hot_frac = float(p, "hotspotdatafraction", 0.2)?;
                let hot_opn = float(p, "hotspotopnfraction", 0.8)?;
                if hot_frac > 1.0 || hot_opn > 1.0 {
                    return Err(Error::usage(
                        "hotspotdatafraction and hotspotopnfraction must be in [0, 1]",
                    ));
                }
                let interval = hi - insertstart + 1;
                let hot = (interval as f64 * hot_frac) as i64;
                KeyChooser::Hotspot {
                    lb: insertstart,
                    hot,
                    cold: interval - hot,
                    hot_opn_fraction: hot_opn,
                }
            }
            "exponential" => {
                let pct = float(p, "exponential.percentile", 95.0)?;
                let frac = float(p, "exponential.frac", 0.857_142_857_1)?;
                if pct >= 100.0 || frac <= 0.0 {
                    return Err(Error::usage(
                        "exponential.percentile must be below 100 and exponential.frac positive",
                    ));
                }
                KeyChooser::Exponential {
                    gamma: -(1.0 - pct / 100.0).ln() / (recordcount.max(1) as f64 * frac),
                }
            }
            "production1" => KeyChooser::Buckets {
                start: insertstart,
                count: insertcount.max(1),
                buckets: crate::generator::production1_buckets(),
            },
            "production2" => {
                let as_written = match get(p, "production2.thresholds", "as_coded") {
                    "as_coded" => false,
                    "as_written" => true,
                    other => {
                        return Err(Error::usage(format!(
                            "property production2.thresholds: expected as_coded or as_written, got '{other}'"
                        )));
                    }
                };
                KeyChooser::Buckets {
                    start: insertstart,
                    count: insertcount.max(1),
                    buckets: crate::generator::production2_buckets(as_written),
                }
            }
            "sequential" => KeyChooser::Sequential {
                start: insertstart,
                interval: insertcount.max(1),
                cursor: 0,
            },
            other => {
                return Err(Error::usage(format!(
                    "property requestdistribution: unknown distribution '{other}' (uniform, zipfian, unscrambledzipfian, latest, hotspot, exponential, sequential, production1, production2)"
                )));
            }
        };
        let fields = if p.contains_key("valuesize") {
            1
        } else {
            int(p, "fieldcount", 10)?.max(1) as usize
        };
        Ok(Workload {
            fields,
            write_all_fields: boolean(p, "writeallfields", false)?,
            key_prefix: get(p, "keyprefix", "user").to_string(),
            recordcount,
            operationcount,
            insertstart,
            insertcount,
            mix,
            ordered_inserts,
            zeropadding,
            value_len,
            value_sizes,
            scan_len,
            chooser,
            request_distribution: dist,
            dataintegrity: boolean(p, "dataintegrity", false)?,
        })
    }

    /// The key of key number `n`.
    pub fn key(&self, n: i64) -> String {
        key_name(&self.key_prefix, n, self.ordered_inserts, self.zeropadding)
    }

    /// The largest value the workload writes.
    pub fn max_value_len(&self) -> usize {
        match self.value_sizes {
            ValueSizes::Drawn => self.value_len.max().max(0) as usize,
            ValueSizes::ProductionCode => 4096,
            ValueSizes::ProductionPaper => 1024,
        }
    }
}

/// One operation to issue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Op {
    pub kind: OpKind,
    pub keynum: i64,
    pub key: String,
    pub value_len: usize,
    pub scan_len: usize,
    /// When to issue it, from the start of the phase (a timed trace replay).
    pub at: Option<std::time::Duration>,
    /// Fields of the key's record (the slots a read verifies).
    pub fields: usize,
    /// For an update (or the update of a read-modify-write) of one field only: which
    /// one (`writeallfields=false`).
    pub field: Option<usize>,
}

/// A seeded source of operations for one client thread (or one injector).
pub struct OpStream {
    w: Arc<Workload>,
    rng: Rng,
    chooser: KeyChooser,
    value_len: LengthGen,
    scan_len: LengthGen,
    inserts: Arc<AckCounter>,
    cumulative: Vec<(OpKind, f64)>,
}

impl Workload {
    /// The warm-up's workload: this one with its inserts and deletes turned into reads,
    /// so a warm-up never changes the set of keys, and the measured run after it draws
    /// the same keys for every engine however long the engine's warm-up took.
    pub fn for_warmup(&self) -> Workload {
        let mut w = self.clone();
        let mut read = 0.0;
        w.mix.retain(|(k, x)| {
            let keep = !matches!(k, OpKind::Insert | OpKind::Delete | OpKind::Read);
            if !keep {
                read += x;
            }
            keep
        });
        if read > 0.0 {
            w.mix.insert(0, (OpKind::Read, read));
        }
        w
    }
}

impl OpStream {
    /// `inserts` is shared by every stream of a run: it hands out new key numbers and
    /// tracks acknowledged inserts.
    pub fn new(w: Arc<Workload>, inserts: Arc<AckCounter>, seed: u64, stream: u64) -> OpStream {
        let mut acc = 0.0;
        let cumulative = w
            .mix
            .iter()
            .map(|(k, x)| {
                acc += x;
                (*k, acc)
            })
            .collect();
        OpStream {
            chooser: w.chooser.clone(),
            value_len: w.value_len.clone(),
            scan_len: w.scan_len.clone(),
            rng: Rng::derive(seed, stream),
            w,
            inserts,
            cumulative,
        }
    }

    fn pick_kind(&mut self) -> OpKind {
        let u = self.rng.next_f64();
        for (k, c) in &self.cumulative {
            if u < *c {
                return *k;
            }
        }
        // the last kind's cumulative share is 1 (up to rounding); a resolved workload
        // always has one kind at least
        self.cumulative.last().map_or(OpKind::Read, |c| c.0)
    }

    /// The length of the next value to write for key number `keynum`.
    pub fn value_len_for(&mut self, keynum: i64) -> usize {
        match self.w.value_sizes.of_key(keynum, self.w.recordcount) {
            Some(n) => n,
            None => self.value_len.next(&mut self.rng).max(0) as usize,
        }
    }

    /// The next run-phase operation.
    pub fn next_op(&mut self) -> Op {
        let kind = self.pick_kind();
        let keynum = if kind == OpKind::Insert {
            self.inserts.next()
        } else {
            let last = self.inserts.last();
            self.chooser.next(last, &mut self.rng)
        };
        let value_len = match kind {
            OpKind::Insert | OpKind::Update | OpKind::ReadModifyWrite => self.value_len_for(keynum),
            _ => 0,
        };
        let scan_len = if kind == OpKind::Scan {
            self.scan_len.next(&mut self.rng).max(1) as usize
        } else {
            0
        };
        let field = (matches!(kind, OpKind::Update | OpKind::ReadModifyWrite)
            && !self.w.write_all_fields)
            .then(|| self.rng.below(self.w.fields as u64) as usize);
        Op {
            kind,
            keynum,
            key: self.w.key(keynum),
            value_len,
            scan_len,
            at: None,
            fields: self.w.fields,
            field,
        }
    }

    pub fn acknowledge_insert(&self, keynum: i64) -> Result<()> {
        self.inserts.acknowledge(keynum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> Properties {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn proportions_are_normalised_and_validated() {
        let w = Workload::from_properties(&props(&[
            ("readproportion", "2"),
            ("updateproportion", "2"),
        ]))
        .unwrap();
        assert_eq!(w.mix, vec![(OpKind::Read, 0.5), (OpKind::Update, 0.5)]);
        for bad in ["-0.5", "abc", "NaN"] {
            let e = Workload::from_properties(&props(&[("readproportion", bad)]))
                .unwrap_err()
                .to_string();
            assert!(e.contains("readproportion"), "{e}");
        }
        let e = Workload::from_properties(&props(&[
            ("readproportion", "0"),
            ("updateproportion", "0"),
        ]))
        .unwrap_err()
        .to_string();
        assert!(e.contains("all operation proportions are zero"), "{e}");
        let e = Workload::from_properties(&props(&[("recordcount", "-5")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("negative"), "{e}");
        let e = Workload::from_properties(&props(&[("requestdistribution", "gaussian")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("gaussian"), "{e}");
    }

    #[test]
    fn value_size_is_fieldcount_times_fieldlength() {
        let w = Workload::from_properties(&props(&[])).unwrap();
        assert_eq!(w.max_value_len(), 1000);
        let w = Workload::from_properties(&props(&[("fieldcount", "4"), ("fieldlength", "25")]))
            .unwrap();
        assert_eq!(w.max_value_len(), 100);
        let w = Workload::from_properties(&props(&[("valuesize", "4000")])).unwrap();
        assert_eq!(w.max_value_len(), 4000);
    }

    #[test]
    fn production_value_sizes_follow_the_key() {
        let code = ValueSizes::ProductionCode;
        assert_eq!(code.of_key(0, 1000), Some(100));
        assert_eq!(code.of_key(9, 1000), Some(100));
        assert_eq!(code.of_key(10, 1000), Some(400));
        assert_eq!(code.of_key(819, 1000), Some(400));
        assert_eq!(code.of_key(820, 1000), Some(1024));
        assert_eq!(code.of_key(980, 1000), Some(4096));
        let mut sizes: Vec<usize> = (0..10_000)
            .map(|n| ValueSizes::ProductionPaper.of_key(n, 10_000).unwrap())
            .collect();
        sizes.sort();
        assert!(sizes[0] >= 250 && sizes[9_999] <= 1024);
        assert!(
            (390..=410).contains(&sizes[5_000]),
            "median {}",
            sizes[5_000]
        );
        assert_eq!(ValueSizes::Drawn.of_key(3, 10), None);
    }

    #[test]
    fn same_seed_same_stream() {
        let w = Arc::new(
            Workload::from_properties(&props(&[
                ("recordcount", "1000"),
                ("readproportion", "0.5"),
                ("updateproportion", "0.3"),
                ("scanproportion", "0.2"),
                ("requestdistribution", "zipfian"),
            ]))
            .unwrap(),
        );
        let run = |seed| {
            let mut s = OpStream::new(w.clone(), Arc::new(AckCounter::new(1000)), seed, 0);
            (0..200).map(|_| s.next_op()).collect::<Vec<_>>()
        };
        assert_eq!(run(9), run(9));
        assert_ne!(run(9), run(10));
        let ops = run(9);
        assert!(ops.iter().all(|o| o.keynum < 1000));
        assert!(
            ops.iter()
                .any(|o| o.kind == OpKind::Scan && o.scan_len >= 1)
        );
    }

    #[test]
    fn inserts_extend_the_key_space_and_reads_wait_for_acks() {
        let w = Arc::new(
            Workload::from_properties(&props(&[
                ("recordcount", "10"),
                ("readproportion", "0.5"),
                ("insertproportion", "0.5"),
                ("requestdistribution", "latest"),
            ]))
            .unwrap(),
        );
        let acks = Arc::new(AckCounter::new(10));
        let mut s = OpStream::new(w, acks.clone(), 1, 0);
        let mut inserted = vec![];
        for _ in 0..100 {
            let op = s.next_op();
            match op.kind {
                OpKind::Insert => {
                    assert_eq!(op.keynum, 10 + inserted.len() as i64);
                    inserted.push(op.keynum);
                    s.acknowledge_insert(op.keynum).unwrap();
                }
                _ => assert!(op.keynum <= acks.last(), "read of an unacknowledged key"),
            }
        }
        assert!(!inserted.is_empty());
    }
}
