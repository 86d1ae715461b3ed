#!/bin/bash
# The committer's batches in flight (`wal.log_depth`) at 1, 4 and 16, one binary
# (YCSB=), in the order 1, 16, 4, 4, 16, 1: YCSB A uniform at 1M records of 1 KiB, a
# third of the data as budget under the memory cgroup, 64 requests in flight, 20 s
# runs each after its own load, durability none-process (class process).
set -u
OUT=$(cd "$(dirname "$0")" && pwd)
YCSB=${YCSB:?the ycsb binary}
DATA=${DATA:-/tmp/w}
run() { # depth round
  $YCSB run --load --fresh --engine wal --data "$DATA" -w A -p recordcount=1000000 \
    -p requestdistribution=uniform -p operationcount=0 -p writeallfields=true \
    -p wal.durability=none-process -p wal.log_depth=$1 --seed 1 --qd 64 \
    --memory 341333333 --duration 20 --warmup 0 \
    --out "$OUT/A-none-process-depth$1-round$2.json" > "$OUT/A-none-process-depth$1-round$2.txt" 2>&1
  echo "$(date -u +%H:%M:%S) depth $1 round $2 rc=$?"
}
run 1 1; run 16 1; run 4 1; run 4 2; run 16 2; run 1 2
python3 "$OUT/summarize.py"
echo done
