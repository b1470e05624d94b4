# SPDX-License-Identifier: BSD-3-Clause
# Benchmarks against the alternatives: bench/measure.sh drives the C clients of bench/ against
# private redis-servers and pamtester and writes the raw results; bench/report.sh renders
# BENCHMARKS.md and bench/timeline.png from them alone (bench/run.sh runs one, then the other).
# Not part of "make check": nothing here is a timed assertion. A run needs only this tree (a
# release tarball will do): comparisons with older code were measured once, and stand as dated
# tables in bench/past.md, which the report copies. It writes nothing of the host's: its
# clients and logins keep their state in a directory of the run's, removed at its end, and as
# root it measures with a /tmp of its own (bench/run.sh, measure).
#
#   make bench           the full run, about 17 minutes on 2 cores, quiet (the logon storm
#                        of bench/storm.sh about 4 of them, the queues of bench/spread.sh 3,
#                        the ssh logins of bench/ssh.sh 4): writes BENCHMARKS.md, the raw
#                        results in build/bench/raw/
#   make bench QUICK=1   a smoke run of about two minutes (107 s on a quiet machine), with
#                        fewer and shorter rounds:
#                        writes build/bench/BENCHMARKS-quick.md (raw results in
#                        build/bench/raw-quick/), leaving the committed figures alone
#                        Either takes longer on a machine others load (the smoke run took
#                        4 minutes at a load average of 10). Each run's time is on the first
#                        line of what it writes.
#   make bench-report    renders the same output again from the last raw results, measuring
#                        nothing (QUICK=1 for the smoke run's): after editing bench/report.sh
#
# BENCH_OUT= names another output file, BENCH_RAW= another raw directory. The figures are of
# the plain build: not with SANITIZE=1. The Debian packages come from tests/deps.sh, plus
# gnuplot-nox for the picture.

QUICK ?= 0
BENCH_BINS = build/bench/contend build/bench/stagger build/bench/capacity build/bench/optcost \
	     build/bench/pairtime build/bench/queuecost build/bench/lstorecost
BENCH_COMMON = bench/bench.c bench/bench.h

.PHONY: bench bench-run bench-report

ifeq ($(SANITIZE),1)
bench bench-run:
	@echo "make bench measures the plain build: run it without SANITIZE=1" >&2; exit 1
else
bench:
	@sh tests/deps.sh
	@$(MAKE) --no-print-directory -j1 bench-run

bench-run: all $(BENCH_BINS) build/privtmp
	QUICK=$(QUICK) BENCH_OUT=$(BENCH_OUT) BENCH_RAW=$(BENCH_RAW) $(UNTOUCHED) bash bench/run.sh
endif

bench-report:
	QUICK=$(QUICK) BENCH_OUT=$(BENCH_OUT) BENCH_RAW=$(BENCH_RAW) bash bench/run.sh report


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

# The per-host store's script calls alone (tests/model's lsdrive links the same objects);
# redis.sha1hex's dlopen of libcrypto counted and timed.
LSTORECOST_OBJS = build/lstore.o build/lscript.o build/slot.o build/fstime.o
build/bench/lstorecost: bench/lstorecost.c $(LSTORECOST_OBJS) $(HEADERS) | build/bench
	$(CC) $(ALL_CFLAGS) -Wl,--wrap=dlopen,--wrap=dlclose $(LDFLAGS) -o $@ $< \
		$(LSTORECOST_OBJS) $(PAM_LIBS)
