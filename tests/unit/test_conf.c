/* SPDX-License-Identifier: BSD-3-Clause */
/* The configuration file and password_file=: what is trusted, what is refused, and why.
   Run as root: the files must be root's. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "flowslot/conf.h"
#include "flowslot/opt.h"

static char dir[] = "/tmp/test_conf.XXXXXX";
static char logged[8192];

/* Writes path (under dir) with content and mode, owned by uid. Returns the full path. */
static const char *file(const char *name, const char *content, size_t len, mode_t mode,
			uid_t uid)
{
	static char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, content, len), (ssize_t)len);
	assert_int_equal(fchown(fd, uid, 0), 0);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
	return path;
}

static const char *text(const char *name, const char *content, mode_t mode)
{
	return file(name, content, strlen(content), mode, 0);
}

/* Sends stderr (the log without a PAM handle) to a temporary file, until captured. */
static FILE *capture(int *saved)
{
	FILE *tmp = tmpfile();

	assert_non_null(tmp);
	*saved = dup(STDERR_FILENO);
	fflush(stderr);
	dup2(fileno(tmp), STDERR_FILENO);
	return tmp;
}

/* Puts stderr back, and what was logged since capture in logged. */
static void captured(FILE *tmp, int saved)
{
	size_t n;

	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(tmp);
	n = fread(logged, 1, sizeof(logged) - 1, tmp);
	logged[n] = '\0';
	fclose(tmp);
}

/* opt_parse, what it logs in logged. */
static void parse(struct opt *o, int argc, const char **argv)
{
	int saved;
	FILE *tmp = capture(&saved);

	opt_parse(o, NULL, argc, argv);
	captured(tmp, saved);
}

/* opt_warn_unknown as flowslotctl calls it (every time), what it logs in logged. */
static void warn_unknown(const struct opt *o)
{
	int saved;
	FILE *tmp = capture(&saved);

	opt_warn_unknown(o, NULL, false);
	captured(tmp, saved);
}

static int count(const char *needle)
{
	int n = 0;

	for (const char *p = logged; (p = strstr(p, needle)) != NULL; p++)
		n++;
	return n;
}

static void parse_conf(struct opt *o, const char *path, const char *extra)
{
	char arg[400];
	const char *argv[2] = { arg, extra };

	snprintf(arg, sizeof(arg), "conf=%s", path);
	parse(o, extra ? 2 : 1, argv);
}

static void expect_error(const struct opt *o, const char *needle)
{
	if (o->errors == 0 || strstr(logged, needle) == NULL)
		fail_msg("errors %d, expected \"%s\" in: %s", o->errors, needle, logged);
}

/* expect_error, and one error of kind p. */
static void expect_kind(const struct opt *o, enum opt_problem p, const char *needle)
{
	expect_error(o, needle);
	if (o->problems[p] != 1)
		fail_msg("errors %d, %d of kind %d, for \"%s\": %s", o->errors, o->problems[p],
			 (int)p, needle, logged);
}

static void no_line(void *ctx, const char *where, const char *line)
{
	(void)ctx;
	fail_msg("%s: \"%s\" from a missing file", where, line);
}

static void test_missing(void **state)
{
	struct opt o;
	mode_t mode = 0644;
	int problems;

	(void)state;
	/* The default file may be missing; a named one may not. */
	problems = conf_read(NULL, "/nonexistent/pam_flowslot.conf", false, no_line, NULL, &mode);
	assert_int_equal(problems, 0);
	assert_int_equal(mode, 0);
	parse_conf(&o, "/nonexistent/pam_flowslot.conf", NULL);
	expect_kind(&o, OPT_PROBLEM_FILE, "cannot use /nonexistent/pam_flowslot.conf");
	parse_conf(&o, "relative.conf", NULL);
	expect_error(&o, "conf");
}

