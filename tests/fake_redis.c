/*
 * fake_redis: a Redis server that answers garbage, for tests/garbage.sh.
 *
 *   fake_redis [-p PORT] [-P PIDFILE] MODE SOCKET
 *
 * Listens on the Unix socket SOCKET (and on 127.0.0.1:PORT with -p), takes connections one
 * after another, reads the first command of each (enough of the RESP framing to know where it
 * ends; nothing is interpreted) and answers it as MODE says. Later commands on the same
 * connection are read and dropped. One line per connection goes to stderr:
 *
 *   fake_redis MODE: conn N: read "EVALSHA" (B bytes)
 *
 * Modes: ok, wrong-type, integer, string, huge-bulk, negative, nan, nan-bulk, truncated,
 * half-close, stall, drip, close (see the table below). SIGTERM or SIGINT ends it with status
 * 0, removing SOCKET and PIDFILE. The pid file is written once the sockets listen, so that a
 * test can wait for it. SIGPIPE is ignored and every send uses MSG_NOSIGNAL.
 */

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define VALID_REPLY "*3\r\n:1\r\n:0\r\n:1\r\n"
#define HUGE_BULK_HEADER "$104857600\r\n"
#define HUGE_BULK_SENT (4u << 20) /* bytes of the 100 MB actually sent */
#define DRIP_MS 200
#define REQUEST_MAX 65536

enum after {
	AFTER_HOLD,	  /* keep the connection until the client closes it */
	AFTER_CLOSE,	  /* close at once */
	AFTER_SHUT_WRITE, /* shutdown(SHUT_WR), then hold */
};

struct mode {
	const char *name;
	const char *reply; /* NULL: no reply */
	size_t reply_len;  /* 0: strlen(reply) */
	bool read_first;   /* false: close without reading (mode close) */
	bool drip;	   /* one byte every DRIP_MS */
	bool huge;	   /* HUGE_BULK_SENT bytes of filler after the reply */
	enum after after;
};

static const struct mode modes[] = {
	{ "ok", VALID_REPLY, 0, true, false, false, AFTER_HOLD },
	{ "wrong-type", "+OK\r\n", 0, true, false, false, AFTER_HOLD },
	{ "integer", ":1\r\n", 0, true, false, false, AFTER_HOLD },
	{ "string", "$5\r\nhello\r\n", 0, true, false, false, AFTER_HOLD },
	{ "huge-bulk", HUGE_BULK_HEADER, 0, true, false, true, AFTER_HOLD },
	{ "negative", "*3\r\n:1\r\n:-5000\r\n:1\r\n", 0, true, false, false, AFTER_HOLD },
	{ "nan", "*3\r\n:1\r\n:nan\r\n:1\r\n", 0, true, false, false, AFTER_HOLD },
	{ "nan-bulk", "*3\r\n:1\r\n$3\r\nnan\r\n:1\r\n", 0, true, false, false, AFTER_HOLD },
	{ "truncated", "*3\r\n:1\r\n", 0, true, false, false, AFTER_CLOSE },
	/* Half of the valid reply, cut inside its second element, then end of stream. */
	{ "half-close", VALID_REPLY, (sizeof(VALID_REPLY) - 1) / 2 + 1, true, false, false,
	  AFTER_SHUT_WRITE },
	{ "stall", NULL, 0, true, false, false, AFTER_HOLD },
	{ "drip", VALID_REPLY, 0, true, true, false, AFTER_HOLD },
	{ "close", NULL, 0, false, false, false, AFTER_CLOSE },
};

static volatile sig_atomic_t stopping;

static void on_stop(int sig)
{
	(void)sig;
	stopping = 1;
}

/* Waits up to ms (-1: forever) for events on fd. Returns 1 when ready, 0 on timeout, -1 when
   asked to stop or on error. */
static int wait_fd(int fd, short events, int ms)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events };
		int n;

		if (stopping)
			return -1;
		n = poll(&p, 1, ms);
		if (n > 0)
			return 1;
		if (n == 0)
			return 0;
		if (errno != EINTR)
			return -1;
	}
}

