#!/bin/bash
# Alternating pairs: the WAL engine with one group commit in flight at a time
# (5732170: the committer writes each batch with pwrite and syncs it with fdatasync,
# then takes the next) and with several (issue 21 part 2: up to 16 batches in flight
# through an io_uring, one fdatasync at a time covering the batches written before
# it, completions run on the committer's thread). YCSB A uniform at 1M records of
# 1 KiB, a third of the data as budget under the memory cgroup, 64 in flight, at both
# of the engine's durability classes (none-process: class process; fdatasync: class
# power). OLD and NEW are ycsb binaries built at the two commits.
set -u
OUT=$(cd "$(dirname "$0")" && pwd)
OLD=${OLD:?the ycsb binary of 5732170}
NEW=${NEW:?the ycsb binary with several batches in flight}
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
python3 "$OUT/summarize.py"
echo done
