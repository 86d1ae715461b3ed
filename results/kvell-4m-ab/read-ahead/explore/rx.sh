#!/usr/bin/env bash
# rx.sh load|open BIN OUT
set -e
cd /work/main
records=4000000; memory=$(( records * 1024 / 3 ))
common=(-p recordcount="$records" -p fieldcount=1 -p fieldlength=980
        -p kvell.workers=2 -p kvell.queue_depth=64 -p kvell.batch=64
        --qd 512 --memory "$memory" --data /work/main/data/rx/db --quiet)
case "$1" in
load) mkdir -p data/rx/db; "$2" load -w C --engine kvell --fresh "${common[@]}" --out "$3" ;;
open) "$2" run -w C --engine kvell -p operationcount=1000000000 --duration 1 "${common[@]}" --out "$3" >/dev/null
  python3 - "$3" <<'PY'
import json,sys
d=json.load(open(sys.argv[1])); s=d["engine"]["settings"]
print(sys.argv[1].split('/')[-1], "open", s["open_seconds"], "scan", int(s["recovery_scan_us"])//1000, "cpu", int(s["recovery_scan_cpu_us"])//1000, "index", int(s["recovery_index_us"])//1000, "cache_after", s.get("cache_setup_after_recovery_us"), "fill_beside", d["engine"]["counters"].get("extra",{}).get("cache_fill_beside_us") if isinstance(d["engine"].get("counters"),dict) else "")
PY
;;
esac
