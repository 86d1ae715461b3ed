//! Every engine of the build loads into a small file system until it is full: `ycsb`
//! must say what failed and exit non-zero, without a panic, and still write its
//! result (the phase as measured, and the close's failure where the close failed).
//! Needs root (a loop mount); skipped with the reason printed otherwise.

use std::path::Path;
use std::process::Command;

fn engines() -> Vec<&'static str> {
    let mut v = vec!["kvell", "wal", "sled"];
    if cfg!(feature = "rocksdb") {
        v.push("rocksdb");
    }
    v
}

#[test]
fn every_engine_reports_a_full_disk_and_exits_non_zero() {
    let fs = match kvtestkit::testfs::SmallFs::new("ycsb", 32) {
        Ok(fs) => fs,
        Err(why) => return eprintln!("SKIP full-disk test: {why}"),
    };
    let outs = std::env::temp_dir().join(format!("kvtb-full-disk-{}", std::process::id()));
    std::fs::create_dir_all(&outs).unwrap();
    for engine in engines() {
        let data = fs.path().join(engine);
        let out = outs.join(format!("{engine}.json"));
        let mut args = vec![
            "load".to_string(),
            "-w".into(),
            "A".into(),
            "--engine".into(),
            engine.into(),
            "--data".into(),
            data.display().to_string(),
            "-p".into(),
            "recordcount=60000".into(),
            "-p".into(),
            "fieldlength=1000".into(),
            "--quiet".into(),
            "--out".into(),
            out.display().to_string(),
        ];
        if engine == "wal" {
            args.extend(["-p".into(), "wal.log_size=4M".into()]);
        }
        let o = Command::new(env!("CARGO_BIN_EXE_ycsb"))
            .args(&args)
            .env(
                "KVTESTBED_WORKLOADS",
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../workloads"),
            )
            .output()
            .expect("running ycsb");
        let err = String::from_utf8_lossy(&o.stderr);
        let last = err.lines().last().unwrap_or("");
        eprintln!("{engine}: exit {:?}: {last}", o.status.code());
        assert!(!err.contains("panicked"), "{engine} panicked: {err}");
        assert_eq!(o.status.code(), Some(1), "{engine}: {err}");
        assert!(last.starts_with("error:"), "{engine}: {err}");
        assert!(
            err.contains("No space left on device") || err.contains("space"),
            "{engine}: the error does not say the disk is full: {err}"
        );
        let written = std::fs::read_to_string(&out)
            .unwrap_or_else(|e| panic!("{engine}: no result written on a full disk: {e}"));
        let r: serde_json::Value = serde_json::from_str(&written).unwrap();
        let load = &r["phases"][0];
        assert_eq!(load["phase"], "load", "{engine}: {written}");
        assert!(
            load["errors"].as_u64().unwrap() > 0,
            "{engine}: no failed operation"
        );
        eprintln!("{engine}: close_error {}", r["close_error"]);
        std::fs::remove_dir_all(&data).unwrap();
    }
    std::fs::remove_dir_all(&outs).unwrap();
}
