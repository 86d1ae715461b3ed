//! `kvtb-report paper DIR`: a reproduce-paper directory to the paper's figures in
//! `DIR/charts/`, `DIR/README.md` and `paper-repro.md`.

use super::chart::Charts;
use super::figures::FIGURES;
use super::load::load;
use super::markdown::relative_link;
use super::{readme, repro};
use crate::charts::style::fonts;
use crate::error::{Error, IoOp, Result};
use crate::text::shell_quote;
use crate::warning::{Warning, Written};
use std::path::{Path, PathBuf};

/// Renders a reproduce-paper directory: charts into `DIR/charts/`, `DIR/README.md`
/// and `paper-repro.md` (at `md`, default `DIR/paper-repro.md`). Returns the files
/// written, and a note for each part absent and each chart not drawn.
pub fn render_paper(dir: &Path, md: Option<&Path>, title: Option<&str>) -> Result<Written> {
    let run = load(dir, title)?;
    let mut warnings: Vec<Warning> = run.notes.iter().cloned().map(Warning::Note).collect();
    let charts_dir = dir.join("charts");
    std::fs::create_dir_all(&charts_dir).map_err(|e| Error::io(IoOp::CreateDir, &charts_dir, e))?;
    fonts();
    let mut out = Charts::new(&charts_dir);
    for figure in &FIGURES {
        (figure.draw)(&run, &mut out)?;
    }
    let Charts {
        charts,
        notes: chart_notes,
        warnings: drawing,
        ..
    } = out;
    warnings.extend(drawing);
    warnings.extend(chart_notes.iter().cloned().map(Warning::Note));
    let mut written: Vec<PathBuf> = charts.iter().flat_map(|c| c.chart.files.clone()).collect();
    let md_arg = md;
    let md = md
        .map(Path::to_path_buf)
        .unwrap_or_else(|| dir.join("paper-repro.md"));
    if let Some(parent) = md.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(IoOp::CreateDir, parent, e))?;
    }
    let mut command = format!("kvtb-report paper {}", dir.display());
    if let Some(m) = md_arg {
        command.push_str(&format!(" --md {}", m.display()));
    }
    if let Some(t) = title {
        command.push_str(&format!(" --title {}", shell_quote(t)));
    }
    let readme = dir.join("README.md");
    std::fs::write(
        &readme,
        readme::readme(&run, &charts, &chart_notes, &md, &command),
    )
    .map_err(|e| Error::io(IoOp::Write, &readme, e))?;
    written.push(readme);
    let link = relative_link(&md, &charts_dir);
    std::fs::write(
        &md,
        repro::paper_repro(&run, &charts, &chart_notes, &link, &command),
    )
    .map_err(|e| Error::io(IoOp::Write, &md, e))?;
    written.push(md);
    Ok(Written {
        files: written,
        warnings,
    })
}
