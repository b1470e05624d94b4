/* SPDX-License-Identifier: BSD-3-Clause */
#include "fakepeer.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>
#include <security/pam_modules.h>

#define FAKEPEER_ADDR_MAX 300
#define FAKEPEER_SENT_MAX 65536
#define FAKEPEER_LOG_MAX 16384

/* One connection a peer will take: the address and the replies it is to find. */
struct fakepeer_script {
	char addr[FAKEPEER_ADDR_MAX];
	char *replies;
	size_t n;
	enum fakepeer_end end;
	bool used;
};

struct fakepeer_conn {
	char addr[FAKEPEER_ADDR_MAX];
	int fd; /* the peer's end; -1 when refused or gone */
	bool gone;
	char sent[FAKEPEER_SENT_MAX];
	bool read;
};

static struct fakepeer_script scripts[FAKEPEER_CONNS_MAX];
static int n_scripts;
static struct fakepeer_conn conns[FAKEPEER_CONNS_MAX];
static int n_conns;
static int frees, frees_without_cloexec;
static char log_buf[FAKEPEER_LOG_MAX];
static size_t log_len;
static char path_buf[FAKEPEER_CONNS_MAX * FAKEPEER_ADDR_MAX];

redisContext *__real_redisConnectUnixWithTimeout(const char *path, const struct timeval tv);
redisContext *__wrap_redisConnectWithTimeout(const char *ip, int port, const struct timeval tv);
redisContext *__wrap_redisConnectUnixWithTimeout(const char *path, const struct timeval tv);
void __real_redisFree(redisContext *c);
void __wrap_redisFree(redisContext *c);
void __wrap_log_msg(const pam_handle_t *pamh, int prio, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

void fakepeer_reset(void)
{
	for (int i = 0; i < n_scripts; i++)
		free(scripts[i].replies);
	for (int i = 0; i < n_conns; i++)
		if (conns[i].fd >= 0)
			close(conns[i].fd);
	n_scripts = n_conns = 0;
	frees = frees_without_cloexec = 0;
	log_len = 0;
	log_buf[0] = '\0';
}

void fakepeer_add_n(const char *addr, const char *replies, size_t n, enum fakepeer_end end)
{
	struct fakepeer_script *s;

	assert_true(n_scripts < FAKEPEER_CONNS_MAX);
	s = &scripts[n_scripts++];
	assert_true(strlen(addr) < sizeof(s->addr));
	strcpy(s->addr, addr);
	s->replies = malloc(n + 1);
	assert_non_null(s->replies);
	memcpy(s->replies, replies, n);
	s->n = n;
	s->end = end;
	s->used = false;
}

void fakepeer_add(const char *addr, const char *replies)
{
	fakepeer_add_n(addr, replies, strlen(replies), FAKEPEER_OPEN);
}

/* A context that failed as a connect to a closed port does. */
static redisContext *fakepeer_refuse(const struct timeval tv)
{
	redisContext *c = __real_redisConnectUnixWithTimeout("/nonexistent/flowslot.sock", tv);

	assert_non_null(c);
	c->err = REDIS_ERR_IO;
	snprintf(c->errstr, sizeof(c->errstr), "Connection refused");
	errno = ECONNREFUSED;
	return c;
}

static redisContext *fakepeer_connect(const char *addr, const struct timeval tv)
{
	struct fakepeer_conn *conn;
	int sv[2];

	assert_true(n_conns < FAKEPEER_CONNS_MAX);
	conn = &conns[n_conns++];
	snprintf(conn->addr, sizeof(conn->addr), "%s", addr);
	conn->fd = -1;
	conn->gone = false;
	conn->read = false;
	for (int i = 0; i < n_scripts; i++) {
		struct fakepeer_script *s = &scripts[i];

		if (s->used || strcmp(s->addr, addr) != 0)
			continue;
		s->used = true;
		/* The client's end without FD_CLOEXEC: the code under test must set it. */
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
		assert_int_equal(fcntl(sv[1], F_SETFD, FD_CLOEXEC), 0);
		assert_int_equal(write(sv[1], s->replies, s->n), (ssize_t)s->n);
		if (s->end == FAKEPEER_EOF)
			shutdown(sv[1], SHUT_WR);
		if (s->end == FAKEPEER_GONE) {
			close(sv[1]);
			sv[1] = -1;
			conn->gone = true;
		}
		conn->fd = sv[1];
		return redisConnectFd(sv[0]);
	}
	return fakepeer_refuse(tv);
}

redisContext *__wrap_redisConnectWithTimeout(const char *ip, int port, const struct timeval tv)
{
	char addr[FAKEPEER_ADDR_MAX];

	snprintf(addr, sizeof(addr), "%s:%d", ip, port);
	return fakepeer_connect(addr, tv);
}

redisContext *__wrap_redisConnectUnixWithTimeout(const char *path, const struct timeval tv)
{
	char addr[FAKEPEER_ADDR_MAX];

	snprintf(addr, sizeof(addr), "unix:%s", path);
	return fakepeer_connect(addr, tv);
}

void __wrap_redisFree(redisContext *c)
{
	if (c != NULL) {
		frees++;
		if (c->fd >= 0 && !(fcntl(c->fd, F_GETFD) & FD_CLOEXEC))
			frees_without_cloexec++;
	}
	__real_redisFree(c);
}

void __wrap_log_msg(const pam_handle_t *pamh, int prio, const char *fmt, ...)
{
	va_list ap;
	int n;

	(void)pamh;
	n = snprintf(log_buf + log_len, sizeof(log_buf) - log_len, "%d ", prio);
	assert_true(n > 0 && (size_t)n < sizeof(log_buf) - log_len);
	log_len += (size_t)n;
	va_start(ap, fmt);
	n = vsnprintf(log_buf + log_len, sizeof(log_buf) - log_len, fmt, ap);
	va_end(ap);
	assert_true(n >= 0 && (size_t)n + 1 < sizeof(log_buf) - log_len);
	log_len += (size_t)n;
	log_buf[log_len++] = '\n';
	log_buf[log_len] = '\0';
}

int fakepeer_conns(void)
{
	return n_conns;
}

const char *fakepeer_addr(int i)
{
	assert_true(i >= 0 && i < n_conns);
	return conns[i].addr;
}

bool fakepeer_refused(int i)
{
	assert_true(i >= 0 && i < n_conns);
	return conns[i].fd < 0 && !conns[i].gone;
}

const char *fakepeer_path(void)
{
	size_t n = 0;

	path_buf[0] = '\0';
	for (int i = 0; i < n_conns; i++)
		n += (size_t)snprintf(path_buf + n, sizeof(path_buf) - n, "%s%s", i ? "|" : "",
				      conns[i].addr);
	return path_buf;
}

const char *fakepeer_sent(int i)
{
	struct fakepeer_conn *conn;
	size_t n = 0;

	assert_true(i >= 0 && i < n_conns);
	conn = &conns[i];
	if (conn->read || conn->fd < 0)
		return conn->read ? conn->sent : "";
	for (;;) {
		ssize_t got =
		    recv(conn->fd, conn->sent + n, sizeof(conn->sent) - 1 - n, MSG_DONTWAIT);

		if (got <= 0)
			break;
		n += (size_t)got;
	}
	conn->sent[n] = '\0';
	conn->read = true;
	return conn->sent;
}

int fakepeer_frees(void)
{
	return frees;
}

int fakepeer_frees_without_cloexec(void)
{
	return frees_without_cloexec;
}

const char *fakepeer_log(void)
{
	return log_buf;
}

int fakepeer_log_count(int prio)
{
	char tag[8];
	int count = 0;

	snprintf(tag, sizeof(tag), "%d ", prio);
	for (const char *p = log_buf; *p != '\0';) {
		const char *nl = strchr(p, '\n');

		if (strncmp(p, tag, strlen(tag)) == 0)
			count++;
		if (nl == NULL)
			break;
		p = nl + 1;
	}
	return count;
}
