#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The pressure hold (pressure=), through pamtester under pam_wrapper on the per-host schedule:
# fake PSI files written by a writer this suite starts (its "some" total grows at a chosen
# share), then the real /proc/pressure under busy loops this suite starts. Every process it
# starts it stops by pid.
set -u
. "$(dirname "$0")/../helpers/lib.sh"

PSI=$TMP/psi
mkdir "$PSI"
for r in cpu io memory; do echo 0 > "$PSI/$r.rate"; done

# The writer: every 20 ms, each of cpu, io and memory in $PSI gets a total grown by the share
# in $PSI/RES.rate (a percentage) of the time since, written whole (rename). One process, no
# forks, so that a loaded machine does not leave the files stale for long.
psi_writer() {
	exec python3 -c '
import os, sys, time
d = sys.argv[1]
total = {"cpu": 0, "io": 0, "memory": 0}
last = time.monotonic()
while True:
    now = time.monotonic()
    for r in total:
        try:
            rate = float(open(os.path.join(d, r + ".rate")).read())
        except (OSError, ValueError):
            rate = 0
        total[r] += int((now - last) * 1e6 * rate / 100)
        with open(os.path.join(d, r + ".new"), "w") as f:
            f.write("some avg10=0.00 avg60=0.00 avg300=0.00 total=%d\n"
                    "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n" % total[r])
        os.replace(os.path.join(d, r + ".new"), os.path.join(d, r))
    last = now
    time.sleep(0.02)
' "$PSI"
}
psi_writer &
PIDS="$PIDS $!"
wait_for 5 test -e "$PSI/memory" || { echo "the writer did not start" >&2; exit 1; }

rate() { echo "$2" > "$PSI/$1.rate.new" && mv "$PSI/$1.rate.new" "$PSI/$1.rate"; }
# gate NAME OPTIONS: a service whose gate is on the per-host schedule NAME, stamping after it.
gate() {
	service "$1" "auth requisite @M url=local state_dir=$TMP/st key=$1 $2" "$STAMP" \
		"auth required @P/pam_permit.so"
}
stamp_ms() { # USER: when its stamp was written, in wall-clock ms
	awk -v u="$1" '$2 == u { printf "%.0f", $1 / 1e6 }' "$TMP/stamps"
}
# held_in KEY N: the hold's line for KEY holds N places.
# held_in TEMPLATE N: N logins wait in the host's line for the key template.
held_in() { [ "$(grep -c ' w:' "$TMP/st/hold.$1" 2> /dev/null)" = "$2" ]; }
stamped() { grep -q " $1\$" "$TMP/stamps" 2> /dev/null; }

# 1. No pressure: not held.
gate p1 "interval=1s countdown=0 pressure=cpu:40,io:40,memory:40 pressure_dir=$PSI"
login a1 p1 a1
check "no pressure: the login goes in" [ "$(rc_of a1)" = 0 ]
check "... and is not held" sh -c "! grep -q 'held' '$TMP/a1.err'"
check "... nor warned about its pressure files" sh -c "! grep -q 'pressure: ' '$TMP/a1.err'"

# 2. Held while cpu is over its limit; in within about a second of it falling.
gate p2 "interval=1s countdown=0 pressure=cpu:40 pressure_dir=$PSI"
rm -f "$TMP/stamps"
rate cpu 90
# Samples that other logins stored up to 2 s ago (PRESSURE_AGE_MAX_US) would still show
# part of the calm before.
sleep 2.5
bg_login b1 p2 b1
wait_for 10 held_in p2 1
sleep 2
held_not_in() { held_in "$1" 1 && ! stamped "$2"; }
check "over the limit: the login is held (in the line, not in)" held_not_in p2 b1
rate cpu 5
t_fall=$(now_ms)
bg_wait
in_ms=$(($(stamp_ms b1) - t_fall))
check "pressure fell: in ${in_ms} ms after (within about a second; bound 5000 ms on a loaded machine)" \
	sh -c "[ $(rc_of b1) = 0 ] && [ $in_ms -ge 0 ] && [ $in_ms -le 5000 ]"
