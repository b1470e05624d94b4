/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for src/lslot.c: the file-backed schedule, in a private temporary directory. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/file.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "flowslot/fstime.h"
#include "flowslot/lframe.h"
#include "flowslot/lslot.h"
#include "flowslot/lstore.h"
#include "lockers.h"
#include "slot_lua.h"

#define S INT64_C(1000000)
#define MS INT64_C(1000)
#define SLACK (50 * MS)
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

struct fixture {
	char root[64];        /* the mkdtemp directory */
	char state[128];      /* root/state: the state_dir under test */
	char msg[4096];       /* what the last call() logged */
	unsigned places;      /* places made so far, to make each one unique */
	struct slot_place place; /* the last reserve()'s */
	pid_t holder;		 /* a stopped lock holder, killed at teardown if a test failed first */
	pid_t held[24];		 /* more of them, as holder */
};

static int fixture_setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (fx == NULL)
		return -1;
	strcpy(fx->root, "/tmp/test_lslot.XXXXXX");
	if (mkdtemp(fx->root) == NULL) {
		free(fx);
		return -1;
	}
	snprintf(fx->state, sizeof(fx->state), "%s/state", fx->root);
	*state = fx;
	return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static int fixture_teardown(void **state)
{
	struct fixture *fx = *state;
	int rc, status;

	if (fx->holder > 0) {
		kill(fx->holder, SIGKILL);
		waitpid(fx->holder, &status, 0);
	}
	for (size_t i = 0; i < sizeof(fx->held) / sizeof(fx->held[0]); i++) {
		if (fx->held[i] > 0) {
			kill(fx->held[i], SIGKILL);
			waitpid(fx->held[i], &status, 0);
		}
	}
	rc = nftw(fx->root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(fx);
	return rc;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] != '.')
			n++;
	}
	closedir(d);
	return n;
}

/* A fresh place, unique to this process and call, held by this process. */
static void new_place(struct fixture *fx, struct slot_place *pl)
{
	unsigned n = ++fx->places;

	snprintf(pl->id, sizeof(pl->id), "%016x%016x", (unsigned)getpid(), n);
	snprintf(pl->who, sizeof(pl->who), "%08x%08x", (unsigned)getpid(), n);
	pl->host[0] = '\0';
}

/* lslot_call c on fx->state, with what it logs kept in fx->msg, and no fd left open. */
static enum slot_verdict call_as(struct fixture *fx, const struct lslot_call *given,
				 struct slot_result *res)
{
	struct lslot_call c = *given;
	FILE *tmp = tmpfile();
	enum slot_verdict v;
	int saved, before, after;
	size_t n;

	assert_non_null(tmp);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	assert_true(saved >= 0);
	assert_true(dup2(fileno(tmp), STDERR_FILENO) >= 0);
	c.dir = fx->state;
	before = count_fds();
	v = lslot_call(NULL, &c, res);
	after = count_fds();
	fflush(stderr);
	assert_true(dup2(saved, STDERR_FILENO) >= 0);
	close(saved);
	rewind(tmp);
	n = fread(fx->msg, 1, sizeof(fx->msg) - 1, tmp);
	fx->msg[n] = '\0';
	fclose(tmp);
	if (after != before)
		fail_msg("%d fds open before lslot_call, %d after", before, after);
	if (v == SLOT_UNAVAILABLE && strstr(fx->msg, "local slot") == NULL)
		fail_msg("unavailable, with no reason logged");
	if (v != SLOT_UNAVAILABLE && v != res->verdict)
		fail_msg("returned %d, res says %d", (int)v, (int)res->verdict);
	return v;
}

static enum slot_verdict call(struct fixture *fx, const char *key, const struct slot_params *p,
			      enum slot_op op, const struct slot_place *pl,
			      struct slot_result *res)
{
	const struct lslot_call c = { .key = key, .p = p, .op = op, .place = pl };

	return call_as(fx, &c, res);
}

/* A renewal of pl, over by until_us. */
static enum slot_verdict call_until(struct fixture *fx, const char *key,
				    const struct slot_params *p, const struct slot_place *pl,
				    int64_t until_us, struct slot_result *res)
{
	const struct lslot_call c = { .key = key, .p = p, .op = SLOT_RENEW, .place = pl,
				      .until_us = until_us };

	return call_as(fx, &c, res);
}

/* Reserves with a fresh place, kept in fx->place for a renewal or a leave. */
static enum slot_verdict reserve(struct fixture *fx, const char *key, const struct slot_params *p,
				 struct slot_result *res)
{
	new_place(fx, &fx->place);
	return call(fx, key, p, SLOT_RESERVE, &fx->place, res);
}

static void slot_path(const struct fixture *fx, const char *key, char *out, size_t outsz)
{
	char name[NAME_MAX + 1];

	lslot_file_name(key, name, sizeof(name));
	if ((size_t)snprintf(out, outsz, "%s/%s", fx->state, name) >= outsz)
		fail_msg("path too long");
}

/* The file's text into buf (NUL-terminated), through its frame (src/lframe.c) where it has
   one; returns its length, or -1. */
static ssize_t read_file(const char *path, char *buf, size_t bufsz)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW);
	struct lframe where;
	const char *why;
	char *text;
	size_t n;

	if (fd < 0)
		return -1;
	if (lframe_read(fd, (size_t)1 << 24, &text, &where, &why) != 0) {
		close(fd);
		return -1;
	}
	close(fd);
	n = strlen(text) < bufsz - 1 ? strlen(text) : bufsz - 1;
	memcpy(buf, text, n);
	buf[n] = '\0';
	free(text);
	return (ssize_t)n;
}

static void write_file(const char *path, const char *content, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

/* The tat of a schedule file: its head member "s:TAT:AT:...", at score 0, checking that AT is
   no later than TAT. The other members are the queue's (src/slot.lua's header). */
static int64_t read_tat(const char *path)
{
	char buf[65536], *head, *end;
	long long v, at;

	assert_true(read_file(path, buf, sizeof(buf)) > 0);
	if (strncmp(buf, "flowslot-store 1 ", 17) != 0 || (head = strstr(buf, "\n0 s:")) == NULL)
		fail_msg("%s holds \"%s\"", path, buf);
	errno = 0;
	v = strtoll(head + 5, &end, 10);
	if (errno != 0 || *end != ':')
		fail_msg("%s holds \"%s\"", path, buf);
	at = strtoll(end + 1, &end, 10);
	if (at > v)
		fail_msg("%s holds \"%s\"", path, buf);
	return v;
}

/* 1 for a bare schedule, 1 + its places and ghosts (members "w:" and "g:"). */
static int count_lines(const char *path)
{
	char buf[65536];
	int n = 1;

	assert_true(read_file(path, buf, sizeof(buf)) > 0);
	for (const char *c = strchr(buf, '\n'); c != NULL; c = strchr(c + 1, '\n')) {
		const char *m = strchr(c + 1, ' ');

		if (m != NULL && (strncmp(m, " w:", 3) == 0 || strncmp(m, " g:", 3) == 0))
			n++;
	}
	return n;
}

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			n++;
	}
	closedir(d);
	return n;
}

static void make_state_dir(const struct fixture *fx, mode_t mode)
{
	assert_int_equal(mkdir(fx->state, 0700), 0);
	assert_int_equal(chmod(fx->state, mode), 0);
}

static void test_admit_then_wait(void **state)
{
	struct fixture *fx = *state;
	const struct slot_params p = { .interval_us = 5 * S, .max_wait_us = 60 * S, .burst = 1 };
	struct slot_result res;
	char path[PATH_MAX];
	struct stat st;
	int64_t t0, t1, tat;

	slot_path(fx, "sshd", path, sizeof(path));
	assert_int_equal(lstat(fx->state, &st), -1);

	t0 = fstime_mono_us();
	assert_int_equal(reserve(fx, "sshd", &p, &res), SLOT_ADMIT);
	t1 = fstime_mono_us();
	assert_int_equal(res.verdict, SLOT_ADMIT);
	assert_int_equal(res.wait_us, 0);
	assert_int_equal(res.position, 1);
	assert_true(res.deadline_us >= t0 && res.deadline_us <= t1);

	/* The directory, made 0700; the file, 0600, under lslot_file_name's name. */
	assert_int_equal(lstat(fx->state, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_nlink, 1);
	assert_int_equal(count_entries(fx->state), 1);
	tat = read_tat(path);
	assert_true(tat >= t0 + p.interval_us && tat <= t1 + p.interval_us);

	/* Right after: about an interval to wait, longer than SLOT_COMMIT_US: a place is held in
	   the file, and the schedule stays as it was. */
	t0 = fstime_mono_us();
	assert_int_equal(reserve(fx, "sshd", &p, &res), SLOT_QUEUED);
	t1 = fstime_mono_us();
	if (res.wait_us > p.interval_us || res.wait_us < p.interval_us - SLACK)
		fail_msg("second wait %lld us", (long long)res.wait_us);
	assert_int_equal(res.position, 1);
	assert_int_equal(res.deadline_us, tat);
	assert_true(res.deadline_us - res.wait_us >= t0 && res.deadline_us - res.wait_us <= t1);
	assert_int_equal(read_tat(path), tat);
	assert_int_equal(count_lines(path), 2);

	/* A third is behind it: a place too, an interval later. */
	assert_int_equal(reserve(fx, "sshd", &p, &res), SLOT_QUEUED);
	assert_int_equal(res.deadline_us, tat + p.interval_us);
	assert_int_equal(res.position, 2);
	assert_int_equal(count_lines(path), 3);

	/* Another key is another schedule. */
	assert_int_equal(reserve(fx, "login", &p, &res), SLOT_ADMIT);
	assert_int_equal(res.wait_us, 0);
	assert_int_equal(count_entries(fx->state), 2);
}

static void test_burst(void **state)
{
	struct fixture *fx = *state;
	const struct slot_params p = { .interval_us = 10 * S, .max_wait_us = 60 * S, .burst = 3 };
	struct slot_result res;

	for (int i = 0; i < 3; i++) {
		assert_int_equal(reserve(fx, "b", &p, &res), SLOT_ADMIT);
		assert_int_equal(res.wait_us, 0);
	}
	assert_int_equal(reserve(fx, "b", &p, &res), SLOT_QUEUED);
	assert_true(res.wait_us > p.interval_us - SLACK && res.wait_us <= p.interval_us);
}

static void test_refusal_keeps_file(void **state)
{
	struct fixture *fx = *state;
	const struct slot_params p = { .interval_us = 10 * S, .max_wait_us = 1 * S, .burst = 1 };
	struct slot_result res;
	char path[PATH_MAX], before[64], after[64];
	struct stat st1, st2;

	slot_path(fx, "k", path, sizeof(path));
	assert_int_equal(reserve(fx, "k", &p, &res), SLOT_ADMIT);
	assert_true(read_file(path, before, sizeof(before)) > 0);
	assert_int_equal(stat(path, &st1), 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(reserve(fx, "k", &p, &res), SLOT_REFUSE);
		assert_int_equal(res.verdict, SLOT_REFUSE);
		assert_true(res.wait_us > p.interval_us - SLACK && res.wait_us <= p.interval_us);
		assert_true(res.wait_us > p.max_wait_us);
		assert_true(read_file(path, after, sizeof(after)) > 0);
		assert_string_equal(after, before);
	}
	assert_int_equal(stat(path, &st2), 0);
	assert_int_equal(st2.st_size, st1.st_size);
	assert_int_equal(st2.st_ino, st1.st_ino);
}

static void test_state_dir_symlink(void **state)
{
	struct fixture *fx = *state;
	const struct slot_params p = { .interval_us = 1 * S, .max_wait_us = 60 * S, .burst = 1 };
	struct slot_result res;
	char real[PATH_MAX];

	snprintf(real, sizeof(real), "%s/real", fx->root);
	assert_int_equal(mkdir(real, 0700), 0);
	assert_int_equal(symlink(real, fx->state), 0);
	assert_int_equal(reserve(fx, "k", &p, &res), SLOT_UNAVAILABLE);
	assert_int_equal(count_entries(real), 0);
}

static void test_state_dir_modes(void **state)
{
	static const mode_t bad[] = { 0777, 0770, 0720, 0702, 01777 };
	struct fixture *fx = *state;
	const struct slot_params p = { .interval_us = 1 * S, .max_wait_us = 60 * S, .burst = 1 };
	struct slot_result res;

	make_state_dir(fx, 0700);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		assert_int_equal(chmod(fx->state, bad[i]), 0);
		if (reserve(fx, "k", &p, &res) != SLOT_UNAVAILABLE)
			fail_msg("state_dir mode %04o accepted", (unsigned)bad[i]);
		assert_int_equal(count_entries(fx->state), 0);
	}
	/* Readable by others is fine. */
	assert_int_equal(chmod(fx->state, 0755), 0);
	assert_int_equal(reserve(fx, "k", &p, &res), SLOT_ADMIT);
}

