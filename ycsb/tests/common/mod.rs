//! Helpers shared by the end-to-end tests of the `ycsb` binary.
#![allow(dead_code, reason = "each test file uses the helpers it needs")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn ycsb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ycsb"))
        .args(args)
        .env(
            "KVTESTBED_WORKLOADS",
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../workloads"),
        )
        .output()
        .expect("running ycsb")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The value of `[SECTION], Name, value` in a YCSB summary.
pub fn metric(out: &str, section: &str, name: &str) -> Option<f64> {
    out.lines()
        .filter(|l| l.starts_with(&format!("[{section}], {name},")))
        .filter_map(|l| l.rsplit(',').next()?.trim().parse().ok())
        .next_back()
}

/// `o` failed with a message containing `needle`, without a panic.
pub fn assert_clean_error(o: &Output, needle: &str) {
    let e = stderr(o);
    assert!(
        !o.status.success(),
        "expected failure, got success: {}",
        stdout(o)
    );
    assert!(e.contains(needle), "stderr lacks '{needle}': {e}");
    assert!(!e.contains("panicked"), "{e}");
}

pub struct Tmp(pub PathBuf);
impl Tmp {
    pub fn new(label: &str) -> Tmp {
        let base = std::env::var_os("KVTESTBED_TMP")
            .map(PathBuf::from)
            .unwrap_or_else(std::env::temp_dir);
        let d = base.join(format!("ycsb-cli-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Tmp(d)
    }
    pub fn s(&self, rel: &str) -> String {
        self.0.join(rel).display().to_string()
    }
}
impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
