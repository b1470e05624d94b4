/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pam_flowslot: lets logins through one interval apart.
 *
 * Every gating entry point runs the same flow: read the options, reserve a slot on the
 * schedule (Redis, or the per-host file when Redis cannot be used), tell the user where they
 * stand, sleep until the slot, and let the stack go on. An admitted login returns PAM_IGNORE:
 * the gate vouches for nobody. A handle is admitted once: the phases after it, and login(1)'s
 * repeated pam_authenticate, go straight through.
 */

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <security/pam_ext.h>
#include <security/pam_modules.h>

#include "flowslot/countdown.h"
#include "flowslot/fstime.h"
#include "flowslot/hangup.h"
#include "flowslot/hash.h"
#include "flowslot/hold.h"
#include "flowslot/key.h"
#include "flowslot/log.h"
#include "flowslot/lslot.h"
#include "flowslot/ncache.h"
#include "flowslot/once.h"
#include "flowslot/opt.h"
#include "flowslot/queue.h"
#include "flowslot/rslot.h"
#include "flowslot/stats.h"
#include "flowslot/waiters.h"

enum gate_phase {
	GATE_AUTH,
	GATE_ACCOUNT,
	GATE_SESSION,
};

/* The pam_set_data name that marks a handle as admitted; its data is a struct gate_mark. */
#define GATE_ADMITTED "pam_flowslot_admitted"
/* The PAM environment variable that tells the session its login went through the gate. */
#define GATE_ENV "FLOWSLOT_ADMITTED"
/* A schedule's settings other than a stack's: said at most once in this long (gate_settings). */
#define GATE_SETTINGS_PERIOD_S 3600

static const char *const gate_phase_name[] = {
	[GATE_AUTH] = "auth",
	[GATE_ACCOUNT] = "account",
	[GATE_SESSION] = "session",
};

/* Who is logging in, escaped for log lines. */
struct gate_who {
	const char *service;
	const char *user;
	const char *rhost;
	const char *tty;
	const char *ssh_connection; /* sshd's "raddr rport laddr lport", from the PAM environment */
	char service_shown[64];
	char user_shown[128];
	char rhost_shown[128];
	char shown[sizeof("service= user= rhost=") + 64 + 128 + 128]; /* as the lines below */
};

/* What a login that is not let through gets, by phase (never PAM_MAXTRIES, which tells sshd and
   login to stop asking). */
static int gate_denial(enum gate_phase phase, enum slot_verdict verdict)
{
	static const int refused[] = {
		[GATE_AUTH] = PAM_AUTH_ERR,
		[GATE_ACCOUNT] = PAM_PERM_DENIED,
		[GATE_SESSION] = PAM_SESSION_ERR,
	};
	static const int unavailable[] = {
		[GATE_AUTH] = PAM_AUTHINFO_UNAVAIL,
		[GATE_ACCOUNT] = PAM_PERM_DENIED,
		[GATE_SESSION] = PAM_SESSION_ERR,
	};

	return verdict == SLOT_UNAVAILABLE ? unavailable[phase] : refused[phase];
}

/* Fills who; pam_get_user may prompt, so only when the key needs the name. Returns
   PAM_SUCCESS, or the error of a prompt that failed or must be resumed: no slot is reserved
   for a name that was not had. */
static int gate_get_who(pam_handle_t *pamh, bool need_user, struct gate_who *who)
{
	const void *item;
	int rc = PAM_SUCCESS;

	who->service = pam_get_item(pamh, PAM_SERVICE, &item) == PAM_SUCCESS ? item : NULL;
	who->rhost = pam_get_item(pamh, PAM_RHOST, &item) == PAM_SUCCESS ? item : NULL;
	who->tty = pam_get_item(pamh, PAM_TTY, &item) == PAM_SUCCESS ? item : NULL;
	who->ssh_connection = pam_getenv(pamh, "SSH_CONNECTION");
	if (need_user)
		rc = pam_get_user(pamh, &who->user, NULL);
	else
		who->user = pam_get_item(pamh, PAM_USER, &item) == PAM_SUCCESS ? item : NULL;
	if (rc != PAM_SUCCESS)
		who->user = NULL;
	log_escape(who->service ? who->service : "", who->service_shown,
		   sizeof(who->service_shown));
	log_escape(who->user ? who->user : "", who->user_shown, sizeof(who->user_shown));
	log_escape(who->rhost ? who->rhost : "", who->rhost_shown, sizeof(who->rhost_shown));
	snprintf(who->shown, sizeof(who->shown), "service=%s user=%s rhost=%s", who->service_shown,
		 who->user_shown, who->rhost_shown);
	return rc;
}