static void test_state_dir_not_dir(void **state)
{
	struct fixture *fx = *state;
	const struct slot_params p = { .interval_us = 1 * S, .max_wait_us = 60 * S, .burst = 1 };
	struct slot_result res;
	char path[PATH_MAX];
	struct stat st;

	write_file(fx->state, "", 0600);
	assert_int_equal(reserve(fx, "k", &p, &res), SLOT_UNAVAILABLE);

	/* A missing parent is not created. */
	snprintf(fx->state, sizeof(fx->state), "%s/missing/state", fx->root);
	assert_int_equal(reserve(fx, "k", &p, &res), SLOT_UNAVAILABLE);
	snprintf(path, sizeof(path), "%s/missing", fx->root);
	assert_int_equal(lstat(path, &st), -1);
}

static void test_foreign_owner(void **state)
{
	struct fixture *fx = *state;
	const struct slot_params p = { .interval_us = 1 * S, .max_wait_us = 60 * S, .burst = 1 };
	struct slot_result res;
	char path[PATH_MAX], buf[64];

	if (geteuid() != 0)
		skip(); /* needs to give a file away */
	make_state_dir(fx, 0700);
	assert_int_equal(chown(fx->state, 65534, 65534), 0);
	assert_int_equal(reserve(fx, "k", &p, &res), SLOT_UNAVAILABLE);
	assert_int_equal(count_entries(fx->state), 0);

	assert_int_equal(chown(fx->state, 0, 0), 0);
	slot_path(fx, "k", path, sizeof(path));
	write_file(path, "7\n", 0600);
	assert_int_equal(chown(path, 65534, 65534), 0);
	assert_int_equal(reserve(fx, "k", &p, &res), SLOT_UNAVAILABLE);
	assert_true(read_file(path, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "7\n");
}

static void test_slot_file_symlink(void **state)
{
	struct fixture *fx = *state;
	const struct slot_params p = { .interval_us = 1 * S, .max_wait_us = 60 * S, .burst = 1 };
	struct slot_result res;
	char path[PATH_MAX], target[PATH_MAX], buf[64];
	struct stat st;

	make_state_dir(fx, 0700);

	/* To a file of ours that the module could write: not followed. */
	snprintf(target, sizeof(target), "%s/target", fx->root);
	write_file(target, "12345\n", 0600);
	slot_path(fx, "k", path, sizeof(path));
	assert_int_equal(symlink(target, path), 0);
	assert_int_equal(reserve(fx, "k", &p, &res), SLOT_UNAVAILABLE);
	assert_true(read_file(target, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "12345\n");
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISLNK(st.st_mode));

	/* Dangling: nothing is created at its target. */
	snprintf(target, sizeof(target), "%s/created", fx->root);
	slot_path(fx, "k2", path, sizeof(path));
	assert_int_equal(symlink(target, path), 0);
	assert_int_equal(reserve(fx, "k2", &p, &res), SLOT_UNAVAILABLE);
	assert_int_equal(lstat(target, &st), -1);
	assert_int_equal(errno, ENOENT);
}

static void test_slot_file_unsafe(void **state)
{
	struct fixture *fx = *state;
	const struct slot_params p = { .interval_us = 1 * S, .max_wait_us = 60 * S, .burst = 1 };
	struct slot_result res;
	char path[PATH_MAX], other[PATH_MAX], before[64], after[64];

	/* A second link: someone else could be holding the same inode under another name. */
	assert_int_equal(reserve(fx, "k", &p, &res), SLOT_ADMIT);
	slot_path(fx, "k", path, sizeof(path));
	snprintf(other, sizeof(other), "%s/other", fx->root);
	assert_int_equal(link(path, other), 0);
	assert_true(read_file(path, before, sizeof(before)) > 0);
	assert_int_equal(reserve(fx, "k", &p, &res), SLOT_UNAVAILABLE);
	assert_true(read_file(path, after, sizeof(after)) > 0);
	assert_string_equal(after, before);
	assert_int_equal(unlink(other), 0);
	assert_int_equal(reserve(fx, "k", &p, &res), SLOT_ADMIT);

	/* Readable or writable by others. */
	assert_int_equal(chmod(path, 0644), 0);
	assert_true(read_file(path, before, sizeof(before)) > 0);
	assert_int_equal(reserve(fx, "k", &p, &res), SLOT_UNAVAILABLE);
	assert_true(read_file(path, after, sizeof(after)) > 0);
	assert_string_equal(after, before);
	assert_int_equal(chmod(path, 0606), 0);
	assert_int_equal(reserve(fx, "k", &p, &res), SLOT_UNAVAILABLE);

	/* Not a regular file. */
	slot_path(fx, "dir", path, sizeof(path));
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(reserve(fx, "dir", &p, &res), SLOT_UNAVAILABLE);
	slot_path(fx, "fifo", path, sizeof(path));
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(reserve(fx, "fifo", &p, &res), SLOT_UNAVAILABLE);
}

static void test_garbage_is_empty(void **state)
{
	static const char *const contents[] = {
		"",
		"garbage",
		"garbage\n",
		"\n",
		"-5\n",
		"12x\n",
		"1.5\n",
		"99999999999999999999999\n",
		"12345678901234567890123456789012345678901234567890\n",
		"999999999999999999\n", /* far in the future: stale */
		"0\n",
	};
	struct fixture *fx = *state;
	const struct slot_params p = { .interval_us = 5 * S, .max_wait_us = 60 * S, .burst = 1 };
	struct slot_result res;
	char path[PATH_MAX], buf[64];
	int64_t t0, t1, tat;

	make_state_dir(fx, 0700);
	slot_path(fx, "k", path, sizeof(path));
	for (size_t i = 0; i < ARRAY_SIZE(contents); i++) {
		write_file(path, contents[i], 0600);
		t0 = fstime_mono_us();
		assert_int_equal(reserve(fx, "k", &p, &res), SLOT_ADMIT);
		t1 = fstime_mono_us();
		if (res.wait_us != 0 || res.position != 1)
			fail_msg("content %zu: wait %lld position %lld", i, (long long)res.wait_us,
				 (long long)res.position);
		tat = read_tat(path);
		assert_true(tat >= t0 + p.interval_us && tat <= t1 + p.interval_us);
	}

	/* A good one is read: a schedule 1.5 s ahead makes a 1.5 s wait, admitted (within
	   SLOT_COMMIT_US); 3 s ahead, a place held for 3 s. */
	t0 = fstime_mono_us();
	snprintf(buf, sizeof(buf), "%" PRId64 " %" PRId64 "\n", t0 + 1500 * MS, t0);
	write_file(path, buf, 0600);
	assert_int_equal(reserve(fx, "k", &p, &res), SLOT_ADMIT);
	assert_true(res.wait_us > 1500 * MS - SLACK && res.wait_us <= 1500 * MS);
	assert_int_equal(res.deadline_us, t0 + 1500 * MS);
	assert_int_equal(read_tat(path), t0 + 1500 * MS + p.interval_us);
	t0 = fstime_mono_us();
	snprintf(buf, sizeof(buf), "%" PRId64 " %" PRId64 "\n", t0 + 3 * S, t0);
	write_file(path, buf, 0600);
	assert_int_equal(reserve(fx, "k", &p, &res), SLOT_QUEUED);
	assert_true(res.wait_us > 3 * S - SLACK && res.wait_us <= 3 * S);
	assert_int_equal(read_tat(path), t0 + 3 * S);
	assert_int_equal(count_lines(path), 2);

	/* A bare tat, as versions before 0.2 wrote it, reads as written now. */
	t0 = fstime_mono_us();
	snprintf(buf, sizeof(buf), "%" PRId64 "\n", t0 + 1500 * MS);
	write_file(path, buf, 0600);
	assert_int_equal(reserve(fx, "k", &p, &res), SLOT_ADMIT);
	assert_true(res.wait_us > 1500 * MS - SLACK && res.wait_us <= 1500 * MS);
	assert_int_equal(read_tat(path), t0 + 1500 * MS + p.interval_us);

	/* Written by a clock 100 s ahead of ours (a reboot with a kept state_dir): the queue
	   keeps its length, 1.5 s, rather than holding logins for 101.5 s. */
	t0 = fstime_mono_us();
	snprintf(buf, sizeof(buf), "%" PRId64 " %" PRId64 "\n", t0 + 101500 * MS, t0 + 100 * S);
	write_file(path, buf, 0600);
	assert_int_equal(reserve(fx, "k", &p, &res), SLOT_ADMIT);
	assert_true(res.wait_us > 1500 * MS - SLACK && res.wait_us <= 1500 * MS);
}

/* A file that is not a store (a bad line, a member too long, a score that is not a number, an
   order that is not the set's, too many members) is logged, naming the file and why, and starts
   afresh: the login is queued on a new schedule, never let in without one. */
static void test_garbage_lines(void **state)
{
	static const char *const bad[] = {
		"flowslot-store 1 x\n",
		"flowslot-store 1 0\ngarbage\n",
		"flowslot-store 1 0\nnan w:a:-:- 0\n",
		"flowslot-store 1 0\n1 w:a:-:-\n",
		"flowslot-store 1 0\n2 w:b:-:- 0\n1 w:a:-:- 0\n",
		"flowslot-store 1 0\n1 w:a:-:- 0",
		"flowslot-store 1 0\n1 w:a:-:-\t 0\n",
	};
	struct fixture *fx = *state;
	const struct slot_params p = { .interval_us = 5 * S, .max_wait_us = 60 * S, .burst = 1 };
	struct slot_result res;
	char path[PATH_MAX], *text = malloc(LSTORE_MEMBERS_MAX * 24 + 600);
	size_t len;

	assert_non_null(text);
	make_state_dir(fx, 0700);
	slot_path(fx, "k", path, sizeof(path));
	for (size_t i = 0; i <= ARRAY_SIZE(bad) + 1; i++) {
		if (i < ARRAY_SIZE(bad)) {
			snprintf(text, 600, "%s", bad[i]);
		} else if (i == ARRAY_SIZE(bad)) { /* a member too long */
			len = (size_t)sprintf(text, "flowslot-store 1 0\n1 w:");
			memset(text + len, 'a', LSTORE_MEMBER_MAX);
			sprintf(text + len + LSTORE_MEMBER_MAX, " 0\n");
		} else { /* too many members */
			len = (size_t)sprintf(text, "flowslot-store 1 0\n");
			for (int m = 0; m <= LSTORE_MEMBERS_MAX; m++)
				len += (size_t)sprintf(text + len, "%d w:%08d 0\n", m, m);
		}
		write_file(path, text, 0600);
		if (reserve(fx, "k", &p, &res) != SLOT_ADMIT)
			fail_msg("bad file %zu: not admitted: %s", i, fx->msg);
		if (strstr(fx->msg, "slot.k is not a schedule (") == NULL ||
		    strstr(fx->msg, "it starts afresh") == NULL)
			fail_msg("bad file %zu logged \"%s\"", i, fx->msg);
		/* Afresh: this login holds the next slot, and the next login waits for it. */
		assert_true(read_tat(path) > fstime_mono_us());
		assert_int_equal(reserve(fx, "k", &p, &res), SLOT_QUEUED);
	}
	free(text);
}

static bool is_hex16(const char *s)
{
	if (strlen(s) != 16)
		return false;
	for (; *s != '\0'; s++) {
		if (!isxdigit((unsigned char)*s))
			return false;
	}
	return true;
}

/* Checks a name's form; returns the length of its readable part (after "slot."). */
static size_t check_name(const char *key, const char *name)
{
	size_t len = strlen(name), r;
	const char *tilde;

	if (len > NAME_MAX || strncmp(name, "slot.", 5) != 0 || strchr(name, '/') != NULL)
		fail_msg("bad name \"%s\"", name);
	tilde = strrchr(name, '~');
	if (tilde != NULL && is_hex16(tilde + 1))
		r = (size_t)(tilde - name) - 5;
	else
		r = len - 5;
	/* The readable part, '/' spelt %2F, is a prefix of the key. */
	for (size_t i = 5, k = 0; i < 5 + r; k++) {
		if (strncmp(name + i, "%2F", 3) == 0 && key[k] == '/')
			i += 3;
		else if (name[i] == key[k] && key[k] != '/')
			i++;
		else
			fail_msg("name \"%s\" does not start with key \"%.40s...\"", name, key);
	}
	return r;
}

static void test_file_name(void **state)
{
	char name[NAME_MAX + 1 + 16];
	char key[1024], key2[1024];
	const char *tilde;

	(void)state;
	lslot_file_name("pam_flowslot", name, NAME_MAX + 1);
	assert_string_equal(name, "slot.pam_flowslot");
	lslot_file_name("flowslot:{sshd}:a%20b@10.0.0.1", name, NAME_MAX + 1);
	assert_string_equal(name, "slot.flowslot:{sshd}:a%20b@10.0.0.1");
	lslot_file_name("a/b", name, NAME_MAX + 1);
	assert_string_equal(name, "slot.a%2Fb");
	lslot_file_name("/../..", name, NAME_MAX + 1);
	assert_string_equal(name, "slot.%2F..%2F..");
	lslot_file_name("", name, NAME_MAX + 1);
	assert_string_equal(name, "slot.");
	lslot_file_name("..", name, NAME_MAX + 1);
	assert_string_equal(name, "slot...");

	/* Cut: at most NAME_MAX bytes, "~" and 16 hex digits at the end. */
	memset(key, 'k', 300);
	key[300] = '\0';
	memset(name, '#', sizeof(name));
	lslot_file_name(key, name, NAME_MAX + 1);
	assert_true(strlen(name) <= NAME_MAX);
	assert_int_equal(name[NAME_MAX + 1], '#');
	tilde = strrchr(name, '~');
	assert_non_null(tilde);
	assert_true(is_hex16(tilde + 1));
	assert_true(check_name(key, name) > 200);

	/* The same first 300 bytes, different after: different names. */
	memcpy(key2, key, 300);
	key[300] = 'a';
	key2[300] = 'b';
	key[301] = key2[301] = '\0';
	lslot_file_name(key, name, NAME_MAX + 1);
	{
		char name2[NAME_MAX + 1];

		lslot_file_name(key2, name2, sizeof(name2));
		assert_true(strlen(name2) <= NAME_MAX);
		assert_string_not_equal(name, name2);
		/* And the same key, the same name. */
		lslot_file_name(key, name2, sizeof(name2));
		assert_string_equal(name, name2);
	}

	/* Slashes near the cut are never split. */
	memset(key, '/', 300);
	key[300] = '\0';
	lslot_file_name(key, name, NAME_MAX + 1);
	assert_true(check_name(key, name) % 3 == 0);
	for (size_t i = 0; i < 40; i++) {
		for (size_t j = 0; j < 300; j++)
			key[j] = (j + i) % 3 == 0 ? '/' : 'x';
		lslot_file_name(key, name, NAME_MAX + 1);
		check_name(key, name);
	}
}

/* Every key length gives a well-formed name, and no two the same. */
static void test_file_name_lengths(void **state)
{
	static char names[401][NAME_MAX + 1];
	char key[401];

	(void)state;
	for (size_t n = 0; n <= 400; n++) {
		memset(key, 'a', n);
		key[n] = '\0';
		lslot_file_name(key, names[n], sizeof(names[n]));
		check_name(key, names[n]);
		if (n <= 200) {
			assert_int_equal(strlen(names[n]), 5 + n);
		}
		for (size_t m = 0; m < n; m++) {
			if (strcmp(names[m], names[n]) == 0)
				fail_msg("keys of %zu and %zu bytes share a name", m, n);
		}
	}
}

static void test_long_key_reserve(void **state)
{
	struct fixture *fx = *state;
	const struct slot_params p = { .interval_us = 5 * S, .max_wait_us = 60 * S, .burst = 1 };
	struct slot_result res;
	char key[301], path[PATH_MAX];
	struct stat st;

	memset(key, '/', 300);
	key[300] = '\0';
	assert_int_equal(reserve(fx, key, &p, &res), SLOT_ADMIT);
	slot_path(fx, key, path, sizeof(path));
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(count_entries(fx->state), 1);
	assert_int_equal(reserve(fx, key, &p, &res), SLOT_QUEUED);
	assert_true(res.wait_us > p.interval_us - SLACK);
	assert_int_equal(count_lines(path), 2);
}

/* In a child process, where cmocka cannot fail a test: lslot_call as reserve() and call()
   make it, without their checks. */
static enum slot_verdict child_reserve(struct fixture *fx, const char *key,
				       const struct slot_params *p, struct slot_result *res)
{
	const struct lslot_call c = { .dir = fx->state, .key = key, .p = p,
				      .op = SLOT_RESERVE, .place = &fx->place };

	new_place(fx, &fx->place);
	return lslot_call(NULL, &c, res);
}

static enum slot_verdict child_renew(struct fixture *fx, const char *key,
				     const struct slot_params *p, struct slot_result *res)
{
	const struct lslot_call c = { .dir = fx->state, .key = key, .p = p, .op = SLOT_RENEW,
				      .place = &fx->place };

	return lslot_call(NULL, &c, res);
}

/* Waits in fx->place as queue_wait does: renews when its lease asks (slot_renew_us of the
   wait it was told: every SLOT_RENEW_US near its turn), or at its slot, until admitted.
   Returns the verdict that ended the wait; 99 if a slot moved later although every
   renewal came in time (one that came after its slot, this process having been descheduled
   on a loaded machine, may lose the slot to the next waiter: that is no broken promise). A
   renewal made at its slot and decided a little after it (the lock's wait, the scheduler) is
   admitted at once, its slot given as the time it was decided: no slot moved either. */
static enum slot_verdict child_wait(struct fixture *fx, const char *key,
				    const struct slot_params *p, struct slot_result *res)
{
	int64_t first_us = res->deadline_us;
	bool late = false;

	while (res->verdict == SLOT_QUEUED) {
		int64_t now_us = fstime_mono_us(),
			until_us = now_us + slot_renew_us(res->wait_us, res->sched_interval_us);

		if (until_us > res->deadline_us)
			until_us = res->deadline_us;
		if (until_us > now_us)
			fstime_sleep_until(until_us);
		late = late || fstime_mono_us() > res->deadline_us + 100 * MS;
		if (child_renew(fx, key, p, res) == SLOT_UNAVAILABLE)
			return SLOT_UNAVAILABLE;
		if (res->deadline_us > first_us && res->deadline_us > fstime_mono_us() && !late)
			return 99;
	}
	return res->verdict;
}

static void sort_us(int64_t *v, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
			int64_t t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	}
}

