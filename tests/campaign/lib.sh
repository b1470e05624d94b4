# SPDX-License-Identifier: BSD-3-Clause
# The fault campaign's machinery (tests/campaign/CONTRACT.md): the registry of faults, the
# login recorder, the arrivals, and the helpers a fault's functions use. Sourced by run.sh
# after tests/helpers/lib.sh ($TMP, $PIDS, start_redis, service, PRIVATE_TMP, wait_for).
# shellcheck shell=bash disable=SC2034 # the FAULT_* settings are read by run.sh

CAMPAIGN_FAULTS=""

# campaign_fault NAME DESCRIPTION: registers a fault; its functions are fault_NAME_* with the
# dashes of NAME as underscores.
campaign_fault() {
	CAMPAIGN_FAULTS="$CAMPAIGN_FAULTS $1"
	printf -v "FAULT_DESC_${1//-/_}" %s "$2"
}

# Microseconds on the observer's clock (CLOCK_REALTIME), without a fork.
campaign_now() { echo "${EPOCHREALTIME/./}"; }

# campaign_event KIND [DETAIL]: a line in the fault's events.tsv, stamped now.
campaign_event() { printf '%s\t%s\t%s\n' "$(campaign_now)" "$1" "${2:-}" >> "$FAULT_DIR/events.tsv"; }

# The logins' own files: $FAULT_DIR/l/ID.{err,out,pid,done}.
campaign_pid() { cat "$FAULT_DIR/l/$1.pid" 2> /dev/null; }

# campaign_waiters: the logins holding a place in the queue now, in the order they reserved,
# one id a line: queued ("queued:"), not ended, not admitted, and with their slot (as the
# reservation gave it) more than the commit window (2 s) away, so that they are not merely
# admitted to go in at it.
campaign_waiters() {
	local f id now
	now=$(campaign_now)
	for f in "$FAULT_DIR"/l/*.err; do
		[ -e "$f" ] || continue
		id=${f##*/}
		id=${id%.err}
		[ -e "$FAULT_DIR/l/$id.done" ] && continue
		grep -q " $id\$" "$FAULT_DIR/admits" 2> /dev/null && continue
		awk -v now="$now" -v id="$id" '/ queued: / {
			for (i = 1; i <= NF; i++) if ($i ~ /^wait_ms=/) { split($i, kv, "="); w = kv[2] }
			if ($1 + w * 1000 - now > 2000000) print $1, id
			exit
		}' "$f"
	done | sort -n | awk '{ print $2 }'
}

# campaign_waiting N: at least N logins are waiting in the queue.
campaign_waiting() { [ "$(campaign_waiters | wc -l)" -ge "$1" ]; }

# campaign_signal SIGNAL ID: sends SIGNAL to the login ID's pamtester, by its pid, recording it
# (kill, stop, cont) in events.tsv.
campaign_signal() {
	local pid
	pid=$(campaign_pid "$2") || return 1
	[ -n "$pid" ] || return 1
	campaign_event "${1,,}" "$2"
	kill -"$1" "$pid" 2> /dev/null
}

# campaign_hangup ID: the login's client connection closed by the far end, as a client that
# hangs up closes sshd's (tests/campaign/hupd.py holds the other end); the module polls it.
campaign_hangup() {
	campaign_event hangup "$1"
	printf '%s\n' "$1" > "$TMP/hupd.ctl"
}

# campaign_redis NAME [redis-server options...]: a private server on $TMP/NAME.sock, started
# (or restarted) by tests/helpers/lib.sh's start_redis; FAULT_URL names it.
campaign_redis() {
	start_redis "$@" || return 1
	FAULT_URL="unix://$TMP/$1.sock"
}

# The hang-up server: one listener on each of the rhosts the logins use, all on one port.
campaign_hupd_start() {
	mkfifo "$TMP/hupd.ctl"
	# shellcheck disable=SC2086 # a list of addresses
	/usr/bin/python3 "$TOP/tests/campaign/hupd.py" "$TMP/hupd.port" "$TMP/hupd.ctl" \
		$CAMPAIGN_RHOSTS > "$TMP/hupd.log" 2>&1 &
	PIDS="$PIDS $!"
	wait_for 10 test -s "$TMP/hupd.port" || { cat "$TMP/hupd.log" >&2; return 1; }
	HUPD_PORT=$(cat "$TMP/hupd.port")
}

