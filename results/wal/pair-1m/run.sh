#!/bin/bash
# Alternating pairs: WAL engine before (062e51e) and after (0360202) this session's changes.
set -u
LIMIT=${LIMIT:-none}
OUT=/work/main/results/wal/pair-1m
mkdir -p $OUT
OLD=/tmp/old-target/release/ycsb
NEW=/tmp/ycsb-new
run() { # bin tag w round
  local bin=$1 tag=$2 w=$3 r=$4
  $bin run --load --fresh --engine wal --data /tmp/w -w $w -p recordcount=1000000 \
    -p requestdistribution=uniform -p operationcount=0 --seed 1 --qd 64 \
    --memory 341333333 --duration 20 --warmup 0 --memory-limit $LIMIT \
    --out $OUT/$w-uniform-$tag-round$r.json > $OUT/$w-uniform-$tag-round$r.txt 2>&1
  echo "$(date -u +%H:%M:%S) $w $tag round $r rc=$?"
}
for w in A C E; do
  run $OLD before $w 1; run $NEW after $w 1
  run $NEW after $w 2;  run $OLD before $w 2
done
echo done
