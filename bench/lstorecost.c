/* SPDX-License-Identifier: BSD-3-Clause */
/* Measurement 2: the memory and CPU of one url=local decision, src/slot.lua run by
 * src/lscript.c on the store of src/lstore.c, as src/lslot.c runs it, without the file.
 *
 *   lstorecost ROUNDS N...
 *
 * For each N, a store that holds N waiters' places (reserved one after the other on a schedule
 * of one every 3 s, each with a WHO of its own and one of ten HOSTs), then ROUNDS reserve calls
 * of one more login, each on a fresh copy of the store read from its text (lstore_read), as
 * a login reads the file: CPU time (CLOCK_PROCESS_CPUTIME_ID) of lscript_run alone, and of
 * reading and writing back the store's text. Two logins: "plain", as measurement 2's pamtester
 * login asks (a WHO, no HOST, per_host=0), and "host", as an ssh login with per_host=3 asks (a
 * HOST as well, which the script hashes: redis.sha1hex, libcrypto opened for the call; dlopen
 * and dlclose counted and timed through -Wl,--wrap). Then, on the empty store, a peek, and the
 * parts of a call by Lua alone: a fresh state with the four libraries, and the script compiled
 * in it (luaL_loadbuffer), on the same counting allocator as lscript.c's.
 *
 * One line of name=value pairs per row; times in ns, medians and p90 over the rounds.
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "flowslot/fstime.h"
#include "flowslot/lscript.h"
#include "flowslot/lstore.h"
#include "flowslot/slot.h"
#include "slot_lua.h"

#define LCOST_ROUNDS_MAX 100000
#define LCOST_HOSTS 10
/* Longer than the commit window, so that every login after the first holds a place. */
#define LCOST_PLACE_INTERVAL_US 3000000
#define LCOST_MAX_WAIT_US INT64_C(3600000000)

