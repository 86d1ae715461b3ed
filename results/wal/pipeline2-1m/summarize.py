#!/usr/bin/env python3
"""Writes summary.md from the result files beside it (run from anywhere)."""
import os, subprocess, sys

here = os.path.dirname(os.path.abspath(__file__))
sys.exit(subprocess.call([sys.executable, os.path.join(here, '..', 'pairs.py'), here,
                          'WAL engine with one group commit in flight (pwrite) and with several (io_uring), as landed']))
