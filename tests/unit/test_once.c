/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for src/once.c, a message at most once a period on a host, and for its use by
   opt_warn_unknown: an unknown option of the configuration file warned of once an hour. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "flowslot/once.h"
#include "flowslot/opt.h"

#define HOUR 3600

struct fixture {
	char root[64];
	char state[128]; /* made by once_due */
	char logged[4096];
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	assert_non_null(fx);
	strcpy(fx->root, "/tmp/test_once.XXXXXX");
	assert_non_null(mkdtemp(fx->root));
	snprintf(fx->state, sizeof(fx->state), "%s/state", fx->root);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	char cmd[200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->root);
	free(fx);
	return system(cmd);
}

/* The path of what's stamp under dir, in out. */
static const char *stamp_path(const char *dir, const char *what, char *out, size_t outsz)
{
	char name[ONCE_NAME_MAX];

	once_name(what, name);
	snprintf(out, outsz, "%s/%s", dir, name);
	return out;
}

/* Dates what's stamp age_s seconds back (negative: ahead). */
static void age_stamp(const char *dir, const char *what, time_t age_s)
{
	char path[256];
	struct timespec t[2] = { { .tv_sec = time(NULL) - age_s },
				 { .tv_sec = time(NULL) - age_s } };

	assert_int_equal(utimensat(AT_FDCWD, stamp_path(dir, what, path, sizeof(path)), t, 0), 0);
}

