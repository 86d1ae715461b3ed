//! What every property of YCSB's core workload and client does here: honoured,
//! honoured with a stated difference, accepted with no effect (and why), or refused
//! (and why). Nothing YCSB knows is silently ignored, and a property neither YCSB nor
//! this driver knows is warned about as a likely typo.
//!
//! The sources: YCSB's `CoreWorkload`, `Client`, `Measurements` and the HDR histogram
//! measurement (brianfrankcooper/YCSB), and go-ycsb's `keyprefix`.

use crate::error::{Error, Result};
use crate::props::Properties;

/// What a property does in this driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Use {
    /// Read and honoured as YCSB honours it.
    Honoured,
    /// Accepted, with no effect here, for the reason given.
    NoEffect(&'static str),
    /// Checked value by value (see [`check`]).
    ByValue,
}

/// Every property this driver knows, with what it does.
pub const PROPERTIES: &[(&str, Use)] = &[
    ("recordcount", Use::Honoured),
    ("operationcount", Use::ByValue),
    ("insertstart", Use::Honoured),
    ("insertcount", Use::Honoured),
    ("fieldcount", Use::Honoured),
    ("fieldlength", Use::Honoured),
    ("minfieldlength", Use::Honoured),
    ("fieldlengthdistribution", Use::Honoured),
    ("fieldlengthhistogram", Use::Honoured),
    (
        "fieldnameprefix",
        Use::NoEffect(
            "a record is one value whose fields are slots by position: field names are not stored",
        ),
    ),
    ("readallfields", Use::ByValue),
    (
        "readallfieldsbyname",
        Use::NoEffect("a read returns the whole record either way"),
    ),
    ("writeallfields", Use::Honoured),
    ("dataintegrity", Use::Honoured),
    ("readproportion", Use::ByValue),
    ("updateproportion", Use::ByValue),
    ("insertproportion", Use::ByValue),
    ("scanproportion", Use::ByValue),
    ("readmodifywriteproportion", Use::ByValue),
    ("deleteproportion", Use::ByValue),
    ("requestdistribution", Use::Honoured),
    ("zipfianconstant", Use::Honoured),
    ("hotspotdatafraction", Use::Honoured),
    ("hotspotopnfraction", Use::Honoured),
    ("exponential.percentile", Use::Honoured),
    ("exponential.frac", Use::Honoured),
    ("minscanlength", Use::Honoured),
    ("maxscanlength", Use::Honoured),
    ("scanlengthdistribution", Use::Honoured),
    ("insertorder", Use::Honoured),
    ("zeropadding", Use::Honoured),
    ("keyprefix", Use::Honoured),
    (
        "table",
        Use::NoEffect("each engine directory holds one table"),
    ),
    ("workload", Use::ByValue),
    ("db", Use::ByValue),
    ("threadcount", Use::Honoured),
    ("target", Use::Honoured),
    ("maxexecutiontime", Use::Honoured),
    ("warmuptime", Use::Honoured),
    ("dotransactions", Use::ByValue),
    ("status", Use::Honoured),
    ("status.interval", Use::Honoured),
    ("label", Use::Honoured),
    ("exporter", Use::ByValue),
    ("exportfile", Use::Honoured),
    ("measurementtype", Use::ByValue),
    ("measurement.interval", Use::ByValue),
    (
        "measurement.trackjvm",
        Use::NoEffect("there is no JVM to track"),
    ),
    (
        "measurement.histogram.verbose",
        Use::NoEffect("the JSON result holds each operation's whole HDR histogram (V2, base64)"),
    ),
    (
        "histogram.buckets",
        Use::NoEffect(
            "latencies are HDR histograms (3 significant digits up to an hour), not 1 ms buckets",
        ),
    ),
    ("hdrhistogram.percentiles", Use::ByValue),
    (
        "hdrhistogram.fileoutput",
        Use::NoEffect(
            "the JSON result holds each operation's whole HDR histogram (V2, base64) and per-second percentiles",
        ),
    ),
    (
        "hdrhistogram.output.path",
        Use::NoEffect("see hdrhistogram.fileoutput"),
    ),
    (
        "timeseries.granularity",
        Use::NoEffect("the timeline is sampled every status.interval (1 s in the JSON result)"),
    ),
    ("core_workload_insertion_retry_limit", Use::ByValue),
    (
        "core_workload_insertion_retry_interval",
        Use::NoEffect("failed inserts are counted, not retried"),
    ),
    (
        "core_workload_insertion_keep_going_on_error",
        Use::NoEffect("a load always goes on after a failed insert and counts it"),
    ),
    (
        "reportlatencyforeacherror",
        Use::NoEffect(
            "failed operations are counted per status (Return=...) with their latency in the operation's histogram",
        ),
    ),
    (
        "latencytrackederrors",
        Use::NoEffect("see reportlatencyforeacherror"),
    ),
    (
        "spin.sleep",
        Use::NoEffect("throttling waits with the OS timer"),
    ),
    (
        "maxscanrate",
        Use::NoEffect("only YCSB's Cloud Bigtable binding reads it; CoreWorkload does not"),
    ),
    (
        "scanoptimelimit",
        Use::NoEffect("only YCSB's Cloud Bigtable binding reads it; CoreWorkload does not"),
    ),
    (
        "discardscannedrecord",
        Use::NoEffect("only YCSB's Cloud Bigtable binding reads it; CoreWorkload does not"),
    ),
    // this driver's own
    ("valuesize", Use::Honoured),
    ("valuesizes", Use::Honoured),
    ("production2.thresholds", Use::Honoured),
];

