# Shared set-up for the project's scripts: installs what is missing, quietly when
# nothing is. Sourced, not run.

# Cargo's target directory: CI keeps it outside the clone (so repeated CI runs on one
# machine do not rebuild RocksDB); a user's checkout keeps ./target.
if [ "${CI:-}" = "true" ] && [ -z "${CARGO_TARGET_DIR:-}" ]; then
    export CARGO_TARGET_DIR="$HOME/.cache/kvell-testbed/target"
fi
TARGET_DIR="${CARGO_TARGET_DIR:-$(pwd)/target}"

say() { printf '==> %s\n' "$*" >&2; }

# Empties a result folder before a new run, keeping the README.md written beside the
# generated files (what the run is and is not, how it was set up): the benchmark
# scripts that rewrite a folder of results/ call it, not rm -rf.
#   clear_results DIR
clear_results() {
    [ -d "$1" ] || return 0
    find "$1" -mindepth 1 -maxdepth 1 ! -name README.md -exec rm -rf {} +
}

# Debian packages, installed only if missing (root, or sudo).
ensure_apt() {
    local missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    say "installing system packages: ${missing[*]}"
    $sudo apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

# The Rust toolchain and the components the test command needs.
ensure_rust() {
    if ! command -v cargo >/dev/null 2>&1; then
        if [ -x "$HOME/.cargo/bin/cargo" ]; then
            export PATH="$HOME/.cargo/bin:$PATH"
        else
            echo "error: cargo not found; install Rust 1.89 or newer (https://rustup.rs), then rerun" >&2
            exit 1
        fi
    fi
    if command -v rustup >/dev/null 2>&1; then
        for c in rustfmt clippy; do
            rustup component list --installed 2>/dev/null | grep -q "^$c" || { say "adding rustup component $c"; rustup component add "$c"; }
        done
    fi
}

# Everything the build needs from the system: a C/C++ toolchain for the -sys crates,
# libclang for the bindings of RocksDB (librocksdb-sys) and WiredTiger, and
# WiredTiger itself (Debian's libwiredtiger-dev; without it the engine says so).
ensure_build_deps() {
    if command -v dpkg-query >/dev/null 2>&1; then
        ensure_apt build-essential pkg-config libclang-dev
        ensure_apt libwiredtiger-dev || say "libwiredtiger-dev could not be installed: the build goes on without WiredTiger"
    fi
}

# Ours in the configuration the authors' C KVell runs in (scripts/kvell-vs-c,
# scripts/kvell-vs-c-pairs): RECORDS items of 1 KiB (980-byte values: 16-byte header +
# 4-byte checksum + keys of up to 24 bytes = 1024, 4 per page as the C code's items),
# 2 workers, queue depth and batch 64 per worker, QD requests in flight, a memory
# budget of a third of the data. Sets the array KVELL_C_ARGS; without QD, no --qd (the
# caller gives one per command). Every script of the C configuration takes its
# settings from here (kvell-vs-c, kvell-vs-c-pairs, kvell-tail, kvell-ceiling, kvell-ab).
# Updates are one request each, the whole record written (writeallfields=true), as
# the C code's benchmark updates (`kv_update_async`: one request, the worker reads the
# page itself when it is not cached). YCSB's default (a one-field update reads the
# record through the API, then writes it back: two requests) wrote the same bytes
# here, since a record is one field, but made ours answer a get and send its value
# back to the driver before each update; decided 2026-12-07, when the C code's CPU
# per operation was first measured (results/kvell-4m-ab/one-request-updates).
#   kvell_c_args RECORDS [QD]
kvell_c_args() {
    KVELL_C_ARGS=(-p recordcount="$1" -p fieldcount=1 -p fieldlength=980 -p writeallfields=true
        -p kvell.workers=2 -p kvell.queue_depth=64 -p kvell.batch=64
        --memory $(( $1 * 1024 / 3 )))
    [ -z "${2:-}" ] || KVELL_C_ARGS+=(--qd "$2")
}