/* Sends all of buf. Returns 0, or -1 when the client went away or we are asked to stop. */
static int send_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n;

		if (wait_fd(fd, POLLOUT, -1) != 1)
			return -1;
		n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
		} else if (n < 0 && errno != EINTR && errno != EAGAIN) {
			return -1;
		}
	}
	return 0;
}

/* Finds "\r\n" in buf[from, len). Returns the index just past it, or 0. */
static size_t past_crlf(const char *buf, size_t from, size_t len)
{
	for (size_t i = from; i + 1 < len; i++)
		if (buf[i] == '\r' && buf[i + 1] == '\n')
			return i + 2;
	return 0;
}

/* Where the first command in buf ends, or 0 while it is incomplete. A multibulk command
   (*N then N $LEN bulks) is framed; anything else (an inline command) ends at a newline. */
static size_t command_end(const char *buf, size_t len)
{
	size_t at, next;
	long count;

	if (len == 0)
		return 0;
	if (buf[0] != '*') {
		const char *nl = memchr(buf, '\n', len);

		return nl ? (size_t)(nl - buf) + 1 : 0;
	}
	next = past_crlf(buf, 0, len);
	if (next == 0)
		return 0;
	count = strtol(buf + 1, NULL, 10);
	at = next;
	for (long i = 0; i < count; i++) {
		long blen;

		next = past_crlf(buf, at, len);
		if (next == 0 || buf[at] != '$')
			return next == 0 ? 0 : next; /* not RESP: take what we have */
		blen = strtol(buf + at + 1, NULL, 10);
		if (blen < 0 || (size_t)blen + 2 > len - next)
			return 0;
		at = next + (size_t)blen + 2;
	}
	return at;
}

/* Reads the first command. Returns its length, or -1 when the client left first or we are
   asked to stop. The first word goes to name (for the log line). A request longer than the
   buffer counts as read once the buffer is full. */
static long read_request(int fd, char *name, size_t name_size)
{
	static char buf[REQUEST_MAX];
	size_t len = 0, end = 0;

	while (end == 0 && len < sizeof(buf)) {
		ssize_t n;

		if (wait_fd(fd, POLLIN, -1) != 1)
			return -1;
		n = read(fd, buf + len, sizeof(buf) - len);
		if (n == 0)
			return -1;
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -1;
		}
		len += (size_t)n;
		end = command_end(buf, len);
	}
	/* The command name: the first bulk of a multibulk, or the first inline word. */
	name[0] = '\0';
	if (len > 0) {
		size_t at = buf[0] == '*' ? past_crlf(buf, 0, len) : 0;
		size_t from, to;

		if (at != 0 && at < len && buf[at] == '$')
			at = past_crlf(buf, at, len);
		from = at;
		to = from;
		while (to < len && to - from + 1 < name_size && buf[to] > ' ' && buf[to] < 0x7f)
			to++;
		memcpy(name, buf + from, to - from);
		name[to - from] = '\0';
	}
	return (long)len;
}

/* Reads and drops whatever comes until the client closes, or we are asked to stop. */
static void hold(int fd)
{
	char buf[4096];

	for (;;) {
		ssize_t n;

		if (wait_fd(fd, POLLIN, -1) != 1)
			return;
		n = read(fd, buf, sizeof(buf));
		if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
			return;
	}
}

static void serve(const struct mode *m, int fd, unsigned long conn)
{
	char name[32] = "";
	long got = 0;
	int sent = 0;

	if (m->read_first) {
		got = read_request(fd, name, sizeof(name));
		if (got < 0) {
			fprintf(stderr, "fake_redis %s: conn %lu: no request\n", m->name, conn);
			return;
		}
	}
	fprintf(stderr, "fake_redis %s: conn %lu: read \"%s\" (%ld bytes)\n", m->name, conn, name,
		got);
	if (m->reply != NULL) {
		size_t len = m->reply_len ? m->reply_len : strlen(m->reply);

		if (m->drip) {
			for (size_t i = 0; sent == 0 && i < len; i++) {
				sent = send_all(fd, m->reply + i, 1);
				/* A closed client shows as readable: stop dripping then. */
				if (sent == 0 && i + 1 < len && wait_fd(fd, POLLIN, DRIP_MS) != 0)
					sent = -1;
			}
		} else {
			sent = send_all(fd, m->reply, len);
		}
	}
	if (sent == 0 && m->huge) {
		static char filler[65536];

		memset(filler, 'x', sizeof(filler));
		for (size_t off = 0; sent == 0 && off < HUGE_BULK_SENT; off += sizeof(filler))
			sent = send_all(fd, filler, sizeof(filler));
	}
	if (sent != 0)
		return;
	switch (m->after) {
	case AFTER_CLOSE:
		break;
	case AFTER_SHUT_WRITE:
		shutdown(fd, SHUT_WR);
		hold(fd);
		break;
	case AFTER_HOLD:
	default:
		hold(fd);
		break;
	}
}

