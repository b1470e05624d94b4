#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# flowslotctl against a private Redis and the per-host file: status while logins wait (and
# --json), reset with waiters, check (good, bad options, Redis down), wait in tmux with the
# screen read back, --service through a pam.d directory, and the module's FLOWSLOT_ADMITTED.
set -u
. "$(dirname "$0")/../helpers/lib.sh"

CTL=$TREE/flowslotctl
TMUX_SOCK="$TMP/tmux.sock"
tmux_() { tmux -S "$TMUX_SOCK" "$@"; }
trap 'tmux_ kill-server 2> /dev/null; cleanup' EXIT

start_redis r || exit 1
R="url=unix://$TMP/r.sock"
# No configuration file of the host's: every run names the suite's, which holds only the suite's
# state_dir (below the --service line's and the command line's), not the host's /run/pam_flowslot.
echo "state_dir=$TMP/state" > "$TMP/ctl.conf"
C="conf=$TMP/ctl.conf"

queued() { [ "$(grep -l 'queued: ' "$TMP"/"$1"*.err 2> /dev/null | wc -l)" -ge "$2" ]; }
json_field() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval("d" + sys.argv[1]))' "$1"; }

# syslog_of OUT COMMAND...: COMMAND (its exit status returned) with /dev/log a datagram socket
# of the suite's, in a private mount namespace on a /dev of its own (the host's is left alone:
# it may have no /dev/log at all); what it logs goes into OUT raw, each datagram ended by a
# newline, so that a forged line shows as a line of its own.
SYSLOG_PY='
import socket, subprocess, sys
sock, out, stage, cmd = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sock)
rc = subprocess.call(["unshare", "--mount", "--propagation", "private", "sh", "-c", """
	stage=$1 sock=$2
	shift 2
	mount -t tmpfs tmpfs "$stage" || exit 126
	for d in null zero urandom; do
		: > "$stage/$d" && mount --bind "/dev/$d" "$stage/$d" || exit 126
	done
	: > "$stage/log" && mount --bind "$sock" "$stage/log" && mount --move "$stage" /dev || exit 126
	exec "$@" """, "sh", stage, sock] + cmd)
s.setblocking(False)
with open(out, "wb") as f:
    while True:
        try:
            f.write(s.recv(65536) + b"\n")
        except BlockingIOError:
            break
sys.exit(rc)
'
syslog_of() {
	local out=$1
	shift
	mkdir -p "$TMP/ns-dev"
	rm -f "$TMP/log.sock"
	/usr/bin/python3 -c "$SYSLOG_PY" "$TMP/log.sock" "$out" "$TMP/ns-dev" "$@"
}

# 1. status while logins wait: four logins 3 s apart, the last three wait.
service c1 "auth requisite @M $R key=c1 interval=3s countdown=0 debug" "auth required @P/pam_permit.so"
for u in s1 s2 s3 s4; do
	bg_login "$u" c1 "$u"
	sleep 0.1
done
wait_for 5 queued s 3
"$CTL" "$C" "$R" key=c1 interval=3s status > "$TMP/status.out" 2> "$TMP/status.err"
rc=$?
in_redis=$(waiting r c1)
check "status while three logins wait: exit 0, 'waiting: 3' (Redis holds $in_redis)" \
	sh -c "[ $rc = 0 ] && grep -q '^waiting: *3\$' '$TMP/status.out' && [ '$in_redis' = 3 ]"
check "... names the schedule and the Redis node" \
	sh -c "grep -q '^schedule: *c1\$' '$TMP/status.out' && grep -q '^backend: *redis unix:$TMP/r.sock\$' '$TMP/status.out'"
check "... a new login would be number 4, and the last admission was a moment ago" \
	sh -c "grep -q '^new login: .*number 4\$' '$TMP/status.out' && grep -q '^last admission: .* ago\$' '$TMP/status.out'"
"$CTL" "$C" "$R" key=c1 interval=3s --json status > "$TMP/status.json" 2>&1
check "status --json is JSON (python3 -m json.tool)" sh -c "python3 -m json.tool '$TMP/status.json' > /dev/null"
got="$(json_field "['waiting']" < "$TMP/status.json") $(json_field "['new_login']['position']" < "$TMP/status.json") $(json_field "['backend']" < "$TMP/status.json")"
check "... with waiting 3, position 4 and the backend ($got)" [ "$got" = "3 4 redis unix:$TMP/r.sock" ]
bg_wait
"$CTL" "$C" "$R" key=c1 interval=3s status > "$TMP/status2.out" 2>&1
check "status once they are in: 'waiting: 0'" grep -q '^waiting: *0$' "$TMP/status2.out"

# 1b. status writes nothing: a place whose lease ran out, which any reservation would drop,
# is left as it was (and not counted).
rcli r zadd c1x 0 s:1:1 5 w:aa:-:- 10000000000000001 l:aa:-:- > /dev/null
before=$(rcli r zrange c1x 0 -1 withscores)
"$CTL" "$C" "$R" key=c1x status > "$TMP/status-x.out" 2>&1
after=$(rcli r zrange c1x 0 -1 withscores)
check "status changes nothing on Redis, and counts no place whose lease ran out" \
	sh -c "[ '$before' = '$after' ] && [ \$(printf '%s' '$before' | wc -l) = 5 ] && grep -q '^waiting: *0\$' '$TMP/status-x.out'"

# 2. reset with waiters: four logins 4 s apart (three wait: 4, 8 and 12 s). After the reset the
# schedule is empty; a login that comes then is not held by the old queue (it would wait 16 s);
# the old waiters hold places anew at their next renewal, and all go in.
service c2 "auth requisite @M $R key=c2 interval=4s countdown=0 debug" "$STAMP" \
	"auth required @P/pam_permit.so"
rm -f "$TMP/stamps"
for u in t1 t2 t3 t4; do
	bg_login "$u" c2 "$u"
	sleep 0.1
done
wait_for 20 queued t 3
# The old waiters are stopped across the reset and the new login: one that renewed in between
# would rightly hold a place anew ahead of it, and the check would measure a race.
waiters=$(for u in t1 t2 t3 t4; do grep -q 'queued: ' "$TMP/$u.err" && pam_pid "$u"; done)
# shellcheck disable=SC2086 # a list of pids
kill -STOP $waiters
"$CTL" "$C" "$R" key=c2 reset > "$TMP/reset.out" 2> "$TMP/reset.err"
rc=$?
left=$(rcli r zcard c2)
login tnew c2 tnew
# shellcheck disable=SC2086
kill -CONT $waiters
check "reset with three waiters: exit 0, says 3, and the key keeps only its head and hold ($left members)" \
	sh -c "[ $rc = 0 ] && grep -q ': 3 waiting logins' '$TMP/reset.out' && [ '$left' = 2 ]"