static int64_t lcost_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Every dlopen and dlclose of lscript.c (redis.sha1hex's libcrypto), counted and timed. */
void *__real_dlopen(const char *file, int flags);
void *__wrap_dlopen(const char *file, int flags);
int __real_dlclose(void *handle);
int __wrap_dlclose(void *handle);
static long lcost_dlopens;
static int64_t lcost_dl_ns, lcost_dl_first_ns;

void *__wrap_dlopen(const char *file, int flags)
{
	int64_t t0 = lcost_cpu_ns();
	void *h = __real_dlopen(file, flags);
	int64_t took = lcost_cpu_ns() - t0;

	lcost_dl_ns += took;
	if (lcost_dlopens++ == 0)
		lcost_dl_first_ns = took;
	return h;
}

int __wrap_dlclose(void *handle)
{
	int64_t t0 = lcost_cpu_ns();
	int r = __real_dlclose(handle);

	lcost_dl_ns += lcost_cpu_ns() - t0;
	return r;
}

static int lcost_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* The p-th percentile (nearest rank) of v[0..n), sorted in place. */
static int64_t lcost_pct(int64_t *v, int n, int p)
{
	int r = (n * p + 99) / 100;

	qsort(v, (size_t)n, sizeof(*v), lcost_cmp);
	return v[r < 1 ? 0 : r - 1];
}

/* A login's ARGV for slot.lua, as lslot_argv builds it. */
struct lcost_login {
	char id[40], who[20], host[20], per_host[8], lease[24], window[24], interval[24],
	    max_wait[24];
	const char *v[11];
};

static void lcost_login(struct lcost_login *l, const char *op, int n, int host, int per_host)
{
	snprintf(l->id, sizeof(l->id), "%032x", (unsigned)n + 1);
	snprintf(l->who, sizeof(l->who), "%016x", (unsigned)n + 1);
	if (host >= 0)
		snprintf(l->host, sizeof(l->host), "%016x", (unsigned)host + 0xab000);
	else
		l->host[0] = '\0';
	snprintf(l->per_host, sizeof(l->per_host), "%d", per_host);
	snprintf(l->interval, sizeof(l->interval), "%d", LCOST_PLACE_INTERVAL_US);
	snprintf(l->max_wait, sizeof(l->max_wait), "%" PRId64, LCOST_MAX_WAIT_US);
	snprintf(l->lease, sizeof(l->lease), "%" PRId64, SLOT_LEASE_US);
	snprintf(l->window, sizeof(l->window), "%" PRId64, SLOT_COMMIT_US);
	l->v[0] = op;
	l->v[1] = l->interval;
	l->v[2] = "1";
	l->v[3] = l->max_wait;
	l->v[4] = "0";
	l->v[5] = l->id;
	l->v[6] = l->who;
	l->v[7] = l->host;
	l->v[8] = l->per_host;
	l->v[9] = l->lease;
	l->v[10] = l->window;
}

/* One call on the store of *text at now_us, the text it writes back in *text. */
static int lcost_call(char **text, int64_t now_us, const struct lcost_login *l,
		      struct lscript_out *out)
{
	struct lstore s;
	const char *why;
	char err[200], *next = NULL;
	bool old;
	int r;

	if (lstore_read(&s, *text, now_us, &old, &why) != 0) {
		fprintf(stderr, "lstorecost: the store's text does not read back: %s\n", why);
		return -1;
	}
	s.pid = getpid();
	r = lscript_run(&s, "bench:cost", l->v, 11, 0, out, err, sizeof(err));
	if (r != 0)
		fprintf(stderr, "lstorecost: the script failed: %s\n", err);
	else if (s.changed && lstore_write(&s, &next) >= 0) {
		free(*text);
		*text = next;
	}
	lstore_free(&s);
	return r;
}

/* Whether the process maps libcrypto already (a login process that links it, as sshd does). */
static bool lcost_crypto_mapped(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	bool mapped = false;

	while (f != NULL && !mapped && fgets(line, sizeof(line), f) != NULL)
		mapped = strstr(line, "libcrypto") != NULL;
	if (f != NULL)
		fclose(f);
	return mapped;
}

/* The store's own memory: its members' array and their names (malloc's overhead aside). */
static size_t lcost_store_bytes(const char *text, int64_t now_us, size_t *members)
{
	struct lstore s;
	const char *why;
	bool old;
	size_t bytes;

	if (lstore_read(&s, text, now_us, &old, &why) != 0)
		return 0;
	bytes = s.cap * sizeof(s.m[0]);
	for (size_t i = 0; i < s.n; i++)
		bytes += s.m[i].len + 1;
	*members = s.n;
	lstore_free(&s);
	return bytes;
}

/* ROUNDS calls of login l on the store text at now_us, each on a fresh copy; one line. */
static int lcost_row(const char *row, const char *text, int places, int64_t now_us,
		     const struct lcost_login *l, int rounds)
{
	static int64_t run[LCOST_ROUNDS_MAX], rw[LCOST_ROUNDS_MAX], dl[LCOST_ROUNDS_MAX];
	struct lscript_out out = { 0 };
	size_t memory_peak = 0, members = 0, store = lcost_store_bytes(text, now_us, &members);
	long steps = 0, dlopens0 = lcost_dlopens;
	size_t after = 0;

	for (int i = 0; i < rounds; i++) {
		struct lstore s;
		const char *why;
		char err[200], *back = NULL;
		bool old;
		int64_t t0 = lcost_cpu_ns(), t1, t2, dl0 = lcost_dl_ns;
		int r;

		if (lstore_read(&s, text, now_us, &old, &why) != 0)
			return -1;
		s.pid = getpid();
		t1 = lcost_cpu_ns();
		r = lscript_run(&s, "bench:cost", l->v, 11, 0, &out, err, sizeof(err));
		t2 = lcost_cpu_ns();
		if (r != 0) {
			fprintf(stderr, "lstorecost: %s, %d places: %s\n", row, places, err);
			lstore_free(&s);
			return -1;
		}
		if (s.changed && lstore_write(&s, &back) < 0)
			return -1;
		free(back);
		after = s.n;
		lstore_free(&s);
		run[i] = t2 - t1;
		rw[i] = lcost_cpu_ns() - t0 - run[i];
		dl[i] = lcost_dl_ns - dl0;
		if (out.memory_peak > memory_peak)
			memory_peak = out.memory_peak;
		steps = out.steps;
	}
	/* lstore_write's buffer, for the members the call leaves, is sized for the longest. */
	printf("row=%s places=%d members=%zu text_bytes=%zu store_bytes=%zu write_buf_bytes=%zu "
	       "verdict=%lld position=%lld memory_peak=%zu steps=%ld cpu_ns_median=%" PRId64
	       " cpu_ns_p90=%" PRId64 " store_ns_median=%" PRId64
	       " dlopens=%.2f dl_ns_median=%" PRId64 "\n",
	       row, places, members, strlen(text), store, 64 + after * (LSTORE_MEMBER_MAX + 48),
	       out.n > 0 ? out.v[0] : -1, out.n > 2 ? out.v[2] : -1, memory_peak, steps,
	       lcost_pct(run, rounds, 50), lcost_pct(run, rounds, 90), lcost_pct(rw, rounds, 50),
	       (double)(lcost_dlopens - dlopens0) / rounds, lcost_pct(dl, rounds, 50));
	return 0;
}

/* The allocator of lscript.c, counting: bytes held now and at most. */
struct lcost_mem {
	size_t now, peak;
};

static void *lcost_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	struct lcost_mem *m = ud;
	void *p;

	if (nsize == 0) {
		free(ptr);
		m->now -= osize;
		return NULL;
	}
	if ((p = realloc(ptr, nsize)) == NULL)
		return NULL;
	m->now = m->now - osize + nsize;
	if (m->now > m->peak)
		m->peak = m->now;
	return p;
}

