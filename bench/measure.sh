#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# make bench, the measuring: pam_flowslot against the alternatives, in one run on this machine.
# Private redis-servers on loopback or on Unix sockets in a temporary directory, stopped by pid
# (tests/helpers/lib.sh); logins through the C clients of bench/ (the module's own code path: the
# library objects, rslot_call, queue_wait) or through pamtester under pam_wrapper.
# Writes the raw results only, into the directory $BENCH_RAW, replaced at the end of a run that
# completed: the clients' own output, NAME=value lines in "values", the machine in "machine",
# the command lines in "commands". bench/report.sh renders BENCHMARKS.md from them.
# With QUICK=1, fewer and shorter rounds. Nothing here asserts a time.
set -u
# shellcheck source=tests/helpers/lib.sh
. "$(dirname "$0")/../tests/helpers/lib.sh"
# shellcheck source=bench/lib.sh
. "$TOP/bench/lib.sh"

QUICK=${QUICK:-0}
BIN=$TOP/build/bench
if [ "$QUICK" = 1 ]; then
	M1_REPS=1 M2_PAIRS=50 M3_N=50 M4_SECONDS=1 M4_GET_N=50000 M4_EVAL_N=30000
	M2_COST_ROUNDS=200 M5_N=100 M5_BASE=5 M5_WINDOW=2 M6_ROUNDS=300
	M7_WAITS=0,3,6 M9_N=9
else
	M1_REPS=5 M2_PAIRS=500 M3_N=50 M4_SECONDS=5 M4_GET_N=500000 M4_EVAL_N=300000
	M2_COST_ROUNDS=1000 M5_N=1000 M5_BASE=10 M5_WINDOW=5 M6_ROUNDS=3000
	M7_WAITS=0,1,3,5,10,20 M9_N=30
fi
# The smoke run's smaller sizes where they save the most time: measurement 1 without N = 200
# (its queued logins alone wait 20 s), fewer logins in 3 and 9.
if [ "$QUICK" = 1 ]; then M1_NS="10 50" M3_N=20 M9_N=6; else M1_NS="10 50 200"; fi
FINAL=${BENCH_RAW:?the raw results directory}
case $FINAL in /*) ;; *) FINAL=$TOP/$FINAL ;; esac
RAW=$FINAL.new
rm -rf "$RAW"
mkdir -p "$RAW" || fail "mkdir $RAW"
: > "$RAW/commands"
# The run's state_dir (counters, node caches, url=local's schedules): one directory, a
# subdirectory per measurement, on a tmpfs as /run normally is, removed at the end. Never the
# host's /run/pam_flowslot: the clients refuse to run without a state_dir= (bench_opt).
if STATE=$(mktemp -d /dev/shm/flowslot-bench.XXXXXX 2> /dev/null); then
	STATE_FS="a tmpfs (\`/dev/shm\`), as \`/run\` normally is"
else
	STATE=$TMP/state
	mkdir -m 0700 "$STATE" || fail "mkdir $STATE"
	STATE_FS="$(df --output=fstype "$TMP" | tail -n 1) (no \`/dev/shm\` here), where \`/run\` is normally a tmpfs"
fi
trap 'cleanup; rm -rf "$STATE"' EXIT
for m in m1 m2 m3 m4 m6 m7 m8 m9q m9f; do
	mkdir -m 0700 "$STATE/$m" || fail "mkdir $STATE/$m"
done
CONC=50 # concurrent clients in measurement 4, for redis-benchmark and for the module alike
RUN_START=$(date +%s)

# The run's parameters and the machine, for the report.
for v in QUICK M1_REPS M1_NS M2_PAIRS M2_COST_ROUNDS M3_N M4_SECONDS M4_GET_N M4_EVAL_N M5_N \
	M5_BASE M5_WINDOW M6_ROUNDS M7_WAITS M9_N CONC; do
	put values "$v" "${!v}"
done
put values COMMAND "${BENCH_COMMAND:-QUICK=$QUICK bash bench/measure.sh}"
put values TICK "$(getconf CLK_TCK)"
put machine DATE "$(date -u '+%Y-%m-%d at %H:%M UTC')"
put machine NPROC "$(nproc)"
put machine CPU_MODEL "$(lscpu 2> /dev/null | sed -n 's/^Model name: *//p' | head -1)"
put machine MEM_GIB "$(awk '/^MemTotal:/ { printf "%.0f", $2 / 1048576 }' /proc/meminfo)"
put machine OS "$(. /etc/os-release 2> /dev/null && echo "$PRETTY_NAME")"
put machine KERNEL "$(uname -r)"
put machine REDIS_V "$(redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')"
put machine HIREDIS_V "$(dpkg-query -W -f='${Version}' libhiredis-dev 2> /dev/null)"
put machine PAM_V "$(dpkg-query -W -f='${Version}' libpam0g 2> /dev/null)"
put machine WRAP_V "$(dpkg-query -W -f='${Version}' libpam-wrapper 2> /dev/null)"
put machine GCC_V "$(${CC:-cc} -dumpfullversion 2> /dev/null)"
# The tree as it was at the start: the report rewrites bench/timeline.png, which would make it
# dirty.
put machine REV "$(git -C "$TOP" describe --always --dirty 2> /dev/null || echo "not a git tree")"
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
put machine LOAD_START "$LOAD_START"
say "measuring into $FINAL (QUICK=$QUICK); load average at the start: $LOAD_START"

