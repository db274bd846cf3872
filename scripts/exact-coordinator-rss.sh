#!/usr/bin/env bash
# Coordinator memory of `run --exact` (issue 25): on 4-label Potts grids of
# growing size (msgpack from gen), runs `coordinator run --exact --local
# --workers W --time-limit T` on the default path (the model converted into
# --state-dir, the workers reading it, the coordinator holding no model)
# and, unless WHOLE=0, with --sharded=false (the coordinator reads the model
# and ships it), and prints per size and path the coordinator's peak RSS
# (the result's sharded.coordinator_peak_rss_mb, else /usr/bin/time's
# maximum RSS of the coordinator process: --local's workers are other
# processes), the status, the bound and the primal.
#
#   scripts/exact-coordinator-rss.sh [SIDE...]   (default: 100 316 1000)
#   W=2 T=20 WHOLE=0 scripts/exact-coordinator-rss.sh 100 1000
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -gt 0 ]; then sides=("$@"); else sides=(100 316 1000); fi
w=${W:-2}
tl=${T:-20}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go build -o "$dir/coordinator" ./cmd/coordinator
go build -o "$dir/worker" ./cmd/worker
printf "%-10s %-8s %10s %-12s %14s %14s\n" variables path rss_mb status dual primal
for s in "${sides[@]}"; do
	m="$dir/grid$s.msgpack"
	"$dir/coordinator" gen potts --height "$s" --width "$s" --labels 4 --rho 2 --seed 1 -o "$m" >/dev/null
	paths=(sharded)
	[ "${WHOLE:-1}" = 0 ] || paths+=(whole)
	for p in "${paths[@]}"; do
		extra=()
		[ "$p" = whole ] && extra=(--sharded=false)
		/usr/bin/time -f "%M" -o "$dir/time.txt" "$dir/coordinator" run --local --workers "$w" --exact --time-limit "$tl" \
			--json --quiet --state-dir "$dir/state$s" "${extra[@]}" "$m" >"$dir/out.json" 2>"$dir/err.txt" || { tail -3 "$dir/err.txt"; continue; }
		python3 - "$dir/out.json" "$dir/time.txt" "$((s * s))" "$p" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
rss = (r.get("sharded") or {}).get("coordinator_peak_rss_mb")
if rss is None:
    rss = int(open(sys.argv[2]).read().split()[-1]) // 1024
print("%-10s %-8s %10s %-12s %14s %14s" % (sys.argv[3], sys.argv[4], rss, r["status"], r.get("dual"), r.get("primal")))
PY
	done
done
