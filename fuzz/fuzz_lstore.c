/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: the per-host store's file, as lstore_read reads it, and slot.lua run on
   what it read. The input is the file; after a NUL come the script's arguments, each ended by
   a NUL (or by the input), ARGV[1] to ARGV[14], those not given a reservation's (argv_default).
   The file is read at a few clocks, and judged again here line by line, by the format's
   rules written out a second way: lstore_read must keep exactly the set they keep, and what
   lstore_write writes must read back as that set, and write as the same bytes. With
   arguments, lscript_run runs on the set read at the script's clock: it answers 0 or -1 with
   a cause, within its caps, and leaves a set that its file reads back as itself. A store at
   or past its caps is made here from a few bytes (fill_store), and a reservation it stops
   must be refused, the store left as it was (check_refused). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>

#include <lua.h>

#include "flowslot/lscript.h"
#include "flowslot/lstore.h"
#include "flowslot/slot.h"
#include "fuzz.h"

#define ARGC 14
#define KEY "flowslot:sshd"
/* On CLOCK_MONOTONIC, microseconds: about 11 days up. */
#define SCRIPT_NOW_US INT64_C(1000000000000)

/* The clocks every file is read at: the script's last. */
static const int64_t clocks[] = { 0, INT64_MAX, SCRIPT_NOW_US };

/* What lslot.c passes (lslot_argv) for a login with the default settings. */
static const char *const argv_default[ARGC] = {
	"reserve",
	"7000000",
	"1",
	"60000000",
	"0",
	"0123456789abcdef0123456789abcdef",
	"0123456789abcdef",
	"fedcba9876543210",
	"0",
	"5000000",
	"7000000",
	"0", /* the file's own schedule: its host hears of nothing else */
	"0",
	"0", /* no floor: only a fallback from Redis sends one */
};

/* slot.lua's own branches, as coverage beside the C code's: lscript_run's lua_sethook (the
   hook of its instruction cap) is wrapped (-Wl,--wrap=lua_sethook, mk/fuzz.mk) to add a line
   hook, which counts each step from one line of the script to the next in counters that
   libFuzzer reads with its own. The cap's hook runs on its count as before. */
__attribute__((used, section("__libfuzzer_extra_counters"))) static uint8_t cov_steps[1 << 14];
static lua_Hook cov_cap_hook;
static int cov_line;

int __real_lua_sethook(lua_State *L, lua_Hook f, int mask, int count);
int __wrap_lua_sethook(lua_State *L, lua_Hook f, int mask, int count);

static void cov_hook(lua_State *L, lua_Debug *ar)
{
	if (ar->event == LUA_HOOKLINE) {
		uint8_t *c = &cov_steps[((unsigned)cov_line * 1021u + (unsigned)ar->currentline) %
					sizeof(cov_steps)];

		*c += *c < UINT8_MAX;
		cov_line = ar->currentline;
	} else if (cov_cap_hook != NULL) {
		cov_cap_hook(L, ar);
	}
}

int __wrap_lua_sethook(lua_State *L, lua_Hook f, int mask, int count)
{
	cov_cap_hook = f;
	cov_line = 0;
	if (f == NULL)
		return __real_lua_sethook(L, NULL, 0, 0);
	return __real_lua_sethook(L, cov_hook, mask | LUA_MASKLINE, count);
}

/* The format's rules, written out again. A number: decimal digits alone, in range. */
static bool ref_digits(const char **at, int64_t max, int64_t *v)
{
	const char *p = *at;
	int64_t x = 0;

	if (*p < '0' || *p > '9')
		return false;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (x > (max - (*p - '0')) / 10)
			return false;
		x = x * 10 + (*p - '0');
	}
	*v = x;
	*at = p;
	return true;
}

/* A member as the rules read it: its name points into the text. */
struct ref_member {
	double score;
	const char *name;
	size_t len;
	pid_t pid;
	uint64_t pidns;
};

/* "SCORE MEMBER PID\n" or "SCORE MEMBER PID NS\n" (NS not 0), the score a finite number as
   strtod reads it (blanks before it included), within the line [p, end); its fields in *m
   (name pointing into the line). A score that underflows (to a subnormal or 0) is one the
   rules leave open: *vague is set. */
