//! Values generated from the key, a version and their length, so a read can verify
//! what it got (`-p dataintegrity=true`, the durability audit) without the driver
//! remembering what it wrote.
//!
//! Layout of a value of `len` >= 16 bytes:
//!
//! ```text
//! 0        8                        16                                 len
//! | version | hash(key) ^ mix(len)  | xorshift streams seeded by hash(key),
//! |  u64 LE |        u64 LE         |   version and len                  |
//! ```
//!
//! A value shorter than 16 bytes is the first bytes of the stream for version 0
//! seeded by the key and its length. Every byte depends on the length, so a prefix or
//! an extension of a value is not the value of its own length: [`verify`] refuses a
//! truncated value of the right version (a value of 16 bytes or more by its second
//! word; below 16 bytes the stream differs, with the chance of a false pass of a
//! random fill of that many bytes).

fn key_hash(key: &[u8]) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for &b in key {
        h ^= b as u64;
        h = h.wrapping_mul(0x100_0000_01B3);
    }
    h
}

/// SplitMix64's finaliser: the length folded into the key's word and the seed.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Fills `out` with four interleaved xorshift streams seeded from `seed` (shared with
/// `record.rs`): 8-byte words from lanes 0, 1, 2, 3 in turn, the bytes after the last
/// whole 32 from lane 0. Four lanes, not one stream: each word of a stream waits for
/// the one before (a chain of six operations), and `write_slot` was 7.5% of a 4M-item
/// load's CPU (perf, 2026-12-05). Fresh loads of 4M items of 1 KiB under KVell,
/// alternating with one stream, the same hour: 518-553K items/s against 484-518K,
/// the driver's CPU 0.26-0.28 us per item against 0.38-0.41
/// (results/kvell-4m-ab/value-fill/ab.md).
pub(crate) fn fill(out: &mut [u8], seed: u64) {
    let mut lanes = [0u64; 4];
    for (l, x) in lanes.iter_mut().enumerate() {
        *x = mix(seed ^ l as u64) | 1;
    }
    let step = |x: &mut u64| {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x
    };
    let mut chunks = out.chunks_exact_mut(32);
    for c in &mut chunks {
        for (w, x) in c.chunks_exact_mut(8).zip(lanes.iter_mut()) {
            w.copy_from_slice(&step(x).to_le_bytes());
        }
    }
    let x = &mut lanes[0];
    for w in chunks.into_remainder().chunks_mut(8) {
        let n = w.len();
        w.copy_from_slice(&step(x).to_le_bytes()[..n]);
    }
}

/// Writes into `out` the value of `key` at `version`, `len` bytes long.
pub fn make_into(key: &[u8], version: u64, len: usize, out: &mut Vec<u8>) {
    out.clear();
    out.resize(len, 0);
    let h = key_hash(key) ^ mix(len as u64);
    if len >= 16 {
        out[..8].copy_from_slice(&version.to_le_bytes());
        out[8..16].copy_from_slice(&h.to_le_bytes());
        fill(
            &mut out[16..],
            h ^ version.wrapping_mul(0x9E37_79B9_7F4A_7C15),
        );
    } else {
        fill(out, h);
    }
}

/// The value of `key` at `version`.
pub fn make(key: &[u8], version: u64, len: usize) -> Vec<u8> {
    let mut v = Vec::new();
    make_into(key, version, len, &mut v);
    v
}

/// The version a value claims to be, if it is long enough to carry one.
pub fn version_of(value: &[u8]) -> Option<u64> {
    let mut v = [0u8; 8];
    v.copy_from_slice(value.get(..8)?);
    (value.len() >= 16).then_some(u64::from_le_bytes(v))
}

/// Whether `value` is exactly what [`make`] gives for `key` at the version it
/// carries and its own length.
pub fn verify(key: &[u8], value: &[u8]) -> bool {
    let version = version_of(value).unwrap_or(0);
    make(key, version, value.len()) == value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verifies_own_values_and_catches_damage() {
        for len in [0, 1, 7, 15, 16, 17, 100, 1000, 4096] {
            let v = make(b"user1", 7, len);
            assert_eq!(v.len(), len);
            assert!(verify(b"user1", &v), "len {len}");
            if len > 0 {
                let mut bad = v.clone();
                bad[len - 1] ^= 1;
                assert!(!verify(b"user1", &bad), "len {len}");
                assert!(!verify(b"user2", &v) || len == 0, "len {len}");
            }
        }
        assert_ne!(make(b"k", 1, 100), make(b"k", 2, 100));
        assert_eq!(version_of(&make(b"k", 9, 100)), Some(9));
    }

    #[test]
    fn a_truncated_or_extended_value_fails() {
        for len in [16, 17, 24, 100, 4096, 4097, 12_288] {
            let v = make(b"crash000001", (3 << 32) | 77, len);
            // every prefix that still carries a version, and a few shorter ones
            for cut in (2..len).rev().take(600).chain([2, 8, 15, 16]) {
                assert!(
                    cut >= len || !verify(b"crash000001", &v[..cut]),
                    "{len} cut to {cut}"
                );
            }
            for extra in [1, 8, 4096] {
                let mut longer = v.clone();
                longer.extend(std::iter::repeat_n(0u8, extra));
                assert!(!verify(b"crash000001", &longer), "{len} + {extra}");
                // an extension by the bytes the longer value would have is refused too
                let next = make(b"crash000001", (3 << 32) | 77, len + extra);
                let mut spliced = v.clone();
                spliced.extend_from_slice(&next[len..]);
                assert!(!verify(b"crash000001", &spliced), "{len} spliced");
            }
        }
        // the same version at another length is another value from its second word on
        let (a, b) = (make(b"k", 5, 64), make(b"k", 5, 65));
        assert_eq!(a[..8], b[..8]);
        assert_ne!(a[8..16], b[8..16]);
        assert_ne!(a[16..64], b[16..64]);
    }
}
