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
}

/// Word `i` (0..3) of an inline key, big-endian, so words compare as the bytes do.
fn word(b: &[u8; INLINE], i: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[i * 8..i * 8 + 8]);
    u64::from_be_bytes(w)
}

/// The order of two inline keys (zero-padded bytes `a`, `b` of lengths `la`, `lb`):
/// zero padding makes word order equal byte order; equal words then mean one key is a
/// prefix of the other (plus zeros): shorter first. By words, not by the arrays'
/// derived order, which called memcmp for each comparison (a tenth of a worker's CPU
/// when recovery sorted 4M keys, by perf).
fn inline_cmp(a: &[u8; INLINE], la: u8, b: &[u8; INLINE], lb: u8) -> Ordering {
    (0..3)
        .map(|i| word(a, i).cmp(&word(b, i)))
        .find(|c| c.is_ne())
        .unwrap_or_else(|| la.cmp(&lb))
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
            (Key::Inline(la, a), Key::Inline(lb, b)) => inline_cmp(a, *la, b, *lb),
            _ => self.as_bytes().cmp(o.as_bytes()),
        }
    }
}

/// A key short enough to be stored inline, as plain bytes (`Copy`, nothing on the
/// heap), ordered as [`Key`] orders it (the zero-padded bytes, then the length: byte
/// order, shorter first on a tie): recovery sorts millions of them in a vector of its
/// own mapping (`io::MappedVec`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct ShortKey {
    b: [u8; INLINE],
    len: u8,
}

impl PartialOrd for ShortKey {
    fn partial_cmp(&self, o: &ShortKey) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for ShortKey {
    fn cmp(&self, o: &ShortKey) -> Ordering {
        inline_cmp(&self.b, self.len, &o.b, o.len)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Short keys order and compare equal as their bytes do (byte order, a prefix
    /// first), which the recovery's sort and merge and the index rely on: keys of
    /// every length up to the inline limit, with zero bytes, prefixes of one another,
    /// and bytes that differ only in one word.
    #[test]
    fn short_keys_order_as_their_bytes() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut keys: Vec<Vec<u8>> =
            vec![vec![], vec![0], vec![0, 0], b"a".to_vec(), b"a\0".to_vec()];
        for _ in 0..400 {
            let len = (rnd() % (INLINE as u64 + 1)) as usize;
            // bytes from a small alphabet with zeros, so that many keys share prefixes
            let k: Vec<u8> = (0..len)
                .map(|_| [0u8, 1, b'a', 0xff][(rnd() % 4) as usize])
                .collect();
            keys.push(k.clone());
            keys.push(k[..len / 2].to_vec());
            let mut other = k.clone();
            if let Some(b) = other.get_mut(len.saturating_sub(1)) {
                *b = b.wrapping_add(1);
            }
            keys.push(other);
        }
        for a in &keys {
            for b in keys.iter().step_by(7) {
                let (sa, sb) = (ShortKey::new(a).unwrap(), ShortKey::new(b).unwrap());
                assert_eq!(sa.cmp(&sb), a.cmp(b), "{a:?} against {b:?}");
                assert_eq!(sa == sb, a == b, "{a:?} against {b:?}");
            }
        }
    }
}
