/* SPDX-License-Identifier: BSD-3-Clause */
/* Noticing that a waiting user has gone: their client's TCP connection or their terminal. */
#ifndef FLOWSLOT_HANGUP_H
#define FLOWSLOT_HANGUP_H

#include <stdbool.h>
#include <stdint.h>

#include <security/pam_modules.h>

/* At most this many TCP sockets are watched (sshd holds one; more are a bystander's), plus the
   terminal. */
#define HANGUP_TCP_MAX 3
#define HANGUP_FDS_MAX (HANGUP_TCP_MAX + 1)
/* Descriptors of the process looked at, at most. */
#define HANGUP_SCAN_MAX 1024

/* What a waiting login watches for its user going away: the client's TCP socket (its peer
   address is PAM_RHOST), and the login's terminal. */
struct hangup_watch {
	int fds[HANGUP_FDS_MAX]; /* our own O_CLOEXEC duplicates or opens, -1 when unused */
	short events[HANGUP_FDS_MAX];
	int n;		/* entries in use in fds and events */
	char what[320]; /* for the log: "tcp 10.0.0.7:51234, tty /dev/pts/3", "" for nothing */
};

/* Finds what to watch. The client's connection: every connected TCP socket among the process's
   descriptors that is exactly ssh_connection ("raddr rport laddr lport", as sshd puts
   SSH_CONNECTION in the PAM environment: pam_getenv) when that is well-formed, else whose peer
   address is rhost (PAM_RHOST as a numeric address; a host name matches nothing). IPv4-mapped
   IPv6 counts as the IPv4 address. The terminal named by tty (PAM_TTY: "/dev/pts/3", "pts/3",
   "tty1"; not sshd's "ssh"): standard input when it is that terminal, else the node, opened
   without becoming our controlling terminal. Any argument but w may be NULL. Never fails: what
   cannot be found is not watched (w->n == 0), unexpected errors are logged, and w is always
   left ready for hangup_watch_close. */
void hangup_watch_open(const pam_handle_t *pamh, const char *rhost, const char *ssh_connection,
		       const char *tty, struct hangup_watch *w);

/* Sleeps until CLOCK_MONOTONIC reaches deadline_us (as fstime_mono_us) or a watched descriptor
   reports a hang-up (TCP: peer closed or reset; terminal: hung up); returns true for a
   hang-up. With nothing to watch it only sleeps. Signals do not end the wait. */
bool hangup_wait_until(const struct hangup_watch *w, int64_t deadline_us);

/* Closes what hangup_watch_open opened (never the process's own descriptors); idempotent. */
void hangup_watch_close(struct hangup_watch *w);

#endif
