#!/bin/bash
# alternate mq-deadline and none: fio 4K randread qd64 and qd128, 8 s each, on a 4 GiB slab file
f=$(ls /work/dev-h/e/*slab* 2>/dev/null | head -1)
[ -n "$f" ] || f=$(find /work/dev-h/e -type f -size +1G | head -1)
echo "file $f"
for round in 1 2; do
 for s in mq-deadline none; do
  echo $s > /sys/block/vda/queue/scheduler
  for qd in 64 128; do
   r=$(fio --name=r --filename=$f --readonly --direct=1 --ioengine=io_uring --rw=randread --bs=4k --iodepth=$qd --runtime=8 --time_based --output-format=json 2>/dev/null | python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; print(int(j["read"]["iops"]), round(j["sys_cpu"],1), round(j["usr_cpu"],1), round(j["read"]["clat_ns"]["percentile"]["99.900000"]/1e3))')
   echo "round $round $s qd $qd iops sys% usr% p99.9us: $r"
  done
 done
done
echo mq-deadline > /sys/block/vda/queue/scheduler
