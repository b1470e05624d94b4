#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# What one reservation costs the server as a schedule fills up (issue 18: lookups through
# indexes, not scans): this tree's src/slot.lua, on one private redis-server on a Unix socket
# (release 0.9.0's script, which scanned every ghost for WHO's and every place for per_host,
# was measured beside it once, on 2026-12-03: bench/past.md). Each schedule is brought to a
# state through the script itself: empty (one login admitted, its slot an interval ahead);
# ghosts, places given up by reserving and leaving, each from a WHO and a HOST of its own;
# PLACES places held, each from a HOST of its own. In each state, CALLS reservations that
# max_wait=0 refuses, from a WHO and a HOST the schedule has never seen: each looks WHO's
# ghost up, counts HOST's places and ghosts when per_host=1, ranks itself, and changes
# nothing. The time is the server's own: usec of EVALSHA in INFO commandstats after CONFIG
# RESETSTAT, over ROUNDS rounds. Writes its raw results into RAWDIR/lookup/ (bench/measure.sh
# calls it); bench/lookup-report.sh renders its section of BENCHMARKS.md from them. Nothing
# here asserts a time.
#
#   bash bench/lookup.sh RAWDIR     (after make; QUICK=1 for fewer calls)
set -u
# shellcheck source=tests/helpers/lib.sh
. "$(dirname "$0")/../tests/helpers/lib.sh"

[ $# -eq 1 ] || { echo "usage: bench/lookup.sh RAWDIR" >&2; exit 2; }
OUT=$1/lookup
if [ "${QUICK:-0}" = 1 ]; then CALLS=200 ROUNDS=2; else CALLS=2000 ROUNDS=4; fi
PLACES=3000
GHOSTS_MORE=3000 # ghosts made past the cap, which the script does not keep
# The ghosts this tree's script keeps at most per schedule (GHOSTS_MAX), and per HOST.
read -r PER_HOST_CAP GHOSTS_CAP <<< "$(sed -n \
	's/^local GHOST_US, GHOSTS_PER_HOST, GHOSTS_MAX = [0-9]*, \([0-9]*\), \([0-9]*\)$/\1 \2/p' \
	"$TOP/src/slot.lua")"
INTERVAL=3600000000 # 60 min: the head's slot stays ahead for the whole run
LEASE=3600000000    # no place lapses while it runs
BUILD_WAIT=$(((PLACES + 1) * INTERVAL))
say() { echo "lookup: $*" >&2; }
fail() {
	say "FAILED: $*"
	exit 1
}
[ -n "$GHOSTS_CAP" ] || fail "GHOSTS_MAX not found in src/slot.lua"
T0=$(date +%s)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)

rm -rf "$OUT"
mkdir -p "$OUT" || fail "mkdir $OUT"
start_redis lookup || exit 1
SOCK=$TMP/lookup.sock
cli() { redis-cli -s "$SOCK" "$@"; }
NEW=$(cli -x script load < "$TOP/src/slot.lua")

