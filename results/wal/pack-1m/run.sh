#!/bin/bash
# Alternating pairs: the WAL engine before packing (52d5eff, format version 2: every
# transaction in whole blocks) and with it (format version 3), YCSB A uniform at 1M
# records of 1 KiB, a third of the data as budget under the memory cgroup, 64 in
# flight, at both of the engine's durability classes (none-process: class process,
# as in results/wal/compare-1m; fdatasync: class power). OLD and NEW are ycsb binaries
# built at the two commits (NEW at d23ecc0).
OUT=$(cd "$(dirname "$0")" && pwd)
OLD=${OLD:?the ycsb binary of 52d5eff}
NEW=${NEW:?the ycsb binary with packing}
. "$OUT/../pairs.sh"
