/* The per-host slot: the same schedule kept in a file, on CLOCK_MONOTONIC. */
#ifndef FLOWSLOT_LSLOT_H
#define FLOWSLOT_LSLOT_H

#include <stddef.h>
#include <stdint.h>

#include <security/pam_modules.h>

#include "flowslot/slot.h"

/* The directory stays bounded: before a new schedule file is made, when LSLOT_PRUNE_AT or
   more are there, those whose time has passed are removed; if LSLOT_FILES_MAX or more are
   still live, the new key shares one of LSLOT_SHARED schedules (slot.~shared.NN) instead. */
#define LSLOT_PRUNE_AT 64
#define LSLOT_FILES_MAX 256
#define LSLOT_SHARED 16

/* Reserves a slot on the schedule key, kept in a file under dir (created 0700 when missing).
   Returns SLOT_ADMIT or SLOT_REFUSE with res filled in, or SLOT_UNAVAILABLE, with the reason
   logged, when the directory or file cannot be used safely. */
enum slot_verdict lslot_reserve(const pam_handle_t *pamh, const char *dir, const char *key,
				const struct slot_params *p, struct slot_result *res);

/* The file name for key, in out of NAME_MAX + 1 bytes: the key itself where it fits, never a
   path. */
void lslot_file_name(const char *key, char *out, size_t outsz);

/* FNV-1a of s, continuing from hash (LSLOT_HASH_START to begin): names files after keys. */
#define LSLOT_HASH_START UINT64_C(14695981039346656037)
uint64_t lslot_hash(uint64_t hash, const char *s);

#endif
