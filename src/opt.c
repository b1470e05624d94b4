#include "flowslot/opt.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flowslot/conf.h"
#include "flowslot/key.h"
#include "flowslot/log.h"
#include "flowslot/str.h"

#define US_PER_S INT64_C(1000000)

void opt_defaults(struct opt *o)
{
	memset(o, 0, sizeof(*o));
	o->url.backend = OPT_BACKEND_TCP;
	strcpy(o->url.host, "127.0.0.1");
	o->url.port = 6379;
	strcpy(o->key, "pam_flowslot");
	o->slot.interval_us = 7 * US_PER_S;
	o->slot.burst = 1;
	o->slot.max_wait_us = OPT_MAX_WAIT_SESSION_US;
	o->timeout_us = 500000;
	o->countdown_us = 15 * US_PER_S;
	o->fallback = OPT_FALLBACK_LOCAL;
	strcpy(o->state_dir, "/run/pam_flowslot");
	strcpy(o->pressure.dir, "/proc/pressure");
}

bool opt_pressure_on(const struct opt *o)
{
	for (int r = 0; r < PRESSURE_RES_N; r++)
		if (o->pressure.limit_ppm[r] > 0)
			return true;
	return false;
}

void opt_wipe(struct opt *o)
{
	explicit_bzero(o->url.password, sizeof(o->url.password));
	explicit_bzero(o->sentinel_password, sizeof(o->sentinel_password));
}

int opt_parse_duration(const char *s, int64_t *out_us)
{
	static const struct {
		const char *suffix;
		double us;
	} units[] = { { "", 1e6 }, { "ms", 1e3 }, { "s", 1e6 }, { "m", 60e6 } };
	const char *p = s;
	double v = 0, frac = 0, div = 1;

	/* By hand: strtod would take " 1", "1e3", "0x10", "inf" and "nan", and wants the
	   decimal point of the application's locale (a ',' under LC_NUMERIC=de_DE). */
	if (*p < '0' || *p > '9')
		return -1;
	while (*p >= '0' && *p <= '9')
		v = v * 10 + (*p++ - '0');
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return -1;
		for (; *p >= '0' && *p <= '9'; p++) {
			if (div < 1e15) { /* digits past these are below a microsecond */
				frac = frac * 10 + (*p - '0');
				div *= 10;
			}
		}
		v += frac / div;
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(p, units[i].suffix) == 0) {
			v = v * units[i].us + 0.5; /* to the nearest microsecond */
			/* A day bounds every duration option, far below int64_t. */
			if (v > 86400e6)
				return -1;
			*out_us = (int64_t)v;
			return 0;
		}
	}
	return -1;
}

/* Parses a decimal integer in [min, max] that fills all of s. */
static int opt_parse_int(const char *s, long long min, long long max, long long *out)
{
	char *end;
	long long v;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* Copies the n bytes at s into dst (dstsz bytes with the NUL), decoding %XX when asked. */
static int opt_copy(char *dst, size_t dstsz, const char *s, size_t n, bool decode)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (decode && c == '%') {
			char hex[3] = { 0 };
			char *end;

			if (i + 2 >= n)
				return -1;
			hex[0] = s[i + 1];
			hex[1] = s[i + 2];
			c = (unsigned char)strtoul(hex, &end, 16);
			if (end != hex + 2 || !isxdigit((unsigned char)hex[0]))
				return -1;
			i += 2;
		}
		if (c == '\0' || o + 1 >= dstsz)
			return -1;
		dst[o++] = (char)c;
	}
	dst[o] = '\0';
	return 0;
}

static int opt_parse_userinfo(const char *s, size_t n, struct opt_url *u, const char **why)
{
	const char *colon = memchr(s, ':', n);
	size_t user_len = colon ? (size_t)(colon - s) : n;

	if (opt_copy(u->user, sizeof(u->user), s, user_len, true) != 0) {
		*why = "user name too long or badly percent-encoded";
		return -1;
	}
	if (colon == NULL) { /* user@host: the password comes from password_file= */
		if (u->user[0] == '\0') {
			*why = "empty credentials before '@'";
			return -1;
		}
		return 0;
	}
	if (opt_copy(u->password, sizeof(u->password), colon + 1, n - user_len - 1, true) != 0 ||
	    u->password[0] == '\0') {
		*why = "password empty, too long or badly percent-encoded";
		return -1;
	}
	u->has_password = true;
	return 0;
}

