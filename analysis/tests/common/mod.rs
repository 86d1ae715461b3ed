//! What the analysis tests share: the repository's root, a temporary directory that
//! removes itself, and a copy of a results folder.
#![allow(
    dead_code,
    clippy::unwrap_used,
    reason = "test helpers: each test file uses some of them; a failed step is a failed test"
)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A fresh empty directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// `kvtb-<prefix>-<name>-<pid>-<n>`.
    pub fn new(prefix: &str, name: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "kvtb-{prefix}-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Copies the tree `from` to `to`, leaving out folders named in `skip`.
pub fn copy_dir(from: &Path, to: &Path, skip: &[&str]) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            if !p.file_name().is_some_and(|n| skip.iter().any(|s| n == *s)) {
                copy_dir(&p, &dest, skip);
            }
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}
