# SPDX-License-Identifier: BSD-3-Clause
# tests/suites/stats.sh: the host's counters kept by real logins of every result, read back as
# Prometheus text by the reference parser, and dry_run's logins that all go in at once.
.PHONY: check-stats
CHECK_EXTRA += check-stats

check-stats: pam_flowslot.so flowslotctl
	$(SUITE) bash tests/suites/stats.sh
