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
# FAILOVER variables, DD-ADMM with two workers and a spare on the
# coordinator's NATS server, one worker killed (SIGKILL) mid-run: seconds
# from the kill until the loss is seen and until the next epoch's parts
# are built (the iterations resume).
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
# Failover: DD-ADMM with two workers and a spare, worker processes of
# their own on the coordinator's NATS server; the first worker assigned a
# part is killed (SIGKILL) once the coordinator printed iteration 3. The
# iterations resume when the next epoch's parts are built (the
# coordinator's "parts built" line, its clock against the kill's). FITERS
# iterations (default 30).
n=$(num "$failover")
m=$(model "$failover")
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
url="nats://127.0.0.1:$port"
python3 -c 'import secrets; print(secrets.token_hex(32))' >"$dir/job.key"
start=$(now)
"$bin/coordinator" run --nats-listen "127.0.0.1:$port" --workers 2 --algo admm --lost-after 2s --max-iter "${FITERS:-30}" --tol 0 \
  --json --job-key-file "$dir/job.key" --out "$dir/x.mpe" "$m" >"$dir/out.json" 2>"$dir/err.log" &
coord=$!
pids=($coord)
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; [ -z "${DIR:-}" ] && rm -rf "$dir"' EXIT
for k in 1 2 3; do
  rm -rf "$dir/w$k"
  "$bin/worker" --nats "$url" --connect-timeout 60s --name "w$k" --threads 1 --job-key-file "$dir/job.key" \
    --state-dir "$dir/w$k" --model-root "$dir" --log-format json >"$dir/w$k.log" 2>&1 &
  pids+=($!)
  wpid[$k]=$!
done
killed=
while kill -0 "$coord" 2>/dev/null; do
  if [ -z "$killed" ] && grep -q '^iter=[3-9]' "$dir/err.log"; then
    for k in 1 2 3; do
      if grep -q 'job assigned' "$dir/w$k.log"; then
        kill -KILL "${wpid[$k]}"
        killed=$(now)
        break
      fi
    done
  fi
  sleep 0.05
done
wait "$coord" || { echo "failover run failed: $(tail -3 "$dir/err.log")" >&2; exit 1; }
for k in 1 2 3; do kill -INT "${wpid[$k]}" 2>/dev/null || true; done
[ -n "$killed" ] || { echo "the failover run ended before the kill: raise FITERS" >&2; exit 1; }
python3 - "$dir/out.json" "$dir/err.log" "$killed" "$start" "$n" <<'PY'
import datetime, json, re, sys
r = json.load(open(sys.argv[1]))
lines = open(sys.argv[2]).read().splitlines()
kill, start, n = float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
def at(l):
    t = re.match(r"time=(\S+)", l).group(1)
    return datetime.datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp()
lost = next(l for l in lines if "worker lost" in l)
silent = re.search(r"silent=([0-9.]+)s", lost).group(1)
built = [l for l in lines if "parts built" in l]
resumed = at(built[-1]) if len(built) > 1 else float("nan")
print()
print("| failover | vars | failovers | redone iterations | kill at s | loss seen s after the kill | next epoch's parts built s after the kill | run s | dual >= primal |")
print("|---|---|---|---|---|---|---|---|---|")
print(f"| DD-ADMM, 2 workers + spare, --lost-after 2s | {n:.0e} | {r.get('failovers')} | {r.get('redone_iterations')} | {kill - start:.2f} | "
      f"{at(lost) - kill:.2f} (silent {silent}) | {resumed - kill:.2f} | {r['seconds']:.2f} | {r['dual']:.2f} >= {r['primal']:.2f} |")
PY
