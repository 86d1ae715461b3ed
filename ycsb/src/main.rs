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

fn main() {
    quiet_broken_pipe();
    std::process::exit(cli::main());
}
