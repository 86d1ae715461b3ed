//! Finding a workload (`-w A`, a file, a name under workloads/) and resolving the
//! properties of -w, -P and -p.

use super::args::WorkloadArgs;
use std::path::{Path, PathBuf};
use ycsb::props::{self, Properties};
use ycsb::{Error, Result};

/// YCSB's core workloads, shipped in workloads/ and embedded so that `-w A` works
/// from any directory.
const CORE: [(&str, &str); 6] = [
    ("workloada", include_str!("../../../workloads/workloada")),
    ("workloadb", include_str!("../../../workloads/workloadb")),
    ("workloadc", include_str!("../../../workloads/workloadc")),
    ("workloadd", include_str!("../../../workloads/workloadd")),
    ("workloade", include_str!("../../../workloads/workloade")),
    ("workloadf", include_str!("../../../workloads/workloadf")),
];

fn workload_dirs() -> Vec<PathBuf> {
    let mut v = Vec::new();
    if let Some(d) = std::env::var_os("KVTESTBED_WORKLOADS") {
        v.push(PathBuf::from(d));
    }
    v.push(PathBuf::from("workloads"));
    v.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../workloads"));
    v
}

/// Resolves `-w NAME` into (display name, property text).
fn resolve_workload(name: &str) -> Result<(String, String)> {
    let lower = name.to_ascii_lowercase();
    let canonical = if lower.len() == 1 && ("a"..="f").contains(&lower.as_str()) {
        format!("workload{lower}")
    } else {
        name.to_string()
    };
    let as_path = Path::new(&canonical);
    if as_path.is_file() {
        let text = std::fs::read_to_string(as_path)
            .map_err(|e| Error::io_at("cannot read", as_path, e))?;
        return Ok((canonical, text));
    }
    if !canonical.contains('/') {
        for d in workload_dirs() {
            let p = d.join(&canonical);
            if p.is_file() {
                let text =
                    std::fs::read_to_string(&p).map_err(|e| Error::io_at("cannot read", &p, e))?;
                return Ok((canonical, text));
            }
        }
        if let Some((_, text)) = CORE.iter().find(|(n, _)| *n == canonical) {
            return Ok((canonical, text.to_string()));
        }
    }
    Err(Error::usage(format!(
        "unknown workload '{name}' (A..F, or a workload file such as workloads/workloada)"
    )))
}

/// Properties from -w, -P and -p, in that order of precedence (lowest first), and the
/// workload's name.
pub(super) fn resolve_properties(a: &WorkloadArgs) -> Result<(String, Properties)> {
    let mut p = Properties::new();
    let mut name = String::from("(properties)");
    if let Some(w) = &a.workload {
        let (n, text) = resolve_workload(w)?;
        props::parse(&text, &n, &mut p)?;
        name = n;
    }
    for f in &a.property_files {
        props::load_file(f, &mut p)?;
        if a.workload.is_none() {
            name = f.display().to_string();
        }
    }
    for o in &a.props {
        props::set_override(o, &mut p)?;
    }
    if a.workload.is_none() && a.property_files.is_empty() {
        return Err(Error::usage("no workload: give -w A..F or -P FILE"));
    }
    Ok((name, p))
}
