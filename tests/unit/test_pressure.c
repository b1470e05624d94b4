/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for src/pressure.c: pressure=, the PSI files, the share, and the samples the
   host's logins share in state_dir. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flowslot/fstime.h"
#include "flowslot/hash.h"
#include "flowslot/pressure.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* The measurement's sleeps, counted (linked with --wrap=fstime_sleep_until), then slept. */
static int sleeps;

void __real_fstime_sleep_until(int64_t deadline_us);
void __wrap_fstime_sleep_until(int64_t deadline_us);

void __wrap_fstime_sleep_until(int64_t deadline_us)
{
	sleeps++;
	__real_fstime_sleep_until(deadline_us);
}

static void test_spec_good(void **state)
{
	int64_t ppm[PRESSURE_RES_N];
	const char *why = NULL;

	(void)state;
	assert_int_equal(pressure_parse_spec("cpu:40", ppm, &why), 0);
	assert_int_equal(ppm[PRESSURE_CPU], 400000);
	assert_int_equal(ppm[PRESSURE_IO], 0);
	assert_int_equal(ppm[PRESSURE_MEMORY], 0);
	assert_int_equal(pressure_parse_spec("memory:0.5,io:99.9999,cpu:100", ppm, &why), 0);
	assert_int_equal(ppm[PRESSURE_CPU], 1000000);
	assert_int_equal(ppm[PRESSURE_IO], 999999);
	assert_int_equal(ppm[PRESSURE_MEMORY], 5000);
}

static void test_spec_bad(void **state)
{
	static const char *const cases[] = {
		"",	     "cpu",	     "cpu:",
		"cpu:0",     "cpu:100.0001", "cpu:1000",
		"io:5,io:6", "cpu:5,",	     ",cpu:5",
		"net:5",     "cpu:5:6",	     "cpu:1.00001",
		"cpu:+5",    "cpu:5 ",	     "cpu :5",
		"cpu:0x10",  "cpu:nan",	     "cpu:99999999999999999999",
	};
	int64_t ppm[PRESSURE_RES_N] = { 7, 8, 9 };

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const char *why = NULL;

		if (pressure_parse_spec(cases[i], ppm, &why) != -1 || why == NULL)
			fail_msg("\"%s\" accepted", cases[i]);
		/* Left as it was. */
		assert_int_equal(ppm[0], 7);
		assert_int_equal(ppm[2], 9);
	}
}

static void test_file_good(void **state)
{
	static const char cpu_old[] = "some avg10=0.00 avg60=1.50 avg300=100.00 total=123456\n";
	static const char full[] = "some avg10=12.34 avg60=5.00 avg300=0.10 total=987654321\n"
				   "full avg10=1.00 avg60=0.00 avg300=0.00 total=42\n";
	const char *why = NULL;
	int64_t total = -1;

	(void)state;
	assert_int_equal(pressure_parse_file(cpu_old, PRESSURE_CPU, &total, &why), 0);
	assert_int_equal(total, 123456);
	for (int r = 0; r < PRESSURE_RES_N; r++) {
		assert_int_equal(pressure_parse_file(full, (enum pressure_res)r, &total, &why), 0);
		assert_int_equal(total, 987654321);
	}
}

static void test_file_bad(void **state)
{
	static const char *const any[] = {
		"",
		"\n",
		"some avg10=0.00 avg60=0.00 avg300=0.00 total=5",
		"some avg10=0.00 avg60=0.00 avg300=0.00 total=-5\n",
		"some avg10=0.00 avg60=0.00 avg300=0.00 total=5x\n",
		"some avg10=0.00 avg60=0.00 avg300=0.00 total=\n",
		"some avg10=0.00 avg60=0.00 total=5\n",
		"some avg10=0.00  avg60=0.00 avg300=0.00 total=5\n",
		"some avg10=0.001 avg60=0.00 avg300=0.00 total=5\n",
		"full avg10=0.00 avg60=0.00 avg300=0.00 total=5\n",
		"some avg10=0.00 avg60=0.00 avg300=0.00 total=99999999999999999999\n",
		"some avg10=0.00 avg60=0.00 avg300=0.00 total=5\nfull avg10=0.00 avg60=0.00 "
		"avg300=0.00 total=5\nextra\n",
		"some avg10=0.00 avg60=0.00 avg300=0.00 total=5\nfull total=5\n",
		"SOME avg10=0.00 avg60=0.00 avg300=0.00 total=5\n",
	};
	/* Only cpu's may lack the full line (kernels before 5.13). */
	static const char some_only[] = "some avg10=0.00 avg60=0.00 avg300=0.00 total=5\n";
	int64_t total = 77;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(any); i++) {
		for (int r = 0; r < PRESSURE_RES_N; r++) {
			const char *why = NULL;

			if (pressure_parse_file(any[i], (enum pressure_res)r, &total, &why) != -1 ||
			    why == NULL)
				fail_msg("case %zu accepted for %s", i, pressure_res_name[r]);
		}
	}
	for (int r = PRESSURE_IO; r < PRESSURE_RES_N; r++) {
		const char *why = NULL;

		assert_int_equal(pressure_parse_file(some_only, (enum pressure_res)r, &total, &why),
				 -1);
	}
	assert_int_equal(total, 77);
}

