/* SPDX-License-Identifier: BSD-3-Clause */
#include "flowslot/str.h"

#include <errno.h>
#include <stdlib.h>

/* Parses a decimal integer in [min, max] that fills all of s. */
int str_parse_int(const char *s, long long min, long long max, long long *out)
{
	char *end;
	long long v;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}
