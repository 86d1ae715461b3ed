#!/usr/bin/env bash
# alternating opens with env knobs; prints one line per open
cd /work/main
configs=("c1m:KVX_CHUNK=1048576" "a16:KVX_AHEAD=16" "c1m16:KVX_CHUNK=1048576 KVX_AHEAD=16" "base:")
rounds=${1:-5}
for r in $(seq 1 $rounds); do
  n=${#configs[@]}
  for k in $(seq 0 $((n-1))); do
    idx=$(( (k + r) % n ))
    c=${configs[$idx]}; name=${c%%:*}; envs=${c#*:}
    env $envs /work/dev-h/rx.sh open /work/dev-h/ycsb-x /tmp/rxe-$name-$r.json 2>/dev/null | sed "s/^/$name r$r /"
  done
done
