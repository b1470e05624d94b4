/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for src/opt.c: durations, and every option through opt_set/opt_parse. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flowslot/opt.h"

#define US_PER_S INT64_C(1000000)
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* stderr goes to a temporary file between capture_begin and capture_end, which returns what
   was written there: opt_set logs to stderr when there is no PAM handle. */
struct capture {
	FILE *tmp;
	int saved;
};

static void capture_begin(struct capture *c)
{
	c->tmp = tmpfile();
	assert_non_null(c->tmp);
	fflush(stderr);
	c->saved = dup(STDERR_FILENO);
	assert_true(c->saved >= 0);
	assert_true(dup2(fileno(c->tmp), STDERR_FILENO) >= 0);
}

static void capture_end(struct capture *c, char *msg, size_t msgsz)
{
	size_t n;

	fflush(stderr);
	assert_true(dup2(c->saved, STDERR_FILENO) >= 0);
	close(c->saved);
	rewind(c->tmp);
	n = fread(msg, 1, msgsz - 1, c->tmp);
	msg[n] = '\0';
	fclose(c->tmp);
}

static int set_captured(struct opt *o, const char *arg, char *msg, size_t msgsz)
{
	struct capture c;
	int rc;

	capture_begin(&c);
	rc = opt_set(o, NULL, arg);
	capture_end(&c, msg, msgsz);
	return rc;
}

/* opt_parse_duration */

static void test_duration_good(void **state)
{
	static const struct {
		const char *s;
		int64_t us;
	} cases[] = {
		{ "7", 7 * US_PER_S },
		{ "7s", 7 * US_PER_S },
		{ "500ms", 500000 },
		{ "1.5m", 90 * US_PER_S },
		{ "0.25s", 250000 },
		{ "0", 0 },
		{ "0s", 0 },
		{ "0ms", 0 },
		{ "1ms", 1000 },
		{ "60m", 3600 * US_PER_S },
		{ "0.1", 100000 },
		{ "2.5", 2500000 },
		{ "0.0015s", 1500 },
		{ "0.0000005s", 1 },  /* to the nearest microsecond */
		{ "0.0000004s", 0 },
		{ "1.0000001s", 1000000 },
		{ "007s", 7 * US_PER_S },
		{ "0.333333333333333333333333333m", 20 * US_PER_S },
		{ "1439m", 1439 * 60 * US_PER_S },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		int64_t us = -12345;
		int rc = opt_parse_duration(cases[i].s, &us);

		if (rc != 0 || us != cases[i].us)
			fail_msg("\"%s\": rc %d, %lld us; want %lld us", cases[i].s, rc,
				 (long long)us, (long long)cases[i].us);
	}
}

static void test_duration_bad(void **state)
{
	static const char *const cases[] = {
		"", "7x", "s", "ms", "m", "-1", "+1", " 1", "1 ", "1e3", "1E3", "0x10", "inf",
		"nan", "INF", "1.", ".5", "1..5", "1.5.2", "7 s", "7sec", "7S", "7M", "7h",
		"25h", "1d", "7ms ", "99999999999", "1441m", "86401s", "99999999999999999999999",
		"1,5", "1,5s", "\t1", "1\n", "7mss",
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		int64_t us = -12345;

		if (opt_parse_duration(cases[i], &us) != -1)
			fail_msg("\"%s\" accepted as %lld us", cases[i], (long long)us);
		assert_int_equal(us, -12345);
	}
}

static void test_duration_huge(void **state)
{
	char s[1024];
	int64_t us = -1;

	(void)state;
	/* More digits than a double holds: refused, never an overflowed value. */
	memset(s, '9', sizeof(s) - 1);
	s[sizeof(s) - 1] = '\0';
	assert_int_equal(opt_parse_duration(s, &us), -1);
	assert_int_equal(us, -1);
	/* A long fraction is fine. */
	memset(s, '0', sizeof(s) - 1);
	s[0] = '2';
	s[1] = '.';
	s[sizeof(s) - 2] = 's';
	assert_int_equal(opt_parse_duration(s, &us), 0);
	assert_int_equal(us, 2 * US_PER_S);
}