static int opt_parse_db(const char *s, struct opt_url *u, const char **why)
{
	long long db;

	if (opt_parse_int(s, 0, 65535, &db) != 0) {
		*why = "database must be a number from 0 to 65535";
		return -1;
	}
	u->db = (int)db;
	return 0;
}

static bool opt_host_byte(char c, bool colon)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '-' || (colon && c == ':');
}

static int opt_parse_port(const char *s, size_t n, int *port)
{
	char digits[8];
	long long v;

	if (opt_copy(digits, sizeof(digits), s, n, false) != 0 ||
	    opt_parse_int(digits, 1, 65535, &v) != 0)
		return -1;
	*port = (int)v;
	return 0;
}

/* Parses "host[:port]" or "[IPv6][:port]", the n bytes at s; node->port keeps its default
   when no port is given. */
static int opt_parse_hostport(const char *s, size_t n, struct opt_node *node, const char **why)
{
	const char *end = s + n, *h = s, *port = NULL;
	size_t hlen;

	if (*s == '[') {
		const char *close = memchr(s, ']', n);

		if (close == NULL) {
			*why = "unclosed '[' in host";
			return -1;
		}
		h = s + 1;
		hlen = (size_t)(close - h);
		if (strspn(h, "0123456789abcdefABCDEF:.") < hlen) {
			*why = "an IPv6 address in brackets holds only hex digits, ':' and '.'";
			return -1;
		}
		if (close + 1 < end) {
			if (close[1] != ':') {
				*why = "junk after ']'";
				return -1;
			}
			port = close + 2;
		}
	} else {
		const char *colon = memchr(s, ':', n);

		hlen = (size_t)((colon ? colon : end) - s);
		port = colon ? colon + 1 : NULL;
		for (size_t i = 0; i < hlen; i++) {
			if (!opt_host_byte(s[i], false)) {
				*why = "host may hold only letters, digits, '.' and '-'";
				return -1;
			}
		}
	}
	if (hlen == 0 || opt_copy(node->host, sizeof(node->host), h, hlen, false) != 0) {
		*why = "host missing or too long";
		return -1;
	}
	if (port != NULL && opt_parse_port(port, (size_t)(end - port), &node->port) != 0) {
		*why = "port must be a number from 1 to 65535";
		return -1;
	}
	return 0;
}

int opt_parse_endpoint(const char *s, size_t n, struct opt_node *node)
{
	struct opt_node parsed;
	unsigned char addr[sizeof(struct in6_addr)];
	const char *colon = NULL;

	for (size_t i = 0; i < n; i++) {
		if (!opt_host_byte(s[i], true))
			return -1;
		if (s[i] == ':')
			colon = s + i;
	}
	if (colon == NULL || colon == s ||
	    opt_copy(parsed.host, sizeof(parsed.host), s, (size_t)(colon - s), false) != 0 ||
	    opt_parse_port(colon + 1, (size_t)(s + n - colon - 1), &parsed.port) != 0)
		return -1;
	/* An address, never a name: resolving one would not be bounded by timeout. */
	if (inet_pton(AF_INET, parsed.host, addr) != 1 &&
	    inet_pton(AF_INET6, parsed.host, addr) != 1)
		return -1;
	*node = parsed;
	return 0;
}

/* Parses "host1[:port1],host2[:port2],..." (n bytes at s) into u->nodes. */
static int opt_parse_nodes(const char *s, size_t n, int default_port, struct opt_url *u,
			   const char **why)
{
	const char *end = s + n;

	u->n_nodes = 0;
	for (const char *p = s; p <= end;) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *item_end = comma ? comma : end;

		if (u->n_nodes == OPT_NODES_MAX) {
			*why = "more than 8 hosts";
			return -1;
		}
		u->nodes[u->n_nodes].port = default_port;
		if (opt_parse_hostport(p, (size_t)(item_end - p), &u->nodes[u->n_nodes], why) != 0)
			return -1;
		u->n_nodes++;
		p = item_end + 1;
	}
	return 0;
}