# lines SCRIPT KEY OP FROM TO MAX_WAIT PER_HOST: the calls of logins FROM to TO, each with an
# id, a WHO and a HOST of its own (login 0 is the head). SCRIPT is the raw results' name for
# the script: "new", this tree's, the only one.
lines() {
	awk -v sha="$NEW" -v key="$2" -v op="$3" -v from="$4" -v to="$5" -v wait="$6" \
		-v ph="$7" -v t="$INTERVAL" -v lease="$LEASE" 'BEGIN {
		for (i = from; i <= to; i++)
			printf "EVALSHA %s 1 %s %s %s 1 %s 0 p%d a%015x b%015x %s %s 0\n",
				sha, key, op, t, wait, i, i, i, ph, lease }'
}
# feed: runs the calls on stdin, one after the other; their verdicts, counted: "V:N,...".
feed() {
	cli --csv | cut -d, -f1 | sort | uniq -c | awk '{ printf "%s%s:%s", s, $2, $1; s = "," }'
}
# build SCRIPT KEY N LEAVE: the head admitted, N logins queued, and with LEAVE=1 all of them
# leaving, in order.
build() {
	local want=1:1 got
	[ "$3" -gt 0 ] && want="1:1,2:$3"
	{
		lines "$1" "$2" reserve 0 "$3" "$BUILD_WAIT" 0
		if [ "$4" = 1 ]; then
			lines "$1" "$2" leave 1 "$3" "$BUILD_WAIT" 0
			want="1:$(($3 + 1)),2:$3"
		fi
	} > "$TMP/build"
	got=$(feed < "$TMP/build")
	[ "$got" = "$want" ] || fail "$1 $2: verdicts $got, not $want"
}
# probe SCRIPT STATE KEY PER_HOST ROUND: CALLS / ROUNDS reservations refused by max_wait=0,
# timed by the server; a line of raw results.
probe() {
	local n=$((CALLS / ROUNDS)) before ghosts places verdicts stat after
	before=$(cli zcard "$3")
	ghosts=$(cli zcount "$3" 2e16 +inf)
	places=$(cli zcount "$3" 1 '(1e16')
	# The same login each time: a WHO and a HOST past the last one built.
	lines "$1" "$3" reserve 999999 999999 0 "$4" | awk -v n="$n" '{ for (i = 0; i < n; i++) print }' \
		> "$TMP/probe"
	cli config resetstat > /dev/null
	verdicts=$(feed < "$TMP/probe")
	stat=$(cli info commandstats | sed -n 's/^cmdstat_evalsha:calls=\([0-9]*\),usec=\([0-9]*\),.*/calls=\1 usec=\2/p')
	after=$(cli zcard "$3")
	echo "script=$1 state=$2 round=$5 per_host=$4 $stat verdicts=$verdicts ghosts=$ghosts places=$places members=$before members_after=$after" >> "$OUT/rounds"
}
# rounds STATE:KEY:PER_HOST...: ROUNDS rounds over the states, on the schedules lookup:new:KEY.
rounds() {
	local r spec state key ph
	for r in $(seq "$ROUNDS"); do
		for spec in "$@"; do
			IFS=: read -r state key ph <<< "$spec"
			probe new "$state" "lookup:new:$key" "$ph" "$r"
		done
	done
}

echo "bench/lookup.sh: $CALLS reservations refused by max_wait=0 per state, redis-cli --csv < their EVALSHA lines, in $ROUNDS rounds" >> "$1/commands"
# The states without ghosts first: a ghost is forgotten 60 s after it was made, so the ghosts
# are made last, and measured at once.
say "empty and $PLACES places held (per_host=1), $CALLS calls each, $ROUNDS rounds"
build new lookup:new:empty 0 0
build new lookup:new:places "$PLACES" 0
rounds empty:empty:0 empty-per-host:empty:1 places:places:1
say "$GHOSTS_CAP ghosts (the script's cap)"
build new lookup:new:ghosts "$GHOSTS_CAP" 1
# Past the cap, the script makes no more ghosts.
build new lookup:new:ghosts-more "$GHOSTS_MORE" 1
rounds ghosts:ghosts:0
put_param() { printf '%s=%s\n' "$1" "$2" >> "$OUT/params"; }
put_param CALLS "$CALLS"
put_param ROUNDS "$ROUNDS"
put_param PLACES "$PLACES"
put_param GHOSTS_MORE "$GHOSTS_MORE"
put_param GHOSTS_CAP "$GHOSTS_CAP"
put_param PER_HOST_CAP "$PER_HOST_CAP"
put_param GHOSTS_PAST_CAP "$(cli zcount lookup:new:ghosts-more 2e16 +inf)"
put_param INTERVAL_US "$INTERVAL"
put_param LEASE_US "$LEASE"
put_param DATE "$(date -u '+%Y-%m-%d at %H:%M UTC')"
put_param REV "$(git -C "$TOP" describe --always --dirty 2> /dev/null || echo "not a git tree")"
put_param REDIS_V "$(redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')"
put_param NPROC "$(nproc)"
put_param LOAD "$LOAD_START at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
put_param ELAPSED "$(($(date +%s) - T0))"
stop_redis lookup
# What a decision costs the server against a GET, and what the script runs inside (issue 22).
bash "$TOP/bench/decide.sh" "$1" || fail "the decisions (bench/decide.sh)"
say "done in $(($(date +%s) - T0)) s: $OUT"
