//! The I/O method comparison (`ycsb iomethods`, the paper's Table 3).

use crate::codec::{null_as_zero, zero_as_null};
use crate::machine::Machine;
use crate::version::{SCHEMA_VERSION, version_1};
use serde::{Deserialize, Serialize};

/// One measured method.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct IoPoint {
    /// `mmap`, `pread` (synchronous O_DIRECT pread/pwrite) or `io_uring` (O_DIRECT).
    pub method: String,
    /// `randread` or `randwrite`.
    pub op: String,
    pub threads: usize,
    pub queue_depth: usize,
    pub iops: f64,
    pub mib_per_s: f64,
    pub lat_mean_us: f64,
    pub lat_p99_us: f64,
    /// CPU time of this process (user + system) per I/O. Write-back of dirty mapped
    /// pages by the kernel's flusher threads is not in it.
    pub cpu_us_per_io: f64,
    /// Major page faults per access (mmap only): 1 means every access read the disk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub major_faults_per_io: Option<f64>,
    pub seconds: f64,
}

/// An I/O methods result (`"kind": "iomethods"`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct IoMethods {
    /// The schema version ([`SCHEMA_VERSION`]); 1 where absent.
    #[serde(default = "version_1")]
    pub format: u32,
    /// Always [`IoMethods::KIND`].
    pub kind: String,
    pub command: Vec<String>,
    /// The testbed's git commit the binary was built from (`-dirty` when the tree had
    /// uncommitted changes); empty in files older than schema version 3.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub commit: String,
    pub started_unix_s: u64,
    pub machine: Machine,
    pub file: String,
    pub file_bytes: u64,
    /// The machine's memory; 0 where the driver could not read it (written as `null`).
    #[serde(deserialize_with = "null_as_zero", serialize_with = "zero_as_null")]
    pub memory_bytes: u64,
    pub block_bytes: u64,
    pub points: Vec<IoPoint>,
    /// How the file was kept out of memory, and the time per point.
    pub notes: Vec<String>,
}

impl Default for IoMethods {
    fn default() -> IoMethods {
        IoMethods {
            format: SCHEMA_VERSION,
            kind: IoMethods::KIND.into(),
            command: Vec::new(),
            commit: String::new(),
            started_unix_s: 0,
            machine: Machine::default(),
            file: String::new(),
            file_bytes: 0,
            memory_bytes: 0,
            block_bytes: 0,
            points: Vec::new(),
            notes: Vec::new(),
        }
    }
}

impl IoMethods {
    /// The `kind` of an I/O methods result.
    pub const KIND: &'static str = "iomethods";
}
