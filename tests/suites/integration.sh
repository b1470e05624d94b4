#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Integration tests: the real module in real libpam (pamtester under pam_wrapper), against a
# private redis-server and against url=local. With FLOWSLOT_VALGRIND=1 every login runs under
# valgrind, and any memory error or leak fails it.
set -u
. "$(dirname "$0")/../helpers/lib.sh"

if [ -n "$VG" ]; then
	# valgrind is slow: fewer logins, a wider interval.
	N=6 T_MS=1500 B_MS=3000
else
	# An interval wide enough that what a loaded machine adds between the gate and a login's
	# stamp (pam_exec: a fork and an exec) does not reorder two stamps.
	N=20 T_MS=500 B_MS=2000
fi

start_redis r || exit 1
permit_line="auth required $PAM_DIR/pam_permit.so"

# fresh BACKEND: sets $url to a new, empty schedule on that backend.
STATE_N=0
fresh() {
	STATE_N=$((STATE_N + 1))
	case $1 in
	redis) url="url=unix://$TMP/r.sock key=test$STATE_N" ;;
	local) url="url=local state_dir=$TMP/state$STATE_N" ;;
	esac
}

# gaps_at_least MIN_MS: consecutive admissions in $TMP/stamps are at least MIN_MS apart.
gaps_at_least() {
	sort -n "$TMP/stamps" | awk -v min="$1" '
		NR > 1 && ($1 - prev) / 1e6 < min { bad = 1; printf "gap %.0f ms\n", ($1 - prev) / 1e6 }
		{ prev = $1 } END { exit bad }' >&2
}

# span_ms: from the first admission to the last.
span_ms() {
	sort -n "$TMP/stamps" | awk 'NR == 1 { a = $1 } { b = $1 } END { printf "%d", (b - a) / 1e6 }'
}

# in_turn PREFIX SERVICE N [OPERATION]: N logins (users PREFIX01..) started at once, each held
# before the gate by $TURN (its stack's first line) until the one before has logged its
# decision (the gate has debug): their places follow their order whatever the load, and no
# login's start-up (seconds under valgrind) lies between two reservations. Waits for all.
printf '%s\n' 'while [ ! -e "$1/$PAM_USER" ]; do sleep 0.01; done' > "$TMP/turn.sh"
mkdir "$TMP/turns"
TURN="auth optional $PAM_DIR/pam_exec.so quiet /bin/sh $TMP/turn.sh $TMP/turns"
in_turn() {
	local pids="" i u
	rm -f "$TMP/turns/$1"*
	for i in $(seq -f '%02g' 1 "$3"); do
		u=$1$i
		login "$u" "$2" "$u" "${4:-authenticate}" &
		pids="$pids $!"
	done
	for i in $(seq -f '%02g' 1 "$3"); do
		u=$1$i
		touch "$TMP/turns/$u"
		wait_for 60 grep -Eq '(admitted|queued|refused): ' "$TMP/$u.err"
	done
	wait $pids
}

all_rc() {
	want=$1 prefix=$2 n=$3
	for i in $(seq -f '%02g' 1 "$n"); do
		[ "$(rc_of "$prefix$i")" = "$want" ] || { echo "$prefix$i: rc $(rc_of "$prefix$i")" >&2; cat "$TMP/$prefix$i.err" "$TMP/$prefix$i.out" >&2; return 1; }
	done
}

