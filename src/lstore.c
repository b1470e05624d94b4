/* SPDX-License-Identifier: BSD-3-Clause */
#include "flowslot/lstore.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flowslot/slot.h"

/* Members are ordered as Redis orders them: by score, then by their bytes. */
static int lstore_cmp(double score, const char *name, size_t len, const struct lstore_member *m)
{
	size_t n = len < m->len ? len : m->len;
	int c;

	if (score != m->score)
		return score < m->score ? -1 : 1;
	c = memcmp(name, m->name, n);
	if (c != 0)
		return c;
	return len < m->len ? -1 : len > m->len;
}

bool lstore_name_ok(const char *name, size_t len)
{
	if (len == 0 || len > LSTORE_MEMBER_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (name[i] <= ' ' || name[i] > '~')
			return false;
	}
	return true;
}

ssize_t lstore_find(const struct lstore *s, const char *name, size_t len)
{
	for (size_t i = 0; i < s->n; i++) {
		if (s->m[i].len == len && memcmp(s->m[i].name, name, len) == 0)
			return (ssize_t)i;
	}
	return -1;
}

size_t lstore_lower(const struct lstore *s, double min, bool exclusive)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		bool below = exclusive ? s->m[mid].score <= min : s->m[mid].score < min;

		if (below)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Where a member of this score and name goes, in order. */
static size_t lstore_slot(const struct lstore *s, double score, const char *name, size_t len)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (lstore_cmp(score, name, len, &s->m[mid]) > 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void lstore_remove(struct lstore *s, size_t i)
{
	free(s->m[i].name);
	memmove(&s->m[i], &s->m[i + 1], (s->n - i - 1) * sizeof(s->m[0]));
	s->n--;
	if (s->n == 0)
		s->expires_us = 0;
	s->changed = true;
}

/* Room for one more member. */
static int lstore_grow(struct lstore *s)
{
	size_t cap = s->cap > 0 ? 2 * s->cap : 64;
	struct lstore_member *m;

	if (s->n < s->cap)
		return 0;
	if (cap > LSTORE_MEMBERS_MAX)
		cap = LSTORE_MEMBERS_MAX;
	if ((m = realloc(s->m, cap * sizeof(*m))) == NULL)
		return -1;
	s->m = m;
	s->cap = cap;
	return 0;
}

/* Inserts a new member, in order, as pid's (of namespace pidns). */
static int lstore_insert(struct lstore *s, double score, const char *name, size_t len, pid_t pid,
			 uint64_t pidns)
{
	size_t at;
	char *copy;

	if (s->n == LSTORE_MEMBERS_MAX || lstore_grow(s) != 0)
		return -1;
	if ((copy = malloc(len + 1)) == NULL)
		return -1;
	memcpy(copy, name, len);
	copy[len] = '\0';
	at = lstore_slot(s, score, name, len);
	memmove(&s->m[at + 1], &s->m[at], (s->n - at) * sizeof(s->m[0]));
	s->m[at] = (struct lstore_member){
		.score = score, .name = copy, .len = len, .pid = pid, .pidns = pidns
	};
	s->n++;
	s->changed = true;
	return 0;
}

int lstore_add(struct lstore *s, double score, const char *name, size_t len)
{
	ssize_t i = lstore_find(s, name, len);
	struct lstore_member m;
	size_t at;

	if (i < 0)
		return lstore_insert(s, score, name, len, s->pid, s->pidns) != 0 ? -1 : 1;
	m = s->m[i];
	memmove(&s->m[i], &s->m[i + 1], (s->n - (size_t)i - 1) * sizeof(m));
	s->n--;
	m.score = score;
	m.pid = s->pid;
	m.pidns = s->pidns;
	at = lstore_slot(s, score, m.name, m.len);
	memmove(&s->m[at + 1], &s->m[at], (s->n - at) * sizeof(m));
	s->m[at] = m;
	s->n++;
	s->changed = true;
	return 0;
}

void lstore_clear(struct lstore *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->m[i].name);
	s->changed = s->changed || s->n > 0;
	s->n = 0;
	s->expires_us = 0;
}

bool lstore_live(const struct lstore *s, int64_t now_us)
{
	return s->n > 0 && (s->expires_us == 0 || now_us < s->expires_us);
}

void lstore_free(struct lstore *s)
{
	lstore_clear(s);
	free(s->m);
	s->m = NULL;
	s->cap = 0;
}

/* The number at *at, in base 10, up to the next space or the line's end: *at moved past it.
   False for none, or one out of range. */
