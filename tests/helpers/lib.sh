# SPDX-License-Identifier: BSD-3-Clause
# Shared by the shell test suites: a temporary directory, private Redis servers stopped by pid,
# PAM service files under pam_wrapper, logins through pamtester, and TAP-like reporting.
# shellcheck shell=bash

# The checkout: two folders up from this file (LIB_TOP, if set, names it instead). A suite may
# name its temporary directory apart (LIB_TMP_NAME).
TOP=$(cd "${LIB_TOP:-$(dirname "${BASH_SOURCE[0]}")/../..}" && pwd)
PAM_DIR=$(pkg-config --variable=libdir pam)/security
# Not under /tmp: logins get a private /tmp (below), and this must stay visible to them.
TMP=$(mktemp -d "/var/tmp/${LIB_TMP_NAME:-flowslot-test}.XXXXXX")
chmod 0755 "$TMP"
mkdir "$TMP/svc"
# The checkout by a path with no space nor other odd character, a symlink: a PAM stack line
# splits its module path on blanks, and sed and word-split commands mangle others. Use it in
# stack lines and in strings that are split; $TOP wherever the path is quoted.
TREE=$TMP/tree
ln -s "$(cd "$TOP" && pwd -P)" "$TREE"
MODULE=$TREE/pam_flowslot.so
# The suite leaves the host's /run/pam_flowslot and /etc/pam.d as it found them (finish checks).
# shellcheck source=tests/helpers/untouched.sh
. "$TOP/tests/helpers/untouched.sh"
untouched_snap > "$TMP/untouched"
UNTOUCHED_DONE=""
# OWN_STATE: a sed command that gives a pam_flowslot.so line without state_dir= the suite's
# own, $TMP/state: the module's default is the host's /run/pam_flowslot.
OWN_STATE="/pam_flowslot\.so/{/state_dir=/!s#pam_flowslot\.so\( \|\$\)#pam_flowslot.so state_dir=$TMP/state\1#}"
PIDS=""
PASSED=0
FAILED=0
TESTNO=0

# Valgrind mode: every pamtester runs under memcheck; any error or leak fails its login.
VG=""
if [ "${FLOWSLOT_VALGRIND:-0}" = 1 ]; then
	VG="valgrind --quiet --error-exitcode=97 --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect --track-fds=no --suppressions=$TREE/tests/helpers/valgrind.supp"
fi

# untouched SUITE: fails the suite (once) if it changed the host's directories of untouched.sh.
untouched() {
	[ -z "$UNTOUCHED_DONE" ] || return 0
	UNTOUCHED_DONE=1
	untouched_check "$TMP/untouched" "$1"
}

cleanup() {
	for pid in $PIDS; do
		kill -CONT "$pid" 2>/dev/null
		kill "$pid" 2>/dev/null
	done
	for pid in $PIDS; do
		wait "$pid" 2>/dev/null
	done
	# A script that does not end in finish (bench/, tests/campaign/, the demo) is named here;
	# what runs it fails (bash tests/helpers/untouched.sh, in the Makefile and .ci/run).
	untouched "$0"
	# FLOWSLOT_KEEP=1 keeps the logins' logs and the servers' files, to look at a failure.
	if [ -n "${FLOWSLOT_KEEP:-}" ]; then
		echo "kept $TMP" >&2
	else
		rm -rf "$TMP"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Sanitizer mode (make check SANITIZE=1, which exports FLOWSLOT_SANITIZE=1): the module is
# built with ASan and UBSan but pamtester is not, so the ASan runtime must be the first library
# in LD_PRELOAD. A login with a report exits 98 (or as UBSan does), and finish() fails the
# suite for any report in a login's log. Valgrind and ASan do not mix: the valgrind pass skips.
PRELOAD=libpam_wrapper.so
SAN=""
if [ "${FLOWSLOT_SANITIZE:-0}" = 1 ]; then
	if [ -n "$VG" ]; then
		echo "1..0 # SKIP valgrind and ASan do not mix (SANITIZE=1)"
		exit 0
	fi
	SAN=1
	PRELOAD="$(${CC:-gcc} -print-file-name=libasan.so) libpam_wrapper.so"
	# allocator_release_to_os_interval_ms=-1: otherwise the allocator reads the clock with
	# a lock held, and under libfaketime that read mallocs (dlsym), deadlocking the login.
	export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:exitcode=98:allocator_release_to_os_interval_ms=-1}
	export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
fi

# same_when_sanitized WHAT: a suite that runs none of our C under test (the script alone, the
# docs, the packaging) has nothing new to show under SANITIZE=1, and skips the second pass.
same_when_sanitized() {
	if [ -n "$SAN" ]; then
		echo "1..0 # SKIP $1 is the same under SANITIZE=1"
		exit 0
	fi
}

