#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# make check-deb: make deb builds libpam-flowslot; lintian finds no error nor warning; the
# package unpacked into a throwaway root holds what make install installs, where Debian wants
# it, and no maintainer script enables the pam-auth-update profile; two logins through the
# installed module (pamtester under pam_wrapper, url=local) go in one interval apart; and the
# build left no file in the tree nor beside it.
set -u
. "$(dirname "$0")/../helpers/lib.sh"

cd "$TOP" || exit 1
# The package is built by its own flags, never with the sanitizers.
same_when_sanitized "the package"

VERSION=$(sed -nE 's/^VERSION = ([0-9][^ ]*)$/\1/p' Makefile)
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
ARCH=$(dpkg-architecture -qDEB_HOST_ARCH)
DEB=build/deb/libpam-flowslot_${VERSION}_$ARCH.deb
SECDIR=lib/$MA/security # as libpam-modules: see debian/rules
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
# Its temporary files in $TMP: it leaves some behind (/tmp/mldbm-elf-*, each run).
TMPDIR=$TMP lintian -I --pedantic "build/deb/pam-flowslot_${VERSION}_$ARCH.changes" > "$TMP/lintian.log" 2> /dev/null
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
check "the man pages: pam_flowslot(8), pam_flowslot(7) and pam_flowslot.conf(5)" \
	test -f "$ROOT/usr/share/man/man8/pam_flowslot.8.gz" -a \
	-f "$ROOT/usr/share/man/man7/pam_flowslot.7.gz" -a \
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

# The walk an administrator takes, for real, in a throwaway root: an overlay of this host's
# own root in a private mount namespace, so dpkg, its maintainer scripts and pam-auth-update
# run unmodified there, and the host's /etc is never written. The walk's PAM configuration is
# a directory of its own, /walk/svc, copied from /etc/pam.d, which every login and package
# step sees on /etc/pam.d, bound there in a mount namespace of its own: the walk writes no
# /etc/pam.d.
# (pam_wrapper cannot stand in: libpam reads an @include from /etc/pam.d whatever directory
# pam_wrapper gives it, and Debian's stacks are mostly includes.) A user logs in (pamtester:
# the sshd stack's account and session) at every step: before the package, with it, with the
# sshd example added, with the pam-auth-update profile enabled, after the package is removed,
# and after it is then purged, with the example's lines left in the sshd stack. Nobody may be
# locked out. Each removal names the lines left; the purge removes the default state_dir.
# The settings come from the configuration file alone, copied from the example and edited to
# interval=3s: the sshd example and the profile, on one schedule (the default key), keep it,
# and su through the profile waits 3 s, not the 7 s an sshd line of its own once imposed.
if [ -f /etc/pam.d/sshd ] && unshare --mount --propagation private true 2> /dev/null; then
	mkdir -p "$TMP/walk"
	cp "$DEB" "$TMP/walk/pkg.deb"
	cat > "$TMP/walk/steps.sh" <<'STEPS'
set -u
# It installs and removes a package: only in the throwaway root, an overlay of / on a tmpfs,
# chrooted into in a private mount namespace (below). Anywhere else it refuses to run.
if [ "$(stat -f -c %T /)" != overlayfs ] || [ ! -f /walk/pkg.deb ]; then
	echo "steps.sh: / is not the walk's overlay root: refusing to install anything" >&2
	exit 1
