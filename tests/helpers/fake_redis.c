/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fake_redis: a Redis server that answers garbage, for tests/garbage.sh.
 *
 *   fake_redis [-p PORT] [-P PIDFILE] MODE SOCKET
 *
 * Listens on the Unix socket SOCKET (and on 127.0.0.1:PORT with -p), takes connections one
 * after another and reads the commands on each (enough of the RESP framing to know where one
 * ends; only the command name is looked at). A command the mode has an answer for (AUTH,
 * READWRITE, which gets +OK unless the mode says otherwise, ASKING, a sentinel's SENTINEL, a
 * master's ROLE) gets it and the connection goes on; any other command is the script, and
 * gets the mode's reply, after which later commands on the connection are read and dropped.
 * One line per command read goes to stderr:
 *
 *   fake_redis MODE: conn N: read "EVALSHA" (B bytes)
 *
 * In a reply, @ADDR@ stands for "127.0.0.1:PORT", @PORT@ for PORT, and @PAIR@ for a
 * sentinel's answer naming 127.0.0.1:PORT, the server itself.
 *
 * Modes: see the table below. SIGTERM or SIGINT ends it with status 0, removing SOCKET and
 * PIDFILE. The pid file is written once the sockets listen, so that a test can wait for it.
 * SIGPIPE is ignored and every send uses MSG_NOSIGNAL.
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
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define VALID_REPLY "*3\r\n:1\r\n:0\r\n:1\r\n"
#define HUGE_BULK_HEADER "$104857600\r\n"
#define HUGE_ARRAY "*2147483647\r\n"
#define HUGE_BULK_SENT (4u << 20) /* bytes of the 100 MB actually sent */
#define DRIP_MS 200
#define REQUEST_MAX 65536
#define REPLY_MAX 4096 /* a reply once its @...@ are filled in */

enum after {
	AFTER_HOLD,	  /* keep the connection until the client closes it */
	AFTER_CLOSE,	  /* close at once */
	AFTER_SHUT_WRITE, /* shutdown(SHUT_WR), then hold */
};

struct mode {
	const char *name;
	const char *reply; /* to the script; NULL: no reply */
	size_t reply_len;  /* 0: strlen(reply) */
	bool no_read;	   /* close without reading (mode close) */
	bool drip;	   /* one byte every DRIP_MS */
	bool huge;	   /* HUGE_BULK_SENT bytes of filler after the reply */
	enum after after;
	const char *first_reply; /* if set, the reply to the script on connection 1 */
	/* Answers to the commands that come ahead of the script; NULL: taken as the script. */
	const char *auth;
	const char *asking;
	const char *sentinel; /* SENTINEL get-master-addr-by-name */
	const char *role;
	const char *readwrite; /* NULL: +OK, as a cluster node answers */
};

#define ROLE_MASTER "*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n"

static const struct mode modes[] = {
	/* The script's reply, garbled. */
	{ .name = "ok", .reply = VALID_REPLY },
	{ .name = "wrong-type", .reply = "+OK\r\n" },
	{ .name = "integer", .reply = ":1\r\n" },
	{ .name = "string", .reply = "$5\r\nhello\r\n" },
	{ .name = "huge-bulk", .reply = HUGE_BULK_HEADER, .huge = true },
	{ .name = "negative", .reply = "*3\r\n:1\r\n:-5000\r\n:1\r\n" },
	{ .name = "nan", .reply = "*3\r\n:1\r\n:nan\r\n:1\r\n" },
	{ .name = "nan-bulk", .reply = "*3\r\n:1\r\n$3\r\nnan\r\n:1\r\n" },
	{ .name = "truncated", .reply = "*3\r\n:1\r\n", .after = AFTER_CLOSE },
	/* Half of the valid reply, cut inside its second element, then end of stream. */
	{ .name = "half-close",
	  .reply = VALID_REPLY,
	  .reply_len = (sizeof(VALID_REPLY) - 1) / 2 + 1,
	  .after = AFTER_SHUT_WRITE },
	{ .name = "stall" },
	{ .name = "drip", .reply = VALID_REPLY, .drip = true },
	{ .name = "close", .no_read = true, .after = AFTER_CLOSE },
	/* Seven arrays of 2^31 - 1 elements each, nested, in 98 bytes; then nothing. */
	{ .name = "huge-array", .reply = HUGE_ARRAY HUGE_ARRAY HUGE_ARRAY HUGE_ARRAY HUGE_ARRAY
					  HUGE_ARRAY HUGE_ARRAY },
	/* A standalone Redis where a cluster node was: READWRITE refused, the script answered. */
	{ .name = "standalone",
	  .reply = VALID_REPLY,
	  .readwrite = "-ERR This instance has cluster support disabled\r\n" },

	/* Cluster: redirects for ever, or once to ":PORT" (this host). The garbled redirects are
	   tests/unit/test_rnode.c's. */
	{ .name = "moved-loop", .reply = "-MOVED 1234 @ADDR@\r\n" },
	{ .name = "moved-once", .reply = VALID_REPLY, .first_reply = "-MOVED 1234 :@PORT@\r\n" },

	/* Sentinel: a sentinel that names itself as the master, which ROLE confirms. Garbled
	   sentinel answers and ROLEs that are not a master's are tests/unit/test_rnode.c's. */
	{ .name = "sentinel-ok", .reply = VALID_REPLY, .sentinel = "@PAIR@", .role = ROLE_MASTER },
};

static volatile sig_atomic_t stopping;
static int tcp_port; /* for @ADDR@, @PORT@, @PAIR@ */

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

/* Copies the template t into out, filling in @ADDR@, @PORT@ and @PAIR@. Returns the length. */
static size_t expand(const char *t, char *out, size_t size)
{
	char port[8];
	size_t n = 0;

	snprintf(port, sizeof(port), "%d", tcp_port);
	while (*t != '\0' && n + 64 < size) {
		if (strncmp(t, "@ADDR@", 6) == 0) {
			n += (size_t)snprintf(out + n, size - n, "127.0.0.1:%s", port);
			t += 6;
		} else if (strncmp(t, "@PORT@", 6) == 0) {
			n += (size_t)snprintf(out + n, size - n, "%s", port);
			t += 6;
		} else if (strncmp(t, "@PAIR@", 6) == 0) {
			n += (size_t)snprintf(out + n, size - n,
					      "*2\r\n$9\r\n127.0.0.1\r\n$%zu\r\n%s\r\n",
					      strlen(port), port);
			t += 6;
		} else {
			out[n++] = *t++;
		}
	}
	return n;
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

/* What was read on a connection and not yet taken as a command: pipelined commands (ROLE
   then EVALSHA, ASKING then EVALSHA) often come in one read. */
struct request_buf {
	char buf[REQUEST_MAX];
	size_t len;
};

/* Reads the next command. Returns its length, or -1 when the client left first or we are
   asked to stop. The first word goes to name (for the log line and the answers). A request
   longer than the buffer counts as read once the buffer is full. */
static long read_request(int fd, struct request_buf *rb, char *name, size_t name_size)
{
	size_t end = command_end(rb->buf, rb->len);

	while (end == 0 && rb->len < sizeof(rb->buf)) {
		ssize_t n;

		if (wait_fd(fd, POLLIN, -1) != 1)
			return -1;
		n = read(fd, rb->buf + rb->len, sizeof(rb->buf) - rb->len);
		if (n == 0)
			return -1;
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -1;
		}
		rb->len += (size_t)n;
		end = command_end(rb->buf, rb->len);
	}
	if (end == 0)
		end = rb->len;
	/* The command name: the first bulk of a multibulk, or the first inline word. */
	name[0] = '\0';
	if (end > 0) {
		const char *buf = rb->buf;
		size_t at = buf[0] == '*' ? past_crlf(buf, 0, end) : 0;
		size_t from, to;

		if (at != 0 && at < end && buf[at] == '$')
			at = past_crlf(buf, at, end);
		from = at;
		to = from;
		while (to < end && to - from + 1 < name_size && buf[to] > ' ' && buf[to] < 0x7f)
			to++;
		memcpy(name, buf + from, to - from);
		name[to - from] = '\0';
	}
	memmove(rb->buf, rb->buf + end, rb->len - end);
	rb->len -= end;
	return (long)end;
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

/* The mode's answer to a command that comes ahead of the script, or NULL for the script. */
static const char *answer_to(const struct mode *m, const char *name)
{
	const struct {
		const char *command, *reply;
	} answers[] = { { "AUTH", m->auth },
			{ "READWRITE", m->readwrite ? m->readwrite : "+OK\r\n" },
			{ "ASKING", m->asking },
			{ "SENTINEL", m->sentinel },
			{ "ROLE", m->role } };

	for (size_t i = 0; i < sizeof(answers) / sizeof(answers[0]); i++)
		if (answers[i].reply != NULL && strcasecmp(answers[i].command, name) == 0)
			return answers[i].reply;
	return NULL;
}

/* Sends the reply to the script, and does what the mode does after it. */
static void reply_to_script(const struct mode *m, int fd, unsigned long conn)
{
	const char *tmpl = conn == 1 && m->first_reply ? m->first_reply : m->reply;
	static char reply[REPLY_MAX];
	int sent = 0;

	if (tmpl != NULL) {
		size_t len = expand(tmpl, reply, sizeof(reply));

		if (m->reply_len != 0 && m->reply_len < len)
			len = m->reply_len;
		if (m->drip) {
			for (size_t i = 0; sent == 0 && i < len; i++) {
				sent = send_all(fd, reply + i, 1);
				/* A closed client shows as readable: stop dripping then. */
				if (sent == 0 && i + 1 < len && wait_fd(fd, POLLIN, DRIP_MS) != 0)
					sent = -1;
			}
		} else {
			sent = send_all(fd, reply, len);
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

static void serve(const struct mode *m, int fd, unsigned long conn)
{
	static struct request_buf rb;
	static char reply[REPLY_MAX];
	char name[32] = "";

	rb.len = 0;
	for (int n = 0;; n++) {
		const char *answer;
		long got = 0;

		if (!m->no_read) {
			got = read_request(fd, &rb, name, sizeof(name));
			if (got < 0) {
				if (n == 0)
					fprintf(stderr, "fake_redis %s: conn %lu: no request\n",
						m->name, conn);
				return;
			}
		}
		fprintf(stderr, "fake_redis %s: conn %lu: read \"%s\" (%ld bytes)\n", m->name, conn,
			name, got);
		answer = answer_to(m, name);
		if (answer == NULL) {
			reply_to_script(m, fd, conn);
			return;
		}
		if (send_all(fd, reply, expand(answer, reply, sizeof(reply))) != 0)
			return;
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
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
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
	int nl = 0, opt;

	while ((opt = getopt(argc, argv, "p:P:")) != -1) {
		switch (opt) {
		case 'p':
			tcp_port = atoi(optarg);
			if (tcp_port < 1 || tcp_port > 65535)
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
	if (tcp_port != 0) {
		lp[nl].fd = listen_tcp(tcp_port);
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
