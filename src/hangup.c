/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Why this works (checked in tests/e2e/e2e-ssh.sh): sshd does not notice a client that hangs up
 * while a module sleeps, but the process waiting in the session phase (the monitor) holds the
 * client's TCP connection, and nobody reads it meanwhile. A hang-up shows on it as
 * POLLRDHUP (CLOSE-WAIT) or POLLHUP|POLLERR (reset). Its peer is the client: PAM_RHOST, and
 * exactly the "raddr rport laddr lport" that sshd puts in the PAM environment as
 * SSH_CONNECTION. The same process has other sockets that report POLLHUP too (the AF_UNIX one
 * to its privsep child), so a socket is matched by family, protocol and address, never taken
 * because it is a socket. A console login's terminal reports POLLHUP when it is hung up, or
 * when the master of a pty closes.
 *
 * What we watch are our own duplicates: closing them never closes the host's descriptor, and
 * nothing here reads from them or changes their (shared) file status flags.
 */
#include "flowslot/hangup.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "flowslot/fstime.h"
#include "flowslot/log.h"

#define HANGUP_HUP (POLLRDHUP | POLLHUP | POLLERR)

/* An address with IPv4-mapped IPv6 turned into IPv4, so that the two compare equal. */
struct hangup_addr {
	int family; /* AF_INET (4 bytes used) or AF_INET6 */
	unsigned char bytes[16];
};

struct hangup_end {
	struct hangup_addr addr;
	unsigned port;
};

/* Which sockets are the client's: the whole connection when SSH_CONNECTION says it, else any
   connection from the client's address. */
struct hangup_match {
	bool by_conn;
	struct hangup_end peer, local; /* local only with by_conn */
};

static void hangup_unmap(struct hangup_addr *a)
{
	struct in6_addr in6;

	memcpy(&in6, a->bytes, sizeof(in6));
	if (a->family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&in6)) {
		a->family = AF_INET;
		memmove(a->bytes, a->bytes + 12, 4);
		memset(a->bytes + 4, 0, sizeof(a->bytes) - 4);
	}
}

/* A numeric address ("10.0.0.7", "::1", "fe80::1%eth0": the scope is ignored); false for a host
   name or anything else. */
static bool hangup_addr_parse(const char *s, struct hangup_addr *a)
{
	char buf[INET6_ADDRSTRLEN];
	size_t len = strchr(s, ':') != NULL ? strcspn(s, "%") : strlen(s);

	memset(a, 0, sizeof(*a));
	if (len == 0 || len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (inet_pton(AF_INET, buf, a->bytes) == 1) {
		a->family = AF_INET;
		return true;
	}
	if (inet_pton(AF_INET6, buf, a->bytes) != 1)
		return false;
	a->family = AF_INET6;
	hangup_unmap(a);
	return true;
}

static bool hangup_end_from(const struct sockaddr_storage *ss, socklen_t len, struct hangup_end *e)
{
	memset(e, 0, sizeof(*e));
	if (ss->ss_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;

		e->addr.family = AF_INET;
		memcpy(e->addr.bytes, &sin->sin_addr, 4);
		e->port = ntohs(sin->sin_port);
		return true;
	}
	if (ss->ss_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;

		e->addr.family = AF_INET6;
		memcpy(e->addr.bytes, &sin6->sin6_addr, 16);
		e->port = ntohs(sin6->sin6_port);
		hangup_unmap(&e->addr);
		return true;
	}
	return false;
}

static bool hangup_addr_equal(const struct hangup_addr *a, const struct hangup_addr *b)
{
	return a->family == b->family && memcmp(a->bytes, b->bytes, sizeof(a->bytes)) == 0;
}

static bool hangup_port_parse(const char *s, unsigned *port)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < 1 || v > 65535)
		return false;
	*port = (unsigned)v;
	return true;
}

/* SSH_CONNECTION, "raddr rport laddr lport", into m; false unless it is exactly that. */
static bool hangup_conn_parse(const char *conn, struct hangup_match *m)
{
	char buf[160], *field[4], *save = NULL, *tok;
	int n = 0;

	if (strlen(conn) >= sizeof(buf))
		return false;
	strcpy(buf, conn);
	for (tok = strtok_r(buf, " ", &save); tok != NULL; tok = strtok_r(NULL, " ", &save)) {
		if (n == 4)
			return false;
		field[n++] = tok;
	}
	return n == 4 && hangup_addr_parse(field[0], &m->peer.addr) &&
	       hangup_port_parse(field[1], &m->peer.port) &&
	       hangup_addr_parse(field[2], &m->local.addr) &&
	       hangup_port_parse(field[3], &m->local.port);
}

