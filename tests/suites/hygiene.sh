#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Process hygiene: build/hygiene (tests/helpers/hygiene.c) drives the real libpam under pam_wrapper
# through every entry point of stacks that use pam_flowslot.so against private Redis servers
# (a live one, a stopped one, a TCP one with a password, none at all), url=local, and
# Sentinel and Cluster URLs, and checks what each call leaves of the process: descriptors, signal dispositions and mask.
# Then 16 threads log in at once. The threaded part runs again under valgrind's helgrind,
# which must report no race (tests/helpers/hygiene.supp says what is not ours); not with SANITIZE=1,
# as valgrind and ASan do not mix.
set -u
. "$(dirname "$0")/../helpers/lib.sh"

HYG=$TOP/build/hygiene
THREADS=16
# Admissions are checked at least half an interval apart, as each thread saw its own return
# from pam_authenticate: on a loaded machine a woken thread may wait its turn for tens of ms.
INTERVAL_MS=200

[ -x "$HYG" ] || { echo "$HYG is missing: make build/hygiene" >&2; exit 1; }
start_redis r || exit 1
start_redis frozen || exit 1
kill -STOP "$(cat "$TMP/frozen.pid")"
tport=$(free_port)
start_redis tcp --port "$tport" --requirepass 'hyg:pw' || exit 1

# gated NAME ARGS...: the gate first in all four stacks, then pam_permit.
gated() {
	name=$1
	shift
	service "$name" "auth required @M $*" "account required @M $*" "session required @M $*" \
		"password required @M $*" "auth required @P/pam_permit.so" \
		"account required @P/pam_permit.so" "session required @P/pam_permit.so" \
		"password required @P/pam_permit.so"
}

R="url=unix://$TMP/r.sock"
NONE="url=unix://$TMP/nobody.sock timeout=200ms"
mkdir -m 0777 "$TMP/hyg-open"
gated hyg_redis "$R key=hyg_redis interval=1ms debug"
gated hyg_queue "$R key=hyg_queue interval=300ms countdown=100ms"
gated hyg_tcp "url=redis://:hyg%3Apw@127.0.0.1:$tport/2 key=hyg_tcp interval=1ms"
gated hyg_refuse "$R key=hyg_refuse interval=10s max_wait=1s"
# Queues as the script stores them ("tat written", in server microseconds): hyg_queue's
# handle waits once, up to 3 s (so that it still waits when the run reaches it a second or two
# late, on a loaded machine); hyg_refuse's 100 s queue refuses every phase. A handle that was
# admitted is not gated again, so without them neither would wait or be refused.
now_us=$(rcli r time | tr '\n' ' ' | awk '{ printf "%d%06d", $1, $2 }')
rcli r set hyg_queue "$((now_us + 3000000)) $now_us" px 3000 > /dev/null
rcli r set hyg_refuse "$((now_us + 100000000)) $now_us" px 100000 > /dev/null
gated hyg_local "url=local state_dir=$TMP/hyg-local interval=1ms"
gated hyg_unsafe "url=local state_dir=$TMP/hyg-open interval=1ms"
gated hyg_down "$NONE state_dir=$TMP/hyg-down interval=1ms"
gated hyg_frozen "url=unix://$TMP/frozen.sock timeout=200ms fallback=open"
gated hyg_closed "$NONE fallback=closed"
gated hyg_badopt "$R interval=7x fallback=open"
# Past one Redis: a plain server as a cluster seed answers the script itself (and the node is
# cached in state_dir); sentinels that are down or are no sentinel send the login to its
# local slot.
gated hyg_cluster "url=redis-cluster://:hyg%3Apw@127.0.0.1:$tport key=hyg_cl interval=1ms state_dir=$TMP/hyg-cl"
gated hyg_sentinel "url=redis-sentinel://127.0.0.1:$(free_port),127.0.0.1:$tport/m timeout=200ms state_dir=$TMP/hyg-sen interval=1ms"
SERVICES="hyg_redis:ok hyg_queue:queue hyg_tcp:ok hyg_refuse:refuse hyg_local:ok hyg_unsafe:ok
hyg_down:ok hyg_frozen:ok hyg_closed:closed hyg_badopt:ok hyg_cluster:ok hyg_sentinel:ok"

# threads RUN: the threads' services on keys of their own for this run. pam_wrapper copies the
# service files when the process starts, so this comes before each run.
threads() {
	for s in warm threads; do
		service "hyg_$s" \
			"auth required @M $R key=hyg_$s$1 interval=${INTERVAL_MS}ms countdown=0 max_wait=60s" \
			"auth required @P/pam_permit.so"
	done
}

# hygiene NAME [WRAPPER...] -- ARGS...: one run of build/hygiene, its output shown as it
# goes and kept in $TMP/NAME.out; its exit status in $TMP/NAME.rc.
hygiene() {
	name=$1
	shift
	wrap=()
	while [ "$1" != -- ]; do
		wrap+=("$1")
		shift
	done
	shift
	t0=$(now_ms)
	"${PRIVATE_TMP[@]}" env LD_PRELOAD="$PRELOAD" PAM_WRAPPER=1 \
		PAM_WRAPPER_SERVICE_DIR="$TMP/svc" "${wrap[@]}" "$HYG" \
		--threads "$THREADS" --interval-ms "$INTERVAL_MS" "$@" \
		2> "$TMP/$name.err" | tee "$TMP/$name.out" | sed 's/^/    /'
	echo "${PIPESTATUS[0]}" > "$TMP/$name.rc"
	echo $(($(now_ms) - t0)) > "$TMP/$name.ms"
}

# ran_clean NAME: the run passed, and printed no sanitizer report and no valgrind error.
ran_clean() {
	[ "$(rc_of "$1")" = 0 ] && tail -1 "$TMP/$1.out" | grep -q ' 0 failed$' &&
		! grep -Eq '^==[0-9]+==ERROR|runtime error: ' "$TMP/$1.err" &&
		! grep -Eq '^==[0-9]+== ERROR SUMMARY: [1-9]' "$TMP/$1.err" && return 0
	cat "$TMP/$1.err" >&2
	return 1
}

threads plain
# shellcheck disable=SC2086 # SERVICES is a list
hygiene plain -- $SERVICES
check "hygiene, plain: $(tail -1 "$TMP/plain.out") in $(cat "$TMP/plain.ms") ms" ran_clean plain

if [ "${FLOWSLOT_SANITIZE:-0}" = 1 ]; then
	echo "# helgrind: skipped, valgrind and ASan do not mix (SANITIZE=1)"
else
	# Helgrind: the threads only. --error-exitcode makes any race, lock-order or pthread API
	# error fail the run; --history-level=full gives both stacks of a race.
	# Helgrind runs one thread at a time, each tens of times slower, and a woken thread may
	# wait its turn for tens of ms (more on a loaded machine): a wider interval still.
	INTERVAL_MS=400
	threads helgrind
	hygiene helgrind valgrind --tool=helgrind --error-exitcode=96 --history-level=full \
		--suppressions="$TOP/tests/helpers/hygiene.supp" -- --threads-only
	check "hygiene, threads under helgrind, no race: $(tail -1 "$TMP/helgrind.out") in $(
		cat "$TMP/helgrind.ms") ms" ran_clean helgrind
fi
finish
