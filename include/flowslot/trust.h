/* SPDX-License-Identifier: BSD-3-Clause */
/* Files the module keeps for itself in state_dir: opened only where no one else can write. */
#ifndef FLOWSLOT_TRUST_H
#define FLOWSLOT_TRUST_H

#include <stdbool.h>
#include <sys/stat.h>

/* Opens dir (a directory, not a symlink) if it is owned by the effective uid and writable by
   no one else; creates it 0700 first when create. Returns an O_CLOEXEC descriptor, or -1
   with *why saying what failed ("cannot create", "cannot open": errno is set; "is not a
   directory owned by this uid and writable by no one else"). */
int trust_open_dir(const char *dir, bool create, const char **why);

/* Whether st is a file of ours: regular, owned by the effective uid, at most one link (none:
   unlinked since it was opened), and no permission for group or others. */
bool trust_own_file(const struct stat *st);

#endif
