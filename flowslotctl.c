/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flowslotctl: looks at and operates a pam_flowslot schedule, with the module's own option
 * parser and backends (cf. faillock(8)).
 *
 *   flowslotctl [--service NAME] [--pam-dir DIR] [--json] [OPTION...] COMMAND [KEY] [OPTION...]
 *
 * Each OPTION is a module argument, read as the module reads its own, wherever it stands. A
 * tool may take signals and write to the terminal: the module may not, so all of that stays
 * here.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "flowslot/countdown.h"
#include "flowslot/fstime.h"
#include "flowslot/hangup.h"
#include "flowslot/hash.h"
#include "flowslot/key.h"
#include "flowslot/log.h"
#include "flowslot/lslot.h"
#include "flowslot/opt.h"
#include "flowslot/queue.h"
#include "flowslot/rslot.h"
#include "flowslot/stats.h"
#include "flowslot/str.h"
#include "flowslot/waiters.h"

#define CTL_ARGS_MAX 64
#define CTL_INCLUDE_DEPTH 8
#define CTL_PAM_DIR "/etc/pam.d"
/* Room for n bytes through log_escape, none of them cut. */
#define CTL_ESCAPED(n) (4 * (n) + 4)

/* The module arguments in effect: those of --service's line, then the command line's. */
struct ctl_args {
	char *own[CTL_ARGS_MAX];
	const char *v[CTL_ARGS_MAX]; /* the same, as opt_parse takes them */
	int n;
};

/* One run of the tool. */
struct ctl {
	struct ctl_args args;
	struct opt o;
	const char *service; /* --service, for %s in the key; NULL: none */
	const char *pam_dir; /* --pam-dir: the stacks */
	bool json;
	char key[OPT_KEY_MAX + 1];
	char where[URL_HOST_MAX + OPT_DIR_MAX + URL_MASTER_MAX +
		   64]; /* the backend that answered, or failed */
};

struct ctl_command {
	const char *name;
	int (*run)(struct ctl *c);
	const char *usage;
};

static int ctl_add_arg(struct ctl_args *a, const char *arg)
{
	if (a->n == CTL_ARGS_MAX) {
		fprintf(stderr, "flowslotctl: more than %d module arguments\n", CTL_ARGS_MAX);
		return -1;
	}
	if ((a->own[a->n] = strdup(arg)) == NULL) {
		perror("flowslotctl");
		return -1;
	}
	a->v[a->n] = a->own[a->n];
	a->n++;
	return 0;
}

static void ctl_free_args(struct ctl_args *a)
{
	for (int i = 0; i < a->n; i++) {
		explicit_bzero(a->own[i], strlen(a->own[i]));
		free(a->own[i]);
	}
	a->n = 0;
}

/* Splits a PAM stack line into words in place; "[a b]" is one word (its brackets kept), as
   libpam reads a control or an argument. Returns the number of words. */
static int ctl_words(char *line, char **w, int max)
{
	int n = 0;
	char *p = line;

	while (n < max) {
		p += strspn(p, " \t\r\n");
		if (*p == '\0')
			break;
		w[n++] = p;
		if (*p == '[') {
			char *end = strchr(p, ']');

			p = end != NULL ? end + 1 : p + strlen(p);
		}
		p += strcspn(p, " \t\r\n");
		if (*p != '\0')
			*p++ = '\0';
	}
	return n;
}

static int ctl_pam_file(const char *dir, const char *name, int depth, struct ctl_args *out);

/* One line of a stack file: 1 when it is (or includes) pam_flowslot's, whose arguments go
   into out; 0 when not; -1 on an error, said. */
static int ctl_pam_line(const char *dir, char *line, int depth, struct ctl_args *out)
{
	char *w[CTL_ARGS_MAX + 3];
	const char *module, *base;
	int n;

	line[strcspn(line, "#")] = '\0';
	n = ctl_words(line, w, (int)(sizeof(w) / sizeof(w[0])));
	if (n >= 2 && strcmp(w[0], "@include") == 0)
		return ctl_pam_file(dir, w[1], depth + 1, out);
	if (n < 3)
		return 0;
	if (strcmp(w[1], "include") == 0 || strcmp(w[1], "substack") == 0)
		return ctl_pam_file(dir, w[2], depth + 1, out);
	module = w[2];
	base = strrchr(module, '/') != NULL ? strrchr(module, '/') + 1 : module;
	if (strcmp(base, "pam_flowslot.so") != 0)
		return 0;
	for (int i = 3; i < n; i++) {
		size_t len = strlen(w[i]);

		/* "[url=redis://h:6379/0 x]": libpam's way to give an argument with blanks. */
		if (w[i][0] == '[' && len >= 2 && w[i][len - 1] == ']') {
			w[i][len - 1] = '\0';
			w[i]++;
		}
		if (ctl_add_arg(out, w[i]) != 0)
			return -1;
	}
	return 1;
}