/* The module runs inside programs that call setlocale(LC_ALL, ""); a locale whose decimal
   point is ',' must not change how "1.5m" reads. */
static void test_duration_locale(void **state)
{
	static const char *const names[] = { "de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8",
					     "fr_FR.utf8", "nl_NL.UTF-8", "ru_RU.UTF-8" };
	const char *found = NULL;
	int64_t us = -1;
	int rc;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(names) && found == NULL; i++) {
		if (setlocale(LC_NUMERIC, names[i]) != NULL &&
		    strcmp(localeconv()->decimal_point, ",") == 0)
			found = names[i];
	}
	if (found == NULL) {
		setlocale(LC_NUMERIC, "C");
		skip(); /* no locale with a decimal comma installed */
	}
	rc = opt_parse_duration("1.5m", &us);
	setlocale(LC_NUMERIC, "C");
	if (rc != 0 || us != 90 * US_PER_S)
		fail_msg("under %s, \"1.5m\": rc %d, %lld us", found, rc, (long long)us);
}

/* opt_defaults, opt_set, opt_parse */

static void test_defaults(void **state)
{
	struct opt o;

	(void)state;
	memset(&o, 0x5a, sizeof(o));
	opt_defaults(&o);
	assert_int_equal(o.url.backend, URL_BACKEND_LOCAL);
	assert_int_equal(o.url.db, 0);
	assert_false(o.url.has_password);
	assert_string_equal(o.url.user, "");
	assert_string_equal(o.key, "pam_flowslot");
	assert_int_equal(o.slot.interval_us, 7 * US_PER_S);
	assert_int_equal(o.slot.burst, 1);
	assert_int_equal(o.slot.max_wait_us, 300 * US_PER_S);
	assert_int_equal(o.timeout_us, 500000);
	assert_int_equal(o.countdown_us, 15 * US_PER_S);
	assert_int_equal(o.fallback, OPT_FALLBACK_LOCAL);
	assert_string_equal(o.state_dir, "/run/pam_flowslot");
	assert_false(opt_pressure_on(&o));
	for (int r = 0; r < PRESSURE_RES_N; r++)
		assert_int_equal(o.pressure.limit_ppm[r], 0);
	assert_string_equal(o.pressure.dir, "/proc/pressure");
	assert_false(o.pressure.refuse);
	assert_false(o.url.tls);
	assert_string_equal(o.tls.ca_file, "");
	assert_string_equal(o.tls.ca_dir, "");
	assert_string_equal(o.tls.cert_file, "");
	assert_string_equal(o.tls.key_file, "");
	assert_string_equal(o.tls.server_name, "");
	assert_int_equal(o.tls.verify, OPT_TLS_VERIFY_NAME);
	assert_false(o.tls.set);
	assert_false(o.quiet);
	assert_false(o.debug);
	assert_false(o.slot.dry_run);
	assert_int_equal(o.errors, 0);
}

