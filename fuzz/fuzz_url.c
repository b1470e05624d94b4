/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: url_parse on the input as a C string (cut at its first NUL). */
#include "flowslot/url.h"
#include "fuzz.h"

static bool starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The text at s starts with value and goes on with one of the bytes in next ("" for the
   end). */
static bool found_at(const char *s, const char *value, const char *next)
{
	size_t n = strlen(value);

	return strncmp(s, value, n) == 0 && (s[n] == '\0' || strchr(next, s[n]) != NULL);
}

/* Checks an accepted url against the text it came from. */
static void check_against_input(const char *s, const struct url *u)
{
	if (strcmp(s, "local") == 0) {
		FUZZ_CHECK(u->backend == URL_BACKEND_LOCAL);
	} else if (starts_with(s, "redis://") || starts_with(s, "rediss://")) {
		const char *rest = strstr(s, "://") + strlen("://");
		const char *at = strrchr(rest, '@');
		const char *host = at ? at + 1 : rest;

		FUZZ_CHECK(u->backend == URL_BACKEND_TCP);
		/* Credentials only from before an '@': user:password, :password or user alone. */
		if (at == NULL)
			FUZZ_CHECK(!u->has_password && u->user[0] == '\0');
		else
			FUZZ_CHECK(u->has_password || u->user[0] != '\0');
		if (at != NULL && memchr(rest, ':', (size_t)(at - rest)) == NULL)
			FUZZ_CHECK(!u->has_password);
		if (*host == '[') {
			FUZZ_CHECK(found_at(host + 1, u->host, "]"));
		} else {
			for (const char *p = u->host; *p != '\0'; p++)
				FUZZ_CHECK(fuzz_host_byte(*p));
			FUZZ_CHECK(found_at(host, u->host, ":/"));
		}
		if (strchr(host, '/') == NULL || strchr(host, '/')[1] == '\0')
			FUZZ_CHECK(u->db == 0);
	} else if (starts_with(s, "unix://")) {
		const char *rest = s + strlen("unix://");
		const char *query = strchr(rest, '?');

		FUZZ_CHECK(u->backend == URL_BACKEND_UNIX);
		FUZZ_CHECK(found_at(rest, u->socket, "?"));
		/* No password in a unix:// url; a user and a database only from ?user= and ?db=. */
		FUZZ_CHECK(!u->has_password);
		if (query == NULL || strstr(query, "db=") == NULL)
			FUZZ_CHECK(u->db == 0);
		if (query == NULL || strstr(query, "user=") == NULL)
			FUZZ_CHECK(u->user[0] == '\0');
		else
			FUZZ_CHECK(u->user[0] != '\0');
	} else if (starts_with(s, "redis-sentinel://") || starts_with(s, "rediss-sentinel://")) {
		FUZZ_CHECK(u->backend == URL_BACKEND_SENTINEL);
		/* The master name is the path's first part, whole. */
		FUZZ_CHECK(strstr(s, u->master) != NULL);
	} else if (starts_with(s, "redis-cluster://") || starts_with(s, "rediss-cluster://")) {
		FUZZ_CHECK(u->backend == URL_BACKEND_CLUSTER);
	} else {
		FUZZ_CHECK(!"accepted a url of no known scheme");
	}
	/* TLS exactly for the rediss schemes. */
	FUZZ_CHECK(u->tls == starts_with(s, "rediss"));
	/* Each node's host is in the text, followed by its port, a ',', a '/', a ']' or the end. */
	for (int i = 0; u->backend >= URL_BACKEND_SENTINEL && i < u->n_nodes; i++)
		FUZZ_CHECK(strstr(s, u->nodes[i].host) != NULL);
}

/* How a server names a node in MOVED and ASK: any n bytes, and the port always in range. */
static void check_endpoint(const char *s)
{
	struct url_node node;

	memset(&node, 0xa5, sizeof(node));
	if (url_parse_endpoint(s, strlen(s), &node) == 0) {
		FUZZ_CHECK(fuzz_terminated(node.host, sizeof(node.host)));
		FUZZ_CHECK(node.host[0] != '\0');
		for (const char *p = node.host; *p != '\0'; p++)
			FUZZ_CHECK(fuzz_host_byte(*p) || *p == ':');
		FUZZ_CHECK(node.port >= 1 && node.port <= 65535);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_cstr(data, size);
	struct url *u = malloc(sizeof(*u));
	struct url *before = malloc(sizeof(*before));
	const char *why = NULL;
	int rc;

	if (u == NULL || before == NULL)
		abort();
	/* Garbage first: a refusal must leave all of it, an acceptance none of it. */
	memset(u, 0xa5, sizeof(*u));
	memcpy(before, u, sizeof(*u));
	rc = url_parse(s, u, &why);
	if (rc == 0) {
		fuzz_check_url(u);
		check_against_input(s, u);
	} else {
		FUZZ_CHECK(rc == -1);
		FUZZ_CHECK(why != NULL && why[0] != '\0');
		FUZZ_CHECK(memcmp(u, before, sizeof(*u)) == 0);
	}
	check_endpoint(s);
	free(before);
	free(u);
	free(s);
	return 0;
}
