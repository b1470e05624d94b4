#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Measurement 8: what waiting costs Redis in queues spread over realistic waits, with the
# leases that fit the wait (pam_flowslot(7), "Leases that fit the wait") against a renewal of
# every place every 2 s, as before them, in the same run, on one private redis-server on TCP
# loopback (the module's calls to a Redis elsewhere go over TCP). Each row is a queue in a
# steady state (bench/queuecost.c spread): N places reserved at once, their waits spread from
# 0 to N intervals, renewed as the module renews them for WARM s and then SECONDS s measured,
# each one admitted replaced by a newcomer at the back, so that the queue keeps its length and
# its spread of waits. Hours of waiting cannot be simulated; that window of them can, as every
# place renews on its own cadence from a random point of it. Writes its raw results into
# RAWDIR/spread/ (bench/measure.sh calls it); bench/spread-report.sh renders its section of
# BENCHMARKS.md from them. Nothing here asserts a time.
#
#   bash bench/spread.sh RAWDIR     (after make and build/bench/queuecost; QUICK=1 for less)
set -u
# shellcheck source=tests/helpers/lib.sh
. "$(dirname "$0")/../tests/helpers/lib.sh"

[ $# -eq 1 ] || { echo "usage: bench/spread.sh RAWDIR" >&2; exit 2; }
OUT=$1/spread
# N:INTERVAL per row: the issue's storm (60 logins at interval=3s, waits up to 3 min) held
# steady, and 1,000 and 10,000 at interval=1s (waits up to about 17 min and 2.8 h).
if [ "${QUICK:-0}" = 1 ]; then
	ROWS="60:3s 500:1s" SECONDS_=2 WARM=1 IDLE=1
else
	ROWS="60:3s 1000:1s 10000:1s" SECONDS_=20 WARM=5 IDLE=3
fi
WORKERS=4
say() { echo "spread: $*" >&2; }
fail() {
	say "FAILED: $*"
	exit 1
}
T0=$(date +%s)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
QC=$TOP/build/bench/queuecost
[ -x "$QC" ] || fail "$QC: make build/bench/queuecost first"
# The clients' state_dir: the run's (bench/measure.sh, on a tmpfs), or, alone, one of $TMP.
STATE=${BENCH_STATE:-$TMP/state}

rm -rf "$OUT"
mkdir -p "$OUT" || fail "mkdir $OUT"
on_free_port PORT start_redis spread --port || fail "redis"
: > "$OUT/rows"
for row in $ROWS; do
	n=${row%%:*} interval=${row#*:}
	for mode in fit fixed; do
		say "$n waiters at interval=$interval, $mode: ${WARM} s, then ${SECONDS_} s measured"
		# shellcheck disable=SC2153 # PORT: set by on_free_port
		line=$("$QC" spread "$mode" "$n" "$SECONDS_" "$WARM" "$IDLE" "$WORKERS" \
			"url=redis://127.0.0.1:$PORT/0" "key=bench:spread:$n:$mode" "state_dir=$STATE" \
			"interval=$interval" timeout=10s 2> "$TMP/$n-$mode.err") ||
			fail "queuecost spread $mode $n: $line $(head -n 5 "$TMP/$n-$mode.err")"
		echo "$line" >> "$OUT/rows"
	done
done
stop_redis spread
{
	echo "ROWS=$ROWS"
	echo "SECONDS=$SECONDS_"
	echo "WARM=$WARM"
	echo "IDLE=$IDLE"
	echo "WORKERS=$WORKERS"
	echo "COMMAND=queuecost spread fit|fixed N $SECONDS_ $WARM $IDLE $WORKERS url=redis://127.0.0.1:PORT/0 key=bench:spread:N:MODE interval=INTERVAL timeout=10s"
	echo "DATE=$(date -u '+%Y-%m-%d at %H:%M UTC')"
	echo "REV=$(git -C "$TOP" describe --always --dirty 2> /dev/null || echo "not a git tree")"
	echo "REDIS_V=$(redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')"
	echo "NPROC=$(nproc)"
	echo "LOAD=$LOAD_START at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
	echo "ELAPSED=$(($(date +%s) - T0))"
} > "$OUT/params"
say "done in $(($(date +%s) - T0)) s: $OUT"
