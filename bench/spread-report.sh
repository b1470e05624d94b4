#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Measurement 8 of BENCHMARKS.md, what waiting costs Redis in queues spread over realistic
# waits, rendered from the raw results bench/spread.sh wrote into RAWDIR/spread/ alone.
# bench/report.sh calls it (PNG and LINK are taken and ignored: no picture).
#
#   bench/spread-report.sh RAWDIR [PNG [LINK]]
# shellcheck disable=SC2154 # SECONDS, WARM ...: set by load from the raw results
set -u
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

if [ $# -lt 1 ] || [ $# -gt 3 ]; then
	fail "usage: bench/spread-report.sh RAWDIR [PNG [LINK]]"
fi
RAW=$1/spread
if [ ! -f "$RAW/params" ] || [ ! -f "$RAW/rows" ]; then
	fail "$RAW: no raw results of measurement 8 (bench/spread.sh writes them)"
fi
load "$RAW/params"

# of N MODE NAME: NAME= of the row of N waiters renewed by MODE (fit or fixed).
of() { field "$3" "$(grep "^mode=$2 n=$1 " "$RAW/rows")"; }
# above N MODE: the server's CPU above its idle tick, % of one core.
above() { awk -v a="$(of "$1" "$2" cpu_pct)" -v i="$(of "$1" "$2" idle_cpu_pct)" 'BEGIN { printf "%.2f", a - i }'; }
# per_ws N MODE: µs of server CPU per waiter-second, above idle.
per_ws() {
	awk -v a="$(above "$1" "$2")" -v n="$1" 'BEGIN { printf "%.2f", a * 1e4 / n }'
}
ratio_of() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
# waits N INTERVAL_S: the longest wait in the queue, for people.
waits() {
	awk -v s="$(awk -v n="$1" -v t="$2" 'BEGIN { print n * t }')" 'BEGIN {
		if (s < 120) printf "%d s", s; else if (s < 7200) printf "%.0f min", s / 60;
		else printf "%.1f h", s / 3600 }'
}
rows() {
	local n t
	for row in $ROWS; do
		n=${row%%:*}
		t=$(of "$n" fit interval_s)
		for mode in fit fixed; do
			if [ $mode = fit ]; then
				label="**leases that fit the wait** (this tree)"
				first="| $n, \`interval=${row#*:}\` (waits up to $(waits "$n" "$t"))"
				due=""
			else
				label="a renewal every 2 s (before)"
				first="| "
				due=" (due: $(awk -v n="$n" 'BEGIN { printf "%.1f", n / 2 }'))"
			fi
			echo "$first | $label | $(of "$n" $mode calls_per_s)$due | $(of "$n" $mode late_max_ms) ($(of "$n" $mode over_margin)) | $(of "$n" $mode cpu_pct) | $(above "$n" $mode) | $(per_ws "$n" $mode) | $(ratio_of "$(per_ws "$n" $mode)" "$(per_ws "$n" fixed)") | $(of "$n" $mode script_us_per_call) |"
		done
	done
}

echo "## 8. What waiting costs Redis: leases that fit the wait, against a renewal every 2 s"
echo
echo "Each row is a queue in a steady state on one redis-server on TCP loopback"
echo "(\`bench/queuecost.c spread\`, run by \`bench/spread.sh\`): N places reserved at once on an"
echo "empty schedule, so that their waits spread from 0 to N intervals, then renewed by"
echo "$WORKERS processes for $WARM s and $SECONDS s more, measured, each place when the module"
echo "renews it: **leases that fit the wait** (this tree: \`slot_renew_us\` of its last answer,"
echo "and at its slot), or **a renewal every 2 s** (the cadence before, the baseline, on the"
echo "same script and server in the same run). Every call is \`rslot_call()\`, a connection, one"
echo "\`EVALSHA\` and a close, as the module's. A place admitted is replaced by a newcomer at the"
echo "back, so that the queue keeps its length and its spread, as one does where logins arrive"
echo "as fast as they go in. Hours of waiting cannot be simulated; a window of that steady state"
echo "can: each place's first renewal falls at a random point of its first period, as in a"
echo "queue that has run a while, so the window sees every place at every point of its cadence."
echo "The server's CPU is its own (\`INFO cpu\`, user + system, to the microsecond) over the"
echo "window, and above its idle tick (the same server, empty, for $IDLE s before). Late: the most a"
echo "renewal came after it was due, in ms (in brackets, those later than the 3 s margin of a"
echo "lease over its renewal). The script's own time is \`usec\` over \`calls\` of \`EVALSHA\` in"
echo "\`INFO commandstats\` over the window (time in the call, so a loaded machine inflates it):"
echo "the rest of the server's CPU is connections and wake-ups, which a few calls a second pay"
echo "each on its own and hundreds share."
echo
echo "| waiters (waits) | renewal | script calls a second | late, ms | Redis CPU, % of one core | above idle | CPU per waiter-second, µs | × every 2 s | the script's own µs a call |"
echo "|---|---|---|---|---|---|---|---|---|"
rows
echo
storm_fit=$(of 60 fit calls_per_s)
storm_fixed=$(of 60 fixed calls_per_s)
echo "**60 logins queued at \`interval=3s\` make $storm_fit script calls a second with leases that"
echo "fit the wait, where a renewal every 2 s makes $storm_fixed (the issue's goal: at most 8).**"
for row in $ROWS; do
	n=${row%%:*}
	[ "$n" = 60 ] && continue
	echo "With $n waiters, $(of "$n" fit calls_per_s) calls a second against $(of "$n" fixed calls_per_s),"
	echo "and $(per_ws "$n" fit) µs of Redis CPU per waiter-second against $(per_ws "$n" fixed)."
done
echo "A waiter near its turn (its slot within two intervals and 2 s) still renews every 2 s"
echo "with a 5 s lease; one further back renews after a quarter of the wait it was told, and at"
echo "least once a minute: the waiters within 4 minutes of their turn cost calls in proportion"
echo "to the logarithm of their waits, those further back one call a minute each, where every"
echo "waiter cost one every 2 s. A row whose baseline made fewer calls than due (N / 2 a second) fell behind"
echo "on this machine: its Redis CPU is then a lower bound, and the ratio flatters the"
LAST=${ROWS##* }
LAST=${LAST%%:*}
echo "baseline. The key's memory, the same for both: $(of "$LAST" fit bytes_per_waiter) bytes per waiter of"
echo "\`used_memory\` with $LAST places ($(of "$LAST" fit key_bytes_per_waiter) by \`MEMORY USAGE\` of the key)."
echo
if [ -f "$1/machine" ]; then
	echo "Measured by \`bench/spread.sh\` in $ELAPSED s of this run (load average $LOAD)."
else
	echo "Measured on its own, apart from the rest of this file: \`bash bench/spread.sh RAWDIR\`,"
	echo "then \`bash bench/spread-report.sh RAWDIR\`, on $DATE, tree \`$REV\`, $NPROC CPUs,"
	echo "redis-server $REDIS_V, in $ELAPSED s (load average $LOAD)."
fi
