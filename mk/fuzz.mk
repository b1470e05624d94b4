# SPDX-License-Identifier: BSD-3-Clause
# libFuzzer targets (fuzz/fuzz_*.c) under ASan and UBSan, built by clang into build/fuzz/,
# apart from the gcc objects in build/. Not part of "make check".
#
#   make fuzz            build, then run each target FUZZ_SECONDS (default 60), one after another
#   make fuzz-smoke      the same, 10 s each
#   make fuzz-build      build only
#
# Each run starts from a scratch copy of fuzz/corpus/<target>/ in build/fuzz/run/<target>/,
# so the committed corpus never grows; a crash is saved under build/fuzz/run/<target>/ and
# fails the make. FUZZ_FLAGS adds libFuzzer flags (e.g. FUZZ_FLAGS=-jobs=2).
# The fuzz flags do not depend on SANITIZE=; but while build/ holds a SANITIZE=1 build,
# mk/sanitize.mk stops every make without it, so run "make fuzz SANITIZE=1" then.
# Needs clang and its fuzzer runtime: Debian packages clang-14 and libclang-rt-14-dev (the
# latter is only recommended by clang-14), and clang for the plain "clang" command, or
# FUZZ_CC=clang-14.

FUZZ_CC ?= clang
FUZZ_CFLAGS ?= -g -O1
FUZZ_SECONDS ?= 60
FUZZ_FLAGS ?=
FUZZ_SANITIZE = -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_ALL_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARNINGS) -Iinclude -Ibuild $(PAM_CFLAGS) \
		  $(FUZZ_SANITIZE) $(FUZZ_CFLAGS)

FUZZ_TARGETS = opt url key reply lstore lcmd
FUZZ_BINS = $(FUZZ_TARGETS:%=build/fuzz/fuzz_%)
FUZZ_OBJS = $(LIB_SRCS:src/%.c=build/fuzz/%.o)
FUZZ_RUN_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
	       UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

.PHONY: fuzz fuzz-smoke fuzz-build fuzz-toolchain

fuzz-build: $(FUZZ_BINS)

# Says which package is missing rather than failing in the middle of a link.
fuzz-toolchain: | build/fuzz
	@command -v $(firstword $(FUZZ_CC)) > /dev/null 2>&1 || { \
		echo "fuzz: no $(firstword $(FUZZ_CC)): install the Debian packages clang-14 and" \
		     "libclang-rt-14-dev (apt-get install clang-14 libclang-rt-14-dev), and clang" \
		     "for the plain clang command or run make with FUZZ_CC=clang-14" >&2; exit 1; }
	@printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n);\nint LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' \
		> build/fuzz/probe.c
	@$(FUZZ_CC) $(FUZZ_SANITIZE) -o build/fuzz/probe build/fuzz/probe.c > build/fuzz/probe.log 2>&1 || { \
		cat build/fuzz/probe.log >&2; \
		echo "fuzz: $(FUZZ_CC) cannot link -fsanitize=fuzzer,address,undefined: FUZZ_CC must" \
		     "be clang, and the libFuzzer and sanitizer runtimes (libclang_rt.fuzzer-x86_64.a" \
		     "...) come in the Debian package libclang-rt-14-dev:" \
		     "apt-get install libclang-rt-14-dev" >&2; exit 1; }

build/fuzz:
	mkdir -p build/fuzz

build/fuzz/%.o: src/%.c $(HEADERS) | build/fuzz fuzz-toolchain
	$(FUZZ_CC) $(FUZZ_ALL_CFLAGS) -c -o $@ $<

build/fuzz/fuzz_%: fuzz/fuzz_%.c fuzz/fuzz.h $(FUZZ_OBJS) $(HEADERS) | build/fuzz fuzz-toolchain
	$(FUZZ_CC) $(FUZZ_ALL_CFLAGS) $(FUZZ_LDFLAGS) -o $@ $< $(FUZZ_OBJS) $(PAM_LIBS)

# slot.lua's lines as coverage (see fuzz_lstore.c).
build/fuzz/fuzz_lstore: FUZZ_LDFLAGS = -Wl,--wrap=lua_sethook

# fuzz_lcmd runs src/lscript.c with fuzz/lcmd.lua in place of slot.lua: the same source, built
# again against that script's slot_lua.h, in build/fuzz/lcmd/ ahead of build/ on the path.
FUZZ_LCMD_OBJS = $(filter-out build/fuzz/lscript.o,$(FUZZ_OBJS)) build/fuzz/lcmd/lscript.o

build/fuzz/lcmd/slot_lua.h: fuzz/lcmd.lua build/luadump | build/fuzz
	mkdir -p build/fuzz/lcmd
	$(LUA_TO_C)

build/fuzz/lcmd/lscript.o: src/lscript.c build/fuzz/lcmd/slot_lua.h $(HEADERS) | fuzz-toolchain
	$(FUZZ_CC) -Ibuild/fuzz/lcmd $(FUZZ_ALL_CFLAGS) -c -o $@ $<

build/fuzz/fuzz_lcmd: fuzz/fuzz_lcmd.c fuzz/fuzz.h $(FUZZ_LCMD_OBJS) $(HEADERS) | build/fuzz \
		      fuzz-toolchain
	$(FUZZ_CC) $(FUZZ_ALL_CFLAGS) -o $@ $< $(FUZZ_LCMD_OBJS) $(PAM_LIBS)

# Made only by the pattern rule above: not intermediate files to delete after the link.
.SECONDARY: $(FUZZ_OBJS)

fuzz: FUZZ_RUN_SECONDS = $(FUZZ_SECONDS)
fuzz-smoke: FUZZ_RUN_SECONDS = 10

# libFuzzer's own lines go to build/fuzz/run/<target>/log; shown are its last status line and
# final statistics, or on a crash the end of the report.
fuzz fuzz-smoke: $(FUZZ_BINS)
	@fail=""; \
	for t in $(FUZZ_TARGETS); do \
		run=build/fuzz/run/$$t; \
		rm -rf $$run && mkdir -p $$run/corpus $$run/crashes || exit 1; \
		cp fuzz/corpus/$$t/* $$run/corpus/ || exit 1; \
		echo "== fuzz_$$t: $(FUZZ_RUN_SECONDS) s from $$(ls fuzz/corpus/$$t | wc -l) seeds"; \
		if $(FUZZ_RUN_ENV) ./build/fuzz/fuzz_$$t -max_total_time=$(FUZZ_RUN_SECONDS) \
			-timeout=10 -print_final_stats=1 -artifact_prefix=$$run/crashes/ \
			$(FUZZ_FLAGS) $$run/corpus > $$run/log 2>&1; then \
			grep -E '^#[0-9]+[[:space:]]+DONE|^Done |^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)' $$run/log; \
		else \
			tail -n 60 $$run/log; \
			echo "fuzz_$$t FAILED: see $$run/log; input saved in $$run/crashes/:" \
			     $$(ls $$run/crashes); \
			fail="$$fail fuzz_$$t"; \
		fi; \
	done; \
	if [ -n "$$fail" ]; then echo "fuzz: failed:$$fail" >&2; exit 1; fi; \
	echo "fuzz: all targets ran clean"
