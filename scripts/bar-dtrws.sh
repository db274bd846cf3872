#!/usr/bin/env bash
# Issue 26's bar: time for `run --local --workers 2` (default algorithm:
# distributed TRW-S) and for `solve --algo trws --threads 1` to reach
# B* + 1e-5 |B*|, B* = the bound of solve after 300 iterations, both from
# their traces, which count from the command's start (reading included).
# ROUNDS rounds over the MODELS given, solve and run alternated; OLD (a folder with an older coordinator and
# worker) adds a run with those binaries to each round. One line a run.
#
#   scripts/bar-dtrws.sh g.uai g.msgpack g.ddx
#   ROUNDS=6 OLD=/tmp/old B=664790.5964 scripts/bar-dtrws.sh g.uai
set -euo pipefail
bin=${BIN:-$(mktemp -d)}
[ -x "$bin/coordinator" ] || (cd "$(dirname "$0")/.." && go build -o "$bin/" ./cmd/coordinator ./cmd/worker)
rounds=${ROUNDS:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
first=$1
if [ -z "${B:-}" ]; then
  "$bin/coordinator" solve --algo trws --threads 1 --max-iter 300 --tol 0 --json --quiet "$first" >"$tmp/ref.json" 2>/dev/null
  B=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["dual"])' "$tmp/ref.json")
fi
echo "B* = $B"
reach() { awk -F, -v b="$B" 'NR>1 && $3<=b+1e-5*(b<0?-b:b) {print $2; exit}' "$1"; }
runit() { # name binaries model
  rm -rf "$3.state"
  "$2/coordinator" run --local --workers 2 --time-limit 120 --tol 0 --max-iter 40 --trace "$tmp/$1.csv" "$3" >/dev/null 2>&1
  rm -rf "$3.state"
  reach "$tmp/$1.csv"
}
for r in $(seq "$rounds"); do
  for f in "$@"; do
    "$bin/coordinator" solve --algo trws --threads 1 --max-iter 40 --tol 0 --trace "$tmp/s.csv" "$f" >/dev/null 2>&1
    sol=$(reach "$tmp/s.csv")
    run=$(runit r "$bin" "$f")
    line=$(printf "%s round %d: solve %.2f s, run %.2f s, ratio %.2f" "$f" "$r" "$sol" "$run" "$(echo "$run / $sol" | bc -l)")
    if [ -n "${OLD:-}" ]; then
      old=$(runit o "$OLD" "$f")
      line="$line, old run $(printf '%.2f s, ratio %.2f' "$old" "$(echo "$old / $sol" | bc -l)")"
    fi
    echo "$line, load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