static void gate_free_data(pam_handle_t *pamh, void *data, int error_status)
{
	(void)pamh, (void)error_status;
	free(data);
}

/* What the handle's mark says: the phase that admitted it, whether only a dry run did, and
   whether that call had debug (a later call may read no options to know). */
struct gate_mark {
	enum gate_phase phase;
	bool dry_run;
	bool debug;
};

/* The handle's mark, or NULL when it was not admitted. */
static const struct gate_mark *gate_mark_of(pam_handle_t *pamh)
{
	const void *data;

	if (pam_get_data(pamh, GATE_ADMITTED, &data) != PAM_SUCCESS)
		return NULL;
	return data;
}

/* A later call of a handle admitted already (m) lets it through, and says so with debug. */
static int gate_again(pam_handle_t *pamh, enum gate_phase phase, const struct gate_mark *m,
		      bool debug)
{
	if (debug)
		log_msg(pamh, LOG_DEBUG, "%s: admitted already in %s: no second wait",
			gate_phase_name[phase], gate_phase_name[m->phase]);
	return PAM_IGNORE;
}

/* Marks the handle as admitted, and, when it waited its turn (not in dry_run), tells the
   session so in the PAM environment (FLOWSLOT_ADMITTED=phase), for
   etc/profile.d/flowslot-wait.sh not to wait a second time. Should either fail (no memory), a
   later phase waits again: better a second wait than none. */
static void gate_set_admitted(pam_handle_t *pamh, enum gate_phase phase, bool dry_run, bool debug)
{
	static const char *const marker[] = {
		[GATE_AUTH] = GATE_ENV "=auth",
		[GATE_ACCOUNT] = GATE_ENV "=account",
		[GATE_SESSION] = GATE_ENV "=session",
	};
	struct gate_mark *data = malloc(sizeof(*data));

	if (!dry_run && pam_putenv(pamh, marker[phase]) != PAM_SUCCESS)
		log_msg(pamh, LOG_WARNING, "cannot set %s in the PAM environment", GATE_ENV);

	if (data == NULL)
		return;
	*data = (struct gate_mark){ .phase = phase, .dry_run = dry_run, .debug = debug };
	if (pam_set_data(pamh, GATE_ADMITTED, data, gate_free_data) != PAM_SUCCESS)
		free(data);
}

/* Names the login's place in the queue: a random id for this attempt, and hashes of who it is
   (service, user, remote host) and of where it comes from. */
static void gate_place(const struct gate_who *who, struct slot_place *place)
{
	static const char *const sep = "\x1f";
	uint64_t h = HASH_START;

	slot_place_id(place);
	h = hash_str(hash_str(h, who->service ? who->service : ""), sep);
	h = hash_str(hash_str(h, who->user ? who->user : ""), sep);
	h = hash_str(h, who->rhost ? who->rhost : "");
	snprintf(place->who, sizeof(place->who), "%016" PRIx64, h);
	if (who->rhost != NULL && who->rhost[0] != '\0')
		snprintf(place->host, sizeof(place->host), "%016" PRIx64,
			 hash_str(HASH_START, who->rhost));
	else
		place->host[0] = '\0';
}

/* How far off this host knows schedule key on Redis to go on, for a login that falls back
   from it: an interval past the latest slot of its own waiters there, which go in at their
   slots blind while it is down, and the next slot it last heard of (an interval past a login
   of its own gone in blind, or the last answer's); 0: nothing known, or all passed. */
static int64_t gate_fallback_floor_us(pam_handle_t *pamh, const struct opt *o, const char *key)
{
	char heard[NCACHE_NAME_MAX];
	struct waiters_view v;
	const char *why;
	int64_t now_us = fstime_mono_us(), floor_us;

	ncache_heard_name(&o->url, key, heard, sizeof(heard));
	floor_us = ncache_heard_get(o->state_dir, heard);
	if (waiters_read(o->state_dir, key, now_us, &v, &why) != 0)
		log_msg(pamh, LOG_WARNING, "waiters: %s in %s: %m: this host's own waiters on the "
					   "shared schedule are not waited for", why, o->state_dir);
	else if (v.last_slot_us > 0 && v.last_slot_us + o->slot.interval_us - now_us > floor_us)
		floor_us = v.last_slot_us + o->slot.interval_us - now_us;
	if (o->debug)
		log_msg(pamh, LOG_DEBUG, "fallback: the shared schedule goes on in %" PRId64
					 " ms at the soonest, by this host's waiters and what it heard",
			floor_us > 0 ? floor_us / 1000 : 0);
	return floor_us > 0 ? floor_us : 0;
}

