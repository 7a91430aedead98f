#!/usr/bin/env python3
"""Median [min-max] over repeated `mmc-bench data` runs: python3 bench/summarize.py run1.txt run2.txt ..."""
import re
import statistics
import sys

rows = {}
for path in sys.argv[1:]:
    ctx = None
    for line in open(path):
        m = re.match(r"# mmc data path: provider (\w+), LMDB sync (\w+)", line)
        if m:
            ctx = m.groups()
            continue
        f = line.split()
        if ctx and len(f) > 16 and f[0] in ("put", "get"):
            key = ctx + (f[0], f[1], f[2], f[3])
            vals = [float(x) for x in f[4:7] + f[8:13] + f[14:18]]
            rows.setdefault(key, []).append(vals)

cols = ["GB/s", "p50ms", "p99ms", "mcpyH", "mcpyC", "rawDC", "raw", "redis", "/mcpyC", "/raw", "/rawnd", "/redis"]
show = [0, 1, 2, 4, 5, 6, 7, 8, 9, 11]
print("| provider | sync | op | shape | block | batch | runs | " + " | ".join(cols[i] for i in show) + " |")
print("|" + "---|" * (7 + len(show)))
for key, runs in rows.items():
    cells = []
    for i in show:
        v = [r[i] for r in runs]
        med = statistics.median(v)
        cells.append(f"{med:.2f}" if len(v) == 1 else f"{med:.2f} [{min(v):.2f}–{max(v):.2f}]")
    print("| " + " | ".join(key) + f" | {len(runs)} | " + " | ".join(cells) + " |")
