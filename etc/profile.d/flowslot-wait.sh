# SPDX-License-Identifier: BSD-3-Clause
# /etc/profile.d/flowslot-wait.sh: a courtesy wait in the login queue for interactive shells.
#
# An ssh login can show no PAM message while it waits (flowslotctl(8), "wait"), so this
# waits in the shell instead, with a live countdown. It is a courtesy gate: the user can
# interrupt it (Ctrl-C gives the place back and the shell starts). Logins that went through
# pam_flowslot already carry FLOWSLOT_ADMITTED in their environment and do not wait twice.
#
# Who is exempt: the shipped stacks let root and group sudo through (pam_succeed_if), and the
# snippet cannot see a stack's jumps, so it applies the same rule itself: a user in one of
# FLOWSLOT_EXEMPT_GROUPS (default: "root sudo"; root's own group is root) does not wait. Edit
# it to match your stack's pam_succeed_if lines.
#
# FLOWSLOT_WAIT_ARGS: flowslotctl's options and module arguments (default: --service sshd).
# Set these in /etc/environment, or edit the defaults below.
flowslot_ctl=/usr/sbin/flowslotctl
[ -x "$flowslot_ctl" ] || flowslot_ctl=$(command -v flowslotctl 2> /dev/null)
flowslot_exempt=""
for flowslot_g in $(id -Gn 2> /dev/null); do
	for flowslot_x in ${FLOWSLOT_EXEMPT_GROUPS-root sudo}; do
		[ "$flowslot_g" = "$flowslot_x" ] && flowslot_exempt=1
	done
done
if [ -z "${FLOWSLOT_ADMITTED:-}" ] && [ -z "$flowslot_exempt" ] && [ -t 2 ] && [ -n "$flowslot_ctl" ]; then
	# The shell ignores Ctrl-C meanwhile; flowslotctl takes it, to give its place back.
	trap '' INT QUIT
	# shellcheck disable=SC2086 # options, split on purpose
	"$flowslot_ctl" ${FLOWSLOT_WAIT_ARGS:---service sshd} wait
	trap - INT QUIT
	FLOWSLOT_ADMITTED=profile
	export FLOWSLOT_ADMITTED
fi
unset flowslot_ctl flowslot_exempt flowslot_g flowslot_x
