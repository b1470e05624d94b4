# SPDX-License-Identifier: BSD-3-Clause
# Past one Redis: Sentinel failover, a Redis Cluster with a slot migrated mid-stream,
# and two hosts in network namespaces sharing one schedule. Part of "make check"; alone with
# "make check-ha".
.PHONY: check-ha
CHECK_EXTRA += check-ha

check-ha: pam_flowslot.so
	bash tests/ha.sh
	bash tests/cluster.sh
	bash tests/hosts.sh
