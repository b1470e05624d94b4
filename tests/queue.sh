#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The queue of live waiters, through pamtester under pam_wrapper against a private Redis:
# killed waiters give their places back, a retry keeps its place, two live attempts each hold
# one, per_host, and Redis lost mid-wait.
set -u
. "$(dirname "$0")/lib.sh"

start_redis r || exit 1
R="url=unix://$TMP/r.sock"

# bg_login NAME SERVICE USER [RHOST]: a login in the background; its pamtester's pid in
# $TMP/NAME.pid once it has one (the subshell's child: the private /tmp execs through to it).
bg_login() {
	# Its own stderr is quiet: bash would say "Killed" of the logins this suite kills.
	PAM_RHOST=${4:-} login "$1" "$2" "$3" 2> /dev/null &
	echo $! > "$TMP/$1.sub"
	BG="${BG:-} $!"
}
# bg_wait: waits for the background logins (not for the servers).
bg_wait() {
	# shellcheck disable=SC2086 # a list of pids
	wait $BG
	BG=""
}
pam_pid() {
	wait_for 20 pgrep -P "$(cat "$TMP/$1.sub")" > /dev/null || return 1
	pgrep -P "$(cat "$TMP/$1.sub")" | head -1
}
admitted_ms() { # NAME T0_NS: when the login's stamp was written, in ms after T0
	awk -v u="$1" -v t0="$2" '$2 == u { printf "%d", ($1 - t0) / 1e6 }' "$TMP/stamps"
}

# kill_two_waiters SERVICE PREFIX: four logins 6 s apart (PREFIX1..4); once the last three
# are queued, the second and third are SIGKILLed (and reaped). Sets K4 (when the fourth went
# in, in ms after the first) and K4_KILL (in ms after the kill).
kill_two_waiters() {
	local u t_kill p2 p3
	rm -f "$TMP/stamps"
	for u in "${2}1" "${2}2" "${2}3" "${2}4"; do
		bg_login "$u" "$1" "$u"
		# One after the other, in this order: each has passed the gate or holds its place.
		wait_for 20 grep -q 'queued: \|admitted' "$TMP/$u.err" 2> /dev/null
	done
	p2=$(pam_pid "${2}2") p3=$(pam_pid "${2}3")
	t_kill=$(date +%s%N)
	kill -KILL "$p2" "$p3"
	gone() { ! kill -0 "$p2" 2> /dev/null && ! kill -0 "$p3" 2> /dev/null; }
	wait_for 10 gone
	[ "${3:-}" = local ] && "$TREE/flowslotctl" url=local state_dir="$TMP/$1" key="$1" interval=6s \
		status > "$TMP/$1.status" 2>&1
	bg_wait
	K4=$(admitted_ms "${2}4" "$(awk -v u="${2}1" '$2 == u { print $1 }' "$TMP/stamps")")
	K4_KILL=$(admitted_ms "${2}4" "$t_kill")
}

# 1. Killed waiters give their places back: the fourth moves up to the second's slot (6 s after
# the first) once their leases run out (5 s after the kill, and its renewal every 2 s), well
# before its own slot (18 s).
service q1 "auth requisite @M $R key=q1 interval=6s countdown=0 debug" "$STAMP" \
	"auth required @P/pam_permit.so"
kill_two_waiters q1 k
check "killed waiters: the one behind them goes in when their leases run out (${K4} ms after the first, ${K4_KILL} ms after the kill; slot 6000, was 18000)" \
	sh -c "[ $(rc_of k4) = 0 ] && [ ${K4:-0} -ge 5500 ] && [ ${K4:-99999} -lt 15000 ] && [ ${K4_KILL:-99999} -lt 10000 ]"
check "... and the places are gone from Redis" [ "$(waiting r q1)" = 0 ]

# 1b. The same on the per-host schedule (url=local), where a waiter whose process is gone is
# dropped at the next call, without waiting for its lease: flowslotctl status, right after the
# killed ones were reaped, counts only the fourth.
service q1l "auth requisite @M url=local state_dir=$TMP/q1l key=q1l interval=6s countdown=0 debug" \
	"$STAMP" "auth required @P/pam_permit.so"
kill_two_waiters q1l j local
check "url=local, killed waiters: dropped at the next call, not at their leases' end ($(grep '^waiting' "$TMP/q1l.status"))" \
	grep -q '^waiting: *1$' "$TMP/q1l.status"
check "url=local: the one behind them goes in at the second's slot (${K4} ms after the first, ${K4_KILL} ms after the kill; slot 6000, was 18000)" \
	sh -c "[ $(rc_of j4) = 0 ] && [ ${K4:-0} -ge 5500 ] && [ ${K4:-99999} -lt 15000 ]"
check "... and the file holds no place any more" sh -c "! grep -q '^w ' '$TMP/q1l/slot.q1l'"

