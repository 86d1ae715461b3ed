//! Values generated from the key and a version, so a read can verify what it got
//! (`-p dataintegrity=true`) without the driver remembering what it wrote.
//!
//! Layout of a value of 16 bytes or more: the version (u64 LE), a 64-bit hash of the
//! key (u64 LE), then bytes of a xorshift stream seeded by both. A shorter value is
//! the first bytes of the stream for version 0.

fn key_hash(key: &[u8]) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for &b in key {
        h ^= b as u64;
        h = h.wrapping_mul(0x100_0000_01B3);
    }
    h
}

fn fill(out: &mut [u8], seed: u64) {
    let mut x = seed | 1;
    let mut chunks = out.chunks_exact_mut(8);
    for c in &mut chunks {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        c.copy_from_slice(&x.to_le_bytes());
    }
    let rest = chunks.into_remainder();
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    let n = rest.len();
    rest.copy_from_slice(&x.to_le_bytes()[..n]);
}

/// Writes into `out` the value of `key` at `version`, `len` bytes long.
pub fn make_into(key: &[u8], version: u64, len: usize, out: &mut Vec<u8>) {
    out.clear();
    out.resize(len, 0);
    let h = key_hash(key);
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
/// carries (and its own length).
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
}
