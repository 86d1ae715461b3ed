#!/bin/bash
# Alternating pairs: the WAL engine before packing (52d5eff, format version 2: every
# transaction in whole blocks) and with it (format version 3), YCSB A uniform at 1M
# records of 1 KiB, a third of the data as budget under the memory cgroup, 64 in
# flight, at both of the engine's durability classes (none-process: class process,
# as in results/wal/compare-1m; fdatasync: class power). OLD and NEW are ycsb binaries
# built at the two commits (NEW at d23ecc0).
set -u
OUT=$(cd "$(dirname "$0")" && pwd)
OLD=${OLD:?the ycsb binary of 52d5eff}
NEW=${NEW:?the ycsb binary with packing}
DATA=${DATA:-/tmp/w}
run() { # bin tag durability round
  local bin=$1 tag=$2 dur=$3 r=$4
  $bin run --load --fresh --engine wal --data "$DATA" -w A -p recordcount=1000000 \
    -p requestdistribution=uniform -p operationcount=0 -p writeallfields=true \
    -p wal.durability=$dur --seed 1 --qd 64 --memory 341333333 --duration 20 --warmup 0 \
    --out "$OUT/A-$dur-$tag-round$r.json" > "$OUT/A-$dur-$tag-round$r.txt" 2>&1
  echo "$(date -u +%H:%M:%S) A $dur $tag round $r rc=$?"
}
for dur in none-process fdatasync; do
  run "$OLD" before $dur 1; run "$NEW" after $dur 1
  run "$NEW" after $dur 2;  run "$OLD" before $dur 2
done
echo done
