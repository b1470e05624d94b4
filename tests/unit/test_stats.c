/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for src/stats.c: the host's counters, in memory, in a file, and as Prometheus
   text. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flowslot/stats.h"

#define S INT64_C(1000000)
#define MS INT64_C(1000)

struct fixture {
	char root[64];
	char state[128];
	char file[160];
	char msg[4096]; /* what the last record() logged */
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	assert_non_null(fx);
	strcpy(fx->root, "/tmp/test_stats.XXXXXX");
	assert_non_null(mkdtemp(fx->root));
	snprintf(fx->state, sizeof(fx->state), "%s/state", fx->root);
	snprintf(fx->file, sizeof(fx->file), "%s/" STATS_FILE, fx->state);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	unlink(fx->file);
	rmdir(fx->state);
	rmdir(fx->root);
	free(fx);
	return 0;
}

/* stats_record on fx->state, what it logs kept in fx->msg. */
static int record(struct fixture *fx, const char *tmpl, bool dry_run, enum stats_result r,
		  int64_t wait_us)
{
	FILE *tmp = tmpfile();
	int saved = dup(STDERR_FILENO), rc;
	size_t n;

	assert_non_null(tmp);
	fflush(stderr);
	assert_true(dup2(fileno(tmp), STDERR_FILENO) >= 0);
	rc = stats_record(NULL, fx->state, tmpl, dry_run, r, wait_us);
	fflush(stderr);
	assert_true(dup2(saved, STDERR_FILENO) >= 0);
	close(saved);
	rewind(tmp);
	n = fread(fx->msg, 1, sizeof(fx->msg) - 1, tmp);
	fx->msg[n] = '\0';
	fclose(tmp);
	return rc;
}

/* The table as stats_format writes it, in a malloc'd string. */
static char *formatted(const struct stats_table *t)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	assert_non_null(out);
	assert_int_equal(stats_format(out, t, NULL), 0);
	fclose(out);
	return buf;
}

static struct stats_table *new_table(void)
{
	struct stats_table *t = malloc(sizeof(*t));

	assert_non_null(t);
	stats_reset(t);
	return t;
}

static void test_counting(void **state)
{
	struct stats_table *t = new_table();
	const struct stats_series *s, *d;

	(void)state;
	stats_count(t, "flowslot:{service}", false, STATS_ADMITTED, 0);
	stats_count(t, "flowslot:{service}", false, STATS_WAITED, 3 * S);
	stats_count(t, "flowslot:{service}", false, STATS_REFUSED, 0);
	stats_count(t, "flowslot:{service}", false, STATS_UNAVAILABLE, 0);
	stats_count(t, "flowslot:{service}", true, STATS_WAITED, 7 * S);
	stats_count(t, "other:key", false, STATS_ABANDONED, 0);
	assert_int_equal(t->n, 2);
	s = &t->rec[0].series[0];
	d = &t->rec[0].series[1];
	assert_int_equal(s->logins[STATS_ADMITTED], 1);
	assert_int_equal(s->logins[STATS_WAITED], 1);
	assert_int_equal(s->logins[STATS_REFUSED], 1);
	assert_int_equal(s->logins[STATS_UNAVAILABLE], 1);
	assert_int_equal(s->logins[STATS_ABANDONED], 0);
	/* Only the logins that went in have a wait. */
	assert_int_equal(s->wait_count, 2);
	assert_int_equal(s->wait_sum_us, 3 * S);
	assert_int_equal(d->logins[STATS_WAITED], 1);
	assert_int_equal(d->wait_sum_us, 7 * S);
	assert_int_equal(t->rec[1].series[0].logins[STATS_ABANDONED], 1);
	assert_true(stats_valid(t));
	free(t);
}

