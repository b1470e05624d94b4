#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Sentinel: a master, a replica and three sentinels on loopback TCP. 1. Logins find
# the master through the sentinels, skip one that is down, follow the fallback for a master
# nobody monitors, and authenticate to a sentinel with sentinel_password. 2. sync_replicas=1
# returns once the replica holds the slot, or at the timeout with a warning. 3. The master is
# killed under a stream of logins: they fall back to the local slot, then go to the promoted
# replica; each schedule keeps its stagger, and across a switch at most two pass an interval.
# shellcheck disable=SC2086,SC2016 # lists split on purpose; code for eval quoted on purpose
set -u
. "$(dirname "$0")/../helpers/lib.sh"

permit="auth required @P/pam_permit.so"

# start_sentinel NAME PORT CONFIG-LINES...: a redis-sentinel on 127.0.0.1:PORT. Its config
# file is its own: sentinels rewrite it as they learn the replicas, the other sentinels and
# each failover.
start_sentinel() {
	name=$1 port=$2
	shift 2
	printf '%s\n' "port $port" "bind 127.0.0.1" "dir $TMP" "$@" > "$TMP/$name.conf"
	redis-sentinel "$TMP/$name.conf" > "$TMP/$name.log" 2>&1 &
	spid=$!
	echo "$spid" > "$TMP/$name.pid"
	PIDS="$PIDS $spid"
	# Its own log, not a PING, which someone else on the port could answer. A sentinel
	# names itself once it listens.
	for _ in $(seq 100); do
		grep -q 'Sentinel ID is' "$TMP/$name.log" && return 0
		kill -0 "$spid" 2> /dev/null || break
		sleep 0.05
	done
	kill "$spid" 2> /dev/null
	echo "sentinel $name did not start:" >&2
	cat "$TMP/$name.log" >&2
	return 1
}

scli() { redis-cli -p "$1" "${@:2}" 2> /dev/null; }

# ready: every sentinel knows the other two and sees the replica as a healthy replica.
ready() {
	for s in $S1 $S2 $S3; do
		[ "$(scli "$s" sentinel sentinels fsm | grep -c '^flags$')" = 2 ] || return 1
		scli "$s" sentinel replicas fsm | grep -A1 '^flags$' | tail -1 | grep -qx slave || return 1
		scli "$s" sentinel replicas fsm | grep -A1 '^master-link-status$' | tail -1 | grep -qx ok || return 1
	done
}

# The master syncs a new replica at once, not after the default 5 s.
on_free_port MPORT start_redis master --repl-diskless-sync-delay 0 --port || exit 1
on_free_port RPORT start_redis replica --replicaof 127.0.0.1 "$MPORT" --port || exit 1
fsm_sentinel() {
	start_sentinel "sentinel$1" "$2" "sentinel monitor fsm 127.0.0.1 $MPORT 2" \
		"sentinel down-after-milliseconds fsm 1000" "sentinel failover-timeout fsm 5000" \
		"sentinel parallel-syncs fsm 1"
}
on_free_port S1 fsm_sentinel 1 || exit 1
on_free_port S2 fsm_sentinel 2 || exit 1
on_free_port S3 fsm_sentinel 3 || exit 1
t0=$(now_ms)
if ! wait_for 30 ready; then
	echo "Bail out! the sentinels did not see the replica and each other within 30 s"
	tail -n 20 "$TMP"/sentinel?.log
	exit 1
fi
echo "# sentinels ready in $(($(now_ms) - t0)) ms"
SENTINELS=127.0.0.1:$S1,127.0.0.1:$S2,127.0.0.1:$S3

