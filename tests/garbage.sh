#!/bin/bash
# Garbage from the server (issue 4): the real module in real libpam (pamtester under
# pam_wrapper) against build/fake_redis, a server that answers the script with the wrong type,
# out-of-range numbers, a 100 MB bulk, half a reply, nothing, or a byte at a time. Every login
# must end in its fallback within the timeout, with exactly one LOG_ERR line naming the cause;
# the control mode "ok" shows that the fake server itself speaks Redis.
set -u
. "$(dirname "$0")/lib.sh"

FAKE=$TOP/build/fake_redis
[ -x "$FAKE" ] || { echo "missing $FAKE: run make check-garbage" >&2; exit 1; }

TIMEOUT_MS=300
SLACK_MS=1500
[ -n "$VG" ] && SLACK_MS=5000 # valgrind is slow to start

# start_fake NAME MODE [fake_redis options...]: a fake server on $TMP/NAME.sock, its pid in
# $TMP/NAME.pid once it listens, its connection log in $TMP/NAME.log.
start_fake() {
	fname=$1 fmode=$2
	shift 2
	"$FAKE" -P "$TMP/$fname.pid" "$@" "$fmode" "$TMP/$fname.sock" 2> "$TMP/$fname.log" &
	fpid=$!
	PIDS="$PIDS $fpid"
	echo "$fpid" > "$TMP/$fname.bg"
	for _ in $(seq 200); do
		[ -s "$TMP/$fname.pid" ] && return 0
		kill -0 "$fpid" 2> /dev/null || break
		sleep 0.01
	done
	echo "fake_redis $fname ($fmode) did not start:" >&2
	cat "$TMP/$fname.log" >&2
	return 1
}

# stop_fake NAME: SIGTERM, then its exit status (0 when it stopped cleanly).
stop_fake() {
	fpid=$(cat "$TMP/$1.bg")
	kill "$fpid" 2> /dev/null
	wait "$fpid"
	frc=$?
	PIDS=${PIDS/ $fpid/}
	return $frc
}

# redis_errs NAME: the login's LOG_ERR lines about Redis.
redis_errs() { grep -a 'SYSLOG(3): redis' "$TMP/$1.err"; }
n_redis_errs() { grep -ac 'SYSLOG(3): redis' "$TMP/$1.err"; }

# one_err NAME REGEX: exactly one LOG_ERR line in the login, about Redis, matching REGEX.
one_err() {
	[ "$(grep -ac 'SYSLOG(3)' "$TMP/$1.err")" = 1 ] && [ "$(n_redis_errs "$1")" = 1 ] &&
		redis_errs "$1" | grep -Eq "$2"
}

# shown NAME: the LOG_ERR line, from "redis", for a test description.
shown() {
	case $(n_redis_errs "$1") in
	0) echo "no redis LOG_ERR line" ;;
	1) redis_errs "$1" | sed -E 's/.*SYSLOG\(3\): //' ;;
	*) echo "$(n_redis_errs "$1") redis LOG_ERR lines: $(redis_errs "$1" | sed -E 's/.*SYSLOG\(3\): //' | tr '\n' '|')" ;;
	esac
}

# The cause each mode must be logged with.
declare -A CAUSE=(
	[wrong-type]='garbage reply to the script: not an array of three'
	[integer]='garbage reply to the script: not an array of three'
	[string]='garbage reply to the script: not an array of three'
	[huge-bulk]='script: reply too large'
	[negative]='garbage reply to the script: values out of range'
	[nan]='script: Bad integer value'
	[nan-bulk]='garbage reply to the script: not an array of integers'
	[truncated]='script: Server closed the connection'
	[half-close]='script: Server closed the connection'
	[stall]='script: timed out'
	[drip]='script: timed out'
	[close]='(script|sending): (Server closed the connection|Connection reset by peer|the server closed the connection)'
)
MODES="wrong-type integer string huge-bulk negative nan nan-bulk truncated half-close stall drip close"

# run NAME SERVICE: one login as alice; sets $took (ms).
run() {
	t0=$(now_ms)
	login "$1" "$2" alice
	took=$(($(now_ms) - t0))
}

# fake_saw NAME N: the fake server took N connections and read an EVALSHA on each (but in
# mode close, which reads nothing).
fake_saw() {
	[ "$(grep -c 'conn [0-9]*: ' "$TMP/$1.log")" = "$2" ] &&
		{ [ "$3" = close ] || [ "$(grep -c 'read "EVALSHA"' "$TMP/$1.log")" = "$2" ]; }
}

declare -A TOOK

# The control: a fake server that answers like Redis admits on its say-so, logging nothing.
start_fake fake-ok ok || exit 1
for fb in local closed; do
	service "ok-$fb" "auth required @M url=unix://$TMP/fake-ok.sock timeout=${TIMEOUT_MS}ms fallback=$fb state_dir=$TMP/st-ok-$fb interval=1ms" \
		"auth required @P/pam_permit.so"
	run "ok-$fb" "ok-$fb"
	TOOK[ok-$fb]=$took
	check "ok, fallback=$fb: admitted by the fake server (${took} ms)" \
		[ "$(rc_of "ok-$fb")" = 0 ]
	check "ok, fallback=$fb: no redis LOG_ERR line ($(shown "ok-$fb"))" \
		[ "$(n_redis_errs "ok-$fb")" = 0 ]
	check "ok, fallback=$fb: no local slot file" [ ! -e "$TMP/st-ok-$fb" ]
