//! What an engine holds in memory, measured from outside it, and the memory control
//! group that bounds what it may hold.
//!
//! Three figures, each from where it is exact:
//! - the process's resident memory, now and at its peak (`VmRSS`, `VmHWM` of
//!   /proc/self/status; sysinfo reports the current figure but not the peak, and one
//!   read of that file gives both, with the anonymous and file-backed parts apart);
//! - the OS page cache held by the engine's own files: `mincore(2)` over a read-only
//!   mapping of every file under its data directory (a mapping that is never touched,
//!   so measuring faults nothing in);
//! - when the process runs in a memory cgroup, that cgroup's own charge (anonymous
//!   memory plus every page cache page it brought in), its peak and its OOM kills.
//!
//! The bound: a memory cgroup (v2 `memory.max`, v1 `memory.limit_in_bytes`) made for one
//! run, holding only the testbed's own process, removed after it. The kernel charges
//! the page cache a process brings in to its cgroup and reclaims it at the limit, which
//! is the only way to bound what an engine reading through the OS page cache (sled,
//! the WAL engine's data file) holds. Making one needs root (or a cgroup v2 subtree
//! delegated to the user, in which case the user starts the driver inside a limited
//! cgroup, e.g. `systemd-run --user --scope -p MemoryMax=...`, and the driver finds
//! and reports that enclosing limit).
#![expect(
    unsafe_code,
    reason = "mincore(2) needs a read-only mapping of each file it measures"
)]

use std::fs::File;
use std::io;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

const PAGE: u64 = 4096;

/// The process's resident memory, from /proc/self/status.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcMem {
    /// Resident now (`VmRSS`).
    pub rss: u64,
    /// The peak resident size since the process started or since [`reset_peak`]
    /// (`VmHWM`).
    pub peak_rss: u64,
    /// Anonymous resident memory (`RssAnon`): heap, stacks, anonymous mappings.
    pub rss_anon: u64,
    /// File-backed resident memory mapped by the process (`RssFile`).
    pub rss_file: u64,
}

/// Reads the process's resident memory.
pub fn proc_mem() -> io::Result<ProcMem> {
    parse_status(&std::fs::read_to_string("/proc/self/status")?)
}

fn parse_status(s: &str) -> io::Result<ProcMem> {
    let kib = |name: &str| -> Option<u64> {
        s.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| {
                rest.trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
            .map(|k| k * 1024)
    };
    match (kib("VmRSS:"), kib("VmHWM:")) {
        (Some(rss), Some(peak_rss)) => Ok(ProcMem {
            rss,
            peak_rss,
            rss_anon: kib("RssAnon:").unwrap_or(0),
            rss_file: kib("RssFile:").unwrap_or(0),
        }),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "/proc/self/status has no VmRSS/VmHWM lines",
        )),
    }
}

/// Resets the peak resident size (`VmHWM`) to the current one (Linux 4.0+), so a peak
/// measured later belongs to what follows.
pub fn reset_peak() -> io::Result<()> {
    std::fs::write("/proc/self/clear_refs", "5")
}

/// Every regular file under `dir` (recursively; symbolic links are not followed).
fn files_under(dir: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let t = e.file_type()?;
        if t.is_dir() {
            files_under(&e.path(), out)?;
        } else if t.is_file() {
            out.push(e.path());
        }
    }
    Ok(())
}

/// `cachestat(2)`'s number: one for every architecture (the unified numbering from
/// 424 on), not in the libc crate for every target yet.
const SYS_CACHESTAT: libc::c_long = 451;

/// `struct cachestat_range` of `cachestat(2)`: `len` 0 is to the end of the file.
#[repr(C)]
struct CachestatRange {
    off: u64,
    len: u64,
}

/// `struct cachestat` of `cachestat(2)`, in pages.
#[repr(C)]
#[derive(Default)]
struct Cachestat {
    nr_cache: u64,
    nr_dirty: u64,
    nr_writeback: u64,
    nr_evicted: u64,
    nr_recently_evicted: u64,
}

