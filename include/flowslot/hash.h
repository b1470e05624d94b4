/* SPDX-License-Identifier: BSD-3-Clause */
/* FNV-1a, 64 bits: the names of files and the slots of tables made from keys, host names and
   paths. Not a defence against collisions chosen on purpose: what it names is checked. */
#ifndef FLOWSLOT_HASH_H
#define FLOWSLOT_HASH_H

#include <stdint.h>

#define HASH_START UINT64_C(14695981039346656037)

/* The hash of s, continuing from hash (HASH_START to begin). */
static inline uint64_t hash_str(uint64_t hash, const char *s)
{
	for (; *s != '\0'; s++)
		hash = (hash ^ (unsigned char)*s) * UINT64_C(1099511628211);
	return hash;
}

#endif
