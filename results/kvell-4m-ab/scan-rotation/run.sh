#!/usr/bin/env bash
# Does recovery's scan lose its reads' speed because each piece's buffer, just read by
# the worker, is handed straight back to the disk (issue 18, item 4)? The reads reuse the
# buffer the worker last touched (a stack of 8 x 1 MiB per worker): the scan-parts
# series (../scan-parts) found any touch of the pieces' bytes slowing the reads. A probe
# build (probe.patch on the commit named in raw.txt: scan-parts' timing and modes, and
# KVELL_SPARE=N: N buffers more than the reads in flight, used in turn, so that a piece's
# buffer goes back to the disk only after N other pieces) opens the same 4M-item data set
# in rotation, ROUNDS times, the order reversed every other round:
#   read       the reads only, nothing done with the pieces
#   touch      the reads and a sum over each piece's bytes, buffers reused at once
#   touch-rot  the same, buffers used in turn (KVELL_SPARE=24: 32 MiB a worker)
#   parse      the engine's own scan, buffers reused at once (as the engine does)
#   parse-rot  the engine's scan, buffers used in turn (KVELL_SPARE=24)
# A second build (probe2.patch, a superset) adds, chosen with MODES="...":
#   touch4     a sum over one u64 of every 256 bytes (a quarter of the cache lines)
#   spin80     80 us of spinning per piece (about touch's work on one), no memory read
#   spin400    400 us of spinning per piece (about the engine's work and sort on one)
# A third (probe3.patch, a superset of probe2.patch) adds:
#   alu80      80 us per piece busy in multiplications (no pause hint, no memory read)
#   alu400     the same, 400 us per piece
# A fourth (probe4.patch, a superset of probe3.patch) adds:
#   touchflush `touch`, then each cache line of the piece flushed (clflush) before the
#              buffer goes back to the disk
# A fifth (probe5.patch, a superset of probe4.patch) adds:
#   later      32 buffers, each piece held until all 32 are read (none in flight), then
#              all touched as `touch`, then all given back to the disk
#   later8     the same with the 8 buffers of the reads in flight
# and the probe's sequential read (`ycsb device --patterns seqread`) once a round.
#   [MODES="..."] [SUMMARY_ONLY=1] run.sh YCSB_PROBE_BUILD YCSB DATA_DIR PROBE_DIR [ROUNDS] [OUT_DIR]
# (OUT_DIR, default beside this script, gets raw.txt and summary.md)
# The opening, the table and the probe are ../scan-parts/run.sh's, copied whole (modes
# aside) so that each directory's series reruns from its own files.
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
# SUMMARY_ONLY=1: only summary.md again, from the raw.txt there
if [ -z "${SUMMARY_ONLY:-}" ]; then
{
    echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$script_dir" rev-parse HEAD) plus ${PATCH:-probe.patch}, $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), kernel $(uname -r)"
    echo "# run.sh $*"
} > "$raw"
open_once() { # mode env...
    local mode=$1; shift
    # a scan that keeps no copies fails the open (the clean-shutdown record names slots
    # it did not find): only its scan line is written, no result
    rm -f "$here/.open.json"
    env "$@" "$probe_build" run -w C --engine kvell -p operationcount=1000000000 --duration 1 \
        "${KVELL_C_ARGS[@]}" --data "$data" --quiet -p kvell.cache_setup=after \
        --out "$here/.open.json" 2>&1 >/dev/null | grep '^scan-parts' | sed "s/mode [a-z0-9+-]*/mode $mode/" >> "$raw" || true
    [ -f "$here/.open.json" ] || return 0
    python3 - "$here/.open.json" "$mode" >> "$raw" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["engine"]["settings"]
print(f"open mode {sys.argv[2]} open_s {s['open_seconds']} scan_ms {int(s['recovery_scan_us']) // 1000} "
      f"scan_cpu_ms {int(s['recovery_scan_cpu_us']) // 1000} index_ms {int(s['recovery_index_us']) // 1000}")
PY
}
read -r -a modes <<< "${MODES:-read touch touch-rot parse parse-rot}"
for r in $(seq "$rounds"); do
    echo "round $r" >> "$raw"
    order=("${modes[@]}")
    if (( r % 2 == 0 )); then order=(); for ((i=${#modes[@]}-1; i>=0; i--)); do order+=("${modes[i]}"); done; fi
    for m in "${order[@]}"; do
        case $m in
            read) open_once read KVELL_NOPARSE=read ;;
            touch) open_once touch KVELL_NOPARSE=touch ;;
            touch-rot) open_once touch-rot KVELL_NOPARSE=touch KVELL_SPARE=24 ;;
            parse) open_once parse ;;
            parse-rot) open_once parse-rot KVELL_SPARE=24 ;;
            touch4) open_once touch4 KVELL_NOPARSE=touch4 ;;
            spin80) open_once spin80 KVELL_NOPARSE=spin KVELL_SPIN_US=80 ;;
            spin400) open_once spin400 KVELL_NOPARSE=spin KVELL_SPIN_US=400 ;;
            alu80) open_once alu80 KVELL_NOPARSE=alu KVELL_SPIN_US=80 ;;
            alu400) open_once alu400 KVELL_NOPARSE=alu KVELL_SPIN_US=400 ;;
            touchflush) open_once touchflush KVELL_NOPARSE=touchflush ;;
            later) open_once later KVELL_NOPARSE=later KVELL_SPARE=24 ;;
            later8) open_once later8 KVELL_NOPARSE=later ;;
        esac
    done
    "$ycsb" device --data "$probe_dir" --size 4G --qds 8 --patterns seqread --jobs 1,2 \
        --seconds 2 --keep --reuse --out "$here/.seq.json" >/dev/null 2>&1
    python3 -c "import json,sys; p=json.load(open(sys.argv[1]))['points'][0]; print(f\"probe seqread MiB_s {p['mib_per_s']:.0f} jobs {p.get('jobs')}\")" "$here/.seq.json" >> "$raw"
