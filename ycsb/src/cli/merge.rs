//! `ycsb merge A.json B.json ...`: one result from several clients of one store
//! (see the library's `merge` for the rules), written with --out and shown as the
//! usual summary.

use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use ycsb::results::write_json;
use ycsb::{Error, Result, report};

#[derive(Args, Debug)]
pub(super) struct MergeArgs {
    /// The clients' result files (`ycsb run --out`), two or more.
    #[arg(required = true, num_args = 2..)]
    pub(super) files: Vec<PathBuf>,
    /// Write the merged result here.
    #[arg(long)]
    pub(super) out: Option<PathBuf>,
}

pub(super) fn merge(a: &MergeArgs) -> Result<()> {
    let mut runs = Vec::new();
    for f in &a.files {
        let text = std::fs::read_to_string(f).map_err(|e| Error::io_at("cannot read", f, e))?;
        let r = kvtb_schema::parse_run(&text)
            .map_err(|e| Error::usage(format!("{}: {e}", f.display())))?;
        runs.push(r);
    }
    let merged = ycsb::merge::merge(&runs, std::env::args().collect())?;
    let mut out = std::io::stdout();
    for p in &merged.phases {
        let _ = write!(out, "{}", report::summary(&merged, p));
    }
    if let Some(o) = &a.out {
        write_json(o, &merged)?;
        eprintln!("merged result written to {}", o.display());
    }
    Ok(())
}
