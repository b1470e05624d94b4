# SPDX-License-Identifier: BSD-3-Clause
# tests/suites/tls.sh: Redis across an untrusted network: the module's own TLS (rediss://,
# rediss-sentinel://, rediss-cluster://) against redis-server --tls-port, and the stunnel4
# route for servers older than Redis 6. Part of "make check"; alone with "make check-tls";
# FLOWSLOT_VALGRIND=1 runs its logins under valgrind.
.PHONY: check-tls
CHECK_EXTRA += check-tls

check-tls: pam_flowslot.so flowslotctl
	$(SUITE) bash tests/suites/tls.sh