# ---------------------------------------------------------------------------------------------
# 1. Redis commands per admitted login, under contention, over TCP loopback. Raw: m1.txt, a
# line of contend per run.
say "1/13: commands per login, N = $M1_NS, $M1_REPS run(s) each"
start_tcp_redis m1 || fail "redis m1"
M1_PORT=$PORT
# 100 ms apart: a queued pam_flowslot login waits for its slot, renewing its place, so the
# run lasts N intervals.
M1_OPTS="url=redis://127.0.0.1:$M1_PORT/0 interval=100ms max_wait=60m timeout=10s state_dir=$STATE/m1"
: > "$RAW/m1.txt"
for n in $M1_NS; do
	for rep in $(seq "$M1_REPS"); do
		for mode in flowslot watch naive; do
			# shellcheck disable=SC2086
			line=$(run "$BIN/contend" $mode "$n" $M1_OPTS "key=bench:m1:$mode:$n:$rep") ||
				fail "contend $mode $n: $line"
			echo "$line" >> "$RAW/m1.txt"
		done
	done
done
stop_redis m1

# ---------------------------------------------------------------------------------------------
# 2. Latency that the module adds to a login with an empty queue: pamtester pairs. Raw:
# m2-ROW.txt, pairtime's line with the logins that waited and the module's log lines; m2-ROW.raw,
# its pairs. The rows: the module on each backend, and loaded but never called (in the account
# stack of an auth login), each against pam_permit alone. Then one script call's memory and
# CPU on stores of 0 to 1,000 places (bench/lstorecost.c): m2-cost.txt.
say "2/13: added latency, $M2_PAIRS pairs per row"
start_tcp_redis m2 || fail "redis m2"
M2_PORT=$PORT
M2_STATE=$STATE/m2
put values M2_FS "$STATE_FS"
PERMIT="auth required @P/pam_permit.so"
GATE="key=bench:lat interval=1ms countdown=0 fallback=closed"
service base "$PERMIT"
service lat-tcp "auth required @M url=redis://127.0.0.1:$M2_PORT/0 state_dir=$M2_STATE/tcp $GATE" "$PERMIT"
service lat-unix "auth required @M url=unix://$TMP/m2.sock state_dir=$M2_STATE/unix $GATE" "$PERMIT"
service lat-local "auth required @M url=local state_dir=$M2_STATE/local $GATE" "$PERMIT"
service lat-loaded "$PERMIT" "account required @M url=unix://$TMP/m2.sock state_dir=$M2_STATE/loaded $GATE"
# pamtester_cmd SERVICE: a login of benchuser.
pamtester_cmd() {
	echo env LD_PRELOAD=libpam_wrapper.so PAM_WRAPPER=1 PAM_WRAPPER_SERVICE_DIR="$TMP/svc" \
		pamtester -v "$1" benchuser authenticate
}
# m2_pairs ROW A B: pairtime of the service A against B.
m2_pairs() {
	# shellcheck disable=SC2046
	line=$(cd "$TMP" && run "$BIN/pairtime" "$M2_PAIRS" "$RAW/m2-$1.raw" "$TMP/m2-$1-a.log" \
		"$TMP/m2-$1-b.log" -- $(pamtester_cmd "$2") -- $(pamtester_cmd "$3")) ||
		fail "pairtime $1: $line"
	waited=$(cat "$TMP/m2-$1-a.log" "$TMP/m2-$1-b.log" | grep -c 'Login queue')
	complaints=$(cat "$TMP/m2-$1-a.log" "$TMP/m2-$1-b.log" | grep -c 'pam_flowslot(')
	echo "$line waited=$waited complaints=$complaints" > "$RAW/m2-$1.txt"
}
for t in tcp unix local loaded; do
	m2_pairs "$t" base "lat-$t"
