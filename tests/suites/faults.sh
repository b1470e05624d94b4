#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Faults in a real Redis, with logins in flight: each ends in the failure policy, or recovers,
# with one clear log line and no password in any log.
set -u
. "$(dirname "$0")/../helpers/lib.sh"
# The per-host store's driver fills the stores of the full-store checks below: without it they
# would find "0 waiting" and fail as if the module had.
if [ ! -x "$TREE/build/model/lsdrive" ]; then
	echo "Bail out! no build/model/lsdrive, which fills the per-host stores here: run" \
		"make build/model/lsdrive first (make check-redis-faults does)"
	exit 1
fi

permit="auth required @P/pam_permit.so"
redis_err() { grep -c 'SYSLOG(3): redis ' "$TMP/$1.err"; }
# queued_n_of PREFIX N: N logins of PREFIX queued at least.
queued_n_of() { [ "$(cat "$TMP/$1"*.err 2> /dev/null | grep -c 'queued: ')" -ge "$2" ]; }
# gaps_ok INTERVAL_MS: the stamps, in order, an interval apart, give or take a late wake-up
# under load: each gap at least 3/4 of it (two logins let in at once stamp a few ms apart).
# Stamped by pam_exec, one stamp came 270 ms late on a loaded CI, another 670 ms (gaps 2668 and
# 1400 ms): build/pam_stamp.so now stamps in the login's own process.
gaps_ok() {
	sort -n "$TMP/stamps" | awk -v min="$(($1 * 3 / 4))" 'NR > 1 && ($1 - t) / 1e6 < min { bad = 1 }
		{ t = $1 } END { exit bad }'
}
# spaced INTERVAL_MS COMMAND...: COMMAND succeeds, and the stamps are an interval apart
# (gaps_ok); for check, which runs its command in this shell (a "check ... && gaps_ok" would
# assert nothing).
spaced() {
	local interval=$1
	shift
	"$@" && gaps_ok "$interval"
}
# gaps: the gaps between the stamps, in ms; stamp_order: whose they are, in order.
gaps() { sort -n "$TMP/stamps" | awk 'NR > 1 { printf "%d ", ($1 - t) / 1e6 } { t = $1 }'; }
stamp_order() { sort -n "$TMP/stamps" | cut -d' ' -f2 | tr '\n' ' '; }

# Killed before a login.
start_redis k || exit 1
service killed "auth required @M url=unix://$TMP/k.sock timeout=300ms state_dir=$TMP/st-k" "$permit"
stop_redis k
login k1 killed alice
check "killed: admitted on the local slot, one log line ($(grep -o 'redis .*' "$TMP/k1.err" | head -1))" \
	sh -c "[ $(rc_of k1) = 0 ] && [ $(redis_err k1) = 1 ] && [ -f '$TMP/st-k/slot.pam_flowslot' ]"

# Restarted mid-queue, without persistence: the script cache and the schedule are lost.
start_redis m || exit 1
service restart "auth required @M url=unix://$TMP/m.sock interval=1s countdown=0 state_dir=$TMP/st-m" \
	"$STAMP" "$permit"
rm -f "$TMP/stamps"
logins a restart 3 &
inflight=$!
# Restarted once two of them wait in the queue (the first goes in at once).
queued_n() { [ "$(cat "$TMP"/a0?.err 2> /dev/null | grep -c 'queued: ')" -ge "$1" ]; }
wait_for 20 queued_n 2
stop_redis m
start_redis m || exit 1
wait "$inflight"
check "restart: the logins in flight are all admitted" \
	sh -c "[ \$(cat '$TMP'/a0?.rc | tr -d '\n') = 000 ]"
