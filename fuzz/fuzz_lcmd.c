/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: the commands of src/lscript.c's redis object, their arguments straight
   from the input rather than as slot.lua makes them. For this target lscript.c is built with
   fuzz/lcmd.lua in place of slot.lua (mk/fuzz.mk), which runs one command for each ARGV. The
   input is the store's file (fuzz_lstore's format; one it refuses is an empty store, as
   lslot.c starts afresh); after a NUL, the commands, one a line, as lcmd.lua reads them.
   lscript_run must answer 0 or -1 with a cause, within its caps, and leave a store that keeps
   its promises; after an answer, one that its file reads back as itself. */
#include "flowslot/lscript.h"
#include "flowslot/lstore.h"
#include "fuzz.h"

#define KEY "k"
#define NOW_US INT64_C(1000000000000)
/* The most commands one input runs. */
#define LINES_MAX 64

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fuzz_silence_stderr();
	return 0;
}

/* The commands after the file's NUL, one a line, into argv; their count. */
static int split_lines(char *cmds, const char **argv)
{
	int n = 0;

	if (cmds == NULL)
		return 0;
	for (char *at = cmds; n < LINES_MAX; at++) {
		argv[n++] = at;
		if ((at = strchr(at, '\n')) == NULL)
			break;
		*at = '\0';
	}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, '\0', size);
	char *text = fuzz_cstr(data, size), *cmds = NULL, err[200];
	const char *argv[LINES_MAX], *why;
	struct lscript_out out;
	struct lstore s;
	bool old;
	int argc, r;

	/* The commands run to the input's end: a NUL in them ends a line. */
	if (nul != NULL) {
		size_t len = size - (size_t)(nul + 1 - data);

		cmds = fuzz_cstr(nul + 1, len);
		for (size_t i = 0; i < len; i++)
			cmds[i] = cmds[i] == '\0' ? '\n' : cmds[i];
	}
	argc = split_lines(cmds, argv);
	lstore_read(&s, text, NOW_US, &old, &why);
	s.pid = getpid();
	memset(err, 'x', sizeof(err));
	r = lscript_run(&s, KEY, argv, argc, 0, &out, err, sizeof(err));
	FUZZ_CHECK(r == 0 || r == -1);
	/* The instruction cap is checked every 1,000 (lscript.c's LSCRIPT_HOOK_EVERY). */
	FUZZ_CHECK(out.memory_peak <= LSCRIPT_MEMORY_MAX && out.steps <= LSCRIPT_STEPS_MAX + 1000);
	if (r == 0)
		FUZZ_CHECK(out.n == 1 && out.v[0] == argc);
	else
		FUZZ_CHECK(fuzz_terminated(err, sizeof(err)) && err[0] != '\0');
	fuzz_check_store(&s, NOW_US);
	if (r == 0)
		fuzz_check_store_file(&s, NOW_US);
	lstore_free(&s);
	free(cmds);
	free(text);
	return 0;
}
