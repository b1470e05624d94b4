/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for src/url.c: url= and the endpoints servers name. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "flowslot/url.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static struct url parse_ok(const char *s)
{
	struct url u;
	const char *why = NULL;

	memset(&u, 0xa5, sizeof(u));
	if (url_parse(s, &u, &why) != 0)
		fail_msg("\"%s\" refused: %s", s, why ? why : "(no reason)");
	return u;
}

static void test_url_tcp(void **state)
{
	struct url u;

	(void)state;
	u = parse_ok("redis://host");
	assert_int_equal(u.backend, URL_BACKEND_TCP);
	assert_string_equal(u.host, "host");
	assert_int_equal(u.port, 6379);
	assert_int_equal(u.db, 0);
	assert_string_equal(u.user, "");
	assert_false(u.has_password);
	assert_string_equal(u.password, "");

	u = parse_ok("redis://redis.example.com:6380/5");
	assert_int_equal(u.backend, URL_BACKEND_TCP);
	assert_string_equal(u.host, "redis.example.com");
	assert_int_equal(u.port, 6380);
	assert_int_equal(u.db, 5);
	assert_false(u.has_password);

	u = parse_ok("redis://10.0.0.1:1/");
	assert_string_equal(u.host, "10.0.0.1");
	assert_int_equal(u.port, 1);
	assert_int_equal(u.db, 0);

	u = parse_ok("redis://h:65535/65535");
	assert_int_equal(u.port, 65535);
	assert_int_equal(u.db, 65535);

	u = parse_ok("redis://:pw@host");
	assert_string_equal(u.host, "host");
	assert_string_equal(u.user, "");
	assert_true(u.has_password);
	assert_string_equal(u.password, "pw");
	assert_int_equal(u.port, 6379);

	u = parse_ok("redis://user:pw@host:1/2");
	assert_string_equal(u.user, "user");
	assert_string_equal(u.password, "pw");
	assert_true(u.has_password);
	assert_string_equal(u.host, "host");
	assert_int_equal(u.port, 1);
	assert_int_equal(u.db, 2);

	/* The last '@' ends the credentials; the first ':' splits them. */
	u = parse_ok("redis://u:a:b@c@host");
	assert_string_equal(u.user, "u");
	assert_string_equal(u.password, "a:b@c");
	assert_string_equal(u.host, "host");
}

static void test_url_percent(void **state)
{
	struct url u;

	(void)state;
	/* A user alone: an ACL user whose password is in password_file=. */
	u = parse_ok("redis://gate@host");
	assert_string_equal(u.user, "gate");
	assert_false(u.has_password);
	assert_string_equal(u.host, "host");

	u = parse_ok("redis://:p%40ss@host");
	assert_string_equal(u.password, "p@ss");
	u = parse_ok("redis://%41d%6din:%3a%2F%25@host");
	assert_string_equal(u.user, "Admin");
	assert_string_equal(u.password, ":/%");
	u = parse_ok("redis://:%ff@host");
	assert_int_equal((unsigned char)u.password[0], 0xff);
	assert_int_equal(u.password[1], '\0');
}

static void test_url_ipv6_unix_local(void **state)
{
	struct url u;

	(void)state;
	u = parse_ok("redis://[::1]:6380");
	assert_int_equal(u.backend, URL_BACKEND_TCP);
	assert_string_equal(u.host, "::1");
	assert_int_equal(u.port, 6380);

	u = parse_ok("redis://[fe80::1]/3");
	assert_string_equal(u.host, "fe80::1");
	assert_int_equal(u.port, 6379);
	assert_int_equal(u.db, 3);

	u = parse_ok("redis://:pw@[::1]:7000/1");
	assert_string_equal(u.host, "::1");
	assert_string_equal(u.password, "pw");
	assert_int_equal(u.port, 7000);
	assert_int_equal(u.db, 1);

	u = parse_ok("unix:///run/redis.sock");
	assert_int_equal(u.backend, URL_BACKEND_UNIX);
	assert_string_equal(u.socket, "/run/redis.sock");
	assert_int_equal(u.db, 0);
	assert_false(u.has_password);

	u = parse_ok("unix:///x.sock?db=3");
	assert_int_equal(u.backend, URL_BACKEND_UNIX);
	assert_string_equal(u.socket, "/x.sock");
	assert_int_equal(u.db, 3);

	/* An ACL user for a Unix socket; the password comes from password_file=. */
	u = parse_ok("unix:///x.sock?user=ga%20te&db=4");
	assert_string_equal(u.socket, "/x.sock");
	assert_string_equal(u.user, "ga te");
	assert_int_equal(u.db, 4);
	assert_false(u.has_password);

	u = parse_ok("local");
	assert_int_equal(u.backend, URL_BACKEND_LOCAL);
	assert_false(u.has_password);
}