static void test_lines_and_override(void **state)
{
	struct opt o;
	const char *path = text("good.conf",
				"# a comment\n"
				"\n"
				"   interval=3s  \n"
				"\tburst=4\r\n"
				"quiet\n"
				"key=flowslot:%s\n"
				"url=unix:///run/redis/redis.sock?db=2",
				0644);

	(void)state;
	parse_conf(&o, path, NULL);
	assert_int_equal(o.errors, 0);
	assert_int_equal(o.slot.interval_us, 3000000);
	assert_int_equal(o.slot.burst, 4);
	assert_true(o.quiet);
	assert_string_equal(o.key, "flowslot:%s");
	assert_int_equal(o.url.backend, URL_BACKEND_UNIX);
	assert_int_equal(o.url.db, 2);
	/* The module arguments win over the file. */
	parse_conf(&o, path, "interval=5s");
	assert_int_equal(o.errors, 0);
	assert_int_equal(o.slot.interval_us, 5000000);
	assert_int_equal(o.slot.burst, 4);
}

static void test_unsafe_files(void **state)
{
	struct opt o;
	char link[300], big[CONF_SIZE_MAX + 2];
	const char *path;

	(void)state;
	path = text("target.conf", "interval=3s\n", 0644);
	snprintf(link, sizeof(link), "%s/link.conf", dir);
	unlink(link);
	assert_int_equal(symlink(path, link), 0);
	parse_conf(&o, link, NULL);
	expect_kind(&o, OPT_PROBLEM_UNSAFE, "symbolic link");
	assert_int_equal(o.slot.interval_us, 7000000);

	/* Each an error of unsafe permissions, which flowslotctl check says as such. */
	parse_conf(&o, text("gw.conf", "interval=3s\n", 0664), NULL);
	expect_kind(&o, OPT_PROBLEM_UNSAFE, "writable by group or others");
	parse_conf(&o, text("ow.conf", "interval=3s\n", 0646), NULL);
	expect_kind(&o, OPT_PROBLEM_UNSAFE, "writable by group or others");
	parse_conf(&o, file("nobody.conf", "interval=3s\n", 12, 0644, 65534), NULL);
	expect_kind(&o, OPT_PROBLEM_UNSAFE, "not owned by root");
	assert_int_equal(o.slot.interval_us, 7000000);

	memset(big, '#', sizeof(big));
	parse_conf(&o, file("big.conf", big, sizeof(big), 0644, 0), NULL);
	expect_kind(&o, OPT_PROBLEM_FILE, "larger than 64 KiB");
	parse_conf(&o, dir, NULL);
	expect_kind(&o, OPT_PROBLEM_UNSAFE, "not a regular file");
	parse_conf(&o, file("nul.conf", "interval=3s\0quiet\n", 18, 0644, 0), NULL);
	expect_kind(&o, OPT_PROBLEM_LINE, "NUL");
}

static void test_bad_lines(void **state)
{
	struct opt o;
	const char *path = text("bad.conf", "burst=2\n# fine\ninterval=7x\nconf=/etc/other\n", 0644);
	char where[300];

	(void)state;
	parse_conf(&o, path, NULL);
	assert_int_equal(o.errors, 2);
	assert_int_equal(o.problems[OPT_PROBLEM_VALUE], 2);
	snprintf(where, sizeof(where), "%s:3: bad value for interval: \"7x\"", path);
	if (strstr(logged, where) == NULL)
		fail_msg("no \"%s\" in: %s", where, logged);
	snprintf(where, sizeof(where), "%s:4: bad value for conf", path);
	if (strstr(logged, where) == NULL)
		fail_msg("no \"%s\" in: %s", where, logged);
	assert_int_equal(o.slot.burst, 2);
}

/* Issue 28: a typo in the file (an unknown option) is ignored, and the rest of the file stands,
   url= included: no error, so no fallback. It is noted for opt_warn_unknown, and opt_parse
   itself says nothing of it. A bad value in the file is still an error. */
