/* SPDX-License-Identifier: BSD-3-Clause */
#include "flowslot/stats.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "flowslot/fstime.h"
#include "flowslot/log.h"
#include "flowslot/trust.h"

#define STATS_MAGIC "flowslot"
#define STATS_VERSION 2 /* 2: redis_errors */
#define STATS_LOCK_WAIT_US 1000000

const int64_t stats_bucket_ms[STATS_BUCKETS] = { 500,	1000,  2000,  5000,   10000,
						 20000, 30000, 60000, 120000, 300000 };

static const char *const stats_result_name[STATS_RESULTS] = {
	[STATS_ADMITTED] = "admitted",	 [STATS_WAITED] = "waited",
	[STATS_REFUSED] = "refused",	 [STATS_UNAVAILABLE] = "unavailable",
	[STATS_ABANDONED] = "abandoned",
};

void stats_reset(struct stats_table *t)
{
	memset(t, 0, sizeof(*t));
	memcpy(t->magic, STATS_MAGIC, sizeof(t->magic));
	t->version = STATS_VERSION;
}

static bool stats_series_valid(const struct stats_series *s)
{
	uint64_t n = 0;

	for (int b = 0; b <= STATS_BUCKETS; b++)
		n += s->buckets[b];
	return n == s->wait_count;
}

static bool stats_record_valid(const struct stats_record *rec, bool used)
{
	size_t len = strnlen(rec->key, sizeof(rec->key));

	if (len == sizeof(rec->key) || (used != (len > 0)))
		return false;
	return stats_series_valid(&rec->series[0]) && stats_series_valid(&rec->series[1]);
}

static bool stats_head_valid(const struct stats_table *t)
{
	return memcmp(t->magic, STATS_MAGIC, sizeof(t->magic)) == 0 &&
	       t->version == STATS_VERSION && t->n <= STATS_TEMPLATES_MAX;
}

static bool stats_other_valid(const struct stats_record *other)
{
	return stats_record_valid(other, other->key[0] != '\0') &&
	       (other->key[0] == '\0' || strcmp(other->key, STATS_OTHER) == 0);
}

/* The records past n are room for new templates, whatever they hold: a login that takes one
   writes it whole. */
bool stats_valid(const struct stats_table *t)
{
	if (!stats_head_valid(t))
		return false;
	for (uint32_t i = 0; i < t->n; i++)
		if (!stats_record_valid(&t->rec[i], true))
			return false;
	return stats_other_valid(&t->rec[STATS_TEMPLATES_MAX]);
}

/* The record of tmpl among the n in use, a new one after them, or "other" once they are all
   taken; a new record is emptied first. */
static int stats_find(struct stats_table *t, const char *tmpl)
{
	struct stats_record *rec;

	for (uint32_t i = 0; i < t->n; i++)
		if (strcmp(t->rec[i].key, tmpl) == 0)
			return (int)i;
	if (t->n < STATS_TEMPLATES_MAX && tmpl[0] != '\0' && strlen(tmpl) <= OPT_KEY_MAX) {
		rec = &t->rec[t->n];
		memset(rec, 0, sizeof(*rec));
		snprintf(rec->key, sizeof(rec->key), "%s", tmpl);
		return (int)t->n++;
	}
	snprintf(t->rec[STATS_TEMPLATES_MAX].key, sizeof(t->rec[0].key), "%s", STATS_OTHER);
	return STATS_TEMPLATES_MAX;
}

int stats_count(struct stats_table *t, const char *tmpl, bool dry_run, enum stats_result r,
		int64_t wait_us)
{
	int i = stats_find(t, tmpl);
	struct stats_series *s = &t->rec[i].series[dry_run ? 1 : 0];
	int b = 0;

	s->logins[r]++;
	if (r != STATS_ADMITTED && r != STATS_WAITED)
		return i;
	if (wait_us < 0)
		wait_us = 0;
	while (b < STATS_BUCKETS && wait_us > stats_bucket_ms[b] * 1000)
		b++;
	s->buckets[b]++;
	s->wait_sum_us += (uint64_t)wait_us;
	s->wait_count++;
	return i;
}