/* Reserves on the per-host schedule, with what is left of max_wait by limit_us (a fallback
   comes after a decision on Redis, which may have asked again for 4 x timeout), its next slot
   at least floor_us off. When even that cannot be used, the login is let through (with a
   warning), unless fallback=closed: a queue must not lock out a host's logins; but one
   stopped by its own limits is refused. */
static enum slot_verdict gate_reserve_local(pam_handle_t *pamh, const struct opt *o,
					    const char *key, const struct slot_place *place,
					    struct slot_result *res, const char **via,
					    int64_t limit_us, int64_t floor_us)
{
	struct slot_params p = o->slot;
	int64_t left_us = limit_us - fstime_mono_us();
	const struct lslot_call call = { .dir = o->state_dir,
					 .key = key,
					 .p = &p,
					 .per_host = o->per_host,
					 .op = SLOT_RESERVE,
					 .place = place,
					 .floor_us = floor_us };
	enum slot_verdict v;

	p.max_wait_us = left_us < p.max_wait_us ? (left_us > 0 ? left_us : 0) : p.max_wait_us;
	v = lslot_call(pamh, &call, res);

	/* A login stopped by its own limits is refused whatever the policy: letting it in would
	   let a user skip the queue by limiting their own login's memory. */
	if (v != SLOT_UNAVAILABLE || o->fallback == OPT_FALLBACK_CLOSED || res->own_limits)
		return v;
	log_msg(pamh, LOG_WARNING, "local slot unusable: admitting without a wait");
	*via = "fallback-open";
	res->wait_us = 0;
	return SLOT_ADMIT;
}

/* Reserves a slot as the options say, applying the failure policy; max_wait ends at limit_us. */
static enum slot_verdict gate_reserve(pam_handle_t *pamh, const struct opt *o, const char *key,
				      const struct slot_place *place, struct slot_result *res,
				      const char **via, int64_t limit_us)
{
	/* After a bad option, go straight to the failure policy. */
	bool configured = o->errors == 0;
	enum slot_verdict v;

	*via = "local";
	if (configured && o->url.backend == URL_BACKEND_LOCAL)
		return gate_reserve_local(pamh, o, key, place, res, via, limit_us, 0);
	if (configured) {
		*via = "redis";
		v = rslot_call(pamh, o, SLOT_RESERVE, key, place, res);
		if (v != SLOT_UNAVAILABLE)
			return v;
		stats_record_error(pamh, o->state_dir, o->key, o->slot.dry_run);
	}
	switch (o->fallback) {
	case OPT_FALLBACK_OPEN:
		log_msg(pamh, LOG_WARNING, "fallback=open: admitting without a wait");
		*via = "fallback-open";
		res->wait_us = 0;
		return SLOT_ADMIT;
	case OPT_FALLBACK_CLOSED:
		log_msg(pamh, LOG_WARNING, "fallback=closed: refusing the login");
		*via = "fallback-closed";
		return SLOT_UNAVAILABLE;
	case OPT_FALLBACK_LOCAL:
	default:
		log_msg(pamh, LOG_WARNING, "fallback=local: queueing on this host's schedule");
		*via = "local";
		return gate_reserve_local(pamh, o, key, place, res, via, limit_us,
					  gate_fallback_floor_us(pamh, o, key));
	}
}

/* The schedule decides by its own settings, the strictest asked for in the last minute: says so,
   at the reservation, when they are not this stack's; at most once an hour on the host for
   each key and disagreement, since every login of that stack meets the same one. */
static void gate_settings(pam_handle_t *pamh, const struct opt *o, const char *key,
			  const struct slot_result *res)
{
	char key_shown[4 * OPT_KEY_MAX + 4], text[200], what[sizeof(key_shown) + sizeof(text) + 8];

	if (!slot_settings_differ(&o->slot, res, text, sizeof(text)))
		return;
	log_escape(key, key_shown, sizeof(key_shown));
	snprintf(what, sizeof(what), "key %s: %s", key_shown, text);
	if (once_due(o->state_dir, what, GATE_SETTINGS_PERIOD_S))
		log_msg(pamh, LOG_WARNING,
			"%s (the strictest asked for in the last minute; said at most once an hour)",
			what);
}

