/* SPDX-License-Identifier: BSD-3-Clause */
#include "flowslot/url.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "flowslot/str.h"

/* Copies the n bytes at s into dst (dstsz bytes with the NUL), decoding %XX when asked. */
static int url_copy(char *dst, size_t dstsz, const char *s, size_t n, bool decode)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (decode && c == '%') {
			char hex[3] = { 0 };
			char *end;

			if (i + 2 >= n)
				return -1;
			hex[0] = s[i + 1];
			hex[1] = s[i + 2];
			c = (unsigned char)strtoul(hex, &end, 16);
			if (end != hex + 2 || !isxdigit((unsigned char)hex[0]))
				return -1;
			i += 2;
		}
		if (c == '\0' || o + 1 >= dstsz)
			return -1;
		dst[o++] = (char)c;
	}
	dst[o] = '\0';
	return 0;
}

static int url_parse_userinfo(const char *s, size_t n, struct url *u, const char **why)
{
	const char *colon = memchr(s, ':', n);
	size_t user_len = colon ? (size_t)(colon - s) : n;

	if (url_copy(u->user, sizeof(u->user), s, user_len, true) != 0) {
		*why = "user name too long or badly percent-encoded";
		return -1;
	}
	if (colon == NULL) { /* user@host: the password comes from password_file= */
		if (u->user[0] == '\0') {
			*why = "empty credentials before '@'";
			return -1;
		}
		return 0;
	}
	if (url_copy(u->password, sizeof(u->password), colon + 1, n - user_len - 1, true) != 0 ||
	    u->password[0] == '\0') {
		*why = "password empty, too long or badly percent-encoded";
		return -1;
	}
	u->has_password = true;
	return 0;
}

static int url_parse_db(const char *s, struct url *u, const char **why)
{
	long long db;

	if (str_parse_int(s, 0, 65535, &db) != 0) {
		*why = "database must be a number from 0 to 65535";
		return -1;
	}
	u->db = (int)db;
	return 0;
}

static bool url_host_byte(char c, bool colon)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '-' || (colon && c == ':');
}

static int url_parse_port(const char *s, size_t n, int *port)
{
	char digits[8];
	long long v;

	if (url_copy(digits, sizeof(digits), s, n, false) != 0 ||
	    str_parse_int(digits, 1, 65535, &v) != 0)
		return -1;
	*port = (int)v;
	return 0;
}

/* Parses "host[:port]" or "[IPv6][:port]", the n bytes at s; node->port keeps its default
   when no port is given. */
static int url_parse_hostport(const char *s, size_t n, struct url_node *node, const char **why)
{
	const char *end = s + n, *h = s, *port = NULL;
	size_t hlen;

	if (*s == '[') {
		const char *close = memchr(s, ']', n);

		if (close == NULL) {
			*why = "unclosed '[' in host";
			return -1;
		}
		h = s + 1;
		hlen = (size_t)(close - h);
		if (strspn(h, "0123456789abcdefABCDEF:.") < hlen) {
			*why = "an IPv6 address in brackets holds only hex digits, ':' and '.'";
			return -1;
		}
		if (close + 1 < end) {
			if (close[1] != ':') {
				*why = "junk after ']'";
				return -1;
			}
			port = close + 2;
		}
	} else {
		const char *colon = memchr(s, ':', n);

		hlen = (size_t)((colon ? colon : end) - s);
		port = colon ? colon + 1 : NULL;
		for (size_t i = 0; i < hlen; i++) {
			if (!url_host_byte(s[i], false)) {
				*why = "host may hold only letters, digits, '.' and '-'";
				return -1;
			}
		}
	}
	if (hlen == 0 || url_copy(node->host, sizeof(node->host), h, hlen, false) != 0) {
		*why = "host missing or too long";
		return -1;
	}
	if (port != NULL && url_parse_port(port, (size_t)(end - port), &node->port) != 0) {
		*why = "port must be a number from 1 to 65535";
		return -1;
	}
	return 0;
}

int url_parse_endpoint(const char *s, size_t n, struct url_node *node)
{
	struct url_node parsed;
	unsigned char addr[sizeof(struct in6_addr)];
	const char *colon = NULL;

	for (size_t i = 0; i < n; i++) {
		if (!url_host_byte(s[i], true))
			return -1;
		if (s[i] == ':')
			colon = s + i;
	}
	if (colon == NULL || colon == s ||
	    url_copy(parsed.host, sizeof(parsed.host), s, (size_t)(colon - s), false) != 0 ||
	    url_parse_port(colon + 1, (size_t)(s + n - colon - 1), &parsed.port) != 0)
		return -1;
	/* An address, never a name: resolving one would not be bounded by timeout. */
	if (inet_pton(AF_INET, parsed.host, addr) != 1 &&
	    inet_pton(AF_INET6, parsed.host, addr) != 1)
		return -1;
	*node = parsed;
	return 0;
}

