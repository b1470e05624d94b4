# SPDX-License-Identifier: BSD-3-Clause
# /etc/profile.d/flowslot-wait.sh: a courtesy wait in the login queue for interactive shells.
#
# An ssh login can show no PAM message while it waits (flowslotctl(8), "wait"), so this
# waits in the shell instead, with a live countdown. It is a courtesy gate: the user can
# interrupt it (Ctrl-C gives the place back and the shell starts). Logins that went through
# pam_flowslot already carry FLOWSLOT_ADMITTED in their environment and do not wait twice.
#
# FLOWSLOT_WAIT_ARGS: flowslotctl's options and module arguments (default: --service sshd).
# Set it in /etc/environment, or edit the default below.
flowslot_ctl=/usr/sbin/flowslotctl
[ -x "$flowslot_ctl" ] || flowslot_ctl=$(command -v flowslotctl 2> /dev/null)
if [ -z "${FLOWSLOT_ADMITTED:-}" ] && [ -t 2 ] && [ -n "$flowslot_ctl" ]; then
	# The shell ignores Ctrl-C meanwhile; flowslotctl takes it, to give its place back.
	trap '' INT QUIT
	# shellcheck disable=SC2086 # options, split on purpose
	"$flowslot_ctl" ${FLOWSLOT_WAIT_ARGS:---service sshd} wait
	trap - INT QUIT
	FLOWSLOT_ADMITTED=profile
	export FLOWSLOT_ADMITTED
fi
unset flowslot_ctl
