//! Records the git commit the driver is built from (`KVTB_COMMIT`), so every result
//! file names the code that produced it: `<sha>`, `<sha>-dirty` when tracked files had
//! uncommitted changes, or `unknown` outside a git checkout. The outputs (`results/`,
//! `paper-repro.md`) do not count: a run that rewrote them is not of other code.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let o = Command::new("git").args(args).output().ok()?;
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

fn main() {
    let commit = match git(&["rev-parse", "HEAD"]) {
        Some(sha) if !sha.is_empty() => {
            let dirty = git(&[
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                ":(top)",
                ":(top,exclude)results",
                ":(top,exclude)paper-repro.md",
            ])
            .is_some_and(|s| !s.is_empty());
            if dirty { format!("{sha}-dirty") } else { sha }
        }
        _ => "unknown".to_string(),
    };
    println!("cargo:rustc-env=KVTB_COMMIT={commit}");
    // a new commit or a change to the index (staging, committing) rebuilds the stamp
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        for f in ["HEAD", "index", "logs/HEAD"] {
            println!("cargo:rerun-if-changed={dir}/{f}");
        }
    }
    // and so does any change to the sources (the dirty flag)
    for d in [
        "src",
        "build.rs",
        "../kvapi",
        "../kvell/src",
        "../baselines",
        "../schema",
        "../testkit",
        "../analysis/src",
        "../scripts",
        "../workloads",
        "../Cargo.toml",
        "../Cargo.lock",
    ] {
        println!("cargo:rerun-if-changed={d}");
    }
}
