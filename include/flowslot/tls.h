/* SPDX-License-Identifier: BSD-3-Clause */
/* TLS on a connected socket, for rediss://: the handshake, reads and writes, each within a
   deadline. libssl is loaded only here, when a connection asks for it: a login on redis:// or
   unix:// never maps it. */
#ifndef FLOWSLOT_TLS_H
#define FLOWSLOT_TLS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "flowslot/opt.h"

/* The longest cause a failure gives, with its NUL. A path or a name in it is cut short, in
   the middle, so that the cause after it always fits; rnode_fail logs all of it. */
#define TLS_WHY_MAX 200

struct tls_conn;

/* Shakes hands over the connected socket fd (left as it is: the caller closes it) by
   deadline_us, with o's trust anchors and client certificate, and checks the server's
   certificate: its chain, and unless o->verify is OPT_TLS_VERIFY_CA, name (a DNS name, in
   subjectAltName only, or an IP address as the connection reads one, url_host_address, checked
   as one; a DNS name also goes as SNI). o's files are read only if trust_open_root_file (or,
   for o->ca_dir, trust_open_root_dir) lets them be. Returns the connection, or NULL with the
   cause in why. */
struct tls_conn *tls_open(int fd, const struct opt_tls *o, const char *name, int64_t deadline_us,
			  char *why, size_t whysz);

/* Sends all of buf by deadline_us, without SIGPIPE. Returns 0, or -1 with the cause in why. */
int tls_write(struct tls_conn *t, const void *buf, size_t len, int64_t deadline_us, char *why,
	      size_t whysz);

/* Reads what arrives first, at most n bytes, by deadline_us. Returns how many (> 0), or -1
   with the cause in why (the server's closing too). */
ssize_t tls_read(struct tls_conn *t, void *buf, size_t n, int64_t deadline_us, char *why,
		 size_t whysz);

/* Frees t and unloads libssl (NULL is fine); never closes the socket. */
void tls_close(struct tls_conn *t);

#endif