static bool ref_line(const char *p, const char *end, struct ref_member *m, bool *vague)
{
	const char *name, *at;
	char *e;
	int64_t pid, ns;

	if (p == end)
		return false;
	errno = 0;
	m->score = strtod(p, &e);
	if (e == p || e >= end || *e != ' ' || !isfinite(m->score) ||
	    (errno != 0 && errno != ERANGE))
		return false;
	*vague = *vague || errno == ERANGE || fpclassify(m->score) == FP_SUBNORMAL;
	name = e + 1;
	for (at = name; at < end && *at != ' '; at++)
		;
	m->name = name;
	m->len = (size_t)(at - name);
	if (!fuzz_member_ok(name, m->len) || at == end)
		return false;
	at++;
	if (!ref_digits(&at, INT_MAX, &pid))
		return false;
	m->pid = (pid_t)pid;
	m->pidns = 0;
	if (at < end && *at == ' ') {
		at++;
		if (!ref_digits(&at, INT64_MAX, &ns) || ns == 0)
			return false;
		m->pidns = (uint64_t)ns;
	}
	if (at != end)
		return false;
	return true;
}

/* A file of this format: whether it is one, and its set (n members, pointing into text) as
   read at now_us; *vague when a score makes that open (ref_line). ref must have room for
   LSTORE_MEMBERS_MAX + 1. */
static bool ref_read_set(const char *text, int64_t now_us, struct ref_member *ref, size_t *n,
			 int64_t *expires_us, bool *vague)
{
	const char *at = text + strlen(LSTORE_MAGIC), *end;

	char boot[LSTORE_BOOT_MAX + 1];
	const char *name;

	*n = 0;
	if (*at++ != ' ' || !ref_digits(&at, INT64_MAX, expires_us))
		return false;
	/* A boot named: another than this one makes the file empty. */
	lstore_boot(boot);
	if (*at == ' ') {
		for (name = ++at; *at > ' ' && *at <= '~'; at++)
			;
		if (at == name || at - name > LSTORE_BOOT_MAX || *at != '\n')
			return false;
		if (boot[0] != '\0' && ((size_t)(at - name) != strlen(boot) ||
					memcmp(name, boot, strlen(boot)) != 0)) {
			*expires_us = 0;
			return true;
		}
	}
	if (*at != '\n')
		return false;
	for (at++; *at != '\0'; at = end + 1) {
		if ((end = strchr(at, '\n')) == NULL || *n == LSTORE_MEMBERS_MAX ||
		    !ref_line(at, end, &ref[*n], vague) ||
		    (*n > 0 && fuzz_member_cmp(ref[*n - 1].score, ref[*n - 1].name, ref[*n - 1].len,
					       ref[*n].score, ref[*n].name, ref[*n].len) >= 0))
			return false;
		(*n)++;
	}
	if (*expires_us != 0 && now_us >= *expires_us)
		*n = 0;
	if (*n == 0)
		*expires_us = 0;
	return true;
}

/* A member that stands twice is kept once, where it scores highest (later in the set's
   order): read from the end, a name already seen goes. Seen names are hashed, not sorted as
   lstore.c does, and in linear time, for files at the cap (fill_store). Returns whether any
   went. */
static bool ref_dedupe(struct ref_member *ref, size_t *n)
{
	static size_t seen[1 << 15]; /* indexes into ref, + 1; 0 for a free slot */
	size_t kept = *n, mask = 15;

	while (mask < 2 * *n)
		mask = 2 * mask + 1;
	FUZZ_CHECK(mask < sizeof(seen) / sizeof(seen[0]));
	memset(seen, 0, (mask + 1) * sizeof(seen[0]));
	for (size_t i = *n; i-- > 0;) {
		uint32_t h = 2166136261u;
		size_t at;

		for (size_t k = 0; k < ref[i].len; k++)
			h = (h ^ (uint8_t)ref[i].name[k]) * 16777619u;
		for (at = h & mask; seen[at] != 0; at = (at + 1) & mask) {
			const struct ref_member *o = &ref[seen[at] - 1];

			if (o->len == ref[i].len && memcmp(o->name, ref[i].name, o->len) == 0)
				break;
		}
		if (seen[at] != 0) {
			ref[i].name = NULL;
			kept--;
		} else {
			seen[at] = i + 1;
		}
	}
	if (kept == *n)
		return false;
	kept = 0;
	for (size_t i = 0; i < *n; i++) {
		if (ref[i].name != NULL)
			ref[kept++] = ref[i];
	}
	*n = kept;
	return true;
}