done
rm -f "$here/.open.json" "$here/.seq.json"
fi
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
out = ["# Recovery's scan with its read buffers used in turn", "",
       lines[0].lstrip("# ") + ".", "`" + lines[1].lstrip("# ") + "` (beside this file); every line it wrote is in raw.txt.",
       "4M items of 1 KiB, 2 workers (one 2 GiB slab each), memory budget a third of the data, "
       "`kvell.cache_setup=after` (no cache zeroing in the open), durability class process. "
       "`-rot`: 24 buffers more than the 8 reads in flight, used in turn.", "",
       "Scan: each worker's scan of its slab (every worker's, every round), seconds; its parts: "
       "waiting for the next piece, working on it, and handing its buffer back plus the runs' sort "
       "and merge. CPU: the busier worker's CPU during the scan.", "",
       "| mode | scans | scan (s), median (lowest-highest) | wait / work / recycle+sort (s), medians | worker CPU in the scan (ms), median | step after the scan (ms), median |",
       "| --- | ---: | ---: | ---: | ---: | ---: |"]
for mode in ["read", "touch", "touch-rot", "touch4", "spin80", "spin400", "alu80", "alu400", "touchflush", "later", "later8", "parse", "parse-rot"]:
    if mode not in scan:
        continue
    xs, ps, os_ = scan[mode], parts[mode], opens.get(mode, [])
    p = " / ".join(f"{med(x[i] for x in ps):.3f}" for i in range(3))
    cpu = f"{med(o[1] for o in os_)}" if os_ and mode in ("parse", "parse-rot") else "-"
    idx = f"{med(o[2] for o in os_)}" if os_ and mode in ("parse", "parse-rot") else "-"
    out.append(f"| {mode} | {len(xs)} | {med(xs):.3f} ({min(xs):.3f}-{max(xs):.3f}) | {p} | {cpu} | {idx} |")
out += ["", f"The probe's sequential reads, once a round (MiB/s): {', '.join(map(str, probes))}; "
        f"4 GiB at their median takes {4096 / med(probes):.3f} s." if probes else ""]
print("\n".join(out))
PY
cat "$here/summary.md"
