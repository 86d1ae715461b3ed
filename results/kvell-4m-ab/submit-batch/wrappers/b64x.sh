#!/usr/bin/env bash
exec /work/dev-g/ycsb-base "$@"
