# SPDX-License-Identifier: BSD-3-Clause
# tests/model/diff.py: the per-host file's store held to a real redis-server, call by call:
# the same random calls through slot.lua on both, every reply, member, score and expiry the same.
#   make check-diff      DIFF_SEQUENCES (1000) seeded sequences, about a minute (part of make check)
#   make diff-long       20000 sequences, seeded by DIFF_SEED (the time)
.PHONY: check-diff diff-long
CHECK_EXTRA += check-diff

check-diff: build/model/slot_clock.lua build/model/lsdrive
	DIFF_SEQUENCES=$${DIFF_SEQUENCES:-1000} PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 tests/model/diff.py

diff-long: build/model/slot_clock.lua build/model/lsdrive
	DIFF_SEQUENCES=$${DIFF_SEQUENCES:-20000} DIFF_SEED=$${DIFF_SEED:-$$(date +%s)} \
		PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 tests/model/diff.py
