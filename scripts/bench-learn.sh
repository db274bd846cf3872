#!/usr/bin/env bash
# Structural SVM training benchmark (issue 16): primal objective against time
# for gdmm, gdmm --sublinear, bcfw and ssg on planted data, and test accuracy
# against the planted weights. Usage:
#   scripts/bench-learn.sh [T_SECONDS] [OUTDIR]
# Env: SETS="seq45 seq3000 ml200" (which data sets), ML_TIMEOUT (seconds a
# multilabel run may take beyond T before it is killed; default 2*T).
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
	[ -d "$OUT/$name" ] || "$BIN" gen "$fam" --quiet --seed 1 -o "$OUT/$name" "$@" 2>/dev/null || exit 1
}
gen seq45 sequence --labels 45 --train 300 --test 300
gen seq3000 sequence --labels 3000 --features 2000 --train 40 --test 40
gen ml200 multilabel --labels 200 --train 200 --test 200

# primal at times: the last trace row at or before each checkpoint.
at() { # trace.csv seconds
	awk -F, -v t="$2" 'NR>1 && $2<=t {p=$4} END {if (p=="") print "-"; else printf "%.6g", p}' "$1"
}

for set in $SETS; do
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