# fcfs PREFIX: the logins went in in the order of their places: the position each was given
# when it reserved (its "queued:" line; none for the one admitted at once) is the
# order of their stamps. Which of two simultaneous logins reaches the schedule first is nobody's
# promise; that the first to reserve goes in first is the module's. (Position counts the logins
# still ahead: the one admitted at once is 0 here, the next is 1.) Two logins may be told the
# same place when one went in between their reservations (under valgrind they spread over more
# than an interval): a place never goes in before one told a smaller one.
fcfs() {
	for f in "$TMP/$1"??.err; do
		u=$(basename "$f" .err)
		pos=$(sed -n 's/.*queued: .* position=\([0-9]*\) .*/\1/p' "$f" | head -1)
		echo "$u ${pos:-0}"
	done | sort > "$TMP/positions"
	join <(sort "$TMP/positions") <(awk '{ print $2, $1 }' "$TMP/stamps" | sort) |
		sort -k3n | awk '{ seen = seen sprintf("%s:%s ", $1, $2); if ($2 + 0 < last || $2 > NR - 1) bad = 1; last = $2 + 0 }
			END { if (bad) print "admitted in this order (login:position): " seen; exit bad || NR == 0 }' >&2
}

# at_once PREFIX SERVICE N: N logins (users PREFIX01..) held by $BARRIER (their stack's first
# line) until all have reached it, then let go together: they meet the gate within
# milliseconds of one another, and no login's start-up (pam_wrapper's, pamtester's, the
# modules' loading: a second or more for twenty on two cores) delays the stamp of one let in.
# Waits for all.
printf '%s\n' 'touch "$1/$PAM_USER"; while [ ! -e "$1/go" ]; do sleep 0.01; done' > "$TMP/barrier.sh"
mkdir "$TMP/barrier"
BARRIER="auth optional $PAM_DIR/pam_exec.so quiet /bin/sh $TMP/barrier.sh $TMP/barrier"
at_once() {
	local opener
	rm -f "$TMP/barrier/"*
	(
		wait_for 120 sh -c '[ "$(ls "$1" | wc -l)" -ge "$2" ]' sh "$TMP/barrier" "$3"
		touch "$TMP/barrier/go"
	) &
	opener=$!
	logins "$1" "$2" "$3"
	wait "$opener"
}