done
# One call on stores of 0, 10, 100 and 1,000 places, M2_COST_ROUNDS times each.
run "$BIN/lstorecost" "$M2_COST_ROUNDS" 0 10 100 1000 > "$RAW/m2-cost.txt" 2> "$TMP/m2-cost.err" ||
	fail "lstorecost: $(cat "$RAW/m2-cost.txt" "$TMP/m2-cost.err")"
# The module in the account stack was loaded, never called: it counted no login.
put values M2_LOADED_COUNTED "$([ -e "$M2_STATE/loaded" ] && echo yes || echo no)"
stop_redis m2

# ---------------------------------------------------------------------------------------------
# 3. Stagger precision: M3_N logins at the same instant, interval=100ms, over a Unix socket.
# Raw: m3.txt, stagger's line; timeline.csv, a line per login (the picture's samples).
say "3/13: stagger precision, $M3_N logins at interval=100ms"
start_redis m3 || fail "redis m3"
run "$BIN/stagger" "$M3_N" "$TMP/timeline.csv" "url=unix://$TMP/m3.sock" key=bench:stagger \
	interval=100ms max_wait=60s timeout=10s "state_dir=$STATE/m3" > "$RAW/m3.txt" || fail "stagger: $(cat "$RAW/m3.txt")"
stop_redis m3
cp "$TMP/timeline.csv" "$RAW/timeline.csv" || fail "timeline.csv"

# ---------------------------------------------------------------------------------------------
# 4. Decision capacity of one redis-server, against redis-benchmark GET in the same run. Raw:
# for each phase, m4-PHASE.out (the client's output), m4-PHASE.cpu (the server's share of one
# core while it ran, %) and m4-PHASE.ticks (the server's clock ticks).
say "4/13: decision capacity, $CONC clients, over a Unix socket and TCP loopback"
start_tcp_redis m4 || fail "redis m4"
M4_PORT=$PORT
M4_PID=$(cat "$TMP/m4.pid")
TICK=$(getconf CLK_TCK)
SHA=$(sed -n 's/^#define RSLOT_SCRIPT_SHA1 "\(.*\)"$/\1/p' "$TOP/build/slot_lua.h")
rcli m4 set 'key:__rand_int__' abc > /dev/null
# The same bytes as the module sends, so the same SHA-1.
[ "$(rcli m4 -x script load < "$TOP/src/slot.lua")" = "$SHA" ] || fail "SCRIPT LOAD: not $SHA"
# m4_phase NAME COMMAND...: the command's output, and the server's CPU while it ran.
m4_phase() {
	name=$1
	shift
	c0=$(cpu_ticks "$M4_PID")
	t0=$(date +%s%N)
	out=$(run "$@") || fail "$name: $out"
	t1=$(date +%s%N)
	c1=$(cpu_ticks "$M4_PID")
	printf '%s\n' "$out" > "$RAW/m4-$name.out"
	awk -v c=$((c1 - c0)) -v hz="$TICK" -v ns=$((t1 - t0)) \
		'BEGIN { printf "%.0f\n", 100 * c / hz / (ns / 1e9) }' > "$RAW/m4-$name.cpu"
	echo $((c1 - c0)) > "$RAW/m4-$name.ticks"
}
# Each transport's module row between a GET before and a GET after, on that transport.
UNIX_RB=(-s "$TMP/m4.sock")
TCP_RB=(-h 127.0.0.1 -p "$M4_PORT")
CAP_OPTS="interval=1ms max_wait=60m timeout=10s state_dir=$STATE/m4"
m4_phase get1 redis-benchmark "${UNIX_RB[@]}" -c $CONC -n "$M4_GET_N" -t get --csv
# -r: each request a place of its own (__rand_int__), as each of the module's decisions is.
m4_phase evalsha redis-benchmark "${UNIX_RB[@]}" -c $CONC -n "$M4_EVAL_N" -r 1000000000 --csv \
	EVALSHA "$SHA" 1 bench:cap:rb reserve 1000 1 3600000000 0 __rand_int__ "" "" 0 5000000 2000000
