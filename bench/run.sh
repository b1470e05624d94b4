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

# under DIR PARENT: the directory DIR lies under PARENT (both taken physically).
under() { case $(cd "$1" && pwd -P)/ in "$(cd "$2" && pwd -P)"/*) return 0 ;; esac; return 1; }

# measure: bench/measure.sh, with a /tmp of its own where it can (root, mount namespaces
# allowed, build/privtmp built, and the raw results in the checkout or outside /tmp):
# build/privtmp mounts a tmpfs on /tmp in a mount namespace, a checkout under /tmp kept
# visible at its path. pam_wrapper copies each login's service files into a directory
# /tmp/pam.X, which a process that ends without pam_end leaves behind: bench/ssh.sh's sshd
# (SSHD_SHARED_TMP=1: sshd as installed, in the run's /tmp) ends its processes in _exit. In a
# /tmp of the run's own, they go with it; elsewhere they stay in the host's, and it says so.
measure() {
	local stage keep="" rc why=""
	mkdir -p "$(dirname "$RAW")" || fail "mkdir $(dirname "$RAW")"
	if [ "$(id -u)" != 0 ] || ! unshare --mount --propagation private true 2> /dev/null; then
		why="not root, or no mount namespaces here"
	elif [ ! -x "$TOP/build/privtmp" ]; then
		why="build/privtmp is not built (make build/privtmp)"
	elif under "$(dirname "$RAW")" /tmp && ! under "$(dirname "$RAW")" "$TOP"; then
		why="the raw results go under /tmp ($RAW), which the run's own /tmp would hide"
	fi
	if [ -n "$why" ]; then
		say "measuring with the host's /tmp, where pam_wrapper's /tmp/pam.X may stay: $why"
		bash "$TOP/bench/measure.sh"
		return
	fi
	stage=$(mktemp -d /var/tmp/flowslot-bench-tmp.XXXXXX) || fail "mktemp"
	trap 'rmdir "$stage" 2> /dev/null' EXIT
	trap 'exit 130' INT TERM
	under "$TOP" /tmp && keep=$TOP
	PRIVTMP_EXEC=/bin/bash PRIVTMP_STAGE=$stage PRIVTMP_KEEP=$keep "$TOP/build/privtmp" \
		"$TOP/bench/measure.sh"
	rc=$?
	rmdir "$stage"
	trap - EXIT INT TERM
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
