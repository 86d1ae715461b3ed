//! The per-worker in-memory index (`map.rs`), its front-coded blocks (`block.rs`) and
//! keys (`key.rs`). See kvell/DESIGN.md (Index) for the layout and its cost.

mod block;
mod blocks;
mod key;
mod map;
#[cfg(test)]
mod tests;

pub(crate) use key::{Key, ShortKey};
pub(crate) use map::{Found, Index, lock};
