#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# End to end with Debian's OpenSSH: a real sshd (its own PAM service through a symlink, under
# pam_wrapper, so /etc/pam.d is untouched) on 127.0.0.1, and the real ssh client.
set -u
. "$(dirname "$0")/../helpers/lib.sh"
. "$TOP/tests/helpers/sshd.sh"

MATRIX=$(ls /usr/lib/*/pam_wrapper/pam_matrix.so | head -1)
start_redis r || exit 1
sshd_keys || exit 1
echo "root:s3cret:sshd-flowslot" > "$TMP/passdb"
# The client's password prompt goes to this program, which notes when and what it was asked.
cat > "$TMP/askpass" <<EOF
#!/bin/sh
printf '%s %s\n' "\$(date +%s%N)" "\$*" | tr '\n' '|' >> "$TMP/asked"
echo >> "$TMP/asked"
echo s3cret
EOF
chmod 0755 "$TMP/askpass"

SSHD_PID=""
# start_sshd GRACE_S STACK-LINE...: (re)starts sshd with this PAM stack, as the service
# sshd-flowslot (tests/helpers/sshd.sh), its port in $PORT; its logs $TMP/sshd-flowslot.log and .err.
start_sshd() {
	local grace=$1
	shift
	[ -n "$SSHD_PID" ] && sshd_stop "$SSHD_PID"
	service sshd-flowslot "$@"
	sshd_start sshd-flowslot "$grace" "MaxStartups ${MAXSTARTUPS:-100}" || return 1
	PORT=$SSHD_PORT
}

# key_login NAME: a publickey login running `date`; its output is when the session began.
key_login() {
	ssh "${SSH_KEY_OPTS[@]}" -p "$PORT" root@127.0.0.1 \
		'date +%s%N' > "$TMP/$1.out" 2> "$TMP/$1.err" < /dev/null
	echo $? > "$TMP/$1.rc"
}
# pw_login NAME METHOD: keyboard-interactive or password, answered by askpass.
pw_login() {
	SSH_ASKPASS="$TMP/askpass" SSH_ASKPASS_REQUIRE=force DISPLAY=none \
		ssh "${SSH_OPTS[@]}" -o PubkeyAuthentication=no -o PreferredAuthentications="$2" \
		-o NumberOfPasswordPrompts=1 -p "$PORT" root@127.0.0.1 'date +%s%N' \
		> "$TMP/$1.out" 2> "$TMP/$1.err" < /dev/null
	echo $? > "$TMP/$1.rc"
}

# why_failed PREFIX: for the logins PREFIX?? that failed, why (their exit and the last lines of
# their stderr, at most three), with sshd's error lines and pam_wrapper's or privtmp's; empty
# when all got in. For a check's line, so that a failure explains itself. (sshd's own log has
# no levels: "Access denied ... by PAM account configuration" says nothing of an error.)
why_failed() {
	local f why sshd wrapper
	why=$(for f in "$TMP/$1"??.rc; do
		[ "$(cat "$f")" = 0 ] ||
			echo "$(basename "$f" .rc): exit $(cat "$f"): $(tail -2 "${f%.rc}.err" | tr '\n' ' ')"
	done | head -3 | tr '\n' ' ')
	[ -n "$why" ] || return 0
	sshd=$(grep -v Postponed "$TMP/sshd-flowslot.log" |
		grep -m4 -E 'fatal|error|drop|throttl|denied|PAM|preauth' | tr '\n' ' ')
	wrapper=$(grep -m3 -E 'PWRAP_ERROR|privtmp:' "$TMP/sshd-flowslot.err" | tr '\n' ' ')
	echo "; $why sshd: $sshd$wrapper"
}

# 1. Publickey logins, gated in the session stack: ten at once, one interval apart, in order.
# The session lines are etc/pam.d/sshd-flowslot's, with a shorter interval.
mapfile -t recommended < <(example sshd-flowslot "unix://$TMP/r.sock" "key=keys interval=1s countdown=0")
start_sshd 120 "auth required $MATRIX passdb=$TMP/passdb" "account required @P/pam_permit.so" \
	"${recommended[@]}" \
	"session optional $PAM_DIR/pam_exec.so type=open_session quiet /bin/sh $TREE/tests/helpers/stamp.sh $TMP/stamps" \
	"session required @P/pam_permit.so" || exit 1
rm -f "$TMP/stamps"
pids=""
for i in $(seq -w 1 10); do
	key_login "k$i" &
	pids="$pids $!"
done
wait $pids
okcount=$(cat "$TMP"/k??.rc | grep -c '^0$')
check "publickey: 10 simultaneous ssh logins all get a session ($okcount$(why_failed k))" [ "$okcount" = 10 ]
# When each passed the gate (pam_exec right after it), not when its shell ran: what a loaded
# machine adds after the gate differs from login to login. Each alone, and the ten spread
# over about nine intervals.
cut -d' ' -f1 "$TMP/stamps" | sort -n > "$TMP/starts"
gaps=$(awk 'NR > 1 { printf "%d ", ($1 - p) / 1e6 } { p = $1 }' "$TMP/starts")
span=$(awk 'NR == 1 { f = $1 } { l = $1 } END { printf "%d", (l - f) / 1e6 }' "$TMP/starts")
check "publickey: admitted one interval apart (gaps: $gaps ms; first to last ${span} ms, 9 intervals 9000)" \
	sh -c "echo '$gaps' | awk '{ for (i = 1; i <= NF; i++) if (\$i < 500) exit 1; exit NF != 9 }' && [ $span -ge 8000 ]"
positions=$(grep -a 'SYSLOG(5): queued:' "$TMP/sshd-flowslot.err" | sed -E 's/.*position=([0-9]+).*/\1/' | sort -n | tr '\n' ' ')
check "publickey: nine queued, at positions 1 to 9 ($positions)" [ "$positions" = "1 2 3 4 5 6 7 8 9 " ]

# 1b. MaxStartups as etc/pam.d/sshd-flowslot recommends it: a storm of 30 publickey logins at
# once, none dropped before PAM (the default 10:30:100 drops some past 10), all queued in the
# session, where they no longer count.
MAXSTARTUPS=$(sed -nE 's/^# sshd_config: MaxStartups ([0-9:]+)\..*/\1/p' "$TOP/etc/pam.d/sshd-flowslot")
mapfile -t recommended < <(example sshd-flowslot "unix://$TMP/r.sock" "key=storm interval=100ms countdown=0")
start_sshd 120 "auth required $MATRIX passdb=$TMP/passdb" "account required @P/pam_permit.so" \
	"${recommended[@]}" "session required @P/pam_permit.so" || exit 1
pids=""
for i in $(seq -w 1 30); do
	key_login "s$i" &
	pids="$pids $!"
done
wait $pids
okcount=$(cat "$TMP"/s??.rc | grep -c '^0$')
check "MaxStartups $MAXSTARTUPS (the sshd example's): 30 ssh logins at once all get a session ($okcount$(why_failed s))" \
	sh -c "[ '$MAXSTARTUPS' ] && [ $okcount = 30 ] && ! grep -q 'MaxStartups throttling' '$TMP/sshd-flowslot.log'"
MAXSTARTUPS=100

# 1c. What an ssh user reads: five interactive logins at once (a pty, a shell), gated in the
# session by the sshd example at interval=1s: no countdown piled up after the wait, but one
# line, true when read; the fifth, number 4, reads "you waited about 4 s (you were number 4)".
mapfile -t recommended < <(example sshd-flowslot "unix://$TMP/r.sock" "key=five interval=1s countdown=1s")
start_sshd 120 "auth required $MATRIX passdb=$TMP/passdb" "account required @P/pam_permit.so" \
	"${recommended[@]}" "session required @P/pam_permit.so" || exit 1
pids=""
for i in 1 2 3 4 5; do
	{ (sleep 8; echo exit) | ssh "${SSH_KEY_OPTS[@]}" -tt -p "$PORT" \
		root@127.0.0.1 > "$TMP/five$i.out" 2>&1; } &
	pids="$pids $!"
done
wait $pids
counts=$(for i in 1 2 3 4 5; do grep -c 'Login queue' "$TMP/five$i.out"; done | tr '\n' ' ')
fifth=$(grep -h 'you were number 4' "$TMP"/five?.out | tr -d '\r')
check "five ssh logins at once: each reads at most one queue line ($counts), none a countdown" \
	sh -c "echo '$counts' | awk '{ for (i = 1; i <= NF; i++) if (\$i > 2) exit 1 }' && ! grep -q 'to go\|your turn' '$TMP'/five?.out"
check "... the fifth: 'you waited N s (you were number 4)', N 2 to 6 as the clients came ($fifth)" \
	sh -c "echo '$fifth' | grep -Eq '^Login queue: you waited ([2-5](\.[0-9])?|6) s \(you were number 4\)\.\$'"

# 2a. keyboard-interactive, gated in auth: the queue text comes with the password prompt,
# after the wait.
start_sshd 120 "auth required @M url=unix://$TMP/r.sock key=kbd interval=3s countdown=1s" \
	"auth required $MATRIX passdb=$TMP/passdb" "account required @P/pam_permit.so" \
	"session required @P/pam_permit.so" || exit 1
rm -f "$TMP/asked"
t0=$(date +%s%N)
pw_login i1 keyboard-interactive &
p1=$!
# i2 only once i1 has passed the gate (the schedule exists): i1 takes the slot, i2 waits.
has_schedule() { [ -n "$(schedule r "$1")" ]; }
wait_for 20 has_schedule kbd
pw_login i2 keyboard-interactive
wait $p1
check "keyboard-interactive: both logins get in" [ "$(rc_of i1)$(rc_of i2)" = 00 ]
prompt=$(grep 'Login queue' "$TMP/asked")
asked_ms=$(((${prompt%% *} - t0) / 1000000))
check "keyboard-interactive: the client is shown one line, what it waited, with the prompt ($prompt)" \
	sh -c "echo '$prompt' | grep -Eq ') Login queue: you waited [0-9.]+ s \(you were next\).\|Password: \|\$'"
check "keyboard-interactive: ... only once the wait is over (${asked_ms} ms after the start)" \
	[ "$asked_ms" -ge 2500 ]

# 2b. password, gated in account: the queue text arrives as a banner after the wait.
start_sshd 120 "auth required $MATRIX passdb=$TMP/passdb" \
	"account required @M url=unix://$TMP/r.sock key=acct interval=3s countdown=0" \
	"account required @P/pam_permit.so" "session required @P/pam_permit.so" || exit 1
t0=$(date +%s%N)
pw_login a1 password &
p1=$!
wait_for 20 has_schedule acct
pw_login a2 password
wait $p1
check "password + account: both logins get in" [ "$(rc_of a1)$(rc_of a2)" = 00 ]
check "password + account: the banner is one line, what it waited ($(grep 'Login queue' "$TMP/a2.err" | tr '\n' '|'))" \
	sh -c "[ \$(grep -c 'Login queue' '$TMP/a2.err') = 1 ] && grep -Eq 'Login queue: you waited [0-9.]+ s \(you were next\)\.' '$TMP/a2.err'"
started_ms=$((($(cat "$TMP/a2.out") - t0) / 1000000))
check "password + account: the session starts after the wait (${started_ms} ms)" \
	[ "$started_ms" -ge 2500 ]

# 3. The deadline. With max_wait under LoginGraceTime, a long wait is refused at once; with it
# over, sshd kills the login mid-wait with no word to the user.
start_sshd 6 "auth required @M url=unix://$TMP/r.sock key=grace interval=10s max_wait=4s" \
	"auth required $MATRIX passdb=$TMP/passdb" "account required @P/pam_permit.so" \
	"session required @P/pam_permit.so" || exit 1
pw_login g1 keyboard-interactive
rm -f "$TMP/asked"
t0=$(now_ms)
pw_login g2 keyboard-interactive
took=$(($(now_ms) - t0))
check "LoginGraceTime 6 s, max_wait=4s: a 10 s wait is refused in ${took} ms, before the grace time" \
	sh -c "[ $(rc_of g2) != 0 ] && [ $took -lt 6000 ]"
check "... and the client is told when to try again ($(grep -o 'Too many[^|]*' "$TMP/asked"))" \
	grep -q 'Too many logins at the moment. Please try again in [0-9.]* s.' "$TMP/asked"
check "... sshd did not have to kill it" sh -c "! grep -q 'Timeout before authentication' '$TMP/sshd-flowslot.log'"
start_sshd 6 "auth required @M url=unix://$TMP/r.sock key=grace2 interval=10s max_wait=20s" \
	"auth required $MATRIX passdb=$TMP/passdb" "account required @P/pam_permit.so" \
	"session required @P/pam_permit.so" || exit 1
pw_login h1 keyboard-interactive
t0=$(now_ms)
pw_login h2 keyboard-interactive
took=$(($(now_ms) - t0))
accepted=$(grep -c '^Accepted' "$TMP/sshd-flowslot.log")
# Cut off at the grace time: not refused at once by the module (5.5 s at least), nor admitted
# at its 10 s slot (it failed, and sshd accepted only h1); no upper bound, a loaded machine may
# be slow to close the connection.
check "... whereas with max_wait over LoginGraceTime, sshd cuts the waiting login off at the grace time (${took} ms, $accepted accepted)" \
	sh -c "[ $(rc_of h2) != 0 ] && [ $took -ge 5500 ] && [ $accepted = 1 ]"

# 4. Clients that hang up while queued (the natural reaction to a blank screen over ssh) give
# their places back at once: sshd's waiting process holds the client's TCP connection, and the
# module watches it. The login behind moves up to the slot of the one that left.
# The interval is long enough (6 s) for the second client to be killed, and the retry below
# to come, before the slot it held: on a loaded machine each ssh connection may take seconds.
start_sshd 120 "auth required $MATRIX passdb=$TMP/passdb" "account required @P/pam_permit.so" \
	"session requisite @M url=unix://$TMP/r.sock key=gone interval=6s countdown=0" \
	"session required @P/pam_permit.so" || exit 1
hangup_client() { # NAME: a publickey client in the background, its pid in $TMP/NAME.pid
	ssh "${SSH_KEY_OPTS[@]}" -p "$PORT" root@127.0.0.1 true \
		> /dev/null 2>&1 < /dev/null &
	echo $! > "$TMP/$1.pid"
}
queued_at_least() { [ "$(grep -ac 'SYSLOG(5): queued:' "$TMP/sshd-flowslot.err")" -ge "$1" ]; }
# hang_up_second P: P1 takes the slot, P2 and P3 queue behind it, then P2's client hangs up;
# returns once sshd has said "abandoned", with P3 still in the background (its pid in $P3_PID)
# and the common start in $T0.
hang_up_second() {
	T0=$(date +%s%N)
	key_login "${1}1"
	hangup_client "${1}2"
	wait_for 10 queued_at_least 1
	key_login "${1}3" &
	P3_PID=$!
	wait_for 10 queued_at_least 2
	kill "$(cat "$TMP/${1}2.pid")"
	wait_for 10 grep -aq 'SYSLOG(5): abandoned:' "$TMP/sshd-flowslot.err"
}
hang_up_second x
abandoned_ms=$((($(date +%s%N) - T0) / 1000000))
wait $P3_PID
# From the first session's start: x3 goes in at the slot x2 left (6 s), not at its own (12 s).
x3_ms=$((($(cat "$TMP/x3.out") - $(cat "$TMP/x1.out")) / 1000000))
check "hang-up: the waiting sshd notices the client gone and gives the place back (by ${abandoned_ms} ms)" \
	grep -aq 'SYSLOG(5): abandoned: service=sshd-flowslot user=root' "$TMP/sshd-flowslot.err"
check "... and the login behind moves up to its slot (${x3_ms} ms after the first, slot 6000, was 12000)" \
	sh -c "[ $(rc_of x3) = 0 ] && [ $x3_ms -ge 4500 ] && [ $x3_ms -lt 10000 ]"

# 5. A retry keeps its place: y2 hangs up while queued ahead of y3 and tries again at once; the
# new attempt (same service, user and host) takes y2's place back, ahead of y3.
# A fresh schedule: the first login goes in at once. Emptied by a reset: a DEL would be a lost
# schedule, which this host, having heard of its next slot, would make again there.
printf 'state_dir=%s\n' "$TMP/st-gone" > "$TMP/gone.conf"
"$TREE/flowslotctl" "conf=$TMP/gone.conf" "url=unix://$TMP/r.sock" key=gone reset > /dev/null
: > "$TMP/sshd-flowslot.err"
hang_up_second y
key_login y2b
wait $P3_PID
y2b_ms=$((($(cat "$TMP/y2b.out") - $(cat "$TMP/y1.out")) / 1000000))
y3_ms=$((($(cat "$TMP/y3.out") - $(cat "$TMP/y1.out")) / 1000000))
check "retry after a hang-up: back at its place, ahead of the login behind (${y2b_ms} ms, then ${y3_ms} ms after the first; slots 6000, 12000)" \
	sh -c "[ $(rc_of y2b)$(rc_of y3) = 00 ] && [ $y2b_ms -lt $y3_ms ] && [ $y2b_ms -lt 10000 ]"

# 5. The session learns that its login went through the gate: FLOWSLOT_ADMITTED, set in the PAM
# environment, reaches the shell (for etc/profile.d/flowslot-wait.sh not to wait again), from
# the session phase and from keyboard-interactive auth, which sshd runs in a child of its own.
start_sshd 120 "auth required @M url=unix://$TMP/r.sock key=mark interval=1s countdown=0" \
	"auth required $MATRIX passdb=$TMP/passdb" "account required @P/pam_permit.so" \
	"session required @M url=unix://$TMP/r.sock key=mark2 interval=1s countdown=0" \
	"session required @P/pam_permit.so" || exit 1
ssh "${SSH_KEY_OPTS[@]}" -p "$PORT" root@127.0.0.1 \
	'echo "marker=$FLOWSLOT_ADMITTED"' > "$TMP/m1.out" 2> "$TMP/m1.err" < /dev/null
check "publickey, gated in the session: the shell has FLOWSLOT_ADMITTED=session ($(cat "$TMP/m1.out"))" \
	grep -qx 'marker=session' "$TMP/m1.out"
start_sshd 120 "auth required @M url=unix://$TMP/r.sock key=mark3 interval=1s countdown=0" \
	"auth required $MATRIX passdb=$TMP/passdb" "account required @P/pam_permit.so" \
	"session required @P/pam_permit.so" || exit 1
SSH_ASKPASS="$TMP/askpass" SSH_ASKPASS_REQUIRE=force DISPLAY=none \
	ssh "${SSH_OPTS[@]}" -o PubkeyAuthentication=no -o PreferredAuthentications=keyboard-interactive \
	-o NumberOfPasswordPrompts=1 -p "$PORT" root@127.0.0.1 'echo "marker=$FLOWSLOT_ADMITTED"' \
	> "$TMP/m2.out" 2> "$TMP/m2.err" < /dev/null
check "keyboard-interactive, gated in auth: FLOWSLOT_ADMITTED=auth reaches the shell ($(cat "$TMP/m2.out"))" \
	grep -qx 'marker=auth' "$TMP/m2.out"

# 6. Who is exempt over ssh (issue 28): the shipped sshd lines whole, "uid eq 0" included, as
# every shipped stack has them. A queue 60 s long (max_wait 1 s), taken by a login of nobody's:
# root goes in at once, the gate never reached; without that one line (example(), as the
# sections above use the lines) root is refused, as anyone the lines do not exempt.
service occ6 "session required @M url=unix://$TMP/r.sock key=exempt6 interval=60s" "session required @P/pam_permit.so"
login occ6 occ6 nobody open_session
mapfile -t whole < <(grep -v '^#' "$TOP/etc/pam.d/sshd-flowslot" | grep . |
	sed -E "s|pam_flowslot.so|$MODULE url=unix://$TMP/r.sock key=exempt6 interval=60s max_wait=1s countdown=0|; s| pam_succeed_if.so| $PAM_DIR/pam_succeed_if.so|" |
	sed "$OWN_STATE")
start_sshd 120 "auth required $MATRIX passdb=$TMP/passdb" "account required @P/pam_permit.so" \
	"${whole[@]}" "session required @P/pam_permit.so" || exit 1
key_login x1
refusals=$(grep -ac 'refused: service=sshd-flowslot user=root .*max_wait_ms=1000' "$TMP/sshd-flowslot.err")
check "root over ssh through the shipped sshd lines (${#whole[@]}): exempt, in at once past a 60 s queue (rc $(cat "$TMP/x1.rc"), $refusals refusals)" \
	sh -c "[ $(rc_of occ6) = 0 ] && [ $(cat "$TMP/x1.rc") = 0 ] && [ $refusals = 0 ]"
mapfile -t gate < <(example sshd-flowslot "unix://$TMP/r.sock" "key=exempt6 interval=60s max_wait=1s countdown=0")
start_sshd 120 "auth required $MATRIX passdb=$TMP/passdb" "account required @P/pam_permit.so" \
	"${gate[@]}" "session required @P/pam_permit.so" || exit 1
key_login x2
check "... and without the uid eq 0 line, refused (rc $(cat "$TMP/x2.rc"))" \
	sh -c "[ $(cat "$TMP/x2.rc") != 0 ] && grep -aq 'refused: service=sshd-flowslot user=root .*max_wait_ms=1000' '$TMP/sshd-flowslot.err'"

# Every sshd process ran in a /tmp of its own (tests/helpers/sshd.sh): none of pam_wrapper's directories
# with this run's service files is left in the machine's /tmp, where they would race with
# others'. (It sees those left behind, as every sshd process that ends in _exit leaves its own:
# 27 in a run with the symlink to sshd.)
if [ ${#SSHD_ENV[@]} != 0 ]; then
	shared=$(grep -lsF "$TMP/" /tmp/pam.?/sshd-flowslot | wc -l)
	check "sshd's processes left none of pam_wrapper's directories in the machine's /tmp ($shared)" [ "$shared" = 0 ]
fi

finish