/* Reads the first pam_flowslot line of dir/name, following @include, include and substack. */
static int ctl_pam_file(const char *dir, const char *name, int depth, struct ctl_args *out)
{
	char path[PATH_MAX], line[4096];
	FILE *f;
	int found = 0;

	if (depth > CTL_INCLUDE_DEPTH) {
		fprintf(stderr, "flowslotctl: %s/%s: includes nested deeper than %d\n", dir, name,
			CTL_INCLUDE_DEPTH);
		return -1;
	}
	if (name[0] == '/')
		snprintf(path, sizeof(path), "%s", name);
	else
		snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((f = fopen(path, "re")) == NULL) {
		fprintf(stderr, "flowslotctl: cannot read %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (found == 0 && fgets(line, sizeof(line), f) != NULL)
		found = ctl_pam_line(dir, line, depth, out);
	fclose(f);
	return found;
}

/* Describes the local schedule file for key into c->where: the one a login uses, its own
   or a shared one. */
static void ctl_local_where(struct ctl *c)
{
	static const char local[] = "local ";

	memcpy(c->where, local, sizeof(local) - 1);
	lslot_where(c->o.state_dir, c->key, c->where + sizeof(local) - 1,
		    sizeof(c->where) - (sizeof(local) - 1));
}

/* The fallback a login takes when its backend fails, in words. */
static const char *ctl_fallback(const struct opt *o)
{
	switch (o->fallback) {
	case OPT_FALLBACK_OPEN:
		return "fallback=open: a login would go in without a wait";
	case OPT_FALLBACK_CLOSED:
		return "fallback=closed: a login would be refused";
	case OPT_FALLBACK_LOCAL:
	default:
		return "fallback=local: a login would queue on this host's own schedule";
	}
}

/* One call on the configured backend, as a login makes it (no fallback). */
static enum slot_verdict ctl_call_local(struct ctl *c, enum slot_op op, const struct slot_place *pl,
					struct slot_result *res)
{
	const struct lslot_call call = { .dir = c->o.state_dir,
					 .key = c->key,
					 .p = &c->o.slot,
					 .per_host = c->o.per_host,
					 .op = op,
					 .place = pl };

	ctl_local_where(c);
	return lslot_call(NULL, &call, res);
}

static enum slot_verdict ctl_call(struct ctl *c, enum slot_op op, const struct slot_place *pl,
				  struct slot_result *res)
{
	char node[URL_HOST_MAX + 32];
	enum slot_verdict v;

	if (c->o.url.backend == URL_BACKEND_LOCAL)
		return ctl_call_local(c, op, pl, res);
	v = rslot_call_at(NULL, &c->o, op, c->key, pl, res, node, sizeof(node));
	if (c->o.url.backend == URL_BACKEND_SENTINEL)
		snprintf(c->where, sizeof(c->where), "sentinel master %s: %s", c->o.url.master,
			 node);
	else
		snprintf(c->where, sizeof(c->where), "%s", node);
	return v;
}

/* The kinds of problem (opt.h), one and more. */
static const char *const ctl_problem_words[OPT_PROBLEM_N][2] = {
	[OPT_PROBLEM_UNKNOWN] = { "unknown option", "unknown options" },
	[OPT_PROBLEM_VALUE] = { "bad value", "bad values" },
	[OPT_PROBLEM_LINE] = { "line of the configuration file that is no option",
			       "lines of the configuration file that are no option" },
	[OPT_PROBLEM_UNSAFE] = { "file with unsafe permissions", "files with unsafe permissions" },
	[OPT_PROBLEM_FILE] = { "file that cannot be used", "files that cannot be used" },
	[OPT_PROBLEM_CONFLICT] = { "missing or conflicting option",
				   "missing or conflicting options" },
};

/* Says what is wrong with the options, each named above, by kind ("1 unknown option, 2 bad
   values"); then, if not NULL, what a login would do. */
static void ctl_say_problems(const struct opt *o, const char *then)
{
	const char *sep = "";

	fputs("flowslotctl: ", stderr);
	for (int p = 0; p < OPT_PROBLEM_N; p++) {
		if (o->problems[p] == 0)
			continue;
		fprintf(stderr, "%s%d %s", sep, o->problems[p],
			ctl_problem_words[p][o->problems[p] != 1]);
		sep = ", ";
	}
	fprintf(stderr, " (named above)%s%s\n", then != NULL ? "; " : "", then != NULL ? then : "");
}

/* A call that must reach the configured backend; says why not, and what a login would do. */
static int ctl_call_or_say(struct ctl *c, enum slot_op op, struct slot_result *res)
{
	const struct slot_place none = { .id = "flowslotctl" };

	if (c->o.errors > 0) {
		ctl_say_problems(&c->o, ctl_fallback(&c->o));
		return 2;
	}
	if (ctl_call(c, op, &none, res) == SLOT_UNAVAILABLE) {
		fprintf(stderr, "flowslotctl: %s: unusable (the error is above); %s\n", c->where,
			c->o.url.backend != URL_BACKEND_LOCAL ? ctl_fallback(&c->o)
			: c->o.fallback == OPT_FALLBACK_CLOSED
			    ? "fallback=closed: a login would be refused"
			    : "a login would go in without a wait");
		return 1;
	}
	return 0;
}

/* Writes s as a JSON string. */
static void ctl_json_str(const char *s)
{
	putchar('"');
	for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p < 0x20 || *p >= 0x7f)
			printf("\\u%04x", *p);
		else
			putchar(*p);
	}
	putchar('"');
}

static const char *ctl_verdict_name(enum slot_verdict v)
{
	return v == SLOT_ADMIT ? "admit" : v == SLOT_QUEUED ? "queue" : "refuse";
}

/* The host's own waiters on the schedule (src/waiters.c), whatever it answers; false when
   they cannot be read, said on stderr. */
static bool ctl_host_waiters(const struct ctl *c, struct waiters_view *v)
{
	const char *why;

	if (waiters_read(c->o.state_dir, c->key, fstime_mono_us(), v, &why) == 0)
		return true;
	fprintf(stderr, "flowslotctl: %s/%s: %s: %s\n", c->o.state_dir, WAITERS_FILE, why,
		strerror(errno));
	return false;
}

/* What status shows: the schedule that answered (res; NULL: none did), the Redis that
   could not be read (down; NULL: none), and the host's own waiters (host; NULL: unknown). */
struct ctl_view {
	const struct slot_result *res;
	const char *down;
	const struct waiters_view *host;
};

static void ctl_print_json(const struct ctl *c, const struct ctl_view *v)
{
	const struct slot_result *res = v->res;

	printf("{\"key\": ");
	ctl_json_str(c->key);
	if (v->down != NULL) {
		printf(", \"down\": ");
		ctl_json_str(v->down);
		printf(", \"shared_waiting\": null");
	} else if (c->o.url.backend != URL_BACKEND_LOCAL) {
		printf(", \"shared_waiting\": %" PRId64, res->waiting);
	}
	if (res != NULL) {
		printf(", \"backend\": ");
		ctl_json_str(c->where);
		printf(", \"waiting\": %" PRId64 ", \"new_login\": {\"verdict\": \"%s\", "
		       "\"wait_ms\": %" PRId64 ", \"position\": %" PRId64 "}, "
		       "\"last_admission_ms_ago\": ",
		       res->waiting, ctl_verdict_name(res->verdict), res->wait_us / 1000,
		       res->position);
		if (res->since_us < 0)
			printf("null");
		else
			printf("%" PRId64, res->since_us / 1000);
	}
	if (v->host == NULL)
		printf(", \"host\": null}\n");
	else if (v->host->longest_us < 0)
		printf(", \"host\": {\"waiting\": 0, \"longest_wait_ms\": null}}\n");
	else
		printf(", \"host\": {\"waiting\": %" PRId64 ", \"longest_wait_ms\": %" PRId64 "}}\n",
		       v->host->count, v->host->longest_us / 1000);
}

