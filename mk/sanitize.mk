# SPDX-License-Identifier: BSD-3-Clause
# make check SANITIZE=1: the module, the unit tests and build/hygiene built with ASan and UBSan;
# the shell suites then preload the ASan runtime into pamtester (tests/helpers/lib.sh, on
# FLOWSLOT_SANITIZE=1) and skip the valgrind pass, since valgrind and ASan do not mix.
#
# Sanitized and plain objects must not mix, and both live in build/: build/.flavour records
# which kind build/ holds, and make stops when asked for the other kind. Run "make clean"
# between the two.

ifeq ($(SANITIZE),1)
SAN_FLAVOUR = sanitized
# ALL_CFLAGS is on every compile and every link line (the module, the unit tests, hygiene).
ALL_CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer \
	      -fno-sanitize-recover=undefined
export FLOWSLOT_SANITIZE = 1
# allocator_release_to_os_interval_ms=-1: see tests/helpers/lib.sh (ASan under libfaketime).
SAN_ASAN_OPTIONS = detect_leaks=1:abort_on_error=0:exitcode=98
export ASAN_OPTIONS ?= $(SAN_ASAN_OPTIONS):allocator_release_to_os_interval_ms=-1
export UBSAN_OPTIONS ?= halt_on_error=1:print_stacktrace=1
else
SAN_FLAVOUR = plain
endif

# Checked for every goal but those that make no gcc objects (fuzz is clang's, in build/fuzz/),
# and not when "clean" comes first. Objects from before this record existed are plain.
SAN_CHECK := $(if $(filter clean,$(MAKECMDGOALS)),,$(if $(MAKECMDGOALS),$(filter-out \
	     deps fuzz fuzz-smoke fuzz-build fuzz-toolchain,$(MAKECMDGOALS)),all))
ifneq ($(SAN_CHECK),)
SAN_BUILT := $(strip $(shell cat build/.flavour 2> /dev/null))
ifeq ($(SAN_BUILT),)
SAN_BUILT := $(if $(wildcard build/*.o pam_flowslot.so),plain)
endif
ifneq ($(SAN_BUILT),)
ifneq ($(SAN_BUILT),$(SAN_FLAVOUR))
$(error build/ holds a $(SAN_BUILT) build, and this one is $(SAN_FLAVOUR): run "make clean" first)
endif
endif
endif

# Every object and program in build/ is made after the record of its kind.
build/.flavour: | build
	echo $(SAN_FLAVOUR) > $@

$(LIB_OBJS) build/pam_flowslot.o $(UNIT_TESTS) build/hygiene: | build/.flavour
