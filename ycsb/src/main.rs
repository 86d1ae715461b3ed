//! The `ycsb` command (see `cli/`).

mod cli;

// mimalloc as the global allocator of the `ycsb` binary: every engine runs in this
// process, and per request the driver and the Rust engines allocate keys, values,
// completions and replies; glibc malloc took about 7% of all CPU time on a 2-core
// machine running KVell (perf, YCSB C). It applies to every engine alike; RocksDB's
// C++ code allocates with its own operator new (glibc), as in its default build.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(cli::main());
}
