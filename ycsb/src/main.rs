// mimalloc as the global allocator of the `ycsb` binary: every engine runs in this
// process, and per request the driver and the Rust engines allocate keys, values,
// completions and replies; glibc malloc took about 7% of all CPU time on a 2-core
// machine running KVell (perf, YCSB C). It applies to every engine alike; RocksDB's
// C++ code allocates with its own operator new (glibc), as in its default build.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod cli;

/// A command whose output goes to a pipe that closes early (`ycsb trace ... | head`)
/// ends quietly, as a C program does: the default action of SIGPIPE, which Rust's
/// runtime sets to ignore (every later write would then fail and print an error).
#[expect(
    unsafe_code,
    reason = "signal(2) with SIG_DFL: no handler runs, nothing is shared"
)]
fn quiet_broken_pipe() {
    // SAFETY: restores the default disposition of one signal at start-up, before any
    // thread exists; no Rust code runs as a handler.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// glibc's malloc, which RocksDB's and WiredTiger's C and C++ code allocate with, makes
/// up to 8 arenas per core, one per thread that contends: at 64 requests in flight
/// through the thread pool RocksDB's 64 threads spread its blocks over 15 arenas of a
/// 2-core machine, which kept about 130 MiB resident for a block cache of 80 MiB, and
/// freed holes were reused by no other arena (YCSB A, 500K x 1 KiB, a budget of
/// 162.8 MiB). Two arenas per core (the setting `MALLOC_ARENA_MAX` gives, which wins
/// when set): the same run with 4 held the budget with a larger cache and ran faster
/// (results/memory-budget/measurements.md, "C and C++ allocators"). It applies to
/// every engine alike; the Rust engines and the driver allocate with mimalloc.
#[expect(
    unsafe_code,
    reason = "mallopt(3) with M_ARENA_MAX: an integer setting of glibc's own, at start-up"
)]
fn bound_c_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let arenas = (2 * cores).clamp(2, i32::MAX as usize) as libc::c_int;
        // SAFETY: called before any other thread exists; takes two integers.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, arenas);
        }
    }
}

fn main() {
    quiet_broken_pipe();
    bound_c_arenas();
    std::process::exit(cli::main());
}