int stats_count_error(struct stats_table *t, const char *tmpl, bool dry_run)
{
	int i = stats_find(t, tmpl);

	t->rec[i].series[dry_run ? 1 : 0].redis_errors++;
	return i;
}

/* Opens the counters file in dfd with flags, checked and locked with op. */
static int stats_open(int dfd, int flags, int op, const char **why)
{
	struct stat st;
	int fd = openat(dfd, STATS_FILE, flags | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600);

	if (fd < 0) {
		*why = "cannot open the counters file";
		return -1;
	}
	if (fstat(fd, &st) != 0 || !trust_own_file(&st, 077)) {
		*why = "the counters file must be a regular file of this uid, mode 0600, one link";
		close(fd);
		errno = EPERM;
		return -1;
	}
	if (trust_lock(fd, op, STATS_LOCK_WAIT_US) != 0) {
		*why = "cannot lock the counters file";
		close(fd);
		return -1;
	}
	return fd;
}

static off_t stats_offset(int i)
{
	return (off_t)(offsetof(struct stats_table, rec) + (size_t)i * sizeof(struct stats_record));
}

static bool stats_pread(int fd, void *buf, size_t len, off_t at)
{
	return pread(fd, buf, len, at) == (ssize_t)len;
}

/* Reads the whole table; 0 for a whole one, 1 for an empty file, -1 for anything else. */
static int stats_read(int fd, struct stats_table *t)
{
	ssize_t n = pread(fd, t, sizeof(*t), 0);
	char extra;

	if (n == 0)
		return 1;
	if (n != (ssize_t)sizeof(*t) || pread(fd, &extra, 1, (off_t)sizeof(*t)) != 0)
		return -1;
	return stats_valid(t) ? 0 : -1;
}

/* Reads what a login needs of the table, and what stats_valid checks: its header, the records
   in use and "other"; the rest of t is left as it was. 0 as stats_read. */
static int stats_read_used(int fd, struct stats_table *t)
{
	const size_t head = offsetof(struct stats_table, rec);
	struct stat st;

	if (fstat(fd, &st) != 0)
		return -1;
	if (st.st_size == 0)
		return 1;
	if (st.st_size != (off_t)sizeof(*t) || !stats_pread(fd, t, head, 0) || !stats_head_valid(t))
		return -1;
	if (!stats_pread(fd, t->rec, t->n * sizeof(t->rec[0]), stats_offset(0)) ||
	    !stats_pread(fd, &t->rec[STATS_TEMPLATES_MAX], sizeof(t->rec[0]),
			 stats_offset(STATS_TEMPLATES_MAX)))
		return -1;
	return stats_valid(t) ? 0 : -1;
}

/* Writes record i, then the header if the record is new (n grew past it). */
static int stats_write(int fd, const struct stats_table *t, int i, uint32_t n_before, bool whole)
{
	const size_t head = offsetof(struct stats_table, rec);

	/* Whole: a file started afresh, cut to the table, or its tail would condemn it again. */
	if (whole)
		return pwrite(fd, t, sizeof(*t), 0) == (ssize_t)sizeof(*t) &&
			       ftruncate(fd, (off_t)sizeof(*t)) == 0
			   ? 0
			   : -1;
	if (pwrite(fd, &t->rec[i], sizeof(t->rec[i]), stats_offset(i)) !=
	    (ssize_t)sizeof(t->rec[i]))
		return -1;
	if (t->n != n_before && pwrite(fd, t, head, 0) != (ssize_t)head)
		return -1;
	return 0;
}

/* What one update counts: a login's result, or a failed call on Redis (error). */
struct stats_event {
	const char *tmpl;
	bool dry_run;
	bool error;
	enum stats_result r;
	int64_t wait_us;
};

