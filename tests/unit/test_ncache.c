/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for src/ncache.c's heard table: the next slot each schedule's host last heard of,
   bounded whatever the number of schedules (and of user names, in key=%u), the entries whose
   slot passed given up first, and none waited for. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "flowslot/fstime.h"
#include "flowslot/ncache.h"

#define SECOND INT64_C(1000000)

struct fixture {
	char dir[64];
	char table[128];
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	assert_non_null(fx);
	strcpy(fx->dir, "/tmp/test_ncache.XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	snprintf(fx->table, sizeof(fx->table), "%s/%s", fx->dir, NCACHE_HEARD_FILE);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->dir);
	free(fx);
	return system(cmd);
}

/* The name of schedule i, in out. */
static const char *key(int i, char *out, size_t outsz)
{
	snprintf(out, outsz, "heard.%016x", (unsigned)i * 2654435761u);
	return out;
}

static int64_t heard(const struct fixture *fx, int i)
{
	char name[NCACHE_NAME_MAX];

	return ncache_heard_get(fx->dir, key(i, name, sizeof(name)));
}

static int put(const struct fixture *fx, int i, int64_t next_us)
{
	char name[NCACHE_NAME_MAX];

	return ncache_heard_put(fx->dir, key(i, name, sizeof(name)), next_us);
}

/* The files in dir (. and .. aside). */
static int files_in(const char *dir)
{
	DIR *d = opendir(dir);
	const struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL)
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

/* Three times as many schedules as the table holds, every slot still to come (as key=%u and
   as many user names tried in an interval): one file of fixed size, NCACHE_HEARD_MAX entries
   kept, those whose slot comes last, each still answered as it was put. */
static void test_bounded(void **state)
{
	struct fixture *fx = *state;
	const int n = 3 * NCACHE_HEARD_MAX;
	const int64_t base_us = fstime_mono_us() + 60 * SECOND;
	struct stat st;
	int kept = 0;

	for (int i = 0; i < n; i++)
		assert_int_equal(put(fx, i, base_us + i * 1000), 0);
	assert_int_equal(files_in(fx->dir), 1);
	assert_int_equal(stat(fx->table, &st), 0);
	assert_true(st.st_size <= NCACHE_HEARD_MAX * NCACHE_HEARD_ENTRY_SIZE);
	assert_int_equal(st.st_mode & 07777, 0600);
	for (int i = 0; i < n; i++) {
		int64_t put_us = base_us + i * 1000 - fstime_mono_us(), far_us = heard(fx, i);

		if (far_us == 0)
			continue;
		kept++;
		assert_true(i >= n - NCACHE_HEARD_MAX);
		assert_true(far_us <= put_us && far_us > put_us - 5 * SECOND);
	}
	assert_int_equal(kept, NCACHE_HEARD_MAX);
}

/* An entry still needed outlives a table's worth of others once their slots passed, even when
   those that come next are further off than it is; only with the table full of slots to come
   does it give its place, as the one whose slot comes first. */
static void test_expired_go_first(void **state)
{
	struct fixture *fx = *state;
	const int needed = 0, n = NCACHE_HEARD_MAX;
	int64_t far_us;

	assert_int_equal(put(fx, needed, fstime_mono_us() + 60 * SECOND), 0);
	for (int i = 1; i < n; i++)
		assert_int_equal(put(fx, i, fstime_mono_us() + 20000), 0);
	fstime_sleep_until(fstime_mono_us() + 30000);
	for (int i = 1; i < n; i++)
		assert_int_equal(heard(fx, i), 0);
	for (int i = n; i < 2 * n - 1; i++)
		assert_int_equal(put(fx, i, fstime_mono_us() + 120 * SECOND), 0);
	far_us = heard(fx, needed);
	assert_true(far_us > 50 * SECOND && far_us <= 60 * SECOND);
	for (int i = n; i < 2 * n - 1; i++)
		assert_true(heard(fx, i) > 110 * SECOND);
	assert_int_equal(files_in(fx->dir), 1);
	/* Full of slots to come: the next schedule takes the place of the one that comes first. */
	assert_int_equal(put(fx, 2 * n, fstime_mono_us() + 90 * SECOND), 0);
	assert_int_equal(heard(fx, needed), 0);
	assert_true(heard(fx, 2 * n) > 80 * SECOND);
	assert_true(heard(fx, n) > 110 * SECOND);
}

/* The last answer heard wins, on the entry of its own name. */
static void test_last_heard_wins(void **state)
{
	struct fixture *fx = *state;

	assert_int_equal(heard(fx, 7), 0);
	assert_int_equal(put(fx, 7, fstime_mono_us() + 9 * SECOND), 0);
	assert_int_equal(put(fx, 8, fstime_mono_us() + 2 * SECOND), 0);
	assert_true(heard(fx, 7) > 8 * SECOND);
	assert_int_equal(put(fx, 7, fstime_mono_us() + 3 * SECOND), 0);
	assert_true(heard(fx, 7) > 2 * SECOND && heard(fx, 7) <= 3 * SECOND);
	assert_true(heard(fx, 8) > SECOND && heard(fx, 8) <= 2 * SECOND);
	/* A slot passed, or further off than any schedule's horizon, is none. */
	assert_int_equal(put(fx, 7, fstime_mono_us() - 1), 0);
	assert_int_equal(heard(fx, 7), 0);
}

/* Writers at once, fewer schedules than the table holds: none takes another's entry, and
   every one is kept. */
static void test_writers_at_once(void **state)
{
	struct fixture *fx = *state;
	enum { WRITERS = 8, EACH = (NCACHE_HEARD_MAX - 16) / WRITERS };
	const int64_t next_us = fstime_mono_us() + 60 * SECOND;
	pid_t pid[WRITERS];
	int go[2], status;

	assert_int_equal(pipe(go), 0);
	for (int w = 0; w < WRITERS; w++) {
		pid[w] = fork();
		assert_true(pid[w] >= 0);
		if (pid[w] == 0) {
			char c;
			int failed = 0;

			close(go[1]);
			if (read(go[0], &c, 1) != 0)
				_exit(2);
			for (int i = 0; i < EACH; i++)
				failed += put(fx, w * EACH + i, next_us + i) != 0;
			_exit(failed != 0);
		}
	}
	close(go[0]);
	close(go[1]); /* all start */
	for (int w = 0; w < WRITERS; w++) {
		assert_int_equal(waitpid(pid[w], &status, 0), pid[w]);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	for (int i = 0; i < WRITERS * EACH; i++)
		assert_true(heard(fx, i) > 50 * SECOND);
}

/* A writer stopped with an entry locked holds up nobody: the others write elsewhere, and
   readers take no lock. With every entry held (another open file description's locks, as a
   stopped process's), a write gives up at once, and what was heard is still read. */
static void test_writer_stopped(void **state)
{
	struct fixture *fx = *state;
	struct flock half = { .l_type = F_WRLCK,
			      .l_whence = SEEK_SET,
			      .l_start = 0,
			      .l_len = NCACHE_HEARD_MAX / 2 * NCACHE_HEARD_ENTRY_SIZE };
	int64_t began_us;
	int fd;

	assert_int_equal(put(fx, 1, fstime_mono_us() + 30 * SECOND), 0);
	fd = open(fx->table, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fcntl(fd, F_OFD_SETLK, &half), 0);
	began_us = fstime_mono_us();
	for (int i = 2; i < 40; i++)
		assert_int_equal(put(fx, i, fstime_mono_us() + 30 * SECOND), 0);
	for (int i = 1; i < 40; i++)
		assert_true(heard(fx, i) > 20 * SECOND);
	half.l_len = 0; /* the whole file */
	assert_int_equal(fcntl(fd, F_OFD_SETLK, &half), 0);
	assert_int_equal(put(fx, 1, fstime_mono_us() + 50 * SECOND), -1);
	assert_int_equal(put(fx, 99, fstime_mono_us() + 50 * SECOND), -1);
	assert_true(heard(fx, 1) > 20 * SECOND && heard(fx, 1) <= 30 * SECOND);
	assert_true(fstime_mono_us() - began_us < SECOND);
	close(fd); /* and with it the locks */
	assert_int_equal(put(fx, 99, fstime_mono_us() + 50 * SECOND), 0);
	assert_true(heard(fx, 99) > 40 * SECOND);
}

/* A table that is not ours to trust is neither read nor written; garbage in it is no entry,
   and is written over. */
static void test_untrusted_and_garbage(void **state)
{
	struct fixture *fx = *state;
	char junk[NCACHE_HEARD_MAX * NCACHE_HEARD_ENTRY_SIZE];
	int fd;

	assert_int_equal(put(fx, 1, fstime_mono_us() + 30 * SECOND), 0);
	assert_int_equal(chmod(fx->table, 0644), 0);
	assert_int_equal(heard(fx, 1), 0);
	assert_int_equal(put(fx, 1, fstime_mono_us() + 30 * SECOND), -1);
	assert_int_equal(chmod(fx->table, 0600), 0);
	assert_true(heard(fx, 1) > 20 * SECOND);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (char)(i * 131 + 7);
	fd = open(fx->table, O_WRONLY | O_TRUNC | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
	close(fd);
	assert_int_equal(heard(fx, 1), 0);
	assert_int_equal(put(fx, 1, fstime_mono_us() + 30 * SECOND), 0);
	assert_true(heard(fx, 1) > 20 * SECOND);
}

/* The table, once made, replaces 0.11.0's files of one entry each: they go, and nothing else. */
static void test_old_files_removed(void **state)
{
	struct fixture *fx = *state;
	static const char *const old[] = { "heard.0123456789abcdef",
					   "heard.0123456789abcdef.tmp.42.0000beef" };
	static const char *const kept[] = { "node.0123456789abcdef.master", "slot.heard.x" };
	char path[256];
	int fd;

	for (size_t i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", fx->dir, old[i]);
		assert_true((fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) >= 0);
		close(fd);
		snprintf(path, sizeof(path), "%s/%s", fx->dir, kept[i]);
		assert_true((fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) >= 0);
		close(fd);
	}
	assert_int_equal(put(fx, 1, fstime_mono_us() + 30 * SECOND), 0);
	assert_int_equal(files_in(fx->dir), 3);
	for (size_t i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", fx->dir, kept[i]);
		assert_int_equal(access(path, F_OK), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_expired_go_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_last_heard_wins, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writers_at_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writer_stopped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_untrusted_and_garbage, setup, teardown),
		cmocka_unit_test_setup_teardown(test_old_files_removed, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