/// Pages of `file` in the page cache by `cachestat(2)` (Linux 6.5 on): no mapping, so
/// nothing of the process's address space is locked while it counts. `None` where the
/// kernel does not have it.
fn cachestat_pages(file: &File) -> Option<io::Result<u64>> {
    let range = CachestatRange { off: 0, len: 0 };
    let mut st = Cachestat::default();
    // SAFETY: both structs are `repr(C)` as the kernel defines them and live across the
    // call; the kernel reads `range` and writes `st` only.
    let r = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            file.as_raw_fd(),
            &range as *const CachestatRange,
            &mut st as *mut Cachestat,
            0u32,
        )
    };
    if r == 0 {
        return Some(Ok(st.nr_cache));
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::ENOSYS | libc::EPERM) => None,
        _ => Some(Err(e)),
    }
}

/// Bytes of `file` held in the OS page cache now: `cachestat(2)` where the kernel has
/// it, else `mincore(2)` over a mapping of the file. The mapping takes the process's
/// mmap lock for writing, and mincore over an untouched mapping looks every page up
/// in the file's cache while holding it for reading: on a 4 GiB data set, once a
/// second from the sampler, that stalled the engine's threads that needed the lock
/// (results/kvell-4m/measurements.md, "Where YCSB A's tail comes from").
fn resident_bytes(file: &File) -> io::Result<u64> {
    match cachestat_pages(file) {
        Some(r) => r.map(|pages| pages * PAGE),
        None => mincore_bytes(file),
    }
}

/// Bytes of `file` in the page cache by `mincore(2)` over a read-only mapping of it.
fn mincore_bytes(file: &File) -> io::Result<u64> {
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(0);
    }
    let pages = len.div_ceil(PAGE) as usize;
    // SAFETY: a read-only shared mapping of an open file, never dereferenced; the
    // kernel only reports which of its pages are in the page cache. It is unmapped
    // before returning.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len as usize,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let mut vec = vec![0u8; pages];
    // SAFETY: `addr` maps `len` bytes (rounded up to `pages` pages), and `vec` holds
    // one byte per page, as mincore requires.
    let r = unsafe { libc::mincore(addr, len as usize, vec.as_mut_ptr()) };
    let err = (r != 0).then(io::Error::last_os_error);
    // SAFETY: unmaps exactly the mapping made above.
    unsafe { libc::munmap(addr, len as usize) };
    if let Some(e) = err {
        return Err(e);
    }
    Ok(vec.iter().filter(|&&b| b & 1 == 1).count() as u64 * PAGE)
}

/// Bytes of the files under `dir` held in the OS page cache now. Files that vanish
/// or cannot be opened while it looks (an engine renaming or deleting a file) count
/// as holding nothing.
pub fn page_cache_of(dir: &Path) -> io::Result<u64> {
    let mut files = Vec::new();
    files_under(dir, &mut files)?;
    Ok(files
        .iter()
        .filter_map(|p| File::open(p).ok())
        .filter_map(|f| resident_bytes(&f).ok())
        .sum())
}

/// Drops the clean pages of the files under `dir` from the OS page cache (each file is
/// synced first, so none stays dirty and cached), touching no other file. Returns the
/// bytes that were cached before. Used before a run so that every engine starts with
/// nothing of its files cached by an earlier process, whatever cgroup that was in.
pub fn evict_page_cache(dir: &Path) -> io::Result<u64> {
    let mut files = Vec::new();
    files_under(dir, &mut files)?;
    let mut before = 0;
    for p in files {
        let Ok(f) = File::open(&p) else { continue };
        before += resident_bytes(&f).unwrap_or(0);
        f.sync_data()
            .map_err(|e| io::Error::new(e.kind(), format!("syncing {}: {e}", p.display())))?;
        // SAFETY: a plain advice call on an open descriptor; no memory is involved.
        let r = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if r != 0 {
            return Err(io::Error::from_raw_os_error(r));
        }
    }
    Ok(before)
}

/// The cgroup hierarchy that holds the memory controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CgroupVersion {
    V1,
    V2,
}

/// A memory cgroup: one the driver made for a run (removed by [`Cgroup::remove`]), or
/// the one it was started in.
#[derive(Clone, Debug)]
pub struct Cgroup {
    pub path: PathBuf,
    pub version: CgroupVersion,
}