/* Logins at the same moment in several processes: each waits in turn, admitted an interval
   apart. At 300 ms, every wait is within SLOT_COMMIT_US: all are admitted at once; at 1 s,
   the last ones hold places, renew them and are admitted at their slots. */
static void run_concurrent(struct fixture *fx, const char *key, const struct slot_params *p)
{
	enum { N = 5 };
	struct slot_result res;
	int go[2], out[2], queued = 0;
	int64_t got[3], deadlines[N], waits[N];
	char path[PATH_MAX];
	pid_t pids[N];

	assert_int_equal(reserve(fx, "warm", p, &res), SLOT_ADMIT); /* makes the directory */
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(out), 0);
	for (int i = 0; i < N; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			char c;
			enum slot_verdict v;

			close(go[1]);
			close(out[0]);
			(void)!read(go[0], &c, 1); /* returns at EOF: all start together */
			v = child_reserve(fx, key, p, &res);
			got[0] = v == SLOT_QUEUED;
			got[1] = res.wait_us;
			if (v == SLOT_QUEUED)
				v = child_wait(fx, key, p, &res);
			got[2] = v == SLOT_ADMIT ? res.deadline_us : -(int64_t)v - 1;
			_exit(write(out[1], got, sizeof(got)) == sizeof(got) ? 0 : 1);
		}
	}
	close(go[0]);
	close(out[1]);
	close(go[1]);
	for (int i = 0; i < N; i++) {
		assert_int_equal(read(out[0], got, sizeof(got)), sizeof(got));
		if (got[2] < 0)
			fail_msg("login %d of %d: verdict %lld", i + 1, N, (long long)-got[2] - 1);
		queued += (int)got[0];
		waits[i] = got[1];
		deadlines[i] = got[2];
	}
	close(out[0]);
	for (int i = 0; i < N; i++) {
		int status;

		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	sort_us(waits, N);
	sort_us(deadlines, N);
	for (int i = 0; i < N; i++) {
		if (waits[i] > i * p->interval_us)
			fail_msg("login %d of %d waits %lld us", i + 1, N, (long long)waits[i]);
		if (i > 0 && deadlines[i] - deadlines[i - 1] < p->interval_us)
			fail_msg("admissions %d and %d: %lld us apart", i, i + 1,
				 (long long)(deadlines[i] - deadlines[i - 1]));
	}
	/* Held places: only where a wait passed SLOT_COMMIT_US; none is left in the file. */
	if ((N - 1) * p->interval_us <= SLOT_COMMIT_US)
		assert_int_equal(queued, 0);
	else if (queued == 0)
		fail_msg("no login held a place: the race was not run");
	slot_path(fx, key, path, sizeof(path));
	assert_int_equal(count_lines(path), 1);
}

