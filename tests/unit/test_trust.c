/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for src/trust.c: every owner, mode and symbolic-link rule, on real files. Some
   files belong to another uid (nobody, 65534), so the tests that need them run as root. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "flowslot/trust.h"
#include "lockers.h"

#define NOBODY 65534

static char dir[] = "/tmp/test_trust.XXXXXX";
static char path[512];
static const char not_ours[] = "is not a directory owned by this uid and writable by no one else";

/* dir/name, in path. */
static const char *at(const char *name)
{
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return path;
}

/* Creates dir/name with mode and owner uid (ours: geteuid()). */
static const char *make_file(const char *name, mode_t mode, uid_t uid)
{
	int fd = open(at(name), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "x\n", 2), 2);
	assert_int_equal(fchown(fd, uid, (gid_t)-1), 0);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
	return path;
}

static struct stat stat_of(const char *p)
{
	struct stat st;

	assert_int_equal(lstat(p, &st), 0);
	return st;
}

static void need_root(void)
{
	if (geteuid() != 0)
		skip();
}

/* trust_open_root_file's answer for p: its why, or "" when it opened it. */
static const char *root_file(const char *p, bool secret)
{
	struct stat st;
	const char *why = "";
	int fd = trust_open_root_file(p, secret, &st, &why);

	if (fd >= 0) {
		assert_true((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
		assert_true(S_ISREG(st.st_mode));
		close(fd);
		return "";
	}
	assert_non_null(why);
	return why;
}

static void test_open_dir(void **state)
{
	const char *why = NULL;
	int fd;

	(void)state;
	/* Made 0700 when asked, and ours. */
	fd = trust_open_dir(at("state"), true, &why);
	assert_true(fd >= 0);
	assert_true((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
	close(fd);
	assert_int_equal(stat_of(at("state")).st_mode & 07777, 0700);
	/* Readable by others is fine; writable by them is not. */
	assert_int_equal(chmod(at("state"), 0755), 0);
	fd = trust_open_dir(at("state"), false, &why);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(chmod(at("state"), 0770), 0);
	why = NULL;
	assert_int_equal(trust_open_dir(at("state"), false, &why), -1);
	assert_int_equal(errno, EPERM);
	assert_string_equal(why, not_ours);
	assert_int_equal(chmod(at("state"), 0702), 0);
	assert_int_equal(trust_open_dir(at("state"), true, &why), -1);
	assert_int_equal(errno, EPERM);
	assert_int_equal(chmod(at("state"), 0700), 0);

	/* Missing, and not to be made. */
	why = NULL;
	assert_int_equal(trust_open_dir(at("missing"), false, &why), -1);
	assert_string_equal(why, "cannot open");
	/* A symbolic link to a good directory, and a file. */
	assert_int_equal(symlink("state", at("link")), 0);
	why = NULL;
	assert_int_equal(trust_open_dir(at("link"), true, &why), -1);
	assert_string_equal(why, "cannot open");
	make_file("plain", 0600, geteuid());
	assert_int_equal(trust_open_dir(at("plain"), false, &why), -1);
}

static void test_open_dir_other_uid(void **state)
{
	const char *why = NULL;

	(void)state;
	need_root();
	assert_int_equal(mkdir(at("theirs"), 0700), 0);
	assert_int_equal(chown(at("theirs"), NOBODY, NOBODY), 0);
	assert_int_equal(trust_open_dir(at("theirs"), true, &why), -1);
	assert_int_equal(errno, EPERM);
	assert_string_equal(why, not_ours);
}

static void test_own_file(void **state)
{
	char second[sizeof(path)];
	struct stat st;
	int fd;

	(void)state;
	st = stat_of(make_file("own", 0600, geteuid()));
	assert_true(trust_own_file(&st, 077));
	/* Each caller's rule for group and others: none at all, none to write, or any. */
	st = stat_of(make_file("own", 0640, geteuid()));
	assert_false(trust_own_file(&st, 077));
	assert_true(trust_own_file(&st, 022));
	st = stat_of(make_file("own", 0620, geteuid()));
	assert_false(trust_own_file(&st, 022));
	assert_true(trust_own_file(&st, 0));
	st = stat_of(make_file("own", 0606, geteuid()));
	assert_false(trust_own_file(&st, 022));

	/* A second name, a link, a directory: never ours. */
	snprintf(second, sizeof(second), "%s/own2", dir);
	assert_int_equal(link(make_file("own", 0600, geteuid()), second), 0);
	st = stat_of(at("own"));
	assert_int_equal(st.st_nlink, 2);
	assert_false(trust_own_file(&st, 0));
	assert_int_equal(unlink(second), 0);
	assert_int_equal(symlink("own", at("own-link")), 0);
	st = stat_of(at("own-link"));
	assert_false(trust_own_file(&st, 0));
	st = stat_of(dir);
	assert_false(trust_own_file(&st, 0));

	/* No name at all: removed since it was opened, and still the file we hold. */
	fd = open(make_file("own", 0600, geteuid()), O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(unlink(at("own")), 0);
	assert_int_equal(fstat(fd, &st), 0);
	close(fd);
	assert_int_equal(st.st_nlink, 0);
	assert_true(trust_own_file(&st, 077));
}

static void test_own_file_other_uid(void **state)
{
	struct stat st;

	(void)state;
	need_root();
	st = stat_of(make_file("their-file", 0600, NOBODY));
	assert_false(trust_own_file(&st, 0));
}

static void test_root_file(void **state)
{
	(void)state;
	need_root();
	assert_string_equal(root_file(make_file("conf", 0644, 0), false), "");
	assert_string_equal(root_file(make_file("conf", 0600, 0), true), "");
	/* Readable by others: fine for a configuration file, not for a password. */
	assert_string_equal(root_file(make_file("conf", 0640, 0), true),
			    "readable by group or others (chmod 0600)");
	assert_string_equal(root_file(make_file("conf", 0604, 0), true),
			    "readable by group or others (chmod 0600)");
	assert_string_equal(root_file(make_file("conf", 0664, 0), false),
			    "writable by group or others");
	assert_string_equal(root_file(make_file("conf", 0602, 0), true),
			    "writable by group or others");
	assert_string_equal(root_file(make_file("conf", 0644, NOBODY), false), "not owned by root");
	assert_string_equal(root_file(make_file("conf", 0600, NOBODY), true), "not owned by root");
	assert_string_equal(root_file(dir, false), "not a regular file");
	assert_int_equal(mkfifo(at("fifo"), 0600), 0);
	assert_string_equal(root_file(at("fifo"), false), "not a regular file");

	make_file("conf", 0600, 0);
	assert_int_equal(symlink("conf", at("conf-link")), 0);
	assert_string_equal(root_file(at("conf-link"), true), "a symbolic link");
	assert_string_equal(root_file("conf", false), "not an absolute path");
	assert_int_equal(errno, EINVAL);
	assert_string_equal(root_file(at("missing"), false), strerror(ENOENT));
	assert_int_equal(errno, ENOENT);
	assert_string_equal(root_file(make_file("conf", 0664, 0), false),
			    "writable by group or others");
	assert_int_equal(errno, EPERM);
}

/* trust_open_root_dir's answer for p: its why, or "" when it opened it. */
static const char *root_dir(const char *p)
{
	struct stat st;
	const char *why = "";
	int fd = trust_open_root_dir(p, &st, &why);

	if (fd >= 0) {
		assert_true((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
		assert_true(S_ISDIR(st.st_mode));
		close(fd);
		return "";
	}
	assert_non_null(why);
	return why;
}

/* The rules of trust_open_root_file, on a directory (tls_ca_dir=). */
static void test_root_dir(void **state)
{
	char sub[sizeof(path)];

	(void)state;
	need_root();
	snprintf(sub, sizeof(sub), "%s", at("certs"));
	assert_int_equal(mkdir(sub, 0755), 0);
	assert_string_equal(root_dir(sub), "");
	assert_int_equal(chmod(sub, 0775), 0);
	assert_string_equal(root_dir(sub), "writable by group or others");
	assert_int_equal(errno, EPERM);
	assert_int_equal(chmod(sub, 0757), 0);
	assert_string_equal(root_dir(sub), "writable by group or others");
	assert_int_equal(chmod(sub, 0755), 0);
	assert_int_equal(chown(sub, NOBODY, (gid_t)-1), 0);
	assert_string_equal(root_dir(sub), "not owned by root");
	assert_int_equal(chown(sub, 0, (gid_t)-1), 0);
	assert_int_equal(symlink("certs", at("certs-link")), 0);
	assert_string_equal(root_dir(path), "a symbolic link");
	assert_string_equal(root_dir(make_file("conf", 0644, 0)), "not a directory");
	assert_int_equal(mkfifo(at("dir-fifo"), 0600), 0);
	assert_string_equal(root_dir(path), "not a directory");
	assert_string_equal(root_dir("certs"), "not an absolute path");
	assert_string_equal(root_dir(at("missing-dir")), strerror(ENOENT));
	assert_int_equal(errno, ENOENT);
	assert_int_equal(unlink(at("certs-link")), 0);
	assert_int_equal(unlink(at("dir-fifo")), 0);
	assert_int_equal(rmdir(sub), 0);
}

/* The stopped holder of the test running, killed at its teardown should the test fail before
   it ends it (else it would hold the lock, and make's pipe, for ever). */
static pid_t holder;

/* locker_stopped, the holder remembered for the teardown. */
static pid_t stopped_holder(const char *p, int op)
{
	return holder = locker_stopped(p, op);
}

static void end_child(pid_t pid)
{
	locker_end(pid);
	holder = 0;
}

/* What a wait saw, printed before it is checked, so that a failure shows it. */
static void print_wait(const char *what, enum trust_lock_end end, const struct trust_lock_wait *w)
{
	print_message("%s: end %d, holder %ld, held %lld ms, waited %lld ms, %u polls, %u reads\n",
		      what, (int)end, (long)w->holder, (long long)(w->held_us / 1000),
		      (long long)(w->waited_us / 1000), w->tries, w->looks);
}

/* A file of the test's own, named name, opened, with a stopped holder of its lock (op), whose
   pid goes in *pid: the descriptor. */
static int held_file(const char *name, int op, pid_t *pid)
{
	int fd = open(make_file(name, 0600, geteuid()), O_RDWR | O_CLOEXEC);

	assert_true(fd >= 0);
	*pid = stopped_holder(path, op);
	return fd;
}

static int end_holder(void **state)
{
	(void)state;
	if (holder > 0)
		end_child(holder);
	return 0;
}

/* A stopped holder: told stuck once stuck_us has passed, not at the end of the whole wait,
   its pid read from /proc/locks; the wait costs at most a tenth of the flock calls that a
   poll every millisecond makes (it was 1 ms: ~780 calls a second). */
static void test_lock_stuck(void **state)
{
	struct trust_lock_wait w = { .wait_us = 20000000, .stuck_us = 1000000 };
	pid_t pid;
	int fd = held_file("lock", LOCK_EX, &pid);

	(void)state;
	assert_int_equal(trust_lock_watch(fd, LOCK_EX, &w), TRUST_LOCK_STUCK);
	assert_int_equal(w.holder, pid);
	assert_true(w.held_us >= w.stuck_us);
	assert_true(w.waited_us >= w.held_us && w.waited_us < w.wait_us);
	if ((int64_t)w.tries * 10000 > w.waited_us)
		fail_msg("%u flock calls in %lld ms", w.tries, (long long)(w.waited_us / 1000));
	print_message("%u flock calls in %lld ms\n", w.tries, (long long)(w.waited_us / 1000));

	/* Not judged (stuck_us 0): the whole wait, then ETIMEDOUT, as trust_lock says. */
	w = (struct trust_lock_wait){ .wait_us = 500000 };
	assert_int_equal(trust_lock_watch(fd, LOCK_EX, &w), TRUST_LOCK_BUSY);
	assert_int_equal(w.holder, 0);
	assert_true(w.waited_us >= w.wait_us);
	assert_int_equal(trust_lock(fd, LOCK_SH, 100000), -1);
	assert_int_equal(errno, ETIMEDOUT);

	end_child(pid);
	assert_int_equal(trust_lock(fd, LOCK_EX, 100000), 0);
	close(fd);
}

/* A wait shorter than stuck_us (a leave, flowslotctl, a login's try that keeps to its slot):
   a holder kept through the whole of it is stuck, named, if that is a quarter of stuck_us at
   least, and the wait ends when it was to; a shorter wait ends busy. Where the wait and
   stuck_us are alike, it is stuck whatever the timer's slack, not busy by a few µs. */
static void test_lock_stuck_short_wait(void **state)
{
	struct trust_lock_wait w = { .wait_us = 600000, .stuck_us = 2000000 };
	enum trust_lock_end end;
	pid_t pid;
	int fd = held_file("short", LOCK_EX, &pid);

	(void)state;
	end = trust_lock_watch(fd, LOCK_EX, &w);
	print_wait("600 ms wait", end, &w);
	assert_int_equal(end, TRUST_LOCK_STUCK);
	assert_int_equal(w.holder, pid);
	assert_true(w.waited_us >= w.wait_us && w.waited_us < w.stuck_us);
	assert_true(w.held_us >= w.stuck_us / 4);

	w = (struct trust_lock_wait){ .wait_us = 100000, .stuck_us = 2000000 };
	assert_int_equal(trust_lock_watch(fd, LOCK_EX, &w), TRUST_LOCK_BUSY);
	assert_true(w.waited_us >= w.wait_us);

	for (int i = 0; i < 3; i++) {
		w = (struct trust_lock_wait){ .wait_us = 1000000, .stuck_us = 1000000 };
		assert_int_equal(trust_lock_watch(fd, LOCK_EX, &w), TRUST_LOCK_STUCK);
		assert_int_equal(w.holder, pid);
	}
	end_child(pid);
	close(fd);
}

/* Holders that come and go, changing the file (logins): waited out, never stuck, and told
   apart by the file alone, /proc/locks read at the wait's start and end, not at each poll
   (each read holds up every file lock on the host). Holders that change nothing are watched in
   /proc/locks and still told from a stuck one. */
static void test_lock_busy_costs_the_host_nothing(void **state)
{
	/* stuck_us 8 s: /proc/locks is read once the file stood unchanged for 1 s, which a
	   writing ring never lets it, however late its children run. */
	struct trust_lock_wait w = { .wait_us = 1500000, .stuck_us = 8000000 };
	const char *p = make_file("ring", 0600, geteuid());
	int fd = open(p, O_RDWR | O_CLOEXEC);
	pid_t ring[2];

	(void)state;
	assert_true(fd >= 0);
	locker_ring(p, 3000000, true, ring);
	assert_int_equal(trust_lock_watch(fd, LOCK_EX, &w), TRUST_LOCK_BUSY);
	assert_true(w.waited_us >= w.wait_us);
	print_message("writers: %u polls, %u reads of /proc/locks in %lld ms\n", w.tries, w.looks,
		      (long long)(w.waited_us / 1000));
	if (w.looks > 2)
		fail_msg("/proc/locks read %u times in %u polls", w.looks, w.tries);
	locker_ring_end(ring);

	w = (struct trust_lock_wait){ .wait_us = 1500000, .stuck_us = 1000000 };
	locker_ring(p, 3000000, false, ring);
	assert_int_equal(trust_lock_watch(fd, LOCK_EX, &w), TRUST_LOCK_BUSY);
	print_message("holders that write nothing: %u polls, %u reads\n", w.tries, w.looks);
	locker_ring_end(ring);
	close(fd);
}

/* A shared holder blocks an exclusive lock and is seen as well; a shared lock goes through. */
static void test_lock_shared(void **state)
{
	struct trust_lock_wait w = { .wait_us = 20000000, .stuck_us = 300000 };
	pid_t pid;
	int fd = held_file("shared", LOCK_SH, &pid);

	(void)state;
	assert_int_equal(trust_lock_watch(fd, LOCK_EX, &w), TRUST_LOCK_STUCK);
	assert_int_equal(w.holder, pid);
	w = (struct trust_lock_wait){ .wait_us = 100000, .stuck_us = 300000 };
	assert_int_equal(trust_lock_watch(fd, LOCK_SH, &w), TRUST_LOCKED);
	assert_int_equal(w.tries, 1);
	end_child(pid);
	close(fd);
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
	char cmd[600];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_dir),
		cmocka_unit_test(test_open_dir_other_uid),
		cmocka_unit_test(test_own_file),
		cmocka_unit_test(test_own_file_other_uid),
		cmocka_unit_test(test_root_file),
		cmocka_unit_test(test_root_dir),
		cmocka_unit_test_teardown(test_lock_stuck, end_holder),
		cmocka_unit_test_teardown(test_lock_stuck_short_wait, end_holder),
		cmocka_unit_test(test_lock_busy_costs_the_host_nothing),
		cmocka_unit_test_teardown(test_lock_shared, end_holder),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
