#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# End to end on a terminal: Debian's /bin/login and su, under pam_wrapper (as root), in a tmux
# pseudo-terminal. The countdown must show live, one line per step, not all at the end.
set -u
. "$(dirname "$0")/lib.sh"

MATRIX=$(ls /usr/lib/*/pam_wrapper/pam_matrix.so | head -1)
TMUX_SOCK="$TMP/tmux.sock"
start_redis r || exit 1
echo "root:s3cret:login" > "$TMP/passdb"
tmux_() { tmux -S "$TMUX_SOCK" "$@"; }
trap 'tmux_ kill-server 2> /dev/null; cleanup' EXIT

# watch NAME SECONDS: samples the pane every 100 ms; writes "<ms since start> <line>" to
# $TMP/NAME.seen the first time each line shows.
watch_pane() {
	local name=$1 until=$(($(now_ms) + $2 * 1000)) t0 now
	t0=$(now_ms)
	: > "$TMP/$name.seen"
	while [ "$(now_ms)" -lt "$until" ]; do
		now=$(($(now_ms) - t0))
		tmux_ capture-pane -p -t "$name" 2> /dev/null | grep -v '^$' | while IFS= read -r line; do
			grep -qxF -- "$line" <(cut -d' ' -f2- "$TMP/$name.seen") ||
				printf '%s %s\n' "$now" "$line" >> "$TMP/$name.seen"
		done
		sleep 0.1
	done
}
seen_at() { grep -F -- "$2" "$TMP/$1.seen" | head -1 | cut -d' ' -f1; }

in_pane() {
	env LD_PRELOAD=libpam_wrapper.so PAM_WRAPPER=1 PAM_WRAPPER_SERVICE_DIR="$TMP/svc" "$@"
}
occupy() { # takes the next slot of the schedule, so that the login under test must wait
	LD_PRELOAD=libpam_wrapper.so PAM_WRAPPER=1 PAM_WRAPPER_SERVICE_DIR="$TMP/svc" \
		pamtester "$1" someone authenticate > /dev/null 2>&1
}

# /bin/login, gated in auth: countdown, then the password prompt, then a shell.
# The auth line is etc/pam.d/login-flowslot's, with a shorter interval.
mapfile -t recommended < <(example login-flowslot "unix://$TMP/r.sock" "key=console interval=6s countdown=2s")
service login "${recommended[@]}" \
	"auth required $MATRIX passdb=$TMP/passdb" "account required @P/pam_permit.so" \
	"session required @P/pam_permit.so"
occupy login
tmux_ new-session -d -s login -x 120 -y 40 "$(declare -f in_pane); TMP='$TMP' in_pane /bin/login root"
watch_pane login 8
first=$(seen_at login 'Login queue: you are next')
prompt=$(seen_at login 'Password:')
# Every queue line, when it showed: live, one by one, never two within 2 s (sampled every
# 100 ms), then the password prompt.
times=$(grep 'Login queue' "$TMP/login.seen" | cut -d' ' -f1 | tr '\n' ' ')
gaps=$(echo "$times" | awk '{ for (i = 2; i <= NF; i++) printf "%d ", $i - $(i - 1) }')
check "login: the first line shows at once (${first:-never} ms)" in_range "${first:-99999}" -1 1000
check "login: the countdown is live, a line at a time, never two within 2 s (at $times ms; gaps $gaps)" \
	sh -c "[ $(echo "$times" | wc -w) -ge 3 ] && echo '$gaps' | awk '{ for (i = 1; i <= NF; i++) if (\$i < 1800) exit 1 }'"
check "login: then the password prompt (${prompt:-never} ms)" \
	sh -c "[ -n '$prompt' ] && [ $prompt -ge $(echo "$times" | awk '{ print $NF }') ]"
tmux_ send-keys -t login 's3cret' Enter
sleep 1
tmux_ send-keys -t login 'echo flowslot-$((6 * 7))' Enter
sleep 1
check "login: and then a shell" sh -c "tmux -S '$TMUX_SOCK' capture-pane -p -t login | grep -q '^flowslot-42'"
tmux_ send-keys -t login 'exit' Enter

# su, through its own service: the same countdown, live, then the command.
service su "auth required @M url=unix://$TMP/r.sock key=su interval=3s countdown=0" \
	"auth required @P/pam_permit.so" "account required @P/pam_permit.so" \
	"session required @P/pam_permit.so"
occupy su
tmux_ new-session -d -s su -x 120 -y 40 \
	"$(declare -f in_pane); TMP='$TMP' in_pane su -s /bin/sh -c 'echo su-ran' nobody; sleep 5"
watch_pane su 4
first=$(seen_at su 'Login queue: you are next')
turn=$(seen_at su 'Login queue: your turn now.')
ran=$(seen_at su 'su-ran')
check "su: countdown live (${first:-never} then ${turn:-never} ms), then the command (${ran:-never} ms)" \
	sh -c "[ -n '$ran' ] && [ $((turn - first)) -ge 1000 ] && [ $ran -ge $turn ]"

# Who is exempt: root running su to another user. pam_succeed_if's "uid eq 0" and "user ingroup
# sudo" test the target user; su sets PAM_RUSER to its caller, which the pam-auth-update
# profile's "ruser = root" and "ruser ingroup sudo" lines test. The queue is 60 s long
# (max_wait 2 s): a user who is not exempt is refused.
occ() { LD_PRELOAD=libpam_wrapper.so PAM_WRAPPER=1 PAM_WRAPPER_SERVICE_DIR="$TMP/svc" \
	pamtester occ someone authenticate > /dev/null 2>&1; }
service occ "auth required @M url=unix://$TMP/r.sock key=suex interval=60s"
occ
profile_block() { # the profile's session lines, the gate on the test's queue
	sed -n '/^Session:/,/^[^\t]/p' "$TOP/etc/pam-configs/flowslot" | grep $'^\t' | tr '\t' ' ' |
		sed -E "s|^ *|session |; s| pam_succeed_if.so| $PAM_DIR/pam_succeed_if.so|;
			s|pam_flowslot.so|$MODULE url=unix://$TMP/r.sock key=suex interval=60s max_wait=2s|"
}
su_as_root() { # NAME: root runs su to nobody in a pane; the pane's text in $TMP/NAME.screen
	tmux_ new-session -d -s "$1" -x 150 -y 20 \
		"$(declare -f in_pane); TMP='$TMP' in_pane su -s /bin/sh -c 'echo su-ran' nobody; echo rc=\$?; sleep 10"
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

# A terminal that hangs up while /bin/login waits in the queue: the module sees the terminal
# hang up (PAM_TTY) and gives its place back at once, well before its 5 s lease would run out.
service login "auth requisite @M url=unix://$TMP/r.sock key=hup interval=20s countdown=1s" \
	"auth required $MATRIX passdb=$TMP/passdb" "account required @P/pam_permit.so" \
	"session required @P/pam_permit.so"
occupy login
# login must keep its terminal as its standard streams; the shell after it outlives it.
tmux_ new-session -d -s hup -x 120 -y 40 \
	"$(declare -f in_pane); TMP='$TMP' in_pane /bin/login root; sleep 30"
hup_waiting() { [ "$(waiting r hup)" = "$1" ]; }
wait_for 5 hup_waiting 1
queued=$(waiting r hup)
t0=$(now_ms)
tmux_ kill-session -t hup
wait_for 3 hup_waiting 0
gone_ms=$(($(now_ms) - t0))
check "console hang-up: the waiting login gives its place back at once (${queued} waiting, then 0 after ${gone_ms} ms)" \
	sh -c "[ $queued = 1 ] && [ $gone_ms -lt 2000 ] && [ $(ghosts r hup) = 1 ]"

finish