# shellcheck disable=SC2086
m4_phase module "$BIN/capacity" $CONC "$M4_SECONDS" "url=unix://$TMP/m4.sock" key=bench:cap $CAP_OPTS
m4_phase get2 redis-benchmark "${UNIX_RB[@]}" -c $CONC -n "$M4_GET_N" -t get --csv
m4_phase tget1 redis-benchmark "${TCP_RB[@]}" -c $CONC -n "$M4_GET_N" -t get --csv
# shellcheck disable=SC2086
m4_phase tmodule "$BIN/capacity" $CONC "$M4_SECONDS" "url=redis://127.0.0.1:$M4_PORT/0" \
	key=bench:cap:tcp $CAP_OPTS
m4_phase tget2 redis-benchmark "${TCP_RB[@]}" -c $CONC -n "$M4_GET_N" -t get --csv
stop_redis m4

# ---------------------------------------------------------------------------------------------
# 5. The cost of waiting: M5_N pamtester logins held in the queue at once. Raw: M5_* in
# values; one number per waiting process in m5-cpu-us, m5-rss and m5-pss, per baseline process
# in m5-base-rss and m5-base-pss; m5-why, the module's log lines counted.
say "5/13: $M5_N logins held in the queue"
start_redis m5 || fail "redis m5"
service hold "auth required @M url=unix://$TMP/m5.sock key=bench:hold interval=1s max_wait=60m timeout=10s fallback=closed" \
	"$PERMIT"
service exec-hold "auth required @P/pam_exec.so /bin/sleep 300" "$PERMIT"
# Redis 7 allocates a latency histogram for each command at its first call after CONFIG
# RESETSTAT: every command the logins will send runs once before the first sample.
rcli m5 config resetstat > /dev/null
[ "$(rcli m5 -x script load < "$TOP/src/slot.lua")" = "$SHA" ] || fail "SCRIPT LOAD: not $SHA"
# The head of the queue: a slot taken 300 s ahead, as by a queue already there, so that no
# login reaches its slot while the measurement lasts.
# The schedule as src/slot.lua stores it: "tat at", both server microseconds.
HEAD_LUA="local t = redis.call('TIME') local now = t[1] * 1000000 + t[2]
redis.call('SET', KEYS[1], string.format('%.0f %.0f', now + ARGV[1], now), 'PX', math.ceil(ARGV[1] / 1000) + 1000)"
rcli m5 eval "$HEAD_LUA" 1 bench:hold 300000000 > /dev/null
# A place held, renewed and given up on a key of its own runs the queue's commands once.
rcli m5 eval "$HEAD_LUA" 1 bench:warm 60000000 > /dev/null
for op in reserve renew leave; do
	rcli m5 evalsha "$SHA" 1 bench:warm $op 1000000 1 3600000000 0 warm 0123456789abcdef \
		0123456789abcdef 0 5000000 2000000 > /dev/null
