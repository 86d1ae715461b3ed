#!/usr/bin/env python3
"""ab.md from the runs of ab.sh (generated; run from the repository root):
   python3 results/kvell-4m-ab/one-request-updates/sum.py results/kvell-4m-ab/one-request-updates"""
import glob, json, os, statistics, sys, time

out = sys.argv[1]
rows, by = [], {}
for f in sorted(glob.glob(f"{out}/*-*-*-[0-9]*.json")):
    w, dist, mode, r = os.path.basename(f)[:-5].rsplit("-", 3)
    d = json.load(open(f))
    p = d["phases"][-1]
    ca, cb = p.get("counters_after") or {}, p.get("counters_before") or {}
    n = p["operations"]
    req = sum(ca.get(k, 0) - cb.get(k, 0) for k in ("cache_hits", "cache_misses")) / n if n else None
    ops = {o["name"]: o for o in p.get("ops") or []}
    dev = (p.get("device") or {}).get("ios_per_op")
    row = (w, dist, mode, int(r), time.strftime("%H:%M:%S", time.gmtime(p["started_unix_ms"] / 1000)),
           p["throughput_ops_sec"], p["cpu_us_per_op"], p["cpu_user_us_per_op"], p["cpu_sys_us_per_op"],
           req, dev, (ops.get("READ") or {}).get("p99_us"), (ops.get("UPDATE") or {}).get("p99_us"),
           (p.get("memory") or {}).get("used_over_budget"), d.get("commit", "?")[:12])
    rows.append(row)
    by.setdefault((w, dist), {}).setdefault(mode, {})[int(r)] = row
rows.sort(key=lambda x: x[4])
num = lambda x, f: "-" if x is None else format(x, f)
text = ["# YCSB updates as one request or two, ours alone, alternating", "",
        "`results/kvell-4m-ab/one-request-updates/ab.sh <ycsb> 3 results/kvell-4m-ab/one-request-updates <scratch>`"
        f" (ycsb at commit {rows[0][-1] if rows else '?'}): 4M items of 1 KiB loaded once, then each workload 20 s a run, "
        "`two` (writeallfields=false, YCSB's default: a one-field update reads the record through the API, then "
        "writes it back) and `one` (writeallfields=true: one update request writing the whole record, as the C "
        "code's benchmark updates) in turn; scripts/kvell-vs-c's settings otherwise (2 workers, queue depth and "
        "batch 64, 512 in flight, a memory budget of a third of the data, durability class process: acknowledged "
        "when the in-place O_DIRECT write completed). A record is one field here, so both write the same bytes.", "",
        "Page-cache lookups per operation: the engine's cache hits and misses over the run (a request counts once, "
        "when it first looks a page up; a write joining a page image already prepared counts none) per operation "
        "the driver counted: one more per update where the update reads first.", "",
        "| workload | updates | round | started (UTC) | ops/s | CPU per op, us (user + system) | page-cache lookups per op | "
        "device I/Os per op | read p99 (us) | update p99 (us) | used / budget |",
        "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
for (w, dist, mode, r, t, v, c, u, s, req, dev, rp, up, used, _) in rows:
    text.append(f"| {w} {dist} | {mode} | {r} | {t} | {v:,.0f} | {c:.2f} ({u:.2f} + {s:.2f}) | {num(req, '.2f')} | "
                f"{num(dev, '.2f')} | {num(rp, ',.0f')} | {num(up, ',.0f')} | {num(used, '.3f')} |")
text += ["", "One request over two, round by round (ops/s; CPU per op):", ""]
for (w, dist), m in by.items():
    rs = sorted(set(m.get("one", {})) & set(m.get("two", {})))
    th = [m["one"][r][5] / m["two"][r][5] for r in rs]
    cpu = [m["one"][r][6] / m["two"][r][6] for r in rs]
    if th:
        text.append(f"- {w} {dist}: throughput {', '.join(f'{x:.2f}' for x in th)} (median {statistics.median(th):.2f}); "
                    f"CPU per op {', '.join(f'{x:.2f}' for x in cpu)} (median {statistics.median(cpu):.2f}).")
open(f"{out}/ab.md", "w").write("\n".join(text) + "\n")
print("\n".join(text))