/* An earlier version's head, "TAT AT INTERVAL BURST" (its first fields, single spaces apart):
   kept while TAT is ahead, as member "s:..." at score 0, the key expiring at TAT. */
static size_t ref_read_old(const char *text, int64_t now_us, char *head, size_t headsz,
			   int64_t *expires_us)
{
	int64_t v[4] = { 0 };
	const char *at = text;
	int got = 0;

	while (got < 4 && ref_digits(&at, INT64_MAX, &v[got]) &&
	       (*at == ' ' || *at == '\n' || *at == '\0')) {
		got++;
		if (*at == ' ')
			at++;
	}
	if (got < 2)
		v[1] = now_us;
	*expires_us = 0;
	if (got == 0 || v[0] <= now_us || v[1] <= 0 || v[0] < v[1] ||
	    v[0] - v[1] > SLOT_HORIZON_MAX_US)
		return 0;
	*expires_us = v[0];
	if (got == 4 && v[2] > 0 && v[3] > 0)
		return (size_t)snprintf(
		    head, headsz, "s:%" PRId64 ":%" PRId64 ":0:%" PRId64 ":%" PRId64 ":%" PRId64,
		    v[0], v[1], v[2], v[3], v[1]);
	return (size_t)snprintf(head, headsz, "s:%" PRId64 ":%" PRId64, v[0], v[1]);
}

static void check_same(const struct lstore *s, const struct ref_member *ref, size_t n,
		       int64_t expires_us)
{
	FUZZ_CHECK(s->n == n && s->expires_us == expires_us);
	for (size_t i = 0; i < n; i++)
		FUZZ_CHECK(
		    fuzz_same_member(&s->m[i], ref[i].score, ref[i].name, ref[i].len, ref[i].pid,
				     ref[i].pidns));
}

/* Reads text at now_us into s, as the rules say it must. */
static void read_checked(struct lstore *s, const char *text, int64_t now_us, struct ref_member *ref)
{
	const char *why = NULL;
	bool old = false, ok, vague = false, mended = false;
	int64_t expires_us = 0;
	size_t n = 0;
	char head[128];
	int r;

	r = lstore_read(s, text, now_us, &old, &why);
	FUZZ_CHECK(r == 0 || r == -1 || r == -2);
	FUZZ_CHECK(s->now_us == now_us);
	fuzz_check_store(s, now_us);
	if (text[0] == '\0') {
		ok = true;
		FUZZ_CHECK(!old);
	} else if (strncmp(text, LSTORE_MAGIC, strlen(LSTORE_MAGIC)) == 0) {
		ok = ref_read_set(text, now_us, ref, &n, &expires_us, &vague);
		mended = ok && ref_dedupe(ref, &n);
		FUZZ_CHECK(!old);
	} else {
		size_t len = ref_read_old(text, now_us, head, sizeof(head), &expires_us);

		ok = true;
		FUZZ_CHECK(old && s->changed);
		if (len > 0) {
			ref[0] = (struct ref_member){ .name = head, .len = len };
			n = 1;
		}
	}
	/* Underflow may be refused or read; what is read must still read back as itself. */
	FUZZ_CHECK((r == 0) == ok || vague);
	if (r != 0)
		FUZZ_CHECK(why != NULL && why[0] != '\0' && s->n == 0);
	else
		check_same(s, ref, n, expires_us);
	/* Written back: an older version's file, and a key read expired (emptied, as Redis
	   deletes one it finds expired). */
	FUZZ_CHECK(s->changed == (old || (r == 0 && mended)) || (r == 0 && s->n == 0));
	fuzz_check_store_file(s, now_us);
}

