#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# End to end on a terminal: Debian's /bin/login and su, under pam_wrapper (as root), in a tmux
# pseudo-terminal. The countdown must show live, one line per step, not all at the end.
set -u
. "$(dirname "$0")/../helpers/lib.sh"

MATRIX=$(ls /usr/lib/*/pam_wrapper/pam_matrix.so | head -1)
TMUX_SOCK="$TMP/tmux.sock"
start_redis r || exit 1
echo "root:s3cret:login" > "$TMP/passdb"
tmux_() { tmux -S "$TMUX_SOCK" "$@"; }
trap 'tmux_ kill-server 2> /dev/null; cleanup' EXIT
# A session that outlives the others: tmux's server ends with its last session, and a test's
# session must never start while the one before it takes the server down.
tmux_ new-session -d -s keep "sleep 900"

# watch NAME SECONDS LAST: samples the pane every 100 ms; writes "<ms since start> <line>" to
# $TMP/NAME.seen the first time each line shows; stops once a line holds LAST, or after
# SECONDS (generous: a loaded machine may be slow to start the login). When each line showed,
# for certain, goes to $TMP/NAME.span as "<after> <by> <line>": after the sample before began
# (it was not there yet), and by the end of the sample it was first seen in. A sample can take
# hundreds of ms on a loaded machine, which a gap between two sample times does not show.
watch_pane() {
	local name=$1 until=$(($(now_ms) + $2 * 1000)) t0 now by before=0 line
	t0=$(now_ms)
	: > "$TMP/$name.seen"
	: > "$TMP/$name.span"
	while [ "$(now_ms)" -lt "$until" ] && ! grep -qF -- "$3" "$TMP/$name.seen"; do
		now=$(($(now_ms) - t0))
		tmux_ capture-pane -p -t "$name" 2> "$TMP/$name.capture-err" | grep -v '^$' > "$TMP/$name.pane"
		by=$(($(now_ms) - t0))
		echo "$now $by $(wc -l < "$TMP/$name.pane") $(head -c 80 "$TMP/$name.capture-err")" >> "$TMP/$name.samples"
		while IFS= read -r line; do
			grep -qxF -- "$line" <(cut -d' ' -f2- "$TMP/$name.seen") && continue
			printf '%s %s\n' "$now" "$line" >> "$TMP/$name.seen"
			printf '%s %s %s\n' "$before" "$by" "$line" >> "$TMP/$name.span"
		done < "$TMP/$name.pane"
		before=$now
		sleep 0.1
	done
}
seen_at() { grep -F -- "$2" "$TMP/$1.seen" | head -1 | cut -d' ' -f1; }

# $TMP/in_pane COMMAND...: COMMAND under pam_wrapper, in a pane, as lib.sh's login() runs one:
# in a private /tmp, where pam_wrapper's working directory goes with it. /bin/login, killed by
# its terminal's SIGHUP, never removes its own: run so, it left one in the host's /tmp each time.
{
	echo '#!/bin/bash'
	declare -p PRIVATE_TMP TMP
	# shellcheck disable=SC2016
	echo 'exec "${PRIVATE_TMP[@]}" env LD_PRELOAD=libpam_wrapper.so PAM_WRAPPER=1 PAM_WRAPPER_SERVICE_DIR="$TMP/svc" "$@"'
} > "$TMP/in_pane"
chmod +x "$TMP/in_pane"
occupy() { # takes the next slot of the schedule, so that the login under test must wait
	"$TMP/in_pane" pamtester "$1" someone authenticate > /dev/null 2>&1
}

# /bin/login, gated in auth: countdown, then the password prompt, then a shell.
# The auth line is etc/pam.d/login-flowslot's, with a shorter interval.
mapfile -t recommended < <(example login-flowslot "unix://$TMP/r.sock" "key=console interval=6s countdown=2s")
service login "${recommended[@]}" \
	"auth required $MATRIX passdb=$TMP/passdb" "account required @P/pam_permit.so" \
	"session required @P/pam_permit.so"
occupy login
tmux_ new-session -d -s login -x 120 -y 40 "'$TMP/in_pane' /bin/login root"
watch_pane login 15 'Password:'
first=$(seen_at login 'Login queue: you are next')
prompt=$(seen_at login 'Password:')
# Every queue line, when it showed: live, one by one, never two within 2 s, then the password
# prompt. A gap is taken at its widest, from when the line before it may have shown to when it
# had shown for certain (watch_pane): once, a first line seen 300 ms late by a slow sample made
# the next gap look 1713 ms. Two lines sent together still show in one sample, a gap of one.
times=$(grep 'Login queue' "$TMP/login.seen" | cut -d' ' -f1 | tr '\n' ' ')
gaps=$(grep 'Login queue' "$TMP/login.span" |
	awk '{ if (NR > 1) printf "%d ", $2 - after } { after = $1 }')
check "login: the first line shows at once (${first:-never} ms)" in_range "${first:-99999}" -1 1000
check "login: the countdown is live, a line at a time, never two within 2 s (at $times ms; gaps at most $gaps)" \
	sh -c "[ $(echo "$times" | wc -w) -ge 3 ] && echo '$gaps' | awk '{ for (i = 1; i <= NF; i++) if (\$i < 1800) exit 1 }'"
check "login: then the password prompt (${prompt:-never} ms)" \
	sh -c "[ -n '$prompt' ] && [ $prompt -ge $(echo "$times" | awk '{ print $NF }') ]"
pane_has() { tmux_ capture-pane -p -t "$1" | grep -q -- "$2"; }
tmux_ send-keys -t login 's3cret' Enter
# Typed only once the shell prompts: login may flush what was typed before.
wait_for 15 pane_has login '[#$] *$'
tmux_ send-keys -t login 'echo flowslot-$((6 * 7))' Enter
wait_for 10 pane_has login '^flowslot-42'
check "login: and then a shell" pane_has login '^flowslot-42'
tmux_ send-keys -t login 'exit' Enter
# The next pane starts once this one is gone, and outlives its watch (30 s). Twice in CI, and
# twice in ten runs here beside the ssh suite, the su pane, started as the login pane went
# away, showed its first line only, though su went in ("went in" logged) and exited 0: its
# pane was gone (its sleep over) before the watch saw any more of it.
pane_gone() { ! tmux_ list-panes -a -F '#{session_name}' | grep -qx "$1"; }
wait_for 15 pane_gone login
# su, through its own service: the same countdown, live, then the command.
# su's log (the module's lines, with debug) and exit status go to files: the pane shows what
# the user sees.
service su "auth required @M url=unix://$TMP/r.sock key=su interval=3s countdown=0 debug" \
	"auth required @P/pam_permit.so" "account required @P/pam_permit.so" \
	"session required @P/pam_permit.so"
occupy su
tmux_ new-session -d -s su -x 120 -y 40 \
	"PAM_WRAPPER_DEBUGLEVEL=2 '$TMP/in_pane' su -s /bin/sh -c 'echo su-ran' nobody 2> '$TMP/su.err'; echo \$? > '$TMP/su.rc'; sleep 30"
watch_pane su 12 'su-ran'
first=$(seen_at su 'Login queue: you are next')
turn=$(seen_at su 'Login queue: your turn now.')
ran=$(seen_at su 'su-ran')
# The turn line is told only 2 s or more after the line before it: the command, then. Had the
# command not run, the label shows what the pane last said, su's exit status and its last log
# lines (twice, in CI: the first line, then nothing for 12 s).
seen=""
if [ -z "$ran" ]; then
	seen="; the pane last said: $(cut -d' ' -f2- "$TMP/su.seen" | tail -3 | paste -sd '|')"
	seen="$seen; su's exit status: $(cat "$TMP/su.rc" 2> /dev/null || echo 'none (running, or its pane gone)')"
	seen="$seen; its log: $(grep -o 'SYSLOG.*' "$TMP/su.err" 2> /dev/null | tail -4 | paste -sd '|')"
	seen="$seen; samples (begun, done, lines, error): $(tail -4 "$TMP/su.samples" | paste -sd '|')"
fi
check "su: countdown live (${first:-never} then ${turn:-untold} ms), then the command (${ran:-never} ms)$seen" \
	sh -c "[ -n '$first' ] && [ -n '$ran' ] && [ $((ran - first)) -ge 1000 ] && [ $ran -ge ${turn:-0} ]"
tmux_ kill-session -t su 2> /dev/null

# Who is exempt: root running su to another user. pam_succeed_if's "uid eq 0" and "user ingroup
# sudo" test the target user; su sets PAM_RUSER to its caller, which the pam-auth-update
# profile's "ruser = root" and "ruser ingroup sudo" lines test. The queue is 60 s long
# (max_wait 2 s): a user who is not exempt is refused.
occ() { "$TMP/in_pane" pamtester occ someone authenticate > /dev/null 2>&1; }
service occ "auth required @M url=unix://$TMP/r.sock key=suex interval=60s"
occ
profile_block() { # [OPTIONS]: the profile's session lines, the gate on the test's queue
	sed -n '/^Session:/,/^[^\t]/p' "$TOP/etc/pam-configs/flowslot" | grep $'^\t' | tr '\t' ' ' |
		sed -E "s|^ *|session |; s| pam_succeed_if.so| $PAM_DIR/pam_succeed_if.so|;
			s|pam_flowslot.so|$MODULE url=unix://$TMP/r.sock ${1:-key=suex interval=60s max_wait=2s}|" |
		sed "$OWN_STATE"
}
su_as_root() { # NAME: root runs su to nobody in a pane; the pane's text in $TMP/NAME.screen
	tmux_ new-session -d -s "$1" -x 150 -y 20 \
		"'$TMP/in_pane' su -s /bin/sh -c 'echo su-ran' nobody; echo rc=\$?; sleep 10"
	wait_for 8 sh -c "tmux -S '$TMUX_SOCK' capture-pane -p -t '$1' | grep -q '^rc='"
	tmux_ capture-pane -p -t "$1" | grep -v '^$' > "$TMP/$1.screen"
}
mapfile -t block < <(profile_block)
service su "auth required @P/pam_permit.so" "account required @P/pam_permit.so" "${block[@]}" \
	"session required @P/pam_permit.so"
su_as_root suex
check "su by root to another user, through the profile: exempt, at once (${#block[@]} lines; $(tr '\n' '|' < "$TMP/suex.screen"))" \
	sh -c "grep -qx 'su-ran' '$TMP/suex.screen' && grep -qx 'rc=0' '$TMP/suex.screen' && ! grep -q 'Login queue\|Too many' '$TMP/suex.screen'"
mapfile -t block < <(profile_block | grep -v ruser | sed 's/success=4/success=2/; s/success=3/success=1/')
service su "auth required @P/pam_permit.so" "account required @P/pam_permit.so" "${block[@]}" \
	"session required @P/pam_permit.so"
su_as_root suold
check "... whereas the target-only tests (uid eq 0, user ingroup sudo) queue root's su: refused ($(tr '\n' '|' < "$TMP/suold.screen"))" \
	sh -c "grep -q 'Too many logins' '$TMP/suold.screen' && ! grep -qx 'su-ran' '$TMP/suold.screen'"

# su, runuser and sudo run by a user outside group sudo, for real: su and sudo are set-uid, so
# pam_wrapper cannot be preloaded into them from an unprivileged caller. They run in a private
# mount namespace instead, under a tmux server of its own started there, which sees a copy of
# /etc: in pam.d the shipped profile's block in common-session, a permit for auth and account;
# in passwd, group and shadow three users: CALLER and SUDOER (in sudoers, NOPASSWD and not),
# neither in group sudo, and TARGET. The host's files are never written (tests/helpers/untouched.sh
# checks /etc/pam.d).
NS=$TMP/ns
TMUX_NS="$TMP/tmux-ns.sock"
tns() { tmux -S "$TMUX_NS" "$@"; }
trap 'tmux_ kill-server 2> /dev/null; tns kill-server 2> /dev/null; cleanup' EXIT
free_id() { # a uid and gid that no user or group of the host has, from $1 up
	local id=$1
	while getent passwd "$id" > /dev/null || getent group "$id" > /dev/null; do id=$((id + 1)); done
	echo "$id"
}
CALLER=flowslot-caller SUDOER=flowslot-sudoer TARGET=flowslot-target
caller_id=$(free_id 61000)
sudoer_id=$(free_id $((caller_id + 1)))
target_id=$(free_id $((sudoer_id + 1)))
# su, sudo and login are set-uid: the loader ignores LD_PRELOAD for them, so pam_wrapper cannot
# give them a service directory of the suite's, and they read /etc/pam.d. They run in a mount
# namespace where /etc is $NS/sysconf, the suite's copy; the host's /etc is never written.
# A copy of the whole of /etc, bound on /etc in the namespace: a file bound alone (passwd, say)
# is dropped from the namespace when the host renames a new one over it, as useradd does, and
# other suites add users meanwhile (the front ends' beside this one in make check-e2e).
mkdir -p "$NS"
cp -a /etc "$NS/sysconf"
for u in "$CALLER:$caller_id" "$SUDOER:$sudoer_id" "$TARGET:$target_id"; do
	echo "${u%:*}:x:${u#*:}:${u#*:}::/:/bin/sh" >> "$NS/sysconf/passwd"
	echo "${u%:*}:x:${u#*:}:" >> "$NS/sysconf/group"
	echo "${u%:*}:!:19000::::::" >> "$NS/sysconf/shadow"
done
echo "auth required $PAM_DIR/pam_permit.so" > "$NS/sysconf/pam.d/common-auth"
echo "account required $PAM_DIR/pam_permit.so" > "$NS/sysconf/pam.d/common-account"
ns_session() { # OPTIONS: common-session is the profile's block, the gate on OPTIONS
	{ profile_block "$1"; echo "session required $PAM_DIR/pam_permit.so"; } > "$NS/sysconf/pam.d/common-session"
}
ns_session "key=ns interval=4s countdown=2s"
# What sudo runs: each phase's name, service and items, as root (seteuid), into $TMP/phases.
printf '%s\n' 'echo "$PAM_TYPE $PAM_SERVICE ruser=$PAM_RUSER user=$PAM_USER" >> "$1"' > "$NS/phase.sh"
HAVE_SUDO=""
if command -v sudo > /dev/null && [ -f /etc/pam.d/sudo ] && [ -f /etc/pam.d/sudo-i ]; then
	HAVE_SUDO=1
	for s in sudo sudo-i; do
		for t in auth account session; do
			echo "$t optional $PAM_DIR/pam_exec.so quiet seteuid /bin/sh $NS/phase.sh $TMP/phases"
		done | cat - /etc/pam.d/$s > "$NS/sysconf/pam.d/$s"
	done
	printf '%s ALL=(ALL) NOPASSWD: ALL\n%s ALL=(ALL) ALL\n' "$CALLER" "$SUDOER" >> "$NS/sysconf/sudoers"
	chmod 0440 "$NS/sysconf/sudoers"
fi
occ_ns() { "$TMP/in_pane" pamtester occns someone authenticate > /dev/null 2>&1; }
service occns "auth required @M url=unix://$TMP/r.sock key=ns interval=4s"
# shellcheck disable=SC2016
unshare --mount --propagation private sh -c '
	ns=$1 sock=$2 have_sudo=$3
	mount --bind "$ns/sysconf" /etc || exit 1
	# sudo keeps its timestamps in /run/sudo: a /run of this namespace alone.
	if [ -n "$have_sudo" ]; then
		mount -t tmpfs -o mode=0755 tmpfs /run || exit 1
	fi
	exec tmux -S "$sock" new-session -d -s keep "sleep 600"' sh "$NS" "$TMUX_NS" "$HAVE_SUDO"
ns_ok=$?
# as NAME UID SECONDS LAST COMMAND: the queue taken, COMMAND run in a pane of the namespace by
# UID (real and effective, no groups), then "rc=N"; the pane watched as watch_pane does, into
# $TMP/NAME.seen, until a line holds LAST.
as() {
	local name=$1 uid=$2 secs=$3 last=$4 t0 until now
	shift 4
	occ_ns
	tns new-session -d -s "$name" -x 150 -y 30 \
		"setpriv --reuid=$uid --regid=$uid --clear-groups $*; echo rc=\$?; sleep 30"
	t0=$(now_ms)
	until=$((t0 + secs * 1000))
	: > "$TMP/$name.seen"
	while [ "$(now_ms)" -lt "$until" ] && ! grep -qF -- "$last" "$TMP/$name.seen"; do
		now=$(($(now_ms) - t0))
		tns capture-pane -p -t "$name" 2> /dev/null | grep -v '^$' | while IFS= read -r line; do
			grep -qxF -- "$line" <(cut -d' ' -f2- "$TMP/$name.seen") ||
				printf '%s %s\n' "$now" "$line" >> "$TMP/$name.seen"
		done
		sleep 0.1
	done
}
# told_live NAME AFTER: the first queue line showed 1 s or more before the line holding AFTER,
# and the turn ("your turn now": the wait is about 4 s) between them, at any arrival (issue 39:
# su -c never showed it at countdown=2s in about half of them);
# ran_live NAME AFTER: that, and COMMAND's exit status was 0.
told_live() {
	local first turn after
	first=$(seen_at "$1" 'Login queue: you are next')
	turn=$(seen_at "$1" 'Login queue: your turn now.')
	after=$(seen_at "$1" "$2")
	[ -n "$first" ] && [ -n "$turn" ] && [ -n "$after" ] && [ $((after - first)) -ge 1000 ] &&
		[ "$turn" -ge "$first" ] && [ "$after" -ge "$turn" ]
}
ran_live() { told_live "$@" && grep -q ' rc=0$' "$TMP/$1.seen"; }
seen() { tr '\n' '|' < "$TMP/$1.seen"; }
if [ "$ns_ok" = 0 ]; then
	as suc "$caller_id" 15 'rc=' su "$TARGET" -c "'echo su-ran'"
	check "su USER -c CMD by a user outside group sudo: told live, then the command ($(seen suc))" \
		ran_live suc su-ran
	as sus "$caller_id" 15 '$' su "$TARGET"
	check "su USER by a user outside group sudo: told live, then the shell ($(seen sus))" \
		told_live sus '$'
	tns kill-session -t sus
	as sul "$caller_id" 15 '$' su - "$TARGET"
	check "su - USER by a user outside group sudo: told live, then the shell ($(seen sul))" \
		told_live sul '$'
	tns kill-session -t sul
	as sulc "$caller_id" 15 'rc=' su - "$TARGET" -c "'echo su-ran'"
	check "su - USER -c CMD by a user outside group sudo: told live, then the command ($(seen sulc))" \
		ran_live sulc su-ran
	# The administrator's choice: quiet says nothing, and the wait is the same.
	ns_session "key=ns interval=4s countdown=2s quiet"
	as suq "$caller_id" 15 'rc=' su "$TARGET" -c "'echo su-ran'"
	ran=$(seen_at suq su-ran)
	check "su USER -c CMD with quiet: waits (${ran:-never} ms), and says nothing ($(seen suq))" \
		sh -c "[ -n '$ran' ] && [ '$ran' -ge 2000 ] && ! grep -q 'Login queue' '$TMP/suq.seen'"
	ns_session "key=ns interval=4s countdown=2s"
	# A user's own su is theirs to stop, kill and starve (issue 38): on the per-host schedule,
	# one su queued among logins that root queued 2 s apart is stopped 6 s by its caller, then
	# killed, and three more are started under their caller's own memory limit (prlimit --as,
	# which su's set-uid exec keeps), 4.5, 6 and 8.5 MB, behind all of them. The logins behind
	# the stopped one lose no more than its lease, none is refused, all go in an interval apart,
	# and no su under a limit runs its command before the last of them went in.
	ns_session "url=local state_dir=$TMP/ustate key=us interval=2s max_wait=60s countdown=2s"
	service us "auth required @M url=local state_dir=$TMP/ustate key=us interval=2s max_wait=60s countdown=0 debug" \
		"$STAMP" "auth required @P/pam_permit.so"
	rm -f "$TMP/stamps"
	ulogins=""
	ulogin() { # NAME: root's login on the schedule, in the background
		login "$1" us "$1" &
		ulogins="$ulogins $!"
	}
	ulogin u0
	wait_for 5 grep -q 'admitted: \|queued: ' "$TMP/u0.err"
	ulogin u1
	wait_for 5 grep -q 'queued: ' "$TMP/u1.err"
	tns new-session -d -s ust -x 150 -y 30 \
		"setpriv --reuid=$caller_id --regid=$caller_id --clear-groups su $TARGET -c 'echo su-ran'; echo rc=\$?; sleep 30"
	wait_for 10 sh -c "tmux -S '$TMUX_NS' capture-pane -p -t ust | grep -q 'Login queue: you are number'"
	st_pid=$(pgrep -P "$(tns display -p -t ust '#{pane_pid}')" | head -1)
	for u in u2 u3 u4; do
		ulogin "$u"
		wait_for 5 grep -q 'queued: ' "$TMP/$u.err"
	done
	kill -STOP "$st_pid"
	for lim in 4500000 6000000 8500000; do
		tns new-session -d -s "um$lim" -x 150 -y 30 \
			"setpriv --reuid=$caller_id --regid=$caller_id --clear-groups prlimit --as=$lim su $TARGET -c 'echo su-ran-\$(date +%s%N)'; echo rc=\$?; sleep 30"
	done
	sleep 6
	kill -KILL "$st_pid"
	# shellcheck disable=SC2086 # a list of pids
	wait $ulogins
	for lim in 4500000 6000000 8500000; do
		wait_for 30 sh -c "tmux -S '$TMUX_NS' capture-pane -p -t um$lim | grep -q '^rc='"
		tns capture-pane -p -t "um$lim" | grep -v '^$' > "$TMP/um$lim.screen"
	done
	last_in=$(sort -n "$TMP/stamps" | tail -1 | cut -d' ' -f1)
	order=$(sort -n "$TMP/stamps" | awk '{ printf "%s ", $2 }')
	gaps=$(sort -n "$TMP/stamps" | awk 'NR > 1 { printf "%d ", ($1 - t) / 1e6 } { t = $1 }')
	span=$(sort -n "$TMP/stamps" | awk 'NR == 1 { a = $1 } END { printf "%d", ($1 - a) / 1e6 }')
	check "real su, stopped 6 s by its caller while it waited, then killed: those behind it all go in, in order, an interval apart, within its lease ($order; gaps $gaps; ${span} ms)" \
		sh -c "[ '$order' = 'u0 u1 u2 u3 u4 ' ] && [ \$(cat '$TMP'/u?.rc | tr -d '\n') = 00000 ] &&
			echo '$gaps' | awk '{ for (i = 1; i <= NF; i++) if (\$i < 1500) exit 1 }' && [ $span -le 18000 ]"
	early=""
	for lim in 4500000 6000000 8500000; do
		ran=$(grep -o 'su-ran-[0-9]*' "$TMP/um$lim.screen" | cut -d- -f3)
		[ -n "$ran" ] && [ "$ran" -lt "$last_in" ] && early="$early $lim"
	done
	check "real su under its caller's own memory limit (4.5, 6, 8.5 MB), behind them: none runs its command before the last went in (${early:-none early}; $(for lim in 4500000 6000000 8500000; do grep -h -m1 -e 'rc=' -e 'Login queue' -e 'su-ran' -e 'refused' "$TMP/um$lim.screen" | head -2 | tr '\n' ' '; done))" \
		[ -z "$early" ]
	tns kill-session -t ust 2> /dev/null
	for lim in 4500000 6000000 8500000; do tns kill-session -t "um$lim" 2> /dev/null; done
	ns_session "key=ns interval=4s countdown=2s"
	# runuser: Debian's stack has no common-session (and its caller is root); with the module
	# in it, root's runuser waits, told live.
	cp "$NS/sysconf/pam.d/runuser" "$NS/runuser.orig"
	echo "session required $MODULE url=unix://$TMP/r.sock key=ns interval=4s countdown=2s state_dir=$TMP/state" \
		>> "$NS/sysconf/pam.d/runuser"
	as ru 0 15 'rc=' runuser -u "$TARGET" -- sh -c "'echo runuser-ran'"
	check "runuser -u USER -- CMD, the module in runuser's session: told live, then the command ($(seen ru))" \
		ran_live ru runuser-ran
	cp "$NS/runuser.orig" "$NS/sysconf/pam.d/runuser"
else
	not_ok "su by a user outside group sudo: the private mount namespace could not be set up"
fi
if [ "$ns_ok" = 0 ] && [ -n "$HAVE_SUDO" ]; then
	# sudo CMD: Debian's sudo stack has common-session-noninteractive, without the profile: in at
	# once, while the queue is busy. No password asked (NOPASSWD): no pam_authenticate.
	: > "$TMP/phases"
	as sudoc "$caller_id" 15 'rc=' sudo -u "$TARGET" sh -c "'echo sudo-ran'"
	ran=$(seen_at sudoc sudo-ran)
	check "sudo CMD: not queued by the profile, in at once (${ran:-never} ms, slot 4000), nothing said ($(seen sudoc))" \
		sh -c "[ -n '$ran' ] && [ '$ran' -lt 3000 ] && ! grep -q 'Login queue' '$TMP/sudoc.seen'"
	check "... NOPASSWD: account and session, no auth ($(tr '\n' '|' < "$TMP/phases"))" \
		sh -c "[ \"\$(cut -d' ' -f1 '$TMP/phases' | tr '\n' ' ')\" = 'account open_session close_session ' ]"
	# A password asked (pam_permit answers it here): auth runs; the same again from that
	# terminal within the timestamp's life: no auth. PAM_USER is the caller in auth and
	# account, the target in the session; PAM_RUSER is the caller.
	: > "$TMP/phases"
	as sudop "$sudoer_id" 15 'rc=' sh -c "'sudo -u $TARGET true && sudo -u $TARGET true'"
	check "sudo CMD asking a password: auth, account, session; again with the cached credentials: no auth ($(tr '\n' '|' < "$TMP/phases"))" \
		sh -c "[ \"\$(cut -d' ' -f1 '$TMP/phases' | tr '\n' ' ')\" = 'auth account open_session close_session account open_session close_session ' ] &&
			grep -qx 'auth sudo ruser=$SUDOER user=$SUDOER' '$TMP/phases' && grep -qx 'open_session sudo ruser=$SUDOER user=$TARGET' '$TMP/phases'"
	# sudo -i: service sudo-i, common-session and the profile: the caller outside group sudo
	# waits, told live.
	: > "$TMP/phases"
	as sudoi "$caller_id" 15 'rc=' sudo -i -u "$TARGET" echo sudo-i-ran
	check "sudo -i by a user outside group sudo: told live, then the command ($(seen sudoi))" \
		ran_live sudoi sudo-i-ran
	check "... its session is the service sudo-i's ($(tr '\n' '|' < "$TMP/phases"))" \
		grep -q "^open_session sudo-i ruser=$CALLER user=$TARGET\$" "$TMP/phases"
	# The module added to sudo's own session: sudo CMD opens it with PAM_SILENT (only -i and
	# -s do not), which the module obeys: a wait in silence.
	cp "$NS/sysconf/pam.d/sudo" "$NS/sudo.orig"
	echo "session required $MODULE url=unix://$TMP/r.sock key=ns interval=4s countdown=2s state_dir=$TMP/state" \
		>> "$NS/sysconf/pam.d/sudo"
	as sudos "$caller_id" 15 'rc=' sudo -u "$TARGET" sh -c "'echo sudo-ran'"
	ran=$(seen_at sudos sudo-ran)
	check "sudo CMD, the module in sudo's session: waits (${ran:-never} ms) in silence, PAM_SILENT ($(seen sudos))" \
		sh -c "[ -n '$ran' ] && [ '$ran' -ge 2000 ] && ! grep -q 'Login queue' '$TMP/sudos.seen'"
	cp "$NS/sudo.orig" "$NS/sysconf/pam.d/sudo"
elif [ "$ns_ok" = 0 ]; then
	echo "# skipped sudo: not installed (tests/deps.sh installs it)"
fi
tns kill-server 2> /dev/null

# A terminal that hangs up while /bin/login waits in the queue. The hang-up's SIGHUP kills
# login outright (see LOGIN-PATHS.md), and the module gives its place back at once only when
# its poll on PAM_TTY happens to wake first: what it promises a process killed outright is
# the lease (its slot 20 s off, within two intervals: near, SLOT_LEASE_US, 5 s). So: the place
# was live when the terminal went, and is gone within the lease plus a margin for a loaded
# machine, long before the 20 s slot.
service login "auth requisite @M url=unix://$TMP/r.sock key=hup interval=20s countdown=1s" \
	"auth required $MATRIX passdb=$TMP/passdb" "account required @P/pam_permit.so" \
	"session required @P/pam_permit.so"
occupy login
# login must keep its terminal as its standard streams; the shell after it outlives it.
tmux_ new-session -d -s hup -x 120 -y 40 \
	"'$TMP/in_pane' /bin/login root; sleep 30"
live_is() { [ "$(live r "$1")" = "$2" ]; }
wait_for 10 live_is hup 1
queued=$(live r hup)
t0=$(now_ms)
tmux_ kill-session -t hup
wait_for 12 live_is hup 0
gone_ms=$(($(now_ms) - t0))
check "console hang-up, login killed by SIGHUP: its place was live (${queued}), and is gone within the lease (${gone_ms} ms, lease 5000, slot 20000)" \
	sh -c "[ $queued = 1 ] && [ $gone_ms -lt 9000 ]"

# A hang-up the module sees: a login that ignores SIGHUP (as a trap '' HUP makes it, across
# exec) lives on when its terminal hangs up, and the module's poll on PAM_TTY (its duplicate of
# standard input) sees POLLHUP: the place goes back at once, and is remembered as a ghost for
# a retry. The terminal is hung up only once the module logged that it watches it: a hang-up
# before the watch opens is not one this checks.
service hupig "auth requisite @M url=unix://$TMP/r.sock key=hupig interval=20s countdown=1s debug" \
	"auth required @P/pam_permit.so"
occupy hupig
tmux_ new-session -d -s hupig -x 120 -y 40 \
	"trap '' HUP; PAM_WRAPPER_DEBUGLEVEL=2 '$TMP/in_pane' pamtester -v -I tty=\$(tty) hupig root authenticate 2> '$TMP/hupig.err'; echo \$? > '$TMP/hupig.rc'; sleep 30"
watching() { grep -q 'watching for a hang-up: tty /dev/pts/' "$TMP/hupig.err" 2> /dev/null; }
wait_for 10 watching
queued=$(live r hupig)
t0=$(now_ms)
tmux_ kill-session -t hupig
wait_for 9 live_is hupig 0
gone_ms=$(($(now_ms) - t0))
wait_for 5 test -s "$TMP/hupig.rc"
check "console hang-up seen: the place was live (${queued}), is given back at once (${gone_ms} ms, lease 5000), leaving a ghost ($(ghosts r hupig))" \
	sh -c "[ $queued = 1 ] && [ $gone_ms -lt 2000 ] && [ $(ghosts r hupig) = 1 ]"
check "... because the module saw the hang-up: the login logged abandoned and failed (rc $(cat "$TMP/hupig.rc" 2> /dev/null))" \
	sh -c "grep -q 'abandoned: ' '$TMP/hupig.err' && [ \"\$(cat '$TMP/hupig.rc')\" != 0 ]"

finish
