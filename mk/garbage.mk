# SPDX-License-Identifier: BSD-3-Clause
# tests/garbage.sh: the module against a fake Redis server that answers garbage.
.PHONY: check-garbage
CHECK_EXTRA += check-garbage

build/fake_redis: tests/fake_redis.c | build
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $<

check-garbage: pam_flowslot.so build/fake_redis
	$(SUITE) bash tests/garbage.sh
