#!/usr/bin/env bash
# Anytime benchmark on the real instances (../shared/instances, or
# $DDRUN_INSTANCES): runs `coordinator solve --time-limit T` with default
# settings on every instance of OPTIMA.tsv and prints one line per instance:
# status, final dual, primal, the best known score, whether the run
# certified an optimum (status optimal), whether the dual is a valid bound
# (>= best known) and the seconds taken; then the totals. With TOULBAR2=1
# (and /usr/bin/toulbar2 installed) it also runs `toulbar2 -timer=T` and
# prints its primal and whether it proved optimality.
#
#   scripts/bench-anytime.sh [T] [BINARY] [EXTRA FLAGS...]
#
# T defaults to 10 (seconds); BINARY to a coordinator built from this tree.
set -euo pipefail
cd "$(dirname "$0")/.."
T=${1:-10}
bin=${2:-}
shift $(( $# > 2 ? 2 : $# ))
inst=${DDRUN_INSTANCES:-../shared/instances}
[ -f "$inst/OPTIMA.tsv" ] || { echo "no instances at $inst (set DDRUN_INSTANCES)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -z "$bin" ]; then
  go build -o "$work/coordinator" ./cmd/coordinator
  bin="$work/coordinator"
fi
printf '%-34s %-15s %14s %14s %14s %5s %5s %7s %s\n' instance status dual primal best_known cert valid seconds phase
tail -n +2 "$inst/OPTIMA.tsv" | while IFS=$'\t' read -r file _ _ best proven _ _; do
  model="$inst/$file"
  ev=()
  [ -f "$model.evid" ] && ev=(--evidence "$model.evid")
  if ! "$bin" solve --quiet --json --time-limit "$T" "${ev[@]}" "$@" "$model" >"$work/out.json" 2>"$work/err"; then
    printf '%-34s error: %s\n' "$file" "$(tail -n1 "$work/err")"
    continue
  fi
  python3 - "$file" "$best" "$proven" "$work/out.json" <<'PY'
import json, sys
file, best, proven, path = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
r = json.load(open(path))
dual, primal = r.get("dual"), r.get("primal")
f = lambda v: "none" if v is None else f"{v:.4f}"
cert = "yes" if r["status"] == "optimal" else "no"
valid = "yes" if dual is None or dual >= best - 1e-6 * max(1, abs(best)) else "NO"
print(f"{file:34} {r['status']:15} {f(dual):>14} {f(primal):>14} {best:14.4f} {cert:>5} {valid:>5} {r['seconds']:7.2f} {r.get('phase', '-')}")
PY
  if [ "${TOULBAR2:-0}" = 1 ] && [ -x /usr/bin/toulbar2 ]; then
    tb=$(timeout $((T + 5)) /usr/bin/toulbar2 "$model" "${ev[@]:1}" -timer="$T" 2>&1 | grep -E "^(Optimum|Primal bound|New solution)" | tail -n1 || true)
    printf '%-34s toulbar2: %s\n' "" "$tb"
  fi
done | tee "$work/table"
awk 'NR>0 && $6=="yes"{c++} $7=="NO"{bad++} END{printf "certified %d, invalid bounds %d\n", c, bad}' "$work/table"
