# SPDX-License-Identifier: BSD-3-Clause
# pam_flowslot: a PAM module that staggers logins.
#
#   make                 build pam_flowslot.so and flowslotctl
#   make check           install what the tests need (as root, with apt) and run them all
#   make demo            install what the demo needs, then six logins through a private Redis,
#                        one second apart
#   make install         DESTDIR=, PAMDIR= (default: pam's libdir/security), MANDIR=
#   make deb             the Debian package libpam-flowslot, into build/deb/ (mk/deb.mk)
#   make WERROR=1        warnings are errors (CI)

# The one place the version is written: NEWS and debian/changelog must agree (tests/suites/docs.sh).
VERSION = 0.11.0

PKG_CONFIG ?= pkg-config
CC ?= cc
CFLAGS ?= -O2 -g
WARNINGS = -Wall -Wextra -Wformat=2 -Wshadow -Wmissing-prototypes -Wstrict-prototypes \
	   -Wwrite-strings -Wcast-qual
ifeq ($(WERROR),1)
WARNINGS += -Werror
endif

# Deferred (=), so that "make check" on a bare machine can install the packages first.
PAM_CFLAGS = $(shell $(PKG_CONFIG) --cflags pam hiredis openssl lua5.1)
PAM_LIBS = $(shell $(PKG_CONFIG) --libs pam hiredis lua5.1)
CMOCKA_CFLAGS = $(shell $(PKG_CONFIG) --cflags cmocka)
CMOCKA_LIBS = $(shell $(PKG_CONFIG) --libs cmocka)
PAMDIR = $(shell $(PKG_CONFIG) --variable=libdir pam)/security
PREFIX ?= /usr
SBINDIR ?= $(PREFIX)/sbin
MANDIR ?= $(PREFIX)/share/man
DOCDIR ?= $(PREFIX)/share/doc/pam_flowslot
PAMCONFIGDIR ?= $(PREFIX)/share/pam-configs

ALL_CFLAGS = -std=c11 -D_GNU_SOURCE -fPIC $(WARNINGS) -Iinclude -Ibuild \
	     -DFLOWSLOT_VERSION=\"$(VERSION)\" \
	     $(PAM_CFLAGS) $(CPPFLAGS) $(CFLAGS)
LDFLAGS_MODULE = -shared -Wl,--version-script=pam_flowslot.map -Wl,-z,defs -Wl,-z,relro \
		 -Wl,-z,now

LIB_SRCS = src/opt.c src/url.c src/str.c src/conf.c src/key.c src/slot.c src/rslot.c src/rnode.c \
	   src/lslot.c src/ncache.c src/countdown.c src/fstime.c src/log.c src/hangup.c src/queue.c \
	   src/lstore.c src/lscript.c src/trust.c src/stats.c src/pressure.c src/hold.c src/tls.c \
	   src/once.c src/waiters.c src/lframe.c