done
rcli m5 del bench:warm > /dev/null
m5_mem() { rcli m5 info memory | sed -n "s/^$1:\([0-9]*\).*/\1/p"; }
m5_reserved() { rcli m5 info commandstats | awk -F'[=,:]' '/^cmdstat_eval(sha)?:/ { s += $3 } END { print s + 0 }'; }
m5_ahead() { rcli m5 eval "local t = redis.call('TIME'); local s = redis.call('TYPE', KEYS[1]).ok == 'zset' and redis.call('ZRANGEBYSCORE', KEYS[1], 0, 0)[1] or redis.call('GET', KEYS[1]); return math.floor((tonumber(string.match(s, '(%d+)')) - (t[1] * 1000000 + t[2])) / 1000000 + 0.5)" 1 bench:hold; }
put values M5_AHEAD0 "$(m5_ahead)"
M5_RES0=$(m5_reserved)
put values M5_MEM0 "$(m5_mem used_memory)"
put values M5_RSS0 "$(m5_mem used_memory_rss)"
# hold_logins SERVICE N: starts N logins in the background; their pids in $HELD.
hold_logins() {
	HELD=""
	for i in $(seq "$2"); do
		"${PRIVATE_TMP[@]}" env LD_PRELOAD=libpam_wrapper.so PAM_WRAPPER=1 \
			PAM_WRAPPER_SERVICE_DIR="$TMP/svc" pamtester "$1" benchuser authenticate \
			> /dev/null 2> "$TMP/$1-$i.err" < /dev/null &
		HELD="$HELD $!"
	done
	PIDS="$PIDS $HELD"
}
echo "pamtester hold benchuser authenticate, $M5_N times at once, each in a private /tmp" >> "$RAW/commands"
t0=$(date +%s%N)
hold_logins hold "$M5_N"
M5_PIDS=$HELD
reserved=0
for _ in $(seq 1200); do # at most 120 s
	reserved=$(($(m5_reserved) - M5_RES0))
	[ "$reserved" -ge "$M5_N" ] && break
	sleep 0.1
done
put values M5_FILL_S "$(awk -v ns=$(($(date +%s%N) - t0)) 'BEGIN { printf "%.1f", ns / 1e9 }')"
sleep 0.5 # the last ones get from the reply into clock_nanosleep
put values M5_AHEAD "$(m5_ahead)"
put values M5_MEMN "$(m5_mem used_memory)"
put values M5_RSSN "$(m5_mem used_memory_rss)"
put values M5_KEYS "$(rcli m5 dbsize)"
put values M5_PLACES "$(waiting m5 bench:hold)"
put values M5_CLIENTS "$(rcli m5 info clients | sed -n 's/^connected_clients:\([0-9]*\).*/\1/p')"
proc_files() { for p in $1; do [ -r "/proc/$p/$2" ] && echo "/proc/$p/$2"; done; }
mapfile -t SCHED_A < <(proc_files "$M5_PIDS" schedstat)
awk '{ split(FILENAME, p, "/"); print p[3], $1 }' "${SCHED_A[@]}" | sort > "$TMP/m5-sched-a"
sleep "$M5_WINDOW"
mapfile -t SCHED_B < <(proc_files "$M5_PIDS" schedstat)
awk '{ split(FILENAME, p, "/"); print p[3], $1 }' "${SCHED_B[@]}" | sort > "$TMP/m5-sched-b"
put values M5_ALIVE "${#SCHED_B[@]}"
# shellcheck disable=SC2046
put values M5_COMM "$(sort $(proc_files "$M5_PIDS" comm) 2> /dev/null | uniq -c | sort -rn | head -1 | awk '{ print $2 }')"
# shellcheck disable=SC2046
awk '/^VmRSS:/ { print $2 }' $(proc_files "$M5_PIDS" status) > "$RAW/m5-rss"
# shellcheck disable=SC2046
awk '/^Pss:/ { print $2 }' $(proc_files "$M5_PIDS" smaps_rollup) > "$RAW/m5-pss"
join "$TMP/m5-sched-a" "$TMP/m5-sched-b" | awk '{ print ($3 - $2) / 1000 }' > "$RAW/m5-cpu-us"
for p in $M5_PIDS; do kill "$p" 2> /dev/null; done
for p in $M5_PIDS; do wait "$p" 2> /dev/null; done
# Why any login was no longer waiting at the end: the module's log lines, counted.
cat "$TMP"/hold-*.err | grep -v '_pam_init_handlers: no default config other' |
	sed 's/[0-9][0-9]*/N/g' | sort | uniq -c | sort -rn | head -5 > "$RAW/m5-why"

