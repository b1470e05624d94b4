# SPDX-License-Identifier: BSD-3-Clause
# The host's directories the tests leave as they found them: /etc/pam.d, and /run/pam_flowslot,
# the module's default state_dir, where a login or a flowslotctl run without state_dir= keeps
# counters, node caches and schedules that flowslotctl metrics would later show as the host's.
# Sourced (tests/helpers/lib.sh: each suite checks itself), or run around a whole run (the Makefile,
# .ci/run): "bash tests/helpers/untouched.sh COMMAND...", which fails if COMMAND changed them.
# UNTOUCHED_DIRS= (empty) checks nothing: on a host whose real logins go through the module.
# shellcheck shell=bash

UNTOUCHED_DIRS=${UNTOUCHED_DIRS-/etc/pam.d /run/pam_flowslot}

# untouched_snap: each file under $UNTOUCHED_DIRS, one line with its type, size, inode and
# mtime; a directory that does not exist is a state too.
untouched_snap() {
	local d
	for d in $UNTOUCHED_DIRS; do
		if [ -e "$d" ] || [ -L "$d" ]; then
			find "$d" -printf '%p\t%y %s %i %T@\n' 2>&1 || : # unreadable: the same each time
		else
			printf '%s\tabsent\n' "$d"
		fi
	done | LC_ALL=C sort
}

# untouched_diff SNAP: what changed since untouched_snap wrote SNAP, as "written: PATH...;
# removed: PATH..."; nothing if nothing did.
untouched_diff() {
	untouched_snap | awk -F '\t' 'NR == FNR { was[$1] = $2; next }
		!($1 in was) || was[$1] != $2 { w = w " " $1 }
		{ delete was[$1] }
		END {
			for (p in was) r = r " " p
			if (w != "") out = "written:" w
			if (r != "") out = out (out != "" ? "; " : "") "removed:" r
			if (out != "") print out
		}' "$1" -
}

# untouched_check SNAP WHAT: fails, naming WHAT and the files, if anything changed since SNAP.
untouched_check() {
	local changed
	changed=$(untouched_diff "$1")
	[ -z "$changed" ] && return 0
	echo "$2 changed the host's $UNTOUCHED_DIRS: $changed" >&2
	return 1
}

# What a run leaves in the host's temporary directories, which it must not: files of its own
# (flowslot-*, in /dev/shm too: make bench's state_dir), pam_wrapper's working directories
# (/tmp/pam.X: a login killed outright leaves its own, unless it ran in a private /tmp),
# lintian's databases (mldbm-*, unless TMPDIR is the suite's), what the front ends' clients
# leave when stopped: Chromium's singleton directory (e2e-cockpit.sh gives it a TMPDIR of the
# suite's) and the shared memory of xfreerdp (e2e-xrdp.sh removes it), and libfaketime's of a
# process that did not exit properly (hosts.sh removes it). Checked around a whole run only
# (.ci/run): suites that run side by side each see the others' files while they are there.
# UNTOUCHED_LEFT= (empty) checks nothing.
UNTOUCHED_LEFT=${UNTOUCHED_LEFT-/tmp/flowslot* /var/tmp/flowslot* /dev/shm/flowslot* /tmp/pam.? \
	/tmp/mldbm-* /tmp/org.chromium.* /dev/shm/com.freerdp.* /dev/shm/faketime_shm_* \
	/dev/shm/sem.faketime_sem_*}

# untouched_left_snap: each path of $UNTOUCHED_LEFT's patterns that exists, one a line.
untouched_left_snap() {
	local p
	for p in $UNTOUCHED_LEFT; do # split, then expanded
		if [ -e "$p" ] || [ -L "$p" ]; then
			printf '%s\n' "$p"
		fi
	done | LC_ALL=C sort
}

# untouched_left_check SNAP WHAT: fails, naming WHAT and the paths, if any exists now that did
# not when untouched_left_snap wrote SNAP.
untouched_left_check() {
	local left
	left=$(untouched_left_snap | LC_ALL=C comm -13 "$1" - | paste -sd ' ')
	[ -z "$left" ] && return 0
	echo "$2 left in the host's temporary directories: $left" >&2
	return 1
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	snap=$(mktemp)
	untouched_snap > "$snap"
	"$@"
	rc=$?
	untouched_check "$snap" "$*" || { [ "$rc" != 0 ] || rc=1; }
	rm -f "$snap"
	exit "$rc"
fi
