#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Garbage from the server: the real module in real libpam (pamtester under
# pam_wrapper) against build/fake_redis, a server that answers the script with the wrong type,
# out-of-range numbers, a 100 MB bulk, half a reply, nothing, or a byte at a time. Every login
# must end in its fallback within the timeout, with exactly one LOG_ERR line naming the cause;
# the control mode "ok" shows that the fake server itself speaks Redis. Then,
# end to end, the fake server plays cluster nodes and a sentinel: a redirect loop under
# fallback=closed, a MOVED followed and remembered across logins, remembered nodes that must
# not be trusted or answer garbage, a real standalone Redis where a node was, and all seeds
# down. The tables (bad redirects, the redirect cap, sentinel and ROLE answers, node cache
# files) are tests/unit/test_rnode.c's, against a fake node per address.
set -u
. "$(dirname "$0")/../helpers/lib.sh"

FAKE=$TOP/build/fake_redis
[ -x "$FAKE" ] || { echo "missing $FAKE: run make check-garbage" >&2; exit 1; }

TIMEOUT_MS=300
# Room for starting pamtester on a loaded machine: what is checked is a decision bounded by
# the timeout, not a hang, and not a timeout spent once per reply or per byte.
SLACK_MS=3000
[ -n "$VG" ] && SLACK_MS=8000 # valgrind is slow to start

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
	[wrong-type]='garbage reply to the script: not an array of three, five or seven'
	[integer]='garbage reply to the script: not an array of three, five or seven'
	[string]='garbage reply to the script: not an array of three, five or seven'
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

# fake_saw NAME MIN MAX MODE: the fake server took MIN to MAX connections and read an EVALSHA
# on each (but in mode close, which reads nothing); conns NAME: how many it took.
conns() { grep -c 'conn [0-9]*: ' "$TMP/$1.log"; }
fake_saw() {
	n=$(conns "$1")
	[ "$n" -ge "$2" ] && [ "$n" -le "$3" ] &&
		{ [ "$4" = close ] || [ "$(grep -c 'read "EVALSHA"' "$TMP/$1.log")" = "$n" ]; }
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
check "ok: the fake server read an EVALSHA per login" fake_saw fake-ok 2 2 ok
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

	# A reservation that timed out is asked again, for the same place, while 4 x timeout last
	# (pam_flowslot(7), "A reservation asked again"): 2 to 4 tries a login; else one.
	case $mode in stall | drip) want="4 8" ;; *) want="2 2" ;; esac
	# shellcheck disable=SC2086 # MIN MAX
	check "$mode: the fake server saw both logins ($(conns "fake-$mode") connections)" \
		fake_saw "fake-$mode" $want "$mode"
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

# Sentinel and Cluster: the fake server plays a cluster node that redirects in
# circles, once, or to a standalone Redis, and a sentinel. Every login must still end in its
# fallback, within its bounds, with LOG_ERR lines that say why. Each connection gets its own
# timeout, and a chain of them must not run out under valgrind.
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

# All seeds down: the fallback (the sentinel and seed orders are test_rnode's).
pdown=$(free_port)
pdown2=$(free_port)
hlogin cl-down "redis-cluster://127.0.0.1:$pdown,127.0.0.1:$pdown2"
check "cluster seeds all down: fell back to the local slot in ${TOOK[cl-down]} ms" fell_back "cl-down"
check "cluster seeds all down: LOG_ERR: $(errs_shown cl-down)" \
	errs_are cl-down "^redis 127\.0\.0\.1:$pdown: cannot connect" \
	"^redis 127\.0\.0\.1:$pdown2: cannot connect"

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
for t in moved-closed moved-once moved-cached cl-cache-0666 cl-cache-bad cl-standalone \
	cl-seed-standalone sentinel-ok sentinel-cached cl-down; do
	printf '#   %s: %s\n' "$t" "${TOOK[$t]}"
done | column -c 100

finish
