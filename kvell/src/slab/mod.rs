//! Slabs: one file per (worker, size class) of unsorted items updated in place.
//! `class.rs` says where a slot lies, `format.rs` what its bytes mean, `file.rs` how a
//! slab file grows and hands out slots, `freelist.rs` which slots are free.

mod class;
mod file;
mod format;
mod freelist;

pub use class::{
    CONT_HEADER, HEADER, LARGE_PAGES, Loc, MAX_KEY, MAX_VALUE, NCLASS, SMALL, Unit, class_of,
    is_large, large_capacity, large_pages_used, per_page, room, unit_len,
};
pub use file::file_name;
pub(crate) use file::{Slab, growth_floor};
pub use format::{
    CSUM, FLAG_CSUM, Format, KeyValue, NO_NEXT, Slot, TOMB, parse, read_large, small_kv,
    write_large, write_small, write_tomb,
};
pub(crate) use freelist::FreeList;