check "... a login after the reset is not held by the old queue: admitted at once, not queued (it would wait 16 s)" \
	sh -c "[ $(rc_of tnew) = 0 ] && grep -q 'admitted: ' '$TMP/tnew.err' && ! grep -q 'queued: ' '$TMP/tnew.err'"
wait_for 10 sh -c "[ \"\$(redis-cli -s '$TMP/r.sock' zcount c2 1 '(1e16')\" -ge 1 ]"
check "... the old waiters hold places again after their renewal" [ "$?" = 0 ]
bg_wait
check "... and all of them go in ($(rc_of t2)$(rc_of t3)$(rc_of t4))" \
	[ "$(rc_of t2)$(rc_of t3)$(rc_of t4)" = 000 ]

# 2b. reset's audit line cannot be forged. A KEY with control bytes is refused (exit 2, the key
# named escaped) before anything is done or logged; what is logged is escaped: here a backend
# named by a socket path with a newline in it, and a key with a backslash.
syslog_of "$TMP/reset-ok.log" "$CTL" "$C" "$R" reset 'c2b\x' > "$TMP/reset-ok.out" 2>&1
check "reset is logged: one line, naming the key, the backend and who ($(cat "$TMP/reset-ok.log"))" \
	sh -c "[ \$(wc -l < '$TMP/reset-ok.log') = 1 ] &&
		grep -q '^<85>.* flowslotctl\[[0-9]*\]: reset: key=c2b\\\\x5cx backend=redis unix:$TMP/r.sock waiting=0 by uid=0 login=' '$TMP/reset-ok.log'"
bad_key=$'c2b\nflowslotctl[1]: reset: key=c2 backend=x waiting=0 by uid=0 login=root\t\e[2J\x7f'
rcli r set "$bad_key" held > /dev/null
syslog_of "$TMP/reset-bad.log" "$CTL" "$C" "$R" reset "$bad_key" > "$TMP/reset-bad.out" 2> "$TMP/reset-bad.err"
rc=$?
check "reset of a KEY with a newline and other control bytes: exit $rc, refused naming it escaped ($(cat "$TMP/reset-bad.err"))" \
	sh -c "[ $rc = 2 ] && grep -Fq 'KEY \"c2b\\x0aflowslotctl[1]: reset: key=c2 backend=x waiting=0 by uid=0 login=root\\x09\\x1b[2J\\x7f\": ' '$TMP/reset-bad.err' &&
		[ \$(wc -l < '$TMP/reset-bad.err') = 1 ]"
check "... and does nothing: no log line, no output, the key left" \
	sh -c "[ ! -s '$TMP/reset-bad.log' ] && [ ! -s '$TMP/reset-bad.out' ] && [ \"\$(redis-cli -s '$TMP/r.sock' get '$bad_key')\" = held ]"
"$CTL" "$C" "$R" status $'c2b\001' > "$TMP/status-bad.out" 2>&1
check "... and so is such a KEY for any command (status: exit $?)" \
	sh -c "[ $? = 2 ] && grep -Fq 'KEY \"c2b\\x01\"' '$TMP/status-bad.out'"
ln -s "$TMP/r.sock" "$TMP/r"$'\n''flowslotctl[1]: forged.sock'
syslog_of "$TMP/reset-where.log" "$CTL" "$C" "url=unix://$TMP/r"$'\n''flowslotctl[1]: forged.sock' key=c2b reset > "$TMP/reset-where.out" 2>&1
rc=$?
check "a backend named with a newline is logged escaped, on one line (exit $rc: $(cat "$TMP/reset-where.log"))" \
	sh -c "[ $rc = 0 ] && [ \$(wc -l < '$TMP/reset-where.log') = 1 ] &&
		grep -Fq ' backend=redis unix:$TMP/r\\x0aflowslotctl[1]: forged.sock waiting=0 ' '$TMP/reset-where.log'"

# 2c. A reset that what hosts heard cannot undo (issue 38, item 8). At interval=10m one login
# goes in, and its host keeps the next slot it heard of (state_dir/heard: 600 s off). The
# schedule is reset. Past the minute and a lease that the reset's head once stayed (checked at
# the end of the suite, 70 s on), a login on the same host goes in at once: before, the key had
# expired and the host's memory made the old next slot again (refused, told 530 s).
service c2c "auth requisite @M $R key=c2c interval=10m max_wait=30s countdown=0 debug" \
	"auth required @P/pam_permit.so"
login c2c-a c2c c2ca
"$CTL" "$C" "$R" key=c2c reset > "$TMP/reset-c2c.out" 2>&1
reset_c2c=$(date +%s)
check "reset at interval=10m after one login went in: exit 0 ($(rc_of c2c-a) $(cat "$TMP/reset-c2c.out"))" \
	sh -c "[ $(rc_of c2c-a) = 0 ] && grep -q 'admitted: ' '$TMP/c2c-a.err' && [ -s '$TMP/state/heard' ]"

# 3. check: a good configuration, bad options, Redis down.
"$CTL" "$C" "$R" key=c3 check > "$TMP/check.out" 2>&1
check "check, a good configuration: exit 0, 'ok'" \
	sh -c "[ $? = 0 ] && grep -q '^ok: a login would queue on redis unix:' '$TMP/check.out'"
check "... and says nothing of eviction on a Redis with no maxmemory" \
	sh -c "! grep -q 'evict' '$TMP/check.out'"
rcli r config set maxmemory 100mb > /dev/null && rcli r config set maxmemory-policy volatile-ttl > /dev/null
"$CTL" "$C" "$R" key=c3 check > "$TMP/check-evict.out" 2>&1
rc=$?
rcli r config set maxmemory 0 > /dev/null && rcli r config set maxmemory-policy noeviction > /dev/null
check "check on a Redis with a maxmemory and volatile-ttl: exit $rc, and a warning that it may evict the schedule, naming what to set" \
	sh -c "[ $rc = 0 ] && grep -q '^ok: ' '$TMP/check-evict.out' &&
		grep -q '^flowslotctl: redis unix:.* may evict the schedule: .*set maxmemory-policy noeviction$' '$TMP/check-evict.out'"
"$CTL" "$C" "$R" interval=7x bogus=1 check > "$TMP/check-bad.out" 2>&1
rc=$?
check "check, two bad options: exit $rc, each named, and summed up by kind ($(tail -1 "$TMP/check-bad.out"))" \
	sh -c "[ $rc = 2 ] && grep -q 'bad value for interval: \"7x\"' '$TMP/check-bad.out' &&
		grep -q 'unknown option \"bogus\"' '$TMP/check-bad.out' &&
		grep -q '^flowslotctl: 1 unknown option, 1 bad value (named above)' '$TMP/check-bad.out'"
