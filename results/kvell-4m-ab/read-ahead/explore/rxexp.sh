#!/usr/bin/env bash
# Opens the data set of rx.sh with each configuration in turn, the first of each round
# rotating; one line per open, each open's result in /tmp/rxe-NAME-ROUND.json.
#   rxexp.sh ROUNDS NAME:BIN:ENV... (ENV: space-separated VAR=VALUE, may be empty)
# e3: rxexp.sh 8 "c1m:/work/dev-h/ycsb-x:KVX_CHUNK=1048576" "a16:/work/dev-h/ycsb-x:KVX_AHEAD=16" \
#       "c1m16:/work/dev-h/ycsb-x:KVX_CHUNK=1048576 KVX_AHEAD=16" "base:/work/dev-h/ycsb-x:"
# e4: rxexp.sh 6 "xbase:/work/dev-h/ycsb-x:" "xc1m:/work/dev-h/ycsb-x:KVX_CHUNK=1048576" \
#       "new:/work/dev-h/ycsb-new:" "old:/work/dev-h/ycsb-base:"
cd /work/main
rounds=$1; shift
configs=("$@")
n=${#configs[@]}
for r in $(seq 1 "$rounds"); do
  for k in $(seq 0 $((n-1))); do
    IFS=: read -r name bin envs <<< "${configs[$(( (k + r) % n ))]}"
    # shellcheck disable=SC2086 # ENV is split into VAR=VALUE words on purpose
    env $envs /work/dev-h/rx.sh open "$bin" "/tmp/rxe-$name-$r.json" 2>/dev/null | sed "s/^/$name r$r /"
  done
done
