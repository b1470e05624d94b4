#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Installs the Debian 12 packages that building, the tests and the demo need. As root it runs
# apt-get for whatever is missing; otherwise it names the missing packages and fails.
set -eu

PACKAGES="gcc make pkg-config libc6-dev libpam0g-dev libpam-modules libhiredis-dev libcmocka-dev
liblua5.1-0-dev pamtester libpam-wrapper libpamtest0-dev redis-server redis-tools valgrind faketime locales
groff-base procps gnuplot-nox clang libclang-rt-14-dev openssh-server openssh-client tmux login util-linux sudo
redis-sentinel iproute2 stunnel4 openssl libssl-dev socat python3 python3-prometheus-client
python3-hypothesis python3-redis"

# "deps.sh deb": what make deb and tests/deb.sh need besides (debhelper, lintian).
if [ "${1:-}" = deb ]; then
	PACKAGES="$PACKAGES dpkg-dev debhelper lintian fakeroot"
fi

missing=""
for p in $PACKAGES; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2> /dev/null || true)
	[ "$status" = "install ok installed" ] || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "pam_flowslot: missing Debian packages:$missing" >&2
	echo "install them with: sudo apt-get install$missing" >&2
	exit 1
fi
echo "pam_flowslot: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing > /dev/null