static void test_parse_every_option(void **state)
{
	static const char *argv[] = {
		"url=redis://ops:pa%24s@redis.example:6390/4",
		"key=flowslot:{%s}:%u",
		"interval=2.5s",
		"burst=4",
		"max_wait=90s",
		"timeout=250ms",
		"fallback=open",
		"state_dir=/var/lib/flowslot",
		"countdown=0",
		"sentinel_password=s%nt",
		"sync_replicas=16",
		"pressure=cpu:40,io:12.5,memory:100",
		"pressure_dir=/srv/psi",
		"pressure_timeout=refuse",
		"quiet",
		"debug",
		"dry_run",
	};
	static const char *argv2[] = {
		"url=unix:///run/redis/redis.sock?db=9",
		"fallback=closed",
		"countdown=100ms",
		"interval=1ms",
		"burst=1000",
		"max_wait=0",
		"timeout=60s",
		"pressure=io:0.0001",
		"pressure_timeout=admit",
	};
	struct opt o;

	(void)state;
	opt_parse(&o, NULL, (int)ARRAY_SIZE(argv), argv);
	assert_int_equal(o.errors, 0);
	assert_int_equal(o.url.backend, URL_BACKEND_TCP);
	assert_string_equal(o.url.host, "redis.example");
	assert_int_equal(o.url.port, 6390);
	assert_int_equal(o.url.db, 4);
	assert_string_equal(o.url.user, "ops");
	assert_string_equal(o.url.password, "pa$s");
	assert_true(o.url.has_password);
	assert_string_equal(o.key, "flowslot:{%s}:%u");
	assert_int_equal(o.slot.interval_us, 2500000);
	assert_int_equal(o.slot.burst, 4);
	assert_int_equal(o.slot.max_wait_us, 90 * US_PER_S);
	assert_int_equal(o.timeout_us, 250000);
	assert_int_equal(o.fallback, OPT_FALLBACK_OPEN);
	assert_string_equal(o.state_dir, "/var/lib/flowslot");
	assert_int_equal(o.countdown_us, 0);
	assert_string_equal(o.sentinel_password, "s%nt");
	assert_true(o.has_sentinel_password);
	assert_int_equal(o.sync_replicas, 16);
	assert_true(opt_pressure_on(&o));
	assert_int_equal(o.pressure.limit_ppm[PRESSURE_CPU], 400000);
	assert_int_equal(o.pressure.limit_ppm[PRESSURE_IO], 125000);
	assert_int_equal(o.pressure.limit_ppm[PRESSURE_MEMORY], 1000000);
	assert_string_equal(o.pressure.dir, "/srv/psi");
	assert_true(o.pressure.refuse);
	assert_true(o.quiet);
	assert_true(o.debug);
	assert_true(o.slot.dry_run);

	opt_wipe(&o);
	for (size_t i = 0; i < sizeof(o.url.password); i++)
		assert_int_equal(o.url.password[i], 0);
	for (size_t i = 0; i < sizeof(o.sentinel_password); i++)
		assert_int_equal(o.sentinel_password[i], 0);

	/* The other ends of the ranges, and the other backends and fallbacks. */
	opt_parse(&o, NULL, (int)ARRAY_SIZE(argv2), argv2);
	assert_int_equal(o.errors, 0);
	assert_int_equal(o.url.backend, URL_BACKEND_UNIX);
	assert_string_equal(o.url.socket, "/run/redis/redis.sock");
	assert_int_equal(o.url.db, 9);
	assert_false(o.url.has_password);
	assert_int_equal(o.fallback, OPT_FALLBACK_CLOSED);
	assert_int_equal(o.countdown_us, 100000);
	assert_int_equal(o.slot.interval_us, 1000);
	assert_int_equal(o.slot.burst, 1000);
	assert_int_equal(o.slot.max_wait_us, 0);
	assert_int_equal(o.timeout_us, 60 * US_PER_S);
	assert_int_equal(o.pressure.limit_ppm[PRESSURE_CPU], 0);
	assert_int_equal(o.pressure.limit_ppm[PRESSURE_IO], 1);
	assert_int_equal(o.pressure.limit_ppm[PRESSURE_MEMORY], 0);
	assert_false(o.pressure.refuse);
	assert_string_equal(o.pressure.dir, "/proc/pressure");
	/* opt_parse starts from the defaults again. */
	assert_false(o.quiet);
	assert_false(o.debug);
	assert_string_equal(o.key, "pam_flowslot");

	assert_int_equal(opt_set(&o, NULL, "url=local"), 0);
	assert_int_equal(o.url.backend, URL_BACKEND_LOCAL);
	assert_int_equal(opt_set(&o, NULL, "fallback=local"), 0);
	assert_int_equal(o.fallback, OPT_FALLBACK_LOCAL);
	assert_int_equal(o.messages, OPT_MESSAGES_AUTO);
	assert_int_equal(opt_set(&o, NULL, "messages=summary"), 0);
	assert_int_equal(o.messages, OPT_MESSAGES_SUMMARY);
	assert_int_equal(opt_set(&o, NULL, "messages=live"), 0);
	assert_int_equal(o.messages, OPT_MESSAGES_LIVE);
	assert_int_equal(opt_set(&o, NULL, "messages=auto"), 0);
	assert_int_equal(o.messages, OPT_MESSAGES_AUTO);
	assert_int_equal(o.errors, 0);
	assert_int_equal(opt_set(&o, NULL, "messages=loud"), -1);
	assert_int_equal(o.messages, OPT_MESSAGES_AUTO);
	o.errors = 0;
}