/* Whether the user's messages cannot be live. auto: under sshd (SSH_CONNECTION, which sshd
   puts in the PAM environment), where none reaches the client before the wait is over: in
   the session and with password auth they are printed after it, and keyboard-interactive
   sends them with its next prompt, which comes after it too. */
static bool gate_summary(const struct opt *o, const struct gate_who *who)
{
	if (o->messages != OPT_MESSAGES_AUTO)
		return o->messages == OPT_MESSAGES_SUMMARY;
	return who->ssh_connection != NULL && who->ssh_connection[0] != '\0';
}

/* Whether the front end drops info messages in this phase. util-linux su and runuser drop
   every PAM_TEXT_INFO sent alone from pam_open_session on, except for su - without -c (to
   hide "Last login"), and print PAM_ERROR_MSG on stderr: their session is told in errors.
   Their services' names are built in. */
static bool gate_drops_info(const struct gate_who *who, enum gate_phase phase)
{
	static const char *const drops_info[] = { "su", "su-l", "runuser", "runuser-l" };

	if (phase != GATE_SESSION || who->service == NULL)
		return false;
	for (size_t i = 0; i < sizeof(drops_info) / sizeof(drops_info[0]); i++)
		if (strcmp(who->service, drops_info[i]) == 0)
			return true;
	return false;
}

/* One login at the gate, once its reservation is made. */
struct gate_login {
	struct queue_login q;
	const struct gate_who *who;
	enum gate_phase phase;
	bool silent;
	bool summary; /* messages cannot be live: one line after the wait instead */
	int style;    /* of the messages telling the wait: PAM_TEXT_INFO, else PAM_ERROR_MSG */
	const char *via;
	int64_t begun_us; /* when the login came to the gate: max_wait counts from there */
};

/* Tells the user why the login is refused (not under PAM_SILENT), as refusal= asks: an error,
   or information for a front end that puts its own words in place of an error (never where
   the front end drops information: su's session). */
__attribute__((format(printf, 2, 3))) static void gate_say_refusal(const struct gate_login *g,
								   const char *fmt, ...)
{
	bool info = g->q.o->refusal == OPT_REFUSAL_INFO && g->style == PAM_TEXT_INFO;
	va_list ap;

	if (g->silent)
		return;
	va_start(ap, fmt);
	pam_vprompt(g->q.pamh, info ? PAM_TEXT_INFO : PAM_ERROR_MSG, NULL, fmt, ap);
	va_end(ap);
}

/* A slot past max_wait that the backend did not refuse (one that does not check): refused
   here, a place held given back. */
static enum slot_verdict gate_bound(const struct gate_login *g, struct slot_result *res,
				    enum slot_verdict v)
{
	if ((v != SLOT_ADMIT && v != SLOT_QUEUED) || res->wait_us <= g->q.o->slot.max_wait_us)
		return v;
	if (v == SLOT_QUEUED)
		queue_leave(&g->q);
	res->verdict = SLOT_REFUSE;
	return SLOT_REFUSE;
}

/* The interval the schedule decides by: its own when it said, else this login's. */
static int64_t gate_interval_us(const struct gate_login *g, const struct slot_result *res)
{
	return res->sched_interval_us > 0 ? res->sched_interval_us : g->q.o->slot.interval_us;
}

/* Waits for the slot, watching the user and telling them where they stand. */
static enum queue_end gate_wait(const struct gate_login *g, struct slot_result *res)
{
	const struct opt *o = g->q.o;
	struct hangup_watch w;
	struct countdown cd;
	enum queue_end end;

	hangup_watch_open(g->q.pamh, g->who->rhost, g->who->ssh_connection, g->who->tty, &w);
	if (o->debug && w.what[0] != '\0')
		log_msg(g->q.pamh, LOG_DEBUG, "watching for a hang-up: %s", w.what);
	countdown_start(&cd, g->q.pamh, g->style, o->countdown_us,
			!g->silent && !o->quiet && !g->summary, res);
	end = queue_wait(&g->q, res, &w, &cd);
	if (end == QUEUE_TURN)
		countdown_turn(&cd);
	hangup_watch_close(&w);
	return end;
}