static void test_concurrent(void **state)
{
	const struct slot_params p = { .interval_us = 300 * MS, .max_wait_us = 60 * S,
				       .burst = 1 };

	run_concurrent(*state, "together", &p);
}

static void test_concurrent_queued(void **state)
{
	const struct slot_params p = { .interval_us = 1 * S, .max_wait_us = 60 * S, .burst = 1 };

	run_concurrent(*state, "together", &p);
}

/* A place held in the file: renewed, it keeps its slot; given up, those behind move up;
   renewed near its slot, it is admitted to go in then. */
static void test_renew_leave(void **state)
{
	struct fixture *fx = *state;
	const struct slot_params p = { .interval_us = 3 * S, .max_wait_us = 60 * S, .burst = 1 };
	struct slot_result res;
	struct slot_place b, c;
	char path[PATH_MAX], buf[1024];
	int64_t slot_us, wait_us;

	slot_path(fx, "k", path, sizeof(path));
	assert_int_equal(reserve(fx, "k", &p, &res), SLOT_ADMIT);
	assert_int_equal(reserve(fx, "k", &p, &res), SLOT_QUEUED);
	b = fx->place;
	slot_us = res.deadline_us;
	wait_us = res.wait_us;
	assert_int_equal(reserve(fx, "k", &p, &res), SLOT_QUEUED);
	c = fx->place;
	assert_int_equal(res.deadline_us, slot_us + p.interval_us);
	assert_int_equal(res.position, 2);
	assert_int_equal(count_lines(path), 3);

	assert_int_equal(call(fx, "k", &p, SLOT_RENEW, &b, &res), SLOT_QUEUED);
	assert_int_equal(res.deadline_us, slot_us);
	assert_true(res.wait_us <= wait_us);
	assert_int_equal(res.position, 1);

	/* B gives its place up: remembered as a ghost, and C moves up to its slot. */
	assert_int_equal(call(fx, "k", &p, SLOT_LEAVE, &b, &res), SLOT_ADMIT);
	assert_true(read_file(path, buf, sizeof(buf)) > 0);
	assert_null(strstr(buf, b.id));
	assert_non_null(strstr(buf, b.who));
	assert_int_equal(call(fx, "k", &p, SLOT_RENEW, &c, &res), SLOT_QUEUED);
	assert_int_equal(res.deadline_us, slot_us);
	assert_int_equal(res.position, 1);

	/* Within SLOT_COMMIT_US of its slot: admitted to go in at it, the place gone. */
	fstime_sleep_until(slot_us - SLOT_COMMIT_US + 100 * MS);
	assert_int_equal(call(fx, "k", &p, SLOT_RENEW, &c, &res), SLOT_ADMIT);
	assert_int_equal(res.deadline_us, slot_us);
	assert_int_equal(read_tat(path), slot_us + p.interval_us);
	assert_true(read_file(path, buf, sizeof(buf)) > 0);
	assert_null(strstr(buf, c.id));
	assert_int_equal(count_lines(path), 2); /* the schedule and B's ghost */
}

/* A reservation asked again with the same place (its first call timed out, and the store made
   it late) answers that place, and holds no second one: C, behind it, stays behind it. */
static void test_reserve_again(void **state)
{
	struct fixture *fx = *state;
	const struct slot_params p = { .interval_us = 3 * S, .max_wait_us = 60 * S, .burst = 1 };
	struct slot_result res;
	struct slot_place b;
	char path[PATH_MAX];
	int64_t slot_us;

	slot_path(fx, "k", path, sizeof(path));
	assert_int_equal(reserve(fx, "k", &p, &res), SLOT_ADMIT);
	assert_int_equal(reserve(fx, "k", &p, &res), SLOT_QUEUED);
	b = fx->place;
	slot_us = res.deadline_us;
	assert_int_equal(reserve(fx, "k", &p, &res), SLOT_QUEUED);
	assert_int_equal(res.position, 2);
	assert_int_equal(count_lines(path), 3);

	assert_int_equal(call(fx, "k", &p, SLOT_RESERVE, &b, &res), SLOT_QUEUED);
	assert_int_equal(res.deadline_us, slot_us);
	assert_int_equal(res.position, 1);
	assert_int_equal(count_lines(path), 3);
	assert_int_equal(call(fx, "k", &p, SLOT_RENEW, &fx->place, &res), SLOT_QUEUED);
	assert_int_equal(res.position, 2);
	assert_int_equal(res.deadline_us, slot_us + p.interval_us);
}

/* The lowest descriptor number free in this process. */
static int lowest_free_fd(void)
{
	int fd = 0;

	while (fcntl(fd, F_GETFD) != -1)
		fd++;
	return fd;
}

/* Issue 38.2: a login with one file descriptor left (ulimit -n): the directory opens, the
   schedule's file cannot. That is its own limit, not a schedule that cannot be used (which
   fallback=open would let in): unavailable, said so, res->own_limits, the file as it was. */
