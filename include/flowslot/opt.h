/* SPDX-License-Identifier: BSD-3-Clause */
/* Module options: defaults, parsing and validation. */
#ifndef FLOWSLOT_OPT_H
#define FLOWSLOT_OPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <security/pam_modules.h>

#include "flowslot/conf.h"
#include "flowslot/pressure.h"
#include "flowslot/slot.h"
#include "flowslot/url.h"

#define OPT_KEY_MAX 256
#define OPT_DIR_MAX 255
#define OPT_SYNC_REPLICAS_MAX 16
#define OPT_PER_HOST_MAX 1000
#define OPT_CONF_DEFAULT "/etc/security/pam_flowslot.conf"
#define OPT_NAME_MAX 64 /* an option's name, known or not */
/* Unknown options of the configuration file named one by one; those past are counted. */
#define OPT_UNKNOWN_MAX 8
/* Each is warned of at most once in this long on a host (opt_warn_unknown). */
#define OPT_UNKNOWN_PERIOD_S 3600
/* Default max_wait in the session phase, which has no deadline: long enough to queue the
   storm we exist for, 20 logins at once 7 s apart (the last waits 133 s), with room to spare. */
#define OPT_MAX_WAIT_SESSION_US INT64_C(300000000)
/* Default max_wait before the session phase: under login(1)'s LOGIN_TIMEOUT (60 s) and,
   with sshd's padding, under its LoginGraceTime (120 s). */
#define OPT_MAX_WAIT_PREAUTH_US INT64_C(45000000)

enum opt_fallback {
	OPT_FALLBACK_LOCAL,
	OPT_FALLBACK_OPEN,
	OPT_FALLBACK_CLOSED,
};

/* tls_verify=: what a rediss:// server's certificate must show. There is no mode that checks
   nothing. */
enum opt_tls_verify {
	OPT_TLS_VERIFY_NAME, /* the chain, and the name */
	OPT_TLS_VERIFY_CA,   /* the chain alone */
};

/* The tls_* options (src/tls.c), for the rediss schemes. */
struct opt_tls {
	char ca_file[OPT_DIR_MAX + 1]; /* both empty: the system's trust store */
	char ca_dir[OPT_DIR_MAX + 1];
	char cert_file[OPT_DIR_MAX + 1]; /* empty: no client certificate */
	char key_file[OPT_DIR_MAX + 1];
	char server_name[URL_HOST_MAX + 1]; /* empty: each node's host */
	enum opt_tls_verify verify;
	bool set; /* any tls_* option was given */
};

/* What the waiting user is told: the live countdown, one line after the wait, or whichever
   fits the login (summary under sshd, whose messages never reach the client live). */
enum opt_messages {
	OPT_MESSAGES_AUTO,
	OPT_MESSAGES_LIVE,
	OPT_MESSAGES_SUMMARY,
};

/* How a refusal is sent: as an error (PAM_ERROR_MSG), or as information (PAM_TEXT_INFO) for
   front ends that put their own words in place of an error, as lightdm-gtk-greeter does. */
enum opt_refusal {
	OPT_REFUSAL_ERROR,
	OPT_REFUSAL_INFO,
};

/* The pressure hold (src/hold.c). */
struct opt_pressure {
	int64_t limit_ppm[PRESSURE_RES_N]; /* 0: not watched; all 0: no hold */
	char dir[OPT_DIR_MAX + 1];
	bool refuse; /* pressure_timeout=refuse */
};

/* What is wrong with an option or a file, by kind: each counts as an error (errors). */
enum opt_problem {
	OPT_PROBLEM_UNKNOWN,  /* an unknown module argument */
	OPT_PROBLEM_VALUE,    /* a bad value for a known option */
	OPT_PROBLEM_LINE,     /* a line of the configuration file that is no NAME=VALUE nor flag */
	OPT_PROBLEM_UNSAFE,   /* a file refused for its owner, mode or type, or a symbolic link */
	OPT_PROBLEM_FILE,     /* a file missing, unreadable, too large, or without a password */
	OPT_PROBLEM_CONFLICT, /* options that do not go together (opt_check) */
	OPT_PROBLEM_N,
};

/* An unknown option of the configuration file: not an error, but ignored with a warning. */
struct opt_unknown {
	char where[CONF_WHERE_MAX]; /* "file:line" */
	size_t file_len;	    /* the file's part of where */
	char name[OPT_NAME_MAX + 1]; /* empty: not to be shown (it may be a password) */
};

