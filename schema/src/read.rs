//! Reading result documents: one text, or every `*.json` file under a directory. Each
//! reader checks the schema version first (see [`crate::version_of`]).

use crate::device::DeviceProbe;
use crate::error::Error;
use crate::run::RunFile;
use crate::version::version_of;
use std::path::{Path, PathBuf};

fn object(text: &str) -> Result<serde_json::Value, Error> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(Error::NotJson)?;
    if !v.is_object() {
        return Err(Error::NotAnObject);
    }
    version_of(&v)?;
    Ok(v)
}

/// Parses one run file. The error says why it is not one.
pub fn parse_run(text: &str) -> Result<RunFile, Error> {
    let v = object(text)?;
    for key in ["engine", "phases"] {
        if v.get(key).is_none() {
            return Err(Error::NotARunFile { missing: key });
        }
    }
    serde_json::from_value(v).map_err(|source| Error::Invalid { kind: None, source })
}

/// Parses a document of a given `kind`; the error says what is wrong with it.
pub fn parse_kind<T: serde::de::DeserializeOwned>(text: &str, kind: &str) -> Result<T, Error> {
    let v = object(text)?;
    let found = v
        .get("kind")
        .and_then(|k| k.as_str())
        .ok_or_else(|| Error::NoKind {
            expected: kind.into(),
        })?;
    if found != kind {
        return Err(Error::WrongKind {
            found: found.into(),
            expected: kind.into(),
        });
    }
    serde_json::from_value(v).map_err(|source| Error::Invalid {
        kind: Some(kind.into()),
        source,
    })
}

/// A `ycsb device` result, if the text is one (of a version this reader knows).
pub fn parse_probe(text: &str) -> Option<DeviceProbe> {
    parse_kind(text, DeviceProbe::KIND).ok()
}

/// A run file as loaded, with where it came from.
#[derive(Clone, Debug)]
pub struct Loaded {
    pub path: PathBuf,
    pub run: RunFile,
}

/// Result files found under a directory, and the files that were skipped.
#[derive(Clone, Debug, Default)]
pub struct Found {
    pub runs: Vec<Loaded>,
    /// `ycsb device` results found beside the runs.
    pub probes: Vec<(PathBuf, DeviceProbe)>,
    /// `path: reason` for each `.json` file that was not a readable result file.
    pub skipped: Vec<String>,
}

fn json_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let p = e.path();
        let ft = e.file_type()?;
        if ft.is_dir() {
            json_files(&p, out)?;
        } else if p.extension().is_some_and(|x| x == "json") {
            out.push(p);
        }
    }
    Ok(())
}

/// Loads every `*.json` run file and device result under `dir` (recursively). Files
/// that cannot be read or are not result files (other documents, unknown versions)
/// are listed in `skipped`; an unreadable directory is an error.
pub fn load_dir(dir: &Path) -> Result<Found, Error> {
    let mut files = Vec::new();
    json_files(dir, &mut files).map_err(|source| Error::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut found = Found::default();
    for path in files {
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                found
                    .skipped
                    .push(format!("{}: cannot read: {e}", path.display()));
                continue;
            }
        };
        if let Some(probe) = parse_probe(&text) {
            found.probes.push((path, probe));
            continue;
        }
        match parse_run(&text) {
            Ok(run) => found.runs.push(Loaded { path, run }),
            Err(why) => found.skipped.push(format!("{}: {why}", path.display())),
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SCHEMA_VERSION;
    use crate::iomethods::IoMethods;

    const MINIMAL_RUN: &str = r#"{"engine": {"name": "kvell"}, "phases": [{"phase": "run"}]}"#;

    #[test]
    fn a_file_without_format_is_version_1_and_reads() {
        let r = parse_run(MINIMAL_RUN).unwrap();
        assert_eq!(r.format, 1);
        assert_eq!(r.engine.name, "kvell");
        assert!(r.run().unwrap().ceiling.is_none());
        let io: IoMethods = parse_kind(
            r#"{"kind": "iomethods", "memory_bytes": null}"#,
            "iomethods",
        )
        .unwrap();
        assert_eq!((io.format, io.memory_bytes), (1, 0));
    }

    #[test]
    fn an_unknown_version_is_refused_clearly() {
        let newer = (SCHEMA_VERSION + 1).to_string();
        for bad in [newer.as_str(), "0", "\"two\"", "-1"] {
            let text =
                format!(r#"{{"format": {bad}, "engine": {{"name": "kvell"}}, "phases": []}}"#);
            let e = parse_run(&text).unwrap_err();
            assert!(matches!(e, Error::UnknownVersion { .. }), "{bad}: {e}");
            assert!(
                e.to_string()
                    .contains("not a schema version this reader knows"),
                "{e}"
            );
            let e = parse_kind::<IoMethods>(
                &text.replace("\"engine\"", "\"kind\": \"iomethods\", \"x\""),
                "iomethods",
            )
            .unwrap_err();
            assert!(matches!(e, Error::UnknownVersion { .. }), "{bad}: {e}");
        }
        let current = format!(
            r#"{{"format": {SCHEMA_VERSION}, "engine": {{"name": "kvell"}}, "phases": []}}"#
        );
        assert_eq!(parse_run(&current).unwrap().format, SCHEMA_VERSION);
        let device = r#"{"format": 9, "kind": "device", "points": []}"#;
        assert!(parse_probe(device).is_none());
        assert!(parse_probe(&device.replace('9', "2")).is_some());
    }

    #[test]
    fn errors_say_why_a_file_is_not_a_result() {
        assert!(
            parse_run("nope")
                .unwrap_err()
                .to_string()
                .starts_with("not JSON")
        );
        assert_eq!(
            parse_run("[1]").unwrap_err().to_string(),
            "not a JSON object"
        );
        assert_eq!(
            parse_run(r#"{"engine": {"name": "x"}}"#)
                .unwrap_err()
                .to_string(),
            "not a ycsb result file (no `phases` field)"
        );
        assert!(
            parse_run(r#"{"engine": 3, "phases": []}"#)
                .unwrap_err()
                .to_string()
                .starts_with("not a ycsb result file: ")
        );
        assert_eq!(
            parse_kind::<IoMethods>("{}", "iomethods")
                .unwrap_err()
                .to_string(),
            "no `kind` field (expected \"iomethods\")"
        );
        assert_eq!(
            parse_kind::<IoMethods>(r#"{"kind": "device"}"#, "iomethods")
                .unwrap_err()
                .to_string(),
            "`kind` is \"device\", expected \"iomethods\""
        );
    }
}
