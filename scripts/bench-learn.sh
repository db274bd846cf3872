#!/usr/bin/env bash
# Structural SVM training benchmark (issue 16): primal objective against time
# for gdmm, gdmm --sublinear, bcfw and ssg on planted data, and test accuracy
# against the planted weights. Usage:
#   scripts/bench-learn.sh [T_SECONDS] [OUTDIR]
# Env: SETS="seq45 seq3000 ml200" (which data sets), ML_TIMEOUT (seconds a
# multilabel run may take beyond T before it is killed; default 2*T).
# SETS="brown105 brown425" (with DDRUN_BROWN, the Brown corpus) runs the
# issue-28 comparison instead (bench_brown below): train on 2,000
# sentences of genres a-h, test on 1,000 of genre j.
set -u
T=${1:-30}
OUT=${2:-$(mktemp -d /tmp/bench-learn.XXXXXX)}
SETS=${SETS:-"seq45 seq3000 ml200"}
ML_TIMEOUT=${ML_TIMEOUT:-$((2 * T))}
mkdir -p "$OUT"
BIN="$OUT/coordinator"
go build -o "$BIN" ./cmd/coordinator || exit 1
echo "# bench-learn: T=${T}s per run, out=$OUT, $(nproc) cores, $(date -u +%FT%TZ)"

gen() { # name family args...
	local name=$1 fam=$2
	shift 2
	case " $SETS " in *" $name "*) ;; *) return ;; esac
	[ -d "$OUT/$name" ] || "$BIN" gen "$fam" --quiet --seed 1 -o "$OUT/$name" "$@" 2>/dev/null || exit 1
}
case $SETS in *brown*) [ -d "${DDRUN_BROWN:-}" ] || { echo "bench-learn: SETS=$SETS needs DDRUN_BROWN, the Brown corpus directory" >&2; exit 1; } ;; esac
gen seq45 sequence --labels 45 --train 300 --test 300
gen seq3000 sequence --labels 3000 --features 2000 --train 40 --test 40
gen ml200 multilabel --labels 200 --train 200 --test 200

# primal at times: the last trace row at or before each checkpoint.
at() { # trace.csv seconds
	awk -F, -v t="$2" 'NR>1 && $2<=t {p=$4} END {if (p=="") print "-"; else printf "%.6g", p}' "$1"
}

# bench_brown SET TAGS PASSES EVERY: (1) every trainer at its default
# flags for PASSES passes, REPS times (median per-pass CPU seconds from
# pass_cpu_seconds: evaluations excluded), primal every EVERY passes; (2) bcfw
# and gdmm side by side (one core each, the same load) with --time-limit T:
# primal at equal wall time, and when gdmm reached bcfw's final primal.
bench_brown() {
	local set=$1 tags=$2 passes=$3 every=$4 reps=${REPS:-3}
	local tr="brown:$DDRUN_BROWN?genres=a-h&sentences=2000&tags=$tags" te="brown:$DDRUN_BROWN?genres=j&sentences=1000&tags=$tags"
	echo
	echo "## $set: $passes passes, primal every $every, $reps runs each, load: $(uptime | sed 's/.*load/load/')"
	echo
	echo "| algo | median CPU s/pass | primal by pass ($every, $((2 * every)), ...) | dual | test acc |"
	echo "|---|---|---|---|---|"
	for algo in bcfw gdmm ssg; do
		local per=() js
		for r in $(seq "$reps"); do
			js=$("$BIN" train --algo $algo --quiet --json --threads 1 --max-iter "$passes" --eval-every "$every" --trace "$OUT/$set.$algo.csv" --data "$tr" -o "$OUT/$set.$algo.w" 2>>"$OUT/$set.err") || continue
			per+=("$(echo "$js" | sed 's/.*"pass_cpu_seconds":\([0-9.e-]*\).*/\1/')")
		done
		local med=$(printf '%s\n' "${per[@]}" | sort -g | awk -v p="$passes" '{a[NR]=$1} END {printf "%.3f", a[int((NR+1)/2)]/p}')
		local prim=$(awk -F, 'NR>1 {printf "%s%.0f", (NR>2?", ":""), $4}' "$OUT/$set.$algo.csv")
		local dual=$(echo "$js" | sed 's/.*"dual":\([^,}]*\).*/\1/')
		local acc=$("$BIN" predict --quiet --json --weights "$OUT/$set.$algo.w" --data "$te" 2>/dev/null | sed 's/.*"accuracy":\([0-9.e-]*\).*/\1/')
		printf "| %s | %s | %s | %.0f | %.4f |\n" "$algo" "$med" "$prim" "$(echo "$dual" | sed s/null/nan/)" "${acc:-0}"
	done
	echo
	echo "Side by side, --time-limit ${T}s, load: $(uptime | sed 's/.*load/load/')"
	echo
	for algo in bcfw gdmm; do
		"$BIN" train --algo $algo --quiet --json --threads 1 --time-limit "$T" --trace "$OUT/$set.tl.$algo.csv" --data "$tr" -o "$OUT/$set.tl.$algo.w" >"$OUT/$set.tl.$algo.json" 2>>"$OUT/$set.err" &
	done
	wait
	local bfin=$(tail -1 "$OUT/$set.tl.bcfw.csv" | cut -d, -f4) bsec=$(tail -1 "$OUT/$set.tl.bcfw.csv" | cut -d, -f2)
	echo "| algo | passes | primal at ${T}s | test acc | first time at or below bcfw's final primal |"
	echo "|---|---|---|---|---|"
	for algo in bcfw gdmm; do
		local f=$OUT/$set.tl.$algo.csv
		local reach=$(awk -F, -v b="$bfin" 'NR>1 && $4<=b {printf "%.1f s", $2; exit}' "$f")
		local acc=$("$BIN" predict --quiet --json --weights "$OUT/$set.tl.$algo.w" --data "$te" 2>/dev/null | sed 's/.*"accuracy":\([0-9.e-]*\).*/\1/')
		printf "| %s | %s | %.0f | %.4f | %s |\n" "$algo" "$(tail -1 "$f" | cut -d, -f1)" "$(tail -1 "$f" | cut -d, -f4)" "${acc:-0}" "${reach:-never}"
	done
	echo
	echo "bcfw's final primal $bfin at ${bsec} s; traces in $OUT/$set.tl.*.csv (coordinator plot)"
}