# via NAME: how login NAME was decided (redis or local), from its debug line.
via() { grep -o 'via=[a-z]*' "$TMP/$1.err" | tail -1 | cut -d= -f2; }
# decider NAME: the port of the server that ran the script for login NAME.
decider() { sed -n 's/.*redis 127\.0\.0\.1:\([0-9]*\): decided after.*/\1/p' "$TMP/$1.err" | tail -1; }
# by PORT NAME...: each login NAME was admitted, decided by Redis on 127.0.0.1:PORT.
by() {
	port=$1
	shift
	for name; do
		[ "$(rc_of "$name")" = 0 ] && [ "$(via "$name")" = redis ] &&
			[ "$(decider "$name")" = "$port" ] && continue
		echo "$name: rc $(rc_of "$name"), via=$(via "$name"), decided by :$(decider "$name")" >&2
		return 1
	done
}
# all_ge MIN COUNT N...: COUNT numbers or more, each at least MIN.
all_ge() {
	min=$1 count=$2
	shift 2
	[ $# -ge "$count" ] || return 1
	for g; do [ "$g" -ge "$min" ] || return 1; done
}
exists() { redis-cli -p "$1" exists "$2" 2> /dev/null; }
errors() { grep -h 'SYSLOG([0-4])' "$@" | sed 's/.*SYSLOG([0-4]): //' | head -1; }

# 1. Four logins through the three sentinels, each started once the one before has its
# decision (so the order they came is the order the master saw them, whatever the load): the
# master decides, one interval apart, in the order they came.
sent=redis-sentinel://$SENTINELS/fsm
common="timeout=300ms countdown=0 debug"
service s "$ARRIVE" "auth required @M url=$sent key=ha1 interval=500ms state_dir=$TMP/st1 $common" \
	"$STAMP" "$permit"
rm -f "$TMP/stamps" "$TMP/arrivals"
lpids=""
for i in 1 2 3 4; do
	login "a$i" s "a$i" &
	lpids="$lpids $!"
	wait_for 20 grep -q 'via=' "$TMP/a$i.err"
done
# The schedule lives until the last slot (PX): look while the last logins still wait.
on_master=0
wait_for 5 eval '[ "$(exists "$MPORT" ha1)" = 1 ]' && on_master=1
wait $lpids
check "four logins through the sentinels, each decided by the master (:$MPORT)" \
	by "$MPORT" a1 a2 a3 a4
check "... the schedule is on the master" [ "$on_master" = 1 ]
gaps=$(join -j 2 <(sort -k2 "$TMP/arrivals") <(sort -k2 "$TMP/stamps") | sort -k2n |
	awk 'NR > 1 { printf "%d ", ($3 - prev) / 1e6 } { prev = $3 }')
check "... admitted in the order they came, one interval apart (gaps ${gaps}ms)" \
	all_ge 300 3 $gaps
check "... and nothing logged as a warning or an error ($(errors "$TMP"/a?.err))" \
	sh -c "! grep -q 'SYSLOG([0-4])' '$TMP'/a?.err"

# A first sentinel nobody listens on is skipped (connection refused: at once).
dead=$(free_port)
service dead "auth required @M url=redis-sentinel://127.0.0.1:$dead,$SENTINELS/fsm key=ha2 state_dir=$TMP/st2 $common" \
	"$permit"
t0=$(now_ms)
login d1 dead alice
took=$(($(now_ms) - t0))
check "a first sentinel that is down is skipped: decided by the master in ${took} ms" \
	eval 'by "$MPORT" d1 && [ "$took" -lt 4000 ]'
check "... the schedule is on the master" [ "$(exists "$MPORT" ha2)" = 1 ]

# A master the sentinels do not monitor: the fallback decides, and the log says why.
service nosuch "auth required @M url=redis-sentinel://$SENTINELS/nosuch key=ha3 state_dir=$TMP/st3 $common" \
	"$permit"
login n1 nosuch alice
check "an unknown master name: admitted on the local slot" \
	sh -c "[ '$(rc_of n1)' = 0 ] && [ '$(via n1)' = local ]"
check "... with a line that says so ($(errors "$TMP/n1.err"))" grep -Eq 'SYSLOG\([0-4]\).*(nosuch|no master)' "$TMP/n1.err"
service nosuchc "auth required @M url=redis-sentinel://$SENTINELS/nosuch key=ha3 fallback=closed $common" \
	"$permit"
login n2 nosuchc alice
check "... fallback=closed refuses it" \
	sh -c "[ '$(rc_of n2)' = 1 ] && grep -q 'Authentication service cannot retrieve' '$TMP/n2.err'"
check "... and nothing reached the master" [ "$(exists "$MPORT" ha3)" = 0 ]

# sentinel_password: a sentinel of its own, with requirepass, watching a master of its own.
on_free_port PWPORT start_redis pwmaster --port || exit 1
sentinel4() { start_sentinel sentinel4 "$1" "requirepass s3nt-pw" "sentinel monitor fsmpw 127.0.0.1 $PWPORT 1"; }
on_free_port S4 sentinel4 || exit 1
# The password in conf=, readable by its owner alone, as pam_flowslot.conf(5) says.
for pw in s3nt-pw n0t-it; do
	echo "sentinel_password=$pw" > "$TMP/$pw.conf"
	chmod 0600 "$TMP/$pw.conf"
done
service spw "auth required @M conf=$TMP/s3nt-pw.conf url=redis-sentinel://127.0.0.1:$S4/fsmpw key=ha4 state_dir=$TMP/st4 fallback=closed $common" \
	"$permit"
login p1 spw alice
check "sentinel_password: the sentinel answers, and its master decides" by "$PWPORT" p1
check "... without a warning ($(errors "$TMP/p1.err"))" sh -c "! grep -q 'SYSLOG([0-4])' '$TMP/p1.err'"
# Its own state_dir: with a master cached, the sentinel would not be asked at all.
service spwbad "auth required @M conf=$TMP/n0t-it.conf url=redis-sentinel://127.0.0.1:$S4/fsmpw key=ha4 state_dir=$TMP/st5 fallback=closed $common" \
	"$permit"
login p2 spwbad alice
check "a wrong sentinel_password follows fallback=closed, and says so ($(grep -Eho 'sentinel .*(AUTH|WRONGPASS).*' "$TMP/p2.err" | head -1))" \
	sh -c "[ '$(rc_of p2)' = 1 ] && grep -Eq 'SYSLOG\([0-4]\).*(AUTH|WRONGPASS)' '$TMP/p2.err'"
check "... neither password is in a log" sh -c "! grep -Eq 's3nt-pw|n0t-it' '$TMP/p1.err' '$TMP/p2.err'"
stop_redis sentinel4
stop_redis pwmaster

# 2. sync_replicas=1: the login returns once the replica has its slot too. Until now no login
# asked for replicas, so none sent WAIT.
waits() { redis-cli -p "$MPORT" info commandstats | sed -nE 's/^cmdstat_wait:calls=([0-9]+).*/\1/p'; }
check "without sync_replicas, no WAIT" [ -z "$(waits)" ]
# A schedule per user, each admitted at once; interval=10s keeps the keys alive meanwhile.
service sync "auth required @M url=$sent key=sync:%u interval=10s sync_replicas=1 state_dir=$TMP/st6 timeout=1s countdown=0 debug" \
	"$permit"
login y1 sync alice
on_master=$(redis-cli -p "$MPORT" zrange sync:alice 0 -1 withscores | tr '\n' ' ')
on_replica=$(redis-cli -p "$RPORT" zrange sync:alice 0 -1 withscores | tr '\n' ' ')
check "sync_replicas=1: decided by the master, with one WAIT ($(waits))" \
	eval 'by "$MPORT" y1 && [ "$(waits)" = 1 ]'
check "... the replica has the slot when the login returns ($on_replica = $on_master)" \
	sh -c "[ -n '$on_master' ] && [ '$on_replica' = '$on_master' ]"
check "... no warning ($(errors "$TMP/y1.err"))" sh -c "! grep -q 'SYSLOG([0-4])' '$TMP/y1.err'"
# A replica that does not answer: admitted once timeout runs out, with a warning.
rpid=$(cat "$TMP/replica.pid")
kill -STOP "$rpid"
t0=$(now_ms)
login y2 sync bob
took=$(($(now_ms) - t0))
kill -CONT "$rpid"
check "the replica stopped: still admitted by the master, after ${took} ms (timeout 1 s)" \
	eval 'by "$MPORT" y2 && [ "$took" -ge 500 ] && [ "$took" -lt 5000 ]'
check "... with a warning ($(errors "$TMP/y2.err"))" grep -Eq 'SYSLOG\([0-4]\).*sync_replicas' "$TMP/y2.err"
if ! wait_for 30 ready; then
	echo "Bail out! the sentinels did not see the replica healthy again within 30 s"
	exit 1
fi

# 3. Failover: a stream of logins, and the master killed mid-stream. While no master answers,
# logins fall back to the local slot; once the sentinels name the promoted replica, it decides.
# The six or so that fall back wait up to 2.5 s on the local slot: max_wait leaves room for a
# slow machine, where no login is to be refused.
service fo "auth required @M url=$sent key=hafo interval=500ms max_wait=6s state_dir=$TMP/state $common" \
	"$STAMP" "$permit"
rm -f "$TMP/stamps" "$TMP/started"
promoted() { [ "$(redis-cli -p "$RPORT" role 2> /dev/null | head -1)" = master ]; }
switched() {
	for s in $S1 $S2 $S3; do
		[ "$(scli "$s" sentinel get-master-addr-by-name fsm | tail -1)" = "$RPORT" ] || return 1
	done
}
users="" fpids="" i=0
launch() {
	i=$((i + 1))
	u=$(printf 'f%03d' "$i")
	users="$users $u"
	echo "$(date +%s%N) $u" >> "$TMP/started"
	login "$u" fo "$u" &
	fpids="$fpids $!"
}
# Three logins at once, a burst every 1.5 s, as many as the schedule's slots: one schedule
# must space them an interval apart, and two schedules at once let at most two through an
# interval.
burst() { launch; launch; launch; }
burst
sleep 1
burst
# However slow the machine, the master has given the six their slots, some still ahead.
decided() { for u in f001 f002 f003 f004 f005 f006; do grep -q 'via=' "$TMP/$u.err" 2> /dev/null || return 1; done; }
wait_for 10 decided
mpid=$(cat "$TMP/master.pid")
# Braces: bash reports the death of its job on stderr, wherever it notices it.
{
	kill -9 "$mpid"
	wait "$mpid"
} 2> /dev/null
killed=$(now_ms)
promoted_ms="" switched_ms=""
# Bursts until all three sentinels name the replica: the first at once, to overlap the
# master's queue, then the same pace.
next=$killed
while ! switched; do
	[ -z "$promoted_ms" ] && promoted && promoted_ms=$(($(now_ms) - killed))
	[ $(($(now_ms) - killed)) -gt 30000 ] && break
	if [ "$(now_ms)" -ge "$next" ]; then
		burst
		if [ "$next" = "$killed" ]; then next=$((next + 1000)); else next=$((next + 1500)); fi
	fi
	sleep 0.2
done
if switched; then
	switched_ms=$(($(now_ms) - killed))
	[ -z "$promoted_ms" ] && promoted_ms=$switched_ms
	first_after=$((i + 1))
	burst
	sleep 1
	burst
	# The schedule lives until its last slot (PX): look while the last login still waits.
	last=$u
	wait_for 10 grep -q 'via=' "$TMP/$last.err"
	role_after=$(redis-cli -p "$RPORT" role 2> /dev/null | head -1)
	key_after=$(exists "$RPORT" hafo)
fi
wait $fpids
if [ -z "$switched_ms" ]; then
	not_ok "the sentinels named no new master within 30 s of the master's death (replica: $(redis-cli -p "$RPORT" role | head -1))"
	tail -n 20 "$TMP"/sentinel?.log >&2
	finish
	exit
fi

# One line a login, in the order they passed the gate: stamp user via decider rc queued.
for u in $users; do
	st=$(awk -v u="$u" '$2 == u { print $1 }' "$TMP/stamps")
	v=$(via "$u") d=$(decider "$u")
	echo "${st:-0} $u ${v:-none} ${d:-none} $(rc_of "$u") $(grep -c 'queued:' "$TMP/$u.err")"
done | sort -n > "$TMP/table"
# gaps VIA PORT: the gaps in ms between consecutive admissions decided that way.
gaps() { awk -v v="$1" -v p="$2" '$3 == v && $4 == p { if (n++) printf "%d ", ($1 - prev) / 1e6; prev = $1 }' "$TMP/table"; }
count() { awk -v v="$1" -v p="$2" '$3 == v && $4 == p' "$TMP/table" | wc -l; }
nlocal=$(count local none)
fell=$(awk '$3 == "local" { if (!a) a = $1; b = $1 } END { printf "%d", (b - a) / 1e6 }' "$TMP/table")
# The same by when those logins started: how long a login that came could not reach a master.
came=$(awk '$3 == "local" { print $2 }' "$TMP/table" | grep -Fwf - "$TMP/started" | sort -n |
	awk 'NR == 1 { a = $1 } { b = $1 } END { printf "%d", (b - a) / 1e6 }')
echo "# master killed: replica promoted after ${promoted_ms} ms, named by all sentinels after ${switched_ms} ms"
echo "# $nlocal of $i logins fell back to local: admitted over ${fell} ms (first to last), started over ${came} ms"

# (a) No login failed: before the kill the master decided, while there was none the local slot.
failed=$(awk '$5 != 0 { printf "%s rc %s; ", $2, $5 }' "$TMP/table")
check "failover: all $i logins admitted ($failed)" [ -z "$failed" ]
check "... the six before the kill decided by the old master" by "$MPORT" f001 f002 f003 f004 f005 f006
check "... $nlocal fell back to the local slot while there was no master" [ "$nlocal" -ge 2 ]
locals=$(awk '$3 == "local" { print $2 }' "$TMP/table")
nowhy=$(for u in $locals; do grep -q 'SYSLOG([0-4])' "$TMP/$u.err" || echo "$u"; done)
first_local=$(echo "$locals" | head -1)
check "... each saying why ($(errors "$TMP/${first_local:-none}.err" 2> /dev/null))" \
	[ -z "$nowhy" ]

# (b) The new master decides.
check "the former replica is the master now (ROLE $role_after), with the schedule" \
	[ "$role_after $key_after" = "master 1" ]
late=$(awk -v f="$first_after" -v p="$RPORT" 'substr($2, 2) + 0 >= f && !($3 == "redis" && $4 == p) { printf "%s ", $2 }' "$TMP/table")
check "every login started after the sentinels named it was decided by it (f$(printf %03d "$first_after") on; not: $late)" \
	[ -z "$late" ]
check "... and the cache in state_dir names it" \
	[ "$(cat "$TMP"/state/node.*.master 2> /dev/null)" = "127.0.0.1:$RPORT" ]

# (c) Each schedule staggers on its own: the old master, the local slot, the new master.
for how in "redis $MPORT old master" "local none local slot" "redis $RPORT new master"; do
	set -- $how
	g=$(gaps "$1" "$2")
	check "${3} ${4}: admissions one interval apart (gaps ${g}ms)" all_ge 300 2 $g
done
check "... logins queued on the new master ($(awk -v p="$RPORT" '$4 == p && $6 > 0' "$TMP/table" | wc -l))" \
	[ "$(awk -v p="$RPORT" '$4 == p && $6 > 0' "$TMP/table" | wc -l)" -ge 2 ]

# (d) Across a switch the two schedules are independent: at most two logins per interval,
# for at most max_wait. So no three admissions within 250 ms (half an interval: a stamp may be
# late by what a loaded machine adds; a third schedule would put three together).
three=$(sort -n "$TMP/stamps" | awk '{ t[NR] = $1 } NR > 2 && (m == "" || t[NR] - t[NR - 2] < m) { m = t[NR] - t[NR - 2] } END { printf "%d", m / 1e6 }')
closest=$(sort -n "$TMP/stamps" | awk 'NR > 1 && (m == "" || $1 - p < m) { m = $1 - p } { p = $1 } END { printf "%d", m / 1e6 }')
echo "# smallest gap between two admissions: ${closest} ms; smallest span of three: ${three} ms"
check "at most two admissions in any 250 ms across the switches (three span >= ${three} ms)" \
	[ "$three" -ge 250 ]

finish
