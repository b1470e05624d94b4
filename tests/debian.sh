#!/bin/bash
# Debian integration: the pam-auth-update profile, in a throwaway root (a copy of /etc/pam.d,
# /var/lib/pam and /usr/share/pam-configs) and a private copy of the debconf database, so the
# host is never touched. Needs root, for the mount namespace.
set -u
. "$(dirname "$0")/lib.sh"

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
check "... adds pam_flowslot to common-session" \
	grep -qE '^session[[:space:]]+required[[:space:]]+pam_flowslot.so' "$root/etc/pam.d/common-session"
check "... but not to common-session-noninteractive (cron stays unqueued)" \
	sh -c "! grep -q pam_flowslot '$root/etc/pam.d/common-session-noninteractive'"
# After the primary block (pam_permit/pam_deny), the additional modules in priority order.
order=$(grep -oE '^session[[:space:]]+[a-z]+[[:space:]]+pam_(flowslot|unix|systemd|mkhomedir)' \
	"$root/etc/pam.d/common-session" | awk '{ print $3 }' | tr '\n' ' ')
check "... ahead of the other session modules ($order)" \
	sh -c "echo '$order' | grep -q '^pam_flowslot '"
check "... and nowhere else" \
	[ "$(grep -l pam_flowslot "$root"/etc/pam.d/* | wc -l)" = 1 ]
check "pam-auth-update --remove flowslot runs" pam_auth_update --remove flowslot
check "... and leaves /etc/pam.d exactly as it was" diff -r "$TMP/pam.d.before" "$root/etc/pam.d"
check "the host's /etc/pam.d/common-* were never touched" \
	[ "$(cat /etc/pam.d/common-* | md5sum)" = "$host_before" ]

finish
