# SPDX-License-Identifier: BSD-3-Clause
# tests/suites/admin.sh: a fresh install's quiet default, and the shipped stacks with the module gone.
.PHONY: check-admin
CHECK_EXTRA += check-admin

check-admin: pam_flowslot.so
	$(SUITE) bash tests/suites/admin.sh
