#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# make demo: six simultaneous logins through pamtester (under pam_wrapper, so /etc/pam.d is
# untouched), staggered one second apart by pam_flowslot on a private redis-server. The stack
# is the session line the README gives for sshd (etc/pam.d/sshd-flowslot), with its bracket.
set -u
. "$(dirname "$0")/helpers/lib.sh"

N=6
# The control of etc/pam.d/sshd-flowslot's module line, whatever it becomes.
BRACKET=$(sed -nE 's/^session +(\[[^]]*\]) +pam_flowslot\.so.*/\1/p' "$TOP/etc/pam.d/sshd-flowslot")
[ -n "$BRACKET" ] || { echo "demo: no session line of pam_flowslot in etc/pam.d/sshd-flowslot" >&2; exit 1; }
start_redis demo || exit 1
service flowslot-demo \
	"session $BRACKET @M url=unix://$TMP/demo.sock key=demo:%s interval=1s countdown=1s" \
	"session optional @P/pam_exec.so quiet /bin/sh $TREE/tests/helpers/stamp.sh $TMP/stamps" \
	"session required @P/pam_permit.so"

echo "pam_flowslot demo: $N logins at the same instant, interval=1s, one private redis-server"
echo "(unix socket $TMP/demo.sock). The PAM stack, the session line the README gives for sshd:"
sed "s|^|    |; s|$TREE/||g; s|$TMP/||g" "$TMP/svc/flowslot-demo"
echo
echo "Admissions, as they happen:"
start=$(date +%s%N)
shown=0
show_new_admissions() {
	[ -f "$TMP/stamps" ] || return 0
	snapshot=$(sort -n "$TMP/stamps")
	printf '%s\n' "$snapshot" | tail -n +$((shown + 1)) |
		awk -v t0="$start" '{ printf "  +%5.2f s  %s admitted\n", ($1 - t0) / 1e9, $2 }'
	shown=$(printf '%s\n' "$snapshot" | wc -l)
}
logins u flowslot-demo "$N" open_session &
runner=$!
while kill -0 "$runner" 2> /dev/null; do
	show_new_admissions
	sleep 0.05
done
show_new_admissions
wait "$runner"

echo
echo "What each login was told (PAM_TEXT_INFO through the conversation, live as on a console;"
echo "over ssh, messages=auto sends one line after the wait instead), in order of admission:"
for user in $(sort -n "$TMP/stamps" | awk '{ print $2 }'); do
	lines=$(grep -o 'Login queue.*' "$TMP/$user.out")
	[ -n "$lines" ] || lines="(no wait, no message)"
	printf '%s\n' "$lines" | sed "1s/^/  $user: /; 2,\$s/^/       /"
done

echo
echo "Timeline: one column is 100 ms from the common start; # marks the admission."
sort -n "$TMP/stamps" | while read -r ns user; do
	cols=$(((ns - start) / 100000000))
	printf '  %s |%s#\n' "$user" "$(printf '%*s' "$cols" '' | tr ' ' '.')"
done
spread=$(sort -n "$TMP/stamps" | awk 'NR == 1 { a = $1 } { b = $1 } END { printf "%.1f", (b - a) / 1e9 }')
failed=$(grep -L '^0$' "$TMP"/u*.rc | wc -l)
echo
echo "$N logins, $failed failed; first to last admission: $spread s (the schedule asks for $((N - 1)) s)."
echo "The schedule in Redis: $(rcli demo --scan --pattern 'demo:*') = \"$(schedule demo demo:flowslot-demo)\" (the next free slot and the time it was written, server microseconds)"
[ "$failed" -eq 0 ]