ok() {
	TESTNO=$((TESTNO + 1))
	PASSED=$((PASSED + 1))
	echo "ok $TESTNO - $*"
}

not_ok() {
	TESTNO=$((TESTNO + 1))
	FAILED=$((FAILED + 1))
	echo "not ok $TESTNO - $*"
}

# check DESCRIPTION COMMAND...: one test that passes when COMMAND succeeds.
check() {
	desc=$1
	shift
	if "$@"; then ok "$desc"; else not_ok "$desc"; fi
}

# finish: ends the suite with its TAP plan (after the tests, as TAP allows, so that a suite
# need not count them first: "prove tests/suites/queue.sh" runs one) and a summary.
finish() {
	if [ -s "$TMP/sanitizer" ]; then # SANITIZE=1: see login()
		not_ok "sanitizer reports in the logins: $(sort -u "$TMP/sanitizer" | tr '\n' ' ')"
		sed -n '/^==[0-9]*==ERROR\|runtime error: /,$p' "$TMP/$(head -1 "$TMP/sanitizer").err" >&2
	fi
	if ! untouched "$0" 2> "$TMP/untouched.err"; then
		not_ok "$(cat "$TMP/untouched.err")"
	fi
	echo "1..$TESTNO"
	echo "# $PASSED passed, $FAILED failed, in $SECONDS s ($(basename "$0"))"
	[ "$FAILED" -eq 0 ]
}

# skip_all REASON: the whole suite cannot run here; says why, as TAP, and ends it.
skip_all() {
	echo "1..0 # SKIP $*"
	exit 0
}

# start_redis NAME [redis-server options...]: a private server on $TMP/NAME.sock (and TCP
# only if the options ask), its pid in $TMP/NAME.pid.
start_redis() {
	name=$1
	shift
	redis-server --port 0 --unixsocket "$TMP/$name.sock" --unixsocketperm 700 \
		--dir "$TMP" --dbfilename "$name.rdb" --bind 127.0.0.1 --save '' --appendonly no "$@" \
		> "$TMP/$name.log" 2>&1 &
	echo $! > "$TMP/$name.pid"
	PIDS="$PIDS $!"
	for _ in $(seq 100); do
		redis-cli -s "$TMP/$name.sock" ping > /dev/null 2>&1 && return 0
		sleep 0.05
	done
	echo "redis $name did not start:" >&2
	cat "$TMP/$name.log" >&2
	return 1
}

stop_redis() {
	pid=$(cat "$TMP/$1.pid")
	kill -CONT "$pid" 2>/dev/null
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	# Gone from the pids cleanup stops: the number may be another process's by then.
	PIDS=" $PIDS "
	PIDS=${PIDS/ $pid / }
	return 0
}

# schedule SERVER KEY: the schedule as src/slot.lua stores it, "tat at" (its member
# "s:TAT:AT:...").
schedule() { rcli "$1" zrangebyscore "$2" 0 0 | sed -n 's/^s:\([0-9]*\):\([0-9]*\).*$/\1 \2/p'; }
# waiting SERVER KEY: the places its queue holds; ghosts SERVER KEY: the places given up that it
# remembers for a retry; has_place SERVER KEY ID, has_ghost SERVER KEY WHO: whether it holds one.
waiting() { rcli "$1" zcount "$2" 1 '(1e16'; }
ghosts() { rcli "$1" zcount "$2" 2e16 +inf; }
has_place() { rcli "$1" zrangebyscore "$2" 1 '(1e16' | grep -q "^w:$3:"; }
has_ghost() { rcli "$1" zrangebyscore "$2" 2e16 +inf | grep -q "^g:$3:"; }
# live SERVER KEY: the places whose lease still runs on the server's clock, as the script and
# flowslotctl status count them; a place whose login died stays in waiting until the next call
# drops it, but leaves live when its lease ends (5 s near its turn, SLOT_LEASE_US).
live() {
	# shellcheck disable=SC2016 # Lua
	rcli "$1" eval 'local t = redis.call("TIME")
		local now = string.format("%.0f", 1e16 + tonumber(t[1]) * 1000000 + tonumber(t[2]))
		return redis.call("ZCOUNT", KEYS[1], "(" .. now, "(2e16")' 1 "$2"
}

rcli() {
	name=$1
	shift
	redis-cli -s "$TMP/$name.sock" "$@"
}

# free_port: a loopback TCP port nobody listens on now, below the kernel's range for outgoing
# connections, so that no client socket (nor one in TIME-WAIT) holds it when a server binds.
free_port() {
	low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2> /dev/null || echo 32768)
	[ "$low" -gt 21000 ] || low=60001
	while :; do
		port=$(shuf -i 20000-$((low - 1)) -n 1)
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return
		fi
	done
}