for set in $SETS; do
	case $set in
	brown105) bench_brown "$set" cut "${PASSES:-20}" "${EVERY:-4}" && continue ;;
	brown425) bench_brown "$set" full "${PASSES:-8}" "${EVERY:-2}" && continue ;;
	esac
	case $set in
	seq*) train=$OUT/$set/train.conll test=$OUT/$set/test.conll lim=$((2 * T + 30)) ;;
	ml*) train=$OUT/$set/train.svm test=$OUT/$set/test.svm lim=$((T + ML_TIMEOUT)) ;;
	esac
	planted=$("$BIN" predict --quiet --json --weights "$OUT/$set/planted.weights" --data "$test" 2>/dev/null | sed 's/.*"accuracy":\([0-9.e-]*\).*/\1/')
	q1=$((T / 4)) q2=$((T / 2))
	echo
	echo "## $set ($(head -1 "$train" | sed 's/^# ddrun //')), planted test accuracy $planted"
	echo
	echo "| algo | passes | primal@${q1}s | primal@${q2}s | primal@${T}s | dual | gap | test acc |"
	echo "|---|---|---|---|---|---|---|---|"
	for algo in gdmm gdmm-sub bcfw ssg ssg-avg; do
		flags="--algo $algo"
		case $algo in
		gdmm-sub) flags="--algo gdmm --sublinear" ;;
		ssg-avg) flags="--algo ssg --average" ;;
		esac
		tr=$OUT/$set.$algo.csv
		rm -f "$tr"
		js=$(timeout "$lim" "$BIN" train $flags --quiet --json --time-limit "$T" --trace "$tr" --data "$train" -o "$OUT/$set.$algo.w" 2>"$OUT/$set.$algo.err")
		rc=$?
		if [ $rc -ne 0 ] || [ -z "$js" ]; then
			why=$(tail -1 "$OUT/$set.$algo.err" | cut -c1-80)
			[ $rc -eq 124 ] && why="killed after ${lim}s"
			echo "| $algo | - | - | - | - | - | - | failed: $why |"
			continue
		fi
		field() { echo "$js" | sed "s/.*\"$1\":\([^,}]*\).*/\1/"; }
		acc=$(timeout "$lim" "$BIN" predict --quiet --json --weights "$OUT/$set.$algo.w" --data "$test" 2>/dev/null | sed 's/.*"accuracy":\([0-9.e-]*\).*/\1/')
		printf "| %s | %s | %s | %s | %s | %.6g | %.4g | %s |\n" "$algo" "$(field iterations)" "$(at "$tr" $q1)" "$(at "$tr" $q2)" \
			"$(printf %.6g "$(field primal)")" "$(field dual | sed 's/null/nan/')" "$(field gap | sed 's/null/nan/')" "${acc:-"-"}"
	done
done
