#!/bin/bash
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
	PAM_RHOST=${4:-} login "$1" "$2" "$3" &
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
	wait_for 5 pgrep -P "$(cat "$TMP/$1.sub")" > /dev/null || return 1
	pgrep -P "$(cat "$TMP/$1.sub")" | head -1
}
admitted_ms() { # NAME T0_NS: when the login's stamp was written, in ms after T0
	awk -v u="$1" -v t0="$2" '$2 == u { printf "%d", ($1 - t0) / 1e6 }' "$TMP/stamps"
}

# 1. Killed waiters give their places back: four logins 3 s apart; the second and third are
# SIGKILLed at 1 s. The fourth goes in once their leases run out (5 s), not at 9 s.
service q1 "auth requisite @M $R key=q1 interval=3s countdown=0 debug" "$STAMP" \
	"auth required @P/pam_permit.so"
rm -f "$TMP/stamps"
t0=$(date +%s%N)
for u in k1 k2 k3 k4; do
	bg_login "$u" q1 "$u"
	wait_for 5 grep -q 'queued: \|admitted' "$TMP/$u.err" 2> /dev/null || sleep 0.2
done
sleep 1
kill -KILL "$(pam_pid k2)" "$(pam_pid k3)"
bg_wait
k4=$(admitted_ms k4 "$t0")
check "killed waiters: the one behind them goes in when their leases run out (${k4} ms, not 9000)" \
	sh -c "[ $(rc_of k4) = 0 ] && [ ${k4:-99999} -ge 2500 ] && [ ${k4:-99999} -lt 8000 ]"
check "... and the places are gone from Redis" [ "$(rcli r zcard q1:q)" = 0 ]

finish