/* Every TLS option flipped from its default, and checked together by opt_check. */
static void test_parse_tls(void **state)
{
	static const char *argv[] = {
		"url=rediss://default:pw@cache.example.net:6380",
		"tls_ca_file=/etc/ssl/flowslot/ca.pem",
		"tls_ca_dir=/etc/ssl/certs",
		"tls_cert_file=/etc/ssl/flowslot/client.pem",
		"tls_key_file=/etc/ssl/private/flowslot.key",
		"tls_server_name=redis.internal.example",
		"tls_verify=ca",
	};
	static const char *plain[] = { "url=redis://cache.example.net", "tls_verify=name" };
	static const char *lone_cert[] = { "url=rediss://h", "tls_cert_file=/c.pem" };
	static const char *lone_key[] = { "url=rediss-cluster://h", "tls_key_file=/k.pem" };
	static const char *ip_name[] = { "url=rediss-sentinel://s/m", "tls_server_name=10.0.0.7",
					 "tls_verify=name" };
	static const char *ip6_name[] = { "url=rediss://h", "tls_server_name=fe80::1:6380" };
	static const char *ca_only[] = { "url=rediss://h", "tls_verify=ca" };
	static const char *ca_dir[] = { "url=rediss://h", "tls_verify=ca",
					"tls_ca_dir=/etc/ssl/certs" };
	static const char *ca_file[] = { "url=rediss://h", "tls_ca_file=/etc/ssl/flowslot/ca.pem",
					 "tls_verify=ca" };
	struct capture c;
	struct opt o;
	char msg[1024];

	(void)state;
	opt_parse(&o, NULL, (int)ARRAY_SIZE(argv), argv);
	assert_int_equal(o.errors, 0);
	assert_true(o.url.tls);
	assert_string_equal(o.tls.ca_file, "/etc/ssl/flowslot/ca.pem");
	assert_string_equal(o.tls.ca_dir, "/etc/ssl/certs");
	assert_string_equal(o.tls.cert_file, "/etc/ssl/flowslot/client.pem");
	assert_string_equal(o.tls.key_file, "/etc/ssl/private/flowslot.key");
	assert_string_equal(o.tls.server_name, "redis.internal.example");
	assert_int_equal(o.tls.verify, OPT_TLS_VERIFY_CA);

	opt_parse(&o, NULL, (int)ARRAY_SIZE(ip_name), ip_name);
	assert_int_equal(o.errors, 0);
	assert_string_equal(o.tls.server_name, "10.0.0.7");
	assert_int_equal(o.tls.verify, OPT_TLS_VERIFY_NAME);
	/* An IPv6 address holds ':', and its last group may look like a port. */
	opt_parse(&o, NULL, (int)ARRAY_SIZE(ip6_name), ip6_name);
	assert_int_equal(o.errors, 0);
	assert_string_equal(o.tls.server_name, "fe80::1:6380");

	/* TLS options on a plaintext url: the password would go in clear. */
	capture_begin(&c);
	opt_parse(&o, NULL, (int)ARRAY_SIZE(plain), plain);
	capture_end(&c, msg, sizeof(msg));
	assert_int_equal(o.errors, 1);
	if (strstr(msg, "the url does not use TLS") == NULL)
		fail_msg("message: %s", msg);

	/* tls_verify=ca on the system's trust store would take any public CA's certificate, for
	   any name: refused, and why; with a CA named, file or directory, it is the chain alone. */
	capture_begin(&c);
	opt_parse(&o, NULL, (int)ARRAY_SIZE(ca_only), ca_only);
	capture_end(&c, msg, sizeof(msg));
	assert_int_equal(o.errors, 1);
	if (strstr(msg, "tls_verify=ca needs tls_ca_file= or tls_ca_dir=") == NULL ||
	    strstr(msg, "any public CA") == NULL)
		fail_msg("message: %s", msg);
	opt_parse(&o, NULL, (int)ARRAY_SIZE(ca_dir), ca_dir);
	assert_int_equal(o.errors, 0);
	assert_int_equal(o.tls.verify, OPT_TLS_VERIFY_CA);
	opt_parse(&o, NULL, (int)ARRAY_SIZE(ca_file), ca_file);
	assert_int_equal(o.errors, 0);

	/* A certificate without its key, and a key without its certificate. */
	capture_begin(&c);
	opt_parse(&o, NULL, (int)ARRAY_SIZE(lone_cert), lone_cert);
	capture_end(&c, msg, sizeof(msg));
	assert_int_equal(o.errors, 1);
	if (strstr(msg, "tls_cert_file and tls_key_file go together") == NULL)
		fail_msg("message: %s", msg);
	capture_begin(&c);
	opt_parse(&o, NULL, (int)ARRAY_SIZE(lone_key), lone_key);
	capture_end(&c, msg, sizeof(msg));
	assert_int_equal(o.errors, 1);
}