static void test_url_sentinel_cluster(void **state)
{
	struct url u;

	(void)state;
	u = parse_ok("redis-sentinel://s1,s2:26380,[::1]:26381/mymaster");
	assert_int_equal(u.backend, URL_BACKEND_SENTINEL);
	assert_int_equal(u.n_nodes, 3);
	assert_string_equal(u.nodes[0].host, "s1");
	assert_int_equal(u.nodes[0].port, 26379);
	assert_string_equal(u.nodes[1].host, "s2");
	assert_int_equal(u.nodes[1].port, 26380);
	assert_string_equal(u.nodes[2].host, "::1");
	assert_int_equal(u.nodes[2].port, 26381);
	assert_string_equal(u.master, "mymaster");
	assert_int_equal(u.db, 0);
	assert_false(u.has_password);

	u = parse_ok("redis-sentinel://ops:p%40w@10.0.0.1:5000/fs_m-1.a/7");
	assert_int_equal(u.n_nodes, 1);
	assert_string_equal(u.nodes[0].host, "10.0.0.1");
	assert_int_equal(u.nodes[0].port, 5000);
	assert_string_equal(u.master, "fs_m-1.a");
	assert_int_equal(u.db, 7);
	assert_string_equal(u.user, "ops");
	assert_string_equal(u.password, "p@w");
	assert_true(u.has_password);

	/* A raw '@' or '/' in the password: the last '@' ends it. */
	u = parse_ok("redis-sentinel://:a/b@c@s1/m");
	assert_string_equal(u.password, "a/b@c");
	assert_string_equal(u.master, "m");

	u = parse_ok("redis-cluster://n1:7000,n2:7001,n3");
	assert_int_equal(u.backend, URL_BACKEND_CLUSTER);
	assert_int_equal(u.n_nodes, 3);
	assert_string_equal(u.nodes[2].host, "n3");
	assert_int_equal(u.nodes[2].port, 6379);
	assert_int_equal(u.db, 0);

	u = parse_ok("redis-cluster://:pw@n1/");
	assert_int_equal(u.n_nodes, 1);
	assert_string_equal(u.password, "pw");
	u = parse_ok("redis-cluster://a,b,c,d,e,f,g,h/0");
	assert_int_equal(u.n_nodes, URL_NODES_MAX);
	assert_string_equal(u.nodes[7].host, "h");
}

/* Each TCP scheme over TLS: the same forms, tls set; the plain ones leave it off. */
static void test_url_tls(void **state)
{
	struct url u;

	(void)state;
	u = parse_ok("rediss://default:tok%2Fen@eu1-x.upstash.io:6380/2");
	assert_int_equal(u.backend, URL_BACKEND_TCP);
	assert_true(u.tls);
	assert_string_equal(u.host, "eu1-x.upstash.io");
	assert_int_equal(u.port, 6380);
	assert_int_equal(u.db, 2);
	assert_string_equal(u.user, "default");
	assert_string_equal(u.password, "tok/en");
	u = parse_ok("rediss://10.0.0.3");
	assert_true(u.tls);
	assert_int_equal(u.port, 6379);
	u = parse_ok("rediss://[::1]:6390");
	assert_true(u.tls);
	assert_string_equal(u.host, "::1");
	u = parse_ok("rediss-sentinel://s1.example,s2.example:26380/mymaster/3");
	assert_int_equal(u.backend, URL_BACKEND_SENTINEL);
	assert_true(u.tls);
	assert_int_equal(u.n_nodes, 2);
	assert_string_equal(u.nodes[0].host, "s1.example");
	assert_int_equal(u.nodes[0].port, 26379);
	assert_string_equal(u.master, "mymaster");
	assert_int_equal(u.db, 3);
	u = parse_ok("rediss-cluster://:pw@n1:7000,n2");
	assert_int_equal(u.backend, URL_BACKEND_CLUSTER);
	assert_true(u.tls);
	assert_int_equal(u.n_nodes, 2);
	assert_string_equal(u.password, "pw");

	assert_false(parse_ok("redis://h").tls);
	assert_false(parse_ok("redis-sentinel://s/m").tls);
	assert_false(parse_ok("redis-cluster://n").tls);
	assert_false(parse_ok("unix:///run/r.sock").tls);
	assert_false(parse_ok("local").tls);
}

