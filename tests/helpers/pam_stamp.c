/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A PAM module for the suites' stacks: appends "<ns since the epoch> <user>\n" to the file its
 * argument names, then lets the stack go on (PAM_IGNORE; PAM_SYSTEM_ERR, which "optional"
 * ignores, if it could not). Put after the gate, it says when a login passed it; before, when
 * the login reached it.
 *
 *   auth optional build/pam_stamp.so FILE
 *
 * In the login's own process, at once: pam_exec's fork and exec of a shell, with the sanitizer
 * and pam_wrapper preloaded into each, once stamped 670 ms late on a loaded CI, and a timing
 * check measured the machine. The clock is read by a system call of its own: a login that
 * libfaketime shows a skewed clock (tests/suites/hosts.sh) still stamps the true time.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <security/pam_modules.h>

static int stamp(pam_handle_t *pamh, int argc, const char **argv)
{
	struct timespec ts;
	const void *user = NULL;
	char line[512];
	int fd, n, rc;

	if (argc != 1 || syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts) != 0)
		return PAM_IGNORE;
	if (pam_get_item(pamh, PAM_USER, &user) != PAM_SUCCESS || user == NULL)
		user = "";
	n = snprintf(line, sizeof(line), "%lld%09ld %s\n", (long long)ts.tv_sec, ts.tv_nsec,
		     (const char *)user);
	if (n < 0 || (size_t)n >= sizeof(line))
		return PAM_IGNORE;
	fd = open(argv[0], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return PAM_IGNORE;
	/* One write: whole among the lines of logins that stamp at once (O_APPEND). */
	rc = write(fd, line, (size_t)n) == n ? PAM_IGNORE : PAM_SYSTEM_ERR;
	close(fd);
	return rc;
}

int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
	(void)flags;
	return stamp(pamh, argc, argv);
}

int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
	(void)pamh, (void)flags, (void)argc, (void)argv;
	return PAM_IGNORE;
}