/* At the limits exactly: accepted. One past them is in test_set_bad_values. */
static void test_set_limits(void **state)
{
	char arg[OPT_KEY_MAX + OPT_DIR_MAX + 16];
	struct opt o;

	(void)state;
	opt_defaults(&o);
	strcpy(arg, "key=");
	memset(arg + 4, 'k', OPT_KEY_MAX);
	arg[4 + OPT_KEY_MAX] = '\0';
	assert_int_equal(opt_set(&o, NULL, arg), 0);
	assert_string_equal(o.key, arg + 4);

	strcpy(arg, "state_dir=/");
	memset(arg + 11, 'd', OPT_DIR_MAX - 1);
	arg[10 + OPT_DIR_MAX] = '\0';
	assert_int_equal(opt_set(&o, NULL, arg), 0);
	assert_int_equal(strlen(o.state_dir), OPT_DIR_MAX);
	assert_string_equal(o.state_dir, arg + 10);
	assert_int_equal(o.errors, 0);
}

static void test_set_bad_values(void **state)
{
	char long_key[OPT_KEY_MAX + 16] = "key=";
	char long_dir[OPT_DIR_MAX + 16] = "state_dir=/";
	const char *const cases[] = {
		"tls_verify=none",
		"tls_verify=",
		"tls_verify=NAME",
		"tls_ca_file=ca.pem",
		"tls_ca_dir=",
		"tls_cert_file=./c.pem",
		"tls_key_file=k.pem",
		"tls_server_name=",
		"tls_server_name=*.example.net",
		"tls_server_name=host:6380/x",
		"tls_server_name=a b",
		"tls_server_name=.example.net",
		"tls_server_name=.",
		"tls_server_name=redis.example.net:6380",
		"tls_server_name=10.0.0.7:6380",
		"tls_server_name=redis..example.net",
		"tls_server_name=::1:6380:x",
		"burst=0",
		"burst=1001",
		"burst=abc",
		"burst=",
		"burst=-1",
		"burst=1.5",
		"burst= 2",
		"interval=0",
		"interval=2h",
		"interval=61m",
		"interval=7x",
		"interval=",
		"timeout=0",
		"timeout=61s",
		"timeout=500us",
		"max_wait=61m",
		"max_wait=-1",
		"countdown=50ms",
		"countdown=99ms",
		"countdown=61m",
		"fallback=maybe",
		"fallback=",
		"fallback=OPEN",
		"state_dir=relative",
		"state_dir=",
		"key=bad%x",
		"key=a b",
		"key=",
		"key=trailing%",
		"url=http://host",
		"url=redis://:s3cret@host:99999",
		"url=redis-cluster://:s3cret@n1/2",
		"sync_replicas=17",
		"sync_replicas=-1",
		"sync_replicas=one",
		"sentinel_password=",
		"pressure=",
		"pressure=cpu",
		"pressure=cpu:",
		"pressure=cpu:0",
		"pressure=cpu:0.0000",
		"pressure=cpu:100.01",
		"pressure=cpu:101",
		"pressure=cpu:40,cpu:50",
		"pressure=disk:10",
		"pressure=CPU:40",
		"pressure=cpu:40,",
		"pressure=cpu:40;io:5",
		"pressure=cpu:1.23456",
		"pressure=cpu:-1",
		"pressure=cpu: 40",
		"pressure=cpu:40%",
		"pressure=cpu:1e1",
		"pressure=cpu:.5",
		"pressure=cpu:5.",
		"pressure_dir=relative",
		"pressure_dir=",
		"pressure_timeout=wait",
		"pressure_timeout=",
		long_key,
		long_dir,
		"foo=1",
		"quiet=1",
		"debug=yes",
		"dry_run=1",
		"Quiet",
		"url",
		"interval",
		"",
	};
	struct opt o, before;
	char msg[1024];

	(void)state;
	/* One byte over each limit, with nothing else wrong. */
	memset(long_key + 4, 'k', OPT_KEY_MAX + 1);
	long_key[4 + OPT_KEY_MAX + 1] = '\0';
	memset(long_dir + 11, 'd', OPT_DIR_MAX);
	long_dir[10 + OPT_DIR_MAX + 1] = '\0';
	assert_int_equal(strlen(long_key + 4), OPT_KEY_MAX + 1);
	assert_int_equal(strlen(long_dir + 10), OPT_DIR_MAX + 1);

	/* Start away from the defaults, so that a reset to a default would show too. */
	opt_defaults(&o);
	assert_int_equal(opt_set(&o, NULL, "url=redis://:pw@h:7/3"), 0);
	assert_int_equal(opt_set(&o, NULL, "key=k%u"), 0);
	assert_int_equal(opt_set(&o, NULL, "interval=3s"), 0);
	assert_int_equal(opt_set(&o, NULL, "burst=9"), 0);
	assert_int_equal(opt_set(&o, NULL, "max_wait=33s"), 0);
	assert_int_equal(opt_set(&o, NULL, "timeout=2s"), 0);
	assert_int_equal(opt_set(&o, NULL, "fallback=closed"), 0);
	assert_int_equal(opt_set(&o, NULL, "state_dir=/srv/fs"), 0);
	assert_int_equal(opt_set(&o, NULL, "countdown=5s"), 0);
	assert_int_equal(opt_set(&o, NULL, "pressure=memory:7,cpu:3"), 0);
	assert_int_equal(opt_set(&o, NULL, "pressure_dir=/srv/psi"), 0);
	assert_int_equal(opt_set(&o, NULL, "pressure_timeout=refuse"), 0);
	assert_int_equal(o.errors, 0);

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		int rc;

		memcpy(&before, &o, sizeof(o));
		rc = set_captured(&o, cases[i], msg, sizeof(msg));
		if (rc != -1)
			fail_msg("\"%.60s\" accepted", cases[i]);
		if (o.errors != before.errors + 1)
			fail_msg("\"%.60s\": errors %d, want %d", cases[i], o.errors,
				 before.errors + 1);
		if (strstr(msg, "pam_flowslot: ") == NULL)
			fail_msg("\"%.60s\": nothing logged", cases[i]);
		before.errors = o.errors;
		memcpy(before.problems, o.problems, sizeof(o.problems));
		if (memcmp(&o, &before, sizeof(o)) != 0)
			fail_msg("\"%.60s\" changed an option", cases[i]);
	}
	assert_int_equal(o.errors, (int)ARRAY_SIZE(cases));
	/* The good ones still stick after all that. */
	assert_int_equal(opt_set(&o, NULL, "burst=2"), 0);
	assert_int_equal(o.slot.burst, 2);
	assert_int_equal(o.errors, (int)ARRAY_SIZE(cases));
}

