# Benchmarks against the alternatives (issue 6): bench/run.sh drives the C clients of bench/
# against private redis-servers and pamtester, and writes BENCHMARKS.md and bench/timeline.png.
# Not part of "make check": nothing here is a timed assertion.
#
#   make bench           the full run, about 9 minutes on 2 cores (the logon storm of
#                        bench/storm.sh about 4 of them): writes BENCHMARKS.md
#   make bench QUICK=1   a smoke run of about a minute, with fewer and shorter rounds: writes
#                        build/bench/BENCHMARKS-quick.md, leaving the committed figures alone
#
# BENCH_OUT= names another output file. The figures are of the plain build: not with
# SANITIZE=1. The Debian packages come from tests/deps.sh, plus gnuplot-nox for the picture.

QUICK ?= 0
BENCH_BINS = build/bench/contend build/bench/stagger build/bench/capacity build/bench/optcost \
	     build/bench/pairtime build/bench/queuecost
BENCH_COMMON = bench/bench.c bench/bench.h

.PHONY: bench bench-run

ifeq ($(SANITIZE),1)
bench bench-run:
	@echo "make bench measures the plain build: run it without SANITIZE=1" >&2; exit 1
else
bench:
	@sh tests/deps.sh
	@$(MAKE) --no-print-directory bench-run

bench-run: all $(BENCH_BINS)
	QUICK=$(QUICK) BENCH_OUT=$(BENCH_OUT) bash bench/run.sh
endif

build/bench: | build
	mkdir -p build/bench

# Counting what rnode.c sends: every command it formats goes through the wrapper.
build/bench/contend: bench/contend.c $(BENCH_COMMON) $(LIB_OBJS) $(HEADERS) | build/bench
	$(CC) $(ALL_CFLAGS) -Ibench -Wl,--wrap=redisFormatCommandArgv $(LDFLAGS) -o $@ \
		bench/contend.c bench/bench.c $(LIB_OBJS) $(PAM_LIBS)

# The queue's script calls, counted the same way.
build/bench/queuecost: bench/queuecost.c $(BENCH_COMMON) $(LIB_OBJS) $(HEADERS) | build/bench
	$(CC) $(ALL_CFLAGS) -Ibench -Wl,--wrap=redisFormatCommandArgv $(LDFLAGS) -o $@ \
		bench/queuecost.c bench/bench.c $(LIB_OBJS) $(PAM_LIBS)

build/bench/stagger build/bench/capacity: build/bench/%: bench/%.c $(BENCH_COMMON) $(LIB_OBJS) \
		$(HEADERS) | build/bench
	$(CC) $(ALL_CFLAGS) -Ibench $(LDFLAGS) -o $@ $< bench/bench.c $(LIB_OBJS) $(PAM_LIBS)

# Counting the connections and commands of each decision, through the same kind of wrappers.
OPTCOST_WRAPS = -Wl,--wrap=redisFormatCommandArgv,--wrap=redisConnectWithTimeout \
		-Wl,--wrap=redisConnectUnixWithTimeout
build/bench/optcost: bench/optcost.c $(BENCH_COMMON) $(LIB_OBJS) $(HEADERS) | build/bench
	$(CC) $(ALL_CFLAGS) -Ibench $(OPTCOST_WRAPS) $(LDFLAGS) -o $@ bench/optcost.c bench/bench.c \
		$(LIB_OBJS) $(PAM_LIBS)

build/bench/pairtime: bench/pairtime.c | build/bench
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $<
