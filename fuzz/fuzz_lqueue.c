/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: the per-host schedule file's text, as lqueue_read reads it. The input is
   the file. Every waiter and ghost line is judged again here by the format's rules, written
   out a second way, and lqueue_read must keep exactly those; what lqueue_write writes must
   read back as itself, unchanged. */
#include <limits.h>

#include "flowslot/lqueue.h"
#include "fuzz.h"

static bool ref_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* The line [p, end) split at its runs of blanks into at most max fields; -1 for more. */
static int ref_fields(const char *p, const char *end, const char **f, size_t *len, int max)
{
	int n = 0;

	while (p < end) {
		if (ref_blank(*p)) {
			p++;
			continue;
		}
		if (n == max)
			return -1;
		f[n] = p;
		while (p < end && !ref_blank(*p))
			p++;
		len[n] = (size_t)(p - f[n]);
		n++;
	}
	return n;
}

static bool ref_chars(const char *f, size_t len, size_t max, const char *allowed)
{
	if (len == 0 || len > max)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (f[i] == '\0' || strchr(allowed, f[i]) == NULL)
			return false;
	}
	return true;
}

/* A decimal int64, the whole field: an optional sign, then digits, in range. */
static bool ref_int(const char *f, size_t len, int64_t *v)
{
	bool minus = len > 0 && f[0] == '-';
	size_t i = len > 0 && (f[0] == '-' || f[0] == '+') ? 1 : 0;
	uint64_t x = 0, limit = minus ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;

	if (i == len)
		return false;
	for (; i < len; i++) {
		if (f[i] < '0' || f[i] > '9' || x > (limit - (uint64_t)(f[i] - '0')) / 10)
			return false;
		x = x * 10 + (uint64_t)(f[i] - '0');
	}
	*v = minus ? (x == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)x) : (int64_t)x;
	return true;
}

static bool ref_hex(const char *f, size_t len, size_t max)
{
	return ref_chars(f, len, max, "0123456789abcdef");
}

/* "w ID WHO HOST ARRIVAL LEASE PID", or with " t" after PID: the line without its '\n'. */
static bool ref_waiter(const char *p, const char *end)
{
	const char *f[9];
	size_t len[9];
	int64_t v;
	int n;

	if (end - p < 2 || !ref_blank(p[1]) || ref_blank(end[-1]))
		return false;
	n = ref_fields(p, end, f, len, 8);
	if (n == 8 && (len[7] != 1 || f[7][0] != 't' || f[7] - 1 != f[6] + len[6] ||
		       f[7][-1] != ' '))
		return false;
	return (n == 7 || n == 8) && ref_hex(f[1], len[1], 32) &&
	       (ref_hex(f[2], len[2], 16) || (len[2] == 1 && f[2][0] == '-')) &&
	       ref_chars(f[3], len[3], 16, "0123456789abcdef-") && ref_int(f[4], len[4], &v) &&
	       ref_int(f[5], len[5], &v) && ref_int(f[6], len[6], &v) && v > 0 && v <= INT_MAX;
}

/* "g WHO HOST ARRIVAL LEFT", or "g WHO ARRIVAL END": the line without its '\n'. */
static bool ref_ghost(const char *p, const char *end)
{
	const char *f[6];
	size_t len[6];
	int64_t v;
	int n;

	if (end - p < 2 || !ref_blank(p[1]) || ref_blank(end[-1]))
		return false;
	n = ref_fields(p, end, f, len, 5);
	if (n == 5)
		return ref_hex(f[1], len[1], 16) &&
		       (ref_hex(f[2], len[2], 16) || (len[2] == 1 && f[2][0] == '-')) &&
		       ref_int(f[3], len[3], &v) && ref_int(f[4], len[4], &v);
	return n == 4 && ref_hex(f[1], len[1], 16) && ref_int(f[2], len[2], &v) &&
	       ref_int(f[3], len[3], &v) && v >= INT64_MIN + LQUEUE_GHOST_US;
}

/* Counts the lines after the first that the rules keep, as lqueue_read must. */
static void ref_count(const char *text, size_t *waiters, size_t *ghosts)
{
	*waiters = *ghosts = 0;
	for (const char *line = strchr(text, '\n'); line != NULL; line = strchr(line, '\n')) {
		const char *end = strchr(++line, '\n');

		if (end == NULL) /* a last line without its newline: cut short */
			break;
		if (line[0] == 'w' && ref_waiter(line, end))
			(*waiters)++;
		else if (line[0] == 'g' && ref_ghost(line, end))
			(*ghosts)++;
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fuzz_silence_stderr();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size), *out = NULL, *again = NULL;
	struct lqueue q, back;
	size_t waiters, ghosts;
	long len;

	if (lqueue_read(&q, text) != 0)
		abort();
	ref_count(text, &waiters, &ghosts);
	FUZZ_CHECK(q.n_waiters == (waiters < LQUEUE_MAX ? waiters : LQUEUE_MAX));
	FUZZ_CHECK(q.n_ghosts == (ghosts < LQUEUE_GHOSTS_MAX ? ghosts : LQUEUE_GHOSTS_MAX));
	FUZZ_CHECK((q.interval_us == 0) == (q.burst == 0) && q.interval_us >= 0 && q.burst >= 0);
	for (size_t i = 0; i < q.n_waiters; i++)
		FUZZ_CHECK(q.waiters[i].pid > 0 && q.waiters[i].id[0] != '\0');

	/* What is written reads back as itself. */
	len = lqueue_write(&q, &out);
	FUZZ_CHECK(len >= 0 && (size_t)len == strlen(out));
	if (lqueue_read(&back, out) != 0)
		abort();
	FUZZ_CHECK(back.changed == 0 && back.n_waiters == q.n_waiters &&
		   back.n_ghosts == q.n_ghosts);
	FUZZ_CHECK(lqueue_write(&back, &again) == len && strcmp(again, out) == 0);

	lqueue_free(&back);
	lqueue_free(&q);
	free(again);
	free(out);
	free(text);
	return 0;
}
