# SPDX-License-Identifier: BSD-3-Clause
# tests/suites/stack.sh: the module in real stacks (several phases on one handle, a user prompt to
# resume, pam_faillock after a refusal, the session after a refused gate). tests/helpers/resume.c
# drives a conversation that pamtester cannot.
.PHONY: check-stack
CHECK_EXTRA += check-stack

build/resume: tests/helpers/resume.c | build
	$(CC) $(ALL_CFLAGS) -o $@ $< $(shell $(PKG_CONFIG) --libs pam)

check-stack: pam_flowslot.so build/resume
	$(SUITE) bash tests/suites/stack.sh