static void test_buckets(void **state)
{
	static const struct {
		int64_t wait_us;
		int bucket;
	} cases[] = {
		{ 0, 0 },     { 500 * MS, 0 }, { 500 * MS + 1, 1 }, { 1 * S, 1 }, { 1 * S + 1, 2 },
		{ 4 * S, 3 }, { 300 * S, 9 },  { 300 * S + 1, 10 }, { -5, 0 },
	};
	struct stats_table *t = new_table();
	char *text;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		stats_reset(t);
		stats_count(t, "k", false, STATS_WAITED, cases[i].wait_us);
		for (int b = 0; b <= STATS_BUCKETS; b++)
			assert_int_equal(t->rec[0].series[0].buckets[b], b == cases[i].bucket);
	}
	/* Cumulative in the exposition: 0.4 s, 3 s and 400 s. */
	stats_reset(t);
	stats_count(t, "k", false, STATS_ADMITTED, 400 * MS);
	stats_count(t, "k", false, STATS_WAITED, 3 * S);
	stats_count(t, "k", false, STATS_WAITED, 400 * S);
	text = formatted(t);
	assert_non_null(strstr(text, "flowslot_wait_seconds_bucket{key=\"k\",le=\"0.5\"} 1\n"));
	assert_non_null(strstr(text, "flowslot_wait_seconds_bucket{key=\"k\",le=\"2\"} 1\n"));
	assert_non_null(strstr(text, "flowslot_wait_seconds_bucket{key=\"k\",le=\"5\"} 2\n"));
	assert_non_null(strstr(text, "flowslot_wait_seconds_bucket{key=\"k\",le=\"300\"} 2\n"));
	assert_non_null(strstr(text, "flowslot_wait_seconds_bucket{key=\"k\",le=\"+Inf\"} 3\n"));
	assert_non_null(strstr(text, "flowslot_wait_seconds_sum{key=\"k\"} 403.400000\n"));
	assert_non_null(strstr(text, "flowslot_wait_seconds_count{key=\"k\"} 3\n"));
	assert_non_null(strstr(text, "# TYPE flowslot_wait_seconds histogram\n"));
	assert_non_null(strstr(text, "# TYPE flowslot_logins_total counter\n"));
	free(text);
	free(t);
}

/* Past STATS_TEMPLATES_MAX templates, the rest are counted together under "other". */
static void test_bound(void **state)
{
	struct fixture *fx = *state;
	struct stats_table *t = new_table();
	const char *why = NULL;
	struct stat st;
	char tmpl[32];

	for (int i = 0; i < STATS_TEMPLATES_MAX + 10; i++) {
		snprintf(tmpl, sizeof(tmpl), "key%d", i);
		assert_int_equal(record(fx, tmpl, false, STATS_ADMITTED, 0), 0);
		assert_string_equal(fx->msg, "");
	}
	assert_int_equal(record(fx, "key0", false, STATS_ADMITTED, 0), 0);
	assert_int_equal(stat(fx->file, &st), 0);
	assert_int_equal(st.st_size, sizeof(struct stats_table));
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(stats_load(fx->state, t, &why), 0);
	assert_int_equal(t->n, STATS_TEMPLATES_MAX);
	assert_string_equal(t->rec[0].key, "key0");
	assert_int_equal(t->rec[0].series[0].logins[STATS_ADMITTED], 2);
	assert_string_equal(t->rec[STATS_TEMPLATES_MAX].key, STATS_OTHER);
	assert_int_equal(t->rec[STATS_TEMPLATES_MAX].series[0].logins[STATS_ADMITTED], 10);
	free(t);
}