/* ARGV from what follows the file's NUL: up to ARGC strings, each ended by a NUL. */
static void split_args(const uint8_t *p, const uint8_t *end, char *buf, const char **argv)
{
	int n = 0;

	memcpy(argv, argv_default, sizeof(argv_default));
	if (p < end)
		memcpy(buf, p, (size_t)(end - p));
	buf[end - p] = '\0';
	for (char *at = buf; n < ARGC && at < buf + (end - p); at += strlen(at) + 1)
		argv[n++] = at;
}

/* What lscript.c's ZADD answers when the set would grow past LSTORE_MEMBERS_MAX. */
#define FULL_REPLY "pam_flowslot store: full"

/* A run that a store too full (FULL) or too heavy (HEAVY) stopped: no answer, which no caller
   can read as an admission; FULL only with the set at its cap, and an error saying full always
   with FULL (lslot.c takes any other error for a store written by hand: it would start afresh
   and let the login in). The caller writes nothing on such a fault (lslot_full), so the set
   after it is the file before it, before: read again, it is the same set, and the same call
   on it is stopped the same way. */
static void check_refused(const char *before, const struct lstore *s, const char *const *argv,
			  int r, const struct lscript_out *out, const char *err)
{
	struct lscript_out again;
	char err2[200];
	const char *why = NULL;
	struct lstore t;
	bool old = false;
	char *text = NULL;

	if (r == -1 && out->fault == LSCRIPT_FAULT_NONE)
		FUZZ_CHECK(strstr(err, FULL_REPLY) == NULL);
	if (out->fault != LSCRIPT_FAULT_FULL && out->fault != LSCRIPT_FAULT_HEAVY)
		return;
	FUZZ_CHECK(r == -1 && out->n == 0 && err[0] != '\0');
	FUZZ_CHECK(out->fault != LSCRIPT_FAULT_FULL ||
		   (s->n == LSTORE_MEMBERS_MAX && strstr(err, FULL_REPLY) != NULL));
	if (strcmp(argv[0], "reserve") != 0)
		return;
	FUZZ_CHECK(lstore_read(&t, before, s->now_us, &old, &why) == 0 && !old);
	FUZZ_CHECK(lstore_write(&t, &text) >= 0 && strcmp(text, before) == 0);
	t.pid = s->pid;
	FUZZ_CHECK(lscript_run(&t, KEY, argv, ARGC, 0, &again, err2, sizeof(err2)) == -1);
	FUZZ_CHECK(again.fault == out->fault && again.n == 0);
	free(text);
	lstore_free(&t);
}

/* Whether s holds member prefix + place + suffix. */
static bool holds(const struct lstore *s, const char *prefix, const char *place, const char *suffix)
{
	char name[LSTORE_MEMBER_MAX + 1];
	int len = snprintf(name, sizeof(name), "%s%s%s", prefix, place, suffix);

	return len > 0 && (size_t)len < sizeof(name) && lstore_find(s, name, (size_t)len) >= 0;
}

/* A reservation answered holds what it says: queued (2), its place and lease; admitted (1), a
   schedule's head, or no key at all. A store that took less than the script asked of it (a
   cap met without a fault) answers as if it had room. */
static void check_answer(const struct lstore *s, const char *const *argv, int r,
			 const struct lscript_out *out)
{
	char place[LSTORE_MEMBER_MAX + 1];
	size_t head = lstore_lower(s, 0, false);

	if (r != 0 || out->n == 0 || strcmp(argv[0], "reserve") != 0)
		return;
	snprintf(place, sizeof(place), "%s:%s:%s", argv[5], argv[6][0] != '\0' ? argv[6] : "-",
		 argv[7][0] != '\0' ? argv[7] : "-");
	if (out->v[0] == 2)
		FUZZ_CHECK((holds(s, "w:", place, "") || holds(s, "w:", place, ":t")) &&
			   holds(s, "l:", place, ""));
	if (out->v[0] == 1)
		FUZZ_CHECK(s->n == 0 || (head < s->n && s->m[head].score == 0 &&
					 strncmp(s->m[head].name, "s:", 2) == 0));
}

