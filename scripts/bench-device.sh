#!/usr/bin/env bash
# Scaling runs of issues 25 and 26 on a many-core machine: 4-label Potts
# grids (rho 0.5) of S6^2, S7^2 and S8^2 variables as .ddx; solve --algo
# trws on T6 threads, run --local (distributed TRW-S, and --algo admm) on
# W6 / WA6 / W7 workers, and one S8^2 run on 16 workers with --out. One
# line per run in $OUT/runs.txt (wall time, iterations, dual, primal,
# set-up, boundary, the coordinator's and all processes' peak VmHWM);
# traces and log tails in $OUT/traces.tar.gz; then
# scripts/time-to-bound.py DIR (DIR holding runs.txt and tr/) gives the
# time-to-bound and time-to-gap tables of docs/distributed-trws.md.
# BIN is a folder with coordinator and worker (default: built here with go).
# Sizes are parameters so the script can be tried small first:
#   S6=100 S7=200 S8=300 W6="1 2" W7="2" T6="1 2" TL6=3 TL7=3 scripts/bench-device.sh
# and run on a small machine (S8=0 leaves out the S8^2 run; T7 and WA7 list
# solve's threads and DD-ADMM's workers at S7^2):
#   S8=0 W6="1 2 4" WA6="1 2 4" T6="1 2" W7="1 2 4" WA7="1 2 4" T7="1 2" scripts/bench-device.sh
# --max-entries bounds each worker's part: the 10^8 run needs no flag.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-}
if [ -z "$bin" ]; then
  bin=$(mktemp -d)
  go build -o "$bin/" ./cmd/coordinator ./cmd/worker || exit 1
fi
out=${OUT:-/tmp/devout}
mkdir -p "$out"
work=${WORK:-/tmp/devwork}
mkdir -p "$work/tr"
S6=${S6:-1000}; S7=${S7:-3163}; S8=${S8:-10000}
W6=${W6:-"1 2 4 8 16"}; WA6=${WA6:-"1 2 4 16"}; W7=${W7:-"2 4 8 16"}; T6=${T6:-"1 2 4 8 16"}
WA7=${WA7:-"16"}; T7=${T7:-"1"}
TL6=${TL6:-8}; TL7=${TL7:-20}; TL7S=${TL7S:-50}
runs=$out/runs.txt
: >"$runs"
echo "host: $(nproc) cores, $(free -g | awk '/Mem/{print $2}') GB; $(uname -r)" >>"$runs"

# sampler TAG PID: sample VmHWM (KB) of the coordinator PID and of every
# process named worker on the machine until $work/sampling goes; writes
# "coordKB allKB" to $work/hwm.TAG.
sampler() {
  local tag=$1 cpid=$2
  declare -A h
  while [ -e "$work/sampling" ]; do
    for p in $cpid $(pgrep -x worker); do
      v=$(awk '/VmHWM/{print $2}' /proc/$p/status 2>/dev/null) || continue
      [ -n "$v" ] && [ "${h[$p]:-0}" -lt "$v" ] && h[$p]=$v
    done
    sleep 0.2
  done
  local all=0
  for p in "${!h[@]}"; do all=$((all + h[$p])); done
  echo "${h[$cpid]:-0} $all" >"$work/hwm.$tag"
}

# one TAG CMD...: runs CMD with a sampler, prints wall time, peaks, and the
# JSON report's main fields.
one() {
  local tag=$1; shift
  local t0 t1
  touch "$work/sampling"
  t0=$(date +%s.%N)
  "$1" "$2" --json --trace "$work/tr/$tag.csv" "${@:3}" >"$work/$tag.json" 2>"$work/$tag.err" &
  local pid=$!
  sampler "$tag" "$pid" &
  local spid=$!
  wait "$pid"; local rc=$?
  t1=$(date +%s.%N)
  rm -f "$work/sampling"; wait "$spid"
  tail -c 1500 "$work/$tag.err" >"$work/tr/$tag.err"
  python3 - "$tag" "$rc" "$t0" "$t1" "$work/$tag.json" "$work/hwm.$tag" >>"$runs" <<'PY'
import json, sys
tag, rc, t0, t1, js, hw = sys.argv[1:]
c, a = (int(x) for x in open(hw).read().split())
try:
    r = json.load(open(js))
except Exception as e:
    print(f"{tag} rc={rc} wall={float(t1)-float(t0):.1f}s NO-JSON {e}"); sys.exit()
s = r.get("sharded") or {}
print(f"{tag} rc={rc} wall={float(t1)-float(t0):.1f}s secs={r['seconds']:.2f} it={r['iterations']} "
      f"dual={r['dual']:.6f} primal={r['primal']:.4f} status={r['status']} algo={r.get('algo')} "
      f"setup={s.get('setup_seconds',0):.2f} plan={s.get('plan_seconds',0):.2f} boundary={s.get('boundary_variables','')} "
      f"coordHWM={c//1024}MiB allHWM={a//1024}MiB bytes/iter={s.get('bytes_per_iteration','')}")
PY
  echo "$(date +%T) $tag done rc=$rc" >&2
}

C=$bin/coordinator
gen() { [ -f "$work/g$1.ddx" ] || "$C" gen potts --height "$1" --width "$1" --labels 4 --rho 0.5 --seed 1 -o "$work/g$1.ddx" >/dev/null; }

# The 10^8 grid is written in the background while the small runs go (one
# core of sixteen; noted in runs.txt).
gen "$S6"; gen "$S7"
genpid=
if [ "$S8" != 0 ]; then
  (t0=$(date +%s); gen "$S8"; echo "gen ${S8}^2 .ddx: $(( $(date +%s) - t0 )) s, $(du -h "$work/g$S8.ddx" | cut -f1)" >>"$runs") &
  genpid=$!
fi

m=$work/g$S6.ddx
one s6-trws-t1 "$C" solve --algo trws --threads 1 --max-iter 100 --tol 0 "$m"
for t in $T6; do [ "$t" = 1 ] && continue
  one s6-trws-t$t "$C" solve --algo trws --threads "$t" --max-iter 30 --tol 0 "$m"; done
for w in $W6; do one r6-trws-w$w "$C" run --local --workers "$w" --time-limit "$TL6" --tol 0 "$m"; done
one s6-admm-t1 "$C" solve --algo admm --threads 1 --max-iter 10 --tol 0 "$m"
for w in $WA6; do one r6-admm-w$w "$C" run --local --algo admm --workers "$w" --time-limit "$TL6" --tol 0 "$m"; done

[ -n "$genpid" ] && wait "$genpid"
m=$work/g$S7.ddx
for t in $T7; do one s7-trws-t$t "$C" solve --algo trws --threads "$t" --time-limit "$TL7S" --tol 0 "$m"; done
for w in $W7; do one r7-trws-w$w "$C" run --local --workers "$w" --time-limit "$TL7" --tol 0 "$m"; done
for w in $WA7; do one r7-admm-w$w "$C" run --local --algo admm --workers "$w" --time-limit "$TL7" --tol 0 "$m"; done

tar czf "$out/traces.tar.gz" -C "$work" tr
if [ "$S8" = 0 ]; then cat "$runs"; exit 0; fi
rm -f "$work/g$S6.ddx"
m=$work/g$S8.ddx
one r8-trws-w16 "$C" run --local --workers 16 --max-iter 3 --tol 0 --out "$work/g8.mpe" "$m"
echo "r8 --out: $(head -c 20 "$work/g8.mpe" | head -1) lines=$(wc -w <"$work/g8.mpe") words" >>"$runs"
tar czf "$out/traces.tar.gz" -C "$work" tr
cat "$runs"
