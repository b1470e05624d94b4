#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# What a decision costs the server against a GET, and what the script runs inside each of its
# operations (issue 22, part 2): part of measurement 11, called by bench/lookup.sh. On one
# private redis-server on a Unix socket, this tree's src/slot.lua (the script before issue 22's
# cuts was measured once, on 2026-12-03: bench/past.md):
#
# - Decisions: reservations from logins the schedule has never seen, each with a WHO and a
#   HOST of its own and per_host=1, at interval=60m so that each is queued at the back, on a
#   schedule with 0, 1000 and 10000 places held (built through the script itself, each from a
#   HOST of its own); and admissions, first in line on a schedule that holds no place
#   (interval=1ms: each one's slot within the commit window). Each batch is
#   redis-benchmark -c 10 -n REQS, the schedule copied back (COPY) before it, untimed, so that
#   a batch starts from the same state. Against GET, an EVALSHA of an empty script with the
#   same arguments, and the commands a queued reservation cannot do without and nothing else
#   (the floor), all batched alike, in ROUNDS rounds that take them in turn. The server's CPU
#   is its own sum_exec_runtime (/proc/PID/schedstat) over the batch; usec is Redis's own time
#   in the script (INFO commandstats).
# - The profile: each operation (reserve admitted, reserve queued, renew, leave, peek) in each
#   state, CALLS times, with slowlog-log-slower-than 0: the commands the script ran inside (INFO
#   commandstats, per call), one call's sequence of them with each one's time (SLOWLOG), and
#   the median time of the script call (SLOWLOG).
#
# Writes RAWDIR/lookup/decide, profile and decide-params; bench/decide-report.sh renders them.
# Nothing here asserts a time.
#
#   bash bench/decide.sh RAWDIR     (after make; QUICK=1 for fewer rounds)
set -u
# shellcheck source=tests/helpers/lib.sh
. "$(dirname "$0")/../tests/helpers/lib.sh"
# shellcheck source=bench/lib.sh
. "$TOP/bench/lib.sh"

[ $# -eq 1 ] || { echo "usage: bench/decide.sh RAWDIR" >&2; exit 2; }
OUT=$1/lookup
# QUICK=1: a smoke run, one batch each.
if [ "${QUICK:-0}" = 1 ]; then ROUNDS=1 BATCHES=1 CALLS=10 REQS=200; else ROUNDS=5 BATCHES=4 CALLS=100 REQS=500; fi
STATES="0 1000 10000"
INTERVAL=3600000000
LEASE=3600000000
WAIT=$((INTERVAL * 20000))
say() { echo "decide: $*" >&2; }
fail() {
	say "FAILED: $*"
	exit 1
}
mkdir -p "$OUT" || fail "mkdir $OUT"
rm -f "$OUT/decide" "$OUT/profile" "$OUT/decide-params"
T0=$(date +%s)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)

start_redis decide --slowlog-max-len 100000 || exit 1
SOCK=$TMP/decide.sock
PID=$(cat "$TMP/decide.pid")
cli() { redis-cli -s "$SOCK" "$@"; }
cpu_ns() { cut -d' ' -f1 "/proc/$PID/schedstat"; }

declare -A SHA
SHA[new]=$(cli -x script load < "$TOP/src/slot.lua")
SHA[empty]=$(cli script load 'return 0')
# The floor: what a reservation queued at the back must run, with no logic around it (the
# clock, the head, the lapsed leases, the rank, the place and its lease and the new head in one
# ZADD, the old head, the expiry); it answers nothing true.
SHA[floor]=$(cli -x script load << 'EOF'
local K = KEYS[1]
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
local head = redis.call('ZRANGEBYSCORE', K, '0', '0', 'LIMIT', '0', '1')[1]
redis.call('ZRANGEBYSCORE', K, '10000000000000000', string.format('%.0f', 1e16 + now))
local rank = redis.call('ZCOUNT', K, '1', '(10000000000000000')
local now_s = string.format('%.0f', now)
redis.call('ZADD', K, now_s, 'w:' .. ARGV[6], string.format('%.0f', 1e16 + now + ARGV[10]),
    'l:' .. ARGV[6], '0', 's:' .. now_s)
if head then
  redis.call('ZREM', K, head)
end
redis.call('PEXPIRE', K, 3600000)
return {2, 0, rank + 1, ARGV[2], ARGV[3]}
EOF
)
for s in empty floor new; do
	[[ ${SHA[$s]} =~ ^[0-9a-f]{40}$ ]] || fail "script $s not loaded: ${SHA[$s]}"
