#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Installs the Debian 12 packages one target needs, and says which before it does:
#   deps.sh demo     make demo: the build, pamtester under pam_wrapper, one private redis-server
#   deps.sh [check]  the suites (check-e2e, check-faults, bench)
#   deps.sh deb      the suites, and what make deb and tests/e2e/deb.sh need besides (make
#                    check, which runs tests/e2e/deb.sh)
#   deps.sh -n SET   only names what SET lacks, one line (nothing when all are there)
# As root it runs apt-get for whatever is missing, and no service starts: a policy-rc.d that
# refuses every start stands while apt-get runs (invoke-rc.d and deb-systemd-invoke ask it),
# and the services of the packages it installed are not enabled at boot either (the suites
# run their own servers). Otherwise it names the missing packages and fails.
set -eu

# make demo: the module (gcc ... liblua5.1-0-dev), its logins (pamtester, libpam-wrapper,
# libpam-modules' pam_exec and pam_permit), and a redis-server of its own.
DEMO_PACKAGES="gcc make pkg-config libc6-dev libpam0g-dev libpam-modules libhiredis-dev libssl-dev
liblua5.1-0-dev pamtester libpam-wrapper redis-server redis-tools"

# The suites; the front ends' (LightDM, xrdp, Cockpit) for make check-e2e, seen on Xvfb.
PACKAGES="gcc make pkg-config libc6-dev libpam0g-dev libpam-modules libhiredis-dev libcmocka-dev
liblua5.1-0-dev pamtester libpam-wrapper libpamtest0-dev redis-server redis-tools valgrind faketime locales
groff-base procps gnuplot-nox clang libclang-rt-14-dev openssh-server openssh-client tmux login util-linux sudo
redis-sentinel iproute2 stunnel4 openssl libssl-dev socat python3 python3-prometheus-client
python3-hypothesis python3-redis strace
lightdm lightdm-gtk-greeter dbus xvfb xdotool x11-utils imagemagick tesseract-ocr
xrdp xorgxrdp freerdp2-x11 cockpit-ws cockpit-bridge chromium"

# make deb, besides (debhelper, lintian).
DEB_PACKAGES="dpkg-dev debhelper lintian fakeroot"

names_only=""
if [ "${1:-}" = -n ]; then
	names_only=1
	shift
fi
case ${1:-check} in
demo) what="make demo" PACKAGES=$DEMO_PACKAGES ;;
check) what="make check" ;;
deb) what="make deb" PACKAGES="$PACKAGES $DEB_PACKAGES" ;;
*)
	echo "usage: deps.sh [-n] [demo|check|deb]" >&2
	exit 2
	;;
esac

missing=""
for p in $PACKAGES; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2> /dev/null || true)
	[ "$status" = "install ok installed" ] || missing="$missing $p"
done
if [ -n "$names_only" ]; then
	[ -z "$missing" ] || echo "${missing# }"
	exit 0
fi
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "pam_flowslot: $what needs these Debian packages, not installed:$missing" >&2
	echo "install them with: sudo apt-get install --no-install-recommends$missing" >&2
	exit 1
fi

# No service starts while apt-get runs: a policy-rc.d that refuses all (exit 101), put back
# as it was (or taken away) however this ends.
POLICY=/usr/sbin/policy-rc.d
saved=""
restore_policy() {
	rm -f "$POLICY"
	if [ -n "$saved" ]; then mv "$saved" "$POLICY"; fi
}
if [ -e "$POLICY" ] || [ -L "$POLICY" ]; then
	saved=$(mktemp "$POLICY.flowslot-saved.XXXXXX")
	mv "$POLICY" "$saved"
fi
trap restore_policy EXIT
trap 'exit 130' HUP INT TERM
printf '#!/bin/sh\n# tests/deps.sh of pam_flowslot, while apt-get runs: no service starts.\nexit 101\n' \
	> "$POLICY"
chmod 0755 "$POLICY"

export DEBIAN_FRONTEND=noninteractive
echo "pam_flowslot: $what needs these Debian packages, not installed:$missing"
apt-get update -qq || echo "pam_flowslot: apt-get update failed; installing from the package lists there are" >&2
# shellcheck disable=SC2086
pulled=$(apt-get install -s --no-install-recommends $missing | sed -n 's/^Inst \([^ ]*\) .*/\1/p' |
	while read -r p; do case " $missing " in *" $p "*) ;; *) printf ' %s' "$p" ;; esac; done)
echo "pam_flowslot: installing them with apt-get${pulled:+, with what they depend on:$pulled}"
echo "pam_flowslot: no service starts while apt-get runs (policy-rc.d)"
log=$(mktemp)
# shellcheck disable=SC2086
if ! apt-get install -y -qq --no-install-recommends $missing > "$log" 2>&1; then
	cat "$log" >&2
	rm -f "$log"
	exit 1
fi
rm -f "$log"

# The daemons among those packages, which stay off at boot too when installed here: a
# redis-sentinel enabled with Debian's configuration listens on every interface with
# protected-mode off. (Not every init script: procps's applies sysctl.conf at boot.)
DAEMONS="redis-server redis-sentinel ssh stunnel4"
for p in $missing $pulled; do
	dpkg-query -L "$p" 2> /dev/null |
		sed -n 's|^/lib/systemd/system/\([^@/]*\)\.service$|\1|p; s|^/etc/init\.d/\([^/]*\)$|\1|p'
done | sort -u | while read -r s; do
	case " $DAEMONS " in *" $s "*) ;; *) continue ;; esac
	if [ -f "/lib/systemd/system/$s.service" ] && command -v deb-systemd-helper > /dev/null; then
		deb-systemd-helper disable "$s.service" > /dev/null 2>&1 || true
	fi
	if [ -x "/etc/init.d/$s" ]; then
		update-rc.d "$s" disable > /dev/null 2>&1 || true
	fi
	echo "pam_flowslot: service $s: installed, not started, not enabled at boot (systemctl enable --now $s to run it)"
done