fi
cd /walk
cp -a /etc/pam.d svc
# step NAME COMMAND...: runs it, its output in NAME.out, "NAME RC SECONDS" in results.
step() {
	name=$1
	shift
	t0=$(date +%s%N)
	"$@" > "$name.out" 2>&1
	rc=$?
	echo "$name $rc $((($(date +%s%N) - t0) / 1000000))" >> results
}
# on_svc COMMAND...: COMMAND with the walk's stacks on /etc/pam.d: a login (pamtester), a step
# of the package's own (dpkg and its maintainer scripts, pam-auth-update), flowslotctl check.
on_svc() {
	unshare --mount --propagation private sh -c 'mount --bind /walk/svc /etc/pam.d && exec "$@"' \
		sh "$@"
}
in_as() { on_svc pamtester sshd "$1" acct_mgmt open_session close_session; }
useradd -m walker
useradd -m walker2
useradd -m -G sudo admin
step before in_as walker
step install on_svc env DEBIAN_FRONTEND=noninteractive dpkg -i pkg.deb
step installed in_as walker
# The settings, where they live: the example configuration, copied and edited.
sed 's/^#interval=7s$/interval=3s/' /usr/share/doc/libpam-flowslot/pam_flowslot.conf.example \
	> /etc/security/pam_flowslot.conf
grep -x 'interval=3s' /etc/security/pam_flowslot.conf > conf.interval
# The example as the package installs it, before "@include common-session", as it says.
doc=/usr/share/doc/libpam-flowslot/sshd-flowslot
grep -v '^#' "$doc" | grep . > example.lines
awk -v f=example.lines '/^@include common-session/ { while ((getline l < f) > 0) print l } { print }' \
	svc/sshd > sshd.new && cat sshd.new > svc/sshd