static void test_own_fd_limit(void **state)
{
	struct fixture *fx = *state;
	const struct slot_params p = { .interval_us = 10 * S, .max_wait_us = 60 * S, .burst = 1 };
	struct slot_result res;
	char path[PATH_MAX], before[4096], after[4096];
	int out[2], got[2], status;
	ssize_t n;
	pid_t pid;

	assert_int_equal(reserve(fx, "nofile", &p, &res), SLOT_ADMIT);
	slot_path(fx, "nofile", path, sizeof(path));
	assert_true(read_file(path, before, sizeof(before)) > 0);
	assert_int_equal(pipe(out), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit one;

		close(out[0]);
		if (getrlimit(RLIMIT_NOFILE, &one) != 0)
			_exit(2);
		one.rlim_cur = (rlim_t)lowest_free_fd() + 1;
		if (setrlimit(RLIMIT_NOFILE, &one) != 0)
			_exit(3);
		got[0] = child_reserve(fx, "nofile", &p, &res);
		got[1] = res.own_limits;
		_exit(write(out[1], got, sizeof(got)) == sizeof(got) ? 0 : 1);
	}
	close(out[1]);
	n = read(out[0], got, sizeof(got));
	close(out[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (n != sizeof(got) || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("the child said %zd bytes, status %#x", n, status);
	assert_int_equal(got[0], SLOT_UNAVAILABLE);
	assert_true(got[1]);
	assert_true(read_file(path, after, sizeof(after)) > 0);
	assert_string_equal(after, before);
}

/* How many next.* files the state directory holds: what a takeover links, gone once it is
   put in place. */
static int count_next_files(const struct fixture *fx)
{
	DIR *d = opendir(fx->state);
	const struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL)
		n += strncmp(e->d_name, "next.", 5) == 0;
	closedir(d);
	return n;
}

/* Whether the schedule file the stopped holder pid holds (its last descriptor) is marked
   taken over and no longer linked. */
static bool held_file_taken(pid_t pid)
{
	char fdpath[64];
	struct stat st;
	bool taken = false;

	for (int fd = 3; fd < 64; fd++) {
		snprintf(fdpath, sizeof(fdpath), "/proc/%ld/fd/%d", (long)pid, fd);
		if (stat(fdpath, &st) == 0 && S_ISREG(st.st_mode))
			taken = (st.st_mode & S_ISVTX) != 0 && st.st_nlink == 0;
	}
	return taken;
}

/* A holder stuck on the lock (stopped, as a user may stop their own su): it costs the others
   its detection time, LSLOT_STUCK_US, never their wait (issue 29). The first call that finds
   it so takes the file over: one line naming the holder, and the schedule goes on, as it
   stood, in a new file put in the old one's place, where every later call finds it at once,
   no chain left (issue 38); the old one is marked taken over, so that its holder, resumed,
   knows its write may be lost. */
static void test_lock_stuck(void **state)
{
	struct fixture *fx = *state;
	const struct slot_params p = { .interval_us = 30 * S, .max_wait_us = 120 * S, .burst = 1 };
	const struct slot_params quick = { .interval_us = 30 * S, .max_wait_us = 0, .burst = 1 };
	struct slot_result res = { .verdict = SLOT_UNAVAILABLE };
	struct slot_place waiter;
	char path[PATH_MAX], next[PATH_MAX], holder[64];
	struct stat st;
	int64_t t0, took;
	ino_t old_ino;
	pid_t pid;

	assert_int_equal(reserve(fx, "held", &p, &res), SLOT_ADMIT);
	assert_int_equal(reserve(fx, "held", &p, &res), SLOT_QUEUED);
	waiter = fx->place;
	slot_path(fx, "held", path, sizeof(path));
	assert_int_equal(stat(path, &st), 0);
	old_ino = st.st_ino;
	snprintf(next, sizeof(next), "%s/next.%llx", fx->state, (unsigned long long)st.st_ino);
	pid = fx->holder = locker_stopped(path, LOCK_EX);
	snprintf(holder, sizeof(holder), "is stuck: pid %ld has held its lock", (long)pid);

	t0 = fstime_mono_us();
	assert_int_equal(reserve(fx, "held", &p, &res), SLOT_QUEUED);
	took = fstime_mono_us() - t0;
	if (took < LSLOT_STUCK_US || took > LSLOT_STUCK_US + 5 * S)
		fail_msg("queued after %lld ms", (long long)(took / MS));
	assert_int_equal(res.position, 2);
	assert_true(res.wait_us > 30 * S);
	assert_non_null(strstr(fx->msg, path));
	assert_non_null(strstr(fx->msg, holder));
	assert_non_null(strstr(fx->msg, "the schedule goes on without it"));
	/* One line for the call. */
	assert_ptr_equal(strchr(fx->msg, '\n'), fx->msg + strlen(fx->msg) - 1);
	assert_int_equal(stat(path, &st), 0);
	assert_true(st.st_ino != old_ino);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(stat(next, &st), -1);
	assert_true(held_file_taken(pid));

	/* Every later call goes on in the new file at once, and says nothing: the queue is long
	   for a login that cannot wait; the waiter keeps its place; a peek counts them. */
	t0 = fstime_mono_us();
	assert_int_equal(reserve(fx, "held", &quick, &res), SLOT_REFUSE);
	assert_false(res.lock_busy);
	assert_int_equal(call(fx, "held", &p, SLOT_RENEW, &waiter, &res), SLOT_QUEUED);
	assert_int_equal(res.position, 1);
	assert_string_equal(fx->msg, "");
	assert_int_equal(call(fx, "held", &p, SLOT_PEEK, &waiter, &res), SLOT_QUEUED);
	assert_int_equal(res.position, 3);
	assert_int_equal(reserve(fx, "held", &p, &res), SLOT_QUEUED);
	assert_int_equal(res.position, 3);
	took = fstime_mono_us() - t0;
	if (took > LSLOT_STUCK_US / 4)
		fail_msg("calls after the takeover took %lld ms", (long long)(took / MS));

	/* The holder resumed and gone, the schedule is the new file's. */
	locker_end(pid);
	fx->holder = 0;
	assert_int_equal(call(fx, "held", &p, SLOT_RENEW, &waiter, &res), SLOT_QUEUED);
	assert_int_equal(res.position, 1);
	assert_int_equal(reserve(fx, "held", &p, &res), SLOT_QUEUED);
	assert_int_equal(res.position, 4);
}

/* A holder stuck on the file a stuck one was taken over by: each costs its detection time,
   no more, and the schedule goes on through both. */
static void test_lock_stuck_twice(void **state)
{
	struct fixture *fx = *state;
	const struct slot_params p = { .interval_us = 30 * S, .max_wait_us = 300 * S, .burst = 1 };
	struct slot_result res;
	char path[PATH_MAX], holder[64];
	int64_t t0, took;
	pid_t first, second;

	assert_int_equal(reserve(fx, "twice", &p, &res), SLOT_ADMIT);
	slot_path(fx, "twice", path, sizeof(path));
	first = fx->holder = locker_stopped(path, LOCK_EX);
	assert_int_equal(reserve(fx, "twice", &p, &res), SLOT_QUEUED);
	assert_int_equal(res.position, 1);
	second = locker_stopped(path, LOCK_EX); /* the file that took the first one's place */
	snprintf(holder, sizeof(holder), "is stuck: pid %ld has held its lock", (long)second);
	t0 = fstime_mono_us();
	assert_int_equal(reserve(fx, "twice", &p, &res), SLOT_QUEUED);
	took = fstime_mono_us() - t0;
	locker_end(second);
	assert_int_equal(res.position, 2);
	if (took < LSLOT_STUCK_US || took > LSLOT_STUCK_US + 5 * S)
		fail_msg("queued after %lld ms", (long long)(took / MS));
	assert_non_null(strstr(fx->msg, holder));
	assert_int_equal(reserve(fx, "twice", &p, &res), SLOT_QUEUED);
	assert_int_equal(res.position, 3);
	assert_int_equal(count_next_files(fx), 0);
	locker_end(first);
	fx->holder = 0;
}

/* Issue 38.1: a user who stops their own login each time it holds the lock, again and again
   (18 times: 17 once locked every login out for good): each stop costs the
   others its detection time and no more, no file is left behind, every login is queued in
   turn, and the schedule can still be reset. The stopped holders keep their files open. */
static void test_lock_stuck_many(void **state)
{
	enum { N = 18 }; /* past the 16 files in a row the chain once went to */
	struct fixture *fx = *state;
	const struct slot_params p = { .interval_us = 100 * S, .max_wait_us = 3600 * S, .burst = 1 };
	struct slot_result res;
	struct slot_place places[N];
	char path[PATH_MAX];
	pid_t *held = fx->held;

	assert_int_equal(reserve(fx, "many", &p, &res), SLOT_ADMIT);
	slot_path(fx, "many", path, sizeof(path));
	for (int i = 0; i < N; i++) {
		/* The places so far renewed, as their logins would. */
		for (int j = 0; j < i; j++) {
			if (call(fx, "many", &p, SLOT_RENEW, &places[j], &res) != SLOT_QUEUED)
				fail_msg("place %d of %d not renewed: verdict %d: %s", j + 1, i,
					 (int)res.verdict, fx->msg);
		}
		held[i] = locker_stopped(path, LOCK_EX);
		assert_int_equal(reserve(fx, "many", &p, &res), SLOT_QUEUED);
		places[i] = fx->place;
		if (res.position != i + 1)
			fail_msg("login %d behind %d stuck holders: position %lld", i + 1, i + 1,
				 (long long)res.position);
		assert_int_equal(count_next_files(fx), 0);
	}
	assert_int_not_equal(call(fx, "many", &p, SLOT_RESET, &fx->place, &res),
			     SLOT_UNAVAILABLE);
	assert_int_equal(reserve(fx, "many", &p, &res), SLOT_ADMIT);
	for (int i = 0; i < N; i++) {
		locker_end(held[i]);
		held[i] = 0;
	}
}

/* Issue 29's storm: six logins at once on a file whose holder is stopped. None goes in
   unqueued: one of them (or more, at once) takes the file over, and all are queued an
   interval apart, within the detection time and a little more. */
static void test_lock_stuck_storm(void **state)
{
	enum { N = 6 };
	struct fixture *fx = *state;
	const struct slot_params p = { .interval_us = 10 * S, .max_wait_us = 120 * S, .burst = 1 };
	struct slot_result res;
	int64_t waits[N], got[3], t0, took;
	int go[2], out[2], seen = 0;
	char path[PATH_MAX];
	pid_t pids[N];

	assert_int_equal(reserve(fx, "storm", &p, &res), SLOT_ADMIT);
	slot_path(fx, "storm", path, sizeof(path));
	fx->holder = locker_stopped(path, LOCK_EX);
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(out), 0);
	for (int i = 0; i < N; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			char c;

			close(go[1]);
			close(out[0]);
			(void)!read(go[0], &c, 1);
			got[0] = child_reserve(fx, "storm", &p, &res);
			got[1] = res.wait_us;
			got[2] = res.position;
			_exit(write(out[1], got, sizeof(got)) == sizeof(got) ? 0 : 1);
		}
	}
	close(go[0]);
	close(out[1]);
	t0 = fstime_mono_us();
	close(go[1]);
	for (int i = 0; i < N; i++) {
		assert_int_equal(read(out[0], got, sizeof(got)), sizeof(got));
		if (got[0] != SLOT_QUEUED)
			fail_msg("login %d of %d: verdict %lld", i + 1, N, (long long)got[0]);
		waits[i] = got[1];
		if (got[2] >= 1 && got[2] <= N)
			seen |= 1 << got[2];
	}
	assert_int_equal(seen, ((1 << N) - 1) << 1); /* numbers 1 to N, each once */
	took = fstime_mono_us() - t0;
	close(out[0]);
	for (int i = 0; i < N; i++) {
		int status;

		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	if (took > LSLOT_STUCK_US + 5 * S)
		fail_msg("all queued after %lld ms", (long long)(took / MS));
	sort_us(waits, N);
	for (int i = 1; i < N; i++) {
		if (waits[i] - waits[i - 1] < p.interval_us - LSLOT_STUCK_US - 5 * S)
			fail_msg("logins %d and %d told %lld us apart", i, i + 1,
				 (long long)(waits[i] - waits[i - 1]));
	}
	if (waits[0] < p.interval_us - LSLOT_STUCK_US - 5 * S)
		fail_msg("the first told %lld us", (long long)waits[0]);
	/* Each child's place went with it (its process gone): the queue is as before. */
	assert_int_equal(reserve(fx, "storm", &p, &res), SLOT_QUEUED);
	assert_int_equal(res.position, 1);
}

/* Issue 18's rule beside the stuck holder's: a lock that goes from holder to holder is waited
   out, past LSLOT_STUCK_US, for as long as the login may wait; a login whose max_wait runs out
   first is refused, never let in without a place, with no retry time made up. */
static void test_lock_busy(void **state)
{
	struct fixture *fx = *state;
	const struct slot_params p = { .interval_us = 10 * S, .max_wait_us = 60 * S, .burst = 1 };
	const struct slot_params brief = { .interval_us = 10 * S, .max_wait_us = 3 * S,
					   .burst = 1 };
	struct slot_result res;
	char path[PATH_MAX];
	int64_t t0, took;
	pid_t ring[2];
	int lines;

	assert_int_equal(reserve(fx, "busy", &p, &res), SLOT_ADMIT);
	slot_path(fx, "busy", path, sizeof(path));

	locker_ring(path, LSLOT_STUCK_US + 2 * S, false, ring);
	t0 = fstime_mono_us();
	assert_int_equal(reserve(fx, "busy", &p, &res), SLOT_QUEUED);
	took = fstime_mono_us() - t0;
	locker_ring_end(ring);
	if (took < LSLOT_STUCK_US + S)
		fail_msg("had the lock after %lld ms, while the ring held it", (long long)(took / MS));
	assert_null(strstr(fx->msg, "stuck"));

	lines = count_lines(path);
	locker_ring(path, brief.max_wait_us + 4 * S, false, ring);
	t0 = fstime_mono_us();
	assert_int_equal(reserve(fx, "busy", &brief, &res), SLOT_REFUSE);
	took = fstime_mono_us() - t0;
	locker_ring_end(ring);
	assert_true(took >= brief.max_wait_us && took < brief.max_wait_us + 4 * S);
	assert_true(res.lock_busy);
	assert_non_null(strstr(fx->msg, "busy"));
	assert_null(strstr(fx->msg, "stuck"));
	/* Refused, it left nothing in the file. */
	assert_int_equal(count_lines(path), lines);

	/* The renewal that keeps to the slot, the lock busy until then: over at the slot, a
	   renewal that failed (the wait goes in blind), not a file that cannot be used. */
	assert_int_equal(reserve(fx, "busy2", &p, &res), SLOT_ADMIT);
	assert_int_equal(reserve(fx, "busy2", &p, &res), SLOT_QUEUED);
	slot_path(fx, "busy2", path, sizeof(path));
	locker_ring(path, 3 * S, false, ring);
	t0 = fstime_mono_us();
	assert_int_equal(call_until(fx, "busy2", &p, &fx->place, t0 + 500 * MS, &res),
			 SLOT_UNAVAILABLE);
	took = fstime_mono_us() - t0;
	locker_ring_end(ring);
	if (took < 500 * MS || took > 500 * MS + LSLOT_STUCK_US / 4)
		fail_msg("a renewal due over in 500 ms took %lld ms", (long long)(took / MS));
	assert_non_null(strstr(fx->msg, "busy until the slot"));
	assert_null(strstr(fx->msg, "cannot lock"));
}

static bool exists(const struct fixture *fx, const char *name)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", fx->state, name);
	return lstat(path, &st) == 0;
}