# campaign_login ID HOST RHOST: one login through the real module, in the background: pamtester
# under pam_wrapper (as tests/helpers/lib.sh's login), on HOST (a network namespace, or "local"), from
# RHOST, holding a TCP connection to the hang-up server at RHOST as sshd holds its client's.
# Its syslog lines go to ID.err, each stamped when written (the reservation's reply is the
# stamp of its "queued:" line); ID.done holds its exit status, end stamp and CPU time.
campaign_login() {
	local id=$1 host=$2 rhost=$3 l=$FAULT_DIR/l
	printf '%s %s\n' "$host" "$rhost" > "$l/$id.who"
	(
		local netns=() rc t_end cpu
		[ "$host" = local ] || netns=(ip netns exec "$host")
		# Each line stamped as it comes, by bash's own clock (no fork a line), at a real-time
		# priority: the stamper only ever waits for a line, and a machine busy with other
		# jobs would otherwise wake it tens of milliseconds late, moving the stamps.
		# shellcheck disable=SC2016 # the inner script's own variables
		exec 2> >(exec chrt -f 10 bash -c 'while IFS= read -r line; do
			printf "%s %s\n" "${EPOCHREALTIME/./}" "$line"; done' > "$l/$id.err")
		# SIGPIPE ignored, as sshd has it: a stamper gone (killed by a stranger's stale pid)
		# costs the record its lines, not the login its life.
		trap '' PIPE
		if [ -n "${HUPD_PORT:-}" ] && [ "$host" = local ] &&
			exec 3<> "/dev/tcp/$rhost/$HUPD_PORT"; then
			printf '%s\n' "$id" >&3
		fi
		"${netns[@]}" "${PRIVATE_TMP[@]}" env LD_PRELOAD="$PRELOAD" PAM_WRAPPER=1 \
			PAM_WRAPPER_SERVICE_DIR="$TMP/svc" PAM_WRAPPER_DEBUGLEVEL=2 \
			pamtester -v -I "rhost=$rhost" "$FAULT_SERVICE" "$id" authenticate \
			> "$l/$id.out" &
		echo $! > "$l/$id.pid"
		wait $!
		rc=$?
		t_end=$(campaign_now)
		exec 3>&-
		# The CPU time of the children waited for: pamtester, and what it waited for (the
		# pam_exec stamps); not through a pipe, whose subshell has waited for nothing.
		times > "$l/$id.times"
		cpu=$(awk 'NR == 2 { split($1 " " $2, t, /[ms ]+/); printf "%.0f", t[1] * 60000 + t[2] * 1000 + t[3] * 60000 + t[4] * 1000 }' "$l/$id.times")
		printf '%s\t%s\t%s\n' "$rc" "$t_end" "$cpu" > "$l/$id.done"
	) &
	CAMPAIGN_LOGIN_PIDS="$CAMPAIGN_LOGIN_PIDS $!"
}

# The arrivals: FAULT_LOGINS logins, one every FAULT_GAP seconds, over the hosts in turn and
# the rhosts in turn; then more, as many again at most, until the runner says the last round
# is healed ($FAULT_DIR/healed), so that logins arrive while every fault holds however late it
# came (on a busy machine logins start late, the queue builds late, and the waiters the
# injection waits for came after the last of 16). Runs in the background; waits for all of its
# logins.
campaign_arrivals() {
	# shellcheck disable=SC2206 # lists of names
	local i=0 hosts=($FAULT_HOSTS) rhosts=($CAMPAIGN_RHOSTS) start next id
	CAMPAIGN_LOGIN_PIDS=""
	start=$(campaign_now)
	while [ "$i" -lt "$FAULT_LOGINS" ] ||
		{ [ ! -e "$FAULT_DIR/healed" ] && [ "$i" -lt $((2 * FAULT_LOGINS)) ]; }; do
		id=$(printf 'L%03d' "$i")
		campaign_login "$id" "${hosts[i % ${#hosts[@]}]}" "${rhosts[i % FAULT_RHOSTS]}"
		i=$((i + 1))
		next=$((start + i * FAULT_GAP_MS * 1000))
		now=$(campaign_now)
		[ "$next" -le "$now" ] || sleep "$(awk -v d=$((next - now)) 'BEGIN { printf "%.6f", d / 1e6 }')"
	done
	# shellcheck disable=SC2086
	wait $CAMPAIGN_LOGIN_PIDS
}
