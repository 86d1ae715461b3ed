//! Records: what the driver stores under a key, so a read can verify what it got
//! (`-p dataintegrity=true`) without the driver remembering what it wrote, and an
//! update can write one field as YCSB does (`writeallfields=false`).
//!
//! A record is one value of `len` bytes holding `fields` slots, YCSB's fields: slot i
//! spans `[i * (len / fields), (i + 1) * (len / fields))`, the last one taking what
//! remains. Each slot verifies on its own: a slot of 16 bytes or more holds its version
//! (u64 LE), a hash of the key and the slot's index (u64 LE), then xorshift streams
//! seeded by the hash, the version and the slot's length; a shorter slot is the
//! stream of version 0. Because the length is part of the seed, a truncated or
//! extended slot does not verify, and because each slot carries its own version, a
//! record whose fields were updated one at a time still verifies.

/// FNV-1a of the key and the slot index.
fn slot_hash(key: &[u8], slot: usize) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for &b in key.iter().chain((slot as u32).to_le_bytes().iter()) {
        h ^= b as u64;
        h = h.wrapping_mul(0x100_0000_01B3);
    }
    h
}

use crate::value::fill;

fn seed(h: u64, version: u64, len: usize) -> u64 {
    h ^ version.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (len as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
}

/// Writes slot `i` of a record at `version` into `out` (the slot's bytes).
fn write_slot(key: &[u8], i: usize, version: u64, out: &mut [u8]) {
    let h = slot_hash(key, i);
    let len = out.len();
    if len >= 16 {
        out[..8].copy_from_slice(&version.to_le_bytes());
        out[8..16].copy_from_slice(&h.to_le_bytes());
        fill(&mut out[16..], seed(h, version, len));
    } else {
        fill(out, seed(h, 0, len));
    }
}

/// Whether slot `i` holds what [`write_slot`] writes at the version it carries.
fn slot_ok(key: &[u8], i: usize, slot: &[u8]) -> bool {
    let version = if slot.len() >= 16 {
        let mut v = [0u8; 8];
        v.copy_from_slice(&slot[..8]);
        u64::from_le_bytes(v)
    } else {
        0
    };
    let mut want = vec![0u8; slot.len()];
    write_slot(key, i, version, &mut want);
    want == slot
}

/// The byte range of slot `i` of `fields` in a record of `len` bytes.
fn bounds(len: usize, fields: usize, i: usize) -> (usize, usize) {
    let fields = fields.max(1);
    let base = len / fields;
    let start = i * base;
    let end = if i + 1 == fields { len } else { start + base };
    (start, end)
}

/// Writes into `out` the record of `key` at `version`: `len` bytes, `fields` slots,
/// every slot at that version.
pub fn make_into(key: &[u8], version: u64, len: usize, fields: usize, out: &mut Vec<u8>) {
    out.clear();
    out.resize(len, 0);
    let fields = fields.max(1);
    for i in 0..fields {
        let (s, e) = bounds(len, fields, i);
        write_slot(key, i, version, &mut out[s..e]);
    }
}

/// The record of `key` at `version`.
pub fn make(key: &[u8], version: u64, len: usize, fields: usize) -> Vec<u8> {
    let mut v = Vec::new();
    make_into(key, version, len, fields, &mut v);
    v
}

/// Writes into `out` the record `old` with slot `field` rewritten at `version`: what
/// an update of one field stores (YCSB's `writeallfields=false`, done as YCSB's
/// key-value bindings do it: read the record, replace the field, write it back).
pub fn update_field_into(
    key: &[u8],
    old: &[u8],
    field: usize,
    version: u64,
    fields: usize,
    out: &mut Vec<u8>,
) {
    out.clear();
    out.extend_from_slice(old);
    let fields = fields.max(1);
    let field = field.min(fields - 1);
    let (s, e) = bounds(old.len(), fields, field);
    write_slot(key, field, version, &mut out[s..e]);
}

/// Whether `v` is a record of `key` with `fields` slots, each slot exactly as written
/// at the version it carries and of its own length.
pub fn verify(key: &[u8], v: &[u8], fields: usize) -> bool {
    let fields = fields.max(1);
    (0..fields).all(|i| {
        let (s, e) = bounds(v.len(), fields, i);
        slot_ok(key, i, &v[s..e])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_verify_and_damage_is_caught() {
        for (len, fields) in [
            (0, 1),
            (1, 1),
            (15, 1),
            (16, 1),
            (100, 1),
            (1000, 10),
            (1003, 10),
            (40, 10),
        ] {
            let r = make(b"user1", 7, len, fields);
            assert_eq!(r.len(), len);
            assert!(verify(b"user1", &r, fields), "len {len} fields {fields}");
            if len > 0 {
                let mut bad = r.clone();
                bad[len - 1] ^= 1;
                assert!(!verify(b"user1", &bad, fields), "len {len}");
                assert!(!verify(b"user2", &r, fields), "len {len}");
            }
        }
        assert_ne!(make(b"k", 1, 100, 1), make(b"k", 2, 100, 1));
    }

    #[test]
    fn a_truncated_or_extended_record_does_not_verify() {
        let r = make(b"k", 3, 1000, 1);
        assert!(!verify(b"k", &r[..999], 1));
        assert!(!verify(b"k", &r[..500], 1));
        let mut longer = r.clone();
        longer.extend_from_slice(&[0; 8]);
        assert!(!verify(b"k", &longer, 1));
        let ten = make(b"k", 3, 1000, 10);
        assert!(!verify(b"k", &ten[..990], 10));
    }

    #[test]
    fn one_field_updated_the_rest_kept() {
        let old = make(b"user9", 1, 1000, 10);
        let mut new = Vec::new();
        update_field_into(b"user9", &old, 3, 2, 10, &mut new);
        assert_eq!(new.len(), 1000);
        assert!(verify(b"user9", &new, 10));
        assert_eq!(new[..300], old[..300]);
        assert_ne!(new[300..400], old[300..400]);
        assert_eq!(new[400..], old[400..]);
        // the field carries its own version
        assert_eq!(u64::from_le_bytes(new[300..308].try_into().unwrap()), 2);
    }
}