/* Splits "[userinfo@]hosts[/path]": parses the userinfo, and returns where the hosts end. */
static const char *opt_parse_authority(const char *rest, const char **hosts, struct opt_url *u,
				       const char **why)
{
	/* The last '@': a password may hold '@' and '/', a path (database, master) neither. */
	const char *at = strrchr(rest, '@');

	*hosts = at ? at + 1 : rest;
	if (at && opt_parse_userinfo(rest, (size_t)(at - rest), u, why) != 0)
		return NULL;
	return *hosts + strcspn(*hosts, "/");
}

static int opt_parse_tcp(const char *rest, struct opt_url *u, const char **why)
{
	const char *host;
	const char *host_end = opt_parse_authority(rest, &host, u, why);
	struct opt_node node = { .port = 6379 };

	if (host_end == NULL ||
	    opt_parse_hostport(host, (size_t)(host_end - host), &node, why) != 0)
		return -1;
	strcpy(u->host, node.host);
	u->port = node.port;
	if (host_end[0] == '/' && host_end[1] != '\0' && opt_parse_db(host_end + 1, u, why) != 0)
		return -1;
	u->backend = OPT_BACKEND_TCP;
	return 0;
}

/* redis-sentinel://[userinfo@]host1[:port1],host2[:port2],.../MASTER[/db] */
static int opt_parse_sentinel(const char *rest, struct opt_url *u, const char **why)
{
	const char *hosts;
	const char *hosts_end = opt_parse_authority(rest, &hosts, u, why);
	const char *name, *name_end;

	if (hosts_end == NULL ||
	    opt_parse_nodes(hosts, (size_t)(hosts_end - hosts), 26379, u, why) != 0)
		return -1;
	name = *hosts_end == '/' ? hosts_end + 1 : hosts_end;
	name_end = name + strcspn(name, "/");
	if (name == name_end || (size_t)(name_end - name) > OPT_MASTER_MAX) {
		*why = "the master name is missing or longer than 64 bytes: .../MASTERNAME[/db]";
		return -1;
	}
	for (const char *p = name; p < name_end; p++) {
		if (!opt_host_byte(*p, false) && *p != '_') {
			*why = "the master name may hold only letters, digits, '.', '-' and '_'";
			return -1;
		}
	}
	memcpy(u->master, name, (size_t)(name_end - name));
	u->master[name_end - name] = '\0';
	if (*name_end == '/' && name_end[1] != '\0' && opt_parse_db(name_end + 1, u, why) != 0)
		return -1;
	u->backend = OPT_BACKEND_SENTINEL;
	return 0;
}

/* redis-cluster://[userinfo@]host1[:port1],host2[:port2],... (a cluster has only database 0) */
static int opt_parse_cluster(const char *rest, struct opt_url *u, const char **why)
{
	const char *hosts;
	const char *hosts_end = opt_parse_authority(rest, &hosts, u, why);

	if (hosts_end == NULL ||
	    opt_parse_nodes(hosts, (size_t)(hosts_end - hosts), 6379, u, why) != 0)
		return -1;
	if (*hosts_end == '/' && strcmp(hosts_end, "/") != 0 && strcmp(hosts_end, "/0") != 0) {
		*why = "a cluster has only database 0";
		return -1;
	}
	u->backend = OPT_BACKEND_CLUSTER;
	return 0;
}

static int opt_parse_unix(const char *rest, struct opt_url *u, const char **why)
{
	const char *query = strchr(rest, '?');
	size_t n = query ? (size_t)(query - rest) : strlen(rest);

	if (rest[0] != '/') {
		*why = "socket path must be absolute: unix:///path/to/redis.sock";
		return -1;
	}
	if (opt_copy(u->socket, sizeof(u->socket), rest, n, false) != 0) {
		*why = "socket path too long";
		return -1;
	}
	/* ?db=N&user=NAME, in any order. */
	for (const char *p = query; p != NULL && *p != '\0';) {
		const char *item = p + 1, *end = strchr(item, '&'), *v;
		size_t len = end ? (size_t)(end - item) : strlen(item);
		char value[OPT_USER_MAX + 1];

		p = end;
		if ((v = str_skip_prefix(item, "db=")) != NULL) {
			if (opt_copy(value, sizeof(value), v, len - 3, false) != 0 ||
			    opt_parse_db(value, u, why) != 0) {
				*why = "database must be a number from 0 to 65535";
				return -1;
			}
		} else if ((v = str_skip_prefix(item, "user=")) != NULL) {
			if (opt_copy(u->user, sizeof(u->user), v, len - 5, true) != 0 ||
			    u->user[0] == '\0') {
				*why = "user name empty, too long or badly percent-encoded";
				return -1;
			}
		} else {
			*why = "the query may hold only db=N and user=NAME";
			return -1;
		}
	}
	u->backend = OPT_BACKEND_UNIX;
	return 0;
}

