/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for src/hangup.c: real loopback connections, socketpairs and ptys. The client of a
   connection lives in a forked child, as it does for sshd, so that the test process holds only
   the server's end. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pty.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "flowslot/fstime.h"
#include "flowslot/hangup.h"

#define MS INT64_C(1000)
#define SHORT_MS 200
#define LONG_MS 5000

/* A connection: our accepted end, and a client in a child that does what ctl tells it. */
struct conn {
	int listener, accepted, ctl;
	unsigned listen_port, peer_port;
	pid_t child;
};

/* What a test opened, for the teardown to close even when an assertion ends the test early. */
struct fixture {
	struct conn c;
	struct hangup_watch w;
	int fds[8]; /* others; -1 when unused */
	int saved_stdin;
};

static int fixture_setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (fx == NULL)
		return -1;
	fx->c = (struct conn){ .listener = -1, .accepted = -1, .ctl = -1, .child = -1 };
	hangup_watch_open(NULL, NULL, NULL, NULL, &fx->w);
	for (size_t i = 0; i < sizeof(fx->fds) / sizeof(fx->fds[0]); i++)
		fx->fds[i] = -1;
	fx->saved_stdin = -1;
	*state = fx;
	return 0;
}

/* Keeps fd for the teardown to close; returns it. */
static int keep(struct fixture *fx, int fd)
{
	for (size_t i = 0; i < sizeof(fx->fds) / sizeof(fx->fds[0]); i++) {
		if (fx->fds[i] < 0) {
			fx->fds[i] = fd;
			return fd;
		}
	}
	fail_msg("too many fds kept");
	return -1;
}

/* Closes a kept fd now. */
static void drop(struct fixture *fx, int fd)
{
	for (size_t i = 0; i < sizeof(fx->fds) / sizeof(fx->fds[0]); i++) {
		if (fx->fds[i] == fd)
			fx->fds[i] = -1;
	}
	close(fd);
}

static void conn_close(struct conn *c)
{
	int status = 0;

	if (c->ctl >= 0)
		close(c->ctl);
	if (c->child > 0 && waitpid(c->child, &status, 0) == c->child &&
	    !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
		fprintf(stderr, "the client exited with status %d\n", status);
	if (c->accepted >= 0)
		close(c->accepted);
	if (c->listener >= 0)
		close(c->listener);
	*c = (struct conn){ .listener = -1, .accepted = -1, .ctl = -1, .child = -1 };
}

static int fixture_teardown(void **state)
{
	struct fixture *fx = *state;

	hangup_watch_close(&fx->w);
	conn_close(&fx->c);
	for (size_t i = 0; i < sizeof(fx->fds) / sizeof(fx->fds[0]); i++) {
		if (fx->fds[i] >= 0)
			close(fx->fds[i]);
	}
	if (fx->saved_stdin >= 0) {
		dup2(fx->saved_stdin, STDIN_FILENO);
		close(fx->saved_stdin);
	}
	free(fx);
	return 0;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] != '.')
			n++;
	}
	closedir(d);
	return n - 1; /* the directory's own */
}

static unsigned port_of(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
}

/* A socket address for a numeric address and port. */
static socklen_t make_addr(const char *addr, unsigned port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (strchr(addr, ':') == NULL) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)port);
		assert_int_equal(inet_pton(AF_INET, addr, &sin->sin_addr), 1);
		return sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)port);
		assert_int_equal(inet_pton(AF_INET6, addr, &sin6->sin6_addr), 1);
		return sizeof(*sin6);
	}
}

/* A listening socket on addr (port 0); -1 when the address cannot be had (no IPv6). */
static int listen_on(const char *addr, unsigned *port)
{
	struct sockaddr_storage ss;
	socklen_t len = make_addr(addr, 0, &ss);
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), off = 0;

	assert_true(fd >= 0);
	if (ss.ss_family == AF_INET6)
		assert_int_equal(setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)), 0);
	if (bind(fd, (struct sockaddr *)&ss, len) != 0) {
		close(fd);
		return -1;
	}
	assert_int_equal(listen(fd, 4), 0);
	len = sizeof(ss);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&ss, &len), 0);
	*port = port_of(&ss);
	return fd;
}

