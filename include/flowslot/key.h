/* The schedule's key: a template with %s, %u, %h and %%, expanded per login. */
#ifndef FLOWSLOT_KEY_H
#define FLOWSLOT_KEY_H

#include <stdbool.h>
#include <stddef.h>

/* Returns 0 when tmpl is a valid template, or -1 with *why saying what is wrong. */
int key_check_template(const char *tmpl, const char **why);

/* True when tmpl uses %u. */
bool key_uses_user(const char *tmpl);

/* Expands a valid template into out (outsz bytes, NUL included). Expanded bytes outside
   [A-Za-z0-9._:@-] are percent-encoded; NULL values expand to nothing. Returns the length,
   or -1 when the key would not fit. */
int key_expand(const char *tmpl, const char *service, const char *user, const char *rhost,
	       char *out, size_t outsz);

/* The Redis Cluster hash slot of key (0 to 16383), hash tags included: "flowslot:{web}:a" and
   "flowslot:{web}:b" share one. */
int key_hash_slot(const char *key);

#endif
