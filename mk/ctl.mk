# SPDX-License-Identifier: BSD-3-Clause
# tests/suites/ctl.sh: flowslotctl's commands against a private Redis, the local file and tmux.
.PHONY: check-ctl
CHECK_EXTRA += check-ctl

check-ctl: pam_flowslot.so flowslotctl
	$(SUITE) bash tests/suites/ctl.sh
