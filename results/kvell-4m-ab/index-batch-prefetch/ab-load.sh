#!/bin/bash
# Alternating fresh 4M-item KVell loads with two ycsb builds (the settings of scripts/kvell-vs-c's load).
OLD=$1; NEW=$2; R=$3; OUT=$4; DATA=$5; mkdir -p $OUT
for r in $(seq 1 $R); do
  if [ $((r % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for b in $order; do bin=$OLD; [ $b = new ] && bin=$NEW
    rm -rf $DATA; mkdir -p $DATA
    $bin load -w A --engine kvell --fresh -p recordcount=4000000 -p fieldcount=1 -p fieldlength=980 \
      -p kvell.workers=2 -p kvell.queue_depth=64 -p kvell.batch=64 --qd 512 --memory 1365333333 --data $DATA/db --quiet --out $OUT/$r-$b.json >/dev/null 2>&1
    python3 -c "
import json;p=json.load(open('$OUT/$r-$b.json'))['phases'];p=p[0] if isinstance(p,list) else p
print('$r load kvell $b %.0f %.4f' % (p['throughput_ops_sec'], p['cpu_us_per_op']))" | tee -a $OUT/runs.txt
  done
done
rm -rf $DATA