static void test_share(void **state)
{
	(void)state;
	/* 250 ms stalled of 1 s: 25%. */
	assert_int_equal(pressure_share_ppm(1000, 5000000, 251000, 6000000), 250000);
	assert_int_equal(pressure_share_ppm(0, 0, 0, 400000), 0);
	/* More stalled than elapsed (a rounding of the kernel's): all of it. */
	assert_int_equal(pressure_share_ppm(0, 0, 500000, 400000), PRESSURE_PPM_ALL);
	/* Unknown: a reading missing, the counter gone back, no time between. */
	assert_int_equal(pressure_share_ppm(-1, 0, 5, 400000), -1);
	assert_int_equal(pressure_share_ppm(5, 0, -1, 400000), -1);
	assert_int_equal(pressure_share_ppm(500, 0, 400, 400000), -1);
	assert_int_equal(pressure_share_ppm(0, 400000, 5, 400000), -1);
	assert_int_equal(pressure_share_ppm(0, 400000, 5, 0), -1);
	/* Large totals (a host up for years) do not overflow. */
	assert_int_equal(
	    pressure_share_ppm(INT64_C(900000000000000), 0, INT64_C(900000000100000), 1000000),
	    100000);
}

static void test_over(void **state)
{
	const int64_t limit[PRESSURE_RES_N] = { 400000, 0, 100000 };
	int64_t share[PRESSURE_RES_N] = { 399999, 900000, 99999 };

	(void)state;
	/* Under every limit; an unwatched resource never holds. */
	assert_int_equal(pressure_over(limit, share), -1);
	/* At the limit holds. */
	share[PRESSURE_CPU] = 400000;
	assert_int_equal(pressure_over(limit, share), PRESSURE_CPU);
	/* The one furthest over its limit names the hold: 2x for memory, 1x for cpu. */
	share[PRESSURE_MEMORY] = 200000;
	assert_int_equal(pressure_over(limit, share), PRESSURE_MEMORY);
	/* Unknown is no pressure. */
	share[PRESSURE_CPU] = share[PRESSURE_MEMORY] = -1;
	assert_int_equal(pressure_over(limit, share), -1);
}

/* A directory of fake pressure files and a state_dir, under one temporary directory. */
struct fx {
	char root[64], dir[96], state[96];
};

static void fx_file(const struct fx *fx, const char *name, const char *text)
{
	char path[160];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", fx->dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void fx_total(const struct fx *fx, const char *name, long long total)
{
	char text[256];

	snprintf(text, sizeof(text),
		 "some avg10=0.00 avg60=0.00 avg300=0.00 total=%lld\n"
		 "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
		 total);
	fx_file(fx, name, text);
}

static int fx_setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	assert_non_null(fx);
	strcpy(fx->root, "/tmp/test_pressure.XXXXXX");
	assert_non_null(mkdtemp(fx->root));
	snprintf(fx->dir, sizeof(fx->dir), "%s/psi", fx->root);
	snprintf(fx->state, sizeof(fx->state), "%s/state", fx->root);
	assert_int_equal(mkdir(fx->dir, 0700), 0);
	*state = fx;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *fx = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->root);
	assert_int_equal(system(cmd), 0);
	free(fx);
	return 0;
}

/* A sample stored by another login 250 ms to 2 s ago is the base: no sleep, and the share is
   the growth since then. Without it the login would sample twice, 250 ms apart, and see the
   unchanged file as no pressure. */
static void test_measure_uses_store(void **state)
{
	const struct fx *fx = *state;
	const int64_t limit[PRESSURE_RES_N] = { 100000, 0, 0 };
	struct pressure_gauge g = { .dir = fx->dir, .state_dir = fx->state, .limit_ppm = limit };
	int64_t share[PRESSURE_RES_N], at_us = fstime_mono_us() - 500000;
	char path[200];
	FILE *f;

	fx_total(fx, "cpu", 1000000 + 300000);
	assert_int_equal(mkdir(fx->state, 0700), 0);
	snprintf(path, sizeof(path), "%s/pressure.%016" PRIx64, fx->state,
		 hash_str(HASH_START, fx->dir));
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%" PRId64 " 1000000 -1 -1\n", at_us);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, 0600), 0);
	pressure_measure(&g, share);
	/* 300 ms stalled over a little more than 500 ms. */
	if (share[PRESSURE_CPU] <= 300000 || share[PRESSURE_CPU] > 600000)
		fail_msg("share %" PRId64 " ppm, want 30%% to 60%%", share[PRESSURE_CPU]);
	assert_int_equal(share[PRESSURE_IO], -1);
	assert_int_equal(pressure_over(limit, share), PRESSURE_CPU);
	/* And its own sample went into the store, the newest first. */
	f = fopen(path, "r");
	assert_non_null(f);
	{
		long long at, cpu, io, mem;

		assert_int_equal(fscanf(f, "%lld %lld %lld %lld", &at, &cpu, &io, &mem), 4);
		assert_true(at > at_us);
		assert_int_equal(cpu, 1300000);
		assert_int_equal(io, -1);
	}
	fclose(f);
}