/* 400 remote hosts, each its own schedule, whose times pass: the directory stays small. */
static void test_many_hosts_pruned(void **state)
{
	struct fixture *fx = *state;
	const struct slot_params p = { .interval_us = 1 * MS, .max_wait_us = 60 * S, .burst = 1 };
	const struct timespec pause = { .tv_nsec = 5000000 };
	struct slot_result res;
	char key[64];

	for (int i = 0; i <= 400; i++) {
		if (i == 400)
			nanosleep(&pause, NULL); /* every schedule's time has passed */
		snprintf(key, sizeof(key), "flowslot:{sshd}:root@10.0.%d.%d", i / 256, i % 256);
		assert_int_equal(reserve(fx, key, &p, &res), SLOT_ADMIT);
		if (count_entries(fx->state) > LSLOT_PRUNE_AT)
			fail_msg("%d files after %d hosts", count_entries(fx->state), i + 1);
	}
	/* The last one, just made, is still there. */
	assert_true(exists(fx, "slot.flowslot:{sshd}:root@10.0.1.144"));
}

/* 400 hosts whose schedules are all still live: past LSLOT_FILES_MAX, new keys share
   LSLOT_SHARED schedules, and every key is still staggered. */
static void test_many_hosts_live(void **state)
{
	struct fixture *fx = *state;
	const struct slot_params p = { .interval_us = 60 * S, .max_wait_us = 3600 * S, .burst = 1 };
	struct slot_result res;
	char key[64];

	int queued = 0;

	for (int i = 0; i < 400; i++) {
		snprintf(key, sizeof(key), "flowslot:{sshd}:root@10.0.%d.%d", i / 256, i % 256);
		if (i < LSLOT_FILES_MAX) {
			assert_int_equal(reserve(fx, key, &p, &res), SLOT_ADMIT);
			assert_int_equal(res.wait_us, 0);
			continue;
		}
		/* Sharing a schedule: admitted, or a place behind the others there. */
		switch (reserve(fx, key, &p, &res)) {
		case SLOT_ADMIT:
			break;
		case SLOT_QUEUED:
			queued++;
			assert_true(res.wait_us > p.interval_us / 2);
			break;
		default:
			fail_msg("host %d: verdict %d", i, (int)res.verdict);
		}
	}
	assert_true(queued >= 400 - LSLOT_FILES_MAX - LSLOT_SHARED);
	if (count_entries(fx->state) > LSLOT_FILES_MAX + LSLOT_SHARED)
		fail_msg("%d files after 400 hosts", count_entries(fx->state));
	/* The first host has its own schedule; the last shares one, still kept. */
	assert_int_equal(reserve(fx, "flowslot:{sshd}:root@10.0.0.0", &p, &res), SLOT_QUEUED);
	assert_true(res.wait_us > p.interval_us / 2 && res.wait_us <= p.interval_us);
	assert_int_equal(reserve(fx, "flowslot:{sshd}:root@10.0.1.143", &p, &res), SLOT_QUEUED);
	assert_true(res.wait_us > p.interval_us / 2);
	assert_true(exists(fx, "slot.flowslot:{sshd}:root@10.0.0.255"));
	assert_false(exists(fx, "slot.flowslot:{sshd}:root@10.0.1.143"));
}

/* Pruning removes only schedule files whose time has passed and that no one holds. */
static void test_prune_spares(void **state)
{
	struct fixture *fx = *state;
	const struct slot_params p = { .interval_us = 5 * S, .max_wait_us = 60 * S, .burst = 1 };
	struct slot_result res;
	char path[PATH_MAX], buf[128];
	int held;

	make_state_dir(fx, 0700);
	for (int i = 0; i < LSLOT_PRUNE_AT; i++) {
		snprintf(path, sizeof(path), "%s/slot.old%d", fx->state, i);
		write_file(path, i % 2 ? "1\n" : "", 0600); /* passed, or empty and old */
		if (i % 2 == 0) {
			const struct timespec old[2] = { { .tv_sec = time(NULL) - 60 },
							 { .tv_sec = time(NULL) - 60 } };

			assert_int_equal(utimensat(AT_FDCWD, path, old, 0), 0);
		}
	}
	snprintf(path, sizeof(path), "%s/node.0123456789abcdef.master", fx->state);
	write_file(path, "10.0.0.5:6379\n", 0600);
	snprintf(path, sizeof(path), "%s/node.0123456789abcdef.master.tmp.42", fx->state);
	write_file(path, "", 0600);
	snprintf(path, sizeof(path), "%s/slot.live", fx->state);
	snprintf(buf, sizeof(buf), "%" PRId64 "\n", fstime_mono_us() + 60 * S);
	write_file(path, buf, 0600);
	/* No head, but a live waiter holds a place in it, its key not yet expired. */
	snprintf(path, sizeof(path), "%s/slot.queue", fx->state);
	snprintf(buf, sizeof(buf), "flowslot-store 1 %" PRId64 "\n1 w:0a:0b:- %ld\n",
		 fstime_mono_us() + 4 * S, (long)getpid());
	write_file(path, buf, 0600);
	snprintf(path, sizeof(path), "%s/slot.held", fx->state);
	write_file(path, "1\n", 0600);
	held = open(path, O_RDWR);
	assert_true(held >= 0);
	assert_int_equal(flock(held, LOCK_EX), 0);

	assert_int_equal(reserve(fx, "new", &p, &res), SLOT_ADMIT);
	close(held);
	assert_true(exists(fx, "node.0123456789abcdef.master"));
	assert_true(exists(fx, "node.0123456789abcdef.master.tmp.42"));
	assert_true(exists(fx, "slot.live"));
	assert_true(exists(fx, "slot.held"));
	assert_true(exists(fx, "slot.queue"));
	assert_true(exists(fx, "slot.new"));
	assert_int_equal(count_entries(fx->state), 6);
}