/// Where the memory controller is mounted, from /proc/mounts: (mount point, version).
fn memory_mount() -> Option<(PathBuf, CgroupVersion)> {
    let mounts = std::fs::read_to_string("/proc/mounts").ok()?;
    let mut v2 = None;
    for l in mounts.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() < 4 {
            continue;
        }
        match f[2] {
            "cgroup" if f[3].split(',').any(|o| o == "memory") => {
                return Some((PathBuf::from(f[1]), CgroupVersion::V1));
            }
            "cgroup2" => v2 = Some(PathBuf::from(f[1])),
            _ => {}
        }
    }
    let root = v2?;
    let controllers = std::fs::read_to_string(root.join("cgroup.controllers")).ok()?;
    controllers
        .split_whitespace()
        .any(|c| c == "memory")
        .then_some((root, CgroupVersion::V2))
}

/// The path of this process's cgroup in the hierarchy mounted at `mount`.
fn own_cgroup(version: CgroupVersion) -> Option<PathBuf> {
    let s = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    s.lines().find_map(|l| {
        let mut it = l.splitn(3, ':');
        let (_, ctrl, path) = (it.next()?, it.next()?, it.next()?);
        let ours = match version {
            CgroupVersion::V2 => ctrl.is_empty(),
            CgroupVersion::V1 => ctrl.split(',').any(|c| c == "memory"),
        };
        ours.then(|| PathBuf::from(path.trim_start_matches('/')))
    })
}

fn read_u64(p: &Path) -> Option<u64> {
    std::fs::read_to_string(p).ok()?.trim().parse().ok()
}

/// Why no memory cgroup could be made, in words that name what is missing.
pub fn why_no_cgroup(e: &io::Error, version: Option<CgroupVersion>) -> String {
    match (e.kind(), version) {
        (_, None) => "no memory cgroup controller is mounted (neither cgroup v2 with the memory controller nor cgroup v1's memory hierarchy in /proc/mounts)".into(),
        (io::ErrorKind::PermissionDenied, Some(CgroupVersion::V1)) => {
            "making a memory cgroup (cgroup v1) needs root".into()
        }
        (io::ErrorKind::PermissionDenied, Some(CgroupVersion::V2)) => "making a memory cgroup needs root, or start the driver inside a limited cgroup v2 yourself (e.g. `systemd-run --user --scope -p MemoryMax=SIZE ycsb ...`)".into(),
        _ => format!("making a memory cgroup failed: {e}"),
    }
}

impl Cgroup {
    /// Makes a memory cgroup named `kvtb-<pid>-<label>` at the top of the memory
    /// hierarchy, with no limit yet. Stale cgroups of earlier runs whose process is
    /// gone and that hold no process are removed first.
    pub fn create(label: &str) -> Result<Cgroup, String> {
        let Some((root, version)) = memory_mount() else {
            return Err(why_no_cgroup(&io::Error::other("none"), None));
        };
        remove_stale(&root);
        let path = root.join(format!("kvtb-{}-{label}", std::process::id()));
        match std::fs::create_dir(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(why_no_cgroup(&e, Some(version))),
        }
        Ok(Cgroup { path, version })
    }

    /// The memory cgroup this process runs in, if it has a limit (e.g. the user
    /// started the driver under `systemd-run -p MemoryMax=...`).
    pub fn enclosing() -> Option<(Cgroup, u64)> {
        let (root, version) = memory_mount()?;
        let rel = own_cgroup(version)?;
        if rel.as_os_str().is_empty() {
            return None;
        }
        let path = root.join(rel);
        let cg = Cgroup { path, version };
        cg.limit().map(|l| (cg, l))
    }

    fn file(&self, v1: &str, v2: &str) -> PathBuf {
        self.path.join(match self.version {
            CgroupVersion::V1 => v1,
            CgroupVersion::V2 => v2,
        })
    }

    /// Moves the process `pid` (all its threads) into this cgroup.
    pub fn add(&self, pid: u32) -> io::Result<()> {
        std::fs::write(self.path.join("cgroup.procs"), pid.to_string())
    }

    /// Sets the limit on what the cgroup's processes may hold (anonymous memory and
    /// page cache together).
    pub fn set_limit(&self, bytes: u64) -> io::Result<()> {
        std::fs::write(
            self.file("memory.limit_in_bytes", "memory.max"),
            bytes.to_string(),
        )
    }

