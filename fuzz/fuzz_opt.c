/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: the module arguments. The input, split on NUL or newline, is argv for
   opt_parse; each line also goes through opt_set on its own, and the whole input (to its first
   NUL) through opt_parse_duration.

   opt_parse reads files: conf= (else OPT_CONF_DEFAULT when it exists) and password_file=.
   Left to itself, the fuzzer would read any path it makes up, and the host's own
   /etc/security/pam_flowslot.conf would change what an input does. Linked with
   -Wl,--wrap=conf_read,--wrap=conf_read_secret (mk/fuzz.mk), the default file is missing, and
   the file that conf= or password_file= names is the input itself, written to a private
   directory (in $TMPDIR, else /dev/shm, else /tmp) for the call and removed after it: 0644
   when the input starts with '#', else 0600. The file checks want root's files, so that part is
   only reached as root. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

#include "flowslot/conf.h"
#include "flowslot/key.h"
#include "flowslot/log.h"
#include "flowslot/opt.h"
#include "flowslot/str.h"
#include "fuzz.h"

#define US_PER_S INT64_C(1000000)
#define DAY_US (86400 * US_PER_S)

void __real_conf_read(struct opt *o, const pam_handle_t *pamh, const char *path, bool required);
int __real_conf_read_secret(const char *path, char *buf, size_t bufsz, const char **why);
void __wrap_conf_read(struct opt *o, const pam_handle_t *pamh, const char *path, bool required);
int __wrap_conf_read_secret(const char *path, char *buf, size_t bufsz, const char **why);

static char dir[PATH_MAX - 16];
static char conf_path[PATH_MAX], secret_path[PATH_MAX];
static const uint8_t *input;
static size_t input_size;

static void remove_dir(void)
{
	unlink(conf_path);
	unlink(secret_path);
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR");

	(void)argc;
	(void)argv;
	fuzz_silence_stderr(); /* every bad option is logged there */
	/* A file per input: tmpfs is three times as fast as ext4 here. */
	if (tmp == NULL || tmp[0] != '/')
		tmp = access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(dir, sizeof(dir), "%s/fuzz_opt.XXXXXX", tmp);
	if (mkdtemp(dir) == NULL) {
		dprintf(STDERR_FILENO, "fuzz_opt: mkdtemp %s: %s\n", dir, strerror(errno));
		exit(1);
	}
	snprintf(conf_path, sizeof(conf_path), "%s/conf", dir);
	snprintf(secret_path, sizeof(secret_path), "%s/secret", dir);
	atexit(remove_dir);
	return 0;
}

static void write_file(const char *path, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	if (fd < 0 || fchmod(fd, mode) != 0 ||
	    (input_size > 0 && write(fd, input, input_size) != (ssize_t)input_size) ||
	    close(fd) != 0) {
		dprintf(STDERR_FILENO, "fuzz_opt: writing %s: %s\n", path, strerror(errno));
		abort();
	}
}

void __wrap_conf_read(struct opt *o, const pam_handle_t *pamh, const char *path, bool required)
{
	if (!required) /* OPT_CONF_DEFAULT: as if missing */
		return;
	if (path[0] != '/') { /* refused before any open */
		__real_conf_read(o, pamh, path, required);
		return;
	}
	write_file(conf_path, input_size > 0 && input[0] == '#' ? 0644 : 0600);
	__real_conf_read(o, pamh, conf_path, required);
	unlink(conf_path);
}

int __wrap_conf_read_secret(const char *path, char *buf, size_t bufsz, const char **why)
{
	int rc;

	if (path[0] != '/')
		return __real_conf_read_secret(path, buf, bufsz, why);
	write_file(secret_path, 0600);
	rc = __real_conf_read_secret(secret_path, buf, bufsz, why);
	unlink(secret_path);
	return rc;
}

/* What opt.h and the README promise of the options, whatever the arguments were. */
static void check_opt(const struct opt *o)
{
	const char *why = NULL;

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
	FUZZ_CHECK(o->origin == NULL); /* only set while a file's line is applied */
	FUZZ_CHECK(o->errors >= 0);
}

static bool url_equal(const struct opt_url *a, const struct opt_url *b)
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
	       a->debug == b->debug && a->origin == b->origin;
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

	opt_parse(&o, NULL, argc, argv);
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
	/* With no file to read, opt_parse is those steps, and the check of the user. */
	if (!reads_conf && seq.password_file[0] == '\0') {
		expected_errors = seq.errors;
		if (seq.url.user[0] != '\0' && !seq.url.has_password)
			expected_errors++;
		FUZZ_CHECK(opt_equal(&seq, &o));
		FUZZ_CHECK(o.errors == expected_errors);
	}

	check_duration(whole);

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