static int connect_to(const char *addr, unsigned port)
{
	struct sockaddr_storage ss;
	socklen_t len = make_addr(addr, port, &ss);
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&ss, len) != 0)
		_exit(2);
	return fd;
}

/* The child: 'w' writes keystrokes, 'c' closes, 'r' resets, 's' shuts down its sending side;
   it exits when ctl closes. */
static void client_main(const char *addr, unsigned port, int ctl)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	int fd = connect_to(addr, port);
	char cmd;

	while (read(ctl, &cmd, 1) == 1) {
		if (cmd == 'w' && write(fd, "keys", 4) != 4)
			_exit(3);
		if (cmd == 'r')
			setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		if (cmd == 'c' || cmd == 'r')
			close(fd);
		if (cmd == 's')
			shutdown(fd, SHUT_WR);
	}
	_exit(0);
}

/* Listens on listen_addr, and has a child connect to connect_addr; false without IPv6. */
static bool conn_open(struct conn *c, const char *listen_addr, const char *connect_addr)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int p[2];

	c->listener = listen_on(listen_addr, &c->listen_port);
	if (c->listener < 0)
		return false;
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	c->child = fork();
	assert_true(c->child >= 0);
	if (c->child == 0) {
		close(p[1]);
		client_main(connect_addr, c->listen_port, p[0]);
	}
	close(p[0]);
	c->ctl = p[1];
	c->accepted = accept4(c->listener, (struct sockaddr *)&ss, &len, SOCK_CLOEXEC);
	assert_true(c->accepted >= 0);
	c->peer_port = port_of(&ss);
	return true;
}

static void conn_tell(const struct conn *c, char cmd)
{
	assert_int_equal(write(c->ctl, &cmd, 1), 1);
}

/* hangup_wait_until for ms from now, and how long it took, in ms. */
static bool wait_ms(const struct hangup_watch *w, int ms, int64_t *took_ms)
{
	int64_t t0 = fstime_mono_us();
	bool hup = hangup_wait_until(w, t0 + ms * MS);

	*took_ms = (fstime_mono_us() - t0) / MS;
	return hup;
}

static void assert_sleeps_to_deadline(const struct hangup_watch *w)
{
	int64_t took;

	assert_false(wait_ms(w, SHORT_MS, &took));
	assert_true(took >= SHORT_MS);
}

static void assert_hangup_soon(const struct hangup_watch *w)
{
	int64_t took;

	assert_true(wait_ms(w, LONG_MS, &took));
	assert_true(took < LONG_MS - 1000);
}

static ino_t inode_of(int fd)
{
	struct stat st;

	assert_int_equal(fstat(fd, &st), 0);
	return st.st_ino;
}

static void test_tcp_peer_closes(void **state)
{
	struct fixture *fx = *state;
	struct hangup_watch *w = &fx->w;
	struct conn *c = &fx->c;
	char want[64];
	int before, fl, fd_flags;

	assert_true(conn_open(c, "127.0.0.1", "127.0.0.1"));
	fl = fcntl(c->accepted, F_GETFL);
	fd_flags = fcntl(c->accepted, F_GETFD);
	before = count_fds();
	hangup_watch_open(NULL, "127.0.0.1", NULL, NULL, w);
	/* The accepted socket only: not the listener, which has no peer. */
	assert_int_equal(w->n, 1);
	assert_int_equal(inode_of(w->fds[0]), inode_of(c->accepted));
	assert_true(w->fds[0] != c->accepted);
	assert_int_equal(w->events[0], POLLRDHUP);
	assert_true((fcntl(w->fds[0], F_GETFD) & FD_CLOEXEC) != 0);
	snprintf(want, sizeof(want), "tcp 127.0.0.1:%u", c->peer_port);
	assert_string_equal(w->what, want);
	assert_sleeps_to_deadline(w);
	conn_tell(c, 'c');
	assert_hangup_soon(w);
	hangup_watch_close(w);
	assert_int_equal(count_fds(), before);
	/* sshd's descriptor is still open, and unchanged. */
	assert_int_equal(fcntl(c->accepted, F_GETFL), fl);
	assert_int_equal(fcntl(c->accepted, F_GETFD), fd_flags);
}

