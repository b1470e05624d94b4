#!/bin/bash
# Garbage from the server (issue 4): the real module in real libpam (pamtester under
# pam_wrapper) against build/fake_redis, a server that answers the script with the wrong type,
# out-of-range numbers, a 100 MB bulk, half a reply, nothing, or a byte at a time. Every login
# must end in its fallback within the timeout, with exactly one LOG_ERR line naming the cause;
# the control mode "ok" shows that the fake server itself speaks Redis. Then (issue 5) the
# fake server plays a cluster node that redirects in circles or in gibberish, a sentinel that
# names no usable master, a master that is not one, and the module's node cache is fed files
# it must not trust.
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
# no_slot_file DIR: no schedule file in DIR (the counters file, stats, is kept whatever the backend).
no_slot_file() { ! ls "$1"/slot.* > /dev/null 2>&1; }

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
	[huge-array]='script: reply too large: too many elements'
)
# huge-array: hiredis 0.14 callocs what an array header declares, and freeing seven such
# arrays once took 43 s of CPU: the decision bound below covers that too.
MODES="wrong-type integer string huge-bulk negative nan nan-bulk truncated half-close stall drip close huge-array"

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
	check "ok, fallback=$fb: no local slot file" no_slot_file "$TMP/st-ok-$fb"
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
	check "$mode, fallback=closed: no local slot file" no_slot_file "$TMP/stc-$mode"

	check "$mode: the fake server saw both logins" fake_saw "fake-$mode" 2 "$mode"
	check "$mode: the fake server stopped cleanly on SIGTERM" stop_fake "fake-$mode"
done

# start_tcp_fake NAME MODE: start_fake on a free loopback port, the port in $TMP/NAME.port.
# A port free_port found may be taken before the bind (by an outgoing connection's ephemeral
# port, from this or another suite): then another port.
start_tcp_fake() {
	for _ in 1 2 3 4 5; do
		tport=$(free_port)
		echo "$tport" > "$TMP/$1.port"
		start_fake "$1" "$2" -p "$tport" 2> "$TMP/$1.start" && echo 0 > "$TMP/$1.mark" &&
			return 0
		grep -q 'Address already in use' "$TMP/$1.start" || break
	done
	cat "$TMP/$1.start" >&2
	return 1
}
port_of() { cat "$TMP/$1.port"; }

# The same over TCP: the control, and a reply cut short.
start_tcp_fake fake-tcp ok || exit 1
port=$(port_of fake-tcp)
service tcp-ok "auth required @M url=redis://127.0.0.1:$port timeout=${TIMEOUT_MS}ms fallback=closed interval=1ms" \
	"auth required @P/pam_permit.so"
run tcp-ok tcp-ok
TOOK[tcp-ok]=$took
check "TCP, ok: admitted by the fake server, nothing logged (${took} ms; $(shown tcp-ok))" \
	sh -c "[ $(rc_of tcp-ok) = 0 ] && [ $(n_redis_errs tcp-ok) = 0 ]"
check "TCP, ok: the fake server stopped cleanly on SIGTERM" stop_fake fake-tcp
start_tcp_fake fake-tcpt stall || exit 1
port=$(port_of fake-tcpt)
service tcp-stall "auth required @M url=redis://127.0.0.1:$port timeout=${TIMEOUT_MS}ms fallback=closed interval=1ms" \
	"auth required @P/pam_permit.so"
run tcp-stall tcp-stall
TOOK[tcp-stall]=$took
check "TCP, stall: refused in ${took} ms, one LOG_ERR: $(shown tcp-stall)" \
	sh -c "[ $(rc_of tcp-stall) = 1 ] && [ $took -lt $((TIMEOUT_MS + SLACK_MS)) ] &&
		grep -q 'Authentication service cannot retrieve authentication info' '$TMP/tcp-stall.err'"
check "TCP, stall: one LOG_ERR naming the timeout" one_err tcp-stall "127\.0\.0\.1:$port: script: timed out"
check "TCP, stall: the fake server stopped cleanly on SIGTERM" stop_fake fake-tcpt

