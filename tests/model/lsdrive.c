/* SPDX-License-Identifier: BSD-3-Clause */
/* The per-host file's store for tests/model: src/slot.lua run on it by src/lscript.c, as
   src/lslot.c runs it, on the caller's clock. One call a line on stdin, its fields split by
   tabs (a field may be empty):
     eval NOW_US KEY ARG1 ... ARG13    the script, with these ARGV (or ARG1 ... ARG14)
     zadd NOW_US SCORE MEMBER          a member put in as is (garbage, for the test)
   each answered on two lines:
     ok V1 V2 ... | err MESSAGE
     EXPIRES_US [SCORE MEMBER]...      the whole set after the call, in order
   The store's text is kept between calls and goes through lstore_read and lstore_write as the
   file does. Every place belongs to this process, so no holder is ever gone. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flowslot/lscript.h"
#include "flowslot/str.h"
#include "flowslot/lstore.h"

#define DRIVE_FIELDS 17

/* Splits line at its tabs, in place; the newline goes. Returns the number of fields. */
static int drive_split(char *line, char **f)
{
	int n = 0;

	line[strcspn(line, "\n")] = '\0';
	f[n++] = line;
	for (char *p = line; (p = strchr(p, '\t')) != NULL && n < DRIVE_FIELDS;) {
		*p++ = '\0';
		f[n++] = p;
	}
	return n;
}

static void drive_print_set(const struct lstore *s)
{
	printf("%" PRId64, s->n > 0 ? s->expires_us : 0);
	for (size_t i = 0; i < s->n; i++)
		printf(" %.17g %s", s->m[i].score, s->m[i].name);
	printf("\n");
}

/* One call on the store whose text is *text, replaced by what it writes back. */
static int drive_call(char *line, char **text)
{
	char *f[DRIVE_FIELDS], err[256], *out = NULL;
	int n = drive_split(line, f);
	struct lstore s;
	struct lscript_out res;
	const char *why;
	bool old;
	long long now_ll;
	int64_t now_us;

	if (n < 2 || str_parse_int(f[1], INT64_MIN, INT64_MAX, &now_ll) != 0)
		return -1;
	now_us = now_ll;
	if (lstore_read(&s, *text, now_us, &old, &why) != 0) {
		fprintf(stderr, "lsdrive: the store's own text does not read back: %s\n", why);
		return -1;
	}
	s.pid = getpid();
	if (strcmp(f[0], "eval") == 0 && (n == 16 || n == 17)) {
		if (lscript_run(&s, f[2], (const char *const *)&f[3], n - 3, 0, &res, err,
				sizeof(err)) == 0) {
			printf("ok");
			for (size_t i = 0; i < res.n; i++)
				printf(" %lld", res.v[i]);
			printf("\n");
		} else {
			printf("err %s\n", err);
		}
	} else if (strcmp(f[0], "zadd") == 0 && n == 4) {
		char *end;
		const double score = strtod(f[2], &end);

		if (end == f[2] || *end != '\0') {
			lstore_free(&s);
			return -1;
		}
		printf("ok %d\n", lstore_add(&s, score, f[3], strlen(f[3])));
	} else {
		lstore_free(&s);
		return -1;
	}
	drive_print_set(&s);
	if (s.changed && lstore_write(&s, &out) >= 0) {
		free(*text);
		*text = out;
	}
	lstore_free(&s);
	return fflush(stdout);
}

int main(void)
{
	char line[4096], *text = strdup("");

	while (text != NULL && fgets(line, sizeof(line), stdin) != NULL) {
		if (drive_call(line, &text) != 0) {
			fprintf(stderr, "lsdrive: cannot read: %s", line);
			free(text);
			return 1;
		}
	}
	if (text == NULL)
		return 1;
	free(text);
	return 0;
}
