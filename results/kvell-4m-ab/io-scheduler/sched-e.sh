#!/bin/bash
# E uniform on the VM disk, scheduler mq-deadline vs none, alternating
cd /work/main && export CARGO_TARGET_DIR=/root/.cache/kvell-testbed/target && source scripts/lib.sh && kvell_c_args 4000000 512
Y=$CARGO_TARGET_DIR/release/ycsb; d=/work/dev-h/se; secs=${1:-20}; rounds=${2:-2}; w=${3:-E}
if [ ! -d $d/kvell ]; then mkdir -p $d; $Y load -w A --engine kvell --fresh "${KVELL_C_ARGS[@]}" --data $d --quiet --out /work/dev-h/se-load.json | grep OVERALL; fi
for r in $(seq $rounds); do for s in mq-deadline none; do
  [ $((r % 2)) = 0 ] && { [ $s = none ] && s=mq-deadline || s=none; }
  echo $s > /sys/block/vda/queue/scheduler
  o=/work/dev-h/se-$w-$s-$r
  $Y run -w $w --engine kvell -p requestdistribution=uniform -p operationcount=1000000000 --duration $secs "${KVELL_C_ARGS[@]}" --data $d --quiet --out $o.json > $o.txt 2>&1
  echo "$s $r $(grep -E 'OVERALL\], Throughput|CPU\], (User|System|PerOp)|IOsPerOperation|ReadIOPS' $o.txt | cut -d, -f2,3 | tr '\n' ' ')"
done; done
echo mq-deadline > /sys/block/vda/queue/scheduler