/* Parses "host1[:port1],host2[:port2],..." (n bytes at s) into u->nodes. */
static int url_parse_nodes(const char *s, size_t n, int default_port, struct url *u,
			   const char **why)
{
	const char *end = s + n;

	u->n_nodes = 0;
	for (const char *p = s; p <= end;) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *item_end = comma ? comma : end;

		if (u->n_nodes == URL_NODES_MAX) {
			*why = "more than 8 hosts";
			return -1;
		}
		u->nodes[u->n_nodes].port = default_port;
		if (url_parse_hostport(p, (size_t)(item_end - p), &u->nodes[u->n_nodes], why) != 0)
			return -1;
		u->n_nodes++;
		p = item_end + 1;
	}
	return 0;
}

/* Splits "[userinfo@]hosts[/path]": parses the userinfo, and returns where the hosts end. */
static const char *url_parse_authority(const char *rest, const char **hosts, struct url *u,
				       const char **why)
{
	/* The last '@': a password may hold '@' and '/', a path (database, master) neither. */
	const char *at = strrchr(rest, '@');

	*hosts = at ? at + 1 : rest;
	if (at && url_parse_userinfo(rest, (size_t)(at - rest), u, why) != 0)
		return NULL;
	return *hosts + strcspn(*hosts, "/");
}

static int url_parse_tcp(const char *rest, struct url *u, const char **why)
{
	const char *host;
	const char *host_end = url_parse_authority(rest, &host, u, why);
	struct url_node node = { .port = 6379 };

	if (host_end == NULL ||
	    url_parse_hostport(host, (size_t)(host_end - host), &node, why) != 0)
		return -1;
	strcpy(u->host, node.host);
	u->port = node.port;
	if (host_end[0] == '/' && host_end[1] != '\0' && url_parse_db(host_end + 1, u, why) != 0)
		return -1;
	u->backend = URL_BACKEND_TCP;
	return 0;
}

/* redis-sentinel://[userinfo@]host1[:port1],host2[:port2],.../MASTER[/db] */
static int url_parse_sentinel(const char *rest, struct url *u, const char **why)
{
	const char *hosts;
	const char *hosts_end = url_parse_authority(rest, &hosts, u, why);
	const char *name, *name_end;

	if (hosts_end == NULL ||
	    url_parse_nodes(hosts, (size_t)(hosts_end - hosts), 26379, u, why) != 0)
		return -1;
	name = *hosts_end == '/' ? hosts_end + 1 : hosts_end;
	name_end = name + strcspn(name, "/");
	if (name == name_end || (size_t)(name_end - name) > URL_MASTER_MAX) {
		*why = "the master name is missing or longer than 64 bytes: .../MASTERNAME[/db]";
		return -1;
	}
	for (const char *p = name; p < name_end; p++) {
		if (!url_host_byte(*p, false) && *p != '_') {
			*why = "the master name may hold only letters, digits, '.', '-' and '_'";
			return -1;
		}
	}
	memcpy(u->master, name, (size_t)(name_end - name));
	u->master[name_end - name] = '\0';
	if (*name_end == '/' && name_end[1] != '\0' && url_parse_db(name_end + 1, u, why) != 0)
		return -1;
	u->backend = URL_BACKEND_SENTINEL;
	return 0;
}

/* redis-cluster://[userinfo@]host1[:port1],host2[:port2],... (a cluster has only database 0) */
static int url_parse_cluster(const char *rest, struct url *u, const char **why)
{
	const char *hosts;
	const char *hosts_end = url_parse_authority(rest, &hosts, u, why);

	if (hosts_end == NULL ||
	    url_parse_nodes(hosts, (size_t)(hosts_end - hosts), 6379, u, why) != 0)
		return -1;
	if (*hosts_end == '/' && strcmp(hosts_end, "/") != 0 && strcmp(hosts_end, "/0") != 0) {
		*why = "a cluster has only database 0";
		return -1;
	}
	u->backend = URL_BACKEND_CLUSTER;
	return 0;
}