# Sentinel and Cluster (issue 5): the fake server plays a cluster node that redirects badly,
# a sentinel that names no usable master, or a master that is not one. Every login must
# still end in its fallback, within its bounds, with LOG_ERR lines that say why. Each
# connection gets its own timeout, and a chain of them must not run out under valgrind.
HT_MS=1000

# mark FAKE...: remember where the fake servers' logs are now; since FAKE: what came after.
mark() { for f in "$@"; do wc -l < "$TMP/$f.log" > "$TMP/$f.mark"; done; }
since() { tail -n +$(($(cat "$TMP/$1.mark") + 1)) "$TMP/$1.log"; }

# cmds_of FAKE: since the mark, the commands read, connection by connection:
# "EVALSHA|ASKING EVALSHA" is two connections. firsts_of FAKE: only the first of each; the
# rest can be racy (a command pipelined behind one whose answer made the module hang up).
cmds_of() {
	since "$1" | sed -n 's/.*: conn \([0-9]*\): read "\([^"]*\)".*/\1 \2/p' |
		awk '$1 != last { printf "%s%s", (NR > 1 ? "|" : ""), $2; last = $1; next }
			{ printf " %s", $2 } END { print "" }'
}
firsts_of() { cmds_of "$1" | sed -E 's/ [^|]*//g'; }
cmds_match() { cmds_of "$1" | grep -Eq -- "$2"; }

# errs NAME: the login's LOG_ERR lines, from the message on.
errs() { grep -a 'SYSLOG(3)' "$TMP/$1.err" | sed -E 's/.*SYSLOG\(3\): //'; }
errs_shown() { errs "$1" | tr '\n' '|' | sed 's/|$//'; }