LIB_OBJS = $(LIB_SRCS:src/%.c=build/%.o)
HEADERS = $(wildcard include/flowslot/*.h) build/slot_lua.h

UNIT_TESTS = build/test_opt build/test_url build/test_conf build/test_key build/test_countdown \
	     build/test_slot build/test_rslot build/test_rnode build/test_lslot \
	     build/test_hangup build/test_trust build/test_stats build/test_pressure build/test_symbols \
	     build/test_queue build/test_once build/test_waiters build/test_ncache

.PHONY: all check check-run check-e2e demo demo-run deps install uninstall clean unit

all: pam_flowslot.so flowslotctl

pam_flowslot.so: build/pam_flowslot.o $(LIB_OBJS) pam_flowslot.map
	$(CC) $(ALL_CFLAGS) $(LDFLAGS_MODULE) $(LDFLAGS) -o $@ build/pam_flowslot.o $(LIB_OBJS) \
		$(PAM_LIBS)

build/pam_flowslot.o: pam_flowslot.c $(HEADERS) Makefile | build
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

# The admin tool: the module's own objects, no second copy of the parser or the Redis code.
flowslotctl: build/flowslotctl.o $(LIB_OBJS)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ build/flowslotctl.o $(LIB_OBJS) $(PAM_LIBS)

build/flowslotctl.o: flowslotctl.c $(HEADERS) | build
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

build/%.o: src/%.c $(HEADERS) | build
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

# The script travels as a C string, and its SHA-1 for EVALSHA is taken from the same bytes;
# the per-host store loads it compiled, RSLOT_CHUNK (build/luadump). A recipe of its own, for
# mk/fuzz.mk's stand-in script too.
define LUA_TO_C
{ printf '#define RSLOT_SCRIPT_SHA1 "%s"\n' "$$(sha1sum < $< | cut -c1-40)"; \
	  printf '#define RSLOT_SCRIPT \\\n'; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/\t"/' -e 's/$$/\\n" \\/' $<; \
	  printf '\t""\n'; \
	  printf '#define RSLOT_CHUNK \\\n'; \
	  build/luadump '=slot.lua' < $<; } > $@.tmp && mv $@.tmp $@
endef

build/slot_lua.h: src/slot.lua build/luadump | build
	$(LUA_TO_C)

# Run at build time, on the build machine: not part of the module. Built for another machine,
# the module finds the chunk foreign and compiles the source (src/lscript.c).
CC_FOR_BUILD ?= $(CC)
build/luadump: src/luadump.c | build
	$(CC_FOR_BUILD) -std=c11 $(WARNINGS) -O2 $(shell $(PKG_CONFIG) --cflags lua5.1) -o $@ $< \
		$(shell $(PKG_CONFIG) --libs lua5.1)

build:
	mkdir -p build

# $(call shq,TEXT): TEXT as one shell word, in single quotes, for a checkout path with spaces.
shq = '$(subst ','\'',$(1))'

# Unit tests: cmocka, linked against the objects themselves.
TEST_CFLAGS = $(ALL_CFLAGS) $(CMOCKA_CFLAGS) -Wno-missing-prototypes
TEST_LIBS = $(CMOCKA_LIBS) $(PAM_LIBS)
RSLOT_WRAPS = -Wl,--wrap=redisConnectWithTimeout,--wrap=redisConnectUnixWithTimeout,--wrap=redisFree

build/test_%: tests/unit/test_%.c $(LIB_OBJS) $(HEADERS) tests/unit/lockers.h
	$(CC) $(TEST_CFLAGS) -o $@ $< $(LIB_OBJS) $(TEST_LIBS)

build/test_rslot: tests/unit/test_rslot.c $(LIB_OBJS) $(HEADERS)
	$(CC) $(TEST_CFLAGS) $(RSLOT_WRAPS) -o $@ $< $(LIB_OBJS) $(TEST_LIBS)

# The Sentinel and Cluster paths: a fake node per address, and the log's priorities.
build/test_rnode: tests/unit/test_rnode.c tests/unit/fakepeer.c tests/unit/fakepeer.h $(LIB_OBJS) \
		  $(HEADERS)
	$(CC) $(TEST_CFLAGS) $(RSLOT_WRAPS) -Wl,--wrap=log_msg -o $@ $< tests/unit/fakepeer.c \
		$(LIB_OBJS) $(TEST_LIBS)

# The countdown on a fake clock.
build/test_countdown: tests/unit/test_countdown.c $(LIB_OBJS) $(HEADERS)
	$(CC) $(TEST_CFLAGS) -Wl,--wrap=fstime_mono_us -o $@ $< $(LIB_OBJS) $(TEST_LIBS)

# The wait, against a scripted backend on a fake clock.
QUEUE_WRAPS = -Wl,--wrap=fstime_mono_us,--wrap=hangup_wait_until,--wrap=lslot_call \
	      -Wl,--wrap=rslot_turn_call,--wrap=log_msg,--wrap=stats_record_error \
	      -Wl,--wrap=rslot_heard_at_least
build/test_queue: tests/unit/test_queue.c $(LIB_OBJS) $(HEADERS)
	$(CC) $(TEST_CFLAGS) $(QUEUE_WRAPS) -o $@ $< $(LIB_OBJS) $(TEST_LIBS)

# The measurement's sleeps, counted.
build/test_pressure: tests/unit/test_pressure.c $(LIB_OBJS) $(HEADERS)
	$(CC) $(TEST_CFLAGS) -Wl,--wrap=fstime_sleep_until -o $@ $< $(LIB_OBJS) $(TEST_LIBS)

build/test_symbols: tests/unit/test_symbols.c pam_flowslot.so
	$(CC) $(TEST_CFLAGS) -DMODULE_PATH=$(call shq,"$(CURDIR)/pam_flowslot.so") -o $@ $< \
		$(TEST_LIBS) -ldl

# A decimal-comma locale, so that test_opt can show durations ignore the caller's locale.
build/locale/de_DE.UTF-8: | build
	mkdir -p build/locale
	localedef -i de_DE -f UTF-8 $@

# Each run, like each suite, leaves the host's /run/pam_flowslot and /etc/pam.d as it found them
# (tests/helpers/untouched.sh names what it changed).
UNTOUCHED = bash tests/helpers/untouched.sh

# SUITE_LIMIT=SECONDS: each suite, and the short campaign, stopped past that long (their whole
# process group: coreutils timeout), so that a hang fails the suite it is in, by name, rather
# than the run at CI's own limit. .ci/run gives 1200; none by default, for a suite run at a
# terminal (a process group of its own would stop it if it read the terminal).
SUITE_LIMIT ?=
SUITE = $(if $(SUITE_LIMIT),timeout -k 30 $(SUITE_LIMIT))

# The unit tests run UNIT_LANES side by side, the slowest first, each one's output whole when it
# ends: most of their time is spent waiting (a lock's holder found stuck after 2 s, a peer that
# never answers), 63 s one at a time here.
UNIT_LANES ?= 3
UNIT_SLOW = build/test_lslot build/test_trust build/test_hangup build/test_rnode
UNIT_RUNS = $(patsubst build/%,unit-run-%,$(UNIT_SLOW) $(filter-out $(UNIT_SLOW),$(UNIT_TESTS)))
.PHONY: $(UNIT_RUNS)
unit: $(UNIT_TESTS) build/locale/de_DE.UTF-8
	@$(MAKE) --no-print-directory -j$(UNIT_LANES) -Otarget $(UNIT_RUNS)

$(UNIT_RUNS): unit-run-%:
	@echo "== build/$*"; LOCPATH=$(call shq,$(CURDIR)/build/locale) $(UNTOUCHED) ./build/$*

# The README's commands. Each installs what it needs first (tests/deps.sh: make demo only the
# build and one redis-server, naming the packages; no service started), then runs. make check
# builds and checks the package too (check-deb), so make deb's packages come first with the
# rest: installed by check-deb in the middle of the run, they changed the host's root under
# the overlay of it that tests/deps-root.sh runs dpkg in (dpkg: "Stale file handle").
# check-run makes its own -j whatever -j the caller gave (GNU make 4.3, Debian 12's, has only
# the global .NOTPARALLEL, which would serialise the build too).
check:
	@sh tests/deps.sh deb
	@$(UNTOUCHED) $(MAKE) --no-print-directory -j1 check-run

# sanitize.mk comes first: it changes how everything is built.
include mk/sanitize.mk

# The suites, one row each: the target, the file under tests/ it runs, and what it needs built
# ("-": nothing beyond the tree). Each adds itself to CHECK_EXTRA, in this order, and runs as
# $(SUITE) bash tests/FILE. What each checks: HACKING.md, and the file's first lines.
SUITE_TABLE = \
	check-garbage      suites/garbage.sh      pam_flowslot.so,build/fake_redis \
	check-hygiene      suites/hygiene.sh      pam_flowslot.so,build/hygiene \
	check-queue        suites/queue.sh        pam_flowslot.so,flowslotctl \
	check-stack        suites/stack.sh        pam_flowslot.so,build/resume \
	check-stats        suites/stats.sh        pam_flowslot.so,flowslotctl \
	check-pressure     suites/pressure.sh     pam_flowslot.so \
	check-ctl          suites/ctl.sh          pam_flowslot.so,flowslotctl \
	check-tls          suites/tls.sh          pam_flowslot.so,flowslotctl \
	check-sentinel     suites/ha.sh           pam_flowslot.so \
	check-cluster      suites/cluster.sh      pam_flowslot.so \
	check-hosts        suites/hosts.sh        pam_flowslot.so \
	check-deb          -                      - \
	check-admin        suites/admin.sh        pam_flowslot.so \
	check-model        -                      - \
	check-diff         -                      - \
	check-deps         deps-root.sh           - \
	check-docs         suites/docs.sh         - \
	check-script       suites/script.sh       - \
	check-integration  suites/integration.sh  pam_flowslot.so \
	check-redis-faults suites/faults.sh       pam_flowslot.so,flowslotctl,build/model/lsdrive \
	check-hostile      suites/hostile.sh      pam_flowslot.so \
	check-valgrind     -                      pam_flowslot.so
# A row whose file is "-" has its recipe below, or in its own file in mk/ (a suite with more
# than one rule: the package, the model, the differential test).
# A suite that needs the module also gets build/pam_stamp.so, which its stacks stamp with.
comma := ,
suite_needs = $(filter-out -,$(subst $(comma), ,$(1)))
define suite_rule
.PHONY: $(1)
CHECK_EXTRA += $(1)
$(1): $(call suite_needs,$(3)) $(if $(filter pam_flowslot.so,$(call suite_needs,$(3))),build/pam_stamp.so)
$(if $(filter-out -,$(2)),	$$(SUITE) bash tests/$(2))
endef
suite_row = $(eval $(call suite_rule,$(word 1,$(1)),$(word 2,$(1)),$(word 3,$(1))))
suite_rows = $(if $(1),$(call suite_row,$(1))$(call suite_rows,$(wordlist 4,$(words $(1)),$(1))))
CHECK_EXTRA =
$(call suite_rows,$(SUITE_TABLE))
.PHONY: check-ha
check-ha: check-sentinel check-cluster check-hosts
check-valgrind:
	FLOWSLOT_VALGRIND=1 $(SUITE) bash tests/suites/integration.sh

# The helpers the suites run, built from tests/helpers/.
build/fake_redis: tests/helpers/fake_redis.c | build
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $<
build/hygiene: tests/helpers/hygiene.c | build
	$(CC) $(ALL_CFLAGS) -pthread -o $@ $< $(shell $(PKG_CONFIG) --libs pam)
build/resume: tests/helpers/resume.c | build
	$(CC) $(ALL_CFLAGS) -o $@ $< $(shell $(PKG_CONFIG) --libs pam)
build/pam_stamp.so: tests/helpers/pam_stamp.c | build
	$(CC) $(ALL_CFLAGS) -shared -o $@ $< $(shell $(PKG_CONFIG) --libs pam)

# What is more than one rule has a file in mk/.
include mk/deb.mk mk/model.mk mk/diff.mk mk/fuzz.mk mk/bench.mk mk/faults.mk

# The suites time their logins, and a busy CPU makes a login late. Those that mostly wait on
# their schedules (measured here on 2 cores: each keeps a fifth of one busy, or less) run
# CHECK_LANES side by side, longest first, each one's output printed whole when it ends; the
# rest run one at a time, with nothing beside them: those that keep a CPU busy (valgrind, a
# Redis Cluster, twenty logins at once, a storm of replies), and pressure.sh, which reads the
# host's real /proc/pressure. Those that time nothing run beside the lanes (below). A suite
# not named here runs alone.
# Four lanes: these suites take 546 s one at a time here, and faults.sh alone 137 s; three
# lanes took 185 s, four leave faults.sh the longest lane. Three lanes were measured at first
# (five passes plain and five sanitized, each clean); running them so found tests that looked
# for a key after it had expired (tls.sh, hostile.sh), and integration.sh's twenty logins at
# once late past their bound, which is why it runs alone. CHECK_LANES=1: one at a time.
CHECK_LANES ?= 4
CHECK_WAITS = check-ctl check-queue check-redis-faults check-stats check-tls check-hosts \
	      check-sentinel check-admin check-stack check-hostile
# Those that time nothing (the docs, the package, a throwaway root, and hypothesis and the
# differential test on the test's own clock) keep a CPU busy each: they run two at a time,
# at the lowest CPU priority (nice 19), beside the lanes, which leave more than a core idle and
# keep what they ask for. 159 s one at a time here, docs.sh's 43 renderings of each man page
# the longest. What both groups build is built first. A background job of the shell's ignores
# SIGINT: the untimed suites are stopped by the trap when the lanes are interrupted.
CHECK_UNTIMED = check-docs check-deb check-deps check-model check-diff

# CHECK_LANES=1: every suite one at a time, nothing beside it.
check-run: all unit build/model/lsdrive build/model/slot_clock.lua
	@$(MAKE) --no-print-directory -j1 $(filter-out $(CHECK_WAITS) $(CHECK_UNTIMED),$(CHECK_EXTRA))
ifeq ($(CHECK_LANES),1)
	@$(MAKE) --no-print-directory -j1 $(CHECK_UNTIMED) $(CHECK_WAITS)
else
	@nice -n 19 $(MAKE) --no-print-directory -j2 -Otarget $(CHECK_UNTIMED) & \
	untimed=$$!; \
	trap 'kill $$untimed 2> /dev/null' INT TERM HUP; \
	$(MAKE) --no-print-directory -j$(CHECK_LANES) -Otarget $(CHECK_WAITS); rc=$$?; \
	wait $$untimed || rc=1; \
	exit $$rc
endif

# Real logins: Debian's sshd and ssh client, /bin/login, su, runuser and sudo in a terminal, and
# the front ends on Xvfb: LightDM's greeter, xrdp with xfreerdp, Cockpit's web login in Chromium.
# The suites mostly wait on their logins and share nothing (sshd, xrdp and cockpit-ws on free
# ports of their own; the console's logins, LightDM, xrdp-sesman and cockpit-ws each in a mount
# namespace of its own, on X displays they find free). The ssh and console suites, whose checks
# time lines 2 s apart, run side by side alone: with a third suite beside them they failed
# those checks (3 tries of 3). The front ends' suites, whose bounds are looser, then run three
# at a time. Each one's output is whole when it ends; a failing suite stops none of the others.
E2E_TERMINAL = e2e-run-ssh e2e-run-console
E2E_FRONTENDS = e2e-run-lightdm e2e-run-xrdp e2e-run-cockpit
check-e2e: all build/privtmp build/pam_stamp.so
	@sh tests/deps.sh
	@rc=0; \
	$(MAKE) --no-print-directory -k -j2 -Otarget $(E2E_TERMINAL) || rc=1; \
	$(MAKE) --no-print-directory -k -j3 -Otarget $(E2E_FRONTENDS) || rc=1; \
	$(SUITE) bash tests/e2e/debian.sh || rc=1; \
	exit $$rc

.PHONY: $(E2E_TERMINAL) $(E2E_FRONTENDS)
$(E2E_TERMINAL) $(E2E_FRONTENDS): e2e-run-%:
	$(SUITE) bash tests/e2e/e2e-$*.sh

# Runs sshd in a private /tmp for tests/helpers/sshd.sh. Static, so that the pam_wrapper
# preloaded into sshd's environment never runs in it; never sanitized (no ALL_CFLAGS).
build/privtmp: tests/helpers/privtmp.c | build
	$(CC) -std=c11 -D_GNU_SOURCE $(WARNINGS) $(CFLAGS) -static -o $@ $<

demo:
	@sh tests/deps.sh demo
	@$(MAKE) --no-print-directory demo-run

demo-run: all
	@bash tests/demo.sh

deps:
	sh tests/deps.sh

# The examples for the graphical and remote front ends (issue 39), installed beside sshd's.
FRONTEND_EXAMPLES = etc/pam.d/lightdm-flowslot etc/pam.d/gdm-password-flowslot \
	etc/pam.d/cockpit-flowslot etc/pam.d/xrdp-sesman-flowslot

install: pam_flowslot.so flowslotctl
	install -d -m 0755 "$(DESTDIR)$(PAMDIR)" "$(DESTDIR)$(MANDIR)/man8" "$(DESTDIR)$(MANDIR)/man7" \
		"$(DESTDIR)$(MANDIR)/man5" \
		"$(DESTDIR)$(SBINDIR)" \
		"$(DESTDIR)$(DOCDIR)" \
		"$(DESTDIR)$(PAMCONFIGDIR)"
	install -m 0644 pam_flowslot.so "$(DESTDIR)$(PAMDIR)/pam_flowslot.so"
	install -m 0644 man/pam_flowslot.8 "$(DESTDIR)$(MANDIR)/man8/pam_flowslot.8"
	install -m 0644 man/pam_flowslot.7 "$(DESTDIR)$(MANDIR)/man7/pam_flowslot.7"
	install -m 0755 flowslotctl "$(DESTDIR)$(SBINDIR)/flowslotctl"
	install -m 0644 man/flowslotctl.8 "$(DESTDIR)$(MANDIR)/man8/flowslotctl.8"
	install -m 0644 etc/profile.d/flowslot-wait.sh "$(DESTDIR)$(DOCDIR)/profile.d-flowslot-wait.sh"
	install -m 0644 man/pam_flowslot.conf.5 "$(DESTDIR)$(MANDIR)/man5/pam_flowslot.conf.5"
	install -m 0644 etc/pam.d/flowslot-example "$(DESTDIR)$(DOCDIR)/pam.d-example"
	install -m 0644 etc/pam.d/sshd-flowslot etc/pam.d/login-flowslot $(FRONTEND_EXAMPLES) \
		"$(DESTDIR)$(DOCDIR)/"
	install -m 0644 etc/security/pam_flowslot.conf "$(DESTDIR)$(DOCDIR)/pam_flowslot.conf.example"
	install -m 0644 etc/stunnel/flowslot-redis.conf "$(DESTDIR)$(DOCDIR)/stunnel-flowslot-redis.conf"
	install -m 0644 etc/pam-configs/flowslot "$(DESTDIR)$(PAMCONFIGDIR)/flowslot"
	install -d -m 0755 "$(DESTDIR)$(DOCDIR)/bench"
	install -m 0644 BENCHMARKS.md "$(DESTDIR)$(DOCDIR)/BENCHMARKS.md"
	install -m 0644 docs/GUIDE.md "$(DESTDIR)$(DOCDIR)/GUIDE.md"
	install -m 0644 bench/timeline.png bench/storm.png "$(DESTDIR)$(DOCDIR)/bench/"

uninstall:
	rm -f "$(DESTDIR)$(PAMDIR)/pam_flowslot.so" "$(DESTDIR)$(MANDIR)/man8/pam_flowslot.8" \
		"$(DESTDIR)$(SBINDIR)/flowslotctl" "$(DESTDIR)$(MANDIR)/man8/flowslotctl.8" \
		"$(DESTDIR)$(DOCDIR)/profile.d-flowslot-wait.sh" \
		"$(DESTDIR)$(MANDIR)/man5/pam_flowslot.conf.5" "$(DESTDIR)$(MANDIR)/man7/pam_flowslot.7" \
		"$(DESTDIR)$(DOCDIR)/pam.d-example" "$(DESTDIR)$(DOCDIR)/pam_flowslot.conf.example" \
		"$(DESTDIR)$(DOCDIR)/sshd-flowslot" "$(DESTDIR)$(DOCDIR)/login-flowslot" \
		$(FRONTEND_EXAMPLES:etc/pam.d/%="$(DESTDIR)$(DOCDIR)/%") \
		"$(DESTDIR)$(DOCDIR)/stunnel-flowslot-redis.conf" \
		"$(DESTDIR)$(PAMCONFIGDIR)/flowslot" "$(DESTDIR)$(DOCDIR)/BENCHMARKS.md" \
		"$(DESTDIR)$(DOCDIR)/GUIDE.md" \
		"$(DESTDIR)$(DOCDIR)/bench/timeline.png" "$(DESTDIR)$(DOCDIR)/bench/storm.png"
	-rmdir "$(DESTDIR)$(DOCDIR)/bench" "$(DESTDIR)$(DOCDIR)"

clean:
	rm -rf build pam_flowslot.so flowslotctl