int opt_parse_url(const char *s, struct opt_url *u, const char **why)
{
	struct opt_url parsed = { .port = 6379 };
	const char *rest;
	int rc;

	if (strcmp(s, "local") == 0) {
		parsed.backend = OPT_BACKEND_LOCAL;
		rc = 0;
	} else if ((rest = str_skip_prefix(s, "redis://")) != NULL) {
		rc = opt_parse_tcp(rest, &parsed, why);
	} else if ((rest = str_skip_prefix(s, "unix://")) != NULL) {
		rc = opt_parse_unix(rest, &parsed, why);
	} else if ((rest = str_skip_prefix(s, "redis-sentinel://")) != NULL) {
		rc = opt_parse_sentinel(rest, &parsed, why);
	} else if ((rest = str_skip_prefix(s, "redis-cluster://")) != NULL) {
		rc = opt_parse_cluster(rest, &parsed, why);
	} else {
		*why = "scheme must be redis://, unix://, redis-sentinel://, redis-cluster:// or "
		       "the word local";
		rc = -1;
	}
	if (rc == 0)
		*u = parsed;
	explicit_bzero(&parsed, sizeof(parsed));
	return rc;
}

static int opt_set_duration(int64_t *dst, const char *v, int64_t min_us, int64_t max_us,
			    const char *range, const char **why)
{
	int64_t us;

	if (opt_parse_duration(v, &us) != 0) {
		*why = "not a duration (examples: 7s, 500ms, 1.5m)";
		return -1;
	}
	if (us < min_us || us > max_us) {
		*why = range;
		return -1;
	}
	*dst = us;
	return 0;
}

/* One setter per option; each returns 0, or -1 with *why (NULL: say nothing more). */
static int opt_set_url(struct opt *o, const char *v, const char **why)
{
	return opt_parse_url(v, &o->url, why);
}

static int opt_set_key(struct opt *o, const char *v, const char **why)
{
	if (key_check_template(v, why) != 0)
		return -1;
	if (strlen(v) > OPT_KEY_MAX) {
		*why = "longer than 256 bytes";
		return -1;
	}
	strcpy(o->key, v);
	return 0;
}

static int opt_set_interval(struct opt *o, const char *v, const char **why)
{
	return opt_set_duration(&o->slot.interval_us, v, 1000, 3600 * US_PER_S,
				"must be from 1ms to 60m", why);
}

static int opt_set_max_wait(struct opt *o, const char *v, const char **why)
{
	if (opt_set_duration(&o->slot.max_wait_us, v, 0, 3600 * US_PER_S, "must be from 0 to 60m",
			     why) != 0)
		return -1;
	o->max_wait_set = true;
	return 0;
}

static int opt_set_timeout(struct opt *o, const char *v, const char **why)
{
	return opt_set_duration(&o->timeout_us, v, 1000, 60 * US_PER_S, "must be from 1ms to 60s",
				why);
}

static int opt_set_countdown(struct opt *o, const char *v, const char **why)
{
	static const char range[] = "must be 0 (off) or from 100ms to 60m";
	int64_t us;

	if (opt_set_duration(&us, v, 0, 3600 * US_PER_S, range, why) != 0)
		return -1;
	if (us > 0 && us < 100000) {
		*why = range;
		return -1;
	}
	o->countdown_us = us;
	return 0;
}

static int opt_set_burst(struct opt *o, const char *v, const char **why)
{
	long long burst;

	if (opt_parse_int(v, 1, 1000, &burst) != 0) {
		*why = "must be a whole number from 1 to 1000";
		return -1;
	}
	o->slot.burst = burst;
	return 0;
}