# errs_are NAME REGEX...: the login's LOG_ERR lines are one per REGEX, in order.
errs_are() {
	ename=$1
	shift
	[ "$(errs "$ename" | wc -l)" = $# ] || return 1
	ei=1
	for re in "$@"; do
		errs "$ename" | sed -n "${ei}p" | grep -Eq -- "$re" || return 1
		ei=$((ei + 1))
	done
}

# hlogin NAME URL [OPTIONS]: one login as alice on URL, fallback=local, debug, state_dir
# $TMP/st-NAME (fresh unless the test made it); sets TOOK[NAME].
hlogin() {
	service "$1" "auth required @M url=$2 timeout=${HT_MS}ms fallback=local state_dir=$TMP/st-$1 interval=1ms debug ${3:-}" \
		"auth required @P/pam_permit.so"
	run "$1" "$1"
	TOOK[$1]=$took
}

# rc_ok NAME: pamtester exited 0; else says how (97: a valgrind report, 98: an ASan one).
rc_ok() {
	[ "$(rc_of "$1")" = 0 ] && return 0
	echo "# $1: pamtester exit $(rc_of "$1")"
	return 1
}

# fell_back NAME: admitted on the local slot, in time.
fell_back() {
	rc_ok "$1" && grep -aq 'admitted: .* via=local' "$TMP/$1.err" &&
		[ -f "$TMP/st-$1/slot.pam_flowslot" ] && [ "${TOOK[$1]}" -lt $((HT_MS + SLACK_MS)) ]
}

# by_redis NAME HOST:PORT N: admitted on the script's say-so, run by HOST:PORT after N redirects.
by_redis() {
	rc_ok "$1" && grep -aq 'admitted: .* via=redis' "$TMP/$1.err" &&
		grep -aq "SYSLOG(7): redis $2: decided after $3 redirects" "$TMP/$1.err" &&
		[ ! -e "$TMP/st-$1/slot.pam_flowslot" ]
}

# cache_is NAME SUFFIX HOST:PORT: the login's state_dir caches HOST:PORT in node.*.SUFFIX, a
# file of its own that no one else may write.
cache_is() {
	# shellcheck disable=SC2086 # $2 may be a pattern
	cf=$(echo "$TMP/st-$1"/node.*.$2)
	[ -f "$cf" ] && [ ! -L "$cf" ] && [ "$(stat -c '%u %a' "$cf")" = "$(id -u) 600" ] &&
		[ "$(cat "$cf")" = "$3" ]
}
no_cache() { ! ls "$TMP/st-$1"/node.* > /dev/null 2>&1; }

# Cluster: redirects that go round, that the node does not honour, that do not parse.
declare -A RCAUSE=(
	[moved-loop]='redirect: more than 3 redirects: giving up'
	[ask-loop]='redirect: more than 3 redirects: giving up'
	[ask-refused]='ASKING: ERR not now'
	[moved-bare]='bad redirect: MOVED'
	[ask-bare]='bad redirect: ASK'
	[moved-nohostport]='bad redirect: MOVED 12 nohostport'
	[moved-badport]='bad redirect: MOVED 12 127\.0\.0\.1:99999'
	[moved-port0]='bad redirect: MOVED 12 127\.0\.0\.1:0'
	[moved-space]='bad redirect: MOVED 12 bad host:1'
	[moved-longhost]='bad redirect: MOVED 12 hhhh'
	[ask-noslot]='bad redirect: ASK x :0'
	[moved-noslot]='bad redirect: MOVED  127\.0\.0\.1:1'
)
# What each connection read: the first attempt plus 3 redirects; ASKING ahead of each
# script after an ASK.
declare -A RCONNS=(
	[moved-loop]='READWRITE EVALSHA|READWRITE EVALSHA|READWRITE EVALSHA|READWRITE EVALSHA'
	[ask-loop]='READWRITE EVALSHA|READWRITE ASKING EVALSHA|READWRITE ASKING EVALSHA|READWRITE ASKING EVALSHA'
)
RMODES="moved-loop ask-loop ask-refused moved-bare ask-bare moved-nohostport moved-badport moved-port0 moved-space moved-longhost ask-noslot moved-noslot"
for mode in $RMODES; do
	start_tcp_fake "fake-$mode" "$mode" || exit 1
	p=$(port_of "fake-$mode")
	hlogin "$mode" "redis-cluster://127.0.0.1:$p"
	check "cluster $mode: fell back to the local slot in ${TOOK[$mode]} ms" fell_back "$mode"
	check "cluster $mode: LOG_ERR: $(errs_shown "$mode")" \
		errs_are "$mode" "^redis 127\.0\.0\.1:$p: ${RCAUSE[$mode]}"
	if [ -n "${RCONNS[$mode]:-}" ]; then
		check "cluster $mode: the node read ${RCONNS[$mode]} ($(cmds_of "fake-$mode"))" \
			[ "$(cmds_of "fake-$mode")" = "${RCONNS[$mode]}" ]
	elif [ "$mode" = ask-refused ]; then
		check "cluster $mode: the node saw the script, then ASKING ($(cmds_of "fake-$mode"))" \
			cmds_match "fake-$mode" '^READWRITE EVALSHA\|READWRITE ASKING( EVALSHA)?$'
	else
		check "cluster $mode: one attempt, no hop ($(cmds_of "fake-$mode"))" \
			[ "$(cmds_of "fake-$mode")" = "READWRITE EVALSHA" ]
	fi
	check "cluster $mode: no node cached" no_cache "$mode"
	check "cluster $mode: the fake server stopped cleanly" stop_fake "fake-$mode"
done

# Redis names an IPv6 node without brackets: "::1:PORT" is the host ::1, not "the same host".
# The fake listens on 127.0.0.1 only, so the hop is refused, and logged with that host.
start_tcp_fake fake-moved-ipv6 moved-ipv6 || exit 1
p=$(port_of fake-moved-ipv6)
hlogin moved-ipv6 "redis-cluster://127.0.0.1:$p"
check "cluster moved-ipv6: fell back to the local slot in ${TOOK[moved-ipv6]} ms" fell_back moved-ipv6
check "cluster moved-ipv6: the hop went to ::1 ($(errs_shown moved-ipv6))" \
	errs_are moved-ipv6 "^redis ::1:$p: cannot connect"
check "cluster moved-ipv6: the fake server stopped cleanly" stop_fake fake-moved-ipv6

# fallback=closed after a redirect loop: refused, not admitted.
start_tcp_fake fake-moved-closed moved-loop || exit 1
p=$(port_of fake-moved-closed)
service moved-closed "auth required @M url=redis-cluster://127.0.0.1:$p timeout=${HT_MS}ms fallback=closed state_dir=$TMP/st-moved-closed interval=1ms" \
	"auth required @P/pam_permit.so"
run moved-closed moved-closed
TOOK[moved-closed]=$took
check "cluster moved-loop, fallback=closed: refused in $took ms" \
	sh -c "[ $(rc_of moved-closed) = 1 ] && [ $took -lt $((HT_MS + SLACK_MS)) ] &&
		grep -q 'Authentication service cannot retrieve authentication info' '$TMP/moved-closed.err'"
check "cluster moved-loop, fallback=closed: LOG_ERR: $(errs_shown moved-closed)" \
	errs_are moved-closed "^redis 127\.0\.0\.1:$p: redirect: more than 3 redirects"
check "cluster moved-loop, fallback=closed: the fake server stopped cleanly" stop_fake fake-moved-closed

# MOVED to ":PORT" is this host on PORT: followed once, the script decides there, and the
# node is cached for the slot; the next login goes straight to it.
start_tcp_fake fake-moved-once moved-once || exit 1
p=$(port_of fake-moved-once)
mark fake-moved-once
hlogin moved-once "redis-cluster://127.0.0.1:$p"
check "cluster MOVED to :PORT: admitted via=redis after 1 redirect in ${TOOK[moved-once]} ms" \
	by_redis moved-once "127\.0\.0\.1:$p" 1
check "cluster MOVED to :PORT: no LOG_ERR" errs_are moved-once
check "cluster MOVED to :PORT: two attempts ($(cmds_of fake-moved-once))" \
	[ "$(cmds_of fake-moved-once)" = "READWRITE EVALSHA|READWRITE EVALSHA" ]
check "cluster MOVED to :PORT: the node is cached for the slot, mode 0600" \
	cache_is moved-once '[0-9]*' "127.0.0.1:$p"
cp -a "$TMP/st-moved-once" "$TMP/st-moved-cached"
rm -f "$TMP/st-moved-cached/slot.pam_flowslot"
mark fake-moved-once
hlogin moved-cached "redis-cluster://127.0.0.1:$p"
check "cluster, node cached: admitted via=redis after 0 redirects ($(errs_shown moved-cached))" \
	by_redis moved-cached "127\.0\.0\.1:$p" 0
check "cluster, node cached: one attempt ($(cmds_of fake-moved-once))" \
	[ "$(cmds_of fake-moved-once)" = "READWRITE EVALSHA" ]

# A cached node in a file the module must not trust (mode 0666) is ignored: the seed decides.
mkdir -m 0700 "$TMP/st-cl-cache-0666"
cp "$TMP/st-moved-once"/node.* "$TMP/st-cl-cache-0666/"
start_tcp_fake fake-cl-decoy ok || exit 1
pd=$(port_of fake-cl-decoy)
for cf in "$TMP/st-cl-cache-0666"/node.*; do echo "127.0.0.1:$pd" > "$cf" && chmod 0666 "$cf"; done
mark fake-moved-once fake-cl-decoy
hlogin cl-cache-0666 "redis-cluster://127.0.0.1:$p"
check "cluster, cache file mode 0666: admitted via=redis by the seed ($(errs_shown cl-cache-0666))" \
	by_redis cl-cache-0666 "127\.0\.0\.1:$p" 0
check "cluster, cache file mode 0666: the cached node was not asked ($(cmds_of fake-cl-decoy))" \
	[ -z "$(cmds_of fake-cl-decoy)" ]
check "cluster, cache file mode 0666: replaced by the seed, mode 0600" \
	cache_is cl-cache-0666 '[0-9]*' "127.0.0.1:$p"

# A trusted cache file naming a node that answers garbage: the login moves on to the seed,
# and the seed replaces the entry.
start_tcp_fake fake-cl-garbage wrong-type || exit 1
pg=$(port_of fake-cl-garbage)
mkdir -m 0700 "$TMP/st-cl-cache-bad"
for cf in "$TMP/st-cl-cache-0666"/node.*; do
	echo "127.0.0.1:$pg" > "$TMP/st-cl-cache-bad/$(basename "$cf")"
	chmod 0600 "$TMP/st-cl-cache-bad/$(basename "$cf")"
done
mark fake-moved-once fake-cl-garbage
hlogin cl-cache-bad "redis-cluster://127.0.0.1:$p"
check "cluster, cached node answers garbage: then the seed, admitted via=redis ($(errs_shown cl-cache-bad))" \
	by_redis cl-cache-bad "127\.0\.0\.1:$p" 0
check "cluster, cached node answers garbage: it was asked once ($(cmds_of fake-cl-garbage))" \
	[ "$(cmds_of fake-cl-garbage)" = "READWRITE EVALSHA" ]
check "cluster, cached node answers garbage: replaced by the seed" \
	cache_is cl-cache-bad '[0-9]*' "127.0.0.1:$p"
# A remembered node, then a seed, that is no cluster member now (a standalone Redis on its
# address, here a real one): READWRITE, pipelined ahead of the script, is refused there, so
# the node fails like any other and the next seed decides. The standalone server keeps no
# schedule of this host's.
on_free_port pst start_redis standalone --port || exit 1
mkdir -m 0700 "$TMP/st-cl-standalone"
for cf in "$TMP/st-cl-cache-0666"/node.*; do
	echo "127.0.0.1:$pst" > "$TMP/st-cl-standalone/$(basename "$cf")"
	chmod 0600 "$TMP/st-cl-standalone/$(basename "$cf")"
done
hlogin cl-standalone "redis-cluster://127.0.0.1:$p"
check "cluster, cached node now standalone: the seed decides, via=redis ($(errs_shown cl-standalone))" \
	by_redis cl-standalone "127\.0\.0\.1:$p" 0
check "cluster, cached node now standalone: one LOG_ERR, READWRITE refused" \
	errs_are cl-standalone "^redis 127\.0\.0\.1:$pst: READWRITE: ERR This instance has cluster support disabled"
check "cluster, cached node now standalone: replaced by the seed" \
	cache_is cl-standalone '[0-9]*' "127.0.0.1:$p"
hlogin cl-seed-standalone "redis-cluster://127.0.0.1:$pst,127.0.0.1:$p"
check "cluster, first seed standalone: the second decides, via=redis ($(errs_shown cl-seed-standalone))" \
	by_redis cl-seed-standalone "127\.0\.0\.1:$p" 0
check "cluster, first seed standalone: one LOG_ERR, READWRITE refused" \
	errs_are cl-seed-standalone "^redis 127\.0\.0\.1:$pst: READWRITE: ERR This instance has cluster support disabled"
# Its fresh script cache answers the pipelined EVALSHA with NOSCRIPT: had its answer been
# taken, EVAL would have followed, and reserved there.
evals_of() { rcli "$1" info commandstats | grep -c '^cmdstat_eval:'; }
check "cluster, standalone server: never sent EVAL ($(evals_of standalone)), no key ($(rcli standalone dbsize))" \
	[ "$(evals_of standalone)/$(rcli standalone dbsize)" = 0/0 ]
stop_redis standalone
check "cluster MOVED to :PORT: the fake server stopped cleanly" stop_fake fake-moved-once
check "cluster, cache decoy: the fake server stopped cleanly" stop_fake fake-cl-decoy
check "cluster, cached garbage node: the fake server stopped cleanly" stop_fake fake-cl-garbage

# Sentinel: first the control, a sentinel that names itself as the master, which ROLE
# confirms; the master is cached, and the next login asks it first, not the sentinel.
start_tcp_fake fake-sentinel sentinel-ok || exit 1
ps=$(port_of fake-sentinel)
mark fake-sentinel
hlogin sentinel-ok "redis-sentinel://127.0.0.1:$ps/mymaster"
check "sentinel ok: admitted via=redis in ${TOOK[sentinel-ok]} ms ($(errs_shown sentinel-ok))" \
	by_redis sentinel-ok "127\.0\.0\.1:$ps" 0
check "sentinel ok: no LOG_ERR" errs_are sentinel-ok
check "sentinel ok: the sentinel, then ROLE at the master ($(firsts_of fake-sentinel))" \
	[ "$(firsts_of fake-sentinel)" = "SENTINEL|ROLE" ]
check "sentinel ok: the master is cached, mode 0600" cache_is sentinel-ok master "127.0.0.1:$ps"
cp -a "$TMP/st-sentinel-ok" "$TMP/st-sentinel-cached"
rm -f "$TMP/st-sentinel-cached/slot.pam_flowslot"
mark fake-sentinel
hlogin sentinel-cached "redis-sentinel://127.0.0.1:$ps/mymaster"
check "sentinel, master cached: admitted via=redis ($(errs_shown sentinel-cached))" \
	by_redis sentinel-cached "127\.0\.0\.1:$ps" 0
check "sentinel, master cached: the sentinel was not asked ($(firsts_of fake-sentinel))" \
	[ "$(firsts_of fake-sentinel)" = ROLE ]

# Sentinels that name no master, or none that parses; and a few of the garbage modes above
# played by a sentinel.
NO_ADDR='get-master-addr-by-name: not an IP address and port'
declare -A SCAUSE=(
	[sentinel-nil]='get-master-addr-by-name: no master named "mymaster"'
	[sentinel-error]='get-master-addr-by-name: ERR No such master with that name'
	[sentinel-integer]=$NO_ADDR
	[sentinel-three]=$NO_ADDR
	[sentinel-integers]=$NO_ADDR
	[sentinel-space]=$NO_ADDR
	[sentinel-notaport]=$NO_ADDR
	[sentinel-port0]=$NO_ADDR
	[sentinel-longhost]=$NO_ADDR
	[sentinel-hostname]=$NO_ADDR
	[sentinel-auth]='AUTH: unexpected reply'
	[wrong-type]=$NO_ADDR
	[huge-bulk]='get-master-addr-by-name: reply too large'
	[half-close]='get-master-addr-by-name: Server closed the connection'
	[stall]='get-master-addr-by-name: timed out'
	[close]='(sending|get-master-addr-by-name): (Server closed the connection|Connection reset by peer|the server closed the connection)'
)
SMODES="sentinel-nil sentinel-error sentinel-integer sentinel-three sentinel-integers sentinel-space sentinel-notaport sentinel-port0 sentinel-longhost sentinel-hostname sentinel-auth wrong-type huge-bulk half-close stall close"
for mode in $SMODES; do
	start_tcp_fake "fake-s-$mode" "$mode" || exit 1
	p=$(port_of "fake-s-$mode")
	opts=""
	[ "$mode" = sentinel-auth ] && opts="sentinel_password=secret"
	hlogin "s-$mode" "redis-sentinel://127.0.0.1:$p/mymaster" "$opts"
	check "sentinel $mode: fell back to the local slot in ${TOOK[s-$mode]} ms" fell_back "s-$mode"
	check "sentinel $mode: LOG_ERR: $(errs_shown "s-$mode")" \
		errs_are "s-$mode" "^sentinel 127\.0\.0\.1:$p: ${SCAUSE[$mode]}" \
		'^sentinel: no master to use: no sentinel named one$'
	want=SENTINEL
	[ "$mode" = sentinel-auth ] && want=AUTH
	[ "$mode" = close ] && want=""
	check "sentinel $mode: only the sentinel was asked ($(firsts_of "fake-s-$mode"))" \
		[ "$(firsts_of "fake-s-$mode")" = "$want" ]
	check "sentinel $mode: no master cached" no_cache "s-$mode"
	check "sentinel $mode: the fake server stopped cleanly" stop_fake "fake-s-$mode"
done

# A sentinel that names a master (itself) whose ROLE is not "master": the script's valid
# answer, pipelined behind ROLE, must not be taken. Not a master: noticed, and the next
# sentinel asked (there is none); ROLE refused: a failure of its own, and then likewise.
for mode in role-status role-slave role-empty role-error; do
	start_tcp_fake "fake-$mode" "$mode" || exit 1
	p=$(port_of "fake-$mode")
	hlogin "$mode" "redis-sentinel://127.0.0.1:$p/mymaster"
	check "sentinel, $mode: fell back to the local slot in ${TOOK[$mode]} ms" fell_back "$mode"
	if [ "$mode" = role-error ]; then
		check "sentinel, $mode: LOG_ERR: $(errs_shown "$mode")" \
			errs_are "$mode" "^redis 127\.0\.0\.1:$p: ROLE: ERR unknown command 'ROLE'" \
			'^sentinel: no master to use: every one named failed$'
	else
		check "sentinel, $mode: LOG_ERR: $(errs_shown "$mode")" \
			errs_are "$mode" '^sentinel: no master to use: every one named failed$'
		check "sentinel, $mode: \"not a master\" logged" \
			grep -aq "SYSLOG(5): redis 127\.0\.0\.1:$p: not a master" "$TMP/$mode.err"
	fi
	check "sentinel, $mode: the sentinel, then ROLE ($(firsts_of "fake-$mode"))" \
		[ "$(firsts_of "fake-$mode")" = "SENTINEL|ROLE" ]
	check "sentinel, $mode: no master cached" no_cache "$mode"
	check "sentinel, $mode: the fake server stopped cleanly" stop_fake "fake-$mode"
done

# Down, then garbage, then one that works: the module moves on to the next sentinel, and to
# the next cluster seed. All seeds down: the fallback.
start_tcp_fake fake-s-nil2 sentinel-nil || exit 1
pn=$(port_of fake-s-nil2)
pdown=$(free_port)
mark fake-sentinel
hlogin s-next "redis-sentinel://127.0.0.1:$pdown,127.0.0.1:$pn,127.0.0.1:$ps/mymaster"
check "sentinels down, nil, ok: admitted via=redis by the third in ${TOOK[s-next]} ms" \
	by_redis s-next "127\.0\.0\.1:$ps" 0
check "sentinels down, nil, ok: LOG_ERR: $(errs_shown s-next)" \
	errs_are s-next "^sentinel 127\.0\.0\.1:$pdown: cannot connect" \
	"^sentinel 127\.0\.0\.1:$pn: get-master-addr-by-name: no master named \"mymaster\""
check "sentinels down, nil, ok: the third was asked ($(firsts_of fake-sentinel))" \
	[ "$(firsts_of fake-sentinel)" = "SENTINEL|ROLE" ]
check "sentinels down, nil, ok: the master is cached" cache_is s-next master "127.0.0.1:$ps"
check "sentinel nil (2): the fake server stopped cleanly" stop_fake fake-s-nil2

start_tcp_fake fake-seed ok || exit 1
pk=$(port_of fake-seed)
hlogin cl-next "redis-cluster://127.0.0.1:$pdown,127.0.0.1:$pk"
check "cluster seeds down, ok: admitted via=redis by the second in ${TOOK[cl-next]} ms" \
	by_redis cl-next "127\.0\.0\.1:$pk" 0
check "cluster seeds down, ok: LOG_ERR: $(errs_shown cl-next)" \
	errs_are cl-next "^redis 127\.0\.0\.1:$pdown: cannot connect"
check "cluster seeds down, ok: the second seed is cached for the slot" \
	cache_is cl-next '[0-9]*' "127.0.0.1:$pk"
check "cluster seed ok: the fake server stopped cleanly" stop_fake fake-seed
pdown2=$(free_port)
hlogin cl-down "redis-cluster://127.0.0.1:$pdown,127.0.0.1:$pdown2"
check "cluster seeds all down: fell back to the local slot in ${TOOK[cl-down]} ms" fell_back "cl-down"
check "cluster seeds all down: LOG_ERR: $(errs_shown cl-down)" \
	errs_are cl-down "^redis 127\.0\.0\.1:$pdown: cannot connect" \
	"^redis 127\.0\.0\.1:$pdown2: cannot connect"

# The master cache: a file the module must not trust names a decoy, a second fake master;
# the login must ignore it, go to the sentinel, and put a sound entry in its place. The
# control (a sound file naming the decoy) shows the decoy would be noticed.
start_tcp_fake fake-decoy sentinel-ok || exit 1
pd=$(port_of fake-decoy)
entry=$(basename "$(echo "$TMP/st-sentinel-ok"/node.*.master)")
printf '127.0.0.1:%s\n' "$pd" > "$TMP/decoy-entry"
chmod 0600 "$TMP/decoy-entry"
declare -A CACHE_HOW=(
	[control]='a sound file'
	[garbage]='"not an endpoint"'
	[symlink]='a symlink to a sound file'
	[mode0666]='mode 0666'
	[mode0620]='mode 0620'
	[owner]='owned by uid 65534'
	[nonl]='no newline'
)
CACHE_CASES="control garbage symlink mode0666 mode0620 nonl"
[ "$(id -u)" = 0 ] && CACHE_CASES="$CACHE_CASES owner"
for c in $CACHE_CASES; do
	d=$TMP/st-cache-$c
	mkdir -m 0700 "$d"
	case $c in
	garbage) echo 'not an endpoint' > "$d/$entry" ;;
	symlink) ln -s "$TMP/decoy-entry" "$d/$entry" ;;
	nonl) printf '127.0.0.1:%s' "$pd" > "$d/$entry" ;;
	*) cp "$TMP/decoy-entry" "$d/$entry" ;;
	esac
	case $c in
	mode0666) chmod 0666 "$d/$entry" ;;
	mode0620) chmod 0620 "$d/$entry" ;;
	owner) chown 65534 "$d/$entry" ;;
	esac
	mark fake-sentinel fake-decoy
	hlogin "cache-$c" "redis-sentinel://127.0.0.1:$ps/mymaster"
	if [ "$c" = control ]; then
		check "master cache, ${CACHE_HOW[$c]}: admitted via=redis by the cached master ($(errs_shown "cache-$c"))" \
			by_redis "cache-$c" "127\.0\.0\.1:$pd" 0
		check "master cache, ${CACHE_HOW[$c]}: the cached master, not the sentinel ($(firsts_of fake-decoy) / $(firsts_of fake-sentinel))" \
			[ "$(firsts_of fake-decoy)/$(firsts_of fake-sentinel)" = ROLE/ ]
		continue
	fi
	check "master cache, ${CACHE_HOW[$c]}: admitted via=redis through the sentinel ($(errs_shown "cache-$c"))" \
		by_redis "cache-$c" "127\.0\.0\.1:$ps" 0
	check "master cache, ${CACHE_HOW[$c]}: no LOG_ERR" errs_are "cache-$c"
	check "master cache, ${CACHE_HOW[$c]}: ignored, the sentinel asked ($(firsts_of fake-decoy) / $(firsts_of fake-sentinel))" \
		[ "$(firsts_of fake-decoy)/$(firsts_of fake-sentinel)" = "/SENTINEL|ROLE" ]
	check "master cache, ${CACHE_HOW[$c]}: replaced by a sound entry" \
		cache_is "cache-$c" master "127.0.0.1:$ps"