static void test_unknown_ignored(void **state)
{
	struct opt o;
	const char *path = text("typo.conf",
				"url=unix:///run/redis/redis.sock\n"
				"intervall=3s\n"
				"burst = 4\n"
				"quite\n"
				"Future_Option = x y\n"
				"max_wait=20s\n",
				0644);
	char where[300];

	(void)state;
	parse_conf(&o, path, NULL);
	if (o.errors != 0)
		fail_msg("%d errors: %s", o.errors, logged);
	assert_string_equal(logged, "");
	assert_int_equal(o.url.backend, URL_BACKEND_UNIX);
	assert_int_equal(o.slot.burst, 4);
	assert_int_equal(o.slot.max_wait_us, 20000000);
	assert_int_equal(o.slot.interval_us, 7000000);
	assert_false(o.quiet);
	assert_int_equal(o.n_unknown, 3);
	snprintf(where, sizeof(where), "%s:2", path);
	assert_string_equal(o.unknown[0].where, where);
	assert_string_equal(o.unknown[0].name, "intervall");
	assert_int_equal(o.unknown[0].file_len, strlen(path));
	assert_string_equal(o.unknown[1].name, "quite");
	assert_string_equal(o.unknown[2].name, "Future_Option");

	/* A known name used wrong, and a bad value, are errors still. */
	parse_conf(&o, text("typo2.conf", "intervall=3s\nquiet=yes\n", 0644), NULL);
	expect_kind(&o, OPT_PROBLEM_VALUE, "typo2.conf:2: bad value for quiet");
	assert_int_equal(o.n_unknown, 1);
	parse_conf(&o, text("typo3.conf", "intervall=3s\ninterval=3\"\n", 0644), NULL);
	expect_kind(&o, OPT_PROBLEM_VALUE, "typo3.conf:2: bad value for interval");
	/* On the module's line, an unknown option is an error, as pam_flowslot(8) says. */
	parse_conf(&o, text("clean.conf", "burst=2\n", 0644), "intervall=3s");
	expect_kind(&o, OPT_PROBLEM_UNKNOWN, "unknown option \"intervall\"");
	assert_int_equal(o.n_unknown, 0);
}

/* Issue 38: a NAME with a hyphen, a digit or a '.' is an unknown option like any other: ignored
   with one warning each, the rest of the file applied. Such lines were lines that are no
   option, which sent every login to the fallback. What is no NAME=VALUE is still an error,
   logged once. */
static void test_unknown_any_name(void **state)
{
	struct opt o;
	const char *path = text("names.conf",
				"url=unix:///run/redis/redis.sock\n"
				"max-wait=45s\n"
				"interval=3s\n"
				"interva1=5s\n"
				"intervall=9s\n"
				"tls.verify = ca\n"
				"fallback=closed\n"
				"burst=4\n",
				0644);
	static const char *const names[] = { "max-wait", "interva1", "intervall", "tls.verify" };
	char where[300];

	(void)state;
	parse_conf(&o, path, NULL);
	if (o.errors != 0)
		fail_msg("%d errors: %s", o.errors, logged);
	assert_string_equal(logged, "");
	assert_int_equal(o.url.backend, URL_BACKEND_UNIX);
	assert_int_equal(o.slot.interval_us, 3000000);
	assert_int_equal(o.slot.burst, 4);
	assert_int_equal(o.fallback, OPT_FALLBACK_CLOSED);
	assert_false(o.max_wait_set);
	assert_int_equal(o.tls.verify, OPT_TLS_VERIFY_NAME);
	assert_int_equal(o.n_unknown, 4);
	for (int i = 0; i < 4; i++)
		assert_string_equal(o.unknown[i].name, names[i]);
	warn_unknown(&o);
	assert_int_equal(count("unknown option"), 4);
	assert_int_equal(count("\n"), 4);
	for (int i = 0; i < 4; i++) {
		snprintf(where, sizeof(where), ": unknown option \"%s\": ignored", names[i]);
		if (count(where) != 1)
			fail_msg("not once \"%s\" in: %s", where, logged);
	}
	snprintf(where, sizeof(where), "%s:2: unknown option \"max-wait\": ignored", path);
	assert_int_equal(count(where), 1);

	/* A blank inside the name, or no '=' (not a flag): errors, each logged once. */
	path = text("notopt.conf", "burst=3\nmax wait=45s\nmaxwait 45s\ninterval=3s\n", 0644);
	parse_conf(&o, path, NULL);
	assert_int_equal(o.errors, 2);
	assert_int_equal(o.problems[OPT_PROBLEM_LINE], 2);
	assert_int_equal(o.n_unknown, 0);
	assert_int_equal(count(":2: a blank inside an option name"), 1);
	assert_int_equal(count(":3: unknown option \"maxwait\""), 1);
	assert_int_equal(count("\n"), 2);
	assert_int_equal(o.slot.burst, 3);
	assert_int_equal(o.slot.interval_us, 3000000);

	/* Among the module arguments, an unknown option is an error, named whole. */
	parse_conf(&o, text("clean2.conf", "burst=2\n", 0644), "max-wait=45s");
	expect_kind(&o, OPT_PROBLEM_UNKNOWN, "unknown option \"max-wait\"");
}