/* slot.lua on s: an answer or a cause, within the caps, and a set its file can hold. Returns
   what lscript_run did. */
static int run_script(struct lstore *s, const char *const *argv)
{
	struct lscript_out out;
	char err[200], *before = NULL;
	int r;

	memset(err, 'x', sizeof(err));
	s->pid = getpid();
	FUZZ_CHECK(lstore_write(s, &before) >= 0);
	r = lscript_run(s, KEY, argv, ARGC, 0, &out, err, sizeof(err));
	FUZZ_CHECK(r == 0 || r == -1);
	FUZZ_CHECK(out.memory_peak <= LSCRIPT_MEMORY_MAX);
	/* The cap is checked every 1,000 instructions (lscript.c's LSCRIPT_HOOK_EVERY). */
	FUZZ_CHECK(out.steps <= LSCRIPT_STEPS_MAX + 1000);
	if (r == 0) {
		FUZZ_CHECK(out.n <= LSCRIPT_OUT_MAX);
	} else {
		FUZZ_CHECK(fuzz_terminated(err, sizeof(err)) && err[0] != '\0');
	}
	fuzz_check_store(s, s->now_us);
	check_refused(before, s, argv, r, &out, err);
	check_answer(s, argv, r, &out);
	free(before);
	/* lslot.c writes the set after an answer, and reads it again at the next call. */
	if (r == 0)
		fuzz_check_store_file(s, s->now_us);
	return r;
}

static struct ref_member *ref_members;

/* An input that starts with FILL_MARK, then KIND and SHORT (a byte each), is a file filled
   here up to LSTORE_MEMBERS_MAX + 1 - SHORT members: at its cap for 1, past it for 0. The
   members of the file that follows are kept, and fillers added among them in the set's order:
   for an even KIND, places (a "w:" place and its "l:" lease, an hour old and an hour long, as
   tests/suites/faults.sh's fill_store makes them) with an index for an odd count; for an odd KIND,
   indexes alone, in a band the script never reads. Such a file is over 700 kB: too big for a
   seed, and for libFuzzer's mutations. */
#define FILL_MARK 0xfe
#define FILL_LINE_MAX 64

/* Filler i of n, in the set's order: its score and name. */
static void fill_member(unsigned kind, size_t i, size_t n, double *score, char *name)
{
	size_t indexes = kind % 2 != 0 ? n : n % 2, pairs = (n - indexes) / 2;

	if (i < indexes) {
		*score = -(4e15 + (double)(n - i));
		snprintf(name, FILL_LINE_MAX, "i:f%05zx:-", i);
	} else if (i < indexes + pairs) {
		i -= indexes;
		*score = (double)(SCRIPT_NOW_US - INT64_C(3600000000) + (int64_t)i);
		snprintf(name, FILL_LINE_MAX, "w:f%05zx:-:-", i);
	} else {
		i -= indexes + pairs;
		*score = 1e16 + (double)(SCRIPT_NOW_US + INT64_C(3600000000) + 2 * (int64_t)i);
		snprintf(name, FILL_LINE_MAX, "l:f%05zx:-:-", i);
	}
}

/* Whether the given member line at p goes before filler (score, name): a line that is no
   member line goes first, to be refused where it stands. */
static bool fill_before(const char *p, double score, const char *name)
{
	char *e;
	double ps = strtod(p, &e);
	size_t len = strcspn(e + (*e == ' '), " \n");

	if (e == p || *e != ' ')
		return true;
	return fuzz_member_cmp(ps, e + 1, len, score, name, strlen(name)) < 0;
}

/* The file text filled up to members (FILL_MARK): its first line, or a store's that never
   expires, then its lines and the fillers merged. To free. */
