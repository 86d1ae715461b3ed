# Sourced by the run.sh of a before/after directory (pack-1m, pipeline-1m): YCSB A
# uniform at 1M records of 1 KiB, a third of the data as budget under the memory
# cgroup, 64 in flight, 20 s runs each after its own load, alternating OLD and NEW
# (before, after, after, before) at both of the WAL engine's durability classes
# (none-process: class process; fdatasync: class power). The caller sets OUT (its
# directory), OLD and NEW (ycsb binaries); DATA is the database directory.
set -u
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
