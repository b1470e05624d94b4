/* SPDX-License-Identifier: BSD-3-Clause */
#include "flowslot/pressure.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "flowslot/fstime.h"
#include "flowslot/hash.h"
#include "flowslot/log.h"
#include "flowslot/trust.h"

#define PRESSURE_FILE_MAX 512
#define PRESSURE_STORE_PREFIX "pressure."
#define PRESSURE_LOCK_WAIT_US 50000 /* the readings are a hint: not worth a longer wait */

const char *const pressure_res_name[PRESSURE_RES_N] = {
	[PRESSURE_CPU] = "cpu",
	[PRESSURE_IO] = "io",
	[PRESSURE_MEMORY] = "memory",
};

/* Digits, then (if point) a point and up to max_frac digits, scaled by 10^max_frac; NULL
   when malformed or too large. Returns what follows. */
static const char *pressure_number(const char *p, int max_frac, bool point, int64_t *out)
{
	int64_t v = 0;
	int frac = 0;

	if (*p < '0' || *p > '9')
		return NULL;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (INT64_MAX - 9) / 10)
			return NULL;
		v = v * 10 + (*p - '0');
	}
	if (point && *p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return NULL;
		for (; *p >= '0' && *p <= '9'; p++, frac++) {
			if (frac == max_frac || v > (INT64_MAX - 9) / 10)
				return NULL;
			v = v * 10 + (*p - '0');
		}
	}
	for (; frac < max_frac; frac++) {
		if (v > INT64_MAX / 10)
			return NULL;
		v *= 10;
	}
	*out = v;
	return p;
}

int pressure_parse_spec(const char *s, int64_t limit_ppm[PRESSURE_RES_N], const char **why)
{
	int64_t ppm[PRESSURE_RES_N] = { 0 };
	const char *p = s;

	for (;;) {
		size_t n = strcspn(p, ":");
		int res = -1;
		int64_t v;

		for (int r = 0; r < PRESSURE_RES_N; r++)
			if (strlen(pressure_res_name[r]) == n &&
			    strncmp(p, pressure_res_name[r], n) == 0)
				res = r;
		if (res < 0 || p[n] != ':') {
			*why = "each item must be RES:PCT, RES being cpu, io or memory";
			return -1;
		}
		if (ppm[res] != 0) {
			*why = "a resource is named twice";
			return -1;
		}
		p = pressure_number(p + n + 1, 4, true, &v);
		if (p == NULL || (*p != ',' && *p != '\0') || v <= 0 || v > PRESSURE_PPM_ALL) {
			*why = "PCT must be a percentage above 0 and at most 100, at most four "
			       "decimals";
			return -1;
		}
		ppm[res] = v; /* a percentage with four decimals is in ppm */
		if (*p == '\0')
			break;
		p++;
	}
	memcpy(limit_ppm, ppm, sizeof(ppm));
	return 0;
}

/* One line "WHAT avg10=A avg60=A avg300=A total=N\n" at p; returns what follows, or NULL. */
static const char *pressure_line(const char *p, const char *what, int64_t *total_us)
{
	static const char *const fields[] = { " avg10=", " avg60=", " avg300=" };
	int64_t v;

	if (strncmp(p, what, strlen(what)) != 0)
		return NULL;
	p += strlen(what);
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		if (strncmp(p, fields[i], strlen(fields[i])) != 0)
			return NULL;
		p = pressure_number(p + strlen(fields[i]), 2, true, &v);
		if (p == NULL)
			return NULL;
	}
	if (strncmp(p, " total=", 7) != 0)
		return NULL;
	p = pressure_number(p + 7, 0, false, total_us);
	if (p == NULL || *p != '\n')
		return NULL;
	return p + 1;
}

int pressure_parse_file(const char *text, enum pressure_res res, int64_t *total_us,
			const char **why)
{
	int64_t some_us, full_us;
	const char *p = pressure_line(text, "some", &some_us);

	if (p == NULL) {
		*why = "no well-formed \"some\" line first";
		return -1;
	}
	if (*p == '\0' && res == PRESSURE_CPU) {
		*total_us = some_us;
		return 0;
	}
	p = pressure_line(p, "full", &full_us);
	if (p == NULL || *p != '\0') {
		*why = "no well-formed \"full\" line second, and nothing after it";
		return -1;
	}
	*total_us = some_us;
	return 0;
}

