#!/usr/bin/env bash
# Issue 25's benchmarks of the sharded path, one table: for each model size
# (4-label Potts grids, rho 0.5, from `coordinator gen potts`, as .ddx),
# each worker count and each algorithm, `coordinator run --local` with
# --out: the coordinator's and the workers' peak RSS (the JSON report's
# peaks, read from /proc: /usr/bin/time cannot part the coordinator from
# the workers it starts; distributed TRW-S reports no worker peak: "-"),
# the plan and setup seconds, the median seconds per iteration (--trace),
# the last iteration (it computes the final primal) and what follows it
# (--out and the shutdown); then one worker against `solve --threads 1`
# with the same algorithm (ns per variable and iteration; solve's peak RSS
# in the coordinator column, from /usr/bin/time when present); then, at
# FAILOVER variables, scripts/failover-device.sh's run: DD-ADMM with two
# workers and a spare, one worker killed (SIGKILL) mid-run: seconds from
# the kill until the loss is seen, the next epoch's parts are built and
# its first iteration.
#
#   scripts/bench-sharded.sh                     (SIZES="1e5 1e6", WORKERS="2 4")
#   SIZES="1e5 1e6 1e7" FAILOVER=1e7 scripts/bench-sharded.sh
#   SIZES="1e6 1e7 1e8" WORKERS="1 2 4 8 16" REPEATS=1 scripts/bench-sharded.sh
#
# SIZES: variables (a square grid of the nearest side); WORKERS; ALGOS
# ("default": run's own choice, distributed TRW-S on these grids; "admm":
# --algo admm); ITERS per run (default 10); REPEATS: runs of each line
# whose medians are printed (default 3 below 10^7 variables, 1 from it:
# set BIGREPEATS); ONE: the largest size of the one-worker comparison
# (default 1e6; "" skips it); FAILOVER: the size of the failover run (""
# skips it; default: none); DIR keeps the models between runs (10^7: 0.8
# GB, 10^8: 8 GB); BIN: a folder with coordinator and worker already built
# (default: go build). Times are the machine's: on a shared machine only
# the memory columns are steady.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=${SIZES:-"1e5 1e6"}
workers=${WORKERS:-"2 4"}
algos=${ALGOS:-"default admm"}
iters=${ITERS:-10}
repeats=${REPEATS:-3}
bigrepeats=${BIGREPEATS:-1}
one=${ONE-1e6}
failover=${FAILOVER:-}
dir=${DIR:-$(mktemp -d)}
[ -z "${DIR:-}" ] && trap 'rm -rf "$dir"' EXIT
bin=${BIN:-$dir/bin}
if [ -z "${BIN:-}" ]; then
  mkdir -p "$bin"
  go build -o "$bin/" ./cmd/coordinator ./cmd/worker
