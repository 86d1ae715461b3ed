#!/bin/bash
# experiment: runs the real ycsb and pins kvell-worker-N (in it or its child) to core N % ncpu
REAL=${REAL:-/work/dev-f/ycsb-base}
"$REAL" "$@" &
pid=$!
(
  n=$(nproc)
  for i in $(seq 1 1200); do
    sleep 0.05
    [ -d /proc/$pid ] || exit 0
    c=0
    for p in $pid $(pgrep -P $pid); do
      for t in /proc/$p/task/*; do
        name=$(cat $t/comm 2>/dev/null) || continue
        case $name in kvell-worker-*) w=${name#kvell-worker-}; taskset -pc $((w % n)) ${t##*/} >/dev/null 2>&1 && c=$((c+1));; esac
      done
    done
    if [ $c -ge 2 ]; then echo "pinned $c workers" >> /work/dev-f/pin-events.log; exit 0; fi
  done
) &
wait $pid
