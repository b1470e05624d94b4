# SPDX-License-Identifier: BSD-3-Clause
# Run by pam_exec after pam_flowslot in the test stacks: records when a login passed the gate.
printf '%s %s\n' "$(date +%s%N)" "$PAM_USER" >> "$1"
