/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: the module arguments and the configuration file. The input, split on NUL
   or newline, is argv; each line also goes through opt_set on its own, and the whole input (to
   its first NUL) through opt_parse_duration.

   opt_parse reads files: conf= (else OPT_CONF_DEFAULT when it exists) and password_file=.
   Left to itself, the fuzzer would read any path it makes up, and the host's own
   /etc/security/pam_flowslot.conf would change what an input does. So the steps of opt_parse
   run here one by one, with the files' text from the input instead: the default file is
   missing, the file that conf= names holds the input (mode 0644 when the input starts with
   '#', else 0600), and so does password_file=. The whole input also goes through conf_parse,
   whose lines must come out trimmed. */
#include "flowslot/conf.h"
#include "flowslot/key.h"
#include "flowslot/log.h"
#include "flowslot/opt.h"
#include "flowslot/str.h"
#include "fuzz.h"

#define US_PER_S INT64_C(1000000)
#define DAY_US (86400 * US_PER_S)

static const uint8_t *input;
static size_t input_size;
static char conf_name[] = "/fuzz.conf"; /* what conf_parse names the whole input */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_silence_stderr(); /* every bad option is logged there */
	return 0;
}

/* The first n bytes of the input, and a NUL, in a heap block of their own. */
static char *input_text(size_t n)
{
	char *text = malloc(n + 1);

	if (text == NULL)
		abort();
	if (n > 0)
		memcpy(text, input, n);
	text[n] = '\0';
	return text;
}

/* opt_parse, with the files' text from the input. */
static void parse(struct opt *o, int argc, const char **argv)
{
	const char *conf = NULL, *v;
	char *text;

	opt_defaults(o);
	for (int i = 0; i < argc; i++)
		if ((v = str_skip_prefix(argv[i], "conf=")) != NULL)
			conf = v;
	if (conf != NULL && conf[0] == '/' && input_size <= CONF_SIZE_MAX) {
		text = input_text(input_size);
		opt_conf_text(o, NULL, conf, text, input_size,
			      input_size > 0 && input[0] == '#' ? 0644 : 0600);
		free(text);
	} else if (conf != NULL) { /* refused, as opt_parse refuses it: relative, or too large */
		opt_count_problem(o, OPT_PROBLEM_FILE);
	}
	opt_parse_args(o, NULL, argc, argv);
	if (o->password_file[0] != '\0') {
		size_t n = input_size < CONF_SECRET_MAX + 1 ? input_size : CONF_SECRET_MAX + 1;

		text = input_text(n);
		opt_password_text(o, NULL, text, n);
		free(text);
	}
	opt_check(o, NULL);
}

/* conf_parse's callback: a line reaches it trimmed, joined at its '=', from the named file. */
static void check_line(void *ctx, const char *where, const char *line)
{
	const char *eq = strchr(line, '=');

	FUZZ_CHECK(strncmp(where, ctx, strlen(ctx)) == 0);
	FUZZ_CHECK(where[strlen(ctx)] == ':');
	FUZZ_CHECK(line[0] != '\0' && line[0] != '#' && line[0] != ' ' && line[0] != '\t');
	FUZZ_CHECK(strchr(line, '\n') == NULL);
	FUZZ_CHECK(strchr(" \t\r", line[strlen(line) - 1]) == NULL);
	FUZZ_CHECK(eq == NULL || eq == line || strchr(" \t", eq[-1]) == NULL);
	FUZZ_CHECK(eq == NULL || strcspn(line, " \t") >= (size_t)(eq - line));
}

