/* SPDX-License-Identifier: BSD-3-Clause */
/* Whom the module trusts with a file: every owner, mode and symbolic-link check it makes. Its
   own files in state_dir, opened only where no one else can write; root's files that configure
   it. */
#ifndef FLOWSLOT_TRUST_H
#define FLOWSLOT_TRUST_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

/* Opens dir (a directory, not a symlink) if it is owned by the effective uid and writable by
   no one else; creates it 0700 first when create. Returns an O_CLOEXEC descriptor, or -1
   with *why saying what failed ("cannot create", "cannot open": errno is set; "is not a
   directory owned by this uid and writable by no one else"). */
int trust_open_dir(const char *dir, bool create, const char **why);

/* Whether st is a file of ours: regular, owned by the effective uid, at most one link (none:
   unlinked since it was opened), and none of the permission bits in forbidden (077: none for
   group or others). */
bool trust_own_file(const struct stat *st, mode_t forbidden);

/* Opens path read-only if root keeps it for us (cf. pam-u2f open_safely): an absolute path,
   not a symbolic link, a regular file owned by root and writable by no one else; when secret,
   readable by no one else either. Returns an O_CLOEXEC descriptor and its stat, or -1 with
   *why; errno is ENOENT for a missing file, EPERM for one refused. */
int trust_open_root_file(const char *path, bool secret, struct stat *st, const char **why);

/* Takes fd's flock (op: LOCK_EX or LOCK_SH), waiting at most wait_us: a holder that is
   stopped, or a hung file system, must not hold every login with it. Returns 0, or -1 with
   errno (ETIMEDOUT when the wait ran out). */
int trust_lock(int fd, int op, int64_t wait_us);

#endif