down=$(free_port)
"$CTL" "$C" "url=redis://127.0.0.1:$down" timeout=500ms check > "$TMP/check-down.out" 2>&1
rc=$?
check "check, Redis down: exit $rc, names 127.0.0.1:$down, the error and fallback=local" \
	sh -c "[ $rc = 1 ] && grep -q '127.0.0.1:$down: cannot connect: Connection refused' '$TMP/check-down.out' &&
		grep -q 'fallback=local' '$TMP/check-down.out'"
"$CTL" "$C" "url=redis://127.0.0.1:$down" timeout=500ms fallback=closed check > "$TMP/check-closed.out" 2>&1
check "... and fallback=closed when so configured" \
	sh -c "[ $? = 1 ] && grep -q 'fallback=closed: a login would be refused' '$TMP/check-closed.out'"

# 3b. Options after the command (issue 30): options wherever they stand, for every command; a
# KEY that looks like one goes after --. Before, "check url=..." took the url for the KEY and
# checked the default backend: "ok", exit 0.
"$CTL" "$C" check "url=redis://127.0.0.1:$down" > "$TMP/check-after.out" 2>&1
rc=$?
check "check url=redis://127.0.0.1:$down (after the command): exit $rc, no 'ok', the server named unreachable" \
	sh -c "[ $rc = 1 ] && ! grep -q '^ok' '$TMP/check-after.out' &&
		grep -q '127.0.0.1:$down: cannot connect: Connection refused' '$TMP/check-after.out'"
"$CTL" check "$C" intervall=3s > "$TMP/check-typo.out" 2>&1
rc=$?
check "check intervall=3s (after the command): exit $rc, an unknown option, not a KEY" \
	sh -c "[ $rc = 2 ] && ! grep -q '^ok' '$TMP/check-typo.out' && grep -q 'unknown option \"intervall\"' '$TMP/check-typo.out'"
"$CTL" status "$C" "$R" key=c3b --json > "$TMP/status-after.json" 2> "$TMP/status-after.err"
rc=$?
got=$(json_field "['key']" < "$TMP/status-after.json" 2> /dev/null)
check "status OPTION... --json, all after the command: exit $rc, the options' schedule, as JSON ($got)" \
	sh -c "[ $rc = 0 ] && [ '$got' = c3b ]"
"$CTL" "$C" "$R" status c3c debug > "$TMP/status-flag.out" 2>&1
check "... a flag after the KEY is a flag: the KEY stands (rc $?)" grep -q '^schedule: *c3c$' "$TMP/status-flag.out"
"$CTL" "$C" "$R" status -- c3=x > "$TMP/status-dd.out" 2>&1
check "... and after --, a KEY that looks like an option is the KEY (rc $?)" \
	grep -q '^schedule: *c3=x$' "$TMP/status-dd.out"
"$CTL" "$C" "$R" bogus check > "$TMP/check-word.out" 2>&1
rc=$?
check "a word that is neither a command nor an option: exit $rc, said so" \
	sh -c "[ $rc = 2 ] && grep -q '\"bogus\" is neither a command (status, reset, check, wait, metrics) nor a module option' '$TMP/check-word.out'"
"$CTL" "$C" "$R" status c3d c3e > "$TMP/status-many.out" 2>&1
rc=$?
check "... and a second KEY: exit $rc, too many arguments" \
	sh -c "[ $rc = 2 ] && grep -q 'status: too many arguments (\"c3e\")' '$TMP/status-many.out'"
"$CTL" --help > "$TMP/help.out" 2>&1
check "--help says options stand before or after the command, and what -- does" \
	sh -c "grep -q 'before or after COMMAND' '$TMP/help.out' && grep -q 'after --, words are COMMAND and KEY' '$TMP/help.out'"

# 3c. The configuration file (issue 28): check says what is wrong for what it is. An unknown
# option is named, once, and said to be ignored by the module, and check fails (exit 2): logins
# take the default for what it meant (issue 38: check said ok while logins came 7 s apart for an
# intervall=3s). A name with a hyphen is an unknown option like any other (it was a line that is
# no option, named "max" once per pam_flowslot line of the stacks). A bad value is a bad value;
# a file writable by others has unsafe permissions (it was "1 bad option").
printf 'url=unix://%s/r.sock\nintervall=3s\n' "$TMP" > "$TMP/typo.conf"
"$CTL" "conf=$TMP/typo.conf" key=c3f check > "$TMP/check-conf-typo.out" 2>&1
rc=$?
check "check, a typo in the configuration file: exit $rc, no 'ok', the file, line and option named once, and said ignored by the module" \
	sh -c "[ $rc = 2 ] && ! grep -q '^ok' '$TMP/check-conf-typo.out' &&
		[ \$(grep -c 'intervall' '$TMP/check-conf-typo.out') = 1 ] &&
		grep -q '$TMP/typo.conf:2: unknown option \"intervall\": ignored' '$TMP/check-conf-typo.out' &&
		grep -q '^flowslotctl: 1 unknown option in the configuration file (named above): the module ignores it' '$TMP/check-conf-typo.out'"
mkdir -p "$TMP/pamd-hy"
for stack in sshd login su; do
	printf 'auth [default=ignore] pam_flowslot.so\nsession [default=ignore] pam_flowslot.so\n' > "$TMP/pamd-hy/$stack"
done
printf 'url=unix://%s/r.sock\nmax-wait=45s\n' "$TMP" > "$TMP/hyphen.conf"
"$CTL" --pam-dir "$TMP/pamd-hy" "conf=$TMP/hyphen.conf" key=c3f check > "$TMP/check-conf-hyphen.out" 2>&1
rc=$?
check "check, max-wait=45s in the configuration file, which 6 module lines read: exit $rc, an unknown option, named once ($(wc -l < "$TMP/check-conf-hyphen.out") lines)" \
	sh -c "[ $rc = 2 ] && ! grep -q '^ok' '$TMP/check-conf-hyphen.out' &&
		[ \$(grep -c '\"max' '$TMP/check-conf-hyphen.out') = 1 ] &&
		grep -q '$TMP/hyphen.conf:2: unknown option \"max-wait\": ignored' '$TMP/check-conf-hyphen.out' &&
		grep -q '^flowslotctl: 1 unknown option in the configuration file (named above): the module ignores it' '$TMP/check-conf-hyphen.out' &&
		! grep -q 'no option\|pamd-hy' '$TMP/check-conf-hyphen.out'"