    /// The limit, if one is set.
    pub fn limit(&self) -> Option<u64> {
        // v1 writes "no limit" as a huge number, v2 as "max"
        read_u64(&self.file("memory.limit_in_bytes", "memory.max")).filter(|&l| l < (1 << 60))
    }

    /// What the cgroup is charged now.
    pub fn usage(&self) -> Option<u64> {
        read_u64(&self.file("memory.usage_in_bytes", "memory.current"))
    }

    /// The most it was charged (v2 needs Linux 5.19 for `memory.peak`).
    pub fn peak(&self) -> Option<u64> {
        read_u64(&self.file("memory.max_usage_in_bytes", "memory.peak"))
    }

    /// (anonymous, page cache) bytes charged now, from memory.stat.
    pub fn split(&self) -> Option<(u64, u64)> {
        let s = std::fs::read_to_string(self.path.join("memory.stat")).ok()?;
        let get = |k: &str| {
            s.lines().find_map(|l| {
                let (name, v) = l.split_once(' ')?;
                (name == k).then(|| v.trim().parse::<u64>().ok()).flatten()
            })
        };
        match self.version {
            CgroupVersion::V1 => Some((get("rss")?, get("cache")?)),
            CgroupVersion::V2 => Some((get("anon")?, get("file")?)),
        }
    }

    /// How many times the kernel killed a process of this cgroup at its limit.
    pub fn oom_kills(&self) -> u64 {
        let f = self.file("memory.oom_control", "memory.events");
        std::fs::read_to_string(f)
            .ok()
            .and_then(|s| {
                s.lines().find_map(|l| {
                    l.strip_prefix("oom_kill ")
                        .and_then(|v| v.trim().parse().ok())
                })
            })
            .unwrap_or(0)
    }