/* Blanks around '=' are fine, as in faillock.conf. */
static void test_blanks_accepted(void **state)
{
	struct opt o;
	const char *path = text("blanks.conf",
				"interval = 3s\n"
				"burst\t=\t4\n"
				"max_wait= 30s\n"
				"timeout =250ms\n"
				"  countdown = 5s \t\n"
				"\tkey  =  flowslot:%h \n"
				"quiet \t\n"
				"\tdebug\n"
				"url = redis://gate:S3cretPW@10.0.0.5 \n"
				"sentinel_password =  pass phrase\t\n",
				0640);

	(void)state;
	parse_conf(&o, path, NULL);
	if (o.errors != 0)
		fail_msg("%d errors: %s", o.errors, logged);
	assert_int_equal(o.slot.interval_us, 3000000);
	assert_int_equal(o.slot.burst, 4);
	assert_int_equal(o.slot.max_wait_us, 30000000);
	assert_int_equal(o.timeout_us, 250000);
	assert_int_equal(o.countdown_us, 5000000);
	assert_string_equal(o.key, "flowslot:%h");
	assert_true(o.quiet);
	assert_true(o.debug);
	assert_string_equal(o.url.user, "gate");
	assert_string_equal(o.url.password, "S3cretPW");
	/* Blanks inside a value are its own: a pass phrase keeps them. */
	assert_string_equal(o.sentinel_password, "pass phrase");
	assert_null(strstr(logged, "3cretPW"));
	assert_null(strstr(logged, "phrase"));
}

/* Blanks inside a name or a value are ambiguous: refused by file:line, no secret shown. */
static void test_blanks_refused(void **state)
{
	struct opt o;
	const char *path = text("ambiguous.conf",
				"inter val=3s\n"
				"interval=7 s\n"
				"burst = 4 0\n"
				"interval 3s\n"
				"url redis://:S3cretPW@h?db=2\n"
				"timeout = 2 s\n"
				"sentinel_password pw = S3cretPW\n"
				"burst=2\n",
				0600);
	static const char *const expected[] = {
		":1: a blank inside an option name",
		":2: bad value for interval: \"7 s\"",
		":3: bad value for burst: \"4 0\"",
		":4: unknown option \"interval\"",
		":5: a blank inside an option name",
		":6: bad value for timeout: \"2 s\"",
		":7: a blank inside an option name",
	};
	char where[300];

	(void)state;
	parse_conf(&o, path, NULL);
	if (o.errors != 7 || o.problems[OPT_PROBLEM_LINE] != 4 ||
	    o.problems[OPT_PROBLEM_VALUE] != 3)
		fail_msg("%d errors, %d lines, %d values: %s", o.errors,
			 o.problems[OPT_PROBLEM_LINE], o.problems[OPT_PROBLEM_VALUE], logged);
	assert_int_equal(o.n_unknown, 0);
	for (size_t i = 0; i < sizeof(expected) / sizeof(expected[0]); i++) {
		snprintf(where, sizeof(where), "%s%s", path, expected[i]);
		if (strstr(logged, where) == NULL)
			fail_msg("no \"%s\" in: %s", where, logged);
	}
	assert_null(strstr(logged, "3cret"));
	assert_int_equal(o.slot.interval_us, 7000000);
	assert_int_equal(o.slot.burst, 2);
	assert_false(o.url.has_password);
	assert_false(o.has_sentinel_password);
}