/* The two ends of fd when it is a connected TCP socket over IPv4 or IPv6. */
static bool hangup_tcp_ends(int fd, struct hangup_end *local, struct hangup_end *peer)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int v;

	len = sizeof(v);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &len) != 0 || v != SOCK_STREAM)
		return false;
	len = sizeof(v);
	if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &v, &len) != 0 || v != IPPROTO_TCP)
		return false;
	len = sizeof(ss);
	if (getpeername(fd, (struct sockaddr *)&ss, &len) != 0 || !hangup_end_from(&ss, len, peer))
		return false;
	len = sizeof(ss);
	return getsockname(fd, (struct sockaddr *)&ss, &len) == 0 &&
	       hangup_end_from(&ss, len, local);
}

static bool hangup_is_client(const struct hangup_match *m, int fd, struct hangup_end *peer)
{
	struct hangup_end local;

	if (!hangup_tcp_ends(fd, &local, peer) || !hangup_addr_equal(&peer->addr, &m->peer.addr))
		return false;
	return !m->by_conn || (peer->port == m->peer.port && local.port == m->local.port &&
			       hangup_addr_equal(&local.addr, &m->local.addr));
}

static void hangup_add(struct hangup_watch *w, int fd, short events, const char *kind,
		       const char *name)
{
	size_t len = strlen(w->what);

	if (w->n >= HANGUP_FDS_MAX) {
		close(fd);
		return;
	}
	w->fds[w->n] = fd;
	w->events[w->n] = events;
	w->n++;
	snprintf(w->what + len, sizeof(w->what) - len, "%s%s %s", len > 0 ? ", " : "", kind, name);
}

static void hangup_add_tcp(const pam_handle_t *pamh, struct hangup_watch *w, int fd,
			   const struct hangup_end *peer)
{
	char addr[INET6_ADDRSTRLEN], name[INET6_ADDRSTRLEN + 16];
	int ours = fcntl(fd, F_DUPFD_CLOEXEC, 3);

	if (ours < 0) {
		log_msg(pamh, LOG_ERR, "cannot watch the client's connection: %m");
		return;
	}
	inet_ntop(peer->addr.family, peer->addr.bytes, addr, sizeof(addr));
	snprintf(name, sizeof(name), peer->addr.family == AF_INET6 ? "[%s]:%u" : "%s:%u", addr,
		 peer->port);
	/* Only POLLRDHUP: unread keystrokes are no hang-up; POLLHUP|POLLERR always come. */
	hangup_add(w, ours, POLLRDHUP, "tcp", name);
}

/* Every socket of the process that is the client's connection, up to HANGUP_TCP_MAX, each
   once however many descriptors share it. */
static void hangup_find_tcp(const pam_handle_t *pamh, const struct hangup_match *m,
			    struct hangup_watch *w)
{
	int found[HANGUP_TCP_MAX], n = 0, scanned = 0;
	struct hangup_end peers[HANGUP_TCP_MAX];
	ino_t inos[HANGUP_TCP_MAX];
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	if (d == NULL) {
		log_msg(pamh, LOG_ERR, "cannot watch the client's connection: /proc/self/fd: %m");
		return;
	}
	/* Duplicates are made after closedir: a new descriptor could show up later in the scan. */
	while (n < HANGUP_TCP_MAX && scanned < HANGUP_SCAN_MAX && (e = readdir(d)) != NULL) {
		char *end;
		long fd = strtol(e->d_name, &end, 10);
		struct stat st;
		bool seen = false;

		if (e->d_name[0] == '.' || *end != '\0' || fd < 0 || fd > INT_MAX || fd == dirfd(d))
			continue;
		scanned++;
		if (fstat((int)fd, &st) != 0 || !S_ISSOCK(st.st_mode))
			continue;
		for (int i = 0; i < n; i++)
			seen = seen || inos[i] == st.st_ino;
		if (seen || !hangup_is_client(m, (int)fd, &peers[n]))
			continue;
		inos[n] = st.st_ino;
		found[n++] = (int)fd;
	}
	closedir(d);
	for (int i = 0; i < n; i++)
		hangup_add_tcp(pamh, w, found[i], &peers[i]);
}