for backend in redis local; do
	# 1. N logins at once are admitted in order, at distinct slots one interval apart.
	rm -f "$TMP/stamps"
	fresh $backend
	service stagger "$BARRIER" "auth required @M $url interval=${T_MS}ms countdown=0" \
		"$STAMP" "auth required @P/pam_permit.so"
	at_once s stagger "$N"
	check "$backend: $N concurrent logins all admitted" all_rc 0 s "$N"
	check "$backend: $N admissions at least ${T_MS}/2 ms apart" gaps_at_least $((T_MS / 2))
	span=$(span_ms)
	check "$backend: first to last admission spans >= 0.9*$((N - 1)) intervals (${span} ms)" \
		[ "$span" -ge $((T_MS * (N - 1) * 9 / 10)) ]
	check "$backend: first come, first served: admitted in the order of the places they were given" \
		fcfs s

	# 2. burst=3 lets three start together; the fourth waits an interval. Only three may start
	# within any one interval, so the fourth starts at least an interval after the first,
	# however late it arrived; the first three are apart by no more than their arrivals.
	rm -f "$TMP/stamps"
	fresh $backend
	service burst "$BARRIER" "auth required @M $url interval=${B_MS}ms burst=3 countdown=0" \
		"$STAMP" "auth required @P/pam_permit.so"
	at_once b burst 4
	check "$backend: burst logins all admitted" all_rc 0 b 4
	first3=$(sort -n "$TMP/stamps" | awk 'NR == 1 { a = $1 } NR == 3 { printf "%d", ($1 - a) / 1e6 }')
	gap4=$(sort -n "$TMP/stamps" | awk 'NR == 1 { a = $1 } NR == 4 { printf "%d", ($1 - a) / 1e6 }')
	check "$backend: burst=3: three start within half an interval of ${B_MS} ms (${first3} ms)" \
		[ "$first3" -lt $((B_MS / 2)) ]
	check "$backend: burst=3: the fourth waits about an interval after the first (${gap4} ms)" \
		[ "$gap4" -ge $((B_MS * 3 / 4)) ]

	# 3. max_wait refuses at once and reserves nothing.
	fresh $backend
	service maxwait "auth required @M $url interval=20s max_wait=1s" "auth required @P/pam_permit.so"
	login m1 maxwait alice
	state_before() {
		case $backend in
		redis) rcli r zrange "${url##*key=}" 0 -1 withscores | tr '\n' ' ' ;;
		local) cat "${url##*state_dir=}"/slot.pam_flowslot ;;
		esac
	}
	before=$(state_before)
	t0=$(now_ms)
	login m2 maxwait bob
	took=$(($(now_ms) - t0))
	check "$backend: max_wait: the first login is admitted" [ "$(rc_of m1)" = 0 ]
	check "$backend: max_wait: a 20 s wait is refused (PAM_AUTH_ERR)" \
		grep -q 'Authentication failure' "$TMP/m2.err"
	check "$backend: max_wait: refused at once (${took} ms)" [ "$took" -lt 5000 ]
	check "$backend: max_wait: the user is told when to retry" \
		grep -Eq 'Too many logins at the moment. Please try again in 1[0-9] s.' "$TMP/m2.err"
	check "$backend: max_wait: the refusal reserved nothing" [ "$before" = "$(state_before)" ]
	check "$backend: max_wait: the refusal is logged" grep -q 'refused: service=maxwait user=bob' "$TMP/m2.err"
	check "$backend: the login let in at once is logged at LOG_INFO, without debug" \
		grep -Eq 'SYSLOG\(6\): .*went in: service=maxwait user=alice rhost=[^ ]* waited_ms=0 ' "$TMP/m1.err"
	# refusal=info: the same words as information (pamtester prints it on standard output),
	# not as an error (standard error): for a greeter that replaces errors with its own.
	service maxinfo "auth required @M $url interval=20s max_wait=1s refusal=info" \
		"auth required @P/pam_permit.so"
	login m3 maxinfo carol
	check "$backend: refusal=info: the refusal is sent as information, once, not as an error" \
		sh -c "[ \$(grep -c 'Too many logins at the moment. Please try again in' '$TMP/m3.out') = 1 ] &&
			! grep -q 'Too many logins' '$TMP/m3.err' && [ $(rc_of m3) != 0 ]"

	# 5. Stacked sufficient before pam_deny, the gate still vouches for no one.
	fresh $backend
	service suff "$TURN" "auth sufficient @M $url interval=2s debug" "auth requisite @P/pam_deny.so"
	in_turn f suff 2
	check "$backend: sufficient + pam_deny denies an admitted login" \
		[ "$(rc_of f01)$(rc_of f02)" = 11 ]
	check "$backend: ... even after a wait in the queue" grep -q 'queued:' "$TMP"/f0?.err

	# 6. PAM_SILENT prints nothing; quiet prints nothing but a refusal. Of three logins in
	# turn, one goes straight in, one waits 4 s, and the third, at 8 s, is refused: each
	# decided up to 1.5 s after the one before (under valgrind, on a loaded machine: at 2 s and
	# 3 s, a third decided 0.5 s late was queued, not refused).
	fresh $backend
	service silent "$TURN" "auth required @M $url interval=4s countdown=500ms max_wait=5s debug" \
		"auth required @P/pam_permit.so"
	in_turn q silent 3 'authenticate(PAM_SILENT)'
	check "$backend: PAM_SILENT: one queued, one refused" \
		sh -c "grep -q queued: '$TMP'/q0?.err && [ \$(cat '$TMP'/q0?.rc | sort | tr -d '\n') = 001 ]"
	check "$backend: PAM_SILENT: no login printed a message" \
		sh -c "! grep -Eq 'Login queue|Too many' '$TMP'/q0?.out '$TMP'/q0?.err"
	fresh $backend
	service quiet "$TURN" "auth required @M $url interval=4s max_wait=5s quiet debug" \
		"auth required @P/pam_permit.so"
	in_turn k quiet 3
	check "$backend: quiet: no countdown" sh -c "! grep -q 'Login queue' '$TMP'/k0?.out"
	check "$backend: quiet: a refusal is still shown" grep -q 'Too many logins' "$TMP"/k0?.err

	# 7. The countdown: first line, steps, last line, in order. Three logins in turn (so their
	# places are 0, 1 and 2 whatever the load):
	# the first goes in at once and is told nothing; the second is told it is next, and its
	# turn; the third that it is number 2, its steps, and its turn. How many steps each sees
	# depends on the time each one's reservation took: any number, in order (under valgrind the
	# third's reservation can come late enough in its wait that no step falls in it).
	fresh $backend
	service count "$TURN" "auth required @M $url interval=2s countdown=2s debug" \
		"auth required @P/pam_permit.so"
	in_turn c count 3
	blur() { grep -o 'Login queue.*' "$TMP/$1.out" | sed -E 's/[0-9.]+ s/N s/' | tr '\n' '|'; }
	# A step: the time left, or a new place once the one ahead went in.
	step='(Login queue: about N s to go\.\||Login queue: you are now next; your turn in about N s\.\|)'
	# The turn is told only when it comes 2 s or more after the line before (lines are at
	# least 2 s apart, and a login is never held back for one).
	turn='(Login queue: your turn now\.\|)?'
	check "$backend: countdown: none, first+turn, first+steps+turn, in order ($(blur c01) / $(blur c02) / $(blur c03))" \
		sh -c "[ -z '$(blur c01)' ] &&
			echo '$(blur c02)' | grep -Eqx 'Login queue: you are next; your turn in about N s\.\|$step*$turn' &&
			echo '$(blur c03)' | grep -Eqx 'Login queue: you are number 2; your turn in about N s\.\|$step*$turn'"
	# The log shows the stagger: each of the three let in, the two that waited with the time.
	check "$backend: each login let in is logged, with how long it was held ($(grep -ho 'waited_ms=[0-9]*' "$TMP"/c0?.err | tr '\n' ' '))" \
		sh -c "[ \$(cat '$TMP'/c0?.err | grep -c 'went in: service=count ') = 3 ] &&
			[ \$(cat '$TMP'/c0?.err | grep -Ec 'went in: .* waited_ms=[1-9][0-9]{2,} ') = 2 ]"
