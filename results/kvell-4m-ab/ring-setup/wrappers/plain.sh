#!/usr/bin/env bash
# the same binary (/work/dev-h/ycsb-ring, commit e53bb88) with -p kvell.ring=plain added
args=()
for a in "$@"; do args+=("$a"); [ "$a" = kvell.batch=64 ] && args+=(-p kvell.ring=plain); done
exec /work/dev-h/ycsb-ring "${args[@]}"
