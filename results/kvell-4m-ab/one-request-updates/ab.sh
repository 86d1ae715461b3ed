#!/bin/bash
# YCSB updates as two requests (YCSB's default, writeallfields=false: a one-field update
# reads the record through the API, then writes it back) against one request writing the
# whole record (writeallfields=true, as the C code's benchmark updates), ours only, on
# the same 4M items loaded once, alternating run by run (scripts/kvell-vs-c's settings).
#   ab.sh YCSB_BIN ROUNDS OUT DATA
Y=$1; R=$2; OUT=$3; DATA=$4; mkdir -p "$OUT"
common=(-p recordcount=4000000 -p fieldcount=1 -p fieldlength=980 -p kvell.workers=2
        -p kvell.queue_depth=64 -p kvell.batch=64 --qd 512 --memory 1365333333 --data "$DATA/db" --quiet)
rm -rf "$DATA"; mkdir -p "$DATA"
"$Y" load -w A --engine kvell --fresh "${common[@]}" --out "$OUT/load.json" >/dev/null
for cell in "A uniform" "A unscrambledzipfian" "B uniform"; do
  set -- $cell
  for r in $(seq 1 "$R"); do
    if [ $((r % 2)) = 1 ]; then order="two one"; else order="one two"; fi
    for m in $order; do
      w=false; [ "$m" = one ] && w=true
      "$Y" run -w "$1" --engine kvell -p requestdistribution="$2" -p operationcount=1000000000 --duration 20 \
        -p writeallfields=$w "${common[@]}" --out "$OUT/$1-$2-$m-$r.json" >/dev/null
    done
  done
done
rm -rf "$DATA"