check "... its log line names the resource and the time held" \
	grep -Eq 'held: .*user=b1 .*pressure=cpu pressure_ms=[0-9]{4,}' "$TMP/b1.err"
check "... and the line is empty again" held_in p2 0
check "... and the user was told why they wait" \
	grep -q 'Login queue: the server is busy; you go in when it settles (waiting [0-9.]* s so far)\.' \
	"$TMP/b1.out"

# 3. Several held logins go in in arrival order, interval apart: no herd, no overtaking. Each
# user has a schedule of its own (key=p3:%u), and still they share the host's one line.
service p3 "auth requisite @M url=local state_dir=$TMP/st key=p3:%u interval=1s countdown=0 pressure=io:30 pressure_dir=$PSI" \
	"$STAMP" "auth required @P/pam_permit.so"
rm -f "$TMP/stamps"
rate io 80
sleep 2.5
for i in 1 2 3 4; do
	bg_login "c$i" p3 "c$i"
	wait_for 10 held_in p3:%u "$i"
done
check "four logins, each on a schedule of its own, held in one line" held_in p3:%u 4
all_held=0
held_in p3:%u 4 && all_held=1
rate io 0
bg_wait
order=$(sort -n "$TMP/stamps" | awk '{ printf "%s ", $2 }')
check "released in arrival order ($order)" [ "$all_held$order" = "1c1 c2 c3 c4 " ]
gaps=$(sort -n "$TMP/stamps" | awk 'NR > 1 { printf "%d ", ($1 - p) / 1e6 } { p = $1 }')
# The line releases them an interval apart; each stamp (pam_exec after the gate) may be late
# by what a loaded machine adds, so a gap is checked for most of an interval.
check "... about interval (1 s) apart: gaps $gaps ms" \
	sh -c "[ $all_held = 1 ] && for g in $gaps; do [ \$g -ge 700 ] || exit 1; done"

# 3b. A login that meets no pressure right after a release from the line waits out the rest
# of interval since that release, and goes in (not a crash: the line's slot then lies ahead).
gate p9 "interval=3s countdown=0 pressure=cpu:40 pressure_dir=$PSI"
rm -f "$TMP/stamps"
rate cpu 90
sleep 2.5
bg_login h1 p9 h1
wait_for 10 held_in p9 1
rate cpu 0
wait_for 10 stamped h1
bg_login h2 p9 h2
bg_wait
gap=$(($(stamp_ms h2) - $(stamp_ms h1)))
check "no pressure, just after a release: in (rc $(rc_of h2)), interval after the released one (${gap} ms)" \
	sh -c "[ $(rc_of h2) = 0 ] && [ $gap -ge 2500 ] && [ $gap -le 6000 ]"

# 4. pressure_timeout: still held at max_wait.
rate memory 95
sleep 2.5
gate p4 "interval=1s countdown=0 max_wait=2s pressure=memory:50 pressure_dir=$PSI"
rm -f "$TMP/stamps"
t_d1=$(now_ms)
login d1 p4 d1
d1_ms=$(($(stamp_ms d1) - t_d1))
check "pressure_timeout=admit (the default): in at max_wait (2 s; in after ${d1_ms} ms)" \
	sh -c "[ $(rc_of d1) = 0 ] && [ $d1_ms -ge 1800 ]"
check "... with a warning that names the resource" \
	grep -q 'admitted: .*pressure=memory pressure_ms=' "$TMP/d1.err"
gate p5 "interval=1s countdown=0 max_wait=2s pressure=memory:50 pressure_timeout=refuse pressure_dir=$PSI"
login d2 p5 d2
check "pressure_timeout=refuse: the phase's refusal" [ "$(rc_of d2)" != 0 ]
check "... logged as refused, with the resource" \
	grep -q 'refused: .*pressure=memory pressure_ms=.*max_wait_ms=2000' "$TMP/d2.err"
check "... and told to the user, in the module's words" \
	grep -qx 'The server is too busy at the moment. Please try again later.' "$TMP/d2.err"
check "... and it left the line" held_in p5 0
rate memory 0

