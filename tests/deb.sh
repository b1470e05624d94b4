#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# make check-deb: make deb builds libpam-flowslot; lintian finds no error nor warning; the
# package unpacked into a throwaway root holds what make install installs, where Debian wants
# it, and no maintainer script enables the pam-auth-update profile; two logins through the
# installed module (pamtester under pam_wrapper, url=local) go in one interval apart; and the
# build left no file in the tree nor beside it.
set -u
. "$(dirname "$0")/lib.sh"

cd "$TOP" || exit 1
if [ -n "$SAN" ]; then
	# The package is built by its own flags, never with the sanitizers: nothing new to see.
	echo "# skipped: the package is the same under SANITIZE=1"
	exit 0
fi

VERSION=$(sed -nE 's/^VERSION = ([0-9][^ ]*)$/\1/p' Makefile)
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
ARCH=$(dpkg-architecture -qDEB_HOST_ARCH)
DEB=build/deb/libpam-flowslot_${VERSION}_$ARCH.deb
SECDIR=usr/lib/$MA/security
DOC=usr/share/doc/libpam-flowslot
# dpkg-buildpackage writes its results to the parent directory: make deb must not.
deb_files() { ls -A "$TOP/.." | grep -E '^(lib)?pam-flowslot' ; }
parent_before=$(deb_files)
tree_before=""
if git rev-parse --git-dir > /dev/null 2>&1; then
	tree_before=$(git status --porcelain --ignored=no)
fi

# A make of our own: none of the caller's make variables (SANITIZE=1) reach the package build.
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory deb > "$TMP/build.log" 2>&1
rc=$?
check "make deb builds $DEB" [ "$rc" = 0 -a -f "$DEB" ]
[ "$rc" = 0 ] || { tail -30 "$TMP/build.log" >&2; finish; exit 1; }

# lintian's tags: E: errors, W: warnings, I: information, P: pedantic; its own notes on stderr.
lintian -I --pedantic "build/deb/pam-flowslot_${VERSION}_$ARCH.changes" > "$TMP/lintian.log" 2> /dev/null
lintian_rc=$?
errors=$(grep -c '^E: ' "$TMP/lintian.log")
warnings=$(grep -c '^W: ' "$TMP/lintian.log")
check "lintian: no error (exit $lintian_rc; $(grep -m1 '^E: ' "$TMP/lintian.log"))" \
	[ "$lintian_rc" = 0 -a "$errors" = 0 ]
check "lintian: no warning ($(grep -m1 '^W: ' "$TMP/lintian.log"))" [ "$warnings" = 0 ]

# The package, unpacked into a throwaway root.
ROOT=$TMP/root
dpkg-deb -x "$DEB" "$ROOT"
dpkg-deb -e "$DEB" "$TMP/control"
check "the module in the multiarch security directory: /$SECDIR, mode 0644" \
	[ "$(stat -c %a "$ROOT/$SECDIR/pam_flowslot.so" 2> /dev/null)" = 644 ]
check "the man pages: pam_flowslot(8) and pam_flowslot.conf(5)" \
	test -f "$ROOT/usr/share/man/man8/pam_flowslot.8.gz" -a \
	-f "$ROOT/usr/share/man/man5/pam_flowslot.conf.5.gz"
check "the pam-auth-update profile in /usr/share/pam-configs" \
	cmp -s "$ROOT/usr/share/pam-configs/flowslot" etc/pam-configs/flowslot
check "the examples in /$DOC" test -f "$ROOT/$DOC/pam.d-example" -a \
	-f "$ROOT/$DOC/sshd-flowslot" -a -f "$ROOT/$DOC/login-flowslot" -a \
	-f "$ROOT/$DOC/pam_flowslot.conf.example" -a -f "$ROOT/$DOC/stunnel-flowslot-redis.conf"
check "the licence in /$DOC/copyright, and NEWS" \
	sh -c 'grep -q "^License: BSD-3-Clause" "$1/copyright" && test -f "$1/NEWS.gz"' sh "$ROOT/$DOC"

# Whatever make install installs (flowslotctl too, once it does), the package ships.
make -s install DESTDIR="$TMP/mi" PAMDIR="/$SECDIR" DOCDIR="/$DOC" > /dev/null
missing=$(cd "$TMP/mi" && find . -type f | while read -r f; do
	[ -e "$ROOT/$f" ] || [ -e "$ROOT/$f.gz" ] || echo "${f#.}"
done | tr '\n' ' ')
check "the package ships every file make install installs${missing:+; not: $missing}" [ -z "$missing" ]

# No maintainer script enables the profile: no postinst, nor any script but prerm's removal.
enabling=$(grep -l 'pam-auth-update' "$TMP/control"/*inst "$TMP/control"/*rm 2> /dev/null |
	while read -r f; do
		grep 'pam-auth-update' "$f" | grep -vq -- '--remove' && echo "${f##*/}"
	done | paste -sd ' ')
check "no maintainer script enables the profile${enabling:+; $enabling does}" [ -z "$enabling" ]
check "prerm takes the profile out on removal" \
	grep -q 'pam-auth-update --package --remove flowslot' "$TMP/control/prerm"

# Two logins through the installed module, by its path in the throwaway root.
service deb "auth required $ROOT/$SECDIR/pam_flowslot.so url=local state_dir=$TMP/state interval=1s debug" \
	"$STAMP" "auth required $PAM_DIR/pam_permit.so"
logins d deb 2
check "two logins through the installed module succeed (rc $(rc_of d01), $(rc_of d02))" \
	[ "$(rc_of d01)" = 0 -a "$(rc_of d02)" = 0 ]
check "the installed module says its version in the debug trace ($VERSION)" \
	grep -qF "version $VERSION: auth" "$TMP/d01.err"
gap_ms=$(sort -n "$TMP/stamps" | awk 'NR == 1 { a = $1 } { b = $1 } END { printf "%d", (b - a) / 1e6 }')
check "the two go in staggered, the second at least 0.5 s after the first (${gap_ms} ms)" \
	[ "$(wc -l < "$TMP/stamps")" = 2 -a "$gap_ms" -ge 500 ]

# The build left nothing in the tree (but build/, which git ignores) nor beside it.
if [ -n "$(git rev-parse --git-dir 2> /dev/null)" ]; then
	tree_after=$(git status --porcelain --ignored=no)
	check "the tree is as it was: git status shows nothing new" [ "$tree_after" = "$tree_before" ]
fi
check "no package file new in the tree's parent directory" [ "$(deb_files)" = "$parent_before" ]

finish
