#!/bin/bash
# The WAL engine beside KVell and RocksDB, one `ycsb compare` per YCSB workload A-F:
# 1M records of 1 KiB (whole records written), a third of the data (341,333,333
# bytes) as every engine's budget, held by each run's memory cgroup, 64 requests in
# flight, a warm-up to a steady cache (at most 30 s), then 20 s measured. Every engine
# at durability class process (KVell: no sync; RocksDB: WAL unsynced; WAL engine:
# none-process). YCSB=path to the ycsb binary; DATA=the database directory. The
# engine order alternates within `ycsb compare` only when repeated: here it is fixed,
# and each table is one run.
set -u
OUT=$(cd "$(dirname "$0")" && pwd)
YCSB=${YCSB:?the ycsb binary}
DATA=${DATA:-/tmp/cmp}
for w in A B C D E F; do
  dir="$OUT/workload$(echo $w | tr A-F a-f)"
  rm -rf "$dir"
  mkdir -p "$dir"
  $YCSB compare --engines kvell,rocksdb,wal -w $w -p recordcount=1000000 -p operationcount=0 \
    -p writeallfields=true -p wal.durability=none-process --seed 1 --qd 64 \
    --memory 341333333 --duration 20 --warmup-max 30 --data "$DATA" --quiet \
    --out-dir "$dir" > "$dir/table.txt" 2> "$dir/stderr.txt"
  echo "$(date -u +%H:%M:%S) $w rc=$?"
done
python3 "$OUT/summarize.py"
echo done