rm -f "$TMP/stamps"
login b1 restart bob
login b2 restart carol
gap=$(sort -n "$TMP/stamps" | awk 'NR == 1 { a = $1 } NR == 2 { printf "%d", ($1 - a) / 1e6 }')
# b1 follows the last admission of the lost schedule, which its host heard of: in at once, or
# queued first in line for at most an interval.
b1_queue=$(grep -o 'queued: .*' "$TMP/b1.err")
check "restart: the next login gets in through EVAL, within an interval (${b1_queue:-not queued})" \
	sh -c "[ $(rc_of b1) = 0 ] && [ $(redis_err b1) = 0 ] && { [ -z '$b1_queue' ] ||
		echo '$b1_queue' | awk '{ for (i = 1; i <= NF; i++) { split(\$i, kv, \"=\"); v[kv[1]] = kv[2] } }
			END { exit !(v[\"position\"] == 1 && v[\"wait_ms\"] <= 1000) }'; }"
# b2 came after b1 went in: it waits for b1's slot and nothing else (position 1, at most an
# interval), or goes in at once if it came an interval later; its stamp is at least about an
# interval after b1's (a stamp may be late by a little, never early by much).
b2_queue=$(grep -o 'queued: .*' "$TMP/b2.err")
check "restart: the stagger resumes one interval later (${gap} ms; ${b2_queue:-b2 not queued})" \
	sh -c "[ $(rc_of b2) = 0 ] && [ ${gap:-0} -ge 800 ] && { [ -z '$b2_queue' ] ||
		echo '$b2_queue' | awk '{ for (i = 1; i <= NF; i++) { split(\$i, kv, \"=\"); v[kv[1]] = kv[2] } }
			END { exit !(v[\"position\"] == 1 && v[\"wait_ms\"] <= 1000) }'; }"

# A lost schedule is made again by those who hold it (issue 29.2; pam_flowslot(7), "A lost
# schedule"). Redis restarted without its data 0.3 s after an admission at interval=7s: the
# next login's host heard of the next slot, and it goes in an interval after the admission
# (it went in at once, 0.3 s after it).
start_redis ls || exit 1
service lost "auth required @M url=unix://$TMP/ls.sock interval=7s countdown=0 debug state_dir=$TMP/st-ls" \
	"$STAMP" "$permit"
rm -f "$TMP/stamps"
login l0 lost l0
sleep 0.3
stop_redis ls
start_redis ls || exit 1
login l1 lost l1
gap=$(awk '$2 == "l0" { a = $1 } $2 == "l1" { b = $1 } END { printf "%d", (b - a) / 1e6 }' "$TMP/stamps")
check "a restart without its data: the next login goes in an interval after the last admission (${gap} ms)" \
	sh -c "[ $(rc_of l1) = 0 ] && [ ${gap:-0} -ge 6500 ] && grep -q 'queued: ' '$TMP/l1.err'"
# The key lost (DEL, as an eviction) while e1 and e2 wait at 3 s behind e0: each renewal puts
# its place back at its arrival, the next slot where the host heard it was; a newcomer after
# both renewed goes in after them, each an interval apart.
service evict "auth required @M url=unix://$TMP/ls.sock key=fs-evict interval=3s countdown=0 debug state_dir=$TMP/st-ls" \
	"$STAMP" "$permit"
rm -f "$TMP/stamps"
login e0 evict e0
login e1 evict e1 &
w1=$!
wait_for 5 grep -q 'queued: ' "$TMP/e1.err"
login e2 evict e2 &
w2=$!
wait_for 5 grep -q 'queued: ' "$TMP/e2.err"
rcli ls del fs-evict > /dev/null
renewed() { [ "$(grep -c 'renewed: ' "$TMP/e$1.err")" -ge "$2" ]; }
n1=$(grep -c 'renewed: ' "$TMP/e1.err") n2=$(grep -c 'renewed: ' "$TMP/e2.err")
wait_for 10 renewed 1 $((n1 + 1)) && wait_for 10 renewed 2 $((n2 + 1))
login e3 evict e3
wait "$w1" "$w2"
order=$(stamp_order)
gaps=$(gaps)
check "the key lost: the waiters keep their order and spacing, the newcomer after them ($order; gaps $gaps ms)" \
	sh -c "[ '$order' = 'e0 e1 e2 e3 ' ] && echo '$gaps' | awk '{ for (i = 1; i <= NF; i++) if (\$i < 2500) exit 1 }' &&
		[ \$(cat '$TMP'/e?.rc | tr -d '\n') = 0000 ]"

# Restarted with its data (SHUTDOWN SAVE, the same dump, down 1.5 s) across one renewal of a
# waiter: the waiter keeps renewing, goes in through the schedule (never blind, so its slot is
# not given to another), and the next login goes in one interval after it.
start_redis sv --save 3600 1 || exit 1
service saved "auth required @M url=unix://$TMP/sv.sock interval=6s countdown=0 timeout=300ms state_dir=$TMP/st-sv" \
	"$STAMP" "$permit"
rm -f "$TMP/stamps"
login v0 saved v0 # takes the slot: the next one waits about 6 s
login v1 saved v1 &
waiter=$!
wait_for 5 grep -q 'queued: ' "$TMP/v1.err"
sleep 1
rcli sv shutdown save > /dev/null 2>&1
# Down until a renewal has failed (the first comes 2 s after the reservation), then back.
wait_for 5 grep -q 'cannot be renewed' "$TMP/v1.err"
start_redis sv --save 3600 1 || exit 1
wait "$waiter"
login v2 saved v2
gap=$(awk '$2 == "v1" { a = $1 } $2 == "v2" { b = $1 } END { printf "%d", (b - a) / 1e6 }' "$TMP/stamps")
check "restart with its data across a renewal: the waiter is admitted through the schedule ($(grep -c 'cannot be renewed' "$TMP/v1.err") failed renewal warning)" \
	sh -c "[ $(rc_of v1) = 0 ] && [ \$(grep -c 'cannot be renewed' '$TMP/v1.err') = 1 ] && ! grep -q -e blind -e 'going in at the last slot' '$TMP/v1.err'"
check "... and the next login goes in one interval after it (${gap} ms)" \
	sh -c "[ $(rc_of v2) = 0 ] && [ ${gap:-0} -ge 5500 ]"

# In an outage the host's own schedule keeps clear of the host's own waiters on Redis (issue
# 38, item 11). At interval=3s o0 goes in and o1, o2, o3 queue on Redis, 3, 6 and 9 s on; Redis
# is stopped, and they go in blind at those slots. o4, which comes then, falls back to the
# host's schedule: it queues an interval after the last of them, the host's own waiters' slots
# kept in state_dir/waiters. (Before, it went in at once, beside them.)
start_redis ob || exit 1
service outage "auth required @M url=unix://$TMP/ob.sock key=fs-outage interval=3s max_wait=30s timeout=300ms countdown=0 debug state_dir=$TMP/st-ob" \
	"$STAMP" "$permit"
rm -f "$TMP/stamps"
login o0 outage o0
owaiters=""
for u in o1 o2 o3; do
	login "$u" outage "$u" &
	owaiters="$owaiters $!"
	wait_for 5 grep -q 'queued: ' "$TMP/$u.err"
done
stop_redis ob
login o4 outage o4
# shellcheck disable=SC2086 # a list of pids
wait $owaiters
order=$(stamp_order)
gaps=$(gaps)
check "Redis gone while three wait on it: the login that falls back goes in after them, all an interval apart ($order; gaps $gaps ms; $(grep -o 'queued: .*via=[a-z]*' "$TMP/o4.err"))" \
	sh -c "[ '$order' = 'o0 o1 o2 o3 o4 ' ] && echo '$gaps' | awk '{ for (i = 1; i <= NF; i++) if (\$i < 2500) exit 1 }' &&
		[ \$(cat '$TMP'/o?.rc | tr -d '\n') = 00000 ] && grep -q 'fallback=local' '$TMP/o4.err' &&
		grep -q 'queued: .*via=local' '$TMP/o4.err'"

# The script cache flushed between logins.
rcli m script flush > /dev/null
login f1 restart dave
check "script flush: the login gets in without an error" \
	sh -c "[ $(rc_of f1) = 0 ] && [ $(redis_err f1) = 0 ]"

# An ACL user that may not run EVALSHA, and a wrong password: the policy, and a clear line.
start_redis acl || exit 1
rcli acl acl setuser gate on '>gatepw' '~*' '+@all' '-evalsha' > /dev/null
rcli acl acl setuser default off > /dev/null
printf 'gatepw\n' > "$TMP/gate.secret"
chmod 0600 "$TMP/gate.secret"
service nopriv "auth required @M url=unix://$TMP/acl.sock?user=gate password_file=$TMP/gate.secret fallback=closed" \
	"$permit"
login p1 nopriv alice
check "ACL user without EVALSHA: fallback=closed refuses" [ "$(rc_of p1)" = 1 ]
check "... with one clear line ($(grep -o 'redis .*' "$TMP/p1.err" | head -1))" \
	sh -c "[ $(redis_err p1) = 1 ] && grep -q 'NOPERM' '$TMP/p1.err'"
printf 'not-the-password\n' > "$TMP/wrong.secret"
chmod 0600 "$TMP/wrong.secret"
service wrongpw "auth required @M url=unix://$TMP/acl.sock?user=gate password_file=$TMP/wrong.secret fallback=closed" \
	"$permit"
login w1 wrongpw alice
check "wrong password: refused, one line naming AUTH ($(grep -o 'redis .*' "$TMP/w1.err" | head -1))" \
	sh -c "[ $(rc_of w1) = 1 ] && [ $(redis_err w1) = 1 ] && grep -q 'AUTH' '$TMP/w1.err'"

# Memory full, noeviction: the script is refused before it runs.
start_redis full --maxmemory 1mb --maxmemory-policy noeviction || exit 1
filler=$(head -c 10000 /dev/zero | tr '\0' x)
for i in $(seq 400); do
	rcli full set "filler$i" "$filler" | grep -q OOM && break
done
service oom "auth required @M url=unix://$TMP/full.sock state_dir=$TMP/st-oom" "$permit"
login o1 oom alice
check "maxmemory reached: admitted on the local slot ($(grep -o 'redis .*' "$TMP/o1.err" | head -1))" \
	sh -c "[ $(rc_of o1) = 0 ] && [ $(redis_err o1) = 1 ] && grep -q 'OOM' '$TMP/o1.err' && [ -f '$TMP/st-oom/slot.pam_flowslot' ]"

# The local fallback directory: a symlink, someone else's, or full. Never followed, never
# written; the login is admitted with a warning.
mkdir -p "$TMP/elsewhere"
chmod 0700 "$TMP/elsewhere"
ln -s "$TMP/elsewhere" "$TMP/st-link"
mkdir -m 0700 "$TMP/st-nobody"
chown 65534 "$TMP/st-nobody"
for kind in link nobody; do
	service "dir$kind" "auth required @M url=local state_dir=$TMP/st-$kind" "$permit"
	login "d$kind" "dir$kind" alice
	check "state_dir $kind: admitted with a warning, nothing written" \
		sh -c "[ $(rc_of d$kind) = 0 ] && grep -q 'local slot unusable' '$TMP/d$kind.err' && [ -z \"\$(ls -A '$TMP/elsewhere')\$(ls -A '$TMP/st-nobody')\" ]"
done
# ... and with fallback=closed, refused, the user told in the module's words.
service dirclosed "auth required @M url=local state_dir=$TMP/st-nobody fallback=closed" "$permit"
login dclosed dirclosed alice
check "state_dir nobody, fallback=closed: refused as unavailable, the user told so" \
	sh -c "[ $(rc_of dclosed) != 0 ] && grep -qx 'The login queue is unavailable. Please try again later.' '$TMP/dclosed.err' && [ -z \"\$(ls -A '$TMP/st-nobody')\" ]"
mkdir "$TMP/tiny"
if mount -t tmpfs -o size=16k tmpfs "$TMP/tiny" 2> /dev/null; then
	mkdir -m 0700 "$TMP/tiny/state"
	dd if=/dev/zero of="$TMP/tiny/fill" bs=4k count=64 2> /dev/null
	service dirfull "auth required @M url=local state_dir=$TMP/tiny/state" "$permit"
	login dfull dirfull alice
	check "state_dir on a full file system: admitted with a warning ($(grep -o 'local slot: .*' "$TMP/dfull.err" | head -1))" \
		sh -c "[ $(rc_of dfull) = 0 ] && grep -q 'local slot unusable' '$TMP/dfull.err'"
	umount "$TMP/tiny"
else
	not_ok "cannot mount a small tmpfs (run as root): the full state_dir case is untested"
fi

# The per-host file's lock held by a stopped process (a user's su stopped while it held it,
# issue 29): it costs the others its detection time, 2 s (LSLOT_STUCK_US), never their wait.
# The first login that finds it so names the holder and takes the file over (its schedule goes
# on in a new file): six logins at once at interval=2s are admitted an interval apart, none
# without a wait, and fallback=closed refuses no one for it. (Before, each was let in at once:
# "local slot unusable: admitting without a wait".)
service stuck "auth required @M url=local interval=2s countdown=0 max_wait=60s state_dir=$TMP/st-lock" \
	"$STAMP" "$permit"
service stuckclosed \
	"auth required @M url=local interval=2s countdown=0 fallback=closed max_wait=60s state_dir=$TMP/st-lock" \
	"$STAMP" "$permit"
rm -f "$TMP/stamps"
login sk0 stuck alice # makes the file, and is the first admission
python3 "$TREE/tests/helpers/lockhold.py" stop "$TMP/st-lock/slot.pam_flowslot" > "$TMP/stop.out" &
holder=$!
PIDS="$PIDS $holder"
wait_for 5 grep -q holding "$TMP/stop.out"
t0=$(now_ms)
logins sk stuck 6
login sk7 stuckclosed carol
t1=$(now_ms)
rcs=$(cat "$TMP"/sk0[1-7].rc "$TMP/sk7.rc" | tr -d '\n')
check "a stopped lock holder: 6 logins at once and one more, all admitted ($rcs) an interval apart (gaps $(gaps)ms), in $((t1 - t0)) ms" \
	spaced 2000 sh -c "[ '$rcs' = 0000000 ] && [ \$(wc -l < '$TMP/stamps') = 8 ] && [ $((t1 - t0)) -ge 13500 ] &&
		[ $((t1 - t0)) -lt 40000 ]"
check "... none admitted without a wait, nor refused; the holder named ($(cat "$TMP"/sk0?.err | grep -o 'local slot: .*' | head -1))" \
	sh -c "! cat '$TMP'/sk0?.err '$TMP/sk7.err' | grep -q -e unusable -e 'without a wait' -e unavailable &&
		cat '$TMP'/sk0?.err | grep -q 'SYSLOG(3).*is stuck: pid $holder has held its lock.*goes on without it'"
kill -CONT "$holder"
kill "$holder"
wait "$holder" 2> /dev/null
login sk8 stuck dave
check "... and once the holder is gone, the schedule goes on, nothing logged" \
	sh -c "[ $(rc_of sk8) = 0 ] && ! grep -q 'local slot' '$TMP/sk8.err'"

# A holder that resumes after its file was taken over writes nothing to it, and makes its call
# again on the file the schedule went on in. Its login (heidi) is stopped by strace with the
# file's lock held, right after its read of the file; three logins come behind it, and it is let
# go on (SIGCONT) at a moment of the takeover: once the three hold their places ("placed": each
# queued, or in; heidi queues behind them), or as soon as "stuck" is logged, the takeover under
# way (any order). All four go in an interval apart either way, and heidi's log says nothing of
# the file. (A 3 s delay held heidi before: when the three started late, she went in before
# any takeover, her stamp a second late under strace -f, and the check failed in CI. Let go
# once the file was renamed, she once went in third: the two waiting on the old file's lock
# had not yet seen it taken over.)
# resume_holder WHEN STATE_DIR: the run.
resume_holder() {
	local when=$1 sd=$2 ino pid nolsan="" lg slow

	service resume "auth required @M url=local interval=2s countdown=0 max_wait=60s state_dir=$sd" \
		"$STAMP" "$permit"
	login skr resume ivan # makes the file
	rm -f "$TMP/stamps" "$TMP"/sr0?.err
	ino=$(stat -c %i "$sd/slot.pam_flowslot")
	# Under SANITIZE=1 LeakSanitizer cannot run under ptrace: it stops the login (exit 98,
	# "LeakSanitizer does not work under ptrace"). This login is checked by ASan without it.
	[ -z "$SAN" ] || nolsan="env ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0"
	VG="$nolsan strace -qq -o /dev/null -P $sd/slot.pam_flowslot -e trace=pread64
		-e inject=pread64:signal=SIGSTOP:when=1" login skh resume heidi &
	slow=$!
	wait_for 10 grep -q "FLOCK .*:$ino " /proc/locks
	pid=$(awk -v ino="$ino" '$2 == "FLOCK" && $6 ~ ":" ino "$" { print $5; exit }' /proc/locks)
	PIDS="$PIDS $pid"
	wait_for 10 sh -c "[ \"\$(cut -d' ' -f3 /proc/$pid/stat)\" = t ]"
	logins sr resume 3 &
	lg=$!
	if [ "$when" = placed ]; then
		wait_for 30 placed 3
	else
		wait_for 20 sh -c "cat '$TMP'/sr0?.err 2> /dev/null | grep -q 'is stuck'"
	fi
	kill -CONT "$pid"
	wait "$lg" "$slow"
	PIDS=${PIDS% "$pid"}
}
# placed N: N of the three logins behind the holder hold their places: queued, or gone in.
placed() {
	local i n=0
	for i in 1 2 3; do
		if grep -qs 'queued: ' "$TMP/sr0$i.err" || grep -qs " sr0$i\$" "$TMP/stamps"; then
			n=$((n + 1))
		fi
	done
	[ "$n" -ge "$1" ]
}
# resumed_ok [LAST]: all four admitted (LAST the last of them), an interval apart, the takeover
# logged, heidi's log quiet.
resumed_ok() {
	[ -z "${1:-}" ] || [ "$(sort -n "$TMP/stamps" | tail -1 | cut -d' ' -f2)" = "$1" ] || return 1
	[ "$(cat "$TMP/skh.rc" "$TMP"/sr0?.rc | tr -d '\n')" = 0000 ] &&
		[ "$(wc -l < "$TMP/stamps")" = 4 ] && ! grep -q 'local slot' "$TMP/skh.err" &&
		cat "$TMP"/sr0?.err | grep -q 'is stuck' && gaps_ok 2000
}
if command -v strace > /dev/null; then
	resume_holder placed "$TMP/st-res"
	check "a holder resumed after the takeover: in last ($(stamp_order)), all an interval apart (gaps $(gaps)ms), nothing of the file in its log" \
		resumed_ok heidi
	resume_holder stuck "$TMP/st-res2"
	check "a holder resumed as the takeover begins: all in an interval apart ($(stamp_order); gaps $(gaps)ms), nothing of the file in its log" \
		resumed_ok
else
	not_ok "strace is missing: the holder resumed after a takeover is untested"
fi

# A login in another PID namespace (a unit with private PIDs, a container sharing state_dir;
# issue 29) sees none of the host's pids: it must not take a live waiter of the host for a dead
# one and go first. A pid is judged only in the namespace that recorded it: the login in a new
# PID namespace (unshare --pid) queues behind the host's waiter and goes in an interval after
# it. (Before, it dropped the waiter as gone, took its slot, and went first.)
if [ "$(id -u)" = 0 ] && unshare --pid --fork --mount-proc true 2> /dev/null; then
	service pidns "auth required @M url=local interval=3s countdown=0 max_wait=60s state_dir=$TMP/st-ns" \
		"$STAMP" "$permit"
	rm -f "$TMP/stamps"
	login ns0 pidns alice # goes in; the next slot is 3 s off
	login ns1 pidns bob &
	waiter=$!
	wait_for 5 grep -q 'queued: ' "$TMP/ns1.err"
	host_tmp=("${PRIVATE_TMP[@]}")
	PRIVATE_TMP=(unshare --pid --fork --mount-proc "${host_tmp[@]}")
	login ns2 pidns carol
	PRIVATE_TMP=("${host_tmp[@]}")
	wait "$waiter"
	order=$(stamp_order)
	check "a login in another PID namespace: queued behind the host's waiter ($(grep -o 'queued: .*' "$TMP/ns2.err")), in after it ($order), an interval apart (gaps $(gaps)ms)" \
		spaced 3000 sh -c "[ $(rc_of ns1) = 0 ] && [ $(rc_of ns2) = 0 ] && [ '$order' = 'alice bob carol ' ] &&
			grep -q 'queued: .*position=2' '$TMP/ns2.err'"
else
	not_ok "cannot make a PID namespace (run as root): the login in another one is untested"
fi

# A lock that goes from holder to holder the whole time (tests/helpers/lockhold.py ring: never free) is
# no stuck one: the login waits it out for its max_wait, then is refused, never let in, and
# told no made-up time to come back in.
service busy "auth required @M url=local max_wait=3s state_dir=$TMP/st-busy" "$permit"
login bz0 busy erin # makes the file
python3 "$TREE/tests/helpers/lockhold.py" ring "$TMP/st-busy/slot.pam_flowslot" 8 > "$TMP/ring.out" &
ring=$!
PIDS="$PIDS $ring"
wait_for 5 grep -q holding "$TMP/ring.out"
t0=$(now_ms)
login bz1 busy erin
t1=$(now_ms)
wait "$ring"
check "a lock busy past max_wait (3 s): refused after $((t1 - t0)) ms, 'try again later' ($(grep -o 'Too many.*' "$TMP/bz1.out" "$TMP/bz1.err" | head -1))" \
	sh -c "[ $(rc_of bz1) != 0 ] && [ $((t1 - t0)) -ge 3000 ] &&
		grep -q 'Too many logins at the moment. Please try again later.' '$TMP/bz1.out' '$TMP/bz1.err' &&
		grep -q 'cannot lock .* busy' '$TMP/bz1.err' && ! grep -q -e 'is stuck' -e unusable '$TMP/bz1.err'"

# A Redis stall of about two timeouts (SIGSTOP 1 s, timeout=500ms; issue 29): the reservation
# that times out is asked again for the same place within 4 x timeout, and the server, resumed,
# answers it on Redis. The login goes in after the waiter ahead of it, an interval later, and
# follows no fallback. (Before, it queued on the host's empty schedule and went in first, while
# the place Redis made for it when it resumed stood unrenewed for its lease.)
start_redis stall || exit 1
service stall "auth required @M url=unix://$TMP/stall.sock interval=3s countdown=0 timeout=500ms state_dir=$TMP/st-stall" \
	"$STAMP" "$permit"
rm -f "$TMP/stamps"
login sl0 stall alice # goes in; the next slot is 3 s off
login sl1 stall bob &
waiter=$!
wait_for 5 grep -q 'queued: ' "$TMP/sl1.err"
kill -STOP "$(cat "$TMP/stall.pid")"
login sl2 stall carol &
late=$!
# Resumed once carol's first try has timed out (its one LOG_ERR), and half a second later: a
# login slow to start (sanitized, a loaded machine) sent its reservation after a plain 1 s
# stall was over, and was answered at once.
wait_for 10 grep -q 'SYSLOG(3)' "$TMP/sl2.err"
sleep 0.5
kill -CONT "$(cat "$TMP/stall.pid")"
wait "$waiter" "$late"
order=$(stamp_order)
check "a Redis stall of two timeouts: the reservation asked again is answered on Redis ($(grep -o 'SYSLOG(5).*asked again.*' "$TMP/sl2.err" | cut -d' ' -f2-)), in after the waiter ($order), an interval apart (gaps $(gaps)ms)" \
	spaced 3000 sh -c "[ $(rc_of sl1) = 0 ] && [ $(rc_of sl2) = 0 ] && [ '$order' = 'alice bob carol ' ] &&
		grep -q 'answered when asked again with the same place' '$TMP/sl2.err' &&
		grep -q 'queued: .*via=redis' '$TMP/sl2.err' && ! grep -q 'fallback=' '$TMP/sl2.err' &&
		[ \$(grep -c 'SYSLOG(3)' '$TMP/sl2.err') = 1 ]"
stop_redis stall

# A Redis stall of about two timeouts while a waiter renews (SIGSTOP 1.2 s, timeout=500ms;
# issue 38): the renewal that times out is asked again for the same place, within 4 x timeout
# and never past its slot, and the server, resumed, answers it. The waiter keeps its order, an
# interval after the one ahead, and the log names whose renewal it was. (Before, one timeout
# failed the renewal, said as "script: timed out" and "the place cannot be renewed", naming
# nobody; the waiter tried again 2 s later, its lease running out meanwhile.)
start_redis rstall || exit 1
service rstall "auth required @M url=unix://$TMP/rstall.sock interval=3s countdown=0 timeout=500ms state_dir=$TMP/st-rstall" \
	"$STAMP" "$permit"
rm -f "$TMP/stamps"
login rs0 rstall alice # goes in; the next slots are 3 and 6 s off
login rs1 rstall bob &
first=$!
wait_for 5 grep -q 'queued: ' "$TMP/rs1.err"
login rs2 rstall carol &
second=$!
wait_for 5 grep -q 'queued: ' "$TMP/rs2.err"
# carol renews 2 s after her reservation: the server stopped from 1.5 s to 2.7 s, her first try
# times out at 2.5 s, and the one asked again is answered as the server resumes.
sleep 1.5
kill -STOP "$(cat "$TMP/rstall.pid")"
sleep 1.2
kill -CONT "$(cat "$TMP/rstall.pid")"
wait "$first" "$second"
order=$(stamp_order)
check "a Redis stall of two timeouts as a waiter renews: its renewal asked again is answered ($(grep -o 'SYSLOG(5).*renewal that timed out.*' "$TMP/rs2.err" | cut -d' ' -f2-)), in after the one ahead ($order), an interval apart (gaps $(gaps)ms)" \
	spaced 3000 sh -c "[ $(rc_of rs1) = 0 ] && [ $(rc_of rs2) = 0 ] && [ '$order' = 'alice bob carol ' ] &&
		grep -q 'renewal that timed out was answered when asked again (.*): service=rstall user=carol rhost=' '$TMP/rs2.err' &&
		! grep -q -e 'cannot be renewed' -e blind -e 'fallback=' '$TMP/rs2.err'"
stop_redis rstall

# A fallback after a reservation asked again counts max_wait from the login's arrival at the
# gate, not from the fallback: Redis stopped for good (timeout=300ms, so asked for 1.2 s), the
# host's schedule's next slot 4 s after its last admission, max_wait=3s. At the fallback that
# slot is 2.8 s off: within max_wait, past what is left of it (1.8 s), so refused at once, as
# a slot past max_wait is. (Before, it queued, held the user until its max_wait ran out, 3 s,
# and was refused then.)
start_redis fbr || exit 1
service fbl0 "auth required @M url=local interval=4s countdown=0 state_dir=$TMP/st-fbl" "$permit"
service fbl "auth required @M url=unix://$TMP/fbr.sock interval=4s max_wait=3s timeout=300ms countdown=0 state_dir=$TMP/st-fbl" \
	"$permit"
kill -STOP "$(cat "$TMP/fbr.pid")"
login fl0 fbl0 alice # the host's schedule: its next slot 4 s off
t0=$(now_ms)
login fl1 fbl bob
took=$(($(now_ms) - t0))
stop_redis fbr
check "a fallback after asking again counts max_wait from the gate: refused after $took ms ($(grep -o 'refused: .*' "$TMP/fl1.err"))" \
	sh -c "[ $(rc_of fl0) = 0 ] && [ $(rc_of fl1) != 0 ] && grep -q 'fallback=local' '$TMP/fl1.err' &&
		grep -q 'refused: .*via=local' '$TMP/fl1.err' && [ $took -lt 3000 ]"

# An outage with logins waiting (issue 28: an 8 s stop with five waiters wrote 24 LOG_ERR lines):
# each login logs it once as it starts (its first failed call's cause) and once as Redis answers
# again, whatever the calls that fail between; the counters count every failed call.
start_redis ou || exit 1
service outage "auth required @M url=unix://$TMP/ou.sock interval=3s countdown=0 timeout=300ms state_dir=$TMP/st-ou" \
	"$permit"
logins ow outage 6 &
inflight=$!
wait_for 10 queued_n_of ow 5
sleep 0.5
stop_redis ou
sleep 8
start_redis ou || exit 1
wait "$inflight"
errs_of() { cat "$@" | grep -c 'SYSLOG(3)'; }
most=0
for f in "$TMP"/ow0?.err; do
	n=$(grep -c 'SYSLOG(3)' "$f")
	[ "$n" -gt "$most" ] && most=$n
done
all=$(errs_of "$TMP"/ow0?.err)
again=$(cat "$TMP"/ow0?.err | grep -c 'SYSLOG(5).*queue: the schedule answers again, after ')
failed=$("$TREE/flowslotctl" state_dir="$TMP/st-ou" metrics 2> /dev/null |
	sed -n 's/^flowslot_redis_errors_total{key="pam_flowslot"} //p')
check "8 s stop, five waiters: every login admitted, at most one LOG_ERR line each ($most), $all in all" \
	sh -c "[ \$(cat '$TMP'/ow0?.rc | tr -d '\n') = 000000 ] && [ $most -le 1 ] && [ $all -ge 1 ] && [ $all -le 5 ]"
check "... 'answers again' said once by each login that Redis answered again ($again)" \
	sh -c "[ $again -ge 1 ] && ! grep -c 'answers again' '$TMP'/ow0?.err | grep -qv ':[01]\$'"
check "... and the counters have every failed call (flowslot_redis_errors_total ${failed:-none}, more than the $all lines)" \
	sh -c "[ '${failed:-0}' -gt $all ]"

# Across logins on one host (one state_dir), a cause is logged at most once a second: logins
# that meet the same dead Redis within a second log its line once, the next line logged after
# that says how many were not, and the counters count them all.
service gone "auth required @M url=unix://$TMP/gone.sock interval=1ms timeout=300ms state_dir=$TMP/st-gone" "$permit"
t0=$(now_ms)
for i in 1 2 3 4 5 6 7 8; do
	login "g$i" gone "g$i"
done
t1=$(now_ms)
sleep 1.2
login g9 gone g9
said=$(cat "$TMP"/g?.err | grep -c 'SYSLOG(3): redis unix:.*gone.sock: cannot connect')
held=$(cat "$TMP"/g?.err | sed -n 's/.*SYSLOG(3): redis unix:.*(and \([0-9]*\) more since the last such line, not logged).*/\1/p' |
	awk '{ n += $1 } END { print n + 0 }')
bound=$(( (t1 - t0) / 1000 + 2 ))
failed=$("$TREE/flowslotctl" state_dir="$TMP/st-gone" metrics 2> /dev/null |
	sed -n 's/^flowslot_redis_errors_total{key="pam_flowslot"} //p')
check "9 logins against a dead Redis ($((t1 - t0)) ms for 8, then one 1.2 s later): $said lines, at most one a second (<= $bound), each login admitted" \
	sh -c "[ \$(cat '$TMP'/g?.rc | tr -d '\n') = 000000000 ] && [ $said -ge 2 ] && [ $said -le $bound ] &&
		grep -q 'SYSLOG(3): redis unix:.*gone.sock: cannot connect' '$TMP/g9.err'"
check "... the lines logged and those they say were not add up to the 9 failures ($said + $held), as the counters have it (${failed:-none})" \
	sh -c "[ $((said + held)) = 9 ] && [ '${failed:-0}' = 9 ]"

# The per-host schedule against its own login's process (issue 38; pam_flowslot(7), "What a
# local user can do"). fill_store DIR KEY N HOLDER INTERVAL_US [DEAD [GHOSTS]]: a schedule
# whose head src/slot.lua made (build/model/lsdrive: one admission now, at that interval), then
# N places that arrived now, each with a lease of an hour, held by the live process HOLDER, the
# first DEAD of them by a process gone; and GHOSTS ghosts whose time is over (the script
# forgets them): the file DIR/slot.KEY.
fill_store() {
	mkdir -m 0700 "$1"
	python3 - "$TREE/build/model/lsdrive" "$1/slot.$2" "$2" "$3" "$4" "$5" "${6:-0}" "${7:-0}" << 'PY'
import os, subprocess, sys, time
drive, path, key, n, holder, interval, dead, ghosts = sys.argv[1:9]
n, dead, ghosts = int(n), int(dead), int(ghosts)
gone = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True).stdout.strip()
now = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
call = "eval\t%d\t%s\treserve\t%s\t1\t3600000000\t0\tp0\tw0\t-\t0\t5000000\t2000000\t0\t0\n" % (now, key, interval)
last = subprocess.run([drive], input=call, capture_output=True, text=True,
                      check=True).stdout.splitlines()[-1].split(" ")
members = [(float(last[i]), last[i + 1]) for i in range(1, len(last), 2)]
pids = {}
for i in range(1, n + 1):
    for m in ((float(now), "w:p%05d:w%05d:-" % (i, i)), (1e16 + now + 3600e6, "l:p%05d:w%05d:-" % (i, i))):
        members.append(m)
        pids[m[1]] = gone if i <= dead else holder
for i in range(1, ghosts + 1):
    members.append((2e16 + now - 1e6, "g:%016x:%d:%d:-:0" % (i, now - 30000000, now - 1000000)))
members.sort(key=lambda m: (m[0], m[1].encode()))
boot = open("/proc/sys/kernel/random/boot_id").read().strip()
ns = os.stat("/proc/self/ns/pid").st_ino
with open(path, "w") as f:
    f.write("flowslot-store 1 %d %s\n" % (now + 3600e6 + 60e6, boot))
    for score, name in members:
        f.write("%.17g %s %s %d\n" % (score, name, pids.get(name, holder), ns))
os.chmod(path, 0o600)
PY
}
# waiting_in DIR KEY: how many logins flowslotctl counts on that schedule.
waiting_in() {
	"$TREE/flowslotctl" url=local state_dir="$1" key="$2" status 2> /dev/null |
		sed -n 's/^waiting: *//p'
}

# A user who limits their own login's memory (ulimit -v before su; prlimit --as) from where it
# barely loads to where it decides at ease, 1,000 places ahead of it, under fallback=open: each such login is refused
# (the queue is too long, or its own limits stopped it, said so), never let in, and the queue
# holds all of its places after. (Before, out of memory while reading the file or running the
# script was taken for a schedule that cannot be used: the login was let in, or the queue wiped.)
# Not under SANITIZE=1: ASan cannot run within a small address space.
if [ -z "$SAN" ]; then
	sleep 3600 &
	holder=$!
	PIDS="$PIDS $holder"
	fill_store "$TMP/st-mem" mem 1000 "$holder" 1000000
	service mem "auth required @M url=local key=mem interval=1s max_wait=2s countdown=0 fallback=open state_dir=$TMP/st-mem" \
		"$permit"
	before=$(waiting_in "$TMP/st-mem" mem)
	for kb in $(seq 4200 150 16200); do
		VG="prlimit --as=$((kb * 1024))" login "mem$kb" mem "m$kb"
	done
	after=$(waiting_in "$TMP/st-mem" mem)
	let_in=$(for kb in $(seq 4200 150 16200); do [ "$(rc_of "mem$kb")" = 0 ] && echo "$kb"; done | wc -l)
	own=$(cat "$TMP"/mem*.err | grep -c "this login's own limits: it is refused")
	check "own memory limits, 1,000 places ahead: none of 81 logins let in ($let_in), $own refused for their own limits, the queue whole ($before, then $after waiting)" \
		sh -c "[ $let_in = 0 ] && [ '$before' = 1000 ] && [ '$after' = 1000 ] &&
			! cat '$TMP'/mem*.err | grep -q -e 'starts afresh' -e 'without a wait'"
	kill "$holder"
fi

# A writer killed at each step of its write (strace kills the login with SIGKILL in place of
# its Nth write to the file: before its new text, before the header that names it, before the
# old text is let go): the file is the schedule before the write or after it, never a mix and
# never empty. The login's write is a shorter text than the file's (three places ahead, 50
# ghosts whose time is over, which it forgets). (Before, a login killed between its write in
# place and the truncation left the new text and the old tail: the queue was wiped.)
if command -v strace > /dev/null; then
	sleep 3600 &
	holder=$!
	PIDS="$PIDS $holder"
	torn=""
	# strace counts each call on its own: the steps are the first pwrite64 (the new text), the
	# second (the header that names it; an earlier version's truncation), then the truncation
	# or the hole punched where the old text was.
	kill_at="error=EIO:signal=KILL:when"
	steps=("-e inject=pwrite64:$kill_at=1"
		"-e inject=pwrite64:$kill_at=2 -e inject=ftruncate,fallocate:$kill_at=1"
		"-e inject=ftruncate,fallocate:$kill_at=1")
	for k in 1 2 3; do
		fill_store "$TMP/st-kill$k" kill 3 "$holder" 1000000 0 50
		service "kill$k" "auth required @M url=local key=kill interval=1s max_wait=60s countdown=0 state_dir=$TMP/st-kill$k" \
			"$permit"
		nolsan=""
		[ -z "$SAN" ] || nolsan="env ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0"
		VG="$nolsan strace -f -qq -o /dev/null -P $TMP/st-kill$k/slot.kill
			-e trace=pwrite64,ftruncate,fallocate ${steps[k - 1]}" login "kw$k" "kill$k" "k$k"
		"$TREE/flowslotctl" url=local state_dir="$TMP/st-kill$k" key=kill status > "$TMP/kill$k.st" 2>&1
		torn="$torn $k:$(sed -n 's/^waiting: *//p' "$TMP/kill$k.st")"
	done
	kill "$holder"
	check "a writer killed at each step of its write: the schedule whole each time (step:waiting$torn)" \
		sh -c "[ '$torn' = ' 1:3 2:3 3:3' ] && ! grep -q 'not a schedule' '$TMP'/kill?.st &&
			[ \$(cat '$TMP'/kw?.rc | tr -d '\n') != 000 ]"
else
	not_ok "strace is missing: a writer killed at each step of its write is untested"
fi

# A store that fails its own invariants is mended, not trusted: a place with no lease (a file
# edited by hand, or damaged) and a member that stands twice. The place goes once it is first,
# the member is kept once (at its higher score), and the next login goes in within an interval.
# (Before, the place without a lease stood first for ever: every login behind it was refused at
# its max_wait.)
fill_store "$TMP/st-mend" mend 0 0 1000000
python3 - "$TMP/st-mend/slot.mend" << 'PY'
import sys, time
path = sys.argv[1]
now = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
lines = open(path).read().splitlines()
head, members = lines[0], [l.split(" ") for l in lines[1:]]
members.append(["%d" % (now - 1000000), "w:p00000:w00000:-"] + members[-1][2:])
twice = next(m for m in members if m[1] == "t")
members.append([repr(float(twice[0]) + 1), "t"] + twice[2:])
members.sort(key=lambda m: (float(m[0]), m[1].encode()))
open(path, "w").write(head + "\n" + "".join(" ".join(m) + "\n" for m in members))
PY
service mend "auth required @M url=local key=mend interval=1s max_wait=10s countdown=0 state_dir=$TMP/st-mend" \
	"$permit"
t0=$(now_ms)
login md1 mend mia
t1=$(now_ms)
check "a place without its lease and a member twice: mended, the next login in within an interval ($((t1 - t0)) ms), the fix logged ($(grep -o 'held a member.*' "$TMP/md1.err" | head -1))" \
	sh -c "[ $(rc_of md1) = 0 ] && [ $((t1 - t0)) -lt 3000 ] &&
		grep -q 'held a member that stood twice.*mended' '$TMP/md1.err'"

# A full store refuses: with as many places as one file holds (7,679, two members each), the
# next login is refused as a full queue is, told to try again later, and every waiter keeps its
# place. (Before, the script failed, the schedule started afresh, and the login went in at once.)
sleep 3600 &
holder=$!
PIDS="$PIDS $holder"
fill_store "$TMP/st-full" full 7679 "$holder" 100000
service full "auth required @M url=local key=full interval=100ms max_wait=60m countdown=0 state_dir=$TMP/st-full" \
	"$permit"
before=$(waiting_in "$TMP/st-full" full)
login fu1 full zed
after=$(waiting_in "$TMP/st-full" full)
check "a full store ($before waiting): the next login refused, 'try again later', the queue whole ($after waiting)" \
	sh -c "[ $(rc_of fu1) != 0 ] && grep -q 'Too many logins at the moment. Please try again later' '$TMP/fu1.out' '$TMP/fu1.err' &&
		[ '$before' = '$after' ] && [ '${before:-0}' -gt 7000 ] && grep -q 'is full' '$TMP/fu1.err'"
kill "$holder"

# No password reaches any log, at any level: a login with debug and the trace level on.
service trace "auth required @M url=redis://:tr4cepw@127.0.0.1:1 debug timeout=100ms state_dir=$TMP/st-t" \
	"$permit"
LD_PRELOAD="$PRELOAD" PAM_WRAPPER=1 PAM_WRAPPER_SERVICE_DIR="$TMP/svc" PAM_WRAPPER_DEBUGLEVEL=3 \
	pamtester -v trace alice authenticate > "$TMP/t1.out" 2> "$TMP/t1.err"
check "debug traces are on in this run" grep -q 'SYSLOG(7)' "$TMP/t1.err"
leaks=$(grep -l -e tr4cepw -e gatepw -e not-the-password "$TMP"/*.err "$TMP"/*.out 2> /dev/null | wc -l)
check "no password in any log of this suite ($leaks files)" [ "$leaks" = 0 ]

finish
