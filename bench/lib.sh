# SPDX-License-Identifier: BSD-3-Clause
# Shared by bench/measure.sh and bench/report.sh: messages, reading the clients' name=value
# lines, small statistics, and (for measuring, after tests/lib.sh) the servers of a run.
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

# The measuring helpers below need tests/lib.sh ($TMP, start_redis, on_free_port).

# run COMMAND...: runs a client and keeps its command line for the report, $TMP abbreviated.
run() {
	local line=$*
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

# module_at REV: pam_flowslot.so as the tree of commit REV builds it, with that tree's own
# Makefile, in build/bench/module-REV/ (kept there: later runs reuse it; this needs the git
# history). Sets MODULE_AT, its path by $TREE (for stack lines), and MODULE_BUILT, when it was
# built (for the report).
# shellcheck disable=SC2034 # MODULE_AT, MODULE_BUILT: for the caller
module_at() {
	local rev=$1 dir=$TOP/build/bench/module-$1 b0
	MODULE_AT=$TREE/build/bench/module-$rev/pam_flowslot.so
	echo "git archive $rev | tar -x -C build/bench/module-$rev && make -C build/bench/module-$rev pam_flowslot.so" >> "$RAW/commands"
	if [ -f "$dir/pam_flowslot.so" ]; then
		MODULE_BUILT="by an earlier run, and reused"
		return 0
	fi
	say "building the module of $rev in build/bench/module-$rev/"
	b0=$(date +%s)
	rm -rf "$dir.new"
	mkdir -p "$dir.new" || fail "mkdir $dir.new"
	git -C "$TOP" archive "$rev" | tar -x -C "$dir.new" ||
		fail "git archive $rev: this needs the git history"
	make -C "$dir.new" pam_flowslot.so > "$dir.new/build.log" 2>&1 ||
		fail "building $rev's module: $(tail -n 5 "$dir.new/build.log")"
	rm -rf "$dir"
	mv "$dir.new" "$dir" || fail "mv $dir"
	MODULE_BUILT="by this run, in $(($(date +%s) - b0)) s"
}
