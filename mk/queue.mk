# SPDX-License-Identifier: BSD-3-Clause
# tests/suites/queue.sh: the queue of live waiters through real libpam (killed waiters, a retry,
# two live attempts, per_host, Redis lost mid-wait).
.PHONY: check-queue
CHECK_EXTRA += check-queue

check-queue: pam_flowslot.so flowslotctl
	$(SUITE) bash tests/suites/queue.sh
