#!/usr/bin/env bash
# Sharded-run scaling benchmark (issue: huge models): 4-label Potts grids
# (rho 0.5) of SIDES x SIDES variables, written as .ddx by `coordinator gen`,
# solved by `coordinator run --sharded --local` on each worker count of
# WORKERS (one thread per worker) and by `coordinator solve --threads 2`.
# One line per run: variables, mode, iterations, setup seconds (reading and
# distributing the model: the time to the first iteration), ms per
# iteration, the coordinator's peak RSS, each worker's peak RSS, bytes per
# iteration at the coordinator, and bytes per variable summed over all
# processes.
#
#   scripts/bench-scaling.sh                 (SIDES="316 1000", WORKERS="2")
#   SIDES="316 1000 3163" WORKERS="2 4" ITERS=20 scripts/bench-scaling.sh
#   ALGO=trws scripts/bench-scaling.sh       (distributed TRW-S; default admm)
#
# Set DIR to keep the generated models between runs (a 3163x3163 grid is
# 0.8 GB and takes about a minute to write).
set -euo pipefail
cd "$(dirname "$0")/.."
sides=${SIDES:-"316 1000"}
workers=${WORKERS:-"2"}
iters=${ITERS:-20}
algo=${ALGO:-admm} # DD-ADMM; run's own choice on these grids is trws
solve=${SOLVE:-1}
dir=${DIR:-$(mktemp -d)}
[ -z "${DIR:-}" ] && trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/bin"
go build -o "$dir/bin/" ./cmd/coordinator ./cmd/worker
bin="$dir/bin/coordinator"

for side in $sides; do
  model="$dir/potts$side.ddx"
  [ -f "$model" ] || "$bin" gen potts --height "$side" --width "$side" --labels 4 --rho 0.5 --seed 1 -o "$model" >/dev/null
  for w in $workers; do
    "$bin" run --sharded --local --algo "$algo" --workers "$w" --threads "$w" --max-iter "$iters" --tol 0 --json "$model" \
      >"$dir/out.json" 2>"$dir/err.log"
    python3 - "$side" "$w" "$dir/out.json" "$dir/err.log" <<'PY'
import json, re, sys
side, w, path, log = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
r = json.load(open(path))
s = r["sharded"]
peaks = [int(m) for m in re.findall(r'msg="job done".*peak_rss_mb=(\d+)', open(log).read())]
n = side * side
it = max(1, r["iterations"])
ms = 1000 * (r["seconds"] - s["setup_seconds"]) / it
total = s["coordinator_peak_rss_mb"] + sum(peaks)
print(f"vars={n:>9} run --sharded workers={w} iter={r['iterations']} setup={s['setup_seconds']:.2f}s "
      f"ms/iter={ms:.1f} coordRSS={s['coordinator_peak_rss_mb']}MB workersRSS={peaks}MB "
      f"boundary={s['boundary_variables']} bytes/iter={s['bytes_per_iteration']} "
      f"B/var(all)={total*2**20/n:.0f} dual={r['dual']:.6f} primal={r['primal']:.6f}")
PY
  done
  if [ "$solve" = 1 ]; then
    /usr/bin/time -f '%M' -o "$dir/rss" "$bin" solve --threads 2 --max-iter "$iters" --tol 0 --json --quiet "$model" >"$dir/out.json"
    python3 - "$side" "$dir/out.json" "$(cat "$dir/rss")" <<'PY'
import json, sys
side, path, rss = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
r = json.load(open(path))
n = side * side
it = max(1, r["iterations"])
print(f"vars={n:>9} solve --threads 2 iter={r['iterations']} seconds={r['seconds']:.2f} "
      f"ms/iter(incl. setup)={1000*r['seconds']/it:.1f} RSS={rss/1024:.0f}MB B/var={rss*1024/n:.0f} "
      f"dual={r['dual']:.6f} primal={r['primal']:.6f}")
PY
  fi
done
