"""Summarises an alternating A/B file of lines `round workload mode build ops/s cpu-us/op`
(build old or new; lines starting with # are notes): per workload and mode, the new build over the old one in each
round, the median and range of those ratios and in how many rounds the new one led."""
import collections, statistics as st, sys

d = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    if line.startswith("#"):
        continue
    r, w, m, b, t, c = line.split()
    d[(int(r), w, m)][b] = (float(t), float(c))
for w, m in sorted({(k[1], k[2]) for k in d}):
    keys = [k for k in sorted(d) if k[1:] == (w, m) and len(d[k]) == 2]
    rt = [d[k]["new"][0] / d[k]["old"][0] for k in keys]
    rc = [d[k]["new"][1] / d[k]["old"][1] for k in keys]
    med = lambda b, i: st.median(d[k][b][i] for k in keys)
    print(f"{w} {m}: {len(keys)} pairs; new/old ops/s median {st.median(rt):.3f} "
          f"(range {min(rt):.3f}-{max(rt):.3f}, higher in {sum(x > 1 for x in rt)}); "
          f"CPU/op median {st.median(rc):.3f} (lower in {sum(x < 1 for x in rc)}); "
          f"ops/s median old {med('old', 0):,.0f}, new {med('new', 0):,.0f}; "
          f"CPU us/op median old {med('old', 1):.3f}, new {med('new', 1):.3f}")
