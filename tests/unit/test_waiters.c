/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for src/waiters.c: the host's own waiters, counted while their process holds its
   slot, and never after it is gone, however it went. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "flowslot/waiters.h"

#define S INT64_C(1000000)

struct fixture {
	char root[64];
	char state[128]; /* made by waiter_join */
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	assert_non_null(fx);
	strcpy(fx->root, "/tmp/test_waiters.XXXXXX");
	assert_non_null(mkdtemp(fx->root));
	snprintf(fx->state, sizeof(fx->state), "%s/state", fx->root);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	char cmd[200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->root);
	free(fx);
	return system(cmd);
}

static struct waiters_view view(const struct fixture *fx, const char *key, int64_t now_us)
{
	struct waiters_view v;
	const char *why = NULL;

	assert_int_equal(waiters_read(fx->state, key, now_us, &v, &why), 0);
	return v;
}

/* No table yet: nobody waits, and nothing is made by reading. */
static void test_none(void **state)
{
	struct fixture *fx = *state;
	struct waiters_view v = view(fx, "k", 10 * S);

	assert_int_equal(v.count, 0);
	assert_int_equal(v.longest_us, -1);
	assert_int_equal(access(fx->state, F_OK), -1);
}

/* Waiters of two schedules: each counted under its own, the longest wait from the oldest; a
   slot given back is taken again by the next waiter. */
static void test_join_leave(void **state)
{
	struct fixture *fx = *state;
	struct waiter a, b, c, d;
	struct waiters_view v;
	struct stat st;
	char path[200];

	waiter_join(NULL, fx->state, "k", 1 * S, 0, &a);
	waiter_join(NULL, fx->state, "k", 3 * S, 0, &b);
	waiter_join(NULL, fx->state, "other", 0, 0, &c);
	assert_true(a.fd >= 0 && b.fd >= 0 && c.fd >= 0);
	assert_int_equal(fcntl(a.fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	/* Held for reading only: a table open for writing while logins wait would keep its file
	   system from being remounted read-only (the campaign's statedir-ro could not). */
	assert_int_equal(fcntl(a.fd, F_GETFL) & O_ACCMODE, O_RDONLY);
	v = view(fx, "k", 10 * S);
	assert_int_equal(v.count, 2);
	assert_int_equal(v.longest_us, 9 * S);
	assert_int_equal(view(fx, "other", 10 * S).count, 1);
	waiter_leave(&a);
	assert_int_equal(a.fd, -1);
	waiter_leave(&a); /* again: nothing */
	v = view(fx, "k", 10 * S);
	assert_int_equal(v.count, 1);
	assert_int_equal(v.longest_us, 7 * S);
	/* a's slot, the first, is free again: d takes it, and the table does not grow. */
	waiter_join(NULL, fx->state, "k", 9 * S, 0, &d);
	assert_int_equal(d.slot, 0);
	snprintf(path, sizeof(path), "%s/" WAITERS_FILE, fx->state);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 3 * 32);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(view(fx, "k", 10 * S).count, 2);
	waiter_leave(&b);
	waiter_leave(&c);
	waiter_leave(&d);
	assert_int_equal(view(fx, "k", 10 * S).count, 0);
}

/* The slots of waiters on a shared schedule (Redis): the latest of them is what a login that
   falls back keeps clear of. A waiter on the host's own schedule tells none; a slot moved
   later or sooner is read as it now stands, and one given back is not read. */
static void test_slots(void **state)
{
	struct fixture *fx = *state;
	struct waiter a, b, l;
	struct waiters_view v;

	waiter_join(NULL, fx->state, "k", 1 * S, 4 * S, &a);
	waiter_join(NULL, fx->state, "k", 2 * S, 7 * S + 1, &b);
	waiter_join(NULL, fx->state, "k", 3 * S, 0, &l);
	assert_true(a.fd >= 0 && b.fd >= 0 && l.fd >= 0);
	v = view(fx, "k", 3 * S);
	assert_int_equal(v.count, 3);
	assert_int_equal(v.last_slot_us, 7 * S + 1000); /* to the ms, never sooner */
	assert_int_equal(view(fx, "other", 3 * S).last_slot_us, -1);
	waiter_slot(&a, 9 * S);
	assert_int_equal(view(fx, "k", 3 * S).last_slot_us, 9 * S);
	waiter_slot(&a, 5 * S);
	waiter_slot(NULL, 5 * S); /* none: nothing */
	assert_int_equal(view(fx, "k", 3 * S).last_slot_us, 7 * S + 1000);
	waiter_leave(&b);
	assert_int_equal(view(fx, "k", 3 * S).last_slot_us, 5 * S);
	waiter_leave(&a);
	assert_int_equal(view(fx, "k", 3 * S).last_slot_us, -1);
	waiter_slot(&a, 5 * S); /* given back: nothing */
	waiter_leave(&l);
}

/* A waiter killed without a word (SIGKILL, as sshd's LoginGraceTime ends one) is counted no
   more, though its record stays in the table. */
static void test_killed(void **state)
{
	struct fixture *fx = *state;
	int ready[2], status;
	char c;
	pid_t pid;

	assert_int_equal(pipe(ready), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct waiter w;

		waiter_join(NULL, fx->state, "k", 1 * S, 0, &w);
		if (write(ready[1], w.fd >= 0 ? "y" : "n", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	assert_int_equal(c, 'y');
	assert_int_equal(view(fx, "k", 2 * S).count, 1);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(view(fx, "k", 2 * S).count, 0);
}

/* A table that is not ours to trust (open to others) is neither used nor read. */
static void test_unsafe(void **state)
{
	struct fixture *fx = *state;
	struct waiters_view v;
	struct waiter w;
	const char *why = NULL;
	char path[200];
	int fd;

	assert_int_equal(mkdir(fx->state, 0700), 0);
	snprintf(path, sizeof(path), "%s/" WAITERS_FILE, fx->state);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	assert_int_equal(fchmod(fd, 0644), 0);
	close(fd);
	waiter_join(NULL, fx->state, "k", 0, 0, &w);
	assert_int_equal(w.fd, -1);
	assert_int_equal(waiters_read(fx->state, "k", 0, &v, &why), -1);
	assert_non_null(why);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_none, setup, teardown),
		cmocka_unit_test_setup_teardown(test_join_leave, setup, teardown),
		cmocka_unit_test_setup_teardown(test_slots, setup, teardown),
		cmocka_unit_test_setup_teardown(test_killed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unsafe, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
