#!/usr/bin/env bash
# Fixed-rate A/B of ycsb builds on KVell: CPU per operation at the same offered load (--target), so
# that a faster disk (more operations per wake-up) does not lower one build's CPU per operation.
# Runs on the 4M items loaded in data/kvell-ab (scripts/kvell-ab's configuration), the builds
# alternating in the order given, each run SECS seconds; prints one line per run.
#   fixed-rate.sh OUTDIR ROUNDS WORKLOAD DIST TARGET SECS BIN1 BIN2 ...
# Rounds 1-4 of E ran base first (fixed-rate.sh DIR 4 E uniform 4000 12 base new), rounds 5-8
# new first (their files renumbered 5-8 here); C ran base first. report.py writes summary.md.
set -euo pipefail
out=$1; rounds=$2; w=$3; dist=$4; target=$5; secs=$6; shift 6
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
  for b in "$@"; do
    n=$(basename "$b")
    "$b" run -w "$w" --engine kvell -p requestdistribution="$dist" -p operationcount=1000000000 --duration "$secs" \
      -p recordcount=4000000 -p fieldcount=1 -p fieldlength=980 -p kvell.workers=2 -p kvell.queue_depth=64 -p kvell.batch=64 \
      --qd 512 --memory 1365333333 --data data/kvell-ab --quiet --target "$target" --out "$out/$w-$dist-$n-$r.json" >/dev/null 2>&1
    python3 - "$out/$w-$dist-$n-$r.json" "$n" "$r" <<'PY'
import json,sys
j=json.load(open(sys.argv[1])); p=j['phases'][-1]
print(f"{sys.argv[3]} {sys.argv[2]:12s} {p['throughput_ops_sec']:9.0f} ops/s cpu/op {p['cpu_us_per_op']:7.2f} (u {p['cpu_user_us_per_op']:.2f} s {p['cpu_sys_us_per_op']:.2f}) busy {p['device']['utilisation']:.3f} io/op {p['device']['ios_per_op']:.2f}", flush=True)
PY
  done
done