/* What the counters call the decision: fallback=open, or a per-host schedule that could not
   be used, lets a login in unqueued, which counts as the failure policy met. */
static enum stats_result gate_result(const struct gate_login *g, const struct slot_result *res,
				     enum slot_verdict v)
{
	switch (v) {
	case SLOT_ADMIT:
	case SLOT_QUEUED:
		if (strcmp(g->via, "fallback-open") == 0)
			return STATS_UNAVAILABLE;
		return res->wait_us > 0 || v == SLOT_QUEUED ? STATS_WAITED : STATS_ADMITTED;
	case SLOT_REFUSE:
	case SLOT_REFUSE_HOST:
		return STATS_REFUSED;
	case SLOT_UNAVAILABLE:
	default:
		return STATS_UNAVAILABLE;
	}
}

/* Counts the login in the host's counters; a failure is logged there and changes nothing. */
static void gate_count(const struct gate_login *g, enum stats_result r, int64_t wait_us)
{
	const struct opt *o = g->q.o;

	stats_record(g->q.pamh, o->state_dir, o->key, o->slot.dry_run, r, wait_us);
}

/* dry_run: logs what would have become of the login, and lets it through at once. Its slot
   was taken as a fixed one (slot_commit_us), so later logins see the queue that would be;
   behind real waiters on a shared schedule it could only hold a place, which it gives back
   rather than keep it ahead of real logins until its lease ran out. */
static int gate_dry_run(const struct gate_login *g, const struct slot_result *res,
			enum slot_verdict v, enum stats_result r)
{
	pam_handle_t *pamh = g->q.pamh;
	const struct gate_who *who = g->who;

	if (r == STATS_WAITED)
		log_msg(pamh, LOG_NOTICE,
			"dry_run: service=%s user=%s rhost=%s would_wait_ms=%lld position=%lld "
			"via=%s",
			who->service_shown, who->user_shown, who->rhost_shown,
			(long long)(res->wait_us / 1000), (long long)res->position, g->via);
	else if (v == SLOT_REFUSE)
		log_msg(pamh, LOG_NOTICE,
			"dry_run: service=%s user=%s rhost=%s would_refuse wait_ms=%lld "
			"position=%lld max_wait_ms=%lld via=%s",
			who->service_shown, who->user_shown, who->rhost_shown,
			(long long)(res->wait_us / 1000), (long long)res->position,
			(long long)(g->q.o->slot.max_wait_us / 1000), g->via);
	else if (v == SLOT_REFUSE_HOST)
		log_msg(pamh, LOG_NOTICE,
			"dry_run: service=%s user=%s rhost=%s would_refuse per_host=%d via=%s",
			who->service_shown, who->user_shown, who->rhost_shown, g->q.o->per_host,
			g->via);
	else if (r == STATS_UNAVAILABLE)
		log_msg(pamh, LOG_NOTICE,
			"dry_run: service=%s user=%s rhost=%s would_meet_failure_policy via=%s",
			who->service_shown, who->user_shown, who->rhost_shown, g->via);
	if (v == SLOT_QUEUED)
		queue_leave(&g->q);
	gate_count(g, r, r == STATS_WAITED ? res->wait_us : 0);
	gate_set_admitted(pamh, g->phase, true, g->q.o->debug);
	return PAM_IGNORE;
}

/* Holds an admitted login while the host is under pressure (pressure=). Returns PAM_IGNORE
   to go in, or the phase's refusal; adds the time held to *waited_us, and says in *r what
   the counters are to count. */
static int gate_hold(const struct gate_login *g, const struct slot_result *res,
		     enum stats_result *r, int64_t *waited_us)
{
	pam_handle_t *pamh = g->q.pamh;
	const struct opt *o = g->q.o;
	const struct gate_who *who = g->who;
	/* One line per key template, not per expanded key: pressure is the host's, and logins
	   of different users (key=...%u) must still go in one by one. */
	const struct hold_login h = { .pamh = pamh, .o = o, .key = o->key,
				      .place = g->q.place,
				      .talk = !g->silent && !o->quiet && !g->summary,
				      .style = g->style,
				      .begun_us = g->begun_us,
				      .deadline_us = g->begun_us + o->slot.max_wait_us,
				      .interval_us = gate_interval_us(g, res) };
	struct hangup_watch w;
	struct hold_result hr;
	const char *held_by;

