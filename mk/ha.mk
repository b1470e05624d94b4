# SPDX-License-Identifier: BSD-3-Clause
# Past one Redis: Sentinel failover, a Redis Cluster with a slot migrated mid-stream,
# and two hosts in network namespaces sharing one schedule. Part of "make check"; alone with
# "make check-ha", or one at a time with its own target.
.PHONY: check-ha check-sentinel check-cluster check-hosts
CHECK_EXTRA += check-sentinel check-cluster check-hosts

check-ha: check-sentinel check-cluster check-hosts
check-sentinel: pam_flowslot.so
	$(SUITE) bash tests/suites/ha.sh
check-cluster: pam_flowslot.so
	$(SUITE) bash tests/suites/cluster.sh
check-hosts: pam_flowslot.so
	$(SUITE) bash tests/suites/hosts.sh