static void test_password_in_conf(void **state)
{
	struct opt o;

	(void)state;
	/* Lines that are not name=value are named by their leading name only, if any. A NAME
	   that may be a password (not letters, digits, '_', '-' and '.', or capitals with
	   digits) is an unknown option all the same, by its line alone. */
	parse_conf(&o, text("typo.conf", "url redis://:S3cretPW@host\nurl: redis://:S3cretPW@h\n"
					 "S3cretPW\n=S3cretPW\n$3cretPW=x\nS3cretPW==\n", 0600),
		   NULL);
	assert_int_equal(o.errors, 4);
	assert_int_equal(o.problems[OPT_PROBLEM_LINE], 4);
	assert_int_equal(o.n_unknown, 2);
	assert_null(strstr(logged, "3cretPW"));
	assert_non_null(strstr(logged, "unknown option \"url\""));
	assert_non_null(strstr(logged, "not a name"));
	warn_unknown(&o);
	assert_null(strstr(logged, "3cretPW"));
	assert_int_equal(count(":5: unknown option (not shown: it may be a password): ignored"), 1);
	assert_int_equal(count(":6: unknown option (not shown: it may be a password): ignored"), 1);

	/* Readable by others: not used, and said why, without the password. */
	parse_conf(&o, text("pw644.conf", "url=redis://:s3cret@10.0.0.5\n", 0644), NULL);
	expect_kind(&o, OPT_PROBLEM_UNSAFE, "readable by others");
	assert_false(o.url.has_password);
	assert_string_equal(o.url.password, "");
	assert_null(strstr(logged, "s3cret"));
	/* Group-readable (root:root 0640) is fine. */
	parse_conf(&o, text("pw640.conf", "url=redis://gate:s3cret@10.0.0.5\n", 0640), NULL);
	assert_int_equal(o.errors, 0);
	assert_true(o.url.has_password);
	assert_string_equal(o.url.user, "gate");
	assert_string_equal(o.url.password, "s3cret");
}

static void test_password_file(void **state)
{
	struct opt o;
	char arg[300];
	const char *argv[2] = { "url=redis://gate@10.0.0.5", arg };

	(void)state;
	snprintf(arg, sizeof(arg), "password_file=%s",
		 text("secret", "pa ss:w@rd\nignored second line\n", 0600));
	parse(&o, 2, argv);
	assert_int_equal(o.errors, 0);
	assert_true(o.url.has_password);
	assert_string_equal(o.url.user, "gate");
	assert_string_equal(o.url.password, "pa ss:w@rd");
	assert_null(strstr(logged, "pa ss"));

	snprintf(arg, sizeof(arg), "password_file=%s", text("secret644", "pw\n", 0644));
	parse(&o, 2, argv);
	expect_kind(&o, OPT_PROBLEM_UNSAFE, "readable by group or others");
	snprintf(arg, sizeof(arg), "password_file=%s", text("empty", "\n", 0600));
	parse(&o, 2, argv);
	expect_kind(&o, OPT_PROBLEM_FILE, "first line");
	/* A password given where its file belongs is not echoed. */
	argv[1] = "password_file=hunter2";
	parse(&o, 2, argv);
	expect_error(&o, "password_file");
	assert_null(strstr(logged, "hunter2"));
	argv[1] = arg;
	snprintf(arg, sizeof(arg), "password_file=%s", "/nonexistent/secret");
	parse(&o, 2, argv);
	expect_kind(&o, OPT_PROBLEM_FILE, "password_file: cannot use /nonexistent/secret");

	/* A user with no password at all is an error. */
	parse(&o, 1, argv);
	expect_error(&o, "no password");
}

static void test_password_in_stack_warns(void **state)
{
	struct opt o;
	const char *argv[] = { "url=redis://:s3cret@10.0.0.5" };

	(void)state;
	parse(&o, 1, argv);
	assert_int_equal(o.errors, 0);
	assert_non_null(strstr(logged, "world-readable"));
	assert_null(strstr(logged, "s3cret"));
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
	char cmd[64];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_missing),
		cmocka_unit_test(test_lines_and_override),
		cmocka_unit_test(test_unsafe_files),
		cmocka_unit_test(test_bad_lines),
		cmocka_unit_test(test_unknown_ignored),
		cmocka_unit_test(test_unknown_any_name),
		cmocka_unit_test(test_blanks_accepted),
		cmocka_unit_test(test_blanks_refused),
		cmocka_unit_test(test_password_in_conf),
		cmocka_unit_test(test_password_file),
		cmocka_unit_test(test_password_in_stack_warns),
	};

	if (geteuid() != 0) {
		puts("test_conf: skipped, needs root (the files it checks must be root's)");
		return 0;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
