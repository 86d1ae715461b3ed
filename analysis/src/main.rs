//! `kvtb-report`: result files to charts and a markdown report.

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "\
usage: kvtb-report charts <DIR> [--title TEXT]

Reads every *.json result file under DIR (the `ycsb` driver's output), renders
charts into DIR (PNG and SVG) and writes DIR/report.md; prints the files written.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kvtb-report: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result<(), String> {
    let mut it = args.iter();
    match it.next().map(String::as_str) {
        Some("charts") => {}
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            return Ok(());
        }
        Some(other) => return Err(format!("unknown command `{other}`\n{USAGE}")),
        None => return Err(USAGE.into()),
    }
    let mut dir: Option<PathBuf> = None;
    let mut title: Option<String> = None;
    while let Some(a) = it.next() {
        match a.as_str() {
            "--title" => {
                title = Some(it.next().ok_or("--title needs a value")?.clone());
            }
            s if s.starts_with("--title=") => title = Some(s["--title=".len()..].to_string()),
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            s if s.starts_with('-') => return Err(format!("unknown option `{s}`\n{USAGE}")),
            s => {
                if dir.is_some() {
                    return Err(format!("one directory only (got `{s}` too)\n{USAGE}"));
                }
                dir = Some(PathBuf::from(s));
            }
        }
    }
    let dir = dir.ok_or_else(|| format!("missing <DIR>\n{USAGE}"))?;
    if !dir.is_dir() {
        return Err(format!("{} is not a directory", dir.display()));
    }
    let files = analysis::render_dir(&dir, title.as_deref())?;
    for f in files {
        println!("{}", f.display());
    }
    Ok(())
}
