#!/bin/bash
# Alternating pairs: the WAL engine with one group commit in flight at a time
# (5732170: the committer writes each batch with pwrite and syncs it with fdatasync,
# then takes the next) and with several (issue 21 part 2 as it landed, 021f2ff: up
# to 4 batches in flight through an io_uring (wal.log_depth), one fdatasync at a time
# covering the batches written before it, with fdatasync one batch at most waiting
# for a sync not yet issued, completions run on the committer's thread). YCSB A uniform at 1M records of
# 1 KiB, a third of the data as budget under the memory cgroup, 64 in flight, at both
# of the engine's durability classes (none-process: class process; fdatasync: class
# power). OLD and NEW are ycsb binaries built at the two commits.
OUT=$(cd "$(dirname "$0")" && pwd)
OLD=${OLD:?the ycsb binary of 5732170}
NEW=${NEW:?the ycsb binary with several batches in flight}
. "$OUT/../pairs.sh"
