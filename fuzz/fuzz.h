/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared by the libFuzzer targets in fuzz/: prototypes, the invariant check, url invariants,
   and the per-host store's. */
#ifndef FLOWSLOT_FUZZ_H
#define FLOWSLOT_FUZZ_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flowslot/lstore.h"
#include "flowslot/url.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken invariant: say which, on fd 2 itself (the stderr stream may point at /dev/null),
   and abort so that libFuzzer saves the input. */
#define FUZZ_CHECK(cond)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			dprintf(STDERR_FILENO, "%s:%d: invariant broken: %s\n", __FILE__,          \
				__LINE__, #cond);                                                  \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* The module logs through the stderr stream when it has no PAM handle. Point that stream at
   /dev/null, once. Not dup2() onto fd 2: libFuzzer (its status lines, through the stderr
   stream it saved at start-up) and the sanitizers (their reports, through fd 2) write there,
   and a crash would then leave nothing to read. */
static inline void fuzz_silence_stderr(void)
{
	FILE *null = fopen("/dev/null", "w");

	if (null == NULL) {
		perror("fuzz: /dev/null");
		exit(1);
	}
	stderr = null;
}

/* The input as a NUL-terminated heap string (cut at its first NUL). */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (s == NULL)
		abort();
	if (size > 0)
		memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

static inline bool fuzz_terminated(const char *buf, size_t bufsz)
{
	return memchr(buf, '\0', bufsz) != NULL;
}

static inline bool fuzz_host_byte(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '-';
}

/* What url_parse promises of a url it accepted. */
static inline void fuzz_check_url(const struct url *u)
{
	FUZZ_CHECK(fuzz_terminated(u->host, sizeof(u->host)));
	FUZZ_CHECK(fuzz_terminated(u->socket, sizeof(u->socket)));
	FUZZ_CHECK(fuzz_terminated(u->user, sizeof(u->user)));
	FUZZ_CHECK(fuzz_terminated(u->password, sizeof(u->password)));
	FUZZ_CHECK(u->db >= 0 && u->db <= 65535);
	/* A password is there exactly when has_password says so. (A user may come without one:
	   its password is then for password_file= to give.) */
	FUZZ_CHECK(u->has_password == (u->password[0] != '\0'));
	switch (u->backend) {
	case URL_BACKEND_TCP:
		FUZZ_CHECK(u->host[0] != '\0');
		FUZZ_CHECK(u->port >= 1 && u->port <= 65535);
		/* Whatever the host form, nothing of the userinfo or the path ends up in it. */
		FUZZ_CHECK(strpbrk(u->host, "/@") == NULL);
		break;
	case URL_BACKEND_UNIX:
		FUZZ_CHECK(u->socket[0] == '/');
		FUZZ_CHECK(strlen(u->socket) <= URL_SOCKET_MAX);
		FUZZ_CHECK(strchr(u->socket, '?') == NULL);
		break;
	case URL_BACKEND_LOCAL:
		break;
	case URL_BACKEND_SENTINEL:
	case URL_BACKEND_CLUSTER:
		FUZZ_CHECK(u->n_nodes >= 1 && u->n_nodes <= URL_NODES_MAX);
		for (int i = 0; i < u->n_nodes; i++) {
			FUZZ_CHECK(fuzz_terminated(u->nodes[i].host, sizeof(u->nodes[i].host)));
			FUZZ_CHECK(u->nodes[i].host[0] != '\0');
			FUZZ_CHECK(strpbrk(u->nodes[i].host, "/@,[]") == NULL);
			FUZZ_CHECK(u->nodes[i].port >= 1 && u->nodes[i].port <= 65535);
		}
		FUZZ_CHECK(fuzz_terminated(u->master, sizeof(u->master)));
		if (u->backend == URL_BACKEND_SENTINEL)
			FUZZ_CHECK(u->master[0] != '\0' && strpbrk(u->master, "/@,:") == NULL);
		else
			FUZZ_CHECK(u->db == 0);
		break;
	default:
		FUZZ_CHECK(!"backend out of range");
	}
}

/* A member the store's file can hold: printable ASCII but the space, 1 to LSTORE_MEMBER_MAX
   bytes. */
static inline bool fuzz_member_ok(const char *name, size_t len)
{
	if (len == 0 || len > LSTORE_MEMBER_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		if ((unsigned char)name[i] < 0x21 || (unsigned char)name[i] > 0x7e)
			return false;
	}
	return true;
}

/* Redis's order: by score, then by the bytes, a prefix first. */
static inline int fuzz_member_cmp(double sa, const char *a, size_t la, double sb, const char *b,
				  size_t lb)
{
	int c = memcmp(a, b, la < lb ? la : lb);

	if (sa != sb)
		return sa < sb ? -1 : 1;
	if (c != 0)
		return c;
	return la < lb ? -1 : la > lb;
}

/* What lstore.h promises of any set it holds, at now_us. */
static inline void fuzz_check_store(const struct lstore *s, int64_t now_us)
{
	FUZZ_CHECK(s->n <= LSTORE_MEMBERS_MAX && s->n <= s->cap);
	FUZZ_CHECK(s->n == 0 || s->expires_us == 0 || now_us < s->expires_us);
	FUZZ_CHECK(s->n > 0 || s->expires_us == 0);
	for (size_t i = 0; i < s->n; i++) {
		const struct lstore_member *m = &s->m[i];

		FUZZ_CHECK(m->len <= LSTORE_MEMBER_MAX);
		FUZZ_CHECK(fuzz_member_ok(m->name, m->len) && m->name[m->len] == '\0');
		FUZZ_CHECK(isfinite(m->score) && m->pid >= 0);
		FUZZ_CHECK(i == 0 ||
			   fuzz_member_cmp(s->m[i - 1].score, s->m[i - 1].name, s->m[i - 1].len,
					   m->score, m->name, m->len) < 0);
	}
}

/* The same member: the same score to the bit, name, pid and its namespace. */
static inline bool fuzz_same_member(const struct lstore_member *a, double score, const char *name,
				    size_t len, pid_t pid, uint64_t pidns)
{
	return memcmp(&a->score, &score, sizeof(score)) == 0 && a->len == len &&
	       memcmp(a->name, name, len) == 0 && a->pid == pid && a->pidns == pidns;
}

/* What lstore_write writes of s reads back at now_us as s, unchanged, and writes as itself. */
static inline void fuzz_check_store_file(const struct lstore *s, int64_t now_us)
{
	char *out = NULL, *again = NULL;
	struct lstore back;
	const char *why = NULL;
	bool old = true;
	long len;

	len = lstore_write(s, &out);
	FUZZ_CHECK(len >= 0 && (size_t)len == strlen(out));
	FUZZ_CHECK(lstore_read(&back, out, now_us, &old, &why) == 0);
	FUZZ_CHECK(!old && !back.changed);
	FUZZ_CHECK(back.n == s->n && back.expires_us == s->expires_us);
	for (size_t i = 0; i < s->n; i++)
		FUZZ_CHECK(fuzz_same_member(&back.m[i], s->m[i].score, s->m[i].name, s->m[i].len,
					    s->m[i].pid, s->m[i].pidns));
	FUZZ_CHECK(lstore_write(&back, &again) == len && strcmp(again, out) == 0);
	lstore_free(&back);
	free(again);
	free(out);
}

#endif