# 2. A retry keeps its place: alice waits first, bob behind her. alice's login is killed;
# when it comes back (same service, user and host) after her lease ran out (5 s), it takes her
# place back ahead of bob, rather than joining the back.
service q2 "auth required $SET_ITEMS" "auth requisite @M $R key=q2 interval=10s countdown=0 debug" \
	"$STAMP" "auth required @P/pam_permit.so"
rm -f "$TMP/stamps"
login r0 q2 r0 # takes the slot: the next ones wait
bg_login r1 q2 alice 10.1.1.1
wait_for 20 grep -q 'queued: ' "$TMP/r1.err"
bg_login r2 q2 bob 10.1.1.2
wait_for 20 grep -q 'queued: ' "$TMP/r2.err"
kill -KILL "$(pam_pid r1)" 2> /dev/null
# The retry comes once her lease has run out (5 s after her last renewal, which may have come
# after she took her place): only bob's place is live then.
live_is() { [ "$(live r "$1")" = "$2" ]; }
wait_for 15 live_is q2 1
PAM_RHOST=10.1.1.1 login r1again q2 alice
check "a retry after its lease ran out is number 1 again, not 2" \
	grep -q 'queued: .*user=alice .*position=1 ' "$TMP/r1again.err"
order=$(awk '{ print $2 }' "$TMP/stamps" | tr '\n' ' ')
check "... and goes in before the login that came after it ($order)" [ "$order" = "r0 alice " ]
kill "$(pam_pid r2)"
bg_wait

# 3. Two live attempts of one user, from one host, each hold a place.
service q3 "auth required $SET_ITEMS" "auth requisite @M $R key=q3 interval=2s countdown=0 debug" "auth required @P/pam_permit.so"
PAM_RHOST=10.1.1.3 login t0 q3 carol
bg_login t1 q3 carol 10.1.1.3
wait_for 20 grep -q 'queued: ' "$TMP/t1.err"
bg_login t2 q3 carol 10.1.1.3
bg_wait
check "two live attempts of one user: places 1 and 2, both admitted" \
	sh -c "grep -q 'position=1 ' '$TMP/t1.err' && grep -q 'position=2 ' '$TMP/t2.err' && [ $(rc_of t1)$(rc_of t2) = 00 ]"

# 4. per_host=1: a host that holds a place already is refused at once, reserving nothing;
# another host still queues.
service q4 "auth required $SET_ITEMS" "auth requisite @M $R key=q4 interval=3s countdown=0 per_host=1 debug" \
	"auth required @P/pam_permit.so"
PAM_RHOST=10.2.2.2 login h0 q4 dave
bg_login h1 q4 erin 10.2.2.2
wait_for 20 grep -q 'queued: ' "$TMP/h1.err"
places=$(waiting r q4)
t0=$(now_ms)
PAM_RHOST=10.2.2.2 login h2 q4 frank
took=$(($(now_ms) - t0))
check "per_host=1: a second place for one host is refused at once (${took} ms, a place would wait 6000)" \
	sh -c "[ $(rc_of h2) != 0 ] && grep -q 'per_host=1' '$TMP/h2.err' && [ $took -lt 5000 ]"
check "... reserving nothing" [ "$(waiting r q4)" = "$places" ]
PAM_RHOST=10.3.3.3 login h3 q4 gina
check "... while another host queues" sh -c "[ $(rc_of h3) = 0 ] && grep -q 'queued: ' '$TMP/h3.err'"
bg_wait

# 5. Redis lost mid-wait: the waiter goes in at the last slot it was given, never later, says
# so once, and does not queue again on the local schedule.
start_redis lost || exit 1
service q5 "auth requisite @M url=unix://$TMP/lost.sock key=q5 interval=6s countdown=0 timeout=300ms state_dir=$TMP/q5state" \
	"$STAMP" "auth required @P/pam_permit.so"
rm -f "$TMP/stamps"
login l0 q5 l0
bg_login l1 q5 l1
wait_for 20 grep -q 'queued: ' "$TMP/l1.err"
stop_redis lost
bg_wait
# From when l0 went in: its slot is 6 s later; a loaded machine may add to that, never take.
l1=$(admitted_ms l1 "$(awk '$2 == "l0" { print $1 }' "$TMP/stamps")")
check "Redis lost mid-wait: admitted at the last slot given (${l1} ms after the first, slot 6000)" \
	sh -c "[ $(rc_of l1) = 0 ] && [ ${l1:-0} -ge 5500 ] && [ ${l1:-99999} -lt 9000 ]"
check "... logged once, and not queued again on the local schedule" \
	sh -c "[ \$(grep -c 'the place cannot be renewed' '$TMP/l1.err') = 1 ] && ! ls '$TMP/q5state'/slot.* > /dev/null 2>&1"

finish
