# SPDX-License-Identifier: BSD-3-Clause
# tests/model/model.sh: the schedule against its model (docs/MODEL.md), on the test's clock:
# src/slot.lua on a private Redis and on the per-host file's store, through hypothesis.
#   make check-model            about a minute, derandomized (part of make check)
#   make model-long             MODEL_EXAMPLES (20000) of MODEL_STEPS (100), seeded by
#                               MODEL_SEED (the time)
#   make model-old OLD=/tmp/old the properties alone against another tree's script, on Redis
.PHONY: check-model model-long model-old

# The script on the test's clock: every TIME and PEXPIRE must be replaced, or the build fails.
build/model/slot_clock.lua: src/slot.lua tests/model/clock.sed
	mkdir -p build/model
	sed -f tests/model/clock.sed $< > $@.tmp
	[ "$$(grep -c "ARGV\[14\]" $@.tmp)" -ge 2 ] && \
		! grep -Eq "redis\.call\('(TIME|PEXPIRE)'" $@.tmp && mv $@.tmp $@

# The per-host store running the script (src/lscript.c on src/lstore.c), on the test's clock.
LSDRIVE_OBJS = build/lstore.o build/lscript.o build/slot.o build/fstime.o build/str.o
build/model/lsdrive: tests/model/lsdrive.c $(LSDRIVE_OBJS) $(HEADERS)
	mkdir -p build/model
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LSDRIVE_OBJS) $(PAM_LIBS)

# Under SANITIZE=1 only the file's store runs our C (build/model/lsdrive, sanitized): the Redis
# backend is the plain pass's, and would only take the time again.
check-model: build/model/slot_clock.lua build/model/lsdrive
	$(SUITE) env $(if $(filter 1,$(SANITIZE)),MODEL_BACKENDS=file) bash tests/model/model.sh

model-long: build/model/slot_clock.lua build/model/lsdrive
	MODEL_EXAMPLES=$${MODEL_EXAMPLES:-20000} MODEL_STEPS=$${MODEL_STEPS:-100} \
		MODEL_SEED=$${MODEL_SEED:-$$(date +%s)} \
		bash tests/model/model.sh

# Another tree (git -C /work/main archive 138ddb0 | tar -x -C /tmp/old): its script on Redis,
# checked against P1-P7 without comparing replies with today's model. Redis alone: an older
# tree's per-host file kept its own copy of the rules (src/lqueue.c), which no store here runs;
# since the file runs the same script, the script on Redis stands for both.
OLD ?= /tmp/old
model-old: tests/model/clock.sed
	mkdir -p build/model-old
	sed -f tests/model/clock.sed $(OLD)/src/slot.lua > build/model-old/slot_clock.lua
	MODEL_COMPARE=0 MODEL_CADENCE=fixed MODEL_BACKENDS=redis \
		MODEL_LUA=build/model-old/slot_clock.lua bash tests/model/model.sh

# Another revision's script against this tree's (git show REV:src/slot.lua, main by default):
# the same random calls through both, and through either at random on a third key, every
# reply, member, score and expiry the same. For changes that must not change what the script
# decides or writes, such as to its cost; SAME_SEQUENCES (300) and SAME_SEED (1).
REV ?= main
.PHONY: model-same
model-same: build/model/slot_clock.lua tests/model/clock.sed
	mkdir -p build/model-same
	git show $(REV):src/slot.lua | sed -f tests/model/clock.sed > build/model-same/slot_clock.lua
	SAME_OLD=build/model-same/slot_clock.lua SAME_NEW=build/model/slot_clock.lua \
		PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 tests/model/same.py
