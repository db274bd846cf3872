#!/usr/bin/env bash
# bench-trws.sh: ddrun's TRW-S against Kolmogorov's (MRFEnergy v1.3,
# TypeGeneral: dense tables) on the grids of issue 17, at equal iterations.
#
# usage: scripts/bench-trws.sh TRWS [WORKDIR]
#   TRWS     Kolmogorov's TRW_S-v1.3 source directory (with MRFEnergy.h;
#            the driver scripts/trws-kolmogorov.cpp is compiled against it
#            with g++ -O2), or an already built driver binary. The code is
#            Microsoft Research's (non-commercial licence): keep it outside
#            this repository.
#   WORKDIR  where the grids, builds and logs go (default: a temporary
#            directory, removed at the end)
# environment:
#   ITERS=100          iterations per run (both programs)
#   REPEATS=3          runs per program and grid; the table holds medians
#   THREADS="1 2"      ddrun's --threads values
#   GRIDS="300x300x4 100x100x8 1000x1000x4"   HEIGHTxWIDTHxLABELS
#   PAIR=dense         the grids' edge terms (`coordinator gen potts --pair`):
#                      dense, a random general table per edge (entries
#                      ~ U[-1, 1]), read as general tables by both programs:
#                      like for like; potts, couplings of both signs, which
#                      Kolmogorov's driver reads as general tables and ddrun's
#                      UAI reader recognises as Potts (O(L) messages)
#
# For every grid (`coordinator gen potts --pair PAIR`) the table gives, per
# program:
#   cpu ms/it   CPU time per iteration. Kolmogorov's: the process CPU time
#               of Minimize_TRW_S / ITERS (the driver's clock). ddrun's:
#               (CPU of `solve --max-iter ITERS` - CPU of `solve --max-iter
#               1`) / (ITERS-1), user+sys from /usr/bin/time, so reading
#               the file is left out of both. With threads > 1 CPU adds up
#               over the threads: compare wall times there.
#   wall ms/it  wall time per iteration: Kolmogorov's driver clock, ddrun's
#               --trace (seconds at the last iteration minus at the first,
#               over ITERS-1).
#   RSS MB      peak resident memory of the whole process (/usr/bin/time
#               -v), reading the model included.
#   model ratio ddrun / Kolmogorov for RSS minus each program's start-up
#               RSS (its peak on a 2x2 grid, printed first): the memory
#               the model, its reading and TRW-S take.
#   bound       the bound after ITERS iterations (score convention: minus
#               Kolmogorov's lower bound on the energy).
#   ratio       ddrun / Kolmogorov for cpu ms/it and RSS, medians of the
#               same run of this script.
# Other processes on the machine make single timings noisy: REPEATS runs
# alternate between the programs and the medians are reported.
set -euo pipefail