static void ctl_print_view(const struct ctl *c, const struct ctl_view *v)
{
	const struct slot_result *res = v->res;
	char wait[32], since[32], longest[32];

	if (c->json) {
		ctl_print_json(c, v);
		return;
	}
	printf("schedule:       %s\n", c->key);
	if (v->down != NULL) {
		if (res != NULL)
			printf("down:           %s: logins queue on this host's schedule "
			       "(fallback=local)\n",
			       v->down);
		else
			printf("down:           %s: %s\n", v->down, ctl_fallback(&c->o));
		printf("shared queue:   unknown until %s is back\n", v->down);
	}
	if (res != NULL) {
		countdown_format(res->wait_us, wait, sizeof(wait));
		countdown_format(res->since_us, since, sizeof(since));
		printf("backend:        %s\n", c->where);
		printf("waiting:        %" PRId64 "\n", res->waiting);
		if (res->verdict == SLOT_REFUSE)
			printf("new login:      refused (the wait, %s, is over max_wait)\n", wait);
		else
			printf("new login:      waits %s, number %" PRId64 "\n", wait,
			       res->position);
		if (res->since_us < 0)
			printf("last admission: none kept (a schedule is dropped once its next "
			       "slot has passed with nobody waiting)\n");
		else
			printf("last admission: %s ago\n", since);
	}
	if (v->host == NULL) {
		printf("this host:      unknown (the error is above)\n");
	} else if (v->host->count == 0) {
		printf("this host:      none waiting\n");
	} else {
		countdown_format(v->host->longest_us, longest, sizeof(longest));
		printf("this host:      %" PRId64 " waiting, the longest for %s\n", v->host->count,
		       longest);
	}
}

/* status: the schedule the logins wait on, and the host's own waiters. With Redis down, the
   shared queue's length is unknown: said so, with the waiters this host knows of and, with
   fallback=local, the per-host schedule the logins queue on now; the exit status stays 1. */
static int ctl_status(struct ctl *c)
{
	struct slot_result res = { .verdict = SLOT_UNAVAILABLE };
	const struct slot_place none = { .id = "flowslotctl" };
	char down[sizeof(c->where)];
	struct waiters_view host;
	struct ctl_view v = { .res = &res };
	int rc = ctl_call_or_say(c, SLOT_PEEK, &res);

	if (rc == 2)
		return rc;
	if (ctl_host_waiters(c, &host))
		v.host = &host;
	if (rc == 0) {
		ctl_print_view(c, &v);
		return rc;
	}
	if (c->o.url.backend == URL_BACKEND_LOCAL)
		return rc;
	snprintf(down, sizeof(down), "%s", c->where);
	v.down = down;
	res = (struct slot_result){ .verdict = SLOT_UNAVAILABLE };
	if (c->o.fallback != OPT_FALLBACK_LOCAL ||
	    ctl_call_local(c, SLOT_PEEK, &none, &res) == SLOT_UNAVAILABLE)
		v.res = NULL;
	ctl_print_view(c, &v);
	return rc;
}

static int ctl_reset(struct ctl *c)
{
	struct slot_result res = { .verdict = SLOT_UNAVAILABLE };
	const struct passwd *pw = getpwuid(getuid());
	const char *login = getlogin();
	char name[64], key[CTL_ESCAPED(sizeof(c->key))], where[CTL_ESCAPED(sizeof(c->where))];
	int rc = ctl_call_or_say(c, SLOT_RESET, &res);

	if (rc != 0)
		return rc;
	log_escape(login != NULL ? login : pw != NULL ? pw->pw_name : "?", name, sizeof(name));
	openlog("flowslotctl", LOG_PID, LOG_AUTHPRIV);
	syslog(LOG_NOTICE, "reset: key=%s backend=%s waiting=%" PRId64 " by uid=%u login=%s",
	       log_escape(c->key, key, sizeof(key)), log_escape(c->where, where, sizeof(where)),
	       res.waiting, (unsigned)getuid(), name);
	closelog();
	printf("reset %s on %s: %" PRId64 " waiting login%s re-enter%s the queue afresh at "
	       "%s next renewal\n",
	       c->key, c->where, res.waiting, res.waiting == 1 ? "" : "s",
	       res.waiting == 1 ? "s" : "", res.waiting == 1 ? "its" : "their");
	return 0;
}

/* check, on the stacks: every pam_flowslot line of every service in --pam-dir, each line once
   per schedule it gives (its key expanded for that service), with the settings the schedule
   keeps, the strictest of its callers'. */
#define CTL_STACK_LINES_MAX 256

struct ctl_stack_line {
	char where[PATH_MAX + 16]; /* "file:line" */
	char sched[OPT_KEY_MAX + URL_HOST_MAX + URL_MASTER_MAX + OPT_DIR_MAX + 64];
	char key[OPT_KEY_MAX + 1];
	int64_t interval_us;
	int64_t burst;
};

/* Configuration files whose problems check has said: past these, a file's are said again. */
#define CTL_CONFS_MAX 16

struct ctl_stacks {
	const char *dir;
	const char *conf; /* "conf=..." of the command line, before each line's own; NULL: none */
	struct ctl_stack_line *line; /* CTL_STACK_LINES_MAX of them */
	int n;
	int left_out; /* lines past CTL_STACK_LINES_MAX */
	/* The files said: the command line's, then those that lines name. */
	char *said[CTL_CONFS_MAX];
	int n_said;
};

/* Whether the problems of the configuration file path were said already; from now on they
   are. */