static void test_tcp_peer_resets(void **state)
{
	struct fixture *fx = *state;
	struct hangup_watch *w = &fx->w;
	struct conn *c = &fx->c;

	assert_true(conn_open(c, "127.0.0.1", "127.0.0.1"));
	hangup_watch_open(NULL, "127.0.0.1", NULL, NULL, w);
	assert_int_equal(w->n, 1);
	conn_tell(c, 'r');
	assert_hangup_soon(w);
	hangup_watch_close(w);
}

static void test_tcp_peer_shuts_down(void **state)
{
	struct fixture *fx = *state;
	struct hangup_watch *w = &fx->w;
	struct conn *c = &fx->c;

	assert_true(conn_open(c, "127.0.0.1", "127.0.0.1"));
	hangup_watch_open(NULL, "127.0.0.1", NULL, NULL, w);
	conn_tell(c, 's');
	assert_hangup_soon(w);
	hangup_watch_close(w);
}

/* Keystrokes nobody reads are no hang-up; a close after them is. */
static void test_tcp_unread_data(void **state)
{
	struct pollfd pfd;
	struct fixture *fx = *state;
	struct hangup_watch *w = &fx->w;
	struct conn *c = &fx->c;

	assert_true(conn_open(c, "127.0.0.1", "127.0.0.1"));
	hangup_watch_open(NULL, "127.0.0.1", NULL, NULL, w);
	assert_int_equal(w->n, 1);
	conn_tell(c, 'w');
	pfd = (struct pollfd){ .fd = c->accepted, .events = POLLIN };
	assert_int_equal(poll(&pfd, 1, LONG_MS), 1);
	assert_sleeps_to_deadline(w);
	conn_tell(c, 'c');
	assert_hangup_soon(w);
	hangup_watch_close(w);
}

/* sshd's inetd mode holds the socket as two descriptors: it is watched once. */
static void test_tcp_duplicates_watched_once(void **state)
{
	struct fixture *fx = *state;
	struct hangup_watch *w = &fx->w;
	struct conn *c = &fx->c;

	assert_true(conn_open(c, "127.0.0.1", "127.0.0.1"));
	keep(fx, fcntl(c->accepted, F_DUPFD_CLOEXEC, 0));
	keep(fx, fcntl(c->accepted, F_DUPFD_CLOEXEC, 0));
	hangup_watch_open(NULL, "127.0.0.1", NULL, NULL, w);
	assert_int_equal(w->n, 1);
}

/* Both ends of a loopback connection in one process have the peer 127.0.0.1: by address both
   are watched; SSH_CONNECTION's ports pick the server's end alone. */
static void test_tcp_both_ends_in_process(void **state)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	struct fixture *fx = *state;
	struct hangup_watch *w = &fx->w;
	char conn[128];
	unsigned port;
	int lfd = keep(fx, listen_on("127.0.0.1", &port)), cfd, afd;

	cfd = keep(fx, socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
	len = make_addr("127.0.0.1", port, &ss);
	assert_int_equal(connect(cfd, (struct sockaddr *)&ss, len), 0);
	len = sizeof(ss);
	afd = keep(fx, accept4(lfd, (struct sockaddr *)&ss, &len, SOCK_CLOEXEC));
	assert_true(afd >= 0);

	hangup_watch_open(NULL, "127.0.0.1", NULL, NULL, w);
	assert_int_equal(w->n, 2);
	hangup_watch_close(w);

	snprintf(conn, sizeof(conn), "127.0.0.1 %u 127.0.0.1 %u", port_of(&ss), port);
	hangup_watch_open(NULL, "127.0.0.1", conn, NULL, w);
	assert_int_equal(w->n, 1);
	assert_int_equal(inode_of(w->fds[0]), inode_of(afd));
	assert_sleeps_to_deadline(w);
	/* A shutdown reaches the peer although our duplicates keep both sockets open. */
	assert_int_equal(shutdown(cfd, SHUT_WR), 0);
	assert_hangup_soon(w);
}