int64_t pressure_share_ppm(int64_t then_total_us, int64_t then_at_us, int64_t now_total_us,
			   int64_t now_at_us)
{
	int64_t stalled_us = now_total_us - then_total_us, elapsed_us = now_at_us - then_at_us;
	int64_t ppm;

	if (then_total_us < 0 || now_total_us < 0 || stalled_us < 0 || elapsed_us < 1000 ||
	    stalled_us > INT64_MAX / PRESSURE_PPM_ALL)
		return -1;
	ppm = stalled_us * PRESSURE_PPM_ALL / elapsed_us;
	return ppm > PRESSURE_PPM_ALL ? PRESSURE_PPM_ALL : ppm;
}

/* Reads dir/name into buf, at most PRESSURE_FILE_MAX - 1 bytes. Returns 0, or -1 with *why. */
static int pressure_slurp(const char *dir, const char *name, char *buf, const char **why)
{
	char path[PATH_MAX];
	size_t n = 0;
	ssize_t r;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		*why = errno == ENOENT ? "missing" : "cannot be opened";
		return -1;
	}
	while (n < PRESSURE_FILE_MAX - 1 &&
	       (r = read(fd, buf + n, PRESSURE_FILE_MAX - 1 - n)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			close(fd);
			*why = "cannot be read";
			return -1;
		}
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	if (n == PRESSURE_FILE_MAX - 1 || strlen(buf) != n) {
		*why = "too long, or holds a NUL";
		return -1;
	}
	return 0;
}

/* Reads the watched resources now; returns how many could be read. */
static int pressure_read(struct pressure_gauge *g, struct pressure_sample *s)
{
	char text[PRESSURE_FILE_MAX], dir_shown[128];
	int got = 0;

	s->at_us = fstime_mono_us();
	for (int r = 0; r < PRESSURE_RES_N; r++) {
		const char *why = NULL;

		s->total_us[r] = -1;
		if (g->limit_ppm[r] == 0)
			continue;
		if (pressure_slurp(g->dir, pressure_res_name[r], text, &why) == 0 &&
		    pressure_parse_file(text, (enum pressure_res)r, &s->total_us[r], &why) == 0) {
			got++;
			continue;
		}
		s->total_us[r] = -1;
		if (g->warned & (1u << r))
			continue;
		g->warned |= 1u << r;
		log_msg(g->pamh, LOG_WARNING, "pressure: %s/%s %s: going on without it",
			log_escape(g->dir, dir_shown, sizeof(dir_shown)), pressure_res_name[r],
			why);
	}
	return got;
}

/* Opens and locks this pressure_dir's store in state_dir; -1 if it cannot be used (it is
   only a shortcut, so nothing is said). */