static void test_parse_counts_errors(void **state)
{
	static const char *argv[] = { "burst=2", "burst=0", "interval=x", "burst=3", "nonsense" };
	struct capture c;
	struct opt o;
	char msg[1024];

	(void)state;
	opt_defaults(&o);
	o.errors = 99;
	o.slot.interval_us = 1;
	capture_begin(&c);
	opt_parse(&o, NULL, (int)ARRAY_SIZE(argv), argv);
	capture_end(&c, msg, sizeof(msg));
	/* From the defaults, errors included; later options win. */
	assert_int_equal(o.errors, 3);
	assert_int_equal(o.slot.burst, 3);
	assert_int_equal(o.slot.interval_us, 7 * US_PER_S);
	if (strstr(msg, "burst") == NULL || strstr(msg, "interval") == NULL ||
	    strstr(msg, "nonsense") == NULL)
		fail_msg("messages: %s", msg);
}

/* Each error has its kind (flowslotctl says them apart); a name used wrong is said so. */
static void test_problem_kinds(void **state)
{
	static const struct {
		const char *arg;
		enum opt_problem kind;
		const char *says;
	} cases[] = {
		{ "foo=1", OPT_PROBLEM_UNKNOWN, "unknown option \"foo\"" },
		{ "intervall=3s", OPT_PROBLEM_UNKNOWN, "unknown option \"intervall\"" },
		{ "quite", OPT_PROBLEM_UNKNOWN, "unknown option \"quite\"" },
		{ "interval=7x", OPT_PROBLEM_VALUE, "bad value for interval: \"7x\"" },
		{ "quiet=1", OPT_PROBLEM_VALUE, "bad value for quiet: a flag takes none" },
		{ "url", OPT_PROBLEM_VALUE, "no value for url (url=VALUE)" },
		{ "dry_run=yes", OPT_PROBLEM_VALUE, "bad value for dry_run: a flag takes none" },
	};
	struct opt o;
	char msg[1024];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		opt_defaults(&o);
		assert_int_equal(set_captured(&o, cases[i].arg, msg, sizeof(msg)), -1);
		assert_int_equal(o.errors, 1);
		if (o.problems[cases[i].kind] != 1 || strstr(msg, cases[i].says) == NULL)
			fail_msg("\"%s\": kind %d not counted, or no \"%s\" in: %s", cases[i].arg,
				 (int)cases[i].kind, cases[i].says, msg);
	}
	/* opt_check's rules are of their own kind. */
	opt_defaults(&o);
	assert_int_equal(opt_set(&o, NULL, "url=redis://gate@h"), 0);
	set_captured(&o, "tls_ca_file=/x", msg, sizeof(msg));
	opt_check(&o, NULL);
	assert_int_equal(o.errors, 2);
	assert_int_equal(o.problems[OPT_PROBLEM_CONFLICT], 2);
}

