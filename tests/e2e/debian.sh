#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Debian integration: the pam-auth-update profile, in a throwaway root (a copy of /etc/pam.d,
# /var/lib/pam and /usr/share/pam-configs) and a private copy of the debconf database, so the
# host is never touched. Needs root, for the mount namespace.
set -u
. "$(dirname "$0")/../helpers/lib.sh"

root=$TMP/root
mkdir -p "$root/etc" "$root/var/lib" "$root/usr/share" "$TMP/debconf"
cp -a /etc/pam.d "$root/etc/"
cp -a /var/lib/pam "$root/var/lib/"
cp -a /usr/share/pam-configs "$root/usr/share/"
cp -a /var/cache/debconf/. "$TMP/debconf/"
install -m 0644 "$TOP/etc/pam-configs/flowslot" "$root/usr/share/pam-configs/flowslot"
cp -a "$root/etc/pam.d" "$TMP/pam.d.before"
host_before=$(cat /etc/pam.d/common-* | md5sum)

pam_auth_update() {
	unshare --mount --propagation private sh -c \
		'mount --bind "$1" /var/cache/debconf && shift && exec "$@"' sh "$TMP/debconf" \
		env DEBIAN_FRONTEND=noninteractive pam-auth-update --root "$root" "$@" \
		> "$TMP/pau.log" 2>&1
}

check "pam-auth-update --enable flowslot runs" pam_auth_update --enable flowslot
check "... adds pam_flowslot to common-session, requisite, a module that cannot be loaded refusing" \
	grep -qE '^session[[:space:]]+\[success=ok ignore=ignore default=die\][[:space:]]+pam_flowslot.so' "$root/etc/pam.d/common-session"
# The profile's block as pam-auth-update wrote it: root and group sudo, as the user or as the
# caller of su or sudo (ruser), jump over the gate.
block=$(grep -E 'pam_succeed_if.so quiet (uid eq 0|user ingroup sudo|ruser = root|ruser ingroup sudo)|pam_flowslot.so' \
	"$root/etc/pam.d/common-session")
check "... behind four jumps for root and group sudo, user and caller ($(echo "$block" | awk '{ print $2 }' | tr '\n' ' '))" \
	sh -c "echo '$block' | awk '{ print \$2 }' | tr '\n' ' ' | grep -qx '\\[success=4 \\[success=3 \\[success=2 \\[success=1 \\[success=ok '"
check "... but not to common-session-noninteractive (cron stays unqueued)" \
	sh -c "! grep -q pam_flowslot '$root/etc/pam.d/common-session-noninteractive'"
# After the primary block (pam_permit/pam_deny), the additional modules in priority order.
order=$(grep -oE '^session[[:space:]]+([a-z]+|\[[^]]*\])[[:space:]]+pam_(flowslot|unix|systemd|mkhomedir)' \
	"$root/etc/pam.d/common-session" | awk '{ print $NF }' | tr '\n' ' ')
check "... ahead of the other session modules ($order)" \
	sh -c "echo '$order' | grep -q '^pam_flowslot '"
check "... and nowhere else" \
	[ "$(grep -l pam_flowslot "$root"/etc/pam.d/* | wc -l)" = 1 ]
# That block, run for real under pam_wrapper against a queue 100 s long: root goes through at
# once; any other user is refused, and the session module after the gate does not run.
start_redis q || exit 1
now_us=$(rcli q time | tr '\n' ' ' | awk '{ printf "%d%06d", $1, $2 }')
rcli q set pam_flowslot "$((now_us + 100000000)) $now_us" px 100000 > /dev/null
printf '%s\n' "$block" | sed -E "s|^session[[:space:]]+||; s| pam_succeed_if.so| $PAM_DIR/pam_succeed_if.so|;
	s|pam_flowslot.so|$MODULE url=unix://$TMP/q.sock max_wait=1s|; s|^|session |" | sed "$OWN_STATE" > "$TMP/svc/pau"
echo "session optional $PAM_DIR/pam_exec.so quiet /bin/sh $TREE/tests/helpers/stamp.sh $TMP/stamps" >> "$TMP/svc/pau"
echo "session required $PAM_DIR/pam_permit.so" >> "$TMP/svc/pau"
login pau-root pau root open_session
login pau-nobody pau nobody open_session
check "the profile's stack: root is let through a full queue" \
	sh -c "[ $(rc_of pau-root) = 0 ] && grep -q ' root$' '$TMP/stamps' && ! grep -q 'pam_flowslot' '$TMP/pau-root.err'"
check "... another user is refused, and no module after the gate runs for them" \
	sh -c "[ $(rc_of pau-nobody) != 0 ] && grep -q 'refused:' '$TMP/pau-nobody.err' && ! grep -q ' nobody$' '$TMP/stamps'"
check "pam-auth-update --remove flowslot runs" pam_auth_update --remove flowslot
check "... and leaves /etc/pam.d exactly as it was" diff -r "$TMP/pam.d.before" "$root/etc/pam.d"
check "the host's /etc/pam.d/common-* were never touched" \
	[ "$(cat /etc/pam.d/common-* | md5sum)" = "$host_before" ]

finish