/* What opt.h and the README promise of the options, whatever the arguments were. */
static void check_opt(const struct opt *o)
{
	const char *why = NULL;
	int kinds = 0;

	fuzz_check_url(&o->url);
	FUZZ_CHECK(fuzz_terminated(o->key, sizeof(o->key)));
	FUZZ_CHECK(strlen(o->key) <= OPT_KEY_MAX);
	FUZZ_CHECK(key_check_template(o->key, &why) == 0);
	FUZZ_CHECK(o->slot.interval_us >= 1000 && o->slot.interval_us <= 3600 * US_PER_S);
	FUZZ_CHECK(o->slot.max_wait_us >= 0 && o->slot.max_wait_us <= 3600 * US_PER_S);
	FUZZ_CHECK(o->slot.burst >= 1 && o->slot.burst <= 1000);
	FUZZ_CHECK(o->timeout_us >= 1000 && o->timeout_us <= 60 * US_PER_S);
	FUZZ_CHECK(o->countdown_us == 0 ||
		   (o->countdown_us >= 100000 && o->countdown_us <= 3600 * US_PER_S));
	FUZZ_CHECK(o->fallback == OPT_FALLBACK_LOCAL || o->fallback == OPT_FALLBACK_OPEN ||
		   o->fallback == OPT_FALLBACK_CLOSED);
	FUZZ_CHECK(fuzz_terminated(o->state_dir, sizeof(o->state_dir)));
	FUZZ_CHECK(o->state_dir[0] == '/');
	FUZZ_CHECK(fuzz_terminated(o->password_file, sizeof(o->password_file)));
	FUZZ_CHECK(o->password_file[0] == '\0' || o->password_file[0] == '/');
	/* A server name never accepts a subdomain nor holds an empty label. */
	FUZZ_CHECK(o->tls.server_name[0] != '.');
	FUZZ_CHECK(strstr(o->tls.server_name, "..") == NULL);
	FUZZ_CHECK(o->errors >= 0);
	/* Every error has its kind, and an unknown option of the file is none. */
	for (int p = 0; p < OPT_PROBLEM_N; p++)
		kinds += o->problems[p];
	FUZZ_CHECK(kinds == o->errors);
	FUZZ_CHECK(o->n_unknown >= 0);
}

static bool url_equal(const struct url *a, const struct url *b)
{
	return a->backend == b->backend && strcmp(a->host, b->host) == 0 && a->port == b->port &&
	       strcmp(a->socket, b->socket) == 0 && strcmp(a->user, b->user) == 0 &&
	       strcmp(a->password, b->password) == 0 && a->has_password == b->has_password &&
	       a->db == b->db;
}

/* Field by field: struct padding is not compared. errors is left to the caller. */
static bool opt_equal(const struct opt *a, const struct opt *b)
{
	return url_equal(&a->url, &b->url) && strcmp(a->key, b->key) == 0 &&
	       a->slot.interval_us == b->slot.interval_us &&
	       a->slot.max_wait_us == b->slot.max_wait_us && a->slot.burst == b->slot.burst &&
	       a->timeout_us == b->timeout_us && a->countdown_us == b->countdown_us &&
	       a->fallback == b->fallback && strcmp(a->state_dir, b->state_dir) == 0 &&
	       strcmp(a->password_file, b->password_file) == 0 && a->quiet == b->quiet &&
	       a->debug == b->debug;
}

/* A DURATION by the README's grammar, [0-9]+(\.[0-9]+)?(ms|s|m)?, valued in long double
   microseconds. Returns false when s does not follow the grammar. */
static bool ref_duration(const char *s, long double *us)
{
	long double v = 0, scale = 1;
	const char *p = s;

	if (*p < '0' || *p > '9')
		return false;
	for (; *p >= '0' && *p <= '9'; p++)
		v = v * 10 + (*p - '0');
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return false;
		for (; *p >= '0' && *p <= '9'; p++) {
			scale /= 10;
			v += (*p - '0') * scale;
		}
	}
	if (strcmp(p, "ms") == 0)
		*us = v * 1e3L;
	else if (strcmp(p, "s") == 0 || *p == '\0')
		*us = v * 1e6L;
	else if (strcmp(p, "m") == 0)
		*us = v * 60e6L;
	else
		return false;
	return true;
}

