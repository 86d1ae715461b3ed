//! Field encodings shared by documents.

use serde::{Deserialize, Deserializer, Serializer};

/// Reads a byte count that may be `null` (not known) as 0.
pub(crate) fn null_as_zero<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    Option::<u64>::deserialize(d).map(Option::unwrap_or_default)
}

/// Writes a byte count of 0 (not known) as `null`, as the driver always has.
pub(crate) fn zero_as_null<S: Serializer>(n: &u64, s: S) -> Result<S::Ok, S::Error> {
    if *n == 0 {
        s.serialize_none()
    } else {
        s.serialize_u64(*n)
    }
}
