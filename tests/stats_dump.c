/* SPDX-License-Identifier: BSD-3-Clause */
/* For the tests, until flowslotctl's metrics command: the counters of a state_dir, as
   Prometheus text on stdout. Usage: stats_dump STATE_DIR */
#include <stdio.h>

#include "flowslot/stats.h"

int main(int argc, char **argv)
{
	const char *why = NULL;

	if (argc != 2) {
		fputs("usage: stats_dump STATE_DIR\n", stderr);
		return 2;
	}
	if (stats_write_prometheus(stdout, argv[1], &why) != 0) {
		perror(why);
		return 1;
	}
	return fflush(stdout) == 0 ? 0 : 1;
}