static int stats_update(const pam_handle_t *pamh, const char *state_dir,
			const struct stats_event *ev)
{
	struct stats_table *t = malloc(sizeof(*t));
	const char *why = "out of memory";
	int dfd = -1, fd = -1, rc = -1, got, i;
	uint32_t n_before;

	if (t != NULL)
		dfd = trust_open_dir(state_dir, true, &why);
	if (dfd >= 0)
		fd = stats_open(dfd, O_RDWR | O_CREAT, LOCK_EX, &why);
	if (fd >= 0) {
		got = stats_read_used(fd, t);
		if (got < 0)
			log_msg(pamh, LOG_WARNING,
				"counters: %s/" STATS_FILE " is not a counters file: starting it "
				"afresh",
				state_dir);
		if (got != 0)
			stats_reset(t);
		n_before = t->n;
		i = ev->error ? stats_count_error(t, ev->tmpl, ev->dry_run)
			      : stats_count(t, ev->tmpl, ev->dry_run, ev->r, ev->wait_us);
		why = "cannot write the counters file";
		if (stats_write(fd, t, i, n_before, got != 0) == 0)
			rc = 0;
	}
	if (rc != 0)
		log_msg(pamh, LOG_WARNING, "counters: %s in %s: %m: the %s is not counted", why,
			state_dir, ev->error ? "failed call on Redis" : "login");
	if (fd >= 0)
		close(fd); /* and with it the lock */
	if (dfd >= 0)
		close(dfd);
	free(t);
	return rc;
}

int stats_record(const pam_handle_t *pamh, const char *state_dir, const char *tmpl, bool dry_run,
		 enum stats_result r, int64_t wait_us)
{
	const struct stats_event ev = { .tmpl = tmpl, .dry_run = dry_run, .r = r,
					.wait_us = wait_us };

	return stats_update(pamh, state_dir, &ev);
}

int stats_record_error(const pam_handle_t *pamh, const char *state_dir, const char *tmpl,
		       bool dry_run)
{
	const struct stats_event ev = { .tmpl = tmpl, .dry_run = dry_run, .error = true };

	return stats_update(pamh, state_dir, &ev);
}

int stats_load(const char *state_dir, struct stats_table *t, const char **why)
{
	int dfd = trust_open_dir(state_dir, false, why), fd = -1, rc = -1;

	stats_reset(t);
	if (dfd < 0 && errno == ENOENT)
		return 0; /* no login yet */
	if (dfd >= 0)
		fd = stats_open(dfd, O_RDONLY, LOCK_SH, why);
	if (fd < 0 && dfd >= 0 && errno == ENOENT)
		rc = 0;
	if (fd >= 0) {
		switch (stats_read(fd, t)) {
		case 0:
			rc = 0;
			break;
		case 1:
			stats_reset(t);
			rc = 0;
			break;
		default:
			stats_reset(t);
			*why =
			    "the counters file is not a counters table (the next login starts it "
			    "afresh)";
			errno = EINVAL;
			break;
		}
		close(fd);
	}
	if (dfd >= 0)
		close(dfd);
	return rc;
}

void stats_label(FILE *out, const char *v)
{
	for (; *v != '\0'; v++) {
		if (*v == '\\' || *v == '"')
			fprintf(out, "\\%c", *v);
		else if (*v == '\n')
			fputs("\\n", out);
		else
			fputc(*v, out);
	}
}

static bool stats_series_used(const struct stats_series *s)
{
	for (int r = 0; r < STATS_RESULTS; r++)
		if (s->logins[r] != 0)
			return true;
	return s->wait_count != 0 || s->redis_errors != 0;
}

/* The records in use: those below n, then "other"; with only, just the template only. */
static const struct stats_record *stats_next(const struct stats_table *t, const char *only,
					     uint32_t *i)
{
	while (*i <= STATS_TEMPLATES_MAX) {
		const struct stats_record *rec;

		if (*i == t->n)
			*i = STATS_TEMPLATES_MAX; /* past the records in use: "other" */
		rec = &t->rec[(*i)++];
		if (rec->key[0] != '\0' && (only == NULL || strcmp(rec->key, only) == 0))
			return rec;
	}
	return NULL;
}