    /// Removes the cgroup: any process still in it goes back to the parent first.
    pub fn remove(self) -> io::Result<()> {
        let parent = self.path.parent().map(Path::to_path_buf);
        if let (Some(parent), Ok(procs)) = (
            parent,
            std::fs::read_to_string(self.path.join("cgroup.procs")),
        ) {
            for pid in procs.lines() {
                let _ = std::fs::write(parent.join("cgroup.procs"), pid);
            }
        }
        // a cgroup is removed once its last process is gone; a process that just
        // exited may still be listed for a moment
        let mut last = Ok(());
        for _ in 0..50 {
            last = std::fs::remove_dir(&self.path);
            if last.is_ok() {
                return Ok(());
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        last
    }
}

/// Removes `kvtb-<pid>-*` cgroups left by runs whose process is gone.
fn remove_stale(root: &Path) {
    let Ok(rd) = std::fs::read_dir(root) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("kvtb-")
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let alive = Path::new(&format!("/proc/{pid}")).exists();
        let empty = std::fs::read_to_string(e.path().join("cgroup.procs"))
            .map(|s| s.trim().is_empty())
            .unwrap_or(false);
        if !alive && empty {
            let _ = std::fs::remove_dir(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines_parse() {
        let s = "Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\nRssAnon:\t 512 kB\nRssFile:\t 256 kB\n";
        let m = parse_status(s).unwrap();
        assert_eq!(
            m,
            ProcMem {
                rss: 1 << 20,
                peak_rss: 2 << 20,
                rss_anon: 512 << 10,
                rss_file: 256 << 10
            }
        );
        assert!(parse_status("Name: x\n").is_err());
    }

    /// Allocates and touches 256 MiB and prints how much resident memory grew. Run in
    /// a child process of its own (other tests of this binary allocate concurrently).
    #[test]
    #[ignore = "run by a_known_allocation_is_measured_within_ten_percent in a child"]
    fn allocation_child() {
        const N: usize = 256 << 20;
        let before = proc_mem().unwrap();
        let mut v = vec![0u8; N];
        for i in (0..N).step_by(4096) {
            v[i] = (i / 4096) as u8;
        }
        let after = proc_mem().unwrap();
        std::hint::black_box(&v);
        assert!(after.peak_rss >= after.rss);
        println!("GREW {}", after.rss.saturating_sub(before.rss));
    }

    #[test]
    fn a_known_allocation_is_measured_within_ten_percent() {
        const N: f64 = (256u64 << 20) as f64;
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "memory::tests::allocation_child",
                "--ignored",
                "--nocapture",
            ])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let grew: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix("GREW "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("the child printed no figure: {text}"));
        assert!(
            (grew - N).abs() <= 0.1 * N,
            "allocated {N} bytes, resident memory grew by {grew}"
        );
    }

    #[test]
    fn the_page_cache_of_a_directory_is_measured_and_evicted() {
        let d = kvtestkit::TempDir::new("memory-pagecache");
        std::fs::create_dir_all(d.path().join("sub")).unwrap();
        const N: usize = 32 << 20;
        std::fs::write(d.path().join("sub").join("f"), vec![7u8; N]).unwrap();
        let cached = page_cache_of(d.path()).unwrap();
        // freshly written through the page cache: (nearly) all of it is cached
        assert!(
            cached as f64 >= 0.9 * N as f64 && cached <= N as u64,
            "{cached} of {N} bytes cached"
        );
        let before = evict_page_cache(d.path()).unwrap();
        assert_eq!(before, cached);
        let after = page_cache_of(d.path()).unwrap();
        assert!(
            after <= N as u64 / 20,
            "{after} bytes still cached after eviction"
        );
    }

    #[test]
    fn cachestat_and_mincore_count_the_same_pages() {
        use std::io::Read;
        let d = kvtestkit::TempDir::new("memory-cachestat");
        std::fs::create_dir_all(d.path()).unwrap();
        const N: usize = 32 << 20;
        let path = d.path().join("f");
        std::fs::write(&path, vec![7u8; N]).unwrap();
        evict_page_cache(d.path()).unwrap();
        // a part of the file read back through the page cache, the rest not cached
        let mut f = File::open(&path).unwrap();
        // no readahead: pages still being read count in cachestat(2), not in mincore(2)
        // SAFETY: advice on an open descriptor; no memory is passed.
        assert_eq!(
            unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM) },
            0
        );
        let mut part = vec![0u8; 8 << 20];
        f.read_exact(&mut part).unwrap();
        let by_mincore = mincore_bytes(&f).unwrap();
        assert!(
            by_mincore >= 8 << 20 && by_mincore < N as u64,
            "{by_mincore} of {N} bytes cached"
        );
        match cachestat_pages(&f) {
            Some(pages) => assert_eq!(pages.unwrap() * PAGE, by_mincore),
            None => eprintln!("no cachestat(2) on this kernel: mincore alone measured"),
        }
    }

    #[test]
    fn a_memory_cgroup_bounds_the_page_cache_of_its_process() {
        let cg = match Cgroup::create("test") {
            Ok(cg) => cg,
            Err(why) => {
                // the tests run as root in CI; a user run without root says why
                eprintln!("SKIPPED a_memory_cgroup_bounds_the_page_cache_of_its_process: {why}");
                return;
            }
        };
        let d = kvtestkit::TempDir::new("memory-cgroup");
        std::fs::create_dir_all(d.path()).unwrap();
        let f = d.path().join("big");
        std::fs::write(&f, vec![1u8; 128 << 20]).unwrap();
        evict_page_cache(d.path()).unwrap();
        const LIMIT: u64 = 32 << 20;
        cg.set_limit(LIMIT).unwrap();
        assert_eq!(cg.limit(), Some(LIMIT));
        let procs = cg.path.join("cgroup.procs");
        let st = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "echo $$ > '{}' && cat '{}' > /dev/null",
                procs.display(),
                f.display()
            ))
            .status()
            .unwrap();
        assert!(st.success());
        let peak = cg.peak().unwrap();
        let cached = page_cache_of(d.path()).unwrap();
        assert!(peak <= LIMIT, "peak {peak} over the limit {LIMIT}");
        assert!(
            cached <= LIMIT,
            "{cached} bytes of the file cached, over the limit {LIMIT}"
        );
        assert!(cg.oom_kills() == 0);
        let path = cg.path.clone();
        cg.remove().unwrap();
        assert!(!path.exists());
    }
}