static int opt_set_fallback(struct opt *o, const char *v, const char **why)
{
	if (strcmp(v, "local") == 0)
		o->fallback = OPT_FALLBACK_LOCAL;
	else if (strcmp(v, "open") == 0)
		o->fallback = OPT_FALLBACK_OPEN;
	else if (strcmp(v, "closed") == 0)
		o->fallback = OPT_FALLBACK_CLOSED;
	else {
		*why = "must be local, open or closed";
		return -1;
	}
	return 0;
}

static int opt_set_state_dir(struct opt *o, const char *v, const char **why)
{
	if (v[0] != '/') {
		*why = "must be an absolute path";
		return -1;
	}
	if (strlen(v) > OPT_DIR_MAX) {
		*why = "longer than 255 bytes";
		return -1;
	}
	strcpy(o->state_dir, v);
	return 0;
}

static int opt_set_password_file(struct opt *o, const char *v, const char **why)
{
	if (v[0] != '/') {
		*why = "must be an absolute path";
		return -1;
	}
	if (strlen(v) > OPT_DIR_MAX) {
		*why = "longer than 255 bytes";
		return -1;
	}
	strcpy(o->password_file, v);
	return 0;
}

static int opt_set_sentinel_password(struct opt *o, const char *v, const char **why)
{
	if (v[0] == '\0' || strlen(v) > OPT_PASSWORD_MAX) {
		*why = "empty or longer than 511 bytes";
		return -1;
	}
	strcpy(o->sentinel_password, v);
	o->has_sentinel_password = true;
	return 0;
}

static int opt_set_sync_replicas(struct opt *o, const char *v, const char **why)
{
	long long n;

	if (opt_parse_int(v, 0, OPT_SYNC_REPLICAS_MAX, &n) != 0) {
		*why = "must be a whole number from 0 to 16";
		return -1;
	}
	o->sync_replicas = (int)n;
	return 0;
}

static int opt_set_per_host(struct opt *o, const char *v, const char **why)
{
	long long n;

	if (opt_parse_int(v, 0, OPT_PER_HOST_MAX, &n) != 0) {
		*why = "must be a whole number from 0 to 1000";
		return -1;
	}
	o->per_host = (int)n;
	return 0;
}

static int opt_set_pressure(struct opt *o, const char *v, const char **why)
{
	return pressure_parse_spec(v, o->pressure.limit_ppm, why);
}

static int opt_set_pressure_dir(struct opt *o, const char *v, const char **why)
{
	if (v[0] != '/') {
		*why = "must be an absolute path";
		return -1;
	}
	if (strlen(v) > OPT_DIR_MAX) {
		*why = "longer than 255 bytes";
		return -1;
	}
	strcpy(o->pressure.dir, v);
	return 0;
}

static int opt_set_pressure_timeout(struct opt *o, const char *v, const char **why)
{
	if (strcmp(v, "admit") == 0)
		o->pressure.refuse = false;
	else if (strcmp(v, "refuse") == 0)
		o->pressure.refuse = true;
	else {
		*why = "must be admit or refuse";
		return -1;
	}
	return 0;
}

/* conf= itself is read by opt_parse before anything else; here it is only checked. */
static int opt_set_conf(struct opt *o, const char *v, const char **why)
{
	if (o->origin != NULL) {
		*why = "a configuration file cannot name another";
		return -1;
	}
	if (v[0] != '/') {
		*why = "must be an absolute path";
		return -1;
	}
	return 0;
}

static const struct opt_setter {
	const char *name; /* with its '=' */
	int (*set)(struct opt *o, const char *v, const char **why);
	bool secret; /* never echo the value */
} opt_setters[] = {
	{ "url=", opt_set_url, true },
	{ "key=", opt_set_key, false },
	{ "interval=", opt_set_interval, false },
	{ "burst=", opt_set_burst, false },
	{ "max_wait=", opt_set_max_wait, false },
	{ "timeout=", opt_set_timeout, false },
	{ "fallback=", opt_set_fallback, false },
	{ "state_dir=", opt_set_state_dir, false },
	{ "countdown=", opt_set_countdown, false },
	{ "password_file=", opt_set_password_file, true },
	{ "sentinel_password=", opt_set_sentinel_password, true },
	{ "sync_replicas=", opt_set_sync_replicas, false },
	{ "per_host=", opt_set_per_host, false },
	{ "conf=", opt_set_conf, false },
	{ "pressure=", opt_set_pressure, false },
	{ "pressure_dir=", opt_set_pressure_dir, false },
	{ "pressure_timeout=", opt_set_pressure_timeout, false },
};

