# SPDX-License-Identifier: BSD-3-Clause
# Shared by bench/measure.sh and bench/report.sh: messages, reading the clients' name=value
# lines, small statistics, and (for measuring, after tests/helpers/lib.sh) the servers of a run.
# shellcheck shell=bash

say() { echo "bench: $*" >&2; }
fail() {
	say "FAILED: $*"
	exit 1
}

# field NAME LINE: the value of NAME=... in a line of name=value pairs.
field() { printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

# n1 WORDS K: the K-th of the space-separated WORDS.
n1() { echo "$1" | cut -d' ' -f"$2"; }

# stats: "median p99 max min" of the numbers on stdin (nearest rank).
stats() {
	sort -n | awk '{ v[NR] = $1 } END {
		if (NR == 0) { print "0 0 0 0"; exit }
		m = int((NR * 50 + 99) / 100); p = int((NR * 99 + 99) / 100)
		print v[m], v[p], v[NR], v[1] }'
}

ms() { awk -v us="$1" 'BEGIN { printf "%.2f", us / 1000 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

# past_link RAWDIR: where a section points for its comparisons with older code: the section of
# BENCHMARKS.md that bench/report.sh copies from bench/past.md, or the file itself for a section
# rendered on its own (no $RAWDIR/machine: not part of a whole run).
past_link() {
	if [ -f "$1/machine" ]; then
		echo "[Against older code](#against-older-code)"
	else
		echo "\`bench/past.md\`"
	fi
}

# The raw results are plain files in one directory, $RAW. Single values are NAME=value lines
# in $RAW/values and $RAW/machine, one per line, the value taken as it stands (no quoting).

# put FILE NAME VALUE: appends NAME=VALUE to $RAW/FILE; a value is one line.
put() { printf '%s=%s\n' "$2" "${3//$'\n'/ }" >> "$RAW/$1"; }

# load FILE: sets a shell variable for each NAME=value line of FILE.
load() {
	local line name
	while IFS= read -r line; do
		name=${line%%=*}
		[[ $name =~ ^[A-Z][A-Z0-9_]*$ ]] || fail "$1: not a NAME=value line: $line"
		printf -v "$name" '%s' "${line#*=}"
	done < "$1"
}

# The measuring helpers below need tests/helpers/lib.sh ($TMP, start_redis, on_free_port).

# run COMMAND...: runs a client and keeps its command line for the report, $TMP (and the run's
# state directory, $STATE) abbreviated.
run() {
	local line=$*
	[ -n "${STATE:-}" ] && line=${line//"$STATE"/\$STATE}
	line=${line//"$TMP"/\$TMP}
	printf '%s\n' "${line//"$TOP/"/}" >> "$RAW/commands"
	"$@"
}

# cpu_ticks PID: user plus system time, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# start_tcp_redis NAME [OPTIONS...]: start_redis on a free loopback port as well, in $PORT.
start_tcp_redis() { on_free_port PORT start_redis "$@" --port; }

# start_sentinel NAME MASTER-PORT: one redis-sentinel on a free loopback port, in $PORT,
# watching the master "fsm" on 127.0.0.1:MASTER-PORT (quorum 1); its pid in $TMP/NAME.pid, for
# stop_redis. Its config file is its own: a sentinel rewrites it.
start_sentinel() { on_free_port PORT sentinel_on "$@"; }

# sentinel_on NAME MASTER-PORT PORT: start_sentinel on a port given.
sentinel_on() {
	printf '%s\n' "port $3" "bind 127.0.0.1" "dir $TMP" \
		"sentinel monitor fsm 127.0.0.1 $2 1" > "$TMP/$1.conf"
	redis-sentinel "$TMP/$1.conf" > "$TMP/$1.log" 2>&1 &
	echo $! > "$TMP/$1.pid"
	PIDS="$PIDS $!"
	for _ in $(seq 100); do
		[ "$(redis-cli -p "$3" sentinel get-master-addr-by-name fsm 2> /dev/null |
			tail -n 1)" = "$2" ] && return 0
		kill -0 "$(cat "$TMP/$1.pid")" 2> /dev/null || break
		sleep 0.05
	done
	stop_redis "$1"
	echo "sentinel $1 did not start:" >&2
	cat "$TMP/$1.log" >&2
	return 1
}

# pair_stats FILE: name=value statistics over the pairs of a pairtime raw FILE ("a_us b_us
# a_failed b_failed a_cpu_us b_cpu_us") in which both commands succeeded: n; a_med, a_p90,
# b_med, b_p90 (ms); r_med, the median of the per-pair ratios B/A, its 95% confidence interval
# r_lo to r_hi (order statistics: no assumption on the distribution), and their quartiles
# r_p25, r_p75 and deciles r_p10, r_p90; d_med, the median of the per-pair B - A (ms), and its
# interval d_lo to d_hi; the same of the CPU times: ca_med, cb_med (ms), cr_med, cr_lo, cr_hi
# (B/A per pair), cd_med, cd_lo, cd_hi (B - A per pair, ms).
pair_stats() {
	awk '
	function sort(v, n,   i, j, t) {
		for (i = 2; i <= n; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
	}
	function at(v, n, p,   r) { r = int((n * p + 99) / 100); return v[r < 1 ? 1 : r] }
	$3 == 0 && $4 == 0 {
		n++; a[n] = $1; b[n] = $2; r[n] = $2 / $1; d[n] = $2 - $1
		ca[n] = $5; cb[n] = $6; cr[n] = $5 > 0 ? $6 / $5 : 0; cd[n] = $6 - $5
	}
	END {
		if (n == 0) { print "n=0"; exit }
		sort(a, n); sort(b, n); sort(r, n); sort(d, n)
		sort(ca, n); sort(cb, n); sort(cr, n); sort(cd, n)
		h = 1.96 * sqrt(n) / 2
		lo = int(n / 2 - h); hi = int(n / 2 + 1 + h + 0.999999)
		if (lo < 1) lo = 1
		if (hi > n) hi = n
		printf "n=%d a_med=%.1f a_p90=%.1f b_med=%.1f b_p90=%.1f", n, at(a, n, 50) / 1000,
			at(a, n, 90) / 1000, at(b, n, 50) / 1000, at(b, n, 90) / 1000
		printf " r_med=%.3f r_lo=%.3f r_hi=%.3f r_p25=%.3f r_p75=%.3f r_p10=%.3f r_p90=%.3f",
			at(r, n, 50), r[lo], r[hi], at(r, n, 25), at(r, n, 75), at(r, n, 10), at(r, n, 90)
		printf " d_med=%+.2f d_lo=%+.2f d_hi=%+.2f", at(d, n, 50) / 1000, d[lo] / 1000,
			d[hi] / 1000
		printf " ca_med=%.2f cb_med=%.2f cr_med=%.3f cr_lo=%.3f cr_hi=%.3f", at(ca, n, 50) / 1000,
			at(cb, n, 50) / 1000, at(cr, n, 50), cr[lo], cr[hi]
		printf " cd_med=%+.2f cd_lo=%+.2f cd_hi=%+.2f\n", at(cd, n, 50) / 1000, cd[lo] / 1000,
			cd[hi] / 1000
	}' "$1"
}

# ratio_goal RATIO LOW HIGH GOAL [WHAT]: what this run says of a goal of at most GOAL × for a
# median ratio and its 95% interval, LOW to HIGH; WHAT is what the ratio measures the cost of
# ("the module" unless given).
ratio_goal() {
	awk -v m="$1" -v lo="$2" -v hi="$3" -v g="$4" -v what="${5:-the module}" 'BEGIN {
		if (hi <= g) printf "**within the goal of at most %s ×**: so is its whole 95%% interval.\n", g
		else if (lo > g) printf "**over the goal of at most %s ×**: so is its whole 95%% interval.\n", g
		else printf "and this run cannot tell that from the goal of at most %s ×: its 95%% interval (%s to %s) has %s inside. The machine'"'"'s noise, the spread below, is wider than what %s costs; more pairs, or a quieter machine, narrow it.\n", g, lo, hi, g, what
	}'
}