/* How MOVED, ASK and sentinels name a node: "address:port", IPv6 without brackets, never a
   host name. */
static void test_endpoint(void **state)
{
	static const char *const bad[] = {
		"",	 "host",    ":6379",   "h:",	   "h:0",	      "h:65536",
		"h:6379x", "h h:1",   "[::1]:1", "h/x:1",	   "h:-1",	      "h:+1",
		"h\n:1",	 "1.2.3:1", "::g:1",   "1.2.3.4.5:1", "node-2.example:7003", "localhost:6379",
	};
	struct url_node n;

	(void)state;
	assert_int_equal(url_parse_endpoint("127.0.0.1:7001", 14, &n), 0);
	assert_string_equal(n.host, "127.0.0.1");
	assert_int_equal(n.port, 7001);
	assert_int_equal(url_parse_endpoint("::1:7002", 8, &n), 0);
	assert_string_equal(n.host, "::1");
	assert_int_equal(n.port, 7002);
	/* Only the n bytes given. */
	assert_int_equal(url_parse_endpoint("10.1.2.3:7003\nxx", 13, &n), 0);
	assert_string_equal(n.host, "10.1.2.3");
	assert_int_equal(n.port, 7003);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		if (url_parse_endpoint(bad[i], strlen(bad[i]), &n) != -1)
			fail_msg("\"%s\" accepted", bad[i]);
}

/* An address as the connection reads it (getaddrinfo, as hiredis dials), written out; a name
   is no address, and is never resolved. */
static void test_host_address(void **state)
{
	static const struct {
		const char *host, *addr; /* addr NULL: not an address */
	} cases[] = {
		{ "127.0.0.1", "127.0.0.1" },
		{ "127.1", "127.0.0.1" },
		{ "2130706433", "127.0.0.1" },
		{ "0x7f.1", "127.0.0.1" },
		{ "10.1.2", "10.1.0.2" },
		{ "::1", "::1" },
		{ "FE80:0:0::1", "fe80::1" },
		{ "::ffff:10.0.0.7", "10.0.0.7" }, /* IPv4 first: dialled over IPv4 too */
		{ "localhost", NULL },
		{ "redis.example.net", NULL },
		{ "127.0.0.1.example.net", NULL },
		{ "1.2.3.4.5", NULL },
		{ "", NULL },
	};
	char addr[URL_ADDRESS_MAX];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool ip = url_host_address(cases[i].host, addr, sizeof(addr));

		if (ip != (cases[i].addr != NULL))
			fail_msg("\"%s\": %s an address", cases[i].host, ip ? "is" : "is not");
		if (ip && strcmp(addr, cases[i].addr) != 0)
			fail_msg("\"%s\": %s, want %s", cases[i].host, addr, cases[i].addr);
	}
}

static void test_url_limits(void **state)
{
	char s[1024], part[600];
	struct url u;
	const char *why;

	(void)state;
	/* The socket path: 107 bytes fit in sun_path, 108 do not. */
	memset(part, 'a', URL_SOCKET_MAX);
	part[0] = '/';
	part[URL_SOCKET_MAX] = '\0';
	snprintf(s, sizeof(s), "unix://%s", part);
	u = parse_ok(s);
	assert_int_equal(strlen(u.socket), URL_SOCKET_MAX);
	assert_string_equal(u.socket, part);
	snprintf(s, sizeof(s), "unix://%sa", part);
	why = NULL;
	assert_int_equal(url_parse(s, &u, &why), -1);
	assert_non_null(why);

	/* The host: 255 bytes. */
	memset(part, 'h', URL_HOST_MAX);
	part[URL_HOST_MAX] = '\0';
	snprintf(s, sizeof(s), "redis://%s:1", part);
	u = parse_ok(s);
	assert_string_equal(u.host, part);
	snprintf(s, sizeof(s), "redis://%sh:1", part);
	why = NULL;
	assert_int_equal(url_parse(s, &u, &why), -1);
	assert_non_null(why);

	/* The password: 511 bytes. */
	memset(part, 'p', URL_PASSWORD_MAX);
	part[URL_PASSWORD_MAX] = '\0';
	snprintf(s, sizeof(s), "redis://:%s@h", part);
	u = parse_ok(s);
	assert_string_equal(u.password, part);
	snprintf(s, sizeof(s), "redis://:%sp@h", part);
	why = NULL;
	assert_int_equal(url_parse(s, &u, &why), -1);
	assert_non_null(why);
}