/* A missing or malformed file is no pressure, reported once per login. */
static void test_measure_bad_files(void **state)
{
	const struct fx *fx = *state;
	const int64_t limit[PRESSURE_RES_N] = { 100000, 100000, 100000 };
	struct pressure_gauge g = { .dir = fx->dir, .state_dir = fx->state, .limit_ppm = limit };
	int64_t share[PRESSURE_RES_N];

	fx_file(fx, "io", "some avg10=0.00 avg60=0.00 avg300=0.00 total=5\n"); /* no full */
	fx_total(fx, "memory", 5);
	pressure_measure(&g, share);
	assert_int_equal(share[PRESSURE_CPU], -1);
	assert_int_equal(share[PRESSURE_IO], -1);
	assert_int_equal(share[PRESSURE_MEMORY], 0);
	assert_int_equal(g.warned, (1u << PRESSURE_CPU) | (1u << PRESSURE_IO));
	assert_int_equal(pressure_over(limit, share), -1);
}

/* A store not wholly as the logins write it is no stored reading: the login reads twice (no
   pressure in an unchanged file), and writes back only its own samples. Each garbled store
   holds a reading that would otherwise be a base (300 ms stalled 500 ms ago). */
static void test_measure_garbled_store(void **state)
{
	/* Each the text before and after the time. */
	static const char *const garbled[][2] = {
		{ "", " 1000000\n-1 -1\n" }, /* a short line: strtoll would go on to the next */
		{ "", " 1000000 -1 -1\ngarbage\n" },
		{ "", " 1000000 -7 -1\n" }, /* a total below -1 (none) */
		{ " ", " 1000000 -1 -1\n" },
		{ "+", " 1000000 -1 -1\n" },
		{ "", " 1000000 -1 -1\n\n" },
	};
	const struct fx *fx = *state;
	const int64_t limit[PRESSURE_RES_N] = { 100000, 0, 0 };
	char path[200];

	fx_total(fx, "cpu", 1000000 + 300000);
	assert_int_equal(mkdir(fx->state, 0700), 0);
	snprintf(path, sizeof(path), "%s/pressure.%016" PRIx64, fx->state,
		 hash_str(HASH_START, fx->dir));
	for (size_t i = 0; i < ARRAY_SIZE(garbled); i++) {
		struct pressure_gauge g = { .dir = fx->dir,
					    .state_dir = fx->state,
					    .limit_ppm = limit };
		int64_t share[PRESSURE_RES_N];
		long long at, cpu, io, mem;
		int lines = 0;
		FILE *f = fopen(path, "w");

		assert_non_null(f);
		fprintf(f, "%s%" PRId64 "%s", garbled[i][0], fstime_mono_us() - 500000,
			garbled[i][1]);
		assert_int_equal(fclose(f), 0);
		assert_int_equal(chmod(path, 0600), 0);
		pressure_measure(&g, share);
		if (share[PRESSURE_CPU] != 0)
			fail_msg("store %zu used: share %" PRId64 " ppm", i, share[PRESSURE_CPU]);
		f = fopen(path, "r");
		assert_non_null(f);
		for (; fscanf(f, "%lld %lld %lld %lld", &at, &cpu, &io, &mem) == 4; lines++)
			if (cpu != 1300000 || io != -1 || mem != -1)
				fail_msg("store %zu: its line kept (%lld %lld %lld)", i, cpu, io, mem);
		assert_true(feof(f));
		assert_int_equal(lines, 2);
		fclose(f);
	}
}

/* A host without PSI: every watched file missing. Each is reported once, and the login
   neither sleeps for a second reading nor stores a sample. */
static void test_measure_nothing_readable(void **state)
{
	const struct fx *fx = *state;
	const int64_t limit[PRESSURE_RES_N] = { 100000, 0, 100000 };
	struct pressure_gauge g = { .dir = fx->dir, .state_dir = fx->state, .limit_ppm = limit };
	int64_t share[PRESSURE_RES_N];
	char path[200];

	assert_int_equal(mkdir(fx->state, 0700), 0);
	sleeps = 0;
	pressure_measure(&g, share);
	pressure_measure(&g, share);
	assert_int_equal(sleeps, 0);
	for (int r = 0; r < PRESSURE_RES_N; r++)
		assert_int_equal(share[r], -1);
	assert_int_equal(g.warned, (1u << PRESSURE_CPU) | (1u << PRESSURE_MEMORY));
	snprintf(path, sizeof(path), "%s/pressure.%016" PRIx64, fx->state,
		 hash_str(HASH_START, fx->dir));
	assert_int_equal(access(path, F_OK), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec_good),
		cmocka_unit_test(test_spec_bad),
		cmocka_unit_test(test_file_good),
		cmocka_unit_test(test_file_bad),
		cmocka_unit_test(test_share),
		cmocka_unit_test(test_over),
		cmocka_unit_test_setup_teardown(test_measure_uses_store, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_measure_bad_files, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_measure_nothing_readable, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_measure_garbled_store, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
