# SPDX-License-Identifier: BSD-3-Clause
# Process hygiene: tests/helpers/hygiene.c calls the real libpam API under pam_wrapper and
# checks that no entry point leaks a descriptor or touches a signal disposition, and that 16
# threads with a handle each are admitted one interval apart; tests/suites/hygiene.sh runs it against
# private Redis servers, plainly and (but with SANITIZE=1) the threaded part under helgrind.

.PHONY: check-hygiene

build/hygiene: tests/helpers/hygiene.c | build
	$(CC) $(ALL_CFLAGS) -pthread -o $@ $< $(shell $(PKG_CONFIG) --libs pam)

check-hygiene: pam_flowslot.so build/hygiene
	$(SUITE) bash tests/suites/hygiene.sh

CHECK_EXTRA += check-hygiene
