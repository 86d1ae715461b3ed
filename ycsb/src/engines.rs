//! The engines the driver can open, by `--engine` name.

use crate::error::{Error, Result};
use crate::props::Properties;
use kvapi::{Engine, Options};
use std::path::Path;
use std::sync::Arc;

/// Every engine name the testbed knows, built or not.
pub const ALL: &[&str] = &["kvell", "wal", "rocksdb", "sled", "wiredtiger", "null"];

/// Whether this build of the driver includes the engine.
pub fn is_built(name: &str) -> bool {
    matches!(name, "kvell" | "sled" | "null" | "wal")
        || (name == "rocksdb" && cfg!(feature = "rocksdb"))
        || (name == "wiredtiger" && wiredtiger_available())
}

/// Whether the WiredTiger engine is in this build with its library.
fn wiredtiger_available() -> bool {
    #[cfg(feature = "wiredtiger")]
    {
        wiredtiger_engine::AVAILABLE
    }
    #[cfg(not(feature = "wiredtiger"))]
    {
        false
    }
}

/// Why an engine is not in this build, in words for `ycsb engines`.
pub fn why_not_built(name: &str) -> Option<String> {
    if is_built(name) {
        return None;
    }
    Some(match name {
        "rocksdb" => {
            "built without the rocksdb feature (cargo build -p ycsb --features rocksdb)".into()
        }
        "wiredtiger" => {
            #[cfg(feature = "wiredtiger")]
            {
                wiredtiger_engine::unavailable_reason()
                    .unwrap_or("WiredTiger is not available")
                    .to_string()
            }
            #[cfg(not(feature = "wiredtiger"))]
            {
                "built without the wiredtiger feature".to_string()
            }
        }
        _ => "unknown".into(),
    })
}

/// The engines this build includes.
pub fn built() -> Vec<&'static str> {
    ALL.iter().copied().filter(|e| is_built(e)).collect()
}

/// The options the driver would give `name`: the `<name>.*` properties, with the
/// data directory defaulting to `<data_root>/<name>` and `<name>.memory` to the
/// memory budget when one is given (each engine derives its caches from it).
pub fn options(name: &str, props: &Properties, data_root: &Path, memory: Option<u64>) -> Options {
    let mut o = Options::from_properties(name, props);
    if name != "null" {
        o.set_default("dir", &data_root.join(name).display().to_string());
        if let Some(m) = memory {
            o.set_default("memory", &m.to_string());
        }
    }
    o
}

/// Opens an engine by name.
pub fn open(name: &str, opts: &Options) -> Result<Arc<dyn Engine>> {
    let r = match name {
        "null" => baselines::null::open_engine(opts),
        "sled" => baselines::sled_engine::open_engine(opts),
        "wal" => wal_engine::open_engine(opts),
        "kvell" => kvell::open_engine(opts),
        #[cfg(feature = "rocksdb")]
        "rocksdb" => rocksdb_engine::open_engine(opts),
        #[cfg(feature = "wiredtiger")]
        "wiredtiger" => wiredtiger_engine::open_engine(opts),
        other if ALL.contains(&other) => {
            return Err(Error::usage(format!(
                "engine '{other}' is not part of this build yet (built: {})",
                built().join(", ")
            )));
        }
        other => {
            return Err(Error::usage(format!(
                "unknown engine '{other}' (known: {})",
                built().join(", ")
            )));
        }
    };
    r.map_err(|e| Error::engine(name, e))
}
