#!/usr/bin/env python3
"""Writes summary.md from the result files beside it (run from anywhere)."""
import os, subprocess, sys

here = os.path.dirname(os.path.abspath(__file__))
sys.exit(subprocess.call([sys.executable, os.path.join(here, '..', 'pairs.py'), here,
                          'WAL engine: group-commit batches in flight (wal.log_depth) 1, 4 and 16']))