/* PAM_TTY as a path under /dev: "/dev/pts/3", "pts/3", "tty1". */
static bool hangup_tty_path(const char *tty, char *out, size_t outsz)
{
	static const char dev[] = "/dev/";
	int len;

	if (tty[0] == '\0' || strstr(tty, "..") != NULL)
		return false;
	if (strncmp(tty, dev, sizeof(dev) - 1) == 0)
		len = snprintf(out, outsz, "%s", tty);
	else if (tty[0] != '/')
		len = snprintf(out, outsz, "%s%s", dev, tty);
	else
		return false;
	return len > 0 && (size_t)len < outsz;
}

/* Opening a device can have effects of its own: only terminals' usual names are opened, and
   never the aliases of major 5 (/dev/tty, /dev/console, /dev/ptmx, which makes a new pty). */
static bool hangup_tty_openable(const char *path, dev_t rdev)
{
	static const char pts[] = "/dev/pts/", tty[] = "/dev/tty";

	return (strncmp(path, pts, sizeof(pts) - 1) == 0 ||
		strncmp(path, tty, sizeof(tty) - 1) == 0) &&
	       major(rdev) != 5;
}

static void hangup_find_tty(const pam_handle_t *pamh, const char *tty, struct hangup_watch *w)
{
	char path[64], shown[96];
	struct stat want, st;
	int fd;

	if (!hangup_tty_path(tty, path, sizeof(path)) || stat(path, &want) != 0 ||
	    !S_ISCHR(want.st_mode))
		return; /* sshd's "ssh", and other names of no terminal */
	log_escape(path, shown, sizeof(shown));
	if (isatty(STDIN_FILENO) && fstat(STDIN_FILENO, &st) == 0 && S_ISCHR(st.st_mode) &&
	    st.st_rdev == want.st_rdev)
		fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
	else if (hangup_tty_openable(path, want.st_rdev))
		fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	else
		return;
	if (fd < 0) {
		log_msg(pamh, LOG_ERR, "cannot watch the terminal %s: %m", shown);
		return;
	}
	if (fstat(fd, &st) != 0 || !S_ISCHR(st.st_mode) || st.st_rdev != want.st_rdev ||
	    !isatty(fd)) {
		close(fd);
		return;
	}
	/* No events asked: POLLHUP and POLLERR come anyway, and typed input does not wake us. */
	hangup_add(w, fd, 0, "tty", shown);
}

void hangup_watch_open(const pam_handle_t *pamh, const char *rhost, const char *ssh_connection,
		       const char *tty, struct hangup_watch *w)
{
	struct hangup_match m;

	memset(&m, 0, sizeof(m));
	for (int i = 0; i < HANGUP_FDS_MAX; i++) {
		w->fds[i] = -1;
		w->events[i] = 0;
	}
	w->n = 0;
	w->what[0] = '\0';
	if (ssh_connection != NULL && hangup_conn_parse(ssh_connection, &m))
		m.by_conn = true;
	if (m.by_conn || (rhost != NULL && hangup_addr_parse(rhost, &m.peer.addr)))
		hangup_find_tcp(pamh, &m, w);
	if (tty != NULL)
		hangup_find_tty(pamh, tty, w);
}

bool hangup_wait_until(const struct hangup_watch *w, int64_t deadline_us)
{
	struct pollfd pfd[HANGUP_FDS_MAX];
	int n = 0, live = 0;

	for (; n < w->n && n < HANGUP_FDS_MAX; n++) {
		pfd[n] = (struct pollfd){ .fd = w->fds[n], .events = w->events[n] };
		live += w->fds[n] >= 0;
	}
	while (live > 0) {
		int64_t left_us = deadline_us - fstime_mono_us();
		struct timespec left;

		if (left_us <= 0)
			return false;
		left = (struct timespec){ .tv_sec = left_us / 1000000,
					  .tv_nsec = (left_us % 1000000) * 1000 };
		if (ppoll(pfd, (nfds_t)n, &left, NULL) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int i = 0; i < n; i++) {
			if (pfd[i].revents & POLLNVAL) {
				pfd[i].fd = -1; /* closed under us: no longer watched */
				live--;
			} else if (pfd[i].revents & HANGUP_HUP) {
				return true;
			} else if (pfd[i].revents != 0) {
				pfd[i].fd = -1; /* nothing we asked for: never spin on it */
				live--;
			}
		}
	}
	fstime_sleep_until(deadline_us);
	return false;
}

void hangup_watch_close(struct hangup_watch *w)
{
	for (int i = 0; i < HANGUP_FDS_MAX; i++) {
		if (w->fds[i] >= 0)
			close(w->fds[i]);
		w->fds[i] = -1;
	}
	w->n = 0;
	w->what[0] = '\0';
}