static bool lstore_int(const char **at, int64_t *v)
{
	char *end;
	long long x;

	if (**at < '0' || **at > '9')
		return false;
	errno = 0;
	x = strtoll(*at, &end, 10);
	if (errno != 0 || (*end != ' ' && *end != '\n' && *end != '\0'))
		return false;
	*v = (int64_t)x;
	*at = end;
	return true;
}

/* An earlier version's head, "tat at interval burst" (or "tat at", or a bare tat), on
   CLOCK_MONOTONIC: as this version's head member, while its next admission is ahead. */
static int lstore_read_old(struct lstore *s, const char *text)
{
	int64_t v[4] = { 0 };
	const char *at = text;
	char head[128];
	int got = 0, len;

	while (got < 4 && lstore_int(&at, &v[got])) {
		got++;
		if (*at == ' ')
			at++;
	}
	if (got < 2)
		v[1] = s->now_us;
	if (got == 0 || v[0] <= s->now_us || v[0] < v[1] || v[1] <= 0 ||
	    v[0] - v[1] > SLOT_HORIZON_MAX_US)
		return 0;
	if (got == 4 && v[2] > 0 && v[3] > 0)
		len = snprintf(head, sizeof(head), "s:%" PRId64 ":%" PRId64 ":0:%" PRId64 ":%" PRId64
				":%" PRId64, v[0], v[1], v[2], v[3], v[1]);
	else
		len = snprintf(head, sizeof(head), "s:%" PRId64 ":%" PRId64, v[0], v[1]);
	if (lstore_insert(s, 0, head, (size_t)len, 0, 0) != 0)
		return -2;
	s->expires_us = v[0];
	return 0;
}

/* "SCORE MEMBER PID" or "SCORE MEMBER PID NS": a line of the set, after the last. */
static int lstore_read_line(struct lstore *s, const char *line, const char **why)
{
	const char *name, *at;
	char *end;
	double score;
	int64_t pid, ns = 0;
	size_t len;
	bool bad;

	errno = 0;
	score = strtod(line, &end);
	if (end == line || *end != ' ' || !isfinite(score)) { /* underflow is a score too */
		*why = "a score that is not a number";
		return -1;
	}
	name = end + 1;
	len = strcspn(name, " \n");
	at = name + len;
	if (!lstore_name_ok(name, len)) {
		*why = len > LSTORE_MEMBER_MAX ? "a member too long" : "a bad member";
		return -1;
	}
	bad = *at++ != ' ' || !lstore_int(&at, &pid) || pid > INT_MAX;
	if (!bad && *at == ' ') {
		at++;
		bad = !lstore_int(&at, &ns) || ns == 0;
	}
	if (bad || (*at != '\n' && *at)) {
		*why = "a line that is not SCORE MEMBER PID [NS]";
		return -1;
	}
	if (s->n == LSTORE_MEMBERS_MAX) {
		*why = "too many members";
		return -1;
	}
	if (s->n > 0 && lstore_cmp(score, name, len, &s->m[s->n - 1]) <= 0) {
		*why = "members out of order";
		return -1;
	}
	if (lstore_insert(s, score, name, len, (pid_t)pid, (uint64_t)ns) != 0) {
		*why = "out of memory";
		return -2;
	}
	return 0;
}

static int lstore_by_name(const void *a, const void *b)
{
	const struct lstore_member *x = *(const struct lstore_member *const *)a;
	const struct lstore_member *y = *(const struct lstore_member *const *)b;
	int c = memcmp(x->name, y->name, x->len < y->len ? x->len : y->len);

	if (c != 0)
		return c;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return x < y ? -1 : x > y; /* in the set's order: the later one scores higher */
}

/* A member that stands twice (a set never holds one twice: a file damaged by hand) is kept
   once, at its higher score, which moves no place ahead. Returns -2 without the memory to
   look, else 0. */
static int lstore_dedupe(struct lstore *s)
{
	struct lstore_member **by;
	size_t kept = 0;

	if (s->n < 2)
		return 0;
	if ((by = malloc(s->n * sizeof(*by))) == NULL)
		return -2;
	for (size_t i = 0; i < s->n; i++)
		by[i] = &s->m[i];
	qsort(by, s->n, sizeof(*by), lstore_by_name);
	/* Each one followed by its twin loses its name: dropped below, in one pass. */
	for (size_t i = 0; i + 1 < s->n; i++) {
		if (by[i]->len == by[i + 1]->len &&
		    memcmp(by[i]->name, by[i + 1]->name, by[i]->len) == 0) {
			free(by[i]->name);
			by[i]->name = NULL;
		}
	}
	free(by);
	for (size_t i = 0; i < s->n; i++) {
		if (s->m[i].name != NULL)
			s->m[kept++] = s->m[i];
	}
	if (kept != s->n) {
		s->n = kept;
		s->repaired = "a member that stood twice, kept once at its higher score";
	}
	return 0;
}

