//! `ycsb machine`: this machine's description as JSON, the object every result
//! carries.

use std::path::Path;
use ycsb::{Error, Result, machine};

pub(super) fn machine(data: &Path) -> Result<()> {
    let j = serde_json::to_string_pretty(&machine::describe(Some(data))).map_err(|source| {
        Error::Json {
            what: "serialising the machine".into(),
            source,
        }
    })?;
    println!("{j}");
    Ok(())
}
