/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * privtmp: runs a program with this program's arguments (argv[0] included) in a mount
 * namespace of its own with an empty /tmp, as tests/helpers/lib.sh's PRIVATE_TMP does for a login.
 *
 * It is for sshd under pam_wrapper (tests/helpers/sshd.sh). pam_wrapper gives every process that
 * loads it a directory /tmp/pam.X of its own, from 62 names shared by the whole machine, and
 * sshd re-executes itself, by argv[0], for every connection. Started as $TMP/NAME, a symlink
 * to this program, sshd runs under that name and re-executes this program again for each
 * connection: one /tmp per process. A shell script could not do it: pam_wrapper is preloaded
 * into every dynamically linked program sshd starts, and would take a name in whatever /tmp the
 * script starts in (the machine's, or the listener's that all connections share) before its
 * unshare. This program is linked statically, so nothing is preloaded.
 *
 * sshd passes its own arguments, so the settings come from the environment:
 *   PRIVTMP_EXEC   the program to run (/usr/sbin/sshd);
 *   PRIVTMP_STAGE  an empty directory outside /tmp, where the new tmpfs is mounted first;
 *   PRIVTMP_KEEP   optional: a directory under /tmp that stays visible at its own path (a
 *                  checkout under /tmp, whose module the stack loads).
 * Any failure is reported on stderr, naming the step, and exits 126 before the program runs.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(const char *what, const char *path)
{
	fprintf(stderr, "privtmp: %s %s: %s\n", what, path, strerror(errno));
	return 126;
}

/* mkdir -p PATH, for a mount point inside the new tmpfs. */
static int make_dirs(char *path)
{
	for (char *p = path + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;
		*p = '\0';
		int rc = mkdir(path, 0755);
		*p = c;
		if (rc != 0 && errno != EEXIST)
			return -1;
		if (c == '\0')
			return 0;
	}
}

int main(int argc, char **argv)
{
	const char *exec = getenv("PRIVTMP_EXEC");
	const char *stage = getenv("PRIVTMP_STAGE");
	const char *keep = getenv("PRIVTMP_KEEP");
	char tmp[PATH_MAX], kept[PATH_MAX], inside[2 * PATH_MAX];

	(void)argc;
	if (exec == NULL || stage == NULL) {
		fprintf(stderr, "privtmp: PRIVTMP_EXEC and PRIVTMP_STAGE must be set\n");
		return 126;
	}
	if (realpath("/tmp", tmp) == NULL)
		return fail("cannot resolve", "/tmp");
	if (unshare(CLONE_NEWNS) != 0)
		return fail("cannot unshare the mount namespace for", exec);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		return fail("cannot make private", "/");
	if (mount("tmpfs", stage, "tmpfs", 0, NULL) != 0)
		return fail("cannot mount a tmpfs on", stage);
	if (keep != NULL && *keep != '\0') {
		size_t n = strlen(tmp);
		if (realpath(keep, kept) == NULL)
			return fail("cannot resolve", keep);
		if (strncmp(kept, tmp, n) != 0 || (kept[n] != '/' && kept[n] != '\0')) {
			fprintf(stderr, "privtmp: %s is not under %s\n", kept, tmp);
			return 126;
		}
		if ((size_t)snprintf(inside, sizeof(inside), "%s%s", stage, kept + n) >=
		    sizeof(inside)) {
			fprintf(stderr, "privtmp: %s%s is too long\n", stage, kept + n);
			return 126;
		}
		if (make_dirs(inside) != 0)
			return fail("cannot make", inside);
		if (mount(kept, inside, NULL, MS_BIND | MS_REC, NULL) != 0)
			return fail("cannot bind", kept);
	}
	if (mount(stage, tmp, NULL, MS_MOVE, NULL) != 0)
		return fail("cannot move the tmpfs onto", tmp);
	execv(exec, argv);
	return fail("cannot run", exec);
}
