#!/usr/bin/env bash
args=()
for a in "$@"; do [ "$a" = kvell.batch=64 ] && a=kvell.batch=8; args+=("$a"); done
exec /work/dev-g/ycsb-base "${args[@]}"
