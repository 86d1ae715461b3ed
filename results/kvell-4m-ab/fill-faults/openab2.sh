#!/bin/bash
# openab2.sh ROUNDS BIN_A BIN_B: alternating opens (A B, B A, ...) of data/R/db, one line each
R=$1; A=$2; B=$3
one() { $1 run -w C --engine kvell -p operationcount=1 -p recordcount=4000000 -p fieldcount=1 -p fieldlength=980 -p kvell.workers=2 -p kvell.queue_depth=64 -p kvell.batch=64 --qd 512 --memory 1365333333 --data /work/dev-h/data/R/db --quiet --out /tmp/o.json >/dev/null 2>&1
python3 -c "
import json
d=json.load(open('/tmp/o.json')); s=dict(d['engine']['settings'])
print('$2', d['phases'][0]['counters_after']['recovery_us']/1e6, *(s[k] for k in ['recovery_scan_us','recovery_scan_cpu_us','recovery_index_us','cache_setup_us']))"; }
for i in $(seq $R); do
  if [ $((i%2)) = 1 ]; then one $A a; one $B b; else one $B b; one $A a; fi
done
