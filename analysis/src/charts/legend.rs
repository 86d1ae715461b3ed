//! Legends: a row of entries across the top of an area, or a column beside a chart.

use super::render::de;
use super::style::font;
use crate::error::Result;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// How a legend entry is drawn.
#[derive(Clone, Copy)]
pub(crate) enum Swatch {
    Fill(RGBColor),
    Line(RGBColor),
    Dashed(RGBColor),
    Hollow(RGBColor),
    Cross(RGBColor),
}

/// A row of legend items (colour swatch and name) across the top of `area`; returns
/// the area below it.
pub(crate) fn legend_row<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    items: &[(String, Swatch)],
) -> Result<DrawingArea<DB, Shift>> {
    let style = font(15);
    let widths: Vec<i32> = items
        .iter()
        .map(|(n, _)| {
            area.estimate_text_size(n, &style)
                .map(|s| s.0 as i32)
                .unwrap_or(60)
                + 22
                + 24
        })
        .collect();
    let total: i32 = widths.iter().sum();
    let (w, _) = area.dim_in_pixel();
    let (row, rest) = area.split_vertically(30);
    let mut x = (w as i32 - total) / 2;
    for ((n, sw), wd) in items.iter().zip(widths) {
        draw_swatch(&row, *sw, x - 1, 15)?;
        row.draw(&Text::new(
            n.clone(),
            (x + 22, 15),
            style.pos(Pos::new(HPos::Left, VPos::Center)),
        ))
        .map_err(de)?;
        x += wd;
    }
    Ok(rest)
}

/// A legend as a column of entries at the top left of `area` (beside a chart, so it
/// never hides data).
pub(crate) fn legend_box<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    items: &[(String, Swatch)],
    top: i32,
) -> Result<()> {
    let style = font(13);
    for (i, (name, sw)) in items.iter().enumerate() {
        let y = top + 10 + 20 * i as i32;
        let x = 6;
        draw_swatch(area, *sw, x, y)?;
        area.draw(&Text::new(
            name.clone(),
            (x + 26, y),
            style.clone().pos(Pos::new(HPos::Left, VPos::Center)),
        ))
        .map_err(de)?;
    }
    Ok(())
}

/// A legend symbol, 18 pixels wide, its left end at `x`, centred on `y`.
pub(crate) fn draw_swatch<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    sw: Swatch,
    x: i32,
    y: i32,
) -> Result<()> {
    match sw {
        Swatch::Fill(c) => area.draw(&Rectangle::new([(x, y - 6), (x + 18, y + 6)], c.filled())),
        Swatch::Line(c) => area.draw(&PathElement::new([(x, y), (x + 18, y)], c.stroke_width(2))),
        Swatch::Dashed(c) => area
            .draw(&PathElement::new([(x, y), (x + 6, y)], c))
            .and_then(|_| area.draw(&PathElement::new([(x + 11, y), (x + 18, y)], c))),
        Swatch::Hollow(c) => area.draw(&Circle::new((x + 9, y), 4, c.stroke_width(2))),
        Swatch::Cross(c) => area.draw(&Cross::new((x + 9, y), 5, c.stroke_width(3))),
    }
    .map_err(de)
}

/// Legend entries of filled swatches, one per series.
pub(crate) fn fills(series: &[(String, RGBColor)]) -> Vec<(String, Swatch)> {
    series
        .iter()
        .map(|(n, c)| (n.clone(), Swatch::Fill(*c)))
        .collect()
}