static int listen_unix(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(a.sun_path)) {
		fprintf(stderr, "fake_redis: socket path too long: %s\n", path);
		return -1;
	}
	strcpy(a.sun_path, path);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 16) != 0) {
		fprintf(stderr, "fake_redis: %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static int listen_tcp(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 16) != 0) {
		fprintf(stderr, "fake_redis: 127.0.0.1:%d: %s\n", port, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static int write_pidfile(const char *path)
{
	char tmp[4096];
	FILE *f;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return -1;
	f = fopen(tmp, "w");
	if (f == NULL)
		return -1;
	fprintf(f, "%ld\n", (long)getpid());
	if (fclose(f) != 0 || rename(tmp, path) != 0)
		return -1;
	return 0;
}

static void usage(void)
{
	fputs("usage: fake_redis [-p PORT] [-P PIDFILE] MODE SOCKET\nmodes:", stderr);
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		fprintf(stderr, " %s", modes[i].name);
	fputc('\n', stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	const struct mode *m = NULL;
	const char *pidfile = NULL, *path;
	struct pollfd lp[2];
	struct sigaction sa = { .sa_handler = on_stop };
	unsigned long conn = 0;
	int nl = 0, port = 0, opt;

	while ((opt = getopt(argc, argv, "p:P:")) != -1) {
		switch (opt) {
		case 'p':
			port = atoi(optarg);
			if (port < 1 || port > 65535)
				usage();
			break;
		case 'P':
			pidfile = optarg;
			break;
		default:
			usage();
		}
	}
	if (argc - optind != 2)
		usage();
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (strcmp(argv[optind], modes[i].name) == 0)
			m = &modes[i];
	if (m == NULL)
		usage();
	path = argv[optind + 1];

	/* No SA_RESTART: a blocked poll returns EINTR, and the loops look at stopping. */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stderr, NULL, _IOLBF, 0);

	lp[nl].fd = listen_unix(path);
	lp[nl++].events = POLLIN;
	if (lp[0].fd < 0)
		return 1;
	if (port != 0) {
		lp[nl].fd = listen_tcp(port);
		lp[nl++].events = POLLIN;
		if (lp[1].fd < 0) {
			unlink(path);
			return 1;
		}
	}
	if (pidfile != NULL && write_pidfile(pidfile) != 0) {
		fprintf(stderr, "fake_redis: %s: %s\n", pidfile, strerror(errno));
		unlink(path);
		return 1;
	}

	while (!stopping) {
		int n = poll(lp, (nfds_t)nl, -1);

		if (n < 0 && errno != EINTR) {
			perror("fake_redis: poll");
			break;
		}
		for (int i = 0; n > 0 && i < nl && !stopping; i++) {
			int fd;

			if (!(lp[i].revents & POLLIN))
				continue;
			fd = accept4(lp[i].fd, NULL, NULL, SOCK_CLOEXEC);
			if (fd < 0)
				continue;
			serve(m, fd, ++conn);
			close(fd);
		}
	}

	for (int i = 0; i < nl; i++)
		close(lp[i].fd);
	unlink(path);
	if (pidfile != NULL)
		unlink(pidfile);
	fprintf(stderr, "fake_redis %s: stopped after %lu connections\n", m->name, conn);
	return stopping ? 0 : 1;
}