static void write_file(const char *path, const void *data, size_t len, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

/* A file that is not a counters table is reported by the reader, started afresh with one
   warning by the next login, and never crashes either. */
static void test_corrupt(void **state)
{
	struct fixture *fx = *state;
	struct stats_table *t = new_table();
	const char *why = NULL;
	char junk[100];

	memset(junk, 'x', sizeof(junk));
	assert_int_equal(mkdir(fx->state, 0700), 0);
	/* Garbage, a table cut short, a key with no end, buckets that disagree with the count,
	   a table with more after it (another version's, say: started afresh, then read back). */
	for (int kind = 0; kind < 5; kind++) {
		stats_reset(t);
		stats_count(t, "k", false, STATS_WAITED, 1 * S);
		if (kind == 0) {
			write_file(fx->file, junk, sizeof(junk), 0600);
		} else if (kind == 4) {
			char *longer = malloc(sizeof(*t) + sizeof(junk));

			assert_non_null(longer);
			memcpy(longer, t, sizeof(*t));
			memcpy(longer + sizeof(*t), junk, sizeof(junk));
			write_file(fx->file, longer, sizeof(*t) + sizeof(junk), 0600);
			free(longer);
		} else {
			if (kind == 2)
				memset(t->rec[0].key, 'a', sizeof(t->rec[0].key));
			if (kind == 3)
				t->rec[0].series[0].buckets[4] = 99;
			write_file(fx->file, t, kind == 1 ? sizeof(*t) - 8 : sizeof(*t), 0600);
		}
		assert_int_equal(stats_load(fx->state, t, &why), -1);
		assert_non_null(strstr(why, "not a counters table"));
		assert_int_equal(record(fx, "k", false, STATS_REFUSED, 0), 0);
		assert_non_null(strstr(fx->msg, "not a counters file: starting it afresh"));
		assert_int_equal(stats_load(fx->state, t, &why), 0);
		assert_int_equal(t->n, 1);
		assert_int_equal(t->rec[0].series[0].logins[STATS_REFUSED], 1);
		assert_int_equal(t->rec[0].series[0].logins[STATS_WAITED], 0);
	}
	/* Someone else's kind of file is not written: a warning, and the login is not counted. */
	assert_int_equal(chmod(fx->file, 0644), 0);
	assert_int_equal(record(fx, "k", false, STATS_REFUSED, 0), -1);
	assert_non_null(strstr(fx->msg, "counters: the counters file must be"));
	assert_int_equal(stats_load(fx->state, t, &why), -1);
	free(t);
}

/* The whole file's bytes, in a malloc'd buffer of sizeof(struct stats_table). */
static unsigned char *file_bytes(const char *path)
{
	unsigned char *buf = malloc(sizeof(struct stats_table));
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_non_null(buf);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(struct stats_table)), sizeof(struct stats_table));
	close(fd);
	return buf;
}

/* Whether a and b differ outside record i (and the header, with head). */
static bool changed_outside(const unsigned char *a, const unsigned char *b, int i, bool head)
{
	const size_t h = offsetof(struct stats_table, rec), r = sizeof(struct stats_record);

	for (size_t at = 0; at < sizeof(struct stats_table); at++) {
		bool inside =
		    (at >= h + (size_t)i * r && at < h + (size_t)(i + 1) * r) || (head && at < h);

		if (!inside && a[at] != b[at])
			return true;
	}
	return false;
}

/* A login reads the header and the records in use, and writes back its own record only (and
   the header, for a new one): on a file as the version before wrote it (the same layout, the
   table written whole, unused records zero), with junk in a record not yet in use, which
   neither the reader nor a login sees, and which a new template overwrites whole. */
static void test_partial(void **state)
{
	struct fixture *fx = *state;
	struct stats_table *t = new_table();
	const size_t head = offsetof(struct stats_table, rec);
	unsigned char *before, *after;
	const char *why = NULL;
	char *text;

	assert_int_equal(mkdir(fx->state, 0700), 0);
	stats_count(t, "k0", false, STATS_ADMITTED, 0);
	stats_count(t, "k1", false, STATS_WAITED, 2 * S);
	memset(&t->rec[3], 'x', sizeof(t->rec[3])); /* junk past n = 2 */
	write_file(fx->file, t, sizeof(*t), 0600);

	/* The reader: the two records in use, nothing of the junk. */
	assert_int_equal(stats_load(fx->state, t, &why), 0);
	assert_int_equal(t->n, 2);
	text = formatted(t);
	assert_null(strstr(text, "xxx"));
	assert_non_null(strstr(text, "flowslot_logins_total{key=\"k1\",result=\"waited\"} 1\n"));
	free(text);

	/* A known template: its record changes, and nothing else, header included. */
	before = file_bytes(fx->file);
	assert_int_equal(record(fx, "k1", false, STATS_REFUSED, 0), 0);
	assert_string_equal(fx->msg, "");
	after = file_bytes(fx->file);
	assert_false(changed_outside(before, after, 1, false));
	assert_int_not_equal(memcmp(before, after, sizeof(*t)), 0);
	free(before);
	free(after);

	/* A new one: its record, the one after those in use, and the header's count. */
	before = file_bytes(fx->file);
	assert_int_equal(record(fx, "k2", false, STATS_ADMITTED, 0), 0);
	after = file_bytes(fx->file);
	assert_false(changed_outside(before, after, 2, true));
	assert_int_not_equal(memcmp(before, after, head), 0);
	free(before);
	free(after);

	assert_int_equal(stats_load(fx->state, t, &why), 0);
	assert_int_equal(t->n, 3);
	assert_int_equal(t->rec[1].series[0].logins[STATS_REFUSED], 1);
	assert_int_equal(t->rec[1].series[0].logins[STATS_WAITED], 1);
	assert_string_equal(t->rec[2].key, "k2");
	assert_int_equal(t->rec[2].series[0].logins[STATS_ADMITTED], 1);
	assert_int_equal(t->rec[2].series[1].logins[STATS_ADMITTED], 0);

	/* The next new one overwrites the junk whole. */
	assert_int_equal(record(fx, "k3", true, STATS_ADMITTED, 0), 0);
	assert_int_equal(stats_load(fx->state, t, &why), 0);
	assert_int_equal(t->n, 4);
	assert_string_equal(t->rec[3].key, "k3");
	assert_int_equal(t->rec[3].series[0].logins[STATS_ADMITTED], 0);
	assert_int_equal(t->rec[3].series[1].logins[STATS_ADMITTED], 1);
	assert_int_equal(t->rec[3].series[1].wait_count, 1);

	/* A template that cannot have a record of its own goes to "other", records to spare. */
	assert_int_equal(record(fx, "", false, STATS_REFUSED, 0), 0);
	assert_int_equal(record(fx, "", false, STATS_REFUSED, 0), 0);
	assert_int_equal(stats_load(fx->state, t, &why), 0);
	assert_int_equal(t->n, 4);
	assert_string_equal(t->rec[STATS_TEMPLATES_MAX].key, STATS_OTHER);
	assert_int_equal(t->rec[STATS_TEMPLATES_MAX].series[0].logins[STATS_REFUSED], 2);
	free(t);
}

