//! The device roofline (`ycsb device`): what the disk under a data directory does with
//! O_DIRECT and io_uring, per access pattern and queue depth.

use crate::machine::Machine;
use crate::version::{SCHEMA_VERSION, version_1};
use serde::{Deserialize, Serialize};

/// One measured point of a probe.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ProbePoint {
    /// `randread`, `randwrite`, `mixed`, `seqread` or `seqwrite`.
    pub pattern: String,
    pub queue_depth: usize,
    pub block_bytes: usize,
    /// Fraction of reads among the I/Os (1 for randread, 0 for randwrite).
    pub read_fraction: f64,
    pub iops: f64,
    pub mib_per_s: f64,
    pub lat_mean_us: f64,
    pub lat_p50_us: f64,
    pub lat_p99_us: f64,
    pub seconds: f64,
    /// Rings (each driven by a thread of its own) the point's I/Os were spread over;
    /// absent in files written before the probe could use several (one ring).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jobs: Option<usize>,
    /// The probe process's CPU use while the point ran, in cores (CPU seconds of all
    /// its threads over the point's seconds); absent in older files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_cores: Option<f64>,
    /// The CPU load the process was held at while the point ran, in cores, its own
    /// rings included (`ycsb device --cpu-load`); absent when the probe ran alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_load: Option<f64>,
    /// Fraction of the slots' buffer bytes the kernel backed with 2 MiB pages while
    /// the point ran. A large read from 4 KiB pages is split by the block layer (a
    /// 1 MiB one is 256 segments, over a virtio disk's 254): sequential reads from
    /// huge pages measured 2.9-3.2 GB/s on the development VM against 1.5-2.2 from
    /// 4 KiB ones (2026-12-05). Absent in older files (buffers of 4 KiB pages from
    /// the heap) and where the kernel does not say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub huge_page_fraction: Option<f64>,
}

/// A `ycsb device` result (`"kind": "device"`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct DeviceProbe {
    /// The schema version ([`SCHEMA_VERSION`]); 1 where absent.
    #[serde(default = "version_1")]
    pub format: u32,
    /// Always [`DeviceProbe::KIND`].
    pub kind: String,
    pub command: Vec<String>,
    /// The testbed's git commit the binary was built from (`-dirty` when the tree had
    /// uncommitted changes); empty in files older than schema version 3.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub commit: String,
    pub started_unix_s: u64,
    pub machine: Machine,
    /// The probe file.
    pub file: String,
    pub file_bytes: u64,
    /// Sequential O_DIRECT write bandwidth while filling the file (1 MiB writes, QD 1).
    pub fill_mib_per_s: f64,
    /// Where reads land, when not in each I/O slot's own buffer as fio's do
    /// (`ycsb device --read-into` or `--copy-into`), or that every read was
    /// checksummed (`--check-reads`); empty otherwise and in older files.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub buffers: String,
    /// The pages of the I/O slots' buffers: `2 MiB` (transparent huge pages asked
    /// for; each point's `huge_page_fraction` says what the kernel gave) or `4 KiB`
    /// (`ycsb device --small-pages`, fio's default); empty in older files (4 KiB).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub slot_pages: String,
    pub points: Vec<ProbePoint>,
}

impl Default for DeviceProbe {
    fn default() -> DeviceProbe {
        DeviceProbe {
            format: SCHEMA_VERSION,
            kind: DeviceProbe::KIND.into(),
            command: Vec::new(),
            commit: String::new(),
            started_unix_s: 0,
            machine: Machine::default(),
            file: String::new(),
            file_bytes: 0,
            fill_mib_per_s: 0.0,
            buffers: String::new(),
            slot_pages: String::new(),
            points: Vec::new(),
        }
    }
}

impl DeviceProbe {
    /// The `kind` of a device result.
    pub const KIND: &'static str = "device";

    /// The best IOPS of a pattern over all queue depths, or at one depth.
    pub fn iops(&self, pattern: &str, qd: Option<usize>) -> Option<f64> {
        self.points
            .iter()
            .filter(|p| p.pattern == pattern && qd.is_none_or(|q| p.queue_depth == q))
            .map(|p| p.iops)
            .reduce(f64::max)
    }

    /// The device's IOPS for a mix with `read_fraction` reads: the harmonic
    /// combination of the best random read and write IOPS (each I/O takes its own
    /// share of device time). `mixed` points measured by the probe check this model.
    pub fn mix_iops(&self, read_fraction: f64) -> Option<f64> {
        let r = self.iops("randread", None)?;
        let w = self.iops("randwrite", None)?;
        Some(1.0 / (read_fraction / r + (1.0 - read_fraction) / w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(pattern: &str, qd: usize, iops: f64) -> ProbePoint {
        ProbePoint {
            pattern: pattern.into(),
            queue_depth: qd,
            block_bytes: 4096,
            iops,
            seconds: 1.0,
            ..ProbePoint::default()
        }
    }

    #[test]
    fn ceiling_model_is_harmonic() {
        let r = DeviceProbe {
            points: vec![
                pt("randread", 1, 10_000.0),
                pt("randread", 64, 150_000.0),
                pt("randwrite", 64, 50_000.0),
            ],
            ..DeviceProbe::default()
        };
        assert_eq!(r.iops("randread", None), Some(150_000.0));
        assert_eq!(r.iops("randread", Some(1)), Some(10_000.0));
        assert!((r.mix_iops(1.0).unwrap() - 150_000.0).abs() < 1e-6);
        assert!((r.mix_iops(0.0).unwrap() - 50_000.0).abs() < 1e-6);
        let half = r.mix_iops(0.5).unwrap();
        assert!((half - 75_000.0).abs() < 1e-6, "{half}");
    }
}
