#!/usr/bin/env bash
# Issue 25's bar: `coordinator run` on a msgpack grid (not .ddx) with an
# external nats-server on loopback and two worker processes. The run is
# sharded by default: the coordinator converts the msgpack file into the
# state directory (streaming) and keeps the boundary. Prints each process's
# peak RSS (/usr/bin/time -v), the run's dual and primal, and the states in
# --out.
#
#   scripts/bar-default-run.sh                    (SIDE=3163: 10^7 variables)
#   SIDE=1000 ITERS=3 scripts/bar-default-run.sh
#
# Set DIR to keep the grid between runs (1.26 GB of msgpack at SIDE=3163).
set -euo pipefail
cd "$(dirname "$0")/.."
side=${SIDE:-3163}
iters=${ITERS:-3}
dir=${DIR:-$(mktemp -d)}
[ -z "${DIR:-}" ] && trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/bin"
go build -o "$dir/bin/" ./cmd/coordinator ./cmd/worker
go build -o "$dir/bin/nats-server" github.com/nats-io/nats-server/v2
bin="$dir/bin"
model="$dir/grid$side.msgpack"
[ -f "$model" ] || "$bin/coordinator" gen potts --height "$side" --width "$side" --labels 4 -o "$model" >/dev/null 2>&1
rm -rf "$model.state"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$bin/nats-server" -a 127.0.0.1 -p "$port" >"$dir/nats.log" 2>&1 &
nats=$!
pids=()
trap 'kill "${pids[@]}" "$nats" 2>/dev/null || true; wait 2>/dev/null || true' EXIT
sleep 1
url="nats://127.0.0.1:$port"
# Messages sealed with a job key (the default: without one, run and worker
# refuse an external NATS server); the workers read the converted model
# where the coordinator writes it (--model-root: a shared filesystem).
key="$dir/job.key"
[ -f "$key" ] || python3 -c 'import secrets; print(secrets.token_hex(32))' >"$key"
for w in 1 2; do
  /usr/bin/time -v "$bin/worker" --nats "$url" --name "w$w" --job-key-file "$key" --state-dir "$dir/w$w" --model-root "$dir" >"$dir/w$w.log" 2>&1 &
  pids+=($!)
done
/usr/bin/time -v "$bin/coordinator" run --nats "$url" --workers 2 --max-iter "$iters" --tol 0 --json --job-key-file "$key" ${ALGO:+--algo "$ALGO"} \
  --out "$dir/x.mpe" "$model" >"$dir/out.json" 2>"$dir/coord.log"
# /usr/bin/time does not pass signals on: stop the workers under it.
for p in "${pids[@]}"; do pkill -INT -P "$p" 2>/dev/null || true; done
wait "${pids[@]}" 2>/dev/null || true
rss() { awk '/Maximum resident set size/ {print int($6/1024)}' "$1"; }
c=$(rss "$dir/coord.log"); w1=$(rss "$dir/w1.log"); w2=$(rss "$dir/w2.log")
python3 - "$dir/out.json" "$dir/x.mpe" "$side" "$c" "$w1" "$w2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
side, c, w1, w2 = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
tok = open(sys.argv[2]).read().split()
print(f"variables {side*side}: iterations {r['iterations']} dual {r['dual']} primal {r['primal']} "
      f"status {r['status']} sharded {'sharded' in r}")
print(f"peak RSS MiB: coordinator {c}, workers {w1} {w2}, all {c+w1+w2} (nats-server not counted)")
print(f"--out: {tok[0]} header, {int(tok[1])} states given, {len(tok)-2} states written")
PY
grep -E "converted|Elapsed" "$dir/coord.log" | sed 's/^/coordinator: /'
