#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Many hosts, one schedule. 1. Hosts whose clocks are minutes apart share a Redis
# schedule: it runs on the server's clock, so their logins still pass in arrival order, one
# interval apart. 2. Two hosts in network namespaces, joined by a veth pair, share a Redis in
# the first: the stagger holds across them; the second falls back to its local slot, within
# the timeout, when its link goes down or its packets vanish; and goes back to Redis when the
# link is back.
# shellcheck disable=SC2086 # lists of login names and of numbers are split on purpose
set -u
. "$(dirname "$0")/../helpers/lib.sh"

N=8       # logins per round
T=600     # interval, ms
FCFS_MS=0 # logins that arrived this far apart must pass in that order: each login of a
          # round starts once the one before has its decision (wait_decided), so their
          # arrival order is their order at the schedule, whatever the machine's load
permit="auth required @P/pam_permit.so"

# users_re PREFIX...: a regex for the users (= login names) that start with one of them.
users_re() { echo "^($(echo "$*" | tr ' ' '|'))"; }

# after_slots PREFIX...: for those logins in their order of arrival, how long after the slot
# of the one before each passed, in ms, at the least. That slot is no earlier than the login's
# arrival plus the wait it was told (its script ran after it arrived): the bound a pass is
# measured from. A stamp made late by a loaded machine only widens these; a schedule that let
# a login in before the slot ahead of it had been an interval gone narrows one below it.
after_slots() {
	re=$(users_re "$@")
	for f in "$TMP"/*.err; do
		n=$(basename "$f" .err)
		echo "$n $(sed -n 's/.*queued: .* wait_ms=\([0-9]*\) .*/\1/p' "$f" | head -1)"
	done | awk -v re="$re" '$1 ~ re { print $1, ($2 == "" ? 0 : $2) }' | sort > "$TMP/waits"
	join -j 2 <(awk -v re="$re" '$2 ~ re' "$TMP/arrivals" | sort -k2) \
		<(awk -v re="$re" '$2 ~ re' "$TMP/stamps" | sort -k2) | sort > "$TMP/passes"
	join "$TMP/passes" "$TMP/waits" | sort -k2n |
		awk 'NR > 1 { printf "%d ", ($3 - slot) / 1e6 } { slot = $2 + $4 * 1e6 }'
}

# min_of NUMBERS...: the smallest (empty input: -1, which fails any bound).
min_of() { printf '%s\n' "$@" | sort -n | head -1 | grep . || echo -1; }

# spaced TAG PREFIX...: the check that those logins passed each at least an interval after the
# slot of the one that arrived before it (after_slots).
spaced() {
	local tag=$1 g
	shift
	g=$(after_slots "$@")
	check "$tag passes an interval or more after the slot ahead ($T ms <= ${g}ms)" \
		[ "$(min_of $g)" -ge $T ]
}

# fcfs PREFIX...: of those logins, every two that arrived more than FCFS_MS apart passed in
# that order, and most of them did arrive that far apart (else the order proves little).
fcfs() {
	re=$(users_re "$@")
	join -j 2 <(awk -v re="$re" '$2 ~ re' "$TMP/arrivals" | sort -k2) \
		<(awk -v re="$re" '$2 ~ re' "$TMP/stamps" | sort -k2) |
		awk -v ms="$FCFS_MS" '{ user[NR] = $1; arr[NR] = $2; adm[NR] = $3 }
		END {
			for (i = 1; i <= NR; i++)
				for (j = 1; j <= NR; j++) {
					d = (arr[j] - arr[i]) / 1e6
					if (d > ms) {
						pairs++
						if (adm[j] <= adm[i]) {
							printf "%s arrived %d ms after %s, passed first\n", user[j], d, user[i]
							bad = 1
						}
					}
				}
			if (pairs < NR * (NR - 1) / 4) {
				printf "only %d pairs of %d logins arrived %d ms apart\n", pairs, NR, ms
				bad = 1
			}
			exit bad || NR == 0
		}' >&2
}

# all_rc0 NAME...: every login succeeded.
all_rc0() {
	for n in "$@"; do
		[ "$(rc_of "$n")" = 0 ] || { echo "$n: rc $(rc_of "$n")" >&2; cat "$TMP/$n.err" >&2; return 1; }
	done
}

