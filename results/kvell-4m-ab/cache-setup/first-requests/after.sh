#!/bin/sh
# ycsb with kvell.cache_setup=after: the second "build" of scripts/kvell-ab
exec "${YCSB:-/root/.cache/kvell-testbed/target/release/ycsb}" "$@" -p kvell.cache_setup=after
