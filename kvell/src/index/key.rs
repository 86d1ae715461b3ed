//! An index key: whole, compared in plain byte order, stored inline when short (no
//! heap allocation for YCSB's 23-byte keys). The map of blocks is keyed by each
//! block's first key. Recovery gathers short keys as [`ShortKey`]s (plain bytes).

use std::cmp::Ordering;

/// Keys up to this long are stored inline.
const INLINE: usize = 24;

/// A key stored inline when short (no heap allocation for typical YCSB keys).
#[derive(Clone)]
pub(crate) enum Key {
    Inline(u8, [u8; INLINE]),
    Heap(Box<[u8]>),
}

impl Key {
    pub(crate) fn new(k: &[u8]) -> Key {
        if k.len() <= INLINE {
            let mut b = [0u8; INLINE];
            b[..k.len()].copy_from_slice(k);
            Key::Inline(k.len() as u8, b)
        } else {
            Key::Heap(k.into())
        }
    }
    pub(crate) fn as_bytes(&self) -> &[u8] {
        match self {
            Key::Inline(n, b) => &b[..*n as usize],
            Key::Heap(b) => b,
        }
    }
    /// Heap bytes of the key as malloc rounds them (0 inline).
    pub(super) fn heap_bytes(&self) -> u64 {
        match self {
            Key::Inline(..) => 0,
            Key::Heap(b) => malloc_bytes(b.len()),
        }
    }
}

/// Word `i` (0..3) of an inline key, big-endian, so words compare as the bytes do.
fn word(b: &[u8; INLINE], i: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[i * 8..i * 8 + 8]);
    u64::from_be_bytes(w)
}

impl PartialEq for Key {
    fn eq(&self, o: &Key) -> bool {
        match (self, o) {
            (Key::Inline(la, a), Key::Inline(lb, b)) => la == lb && a == b,
            _ => self.as_bytes() == o.as_bytes(),
        }
    }
}
impl Eq for Key {}
impl PartialOrd for Key {
    fn partial_cmp(&self, o: &Key) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Key {
    fn cmp(&self, o: &Key) -> Ordering {
        match (self, o) {
            // Zero padding makes word order equal byte order; equal words then
            // mean one key is a prefix of the other (plus zeros): shorter first.
            (Key::Inline(la, a), Key::Inline(lb, b)) => (0..3)
                .map(|i| word(a, i).cmp(&word(b, i)))
                .find(|c| c.is_ne())
                .unwrap_or_else(|| la.cmp(lb)),
            _ => self.as_bytes().cmp(o.as_bytes()),
        }
    }
}

/// A key short enough to be stored inline, as plain bytes (`Copy`, nothing on the
/// heap), ordered as [`Key`] orders it (the zero-padded bytes, then the length: byte
/// order, shorter first on a tie): recovery sorts millions of them in a vector of its
/// own mapping (`io::MappedVec`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct ShortKey {
    b: [u8; INLINE],
    len: u8,
}

impl ShortKey {
    /// `k` as a short key, or None if it is longer than a key stored inline.
    pub(crate) fn new(k: &[u8]) -> Option<ShortKey> {
        (k.len() <= INLINE).then(|| {
            let mut b = [0u8; INLINE];
            b[..k.len()].copy_from_slice(k);
            ShortKey {
                b,
                len: k.len() as u8,
            }
        })
    }
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.b[..self.len as usize]
    }
    pub(crate) fn key(&self) -> Key {
        Key::Inline(self.len, self.b)
    }
}

/// Bytes glibc malloc really takes for an allocation of `n` bytes.
pub(super) fn malloc_bytes(n: usize) -> u64 {
    ((n + 8).max(32).div_ceil(16) * 16) as u64
}
