//! Fonts, sizes and colours shared by every chart.
//!
//! Text uses DejaVu Sans compiled in and registered with plotters' ab_glyph font
//! table, so rendering needs no system fonts.

use crate::dataset::Dataset;
use plotters::prelude::*;
use std::sync::Once;

/// The family the DejaVu fonts are registered under.
pub(crate) const FONT: &str = "sans-serif";
/// The default chart size in pixels.
pub(crate) const W: u32 = 1280;
pub(crate) const H: u32 = 720;

/// Colour-blind-safe palette (Okabe-Ito), engines in `Dataset::engines` order; the
/// `null` engine is always grey.
pub(crate) const PALETTE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(120, 94, 240),
];

pub(crate) const GREY: RGBColor = RGBColor(130, 130, 130);
pub(crate) const RUN_COLOUR: RGBColor = RGBColor(0, 114, 178);
pub(crate) const LOAD_COLOUR: RGBColor = RGBColor(230, 159, 0);
pub(crate) const STALL_COLOUR: RGBColor = RGBColor(200, 0, 0);
pub(crate) const TEXT_GREY: RGBColor = RGBColor(60, 60, 60);

/// Percentile bars, light to dark as the tail gets longer.
pub(crate) const PCT_COLOURS: [RGBColor; 4] = [
    RGBColor(158, 202, 225),
    RGBColor(66, 146, 198),
    RGBColor(8, 81, 156),
    RGBColor(8, 29, 88),
];

/// Registers the compiled-in DejaVu fonts with plotters (once).
pub(crate) fn fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let a = plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular())
            .is_ok();
        let b = plotters::style::register_font(FONT, FontStyle::Bold, dejavu::sans::bold()).is_ok();
        debug_assert!(a && b, "DejaVu fonts must parse");
    });
}

/// Regular text of `size` pixels.
pub(crate) fn font(size: u32) -> TextStyle<'static> {
    TextStyle::from((FONT, size).into_font()).color(&BLACK)
}

/// Bold text of `size` pixels.
pub(crate) fn bold(size: u32) -> TextStyle<'static> {
    TextStyle::from((FONT, size).into_font().style(FontStyle::Bold)).color(&BLACK)
}

/// An engine's colour: its place in the dataset's engine list.
pub(crate) fn engine_colour(ds: &Dataset, label: &str) -> RGBColor {
    if label == "null" {
        GREY
    } else {
        PALETTE[ds.engine_index(label) % PALETTE.len()]
    }
}