static bool ctl_conf_said(struct ctl_stacks *st, const char *path)
{
	for (int i = 0; i < st->n_said; i++)
		if (strcmp(st->said[i], path) == 0)
			return true;
	if (st->n_said < CTL_CONFS_MAX && (st->said[st->n_said] = strdup(path)) != NULL)
		st->n_said++;
	return false;
}

/* Sends stderr to /dev/null; returns what ctl_stderr_back takes to undo it (-1: nothing). */
static int ctl_stderr_off(void)
{
	int err = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3),
	    null = open("/dev/null", O_WRONLY | O_CLOEXEC);

	fflush(stderr);
	if (err >= 0 && null >= 0)
		dup2(null, STDERR_FILENO);
	if (null >= 0)
		close(null);
	if (err >= 0 && null < 0) {
		close(err);
		err = -1;
	}
	return err;
}

static void ctl_stderr_back(int err)
{
	if (err < 0)
		return;
	fflush(stderr);
	dup2(err, STDERR_FILENO);
	close(err);
}

/* Which schedule o's logins of service share: the backend, then the key. */
static void ctl_schedule_of(const struct opt *o, const char *service, struct ctl_stack_line *l)
{
	const struct url *u = &o->url;
	int n;

	key_expand(o->key, service, NULL, NULL, l->key, sizeof(l->key));
	switch (u->backend) {
	case URL_BACKEND_LOCAL:
		n = snprintf(l->sched, sizeof(l->sched), "local %s", o->state_dir);
		break;
	case URL_BACKEND_UNIX:
		n = snprintf(l->sched, sizeof(l->sched), "unix %s/%d", u->socket, u->db);
		break;
	case URL_BACKEND_SENTINEL:
		n = snprintf(l->sched, sizeof(l->sched), "sentinel %s/%d", u->master, u->db);
		break;
	case URL_BACKEND_CLUSTER:
		n = snprintf(l->sched, sizeof(l->sched), "cluster %s:%d", u->nodes[0].host,
			     u->nodes[0].port);
		break;
	case URL_BACKEND_TCP:
	default:
		n = snprintf(l->sched, sizeof(l->sched), "redis %s:%d/%d", u->host, u->port, u->db);
		break;
	}
	if (n >= 0 && (size_t)n < sizeof(l->sched))
		snprintf(l->sched + n, sizeof(l->sched) - (size_t)n, " key %s", l->key);
}

/* The options of one module line (n words), as a login of service would have them: said only
   when they are bad, and a configuration file's problems once, whatever the lines that read
   it. Returns 0; -1 when they are bad and said here; 1 when they are bad only for a file's
   problems said before. */
static int ctl_stack_opts(struct ctl_stacks *st, const char *service, const char **w, int n,
			  struct ctl_stack_line *l)
{
	const char *conf = opt_conf_path(n, w);
	struct opt o;
	int err = ctl_stderr_off(), in_file, rc = 0;
	bool said;

	opt_parse(&o, NULL, n, w);
	ctl_stderr_back(err);
	if (o.errors > 0) { /* said, this once */
		said = ctl_conf_said(st, conf != NULL ? conf : OPT_CONF_DEFAULT);
		opt_wipe(&o);
		err = said ? ctl_stderr_off() : -1;
		opt_parse_file(&o, NULL, n, w);
		ctl_stderr_back(err);
		in_file = o.errors;
		opt_parse_rest(&o, NULL, n, w);
		rc = o.errors > in_file || !said ? -1 : 1;
	}
	l->interval_us = o.slot.interval_us;
	l->burst = o.slot.burst;
	ctl_schedule_of(&o, service, l);
	opt_wipe(&o);
	return rc;
}

static void ctl_stack_file(struct ctl_stacks *st, const char *service, const char *name, int depth);

/* One line of a stack file, at where: an include followed, or a pam_flowslot line noted. */
static void ctl_stack_line(struct ctl_stacks *st, const char *service, const char *where,
			   char *line, int depth)
{
	char *w[CTL_ARGS_MAX + 3];
	const char *args[CTL_ARGS_MAX + 3], *base;
	struct ctl_stack_line l;
	int n, argc = 0;

	line[strcspn(line, "#")] = '\0';
	n = ctl_words(line, w, (int)(sizeof(w) / sizeof(w[0])));
	if (n >= 2 && strcmp(w[0], "@include") == 0) {
		ctl_stack_file(st, service, w[1], depth + 1);
		return;
	}
	if (n < 3)
		return;
	if (strcmp(w[1], "include") == 0 || strcmp(w[1], "substack") == 0) {
		ctl_stack_file(st, service, w[2], depth + 1);
		return;
	}
	base = strrchr(w[2], '/') != NULL ? strrchr(w[2], '/') + 1 : w[2];
	if (strcmp(base, "pam_flowslot.so") != 0)
		return;
	if (st->conf != NULL) /* before the line's own, which wins */
		args[argc++] = st->conf;
	for (int i = 3; i < n; i++) {
		size_t len = strlen(w[i]);

		if (w[i][0] == '[' && len >= 2 && w[i][len - 1] == ']') {
			w[i][len - 1] = '\0';
			w[i]++;
		}
		args[argc++] = w[i];
	}
	snprintf(l.where, sizeof(l.where), "%s", where);
	switch (ctl_stack_opts(st, service, args, argc, &l)) {
	case 0:
		break;
	case -1:
		fprintf(stderr,
			"flowslotctl: %s: the bad options above: its logins meet the failure "
			"policy (fallback=)\n",
			where);
		return;
	default: /* the file's, said with what a login does */
		return;
	}
	for (int i = 0; i < st->n; i++)
		if (strcmp(st->line[i].where, l.where) == 0 &&
		    strcmp(st->line[i].sched, l.sched) == 0)
			return; /* an included line, met again */
	if (st->n == CTL_STACK_LINES_MAX) {
		st->left_out++;
		return;
	}
	st->line[st->n++] = l;
}