# 5. Missing and malformed files: warned once per login, never locked.
mkdir "$TMP/bad"
printf 'some avg10=0.00 avg60=0.00 avg300=0.00 total=12x\n' > "$TMP/bad/cpu"
gate p6 "interval=1s countdown=0 pressure=cpu:1,memory:1 pressure_dir=$TMP/bad"
login e1 p6 e1
check "malformed and missing files: the login goes in, not held" \
	sh -c "[ $(rc_of e1) = 0 ] && ! grep -q 'held' '$TMP/e1.err'"
check "... the malformed one warned about once" \
	[ "$(grep -c 'pressure: .*/bad/cpu no well-formed' "$TMP/e1.err")" = 1 ]
check "... the missing one warned about once" \
	[ "$(grep -c 'pressure: .*/bad/memory missing' "$TMP/e1.err")" = 1 ]

# 6. A held login that dies leaves the line: the one behind it is not stuck. The line is a
# per-host file, which drops a waiter whose process is gone at the next call, without waiting
# for its lease: f3, joining the line right after f1 was killed and reaped, while pressure is
# still high, finds f2 alone in it. Then pressure falls, and f2 and f3 go in, in their order.
gate p7 "interval=1s countdown=0 pressure=cpu:40 pressure_dir=$PSI"
rm -f "$TMP/stamps"
rate cpu 90
sleep 2.5
login f1 p7 f1 2> /dev/null &
f1_sub=$!
wait_for 10 held_in p7 1
f1_pid=$(child_of "$f1_sub")
bg_login f2 p7 f2
wait_for 10 held_in p7 2
kill -KILL "$f1_pid" 2> /dev/null
wait "$f1_sub" 2> /dev/null
login f3 p7 f3 2> /dev/null &
f3_sub=$!
BG="$BG $f3_sub"
in_line() { [ -n "$1" ] && grep ' w:' "$TMP/st/hold.p7" 2> /dev/null | grep -qw -- "$1"; }
f3_pid=$(child_of "$f3_sub")
wait_for 10 in_line "$f3_pid"
dead_in=0 n_in=$(grep -c ' w:' "$TMP/st/hold.p7" 2> /dev/null)
in_line "$f1_pid" && dead_in=1
check "a held login killed: the next to join the line drops it at once ($n_in in the line, the dead one $dead_in)" \
	sh -c "[ $dead_in = 0 ] && [ $n_in = 2 ]"
rate cpu 0
t_fall=$(now_ms)
bg_wait
f2_ms=$(($(stamp_ms f2) - t_fall))
order=$(sort -n "$TMP/stamps" | awk '{ printf "%s ", $2 }')
check "... and when pressure falls, the ones behind it go in, in order ($order; f2 ${f2_ms} ms after)" \
	sh -c "[ $(rc_of f2)$(rc_of f3) = 00 ] && [ '$order' = 'f2 f3 ' ] && [ $f2_ms -ge 0 ] && [ $f2_ms -le 5000 ]"
check "... and the line is empty" held_in p7 0

# 7. The real /proc/pressure: busy loops make cpu pressure; a login waits them out.
if [ ! -r /proc/pressure/cpu ]; then
	echo "# skipped: no /proc/pressure/cpu (a kernel without PSI)"
else
	gate p8 "interval=1s countdown=0 max_wait=60s pressure=cpu:50"
	rm -f "$TMP/stamps"
	burners=""
	for _ in $(seq $((3 * $(nproc)))); do
		sh -c 'while :; do :; done' &
		burners="$burners $!"
	done
	PIDS="$PIDS $burners"
	sleep 1
	bg_login g1 p8 g1
	sleep 4
	t_stop=$(now_ms)
	# shellcheck disable=SC2086 # a list of pids
	kill $burners
	# shellcheck disable=SC2086
	wait $burners 2> /dev/null
	bg_wait
	g_ms=$(($(stamp_ms g1) - t_stop))
	check "real PSI: held while the busy loops ran, in after they stopped (${g_ms} ms after)" \
		sh -c "[ $(rc_of g1) = 0 ] && [ $g_ms -ge 0 ] && grep -q 'held: .*pressure=cpu' '$TMP/g1.err'"
fi

finish