/* SSH_CONNECTION decides alone when well-formed (it is numeric even with UseDNS yes); a
   malformed one leaves rhost to decide. */
static void test_tcp_ssh_connection(void **state)
{
	struct fixture *fx = *state;
	struct hangup_watch *w = &fx->w;
	struct conn *c = &fx->c;
	char good[128], bad[128];
	const char *malformed[] = { "127.0.0.1",
				    "",
				    "127.0.0.1 x 127.0.0.1 22",
				    "127.0.0.1 1 127.0.0.1 2 3",
				    "127.0.0.1 0 127.0.0.1 22",
				    "127.0.0.1 65536 127.0.0.1 22",
				    "client 1 127.0.0.1 22" };

	assert_true(conn_open(c, "127.0.0.1", "127.0.0.1"));
	snprintf(good, sizeof(good), "127.0.0.1 %u 127.0.0.1 %u", c->peer_port, c->listen_port);
	hangup_watch_open(NULL, "client.example.org", good, NULL, w);
	assert_int_equal(w->n, 1);
	hangup_watch_close(w);
	hangup_watch_open(NULL, NULL, good, NULL, w);
	assert_int_equal(w->n, 1);
	hangup_watch_close(w);

	snprintf(bad, sizeof(bad), "127.0.0.1 %u 127.0.0.1 %u", c->peer_port, c->listen_port + 1);
	hangup_watch_open(NULL, "127.0.0.1", bad, NULL, w);
	assert_int_equal(w->n, 0);
	snprintf(bad, sizeof(bad), "127.0.0.2 %u 127.0.0.1 %u", c->peer_port, c->listen_port);
	hangup_watch_open(NULL, "127.0.0.1", bad, NULL, w);
	assert_int_equal(w->n, 0);

	for (size_t i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++) {
		hangup_watch_open(NULL, "127.0.0.1", malformed[i], NULL, w);
		if (w->n != 1)
			fail_msg("SSH_CONNECTION \"%s\": %d watched", malformed[i], w->n);
		hangup_watch_close(w);
		hangup_watch_open(NULL, "client.example.org", malformed[i], NULL, w);
		assert_int_equal(w->n, 0);
	}
}

/* Other addresses, host names, nothing: no socket is watched, even one that has hung up. */
static void test_tcp_other_rhost(void **state)
{
	const char *rhosts[] = { "10.9.9.9", "localhost", "", "127.0.0.1x", "127.1", "::2", NULL };
	struct fixture *fx = *state;
	struct hangup_watch *w = &fx->w;
	struct conn *c = &fx->c;

	assert_true(conn_open(c, "127.0.0.1", "127.0.0.1"));
	conn_tell(c, 'c');
	for (size_t i = 0; i < sizeof(rhosts) / sizeof(rhosts[0]); i++) {
		hangup_watch_open(NULL, rhosts[i], NULL, NULL, w);
		if (w->n != 0)
			fail_msg("rhost \"%s\": %d watched", rhosts[i] ? rhosts[i] : "(null)",
				 w->n);
		assert_string_equal(w->what, "");
		assert_sleeps_to_deadline(w);
		hangup_watch_close(w);
	}
	/* And the control: the same socket is found, and has hung up. */
	hangup_watch_open(NULL, "127.0.0.1", NULL, NULL, w);
	assert_int_equal(w->n, 1);
	assert_hangup_soon(w);
	hangup_watch_close(w);
}