static int lcost_libs(lua_State *L)
{
	const lua_CFunction open[] = { luaopen_base, luaopen_table, luaopen_string, luaopen_math };
	const char *const name[] = { "", LUA_TABLIBNAME, LUA_STRLIBNAME, LUA_MATHLIBNAME };

	for (size_t i = 0; i < sizeof(open) / sizeof(open[0]); i++) {
		lua_pushcfunction(L, open[i]);
		lua_pushstring(L, name[i]);
		lua_call(L, 1, 0);
	}
	return 0;
}

/* A fresh state with the four libraries, and with compile the script compiled in it, then
   closed, ROUNDS times: the CPU of the whole, and of luaL_loadbuffer alone. */
static int lcost_lua(const char *row, bool compile, int rounds)
{
	static int64_t whole[LCOST_ROUNDS_MAX], load[LCOST_ROUNDS_MAX];
	struct lcost_mem m = { 0 };
	size_t libs = 0;

	for (int i = 0; i < rounds; i++) {
		int64_t t0 = lcost_cpu_ns(), t1 = 0, t2 = 0;
		lua_State *L;

		m = (struct lcost_mem){ 0 };
		if ((L = lua_newstate(lcost_alloc, &m)) == NULL ||
		    lua_cpcall(L, lcost_libs, NULL) != 0)
			return -1;
		libs = m.now;
		if (compile) {
			t1 = lcost_cpu_ns();
			if (luaL_loadbuffer(L, RSLOT_SCRIPT, sizeof(RSLOT_SCRIPT) - 1,
					    "=slot.lua") != 0)
				return -1;
			t2 = lcost_cpu_ns();
		}
		lua_close(L);
		whole[i] = lcost_cpu_ns() - t0;
		load[i] = t2 - t1;
	}
	printf("row=%s script_bytes=%zu memory_peak=%zu memory_libs=%zu cpu_ns_median=%" PRId64
	       " cpu_ns_p90=%" PRId64 " load_ns_median=%" PRId64 "\n",
	       row, sizeof(RSLOT_SCRIPT) - 1, m.peak, libs, lcost_pct(whole, rounds, 50),
	       lcost_pct(whole, rounds, 90), lcost_pct(load, rounds, 50));
	return 0;
}

/* A store with n places, reserved from now_us on, 10 us apart; *end_us after the last. */
static char *lcost_store(int n, int64_t now_us, int64_t *end_us)
{
	char *text = strdup("");
	struct lcost_login l;
	struct lscript_out out;

	for (int i = 0; text != NULL && i < n; i++) {
		lcost_login(&l, "reserve", 1000000 + i, i % LCOST_HOSTS, 0);
		if (lcost_call(&text, now_us + 10 * i, &l, &out) != 0 || out.n < 1 ||
		    (i > 0 && out.v[0] != 2)) {
			fprintf(stderr, "lstorecost: place %d was not queued\n", i);
			free(text);
			return NULL;
		}
	}
	*end_us = now_us + 10 * (int64_t)n;
	return text;
}

/* A whole number from 0 to max, or -1. */
static int lcost_number(const char *s, int max)
{
	char *end;
	long v = strtol(s, &end, 10);

	return *s != '\0' && *end == '\0' && v >= 0 && v <= max ? (int)v : -1;
}

int main(int argc, char **argv)
{
	int rounds = argc > 2 ? lcost_number(argv[1], LCOST_ROUNDS_MAX) : -1, r = 0;
	struct lcost_login plain, host, peek;
	bool mapped = lcost_crypto_mapped();

	if (rounds < 1) {
		fprintf(stderr, "usage: lstorecost ROUNDS N...\n");
		return 2;
	}
	lcost_login(&plain, "reserve", 1, -1, 0);
	lcost_login(&host, "reserve", 2, LCOST_HOSTS, 3);
	lcost_login(&peek, "peek", 3, -1, 0);
	for (int i = 2; r == 0 && i < argc; i++) {
		int n = lcost_number(argv[i], LSTORE_PLACES_MAX);
		int64_t end_us;
		char *text = n >= 0 ? lcost_store(n, fstime_mono_us(), &end_us) : NULL;

		if (n < 0)
			fprintf(stderr, "lstorecost: not a number of places: %s\n", argv[i]);

		/* The login comes 1 ms after the last place: every lease is still running. */
		r = text == NULL ||
		    lcost_row("plain", text, n, end_us + 1000, &plain, rounds) != 0 ||
		    lcost_row("host", text, n, end_us + 1000, &host, rounds) != 0 ||
		    (n == 0 && lcost_row("peek", text, n, end_us + 1000, &peek, rounds) != 0);
		free(text);
	}
	if (r == 0)
		r = lcost_lua("state", false, rounds) != 0 ||
		    lcost_lua("compile", true, rounds) != 0;
	printf("row=libcrypto mapped_before=%d first_dl_ns=%" PRId64 "\n", mapped,
	       lcost_dl_first_ns);
	return r == 0 ? 0 : 1;
}