if [[ $# -lt 1 ]]; then
	sed -n '2,26p' "$0" >&2
	exit 2
fi
trws=$1
root=$(cd "$(dirname "$0")/.." && pwd)
iters=${ITERS:-100}
repeats=${REPEATS:-3}
threads=${THREADS:-1 2}
grids=${GRIDS:-300x300x4 100x100x8 1000x1000x4}
pair=${PAIR:-dense}
if [[ $# -ge 2 ]]; then
	work=$2
	mkdir -p "$work"
else
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
fi
[[ -x /usr/bin/time ]] || { echo "bench-trws: /usr/bin/time (GNU time) is needed for the peak RSS" >&2; exit 1; }
[[ $iters -ge 2 ]] || { echo "bench-trws: ITERS must be at least 2" >&2; exit 2; }

# Kolmogorov's driver.
if [[ -d $trws ]]; then
	[[ -f $trws/MRFEnergy.h ]] || { echo "bench-trws: $trws has no MRFEnergy.h" >&2; exit 1; }
	mkdir -p "$work/shim"
	: >"$work/shim/mex.h" # some copies include <mex.h> (MATLAB) without using it
	g++ -O2 -w -I"$work/shim" -I"$trws" -o "$work/trws-kolmogorov" "$root/scripts/trws-kolmogorov.cpp" \
		"$trws/MRFEnergy.cpp" "$trws/minimize.cpp" "$trws/ordering.cpp" "$trws/treeProbabilities.cpp"
	kol=$work/trws-kolmogorov
elif [[ -x $trws ]]; then
	kol=$trws
else
	echo "bench-trws: $trws is neither a TRW_S source directory nor an executable" >&2
	exit 1
fi
(cd "$root" && go build -o "$work/coordinator" ./cmd/coordinator)
coord=$work/coordinator

# field NAME FILE: the value after "NAME" on the driver's last line.
field() { tail -1 "$2" | tr ' ' '\n' | grep -A1 -x "$1" | tail -1; }
# rss FILE: peak RSS in MB from /usr/bin/time -v's report.
rss() { awk '/Maximum resident set size/ {printf "%.1f", $NF/1024}' "$1"; }
# cpu FILE: user+sys seconds from /usr/bin/time -v's report.
cpu() { awk '/User time/ {u=$NF} /System time/ {s=$NF} END {printf "%.4f", u+s}' "$1"; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%.4f\n", (a[NR/2]+a[NR/2+1])/2}'; }

# Start-up: each program's peak RSS on a 2x2 grid, what its binary and
# runtime take before any model (ddrun's coordinator links the whole CLI:
# the NATS server, Raft, Prometheus, the plotting fonts).
tiny=$work/$pair-2x2x2.uai
"$coord" gen potts -height 2 -width 2 -labels 2 -pair "$pair" -quiet -o "$tiny" >/dev/null 2>"$work/gen.err" ||
	{ cat "$work/gen.err" >&2; exit 1; }
ks="" ds=""
for rep in $(seq "$repeats"); do
	/usr/bin/time -v "$kol" "$tiny" 2 >/dev/null 2>"$work/k.time"
	ks+="$(rss "$work/k.time") "
	/usr/bin/time -v "$coord" solve --algo trws --threads 1 --tol 0 --max-iter 2 --quiet "$tiny" >/dev/null 2>"$work/d.time"
	ds+="$(rss "$work/d.time") "
done
kstart=$(tr ' ' '\n' <<<"$ks" | grep . | median)
dstart=$(tr ' ' '\n' <<<"$ds" | grep . | median)
echo "start-up RSS (a 2x2 grid): kolmogorov $kstart MB, ddrun $dstart MB; 'model ratio' compares RSS minus start-up"
printf '%-14s %-12s %10s %11s %8s %18s %10s %10s %11s\n' grid program "cpu ms/it" "wall ms/it" "RSS MB" bound "cpu ratio" "RSS ratio" "model ratio"
for grid in $grids; do
	IFS=x read -r h w l <<<"$grid"
	uai=$work/$pair-$grid.uai
	[[ -f $uai ]] || "$coord" gen potts -height "$h" -width "$w" -labels "$l" -pair "$pair" -quiet -o "$uai" >/dev/null 2>"$work/gen.err" ||
		{ cat "$work/gen.err" >&2; exit 1; }
	declare -A c=() wl=() r=() b=()
	for rep in $(seq "$repeats"); do
		/usr/bin/time -v "$kol" "$uai" "$iters" >"$work/k.out" 2>"$work/k.time"
		c[k]+="$(field cpu_ms_per_iteration "$work/k.out") "
		wl[k]+="$(field wall_ms_per_iteration "$work/k.out") "
		r[k]+="$(rss "$work/k.time") "
		b[k]=$(field bound "$work/k.out")
		for t in $threads; do
			/usr/bin/time -v "$coord" solve --algo trws --threads "$t" --tol 0 --max-iter 1 --quiet "$uai" >/dev/null 2>"$work/d1.time"
			/usr/bin/time -v "$coord" solve --algo trws --threads "$t" --tol 0 --max-iter "$iters" --quiet --json \
				--trace "$work/d.csv" "$uai" >"$work/d.json" 2>"$work/d.time"
			c[$t]+="$(awk -v a="$(cpu "$work/d1.time")" -v b="$(cpu "$work/d.time")" -v n="$iters" 'BEGIN {printf "%.3f", (b-a)*1000/(n-1)}') "
			wl[$t]+="$(awk -F, -v n="$iters" '$1 == 1 && !f {t1=$2; f=1} $1 == n {tn=$2} END {printf "%.3f", (tn-t1)*1000/(n-1)}' "$work/d.csv") "
			r[$t]+="$(rss "$work/d.time") "
			b[$t]=$(grep -o '"dual":[^,]*' "$work/d.json" | cut -d: -f2)
		done
	done
	kc=$(tr ' ' '\n' <<<"${c[k]}" | grep . | median)
	kr=$(tr ' ' '\n' <<<"${r[k]}" | grep . | median)
	printf '%-14s %-12s %10.2f %11.2f %8.1f %18.6f\n' "$grid" kolmogorov "$kc" \
		"$(tr ' ' '\n' <<<"${wl[k]}" | grep . | median)" "$kr" "${b[k]}"
	for t in $threads; do
		dc=$(tr ' ' '\n' <<<"${c[$t]}" | grep . | median)
		dr=$(tr ' ' '\n' <<<"${r[$t]}" | grep . | median)
		printf '%-14s %-12s %10.2f %11.2f %8.1f %18.6f %10.2f %10.2f %11.2f\n' "$grid" "ddrun t=$t" "$dc" \
			"$(tr ' ' '\n' <<<"${wl[$t]}" | grep . | median)" "$dr" "${b[$t]}" \
			"$(awk -v a="$dc" -v b="$kc" 'BEGIN {printf "%.2f", a/b}')" "$(awk -v a="$dr" -v b="$kr" 'BEGIN {printf "%.2f", a/b}')" \
			"$(awk -v a="$dr" -v b="$kr" -v sa="$dstart" -v sb="$kstart" 'BEGIN {printf "%.2f", (a-sa)/(b-sb)}')"
	done
	unset c wl r b
done
