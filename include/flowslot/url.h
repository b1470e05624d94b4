/* SPDX-License-Identifier: BSD-3-Clause */
/* url= and the endpoints a server names (MOVED, ASK, a sentinel's answer): parsed, never
   resolved. */
#ifndef FLOWSLOT_URL_H
#define FLOWSLOT_URL_H

#include <stdbool.h>
#include <stddef.h>

#define URL_HOST_MAX 255
#define URL_SOCKET_MAX 107 /* sun_path, less its NUL */
#define URL_USER_MAX 255
#define URL_PASSWORD_MAX 511
#define URL_NODES_MAX 8	   /* sentinels, or cluster seeds, in one url */
#define URL_MASTER_MAX 64  /* a Sentinel master name */
#define URL_ADDRESS_MAX 46 /* INET6_ADDRSTRLEN: an address, written out, with its NUL */

enum url_backend {
	URL_BACKEND_TCP,
	URL_BACKEND_UNIX,
	URL_BACKEND_LOCAL,
	URL_BACKEND_SENTINEL, /* nodes are the sentinels; master names the monitored master */
	URL_BACKEND_CLUSTER,  /* nodes are the seeds */
};

/* A TCP endpoint. */
struct url_node {
	char host[URL_HOST_MAX + 1];
	int port;
};

struct url {
	enum url_backend backend;
	char host[URL_HOST_MAX + 1]; /* TCP */
	int port;		     /* TCP */
	struct url_node nodes[URL_NODES_MAX];
	int n_nodes;
	char master[URL_MASTER_MAX + 1];
	char socket[URL_SOCKET_MAX + 1]; /* Unix */
	char user[URL_USER_MAX + 1];	 /* empty: the default user */
	char password[URL_PASSWORD_MAX + 1];
	bool has_password;
	int db;
	bool tls; /* rediss://, rediss-sentinel://, rediss-cluster:// */
};

/* Parses url= into u. Returns 0, or -1 with *why saying what is wrong and u as it was. */
int url_parse(const char *s, struct url *u, const char **why);

/* Parses "address:port" (n bytes at s; the last ':' splits, so an IPv6 address needs no
   brackets), as a server names a node in MOVED, ASK or a sentinel's answer. The address must
   be IPv4 or IPv6, not a host name. Returns 0, or -1. */
int url_parse_endpoint(const char *s, size_t n, struct url_node *node);

/* Whether host is an IP address as the connection reads it (getaddrinfo with AI_NUMERICHOST,
   IPv4 first, as hiredis dials: "127.1" and "2130706433" are 127.0.0.1), never resolving a
   name; if so, the address as inet_ntop writes it in addr (URL_ADDRESS_MAX bytes). */
bool url_host_address(const char *host, char *addr, size_t addrsz);

#endif
