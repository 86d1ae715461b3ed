#!/usr/bin/env bash
# What touching memory a process has just mapped costs on this VM, right after another
# process freed as much and after the host had time to take it back: a virtio balloon
# with free page reporting (feature bit 5 of its device's `features`) hands pages the
# guest frees to the host after a delay (2 s in Linux's page_reporting), and the next
# touch of such a page faults in the host. Every engine's process pays it for its cache
# and its other fresh memory (ours at open beside recovery, the C code in its memset).
#   results/device/fresh-memory/run.sh [MIB] [ROUNDS] > results/device/fresh-memory/result.txt
set -eu
cd "$(dirname "$0")"
mib=${1:-4000}; rounds=${2:-3}
gcc -O2 -o /tmp/kvtb-touch touch.c
echo "# $(date -u '+%F %H:%M') UTC, commit $(git rev-parse --short=12 HEAD), $(nproc) cores, $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "# command: results/device/fresh-memory/run.sh $mib $rounds (no engine: no durability class or memory budget applies)"
for d in /sys/bus/virtio/devices/*; do
  [ "$(cat "$d/device")" = 0x0005 ] && echo "# virtio balloon $(basename "$d"): free page reporting $(cut -c6 "$d/features" | sed 's/1/on/;s/0/off/')"
done
/tmp/kvtb-touch "$mib" >/dev/null   # the memory's first touch in this run
for r in $(seq 1 "$rounds"); do
  for wait in 0 10; do
    sleep "$wait"
    echo "round $r, touched $wait s after the previous process freed it: $(/tmp/kvtb-touch "$mib")"
  done
done