# all_via VIA NAME...: every login was decided by VIA (its debug line), and by nothing else.
all_via() {
	via=$1
	shift
	for n in "$@"; do
		if ! grep -Eq "(admitted|queued): .* via=$via\$" "$TMP/$n.err" ||
			grep -v "via=$via\$" "$TMP/$n.err" | grep -q 'via='; then
			echo "$n: not via=$via:" >&2
			grep 'SYSLOG' "$TMP/$n.err" >&2
			return 1
		fi
	done
}

# all_grep PATTERN NAME...: every one of those logins logged PATTERN.
all_grep() {
	pat=$1
	shift
	for n in "$@"; do
		grep -q "$pat" "$TMP/$n.err" || { echo "$n did not log \"$pat\"" >&2; return 1; }
	done
}

# first_says PATTERN NAME...: the first login logged PATTERN (a cause), and each its fallback.
first_says() {
	local pat=$1
	shift
	all_grep "$pat" "$1" && all_grep 'fallback=local: queueing' "$@"
}
# said_why WHAT NAME...: the LOG_ERR lines of Redis with WHAT the logins logged.
said_why() {
	local what=$1
	shift
	for n in "$@"; do cat "$TMP/$n.err"; done | grep -c "SYSLOG(3): redis .*$what"
}

# decided_ms NAME: from the login's arrival at the gate to its decision: its pass, less the
# wait it was given (99999 if it never arrived or passed).
decided_ms() {
	a=$(awk -v u="$1" '$2 == u { print $1 }' "$TMP/arrivals")
	s=$(awk -v u="$1" '$2 == u { print $1 }' "$TMP/stamps")
	w=$(sed -n 's/.*queued: .* wait_ms=\([0-9]*\) .*/\1/p' "$TMP/$1.err")
	if [ -z "$a" ] || [ -z "$s" ]; then echo 99999; else echo $(((s - a) / 1000000 - ${w:-0})); fi
}

# wait_decided NAME...: until each of those logins has logged its decision (at most 10 s).
wait_decided() {
	for _ in $(seq 200); do
		left=0
		for n in "$@"; do
			grep -Eq '(admitted|queued): ' "$TMP/$n.err" 2> /dev/null || left=1
		done
		[ $left = 0 ] && return 0
		sleep 0.05
	done
	return 1
}

# round: the next round starts with no stamps.
round() { rm -f "$TMP/stamps" "$TMP/arrivals"; }

# --- 1. Clock skew ------------------------------------------------------------------------

# skewed FAKETIME COMMAND...: COMMAND as login() runs pamtester, on a host whose wall clock is
# FAKETIME off. libfaketime keeps a shared memory segment and a semaphore in the host's
# /dev/shm, named after the process it is preloaded into, and removes them only when that
# process exits properly. Sanitized, `date`'s leak report ends it with _exit (status 98), and
# the two stayed, where a later process of the same pid would fail to make its own: COMMAND
# runs by a pid of its own (PRIVATE_TMP and env exec), and they are removed after it.
skewed() {
	local ft=$1 pid rc
	shift
	"${PRIVATE_TMP[@]}" env LD_PRELOAD="$PRELOAD $FAKE" FAKETIME="$ft" PAM_WRAPPER=1 \
		PAM_WRAPPER_SERVICE_DIR="$TMP/svc" PAM_WRAPPER_DEBUGLEVEL=2 "$@" &
	pid=$!
	wait "$pid"
	rc=$?
	rm -f "/dev/shm/faketime_shm_$pid" "/dev/shm/sem.faketime_sem_$pid"
	return "$rc"
}

# skewed_login NAME SERVICE USER FAKETIME: login() on a host whose wall clock is FAKETIME off.
# ARRIVE and STAMP still stamp the true time: build/pam_stamp.so reads the clock by a system
# call of its own, which libfaketime does not see. A check below makes sure of it.
skewed_login() {
	name=$1
	skewed "$4" pamtester -v "$2" "$3" authenticate > "$TMP/$name.out" 2> "$TMP/$name.err"
	echo $? > "$TMP/$name.rc"
	if [ -n "$SAN" ] && grep -Eq '^==[0-9]+==ERROR|runtime error: ' "$TMP/$name.err"; then
		echo "$name" >> "$TMP/sanitizer"
	fi
}