/* Several processes reserving on one key while another prunes: a schedule removed between
   a login's open and its lock must not let two logins decide on two different files. */
static void test_concurrent_prune(void **state)
{
	enum { N = 4, RUN_MS = 1500, RUN_MAX_MS = 20000, MAX_ADMITTED = 8192 };
	struct fixture *fx = *state;
	const struct slot_params p = { .interval_us = 2 * MS, .max_wait_us = 0, .burst = 1 };
	const struct timespec pause = { .tv_nsec = 5000000 };
	struct slot_result res;
	char path[PATH_MAX], hot[PATH_MAX], stop[PATH_MAX], buf[64];
	/* Fixed, so that a failed assert leaks nothing (cmocka's asserts jump out). */
	static int64_t deadlines[MAX_ADMITTED];
	int64_t got[2], start_us, last_ino = -1;
	size_t n = 0, inodes = 0;
	pid_t pids[N + 1];
	int out[2];
	struct pollfd pfd;
	bool stopping = false;

	make_state_dir(fx, 0700);
	/* Enough live schedules that every new key prunes. */
	snprintf(buf, sizeof(buf), "%" PRId64 "\n", fstime_mono_us() + 3600 * S);
	for (int i = 0; i < LSLOT_PRUNE_AT + 16; i++) {
		snprintf(path, sizeof(path), "%s/slot.live%d", fx->state, i);
		write_file(path, buf, 0600);
	}
	slot_path(fx, "hot", hot, sizeof(hot));
	snprintf(stop, sizeof(stop), "%s/stop", fx->root);
	assert_int_equal(pipe(out), 0);
	start_us = fstime_mono_us();
	for (int i = 0; i <= N; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] != 0)
			continue;
		close(out[0]);
		/* Until told to stop: once the race has been run, or after RUN_MAX_MS. */
		for (int k = 0; access(stop, F_OK) != 0 &&
				fstime_mono_us() < start_us + RUN_MAX_MS * MS;
		     k++) {
			struct stat st;

			if (i == N) { /* the pruner: a new key each time */
				snprintf(buf, sizeof(buf), "p%d", k);
				if (child_reserve(fx, buf, &p, &res) == SLOT_UNAVAILABLE)
					_exit(1);
				continue;
			}
			/* A pause between logins leaves the pruner room to find the file idle
			   (each step reads the whole queue, under the lock). */
			nanosleep(&pause, NULL);
			if (child_reserve(fx, "hot", &p, &res) == SLOT_UNAVAILABLE)
				_exit(1);
			if (res.verdict != SLOT_ADMIT)
				continue;
			got[0] = res.deadline_us;
			got[1] = stat(hot, &st) == 0 ? (int64_t)st.st_ino : -1;
			if (write(out[1], got, sizeof(got)) != sizeof(got))
				_exit(1);
		}
		_exit(0);
	}
	close(out[1]);
	pfd.fd = out[0];
	pfd.events = POLLIN;
	for (;;) {
		const int64_t run_us = fstime_mono_us() - start_us;
		ssize_t r;

		if (!stopping && ((run_us >= RUN_MS * MS && n >= 20 && inodes >= 3) ||
				  run_us >= RUN_MAX_MS * MS)) {
			write_file(stop, "", 0600);
			stopping = true;
		}
		assert_true(poll(&pfd, 1, 100) >= 0);
		if (pfd.revents == 0)
			continue;
		r = read(out[0], got, sizeof(got));
		if (r == 0)
			break;
		assert_int_equal(r, sizeof(got));
		assert_true(n < MAX_ADMITTED);
		deadlines[n++] = got[0];
		if (got[1] != last_ino)
			inodes++;
		last_ino = got[1];
	}
	close(out[0]);
	for (int i = 0; i <= N; i++) {
		int status;

		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	for (size_t i = 1; i < n; i++) {
		for (size_t j = i; j > 0 && deadlines[j - 1] > deadlines[j]; j--) {
			int64_t t = deadlines[j];

			deadlines[j] = deadlines[j - 1];
			deadlines[j - 1] = t;
		}
	}
	for (size_t i = 1; i < n; i++) {
		if (deadlines[i] - deadlines[i - 1] < p.interval_us)
			fail_msg("admissions %zu and %zu of %zu: %lld us apart", i, i + 1, n,
				 (long long)(deadlines[i] - deadlines[i - 1]));
	}
	/* The race was run: logins were admitted, and the key's file was pruned and remade. */
	if (n < 20 || inodes < 3)
		fail_msg("%zu admissions on %zu files", n, inodes);
	print_message("%zu admissions on %zu files\n", n, inodes);
}

/* Issue 18 item 4: a burst of logins at once against a file full of ghosts (4,096, as a
   flood of given-up logins leaves it) waits the lock out: no login is let in for want of it
   (SLOT_UNAVAILABLE, "admitted without a wait"), and the slots given stay an interval
   apart. */
static void test_burst_on_ghosts(void **state)
{
	enum { N = 100, GHOSTS = 1024 }; /* slot.lua keeps at most 1,024 */
	struct fixture *fx = *state;
	const struct slot_params p = { .interval_us = 20 * MS, .max_wait_us = 60 * S, .burst = 1 };
	struct slot_result res;
	int go[2], out[2], hold[2], bad = 0;
	int64_t got[2], deadlines[N], end_us = fstime_mono_us() + 60 * S;
	char path[PATH_MAX], *text = malloc((size_t)GHOSTS * 96 + 64);
	size_t len;
	pid_t pids[N];

	assert_non_null(text);
	make_state_dir(fx, 0700);
	slot_path(fx, "burst", path, sizeof(path));
	/* Ghosts as slot.lua writes them (no host, so no index of their host's), at the score
	   of their end, in the order of their names. */
	len = (size_t)sprintf(text, "flowslot-store 1 %" PRId64 "\n", end_us);
	for (int i = 0; i < GHOSTS; i++)
		len += (size_t)sprintf(text + len, "%" PRId64 " g:%016x:%" PRId64 ":%" PRId64 ":-:0 0\n",
				       INT64_C(20000000000000000) + end_us, i + 1, end_us - 90 * S,
				       end_us - 60 * S);
	write_file(path, text, 0600);
	free(text);
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(out), 0);
	assert_int_equal(pipe(hold), 0);
	for (int i = 0; i < N; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			char c;
			enum slot_verdict v;

			close(go[1]);
			close(out[0]);
			close(hold[1]);
			(void)!read(go[0], &c, 1); /* returns at EOF: all start together */
			v = child_reserve(fx, "burst", &p, &res);
			got[0] = v;
			got[1] = res.deadline_us;
			if (write(out[1], got, sizeof(got)) != sizeof(got))
				_exit(1);
			(void)!read(hold[0], &c, 1); /* its place held until all have asked */
			_exit(0);
		}
	}
	close(go[0]);
	close(out[1]);
	close(hold[0]);
	close(go[1]);
	for (int i = 0; i < N; i++) {
		assert_int_equal(read(out[0], got, sizeof(got)), sizeof(got));
		if (got[0] != SLOT_ADMIT && got[0] != SLOT_QUEUED)
			bad++;
		deadlines[i] = got[1];
	}
	close(out[0]);
	close(hold[1]);
	for (int i = 0; i < N; i++) {
		int status;

		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	if (bad > 0)
		fail_msg("%d of %d logins neither admitted nor queued", bad, N);
	sort_us(deadlines, N);
	for (int i = 1; i < N; i++) {
		if (deadlines[i] - deadlines[i - 1] < p.interval_us)
			fail_msg("slots %d and %d: %lld us apart", i, i + 1,
				 (long long)(deadlines[i] - deadlines[i - 1]));
	}
	/* No ghost past the cap: the file stays small (1,024 ghosts of 77 bytes, and the
	   places). */
	assert_true(read_file(path, (char[1 << 18]){ 0 }, 1 << 18) < 128 * 1024);
}

/* What only the host can know: a place whose login's process is gone lapses at once, not at
   its lease's end (FLOWSLOT.GONE, which Redis cannot answer): the login behind it moves up. */
static void test_gone_holder(void **state)
{
	struct fixture *fx = *state;
	const struct slot_params p = { .interval_us = 5 * S, .max_wait_us = 60 * S, .burst = 1 };
	struct slot_result res;
	char path[PATH_MAX];
	pid_t child;
	int status;

	make_state_dir(fx, 0700);
	slot_path(fx, "k", path, sizeof(path));
	assert_int_equal(reserve(fx, "k", &p, &res), SLOT_ADMIT);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) /* holds the next slot, then is gone without a word */
		_exit(child_reserve(fx, "k", &p, &res) == SLOT_QUEUED ? 0 : 1);
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(count_lines(path), 2);
	/* Its slot, an interval after the first admission, is this login's now: first in line,
	   not second. The fork and the wait for the child may take a while on a loaded machine
	   (over SLACK beside the fault campaign): half an interval is what tells the two apart. */
	assert_int_equal(reserve(fx, "k", &p, &res), SLOT_QUEUED);
	assert_int_equal(res.position, 1);
	assert_true(res.wait_us <= p.interval_us && res.wait_us > p.interval_us / 2);
}