printf 'url=unix://%s/r.sock\nmax-wait=45s\nbogus line\n' "$TMP" > "$TMP/noopt.conf"
"$CTL" --pam-dir "$TMP/pamd-hy" "conf=$TMP/noopt.conf" key=c3f check > "$TMP/check-conf-noopt.out" 2>&1
rc=$?
check "... and with a line that is no option: exit $rc, that line named once too, not again for each module line ($(wc -l < "$TMP/check-conf-noopt.out") lines)" \
	sh -c "[ $rc = 2 ] && [ \$(grep -c 'noopt.conf:3: ' '$TMP/check-conf-noopt.out') = 1 ] &&
		[ \$(grep -c 'max-wait' '$TMP/check-conf-noopt.out') = 1 ] &&
		grep -q '^flowslotctl: 1 line of the configuration file that is no option (named above); fallback=local' '$TMP/check-conf-noopt.out' &&
		! grep -q 'pamd-hy' '$TMP/check-conf-noopt.out' && [ \$(wc -l < '$TMP/check-conf-noopt.out') = 4 ]"
printf 'url=unix://%s/r.sock\ninterval=3x\n' "$TMP" > "$TMP/badval.conf"
"$CTL" "conf=$TMP/badval.conf" key=c3f check > "$TMP/check-conf-bad.out" 2>&1
rc=$?
check "check, a bad value in the configuration file: exit $rc, '1 bad value' and the fallback ($(tail -1 "$TMP/check-conf-bad.out"))" \
	sh -c "[ $rc = 2 ] && grep -q '$TMP/badval.conf:2: bad value for interval' '$TMP/check-conf-bad.out' &&
		grep -q '^flowslotctl: 1 bad value (named above); fallback=local' '$TMP/check-conf-bad.out'"
printf 'url=unix://%s/r.sock\n' "$TMP" > "$TMP/unsafe.conf"
chmod 0666 "$TMP/unsafe.conf"
"$CTL" "conf=$TMP/unsafe.conf" key=c3f check > "$TMP/check-conf-unsafe.out" 2>&1
rc=$?
check "check, a configuration file writable by others: exit $rc, 'unsafe permissions', not 'bad option' ($(tail -1 "$TMP/check-conf-unsafe.out"))" \
	sh -c "[ $rc = 2 ] && grep -q 'writable by group or others' '$TMP/check-conf-unsafe.out' &&
		grep -q '^flowslotctl: 1 file with unsafe permissions (named above)' '$TMP/check-conf-unsafe.out' &&
		! grep -q 'bad option' '$TMP/check-conf-unsafe.out'"

# 3d. check reads the stacks (issue 28): two stacks whose lines give one schedule different
# settings are named, each by file and line. Here the pam-auth-update profile's bare line in
# common-session (3 s, from the configuration file) and an sshd line with interval=7s, on the
# default key, as the old sshd example made them; su and sshd include common-session, whose
# line is named once. A line on a key of its own disagrees with nobody. Not an error: logins
# still queue, on the strictest settings.
mkdir -p "$TMP/pamd"
printf 'state_dir=%s/state\ninterval=3s\n' "$TMP" > "$TMP/stacks.conf"
gate='[success=ok ignore=ignore module_unknown=ignore default=die]'
printf 'session [success=1 default=ignore] pam_succeed_if.so quiet uid eq 0\nsession %s pam_flowslot.so\n' "$gate" > "$TMP/pamd/common-session"
printf 'auth required pam_unix.so\nsession %s /usr/lib/x86_64-linux-gnu/security/pam_flowslot.so interval=7s\n@include common-session\n' "$gate" > "$TMP/pamd/sshd"
printf 'session required pam_env.so\n@include common-session\n' > "$TMP/pamd/su"
printf 'auth %s pam_flowslot.so key=console interval=9s\n' "$gate" > "$TMP/pamd/login"
"$CTL" --pam-dir "$TMP/pamd" "conf=$TMP/stacks.conf" check > "$TMP/check-stacks.out" 2> "$TMP/check-stacks.err"
rc=$?
check "check with two stacks that disagree on one key: exit $rc, both named with file and line ($(grep -m1 'gives' "$TMP/check-stacks.err"))" \
	sh -c "[ $rc = 0 ] && grep -q '^ok: ' '$TMP/check-stacks.out' &&
		grep -qx 'flowslotctl: key pam_flowslot: $TMP/pamd/common-session:2 gives interval=3s burst=1, $TMP/pamd/sshd:2 interval=7s burst=1: the schedule holds both to the strictest' '$TMP/check-stacks.err'"
check "... once, and nothing of the line on a key of its own ($(grep -c gives "$TMP/check-stacks.err") lines)" \
	sh -c "[ \$(grep -c 'gives' '$TMP/check-stacks.err') = 1 ] && ! grep -q 'pamd/login' '$TMP/check-stacks.err' &&
		grep -q '1 module line in $TMP/pamd disagrees with another on a schedule' '$TMP/check-stacks.err'"
printf 'auth required pam_unix.so\nsession %s pam_flowslot.so\n@include common-session\n' "$gate" > "$TMP/pamd/sshd"
printf 'session %s pam_flowslot.so interval=3x\n' "$gate" > "$TMP/pamd/bad"
"$CTL" --pam-dir "$TMP/pamd" "conf=$TMP/stacks.conf" check > "$TMP/check-agree.out" 2> "$TMP/check-agree.err"
rc=$?
check "... the sshd line bare, as the example ships it: no disagreement (exit $rc); a stack's bad option named with its line" \
	sh -c "[ $rc = 0 ] && ! grep -q 'gives\|disagree' '$TMP/check-agree.err' &&
		grep -q 'bad value for interval: \"3x\"' '$TMP/check-agree.err' &&
		grep -q '$TMP/pamd/bad:1: the bad options above' '$TMP/check-agree.err'"

# 4. wait in tmux: one line rewritten in place, the turn, and Ctrl-C giving the place back.
W="$C $R key=c4 interval=5s"
"$CTL" $W wait 2> /dev/null # takes the slot: the next one waits about 5 s
tmux_ new-session -d -s w -x 100 -y 10 "$CTL $W wait; echo rc=\$?; sleep 60"
# Read once the countdown has stepped at least once (not at a guessed 2.5 s): a second line
# would show by then, were the line not rewritten in place.
stepped() { tmux_ capture-pane -p -t w | grep -q 'Login queue: about [0-9.]* s to go\.'; }
wait_for 10 stepped
screen=$(tmux_ capture-pane -p -t w | grep -v '^$')
check "wait on a terminal: one line, rewritten in place ($screen)" \
	sh -c "[ \$(printf '%s\n' '$screen' | wc -l) = 1 ] && printf '%s\n' '$screen' | grep -q '^Login queue: about [0-9.]* s to go.\$'"
wait_for 15 sh -c "tmux -S '$TMUX_SOCK' capture-pane -p -t w | grep -q '^rc='"
screen=$(tmux_ capture-pane -p -t w | grep -v '^$' | tr '\n' '|')
check "... then 'your turn now' and exit 0 ($screen)" \
	sh -c "printf '%s' '$screen' | grep -q '^Login queue: your turn now.|rc=0|\$'"
