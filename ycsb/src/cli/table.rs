//! `ycsb table DIR`: the comparison table of the run files in a directory (one per
//! engine, as `ycsb compare --out-dir` writes them), so runs made at different times
//! (an engine added later, as the main job adds RocksDB once its C++ is built) read
//! as one table.

use clap::Args;
use std::path::PathBuf;
use ycsb::{Error, Result, report};

#[derive(Args, Debug)]
pub(super) struct TableArgs {
    /// A directory of run files (`<engine>.json`).
    pub(super) dir: PathBuf,
}

pub(super) fn table(a: &TableArgs) -> Result<()> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(&a.dir)
        .map_err(|e| Error::io_at("cannot read", &a.dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut runs = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).map_err(|e| Error::io_at("cannot read", f, e))?;
        match kvtb_schema::parse_run(&text) {
            Ok(r) => runs.push(r),
            Err(e) => eprintln!("warning: {} skipped: {e}", f.display()),
        }
    }
    if runs.is_empty() {
        return Err(Error::usage(format!(
            "{} holds no run files (*.json written by ycsb compare or ycsb run --out)",
            a.dir.display()
        )));
    }
    // the null engine last, as compare orders it in the main job
    runs.sort_by_key(|r| (r.engine.name == "null", r.engine.name.clone()));
    if let Some(r) = runs.first() {
        println!(
            "\n== {} ({} records, {})",
            r.workload_name(),
            r.prop("recordcount").unwrap_or("?"),
            r.driving.describe()
        );
    }
    print!("{}", report::compare_table(&runs, None));
    Ok(())
}
