# SPDX-License-Identifier: BSD-3-Clause
# tests/suites/garbage.sh: the module against a fake Redis server that answers garbage.
.PHONY: check-garbage
CHECK_EXTRA += check-garbage

build/fake_redis: tests/helpers/fake_redis.c | build
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $<

check-garbage: pam_flowslot.so build/fake_redis
	$(SUITE) bash tests/suites/garbage.sh