/* A socketpair whose other end is gone reports POLLHUP, and is never taken for the client. */
static void test_unix_socket_never(void **state)
{
	struct fixture *fx = *state;
	struct hangup_watch *w = &fx->w;
	struct pollfd pfd;
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	keep(fx, sv[0]);
	close(sv[1]);
	pfd = (struct pollfd){ .fd = sv[0], .events = POLLRDHUP };
	assert_int_equal(poll(&pfd, 1, 0), 1);
	assert_true(pfd.revents & POLLHUP);
	hangup_watch_open(NULL, "127.0.0.1", "127.0.0.1 1 127.0.0.1 2", NULL, w);
	assert_int_equal(w->n, 0);
	hangup_watch_open(NULL, "::1", NULL, NULL, w);
	assert_int_equal(w->n, 0);
	assert_sleeps_to_deadline(w);
}

static void test_tcp_ipv6(void **state)
{
	struct fixture *fx = *state;
	struct hangup_watch *w = &fx->w;
	struct conn *c = &fx->c;
	char want[64];

	if (!conn_open(c, "::1", "::1"))
		skip();
	hangup_watch_open(NULL, "127.0.0.1", NULL, NULL, w);
	assert_int_equal(w->n, 0);
	hangup_watch_open(NULL, "::1", NULL, NULL, w);
	assert_int_equal(w->n, 1);
	snprintf(want, sizeof(want), "tcp [::1]:%u", c->peer_port);
	assert_string_equal(w->what, want);
	hangup_watch_close(w);
	hangup_watch_open(NULL, "0:0::1", NULL, NULL, w);
	assert_int_equal(w->n, 1);
	conn_tell(c, 'c');
	assert_hangup_soon(w);
	hangup_watch_close(w);
}

/* An IPv4 client of an IPv6 socket has the peer ::ffff:127.0.0.1: it is 127.0.0.1. */
static void test_tcp_ipv4_mapped(void **state)
{
	struct fixture *fx = *state;
	struct hangup_watch *w = &fx->w;
	struct conn *c = &fx->c;
	char want[64];

	if (!conn_open(c, "::ffff:127.0.0.1", "127.0.0.1"))
		skip();
	hangup_watch_open(NULL, "127.0.0.1", NULL, NULL, w);
	assert_int_equal(w->n, 1);
	assert_int_equal(inode_of(w->fds[0]), inode_of(c->accepted));
	snprintf(want, sizeof(want), "tcp 127.0.0.1:%u", c->peer_port);
	assert_string_equal(w->what, want);
	conn_tell(c, 'c');
	assert_hangup_soon(w);
}

/* And the other way round: a mapped rhost, a plain IPv4 peer. */
static void test_tcp_ipv4_mapped_rhost(void **state)
{
	struct fixture *fx = *state;
	struct hangup_watch *w = &fx->w;
	struct conn *c = &fx->c;

	assert_true(conn_open(c, "127.0.0.1", "127.0.0.1"));
	hangup_watch_open(NULL, "::ffff:127.0.0.1", NULL, NULL, w);
	assert_int_equal(w->n, 1);
}

/* A closed descriptor (POLLNVAL) is dropped from the watch, not taken for a hang-up. */
static void test_closed_under_us(void **state)
{
	struct fixture *fx = *state;
	struct hangup_watch *w = &fx->w;
	struct conn *c = &fx->c;

	assert_true(conn_open(c, "127.0.0.1", "127.0.0.1"));
	hangup_watch_open(NULL, "127.0.0.1", NULL, NULL, w);
	assert_int_equal(w->n, 1);
	close(w->fds[0]);
	assert_sleeps_to_deadline(w);
	w->fds[0] = -1;
}

static void test_pty_master_closes(void **state)
{
	const char *forms[2];
	char path[64], *name;
	struct fixture *fx = *state;
	struct hangup_watch *w = &fx->w;
	int master, slave, before;

	for (int form = 0; form < 2; form++) {
		assert_int_equal(openpty(&master, &slave, NULL, NULL, NULL), 0);
		keep(fx, master);
		keep(fx, slave);
		name = ttyname(slave);
		assert_non_null(name);
		snprintf(path, sizeof(path), "%s", name);
		forms[0] = path;
		forms[1] = path + strlen("/dev/");
		before = count_fds();
		hangup_watch_open(NULL, NULL, NULL, forms[form], w);
		assert_int_equal(w->n, 1);
		assert_int_equal(w->events[0], 0);
		assert_true(strncmp(w->what, "tty /dev/pts/", 13) == 0);
		assert_sleeps_to_deadline(w);
		/* Typed input is no hang-up. */
		assert_int_equal(write(master, "x", 1), 1);
		assert_sleeps_to_deadline(w);
		drop(fx, master);
		assert_hangup_soon(w);
		hangup_watch_close(w);
		assert_int_equal(count_fds(), before - 1); /* the master */
		drop(fx, slave);
	}
}

