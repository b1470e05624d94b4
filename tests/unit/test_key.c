/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for src/key.c: template checks and expansion. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flowslot/key.h"
#include "flowslot/opt.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define KEY_BUF (OPT_KEY_MAX + 1)
#define GUARD 64

static void test_check_good(void **state)
{
	static const char *const cases[] = {
		"pam_flowslot", "flowslot:{%s}", "%u@%h", "100%%", "%s%u%h%%", "a/b.c-d_e~!",
		"x", "%%u",
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const char *why = NULL;

		if (key_check_template(cases[i], &why) != 0)
			fail_msg("\"%s\" refused: %s", cases[i], why);
	}
}

static void test_check_bad(void **state)
{
	static const char *const cases[] = {
		"", "a b", "%x", "trailing%", "caf\xc3\xa9", "\x80", "tab\there", "nl\n",
		"del\x7f", "%", "%%%", "%S", "%U", "% s", "%\xff",
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const char *why = NULL;

		if (key_check_template(cases[i], &why) != -1)
			fail_msg("template %zu accepted", i);
		if (why == NULL || why[0] == '\0')
			fail_msg("template %zu: no reason given", i);
	}
}

static void test_uses_user(void **state)
{
	(void)state;
	assert_true(key_uses_user("%u"));
	assert_true(key_uses_user("k:%u"));
	assert_true(key_uses_user("%s:%h:%u"));
	assert_true(key_uses_user("%%%u"));
	assert_false(key_uses_user("pam_flowslot"));
	assert_false(key_uses_user("u"));
	assert_false(key_uses_user("%s@%h"));
	assert_false(key_uses_user("%%u")); /* a literal "%u" */
	assert_false(key_uses_user("100%%"));
	assert_false(key_uses_user("x%"));
	assert_false(key_uses_user(""));
}

/* Expands into a buffer of outsz bytes followed by guard bytes that must stay untouched. */
static int expand_guarded(const char *tmpl, const char *s, const char *u, const char *h,
			  char *out, size_t outsz)
{
	int rc;

	memset(out, '#', outsz + GUARD);
	rc = key_expand(tmpl, s, u, h, out, outsz);
	for (size_t i = outsz; i < outsz + GUARD; i++) {
		if (out[i] != '#')
			fail_msg("wrote past the end: byte %zu of a %zu-byte buffer", i, outsz);
	}
	if (rc >= 0) {
		assert_true((size_t)rc < outsz);
		assert_int_equal(strlen(out), (size_t)rc);
	}
	return rc;
}

static void expect_key(const char *tmpl, const char *s, const char *u, const char *h,
		       const char *want)
{
	char out[KEY_BUF + GUARD];
	int rc = expand_guarded(tmpl, s, u, h, out, KEY_BUF);

	if (rc < 0 || strcmp(out, want) != 0)
		fail_msg("\"%s\": rc %d, \"%s\"; want \"%s\"", tmpl, rc, rc < 0 ? "" : out, want);
	assert_int_equal(rc, (int)strlen(want));
}

static void test_expand(void **state)
{
	(void)state;
	expect_key("pam_flowslot", "sshd", "alice", "10.0.0.1", "pam_flowslot");
	expect_key("%s", "sshd", "alice", "10.0.0.1", "sshd");
	expect_key("%u", "sshd", "alice", "10.0.0.1", "alice");
	expect_key("%h", "sshd", "alice", "10.0.0.1", "10.0.0.1");
	expect_key("flowslot:{%s}:%u@%h", "sshd", "alice", "10.0.0.1",
		   "flowslot:{sshd}:alice@10.0.0.1");
	expect_key("100%%", "sshd", "alice", "h", "100%");
	expect_key("%%s%%u", "sshd", "alice", "h", "%s%u");
	expect_key("%u%u", "s", "bob", "h", "bobbob");
	expect_key("%h", "s", "u", "fe80::1", "fe80::1");
	expect_key("%u", "s", "a.b_c:d@e-f09AZ", "h", "a.b_c:d@e-f09AZ");
}

static void test_expand_null(void **state)
{
	(void)state;
	expect_key("k:%s:%u:%h:", NULL, NULL, NULL, "k::::");
	expect_key("%u", "sshd", NULL, "h", "");
	expect_key("%s|%h", NULL, "u", "host", "|host");
	expect_key("[%s][%h]", "login", "u", NULL, "[login][]");
}

