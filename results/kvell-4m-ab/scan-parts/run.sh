#!/usr/bin/env bash
# Where recovery's scan spends its time (issue 18, item 4). A probe build (probe.patch
# on the commit named in raw.txt: the scan of each slab timed in its parts, and
# KVELL_NOPARSE / KVELL_RUN / KVELL_PER_COPY choosing what it does with each piece)
# opens the same 4M-item data set in rotation, ROUNDS times:
#   read     the reads only (8 x 1 MiB in flight per worker, as always), nothing parsed
#   crc      the reads and one CRC over each whole 1 MiB piece (the checksum's work, no slots)
#   touch    the reads and a sum over each piece's bytes
#   parse    the engine's own scan (slots parsed, copies kept, sorted and merged in runs)
#   late     the same with no sort or merge during the scan (all of it after)
#   read+1   `read` with one spinning process beside it (one vCPU busy)
#   read+2   `read` with two spinning processes at nice 19 beside it (both vCPUs busy;
#            the workers still get the CPU when they need it)
# and the probe's sequential read (`ycsb device --patterns seqread`) once a round.
#   run.sh YCSB_PROBE_BUILD YCSB DATA_DIR PROBE_DIR [ROUNDS] [OUT_DIR]
# (OUT_DIR, default beside this script, gets raw.txt and summary.md)
# DATA_DIR: a 4M-item load (`ycsb load -w C --engine kvell --fresh` with scripts/lib.sh's
# kvell_c_args 4000000 512); PROBE_DIR: a directory a `ycsb device --keep` left a
# probe file of 4 GiB in.
set -euo pipefail
probe_build=$1; ycsb=$2; data=$3; probe_dir=$4; rounds=${5:-3}
script_dir=$(cd "$(dirname "$0")" && pwd)
here=$(mkdir -p "${6:-$script_dir}" && cd "${6:-$script_dir}" && pwd)
. "$script_dir/../../../scripts/lib.sh"
kvell_c_args 4000000 512
raw="$here/raw.txt"
{
    echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$script_dir" rev-parse HEAD) plus probe.patch, $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), kernel $(uname -r)"
    echo "# run.sh $*"
} > "$raw"
open_once() { # mode env...
    local mode=$1; shift
    # a scan that keeps no copies fails the open (the clean-shutdown record names slots
    # it did not find): only its scan line is written, no result
    rm -f "$here/.open.json"
    env "$@" "$probe_build" run -w C --engine kvell -p operationcount=1000000000 --duration 1 \
        "${KVELL_C_ARGS[@]}" --data "$data" --quiet -p kvell.cache_setup=after \
        --out "$here/.open.json" 2>&1 >/dev/null | grep '^scan-parts' | sed "s/mode [a-z]*/mode $mode/" >> "$raw" || true
    [ -f "$here/.open.json" ] || return 0
    python3 - "$here/.open.json" "$mode" >> "$raw" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["engine"]["settings"]
print(f"open mode {sys.argv[2]} open_s {s['open_seconds']} scan_ms {int(s['recovery_scan_us']) // 1000} "
      f"scan_cpu_ms {int(s['recovery_scan_cpu_us']) // 1000} index_ms {int(s['recovery_index_us']) // 1000}")
PY
}
spin() { timeout 8 sh -c 'while :; do :; done'; }
for r in $(seq "$rounds"); do
    echo "round $r" >> "$raw"
    open_once read KVELL_NOPARSE=read
    open_once crc KVELL_NOPARSE=crc
    open_once touch KVELL_NOPARSE=touch
    open_once parse
    open_once late KVELL_RUN=1000000000 KVELL_PER_COPY=0
    spin & p1=$!; sleep 0.3
    open_once read+1 KVELL_NOPARSE=read
    kill "$p1" 2>/dev/null || true; wait "$p1" 2>/dev/null || true
    (exec nice -n 19 timeout 8 sh -c 'while :; do :; done') & p1=$!
    (exec nice -n 19 timeout 8 sh -c 'while :; do :; done') & p2=$!; sleep 0.3
    open_once read+2 KVELL_NOPARSE=read
    kill "$p1" "$p2" 2>/dev/null || true; wait "$p1" "$p2" 2>/dev/null || true
    "$ycsb" device --data "$probe_dir" --size 4G --qds 8 --patterns seqread --jobs 1,2 \
        --seconds 2 --keep --reuse --out "$here/.seq.json" >/dev/null 2>&1
    python3 -c "import json,sys; p=json.load(open(sys.argv[1]))['points'][0]; print(f\"probe seqread MiB_s {p['mib_per_s']:.0f} jobs {p.get('jobs')}\")" "$here/.seq.json" >> "$raw"
done
rm -f "$here/.open.json" "$here/.seq.json"
python3 - "$raw" > "$here/summary.md" <<'PY'
import re, statistics, sys
lines = open(sys.argv[1]).read().splitlines()
scan, parts, opens, probes = {}, {}, {}, []
for l in lines:
    m = re.match(r"scan-parts \S+ mode (\S+) pieces \d+ total_s ([\d.]+) wait_s ([\d.]+) parse_s ([\d.]+) recycle_sort_s ([\d.]+)", l)
    if m:
        scan.setdefault(m[1], []).append(float(m[2]))
        parts.setdefault(m[1], []).append(tuple(float(m[i]) for i in (3, 4, 5)))
    m = re.match(r"open mode (\S+) open_s ([\d.]+) scan_ms (\d+) scan_cpu_ms (\d+) index_ms (\d+)", l)
    if m:
        opens.setdefault(m[1], []).append((float(m[2]), int(m[4]), int(m[5])))
    m = re.match(r"probe seqread MiB_s (\d+)", l)
    if m:
        probes.append(int(m[1]))
med = statistics.median
out = ["# Where recovery's scan spends its time", "",
       lines[0].lstrip("# ") + ".", "`" + lines[1].lstrip("# ") + "` (beside this file); every line it wrote is in raw.txt.",
       "4M items of 1 KiB, 2 workers (one 2 GiB slab each), memory budget a third of the data, "
       "`kvell.cache_setup=after` (no cache zeroing in the open), durability class process.", "",
       "Scan: each worker's scan of its slab (every worker's, every round), seconds; its parts: "
       "waiting for the next piece, working on it, and handing its buffer back plus the runs' sort "
       "and merge. CPU: the busier worker's CPU during the scan.", "",
       "| mode | scans | scan (s), median (lowest-highest) | wait / work / recycle+sort (s), medians | worker CPU in the scan (ms), median | step after the scan (ms), median |",
       "| --- | ---: | ---: | ---: | ---: | ---: |"]
for mode in ["read", "crc", "touch", "parse", "late", "read+1", "read+2"]:
    if mode not in scan:
        continue
    xs, ps, os_ = scan[mode], parts[mode], opens.get(mode, [])
    p = " / ".join(f"{med(x[i] for x in ps):.3f}" for i in range(3))
    cpu = f"{med(o[1] for o in os_)}" if os_ and mode in ("parse", "late") else "-"
    idx = f"{med(o[2] for o in os_)}" if os_ and mode in ("parse", "late") else "-"
    out.append(f"| {mode} | {len(xs)} | {med(xs):.3f} ({min(xs):.3f}-{max(xs):.3f}) | {p} | {cpu} | {idx} |")
out += ["", f"The probe's sequential reads, once a round (MiB/s): {', '.join(map(str, probes))}; "
        f"4 GiB at their median takes {4096 / med(probes):.3f} s." if probes else ""]
print("\n".join(out))
PY
cat "$here/summary.md"