done
check "ok: the fake server read an EVALSHA per login" fake_saw fake-ok 2 ok
check "ok: the fake server stopped cleanly on SIGTERM" stop_fake fake-ok

for mode in $MODES; do
	start_fake "fake-$mode" "$mode" || exit 1

	# fallback=local: admitted on the per-host slot.
	service "g-$mode" "auth required @M url=unix://$TMP/fake-$mode.sock timeout=${TIMEOUT_MS}ms fallback=local state_dir=$TMP/st-$mode interval=1ms" \
		"auth required @P/pam_permit.so"
	run "$mode" "g-$mode"
	TOOK[$mode]=$took
	check "$mode, fallback=local: admitted on the local slot" \
		sh -c "[ $(rc_of "$mode") = 0 ] && [ -f '$TMP/st-$mode/slot.pam_flowslot' ]"
	check "$mode, fallback=local: decided in ${took} ms (< $TIMEOUT_MS + $SLACK_MS)" \
		[ "$took" -lt $((TIMEOUT_MS + SLACK_MS)) ]
	check "$mode, fallback=local: one LOG_ERR: $(shown "$mode")" \
		one_err "$mode" "${CAUSE[$mode]}"

	# fallback=closed: refused, with the same single line.
	service "c-$mode" "auth required @M url=unix://$TMP/fake-$mode.sock timeout=${TIMEOUT_MS}ms fallback=closed state_dir=$TMP/stc-$mode interval=1ms" \
		"auth required @P/pam_permit.so"
	run "$mode-closed" "c-$mode"
	TOOK[$mode-closed]=$took
	check "$mode, fallback=closed: refused with PAM_AUTHINFO_UNAVAIL in ${took} ms" \
		sh -c "[ $(rc_of "$mode-closed") = 1 ] && [ $took -lt $((TIMEOUT_MS + SLACK_MS)) ] &&
			grep -q 'Authentication service cannot retrieve authentication info' '$TMP/$mode-closed.err'"
	check "$mode, fallback=closed: one LOG_ERR: $(shown "$mode-closed")" \
		one_err "$mode-closed" "${CAUSE[$mode]}"
	check "$mode, fallback=closed: no local slot file" [ ! -e "$TMP/stc-$mode" ]

	check "$mode: the fake server saw both logins" fake_saw "fake-$mode" 2 "$mode"
	check "$mode: the fake server stopped cleanly on SIGTERM" stop_fake "fake-$mode"
done

# The same over TCP: the control, and a reply cut short.
port=$(free_port)
start_fake fake-tcp ok -p "$port" || exit 1
service tcp-ok "auth required @M url=redis://127.0.0.1:$port timeout=${TIMEOUT_MS}ms fallback=closed interval=1ms" \
	"auth required @P/pam_permit.so"
run tcp-ok tcp-ok
TOOK[tcp-ok]=$took
check "TCP, ok: admitted by the fake server, nothing logged (${took} ms; $(shown tcp-ok))" \
	sh -c "[ $(rc_of tcp-ok) = 0 ] && [ $(n_redis_errs tcp-ok) = 0 ]"
check "TCP, ok: the fake server stopped cleanly on SIGTERM" stop_fake fake-tcp
port=$(free_port)
start_fake fake-tcpt stall -p "$port" || exit 1
service tcp-stall "auth required @M url=redis://127.0.0.1:$port timeout=${TIMEOUT_MS}ms fallback=closed interval=1ms" \
	"auth required @P/pam_permit.so"
run tcp-stall tcp-stall
TOOK[tcp-stall]=$took
check "TCP, stall: refused in ${took} ms, one LOG_ERR: $(shown tcp-stall)" \
	sh -c "[ $(rc_of tcp-stall) = 1 ] && [ $took -lt $((TIMEOUT_MS + SLACK_MS)) ] &&
		grep -q 'Authentication service cannot retrieve authentication info' '$TMP/tcp-stall.err'"
check "TCP, stall: one LOG_ERR naming the timeout" one_err tcp-stall "127\.0\.0\.1:$port: script: timed out"
check "TCP, stall: the fake server stopped cleanly on SIGTERM" stop_fake fake-tcpt

echo "# timings (ms), fallback=local / fallback=closed:"
for mode in ok $MODES; do
	if [ "$mode" = ok ]; then
		echo "#   ok: ${TOOK[ok-local]} / ${TOOK[ok-closed]}"
	else
		echo "#   $mode: ${TOOK[$mode]} / ${TOOK[$mode-closed]}"
	fi
done
echo "#   TCP ok: ${TOOK[tcp-ok]}; TCP stall: ${TOOK[tcp-stall]}"

finish
