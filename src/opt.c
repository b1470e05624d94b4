/* SPDX-License-Identifier: BSD-3-Clause */
#include "flowslot/opt.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "flowslot/conf.h"
#include "flowslot/key.h"
#include "flowslot/log.h"
#include "flowslot/once.h"
#include "flowslot/str.h"

#define US_PER_S INT64_C(1000000)

_Static_assert(CONF_SECRET_MAX == URL_PASSWORD_MAX, "password_file= holds a url's password");

void opt_defaults(struct opt *o)
{
	memset(o, 0, sizeof(*o));
	/* No url: this host's own schedule, quietly; a Redis is shared only when named. */
	o->url.backend = URL_BACKEND_LOCAL;
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
	return url_parse(v, &o->url, why);
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

/* The index of v among words (in the order of the option's enum, NULL-terminated), or -1 with
   *why = must_be. */
static int opt_word(const char *v, const char *const words[], const char *must_be, const char **why)
{
	for (int i = 0; words[i] != NULL; i++)
		if (strcmp(v, words[i]) == 0)
			return i;
	*why = must_be;
	return -1;
}

static int opt_set_messages(struct opt *o, const char *v, const char **why)
{
	static const char *const words[] = { "auto", "live", "summary", NULL };
	int i = opt_word(v, words, "must be auto, live or summary", why);

	if (i < 0)
		return -1;
	o->messages = (enum opt_messages)i;
	return 0;
}

static int opt_set_refusal(struct opt *o, const char *v, const char **why)
{
	static const char *const words[] = { "error", "info", NULL };
	int i = opt_word(v, words, "must be error or info", why);

	if (i < 0)
		return -1;
	o->refusal = (enum opt_refusal)i;
	return 0;
}

static int opt_set_burst(struct opt *o, const char *v, const char **why)
{
	long long burst;

	if (str_parse_int(v, 1, 1000, &burst) != 0) {
		*why = "must be a whole number from 1 to 1000";
		return -1;
	}
	o->slot.burst = burst;
	return 0;
}

static int opt_set_fallback(struct opt *o, const char *v, const char **why)
{
	static const char *const words[] = { "local", "open", "closed", NULL };
	int i = opt_word(v, words, "must be local, open or closed", why);

	if (i < 0)
		return -1;
	o->fallback = (enum opt_fallback)i;
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
	if (v[0] == '\0' || strlen(v) > URL_PASSWORD_MAX) {
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

	if (str_parse_int(v, 0, OPT_SYNC_REPLICAS_MAX, &n) != 0) {
		*why = "must be a whole number from 0 to 16";
		return -1;
	}
	o->sync_replicas = (int)n;
	return 0;
}

static int opt_set_per_host(struct opt *o, const char *v, const char **why)
{
	long long n;

	if (str_parse_int(v, 0, OPT_PER_HOST_MAX, &n) != 0) {
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

/* A path option: absolute, and fits dst (OPT_DIR_MAX + 1 bytes). */
static int opt_set_path(char *dst, const char *v, const char **why)
{
	if (v[0] != '/') {
		*why = "must be an absolute path";
		return -1;
	}
	if (strlen(v) > OPT_DIR_MAX) {
		*why = "longer than 255 bytes";
		return -1;
	}
	strcpy(dst, v);
	return 0;
}

/* Notes that a tls_* option was set (rc 0), for opt_check. */
static int opt_tls_set(struct opt *o, int rc)
{
	if (rc == 0)
		o->tls.set = true;
	return rc;
}

static int opt_set_tls_ca_file(struct opt *o, const char *v, const char **why)
{
	return opt_tls_set(o, opt_set_path(o->tls.ca_file, v, why));
}

static int opt_set_tls_ca_dir(struct opt *o, const char *v, const char **why)
{
	return opt_tls_set(o, opt_set_path(o->tls.ca_dir, v, why));
}

static int opt_set_tls_cert_file(struct opt *o, const char *v, const char **why)
{
	return opt_tls_set(o, opt_set_path(o->tls.cert_file, v, why));
}

static int opt_set_tls_key_file(struct opt *o, const char *v, const char **why)
{
	return opt_tls_set(o, opt_set_path(o->tls.key_file, v, why));
}

/* A DNS name or an IP address, as a certificate names it: no wildcard; no port; no leading
   '.', which OpenSSL takes for any name under it. */
static int opt_set_tls_server_name(struct opt *o, const char *v, const char **why)
{
	unsigned char addr[sizeof(struct in6_addr)];
	size_t n = strlen(v);

	if (n == 0 || n > 253 ||
	    strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:") != n) {
		*why = "must be a DNS name or an IP address (letters, digits, '.', '-', ':'), at "
		       "most 253 bytes";
		return -1;
	}
	if (v[0] == '.') {
		*why = "a leading '.' would accept any name under it: name the server itself";
		return -1;
	}
	if (strstr(v, "..") != NULL) {
		*why = "an empty label ('..')";
		return -1;
	}
	if (strchr(v, ':') != NULL && inet_pton(AF_INET6, v, addr) != 1) {
		*why = "a ':' outside an IPv6 address: a port goes in url=, not here";
		return -1;
	}
	strcpy(o->tls.server_name, v);
	return opt_tls_set(o, 0);
}

static int opt_set_tls_verify(struct opt *o, const char *v, const char **why)
{
	static const char *const words[] = { "name", "ca", NULL };
	int i = opt_word(v, words, "must be name or ca (there is no mode that checks nothing)", why);

	if (i < 0)
		return -1;
	o->tls.verify = (enum opt_tls_verify)i;
	return opt_tls_set(o, 0);
}

/* conf= itself is read by opt_parse before anything else; here it is only checked (opt_apply
   refuses it in the file). */
static int opt_set_conf(struct opt *o, const char *v, const char **why)
{
	(void)o;
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
	{ "messages=", opt_set_messages, false },
	{ "refusal=", opt_set_refusal, false },
	{ "password_file=", opt_set_password_file, true },
	{ "sentinel_password=", opt_set_sentinel_password, true },
	{ "sync_replicas=", opt_set_sync_replicas, false },
	{ "per_host=", opt_set_per_host, false },
	{ "conf=", opt_set_conf, false },
	{ "pressure=", opt_set_pressure, false },
	{ "pressure_dir=", opt_set_pressure_dir, false },
	{ "pressure_timeout=", opt_set_pressure_timeout, false },
	{ "tls_ca_file=", opt_set_tls_ca_file, false },
	{ "tls_ca_dir=", opt_set_tls_ca_dir, false },
	{ "tls_cert_file=", opt_set_tls_cert_file, false },
	{ "tls_key_file=", opt_set_tls_key_file, false },
	{ "tls_server_name=", opt_set_tls_server_name, false },
	{ "tls_verify=", opt_set_tls_verify, false },
};

void opt_count_problem(struct opt *o, enum opt_problem p)
{
	o->errors++;
	o->problems[p]++;
}

/* Where an option being set comes from: the PAM stack (origin NULL), or a line of the
   configuration file ("file:line"). */
struct opt_from {
	const pam_handle_t *pamh;
	const char *origin;
};

static int opt_bad(struct opt *o, const struct opt_from *from, enum opt_problem p,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int opt_bad(struct opt *o, const struct opt_from *from, enum opt_problem p,
		   const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	opt_count_problem(o, p);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (from->origin != NULL)
		log_msg(from->pamh, LOG_ERR, "%s: %s", from->origin, msg);
	else
		log_msg(from->pamh, LOG_ERR, "%s", msg);
	return -1;
}

/* The flag arg names: 0 quiet, 1 debug, 2 dry_run; -1 for none. */
static int opt_flag(const char *arg)
{
	if (strcmp(arg, "quiet") == 0)
		return 0;
	if (strcmp(arg, "debug") == 0)
		return 1;
	if (strcmp(arg, "dry_run") == 0)
		return 2;
	return -1;
}

bool opt_is_flag(const char *arg)
{
	return opt_flag(arg) >= 0;
}

size_t opt_name_len(const char *arg)
{
	size_t n = strspn(arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_");

	return n <= OPT_NAME_MAX && (arg[n] == '=' || arg[n] == '\0') ? n : 0;
}

bool opt_known_name(const char *name, size_t len)
{
	char flag[OPT_NAME_MAX + 1];

	if (len == 0 || len > OPT_NAME_MAX)
		return false;
	for (size_t i = 0; i < sizeof(opt_setters) / sizeof(opt_setters[0]); i++)
		if (strlen(opt_setters[i].name) == len + 1 &&
		    strncmp(opt_setters[i].name, name, len) == 0)
			return true;
	memcpy(flag, name, len);
	flag[len] = '\0';
	return opt_is_flag(flag);
}

/* Whether an unknown name (n bytes) may be shown in the log: letters, digits, '_', '-' and '.',
   at most OPT_NAME_MAX, and not capitals with digits, which are rather a password pasted on a
   line than a typo of a name (all of ours are lowercase). */
static bool opt_name_shown(const char *name, size_t n)
{
	static const char plain[] = "abcdefghijklmnopqrstuvwxyz"
				    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.";
	bool capital = false, digit = false;

	if (n == 0 || n > OPT_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (name[i] == '\0' || strchr(plain, name[i]) == NULL)
			return false;
		capital |= name[i] >= 'A' && name[i] <= 'Z';
		digit |= name[i] >= '0' && name[i] <= '9';
	}
	return !(capital && digit);
}

/* arg, which no setter nor flag takes: a known name used wrong, or an unknown option (in the
   configuration file, a line that is no option at all: opt_conf_line takes the others). */
static int opt_set_unknown(struct opt *o, const struct opt_from *from, const char *arg)
{
	const enum opt_problem p = from->origin != NULL ? OPT_PROBLEM_LINE : OPT_PROBLEM_UNKNOWN;
	size_t n = opt_name_len(arg), whole = strcspn(arg, "=");
	char shown[128];

	if (n > 0 && arg[n] == '=' && opt_known_name(arg, n))
		return opt_bad(o, from, OPT_PROBLEM_VALUE, "bad value for %.*s: a flag takes none",
			       (int)n, arg);
	if (n > 0 && opt_known_name(arg, n))
		return opt_bad(o, from, OPT_PROBLEM_VALUE, "no value for %.*s (%.*s=VALUE)", (int)n,
			       arg, (int)n, arg);
	if (opt_name_shown(arg, whole))
		return opt_bad(o, from, p, "unknown option \"%.*s\"", (int)whole, arg);
	/* Only a name: "url redis://:pw@h", or a password pasted alone on a line of the
	   configuration file, would otherwise reach the log. */
	log_escape(arg, shown, sizeof(shown));
	shown[strspn(shown, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")] = '\0';
	if (shown[0] == '\0')
		return opt_bad(o, from, p, "unknown option (not shown: it is not a name)");
	return opt_bad(o, from, p, "unknown option \"%s\"", shown);
}

/* opt_set, for an option from from. */
static int opt_apply(struct opt *o, const struct opt_from *from, const char *arg)
{
	char shown[128];

	switch (opt_flag(arg)) {
	case 0:
		o->quiet = true;
		return 0;
	case 1:
		o->debug = true;
		return 0;
	case 2:
		o->slot.dry_run = true;
		return 0;
	default:
		break;
	}
	for (size_t i = 0; i < sizeof(opt_setters) / sizeof(opt_setters[0]); i++) {
		const struct opt_setter *s = &opt_setters[i];
		size_t namelen = strlen(s->name);
		const char *why = NULL;

		if (strncmp(arg, s->name, namelen) != 0)
			continue;
		if (s->set == opt_set_conf && from->origin != NULL)
			why = "a configuration file cannot name another";
		else if (s->set(o, arg + namelen, &why) == 0)
			return 0;
		/* A url may hold a password: name what is wrong, never echo it. */
		if (s->secret)
			return opt_bad(o, from, OPT_PROBLEM_VALUE, "bad value for %.*s: %s",
				       (int)namelen - 1, arg, why);
		return opt_bad(o, from, OPT_PROBLEM_VALUE, "bad value for %.*s: \"%s\": %s",
			       (int)namelen - 1, arg,
			       log_escape(arg + namelen, shown, sizeof(shown)), why);
	}
	return opt_set_unknown(o, from, arg);
}

int opt_set(struct opt *o, const pam_handle_t *pamh, const char *arg)
{
	const struct opt_from from = { .pamh = pamh, .origin = NULL };

	return opt_apply(o, &from, arg);
}

/* conf_parse's callback: a line of the file goes through the same setter as an argument. */
struct opt_conf {
	struct opt *o;
	const pam_handle_t *pamh;
};

/* Notes the unknown option name (n bytes) at where, for opt_warn_unknown: by its line alone
   (an empty name) when it is not to be shown. */
static void opt_note_unknown(struct opt *o, const char *where, const char *name, size_t n)
{
	struct opt_unknown *u;
	const char *colon = strrchr(where, ':');

	if (o->n_unknown++ >= OPT_UNKNOWN_MAX)
		return;
	u = &o->unknown[o->n_unknown - 1];
	snprintf(u->where, sizeof(u->where), "%s", where);
	u->file_len = colon != NULL ? (size_t)(colon - where) : strlen(u->where);
	if (u->file_len > strlen(u->where))
		u->file_len = strlen(u->where);
	if (!opt_name_shown(name, n))
		n = 0;
	memcpy(u->name, name, n);
	u->name[n] = '\0';
}

/* The length of the NAME of a line NAME=VALUE: all before its first '=', printable bytes none
   of them a blank; 0 for a line that is no NAME=VALUE. */
static size_t opt_conf_name_len(const char *line)
{
	size_t n = strcspn(line, "=");

	if (line[n] != '=')
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)line[i] <= ' ' || (unsigned char)line[i] >= 0x7f)
			return 0;
	return n;
}

/* An unknown NAME=VALUE, or a bare NAME of letters and '_' (a flag), in the file is ignored,
   as faillock.conf's are, whatever its NAME: a typo (max-wait, interva1), or an option of a
   newer module read by an older one, must not throw away the rest of the file. */
static void opt_conf_line(void *ctx, const char *where, const char *line)
{
	struct opt_conf *c = ctx;
	const struct opt_from from = { .pamh = c->pamh, .origin = where };
	size_t n = opt_conf_name_len(line);

	if (n == 0)
		n = opt_name_len(line);
	if (n > 0 && !opt_known_name(line, n)) {
		opt_note_unknown(c->o, where, line, n);
		return;
	}
	opt_apply(c->o, &from, line);
}

void opt_warn_unknown(const struct opt *o, const pam_handle_t *pamh, bool limited)
{
	static const char once[] = " (said at most once an hour)";
	char what[CONF_WHERE_MAX + OPT_NAME_MAX + 16];
	const int named = o->n_unknown < OPT_UNKNOWN_MAX ? o->n_unknown : OPT_UNKNOWN_MAX;
	const struct opt_unknown *u;

	for (int i = 0; i < named; i++) {
		u = &o->unknown[i];
		/* By file and name: a line moved by an edit is the same typo. A name not shown
		   is by its line, and its stamp holds no more of it. */
		if (u->name[0] != '\0')
			snprintf(what, sizeof(what), "unknown option %s in %.*s", u->name,
				 (int)u->file_len, u->where);
		else
			snprintf(what, sizeof(what), "unknown option at %s", u->where);
		if (limited && !once_due(o->state_dir, what, OPT_UNKNOWN_PERIOD_S))
			continue;
		if (u->name[0] != '\0')
			log_msg(pamh, LOG_WARNING, "%s: unknown option \"%s\": ignored%s", u->where,
				u->name, limited ? once : "");
		else
			log_msg(pamh, LOG_WARNING,
				"%s: unknown option (not shown: it may be a password): ignored%s",
				u->where, limited ? once : "");
	}
	if (o->n_unknown <= named)
		return;
	u = &o->unknown[0];
	snprintf(what, sizeof(what), "more unknown options in %.*s", (int)u->file_len, u->where);
	if (!limited || once_due(o->state_dir, what, OPT_UNKNOWN_PERIOD_S))
		log_msg(pamh, LOG_WARNING, "%.*s: %d more unknown options, not named: ignored%s",
			(int)u->file_len, u->where, o->n_unknown - named, limited ? once : "");
}

/* A password that a file readable by others gave is not used. */
static void opt_conf_done(struct opt *o, const pam_handle_t *pamh, const char *name,
			  bool had_password, mode_t mode)
{
	if (had_password || !(o->url.has_password || o->has_sentinel_password) ||
	    (mode & S_IROTH) == 0)
		return;
	opt_count_problem(o, OPT_PROBLEM_UNSAFE);
	opt_wipe(o);
	o->url.has_password = false;
	o->has_sentinel_password = false;
	log_msg(pamh, LOG_ERR,
		"conf: %s holds a password but is readable by others (mode %04o): not using it; "
		"chmod o-r",
		name, (unsigned)(mode & 07777));
}

void opt_conf_text(struct opt *o, const pam_handle_t *pamh, const char *name, char *text,
		   size_t len, mode_t mode)
{
	struct opt_conf c = { o, pamh };
	bool had_password = o->url.has_password || o->has_sentinel_password;
	int bad = conf_parse(pamh, name, text, len, opt_conf_line, &c);

	o->errors += bad;
	o->problems[OPT_PROBLEM_LINE] += bad;
	opt_conf_done(o, pamh, name, had_password, mode);
}

/* The kind of problem a file refused with errno is. */
static enum opt_problem opt_file_problem(int err)
{
	return err == EPERM || err == ELOOP ? OPT_PROBLEM_UNSAFE : OPT_PROBLEM_FILE;
}

static void opt_read_conf(struct opt *o, const pam_handle_t *pamh, const char *path, bool required)
{
	struct opt_conf c = { o, pamh };
	bool had_password = o->url.has_password || o->has_sentinel_password;
	mode_t mode;
	int bad = conf_read(pamh, path, required, opt_conf_line, &c, &mode);

	if (bad < 0) {
		opt_count_problem(o, opt_file_problem(errno));
	} else {
		o->errors += bad;
		o->problems[OPT_PROBLEM_LINE] += bad;
	}
	opt_conf_done(o, pamh, path, had_password, mode);
}

void opt_parse_args(struct opt *o, const pam_handle_t *pamh, int argc, const char **argv)
{
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
}

/* The outcome of reading password_file=: rc, and the problem p if it failed. */
static void opt_take_password(struct opt *o, const pam_handle_t *pamh, int rc, enum opt_problem p,
			      const char *why)
{
	if (rc == 0) {
		o->url.has_password = true;
		return;
	}
	opt_count_problem(o, p);
	log_msg(pamh, LOG_ERR, "password_file: cannot use %s: %s", o->password_file, why);
}

void opt_password_text(struct opt *o, const pam_handle_t *pamh, const char *text, size_t n)
{
	const char *why = NULL;
	int rc = conf_parse_secret(text, n, o->url.password, sizeof(o->url.password), &why);

	opt_take_password(o, pamh, rc, OPT_PROBLEM_FILE, why);
}

void opt_check(struct opt *o, const pam_handle_t *pamh)
{
	if (o->url.user[0] != '\0' && !o->url.has_password) {
		opt_count_problem(o, OPT_PROBLEM_CONFLICT);
		log_msg(pamh, LOG_ERR, "url names the user \"%s\" but no password is given",
			o->url.user);
	}
	if ((o->tls.cert_file[0] == '\0') != (o->tls.key_file[0] == '\0')) {
		opt_count_problem(o, OPT_PROBLEM_CONFLICT);
		log_msg(pamh, LOG_ERR, "tls_cert_file and tls_key_file go together: one is missing");
	}
	/* On the system's trust store, the chain alone is any certificate that any public CA
	   issued, for any name: no check at all. */
	if (o->tls.verify == OPT_TLS_VERIFY_CA && o->tls.ca_file[0] == '\0' &&
	    o->tls.ca_dir[0] == '\0') {
		opt_count_problem(o, OPT_PROBLEM_CONFLICT);
		log_msg(pamh, LOG_ERR,
			"tls_verify=ca needs tls_ca_file= or tls_ca_dir=: on the system's trust "
			"store it would accept a certificate from any public CA, for any name");
	}
	/* Whoever set them expects TLS: saying nothing would send the password in clear. */
	if (o->tls.set && !o->url.tls) {
		opt_count_problem(o, OPT_PROBLEM_CONFLICT);
		log_msg(pamh, LOG_ERR,
			"tls_* options are given but the url does not use TLS (rediss://, "
			"rediss-sentinel://, rediss-cluster://)");
	}
}

const char *opt_conf_path(int argc, const char **argv)
{
	const char *conf = NULL, *v;

	for (int i = 0; i < argc; i++)
		if ((v = str_skip_prefix(argv[i], "conf=")) != NULL)
			conf = v;
	return conf;
}

void opt_parse_file(struct opt *o, const pam_handle_t *pamh, int argc, const char **argv)
{
	const char *conf = opt_conf_path(argc, argv);

	opt_defaults(o);
	opt_read_conf(o, pamh, conf != NULL ? conf : OPT_CONF_DEFAULT, conf != NULL);
}

void opt_parse_rest(struct opt *o, const pam_handle_t *pamh, int argc, const char **argv)
{
	const char *why = NULL;

	opt_parse_args(o, pamh, argc, argv);
	if (o->password_file[0] != '\0') {
		int rc = conf_read_secret(o->password_file, o->url.password,
					  sizeof(o->url.password), &why);

		opt_take_password(o, pamh, rc, opt_file_problem(errno), why);
	}
	opt_check(o, pamh);
}

void opt_parse(struct opt *o, const pam_handle_t *pamh, int argc, const char **argv)
{
	/* First the file, then the module arguments on top of it. */
	opt_parse_file(o, pamh, argc, argv);
	opt_parse_rest(o, pamh, argc, argv);
}