static int pressure_store_open(const struct pressure_gauge *g)
{
	char name[64];
	const char *why;
	struct stat st;
	int dfd = trust_open_dir(g->state_dir, true, &why), fd = -1;

	if (dfd < 0)
		return -1;
	snprintf(name, sizeof(name), PRESSURE_STORE_PREFIX "%016" PRIx64,
		 hash_str(HASH_START, g->dir));
	fd = openat(dfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
	close(dfd);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !trust_own_file(&st, 077)) {
		close(fd);
		return -1;
	}
	if (trust_lock(fd, LOCK_EX, PRESSURE_LOCK_WAIT_US) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* One store line "AT CPU IO MEMORY" (its newline cut off) into x; -1 when malformed or out
   of range: AT a time (>= 0), each total a count (>= 0) or -1 for none. */
static int pressure_store_line(const char *line, struct pressure_sample *x)
{
	int64_t v[1 + PRESSURE_RES_N];
	const char *p = line;

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		bool minus;

		if (i > 0 && *p++ != ' ')
			return -1;
		minus = i > 0 && *p == '-';
		p = pressure_number(p + minus, 0, false, &v[i]);
		if (p == NULL || (minus && v[i] != 1))
			return -1;
		if (minus)
			v[i] = -1;
	}
	if (*p != '\0')
		return -1;
	x->at_us = v[0];
	memcpy(x->total_us, v + 1, sizeof(x->total_us));
	return 0;
}

/* Reads the store's samples (one line each) into s; returns how many. A store that is not
   wholly as pressure_store_write leaves it counts as none. */
static int pressure_store_read(int fd, struct pressure_sample s[PRESSURE_STORED])
{
	char buf[PRESSURE_STORED * 96];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	char *p = buf, *nl;
	int k = 0;

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if (strlen(buf) != (size_t)n)
		return 0;
	for (; *p != '\0'; p = nl + 1) {
		if ((nl = strchr(p, '\n')) == NULL || k == PRESSURE_STORED)
			return 0;
		*nl = '\0';
		if (pressure_store_line(p, &s[k++]) != 0)
			return 0;
	}
	return k;
}

/* Writes s (the newest first) to the store. */
static void pressure_store_write(int fd, const struct pressure_sample *s, int n)
{
	char buf[PRESSURE_STORED * 96];
	size_t len = 0;

	for (int i = 0; i < n; i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len,
					"%" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 "\n",
					s[i].at_us, s[i].total_us[0], s[i].total_us[1],
					s[i].total_us[2]);
	if (pwrite(fd, buf, len, 0) == (ssize_t)len)
		(void)!ftruncate(fd, (off_t)len);
}

/* Whether base, taken before now, has every resource that now has. */
static bool pressure_usable(const struct pressure_sample *base, const struct pressure_sample *now)
{
	int64_t age_us = now->at_us - base->at_us;

	if (age_us < PRESSURE_GAP_US || age_us > PRESSURE_AGE_MAX_US)
		return false;
	for (int r = 0; r < PRESSURE_RES_N; r++)
		if (now->total_us[r] >= 0 && base->total_us[r] < 0)
			return false;
	return true;
}

/* Puts now in the store (the newest first, none too old), and finds in it a base for now,
   when base is not usable already. Returns whether base is usable. */
static bool pressure_exchange(struct pressure_gauge *g, const struct pressure_sample *now,
			      struct pressure_sample *base, bool have_base)
{
	struct pressure_sample s[PRESSURE_STORED + 1];
	int fd = pressure_store_open(g), n, kept = 1;

	if (fd < 0)
		return have_base;
	n = pressure_store_read(fd, s + 1);
	s[0] = *now;
	for (int i = 1; i <= n; i++) {
		if (!have_base && pressure_usable(&s[i], now)) {
			*base = s[i];
			have_base = true;
		}
		if (s[i].at_us < now->at_us && now->at_us - s[i].at_us <= PRESSURE_AGE_MAX_US &&
		    kept < PRESSURE_STORED)
			s[kept++] = s[i];
	}
	pressure_store_write(fd, s, kept);
	close(fd);
	return have_base;
}

void pressure_measure(struct pressure_gauge *g, int64_t share_ppm[PRESSURE_RES_N])
{
	struct pressure_sample now, base = g->last;
	bool have_base;

	if (pressure_read(g, &now) == 0) {
		/* Nothing to measure (a host without PSI): no second reading, no sleep. */
		for (int r = 0; r < PRESSURE_RES_N; r++)
			share_ppm[r] = -1;
		return;
	}
	have_base = g->have_last && pressure_usable(&base, &now);
	have_base = pressure_exchange(g, &now, &base, have_base);
	if (!have_base) {
		base = now;
		fstime_sleep_until(base.at_us + PRESSURE_GAP_US);
		pressure_read(g, &now);
		pressure_exchange(g, &now, &base, true);
	}
	for (int r = 0; r < PRESSURE_RES_N; r++)
		share_ppm[r] =
		    pressure_share_ppm(base.total_us[r], base.at_us, now.total_us[r], now.at_us);
	g->last = now;
	g->have_last = true;
}

int pressure_over(const int64_t limit_ppm[PRESSURE_RES_N], const int64_t share_ppm[PRESSURE_RES_N])
{
	int worst = -1;

	for (int r = 0; r < PRESSURE_RES_N; r++) {
		if (limit_ppm[r] <= 0 || share_ppm[r] < limit_ppm[r])
			continue;
		/* share / limit, compared without division */
		if (worst < 0 || share_ppm[r] * limit_ppm[worst] > share_ppm[worst] * limit_ppm[r])
			worst = r;
	}
	return worst;
}
