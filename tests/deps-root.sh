#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/deps.sh for real, in a throwaway root: an overlay of this host's root, in private mount,
# PID and network namespaces, where redis-server and redis-sentinel are purged and deps.sh then
# installs them again, from .debs fetched beforehand. Neither may start (the network namespace
# would hold any port it bound, and the PID namespace any process it left), neither may be
# enabled at boot, deps.sh names what it installs, and /usr/sbin/policy-rc.d is as it was
# after each run (absent, then an administrator's own). Needs root.
set -u
. "$(dirname "$0")/helpers/lib.sh"
same_when_sanitized "tests/deps.sh in a throwaway root"

[ "$(id -u)" = 0 ] || skip_all "needs root (namespaces, dpkg in the throwaway root)"
unshare --mount --pid --fork --net --propagation private true 2> /dev/null ||
	skip_all "no mount, PID and network namespaces here"
dpkg-query -W -f='${Status}\n' redis-server redis-sentinel 2> /dev/null | grep -c 'install ok installed' |
	grep -qx 2 || skip_all "redis-server and redis-sentinel are not both installed on this host"

# The packages, as apt would fetch them (the throwaway root has no network): from apt's cache,
# else downloaded here.
mkdir -p "$TMP/debs" "$TMP/walk"
for p in redis-server redis-sentinel; do
	v=$(dpkg-query -W -f='${Version}' "$p" | sed 's/:/%3a/')
	f=$(ls /var/cache/apt/archives/"${p}_${v}"_*.deb 2> /dev/null | head -1)
	if [ -n "$f" ]; then
		cp "$f" "$TMP/debs/"
	else
		(cd "$TMP/debs" && apt-get download -qq "$p=$(dpkg-query -W -f='${Version}' "$p")") > /dev/null 2>&1 ||
			skip_all "cannot fetch $p's .deb (not in apt's cache, and apt-get download failed)"
	fi
done
cp "$TOP/tests/deps.sh" "$TMP/walk/deps.sh"

cat > "$TMP/walk/steps.sh" <<'STEPS'
set -u
cd /walk
cp /walk/debs/*.deb /var/cache/apt/archives/
rm -f /var/lib/man-db/auto-update # no man-db trigger: seconds of CPU for nothing here
# state NAME: the processes, the boot links, policy-rc.d, as they stand.
state() {
	ps -eo comm= | grep -c '^redis' > "$1.procs"
	{ ls /etc/rc2.d /etc/systemd/system/multi-user.target.wants 2> /dev/null | grep redis || :; } > "$1.boot"
	if [ -e /usr/sbin/policy-rc.d ]; then md5sum < /usr/sbin/policy-rc.d; else echo absent; fi > "$1.policy"
}
DEBIAN_FRONTEND=noninteractive dpkg --purge redis-sentinel redis-server > purge.out 2>&1
echo $? > purge.rc
state purged
# make demo's packages: redis-server missing, no policy-rc.d before (a container's own goes).
rm -f /usr/sbin/policy-rc.d
sh deps.sh demo > demo.out 2>&1
echo $? > demo.rc
state demo
# make check's: redis-sentinel missing, an administrator's own policy-rc.d before, which lets
# everything start: deps.sh's stands in its place while apt-get runs, and it is back after.
printf '#!/bin/sh\n# the administrator'"'"'s\nexit 0\n' > /usr/sbin/policy-rc.d
chmod 0755 /usr/sbin/policy-rc.d
md5sum < /usr/sbin/policy-rc.d > own.policy
sh deps.sh check > check.out 2>&1
echo $? > check.rc
state check
dpkg-query -W -f='${Status}\n' redis-server redis-sentinel > installed
STEPS

mkdir -p "$TMP/walk/debs"
cp "$TMP"/debs/*.deb "$TMP/walk/debs/"
# shellcheck disable=SC2016
unshare --mount --pid --fork --net --propagation private sh -c '
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
	chroot "$ov/root" /bin/sh /walk/steps.sh' sh "$TMP/ov" "$TMP/walk" > "$TMP/walk.log" 2>&1
W=$TMP/walk

check "the throwaway root: redis-server and redis-sentinel purged (rc $(cat "$W/purge.rc" 2> /dev/null))" \
	sh -c '[ "$(cat "$1/purge.rc")" = 0 ] && [ ! -s "$1/purged.boot" ]' sh "$W"
check "deps.sh demo installs redis-server, and names it first (rc $(cat "$W/demo.rc" 2> /dev/null))" \
	sh -c '[ "$(cat "$1/demo.rc")" = 0 ] &&
		grep -q "^pam_flowslot: make demo needs these Debian packages, not installed: redis-server\$" "$1/demo.out"' sh "$W"
check "... starts no redis ($(cat "$W/demo.procs" 2> /dev/null) running), enables none at boot ($(tr '\n' ' ' < "$W/demo.boot" 2> /dev/null))" \
	sh -c '[ "$(cat "$1/demo.procs")" = 0 ] && ! grep -q "^S" "$1/demo.boot" && ! grep -q "\.service\$" "$1/demo.boot"' sh "$W"
check "... and says so: $(grep -o 'service redis-server: .*' "$W/demo.out" 2> /dev/null)" \
	grep -q '^pam_flowslot: service redis-server: installed, not started, not enabled at boot' "$W/demo.out"
check "... and leaves no policy-rc.d, as there was none ($(cat "$W/demo.policy" 2> /dev/null))" \
	[ "$(cat "$W/demo.policy" 2> /dev/null)" = absent ]
check "deps.sh check installs redis-sentinel (rc $(cat "$W/check.rc" 2> /dev/null)): $(grep -o 'not installed:.*' "$W/check.out" 2> /dev/null)" \
	sh -c '[ "$(cat "$1/check.rc")" = 0 ] && grep -q "not installed: redis-sentinel\$" "$1/check.out" &&
		[ "$(grep -c "install ok installed" "$1/installed")" = 2 ]' sh "$W"
check "... starts no Sentinel ($(cat "$W/check.procs" 2> /dev/null) redis running), though the administrator's policy-rc.d lets all start, and enables none at boot" \
	sh -c '[ "$(cat "$1/check.procs")" = 0 ] && ! grep -q "^S" "$1/check.boot" && ! grep -q "\.service\$" "$1/check.boot"' sh "$W"
check "... and puts the administrator's policy-rc.d back as it was" \
	sh -c '[ -s "$1/own.policy" ] && cmp -s "$1/own.policy" "$1/check.policy"' sh "$W"
[ "$FAILED" = 0 ] || sed 's/^/# /' "$TMP/walk.log" "$W"/*.out 2> /dev/null | tail -40

finish
