//! `kvtb-report`: result files to charts and a markdown report.

use analysis::{Error, Warning};
use clap::error::ErrorKind;
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// Result files of the `ycsb` driver to charts (PNG and SVG) and markdown reports.
#[derive(Parser, Debug)]
#[command(
    name = "kvtb-report",
    version,
    arg_required_else_help = true,
    after_help = "Both commands print the files written; warnings (skipped files, absent \
                  parts) go to stderr. Exit status 1 on a bad command line or a report \
                  that could not be made."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Charts and report.md of a directory of result files.
    ///
    /// Reads every *.json result file under DIR (the `ycsb` driver's output), renders
    /// charts into DIR (PNG and SVG) and writes DIR/report.md.
    Charts {
        /// The directory of result files (searched recursively).
        #[arg(value_name = "DIR")]
        dir: PathBuf,
        /// The title of the charts and of report.md.
        #[arg(long, value_name = "TEXT")]
        title: Option<String>,
    },
    /// The paper's figures, README.md and paper-repro.md of a reproduce-paper run.
    ///
    /// Reads a reproduce-paper directory (manifest.json, device/, iomethods/, ycsb/,
    /// production/, itemsize/, recovery/, batch/), renders every paper figure its
    /// files allow into DIR/charts/ (PNG and SVG), writes DIR/README.md and
    /// paper-repro.md. Absent parts are skipped with a note; a file that does not
    /// parse is an error naming it.
    Paper {
        /// The reproduce-paper directory.
        #[arg(value_name = "DIR")]
        dir: PathBuf,
        /// Where to write paper-repro.md (default: DIR/paper-repro.md).
        #[arg(long, value_name = "PATH")]
        md: Option<PathBuf>,
        /// The title of the figures and of both markdown files.
        #[arg(long, value_name = "TEXT")]
        title: Option<String>,
    },
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // help and version asked for are a success; a command line not understood
            // (no command included) is a failure, exit status 1 as for a failed report
            let _ = e.print();
            return match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => ExitCode::SUCCESS,
                _ => ExitCode::FAILURE,
            };
        }
    };
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // the files that were not results, before saying that none was
            if let Error::NoResults { skipped, .. } = &e {
                for s in skipped {
                    eprintln!("{}", Warning::SkippedFile(s.clone()));
                }
            }
            eprintln!("kvtb-report: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command) -> Result<(), Error> {
    let written = match command {
        Command::Charts { dir, title } => {
            check_dir(&dir)?;
            analysis::render_dir(&dir, title.as_deref())?
        }
        Command::Paper { dir, md, title } => {
            check_dir(&dir)?;
            analysis::paper::render_paper(&dir, md.as_deref(), title.as_deref())?
        }
    };
    for w in &written.warnings {
        eprintln!("{w}");
    }
    for f in &written.files {
        println!("{}", f.display());
    }
    Ok(())
}

fn check_dir(dir: &std::path::Path) -> Result<(), Error> {
    if dir.is_dir() {
        Ok(())
    } else {
        Err(Error::NotADirectory(dir.to_path_buf()))
    }
}
