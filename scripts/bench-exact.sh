#!/usr/bin/env bash
# Exact-mode benchmark (issue 14): runs `coordinator solve --time-limit T`
# and `toulbar2 -timer=T` on every instance of the shared instance folder
# and prints, per instance and in total, for both: certified optimal or not,
# the time to certify, the best primal and the final bound (ddrun's score
# convention: larger is better, bound = upper bound on the optimum score),
# and the best known score of OPTIMA.tsv. A certified optimum that differs
# from a proven best_known by more than 1e-3 is flagged WRONG.
#
#   scripts/bench-exact.sh [T...]           (default: 10 60, in seconds)
#   FLAGS="--exact --algo trws" ONLY="Grids DBN" scripts/bench-exact.sh 10
#
# FLAGS: the flags of `coordinator solve` (default --exact when FLAGS is unset; FLAGS= runs the anytime default); ONLY: a list
# of substrings of the instance paths to keep; INSTANCES: the folder
# (default ../shared/instances, as internal/instances); OUT: a folder to keep
# the raw outputs in (default: a temporary one). toulbar2 minimises energy
# = -score on integer costs (score * 10^precision, precision 7), offset by
# a constant it does not print: the script recovers the constant from the
# cost and energy of a solution line, and converts its lower bound on the
# cost into an upper bound on the score.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -gt 0 ]; then times=("$@"); else times=(10 60); fi
flags=${FLAGS---exact}
inst=${INSTANCES:-../shared/instances}
[ -f "$inst/OPTIMA.tsv" ] || { echo "bench-exact: no $inst/OPTIMA.tsv (set INSTANCES)" >&2; exit 2; }
command -v toulbar2 >/dev/null || { echo "bench-exact: toulbar2 is not installed (apt-get install toulbar2)" >&2; exit 2; }
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
[ -n "${OUT:-}" ] || trap 'rm -rf "$out"' EXIT
go build -o "$out/coordinator" ./cmd/coordinator
bin="$out/coordinator"

for T in "${times[@]}"; do
  rows="$out/rows-$T.tsv"
  : >"$rows"
  tail -n +2 "$inst/OPTIMA.tsv" | while IFS=$'\t' read -r file vars dom best proven ub _; do
    if [ -n "${ONLY:-}" ]; then
      keep=no
      for s in $ONLY; do [[ $file == *"$s"* ]] && keep=yes; done
      [ $keep = yes ] || continue
    fi
    model="$inst/$file"
    name=$(basename "$file" .uai)
    ev=()
    tev=()
    if [ -f "$model.evid" ]; then ev=(--evidence "$model.evid"); tev=("$model.evid"); fi
    # ddrun: the command's own time limit, a hard stop well after it.
    # shellcheck disable=SC2086
    timeout $((T + 60)) "$bin" solve --quiet --json --time-limit "$T" $flags "${ev[@]}" "$model" \
      >"$out/$name-$T.json" 2>"$out/$name-$T.err" || true
    timeout $((T + 60)) toulbar2 "$model" "${tev[@]}" -timer="$T" >"$out/$name-$T.tb2" 2>&1 || true
    python3 - "$name" "$best" "$proven" "$out/$name-$T.json" "$out/$name-$T.tb2" >>"$rows" <<'PY'
import json, re, sys
name, best, proven, jpath, tpath = sys.argv[1:6]
def ours():
    try:
        r = json.load(open(jpath))
    except Exception:
        return ["error", "-", "-", "-"]
    cert = r.get("status") == "optimal"
    p = r.get("primal")
    d = r.get("dual")
    return ["yes" if cert else "no", "%.2f" % r["seconds"] if cert else "-",
            "%.6f" % p if isinstance(p, (int, float)) else "none",
            "%.6f" % d if isinstance(d, (int, float)) else "-"]
def tb2():
    text = open(tpath, errors="replace").read()
    sols = re.findall(r"(?:New solution|Optimum): (\d+) energy: (-?[\d.e+]+)", text)
    opt = re.search(r"Optimum: (\d+) energy: (-?[\d.e+]+).* and ([\d.]+) seconds", text)
    gaps = re.findall(r"Optimality gap: \[(\d+), (\d+)\]", text)
    init = re.findall(r"Initial lower and upper bounds: \[(\d+), (\d+)\]", text)
    if opt:
        e = float(opt.group(2))
        return ["yes", "%.2f" % float(opt.group(3)), "%.6f" % -e, "%.6f" % -e]
    if not sols:
        return ["no", "-", "none", "-"]
    mult = 1e7
    (c0, e0), (c1, e1) = sols[0], sols[-1]
    if abs(float(e0) - float(e1)) > 1:
        mult = (int(c0) - int(c1)) / (float(e0) - float(e1))
    off = float(e1) - int(c1) / mult
    lb = gaps[-1][0] if gaps else (init[-1][0] if init else None)
    bound = "%.6f" % -(int(lb) / mult + off) if lb is not None else "-"
    return ["no", "-", "%.6f" % -float(e1), bound]
o, t = ours(), tb2()
flag = ""
b = float(best)
for who, r in (("ddrun", o), ("toulbar2", t)):
    if r[0] == "yes" and proven == "yes" and abs(float(r[2]) - b) > 1e-3 * max(1, abs(b)):
        flag += " WRONG:" + who
    if r[3] not in ("-",) and float(r[3]) < b - 1e-3 * max(1, abs(b)):
        flag += " BOUND<BEST:" + who
print("\t".join([name] + o + t + ["%.6f" % b, proven + flag]))
PY
  done
  echo "== T = ${T}s, coordinator solve $flags"
  python3 - "$rows" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
hdr = ["instance", "ddrun", "t_cert", "primal", "bound", "tb2", "t_cert", "primal", "bound", "best_known", "proven"]
w = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(hdr)]
line = lambda r: "  ".join(x.ljust(w[i]) for i, x in enumerate(r))
print(line(hdr))
for r in rows:
    print(line(r))
od = sum(r[1] == "yes" for r in rows)
td = sum(r[5] == "yes" for r in rows)
def better(r):
    try:
        return float(r[3]) > float(r[7]) + 1e-6
    except ValueError:
        return r[3] != "none" and r[7] == "none"
neither = [r for r in rows if r[1] != "yes" and r[5] != "yes"]
print("total: %d instances; certified: ddrun %d, toulbar2 %d; certified by neither: %d, of which ddrun's primal is better on %d"
      % (len(rows), od, td, len(neither), sum(better(r) for r in neither)))
wrong = [r[0] for r in rows if "WRONG" in r[10] or "BOUND<BEST" in r[10]]
if wrong:
    print("WRONG on:", " ".join(wrong))
PY
done