cp svc/sshd sshd.with-example
# Two at once: both in, the second one interval (3 s, from the file) after the first.
step example1 in_as walker &
sleep 0.5
step example2 in_as walker
wait
step enable on_svc env DEBIAN_FRONTEND=noninteractive pam-auth-update --enable flowslot
cp svc/common-session common-session.enabled
# flowslotctl check on the stacks as they now are (no disagreement), and on a copy whose sshd
# line says interval=7s, as the sshd example did: the two lines named, with file and line.
step check on_svc flowslotctl check
mkdir pamd.split
cp -a svc/. pamd.split/
sed -i '/pam_flowslot.so$/s/$/ interval=7s/' pamd.split/sshd
step check-split flowslotctl --pam-dir /walk/pamd.split check
step enabled in_as walker
# Right behind it, walker's su to walker2 through the profile (su sets PAM_RUSER to its
# caller): it queues on the same schedule, 3 s behind.
step su on_svc pamtester -I ruser=walker su walker2 open_session close_session
# Who is exempt, alike in the sshd example and the profile: root and group sudo, as the user
# logging in and as su's caller. An exempt login never reaches the gate: the counters of
# flowslotctl metrics, which count every login the gate decides, stay as they were.
flowslotctl metrics > metrics.before 2>&1
step root in_as root
step admin in_as admin
step su-root on_svc pamtester -I ruser=root su walker2 open_session close_session
step su-admin on_svc pamtester -I ruser=admin su walker2 open_session close_session
flowslotctl metrics > metrics.after 2>&1
# The example's logins kept the host's schedule in the default state_dir.
ls -A /run/pam_flowslot > state.before 2>&1
# Removed, then purged on its own, as "apt-get remove" then "apt-get purge" do.
step remove on_svc env DEBIAN_FRONTEND=noninteractive dpkg --remove libpam-flowslot
cp svc/common-session common-session.after
test -e /usr/lib/*/security/pam_flowslot.so && echo present > module.after
dpkg-query -W -f='${db:Status-Abbrev}\n' libpam-flowslot > status.removed 2>&1
test -e /run/pam_flowslot && echo present > state.removed
step removed in_as walker
step removed-root in_as root
step purge on_svc env DEBIAN_FRONTEND=noninteractive dpkg --purge libpam-flowslot
cp svc/sshd sshd.after
test -e /run/pam_flowslot && echo present > state.purged
step purged in_as walker
step purged-root in_as root
STEPS
	# shellcheck disable=SC2016
	unshare --mount --propagation private sh -c '
		set -e
		ov=$1 walk=$2
		mkdir -p "$ov"
		mount -t tmpfs tmpfs "$ov"
		mkdir "$ov/up" "$ov/work" "$ov/root"
		mount -t overlay overlay -o "lowerdir=/,upperdir=$ov/up,workdir=$ov/work" "$ov/root"
		mount --rbind /dev "$ov/root/dev"
		mount -t proc proc "$ov/root/proc"
		for d in run tmp; do mount -t tmpfs tmpfs "$ov/root/$d"; done
		mkdir -p "$ov/root/walk"
		mount --bind "$walk" "$ov/root/walk"
		rc=0
		chroot "$ov/root" /bin/bash /walk/steps.sh || rc=$?
		# What the walk wrote of the root'"'"'s /etc/pam.d: copied up into the overlay.
		if [ -e "$ov/up/etc/pam.d" ]; then find "$ov/up/etc/pam.d"; else echo none; fi \
			> "$walk/pamd.written" 2>&1
		exit "$rc"' sh "$TMP/ov" "$TMP/walk" > "$TMP/walk.log" 2>&1
	W=$TMP/walk
	rc_at() { awk -v s="$1" '$1 == s { print $2 }' "$W/results"; }
	ms_at() { awk -v s="$1" '$1 == s { print $3 }' "$W/results"; }
	check "walk: a login before the package (rc $(rc_at before))" [ "$(rc_at before)" = 0 ]
	check "walk: dpkg -i installs the package (rc $(rc_at install))" [ "$(rc_at install)" = 0 ]
	check "walk: a login with the package installed, nothing enabled (rc $(rc_at installed))" \
		[ "$(rc_at installed)" = 0 ]
	check "walk: the sshd example went in before @include common-session" \
		sh -c "grep -n 'pam_flowslot.so\|^@include common-session' '$W/sshd.with-example' | head -1 | grep -q pam_flowslot"
	check "walk: two logins through the sshd example both go in (rc $(rc_at example1), $(rc_at example2))" \
		[ "$(rc_at example1)" = 0 -a "$(rc_at example2)" = 0 ]
	check "walk: ... the second waited its turn, on the host's schedule, 3 s from the file ($(ms_at example1) ms, $(ms_at example2) ms)" \
		[ -s "$W/conf.interval" -a "$(ms_at example2)" -ge 2000 ]
	check "walk: pam-auth-update --enable flowslot (rc $(rc_at enable))" \
		sh -c "[ '$(rc_at enable)' = 0 ] && grep -q pam_flowslot '$W/common-session.enabled'"
	check "walk: logins with the profile enabled: a user and root (rc $(rc_at enabled), $(rc_at root))" \
		[ "$(rc_at enabled)" = 0 -a "$(rc_at root)" = 0 ]
	check "walk: flowslotctl check: the sshd example and the profile agree (rc $(rc_at check); $(grep -c 'gives' "$W/check.out") disagreements)" \
		sh -c "[ '$(rc_at check)' = 0 ] && grep -q '^ok: ' '$W/check.out' && ! grep -q 'gives\|disagree' '$W/check.out'"
	check "walk: ... and with interval=7s on the sshd line, it names both lines ($(grep -m1 'gives' "$W/check-split.out"))" \
		grep -Eq '^flowslotctl: key pam_flowslot: /walk/pamd.split/common-session:[0-9]+ gives interval=3s burst=1, /walk/pamd.split/sshd:[0-9]+ interval=7s burst=1' "$W/check-split.out"
	decided() { awk '/^flowslot_logins_total/ { n += $NF } END { print n + 0 }' "$W/metrics.$1"; }
	check "walk: root, a member of sudo, and su by either, through the sshd example and the profile: exempt, none counted ($(decided before) decided logins before, $(decided after) after; rc $(rc_at root) $(rc_at admin) $(rc_at su-root) $(rc_at su-admin))" \
		[ "$(decided before)" -ge 4 -a "$(decided after)" = "$(decided before)" -a \
		"$(rc_at root)$(rc_at admin)$(rc_at su-root)$(rc_at su-admin)" = 0000 ]
	check "walk: su right behind, through the profile, waits the file's 3 s, not 7 s (rc $(rc_at su), $(ms_at su) ms)" \
		[ "$(rc_at su)" = 0 -a "$(ms_at su)" -ge 1000 -a "$(ms_at su)" -lt 5000 ]
	check "walk: dpkg --remove (rc $(rc_at remove)): the module gone, the profile out of common-session" \
		sh -c "[ '$(rc_at remove)' = 0 ] && [ ! -e '$W/module.after' ] && ! grep -q pam_flowslot '$W/common-session.after'"
	check "walk: ... the postrm names the lines left in /etc/pam.d/sshd ($(grep -m1 'sshd:' "$W/remove.out" | sed 's/^ *//'))" \
		sh -c "grep -q 'still name it' '$W/remove.out' && grep -q '/etc/pam.d/sshd:[0-9]*:.*pam_flowslot' '$W/remove.out'"
	check "walk: ... and says libpam logs two errors for them at each login, which admin.sh sees ($(grep -c 'faulty module' "$W/remove.out") line)" \
		grep -q 'PAM unable to dlopen(pam_flowslot.so).*PAM adding faulty module' "$W/remove.out"
	check "walk: ... and keeps /run/pam_flowslot, which the example's logins wrote ($(paste -sd ' ' "$W/state.before"))" \
		sh -c "grep -q '^slot\.' '$W/state.before' && [ -e '$W/state.removed' ]"
	check "walk: after the remove, with those lines left, not locked out: a user and root (rc $(rc_at removed), $(rc_at removed-root))" \
		[ "$(rc_at removed)" = 0 -a "$(rc_at removed-root)" = 0 ]
	check "walk: dpkg --purge of the removed package (status $(cat "$W/status.removed"), rc $(rc_at purge))" \
		sh -c "grep -q '^rc' '$W/status.removed' && [ '$(rc_at purge)' = 0 ]"
	check "walk: ... names the lines left in /etc/pam.d/sshd again ($(grep -m1 'sshd:' "$W/purge.out" | sed 's/^ *//'))" \
		sh -c "grep -q 'still name it' '$W/purge.out' && grep -q '/etc/pam.d/sshd:[0-9]*:.*pam_flowslot' '$W/purge.out' &&
			grep -q pam_flowslot '$W/sshd.after'"
	check "walk: ... and dpkg warns of nothing, neither at the remove nor at the purge ($(grep -h -m1 'dpkg: warning' "$W/remove.out" "$W/purge.out"))" \
		sh -c "! grep -q 'dpkg: warning' '$W/remove.out' '$W/purge.out'"
	check "walk: ... removes /run/pam_flowslot, and says so ($(grep -m1 'run/pam_flowslot' "$W/purge.out"))" \
		sh -c "[ ! -e '$W/state.purged' ] && grep -q 'removed /run/pam_flowslot' '$W/purge.out'"
	check "walk: after the purge, with those lines left, not locked out: a user and root (rc $(rc_at purged), $(rc_at purged-root))" \
		[ "$(rc_at purged)" = 0 -a "$(rc_at purged-root)" = 0 ]
	check "walk: the throwaway root's /etc/pam.d was never written ($(head -3 "$W/pamd.written" | paste -sd ' '))" \
		[ "$(cat "$W/pamd.written")" = none ]
	check "walk: the host's /etc/pam.d was never touched" sh -c "! grep -rq pam_flowslot /etc/pam.d"
	[ "$FAILED" = 0 ] || { cat "$TMP/walk.log" "$W/results" >&2; tail -n 5 "$W"/*.out >&2; }
else
	echo "# skipped the walk: no /etc/pam.d/sshd here, or no mount namespaces"
fi

# The build left nothing in the tree (but build/, which git ignores) nor beside it.
if [ -n "$(git rev-parse --git-dir 2> /dev/null)" ]; then
	tree_after=$(git status --porcelain --ignored=no)
	check "the tree is as it was: git status shows nothing new" [ "$tree_after" = "$tree_before" ]
fi
check "no package file new in the tree's parent directory" [ "$(deb_files)" = "$parent_before" ]

finish