done

# 4. Redis unusable: each fallback does what it says, within the timeout.
port=$(free_port)
for how in stopped frozen; do
	if [ $how = frozen ]; then
		start_redis frozen || exit 1
		kill -STOP "$(cat "$TMP/frozen.pid")"
		url="url=unix://$TMP/frozen.sock"
	else
		url="url=redis://127.0.0.1:$port"
	fi
	for fb in local open closed; do
		service "fb$fb" "auth required @M $url timeout=300ms fallback=$fb state_dir=$TMP/fbstate$how interval=1ms" \
			"auth required @P/pam_permit.so"
		t0=$(now_ms)
		login "fb$how$fb" "fb$fb" alice
		took=$(($(now_ms) - t0))
		# Slack for starting pamtester on a loaded machine: what is checked is that a dead
		# or frozen server costs about the timeout, not a hang nor a timeout per step.
		slack=2000
		[ -n "$VG" ] && slack=8000
		check "Redis $how, fallback=$fb: decided within timeout+slack (${took} ms)" \
			[ "$took" -lt $((300 + slack)) ]
		case $fb in
		local)
			check "Redis $how, fallback=local: admitted on the local slot" \
				sh -c "[ $(rc_of fb$how$fb) = 0 ] && [ -f '$TMP/fbstate$how/slot.pam_flowslot' ]" ;;
		open)
			check "Redis $how, fallback=open: admitted" [ "$(rc_of fb$how$fb)" = 0 ] ;;
		closed)
			check "Redis $how, fallback=closed: refused with PAM_AUTHINFO_UNAVAIL" \
				grep -q 'Authentication service cannot retrieve authentication info' "$TMP/fb$how$fb.err" ;;
		esac
	done
	check "Redis $how: the cause is logged" \
		grep -Eq 'SYSLOG\(3\): redis .*(cannot connect|timed out)' "$TMP/fb${how}local.err"
	[ $how = frozen ] && stop_redis frozen
