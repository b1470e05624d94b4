/* SPDX-License-Identifier: BSD-3-Clause */
/* Children that hold a file's flock as the lock tests need it: one stopped while it holds it,
   and two that hold it in turn so that it is never free. Included by the tests that use them,
   after cmocka.h (a failed step fails the test). */
#ifndef FLOWSLOT_TEST_LOCKERS_H
#define FLOWSLOT_TEST_LOCKERS_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "flowslot/fstime.h"

/* A child that takes path's lock (op) and stops itself there (a user's su stopped with ^Z
   while it held the lock): its pid, once it is stopped. It stays stopped, the lock held, until
   killed: should its process group be orphaned (the shell that started the suite gone), the
   kernel sends it SIGHUP and SIGCONT, which it ignores and answers by stopping again. */
static pid_t locker_stopped(const char *path, int op)
{
	int ready[2], status;
	char c;
	pid_t pid;

	assert_int_equal(pipe(ready), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(path, O_RDWR);

		close(ready[0]);
		signal(SIGHUP, SIG_IGN);
		if (fd < 0 || flock(fd, op) != 0 || write(ready[1], "x", 1) != 1)
			_exit(1);
		for (;;)
			raise(SIGSTOP);
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	assert_int_equal(waitpid(pid, &status, WUNTRACED), pid);
	assert_true(WIFSTOPPED(status));
	return pid;
}

/* Ends a child for good. */
static void locker_end(pid_t pid)
{
	int status;

	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
}

/* Two children that hold path's lock shared in turn, each taking it before the other lets it
   go, so that it is never free, for run_us (a burst of short holders, which a LOCK_NB poll
   never slips between); started with the first holding it. With writes, each holder changes
   the file as it takes the lock (its first byte, as logins rewrite the schedule). */
static void locker_ring(const char *path, int64_t run_us, bool writes, pid_t pids[2])
{
	const struct timespec hold = { .tv_nsec = 20000000 };
	const int64_t end_us = fstime_mono_us() + run_us;
	int inbox[2][2], ready[2];
	char c;

	assert_int_equal(pipe(inbox[0]), 0);
	assert_int_equal(pipe(inbox[1]), 0);
	assert_int_equal(pipe(ready), 0);
	for (int i = 0; i < 2; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] != 0)
			continue;
		int fd = open(path, O_RDWR), in = inbox[i][0], out = inbox[1 - i][1];
		char mark = 'a';

		/* Only its own ends, so that should the other die, a read here ends (EOF). */
		close(inbox[i][1]);
		close(inbox[1 - i][0]);
		close(ready[0]);
		if (i == 1)
			close(ready[1]);
		if (fd < 0)
			_exit(1);
		if (i == 0 && (flock(fd, LOCK_SH) != 0 || write(ready[1], "x", 1) != 1))
			_exit(1);
		/* 'g': take it; 'a': taken; 'q': the run is over. */
		if (i == 1 && (read(in, &c, 1) != 1 || c != 'g' || flock(fd, LOCK_SH) != 0 ||
			       write(out, "a", 1) != 1))
			_exit(c == 'q' ? 0 : 1);
		for (;;) {
			if (writes && pwrite(fd, &mark, 1, 0) != 1)
				_exit(1);
			mark = mark == 'z' ? 'a' : (char)(mark + 1);
			nanosleep(&hold, NULL);
			if (fstime_mono_us() >= end_us) {
				flock(fd, LOCK_UN);
				_exit(write(out, "q", 1) == 1 ? 0 : 1);
			}
			if (write(out, "g", 1) != 1 || read(in, &c, 1) != 1 || c != 'a')
				_exit(1);
			flock(fd, LOCK_UN);
			if (read(in, &c, 1) != 1 || c == 'q')
				_exit(0);
			if (flock(fd, LOCK_SH) != 0 || write(out, "a", 1) != 1)
				_exit(1);
		}
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	for (int i = 0; i < 2; i++) {
		close(inbox[i][0]);
		close(inbox[i][1]);
	}
}

/* Waits for a ring's two children, which must have run as designed. */
static void locker_ring_end(const pid_t pids[2])
{
	for (int i = 0; i < 2; i++) {
		int status;

		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
}

#endif
