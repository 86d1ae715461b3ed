//! The pieces every section of `paper-repro.md` and `README.md` is written with: the
//! header, command blocks, chart images, engine tables, summary rows, relative links.

use super::chart::PaperChart;
use super::format::utc;
use super::reference as paper;
use super::run::PaperRun;
use crate::text::{machine_line, shell_quote};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One row of the summary at the top.
pub(crate) struct Summary {
    pub(crate) what: String,
    pub(crate) verdict: String,
}

/// The header of both files: the machine, the paper's, the scale, the command and
/// time of the run, its notes, the engines with their durability class.
pub(crate) fn header(s: &mut String, run: &PaperRun) {
    match run.machine() {
        Some(m) => {
            let _ = writeln!(s, "**Machine:** {}\n", machine_line(&m));
        }
        None => s.push_str("**Machine:** unknown\n\n"),
    }
    let _ = writeln!(s, "**Paper's machine:** {}.\n", paper::MACHINE);
    let _ = writeln!(s, "**{}**\n", run.scale_line());
    if let Some(m) = &run.manifest {
        if !m.command.is_empty() {
            let c: Vec<String> = m.command.iter().map(|a| shell_quote(a)).collect();
            let _ = write!(s, "**Run by:** `{}`", c.join(" "));
        }
        if m.started_unix_s > 0 {
            let _ = write!(s, " from {}", utc(m.started_unix_s));
            if m.finished_unix_s >= m.started_unix_s {
                let _ = write!(
                    s,
                    " to {} ({:.0} min)",
                    utc(m.finished_unix_s),
                    (m.finished_unix_s - m.started_unix_s) as f64 / 60.0
                );
            }
        }
        s.push_str("\n\n");
        for n in &m.notes {
            let _ = writeln!(s, "- {n}");
        }
        if !m.notes.is_empty() {
            s.push('\n');
        }
    }
    let engines: Vec<String> = run.ds.engines.iter().map(|e| run.engine_label(e)).collect();
    if !engines.is_empty() {
        let _ = writeln!(
            s,
            "**Engines (durability class):** {}\n",
            engines.join(", ")
        );
    }
}

/// The commands that made a section's files, as a shell block.
pub(crate) fn code_block(s: &mut String, cmds: &[String]) {
    if cmds.is_empty() {
        s.push_str("**Command:** not recorded in the files.\n\n");
        return;
    }
    s.push_str(if cmds.len() == 1 {
        "**Command:**\n\n```sh\n"
    } else {
        "**Commands:**\n\n```sh\n"
    });
    for c in cmds {
        let _ = writeln!(s, "{c}");
    }
    s.push_str("```\n\n");
}

/// The charts drawn for a figure.
pub(crate) fn charts_of<'a>(charts: &'a [PaperChart], figure: &str) -> Vec<&'a PaperChart> {
    charts.iter().filter(|c| c.figure == figure).collect()
}

/// Each chart as an image linking to its SVG, with its caption.
pub(crate) fn images(s: &mut String, charts: &[&PaperChart], link: &str) {
    for c in charts {
        let _ = writeln!(
            s,
            "![{}]({link}/{}.png)\n\n*{}* ([SVG]({link}/{}.svg))\n",
            c.chart.title, c.chart.stem, c.chart.caption, c.chart.stem
        );
    }
}

/// A markdown table head: a first column, one right-aligned column per engine
/// (labelled with its durability class), then `extra` columns as (name, alignment).
pub(crate) fn engine_table_head(
    s: &mut String,
    run: &PaperRun,
    first: &str,
    first_align: &str,
    engines: &[String],
    extra: &[(&str, &str)],
) {
    let _ = write!(s, "| {first} |");
    for e in engines {
        let _ = write!(s, " {} |", run.engine_label(e));
    }
    for (name, _) in extra {
        let _ = write!(s, " {name} |");
    }
    let _ = write!(s, "\n| {first_align} |");
    for _ in engines {
        s.push_str(" ---: |");
    }
    for (_, align) in extra {
        let _ = write!(s, " {align} |");
    }
    s.push('\n');
}

/// The path from the directory of `from` (a file) to `to`, for a markdown link.
pub fn relative_link(from: &Path, to: &Path) -> String {
    let abs = |p: &Path| -> PathBuf {
        let p = if p.is_absolute() {
            p.to_path_buf()
        } else {
            std::env::current_dir().unwrap_or_default().join(p)
        };
        // a file not written yet: its directory canonical, then its name
        p.canonicalize()
            .unwrap_or_else(|_| match (p.parent(), p.file_name()) {
                (Some(d), Some(f)) => d.canonicalize().map(|d| d.join(f)).unwrap_or(p.clone()),
                _ => p.clone(),
            })
    };
    let base = abs(from
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new(".")));
    let to = abs(to);
    let b: Vec<_> = base.components().collect();
    let t: Vec<_> = to.components().collect();
    let common = b.iter().zip(&t).take_while(|(x, y)| x == y).count();
    let mut parts: Vec<String> = Vec::new();
    for _ in common..b.len() {
        parts.push("..".into());
    }
    for c in &t[common..] {
        parts.push(c.as_os_str().to_string_lossy().into_owned());
    }
    if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_links() {
        let d = std::env::temp_dir().join(format!("kvtb-rel-{}", std::process::id()));
        std::fs::create_dir_all(d.join("run/charts")).unwrap();
        std::fs::create_dir_all(d.join("docs")).unwrap();
        assert_eq!(
            relative_link(&d.join("run/paper-repro.md"), &d.join("run/charts")),
            "charts"
        );
        assert_eq!(
            relative_link(&d.join("docs/paper-repro.md"), &d.join("run/charts")),
            "../run/charts"
        );
        let _ = std::fs::remove_dir_all(&d);
    }
}