/* name{key="...",[dry_run="yes",] */
static void stats_open_labels(FILE *out, const char *name, const char *key, int d)
{
	fprintf(out, "%s{key=\"", name);
	stats_label(out, key);
	fputs(d ? "\",dry_run=\"yes\"" : "\"", out);
}

static void stats_format_logins(FILE *out, const struct stats_table *t, const char *only)
{
	const struct stats_record *rec;
	uint32_t i = 0;

	fputs("# HELP flowslot_logins_total Logins pam_flowslot decided on this host, by key "
	      "template and result.\n# TYPE flowslot_logins_total counter\n",
	      out);
	while ((rec = stats_next(t, only, &i)) != NULL) {
		for (int d = 0; d < 2; d++) {
			if (!stats_series_used(&rec->series[d]))
				continue;
			for (int r = 0; r < STATS_RESULTS; r++) {
				stats_open_labels(out, "flowslot_logins_total", rec->key, d);
				fprintf(out, ",result=\"%s\"} %" PRIu64 "\n", stats_result_name[r],
					rec->series[d].logins[r]);
			}
		}
	}
}

static void stats_format_waits(FILE *out, const struct stats_table *t, const char *only)
{
	const struct stats_record *rec;
	uint32_t i = 0;

	fputs("# HELP flowslot_wait_seconds How long this host's logins waited for their slot.\n"
	      "# TYPE flowslot_wait_seconds histogram\n",
	      out);
	while ((rec = stats_next(t, only, &i)) != NULL) {
		for (int d = 0; d < 2; d++) {
			const struct stats_series *s = &rec->series[d];
			uint64_t cum = 0;

			if (!stats_series_used(s))
				continue;
			for (int b = 0; b <= STATS_BUCKETS; b++) {
				cum += s->buckets[b];
				stats_open_labels(out, "flowslot_wait_seconds_bucket", rec->key, d);
				if (b < STATS_BUCKETS)
					fprintf(out, ",le=\"%g\"} %" PRIu64 "\n",
						(double)stats_bucket_ms[b] / 1000, cum);
				else
					fprintf(out, ",le=\"+Inf\"} %" PRIu64 "\n", cum);
			}
			stats_open_labels(out, "flowslot_wait_seconds_sum", rec->key, d);
			fprintf(out, "} %" PRIu64 ".%06" PRIu64 "\n", s->wait_sum_us / 1000000,
				s->wait_sum_us % 1000000);
			stats_open_labels(out, "flowslot_wait_seconds_count", rec->key, d);
			fprintf(out, "} %" PRIu64 "\n", s->wait_count);
		}
	}
}

static void stats_format_errors(FILE *out, const struct stats_table *t, const char *only)
{
	const struct stats_record *rec;
	uint32_t i = 0;

	fputs("# HELP flowslot_redis_errors_total Calls of this host's logins on Redis that "
	      "failed, each, whether it was logged or not.\n"
	      "# TYPE flowslot_redis_errors_total counter\n",
	      out);
	while ((rec = stats_next(t, only, &i)) != NULL) {
		for (int d = 0; d < 2; d++) {
			if (!stats_series_used(&rec->series[d]))
				continue;
			stats_open_labels(out, "flowslot_redis_errors_total", rec->key, d);
			fprintf(out, "} %" PRIu64 "\n", rec->series[d].redis_errors);
		}
	}
}

int stats_format(FILE *out, const struct stats_table *t, const char *only)
{
	stats_format_logins(out, t, only);
	stats_format_waits(out, t, only);
	stats_format_errors(out, t, only);
	return ferror(out) ? -1 : 0;
}

int stats_write_prometheus(FILE *out, const char *state_dir, const char *only, const char **why)
{
	struct stats_table *t = malloc(sizeof(*t));
	int rc = -1;

	*why = "out of memory";
	if (t != NULL && stats_load(state_dir, t, why) == 0) {
		rc = stats_format(out, t, only);
		if (rc != 0)
			*why = "cannot write the metrics";
	}
	free(t);
	return rc;
}
