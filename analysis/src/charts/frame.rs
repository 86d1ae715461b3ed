//! The frame every chart is drawn in: white background, a title on top, caption
//! lines (wrapped to the width) at the bottom.

use super::render::de;
use super::style::{TEXT_GREY, bold, font};
use crate::error::Result;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Splits `text` into lines that fit `width` pixels in `style`.
pub(crate) fn wrap<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    text: &str,
    style: &TextStyle,
    width: u32,
) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in text.split(' ') {
        let cand = if cur.is_empty() {
            word.to_string()
        } else {
            format!("{cur} {word}")
        };
        let w = area
            .estimate_text_size(&cand, style)
            .map(|s| s.0)
            .unwrap_or(0);
        if w > width && !cur.is_empty() {
            lines.push(std::mem::take(&mut cur));
            cur = word.to_string();
        } else {
            cur = cand;
        }
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

/// White background, a title on top, caption lines at the bottom; returns the area
/// between them.
pub(crate) fn frame<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    caption: &[String],
) -> Result<DrawingArea<DB, Shift>> {
    root.fill(&WHITE).map_err(de)?;
    let (w, h) = root.dim_in_pixel();
    let cap_style = font(14).color(&TEXT_GREY);
    let lines: Vec<String> = caption
        .iter()
        .flat_map(|c| wrap(root, c, &cap_style, w - 24))
        .collect();
    let title_h = 46;
    let cap_h = 12 + 19 * lines.len() as u32;
    let (top, rest) = root.split_vertically(title_h);
    top.draw(&Text::new(
        title.to_string(),
        (w as i32 / 2, 12),
        bold(24).pos(Pos::new(HPos::Center, VPos::Top)),
    ))
    .map_err(de)?;
    let (body, cap) = rest.split_vertically(h - title_h - cap_h);
    cap.draw(&PathElement::new(
        vec![(12, 2), (w as i32 - 12, 2)],
        RGBColor(200, 200, 200),
    ))
    .map_err(de)?;
    for (i, l) in lines.iter().enumerate() {
        cap.draw(&Text::new(
            l.clone(),
            (12, 8 + 19 * i as i32),
            cap_style.clone(),
        ))
        .map_err(de)?;
    }
    Ok(body)
}

/// `what`, centred in the area, where a chart has no data.
pub(crate) fn no_data<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, what: &str) -> Result<()> {
    let (w, h) = area.dim_in_pixel();
    area.draw(&Text::new(
        what.to_string(),
        (w as i32 / 2, h as i32 / 2),
        font(20).pos(Pos::new(HPos::Center, VPos::Center)),
    ))
    .map_err(de)
}
