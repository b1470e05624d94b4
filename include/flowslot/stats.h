/* SPDX-License-Identifier: BSD-3-Clause */
/* The host's login counters, kept in state_dir: per key template, how logins went and how long
   they waited, in one small file that a login updates without a round trip to Redis. */
#ifndef FLOWSLOT_STATS_H
#define FLOWSLOT_STATS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <security/pam_modules.h>

#include "flowslot/opt.h"

#define STATS_FILE "stats"
/* Templates counted each under its own name; further ones share the record labelled "other". */
#define STATS_TEMPLATES_MAX 64
#define STATS_OTHER "other"
#define STATS_BUCKETS 10 /* and +Inf */

enum stats_result {
	STATS_ADMITTED,	   /* went in without a wait */
	STATS_WAITED,	   /* went in after a wait */
	STATS_REFUSED,	   /* over max_wait, or per_host */
	STATS_UNAVAILABLE, /* met the failure policy: fallback=open or closed, or no schedule */
	STATS_ABANDONED,   /* hung up while waiting */
	STATS_RESULTS,
};

/* One set of series: real logins, or those of a dry run. */
struct stats_series {
	uint64_t logins[STATS_RESULTS];
	uint64_t redis_errors; /* calls on Redis that failed, each, logged or not */
	uint64_t buckets[STATS_BUCKETS + 1]; /* not cumulative; the last is +Inf */
	uint64_t wait_sum_us;
	uint64_t wait_count;
};

struct stats_record {
	char key[OPT_KEY_MAX + 1]; /* the template; "" for an unused record */
	char pad[7];
	struct stats_series series[2]; /* [dry_run] */
};

/* The file's layout, fixed: a header and STATS_TEMPLATES_MAX records, then "other". The first
   n records are in use; those after them are room for new templates, whatever they hold. */
struct stats_table {
	char magic[8];
	uint32_t version;
	uint32_t n; /* records used, not counting "other" */
	struct stats_record rec[STATS_TEMPLATES_MAX + 1];
};

/* The upper bounds of the wait buckets, in milliseconds. */
extern const int64_t stats_bucket_ms[STATS_BUCKETS];

/* Empties t. */
void stats_reset(struct stats_table *t);

/* Whether t is a counters table as stats_reset and stats_count leave one: its header, the n
   records in use and "other" (the records past n are not looked at). */
bool stats_valid(const struct stats_table *t);

/* Counts one login of template with result r in t; wait_us goes into the histogram for
   admitted and waited logins. Returns the index of the record counted in. */
int stats_count(struct stats_table *t, const char *tmpl, bool dry_run, enum stats_result r,
		int64_t wait_us);

/* Counts one call on Redis that failed, of a login of template, in t. Returns the index of
   the record counted in. */
int stats_count_error(struct stats_table *t, const char *tmpl, bool dry_run);

/* Counts one call on Redis that failed in state_dir's counters file, as stats_record counts
   a login. */
int stats_record_error(const pam_handle_t *pamh, const char *state_dir, const char *tmpl,
		       bool dry_run);

/* Counts one login in state_dir's counters file (created 0600 as needed), under its lock,
   reading the header, the records in use and "other", and writing back only the record
   counted (and the header, for a new one). A file that is not a counters table is started
   afresh. Returns 0, or -1 with the reason logged at LOG_WARNING: counting never changes what
   becomes of a login. */
int stats_record(const pam_handle_t *pamh, const char *state_dir, const char *tmpl, bool dry_run,
		 enum stats_result r, int64_t wait_us);

/* Reads state_dir's counters into t (empty if there is no file yet). Returns 0, or -1 with
   *why saying what is wrong (errno set for a system error). */
int stats_load(const char *state_dir, struct stats_table *t, const char **why);

/* Writes t in the Prometheus text exposition format: flowslot_logins_total and the
   flowslot_wait_seconds histogram and flowslot_redis_errors_total, with HELP and TYPE: of the key template only, or of all
   when only is NULL. A caller may print more families after. */
int stats_format(FILE *out, const struct stats_table *t, const char *only);

/* Writes v as a label value, escaped as the exposition format says: \\, \" and \n. */
void stats_label(FILE *out, const char *v);

/* stats_load, then stats_format. Returns 0, or -1 with *why set. */
int stats_write_prometheus(FILE *out, const char *state_dir, const char *only, const char **why);

#endif
