#!/usr/bin/env bash
# Runs the merge benchmarks of results/kvell-4m-ab/recovery-merge (see its README).
set -euo pipefail
OUT=/work/main/results/kvell-4m-ab/recovery-merge
cd /work/dev-h/wt-merge
git checkout -q -- kvell
export CARGO_TARGET_DIR=/root/.cache/kvell-exp-target
bench() { cargo test --release -q -p kvell --lib merge_speed -- --ignored --nocapture 2>&1 | grep -E "merged|on the way"; }
cargo test --release -q -p kvell --lib merge_speed --no-run 2>/dev/null
{ echo "# b03d7a2, unchanged: merge_speed, three runs, $(date -u +%FT%TZ)"; for i in 1 2 3; do bench; done; } > $OUT/heap-62-runs.txt
git apply $OUT/progressive-merge.patch
for r in 8 4 2; do
  sed -i "s/^const RATIO: usize = .*/const RATIO: usize = $r;/" kvell/src/recovery/slab_scan.rs
  cargo test --release -q -p kvell --lib merge_speed --no-run 2>/dev/null
  { echo "# b03d7a2 + progressive-merge.patch with RATIO = $r: merge_speed, three runs, $(date -u +%FT%TZ)"; for i in 1 2 3; do bench; done; } > $OUT/progressive-ratio-$r.txt
done
sed -i "s/^const RATIO: usize = .*/const RATIO: usize = 8;/" kvell/src/recovery/slab_scan.rs
cargo test --release -q -p kvell --lib merge_speed --no-run 2>/dev/null
B=$(ls -t $CARGO_TARGET_DIR/release/deps/kvell-* | grep -v '\.d$' | head -1)
perf record -q -o /tmp/perf-merge8.data -F 4000 $B merge_speed --ignored --nocapture > /dev/null 2>&1
{ echo "# perf record -F 4000 of merge_speed, RATIO = 8 (whole benchmark: key generation, sorts, merges on the way, the merge after), top symbols"; perf report -i /tmp/perf-merge8.data --no-children --sort sym 2>/dev/null | grep "%" | head -15; } > $OUT/progressive-ratio-8-perf.txt
git checkout -q -- kvell
uname -r > $OUT/machine.txt; grep -m1 "model name" /proc/cpuinfo >> $OUT/machine.txt; nproc >> $OUT/machine.txt
cat $OUT/*.txt
