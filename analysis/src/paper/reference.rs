//! The paper's numbers, read off the KVell paper (SOSP 2019: Optane 905P, 4 cores, YCSB
//! 1 KiB items, cache a third of the data). The only numbers in the analysis that do
//! not come from result files. `docs/paper-numbers.md` is their source: each with the
//! figure, table or text of the paper it comes from; `tests/paper_numbers.rs` keeps
//! the two in agreement.

/// Where the paper's numbers come from, as cited in the generated report.
pub const SOURCE: &str = "KVell paper (SOSP 2019), each with the figure, table or text it comes \
                          from in docs/paper-numbers.md";

/// The paper's machine.
pub const MACHINE: &str = "Intel Optane 905P, 4 cores; YCSB 1 KiB items, cache = 1/3 of the data";
pub const CORES: usize = 4;
/// The cache as a fraction of the data set.
pub const CACHE_FRACTION: f64 = 1.0 / 3.0;

/// The paper's five systems, in its order: two LSM trees, two B+ trees, KVell.
/// PebblesDB and TokuMX are not obtainable here: their numbers are the paper's only.
pub const SYSTEMS: [&str; 5] = ["RocksDB", "PebblesDB", "TokuMX", "WiredTiger", "KVell"];

/// YCSB throughput (thousand operations per second) of the paper's five systems on
/// one workload and key distribution, Figs. 5 (uniform) and 8 (zipfian).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct YcsbKops {
    pub workload: char,
    pub dist: &'static str,
    pub rocksdb: f64,
    pub pebblesdb: f64,
    pub tokumx: f64,
    pub wiredtiger: f64,
    pub kvell: f64,
}

impl YcsbKops {
    /// The numbers in the order of [`SYSTEMS`].
    pub fn all(&self) -> [f64; 5] {
        [
            self.rocksdb,
            self.pebblesdb,
            self.tokumx,
            self.wiredtiger,
            self.kvell,
        ]
    }

    /// The number of an engine that runs here (`rocksdb`, `wiredtiger`, `kvell`).
    pub fn of(&self, engine: &str) -> Option<f64> {
        match engine {
            "rocksdb" => Some(self.rocksdb),
            "wiredtiger" => Some(self.wiredtiger),
            "kvell" => Some(self.kvell),
            _ => None,
        }
    }
}

const fn kops(
    workload: char,
    dist: &'static str,
    [rocksdb, pebblesdb, tokumx, wiredtiger, kvell]: [f64; 5],
) -> YcsbKops {
    YcsbKops {
        workload,
        dist,
        rocksdb,
        pebblesdb,
        tokumx,
        wiredtiger,
        kvell,
    }
}

/// Figs. 5 and 8 (YCSB D and F have no bars of their own in the paper).
pub const YCSB_KOPS: [YcsbKops; 8] = [
    kops('a', "uniform", [52.0, 72.0, 33.0, 52.0, 419.0]),
    kops('a', "zipfian", [239.0, 170.0, 53.0, 23.0, 867.0]),
    kops('b', "uniform", [221.0, 211.0, 33.0, 270.0, 597.0]),
    kops('b', "zipfian", [402.0, 565.0, 53.0, 332.0, 1611.0]),
    kops('c', "uniform", [280.0, 260.0, 33.0, 231.0, 716.0]),
    kops('c', "zipfian", [751.0, 797.0, 53.0, 937.0, 1843.0]),
    kops('e', "uniform", [14.5, 2.7, 4.0, 10.2, 13.9]),
    kops('e', "zipfian", [20.2, 30.5, 15.1, 20.4, 40.5]),
];

/// YCSB A: KVell's 420K ops/s is 98% of a 428K ceiling (500K IOPS / 1.17 I/Os per
/// request).
pub const A_KVELL_KOPS: f64 = 420.0;
pub const A_CEILING_KOPS: f64 = 428.0;
pub const A_CEILING_FRACTION: f64 = 0.98;
pub const A_DEVICE_KIOPS: f64 = 500.0;
pub const A_IOS_PER_REQUEST: f64 = 1.17;

/// Table 5, YCSB A: p99 and maximum latency, milliseconds.
pub const A_P99_MS_KVELL: f64 = 2.4;
pub const A_P99_MS_ROCKSDB: f64 = 5.4;
pub const A_MAX_MS_KVELL: f64 = 3.9;
pub const A_MAX_MS_ROCKSDB: f64 = 9600.0;
pub const A_P99_MS_WIREDTIGER: f64 = 4.7;
pub const A_MAX_MS_WIREDTIGER: f64 = 3000.0;
/// PebblesDB's maximum (its p99 is not given); the paper's only.
pub const A_MAX_MS_PEBBLESDB: f64 = 9400.0;

/// KVell's batch size against average latency: (batch, µs); batch 32 runs at 88% of
/// the device's bandwidth.
pub const BATCH_LATENCY_US: [(u64, f64); 2] = [(32, 76.0), (64, 158.0)];
pub const BATCH32_BANDWIDTH_FRACTION: f64 = 0.88;

/// Recovery of 100 GB on 8 NVMe drives, seconds.
pub const RECOVERY_S_KVELL: f64 = 6.6;
pub const RECOVERY_S_ROCKSDB: f64 = 18.0;
pub const RECOVERY_S_WIREDTIGER: f64 = 24.0;
pub const RECOVERY_GB: f64 = 100.0;

/// Table 1/2 (Optane): random 4 KiB IOPS (thousands) for read, write, mixed.
pub const DEVICE_KIOPS: [(&str, f64); 3] =
    [("randread", 575.0), ("randwrite", 550.0), ("mixed", 560.0)];
/// Random-write latency (µs) by queue depth.
pub const RANDWRITE_LAT_US: [(usize, f64); 3] = [(1, 11.0), (64, 137.0), (256, 550.0)];

/// Table 3, 4 KiB random writes, data set 3x RAM: (method, threads, queue depth,
/// thousand IOPS). Direct I/O is `pread`/`pwrite` here, AIO is `io_uring`.
pub const IO_METHODS_KIOPS: [(&str, usize, usize, f64); 5] = [
    ("mmap", 1, 1, 10.0),
    ("mmap", 8, 1, 60.0),
    ("pread", 1, 1, 88.0),
    ("io_uring", 1, 1, 91.0),
    ("io_uring", 1, 64, 376.0),
];

/// Item-size sweep on YCSB E (AWS): KVell about flat, RocksDB falling.
pub const ITEMSIZE_KVELL_KSCANS: f64 = 67.0;
pub const ITEMSIZE_ROCKSDB_KSCANS: [(u64, f64); 2] = [(64, 136.0), (2048, 52.0)];