done

# The local slot keeps staggering while Redis is down. (Under valgrind a login takes about a
# second to start: the interval must outlast that for the second to find the first's slot.)
down_interval=1s
[ -n "$VG" ] && down_interval=4s
service down "auth required @M url=redis://127.0.0.1:$port timeout=200ms interval=$down_interval state_dir=$TMP/downstate countdown=0" \
	"auth required @P/pam_permit.so"
login d1 down alice
login d2 down bob
check "Redis down: the second login waits on the local slot" grep -q 'queued: .*via=local' "$TMP/d2.err"

# One round trip: after the script is cached, every login is one EVALSHA, never an EVAL.
start_redis rt || exit 1
service rt "auth required @M url=unix://$TMP/rt.sock interval=1ms" "auth required @P/pam_permit.so"
rcli rt config resetstat > /dev/null
for i in 1 2 3 4 5; do login "rt$i" rt "user$i"; done
stats=$(rcli rt info commandstats)
evalsha=$(echo "$stats" | sed -nE 's/^cmdstat_evalsha:calls=([0-9]+).*failed_calls=([0-9]+).*/\1 \2/p')
evals=$(echo "$stats" | sed -nE 's/^cmdstat_eval:calls=([0-9]+).*/\1/p')
check "five logins: five EVALSHA, one NOSCRIPT ($evalsha), one EVAL ($evals)" \
	[ "$evalsha/$evals" = "5 1/1" ]
kinds=$(echo "$stats" | sed -nE 's/^cmdstat_([^:]+):.*/\1/p' | sort | tr '\n' ' ')
# The commands the script runs inside count too: those src/slot.lua names are allowed.
in_script=$(grep -oE "redis\.call\('[A-Z]+'" "$TOP/src/slot.lua" | sed -E "s/.*'([A-Z]+)'/\1/" | tr 'A-Z' 'a-z' | sort -u | tr '\n' ' ')
stray=$(for k in $kinds; do case " config|resetstat eval evalsha $in_script" in *" $k "*) ;; *) printf '%s ' "$k" ;; esac; done)
check "five logins sent no other command: the rest ran inside the script ($kinds; outside it: ${stray:-none})" \
	sh -c "[ -z '$stray' ] && echo '$kinds' | grep -q evalsha"
rcli rt script flush > /dev/null
login rt6 rt user6
check "SCRIPT FLUSH between logins: the next login still gets in" [ "$(rc_of rt6)" = 0 ]
check "... by loading the script again with EVAL" \
	[ "$(rcli rt info commandstats | sed -nE 's/^cmdstat_eval:calls=([0-9]+).*/\1/p')" = 2 ]

# TCP with a password and a database: AUTH goes out with the script, which selects the db.
tport=$(free_port)
start_redis tcp --port "$tport" --requirepass 's3cr:t@pw' || exit 1
service tcp "auth required @M url=redis://:s3cr%3At%40pw@127.0.0.1:$tport/3 key=fs:%u interval=2s" \
	"auth required @P/pam_permit.so"
login tcp1 tcp alice
check "TCP + AUTH + database: admitted" [ "$(rc_of tcp1)" = 0 ]
check "... the schedule fs:alice is in database 3" \
	[ "$(redis-cli -p "$tport" -a 's3cr:t@pw' --no-auth-warning -n 3 exists fs:alice)" = 1 ]
check "... and no password reached the log" sh -c "! grep -q 's3cr' '$TMP/tcp1.err'"
service tcpbad "auth required @M url=redis://:n0tth3pw@127.0.0.1:$tport fallback=closed" \
	"auth required @P/pam_permit.so"