/* The lines of the stack file name (in st->dir unless absolute), following includes. */
static void ctl_stack_file(struct ctl_stacks *st, const char *service, const char *name, int depth)
{
	char path[PATH_MAX], where[PATH_MAX + 16], line[4096];
	unsigned lineno = 0;
	FILE *f;

	if (depth > CTL_INCLUDE_DEPTH)
		return; /* --service names it for that stack */
	if (name[0] == '/')
		snprintf(path, sizeof(path), "%s", name);
	else
		snprintf(path, sizeof(path), "%s/%s", st->dir, name);
	if ((f = fopen(path, "re")) == NULL)
		return; /* as libpam, which skips an include it cannot read */
	while (fgets(line, sizeof(line), f) != NULL) {
		lineno++;
		snprintf(where, sizeof(where), "%s:%u", path, lineno);
		ctl_stack_line(st, service, where, line, depth);
	}
	fclose(f);
}

static int ctl_stack_service(const struct dirent *d)
{
	return d->d_name[0] != '.' && (d->d_type == DT_REG || d->d_type == DT_UNKNOWN);
}

/* Names, on stderr, each two lines of the stacks that give one schedule different settings:
   the schedule holds every one of its callers to the strictest. Returns how many. */
static int ctl_check_stacks(const char *dir, const char *conf)
{
	struct ctl_stacks st = { .dir = dir, .conf = conf };
	struct dirent **names = NULL;
	int n = scandir(dir, &names, ctl_stack_service, alphasort), said = 0;

	if (n < 0) {
		fprintf(stderr, "flowslotctl: cannot read the stacks in %s: %s\n", dir,
			strerror(errno));
		return 0;
	}
	/* The command line's file was said as it was read. */
	ctl_conf_said(&st, conf != NULL ? conf + strlen("conf=") : OPT_CONF_DEFAULT);
	st.line = calloc(CTL_STACK_LINES_MAX, sizeof(*st.line));
	for (int i = 0; i < n; i++) {
		if (st.line != NULL)
			ctl_stack_file(&st, names[i]->d_name, names[i]->d_name, 0);
		free(names[i]);
	}
	free(names);
	while (st.n_said > 0)
		free(st.said[--st.n_said]);
	if (st.line == NULL) {
		perror("flowslotctl");
		return 0;
	}
	for (int i = 1; i < st.n; i++) {
		const struct ctl_stack_line *b = &st.line[i];

		for (int j = 0; j < i; j++) {
			const struct ctl_stack_line *a = &st.line[j];
			char ia[32], ib[32], key[CTL_ESCAPED(OPT_KEY_MAX)];

			if (strcmp(a->sched, b->sched) != 0 ||
			    (a->interval_us == b->interval_us && a->burst == b->burst))
				continue;
			slot_duration(a->interval_us, ia, sizeof(ia));
			slot_duration(b->interval_us, ib, sizeof(ib));
			fprintf(stderr,
				"flowslotctl: key %s: %s gives interval=%s burst=%lld, %s "
				"interval=%s burst=%lld: the schedule holds both to the strictest\n",
				log_escape(a->key, key, sizeof(key)), a->where, ia, (long long)a->burst,
				b->where, ib, (long long)b->burst);
			said++;
			break;
		}
	}
	if (st.left_out > 0)
		fprintf(stderr, "flowslotctl: %d more pam_flowslot lines in %s, not compared\n",
			st.left_out, dir);
	free(st.line);
	return said;
}

static int ctl_check(struct ctl *c)
{
	struct slot_result res = { .verdict = SLOT_UNAVAILABLE };
	int rc = ctl_call_or_say(c, SLOT_PEEK, &res);
	const char *conf = NULL;
	int split;

	for (int i = 0; i < c->args.n; i++)
		if (str_skip_prefix(c->args.v[i], "conf=") != NULL)
			conf = c->args.v[i];
	split = ctl_check_stacks(c->pam_dir, conf);

	/* Not an error for a login, which goes on without it; but a check that passed it would
	   hide a typo (logins 7 s apart after an intervall=3s). */
	if (c->o.n_unknown > 0)
		fprintf(stderr,
			"flowslotctl: %d unknown option%s in the configuration file (named above): "
			"the module ignores %s, and logins take the default for what %s meant to "
			"set\n",
			c->o.n_unknown, c->o.n_unknown == 1 ? "" : "s",
			c->o.n_unknown == 1 ? "it" : "them", c->o.n_unknown == 1 ? "it" : "they");
	else if (rc == 0)
		printf("ok: a login would queue on %s (schedule %s, %" PRId64 " waiting)\n",
		       c->where, c->key, res.waiting);
	/* Not an error: the logins queue, until the server evicts the schedule to free memory. */
	if (rc == 0 && res.evicts)
		fprintf(stderr,
			"flowslotctl: %s may evict the schedule: its maxmemory-policy is not "
			"noeviction and it has a maxmemory; an evicted schedule loses its queue "
			"unannounced (volatile-ttl takes it first, for it always has a TTL): set "
			"maxmemory-policy noeviction\n",
			c->where);
	/* Nor this: the logins queue, on the strictest settings. */
	if (split > 0)
		fprintf(stderr,
			"flowslotctl: %d module line%s in %s disagree%s with another on a schedule "
			"(named above): set interval= and burst= in the configuration file alone\n",
			split, split == 1 ? "" : "s", c->pam_dir, split == 1 ? "s" : "");
	return rc == 0 && c->o.n_unknown > 0 ? 2 : rc;
}

/* metrics: the host's counters (src/stats.c), then the schedule's gauges read live, then the
   host's own waiters (src/waiters.c). A schedule that cannot be read leaves its gauges out
   (flowslot_queue_up 0, and why on stderr), so that the counters and the host's waiters
   still reach the collector; a bad option or counters file fails the command. */