/* Names as the configuration file and flowslotctl tell an option from other words. */
static void test_names(void **state)
{
	(void)state;
	assert_int_equal(opt_name_len("interval=7s"), 8);
	assert_int_equal(opt_name_len("intervall=3s"), 9);
	assert_int_equal(opt_name_len("quiet"), 5);
	assert_int_equal(opt_name_len("Future_Thing="), 12);
	assert_int_equal(opt_name_len("=7s"), 0);
	assert_int_equal(opt_name_len(""), 0);
	assert_int_equal(opt_name_len("interval 7s"), 0);
	assert_int_equal(opt_name_len("S3cretPW"), 0);
	assert_int_equal(opt_name_len("$3cret=x"), 0);
	assert_int_equal(opt_name_len("redis://h:1"), 0);
	assert_int_equal(opt_name_len("c1:x=y"), 0);
	assert_int_equal(
	    opt_name_len("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa=1"),
	    0); /* 65 letters */
	assert_true(opt_known_name("url=x", 3));
	assert_true(opt_known_name("tls_verify", 10));
	assert_true(opt_known_name("dry_run", 7));
	assert_false(opt_known_name("ur", 2));
	assert_false(opt_known_name("intervall", 9));
	assert_false(opt_known_name("url", 0));
	assert_true(opt_is_flag("debug"));
	assert_false(opt_is_flag("debug=1"));
	assert_false(opt_is_flag("url"));
}