	hangup_watch_open(pamh, who->rhost, who->ssh_connection, who->tty, &w);
	hold_wait(&h, &w, &hr);
	hangup_watch_close(&w);
	held_by = hr.res >= 0 ? pressure_res_name[hr.res] : "line";
	*waited_us += hr.held_us;
	if (hr.held_us > 0 && *r == STATS_ADMITTED)
		*r = STATS_WAITED;
	switch (hr.end) {
	case HOLD_ABANDONED:
		*r = STATS_ABANDONED;
		log_msg(pamh, LOG_NOTICE,
			"abandoned: service=%s user=%s rhost=%s pressure=%s pressure_ms=%lld via=%s",
			who->service_shown, who->user_shown, who->rhost_shown, held_by,
			(long long)(hr.held_us / 1000), g->via);
		return gate_denial(g->phase, SLOT_REFUSE);
	case HOLD_TIMEOUT:
		if (o->pressure.refuse) {
			*r = STATS_REFUSED;
			log_msg(pamh, LOG_NOTICE,
				"refused: service=%s user=%s rhost=%s pressure=%s pressure_ms=%lld "
				"max_wait_ms=%lld via=%s",
				who->service_shown, who->user_shown, who->rhost_shown, held_by,
				(long long)(hr.held_us / 1000),
				(long long)(o->slot.max_wait_us / 1000), g->via);
			gate_say_refusal(g, "The server is too busy at the moment. Please try "
					    "again later.");
			return gate_denial(g->phase, SLOT_REFUSE);
		}
		log_msg(pamh, LOG_WARNING,
			"admitted: service=%s user=%s rhost=%s pressure=%s pressure_ms=%lld "
			"max_wait_ms=%lld via=%s",
			who->service_shown, who->user_shown, who->rhost_shown, held_by,
			(long long)(hr.held_us / 1000), (long long)(o->slot.max_wait_us / 1000),
			g->via);
		return PAM_IGNORE;
	case HOLD_IN:
	default:
		if (hr.held_us > 0)
			log_msg(pamh, LOG_NOTICE,
				"held: service=%s user=%s rhost=%s pressure=%s pressure_ms=%lld via=%s",
				who->service_shown, who->user_shown, who->rhost_shown, held_by,
				(long long)(hr.held_us / 1000), g->via);
		return PAM_IGNORE;
	}
}

/* Refuses a login whose wait (wait_us, from its reservation) would pass max_wait: logs it,
   counts it, and tells the user to come back in retry_us, or later when that cannot be told
   (retry_us <= 0: the per-host file stayed busy, or its queue was full). */
static int gate_refuse(const struct gate_login *g, int64_t wait_us, int64_t retry_us,
		       const struct slot_result *res)
{
	pam_handle_t *pamh = g->q.pamh;
	const struct opt *o = g->q.o;
	const struct gate_who *who = g->who;
	char wait_text[32];

	log_msg(pamh, LOG_NOTICE,
		"refused: service=%s user=%s rhost=%s wait_ms=%lld position=%lld "
		"max_wait_ms=%lld via=%s",
		who->service_shown, who->user_shown, who->rhost_shown, (long long)(wait_us / 1000),
		(long long)res->position, (long long)(o->slot.max_wait_us / 1000), g->via);
	gate_count(g, STATS_REFUSED, 0);
	countdown_format(retry_us, wait_text, sizeof(wait_text));
	if (retry_us <= 0)
		gate_say_refusal(g, "Too many logins at the moment. Please try again later.");
	else
		gate_say_refusal(g, "Too many logins at the moment. Please try again in %s.",
				 wait_text);
	return gate_denial(g->phase, SLOT_REFUSE);
}

/* The schedule could not decide, or this login's own limits stopped it (own): refused as
   unavailable. */
static int gate_unavailable(const struct gate_login *g, enum stats_result r, bool own)
{
	const struct gate_who *who = g->who;

	if (own)
		log_msg(g->q.pamh, LOG_NOTICE,
			"refused: service=%s user=%s rhost=%s for its own limits via=%s",
			who->service_shown, who->user_shown, who->rhost_shown, g->via);
	gate_count(g, r, 0);
	gate_say_refusal(g, "The login queue is unavailable. Please try again later.");
	return gate_denial(g->phase, SLOT_UNAVAILABLE);
}

/* A slot past max_wait found while waiting (the renewal's answer is in res): refused as at
   the reservation. A new attempt now would wait res->wait_us, at least one interval. */