# The baseline: the same pamtester held as long by pam_exec running sleep(1), without the module.
echo "pamtester exec-hold benchuser authenticate, $M5_BASE times at once (pam_exec: /bin/sleep)" >> "$RAW/commands"
hold_logins exec-hold "$M5_BASE"
M5_BPIDS=$HELD
for _ in $(seq 300); do # at most 30 s, until every login has its sleep(1) child
	kids=0
	for p in $M5_BPIDS; do
		[ -n "$(ps -o pid= --ppid "$p")" ] && kids=$((kids + 1))
	done
	[ "$kids" -ge "$M5_BASE" ] && break
	sleep 0.1
done
sleep 0.5
# shellcheck disable=SC2046
awk '/^VmRSS:/ { print $2 }' $(proc_files "$M5_BPIDS" status) > "$RAW/m5-base-rss"
# shellcheck disable=SC2046
awk '/^Pss:/ { print $2 }' $(proc_files "$M5_BPIDS" smaps_rollup) > "$RAW/m5-base-pss"
for p in $M5_BPIDS; do
	for k in $(ps -o pid= --ppid "$p"); do kill "$k" 2> /dev/null; done
done
for p in $M5_BPIDS; do wait "$p" 2> /dev/null; done
stop_redis m5

# ---------------------------------------------------------------------------------------------
# 6. What sync_replicas=1 and Sentinel cost a decision: a master, its replica and one sentinel
# on loopback, every configuration against the same master, interleaved round by round. Raw:
# m6.txt, optcost's lines; M6_WAITS (the master's WAITs), M6_COMPLAINTS (the module's log
# lines) and M6_FS (where the node cache was) in values.
say "6/13: sync_replicas=1 and Sentinel, $M6_ROUNDS rounds"
start_tcp_redis m6master --repl-diskless-sync-delay 0 || fail "redis m6master"
M6_MPORT=$PORT
start_tcp_redis m6replica --replicaof 127.0.0.1 "$M6_MPORT" || fail "redis m6replica"
start_sentinel m6sentinel "$M6_MPORT" || fail "redis-sentinel"
M6_SPORT=$PORT
# The replica online: WAIT 1 would otherwise wait for it.
for _ in $(seq 300); do # at most 30 s
	rcli m6master info replication | grep -q '^slave0:.*state=online' && break
	sleep 0.1
done
rcli m6master info replication | grep -q '^slave0:.*state=online' || fail "the replica did not sync"
rcli m6master config resetstat > /dev/null
# The node cache on a tmpfs, as /run normally is: on a disk file system, creating its file can
# cost more than the rest of the decision.
M6_STATE=$STATE/m6
put values M6_FS "$STATE_FS"
M6_PLAIN="url=redis://127.0.0.1:$M6_MPORT/0"
M6_SENT="url=redis-sentinel://127.0.0.1:$M6_SPORT/fsm"
run "$BIN/optcost" "$M6_ROUNDS" interval=1ms max_wait=60m timeout=10s \
	"state_dir=$M6_STATE" -- plain "$M6_PLAIN" key=bench:m6:plain \
	-- sync1 "$M6_PLAIN" key=bench:m6:sync1 sync_replicas=1 \
	-- sentinel "$M6_SENT" key=bench:m6:sentinel \
	-- uncached "$M6_SENT" key=bench:m6:uncached nocache \
	-- counted "$M6_PLAIN" key=bench:m6:counted stats > "$RAW/m6.txt" 2> "$TMP/m6.err" ||
	fail "optcost: $(cat "$RAW/m6.txt") $(head -n 5 "$TMP/m6.err")"
# What the master saw: a WAIT for every sync_replicas=1 decision, the warm-up's included.
put values M6_WAITS "$(rcli m6master info commandstats | sed -n 's/^cmdstat_wait:calls=\([0-9]*\).*/\1/p')"
put values M6_COMPLAINTS "$(grep -c 'pam_flowslot:' "$TMP/m6.err")"
stop_redis m6sentinel
stop_redis m6replica
stop_redis m6master

