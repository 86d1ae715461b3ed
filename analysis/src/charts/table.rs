//! A table drawn as an image: a header row, alternate rows shaded, the first column
//! left-aligned and the numbers right-aligned.

use super::render::de;
use super::style::{bold, font};
use crate::error::Result;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// A table drawn as an image.
pub(crate) struct Table {
    pub(crate) header: Vec<String>,
    pub(crate) rows: Vec<Vec<String>>,
}

impl Table {
    pub(crate) fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<()> {
        let body = font(15);
        let head = bold(15);
        let ncol = self.header.len();
        let mut widths = vec![0i32; ncol];
        for (i, h) in self.header.iter().enumerate() {
            widths[i] = area
                .estimate_text_size(h, &head)
                .map(|s| s.0 as i32)
                .unwrap_or(80);
        }
        for r in &self.rows {
            for (i, c) in r.iter().enumerate().take(ncol) {
                let w = area
                    .estimate_text_size(c, &body)
                    .map(|s| s.0 as i32)
                    .unwrap_or(80);
                widths[i] = widths[i].max(w);
            }
        }
        let pad = 28;
        let total: i32 = widths.iter().map(|w| w + pad).sum();
        let (w, _) = area.dim_in_pixel();
        let left = ((w as i32 - total) / 2).max(4);
        let row_h = 30;
        let top = 20;
        let mut x = left;
        for (i, h) in self.header.iter().enumerate() {
            area.draw(&Text::new(
                h.clone(),
                (x + widths[i] + pad / 2, top),
                head.clone().pos(Pos::new(HPos::Right, VPos::Top)),
            ))
            .map_err(de)?;
            x += widths[i] + pad;
        }
        area.draw(&PathElement::new(
            [(left, top + row_h - 6), (left + total, top + row_h - 6)],
            BLACK.stroke_width(1),
        ))
        .map_err(de)?;
        for (ri, r) in self.rows.iter().enumerate() {
            let y = top + row_h * (ri as i32 + 1);
            if ri % 2 == 1 {
                area.draw(&Rectangle::new(
                    [(left, y - 4), (left + total, y + row_h - 8)],
                    RGBColor(244, 244, 244).filled(),
                ))
                .map_err(de)?;
            }
            let mut x = left;
            for (i, c) in r.iter().enumerate().take(ncol) {
                // the first column left-aligned, numbers right-aligned
                let (px, hp) = if i == 0 {
                    (x + pad / 2, HPos::Left)
                } else {
                    (x + widths[i] + pad / 2, HPos::Right)
                };
                area.draw(&Text::new(
                    c.clone(),
                    (px, y),
                    body.clone().pos(Pos::new(hp, VPos::Top)),
                ))
                .map_err(de)?;
                x += widths[i] + pad;
            }
        }
        Ok(())
    }
}