static void test_url_bad(void **state)
{
	static const char *const cases[] = {
		"",
		"rediss:/host",
		"rediss//host",
		"redisss://host",
		"rediss-unix:///run/redis.sock",
		"rediss://",
		"rediss-sentinel://s1",
		"rediss-cluster://n1/1",
		"http://host",
		"REDIS://host",
		"redis:/host",
		"redis://",
		"redis://:6379",
		"redis://host:0",
		"redis://host:65536",
		"redis://host:99999999999",
		"redis://host:12ab",
		"redis://host:",
		"redis://host:-1",
		"redis://host:+1",
		"redis://host/abc",
		"redis://host/65536",
		"redis://host/-1",
		"redis://host/1/2",
		"redis://ho_st",
		"redis://ho st",
		"redis://@host",
		"redis://:@host",
		"redis://user:@host",
		"redis://:pw@",
		"redis://[::1",
		"redis://[]:1",
		"redis://[::1]x",
		"redis://[::1]:0",
		"redis://:p%zzss@host",
		"redis://:p%4@host",
		"redis://:p%@host",
		"redis://:%00@host",
		"redis://:%+1@host",
		"redis://:%-1@host",
		"redis://:% 1@host",
		"redis://:%\t1@host",
		"redis://:%\n41@host",
		"redis://%zz:pw@host",
		"unix://relative",
		"unix://",
		"unix:///x?foo=1",
		"redis://[::1 x]:6379",
		"redis://[fe80::1%eth0]",
		"unix:///x?user=",
		"unix:///x?user=a&",
		"unix:///x?",
		"unix:///x?db=1&db",
		"unix:///x?db=",
		"unix:///x?db=abc",
		"unix:///x?db=70000",
		"local:",
		"LOCAL",
		" local",
		"redis-sentinel://s1",
		"redis-sentinel://s1/",
		"redis-sentinel://s1//",
		"redis-sentinel:///m",
		"redis-sentinel://s1,/m",
		"redis-sentinel://,s1/m",
		"redis-sentinel://s1:0/m",
		"redis-sentinel://s1/m/x",
		"redis-sentinel://s1/m/70000",
		"redis-sentinel://s1/m%20x",
		"redis-sentinel://s1/m:x",
		"redis-sentinel://a,b,c,d,e,f,g,h,i/m",
		"redis-sentinel://s1/mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm",
		"redis-sentinel://@s1/m",
		"redis-cluster://",
		"redis-cluster://n1/1",
		"redis-cluster://n1/x",
		"redis-cluster://n1,,n2",
		"redis-cluster://n1 n2",
		"redis-cluster://a,b,c,d,e,f,g,h,i",
		"redis-cluster://n_1",
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct url u, before;
		const char *why = NULL;

		/* A parsed struct, so that any change shows. */
		u = parse_ok("redis://keep:secret@keep.example:4242/7");
		memcpy(&before, &u, sizeof(u));
		if (url_parse(cases[i], &u, &why) != -1)
			fail_msg("\"%s\" accepted", cases[i]);
		if (why == NULL || why[0] == '\0')
			fail_msg("\"%s\": no reason given", cases[i]);
		if (memcmp(&u, &before, sizeof(u)) != 0)
			fail_msg("\"%s\": the previous url was changed", cases[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_url_tcp),
		cmocka_unit_test(test_url_percent),
		cmocka_unit_test(test_url_ipv6_unix_local),
		cmocka_unit_test(test_url_sentinel_cluster),
		cmocka_unit_test(test_url_tls),
		cmocka_unit_test(test_endpoint),
		cmocka_unit_test(test_host_address),
		cmocka_unit_test(test_url_limits),
		cmocka_unit_test(test_url_bad),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