/* The file with each line that ends in FROM made to end in TO. */
static void rewrite_line_ends(const char *path, const char *from, const char *to)
{
	char buf[8192], out[8192], end[64];
	size_t o = 0;

	assert_true(read_file(path, buf, sizeof(buf)) > 0);
	snprintf(end, sizeof(end), "%s\n", from);
	for (char *line = buf, *nl; (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
		size_t len = (size_t)(nl + 1 - line), cut = strlen(end);

		if (len >= cut && memcmp(nl + 1 - cut, end, cut) == 0)
			o += (size_t)snprintf(out + o, sizeof(out) - o, "%.*s%s\n",
					      (int)(len - cut), line, to);
		else
			o += (size_t)snprintf(out + o, sizeof(out) - o, "%.*s", (int)len, line);
	}
	write_file(path, out, 0600);
}

/* Issue 29 item 4: a pid is judged only in the PID namespace that recorded it. A waiter whose
   process is gone, recorded in another namespace (a unit with private PIDs, a container
   sharing the state_dir), is no gone one here: its number means another process, or none, and
   its lease alone says; a line of the earlier format (no namespace) likewise. In our own, it
   is gone (test_gone_holder). */
static void test_gone_holder_other_ns(void **state)
{
	struct fixture *fx = *state;
	const struct slot_params p = { .interval_us = 5 * S, .max_wait_us = 60 * S, .burst = 1 };
	char path[PATH_MAX], mine[64], other[64], buf[8192];
	struct slot_result res;
	pid_t child;
	int status;

	make_state_dir(fx, 0700);
	slot_path(fx, "k", path, sizeof(path));
	assert_int_equal(reserve(fx, "k", &p, &res), SLOT_ADMIT);
	child = fork();
	assert_true(child >= 0);
	if (child == 0)
		_exit(child_reserve(fx, "k", &p, &res) == SLOT_QUEUED ? 0 : 1);
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	snprintf(mine, sizeof(mine), " %ld %" PRIu64, (long)child, lstore_pidns());
	assert_true(lstore_pidns() != 0);
	assert_true(read_file(path, buf, sizeof(buf)) > 0);
	assert_non_null(strstr(buf, mine)); /* recorded with its namespace */

	/* Another namespace: its place stands, this login second. */
	snprintf(other, sizeof(other), " %ld 1", (long)child);
	rewrite_line_ends(path, mine, other);
	assert_int_equal(reserve(fx, "k", &p, &res), SLOT_QUEUED);
	assert_int_equal(res.position, 2);
	/* No namespace known (the earlier format's line): the same. */
	snprintf(buf, sizeof(buf), " %ld", (long)child);
	rewrite_line_ends(path, other, buf);
	assert_int_equal(reserve(fx, "k", &p, &res), SLOT_QUEUED);
	assert_int_equal(res.position, 3);
}

/* Issue 29 item 4: a state_dir that outlives a reboot. A file from another boot (its first line
   names another boot_id) holds times of a clock that is no more: it is read as empty, and
   written back as this boot's. A file that names no boot (this format's earlier files) is
   this boot's. */
static void test_other_boot(void **state)
{
	struct fixture *fx = *state;
	const struct slot_params p = { .interval_us = 5 * S, .max_wait_us = 60 * S, .burst = 1 };
	const int64_t now_us = fstime_mono_us();
	char path[PATH_MAX], text[512], buf[8192], boot[LSTORE_BOOT_MAX + 1];
	struct slot_result res;
	const char *boots[3] = { "00000000-0000-4000-8000-000000000000", "", boot };

	lstore_boot(boot);
	assert_true(strlen(boot) == 36);
	make_state_dir(fx, 0700);
	slot_path(fx, "b", path, sizeof(path));
	for (int i = 0; i < 3; i++) {
		/* The next slot 30 s off: a login now would wait for it. */
		snprintf(text, sizeof(text),
			 "flowslot-store 1 %" PRId64 "%s%s\n"
			 "0 s:%" PRId64 ":%" PRId64 ":0:5000000:1:%" PRId64 " 0\n",
			 now_us + 60 * S, boots[i][0] != '\0' ? " " : "", boots[i], now_us + 30 * S, now_us,
			 now_us);
		write_file(path, text, 0600);
		assert_int_equal(reserve(fx, "b", &p, &res), i == 0 ? SLOT_ADMIT : SLOT_QUEUED);
		assert_string_equal(fx->msg, ""); /* no file to complain of */
		assert_true(read_file(path, buf, sizeof(buf)) > 0);
		assert_true(strncmp(buf, "flowslot-store 1 ", 17) == 0);
		assert_non_null(strstr(strtok(buf, "\n"), boot));
	}
}

/* Issue 18 item 8: a file whose waiters are dead or lapsed, whose ghosts have expired and
   whose time has passed is dead, second line or not: pruned, so that a new key has a file of
   its own rather than sharing one. */
static void test_dead_files_pruned(void **state)
{
	struct fixture *fx = *state;
	const struct slot_params p = { .interval_us = 5 * S, .max_wait_us = 60 * S, .burst = 1 };
	const int64_t now_us = fstime_mono_us();
	struct slot_result res;
	char path[PATH_MAX], buf[512];

	make_state_dir(fx, 0700);
	for (int i = 0; i < LSLOT_FILES_MAX; i++) {
		snprintf(path, sizeof(path), "%s/slot.pr:user%d", fx->state, 100 + i);
		/* A place whose lease ended 70 s ago, a ghost gone 1 s ago: the key has expired. */
		snprintf(buf, sizeof(buf),
			 "flowslot-store 1 %" PRId64 "\n"
			 "0 s:%" PRId64 ":%" PRId64 ":0:5000000:1:0 0\n"
			 "%" PRId64 " w:0a:0b:- %ld\n"
			 "%" PRId64 " l:0a:0b:- %ld\n"
			 "%" PRId64 " g:0c:%" PRId64 ":%" PRId64 ":-:0 0\n",
			 now_us - S, now_us - 80 * S, now_us - 90 * S, now_us - 90 * S,
			 (long)getpid(), INT64_C(10000000000000000) + now_us - 70 * S,
			 (long)getpid(), INT64_C(20000000000000000) + now_us - S, now_us - 100 * S,
			 now_us - 61 * S);
		write_file(path, buf, 0600);
	}
	assert_int_equal(reserve(fx, "pr:user12", &p, &res), SLOT_ADMIT);
	assert_true(exists(fx, "slot.pr:user12"));
	assert_int_equal(count_entries(fx->state), 1);
}

/* Issue 18 item 8: a key whose logins wait in a shared file (too many live ones when it came)
   is read there: by its renewals, and by peek (flowslotctl status), which lslot_where names. */
static void test_shared_peek(void **state)
{
	struct fixture *fx = *state;
	const struct slot_params p = { .interval_us = 5 * S, .max_wait_us = 60 * S, .burst = 1 };
	struct slot_result res;
	struct slot_place first;
	char path[PATH_MAX], buf[64], where[PATH_MAX + 16];

	make_state_dir(fx, 0700);
	snprintf(buf, sizeof(buf), "%" PRId64 " %" PRId64 "\n", fstime_mono_us() + 3600 * S,
		 fstime_mono_us());
	for (int i = 0; i < LSLOT_FILES_MAX; i++) {
		snprintf(path, sizeof(path), "%s/slot.live%d", fx->state, i);
		write_file(path, buf, 0600);
	}
	assert_int_equal(reserve(fx, "pr:user12", &p, &res), SLOT_ADMIT);
	assert_false(exists(fx, "slot.pr:user12"));
	assert_int_equal(reserve(fx, "pr:user12", &p, &res), SLOT_QUEUED);
	first = fx->place;
	assert_int_equal(call(fx, "pr:user12", &p, SLOT_PEEK, &first, &res), SLOT_QUEUED);
	assert_int_equal(res.waiting, 1); /* the place held there */
	assert_true(res.wait_us > p.interval_us);
	lslot_where(fx->state, "pr:user12", where, sizeof(where));
	assert_non_null(strstr(where, "/slot.~shared."));
	assert_int_equal(call(fx, "pr:user12", &p, SLOT_RENEW, &first, &res), SLOT_QUEUED);
	assert_int_equal(res.position, 1);
}

struct dump {
	char *p;
	size_t n;
};

static int dump_add(lua_State *L, const void *p, size_t sz, void *ud)
{
	struct dump *d = ud;

	(void)L;
	d->p = realloc(d->p, d->n + sz);
	assert_non_null(d->p);
	memcpy(d->p + d->n, p, sz);
	d->n += sz;
	return 0;
}

/* The store runs the chunk built with it, not the source: the chunk loads on this machine (a
   foreign one would cost every call a compile), and is the source's own, byte for byte. */
static void test_chunk_is_source(void **state)
{
	lua_State *L = luaL_newstate();
	struct dump d = { NULL, 0 };

	(void)state;
	assert_non_null(L);
	assert_int_equal(luaL_loadbuffer(L, RSLOT_CHUNK, sizeof(RSLOT_CHUNK) - 1, "=slot.lua"), 0);
	lua_pop(L, 1);
	assert_int_equal(luaL_loadbuffer(L, RSLOT_SCRIPT, sizeof(RSLOT_SCRIPT) - 1, "=slot.lua"), 0);
	assert_int_equal(lua_dump(L, dump_add, &d), 0);
	assert_int_equal(d.n, sizeof(RSLOT_CHUNK) - 1);
	assert_memory_equal(d.p, RSLOT_CHUNK, d.n);
	free(d.p);
	lua_close(L);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, fixture_setup, fixture_teardown)
	const struct CMUnitTest tests[] = {
		T(test_admit_then_wait),
		T(test_burst_on_ghosts),
		T(test_gone_holder),
		T(test_gone_holder_other_ns),
		T(test_other_boot),
		T(test_dead_files_pruned),
		T(test_shared_peek),
		T(test_burst),
		T(test_refusal_keeps_file),
		T(test_state_dir_symlink),
		T(test_state_dir_modes),
		T(test_state_dir_not_dir),
		T(test_foreign_owner),
		T(test_slot_file_symlink),
		T(test_slot_file_unsafe),
		T(test_garbage_is_empty),
		T(test_garbage_lines),
		cmocka_unit_test(test_file_name),
		cmocka_unit_test(test_file_name_lengths),
		cmocka_unit_test(test_chunk_is_source),
		T(test_long_key_reserve),
		T(test_concurrent),
		T(test_concurrent_queued),
		T(test_renew_leave),
		T(test_reserve_again),
		T(test_lock_stuck),
		T(test_lock_stuck_twice),
		T(test_lock_stuck_many),
		T(test_own_fd_limit),
		T(test_lock_stuck_storm),
		T(test_lock_busy),
		T(test_many_hosts_pruned),
		T(test_many_hosts_live),
		T(test_prune_spares),
		T(test_concurrent_prune),
	};
#undef T

	/* TESTS=test_lock_stuck runs the tests whose names match (cmocka's filter). */
	if (getenv("TESTS") != NULL)
		cmocka_set_test_filter(getenv("TESTS"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