# on_free_port VAR COMMAND...: COMMAND with a free port appended, the port in $VAR; should the
# port be taken before the server binds it, another (five tries, the last one's errors shown).
on_free_port() {
	local var=$1 try
	shift
	for try in 1 2 3 4 5; do
		printf -v "$var" %s "$(free_port)"
		if [ "$try" = 5 ]; then "$@" "${!var}"; else "$@" "${!var}" 2> /dev/null; fi && return 0
	done
	return 1
}

# service NAME LINE...: a PAM service file for pam_wrapper; "@M" stands for the module path.
# A line of the module without state_dir= gets the suite's (OWN_STATE), but with OWN_STATE=""
# (a test of the default in a private /run).
service() {
	name=$1
	shift
	: > "$TMP/svc/$name"
	for line in "$@"; do
		printf '%s\n' "$line" | sed "s|@M|$MODULE|g; s|@P|$PAM_DIR|g; $OWN_STATE" >> "$TMP/svc/$name"
	done
	[ -e "$TMP/svc/other" ] ||
		printf 'auth required %s/pam_deny.so\naccount required %s/pam_deny.so\n' \
			"$PAM_DIR" "$PAM_DIR" > "$TMP/svc/other"
}

# pam_wrapper's module that sets PAM items from the environment (PAM_RHOST=..., PAM_TTY=...):
# put it first in a stack.
SET_ITEMS=$(ls /usr/lib/*/pam_wrapper/pam_set_items.so 2> /dev/null | head -1)

# The stack line that stamps when a login passed the gate: "<ns> <user>" into $TMP/stamps, by
# build/pam_stamp.so, in the login's own process (make builds it for each suite that needs the
# module). Stacks of real programs stamp with tests/helpers/stamp.sh, through pam_exec.
STAMP="auth optional $TREE/build/pam_stamp.so $TMP/stamps"
# The same, before the gate: when a login reached it, into $TMP/arrivals.
ARRIVE="auth optional $TREE/build/pam_stamp.so $TMP/arrivals"

# pam_wrapper picks its working directory /tmp/pam.X with lstat, then mkdir: two logins that
# start together can pick the same one and trample each other's copy of the service files.
# As root, each login gets a private /tmp in a mount namespace of its own; otherwise they run
# as they are, and simultaneous logins may fail for pam_wrapper's sake. "${PRIVATE_TMP[@]}"
# COMMAND... runs COMMAND (by exec: same pid) so. A checkout under /tmp stays visible at its
# own path: the new tmpfs is mounted on $TMP/ns-tmp first, the checkout bound into it, and the
# whole moved onto /tmp. The paths are the script's arguments, never part of its text.
PRIVATE_TMP=()
if [ "$(id -u)" = 0 ] && unshare --mount --propagation private true 2> /dev/null; then
	mkdir "$TMP/ns-tmp"
	tmp_phys=$(cd /tmp && pwd -P)
	top_phys=$(cd "$TOP" && pwd -P)
	top_in_tmp=""
	case $top_phys/ in "$tmp_phys"/*) top_in_tmp=${top_phys#"$tmp_phys"} top_in_tmp=${top_in_tmp:-/} ;; esac
	# shellcheck disable=SC2016
	PRIVATE_TMP=(unshare --mount --propagation private sh -c '
		stage=$1 tmp=$2 rel=$3
		shift 3
		mount -t tmpfs tmpfs "$stage" || exit 126
		if [ -n "$rel" ]; then
			mkdir -p "$stage$rel" && mount --bind "$tmp$rel" "$stage$rel" || exit 126
		fi
		mount --move "$stage" "$tmp" && exec "$@"' sh "$TMP/ns-tmp" "$tmp_phys" "$top_in_tmp")
fi

# login NAME SERVICE USER [OPERATION]: pamtester under pam_wrapper. Messages go to
# $TMP/NAME.out, syslog to $TMP/NAME.err, the exit status to $TMP/NAME.rc.
login() {
	name=$1
	"${PRIVATE_TMP[@]}" env LD_PRELOAD="$PRELOAD" PAM_WRAPPER=1 \
		PAM_WRAPPER_SERVICE_DIR="$TMP/svc" PAM_WRAPPER_DEBUGLEVEL=2 $VG pamtester -v \
		"$2" "$3" "${4:-authenticate}" \
		> "$TMP/$name.out" 2> "$TMP/$name.err"
	echo $? > "$TMP/$name.rc"
	# SANITIZE=1: logins may run in subshells, so reports are collected in a file for finish().
	if [ -n "$SAN" ] && grep -Eq '^==[0-9]+==ERROR|runtime error: ' "$TMP/$name.err"; then
		echo "$name" >> "$TMP/sanitizer"
	fi
}

# logins PREFIX SERVICE N [OPERATION]: N logins at once (users PREFIX01..), waiting for all.
logins() {
	prefix=$1 svc=$2 n=$3 op=${4:-authenticate}
	rm -f "$TMP/go"
	lpids=""
	i=1
	while [ "$i" -le "$n" ]; do
		u=$(printf '%s%02d' "$prefix" "$i")
		(while [ ! -e "$TMP/go" ]; do sleep 0.01; done; login "$u" "$svc" "$u" "$op") &
		lpids="$lpids $!"
		i=$((i + 1))
	done
	touch "$TMP/go"
	wait $lpids
}

# bg_login NAME SERVICE USER [RHOST]: a login in the background, PAM_RHOST in its environment;
# its subshell's pid in $TMP/NAME.sub and in BG. Its own stderr is quiet: bash would say
# "Killed" of the logins a suite kills.
bg_login() {
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
# child_of PID: PID's first child, once it has one (20 s at most).
child_of() {
	wait_for 20 pgrep -P "$1" > /dev/null || return 1
	pgrep -P "$1" | head -1
}
# pam_pid NAME: a background login's pamtester: its subshell's child (the private /tmp execs
# through to it).
pam_pid() { child_of "$(cat "$TMP/$1.sub")"; }
# sleeping PID: PID waits in ppoll or clock_nanosleep (x86_64's numbers), as a login waiting
# for its slot does.
sleeping() { case $(cut -d' ' -f1 "/proc/$1/syscall" 2> /dev/null) in 230 | 271) ;; *) false ;; esac; }

rc_of() { cat "$TMP/$1.rc"; }

# slot_text_bytes FILE: how many bytes a per-host schedule file's text holds: what its frame's
# header names (src/lframe.c), or the whole of a file without one.
slot_text_bytes() {
	head -c 64 "$1" | awk '$1 == "flowslot-file" && $2 == 1 { print $4; f = 1 } END { exit !f }' ||
		stat -c %s "$1"
}

# wait_for SECONDS COMMAND...: COMMAND succeeds within SECONDS, tried every 50 ms.
wait_for() {
	local limit=$(($(now_ms) + $1 * 1000))
	shift
	until "$@"; do
		[ "$(now_ms)" -lt "$limit" ] || return 1
		sleep 0.05
	done
}

# on_accounts COMMAND [ARG...]: a command that writes the host's account files (useradd,
# userdel), tried again for up to 30 s while another holds their lock: suites beside this one
# add and remove users too. Its errors are left in $TMP/accounts.err.
on_accounts() {
	local limit=$(($(now_ms) + 30000))
	until "$@" < /dev/null 2> "$TMP/accounts.err"; do
		grep -qi 'lock' "$TMP/accounts.err" && [ "$(now_ms)" -lt "$limit" ] || return 1
		sleep 0.2
	done
}

# set_password USER PASSWORD: chpasswd, as on_accounts.
set_password() {
	# shellcheck disable=SC2016
	on_accounts sh -c 'printf "%s\n" "$1" | chpasswd' sh "$1:$2"
}

# now_ms: wall-clock milliseconds.
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# in_range VALUE LOW HIGH: LOW < VALUE <= HIGH.
in_range() { [ "$1" -gt "$2" ] && [ "$1" -le "$3" ]; }

# example FILE URL [OPTIONS]: the active lines of one of etc/pam.d's examples, as a stack for
# the tests: the module by its path, on URL, with OPTIONS added to its line. The tests log in
# as root, whom the examples exempt: their "uid eq 0" line is left out (the jumps of the lines
# below it stay right), the other exemptions kept.
example() {
	grep -v '^#' "$TOP/etc/pam.d/$1" | grep . | grep -v 'pam_succeed_if.so quiet uid eq 0$' |
		sed -E "s|pam_flowslot.so( url=[^ ]*)?|$MODULE url=$2|; /pam_flowslot/s|\$| ${3:-}|; s| pam_succeed_if.so| $PAM_DIR/pam_succeed_if.so|" |
		sed "$OWN_STATE"
}

# cluster_port VAR: a free port whose cluster bus (port + 10000) is free too, and clear of the
# ports and buses already taken (CLUSTER_TAKEN), in VAR. Below the ephemeral range if it can, so
# that no outgoing connection holds the port or the bus port by the time the node binds them.
CLUSTER_TAKEN=""
cluster_port() {
	local p max=55535 low
	low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2> /dev/null || echo 32768)
	[ "$low" -gt 30010 ] && max=$((low - 10001))
	while :; do
		p=$(free_port)
		[ "$p" -le "$max" ] || continue
		(exec 3<> "/dev/tcp/127.0.0.1/$((p + 10000))") 2> /dev/null && continue
		case " $CLUSTER_TAKEN " in *" $p "* | *" $((p + 10000)) "* | *" $((p - 10000)) "*) continue ;; esac
		CLUSTER_TAKEN="$CLUSTER_TAKEN $p"
		printf -v "$1" %s "$p"
		return
	done
}