login tcp2 tcpbad alice
check "a wrong password follows fallback=closed" [ "$(rc_of tcp2)" = 1 ]
check "... and says AUTH failed" grep -q 'SYSLOG(3): redis .*AUTH' "$TMP/tcp2.err"
check "... without the password" sh -c "! grep -q 'n0tth3pw' '$TMP/tcp2.err'"

# The slot is on the server's clock: a host whose clock is 30 days behind still queues right.
FAKE=$(ls /usr/lib/*/faketime/libfaketime.so.1 2> /dev/null | head -1)
if [ -n "$FAKE" ]; then
	service skew "auth required @M url=unix://$TMP/r.sock key=skew interval=1s countdown=0" \
		"auth required @P/pam_permit.so"
	for u in s1 s2; do
		env LD_PRELOAD="$PRELOAD $FAKE" FAKETIME=-30d PAM_WRAPPER=1 \
			PAM_WRAPPER_SERVICE_DIR="$TMP/svc" PAM_WRAPPER_DEBUGLEVEL=2 \
			pamtester -v skew "$u" authenticate > "$TMP/$u.out" 2> "$TMP/$u.err"
		echo $? > "$TMP/$u.rc"
	done
	tat=$(schedule r skew)
	tat=${tat%% *}
	server_us=$(rcli r time | tr '\n' ' ' | awk '{ printf "%d%06d", $1, $2 }')
	check "a host 30 days behind: both logins admitted, the second queued" \
		sh -c "[ $(rc_of s1)$(rc_of s2) = 00 ] && grep -q 'queued:.*user=s2' '$TMP/s2.err'"
	# The next slot is at most an interval ahead of the server's TIME, or passed a moment ago
	# if the second login was slow to exit; the host's clock would put it 30 days behind.
	check "... on the server's clock (schedule $(((tat - server_us) / 1000)) ms past its TIME)" \
		in_range $((tat - server_us)) -5000000 2000000
else
	not_ok "faketime is missing: cannot show that a host's clock does not matter"
fi

# A database the server does not have fails the call and reserves nothing anywhere.
service baddb "auth required @M url=redis://:s3cr%3At%40pw@127.0.0.1:$tport/99 key=baddb fallback=closed" \
	"auth required @P/pam_permit.so"
login bd1 baddb alice
check "a database out of range follows fallback=closed, logged" \
	sh -c "[ $(rc_of bd1) = 1 ] && grep -q 'DB index is out of range' '$TMP/bd1.err'"
check "... and reserved nothing in database 0" \
	[ "$(redis-cli -p "$tport" -a 's3cr:t@pw' --no-auth-warning exists baddb)" = 0 ]

# Bad options are logged by name, and the login follows fallback.
service badopt "auth required @M url=unix://$TMP/r.sock interval=7x fallback=closed" \
	"auth required @P/pam_permit.so"
login bo1 badopt alice
check "a bad option is logged by name" grep -q 'bad value for interval: "7x"' "$TMP/bo1.err"
check "... and the login follows fallback=closed" \
	grep -q 'Authentication service cannot retrieve authentication info' "$TMP/bo1.err"

# Account and session refuse with their own codes.
service phases "account required @M url=unix://$TMP/r.sock key=ph interval=5s max_wait=1s" \
	"session required @M url=unix://$TMP/r.sock key=ph interval=5s max_wait=1s" \
	"account required @P/pam_permit.so" "session required @P/pam_permit.so"
login ph1 phases alice acct_mgmt
login ph2 phases bob acct_mgmt
login ph3 phases carol open_session
check "account: admitted, then refused with PAM_PERM_DENIED" \
	sh -c "[ $(rc_of ph1) = 0 ] && grep -q 'Permission denied' '$TMP/ph2.err'"
check "session: refused with PAM_SESSION_ERR" \
	grep -q 'Cannot make/remove an entry for the specified session' "$TMP/ph3.err"

# The example stack in etc/, as shipped but for where Redis is.
grep -v '^#' "$TOP/etc/pam.d/flowslot-example" |
	sed "s|pam_flowslot.so\$|$MODULE url=unix://$TMP/r.sock|; $OWN_STATE" \
	> "$TMP/svc/example"
echo "session required $PAM_DIR/pam_permit.so" >> "$TMP/svc/example"
login ex1 example alice open_session
check "etc/pam.d/flowslot-example: a session is admitted on its schedule" \
	sh -c "[ $(rc_of ex1) = 0 ] && [ \$(redis-cli -s '$TMP/r.sock' exists pam_flowslot) = 1 ]"

# The example configuration file, every option uncommented, parses without an error. It then
# holds a password (sentinel_password=, unused by unix://), so it is readable by root alone.
# The tls_* options go with a rediss:// url only (an error on unix://): tests/suites/tls.sh has them.
sed -E 's/^#([a-z_]+(=.*)?)$/\1/; /^password_file=/d; /^tls_/d' "$TOP/etc/security/pam_flowslot.conf" |
	sed "s|^url=.*|url=unix://$TMP/r.sock|; s|^key=.*|key=confexample|" > "$TMP/example.conf"
chmod 0600 "$TMP/example.conf"
service conf "auth required @M conf=$TMP/example.conf" "auth required @P/pam_permit.so"
login cf1 conf alice
check "etc/security/pam_flowslot.conf, uncommented: no error, admitted through Redis" \
	sh -c "[ $(rc_of cf1) = 0 ] && ! grep -q 'SYSLOG(3)' '$TMP/cf1.err' && [ \$(redis-cli -s '$TMP/r.sock' exists confexample) = 1 ]"

# A typo in the configuration file (issue 28): the unknown option is ignored with one
# LOG_WARNING naming file, line and option, at most once an hour on the host (a stamp in
# state_dir); the rest of the file stands, url= included, and no login takes the fallback. The
# second login is refused by the file's max_wait on the file's interval, through Redis.
printf '%s\n' "url=unix://$TMP/r.sock" key=typo intervall=3s interval=5s max_wait=1s \
	> "$TMP/typo.conf"
service typo "auth required @M conf=$TMP/typo.conf state_dir=$TMP/typostate" "$permit_line"
login ty1 typo alice
login ty2 typo bob
warned() { grep -ac "SYSLOG(4): .*$TMP/typo.conf:3: unknown option \"intervall\": ignored" "$TMP/$1.err"; }
check "a typo in the configuration file: one LOG_WARNING naming file, line and option, in two logins ($(warned ty1) + $(warned ty2))" \
	[ "$(warned ty1)$(warned ty2)" = 10 ]
check "... no error, no fallback: the file's url, interval and max_wait apply ($(rc_of ty1) $(rc_of ty2))" \
	sh -c "[ $(rc_of ty1)$(rc_of ty2) = 01 ] && ! grep -aq 'SYSLOG(3)\|fallback' '$TMP/ty1.err' '$TMP/ty2.err' &&
		grep -q 'refused: .*via=redis' '$TMP/ty2.err' && [ \$(redis-cli -s '$TMP/r.sock' exists typo) = 1 ]"
touch -d '61 minutes ago' "$TMP"/typostate/once.*
login ty3 typo carol
check "... said again once the last warning is over an hour old ($(warned ty3))" [ "$(warned ty3)" = 1 ]
# Issue 38: a name with a hyphen or a digit is an unknown option like any other. max-wait=45s
# and interva1=3s were lines that are no option: LOG_ERR, and every login took the fallback.
printf '%s\n' "url=unix://$TMP/r.sock" key=typoh max-wait=45s interva1=3s interval=5s max_wait=1s \
	> "$TMP/typoh.conf"
service typoh "auth required @M conf=$TMP/typoh.conf state_dir=$TMP/typohstate" "$permit_line"
login tyh1 typoh alice
login tyh2 typoh bob
warned_h() { grep -ac "SYSLOG(4): .*$TMP/typoh.conf:[34]: unknown option \"\(max-wait\|interva1\)\": ignored" "$TMP/$1.err"; }
check "a typo in the configuration file with a hyphen or a digit (max-wait=45s, interva1=3s): one LOG_WARNING each, in two logins ($(warned_h tyh1) + $(warned_h tyh2))" \
	[ "$(warned_h tyh1)$(warned_h tyh2)" = 20 ]
wait_h=$(sed -n 's/.*refused: .* wait_ms=\([0-9]*\) .*/\1/p' "$TMP/tyh2.err" | head -1)
check "... no error, no fallback: the file's url, interval and max_wait apply ($(rc_of tyh1) $(rc_of tyh2), the second's wait ${wait_h:-none} ms, under the default interval's 7 s)" \
	sh -c "[ $(rc_of tyh1)$(rc_of tyh2) = 01 ] && ! grep -aq 'SYSLOG(3)\|fallback' '$TMP/tyh1.err' '$TMP/tyh2.err' &&
		grep -q 'refused: .*max_wait_ms=1000 via=redis' '$TMP/tyh2.err' && [ \$(redis-cli -s '$TMP/r.sock' exists typoh) = 1 ] &&
		[ '${wait_h:-0}' -gt 0 ] && [ '${wait_h:-0}' -le 5000 ]"
# A bad value in the file still follows the failure policy.
printf '%s\n' "url=unix://$TMP/r.sock" key=typo2 interval=3x fallback=closed > "$TMP/badval.conf"
service badval "auth required @M conf=$TMP/badval.conf" "$permit_line"
login bv1 badval alice
check "a bad value in the configuration file: LOG_ERR by file and line, and fallback=closed" \
	sh -c "[ $(rc_of bv1) != 0 ] && grep -aq 'SYSLOG(3): $TMP/badval.conf:3: bad value for interval' '$TMP/bv1.err' &&
		grep -q 'fallback=closed: refusing' '$TMP/bv1.err'"

# max_wait's default: 45 s in auth (under LOGIN_TIMEOUT and LoginGraceTime), 5 min in session.
service mwauth "auth required @M url=unix://$TMP/r.sock key=mwa interval=50s" "$permit_line"
login mwa1 mwauth alice
login mwa2 mwauth bob
check "default max_wait in auth is 45 s: a 50 s wait is refused" \
	sh -c "[ $(rc_of mwa2) = 1 ] && grep -q 'refused: .*max_wait_ms=45000' '$TMP/mwa2.err'"
service mwsess "session required @M url=unix://$TMP/r.sock key=mws interval=310s" \
	"session required @P/pam_permit.so"
login mws1 mwsess alice open_session
login mws2 mwsess bob open_session
check "default max_wait in session is 5 min" grep -q 'refused: .*max_wait_ms=300000' "$TMP/mws2.err"

# A 10,000-byte user name with key=%u: the key is cut, with a hash of the whole, and the login
# queues on Redis like any other.
long=$(head -c 10000 /dev/zero | tr '\0' 'x')
service longuser "auth required @M url=unix://$TMP/r.sock key=%u interval=20s max_wait=5s state_dir=$TMP/longstate" \
	"auth required @P/pam_permit.so"
login lu1 longuser "$long"
login lu2 longuser "$long"
check "10,000-byte user: no crash, admitted" [ "$(rc_of lu1)" = 0 ]
check "... through Redis, on a key of its own ending in a hash" \
	sh -c "! grep -q 'via=local\|SYSLOG(3)' '$TMP/lu1.err' && [ \$(redis-cli -s '$TMP/r.sock' --scan --pattern 'xxx*~*' | wc -l) = 1 ]"
check "... where a second attempt queues behind the first" \
	sh -c "[ $(rc_of lu2) = 1 ] && grep -q 'refused: .*via=redis' '$TMP/lu2.err'"

finish