static int ctl_metrics(struct ctl *c)
{
	struct slot_result res = { .verdict = SLOT_UNAVAILABLE };
	const struct slot_place none = { .id = "flowslotctl" };
	struct waiters_view host;
	const char *why;
	bool up;

	if (c->o.errors > 0) {
		ctl_say_problems(&c->o, NULL);
		return 2;
	}
	/* --service: that stack's schedules only; without it, the host's all. */
	if (stats_write_prometheus(stdout, c->o.state_dir, c->service != NULL ? c->o.key : NULL,
				   &why) != 0) {
		fprintf(stderr, "flowslotctl: %s/%s: %s\n", c->o.state_dir, STATS_FILE, why);
		return 1;
	}
	up = ctl_call(c, SLOT_PEEK, &none, &res) != SLOT_UNAVAILABLE;
	if (!up)
		fprintf(stderr, "flowslotctl: %s: unusable (the error is above): no queue gauges\n",
			c->where);
	printf("# HELP flowslot_queue_up Whether the schedule could be read just now.\n"
	       "# TYPE flowslot_queue_up gauge\n"
	       "flowslot_queue_up{key=\"");
	stats_label(stdout, c->key);
	printf("\"} %d\n", up);
	if (up) {
		printf("# HELP flowslot_queue_length Logins not gone in yet: holding a place, or "
		       "admitted to go in within the commit window.\n"
		       "# TYPE flowslot_queue_length gauge\n"
		       "flowslot_queue_length{key=\"");
		stats_label(stdout, c->key);
		printf("\"} %" PRId64 "\n", res.waiting);
		printf("# HELP flowslot_queue_wait_seconds The wait a login arriving now would get.\n"
		       "# TYPE flowslot_queue_wait_seconds gauge\n"
		       "flowslot_queue_wait_seconds{key=\"");
		stats_label(stdout, c->key);
		printf("\"} %.3f\n", (double)res.wait_us / 1e6);
	}
	if (ctl_host_waiters(c, &host)) {
		printf("# HELP flowslot_host_waiting Logins of this host waiting for the schedule, "
		       "whether or not it can be read.\n"
		       "# TYPE flowslot_host_waiting gauge\n"
		       "flowslot_host_waiting{key=\"");
		stats_label(stdout, c->key);
		printf("\"} %" PRId64 "\n", host.count);
		printf("# HELP flowslot_host_longest_wait_seconds How long the longest waiting of "
		       "them has waited (0: none waits).\n"
		       "# TYPE flowslot_host_longest_wait_seconds gauge\n"
		       "flowslot_host_longest_wait_seconds{key=\"");
		stats_label(stdout, c->key);
		printf("\"} %.3f\n", host.longest_us < 0 ? 0.0 : (double)host.longest_us / 1e6);
	}
	return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
}

/* wait: the write end of a pipe whose read end the wait watches. Only the handler closes it
   (a hang-up on the read end then ends the wait) and sets it to -1; the main path takes it
   back with the signals blocked, so that no descriptor is closed twice. */
static volatile sig_atomic_t ctl_stop_fd = -1;

static const int ctl_stop_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };

static void ctl_on_signal(int sig)
{
	int fd = ctl_stop_fd, saved = errno;

	(void)sig;
	if (fd >= 0) {
		ctl_stop_fd = -1;
		close(fd);
	}
	errno = saved;
}

/* Catches the stop signals before the place is taken; returns the pipe's read end, or -1. */
static int ctl_stop_open(void)
{
	struct sigaction sa = { .sa_handler = ctl_on_signal, .sa_flags = SA_RESTART };
	int fds[2];

	if (pipe2(fds, O_CLOEXEC) != 0) {
		perror("flowslotctl: pipe");
		return -1;
	}
	ctl_stop_fd = fds[1];
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(ctl_stop_signals) / sizeof(ctl_stop_signals[0]); i++)
		sigaddset(&sa.sa_mask, ctl_stop_signals[i]);
	for (size_t i = 0; i < sizeof(ctl_stop_signals) / sizeof(ctl_stop_signals[0]); i++)
		sigaction(ctl_stop_signals[i], &sa, NULL);
	return fds[0];
}

/* Closes the pipe: the write end only if no signal did. The handlers stay, doing nothing. */
static void ctl_stop_close(int rd)
{
	sigset_t stop, old;
	int fd;

	sigemptyset(&stop);
	for (size_t i = 0; i < sizeof(ctl_stop_signals) / sizeof(ctl_stop_signals[0]); i++)
		sigaddset(&stop, ctl_stop_signals[i]);
	sigprocmask(SIG_BLOCK, &stop, &old);
	fd = ctl_stop_fd;
	ctl_stop_fd = -1;
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (fd >= 0)
		close(fd);
	close(rd);
}

/* The countdown on stderr: one line rewritten in place on a terminal, else plain lines. */
static void ctl_say(void *arg, enum countdown_kind kind, const char *text)
{
	const bool *tty = arg;

	if (*tty)
		fprintf(stderr, "\r\033[K%s%s", text, kind == COUNTDOWN_TURN ? "\n" : "");
	else
		fprintf(stderr, "%s\n", text);
}

/* A place for this user on the schedule, as the module makes for a login. */
static void ctl_place(struct slot_place *pl)
{
	const struct passwd *pw = getpwuid(getuid());
	uint64_t h = HASH_START;

	slot_place_id(pl);
	h = hash_str(hash_str(h, "flowslotctl"), "\x1f");
	h = hash_str(h, pw != NULL ? pw->pw_name : "");
	snprintf(pl->who, sizeof(pl->who), "%016" PRIx64, h);
	pl->host[0] = '\0';
}

/* On the per-host schedule, as the module's gate_reserve_local: when even that cannot be
   used, go on without a wait, unless fallback=closed. */
static enum slot_verdict ctl_reserve_local(struct ctl *c, const struct slot_place *pl,
					   struct slot_result *res)
{
	enum slot_verdict v = ctl_call_local(c, SLOT_RESERVE, pl, res);

	if (v != SLOT_UNAVAILABLE || c->o.fallback == OPT_FALLBACK_CLOSED)
		return v;
	fprintf(stderr, "flowslotctl: local schedule unusable: going on without a wait\n");
	res->wait_us = 0;
	return SLOT_ADMIT;
}

/* Reserves as a login does (the module's gate_reserve), the failure policy included; local
   says whether the place is on the per-host schedule. */
static enum slot_verdict ctl_reserve(struct ctl *c, const struct slot_place *pl,
				     struct slot_result *res, bool *local)
{
	const bool configured = c->o.errors == 0;
	enum slot_verdict v;

