//! Memory tests that measure a process doing nothing but the measured work: the test
//! binary runs one of its own ignored tests as a child ([`run_ignored`]), and the
//! child reads its resident memory from `/proc/self/status` ([`proc_status`]).

use std::ffi::OsString;
use std::process::Command;

/// What a child run of an ignored test gave.
pub struct ChildRun {
    /// Whether it exited successfully.
    pub ok: bool,
    /// Its standard output followed by its standard error.
    pub text: String,
}

/// Runs the ignored test `name` of the current test binary alone, with `envs` set,
/// and returns its outcome and output.
pub fn run_ignored(name: &str, envs: &[(&str, OsString)]) -> ChildRun {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        name,
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ]);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    ChildRun {
        ok: out.status.success(),
        text: format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// A size field of `/proc/self/status` (`VmRSS`, `VmHWM`), in bytes.
pub fn proc_status(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = s
        .lines()
        .find(|l| l.starts_with(field))
        .unwrap_or_else(|| panic!("no {field}"));
    let kb: u64 = line[field.len() + 1..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap();
    kb << 10
}

/// Bytes in MiB.
pub fn mib(b: u64) -> f64 {
    b as f64 / (1 << 20) as f64
}