/* Failed calls on Redis: counted each, per template and dry run, apart from the logins, in
   the file and as flowslot_redis_errors_total. */
static void test_errors(void **state)
{
	struct fixture *fx = *state;
	struct stats_table *t = new_table();
	const char *why = NULL;
	char *text;

	for (int i = 0; i < 3; i++)
		assert_int_equal(stats_record_error(NULL, fx->state, "k", false), 0);
	assert_int_equal(stats_record_error(NULL, fx->state, "k", true), 0);
	assert_int_equal(record(fx, "k", false, STATS_WAITED, S), 0);
	assert_int_equal(stats_load(fx->state, t, &why), 0);
	assert_int_equal(t->rec[0].series[0].redis_errors, 3);
	assert_int_equal(t->rec[0].series[1].redis_errors, 1);
	assert_int_equal(t->rec[0].series[0].logins[STATS_WAITED], 1);
	assert_int_equal(t->rec[0].series[1].logins[STATS_WAITED], 0);
	text = formatted(t);
	assert_non_null(strstr(text, "# TYPE flowslot_redis_errors_total counter\n"
				     "flowslot_redis_errors_total{key=\"k\"} 3\n"
				     "flowslot_redis_errors_total{key=\"k\",dry_run=\"yes\"} 1\n"));
	/* A dry run with only errors still has its series shown. */
	assert_non_null(strstr(
	    text, "flowslot_logins_total{key=\"k\",dry_run=\"yes\",result=\"admitted\"} 0\n"));
	free(text);
	free(t);
}

static void test_missing(void **state)
{
	struct fixture *fx = *state;
	struct stats_table *t = new_table();
	const char *why = NULL;

	/* No directory, then no file: no login yet, nothing to count. */
	assert_int_equal(stats_load(fx->state, t, &why), 0);
	assert_int_equal(t->n, 0);
	assert_int_equal(mkdir(fx->state, 0700), 0);
	assert_int_equal(stats_load(fx->state, t, &why), 0);
	assert_int_equal(t->n, 0);
	free(t);
}

static void test_escaping(void **state)
{
	struct stats_table *t = new_table();
	char *text;

	(void)state;
	stats_count(t, "a\\b\"c\nd", true, STATS_ADMITTED, 0);
	text = formatted(t);
	assert_non_null(strstr(text,
			       "flowslot_logins_total{key=\"a\\\\b\\\"c\\nd\",dry_run=\"yes\","
			       "result=\"admitted\"} 1\n"));
	/* Series with no login are left out: the real ones here. */
	assert_null(strstr(text, "result=\"admitted\"} 0"));
	free(text);
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counting),
		cmocka_unit_test(test_buckets),
		cmocka_unit_test_setup_teardown(test_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_corrupt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_partial, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing, setup, teardown),
		cmocka_unit_test(test_escaping),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
