//! Finds the system's WiredTiger through pkg-config and generates its bindings from
//! `wiredtiger.h` with bindgen. A machine without the package (or without libclang)
//! still builds the crate: the build emits `--cfg wt_missing` and the crate compiles a
//! stand-in whose `open_engine` says what is missing.

use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(wt_missing)");
    println!("cargo::rerun-if-changed=build.rs");
    let lib = match pkg_config::Config::new()
        .atleast_version("3.2")
        .probe("wiredtiger")
    {
        Ok(lib) => lib,
        Err(e) => {
            missing(
                "libwiredtiger-dev (pkg-config wiredtiger) was not found when it was built; \
                 install it (apt-get install libwiredtiger-dev) and rebuild",
                &e.to_string(),
            );
            return;
        }
    };
    let Some(out) = env::var_os("OUT_DIR").map(PathBuf::from) else {
        panic!("cargo did not set OUT_DIR for the build script");
    };
    let mut builder = bindgen::Builder::default()
        .header_contents("wrapper.h", "#include <wiredtiger.h>\n")
        .allowlist_function("wiredtiger_open")
        .allowlist_function("wiredtiger_strerror")
        .allowlist_function("wiredtiger_version")
        .allowlist_type("WT_CONNECTION")
        .allowlist_type("WT_SESSION")
        .allowlist_type("WT_CURSOR")
        .allowlist_type("WT_ITEM")
        .allowlist_type("WT_EVENT_HANDLER")
        .allowlist_var("WT_(ROLLBACK|DUPLICATE_KEY|ERROR|NOTFOUND|PANIC|RESTART|RUN_RECOVERY|CACHE_FULL|PREPARE_CONFLICT|TRY_SALVAGE)")
        .allowlist_var("WT_STAT_CONN_.*")
        .allowlist_var("WIREDTIGER_VERSION_.*")
        .derive_default(true)
        .derive_debug(false)
        .layout_tests(false)
        .generate_comments(false)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()));
    for dir in &lib.include_paths {
        builder = builder.clang_arg(format!("-I{}", dir.display()));
    }
    match builder.generate() {
        Ok(bindings) => {
            if let Err(e) = bindings.write_to_file(out.join("bindings.rs")) {
                panic!("writing the WiredTiger bindings: {e}");
            }
        }
        Err(e) => missing(
            "its bindings could not be generated from wiredtiger.h when it was built \
             (bindgen needs libclang: apt-get install libclang-dev); install it and rebuild",
            &e.to_string(),
        ),
    }
}

/// Builds the stand-in: `open_engine` returns `Unsupported` with `reason`.
fn missing(reason: &str, detail: &str) {
    println!("cargo::rustc-cfg=wt_missing");
    println!("cargo::rustc-env=WT_MISSING_REASON=WiredTiger is not in this build: {reason}");
    println!(
        "cargo::warning=WiredTiger is not in this build ({detail}); the wiredtiger engine will report itself unavailable"
    );
}
