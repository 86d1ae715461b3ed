#!/bin/bash
# Alternating A/B of two ycsb builds on the null engine: async --qd 64 and closed loop (1 thread), YCSB A and C.
# usage: ab-null.sh OLD NEW ROUNDS OUTDIR
OLD=$1; NEW=$2; R=$3; OUT=$4; mkdir -p $OUT; D=$(mktemp -d)
run() { # bin wl mode
  local b=$1 w=$2 m=$3
  local args="--qd 64"; [ "$m" = closed ] && args="--threads 1"
  $b run --engine null -w $w -p recordcount=100000 $args -p operationcount=10000000 --fresh --data $D/data --quiet --memory-limit none --out $D/r.json >/dev/null 2>&1
  python3 -c "
import json;p=json.load(open('$D/r.json'))['phases'];p=p[-1] if isinstance(p,list) else p
print('%.0f %.4f' % (p['throughput_ops_sec'], p['cpu_us_per_op']))"
}
for r in $(seq 1 $R); do
  for w in A C; do for m in async closed; do
    if [ $((r % 2)) = 1 ]; then order="old new"; else order="new old"; fi
    for b in $order; do
      bin=$OLD; [ $b = new ] && bin=$NEW
      echo "$r $w $m $b $(run $bin $w $m)" | tee -a $OUT/runs.txt
    done
  done; done
done
rm -rf $D
