#!/usr/bin/env bash
# Opens of 4M items of 1 KiB (the C-code configuration: 2 workers, budget a third of the
# data), each setting in turn, ROUNDS rounds; right after each open the same slab files
# are read once, all at once, one ring per file, 8 x 1 MiB in flight per file (the
# open's own shape, `ycsb device --read-files --seq-shapes 8x1M`). Prints one line per
# open: open seconds, scan and its CPU (the slower worker), the open's MiB/s, the
# read's, their ratio, and the run's measured memory over the budget.
#   results/kvell-4m-ab/recovery-read-shape/variants/run.sh DATA_DIR ROUNDS SETTING...
# A SETTING is ';'-separated k=v properties ("" for the defaults), e.g.
# "kvell.recovery_read=2M;kvell.recovery_depth=8".
set -eu
cd "$(dirname "$0")/../../../.."
. scripts/lib.sh
D=$1; rounds=$2; shift 2
ensure_rust
cargo build --release -q -p ycsb
Y="$TARGET_DIR/release/ycsb"
kvell_c_args 4000000 512
common=("${KVELL_C_ARGS[@]}" --data "$D/db" --quiet)
rm -rf "$D"; mkdir -p "$D/db"
echo "# $(date -u '+%F %H:%M') UTC, commit $(git rev-parse --short=12 HEAD), $(nproc) cores, $(uname -r)"
echo "# command: $0 $D $rounds$(printf ' "%s"' "$@")"
echo "# every open: 4M x 1 KiB, 2 workers, kvell.memory 1365333333 (a memory cgroup holds the engine to it), durability class process (acknowledged when the O_DIRECT write completed, no flush)"
"$Y" load -w C --engine kvell --fresh "${common[@]}" --out "$D/load.json" | grep -E 'OVERALL.*Throughput' || true
for i in $(seq 1 "$rounds"); do
  for v in "$@"; do
    IFS=';' read -ra props <<< "$v"; p=(); for x in "${props[@]}"; do [ -n "$x" ] && p+=(-p "$x"); done
    "$Y" run -w C --engine kvell -p operationcount=1000000000 --duration 1 "${common[@]}" \
        "${p[@]}" --out "$D/o.json" >/dev/null 2>&1
    files=$(find "$D/db" -name '*.slab' -size +0 | sort | paste -sd, -)
    "$Y" device --read-files "$files" --seq-shapes 8x1M --out "$D/f.json" >/dev/null 2>&1
    python3 - "$D" "$i" "${v:-defaults}" <<'PY'
import json, sys
d, i, v = sys.argv[1], sys.argv[2], sys.argv[3]
o = json.load(open(f"{d}/o.json")); s = o["engine"]["settings"]
f = json.load(open(f"{d}/f.json"))["points"][0]["mib_per_s"]
mib = int(s["recovery_bytes"]) / 2**20; secs = float(s["open_seconds"])
used = max((p.get("memory") or {}).get("used_over_budget") or 0 for p in o["phases"])
print(f"{i} {v:<46} open {secs:.2f} s, scan {int(s['recovery_scan_us']) // 1000} ms "
      f"(CPU {int(s['recovery_scan_cpu_us']) // 1000} ms), open {mib / secs:.0f} MiB/s, "
      f"files read after it {f:.0f} MiB/s, ratio {mib / secs / f:.2f}, memory used {used:.2f} of the budget")
PY
  done
done
rm -rf "$D"
