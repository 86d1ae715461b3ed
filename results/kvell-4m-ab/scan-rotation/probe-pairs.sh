#!/usr/bin/env bash
# The disk's sequential reads with and without the reader looking at its bytes: `ycsb
# device --patterns seqread` (8 x 1 MiB O_DIRECT reads in flight, one ring or two, the
# better kept) plainly and with `--check-reads` (each read's bytes checksummed when it
# completes), alternating, PAIRS times, on one probe file.
#   probe-pairs.sh YCSB PROBE_DIR [PAIRS] [OUT_DIR]
# PROBE_DIR: a directory a `ycsb device --keep` left a probe file of 4 GiB in.
set -euo pipefail
ycsb=$1; probe_dir=$2; pairs=${3:-4}
script_dir=$(cd "$(dirname "$0")" && pwd)
here=$(mkdir -p "${4:-$script_dir}" && cd "${4:-$script_dir}" && pwd)
out="$here/probe-pairs.md"
rows=()
for i in $(seq "$pairs"); do
    row="| $i |"
    for c in plain checked; do
        flag=(); [ "$c" = checked ] && flag=(--check-reads)
        "$ycsb" device --data "$probe_dir" --size 4G --qds 8 --patterns seqread --jobs 1,2 \
            --seconds 2 --keep --reuse "${flag[@]}" --out "$here/.p.json" >/dev/null
        row+=$(python3 -c "import json,sys; p=json.load(open(sys.argv[1]))['points'][0]; print(f\" {p['mib_per_s']:.0f} ({p.get('jobs')}, {p.get('cpu_cores', 0):.2f}, {p['lat_mean_us'] / 1000:.2f}) |\", end='')" "$here/.p.json")
    done
    rows+=("$row")
done
commit=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['commit'])" "$here/.p.json")
rm -f "$here/.p.json"
{
    echo "# Sequential reads, plain and checked"
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'), ycsb at commit $commit, $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), kernel $(uname -r)."
    echo "\`probe-pairs.sh $*\` (beside this file): \`ycsb device --patterns seqread --qds 8 --jobs 1,2 --seconds 2\` on a 4 GiB probe file, plainly, then with \`--check-reads\` (each read's bytes checksummed, CRC32, when it completes), alternating."
    echo
    echo "| pair | plain MiB/s (rings, cores, mean ms a read) | checked MiB/s (rings, cores, mean ms a read) |"
    echo "| ---: | ---: | ---: |"
    printf '%s\n' "${rows[@]}"
} > "$out"
cat "$out"