static void check_duration(const char *s)
{
	int64_t us = -12345;
	long double ref = 0;
	bool grammar = ref_duration(s, &ref);
	int rc = opt_parse_duration(s, &us);

	if (rc != 0) {
		FUZZ_CHECK(rc == -1);
		FUZZ_CHECK(us == -12345);
		/* Refused although well formed: only for more than a day (with a microsecond of
		   slack for the rounding at the boundary). */
		FUZZ_CHECK(!grammar || ref > (long double)DAY_US - 1);
		return;
	}
	FUZZ_CHECK(grammar);
	FUZZ_CHECK(us >= 0 && us <= DAY_US);
	/* To the nearest microsecond: within one of the exact value. */
	FUZZ_CHECK(ref - 1 <= (long double)us && (long double)us <= ref + 1);
}

/* One argument through opt_set: accepted, it leaves errors alone; refused, it counts one error
   and leaves every option as it was. */
static void check_set(struct opt *o, const char *arg)
{
	struct opt before = *o;
	int rc = opt_set(o, NULL, arg);

	check_opt(o);
	if (rc == 0) {
		FUZZ_CHECK(o->errors == before.errors);
	} else {
		FUZZ_CHECK(rc == -1);
		FUZZ_CHECK(o->errors == before.errors + 1);
		FUZZ_CHECK(opt_equal(o, &before));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *whole = fuzz_cstr(data, size);
	char **args = malloc((size + 1) * sizeof(*args));
	const char **argv = malloc((size + 1) * sizeof(*argv));
	struct opt o, seq, fresh;
	char *text;
	bool reads_conf = false;
	int argc = 0, expected_errors;
	size_t start = 0;

	if (args == NULL || argv == NULL)
		abort();
	input = data;
	input_size = size;
	/* Each argument in its own heap block of its exact size, so that ASan sees a read past
	   its end. */
	for (size_t i = 0; i <= size; i++) {
		if (i < size && data[i] != '\0' && data[i] != '\n')
			continue;
		args[argc] = fuzz_cstr(data + start, i - start);
		argv[argc] = args[argc];
		reads_conf |= str_skip_prefix(argv[argc], "conf=") != NULL;
		argc++;
		start = i + 1;
	}

	parse(&o, argc, argv);
	check_opt(&o);
	/* A user with no password to go with it sends the login to the fallback. */
	if (o.url.user[0] != '\0' && !o.url.has_password)
		FUZZ_CHECK(o.errors > 0);

	/* The same arguments one by one: each on the defaults, and all in sequence. */
	opt_defaults(&seq);
	check_opt(&seq);
	FUZZ_CHECK(seq.errors == 0);
	for (int i = 0; i < argc; i++) {
		opt_defaults(&fresh);
		check_set(&fresh, argv[i]);
		check_set(&seq, argv[i]);
	}
	/* With no file to read, opt_parse is those steps, and opt_check. */
	if (!reads_conf && seq.password_file[0] == '\0') {
		expected_errors = seq.errors;
		if (seq.url.user[0] != '\0' && !seq.url.has_password)
			expected_errors++;
		/* opt_check's other rules: a client certificate with its key, tls_verify=ca
		   only with a CA named, and tls_* options only with a TLS url. */
		if ((seq.tls.cert_file[0] == '\0') != (seq.tls.key_file[0] == '\0'))
			expected_errors++;
		if (seq.tls.verify == OPT_TLS_VERIFY_CA && seq.tls.ca_file[0] == '\0' &&
		    seq.tls.ca_dir[0] == '\0')
			expected_errors++;
		if (seq.tls.set && !seq.url.tls)
			expected_errors++;
		FUZZ_CHECK(opt_equal(&seq, &o));
		FUZZ_CHECK(o.errors == expected_errors);
	}

	check_duration(whole);
	text = input_text(size);
	conf_parse(NULL, conf_name, text, size, check_line, conf_name);
	free(text);

	opt_wipe(&o);
	FUZZ_CHECK(o.url.password[0] == '\0');
	opt_wipe(&seq);
	opt_wipe(&fresh);
	for (int i = 0; i < argc; i++)
		free(args[i]);
	free(args);
	free(argv);
	free(whole);
	return 0;
}