done
check "master cache: the symlink's target was not written" \
	[ "$(cat "$TMP/decoy-entry")" = "127.0.0.1:$pd" ]
check "master cache: the decoy stopped cleanly" stop_fake fake-decoy
check "sentinel ok: the fake server stopped cleanly" stop_fake fake-sentinel

echo "# timings (ms), fallback=local / fallback=closed:"
for mode in ok $MODES; do
	if [ "$mode" = ok ]; then
		echo "#   ok: ${TOOK[ok-local]} / ${TOOK[ok-closed]}"
	else
		echo "#   $mode: ${TOOK[$mode]} / ${TOOK[$mode-closed]}"
	fi
done
echo "#   TCP ok: ${TOOK[tcp-ok]}; TCP stall: ${TOOK[tcp-stall]}"
echo "# Sentinel and Cluster (ms):"
# shellcheck disable=SC2086 # word lists
for t in $RMODES moved-closed moved-once moved-cached cl-cache-0666 cl-cache-bad cl-standalone cl-seed-standalone sentinel-ok sentinel-cached \
	$(printf 's-%s ' $SMODES) role-status role-slave role-empty role-error s-next cl-next cl-down \
	$(printf 'cache-%s ' $CACHE_CASES); do
	printf '#   %s: %s\n' "$t" "${TOOK[$t]}"
done | column -c 100

finish
