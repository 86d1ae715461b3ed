//! Every engine of the build loads into a small file system until it is full: `ycsb`
//! must say what failed and exit non-zero, without a panic. Needs root (a loop mount);
//! skipped with the reason printed otherwise.

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
    for engine in engines() {
        let data = fs.path().join(engine);
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
        std::fs::remove_dir_all(&data).unwrap();
    }
}