/* When standard input is the terminal, its description is watched: nothing is opened. */
static void test_tty_stdin_preferred(void **state)
{
	struct fixture *fx = *state;
	struct hangup_watch *w = &fx->w;
	int master, slave, fl;

	assert_int_equal(openpty(&master, &slave, NULL, NULL, NULL), 0);
	keep(fx, master);
	keep(fx, slave);
	fx->saved_stdin = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
	assert_true(dup2(slave, STDIN_FILENO) == STDIN_FILENO);
	hangup_watch_open(NULL, "127.0.0.1", NULL, ttyname(slave), w);
	assert_int_equal(w->n, 1);
	fl = fcntl(w->fds[0], F_GETFL);
	/* Ours would be read-only and non-blocking; openpty's slave is neither. */
	assert_int_equal(fl & O_ACCMODE, O_RDWR);
	assert_int_equal(fl & O_NONBLOCK, 0);
	drop(fx, master);
	assert_hangup_soon(w);
}

static void test_tty_names_ignored(void **state)
{
	const char *names[] = {
		"ssh",	       "",     "/dev/null",	  "null", "/dev/pts/../null",
		"../dev/null", "/tmp", "/dev/pts/999999", "pts",  "/dev/pts/ptmx",
		"/dev/tty",    "tty",  "/dev/console",	  NULL
	};
	struct fixture *fx = *state;
	struct hangup_watch *w = &fx->w;
	int before = count_fds();

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		hangup_watch_open(NULL, NULL, NULL, names[i], w);
		if (w->n != 0)
			fail_msg("tty \"%s\": %d watched (%s)", names[i] ? names[i] : "(null)",
				 w->n, w->what);
		hangup_watch_close(w);
	}
	assert_int_equal(count_fds(), before);
}

/* The client's socket and the terminal together; closing twice is harmless. */
static void test_both_and_close_twice(void **state)
{
	struct fixture *fx = *state;
	struct hangup_watch *w = &fx->w;
	struct conn *c = &fx->c;
	int master, slave, before;

	assert_true(conn_open(c, "127.0.0.1", "127.0.0.1"));
	assert_int_equal(openpty(&master, &slave, NULL, NULL, NULL), 0);
	keep(fx, master);
	keep(fx, slave);
	before = count_fds();
	hangup_watch_open(NULL, "127.0.0.1", NULL, ttyname(slave), w);
	assert_int_equal(w->n, 2);
	assert_non_null(strstr(w->what, "tcp 127.0.0.1:"));
	assert_non_null(strstr(w->what, ", tty /dev/pts/"));
	drop(fx, master);
	assert_hangup_soon(w);
	hangup_watch_close(w);
	hangup_watch_close(w);
	assert_int_equal(count_fds(), before - 1); /* the master */
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, fixture_setup, fixture_teardown)
	const struct CMUnitTest tests[] = {
		T(test_tcp_peer_closes),
		T(test_tcp_peer_resets),
		T(test_tcp_peer_shuts_down),
		T(test_tcp_unread_data),
		T(test_tcp_duplicates_watched_once),
		T(test_tcp_both_ends_in_process),
		T(test_tcp_ssh_connection),
		T(test_tcp_other_rhost),
		T(test_unix_socket_never),
		T(test_tcp_ipv6),
		T(test_tcp_ipv4_mapped),
		T(test_tcp_ipv4_mapped_rhost),
		T(test_closed_under_us),
		T(test_pty_master_closes),
		T(test_tty_stdin_preferred),
		T(test_tty_names_ignored),
		T(test_both_and_close_twice),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
