/* SPDX-License-Identifier: BSD-3-Clause */
/* The built module exports the six PAM entry points and nothing of its own insides. */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

static void test_exports(void **state)
{
	static const char *const exported[] = {
		"pam_sm_authenticate",  "pam_sm_setcred",       "pam_sm_acct_mgmt",
		"pam_sm_open_session", "pam_sm_close_session", "pam_sm_chauthtok",
	};
	static const char *const internal[] = {
		"gate",		  "opt_parse",	       "opt_set",	   "key_expand",
		"rslot_call",	       "rslot_read_reply", "rnode_attempt",
		"lslot_call",	  "lscript_run",       "lstore_read",	   "queue_wait",
		"countdown_start", "countdown_tick",   "hangup_watch_open", "log_msg",
		"fstime_sleep_until", "stats_record", "stats_write_prometheus",
	};
	void *h = dlopen(MODULE_PATH, RTLD_NOW | RTLD_LOCAL);

	(void)state;
	if (h == NULL)
		fail_msg("dlopen: %s", dlerror());
	for (size_t i = 0; i < sizeof(exported) / sizeof(exported[0]); i++)
		if (dlsym(h, exported[i]) == NULL)
			fail_msg("%s is not exported", exported[i]);
	for (size_t i = 0; i < sizeof(internal) / sizeof(internal[0]); i++)
		if (dlsym(h, internal[i]) != NULL)
			fail_msg("%s is exported", internal[i]);
	dlclose(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exports),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
