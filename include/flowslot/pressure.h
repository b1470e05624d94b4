/* SPDX-License-Identifier: BSD-3-Clause */
/* The host's pressure: the "some" stall share of cpu, io and memory (Linux PSI,
   /proc/pressure), computed from the growth of the files' total= counters. */
#ifndef FLOWSLOT_PRESSURE_H
#define FLOWSLOT_PRESSURE_H

#include <stdbool.h>
#include <stdint.h>

#include <security/pam_modules.h>

enum pressure_res {
	PRESSURE_CPU,
	PRESSURE_IO,
	PRESSURE_MEMORY,
	PRESSURE_RES_N,
};

/* A share is in parts per million: 1% is 10000. */
#define PRESSURE_PPM_ALL INT64_C(1000000)
/* A share is measured over at least this, and a sample stored by another login older than
   PRESSURE_AGE_MAX_US is not used. */
#define PRESSURE_GAP_US INT64_C(250000)
#define PRESSURE_AGE_MAX_US INT64_C(2000000)
/* Samples kept in the store that the host's logins share. */
#define PRESSURE_STORED 8

extern const char *const pressure_res_name[PRESSURE_RES_N];

/* Parses "RES:PCT[,RES:PCT...]" (RES cpu, io or memory, each at most once; 0 < PCT <= 100,
   at most four decimals) into limit_ppm (0 for a resource not named). Returns 0, or -1 with
   *why. */
int pressure_parse_spec(const char *s, int64_t limit_ppm[PRESSURE_RES_N], const char **why);

/* Reads the "some ... total=N" microseconds from the text of one pressure file, strictly:
   "some avg10=A avg60=A avg300=A total=N" then "full ..." of the same shape (optional for
   cpu only), each ending in a newline, and nothing else. Returns 0, or -1 with *why. */
int pressure_parse_file(const char *text, enum pressure_res res, int64_t *total_us,
			const char **why);

/* The stalled share between two readings of total (microseconds) taken at two times, in
   ppm clamped to [0, PRESSURE_PPM_ALL]; -1 when it cannot be told (a reading missing, the
   times too close, the counter gone back). */
int64_t pressure_share_ppm(int64_t then_total_us, int64_t then_at_us, int64_t now_total_us,
			   int64_t now_at_us);

/* One reading of the watched resources; total_us -1 where not watched or unreadable. */
struct pressure_sample {
	int64_t at_us; /* CLOCK_MONOTONIC */
	int64_t total_us[PRESSURE_RES_N];
};

/* What one login measures, and how. */
struct pressure_gauge {
	const pam_handle_t *pamh;
	const char *dir;       /* pressure_dir */
	const char *state_dir; /* where the samples shared by the host's logins are kept */
	const int64_t *limit_ppm;
	unsigned warned; /* resources reported unusable already (one bit each) */
	struct pressure_sample last;
	bool have_last;
};

/* Measures each watched resource's share into share_ppm (-1: unknown), against a sample at
   least PRESSURE_GAP_US old: this login's last one, else one stored by another login at most
   PRESSURE_AGE_MAX_US old, else one taken now after which it sleeps PRESSURE_GAP_US. Stores
   its own sample for the others. A file that cannot be used is reported once, at
   LOG_WARNING, and counts as no pressure; when no watched file can be used, it neither
   sleeps nor stores. */
void pressure_measure(struct pressure_gauge *g, int64_t share_ppm[PRESSURE_RES_N]);

/* The resource at or above its limit with the largest share relative to it, or -1. */
int pressure_over(const int64_t limit_ppm[PRESSURE_RES_N], const int64_t share_ppm[PRESSURE_RES_N]);

#endif