struct opt {
	struct url url;
	char key[OPT_KEY_MAX + 1]; /* the template, before expansion */
	struct slot_params slot;
	int64_t timeout_us;
	int64_t countdown_us; /* 0: no countdown */
	enum opt_messages messages;
	enum opt_refusal refusal;
	enum opt_fallback fallback;
	char state_dir[OPT_DIR_MAX + 1];
	char password_file[OPT_DIR_MAX + 1]; /* empty: none */
	char sentinel_password[URL_PASSWORD_MAX + 1];
	bool has_sentinel_password;
	int sync_replicas; /* 0: do not wait for replicas */
	int per_host;	   /* places one remote host may hold at once; 0: no limit */
	struct opt_pressure pressure;
	struct opt_tls tls;
	bool max_wait_set; /* false: the default, which depends on the phase */
	bool quiet;
	bool debug;
	int errors;	    /* bad options seen; any sends the login to the fallback */
	int problems[OPT_PROBLEM_N]; /* the errors by kind */
	int n_unknown; /* unknown options in the configuration file: ignored, not errors */
	struct opt_unknown unknown[OPT_UNKNOWN_MAX]; /* the first of them */
};

/* Whether o asks for the pressure hold. */
bool opt_pressure_on(const struct opt *o);

/* Fills o with the defaults. */
void opt_defaults(struct opt *o);

/* Applies one "name=value" or flag. A bad one is logged by name, counted in o->errors, and
   leaves the option as it was. Returns 0, or -1 for a bad one. pamh may be NULL. */
int opt_set(struct opt *o, const pam_handle_t *pamh, const char *arg);

/* Counts an error of kind p. */
void opt_count_problem(struct opt *o, enum opt_problem p);

/* The length of the name arg starts with: 1 to OPT_NAME_MAX letters and '_', then '=' or the
   end of arg; 0 when arg starts with no such name. */
size_t opt_name_len(const char *arg);

/* Whether the module knows the option named by the first len bytes of name. */
bool opt_known_name(const char *name, size_t len);

/* Whether arg is one of the flags (quiet, debug, dry_run). */
bool opt_is_flag(const char *arg);

/* Logs each unknown option of the configuration file (o->unknown) at LOG_WARNING, by file,
   line and name. With limited, each file and name at most once in OPT_UNKNOWN_PERIOD_S on
   the host, by a stamp in o->state_dir (once_due); else every one. */
void opt_warn_unknown(const struct opt *o, const pam_handle_t *pamh, bool limited);

/* Defaults, then the configuration file (conf=, or OPT_CONF_DEFAULT if it exists), then every
   module argument in order, then password_file=, then opt_check. The file's unknown options
   are only noted: the caller warns of them (opt_warn_unknown), once state_dir is known. */
void opt_parse(struct opt *o, const pam_handle_t *pamh, int argc, const char **argv);

/* The configuration file the module arguments name (the last conf=), or NULL for none. */
const char *opt_conf_path(int argc, const char **argv);

/* opt_parse in two halves, for flowslotctl to say a file's problems once: defaults and the
   configuration file; then the rest (the module arguments, password_file=, opt_check). */
void opt_parse_file(struct opt *o, const pam_handle_t *pamh, int argc, const char **argv);
void opt_parse_rest(struct opt *o, const pam_handle_t *pamh, int argc, const char **argv);

/* The steps of opt_parse, for a caller that holds the files' text itself (fuzz/fuzz_opt.c). */

/* Applies the text of the configuration file name (len bytes and a NUL, changed in place) as
   opt_parse applies the file: each line through opt_set, but for an unknown NAME=VALUE (any
   printable NAME without a blank) or bare NAME (letters and '_'), noted in o->unknown and
   ignored; and a password it gives refused when mode lets others read it. */
void opt_conf_text(struct opt *o, const pam_handle_t *pamh, const char *name, char *text,
		   size_t len, mode_t mode);

/* Applies the module arguments, and warns of secrets among them. */
void opt_parse_args(struct opt *o, const pam_handle_t *pamh, int argc, const char **argv);

/* Takes the url's password from text, the first n bytes of password_file= (see
   conf_parse_secret). */
void opt_password_text(struct opt *o, const pam_handle_t *pamh, const char *text, size_t n);

/* Counts and logs a user named without a password, a client certificate without its key (or
   a key without its certificate), tls_verify=ca with no CA named, and tls_* options on a url
   without TLS. */
void opt_check(struct opt *o, const pam_handle_t *pamh);

/* A DURATION: digits with an optional decimal part and an optional unit ms, s or m (a bare
   number is seconds). Returns 0 and the duration in microseconds, or -1. */
int opt_parse_duration(const char *s, int64_t *out_us);

/* Zeroes what o holds of secrets. */
void opt_wipe(struct opt *o);

#endif
