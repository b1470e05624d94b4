# SPDX-License-Identifier: BSD-3-Clause
# tests/stats.sh: the host's counters kept by real logins of every result, read back as
# Prometheus text by the reference parser, and dry_run's logins that all go in at once.
.PHONY: check-stats
CHECK_EXTRA += check-stats

build/stats_dump: tests/stats_dump.c $(LIB_OBJS) $(HEADERS) | build
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_OBJS) $(PAM_LIBS)

check-stats: pam_flowslot.so build/stats_dump
	bash tests/stats.sh
