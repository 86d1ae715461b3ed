//! Compiles the recording layer (`preload/record.c`) into a shared library with the C
//! compiler (`$CC`, else `cc`), for `src/layer.rs` to embed.

use std::path::PathBuf;
use std::process::Command;

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
        .arg("preload/record.c")
        .args(["-ldl", "-pthread"])
        .status()
        .unwrap_or_else(|e| panic!("running the C compiler {cc}: {e}"));
    assert!(status.success(), "{cc} failed to build preload/record.c");
    println!("cargo:rerun-if-changed=preload/record.c");
    println!("cargo:rerun-if-env-changed=CC");
}