# ---------------------------------------------------------------------------------------------
# 7 and 9, side by side: script calls per second of waiting; a queue with a third of its logins
# killed, against fixed slots. Both mostly sleep, on private servers of their own. Raw: m7.out,
# m9q.out and m9f.out, queuecost's output.
say "7/13 and 9/13: script calls for waits of $M7_WAITS s; $M9_N logins at interval=1s, a third killed, queue and fixed slots"
start_redis m7 || fail "redis m7"
start_redis m9q || fail "redis m9q"
start_redis m9f || fail "redis m9f"
M9_OPTS="interval=1s max_wait=60m timeout=10s"
run "$BIN/queuecost" calls "$M7_WAITS" "url=unix://$TMP/m7.sock" key=bench:calls interval=1ms \
	max_wait=60m timeout=10s "state_dir=$STATE/m7" > "$RAW/m7.out" 2> "$TMP/m7.err" &
M7_JOB=$!
# shellcheck disable=SC2086
run "$BIN/queuecost" drain queue "$M9_N" 3 "url=unix://$TMP/m9q.sock" key=bench:drain $M9_OPTS \
	"state_dir=$STATE/m9q" > "$RAW/m9q.out" 2> "$TMP/m9q.err" &
M9Q_JOB=$!
# shellcheck disable=SC2086
run "$BIN/queuecost" drain fixed "$M9_N" 3 "url=unix://$TMP/m9f.sock" key=bench:drain $M9_OPTS \
	"state_dir=$STATE/m9f" > "$RAW/m9f.out" 2> "$TMP/m9f.err" &
M9F_JOB=$!
wait "$M7_JOB" || fail "queuecost calls: $(cat "$RAW/m7.out" "$TMP/m7.err")"
wait "$M9Q_JOB" || fail "queuecost drain queue: $(cat "$RAW/m9q.out" "$TMP/m9q.err")"
wait "$M9F_JOB" || fail "queuecost drain fixed: $(cat "$RAW/m9f.out" "$TMP/m9f.err")"
stop_redis m7
stop_redis m9q
stop_redis m9f

# ---------------------------------------------------------------------------------------------
# 8. What waiting costs Redis in queues spread over realistic waits, leases that fit the wait
# against a renewal every 2 s: a script of its own (bench/spread.sh, raw results in spread/),
# which can also run alone.
say "8/13: queues in a steady state, leases that fit the wait against a renewal every 2 s (bench/spread.sh)"
echo "bash bench/spread.sh RAW (see its section for its clients' command line)" >> "$RAW/commands"
BENCH_STATE=$STATE/m8 bash "$TOP/bench/spread.sh" "$RAW" || fail "the steady queues (bench/spread.sh)"

# ---------------------------------------------------------------------------------------------
# Further measurements, each a script of its own: call it here with the raw directory,
# `bash "$TOP/bench/NAME.sh" "$RAW" || fail NAME`, and let it write its results under
# "$RAW/NAME/"; bench/report.sh renders its section with bench/NAME-report.sh, if there is one
# (add NAME to its list, in the order they run here).
say "10/13: a logon storm (bench/storm.sh)"
bash "$TOP/bench/storm.sh" "$RAW" || fail "the logon storm (bench/storm.sh)"
say "11/13: one reservation as the schedule fills (bench/lookup.sh)"
bash "$TOP/bench/lookup.sh" "$RAW" || fail "the lookups (bench/lookup.sh)"
say "12/13: whether a plain login maps libssl, and a rediss:// decision against a redis:// one (bench/tls.sh)"
bash "$TOP/bench/tls.sh" "$RAW" || fail "the cost of TLS (bench/tls.sh)"
say "13/13: a real ssh login, with the module in sshd's session stack and without (bench/ssh.sh)"
bash "$TOP/bench/ssh.sh" "$RAW" || fail "the ssh logins (bench/ssh.sh)"

# ---------------------------------------------------------------------------------------------
put machine LOAD_END "$(cut -d' ' -f1-3 /proc/loadavg)"
put values ELAPSED $(($(date +%s) - RUN_START))
rm -rf "$FINAL"
mv "$RAW" "$FINAL" || fail "mv $RAW $FINAL"
say "measured in $(($(date +%s) - RUN_START)) s: $FINAL"