static void test_expand_encoding(void **state)
{
	(void)state;
	expect_key("%u", "s", "john doe", "h", "john%20doe");
	expect_key("%u", "s", "a/b", "h", "a%2Fb");
	expect_key("%u", "s", "50%", "h", "50%25");
	expect_key("%u", "s", "%2F", "h", "%252F");
	expect_key("%u", "s", "x\ny", "h", "x%0Ay");
	expect_key("%u", "s", "\xff", "h", "%FF");
	expect_key("%u", "s", "\x01\x7f\x80", "h", "%01%7F%80");
	expect_key("%u", "s", "caf\xc3\xa9", "h", "caf%C3%A9");
	expect_key("%u", "s", "~!*'()+,;=$&#[]\\\"", "h",
		   "%7E%21%2A%27%28%29%2B%2C%3B%3D%24%26%23%5B%5D%5C%22");
	/* A '{' of the template stays: the admin's hash tag. One in a value does not. */
	expect_key("{%u}", "s", "{evil}", "h", "{%7Bevil%7D}");
	expect_key("fs:{%h}", "s", "u", "a}b", "fs:{a%7Db}");
}

/* A key cut to fit ends in "~" and 16 lowercase hex digits, after a prefix of want of at
   least outsz - 1 - 17 - 2 bytes (an escape is not split). */
static void expect_cut(const char *out, int rc, size_t outsz, const char *want)
{
	size_t cut;

	assert_true(rc > 17 && (size_t)rc < outsz);
	cut = (size_t)rc - 17;
	assert_true(cut + 2 >= outsz - 1 - 17);
	assert_int_equal(out[cut], '~');
	assert_int_equal(strspn(out + cut + 1, "0123456789abcdef"), 16);
	assert_memory_equal(out, want, cut);
}

static void test_expand_sizes(void **state)
{
	char out[4 * KEY_BUF + GUARD], out2[KEY_BUF + GUARD];
	char user[4 * KEY_BUF], want[4 * KEY_BUF + 8];
	int rc;

	(void)state;
	/* Exactly 256 bytes fit in 257 with the NUL. */
	memset(user, 'u', OPT_KEY_MAX - 2);
	user[OPT_KEY_MAX - 2] = '\0';
	rc = expand_guarded("k:%u", "s", user, "h", out, KEY_BUF);
	assert_int_equal(rc, OPT_KEY_MAX);
	assert_memory_equal(out, "k:", 2);
	assert_memory_equal(out + 2, user, OPT_KEY_MAX - 2);
	assert_int_equal(out[OPT_KEY_MAX], '\0');

	/* 257 do not: cut, with the hash of the whole. */
	user[OPT_KEY_MAX - 2] = 'u';
	user[OPT_KEY_MAX - 1] = '\0';
	snprintf(want, sizeof(want), "k:%s", user);
	rc = expand_guarded("k:%u", "s", user, "h", out, KEY_BUF);
	expect_cut(out, rc, KEY_BUF, want);
	/* The same name, the same key; one byte more, another key. */
	assert_int_equal(expand_guarded("k:%u", "s", user, "h", out2, KEY_BUF), rc);
	assert_string_equal(out2, out);
	user[OPT_KEY_MAX - 1] = 'v';
	user[OPT_KEY_MAX] = '\0';
	assert_int_equal(expand_guarded("k:%u", "s", user, "h", out2, KEY_BUF), rc);
	assert_memory_equal(out2, out, (size_t)rc - 16);
	assert_string_not_equal(out2, out);

	/* An encoded byte counts three, and is not split at the end. */
	memset(user, 'u', OPT_KEY_MAX - 2);
	user[OPT_KEY_MAX - 2] = ' ';
	user[OPT_KEY_MAX - 1] = '\0';
	rc = expand_guarded("%u", "s", user, "h", out, KEY_BUF);
	expect_cut(out, rc, KEY_BUF, user);
	assert_int_equal(expand_guarded("%u", "s", user, "h", out, KEY_BUF + 2), OPT_KEY_MAX + 1);
	assert_memory_equal(out + OPT_KEY_MAX - 2, "%20", 4);
	memset(user, ' ', 100);
	user[100] = '\0';
	rc = expand_guarded("%u", "s", user, "h", out, KEY_BUF);
	assert_int_equal((rc - 17) % 3, 0);
	assert_int_equal(out[rc - 17 - 3], '%');

	/* A literal template longer than the buffer. */
	memset(user, 'k', OPT_KEY_MAX + 1);
	user[OPT_KEY_MAX + 1] = '\0';
	rc = expand_guarded(user, "s", "u", "h", out, KEY_BUF);
	expect_cut(out, rc, KEY_BUF, user);
	user[OPT_KEY_MAX] = '\0';
	assert_int_equal(expand_guarded(user, "s", "u", "h", out, KEY_BUF), OPT_KEY_MAX);

	/* Tiny buffers: no room for the hash. */
	assert_int_equal(expand_guarded("", "s", "u", "h", out, 1), 0);
	assert_string_equal(out, "");
	assert_int_equal(expand_guarded("a", "s", "u", "h", out, 1), -1);
	assert_int_equal(expand_guarded("%%", "s", "u", "h", out, 1), -1);
	assert_int_equal(expand_guarded("%%", "s", "u", "h", out, 2), 1);
	assert_int_equal(expand_guarded("%u", "s", "0123456789abcdefghij", "h", out, 17), -1);
	assert_int_equal(expand_guarded("%u", "s", "0123456789abcdefghij", "h", out, 18), 17);
	assert_int_equal(out[0], '~');
	assert_int_equal(expand_guarded("%u", "s", "0123456789abcdefghij", "h", out, 19), 18);
	assert_int_equal(out[1], '~');
	assert_int_equal(key_expand("a", "s", "u", "h", out, 0), -1);
}