static char *fill_store(const char *text, unsigned kind, size_t members)
{
	const char *at = text, *head = LSTORE_MAGIC " 0\n", *nl;
	size_t given = 0, n, len, head_len = strlen(head);
	char name[FILL_LINE_MAX], *out, *o;
	double score;

	if (strncmp(text, LSTORE_MAGIC, strlen(LSTORE_MAGIC)) == 0) {
		nl = strchr(text, '\n');
		at = nl != NULL ? nl + 1 : text + strlen(text);
		head = text;
		head_len = (size_t)(at - text);
	}
	for (const char *p = at; *p != '\0'; p = *nl != '\0' ? nl + 1 : nl, given++)
		nl = p + strcspn(p, "\n");
	n = members > given ? members - given : 0;
	out = malloc(head_len + strlen(at) + n * FILL_LINE_MAX + 2);
	FUZZ_CHECK(out != NULL);
	memcpy(out, head, head_len);
	o = out + head_len;
	for (size_t i = 0; i < n; i++) {
		fill_member(kind, i, n, &score, name);
		for (; *at != '\0' && fill_before(at, score, name); at += len) {
			len = strcspn(at, "\n");
			len += at[len] == '\n';
			memcpy(o, at, len);
			o += len;
		}
		o += sprintf(o, "%.17g %s 1\n", score, name);
	}
	strcpy(o, at);
	return out;
}

/* A filled file (FILL_MARK), read and run on at the script's clock alone. */
static void run_filled(const uint8_t *data, size_t size, char *args)
{
	size_t members = LSTORE_MEMBERS_MAX + 1 - data[2];
	const uint8_t *nul = memchr(data + 3, '\0', size - 3);
	char *given = fuzz_cstr(data + 3, size - 3), *text = fill_store(given, data[1], members);
	const char *argv[ARGC];
	struct lstore s;

	read_checked(&s, text, SCRIPT_NOW_US, ref_members);
	split_args(nul != NULL ? nul + 1 : data + size, data + size, args, argv);
	run_script(&s, argv);
	lstore_free(&s);
	free(text);
	free(given);
}

/* The caps, on files too long for the fuzzer's inputs: LSTORE_MEMBERS_MAX members are a
   store, one more is not. The script on a full store of indexes (no place among them), that
   admits the login and so writes the head, fails, and keeps the store within the cap. */
static void check_caps(void)
{
	size_t cap = 64 + (LSTORE_MEMBERS_MAX + 1) * 40, len;
	char *text = malloc(cap);
	const char *argv[ARGC];
	struct lstore s;
	int64_t now_us = SCRIPT_NOW_US;

	FUZZ_CHECK(text != NULL);
	len = (size_t)snprintf(text, cap, "%s 0\n", LSTORE_MAGIC);
	memcpy(argv, argv_default, sizeof(argv));
	for (size_t i = 0; i < LSTORE_MEMBERS_MAX; i++)
		len += (size_t)snprintf(text + len, cap - len, "-%zu i:%zx 1\n",
					LSTORE_MEMBERS_MAX - i, i);
	read_checked(&s, text, now_us, ref_members);
	FUZZ_CHECK(s.n == LSTORE_MEMBERS_MAX);
	FUZZ_CHECK(run_script(&s, argv) == -1 && s.n == LSTORE_MEMBERS_MAX);
	lstore_free(&s);
	snprintf(text + len, cap - len, "0 x 1\n");
	read_checked(&s, text, now_us, ref_members);
	FUZZ_CHECK(s.n == 0);
	lstore_free(&s);
	free(text);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fuzz_silence_stderr();
	ref_members = calloc(LSTORE_MEMBERS_MAX + 1, sizeof(*ref_members));
	if (ref_members == NULL)
		abort();
	check_caps();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, '\0', size);
	char *text = fuzz_cstr(data, size), *args = malloc(size + 1);
	const char *argv[ARGC];
	struct lstore s;

	if (args == NULL)
		abort();
	if (size >= 3 && data[0] == FILL_MARK) {
		run_filled(data, size, args);
		free(args);
		free(text);
		return 0;
	}
	for (size_t i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++) {
		read_checked(&s, text, clocks[i], ref_members);
		if (clocks[i] == SCRIPT_NOW_US && nul != NULL) {
			split_args(nul + 1, data + size, args, argv);
			run_script(&s, argv);
		}
		lstore_free(&s);
	}
	free(args);
	free(text);
	return 0;
}