static int url_parse_unix(const char *rest, struct url *u, const char **why)
{
	const char *query = strchr(rest, '?');
	size_t n = query ? (size_t)(query - rest) : strlen(rest);

	if (rest[0] != '/') {
		*why = "socket path must be absolute: unix:///path/to/redis.sock";
		return -1;
	}
	if (url_copy(u->socket, sizeof(u->socket), rest, n, false) != 0) {
		*why = "socket path too long";
		return -1;
	}
	/* ?db=N&user=NAME, in any order. */
	for (const char *p = query; p != NULL && *p != '\0';) {
		const char *item = p + 1, *end = strchr(item, '&'), *v;
		size_t len = end ? (size_t)(end - item) : strlen(item);
		char value[URL_USER_MAX + 1];

		p = end;
		if ((v = str_skip_prefix(item, "db=")) != NULL) {
			if (url_copy(value, sizeof(value), v, len - 3, false) != 0 ||
			    url_parse_db(value, u, why) != 0) {
				*why = "database must be a number from 0 to 65535";
				return -1;
			}
		} else if ((v = str_skip_prefix(item, "user=")) != NULL) {
			if (url_copy(u->user, sizeof(u->user), v, len - 5, true) != 0 ||
			    u->user[0] == '\0') {
				*why = "user name empty, too long or badly percent-encoded";
				return -1;
			}
		} else {
			*why = "the query may hold only db=N and user=NAME";
			return -1;
		}
	}
	u->backend = URL_BACKEND_UNIX;
	return 0;
}

/* The TCP schemes, each plain and over TLS. */
static const struct url_scheme {
	const char *prefix;
	int (*parse)(const char *rest, struct url *u, const char **why);
	bool tls;
} url_schemes[] = {
	{ "redis://", url_parse_tcp, false },
	{ "rediss://", url_parse_tcp, true },
	{ "redis-sentinel://", url_parse_sentinel, false },
	{ "rediss-sentinel://", url_parse_sentinel, true },
	{ "redis-cluster://", url_parse_cluster, false },
	{ "rediss-cluster://", url_parse_cluster, true },
};

int url_parse(const char *s, struct url *u, const char **why)
{
	struct url parsed = { .port = 6379 };
	const char *rest;
	int rc = -2; /* no scheme matched */

	if (strcmp(s, "local") == 0) {
		parsed.backend = URL_BACKEND_LOCAL;
		rc = 0;
	} else if ((rest = str_skip_prefix(s, "unix://")) != NULL) {
		rc = url_parse_unix(rest, &parsed, why);
	}
	for (size_t i = 0; i < sizeof(url_schemes) / sizeof(url_schemes[0]); i++) {
		size_t n = strlen(url_schemes[i].prefix);

		if (strncmp(s, url_schemes[i].prefix, n) == 0) {
			rest = s + n;
			parsed.tls = url_schemes[i].tls;
			rc = url_schemes[i].parse(rest, &parsed, why);
		}
	}
	if (rc == -2) {
		*why = "scheme must be redis://, rediss://, unix://, redis-sentinel://, "
		       "rediss-sentinel://, redis-cluster://, rediss-cluster:// or the word local";
		rc = -1;
	}
	if (rc == 0)
		*u = parsed;
	explicit_bzero(&parsed, sizeof(parsed));
	return rc;
}

bool url_host_address(const char *host, char *addr, size_t addrsz)
{
	static const int families[] = { AF_INET, AF_INET6 };

	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		const struct addrinfo hints = { .ai_family = families[i],
						.ai_socktype = SOCK_STREAM,
						.ai_flags = AI_NUMERICHOST };
		struct addrinfo *res = NULL;
		struct sockaddr_in in4;
		struct sockaddr_in6 in6;
		const void *a = NULL;
		bool ok;

		if (getaddrinfo(host, NULL, &hints, &res) != 0)
			continue;
		if (res->ai_family == AF_INET && res->ai_addrlen >= sizeof(in4)) {
			memcpy(&in4, res->ai_addr, sizeof(in4));
			a = &in4.sin_addr;
		} else if (res->ai_family == AF_INET6 && res->ai_addrlen >= sizeof(in6)) {
			memcpy(&in6, res->ai_addr, sizeof(in6));
			a = &in6.sin6_addr;
		}
		ok = a != NULL && inet_ntop(res->ai_family, a, addr, (socklen_t)addrsz) != NULL;
		freeaddrinfo(res);
		return ok;
	}
	return false;
}
