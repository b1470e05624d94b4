# SPDX-License-Identifier: BSD-3-Clause
# tests/model/diff.py: the per-host file's store against Redis, call by call: the same random
# sequences through src/slot.lua on a private redis-server (on the test's clock) and through
# src/lscript.c on src/lstore.c (build/model/lsdrive), every reply, member, score and expiry
# compared after every call.
#   make check-diff      DIFF_SEQUENCES (2000; 500 under SANITIZE=1) sequences, DIFF_SEED (1):
#                        under a minute on 2 CPUs (part of make check)
#   make diff-long       20000 sequences, two of them past the schedule's cap of ghosts,
#                        seeded by DIFF_SEED (the time)
.PHONY: check-diff diff-long

DIFF_RUN = env PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 tests/model/diff.py

# Under SANITIZE=1 the driver runs about six times slower (155 s for the 2000): 500 sequences
# there look for memory errors on the same paths, while the plain pass holds the store to Redis
# on all 2000.
check-diff: build/model/slot_clock.lua build/model/lsdrive
	$(SUITE) $(if $(filter 1,$(SANITIZE)),env DIFF_SEQUENCES=$${DIFF_SEQUENCES:-500}) $(DIFF_RUN)

diff-long: build/model/slot_clock.lua build/model/lsdrive
	DIFF_SEQUENCES=$${DIFF_SEQUENCES:-20000} DIFF_BIG=$${DIFF_BIG:-10000} \
		DIFF_SEED=$${DIFF_SEED:-$$(date +%s)} $(DIFF_RUN)
