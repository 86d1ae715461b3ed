#!/usr/bin/env bash
cd /work/main
configs=("xbase:/work/dev-h/ycsb-x:" "xc1m:/work/dev-h/ycsb-x:KVX_CHUNK=1048576" "new:/work/dev-h/ycsb-new:" "old:/work/dev-h/ycsb-base:")
rounds=${1:-5}
for r in $(seq 1 $rounds); do
  n=${#configs[@]}
  for k in $(seq 0 $((n-1))); do
    idx=$(( (k + r) % n ))
    IFS=: read name bin envs <<< "${configs[$idx]}"
    env $envs /work/dev-h/rx.sh open $bin /tmp/rxe-$name-$r.json 2>/dev/null | sed "s/^/$name r$r /"
  done
done