static void test_expand_huge_user(void **state)
{
	size_t n = 10000;
	char *user = malloc(n + 1);
	char out[KEY_BUF + GUARD], out2[KEY_BUF + GUARD];
	int rc;

	(void)state;
	assert_non_null(user);
	memset(user, 'x', n);
	user[n] = '\0';
	rc = expand_guarded("pam:%u", "sshd", user, "h", out, KEY_BUF);
	assert_true(rc > 0 && strncmp(out, "pam:xxx", 7) == 0);
	/* Every byte encoded: three times as long. */
	memset(user, ' ', n);
	rc = expand_guarded("%u", "sshd", user, "h", out, KEY_BUF);
	assert_true(rc > 0 && strncmp(out, "%20%20", 6) == 0);
	assert_int_equal(expand_guarded("%s%h", user, "u", user, out2, KEY_BUF), rc);
	/* Not the same whole, so not the same key. */
	assert_string_not_equal(out, out2);
	free(user);
}

static void test_expand_bad_template(void **state)
{
	char out[KEY_BUF + GUARD];

	(void)state;
	/* Templates key_check_template refuses do not expand, and are not read past. */
	assert_int_equal(expand_guarded("%x", "s", "u", "h", out, KEY_BUF), -1);
	assert_int_equal(expand_guarded("abc%", "s", "u", "h", out, KEY_BUF), -1);
}

/* Redis Cluster's hash slots: the spec's CRC16 check value, a known key, and its tag rules. */
/* %H is this host's name, encoded as the other fields are. */
static void test_expand_host(void **state)
{
	char host[256] = "", want[3 * 256 + 16] = "f:", out[KEY_BUF];
	const char *why = NULL;
	size_t n = 2;

	(void)state;
	assert_int_equal(key_check_template("flowslot:%H", &why), 0);
	assert_int_equal(key_check_template("%s@%H:%u", &why), 0);
	assert_int_equal(gethostname(host, sizeof(host) - 1), 0);
	assert_true(host[0] != '\0');
	for (const unsigned char *p = (const unsigned char *)host; *p != '\0'; p++) {
		if (strchr("._:@-", *p) != NULL || (*p >= '0' && *p <= '9') ||
		    (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z'))
			want[n++] = (char)*p;
		else
			n += (size_t)snprintf(want + n, sizeof(want) - n, "%%%02X", *p);
	}
	snprintf(want + n, sizeof(want) - n, ":sshd");
	assert_true(key_expand("f:%H:%s", "sshd", "u", "h", out, sizeof(out)) > 0);
	assert_string_equal(out, want);
	/* %%H stays a literal "%H". */
	assert_true(key_expand("%%H", NULL, NULL, NULL, out, sizeof(out)) > 0);
	assert_string_equal(out, "%H");
}

static void test_hash_slot(void **state)
{
	(void)state;
	assert_int_equal(key_hash_slot("123456789"), 0x31c3);
	assert_int_equal(key_hash_slot("foo"), 12182);
	assert_int_equal(key_hash_slot("flowslot:{web}:a"), key_hash_slot("web"));
	assert_int_equal(key_hash_slot("flowslot:{web}:b"), key_hash_slot("web"));
	assert_int_equal(key_hash_slot("foo{bar}{zap}"), key_hash_slot("bar"));
	assert_int_equal(key_hash_slot("foo{{bar}}zap"), key_hash_slot("{bar"));
	/* An empty tag, or no closing brace, hashes the whole key. */
	assert_int_not_equal(key_hash_slot("foo{}{bar}"), key_hash_slot("bar"));
	assert_int_not_equal(key_hash_slot("a{b"), key_hash_slot("b"));
	assert_in_range(key_hash_slot(""), 0, 16383);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check_good),
		cmocka_unit_test(test_check_bad),
		cmocka_unit_test(test_uses_user),
		cmocka_unit_test(test_expand),
		cmocka_unit_test(test_expand_null),
		cmocka_unit_test(test_expand_encoding),
		cmocka_unit_test(test_expand_sizes),
		cmocka_unit_test(test_expand_huge_user),
		cmocka_unit_test(test_expand_bad_template),
		cmocka_unit_test(test_expand_host),
		cmocka_unit_test(test_hash_slot),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