FAKE=$(ls /usr/lib/*/faketime/libfaketime.so.1 2> /dev/null | head -1)
if [ -z "$FAKE" ]; then
	not_ok "faketime is missing: cannot show that the hosts' clocks do not matter"
else
	port=$(free_port)
	start_redis r --port "$port" || exit 1
	service skew "$ARRIVE" \
		"auth required @M url=redis://127.0.0.1:$port key=skew interval=${T}ms countdown=0 debug" \
		"$STAMP" "$permit"
	real=$(date +%s)
	behind=$(skewed -7m date +%s 2> /dev/null)
	ahead=$(skewed +11m date +%s 2> /dev/null)
	check "faketime as a skewed login gets it: clock 7 min back ($((behind - real)) s), 11 min on ($((ahead - real)) s)" \
		sh -c "[ $((behind - real)) -le -415 ] && [ $((behind - real)) -ge -425 ] && [ $((ahead - real)) -ge 655 ] && [ $((ahead - real)) -le 665 ]"

	# Logins 1 and 5 see a clock 7 minutes behind, 3 and 7 one 11 minutes ahead, the rest
	# the true time.
	round
	t0=$(date +%s%N)
	names=""
	lpids=""
	for i in $(seq "$N"); do
		case $((i % 4)) in
		1) (skewed_login "k$i" skew "k$i" -7m) & ;;
		3) (skewed_login "k$i" skew "k$i" +11m) & ;;
		*) (login "k$i" skew "k$i") & ;;
		esac
		lpids="$lpids $!"
		names="$names k$i"
		wait_decided "k$i"
	done
	# All decided, the last still waiting for its slot: the schedule is N intervals past
	# the first login, so ahead of the server's TIME now by at most N intervals (and by more
	# than nothing however long the starts took: the last waits for its slot). A schedule on
	# a skewed host's clock would be minutes off.
	wait_decided $names
	reply=$(printf 'ZRANGEBYSCORE skew 0 0\nZCOUNT skew 1 (1e16\nPTTL skew\nTIME\n' |
		redis-cli -p "$port" | sed 's/^s:\([0-9]*\):\([0-9]*\).*$/\1 \2/' | tr '\n' ' ')
	wait $lpids
	t1=$(date +%s%N)
	read -r tat _ places pttl sec usec <<< "$reply" # the schedule is "tat at ..."
	tat=${tat:-0} places=${places:-0} pttl=${pttl:-0}
	server_us=${sec:-0}$(printf '%06d' "${usec:-0}")
	ahead_ms=$(((tat - server_us) / 1000))
	check "the stamps are on the true clock, not the skewed one" \
		awk -v a="$t0" -v b="$t1" '$1 < a || $1 > b { bad = 1 } END { exit bad || NR != 16 }' \
		"$TMP/arrivals" "$TMP/stamps"
	check "clocks -7 min, +11 min and true: $N logins at once all admitted" all_rc0 $names
	check "... every one decided by Redis" all_via redis $names
	spaced "..." k
	check "... in the order they arrived (${FCFS_MS} ms apart or more)" fcfs k
	check "... the schedule is up to $N intervals past the server's TIME (${ahead_ms} ms)" \
		in_range "$ahead_ms" 0 $((N * T))
	# The key lives as long as its schedule, its last waiter's lease (5 s near its turn; further
	# back a lease ends before its slot, L1), or the slot after
	# its last waiter (whose lease running out at its slot counts as an admission), whichever
	# ends later, and no longer.
	last_ms=$((ahead_ms + places * T))
	check "... and expires once neither its schedule nor a lease matters (PTTL $pttl ms, $places places)" \
		in_range "$pttl" $((ahead_ms - 50)) $((last_ms > 5000 ? last_ms + 50 : 5050))
	stop_redis r
fi

# --- 2. Two hosts in network namespaces ---------------------------------------------------

NSA=fsA-$$ NSB=fsB-$$
VA=fsvA$$ VB=fsvB$$ # interface names: at most 15 bytes
ADDR_A=10.213.77.1 ADDR_B=10.213.77.2
RPORT=6379 # nothing else listens inside namespace A

# At exit, even on failure: lib.sh's cleanup stops the processes (Redis in A with them) and
# removes $TMP; then the namespaces go, and the veth pair with them (or by name, if it never
# got into them).
hosts_cleanup() {
	cleanup
	ip netns del "$NSA" 2> /dev/null
	ip netns del "$NSB" 2> /dev/null
	ip link del "$VA" 2> /dev/null
	return 0
}
trap hosts_cleanup EXIT

netns_up() {
	ip netns add "$NSA" && ip netns add "$NSB" &&
		ip link add "$VA" type veth peer name "$VB" &&
		ip link set "$VA" netns "$NSA" && ip link set "$VB" netns "$NSB" &&
		ip -n "$NSA" addr add "$ADDR_A/30" dev "$VA" && ip -n "$NSB" addr add "$ADDR_B/30" dev "$VB" &&
		ip -n "$NSA" link set lo up && ip -n "$NSB" link set lo up &&
		ip -n "$NSA" link set "$VA" up && ip -n "$NSB" link set "$VB" up
}

# b_reaches_redis: a client in B gets an answer from Redis in A (for 5 s at most).
b_reaches_redis() {
	for _ in $(seq 50); do
		[ "$(ip netns exec "$NSB" redis-cli -h "$ADDR_A" -p "$RPORT" ping 2> /dev/null)" = PONG ] &&
			return 0
		sleep 0.1
	done
	return 1
}

# ns_login NS NAME SERVICE USER: login() on the host that namespace NS stands for. "ip netns
# exec" unshares the mount namespace (to mount NS's /sys); the private /tmp is one more
# inside it, and $TMP, under /var/tmp, is the same for both hosts.
ns_login() {
	ns=$1 name=$2
	ip netns exec "$ns" "${PRIVATE_TMP[@]}" env LD_PRELOAD="$PRELOAD" PAM_WRAPPER=1 \
		PAM_WRAPPER_SERVICE_DIR="$TMP/svc" PAM_WRAPPER_DEBUGLEVEL=2 $VG pamtester -v \
		"$3" "$4" authenticate > "$TMP/$name.out" 2> "$TMP/$name.err"
	echo $? > "$TMP/$name.rc"
	if [ -n "$SAN" ] && grep -Eq '^==[0-9]+==ERROR|runtime error: ' "$TMP/$name.err"; then
		echo "$name" >> "$TMP/sanitizer"
	fi
}

# hosts_round TAG HOSTS...: one login per HOSTS word (A or B), each started once the one
# before has its decision, named TAG + host + number (e.g. "xa3", on host A); waits for all.
# Sets $names_a and $names_b.
hosts_round() {
	tag=$1
	shift
	round
	names_a="" names_b=""
	lpids=""
	i=0
	for h in "$@"; do
		i=$((i + 1))
		case $h in
		A) n=${tag}a$i names_a="$names_a $n" ns=$NSA svc=hosta ;;
		B) n=${tag}b$i names_b="$names_b $n" ns=$NSB svc=hostb ;;
		esac
		ns_login "$ns" "$n" "$svc" "$n" &
		lpids="$lpids $!"
		wait_decided "$n"
	done
	wait $lpids
}

if [ "$(id -u)" != 0 ] || ! command -v ip > /dev/null || ! ip netns list > /dev/null 2>&1; then
	echo "# skipped: two hosts in network namespaces need root and ip netns"
elif ! netns_up; then
	echo "# skipped: cannot set up network namespaces and a veth pair"
else
	# "ip netns exec" execs Redis, so $! is Redis itself, stopped by pid at exit. No password
	# and not protected mode: only the test's namespaces can reach it.
	ip netns exec "$NSA" redis-server --port "$RPORT" --bind "$ADDR_A 127.0.0.1" --protected-mode no \
		--unixsocket "$TMP/ra.sock" --unixsocketperm 700 --dir "$TMP" --dbfilename ra.rdb \
		--save '' --appendonly no > "$TMP/ra.log" 2>&1 &
	echo $! > "$TMP/ra.pid"
	PIDS="$PIDS $!"
	redis_pid=$(cat "$TMP/ra.pid")
	# The pid is the shell's child until "ip netns exec" has exec'd redis-server in it.
	wait_for 5 sh -c "[ \"\$(cat /proc/$redis_pid/comm 2> /dev/null)\" = redis-server ]"
	check "Redis runs in namespace A (pid $redis_pid: $(cat "/proc/$redis_pid/comm" 2> /dev/null))" \
		sh -c "[ \"\$(cat /proc/$redis_pid/comm)\" = redis-server ] &&
			[ \"\$(ip netns identify $redis_pid)\" = $NSA ]"
	check "... and answers host B over the veth pair" b_reaches_redis
	url="url=redis://$ADDR_A:$RPORT key=hosts interval=${T}ms countdown=0 timeout=300ms debug"
	service hosta "$ARRIVE" "auth required @M $url state_dir=$TMP/stateA" "$STAMP" "$permit"
	service hostb "$ARRIVE" "auth required @M $url state_dir=$TMP/stateB" "$STAMP" "$permit"

	# (a) Logins from A and B, interleaved, take turns on the one schedule.
	hosts_round x A B A B A B A B
	check "(a) A and B, interleaved: all admitted" all_rc0 $names_a $names_b
	check "(a) ... all decided by Redis" all_via redis $names_a $names_b
	spaced "(a) ... whichever host," x
	check "(a) ... in the order they arrived" fcfs x

	# (b) B's link goes down: B's logins fall back to B's local slot at once (no route), and
	# queue there; A's stay on Redis, a schedule of their own now.
	ip -n "$NSB" link set "$VB" down
	hosts_round y B A B A B A
	check "(b) B's link down: all admitted" all_rc0 $names_a $names_b
	check "(b) ... B's decided by B's local slot" all_via local $names_b
	check "(b) ... B's local slot is in B's state_dir, not A's" \
		sh -c "[ -s '$TMP/stateB/slot.hosts' ] && [ ! -e '$TMP/stateA/slot.hosts' ]"
	# A cause is logged at most once a second on a host (tests/suites/faults.sh holds it to that): the
	# first says why, those within the second after it only the fallback they take.
	check "(b) ... the first saying why, each its fallback ($(said_why cannot $names_b) lines of the cause for $(echo $names_b | wc -w) logins)" \
		first_says "redis $ADDR_A:$RPORT: cannot connect" $names_b
	d=$(for n in $names_b; do decided_ms "$n"; done | tr '\n' ' ')
	check "(b) ... each decided well within 2 s (${d}ms)" \
		[ "$(printf '%s\n' $d | sort -n | tail -1)" -lt 2000 ]
	spaced "(b) ... staggered among themselves:" yb
	check "(b) ... in the order they arrived" fcfs yb
	check "(b) A's still decided by Redis" all_via redis $names_a
	spaced "(b) ... staggered among themselves:" ya

	# (b') The link is up but B's packets vanish: A's address resolves, in B, to a MAC no one
	# has, so B's connection attempts go unanswered, and B's timeout decides.
	ip -n "$NSB" link set "$VB" up
	ip -n "$NSB" neigh replace "$ADDR_A" lladdr 02:00:00:00:00:99 dev "$VB" nud permanent
	hosts_round z B B B
	check "(b') B's packets vanish: all admitted" all_rc0 $names_b
	check "(b') ... by B's local slot" all_via local $names_b
	check "(b') ... after the timeout, the first saying so, each its fallback ($(said_why 'timed out' $names_b) lines of the cause)" \
		first_says "redis $ADDR_A:$RPORT: .*timed out" $names_b
	d=$(for n in $names_b; do decided_ms "$n"; done | tr '\n' ' ')
	check "(b') ... each decided in 300 ms to 3 s (${d}ms)" \
		sh -c "[ $(min_of $d) -ge 250 ] && [ $(printf '%s\n' $d | sort -n | tail -1) -lt 3000 ]"
	spaced "(b') ... staggered among themselves:" zb

	# (c) The link is back: B's logins are Redis's again, in turn with A's, and B's local
	# slot is left as it was.
	ip -n "$NSB" neigh del "$ADDR_A" dev "$VB"
	b_reaches_redis
	cp "$TMP/stateB/slot.hosts" "$TMP/slot.before" # it holds NUL bytes (src/lframe.c)
	hosts_round w B A B A B A
	check "(c) the link is back: all admitted" all_rc0 $names_a $names_b
	check "(c) ... all decided by Redis again" all_via redis $names_a $names_b
	spaced "(c) ... whichever host," w
	check "(c) ... in the order they arrived" fcfs w
	check "(c) ... B's local slot untouched" cmp -s "$TMP/slot.before" "$TMP/stateB/slot.hosts"
fi

finish
