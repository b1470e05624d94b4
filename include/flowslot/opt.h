/* Module options: defaults, parsing and validation. */
#ifndef FLOWSLOT_OPT_H
#define FLOWSLOT_OPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <security/pam_modules.h>

#include "flowslot/pressure.h"
#include "flowslot/slot.h"

#define OPT_HOST_MAX 255
#define OPT_SOCKET_MAX 107 /* sun_path, less its NUL */
#define OPT_USER_MAX 255
#define OPT_PASSWORD_MAX 511
#define OPT_KEY_MAX 256
#define OPT_DIR_MAX 255
#define OPT_NODES_MAX 8	  /* sentinels, or cluster seeds, in one url */
#define OPT_MASTER_MAX 64 /* a Sentinel master name */
#define OPT_SYNC_REPLICAS_MAX 16
#define OPT_PER_HOST_MAX 1000
#define OPT_CONF_DEFAULT "/etc/security/pam_flowslot.conf"
/* Default max_wait in the session phase, which has no deadline: long enough to queue the
   storm we exist for, 20 logins at once 7 s apart (the last waits 133 s), with room to spare. */
#define OPT_MAX_WAIT_SESSION_US INT64_C(300000000)
/* Default max_wait before the session phase: under login(1)'s LOGIN_TIMEOUT (60 s) and,
   with sshd's padding, under its LoginGraceTime (120 s). */
#define OPT_MAX_WAIT_PREAUTH_US INT64_C(45000000)

enum opt_backend {
	OPT_BACKEND_TCP,
	OPT_BACKEND_UNIX,
	OPT_BACKEND_LOCAL,
	OPT_BACKEND_SENTINEL, /* nodes are the sentinels; master names the monitored master */
	OPT_BACKEND_CLUSTER,  /* nodes are the seeds */
};

enum opt_fallback {
	OPT_FALLBACK_LOCAL,
	OPT_FALLBACK_OPEN,
	OPT_FALLBACK_CLOSED,
};

/* A TCP endpoint. */
struct opt_node {
	char host[OPT_HOST_MAX + 1];
	int port;
};

struct opt_url {
	enum opt_backend backend;
	char host[OPT_HOST_MAX + 1]; /* TCP */
	int port;		     /* TCP */
	struct opt_node nodes[OPT_NODES_MAX];
	int n_nodes;
	char master[OPT_MASTER_MAX + 1];
	char socket[OPT_SOCKET_MAX + 1]; /* Unix */
	char user[OPT_USER_MAX + 1];	 /* empty: the default user */
	char password[OPT_PASSWORD_MAX + 1];
	bool has_password;
	int db;
};

/* The pressure hold (src/hold.c). */
struct opt_pressure {
	int64_t limit_ppm[PRESSURE_RES_N]; /* 0: not watched; all 0: no hold */
	char dir[OPT_DIR_MAX + 1];
	bool refuse; /* pressure_timeout=refuse */
};

struct opt {
	struct opt_url url;
	char key[OPT_KEY_MAX + 1]; /* the template, before expansion */
	struct slot_params slot;
	int64_t timeout_us;
	int64_t countdown_us; /* 0: no countdown */
	enum opt_fallback fallback;
	char state_dir[OPT_DIR_MAX + 1];
	char password_file[OPT_DIR_MAX + 1]; /* empty: none */
	char sentinel_password[OPT_PASSWORD_MAX + 1];
	bool has_sentinel_password;
	int sync_replicas; /* 0: do not wait for replicas */
	int per_host;	   /* places one remote host may hold at once; 0: no limit */
	struct opt_pressure pressure;
	bool max_wait_set; /* false: the default, which depends on the phase */
	bool quiet;
	bool debug;
	int errors;	    /* bad options seen; any sends the login to the fallback */
	const char *origin; /* "file:line" of the option being set; NULL: a module argument */
};

/* Whether o asks for the pressure hold. */
bool opt_pressure_on(const struct opt *o);

/* Fills o with the defaults. */
void opt_defaults(struct opt *o);

/* Applies one "name=value" or flag. A bad one is logged by name, counted in o->errors, and
   leaves the option as it was. Returns 0, or -1 for a bad one. pamh may be NULL. */
int opt_set(struct opt *o, const pam_handle_t *pamh, const char *arg);

/* Defaults, then the configuration file (conf=, or OPT_CONF_DEFAULT if it exists), then every
   module argument in order, then password_file=. */
void opt_parse(struct opt *o, const pam_handle_t *pamh, int argc, const char **argv);

/* A DURATION: digits with an optional decimal part and an optional unit ms, s or m (a bare
   number is seconds). Returns 0 and the duration in microseconds, or -1. */
int opt_parse_duration(const char *s, int64_t *out_us);

/* Parses url= into u. Returns 0, or -1 with *why saying what is wrong. */
int opt_parse_url(const char *s, struct opt_url *u, const char **why);

/* Parses "address:port" (n bytes at s; the last ':' splits, so an IPv6 address needs no
   brackets), as a server names a node in MOVED, ASK or a sentinel's answer. The address must
   be IPv4 or IPv6, not a host name. Returns 0, or -1. */
int opt_parse_endpoint(const char *s, size_t n, struct opt_node *node);

/* Zeroes what o holds of secrets. */
void opt_wipe(struct opt *o);

#endif
