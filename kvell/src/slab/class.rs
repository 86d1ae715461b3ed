//! Size classes and slot arithmetic: which class an item falls in, where slot `i` of a
//! class lies in its slab file, and the I/O unit (a page, or a whole large slot) that
//! holds it. The bytes inside a slot are the item codec's (`format.rs`).
//!
//! Small slot `i` is in page `i / per_page` at byte `(i % per_page) * class`; an item
//! never straddles a page. Large slot `i` starts at byte `i * pages * 4096`.

use crate::io::PAGE;

/// Bytes of item (header + key + value) per slot of the small classes.
pub const SMALL: [usize; 9] = [100, 128, 256, 400, 512, 1024, 1365, 2048, 4096];
/// Pages per slot of the large classes (items over one page).
pub const LARGE_PAGES: [usize; 12] = [2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096];
pub const NCLASS: usize = SMALL.len() + LARGE_PAGES.len();

/// Item header: ts u64 | key_len u16 | flags u16 | value_len u32 (filled by the codec).
pub const HEADER: usize = 16;
/// Header of every page of a large item after the first: ts u64.
pub const CONT_HEADER: usize = 8;
/// Largest key accepted.
pub const MAX_KEY: usize = 1024;
/// Largest value accepted (fits the largest class with the largest key).
pub const MAX_VALUE: usize = 8 << 20;

/// A slot location packed in a u64: class in the top 6 bits, slot number below.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Loc(pub u64);

impl Loc {
    pub fn new(class: usize, slot: u64) -> Loc {
        debug_assert!(slot < 1 << 58);
        Loc(((class as u64) << 58) | slot)
    }
    pub fn class(self) -> usize {
        (self.0 >> 58) as usize
    }
    pub fn slot(self) -> u64 {
        self.0 & ((1 << 58) - 1)
    }
    /// The I/O unit holding the slot: a page (small) or the slot itself (large).
    pub fn unit(self) -> Unit {
        let c = self.class();
        let u = if is_large(c) {
            self.slot()
        } else {
            self.slot() / per_page(c) as u64
        };
        Unit::new(c, u)
    }
    /// Byte offset of the slot inside its unit.
    pub fn offset_in_unit(self) -> usize {
        let c = self.class();
        if is_large(c) {
            0
        } else {
            (self.slot() % per_page(c) as u64) as usize * SMALL[c]
        }
    }
}

/// An I/O unit: (class, page) for small classes, (class, slot) for large ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Unit(pub u64);

impl Unit {
    pub fn new(class: usize, n: u64) -> Unit {
        Unit(((class as u64) << 58) | n)
    }
    pub fn class(self) -> usize {
        (self.0 >> 58) as usize
    }
    pub fn n(self) -> u64 {
        self.0 & ((1 << 58) - 1)
    }
    pub fn file_offset(self) -> u64 {
        self.n() * unit_len(self.class()) as u64
    }
}

pub fn is_large(class: usize) -> bool {
    class >= SMALL.len()
}

/// Slots per page of a small class.
pub fn per_page(class: usize) -> usize {
    PAGE / SMALL[class]
}

/// Bytes of one I/O unit of the class.
pub fn unit_len(class: usize) -> usize {
    if is_large(class) {
        LARGE_PAGES[class - SMALL.len()] * PAGE
    } else {
        PAGE
    }
}

/// Bytes of key + value a large slot of `pages` pages holds.
pub fn large_capacity(pages: usize) -> usize {
    pages * PAGE - HEADER - (pages - 1) * CONT_HEADER
}

/// The class of an item, or None if too large.
pub fn class_of(key_len: usize, value_len: usize) -> Option<usize> {
    let n = HEADER + key_len + value_len;
    if let Some(c) = SMALL.iter().position(|&s| n <= s) {
        return Some(c);
    }
    LARGE_PAGES
        .iter()
        .position(|&p| key_len + value_len <= large_capacity(p))
        .map(|i| SMALL.len() + i)
}

/// Key+value capacity of a slot of the class.
pub fn room(class: usize) -> usize {
    if is_large(class) {
        large_capacity(LARGE_PAGES[class - SMALL.len()])
    } else {
        SMALL[class] - HEADER
    }
}

/// Pages a large item of this many key+value bytes really uses.
pub fn large_pages_used(bytes: usize) -> usize {
    if bytes <= PAGE - HEADER {
        1
    } else {
        1 + (bytes - (PAGE - HEADER)).div_ceil(PAGE - CONT_HEADER)
    }
}
