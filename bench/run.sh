#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# make bench and make bench-report: bench/measure.sh writes the raw results into one directory,
# then bench/report.sh renders BENCHMARKS.md and bench/timeline.png from that directory alone.
# With QUICK=1, fewer and shorter rounds, into build/bench/BENCHMARKS-quick.md (raw results in
# build/bench/raw-quick/). BENCH_OUT= names another output file, BENCH_RAW= another raw
# directory. "run.sh report" renders again from the last raw results, measuring nothing.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$TOP/bench/lib.sh"

QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then
	OUT=${BENCH_OUT:-$TOP/build/bench/BENCHMARKS-quick.md}
	RAW=${BENCH_RAW:-$TOP/build/bench/raw-quick}
	COMMAND="make bench QUICK=1"
else
	OUT=${BENCH_OUT:-$TOP/BENCHMARKS.md}
	RAW=${BENCH_RAW:-$TOP/build/bench/raw}
	COMMAND="make bench"
fi
[ -n "${BENCH_OUT:-}" ] && COMMAND="$COMMAND BENCH_OUT=$BENCH_OUT"
case $OUT in /*) ;; *) OUT=$TOP/$OUT ;; esac
case $RAW in /*) ;; *) RAW=$TOP/$RAW ;; esac
if [ "$OUT" = "$TOP/BENCHMARKS.md" ]; then
	PNG=$TOP/bench/timeline.png
	PNG_LINK=bench/timeline.png
else
	PNG=${OUT%.md}-timeline.png
	PNG_LINK=$(basename "$PNG")
fi
mkdir -p "$(dirname "$OUT")"

# measure: bench/measure.sh; as root, with a /tmp of its own (build/privtmp: a tmpfs in a mount
# namespace, a checkout under /tmp kept visible at its path). pam_wrapper copies each login's
# service files into a directory /tmp/pam.X, which a login the bench kills leaves behind
# (measurement 5 holds logins in the queue, then kills them): in a /tmp of the run's own, they
# go with it. Not as root, they stay in the host's /tmp.
measure() {
	local stage keep="" rc
	if [ "$(id -u)" != 0 ]; then
		bash "$TOP/bench/measure.sh"
		return
	fi
	stage=$(mktemp -d /var/tmp/flowslot-bench-tmp.XXXXXX) || fail "mktemp"
	case $(cd "$TOP" && pwd -P)/ in "$(cd /tmp && pwd -P)"/*) keep=$TOP ;; esac
	PRIVTMP_EXEC=/bin/bash PRIVTMP_STAGE=$stage PRIVTMP_KEEP=$keep "$TOP/build/privtmp" \
		"$TOP/bench/measure.sh"
	rc=$?
	rmdir "$stage"
	return "$rc"
}

case ${1:-} in
"") BENCH_RAW=$RAW BENCH_COMMAND=$COMMAND measure || fail "measuring" ;;
report) ;;
*) fail "usage: bench/run.sh [report]" ;;
esac
say "rendering $OUT from $RAW"
bash "$TOP/bench/report.sh" "$RAW" "$PNG" "$PNG_LINK" > "$OUT.tmp" || fail "rendering $OUT"
mv "$OUT.tmp" "$OUT"
say "done: $OUT"
