//! Compiles the recording layer (`preload/*.c`) into a shared library with the C
//! compiler (`$CC`, else `cc`), for `src/layer.rs` to embed.

use std::path::PathBuf;
use std::process::Command;

/// The layer's files: the state, records, freeze and paths; opening, writing,
/// sizes and syncs; names and what the layer refuses.
const SOURCES: &[&str] = &["preload/record.c", "preload/files.c", "preload/names.c"];

fn main() {
    let Some(out) = std::env::var_os("OUT_DIR").map(PathBuf::from) else {
        panic!("cargo sets OUT_DIR for a build script");
    };
    let so = out.join("libpowercut_record.so");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args([
            "-O2", "-g", "-fPIC", "-shared", "-Wall", "-Wextra", "-Werror", "-o",
        ])
        .arg(&so)
        .args(SOURCES)
        .args(["-ldl", "-pthread"])
        .status()
        .unwrap_or_else(|e| panic!("running the C compiler {cc}: {e}"));
    assert!(
        status.success(),
        "{cc} failed to build the layer in preload/"
    );
    for f in SOURCES.iter().chain(&["preload/record.h"]) {
        println!("cargo:rerun-if-changed={f}");
    }
    println!("cargo:rerun-if-env-changed=CC");
}
