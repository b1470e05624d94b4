#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The host's counters and dry_run, through pamtester under pam_wrapper against a private Redis:
# logins of every result are counted under their key template, read back as Prometheus text
# by Debian's python3-prometheus-client parser; dry_run's simultaneous logins all go in at
# once, log the waits they would have had, and leave the queue that would have been.
set -u
. "$(dirname "$0")/../helpers/lib.sh"

PY=/usr/bin/python3 # Debian's, with python3-prometheus-client; not another one on the PATH
CTL=$TREE/flowslotctl
start_redis r || exit 1
R="url=unix://$TMP/r.sock"
PERMIT="auth required @P/pam_permit.so"

# metrics STATE_DIR [OPTION...]: "flowslotctl metrics" as the reference parser reads it, one
# sample a line: "NAME KEY RESULT|LE DRY_RUN VALUE". Without options, on the per-host file
# schedule (which a look creates nothing for).
metrics() {
	local st=$1
	shift
	[ $# -gt 0 ] || set -- url=local
	"$CTL" state_dir="$st" "$@" metrics > "$TMP/metrics.txt" || return 1
	"$PY" - "$TMP/metrics.txt" << 'PYEOF'
import sys
from prometheus_client.parser import text_string_to_metric_families
with open(sys.argv[1]) as f:
    for fam in text_string_to_metric_families(f.read()):
        for s in fam.samples:
            l = s.labels
            print(s.name, l.get("key", "-"), l.get("result", l.get("le", "-")),
                  l.get("dry_run", "no"), "%g" % s.value)
PYEOF
}
# sample FILE NAME KEY RESULT|LE DRY_RUN: the value of one sample, "" if absent.
sample() { awk -v n="$2" -v k="$3" -v r="$4" -v d="$5" '$1 == n && $2 == k && $3 == r && $4 == d { print $5 }' "$1"; }

# 1. One login of each result, on one key template: each counted once under it.
ST=$TMP/st
K='key=cnt:%u'
service c "auth requisite @M $R $K state_dir=$ST interval=6s max_wait=10s countdown=0" "$PERMIT"
# On the same schedule, a login that may wait 2 s at most: behind a waiter, it is refused.
service cshort "auth requisite @M $R $K state_dir=$ST interval=6s max_wait=2s countdown=0" "$PERMIT"
service cdown "auth requisite @M url=unix://$TMP/none.sock $K state_dir=$ST fallback=closed" "$PERMIT"
service copen "auth requisite @M url=unix://$TMP/none.sock $K state_dir=$ST fallback=open" "$PERMIT"
# The same user each time: one schedule, cnt:alice.
login c1 c alice
login c2 c alice &
c2pid=$!
wait_for 10 grep -q 'queued: ' "$TMP/c2.err"
# While one waits: the queue's gauges, read live from the schedule.
metrics "$ST" "$R" key=cnt:alice interval=6s > "$TMP/m0" || not_ok "flowslotctl metrics or the parser failed: $(cat "$TMP/metrics.txt")"
check "flowslot_queue_length{key=\"cnt:alice\"} is 1 while one waits ($(sample "$TMP/m0" flowslot_queue_length cnt:alice - no))" \
	[ "$(sample "$TMP/m0" flowslot_queue_length cnt:alice - no)" = 1 ]
check "flowslot_queue_wait_seconds: a new login would wait more than one interval ($(sample "$TMP/m0" flowslot_queue_wait_seconds cnt:alice - no))" \
	"$PY" -c "import sys; sys.exit(not 6 < float('$(sample "$TMP/m0" flowslot_queue_wait_seconds cnt:alice - no)' or 0) <= 12)"
check "flowslot_queue_up is 1" [ "$(sample "$TMP/m0" flowslot_queue_up cnt:alice - no)" = 1 ]
login c3 cshort alice
wait $c2pid
login c4 cdown alice
login c5 copen alice
check "logins: admitted, waited, refused, closed, open ($(cat "$TMP"/c[1-5].rc | tr '\n' ' '))" \
	[ "$(cat "$TMP"/c[1-5].rc | tr -d "\n")" = 00110 ]
metrics "$ST" > "$TMP/m1" || not_ok "flowslotctl metrics or the parser failed: $(cat "$TMP/metrics.txt")"
for want in admitted:1 waited:1 refused:1 unavailable:2 abandoned:0; do
	got=$(sample "$TMP/m1" flowslot_logins_total 'cnt:%u' "${want%:*}" no)
	check "flowslot_logins_total{key=\"cnt:%u\",result=\"${want%:*}\"} is ${want#*:} (${got:-absent})" \
		[ "$got" = "${want#*:}" ]
done
check "no series under an expanded key, nor under dry_run" \
	sh -c "! grep -q 'cnt:alice\| yes ' '$TMP/m1'"
# The waits: the admitted login's 0 s and the waited one's ~6 s.
check "flowslot_wait_seconds: count 2, one at most 2 s, both at most 10 s" \
	[ "$(sample "$TMP/m1" flowslot_wait_seconds_count 'cnt:%u' - no)" = 2 ] &&
	[ "$(sample "$TMP/m1" flowslot_wait_seconds_bucket 'cnt:%u' 2.0 no)" = 1 ] &&
	[ "$(sample "$TMP/m1" flowslot_wait_seconds_bucket 'cnt:%u' 10.0 no)" = 2 ] &&
	[ "$(sample "$TMP/m1" flowslot_wait_seconds_bucket 'cnt:%u' +Inf no)" = 2 ]
sum=$(sample "$TMP/m1" flowslot_wait_seconds_sum 'cnt:%u' - no)
check "flowslot_wait_seconds_sum is about the one wait of 6 s ($sum)" \
	"$PY" -c "import sys; sys.exit(not 2 < float('${sum:-0}') < 9)"

# 2. A counters file that cannot be used: the login goes in as it would, with a warning.
mkdir -m 0700 "$TMP/stbad"
ln -s /dev/null "$TMP/stbad/stats"
service cbad "auth requisite @M $R key=cbad state_dir=$TMP/stbad" "$PERMIT"
login cb cbad alice
check "counters file a symlink: admitted all the same, with a warning" \
	sh -c "[ $(rc_of cb) = 0 ] && grep -q 'counters: .*not counted' '$TMP/cb.err'"

# 3. dry_run: five logins at once, 5 s apart, go in at once (real waits would take 20 s), each
# one after the first logs its would-be wait and position; a real login 6 s later still sees
# that queue.
# dry_run_case NAME URL: on Redis or on the per-host file.
dry_run_case() {
	local dc=$1 url=$2 t0 took waits positions
	service "$dc" "auth requisite @M $url key=$dc state_dir=$TMP/st-$dc interval=5s dry_run countdown=1s" \
		"auth optional @P/pam_exec.so log=$TMP/$dc.env /usr/bin/env" "$PERMIT"
	service "${dc}real" "auth requisite @M $url key=$dc state_dir=$TMP/st-$dc interval=5s max_wait=10s" "$PERMIT"
	service "${dc}short" "auth requisite @M $url key=$dc state_dir=$TMP/st-$dc interval=5s max_wait=2s dry_run" "$PERMIT"
	t0=$(now_ms)
	logins "$dc" "$dc" 5
	took=$(($(now_ms) - t0))
	check "$dc: five dry_run logins all let in ($(cat "$TMP/$dc"0[1-5].rc | tr -d '\n'))" \
		[ "$(cat "$TMP/$dc"0[1-5].rc | tr -d '\n')" = 00000 ]
	check "$dc: ... at once (${took} ms; waiting would take 20000)" [ "$took" -lt 12000 ]
	# would_wait_ms by position, for the four that would have waited.
	cat "$TMP/$dc"0[1-5].err | sed -n 's/.*dry_run: .*would_wait_ms=\([0-9]*\) position=\([0-9]*\).*/\2 \1/p' |
		sort -n > "$TMP/$dc.would"
	positions=$(cut -d' ' -f1 "$TMP/$dc.would" | tr '\n' ' ')
	waits=$(cut -d' ' -f2 "$TMP/$dc.would" | tr '\n' ' ')
	check "$dc: ... positions 1 to 4 logged, as a real queue numbers them behind the first ($positions)" [ "$positions" = "1 2 3 4 " ]
	check "$dc: ... with would-be waits that grow by about 5 s ($waits)" \
		awk 'NR > 1 && !($2 - prev > 3000 && $2 - prev < 7000) { bad = 1 } { prev = $2 } END { exit bad || NR != 4 }' "$TMP/$dc.would"
	check "$dc: ... and no countdown, no queued line" \
		sh -c "! grep -q 'queued: \|Waiting\|[0-9] s' '$TMP/$dc'0[1-5].out '$TMP/$dc'0[1-5].err"
	# After the leases a held place would have (5 s): the slots were committed, not held.
	sleep 6
	login "${dc}6" "${dc}real" real
	check "$dc: a real login then sees the queue that would have been ($(grep -o 'refused: .*wait_ms=[0-9]*' "$TMP/${dc}6.err"))" \
		sh -c "[ $(rc_of "${dc}6") = 1 ] && [ \$(sed -n 's/.*refused: .* wait_ms=\([0-9]*\) .*/\1/p' '$TMP/${dc}6.err') -gt 12000 ]"
	login "${dc}7" "${dc}short" short
	check "$dc: a dry_run login over max_wait goes in, logged as would_refuse" \
		sh -c "[ $(rc_of "${dc}7") = 0 ] && grep -q 'dry_run: .* would_refuse wait_ms=' '$TMP/${dc}7.err'"
	metrics "$TMP/st-$dc" > "$TMP/m-$dc" || not_ok "$dc: flowslotctl metrics or the parser failed"
	check "$dc: a dry_run login tells the session nothing: no FLOWSLOT_ADMITTED, so the profile.d wait still runs" \
		sh -c "[ -s '$TMP/$dc.env' ] && ! grep -q FLOWSLOT_ADMITTED '$TMP/$dc.env'"
	check "$dc: counted under dry_run=\"yes\": 1 admitted, 4 waited, 1 refused; the real one refused" \
		[ "$(sample "$TMP/m-$dc" flowslot_logins_total "$dc" admitted yes)" = 1 ] &&
		[ "$(sample "$TMP/m-$dc" flowslot_logins_total "$dc" refused yes)" = 1 ] &&
		[ "$(sample "$TMP/m-$dc" flowslot_logins_total "$dc" waited yes)" = 4 ] &&
		[ "$(sample "$TMP/m-$dc" flowslot_logins_total "$dc" refused no)" = 1 ] &&
		[ "$(sample "$TMP/m-$dc" flowslot_wait_seconds_count "$dc" - yes)" = 5 ]
}
dry_run_case dryr "$R"
dry_run_case dryl url=local

# 4. dry_run with no queue to be had and fallback=closed: let in, logged, counted unavailable.
service dryc "auth requisite @M url=unix://$TMP/none.sock key=dryc state_dir=$TMP/st-dryc fallback=closed dry_run" "$PERMIT"
login dc1 dryc alice
check "dry_run, fallback=closed and no Redis: let in, logged as would_meet_failure_policy" \
	sh -c "[ $(rc_of dc1) = 0 ] && grep -q 'dry_run: .* would_meet_failure_policy' '$TMP/dc1.err' && ! grep -q 'unavailable. Please' '$TMP/dc1.out'"
metrics "$TMP/st-dryc" > "$TMP/m-dryc" || not_ok "dryc: flowslotctl metrics or the parser failed"
check "... counted unavailable under dry_run=\"yes\"" \
	[ "$(sample "$TMP/m-dryc" flowslot_logins_total dryc unavailable yes)" = 1 ]

# 5. A dry_run login on a schedule where real logins wait: it cannot take a fixed slot behind
# them, and gives back the place it was given, rather than stand ahead of later real logins
# until its lease ran out. (On Redis: the per-host file drops a place whose process is gone.)
# A 10 s interval: sh2 holds its place (until 2 s before its slot) while sh3 and status run.
service shr "auth requisite @M $R state_dir=$TMP/st-shr key=shr interval=10s countdown=0" "$PERMIT"
service shrdry "auth requisite @M $R state_dir=$TMP/st-shr key=shr interval=10s dry_run" "$PERMIT"
login sh1 shr a
login sh2 shr b &
sh2pid=$!
wait_for 10 grep -q 'queued: ' "$TMP/sh2.err"
login sh3 shrdry c
"$CTL" "$R" key=shr interval=10s state_dir="$TMP/st-shr" status > "$TMP/shr.status" 2>&1
check "dry_run behind a real waiter: let in at once, and leaves one waiter, not two ($(grep waiting: "$TMP/shr.status"))" \
	sh -c "[ $(rc_of sh3) = 0 ] && grep -q '^waiting: *1\$' '$TMP/shr.status'"
wait $sh2pid

# 6. metrics with the schedule out of reach: the counters all the same, and queue_up 0.
"$CTL" state_dir="$ST" url=unix://$TMP/none.sock key=cnt:alice metrics > "$TMP/m5.txt" 2> "$TMP/m5.err"
check "metrics, Redis down: exit 0, counters printed, flowslot_queue_up 0, why on stderr" \
	sh -c "[ $? = 0 ] && grep -q '^flowslot_logins_total{key=\"cnt:%u\",result=\"admitted\"} 1' '$TMP/m5.txt' &&
		grep -q '^flowslot_queue_up{key=\"cnt:alice\"} 0' '$TMP/m5.txt' && ! grep -q flowslot_queue_length '$TMP/m5.txt' &&
		grep -q 'no queue gauges' '$TMP/m5.err'"

finish
