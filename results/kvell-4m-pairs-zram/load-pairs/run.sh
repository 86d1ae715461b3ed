#!/usr/bin/env bash
# The load alone, alternating (the C code's, then ours, ROUNDS times, each on an empty
# directory under DATA): scripts/kvell-vs-c-pairs loads each engine once, the C code
# first, so its load row is one sample of each; on the RAM disk (`scripts/ram-disk`)
# ours' first load of a sequence was its slowest in two tries. Settings as the pairs':
# 4M items of 1 KiB (scripts/lib.sh's kvell_c_args at 512 in flight; the C code by
# scripts/c-kvell --only load, at the same memory). Writes c-N/ (scripts/c-kvell's
# files), kvell-N.json and summary.md (generated) beside this script.
#   results/kvell-4m-pairs-zram/load-pairs/run.sh KVELL_SRC DATA [ROUNDS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../.."
. scripts/lib.sh
[ $# -ge 2 ] || { sed -n '2,9p' "$0"; exit 2; }
src=$1; data=$2; rounds=${3:-3}
cargo build --release -q -p ycsb
ycsb="$TARGET_DIR/release/ycsb"
kvell_c_args 4000000 512
rm -rf "$here"/c-* "$here"/kvell-*.json
for i in $(seq "$rounds"); do
    rm -rf "$data/c" "$data/kvell"
    say "round $i: the C code's load"
    scripts/c-kvell --src "$src" --records 4000000 --data "$data/c" --only load --out "$here/c-$i" >/dev/null
    rm -rf "$data/c"
    say "round $i: ours"
    "$ycsb" load -w A --engine kvell --fresh "${KVELL_C_ARGS[@]}" --data "$data/kvell" --quiet \
        --out "$here/kvell-$i.json" | grep -E 'Throughput' || true
done
rm -rf "$data/c" "$data/kvell"
python3 - "$here" "$rounds" <<'PY'
import json, statistics, sys, time
here, rounds = sys.argv[1], int(sys.argv[2])
rows, ratios = [], []
for i in range(1, rounds + 1):
    c = json.load(open(f"{here}/c-{i}/c-kvell.json"))
    k = json.load(open(f"{here}/kvell-{i}.json"))
    ph = k["phases"][-1]
    v, cv = ph["throughput_ops_sec"], c["load_ops_sec"]
    ratios.append(v / cv)
    cc = c.get("load_cpu") or {}
    rows.append(f"| {i} | {cv:,} | {v:,.0f} | {v / cv:.2f} | {cc.get('us_per_op', float('nan')):.2f} | "
                f"{ph['cpu_us_per_op']:.2f} ({ph['driver_cpu_us_per_op']:.2f}) |")
k = json.load(open(f"{here}/kvell-1.json"))
m = k.get("machine") or {}
text = ["# The load alone, alternating", "",
        f"`results/kvell-4m-pairs-zram/load-pairs/run.sh` (generated), ours at commit {k.get('commit', '?')[:12]}, "
        f"the C code at {c['source']['commit'][:12]}, started {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(k['started_unix_s']))}; "
        f"machine: {m.get('cpu_model')}, {m.get('cores')} cores, disk {(m.get('disk') or {}).get('device')}. "
        "4M items of 1 KiB each, 2 workers, the same memory budget; in each round the C code's load, then ours, "
        "each on an empty directory. CPU per item: each whole process's user and system time over the load's "
        "seconds (ours with its driver; in brackets the driver's own share, measured on the null engine).", "",
        "| round | C KVell (items/s) | ours (items/s) | ours / C | CPU per item, C (us) | CPU per item, ours (us) |",
        "| ---: | ---: | ---: | ---: | ---: | ---: |"] + rows + ["",
        f"Ours over the C code, median (lowest-highest) of {rounds}: {statistics.median(ratios):.2f} "
        f"({min(ratios):.2f}-{max(ratios):.2f})."]
open(f"{here}/summary.md", "w").write("\n".join(text) + "\n")
print("\n".join(text))
PY