/// The YCSB class names of the exporters this driver writes.
pub const EXPORTERS: &[(&str, Exporter)] = &[
    (
        "site.ycsb.measurements.exporter.TextMeasurementsExporter",
        Exporter::Text,
    ),
    (
        "site.ycsb.measurements.exporter.JSONArrayMeasurementsExporter",
        Exporter::JsonArray,
    ),
    (
        "site.ycsb.measurements.exporter.JSONMeasurementsExporter",
        Exporter::Json,
    ),
];

/// YCSB's exporters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exporter {
    /// `[OP], measurement, value` lines.
    Text,
    /// One JSON array of `{metric, measurement, value}` objects.
    JsonArray,
    /// `{metric, measurement, value}` objects one after another (not one document).
    Json,
}

/// The exporter a property names (the class name, with or without its package).
pub fn exporter(p: &Properties) -> Result<Exporter> {
    let Some(name) = p.get("exporter") else {
        return Ok(Exporter::Text);
    };
    let name = name.trim();
    EXPORTERS
        .iter()
        .find(|(full, _)| *full == name || full.rsplit('.').next() == Some(name))
        .map(|(_, e)| *e)
        .ok_or_else(|| {
            Error::usage(format!(
                "property exporter: unknown exporter '{name}' (this driver writes {})",
                EXPORTERS
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
}

/// YCSB's percentiles to export (`hdrhistogram.percentiles`); `None`: the driver's
/// own set (50, 90, 95, 99, 99.9, 99.99).
pub fn percentiles(p: &Properties) -> Result<Option<Vec<f64>>> {
    let Some(v) = p.get("hdrhistogram.percentiles") else {
        return Ok(None);
    };
    let list: std::result::Result<Vec<f64>, _> =
        v.split(',').map(|x| x.trim().parse::<f64>()).collect();
    match list {
        Ok(l) if !l.is_empty() && l.iter().all(|x| *x > 0.0 && *x <= 100.0) => Ok(Some(l)),
        _ => Err(Error::usage(format!(
            "property hdrhistogram.percentiles: expected comma-separated percentiles in (0, 100], got '{v}'"
        ))),
    }
}

/// YCSB's name of a percentile row: `95thPercentileLatency(us)`, `99.9PercentileLatency(us)`.
pub fn percentile_name(p: f64) -> String {
    if p.fract() == 0.0 {
        let n = p as u64;
        let suffix = match (n % 10, n % 100) {
            (_, 11..=13) => "th",
            (1, _) => "st",
            (2, _) => "nd",
            (3, _) => "rd",
            _ => "th",
        };
        format!("{n}{suffix}PercentileLatency(us)")
    } else {
        format!("{p}PercentileLatency(us)")
    }
}

fn known(name: &str) -> Option<Use> {
    PROPERTIES.iter().find(|(n, _)| *n == name).map(|(_, u)| *u)
}

/// Checks every property: an error for what is refused, and the warnings to print
/// for what is accepted differently or with no effect, or not known at all (engine
/// options `<engine>.<option>` of `engines` are known).
pub fn check(p: &Properties, engines: &[&str]) -> Result<Vec<String>> {
    let mut warn = Vec::new();
    for (k, v) in p {
        if engines.iter().any(|e| k.starts_with(&format!("{e}."))) {
            continue;
        }
        match known(k) {
            None => warn.push(format!("unknown property '{k}' is ignored (a typo?)")),
            Some(Use::NoEffect(why)) => {
                warn.push(format!("property {k}={v} has no effect here: {why}"))
            }
            Some(Use::Honoured) => {}
            Some(Use::ByValue) => by_value(k, v, p, &mut warn)?,
        }
    }
    // YCSB gives absent proportions their defaults (read 0.95, update 0.05): a file
    // that sets some of them keeps the defaults of the others, which surprises
    let props = [
        "readproportion",
        "updateproportion",
        "insertproportion",
        "scanproportion",
        "readmodifywriteproportion",
        "deleteproportion",
    ];
    if props.iter().any(|k| p.contains_key(*k)) {
        for (k, d) in [("readproportion", "0.95"), ("updateproportion", "0.05")] {
            if !p.contains_key(k) {
                warn.push(format!(
                    "{k} is not set: YCSB's default {d} applies (set {k}=0 to leave it out)"
                ));
            }
        }
    }
    Ok(warn)
}

fn by_value(k: &str, v: &str, p: &Properties, warn: &mut Vec<String>) -> Result<()> {
    match k {
        "db" => {
            return Err(Error::usage(format!(
                "property db={v} names a YCSB binding: this driver chooses the engine with --engine (see `ycsb engines`)"
            )));
        }
        "workload" => {
            let core = ["site.ycsb.workloads.CoreWorkload", "com.yahoo.ycsb.workloads.CoreWorkload"];
            if !core.contains(&v.trim()) {
                return Err(Error::usage(format!(
                    "property workload={v}: this driver runs YCSB's CoreWorkload only (site.ycsb.workloads.CoreWorkload)"
                )));
            }
        }
        "dotransactions" => warn.push(format!(
            "property dotransactions={v} has no effect here: the command chooses the phase (ycsb load, ycsb run)"
        )),
        "operationcount" if v.trim() == "0" => warn.push(
            "operationcount=0: no limit, as in YCSB: the run phase stops at maxexecutiontime (--duration) or when interrupted".into(),
        ),
        "readallfields" if v.trim() != "true" => warn.push(format!(
            "readallfields={v}: a read returns the whole record here (YCSB would read one field); the bytes read count the whole record"
        )),
        "measurementtype" if v.trim() != "hdrhistogram" => warn.push(format!(
            "measurementtype={v}: latencies are recorded in HDR histograms (3 significant digits), reported as YCSB's hdrhistogram type reports them"
        )),
        "measurement.interval" => match v.trim() {
            "op" => {}
            "intended" | "both" => warn.push(format!(
                "measurement.interval={v}: with a target rate the Intended- rows (from each operation's scheduled start) are reported beside the actual ones, as with 'both'"
            )),
            _ => {
                return Err(Error::usage(format!(
                    "property measurement.interval: expected op, intended or both, got '{v}'"
                )));
            }
        },
        "exporter" => {
            exporter(p)?;
        }
        "hdrhistogram.percentiles" => {
            percentiles(p)?;
        }
        "core_workload_insertion_retry_limit" if v.trim() != "0" => warn.push(format!(
            "core_workload_insertion_retry_limit={v} has no effect here: failed inserts are counted, not retried"
        )),
        k if k.ends_with("proportion") => {
            if let Ok(x) = v.trim().parse::<f64>()
                && x > 1.0
            {
                warn.push(format!(
                    "{k}={v} is above 1: proportions are weights, normalised by their sum as YCSB does"
                ));
            }
        }
        _ => {}
    }
    Ok(())
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
    fn every_property_of_ycsbs_template_is_known() {
        // the keys of YCSB's workloads/workload_template and its core workload files
        for k in [
            "recordcount",
            "operationcount",
            "workload",
            "readallfields",
            "readproportion",
            "updateproportion",
            "scanproportion",
            "insertproportion",
            "requestdistribution",
            "fieldcount",
            "fieldlength",
            "fieldlengthdistribution",
            "insertorder",
            "maxscanlength",
            "scanlengthdistribution",
            "measurementtype",
            "histogram.buckets",
            "timeseries.granularity",
            "hotspotdatafraction",
            "hotspotopnfraction",
            "table",
            "writeallfields",
            "readmodifywriteproportion",
            "exportfile",
            "exporter",
            "hdrhistogram.percentiles",
            "maxscanrate",
            "scanoptimelimit",
            "discardscannedrecord",
            "insertstart",
            "insertcount",
            "zeropadding",
            "threadcount",
            "target",
            "maxexecutiontime",
            "status.interval",
            "keyprefix",
        ] {
            assert!(known(k).is_some(), "{k}");
        }
    }

    #[test]
    fn refusals_and_warnings_say_why() {
        let e = check(&props(&[("db", "site.ycsb.BasicDB")]), &[]).unwrap_err();
        assert!(e.to_string().contains("--engine"), "{e}");
        let e = check(
            &props(&[("workload", "site.ycsb.workloads.TimeSeriesWorkload")]),
            &[],
        )
        .unwrap_err();
        assert!(e.to_string().contains("CoreWorkload"), "{e}");
        let w = check(
            &props(&[
                ("histogram.buckets", "1000"),
                ("readallfields", "false"),
                ("measurementtype", "histogram"),
                ("readproportion", "1.5"),
                ("operationcount", "0"),
                ("tpyo", "1"),
                ("kvell.cache", "1G"),
            ]),
            &["kvell"],
        )
        .unwrap();
        let all = w.join("\n");
        for needle in [
            "histogram.buckets=1000 has no effect",
            "readallfields=false",
            "measurementtype=histogram",
            "readproportion=1.5 is above 1",
            "operationcount=0: no limit",
            "unknown property 'tpyo'",
            "updateproportion is not set",
        ] {
            assert!(all.contains(needle), "missing '{needle}' in:\n{all}");
        }
        assert!(!all.contains("kvell.cache"), "{all}");
        assert!(check(&props(&[("exporter", "NoSuchExporter")]), &[]).is_err());
        assert!(check(&props(&[("hdrhistogram.percentiles", "99,abc")]), &[]).is_err());
        assert!(check(&props(&[("measurement.interval", "sometimes")]), &[]).is_err());
    }

    #[test]
    fn exporters_and_percentile_names_as_ycsb_writes_them() {
        let p = props(&[(
            "exporter",
            "site.ycsb.measurements.exporter.JSONArrayMeasurementsExporter",
        )]);
        assert_eq!(exporter(&p).unwrap(), Exporter::JsonArray);
        assert_eq!(exporter(&props(&[])).unwrap(), Exporter::Text);
        assert_eq!(percentile_name(95.0), "95thPercentileLatency(us)");
        assert_eq!(percentile_name(1.0), "1stPercentileLatency(us)");
        assert_eq!(percentile_name(12.0), "12thPercentileLatency(us)");
        assert_eq!(percentile_name(99.9), "99.9PercentileLatency(us)");
        assert_eq!(
            percentiles(&props(&[("hdrhistogram.percentiles", "50, 99.9")])).unwrap(),
            Some(vec![50.0, 99.9])
        );
    }
}
