/* SPDX-License-Identifier: BSD-3-Clause */
/* Fake Redis nodes for unit tests, one per address. hiredis's connect functions are wrapped
   (-Wl,--wrap, RSLOT_WRAPS in the Makefile) to hand back one end of a socketpair whose other
   end already holds the replies the test scripted for that address; an address with no
   connection left is refused (ECONNREFUSED), like a node that is down. log_msg is wrapped
   too (FAKEPEER_WRAPS), so that a test sees each line's priority. */
#ifndef FLOWSLOT_TEST_FAKEPEER_H
#define FLOWSLOT_TEST_FAKEPEER_H

#include <stdbool.h>
#include <stddef.h>

#define FAKEPEER_CONNS_MAX 32

/* Forgets every peer, connection and log line; closes what the last test left open. */
void fakepeer_reset(void);

/* How a peer's side of a connection ends once its replies are sent. */
enum fakepeer_end {
	FAKEPEER_OPEN, /* stays open and silent: the client waits for its timeout */
	FAKEPEER_EOF,  /* shuts its side down: the client reads end of stream */
	FAKEPEER_GONE, /* closes at once, before reading anything */
};

/* Lets addr ("host:port", or "unix:PATH") take one more connection, answered with n bytes of
   replies (RESP, sent whole before the client reads), then ended as end says; the next
   connection gets the next replies. */
void fakepeer_add_n(const char *addr, const char *replies, size_t n, enum fakepeer_end end);

/* fakepeer_add_n for a string of replies, the connection left open. */
void fakepeer_add(const char *addr, const char *replies);

/* The connections tried since the reset, refused ones included. */
int fakepeer_conns(void);

/* Connection i's address, and whether it was refused. */
const char *fakepeer_addr(int i);
bool fakepeer_refused(int i);

/* Connection i's addresses, in order, joined by '|': "127.0.0.1:7001|127.0.0.1:7002". */
const char *fakepeer_path(void);

/* What the client sent on connection i (RESP, as one string). */
const char *fakepeer_sent(int i);

/* Contexts freed, and how many of them had no FD_CLOEXEC. */
int fakepeer_frees(void);
int fakepeer_frees_without_cloexec(void);

/* The log since the reset, a line each: "PRIO message" (3 for LOG_ERR). */
const char *fakepeer_log(void);

/* Lines of the log at priority prio. */
int fakepeer_log_count(int prio);

#endif