"$CTL" $W wait 2> /dev/null
tmux_ new-session -d -s i -x 100 -y 10 "$CTL $W wait; echo rc=\$?; sleep 60"
wait_for 5 sh -c "[ \"\$(redis-cli -s '$TMP/r.sock' zcount c4 1 '(1e16')\" = 1 ]"
tmux_ send-keys -t i C-c
wait_for 5 sh -c "tmux -S '$TMUX_SOCK' capture-pane -p -t i | grep -q '^rc='"
screen=$(tmux_ capture-pane -p -t i | grep -v '^$' | tr '\n' '|')
check "wait, Ctrl-C: the place is given back, exit 130 ($screen; $(waiting r c4) waiting)" \
	sh -c "printf '%s' '$screen' | grep -q 'Login queue: left; the place is given back.|rc=130|' && [ $(waiting r c4) = 0 ]"
# wait with dry_run among its options (a dry run's --service line gives it) holds a renewable
# place all the same, not a dry run's fixed slot up to max_wait ahead, and Ctrl-C gives the
# place back: after two waits so interrupted, a new login is first in line behind the first
# wait's slot (number 1, at most 10 s), not behind two fixed slots (number 2, 20 s).
dry_wait() { # NAME OPTION...: the first wait goes in; two more are interrupted; then status
	local name=$1 n
	shift
	"$CTL" "$C" "$@" wait 2> /dev/null
	for n in 1 2; do
		tmux_ new-session -d -s "$name$n" -x 100 -y 10 "$CTL $C $* wait; echo rc=\$?; sleep 60"
		wait_for 5 sh -c "$CTL $C $* status | grep -q '^waiting: *1\$'"
		tmux_ send-keys -t "$name$n" C-c
		wait_for 5 sh -c "tmux -S '$TMUX_SOCK' capture-pane -p -t '$name$n' | grep -q '^rc='"
		tmux_ capture-pane -p -t "$name$n" | grep -v '^$' | tr '\n' '|' > "$TMP/$name$n.screen"
	done
	"$CTL" "$C" "$@" --json status > "$TMP/$name.json" 2>&1
}
for b in redis local; do
	if [ $b = redis ]; then set -- "$R"; else set -- url=local state_dir="$TMP/wd"; fi
	dry_wait "d$b" "$@" key=c4d interval=10s max_wait=60s dry_run
	check "url=$b wait with dry_run, Ctrl-C twice: each place given back, exit 130 ($(cat "$TMP/d${b}1.screen" "$TMP/d${b}2.screen"))" \
		sh -c "grep -q 'Login queue: left; the place is given back.|rc=130|' '$TMP/d${b}1.screen' &&
			grep -q 'Login queue: left; the place is given back.|rc=130|' '$TMP/d${b}2.screen'"
	got="$(json_field "['new_login']['wait_ms']" < "$TMP/d$b.json") $(json_field "['new_login']['position']" < "$TMP/d$b.json")"
	check "... and the schedule is as the first wait left it: a new login waits at most 10 s, number 1 (wait_ms, position: $got)" \
		sh -c "[ \"\${1#* }\" = 1 ] && [ \"\${1% *}\" -le 10000 ]" sh "$got"
done
"$CTL" $W wait 2> /dev/null
"$CTL" $W wait 2> "$TMP/wait-plain.err"
check "wait with stderr not a terminal: plain lines" \
	sh -c "head -1 '$TMP/wait-plain.err' | grep -q '^Login queue: you are next; your turn in about' &&
		tail -1 '$TMP/wait-plain.err' | grep -q '^Login queue: your turn now.\$' && ! grep -q \$'\r' '$TMP/wait-plain.err'"

# A fixed slot (first in line, its slot under 2 s off: admitted at once, to go in then) has no
# place to give back, and wait does not say it gave one back.
W="$C $R key=c4f interval=1900ms"
"$CTL" $W wait 2> /dev/null
"$CTL" $W wait 2> "$TMP/wait-fixed.err" &
pid=$!
wait_for 5 grep -q '^Login queue: ' "$TMP/wait-fixed.err"
kill -TERM "$pid"
wait "$pid"
rc=$?
check "wait interrupted in a fixed slot: exit $rc, 'left.', no place said given back" \
	sh -c "[ $rc = 130 ] && tail -1 '$TMP/wait-fixed.err' | grep -q '^Login queue: left\.\$' &&
		! grep -q 'given back' '$TMP/wait-fixed.err'"

# A signal while the reservation is on its way (Redis stopped): the place it then gets is
# given back, not left to hold the queue until its lease ends.
W="$C $R key=c4r interval=5s timeout=10s"
"$CTL" $W wait 2> /dev/null
kill -STOP "$(cat "$TMP/r.pid")"
"$CTL" $W wait 2> "$TMP/wait-reserving.err" &
pid=$!
# The signal comes once the request is on its way: wait is blocked in poll (7) for the reply
# of the stopped server, not a guessed second after it started.
in_poll() { [ "$(cut -d' ' -f1 "/proc/$1/syscall" 2> /dev/null)" = 7 ]; }
wait_for 20 in_poll "$pid"
kill -TERM "$pid"
kill -CONT "$(cat "$TMP/r.pid")"
wait "$pid"
rc=$?
check "wait, a signal during the reservation: exit $rc, the place given back ($(waiting r c4r) waiting)" \
	sh -c "[ $rc = 130 ] && grep -q 'given back' '$TMP/wait-reserving.err' && [ $(waiting r c4r) = 0 ]"

# wait with Redis down applies the failure policy as a login would.
"$CTL" "$C" "url=redis://127.0.0.1:$down" timeout=300ms state_dir="$TMP/wl" key=c4l wait 2> "$TMP/wait-down.err"
check "wait, Redis down, fallback=local: goes on, through the per-host schedule" \
	sh -c "[ $? = 0 ] && [ -f '$TMP/wl/slot.c4l' ]"
"$CTL" "$C" "url=redis://127.0.0.1:$down" timeout=300ms fallback=closed key=c4l wait 2> "$TMP/wait-closed.err"
check "... and with fallback=closed, exit 1, saying so" \
	sh -c "[ $? = 1 ] && grep -q 'unavailable (fallback=closed)' '$TMP/wait-closed.err'"

# 5. --service: the options of the first pam_flowslot line, through @include and substack.
mkdir "$TMP/pamd"
printf 'auth required pam_env.so\n@include common-gate\nauth required pam_unix.so\n' > "$TMP/pamd/svc5"
printf '# the gate\naccount substack gate-stack\n' > "$TMP/pamd/common-gate"
printf 'account required pam_permit.so\naccount [success=ok default=ignore] %s %s key=svc-%%s interval=2s [countdown=3s]\n' \
	"$MODULE" "$R" > "$TMP/pamd/gate-stack"
