# SPDX-License-Identifier: BSD-3-Clause
# tests/campaign/: the fault campaign (issue 19, part 3; docs/MODEL.md "The fault campaign").
# Many logins through the real module while each fault is injected, every one recorded on one
# observer clock, and tests/campaign/check.py holding the records to P1-P8 within each fault's
# stated bound. Both write build/faults/REPORT.md; not part of make check (CI runs it as a step
# of its own, after make check-e2e).
#   make check-faults        the short run: 16 logins a fault, each fault injected once
#   make faults              the long run: 60 logins a fault, each injected 3 times; its table
#                            goes into bench/faults.md, which docs/MODEL.md links to
#   FAULTS="none redis-stop-long" picks faults; FAULTS_MODULE=/path/pam_flowslot.so holds
#   another build to the same bounds
.PHONY: check-faults faults
FAULTS ?=

check-faults: pam_flowslot.so
	@sh tests/deps.sh
	$(UNTOUCHED) $(SUITE) bash tests/campaign/run.sh short $(FAULTS)

faults: pam_flowslot.so
	@sh tests/deps.sh
	FAULTS_BENCH=$(call shq,$(CURDIR)/bench/faults.md) $(UNTOUCHED) bash tests/campaign/run.sh long $(FAULTS)
