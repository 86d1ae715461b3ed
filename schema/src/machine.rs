//! The machine a result came from: every document carries one.

use serde::{Deserialize, Serialize};

/// A description of the machine (CPU, memory, kernel, the disk under the data).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Machine {
    pub hostname: String,
    pub cpu_model: String,
    pub cores: usize,
    pub memory_bytes: Option<u64>,
    pub kernel: String,
    pub os: String,
    /// The block device holding the data directory, where it can be found.
    pub disk: Option<Disk>,
}

/// The block device under a data directory.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Disk {
    /// Kernel name of the whole device (e.g. `vda`, `nvme0n1`).
    pub device: String,
    pub model: Option<String>,
    pub rotational: Option<bool>,
    pub size_bytes: Option<u64>,
    pub logical_block_size: Option<u64>,
    pub physical_block_size: Option<u64>,
    pub filesystem: Option<String>,
}