"$CTL" "$C" --pam-dir "$TMP/pamd" --service svc5 status > "$TMP/svc.out" 2>&1
check "--service through @include and substack: the line's key (%s the service) and url" \
	sh -c "[ $? = 0 ] && grep -q '^schedule: *svc-svc5\$' '$TMP/svc.out' && grep -q '^backend: *redis unix:$TMP/r.sock\$' '$TMP/svc.out'"
"$CTL" "$C" --pam-dir "$TMP/pamd" --service svc5 key=other status > "$TMP/svc2.out" 2>&1
check "... options on the command line go on top" grep -q '^schedule: *other$' "$TMP/svc2.out"
printf '@include common-missing\n' > "$TMP/pamd/svc6"
"$CTL" "$C" --pam-dir "$TMP/pamd" --service svc6 status > "$TMP/svc6.out" 2>&1
check "... a missing include is named by its path, exit 2" \
	sh -c "[ $? = 2 ] && grep -q 'cannot read $TMP/pamd/common-missing: No such file' '$TMP/svc6.out'"
printf 'auth required pam_permit.so\n' > "$TMP/pamd/svc7"
"$CTL" "$C" --pam-dir "$TMP/pamd" --service svc7 status > "$TMP/svc7.out" 2>&1
check "... a service without the module says so, exit 2" \
	sh -c "[ $? = 2 ] && grep -q 'no pam_flowslot line in $TMP/pamd/svc7' '$TMP/svc7.out'"

# 6. The local backend: status reads the file, names it, and changes nothing.
L="url=local state_dir=$TMP/ls key=c6"
service c6 "auth requisite @M $L interval=3s countdown=0 debug" "auth required @P/pam_permit.so"
for u in u1 u2 u3; do
	bg_login "$u" c6 "$u"
	sleep 0.1
done
wait_for 5 queued u 2
before=$(md5sum < "$TMP/ls/slot.c6")
"$CTL" "$C" $L status > "$TMP/local.out" 2>&1
check "url=local status: 'waiting: 2', the file named, nothing written" \
	sh -c "[ $? = 0 ] && grep -q '^waiting: *2\$' '$TMP/local.out' &&
		grep -q '^backend: *local $TMP/ls/slot.c6\$' '$TMP/local.out' && [ '$before' = \"\$(md5sum < '$TMP/ls/slot.c6')\" ]"
bg_wait
# The last admission is kept as long as the schedule, until its next slot has passed with
# nobody waiting (u3 went in about 6 s after u1, the slot after it 3 s later): then status
# says so, rather than a bare "none" an administrator would take for no login at all.
"$CTL" "$C" $L interval=3s status > "$TMP/local-last.out" 2>&1
sleep 3.5
"$CTL" "$C" $L interval=3s status > "$TMP/local-gone.out" 2>&1
check "url=local status: the last admission, then, once the schedule is dropped, that none is kept ($(grep -h '^last' "$TMP/local-last.out" "$TMP/local-gone.out" | paste -sd '|'))" \
	sh -c "grep -q '^last admission: .* ago\$' '$TMP/local-last.out' &&
		grep -q '^last admission: none kept (a schedule is dropped once its next slot has passed' '$TMP/local-gone.out'"
"$CTL" "$C" url=local state_dir="$TMP/nothing" key=c6 status > "$TMP/local-none.out" 2>&1
check "url=local status with no state_dir yet: an empty schedule, and nothing created" \
	sh -c "[ $? = 0 ] && grep -q '^waiting: *0\$' '$TMP/local-none.out' && [ ! -e '$TMP/nothing' ]"

# 6b. status, --json and metrics count every login not gone in yet, those admitted to go in
# later (within the commit window, 2 s) included. Five logins at once, 2 s apart: the first
# goes in at once, the second is admitted to go in 2 s later (it holds no place), the other
# three hold places. While a new login would be number 5 (wait over 8 s), all five have
# reserved and the second is not in yet: each view read then says 4 (everyone not in yet,
# one less than that number), whatever the machine's speed. A view is read again until so;
# a burst too slow to show it is tried again on a fresh key.
# view_of NAME KIND END OPTION...: one view of status (json, text or metrics), read again until
# it shows a new login as number 5 or the clock passes END (ms): then what it counts as waiting,
# in $TMP/NAME.KIND-got. The three views are read side by side, each on its own, so that a
# slow machine (the sanitized pass's four lanes) still reads each within the window.
view_of() {
	local name=$1 kind=$2 end=$3 o
	shift 3
	o="$C $* interval=2s"
	while [ "$(now_ms)" -lt "$end" ]; do
		case $kind in
		json)
			# shellcheck disable=SC2086 # options, one word each
			if "$CTL" $o --json status > "$TMP/$name.json" 2> /dev/null &&
				[ "$(json_field "['new_login']['position']" < "$TMP/$name.json")" = 5 ]; then
				json_field "['waiting']" < "$TMP/$name.json" > "$TMP/$name.$kind-got"
				return
			fi ;;
		text)
			# shellcheck disable=SC2086
			if "$CTL" $o status > "$TMP/$name.out" 2> /dev/null &&
				grep -q '^new login: .*, number 5$' "$TMP/$name.out"; then
				sed -n 's/^waiting: *//p' "$TMP/$name.out" > "$TMP/$name.$kind-got"
				return
			fi ;;
		metrics)
			# shellcheck disable=SC2086
			if "$CTL" $o metrics > "$TMP/$name.prom" 2> /dev/null &&
				awk '/^flowslot_queue_wait_seconds/ { exit !($2 > 8) }' "$TMP/$name.prom"; then
				awk '/^flowslot_queue_length/ { print $2 }' "$TMP/$name.prom" > "$TMP/$name.$kind-got"
				return
			fi ;;
		esac
	done
}
burst_views() { # NAME OPTION...: the three views of one burst, as "json text metrics"
	local name=$1 end kind views=""
	shift
	service "$name" "auth requisite @M $* interval=2s countdown=0" "auth required @P/pam_permit.so"
	rm -f "$TMP/go" "$TMP/$name".*-got
	for u in 1 2 3 4 5; do
		(while [ ! -e "$TMP/go" ]; do sleep 0.01; done; login "$name-$u" "$name" "$name-$u") &
		BG="${BG:-} $!"
	done
	touch "$TMP/go"
	end=$(($(now_ms) + 6000))
	for kind in json text metrics; do
		view_of "$name" "$kind" "$end" "$@" &
		BG="$BG $!"
	done
	bg_wait
	for kind in json text metrics; do
		views="$views $(cat "$TMP/$name.$kind-got" 2> /dev/null || echo -)"
	done
	echo "${views# }"
}
for b in redis local; do
	if [ $b = redis ]; then set -- "$R" state_dir="$TMP/bs"; else set -- url=local state_dir="$TMP/bl"; fi
	for try in 1 2 3; do
		views=$(burst_views "b$b$try" "$@" key="b$b$try")
		case $views in *-*) ;; *) break ;; esac
	done
	check "url=$b status, --json and metrics, a new login being number 5: waiting 4 in each, the logins admitted to go in later counted (json text metrics: $views)" \
		[ "$views" = "4 4 4" ]