static int gate_refuse_late(const struct gate_login *g, const struct slot_result *res)
{
	int64_t retry_us = res->wait_us - g->q.o->slot.max_wait_us;

	if (retry_us < gate_interval_us(g, res))
		retry_us = gate_interval_us(g, res);
	return gate_refuse(g, fstime_mono_us() - g->begun_us + res->wait_us, retry_us, res);
}

/* Waits for an admitted slot, and the pressure hold after it: what the phase returns. */
static int gate_go(const struct gate_login *g, struct slot_result *res, enum stats_result r)
{
	pam_handle_t *pamh = g->q.pamh;
	const struct opt *o = g->q.o;
	const struct gate_who *who = g->who;
	enum queue_end end;
	int64_t waited_us = 0, position = res->position;
	int rc = PAM_IGNORE;

	if (r == STATS_WAITED) {
		log_msg(pamh, LOG_NOTICE,
			"queued: service=%s user=%s rhost=%s wait_ms=%lld position=%lld via=%s",
			who->service_shown, who->user_shown, who->rhost_shown,
			(long long)(res->wait_us / 1000), (long long)res->position, g->via);
		waited_us = fstime_mono_us();
		end = gate_wait(g, res);
		if (end == QUEUE_REFUSED && res->own_limits)
			return gate_unavailable(g, STATS_REFUSED, true);
		if (end == QUEUE_REFUSED)
			return gate_refuse_late(g, res);
		if (end == QUEUE_ABANDONED) {
			log_msg(pamh, LOG_NOTICE,
				"abandoned: service=%s user=%s rhost=%s position=%lld via=%s",
				who->service_shown, who->user_shown, who->rhost_shown,
				(long long)res->position, g->via);
			gate_count(g, STATS_ABANDONED, 0);
			return gate_denial(g->phase, SLOT_REFUSE);
		}
		waited_us = fstime_mono_us() - waited_us;
	} else if (o->debug) {
		log_msg(pamh, LOG_DEBUG,
			"admitted: service=%s user=%s rhost=%s wait_ms=0 position=%lld via=%s",
			who->service_shown, who->user_shown, who->rhost_shown,
			(long long)res->position, g->via);
	}
	if (opt_pressure_on(o))
		rc = gate_hold(g, res, &r, &waited_us);
	gate_count(g, r, r == STATS_WAITED ? waited_us : 0);
	if (rc != PAM_IGNORE)
		return rc;
	/* Every login let through, at once or after its wait: the stagger an administrator sees
	   in the log without debug. */
	log_msg(pamh, LOG_INFO,
		"went in: service=%s user=%s rhost=%s waited_ms=%lld position=%lld via=%s",
		who->service_shown, who->user_shown, who->rhost_shown, (long long)(waited_us / 1000),
		(long long)position, g->via);
	if (g->summary && waited_us > 0 && !g->silent && !o->quiet)
		countdown_summary(pamh, g->style, waited_us, position);
	gate_set_admitted(pamh, g->phase, false, o->debug);
	return rc;
}

/* Tells the user and the log what became of the reservation, waits for an admitted slot,
   and returns what the phase returns. A login that waits (for its slot, or in the pressure
   hold) is one of the host's waiters for as long as it does (src/waiters.c). */
static int gate_conclude(const struct gate_login *g, struct slot_result *res, enum slot_verdict v)
{
	pam_handle_t *pamh = g->q.pamh;
	const struct opt *o = g->q.o;
	const struct gate_who *who = g->who;
	enum stats_result r = gate_result(g, res, v);
	int64_t retry_us;
	int rc;

	if (o->slot.dry_run)
		return gate_dry_run(g, res, v, r);
	switch (v) {
	case SLOT_ADMIT:
	case SLOT_QUEUED:
		if (r == STATS_WAITED || opt_pressure_on(o))
			waiter_join(pamh, o->state_dir, g->q.key, g->begun_us,
				    strcmp(g->via, "redis") == 0 ? res->deadline_us : 0,
				    g->q.waiter);
		rc = gate_go(g, res, r);
		waiter_leave(g->q.waiter);
		return rc;
	case SLOT_REFUSE: /* how much sooner it would have had to come, where that can be told */
		retry_us = res->lock_busy || res->full ? 0 : res->wait_us - o->slot.max_wait_us;
		return gate_refuse(g, res->wait_us, retry_us, res);
	case SLOT_REFUSE_HOST:
		log_msg(pamh, LOG_NOTICE,
			"refused: service=%s user=%s rhost=%s per_host=%d via=%s",
			who->service_shown, who->user_shown, who->rhost_shown, o->per_host, g->via);
		gate_count(g, r, 0);
		gate_say_refusal(g, "Too many logins from your address at the moment. Please try "
				    "again later.");
		return gate_denial(g->phase, v);
	case SLOT_UNAVAILABLE:
	default:
		return gate_unavailable(g, r, res->own_limits);
	}
}

