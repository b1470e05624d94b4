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
 * in it (luaL_loadbuffer), on the same counting allocator as lscript.c's. The rows take turns,
 * one call each a round, so that the machine's load falls on all of them alike, and each call
 * finds the caches as another row left them, nearer a login's one call than a warm loop.
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
#define LCOST_SIZES_MAX 8
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

/* What is measured, one call a round: a login on a store (LCOST_CALL), or by Lua alone a fresh
   state (LCOST_STATE), the script compiled in one (LCOST_COMPILE), and its chunk loaded in one,
   as lscript.c loads it (LCOST_LOAD). */
enum lcost_kind { LCOST_CALL, LCOST_STATE, LCOST_COMPILE, LCOST_LOAD };

struct lcost_row {
	enum lcost_kind kind;
	const char *name;
	int places;
	const char *text; /* the store's, for LCOST_CALL */
	int64_t now_us;
	const struct lcost_login *login;
	int64_t *cpu, *rest, *dl; /* per round: the call, the rest (the store's text; the load) */
	struct lscript_out out;
	size_t memory_peak, memory_libs, after;
	long steps, dlopens;
};

/* One call of login on a fresh copy of the row's store, as round i. */
static int lcost_call_once(struct lcost_row *w, int i)
{
	struct lstore s;
	const char *why;
	char err[200], *back = NULL;
	bool old;
	int64_t t0 = lcost_cpu_ns(), t1, t2, dl0 = lcost_dl_ns;
	long dlopens0 = lcost_dlopens;
	int r;

	if (lstore_read(&s, w->text, w->now_us, &old, &why) != 0)
		return -1;
	s.pid = getpid();
	t1 = lcost_cpu_ns();
	r = lscript_run(&s, "bench:cost", w->login->v, 11, 0, &w->out, err, sizeof(err));
	t2 = lcost_cpu_ns();
	if (r != 0)
		fprintf(stderr, "lstorecost: %s, %d places: %s\n", w->name, w->places, err);
	else if (s.changed && lstore_write(&s, &back) < 0)
		r = -1;
	free(back);
	w->after = s.n;
	lstore_free(&s);
	w->cpu[i] = t2 - t1;
	w->rest[i] = lcost_cpu_ns() - t0 - w->cpu[i];
	w->dl[i] = lcost_dl_ns - dl0;
	w->dlopens += lcost_dlopens - dlopens0;
	if (w->out.memory_peak > w->memory_peak)
		w->memory_peak = w->out.memory_peak;
	w->steps = w->out.steps;
	return r;
}

