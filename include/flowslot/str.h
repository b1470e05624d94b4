/* SPDX-License-Identifier: BSD-3-Clause */
/* Small string helpers. */
#ifndef FLOWSLOT_STR_H
#define FLOWSLOT_STR_H

#include <string.h>

/* The text after prefix when s starts with it, else NULL (cf. Linux-PAM pam_str_skip_prefix). */
#define str_skip_prefix(s, prefix)                                                                 \
	(strncmp((s), (prefix), sizeof(prefix) - 1) == 0 ? (s) + sizeof(prefix) - 1 : NULL)

/* Parses a decimal integer in [min, max] that fills all of s: no sign, no blank. Returns 0,
   or -1. */
int str_parse_int(const char *s, long long min, long long max, long long *out);

#endif
