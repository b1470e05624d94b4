/* SPDX-License-Identifier: BSD-3-Clause */
/* src/slot.lua run on the per-host store (src/lstore.c) as Redis runs it: Lua 5.1, a fresh
   state for each call with only the base, table, string and math libraries, and a `redis`
   object that answers exactly the commands the script calls, with Redis's semantics. */
#ifndef FLOWSLOT_LSCRIPT_H
#define FLOWSLOT_LSCRIPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flowslot/lstore.h"

/* The most one call's Lua state may allocate, and the most VM instructions it may run: about
   a hundred times what the script takes on a full file, a small fraction of a second. */
#define LSCRIPT_MEMORY_MAX (32 * 1024 * 1024)
#define LSCRIPT_STEPS_MAX 50000000L
/* The most integers the script's answer holds (peek's seven). */
#define LSCRIPT_OUT_MAX 8

/* Why a run failed, where the store's content is not to blame: then nothing is to be written. */
enum lscript_fault {
	LSCRIPT_FAULT_NONE,  /* an answer, or an error of the script's on what the store holds */
	LSCRIPT_FAULT_OWN,   /* the caller's own limits: memory it could not have (RLIMIT_AS) */
	LSCRIPT_FAULT_LATE,  /* its deadline passed: the time (a CPU it was starved of), not the
				store, is to blame */
	LSCRIPT_FAULT_HEAVY, /* a cap of ours reached: the store is too heavy to decide on */
	LSCRIPT_FAULT_FULL,  /* the store would have grown past LSTORE_MEMBERS_MAX */
};

struct lscript_out {
	long long v[LSCRIPT_OUT_MAX];
	size_t n;
	size_t memory_peak; /* bytes the Lua state held at most */
	long steps;	    /* VM instructions, to the nearest thousand */
	enum lscript_fault fault;
};

/* Runs slot.lua on s, the store of key, with argv (argc strings) as ARGV, and over by
   deadline_us (CLOCK_MONOTONIC; 0 for none). Fills out with the script's answer, an array of
   integers as Redis turns a Lua table into a reply. Returns 0, or -1 with the cause in err:
   the script's error reply, a Lua error, a command it may not call, a cap reached. */
int lscript_run(struct lstore *s, const char *key, const char *const *argv, int argc,
		int64_t deadline_us, struct lscript_out *out, char *err, size_t errsz);

#endif
