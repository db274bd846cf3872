#!/usr/bin/env bash
# Issue 25's failover time on a many-core machine: a sharded DD-ADMM run
# of a 4-label Potts grid (rho 0.5, from `coordinator gen potts`, .ddx) on
# 2 worker processes and a spare over a NATS server on loopback, one worker
# holding a part killed (SIGKILL) once the --trace holds KILLAT rows (it
# holds each row back until the next report: iteration KILLAT+1 is done).
# Per run, seconds from the kill until: the loss is seen (the
# coordinator's "worker lost" line), the next epoch's parts are built
# ("parts built" of epoch 2) and its first iteration is done (its report
# writes the trace's next row). Then the medians of RUNS runs.
#
#   BIN=/path/to/bin OUT=/tmp/out scripts/failover-device.sh          (10^7: SIDE=3163)
#   BIN=/tmp/bin SIDE=1000 RUNS=3 scripts/failover-device.sh          (10^6, to try it)
#
# BIN: a folder with coordinator and worker (the machine needs no Go; without
# BIN they are built here with go); the NATS server is BIN/nats-server, or
# nats-server on PATH, else the coordinator's embedded one (--nats-listen;
# the output says which). OUT gets failover.txt (the table) and the logs'
# tails; WORK keeps the grid between runs (10^7: 0.8 GB; MODEL: a .ddx of
# one's own instead, which the workers read under WORK). SIDE, RUNS
# (default 3), KILLAT (default 3), FITERS (iterations of a run, default
# 12: enough to pass the kill), LOST (--lost-after, default 3s), WTHREADS
# (threads of each worker, default 1).
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-}
if [ -z "$bin" ]; then
  bin=$(mktemp -d)
  go build -o "$bin/" ./cmd/coordinator ./cmd/worker || exit 1
fi
out=${OUT:-/tmp/failover-out}
work=${WORK:-/tmp/failover-work}
mkdir -p "$out" "$work"
side=${SIDE:-3163}; runs=${RUNS:-3}; killat=${KILLAT:-3}; iters=${FITERS:-12}; lost=${LOST:-3s}; threads=${WTHREADS:-1}
table=$out/failover.txt
model=${MODEL:-$work/g$side.ddx}
[ -f "$model" ] || "$bin/coordinator" gen potts --height "$side" --width "$side" --labels 4 --rho 0.5 --seed 1 -o "$model" >/dev/null || exit 1
key=$work/job.key
[ -f "$key" ] || python3 -c 'import secrets; print(secrets.token_hex(32))' >"$key"
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }
nats=
if [ -x "$bin/nats-server" ]; then nats=$bin/nats-server; else nats=$(command -v nats-server || true); fi
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT
echo "host: $(nproc) cores; model $(basename "$model"); 2 workers + spare, $threads thread(s) each; --lost-after $lost; SIGKILL once the trace has $killat rows; NATS: ${nats:-embedded in the coordinator}" >"$table"
echo "run | loss seen s | next epoch's parts built s | first iteration of the next epoch s | failovers | redone | dual >= primal" >>"$table"

for r in $(seq "$runs"); do
  pids=()
  p=$(port)
  url=nats://127.0.0.1:$p
  if [ -n "$nats" ]; then
    "$nats" -a 127.0.0.1 -p "$p" >"$work/nats.log" 2>&1 &
    pids+=($!)
    natsflag=(--nats "$url")
    sleep 0.5
  else
    natsflag=(--nats-listen "127.0.0.1:$p")
  fi
  rm -f "$work/trace.csv"
  "$bin/coordinator" run "${natsflag[@]}" --workers 2 --algo admm --lost-after "$lost" --max-iter "$iters" --tol 0 \
    --json --trace "$work/trace.csv" --job-key-file "$key" "$model" >"$work/out.json" 2>"$work/coord.log" &
  coord=$!
  pids+=($coord)
  for k in 1 2 3; do
    rm -rf "$work/w$k"
    "$bin/worker" --nats "$url" --connect-timeout 60s --name "w$k" --threads "$threads" --job-key-file "$key" \
      --state-dir "$work/w$k" --model-root "$work" --log-format json >"$work/w$k.log" 2>&1 &
    wpid[$k]=$!
    pids+=($!)
  done
  # The trace holds each row back until the next report: once the loss
  # is logged no report of the first epoch can come, so the next row to
  # appear is written by the next epoch's first report (timed here, every
  # 20 ms or so).
  killed= resumed= lossrows=
  while kill -0 "$coord" 2>/dev/null; do
    n=$(grep -c '^[0-9]*,[^,]*,' "$work/trace.csv" 2>/dev/null); n=${n:-0}
    if [ -z "$killed" ] && [ "$n" -ge "$killat" ]; then
      for k in 1 2 3; do
        if grep -q 'job assigned' "$work/w$k.log"; then
          kill -KILL "${wpid[$k]}"
          killed=$(now)
          break
        fi
      done
    elif [ -n "$killed" ] && [ -z "$lossrows" ] && grep -q 'worker lost' "$work/coord.log"; then
      lossrows=$n
    elif [ -n "$lossrows" ] && [ -z "$resumed" ] && [ "$n" -gt "$lossrows" ]; then
      resumed=$(now)
    fi
    sleep 0.02
  done
  wait "$coord"; rc=$?
  for k in 1 2 3; do kill -INT "${wpid[$k]}" 2>/dev/null; done
  cleanup
  tail -c 4000 "$work/coord.log" >"$out/coord$r.log"
  if [ "$rc" != 0 ] || [ -z "$killed" ]; then
    echo "$r | failed (rc $rc, killed ${killed:+yes}): $(tail -1 "$work/coord.log")" >>"$table"
    continue
  fi
  python3 - "$r" "$work/out.json" "$work/coord.log" "$killed" "${resumed:-nan}" >>"$table" <<'PY'
import datetime, json, math, re, sys
r, js, log, kill, resumed = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
res = json.load(open(js))
lines = open(log).read().splitlines()
def at(l):
    t = re.search(r"time=(\S+)", l).group(1)
    return datetime.datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp()
lost = [at(l) for l in lines if "worker lost" in l]
built = [at(l) for l in lines if "parts built" in l]
f = lambda x: f"{x - kill:.2f}" if x is not None and not math.isnan(x) else "-"
print(f"{r} | {f(lost[0] if lost else None)} | {f(built[1] if len(built) > 1 else None)} | {f(resumed)} | "
      f"{res.get('failovers')} | {res.get('redone_iterations')} | {res['dual']:.2f} >= {res['primal']:.2f}")
PY
done
python3 - "$table" >>"$table" <<'PY'
import statistics, sys
rows = [l.split(" | ") for l in open(sys.argv[1]).read().splitlines()[2:] if "failed" not in l]
def med(i):
    xs = [float(x[i]) for x in rows if x[i] != "-"]
    return f"{statistics.median(xs):.2f}" if xs else "-"
print(f"median of {len(rows)} | {med(1)} | {med(2)} | {med(3)} | | |")
PY
cat "$table"
