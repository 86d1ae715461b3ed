//! Every result file committed under results/ (schema version 1) reads with this
//! schema, and writing it back gives the same JSON (the same field names and shapes;
//! only `format` is new on documents that had none).
#![allow(
    clippy::unwrap_used,
    reason = "test helpers: a failed step is a failed test"
)]

use kvtb_schema::{
    Crash, DeviceProbe, IoMethods, Manifest, Recovery, RunFile, parse_kind, parse_run,
};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn json_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            json_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "json") {
            out.push(p);
        }
    }
}

/// Equal JSON, numbers compared by value (a script writes `10` where serde writes `10.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// The document re-encoded through its schema type.
fn round_trip(text: &str) -> Option<Value> {
    let v: Value = serde_json::from_str(text).unwrap();
    // fio's own output, kept beside the runs it was compared with (scripts/kvell-tail)
    if v.get("fio version").is_some() {
        return None;
    }
    let kind = v.get("kind").and_then(Value::as_str).map(str::to_string);
    Some(match kind.as_deref() {
        None => serde_json::to_value(parse_run(text).unwrap()).unwrap(),
        Some(DeviceProbe::KIND) => {
            serde_json::to_value(parse_kind::<DeviceProbe>(text, DeviceProbe::KIND).unwrap())
                .unwrap()
        }
        Some(IoMethods::KIND) => {
            serde_json::to_value(parse_kind::<IoMethods>(text, IoMethods::KIND).unwrap()).unwrap()
        }
        Some(Recovery::KIND) => {
            serde_json::to_value(parse_kind::<Recovery>(text, Recovery::KIND).unwrap()).unwrap()
        }
        Some(Crash::KIND) => {
            serde_json::to_value(parse_kind::<Crash>(text, Crash::KIND).unwrap()).unwrap()
        }
        Some(Manifest::KIND) => {
            serde_json::to_value(parse_kind::<Manifest>(text, Manifest::KIND).unwrap()).unwrap()
        }
        // documents of scripts (scripts/c-kvell) that no reader of this schema reads
        Some(_) => return None,
    })
}

#[test]
fn committed_results_read_and_write_back_unchanged() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results");
    let mut files = Vec::new();
    json_files(&root, &mut files);
    files.sort();
    assert!(files.len() > 100, "{} files", files.len());
    let mut checked = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let original: Value = serde_json::from_str(&text).unwrap();
        let Some(mut again) = round_trip(&text) else {
            continue;
        };
        assert_eq!(
            again["format"],
            original.get("format").cloned().unwrap_or(1.into())
        );
        if original.get("format").is_none() {
            again.as_object_mut().unwrap().remove("format");
        }
        assert!(
            same(&again, &original),
            "{}:\n{again}\n{original}",
            f.display()
        );
        checked += 1;
    }
    assert!(checked > 100, "{checked}");
}

#[test]
fn a_written_document_carries_the_current_version() {
    let text = r#"{"engine": {"name": "null"}, "phases": []}"#;
    let mut r: RunFile = parse_run(text).unwrap();
    assert_eq!(r.format, 1);
    r.format = kvtb_schema::SCHEMA_VERSION;
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["format"], kvtb_schema::SCHEMA_VERSION);
    let d = serde_json::to_value(DeviceProbe::default()).unwrap();
    assert_eq!(d["format"], kvtb_schema::SCHEMA_VERSION);
    assert_eq!(d["kind"], "device");
}
