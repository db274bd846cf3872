#!/usr/bin/env bash
# Whole-run benchmark harness: generates the AD3 comparison families, runs
# `coordinator solve` on each with /usr/bin/time, and prints one line per run:
# family, threads, status, iterations, seconds, ms per iteration, peak RSS.
#
#   scripts/bench-runs.sh [REPEATS]     (default 3; the median is what to report)
#
# Set THREADS="1 2" or MAXITER=... to change the defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=${1:-3}
threads=${THREADS:-"1 2"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/coordinator" ./cmd/coordinator
bin="$work/coordinator"

"$bin" gen potts --height 100 --width 100 --labels 8 --rho 1 --seed 1 -o "$work/potts100L8.uai.gz" 2>/dev/null
"$bin" gen potts --height 300 --width 300 --labels 4 --rho 1 --seed 1 -o "$work/potts300L4r1.uai.gz" 2>/dev/null
"$bin" gen potts --height 300 --width 300 --labels 4 --rho 0.5 --seed 1 -o "$work/potts300L4r05.uai.gz" 2>/dev/null

run() { # name model threads extra-flags...
  local name=$1 model=$2 th=$3; shift 3
  for r in $(seq "$repeats"); do
    /usr/bin/time -f '%M' -o "$work/rss" "$bin" solve --quiet --json --threads "$th" "$@" "$model" >"$work/out.json"
    python3 - "$name" "$th" "$work/out.json" "$(cat "$work/rss")" <<'PY'
import json, sys
name, th, path, rss = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
r = json.load(open(path))
it = max(1, r["iterations"])
print(f"{name:16} threads={th} status={r['status']:15} iter={r['iterations']:5} seconds={r['seconds']:8.3f} "
      f"ms/iter={1000*r['seconds']/it:8.3f} gap={r['gap']} peakRSS={rss/1024:.0f}MB")
PY
  done
}

for th in $threads; do
  run potts100L8 "$work/potts100L8.uai.gz" "$th" --max-iter 1000 --tol 0
  run potts300L4r1 "$work/potts300L4r1.uai.gz" "$th" --max-iter 1000 --tol 0
  run potts300L4r05-gap "$work/potts300L4r05.uai.gz" "$th" --max-iter 5000 --tol 1e-3
done
