//! `kvtb-report`: result files to charts and a markdown report.

use analysis::{Error, Warning};
use std::fmt;
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "\
usage: kvtb-report charts <DIR> [--title TEXT]
       kvtb-report paper <DIR> [--md PATH] [--title TEXT]

charts: reads every *.json result file under DIR (the `ycsb` driver's output),
        renders charts into DIR (PNG and SVG) and writes DIR/report.md.
paper:  reads a reproduce-paper directory (manifest.json, device/, iomethods/,
        ycsb/, production/, itemsize/, recovery/, batch/), renders every paper
        figure its files allow into DIR/charts/ (PNG and SVG), writes DIR/README.md
        and paper-repro.md (at PATH, default DIR/paper-repro.md). Absent parts are
        skipped with a note; a file that does not parse is an error naming it.

Both print the files written.";

/// Why `kvtb-report` stops: a command line it does not understand, or a report that
/// could not be made.
enum Failure {
    Usage(String),
    Report(Error),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Usage(u) => f.write_str(u),
            Failure::Report(e) => e.fmt(f),
        }
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure::Report(e)
    }
}

impl From<&str> for Failure {
    fn from(u: &str) -> Failure {
        Failure::Usage(u.to_string())
    }
}

impl From<String> for Failure {
    fn from(u: String) -> Failure {
        Failure::Usage(u)
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // the files that were not results, before saying that none was
            if let Failure::Report(Error::NoResults { skipped, .. }) = &e {
                for s in skipped {
                    eprintln!("{}", Warning::SkippedFile(s.clone()));
                }
            }
            eprintln!("kvtb-report: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result<(), Failure> {
    let mut it = args.iter();
    let paper = match it.next().map(String::as_str) {
        Some("charts") => false,
        Some("paper") => true,
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            return Ok(());
        }
        Some(other) => {
            return Err(Failure::Usage(format!(
                "unknown command `{other}`\n{USAGE}"
            )));
        }
        None => return Err(USAGE.into()),
    };
    let mut dir: Option<PathBuf> = None;
    let mut title: Option<String> = None;
    let mut md: Option<PathBuf> = None;
    while let Some(a) = it.next() {
        match a.as_str() {
            "--title" => {
                title = Some(it.next().ok_or("--title needs a value")?.clone());
            }
            s if s.starts_with("--title=") => title = Some(s["--title=".len()..].to_string()),
            "--md" if paper => {
                md = Some(PathBuf::from(it.next().ok_or("--md needs a path")?));
            }
            s if paper && s.starts_with("--md=") => md = Some(PathBuf::from(&s["--md=".len()..])),
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            s if s.starts_with('-') => {
                return Err(Failure::Usage(format!("unknown option `{s}`\n{USAGE}")));
            }
            s => {
                if dir.is_some() {
                    return Err(Failure::Usage(format!(
                        "one directory only (got `{s}` too)\n{USAGE}"
                    )));
                }
                dir = Some(PathBuf::from(s));
            }
        }
    }
    let dir = dir.ok_or_else(|| format!("missing <DIR>\n{USAGE}"))?;
    if !dir.is_dir() {
        return Err(Error::NotADirectory(dir).into());
    }
    let written = if paper {
        analysis::paper::render_paper(&dir, md.as_deref(), title.as_deref())?
    } else {
        analysis::render_dir(&dir, title.as_deref())?
    };
    for w in &written.warnings {
        eprintln!("{w}");
    }
    for f in &written.files {
        println!("{}", f.display());
    }
    Ok(())
}