static void test_once_an_hour(void **state)
{
	struct fixture *fx = *state;
	char path[256];
	struct stat st;

	assert_true(once_due(fx->state, "a", HOUR));
	/* Made 0700, the stamp 0600 holding its message. */
	assert_int_equal(stat(fx->state, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(stat(stamp_path(fx->state, "a", path, sizeof(path)), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_size, 2);
	/* Not again within the hour, whoever asks; another message is its own. */
	assert_false(once_due(fx->state, "a", HOUR));
	assert_false(once_due(fx->state, "a", HOUR));
	assert_true(once_due(fx->state, "b", HOUR));
	/* Due again once the hour is over, and then not. */
	age_stamp(fx->state, "a", HOUR - 5);
	assert_false(once_due(fx->state, "a", HOUR));
	age_stamp(fx->state, "a", HOUR + 1);
	assert_true(once_due(fx->state, "a", HOUR));
	assert_false(once_due(fx->state, "a", HOUR));
}

/* A stamp dated ahead (the clock stepped back since) would silence the message for as long
   as the step: it is not trusted. */
static void test_stamp_ahead(void **state)
{
	struct fixture *fx = *state;

	assert_true(once_due(fx->state, "ahead", HOUR));
	age_stamp(fx->state, "ahead", -2 * HOUR);
	assert_true(once_due(fx->state, "ahead", HOUR));
	assert_false(once_due(fx->state, "ahead", HOUR));
}

/* What cannot hold a stamp makes the message due every time: said too often, never lost. */
static void test_unusable(void **state)
{
	struct fixture *fx = *state;
	char path[256], dir[160];
	int fd;

	/* An empty stamp: one just made whose write failed. */
	assert_true(once_due(fx->state, "empty", HOUR));
	assert_int_equal(truncate(stamp_path(fx->state, "empty", path, sizeof(path)), 0), 0);
	assert_true(once_due(fx->state, "empty", HOUR));
	assert_false(once_due(fx->state, "empty", HOUR));
	/* A stamp others may read or write is not ours to trust. */
	assert_true(once_due(fx->state, "open", HOUR));
	assert_int_equal(chmod(stamp_path(fx->state, "open", path, sizeof(path)), 0644), 0);
	assert_true(once_due(fx->state, "open", HOUR));
	assert_true(once_due(fx->state, "open", HOUR));
	/* A state_dir that others may write, or a file where it should be. */
	snprintf(dir, sizeof(dir), "%s/open", fx->root);
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(chmod(dir, 0777), 0);
	assert_true(once_due(dir, "x", HOUR));
	assert_true(once_due(dir, "x", HOUR));
	snprintf(dir, sizeof(dir), "%s/file", fx->root);
	fd = open(dir, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_true(once_due(dir, "x", HOUR));
	assert_true(once_due(dir, "x", HOUR));
}

/* opt_warn_unknown with stderr (the log without a PAM handle) in fx->logged. */
static void warn(struct fixture *fx, const struct opt *o, bool limited)
{
	FILE *tmp = tmpfile();
	int saved = dup(STDERR_FILENO);
	size_t n;

	assert_non_null(tmp);
	fflush(stderr);
	dup2(fileno(tmp), STDERR_FILENO);
	opt_warn_unknown(o, NULL, limited);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(tmp);
	n = fread(fx->logged, 1, sizeof(fx->logged) - 1, tmp);
	fx->logged[n] = '\0';
	fclose(tmp);
}

static int count(const char *haystack, const char *needle)
{
	int n = 0;

	for (const char *p = haystack; (p = strstr(p, needle)) != NULL; p++)
		n++;
	return n;
}

/* Each unknown option of the file by file, line and name; limited, once an hour per file and
   name on the host, whatever its line. */
static void test_warn_unknown(void **state)
{
	struct fixture *fx = *state;
	char text[] = "intervall=3s\nburst=2\nfuture_option\n";
	char moved[] = "# a comment above it now\nintervall=3s\n";
	struct opt o;

	opt_defaults(&o);
	snprintf(o.state_dir, sizeof(o.state_dir), "%s", fx->state);
	opt_conf_text(&o, NULL, "/etc/x.conf", text, strlen(text), 0644);
	assert_int_equal(o.errors, 0);
	assert_int_equal(o.n_unknown, 2);
	assert_int_equal(o.slot.burst, 2);
	warn(fx, &o, true);
	assert_int_equal(count(fx->logged, "\n"), 2);
	assert_non_null(strstr(fx->logged, "/etc/x.conf:1: unknown option \"intervall\": ignored"));
	assert_non_null(strstr(fx->logged, "/etc/x.conf:3: unknown option \"future_option\""));
	warn(fx, &o, true);
	assert_string_equal(fx->logged, "");
	/* Unlimited (flowslotctl): every time. */
	warn(fx, &o, false);
	assert_int_equal(count(fx->logged, "unknown option"), 2);
	/* The same typo on another line is the same warning; in another file, another. */
	opt_defaults(&o);
	snprintf(o.state_dir, sizeof(o.state_dir), "%s", fx->state);
	opt_conf_text(&o, NULL, "/etc/x.conf", moved, strlen(moved), 0644);
	warn(fx, &o, true);
	assert_string_equal(fx->logged, "");
	opt_defaults(&o);
	snprintf(o.state_dir, sizeof(o.state_dir), "%s", fx->state);
	strcpy(moved, "# a comment above it now\nintervall=3s\n");
	opt_conf_text(&o, NULL, "/etc/y.conf", moved, strlen(moved), 0644);
	warn(fx, &o, true);
	assert_non_null(strstr(fx->logged, "/etc/y.conf:2: unknown option \"intervall\""));
}

/* A name that may be a password is warned of by its line, once an hour too, and neither the
   log nor the stamp holds any of it. */
static void test_warn_unknown_unshown(void **state)
{
	struct fixture *fx = *state;
	char text[] = "max-wait=45s\nPa55word=x\n", stamp[400], held[512];
	struct dirent *e;
	struct opt o;
	DIR *d;
	FILE *f;
	size_t n;

	opt_defaults(&o);
	snprintf(o.state_dir, sizeof(o.state_dir), "%s", fx->state);
	opt_conf_text(&o, NULL, "/etc/z.conf", text, strlen(text), 0600);
	assert_int_equal(o.errors, 0);
	assert_int_equal(o.n_unknown, 2);
	warn(fx, &o, true);
	assert_int_equal(count(fx->logged, "\n"), 2);
	assert_non_null(strstr(fx->logged, "/etc/z.conf:1: unknown option \"max-wait\": ignored"));
	assert_non_null(strstr(fx->logged, "/etc/z.conf:2: unknown option (not shown: it may be a "
					   "password): ignored"));
	assert_null(strstr(fx->logged, "Pa55"));
	warn(fx, &o, true);
	assert_string_equal(fx->logged, "");
	d = opendir(fx->state);
	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, "once.", 5) != 0)
			continue;
		snprintf(stamp, sizeof(stamp), "%s/%s", fx->state, e->d_name);
		f = fopen(stamp, "r");
		assert_non_null(f);
		n = fread(held, 1, sizeof(held) - 1, f);
		held[n] = '\0';
		fclose(f);
		assert_null(strstr(held, "Pa55"));
	}
	closedir(d);
}

/* Past OPT_UNKNOWN_MAX, the rest are counted in one more line, limited in the same way. */
static void test_warn_many(void **state)
{
	struct fixture *fx = *state;
	char text[1024] = "";
	struct opt o;

	for (int i = 0; i < OPT_UNKNOWN_MAX + 3; i++)
		snprintf(text + strlen(text), sizeof(text) - strlen(text), "typo_%c=1\n", 'a' + i);
	opt_defaults(&o);
	snprintf(o.state_dir, sizeof(o.state_dir), "%s", fx->state);
	opt_conf_text(&o, NULL, "/etc/many.conf", text, strlen(text), 0644);
	assert_int_equal(o.errors, 0);
	assert_int_equal(o.n_unknown, OPT_UNKNOWN_MAX + 3);
	warn(fx, &o, true);
	assert_int_equal(count(fx->logged, "\n"), OPT_UNKNOWN_MAX + 1);
	assert_non_null(strstr(fx->logged, "/etc/many.conf: 3 more unknown options, not named"));
	warn(fx, &o, true);
	assert_string_equal(fx->logged, "");
}

/* once_rate: a cause said at most once a period, the times held back counted and told with
   the next one said; another cause is its own; past ONCE_RATE_MAX causes, the one said
   longest ago gives its place up. */
static void test_rate(void **state)
{
	struct fixture *fx = *state;
	const int64_t period_us = 300000;
	uint64_t held = 99;
	char cause[32];
	struct stat st;
	char path[200];

	assert_true(once_rate(fx->state, "a: cannot connect", period_us, &held));
	assert_int_equal(held, 0);
	assert_false(once_rate(fx->state, "a: cannot connect", period_us, &held));
	assert_false(once_rate(fx->state, "a: cannot connect", period_us, &held));
	assert_true(once_rate(fx->state, "b: cannot connect", period_us, &held));
	assert_int_equal(held, 0);
	usleep(period_us + 50000);
	assert_true(once_rate(fx->state, "a: cannot connect", period_us, &held));
	assert_int_equal(held, 2);
	assert_false(once_rate(fx->state, "a: cannot connect", period_us, &held));
	snprintf(path, sizeof(path), "%s/" ONCE_RATE_FILE, fx->state);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	/* ONCE_RATE_MAX other causes: "a", said longest ago but for "b", is held to no more. */
	for (int i = 0; i < ONCE_RATE_MAX; i++) {
		snprintf(cause, sizeof(cause), "cause %d", i);
		assert_true(once_rate(fx->state, cause, period_us, &held));
	}
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, ONCE_RATE_MAX * 24);
	assert_true(once_rate(fx->state, "a: cannot connect", period_us, &held));
	assert_int_equal(held, 0);
}

/* A state directory that cannot be used: every line is due, none lost. */
static void test_rate_unusable(void **state)
{
	struct fixture *fx = *state;
	uint64_t held;

	assert_int_equal(mkdir(fx->state, 0777), 0);
	assert_int_equal(chmod(fx->state, 0777), 0);
	for (int i = 0; i < 3; i++)
		assert_true(once_rate(fx->state, "a: cannot connect", 1000000, &held));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_once_an_hour, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stamp_ahead, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unusable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_warn_unknown, setup, teardown),
		cmocka_unit_test_setup_teardown(test_warn_unknown_unshown, setup, teardown),
		cmocka_unit_test_setup_teardown(test_warn_many, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rate_unusable, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