static void test_messages(void **state)
{
	struct opt o;
	char msg[1024];

	(void)state;
	opt_defaults(&o);

	assert_int_equal(set_captured(&o, "interval=7x", msg, sizeof(msg)), -1);
	if (strstr(msg, "bad value for interval: \"7x\"") == NULL)
		fail_msg("message: %s", msg);

	assert_int_equal(set_captured(&o, "frobnicate=1", msg, sizeof(msg)), -1);
	if (strstr(msg, "unknown option") == NULL || strstr(msg, "frobnicate") == NULL)
		fail_msg("message: %s", msg);

	/* An unknown option is named without its value: a mistyped url= holds a password. A
	   flag given a value is named as one, its value not shown either. */
	assert_int_equal(set_captured(&o, "quiet=s3cret", msg, sizeof(msg)), -1);
	if (strstr(msg, "bad value for quiet: a flag takes none") == NULL ||
	    strstr(msg, "s3cret") != NULL)
		fail_msg("message: %s", msg);
	assert_int_equal(set_captured(&o, "URL=redis://:hunter2@host", msg, sizeof(msg)), -1);
	if (strstr(msg, "unknown option \"URL\"") == NULL || strstr(msg, "hunter2") != NULL)
		fail_msg("message: %s", msg);

	/* The url is named, its password never shown, in any encoding. */
	assert_int_equal(set_captured(&o, "url=redis://:s3cret@host:99999", msg, sizeof(msg)),
			 -1);
	if (strstr(msg, "url") == NULL || strstr(msg, "port") == NULL)
		fail_msg("message: %s", msg);
	if (strstr(msg, "s3cret") != NULL)
		fail_msg("the password leaked: %s", msg);
	assert_int_equal(set_captured(&o, "url=redis://u:%73%33cret@h%zz", msg, sizeof(msg)),
			 -1);
	if (strstr(msg, "s3cret") != NULL || strstr(msg, "%73%33cret") != NULL)
		fail_msg("the password leaked: %s", msg);

	/* A name that would accept any subdomain, or one with a port: each says why. */
	assert_int_equal(set_captured(&o, "tls_server_name=.example.net", msg, sizeof(msg)), -1);
	if (strstr(msg, "bad value for tls_server_name: \".example.net\"") == NULL ||
	    strstr(msg, "leading '.'") == NULL)
		fail_msg("message: %s", msg);
	assert_int_equal(
	    set_captured(&o, "tls_server_name=redis.example.net:6380", msg, sizeof(msg)), -1);
	if (strstr(msg, "a port goes in url=") == NULL)
		fail_msg("message: %s", msg);

	/* Untrusted bytes are escaped, never written raw. */
	assert_int_equal(set_captured(&o, "key=a\nb", msg, sizeof(msg)), -1);
	if (strstr(msg, "a\\x0ab") == NULL)
		fail_msg("message: %s", msg);
	assert_int_equal(o.errors, 9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_duration_good),  cmocka_unit_test(test_duration_bad),
		cmocka_unit_test(test_duration_huge),  cmocka_unit_test(test_duration_locale),
		cmocka_unit_test(test_defaults),       cmocka_unit_test(test_parse_every_option),
		cmocka_unit_test(test_parse_tls),      cmocka_unit_test(test_set_limits),
		cmocka_unit_test(test_set_bad_values), cmocka_unit_test(test_parse_counts_errors),
		cmocka_unit_test(test_problem_kinds),  cmocka_unit_test(test_names),
		cmocka_unit_test(test_messages),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
