#!/usr/bin/env python3
"""Time to bound and time to gap from scripts/bench-device.sh's traces.

usage: time-to-bound.py DIR  (DIR holds runs.txt and tr/*.csv)
Target bound per size: the s?-trws-t1 run's bound (1e-5 relative); times
straight from the traces, which count from the command's start for solve
and run alike (reading, conversion and planning included; a process's exit
after its last row is not counted).
"""
import csv, math, os, re, sys

d = sys.argv[1]
runs = {}
for line in open(os.path.join(d, "runs.txt")):
    m = re.match(r"(\S+) rc=(\d+) wall=([\d.]+)s secs=([\d.]+)", line)
    if m:
        runs[m.group(1)] = (float(m.group(3)), float(m.group(4)), line)


def trace(tag):
    rows = []
    with open(os.path.join(d, "tr", tag + ".csv")) as f:
        for r in csv.DictReader(f):
            rows.append((int(r["iteration"]), float(r["seconds"]), float(r["dual"]), float(r["primal"])))
    return rows


for size in ("6", "7", "8"):
    ref = f"s{size}-trws-t1"
    tags = sorted(t for t in runs if t[1] == size)
    if not tags:
        continue
    best_bound = min(min(r[2] for r in trace(t)) for t in tags if os.path.exists(os.path.join(d, "tr", t + ".csv")))
    B = min(r[2] for r in trace(ref)) if ref in runs else best_bound
    print(f"\n10^{size}: B* = {B:.6f} (from {ref if ref in runs else 'best of all'}; best of all {best_bound:.6f})")
    print("| run | iterations | time to B*+1e-5|B*| | time to gap 1e-3 | final dual | best primal | dual >= primal |")
    print("|---|---|---|---|---|---|---|")
    for t in tags:
        tr = trace(t)
        tb = tg = None
        bestp = -math.inf
        ok = True
        for it, s, dual, primal in tr:
            bestp = max(bestp, primal)
            if tb is None and dual <= B + 1e-5 * abs(B):
                tb = s
            if tg is None and bestp > -math.inf and (dual - bestp) <= 1e-3 * abs(dual):
                tg = s
        ok = all(r[2] >= bestp - 1e-9 * abs(bestp) for r in tr)
        f = lambda x: f"{x:.2f} s" if x is not None else "not reached"
        print(f"| {t} | {tr[-1][0] if tr else 0} | {f(tb)} | {f(tg)} | {tr[-1][2]:.3f} | {bestp:.3f} | {ok} |")