/* Whether the boot named at *at ("" for none), up to the line's end, is another than s's; -1
   for a name that is not one. *at moves to the line's end. */
static int lstore_other_boot(const struct lstore *s, const char **at)
{
	size_t len;

	if (**at != ' ')
		return 0;
	(*at)++;
	len = strcspn(*at, " \n");
	if (len == 0 || len > LSTORE_BOOT_MAX || !lstore_name_ok(*at, len))
		return -1;
	*at += len;
	return s->boot[0] != '\0' && (strlen(s->boot) != len || memcmp(s->boot, *at - len, len) != 0);
}

static int lstore_read_set(struct lstore *s, const char *text, bool *other_boot,
			   const char **why)
{
	const char *at = text + strlen(LSTORE_MAGIC);
	const char *line;
	int other;

	if (*at++ != ' ' || !lstore_int(&at, &s->expires_us) ||
	    (other = lstore_other_boot(s, &at)) < 0 || *at != '\n') {
		*why = "a bad first line";
		return -1;
	}
	/* Another boot's: its times are of a clock that is no more. */
	*other_boot = other != 0;
	if (other) {
		s->expires_us = 0;
		return 0;
	}
	for (line = at + 1; *line != '\0'; line = strchr(line, '\n') + 1) {
		if (strchr(line, '\n') == NULL) {
			*why = "a last line without its newline";
			return -1;
		}
		int r = lstore_read_line(s, line, why);

		if (r != 0)
			return r;
	}
	if (lstore_dedupe(s) != 0) {
		*why = "out of memory";
		return -2;
	}
	return 0;
}

void lstore_boot(char *out)
{
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, out, LSTORE_BOOT_MAX) : -1;

	if (fd >= 0)
		close(fd);
	out[n > 0 ? n : 0] = '\0';
	out[strcspn(out, " \n")] = '\0';
	if (!lstore_name_ok(out, strlen(out)))
		out[0] = '\0';
}

uint64_t lstore_pidns(void)
{
	struct stat st;

	return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

int lstore_read(struct lstore *s, const char *text, int64_t now_us, bool *old, const char **why)
{
	bool expired, other_boot = false;
	int r = 0;

	memset(s, 0, sizeof(*s));
	s->now_us = now_us;
	lstore_boot(s->boot);
	*old = false;
	if (text[0] == '\0')
		return 0;
	if (strncmp(text, LSTORE_MAGIC, strlen(LSTORE_MAGIC)) != 0) {
		*old = true;
		r = lstore_read_old(s, text);
		*why = "out of memory";
	} else {
		r = lstore_read_set(s, text, &other_boot, why);
	}
	/* An expired key is written back empty: Redis deletes a key it finds expired, and a clock
	   that reads earlier later must not bring it back. */
	expired = r == 0 && s->n > 0 && !lstore_live(s, now_us);
	if (r != 0)
		lstore_free(s); /* nothing kept of what was read: an empty set, which may grow */
	else if (expired)
		lstore_clear(s);
	if (s->n == 0) /* a key with no member does not exist, nor does its expiry */
		s->expires_us = 0;
	s->changed = *old || expired || other_boot || (r == 0 && s->repaired != NULL);
	return r;
}

long lstore_write(const struct lstore *s, char **out)
{
	size_t cap = 64 + s->n * (LSTORE_MEMBER_MAX + LSTORE_LINE_MORE), len;
	char *buf = malloc(cap);

	if (buf == NULL)
		return -1;
	len = (size_t)snprintf(buf, cap, "%s %" PRId64 "%s%s\n", LSTORE_MAGIC,
			       s->n > 0 ? s->expires_us : 0, s->boot[0] != '\0' ? " " : "", s->boot);
	for (size_t i = 0; i < s->n; i++) {
		const struct lstore_member *m = &s->m[i];

		len += (size_t)snprintf(buf + len, cap - len, "%.17g %s %ld", m->score, m->name,
					(long)m->pid);
		if (m->pidns != 0)
			len += (size_t)snprintf(buf + len, cap - len, " %" PRIu64, m->pidns);
		buf[len++] = '\n';
	}
	buf[len] = '\0';
	*out = buf;
	return (long)len;
}