/* The row's line, over its rounds. */
static void lcost_print(struct lcost_row *w, int rounds)
{
	size_t members = 0, store;

	if (w->kind != LCOST_CALL) {
		printf(
		    "row=%s script_bytes=%zu memory_peak=%zu memory_libs=%zu cpu_ns_median=%" PRId64
		    " cpu_ns_p90=%" PRId64 " load_ns_median=%" PRId64 "\n",
		    w->name, sizeof(RSLOT_SCRIPT) - 1, w->memory_peak, w->memory_libs,
		    lcost_pct(w->cpu, rounds, 50), lcost_pct(w->cpu, rounds, 90),
		    lcost_pct(w->rest, rounds, 50));
		return;
	}
	store = lcost_store_bytes(w->text, w->now_us, &members);
	/* lstore_write's buffer, for the members the call leaves, is sized for the longest. */
	printf("row=%s places=%d members=%zu text_bytes=%zu store_bytes=%zu write_buf_bytes=%zu "
	       "verdict=%lld position=%lld memory_peak=%zu steps=%ld cpu_ns_median=%" PRId64
	       " cpu_ns_p90=%" PRId64 " store_ns_median=%" PRId64
	       " dlopens=%.2f dl_ns_median=%" PRId64 "\n",
	       w->name, w->places, members, strlen(w->text), store,
	       64 + w->after * (LSTORE_MEMBER_MAX + 48), w->out.n > 0 ? w->out.v[0] : -1,
	       w->out.n > 2 ? w->out.v[2] : -1, w->memory_peak, w->steps,
	       lcost_pct(w->cpu, rounds, 50), lcost_pct(w->cpu, rounds, 90),
	       lcost_pct(w->rest, rounds, 50), (double)w->dlopens / rounds,
	       lcost_pct(w->dl, rounds, 50));
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

/* A fresh state with the four libraries (and for LCOST_COMPILE the script compiled in it, for
   LCOST_LOAD its chunk loaded), closed, as round i: the CPU of the whole, and of
   luaL_loadbuffer alone. */
static int lcost_lua_once(struct lcost_row *w, int i)
{
	struct lcost_mem m = { 0 };
	int64_t t0 = lcost_cpu_ns(), t1 = 0, t2 = 0;
	lua_State *L = lua_newstate(lcost_alloc, &m);

	if (L == NULL)
		return -1;
	if (lua_cpcall(L, lcost_libs, NULL) != 0) {
		lua_close(L);
		return -1;
	}
	w->memory_libs = m.now;
	if (w->kind != LCOST_STATE) {
		const bool chunk = w->kind == LCOST_LOAD;

		t1 = lcost_cpu_ns();
		if (luaL_loadbuffer(L, chunk ? RSLOT_CHUNK : RSLOT_SCRIPT,
				    chunk ? sizeof(RSLOT_CHUNK) - 1 : sizeof(RSLOT_SCRIPT) - 1,
				    "=slot.lua") != 0) {
			lua_close(L);
			return -1;
		}
		t2 = lcost_cpu_ns();
	}
	lua_close(L);
	w->cpu[i] = lcost_cpu_ns() - t0;
	w->rest[i] = t2 - t1;
	w->memory_peak = m.peak;
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

/* Adds a row, its arrays for rounds rounds; NULL without memory. */
static struct lcost_row *lcost_add(struct lcost_row *rows, int *n, enum lcost_kind kind,
				   const char *name, int rounds)
{
	struct lcost_row *w = &rows[(*n)++];

	*w = (struct lcost_row){ .kind = kind, .name = name };
	w->cpu = calloc((size_t)rounds, sizeof(*w->cpu));
	w->rest = calloc((size_t)rounds, sizeof(*w->rest));
	w->dl = calloc((size_t)rounds, sizeof(*w->dl));
	return w->cpu != NULL && w->rest != NULL && w->dl != NULL ? w : NULL;
}

int main(int argc, char **argv)
{
	int rounds = argc > 2 ? lcost_number(argv[1], LCOST_ROUNDS_MAX) : -1, n = 0, r = 0;
	struct lcost_login plain, host, peek;
	struct lcost_row rows[3 * LCOST_SIZES_MAX + 2], *w;
	char *texts[LCOST_SIZES_MAX] = { NULL };
	bool mapped = lcost_crypto_mapped();

	if (rounds < 1 || argc - 2 > LCOST_SIZES_MAX) {
		fprintf(stderr, "usage: lstorecost ROUNDS N... (at most %d stores)\n",
			LCOST_SIZES_MAX);
		return 2;
	}
	lcost_login(&plain, "reserve", 1, -1, 0);
	lcost_login(&host, "reserve", 2, LCOST_HOSTS, 3);
	lcost_login(&peek, "peek", 3, -1, 0);
	for (int i = 0; r == 0 && i < argc - 2; i++) {
		int places = lcost_number(argv[i + 2], LSTORE_PLACES_MAX);
		const struct lcost_login *logins[] = { &plain, &host, &peek };
		const char *const names[] = { "plain", "host", "peek" };
		int64_t end_us = 0;

		if (places < 0)
			fprintf(stderr, "lstorecost: not a number of places: %s\n", argv[i + 2]);
		else
			texts[i] = lcost_store(places, fstime_mono_us(), &end_us);
		r = texts[i] == NULL;
		/* The login comes 1 ms after the last place: every lease is still running. */
		for (int k = 0; r == 0 && k < (places == 0 ? 3 : 2); k++) {
			if ((w = lcost_add(rows, &n, LCOST_CALL, names[k], rounds)) == NULL) {
				r = 1;
				break;
			}
			w->places = places;
			w->text = texts[i];
			w->now_us = end_us + 1000;
			w->login = logins[k];
		}
	}
	if (r == 0 && (lcost_add(rows, &n, LCOST_STATE, "state", rounds) == NULL ||
		       lcost_add(rows, &n, LCOST_COMPILE, "compile", rounds) == NULL ||
		       lcost_add(rows, &n, LCOST_LOAD, "load", rounds) == NULL))
		r = 1;
	/* Round by round through every row, so that the machine's load falls on all of them. */
	for (int i = 0; r == 0 && i < rounds; i++) {
		for (int k = 0; r == 0 && k < n; k++)
			r = rows[k].kind == LCOST_CALL ? lcost_call_once(&rows[k], i)
						       : lcost_lua_once(&rows[k], i);
	}
	for (int k = 0; r == 0 && k < n; k++)
		lcost_print(&rows[k], rounds);
	printf("row=libcrypto mapped_before=%d first_dl_ns=%" PRId64 "\n", mapped,
	       lcost_dl_first_ns);
	for (int k = 0; k < n; k++) {
		free(rows[k].cpu);
		free(rows[k].rest);
		free(rows[k].dl);
	}
	for (int i = 0; i < LCOST_SIZES_MAX; i++)
		free(texts[i]);
	return r == 0 ? 0 : 1;
}
