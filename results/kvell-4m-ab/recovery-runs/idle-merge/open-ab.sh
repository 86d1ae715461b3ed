#!/bin/bash
# Alternating opens of two builds of ycsb (A, B) of a data set loaded once in DATA
# (by either build: `ycsb load -w C --engine kvell --fresh $common`), N rounds, the
# order alternating; prints round, build, open_seconds, recovery_scan_us,
# recovery_scan_cpu_us, recovery_index_us.
#   open-ab.sh A B N OUT DATA
A=$1; B=$2; N=$3; OUT=$4; DATA=$5
common="-p recordcount=4000000 -p fieldcount=1 -p fieldlength=980 -p kvell.workers=2 -p kvell.queue_depth=64 -p kvell.batch=64 --qd 512 --memory 1365333333 --data $DATA --quiet"
mkdir -p $OUT
for i in $(seq 1 $N); do
  if [ $((i%2)) = 1 ]; then order="a b"; else order="b a"; fi
  for w in $order; do
    bin=$A; [ $w = b ] && bin=$B
    $bin run -w C --engine kvell -p operationcount=1000000000 --duration 1 $common --out $OUT/open-$w-$i.json >/dev/null 2>&1
    python3 -c "
import json;s=json.load(open('$OUT/open-$w-$i.json'))['engine']['settings']
print('$i $w', s['open_seconds'], s['recovery_scan_us'], s['recovery_scan_cpu_us'], s['recovery_index_us'])"
  done
done
