/* SPDX-License-Identifier: BSD-3-Clause */
/* The configuration file and the password file: opened safely, read through opt_set. */
#ifndef FLOWSLOT_CONF_H
#define FLOWSLOT_CONF_H

#include <stdbool.h>
#include <stddef.h>

#include <security/pam_modules.h>

#include "flowslot/opt.h"

#define CONF_SIZE_MAX 65536

/* Applies the "name=value" lines of path to o. A missing file is fine unless required.
   Problems are logged and counted in o->errors. */
void conf_read(struct opt *o, const pam_handle_t *pamh, const char *path, bool required);

/* Reads the password in the first line of path into buf. Returns 0, or -1 with *why. */
int conf_read_secret(const char *path, char *buf, size_t bufsz, const char **why);

#endif
