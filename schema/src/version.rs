//! The schema version every document carries in its `format` field.

use crate::error::Error;

/// The version of the schema this crate writes and the newest it reads.
pub const SCHEMA_VERSION: u32 = 3;

/// The field that holds a document's version.
const FIELD: &str = "format";

/// The version of a file that has no `format` field.
pub(crate) fn version_1() -> u32 {
    1
}

/// Refuses a version this reader does not know (0, or newer than [`SCHEMA_VERSION`]).
pub fn check_version(found: u32) -> Result<(), Error> {
    if (1..=SCHEMA_VERSION).contains(&found) {
        Ok(())
    } else {
        Err(Error::UnknownVersion {
            newest: SCHEMA_VERSION,
            found: found.to_string(),
        })
    }
}

/// The version of a parsed document (1 without a `format` field); an error for a
/// version this reader does not know or a `format` that is not a version number.
pub fn version_of(doc: &serde_json::Value) -> Result<u32, Error> {
    let Some(v) = doc.get(FIELD) else {
        return Ok(version_1());
    };
    let n = v
        .as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| Error::UnknownVersion {
            newest: SCHEMA_VERSION,
            found: v.to_string(),
        })?;
    check_version(n)?;
    Ok(n)
}