done

# build SCRIPT KEY N: the head admitted and N logins queued, each with an id, a WHO and a HOST
# of its own.
build() {
	awk -v sha="${SHA[$1]}" -v key="$2" -v n="$3" -v t="$INTERVAL" -v wait="$WAIT" \
		-v lease="$LEASE" 'BEGIN {
		for (i = 0; i <= n; i++)
			printf "EVALSHA %s 1 %s reserve %s 1 %s 0 p%d a%015x b%015x 1 %s 0\n",
				sha, key, t, wait, i, i, i, lease }' | cli > /dev/null
	[ "$(cli zcount "$2" 1 '(1e16')" = "$3" ] || fail "$1 $2: not $3 places held"
}
for n in $STATES; do build new "base:new:$n" "$n"; done
places() { cli zcount "$1" 1 '(1e16'; }

# The arguments of a reservation from a login the schedule has never seen (redis-benchmark
# fills __rand_int__ in).
probe() { echo "1 $1 reserve $2 1 $WAIT 0 __rand_int__ w__rand_int__ h__rand_int__ 1 $3 2000000"; }
# batch WHAT SCRIPT ROUND BASE COMMAND...: one batch of REQS requests, the schedule copied from
# BASE first ("-": none); a line of raw results.
batch() {
	local what=$1 script=$2 round=$3 base=$4 t0 t1 stat n=-1 odd=0
	shift 4
	[ "$base" = - ] || cli copy "$base" work replace > /dev/null
	cli config resetstat > /dev/null
	t0=$(cpu_ns)
	# Options first: after the command, they would be its arguments.
	redis-benchmark -s "$SOCK" -c 10 -n "$REQS" -r 1000000000 --csv "$@" > /dev/null 2>&1 ||
		fail "redis-benchmark $*"
	t1=$(cpu_ns)
	stat=$(cli info commandstats |
		sed -n 's/^cmdstat_\(evalsha\|get\):calls=\([0-9]*\),usec=\([0-9]*\),.*/calls=\2 usec=\3/p')
	# Each decision did what it is there for: a place held at the back, or an admission.
	case $what in
	queued:*) n=$(places work); [ "$n" = $((${what#queued:} + REQS)) ] || odd=1 ;;
	admitted) n=$(places adm); [ "$n" = 0 ] || odd=1 ;;
	esac
	echo "what=$what script=$script round=$round requests=$REQS cpu_ns=$((t1 - t0)) $stat places_after=$n odd=$odd" >> "$OUT/decide"
}

say "decisions: $ROUNDS rounds of $BATCHES batches of $REQS, against GET"
echo "bench/decide.sh: redis-benchmark -s \$TMP/decide.sock -c 10 -n $REQS -r 1000000000 EVALSHA SHA $(probe KEY 3600000000 3600000000) --csv (and GET, an empty script, the floor), $ROUNDS rounds of $BATCHES batches per state" >> "$1/commands"
for r in $(seq "$ROUNDS"); do
	for _ in $(seq "$BATCHES"); do
		batch get - "$r" - -t get
		# shellcheck disable=SC2046 # the arguments
		batch empty empty "$r" "base:new:1000" evalsha "${SHA[empty]}" $(probe work $INTERVAL $LEASE)
		# shellcheck disable=SC2046
		batch floor floor "$r" "base:new:1000" evalsha "${SHA[floor]}" $(probe work $INTERVAL $LEASE)
		cli del adm > /dev/null
		# shellcheck disable=SC2046
		batch admitted new "$r" - evalsha "${SHA[new]}" $(probe adm 1000 5000000)
		for n in $STATES; do
			# shellcheck disable=SC2046
			batch "queued:$n" new "$r" "base:new:$n" evalsha "${SHA[new]}" \
				$(probe work $INTERVAL $LEASE)
		done
	done
done

# --- The profile ---------------------------------------------------------------------------
# stats: the median of the numbers on stdin (nearest rank).
stats() { sort -n | awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : 0) }'; }
# call SCRIPT KEY OP I [INTERVAL]: the EVALSHA line of login I's call (a WHO and a HOST of its
# own).
call() {
	printf 'EVALSHA %s 1 %s %s %s 1 %s 0 q%d c%015x d%015x 1 %s 2000000\n' "${SHA[$1]}" "$2" "$3" \
		"${5:-$INTERVAL}" "$WAIT" "$4" "$4" "$4" "$LEASE"
}
# profile SCRIPT OP STATE: CALLS calls of OP on a copy of the state, with every command logged.
profile() {
	local s=$1 op=$2 n=$3 i key=work json seq median
	cli copy "base:$s:$n" work replace > /dev/null
	cli del adm > /dev/null
	case $op in
	renew | leave) # places of its own, held first
		for i in $(seq "$CALLS"); do call "$s" work reserve "$i"; done | cli > /dev/null ;;
	esac
	for i in $(seq "$CALLS"); do
		case $op in
		admitted) call "$s" adm reserve "$i" 1000 ;;
		queued) call "$s" work reserve "$((CALLS + i))" ;;
		*) call "$s" work "$op" "$i" ;;
		esac
	done > "$TMP/calls"
	[ "$op" = admitted ] && key=adm
	cli config resetstat > /dev/null
	cli config set slowlog-log-slower-than 0 > /dev/null
	cli slowlog reset > /dev/null
	cli --csv < "$TMP/calls" > "$TMP/replies"
	cli config set slowlog-log-slower-than 10000 > /dev/null
	# SLOWLOG, newest first, as JSON: [id,time,usec,[command,args...],client,name] each; the
	# last call's own commands follow it, the last first.
	json=$(cli --json slowlog get 100000 | grep -oE '\[[0-9]+,[0-9]+,[0-9]+,\["[^]]*\]' |
		grep -vE '^\[[0-9]+,[0-9]+,[0-9]+,\["(config|slowlog)"')
	json=$(echo "$json" | sed -n 's/^\[[0-9]*,[0-9]*,\([0-9]*\),\["\([^"]*\)".*/\2\/\1/p' |
		tr '[:lower:]' '[:upper:]')
	median=$(echo "$json" | sed -n 's/^EVALSHA\///p' | stats)
	seq=$(echo "$json" | awk 'NR > 1 && /^EVALSHA\// { exit } NR > 1 { l[++n] = $0 }
		END { for (i = n; i >= 1; i--) printf "%s%s", l[i], (i > 1 ? "," : "") }')
	inside=$(cli info commandstats | sed -n 's/^cmdstat_\([a-z]*\):calls=\([0-9]*\),.*/\1=\2/p' |
		grep -v '^\(evalsha\|config\|slowlog\|info\|hello\|command\)=' | tr '\n' ' ')
	echo "script=$s op=$op state=$n calls=$CALLS usec_median=$median seq=$seq verdicts=$(cut -d, -f1 "$TMP/replies" | sort | uniq -c | awk '{ printf "%s%s:%s", s, $2, $1; s = "," }') members=$(cli zcard "$key") $inside" >> "$OUT/profile"
}
say "the profile: $CALLS calls of each operation in each state, each command logged"
for n in $STATES; do
	for op in admitted queued renew leave peek; do
		# An admission is first in line: on a schedule that holds no place.
		[ "$op" = admitted ] && [ "$n" != 0 ] && continue
		profile new "$op" "$n"
	done
done

put_param() { printf '%s=%s\n' "$1" "$2" >> "$OUT/decide-params"; }
put_param DECIDE_ROUNDS "$ROUNDS"
put_param DECIDE_BATCHES "$BATCHES"
put_param DECIDE_REQS "$REQS"
put_param DECIDE_CALLS "$CALLS"
put_param DECIDE_STATES "$STATES"
put_param DECIDE_DATE "$(date -u '+%Y-%m-%d at %H:%M UTC')"
put_param DECIDE_REV "$(git -C "$TOP" describe --always --dirty 2> /dev/null || echo "not a git tree")"
put_param DECIDE_LOAD "$LOAD_START at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
put_param DECIDE_ELAPSED "$(($(date +%s) - T0))"
stop_redis decide
say "done in $(($(date +%s) - T0)) s"