static int opt_bad(struct opt *o, const pam_handle_t *pamh, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int opt_bad(struct opt *o, const pam_handle_t *pamh, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	o->errors++;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (o->origin != NULL)
		log_msg(pamh, LOG_ERR, "%s: %s", o->origin, msg);
	else
		log_msg(pamh, LOG_ERR, "%s", msg);
	return -1;
}

int opt_set(struct opt *o, const pam_handle_t *pamh, const char *arg)
{
	char shown[128];

	if (strcmp(arg, "quiet") == 0) {
		o->quiet = true;
		return 0;
	}
	if (strcmp(arg, "debug") == 0) {
		o->debug = true;
		return 0;
	}
	for (size_t i = 0; i < sizeof(opt_setters) / sizeof(opt_setters[0]); i++) {
		const struct opt_setter *s = &opt_setters[i];
		size_t namelen = strlen(s->name);
		const char *why = NULL;

		if (strncmp(arg, s->name, namelen) != 0)
			continue;
		if (s->set(o, arg + namelen, &why) == 0)
			return 0;
		/* A url may hold a password: name what is wrong, never echo it. */
		if (s->secret)
			return opt_bad(o, pamh, "bad value for %.*s: %s", (int)namelen - 1, arg,
				       why);
		return opt_bad(o, pamh, "bad value for %.*s: \"%s\": %s", (int)namelen - 1, arg,
			       log_escape(arg + namelen, shown, sizeof(shown)), why);
	}
	/* Only a name: "url redis://:pw@h", or a password pasted alone on a line of the
	   configuration file, would otherwise reach the log. */
	log_escape(arg, shown, sizeof(shown));
	shown[strspn(shown, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")] = '\0';
	if (shown[0] == '\0')
		return opt_bad(o, pamh, "unknown option (not shown: it is not a name)");
	return opt_bad(o, pamh, "unknown option \"%s\"", shown);
}

void opt_parse(struct opt *o, const pam_handle_t *pamh, int argc, const char **argv)
{
	const char *conf = NULL;
	const char *v, *why = NULL;

	opt_defaults(o);
	/* First the file, then the module arguments on top of it. */
	for (int i = 0; i < argc; i++)
		if ((v = str_skip_prefix(argv[i], "conf=")) != NULL)
			conf = v;
	conf_read(o, pamh, conf != NULL ? conf : OPT_CONF_DEFAULT, conf != NULL);
	for (int i = 0; i < argc; i++) {
		/* /etc/pam.d is world-readable. */
		if (opt_set(o, pamh, argv[i]) != 0)
			continue;
		if (str_skip_prefix(argv[i], "url=") != NULL && o->url.has_password)
			log_msg(pamh, LOG_WARNING,
				"url= in the PAM stack holds a password, and files in /etc/pam.d "
				"are world-readable: use password_file= or conf=");
		if (str_skip_prefix(argv[i], "sentinel_password=") != NULL)
			log_msg(pamh, LOG_WARNING,
				"sentinel_password= in the PAM stack, and files in /etc/pam.d are "
				"world-readable: set it in conf=");
	}
	if (o->password_file[0] != '\0') {
		if (conf_read_secret(o->password_file, o->url.password, sizeof(o->url.password),
				     &why) == 0) {
			o->url.has_password = true;
		} else {
			o->errors++;
			log_msg(pamh, LOG_ERR, "password_file: cannot use %s: %s", o->password_file,
				why);
		}
	}
	if (o->url.user[0] != '\0' && !o->url.has_password) {
		o->errors++;
		log_msg(pamh, LOG_ERR, "url names the user \"%s\" but no password is given",
			o->url.user);
	}
}
