//! The charts of a paper run as they are drawn: each with its figure and the commands
//! of its files, the notes of those not drawn, and the caption lines they share.

use super::run::PaperRun;
use crate::charts::render::{Chart, Rendered, render};
use crate::dataset::Group;
use crate::error::Result;
use crate::text::{machine_line, shell_quote};
use crate::warning::Warning;
use std::path::Path;

/// A chart of the paper run, with what made it.
#[derive(Clone, Debug)]
pub(crate) struct PaperChart {
    /// The paper's figure or table (`Fig. 5`, `Table 1`, `beyond the paper`).
    pub(crate) figure: String,
    pub(crate) chart: Rendered,
    /// Distinct command lines of the files the chart was drawn from.
    pub(crate) commands: Vec<String>,
}

/// Where the figures draw into: the charts directory, the charts drawn so far, a
/// note for each chart not drawn, and the warnings raised while drawing.
pub(crate) struct Charts<'a> {
    dir: &'a Path,
    pub(crate) charts: Vec<PaperChart>,
    pub(crate) notes: Vec<String>,
    pub(crate) warnings: Vec<Warning>,
}

impl<'a> Charts<'a> {
    pub(crate) fn new(dir: &'a Path) -> Charts<'a> {
        Charts {
            dir,
            charts: Vec::new(),
            notes: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// Renders `chart` into `stem.png` and `stem.svg` of the charts directory.
    pub(crate) fn add<C: Chart>(
        &mut self,
        figure: &str,
        stem: &str,
        title: String,
        description: String,
        chart: &C,
        commands: Vec<String>,
    ) -> Result<()> {
        let files = render(chart, self.dir, stem)?;
        self.charts.push(PaperChart {
            figure: figure.into(),
            chart: Rendered {
                stem: stem.into(),
                title,
                caption: description,
                files,
            },
            commands,
        });
        Ok(())
    }

    /// Notes a chart that could not be drawn, and why.
    pub(crate) fn skip(&mut self, what: &str, why: &str) {
        self.notes.push(format!("{what}: not drawn, {why}"));
    }
}

/// Caption lines of every paper chart: the machine, the scale, then `extra`.
pub(crate) fn caption(run: &PaperRun, extra: &[String]) -> Vec<String> {
    let mut out = vec![match run.machine() {
        Some(m) => format!("Machine: {}", machine_line(&m)),
        None => "Machine: unknown".into(),
    }];
    out.push(run.scale_line());
    out.extend(extra.iter().cloned());
    out
}

/// The caption line naming each engine's durability class.
pub(crate) fn durability_line(run: &PaperRun, engines: &[String]) -> String {
    let parts: Vec<String> = engines
        .iter()
        .map(|e| format!("{e} {}", run.durability(e)))
        .collect();
    format!(
        "Durability class (none: lost on a crash; process: survives a process crash; power: \
         survives power loss): {}.",
        parts.join(", ")
    )
}

/// Distinct command lines, shell-quoted, in the order first seen.
pub(crate) fn commands_of<'a>(cs: impl IntoIterator<Item = &'a Vec<String>>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in cs {
        // the program by its name: the directory it was built in is the machine's
        let program = c.first().map(|p| p.rsplit('/').next().unwrap_or(p));
        let s = program
            .into_iter()
            .chain(c.iter().skip(1).map(String::as_str))
            .map(shell_quote)
            .collect::<Vec<_>>()
            .join(" ");
        if !s.is_empty() && !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// The distinct command lines of every result in `gs`.
pub(crate) fn group_commands(gs: &[&Group]) -> Vec<String> {
    commands_of(
        gs.iter()
            .flat_map(|g| g.runs.iter().map(|e| &e.run.command)),
    )
}
