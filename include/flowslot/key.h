/* SPDX-License-Identifier: BSD-3-Clause */
/* The schedule's key: a template with %s, %u, %h, %H and %%, expanded per login. */
#ifndef FLOWSLOT_KEY_H
#define FLOWSLOT_KEY_H

#include <stdbool.h>
#include <stddef.h>

/* Returns 0 when tmpl is a valid template, or -1 with *why saying what is wrong. */
int key_check_template(const char *tmpl, const char **why);

/* True when tmpl uses %u. */
bool key_uses_user(const char *tmpl);

/* Expands a valid template into out (outsz bytes, NUL included); %H is this host's name
   (gethostname). Expanded bytes outside [A-Za-z0-9._:@-] are percent-encoded; NULL values
   expand to nothing. An expansion that does not fit is cut after a whole byte or escape and
   ends in "~" and the FNV-1a hash of all of it in 16 hex digits, so that each long name still
   has a schedule of its own. Returns the length, or -1 when outsz is too small even for that
   (under 18 bytes). */
int key_expand(const char *tmpl, const char *service, const char *user, const char *rhost,
	       char *out, size_t outsz);

/* The Redis Cluster hash slot of key (0 to 16383), hash tags included: "flowslot:{web}:a" and
   "flowslot:{web}:b" share one. */
int key_hash_slot(const char *key);

#endif