	*local = true;
	if (configured && c->o.url.backend == URL_BACKEND_LOCAL)
		return ctl_reserve_local(c, pl, res);
	if (configured) {
		*local = false;
		if ((v = ctl_call(c, SLOT_RESERVE, pl, res)) != SLOT_UNAVAILABLE)
			return v;
	}
	switch (c->o.fallback) {
	case OPT_FALLBACK_OPEN:
		fprintf(stderr, "flowslotctl: fallback=open: going on without a wait\n");
		res->wait_us = 0;
		return SLOT_ADMIT;
	case OPT_FALLBACK_CLOSED:
		return SLOT_UNAVAILABLE;
	case OPT_FALLBACK_LOCAL:
	default:
		*local = true;
		return ctl_reserve_local(c, pl, res);
	}
}

/* Says why a wait past max_wait is refused, as the module does (gate_refuse). */
static void ctl_refused(const struct ctl *c, const struct slot_result *res)
{
	const int64_t retry_us = res->lock_busy ? 0 : res->wait_us - c->o.slot.max_wait_us;
	char wait[32];

	countdown_format(retry_us, wait, sizeof(wait));
	if (retry_us <= 0)
		fprintf(stderr, "Too many logins at the moment. Please try again later.\n");
	else
		fprintf(stderr, "Too many logins at the moment. Please try again in %s.\n", wait);
}

/* Waits for the slot; a signal (Ctrl-C, a hang-up), which closed stop's other end, gives
   back a place held; a slot past max_wait from the reservation (begun_us) refuses it. */
static int ctl_wait_turn(struct ctl *c, const struct slot_place *pl, struct slot_result *res,
			 bool local, int stop, int64_t begun_us)
{
	const struct queue_login l = { .o = &c->o,
				       .argc = c->args.n,
				       .argv = c->args.v,
				       .key = c->key,
				       .place = pl,
				       .local = local,
				       .limit_us = begun_us + c->o.slot.max_wait_us };
	struct hangup_watch w = { .n = 1, .events = { POLLIN } };
	struct countdown cd;
	bool tty = isatty(STDERR_FILENO) == 1;
	enum queue_end end;

	for (int i = 0; i < HANGUP_FDS_MAX; i++)
		w.fds[i] = -1;
	w.fds[0] = stop; /* closed by ctl_stop_close, not hangup_watch_close */
	countdown_start_say(&cd, ctl_say, &tty, tty ? 1000000 : c->o.countdown_us, !c->o.quiet,
			    res);
	end = queue_wait(&l, res, &w, &cd);
	if (end == QUEUE_TURN) {
		countdown_turn(&cd);
		return 0;
	}
	if (end == QUEUE_REFUSED) {
		ctl_refused(c, res);
		return 1;
	}
	if (!c->o.quiet) /* a fixed slot (admitted, to go in later) stays taken */
		fprintf(stderr, "%sLogin queue: left%s\n", tty ? "\n" : "",
			res->verdict == SLOT_QUEUED ? "; the place is given back." : ".");
	return 130;
}

/* The signals are caught before the place is taken: one that comes during the reservation
   gives the place back as soon as it is known. */
static int ctl_wait(struct ctl *c)
{
	struct slot_place pl;
	struct slot_result res = { .verdict = SLOT_UNAVAILABLE };
	int64_t begun_us;
	bool local;
	int stop = ctl_stop_open(), rc = 1;

	if (stop < 0)
		return 1;
	/* A dry run would commit a fixed slot up to max_wait ahead (slot_commit_us), which no
	   Ctrl-C could give back: wait holds a renewable place whatever dry_run says. */
	c->o.slot.dry_run = false;
	ctl_place(&pl);
	begun_us = fstime_mono_us();
	switch (ctl_reserve(c, &pl, &res, &local)) {
	case SLOT_ADMIT:
	case SLOT_QUEUED:
		rc = 0;
		if (res.verdict == SLOT_QUEUED || res.wait_us > 0)
			rc = ctl_wait_turn(c, &pl, &res, local, stop, begun_us);
		break;
	case SLOT_REFUSE:
		ctl_refused(c, &res);
		break;
	case SLOT_REFUSE_HOST:
		fprintf(stderr, "Too many logins from your address at the moment.\n");
		break;
	case SLOT_UNAVAILABLE:
	default:
		fprintf(stderr, "flowslotctl: the login queue is unavailable (fallback=closed)\n");
		break;
	}
	ctl_stop_close(stop);
	return rc;
}

static const struct ctl_command ctl_commands[] = {
	{ "status", ctl_status, "status [KEY]   the schedule: waiting logins, the wait now" },
	{ "reset", ctl_reset, "reset [KEY]    empty the schedule (logged)" },
	{ "check", ctl_check, "check          try the options as a login would; compare the stacks" },
	{ "wait", ctl_wait, "wait [KEY]     take a place and wait, with a countdown" },
	{ "metrics", ctl_metrics, "metrics [KEY]  the host's counters and the queue, for Prometheus" },
};

static void ctl_usage(FILE *f)
{
	fprintf(f,
		"usage: flowslotctl [--service NAME] [--pam-dir DIR] [--json] [OPTION...] "
		"COMMAND [KEY] [OPTION...]\n"
		"       flowslotctl --help | --version\n"
		"OPTION: a pam_flowslot module argument, NAME=VALUE or a flag (url=..., key=..., "
		"conf=..., debug),\n"
		"        before or after COMMAND; after --, words are COMMAND and KEY as they "
		"are\n"
		"commands:\n");
	for (size_t i = 0; i < sizeof(ctl_commands) / sizeof(ctl_commands[0]); i++)
		fprintf(f, "  %s\n", ctl_commands[i].usage);
}

static const struct ctl_command *ctl_find(const char *name)
{
	for (size_t i = 0; i < sizeof(ctl_commands) / sizeof(ctl_commands[0]); i++)
		if (strcmp(ctl_commands[i].name, name) == 0)
			return &ctl_commands[i];
	return NULL;
}

/* Whether a word of the command line is a module option: NAME=VALUE (a NAME the module does
   not know included, for opt_parse to name), or a flag. So it is wherever it stands, before
   the command or after it: "check url=..." must check that url, not a KEY of that name. */
static bool ctl_module_option(const char *w)
{
	size_t n = opt_name_len(w);

	return n > 0 && (w[n] == '=' || opt_is_flag(w));
}