done

# 7. The module tells the session it went through the gate: FLOWSLOT_ADMITTED in the PAM
# environment (pam_exec passes it to its command), for the profile.d snippet.
service c7 "auth requisite @M $R key=c7 interval=1s countdown=0" \
	"auth optional @P/pam_exec.so log=$TMP/c7.env /usr/bin/env" "auth required @P/pam_permit.so"
login m1 c7 m1
check "the module leaves FLOWSLOT_ADMITTED=auth in the PAM environment" \
	grep -qx 'FLOWSLOT_ADMITTED=auth' "$TMP/c7.env"

# 8. The profile.d snippet waits only without the marker.
# snippet NAME MARKER [EXEMPT_GROUPS]: runs the snippet on a terminal (tmux), as root; prints
# whether it wrote the schedule (1: it waited).
snippet() {
	local groups=""
	[ $# -ge 3 ] && groups="FLOWSLOT_EXEMPT_GROUPS='$3'"
	tmux_ new-session -d -s "p$1" -x 100 -y 10 "env FLOWSLOT_ADMITTED='$2' $groups FLOWSLOT_WAIT_ARGS='$C $R key=c8$1' PATH=$TREE:\$PATH sh -c '. $TREE/etc/profile.d/flowslot-wait.sh; echo started=\$FLOWSLOT_ADMITTED'; sleep 60"
	wait_for 5 sh -c "tmux -S '$TMUX_SOCK' capture-pane -p -t 'p$1' | grep -q '^started='"
	rcli r exists "c8$1"
}
check "profile.d snippet: no wait after the module's marker" [ "$(snippet a auth '')" = 0 ]
check "... and a wait without it" [ "$(snippet b '' '')" = 1 ]
check "... but none for an exempt user, as the stacks exempt them: root (group root) by default" \
	[ "$(snippet c '')" = 0 ]
check "... or a member of a group named in FLOWSLOT_EXEMPT_GROUPS ($(id -gn root), among others)" \
	[ "$(snippet d '' "nosuch $(id -gn root)")" = 0 ]

# 9. status during a Redis outage shows the schedule the logins actually wait on, the per-host
# one (fallback=local), and names the Redis as down; the exit status stays 1. The two waiters'
# slots are 30 and 60 s off, so that both still wait when status reads them however slow the
# machine (at interval=3s a loaded run found one gone), and they are stopped after.
down=$(free_port)
O="url=redis://127.0.0.1:$down timeout=300ms state_dir=$TMP/od key=c9"
service c9 "auth requisite @M $O interval=30s max_wait=90s countdown=0" \
	"auth required @P/pam_permit.so"
for u in o1 o2 o3; do
	bg_login "$u" c9 "$u"
	sleep 0.3
done
wait_for 8 queued o 2
"$CTL" "$C" $O status > "$TMP/outage.out" 2> "$TMP/outage.err"
rc=$?
"$CTL" "$C" $O --json status > "$TMP/outage.json" 2> /dev/null
kill $(pam_pid o2) $(pam_pid o3) 2> /dev/null
bg_wait
check "status, Redis down: exit $rc, Redis named down, and the per-host schedule with its 2 waiting" \
	sh -c "[ $rc = 1 ] && grep -q '^down: *redis 127.0.0.1:$down: logins queue on this host.s schedule' '$TMP/outage.out' &&
		grep -q '^backend: *local $TMP/od/slot.c9\$' '$TMP/outage.out' && grep -q '^waiting: *2\$' '$TMP/outage.out' &&
		grep -q 'cannot connect' '$TMP/outage.err'"
got="$(json_field "['down']" < "$TMP/outage.json") $(json_field "['waiting']" < "$TMP/outage.json")"
check "... and in --json: \"down\" and the waiting count ($got)" [ "$got" = "redis 127.0.0.1:$down 2" ]

# 9b. Redis stopped while logins wait on it: the host still knows its own waiters (each holds
# a slot of state_dir/waiters, src/waiters.c, by locks its process's end drops) and shows them,
# with the shared queue said to be unknown, in status, --json and metrics; a waiter killed with
# no cleanup (SIGKILL, as LoginGraceTime's _exit) is no longer counted.
start_redis hw || exit 1
O="url=unix://$TMP/hw.sock timeout=300ms state_dir=$TMP/hw key=c9b"
service c9b "auth requisite @M $O interval=3s countdown=0" "auth required @P/pam_permit.so"
for u in h1 h2 h3 h4 h5; do
	bg_login "$u" c9b "$u"
done
wait_for 8 queued h 4
"$CTL" "$C" $O --json status > "$TMP/hw-up.json" 2> /dev/null
stop_redis hw
"$CTL" "$C" $O status > "$TMP/hw.out" 2> "$TMP/hw.err"
rc=$?
"$CTL" "$C" $O --json status > "$TMP/hw.json" 2> /dev/null
"$CTL" "$C" $O metrics > "$TMP/hw.prom" 2> /dev/null
victim=$(pam_pid "$(grep -l 'queued: ' "$TMP"/h?.err | head -1 | sed 's|.*/||; s|\.err$||')")
kill -KILL "$victim"
wait_for 5 sh -c "! kill -0 $victim 2> /dev/null"
"$CTL" "$C" $O --json status > "$TMP/hw-kill.json" 2> /dev/null
bg_wait
got_up=$(json_field "['host']['waiting']" < "$TMP/hw-up.json" 2> /dev/null)
check "status --json, Redis up: the host's 4 waiters beside the shared queue's (host.waiting $got_up)" \
	[ "$got_up" = 4 ]
check "status, Redis stopped mid-wait: exit $rc, the shared queue unknown, this host's 4 waiters ($(grep '^this host' "$TMP/hw.out"))" \
	sh -c "[ $rc = 1 ] && grep -q '^shared queue: *unknown until redis unix:$TMP/hw.sock is back\$' '$TMP/hw.out' &&
		grep -q '^this host: *4 waiting, the longest for ' '$TMP/hw.out'"
got="$(json_field "['shared_waiting']" < "$TMP/hw.json") $(json_field "['host']['waiting']" < "$TMP/hw.json") $(json_field "['host']['longest_wait_ms']" < "$TMP/hw.json")"
check "... in --json: shared_waiting null, host.waiting 4, host.longest_wait_ms within the wait ($got)" \
	sh -c "set -- $got; [ \$1 = None ] && [ \$2 = 4 ] && [ \$3 -gt 0 ] && [ \$3 -lt 20000 ]"
check "... in metrics: flowslot_queue_up 0, no queue length, flowslot_host_waiting 4 ($(grep '^flowslot_host' "$TMP/hw.prom" | paste -sd ' '))" \
	sh -c "grep -q '^flowslot_queue_up{key=\"c9b\"} 0\$' '$TMP/hw.prom' && ! grep -q '^flowslot_queue_length' '$TMP/hw.prom' &&
		grep -q '^flowslot_host_waiting{key=\"c9b\"} 4\$' '$TMP/hw.prom' &&
		awk '/^flowslot_host_longest_wait_seconds\{key=\"c9b\"\}/ { ok = \$2 > 0 } END { exit !ok }' '$TMP/hw.prom'"
check "... and a waiter killed with no cleanup is counted no more ($(json_field "['host']['waiting']" < "$TMP/hw-kill.json"))" \
	[ "$(json_field "['host']['waiting']" < "$TMP/hw-kill.json")" = 3 ]

# 10. metrics --service NAME: that stack's schedules only; without --service, the host's all.
for k in m-one m-two; do
	service "$k" "auth requisite @M url=local state_dir=$TMP/ms key=$k interval=1ms countdown=0" \
		"auth required @P/pam_permit.so"
	login "$k" "$k" "$k"
	printf 'auth requisite %s url=local state_dir=%s key=%s\n' "$MODULE" "$TMP/ms" "$k" > "$TMP/pamd/$k"
done
keys_in() { grep -o '^flowslot_logins_total{key="[^"]*"' "$1" | sort -u | sed 's/.*key="//; s/"$//' | paste -sd ' '; }
"$CTL" "$C" --pam-dir "$TMP/pamd" --service m-one metrics > "$TMP/m-one.prom" 2> /dev/null
"$CTL" "$C" url=local state_dir="$TMP/ms" metrics > "$TMP/m-all.prom" 2> /dev/null
check "metrics --service m-one: only m-one's counters ($(keys_in "$TMP/m-one.prom")); without --service all ($(keys_in "$TMP/m-all.prom"))" \
	sh -c "[ '$(keys_in "$TMP/m-one.prom")' = m-one ] && [ '$(keys_in "$TMP/m-all.prom")' = 'm-one m-two' ] &&
		grep -q '^flowslot_queue_up{key=\"m-one\"} 1' '$TMP/m-one.prom'"

# 9. flowslotctl wait keeps max_wait over the whole wait: a wait whose slot moves past it (two
# places put ahead of it, here by hand, as logins taking their places back would) is refused
# at its renewal, exit 1, as a login is.
"$CTL" "$C" "$R" interval=5s max_wait=8s wait c9 2> /dev/null # goes in at once
"$CTL" "$C" "$R" interval=5s max_wait=8s wait c9 > /dev/null 2> "$TMP/c9.err" &
c9=$!
wait_for 5 sh -c "[ \$(redis-cli -s '$TMP/r.sock' zcount c9 1 '(1e16') = 1 ]"
server_us=$(rcli r time | tr '\n' ' ' | awk '{ printf "%d%06d", $1, $2 }')
for ahead in a1 a2; do
	rcli r zadd c9 1 "w:$ahead:-:-" > /dev/null
	rcli r zadd c9 $((10000000000000000 + server_us + 60000000)) "l:$ahead:-:-" > /dev/null
done
wait "$c9"
rc_c9=$?
check "flowslotctl wait pushed past max_wait: refused at its renewal, exit $rc_c9" \
	sh -c "[ $rc_c9 = 1 ] && grep -q 'Too many logins at the moment' '$TMP/c9.err'"

# 11. The per-host file's lock held by a stopped process (tests/helpers/lockhold.py stop): flowslotctl
# wait takes the file over once the holder has kept it 2 s, not after max_wait, naming the
# holder, and waits its turn as ever (issue 29: it went on without a wait); a lock busy the
# whole max_wait (lockhold.py ring) refuses it with no made-up time.
L="url=local state_dir=$TMP/lk"
"$CTL" "$C" $L wait c11 2> /dev/null # makes the file
python3 "$TREE/tests/helpers/lockhold.py" stop "$TMP/lk/slot.c11" > "$TMP/c11-stop.out" &
holder=$!
PIDS="$PIDS $holder"
wait_for 5 grep -q holding "$TMP/c11-stop.out"
t0=$(now_ms)
"$CTL" "$C" $L fallback=open interval=5s max_wait=30s wait c11 > /dev/null 2> "$TMP/c11.err"
rc=$?
t1=$(now_ms)
check "wait on a stuck file: takes it over and waits its turn, $((t1 - t0)) ms, exit $rc ($(grep -o 'is stuck.*' "$TMP/c11.err"))" \
	sh -c "[ $rc = 0 ] && [ $((t1 - t0)) -ge 2000 ] && [ $((t1 - t0)) -lt 15000 ] &&
		grep -q 'is stuck: pid $holder .*goes on without it' '$TMP/c11.err' &&
		! grep -q -e 'without a wait' -e 'Too many' '$TMP/c11.err'"
kill -CONT "$holder"
kill "$holder"
wait "$holder" 2> /dev/null
"$CTL" "$C" $L wait c11r 2> /dev/null # makes the file
python3 "$TREE/tests/helpers/lockhold.py" ring "$TMP/lk/slot.c11r" 7 > "$TMP/c11-ring.out" &
ring=$!
PIDS="$PIDS $ring"
wait_for 5 grep -q holding "$TMP/c11-ring.out"
"$CTL" "$C" $L max_wait=3s wait c11r > /dev/null 2> "$TMP/c11b.err"
rc=$?
wait "$ring"
check "wait on a file busy past max_wait: refused, exit $rc ($(grep -o 'Too many.*' "$TMP/c11b.err"))" \
	sh -c "[ $rc = 1 ] && grep -qx 'Too many logins at the moment. Please try again later.' '$TMP/c11b.err'"

# 2c, 70 s after its reset.
sleep $((reset_c2c + 70 - $(date +%s) > 0 ? reset_c2c + 70 - $(date +%s) : 0))
login c2c-b c2c c2cb
check "70 s after a reset, what the host heard before it holds nobody: the next login goes in at once ($(grep -o 'refused.*\|admitted: [^ ]*' "$TMP/c2c-b.err" | head -1))" \
	sh -c "[ $(rc_of c2c-b) = 0 ] && grep -q 'admitted: ' '$TMP/c2c-b.err' && ! grep -q 'queued: ' '$TMP/c2c-b.err'"

finish
