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
    // Recorded since 2026-12-07, left out where unknown, so that files written before
    // read and write back unchanged.
    /// The kernel's I/O scheduler for the device (`mq-deadline`, `none`, ...): the
    /// default differs between single-queue devices (virtio-blk) and NVMe.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<String>,
    /// The device's hardware queues, and the I/Os the first of them takes at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hw_queues: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_tags: Option<u64>,
    /// `write back` (a volatile cache: a completed write survives a process crash,
    /// not a power loss, until flushed) or `write through`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_cache: Option<String>,
}