/* A word that is no option: the command, then its KEY. Says why not, and returns -1. */
static int ctl_word(const char *w, const struct ctl_command **cmd, const char **key)
{
	char shown[CTL_ESCAPED(64)];

	if (*cmd == NULL && (*cmd = ctl_find(w)) != NULL)
		return 0;
	if (*cmd == NULL) {
		fprintf(stderr, "flowslotctl: \"%s\" is neither a command (",
			log_escape(w, shown, sizeof(shown)));
		for (size_t i = 0; i < sizeof(ctl_commands) / sizeof(ctl_commands[0]); i++)
			fprintf(stderr, "%s%s", i > 0 ? ", " : "", ctl_commands[i].name);
		fprintf(stderr, ") nor a module option (NAME=VALUE, or a flag)\n");
		return -1;
	}
	if (*key == NULL) {
		*key = w;
		return 0;
	}
	fprintf(stderr, "flowslotctl: %s: too many arguments (\"%s\")\n", (*cmd)->name,
		log_escape(w, shown, sizeof(shown)));
	return -1;
}

static const struct option ctl_options[] = {
	{ "service", required_argument, NULL, 's' }, { "pam-dir", required_argument, NULL, 'p' },
	{ "json", no_argument, NULL, 'j' },	     { "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },	     { NULL, 0, NULL, 0 },
};

/* Reads the command line into c, its module options into line; returns 0, 1 when done
   (--help, --version), or -1 on an error, said. */
static int ctl_read_words(struct ctl *c, int argc, char **argv, struct ctl_args *line,
			  const char **pam_dir, const struct ctl_command **cmd, const char **key)
{
	int ch;

	opterr = 0; /* said here, in our words */
	/* "-": every other word comes back in its place (1), so that options stand anywhere
	   and the words keep their order; "--" ends the options. */
	while ((ch = getopt_long(argc, argv, "-:", ctl_options, NULL)) != -1) {
		switch (ch) {
		case 1:
			if (ctl_module_option(optarg) ? ctl_add_arg(line, optarg) != 0
						      : ctl_word(optarg, cmd, key) != 0)
				return -1;
			break;
		case 's':
			c->service = optarg;
			break;
		case 'p':
			*pam_dir = optarg;
			break;
		case 'j':
			c->json = true;
			break;
		case 'h':
			ctl_usage(stdout);
			return 1;
		case 'V':
			printf("flowslotctl %s\n", FLOWSLOT_VERSION);
			return 1;
		case ':':
			fprintf(stderr, "flowslotctl: %s needs a value\n", argv[optind - 1]);
			return -1;
		default:
			if (optopt != 0)
				fprintf(stderr, "flowslotctl: unknown option -%c\n", optopt);
			else
				fprintf(stderr, "flowslotctl: unknown option %s\n",
					argv[optind - 1]);
			return -1;
		}
	}
	/* After "--": the command and the KEY, whatever they look like. */
	for (; optind < argc; optind++)
		if (ctl_word(argv[optind], cmd, key) != 0)
			return -1;
	return 0;
}

/* Reads the command line into c; returns the command, or NULL with rc set. */
static const struct ctl_command *ctl_read_args(struct ctl *c, int argc, char **argv,
					       const char **key, int *rc)
{
	const char *pam_dir = CTL_PAM_DIR;
	struct ctl_args line = { .n = 0 };
	const struct ctl_command *cmd = NULL;
	int got = ctl_read_words(c, argc, argv, &line, &pam_dir, &cmd, key);

	c->pam_dir = pam_dir;

	*rc = got > 0 ? 0 : 2;
	if (got != 0) {
		cmd = NULL;
		goto out;
	}
	*rc = 2;
	if (cmd == NULL) {
		ctl_usage(stderr);
		goto out;
	}
	if (c->service != NULL) {
		int found = ctl_pam_file(pam_dir, c->service, 0, &c->args);

		if (found == 0)
			fprintf(stderr, "flowslotctl: no pam_flowslot line in %s/%s\n", pam_dir,
				c->service);
		if (found != 1) {
			cmd = NULL;
			goto out;
		}
	}
	for (int j = 0; j < line.n; j++)
		if (ctl_add_arg(&c->args, line.v[j]) != 0) {
			cmd = NULL;
			goto out;
		}
	*rc = 0;
out:
	ctl_free_args(&line);
	return *rc == 0 ? cmd : NULL;
}

/* A KEY from the command line: 1 to OPT_KEY_MAX bytes, none of them a control byte, which
   could forge a line of reset's audit log or of the terminal (a key the module makes has
   none). Says why not. */
static int ctl_check_key(const char *key)
{
	char shown[CTL_ESCAPED(OPT_KEY_MAX)];

	if (strlen(key) > OPT_KEY_MAX || key[0] == '\0') {
		fprintf(stderr, "flowslotctl: KEY must be 1 to %d bytes\n", OPT_KEY_MAX);
		return -1;
	}
	for (const unsigned char *p = (const unsigned char *)key; *p != '\0'; p++) {
		if (*p < 0x20 || *p == 0x7f) {
			fprintf(stderr, "flowslotctl: KEY \"%s\": control bytes are not allowed\n",
				log_escape(key, shown, sizeof(shown)));
			return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct ctl c = { .args = { .n = 0 } };
	const struct ctl_command *cmd;
	const char *key = NULL, *why;
	int rc;

	cmd = ctl_read_args(&c, argc, argv, &key, &rc);
	if (cmd == NULL) {
		ctl_free_args(&c.args);
		return rc;
	}
	opt_parse(&c.o, NULL, c.args.n, (const char **)c.args.v);
	opt_warn_unknown(&c.o, NULL, false);
	if (key != NULL && ctl_check_key(key) != 0) {
		rc = 2;
	} else if (key != NULL) {
		snprintf(c.key, sizeof(c.key), "%s", key);
	} else if (key_check_template(c.o.key, &why) != 0) {
		fprintf(stderr, "flowslotctl: key: %s\n", why);
		rc = 2;
	} else {
		key_expand(c.o.key, c.service, NULL, NULL, c.key, sizeof(c.key));
	}
	if (rc == 0)
		rc = cmd->run(&c);
	opt_wipe(&c.o);
	ctl_free_args(&c.args);
	return rc;
}