static int gate(pam_handle_t *pamh, int flags, int argc, const char **argv, enum gate_phase phase)
{
	struct opt o;
	struct gate_who who;
	struct slot_place place;
	struct slot_result res = { .verdict = SLOT_UNAVAILABLE };
	char key[OPT_KEY_MAX + 1];
	const struct gate_mark *m = gate_mark_of(pamh);
	struct waiter waiter = { .fd = -1 };
	struct gate_login g = {
		.q = { .pamh = pamh, .o = &o, .argc = argc, .argv = argv, .key = key,
		       .place = &place, .who = who.shown, .waiter = &waiter },
		.who = &who,
		.phase = phase,
		.silent = (flags & PAM_SILENT) != 0,
	};
	enum slot_verdict v;
	int rc;

	/* Admitted already: the options are not read again, so that a problem of theirs is
	   logged once a login, not once a module line (auth and session, sshd's and the
	   profile's). */
	if (m != NULL && !m->dry_run)
		return gate_again(pamh, phase, m, m->debug);
	opt_parse(&o, pamh, argc, argv);
	opt_warn_unknown(&o, pamh, true);
	if (o.debug)
		log_msg(pamh, LOG_DEBUG, "version %s: %s", FLOWSLOT_VERSION, gate_phase_name[phase]);
	/* A dry run's admission lets only another dry run through: a real gate still gates. */
	if (m != NULL && o.slot.dry_run) {
		opt_wipe(&o);
		return gate_again(pamh, phase, m, o.debug);
	}
	/* Auth and account run under sshd's and login's deadlines; the session under none. */
	if (!o.max_wait_set && phase != GATE_SESSION)
		o.slot.max_wait_us = OPT_MAX_WAIT_PREAUTH_US;
	rc = gate_get_who(pamh, key_uses_user(o.key), &who);
	if (rc != PAM_SUCCESS) {
		opt_wipe(&o);
		if (rc == PAM_CONV_AGAIN)
			return PAM_INCOMPLETE;
		log_msg(pamh, LOG_ERR, "cannot get the user name for the key: %s",
			pam_strerror(pamh, rc));
		return PAM_CONV_ERR;
	}
	g.summary = gate_summary(&o, &who);
	g.style = gate_drops_info(&who, phase) ? PAM_ERROR_MSG : PAM_TEXT_INFO;
	key_expand(o.key, who.service, who.user, who.rhost, key, sizeof(key));
	gate_place(&who, &place);
	/* max_wait counts from here: not the time the user took to type a name. */
	g.begun_us = fstime_mono_us();
	g.q.limit_us = g.begun_us + o.slot.max_wait_us;
	v = gate_reserve(pamh, &o, key, &place, &res, &g.via, g.q.limit_us);
	g.q.local = strcmp(g.via, "local") == 0;
	if (v != SLOT_UNAVAILABLE)
		gate_settings(pamh, &o, key, &res);
	v = gate_bound(&g, &res, v);
	/* The password is not kept through the wait: each renewal reads it afresh. */
	opt_wipe(&o);
	return gate_conclude(&g, &res, v);
}

PAM_EXTERN int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
	return gate(pamh, flags, argc, argv, GATE_AUTH);
}

PAM_EXTERN int pam_sm_acct_mgmt(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
	return gate(pamh, flags, argc, argv, GATE_ACCOUNT);
}

PAM_EXTERN int pam_sm_open_session(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
	return gate(pamh, flags, argc, argv, GATE_SESSION);
}

PAM_EXTERN int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
	(void)pamh, (void)flags, (void)argc, (void)argv;
	return PAM_IGNORE;
}

PAM_EXTERN int pam_sm_close_session(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
	(void)pamh, (void)flags, (void)argc, (void)argv;
	return PAM_IGNORE;
}

PAM_EXTERN int pam_sm_chauthtok(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
	(void)pamh, (void)flags, (void)argc, (void)argv;
	return PAM_IGNORE;
}