fi
num() { python3 -c "print(int(float('$1')))"; }
side() { python3 -c "import math; print(round(math.sqrt(float('$1'))))"; }
model() { # size -> path of its grid, written once
  local s m
  s=$(side "$1")
  m="$dir/potts$s.ddx"
  [ -f "$m" ] || "$bin/coordinator" gen potts --height "$s" --width "$s" --labels 4 --rho 0.5 --seed 1 -o "$m" >/dev/null 2>&1
  echo "$m"
}
now() { date +%s.%N; }
# solve's peak RSS (one process) from /usr/bin/time when there is one.
timed=
[ -x /usr/bin/time ] && timed="/usr/bin/time -f %M -o $dir/rss"
summary() { # json trace wall -> one JSON object of the run's numbers
  python3 - "$@" <<'PY'
import csv, json, statistics, sys
r = json.load(open(sys.argv[1]))
rows = [row for row in csv.DictReader(open(sys.argv[2]))]
t = [float(x["seconds"]) for x in rows]
wall = float(sys.argv[3])
d = [b - a for a, b in zip(t, t[1:])]
s = r.get("sharded") or {}
coord = s.get("coordinator_peak_rss_mb")
if not s and len(sys.argv) > 4:  # solve: its own peak, from /usr/bin/time (KiB)
    try:
        coord = int(open(sys.argv[4]).read().split()[-1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
print(json.dumps({
    "coord": coord, "workers": max(s.get("worker_peak_rss_mb") or [0]) or None,
    "plan": s.get("plan_seconds"), "setup": s.get("setup_seconds"),
    "iter": statistics.median(d[:-1]) if len(d) > 1 else None,
    "last": d[-1] if d else None, "after": wall - t[-1] if t else None,
    "iters": r["iterations"], "dual": r["dual"], "primal": r["primal"], "boundary": s.get("boundary_variables")}))
PY
}
row() { # label vars workers algo summary-files...
  python3 - "$@" <<'PY'
import json, statistics, sys
label, n, w, algo, files = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]
rs = [json.loads(open(f).read()) for f in files]
def med(k):
    xs = [r[k] for r in rs if r.get(k) is not None]
    return statistics.median(xs) if xs else None
def f(k, fmt):
    x = med(k)
    return "-" if x is None else format(x, fmt)
it = med("iter") or float("nan")
print(f"| {label} | {n:.0e} | {w} | {algo} | {len(rs)} | {f('coord', '.0f')} | {f('workers', '.0f')} | "
      f"{f('plan', '.2f')} | {f('setup', '.2f')} | {it:.3f} | {1e9*it/n:.0f} | {f('last', '.2f')} | {f('after', '.2f')} | "
      f"{rs[0]['boundary'] or '-'} | {rs[0]['dual']:.2f} >= {rs[0]['primal']:.2f} |")
PY
}
echo "| run | vars | workers | algo | runs | coord MiB | worker MiB | plan s | setup s | s/iter | ns/var/iter | last iter s | --out after s | boundary | dual >= primal |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for size in $sizes; do
  n=$(num "$size")
  m=$(model "$size")
  reps=$repeats
  [ "$n" -ge 10000000 ] && reps=$bigrepeats
  for algo in $algos; do
    flag=()
    [ "$algo" = default ] || flag=(--algo "$algo")
    for w in $workers; do
      files=()
      for r in $(seq "$reps"); do
        start=$(now)
        if ! "$bin/coordinator" run --local --workers "$w" "${flag[@]}" --max-iter "$iters" --tol 0 --json --quiet \
          --trace "$dir/t.csv" --out "$dir/x.mpe" "$m" >"$dir/out.json" 2>"$dir/err.log"; then
          echo "| run --local | $size | $w | $algo | failed: $(tail -1 "$dir/err.log" | tr '|' ' ') |"
          continue
        fi
        wall=$(python3 -c "print($(now) - $start)")
        summary "$dir/out.json" "$dir/t.csv" "$wall" >"$dir/s$r.json"
        files+=("$dir/s$r.json")
      done
      [ ${#files[@]} -gt 0 ] && row "run --local" "$n" "$w" "$algo" "${files[@]}"
    done
    # One worker against solve on one thread, same algorithm.
    if [ -n "$one" ] && [ "$n" -le "$(num "$one")" ]; then
      files=()
      sflag=("${flag[@]}")
      [ "$algo" = default ] && sflag=(--algo trws)
      for r in $(seq "$reps"); do
        start=$(now)
        $timed "$bin/coordinator" solve --threads 1 "${sflag[@]}" --max-iter "$iters" --tol 0 --json --quiet \
          --trace "$dir/t.csv" --out "$dir/x.mpe" "$m" >"$dir/out.json" 2>"$dir/err.log"
        wall=$(python3 -c "print($(now) - $start)")
        summary "$dir/out.json" "$dir/t.csv" "$wall" "$dir/rss" >"$dir/s$r.json"
        files+=("$dir/s$r.json")
      done
      row "solve --threads 1" "$n" 1 "$algo" "${files[@]}"
      files=()
      for r in $(seq "$reps"); do
        start=$(now)
        "$bin/coordinator" run --local --workers 1 "${flag[@]}" --max-iter "$iters" --tol 0 --json --quiet \
          --trace "$dir/t.csv" --out "$dir/x.mpe" "$m" >"$dir/out.json" 2>"$dir/err.log"
        wall=$(python3 -c "print($(now) - $start)")
        summary "$dir/out.json" "$dir/t.csv" "$wall" >"$dir/s$r.json"
        files+=("$dir/s$r.json")
      done
      row "run --local" "$n" 1 "$algo" "${files[@]}"
    fi
  done
done

[ -z "$failover" ] && exit 0
# Failover: scripts/failover-device.sh on the same grid (DD-ADMM, two
# workers and a spare, one killed with SIGKILL at iteration 3), one run
# with --lost-after 2s and FITERS iterations (default 30).
m=$(model "$failover")
echo
BIN=$bin MODEL=$m WORK=$dir OUT=$dir/failover RUNS=1 LOST=2s FITERS=${FITERS:-30} scripts/failover-device.sh
