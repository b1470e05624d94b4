/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Process hygiene of the module inside a real libpam (under pam_wrapper): what an entry point
 * leaves of the host process. Run by tests/suites/hygiene.sh, which starts the Redis servers and
 * writes the service files first (pam_wrapper copies them when the process starts).
 *
 *   hygiene [--threads N] [--interval-ms MS] [--threads-only] SERVICE:CLASS...
 *
 * For every SERVICE, one handle goes through pam_start, pam_authenticate, pam_setcred,
 * pam_acct_mgmt, pam_chauthtok, pam_open_session, pam_close_session, pam_setcred(DELETE) and
 * pam_end, and around each call:
 *   a. the open file descriptors (/proc/self/fd), their targets and their FD_CLOEXEC flags,
 *   b. every signal's disposition (sigaction for 1..NSIG-1), the signal mask, the real-time
 *      interval timer, the umask and the working directory
 * must be as they were. CLASS says what the calls return:
 *   ok      every call PAM_SUCCESS (the gate returns PAM_IGNORE, pam_permit decides)
 *   queue   as ok, and at least one call waited and was told so through the conversation
 *   closed  auth, account and session refused as unavailable (fallback=closed)
 *   refuse  auth, account and session refused (max_wait: the schedule is full); a handle that
 *           was admitted once is not gated again, so only a full schedule refuses them all
 *
 * Then the threads: N threads (16), each with its own handle on service hyg_threads (interval
 * MS, 50), log in at once through pam_authenticate. All must be admitted, most after a wait
 * in the queue, at times at least MS/2 apart; and the process's descriptors must be as
 * before. Service hyg_warm (the same stack on another key) is used from the main thread
 * first, so that pam_wrapper binds its libpam symbols, lazily and without a lock, before any
 * thread runs: that race is pam_wrapper's, and this test is not about it.
 *
 * Output is TAP-like, ending with "N passed, N failed"; the exit status is 0 only if none
 * failed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <security/pam_appl.h>

#define MAX_FDS 256
#define MAX_THREADS 64
#define MSGS_MAX 1024

static int passed, failed, testno;

static void result(bool ok, const char *fmt, ...)
{
	va_list ap;

	testno++;
	if (ok)
		passed++;
	else
		failed++;
	printf("%s %d - ", ok ? "ok" : "not ok", testno);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- a. file descriptors ---- */

struct fd_info {
	int fd;
	int fdflags;
	char target[128];
};

struct fd_set_snap {
	int n;
	struct fd_info fds[MAX_FDS];
};

static int fd_cmp(const void *a, const void *b)
{
	return ((const struct fd_info *)a)->fd - ((const struct fd_info *)b)->fd;
}

static void fds_take(struct fd_set_snap *s)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int self;

	s->n = 0;
	if (d == NULL) {
		perror("hygiene: /proc/self/fd");
		exit(2);
	}
	self = dirfd(d);
	while ((e = readdir(d)) != NULL && s->n < MAX_FDS) {
		struct fd_info *f = &s->fds[s->n];
		char link[64];
		ssize_t len;

		if (e->d_name[0] == '.')
			continue;
		f->fd = atoi(e->d_name);
		if (f->fd == self)
			continue;
		f->fdflags = fcntl(f->fd, F_GETFD);
		snprintf(link, sizeof(link), "/proc/self/fd/%d", f->fd);
		len = readlink(link, f->target, sizeof(f->target) - 1);
		f->target[len < 0 ? 0 : len] = '\0';
		s->n++;
	}
	closedir(d);
	qsort(s->fds, (size_t)s->n, sizeof(s->fds[0]), fd_cmp);
}

/* Describes what differs in why; returns true if nothing does. */
static bool fds_same(const struct fd_set_snap *a, const struct fd_set_snap *b, char *why,
		     size_t whysz)
{
	int i = 0, j = 0;
	size_t o = 0;

	why[0] = '\0';
	while (i < a->n || j < b->n) {
		const struct fd_info *x = i < a->n ? &a->fds[i] : NULL;
		const struct fd_info *y = j < b->n ? &b->fds[j] : NULL;
		int w = 0;

		if (y == NULL || (x != NULL && x->fd < y->fd)) {
			w = snprintf(why + o, whysz - o, " closed %d (%s);", x->fd, x->target);
			i++;
		} else if (x == NULL || y->fd < x->fd) {
			w = snprintf(why + o, whysz - o, " leaked %d (%s%s);", y->fd, y->target,
				     (y->fdflags & FD_CLOEXEC) ? "" : ", not close-on-exec");
			j++;
		} else {
			if (x->fdflags != y->fdflags || strcmp(x->target, y->target) != 0)
				w = snprintf(why + o, whysz - o, " changed %d (%s %#x -> %s %#x);",
					     x->fd, x->target, x->fdflags, y->target, y->fdflags);
			i++;
			j++;
		}
		if (w > 0 && o + (size_t)w < whysz)
			o += (size_t)w;
	}
	return o == 0;
}

/* ---- b. signals and the rest of the process state an entry point could change ---- */

struct sig_snap {
	int rc[NSIG];
	int err[NSIG];
	struct sigaction sa[NSIG];
	sigset_t mask;
	struct itimerval itimer;
	mode_t umask;
	char cwd[PATH_MAX];
};

static void sigs_take(struct sig_snap *s)
{
	memset(s, 0, sizeof(*s));
	for (int sig = 1; sig < NSIG; sig++) {
		errno = 0;
		s->rc[sig] = sigaction(sig, NULL, &s->sa[sig]);
		s->err[sig] = errno;
	}
	pthread_sigmask(SIG_BLOCK, NULL, &s->mask);
	getitimer(ITIMER_REAL, &s->itimer);
	s->umask = umask(022);
	umask(s->umask);
	if (getcwd(s->cwd, sizeof(s->cwd)) == NULL)
		s->cwd[0] = '\0';
}

static bool sigsets_equal(const sigset_t *a, const sigset_t *b)
{
	for (int sig = 1; sig < NSIG; sig++)
		if (sigismember(a, sig) != sigismember(b, sig))
			return false;
	return true;
}

static bool sigs_same(const struct sig_snap *a, const struct sig_snap *b, char *why, size_t whysz)
{
	size_t o = 0;
	int w;

#define WHY(...)                                                                                   \
	do {                                                                                       \
		w = snprintf(why + o, whysz - o, __VA_ARGS__);                                     \
		if (w > 0 && o + (size_t)w < whysz)                                                \
			o += (size_t)w;                                                            \
	} while (0)

	why[0] = '\0';
	for (int sig = 1; sig < NSIG; sig++) {
		const struct sigaction *x = &a->sa[sig], *y = &b->sa[sig];

		if (a->rc[sig] != b->rc[sig] || a->err[sig] != b->err[sig])
			WHY(" sigaction(%d) now returns %d/%d;", sig, b->rc[sig], b->err[sig]);
		else if (a->rc[sig] == 0 &&
			 ((void *)x->sa_handler != (void *)y->sa_handler ||
			  x->sa_flags != y->sa_flags || !sigsets_equal(&x->sa_mask, &y->sa_mask)))
			WHY(" signal %d (%s): handler %p flags %#x -> handler %p flags %#x;", sig,
			    strsignal(sig), (void *)x->sa_handler, (unsigned)x->sa_flags,
			    (void *)y->sa_handler, (unsigned)y->sa_flags);
	}
	if (!sigsets_equal(&a->mask, &b->mask))
		WHY(" the signal mask changed;");
	if (memcmp(&a->itimer.it_interval, &b->itimer.it_interval, sizeof(struct timeval)) != 0 ||
	    (b->itimer.it_value.tv_sec | b->itimer.it_value.tv_usec) != 0)
		WHY(" ITIMER_REAL is set;");
	if (a->umask != b->umask)
		WHY(" umask %#o -> %#o;", (unsigned)a->umask, (unsigned)b->umask);
	if (strcmp(a->cwd, b->cwd) != 0)
		WHY(" cwd %s -> %s;", a->cwd, b->cwd);
#undef WHY
	return o == 0;
}

/* ---- the conversation: collects what the module says, per handle ---- */

struct talk {
	char msgs[MSGS_MAX];
	size_t len;
	int infos;
	int position; /* from the first "Login queue" line: 1 for "next", 0 for none */
};

static int conv(int n, const struct pam_message **msg, struct pam_response **resp, void *data)
{
	struct talk *t = data;
	struct pam_response *r;

	if (n <= 0 || n > PAM_MAX_NUM_MSG)
		return PAM_CONV_ERR;
	r = calloc((size_t)n, sizeof(*r));
	if (r == NULL)
		return PAM_BUF_ERR;
	for (int i = 0; i < n; i++) {
		const char *m = msg[i]->msg ? msg[i]->msg : "";
		int k;

		switch (msg[i]->msg_style) {
		case PAM_TEXT_INFO:
		case PAM_ERROR_MSG:
			if (msg[i]->msg_style == PAM_TEXT_INFO)
				t->infos++;
			if (t->position == 0 && strncmp(m, "Login queue: you are ", 21) == 0 &&
			    sscanf(m + 21, "number %d", &t->position) != 1)
				t->position = 1; /* "you are next" */
			k = snprintf(t->msgs + t->len, sizeof(t->msgs) - t->len, "%s|", m);
			if (k > 0 && t->len + (size_t)k < sizeof(t->msgs))
				t->len += (size_t)k;
			break;
		default: /* the user is given to pam_start: nothing should prompt */
			free(r);
			return PAM_CONV_ERR;
		}
	}
	*resp = r;
	return PAM_SUCCESS;
}

/* ---- a + b: every entry point of one service, one handle ---- */

enum call {
	C_START,
	C_AUTH,
	C_SETCRED,
	C_ACCT,
	C_CHAUTHTOK,
	C_OPEN,
	C_CLOSE,
	C_DELCRED,
	C_END,
	C_COUNT
};

static const char *const call_name[C_COUNT] = {
	"pam_start",	     "pam_authenticate",    "pam_setcred(ESTABLISH)",
	"pam_acct_mgmt",     "pam_chauthtok",	    "pam_open_session",
	"pam_close_session", "pam_setcred(DELETE)", "pam_end",
};

/* pam_setcred replays the auth chain as pam_authenticate left it, and pam_close_session the
   session chain as pam_open_session left it: after a refusal there, libpam ends the chain with
   PAM_PERM_DENIED (its PAM_MUST_FAIL_CODE), whatever the modules return now. */
static int expected_rc(const char *class, enum call c)
{
	bool closed = strcmp(class, "closed") == 0, refuse = strcmp(class, "refuse") == 0;

	if (!closed && !refuse)
		return PAM_SUCCESS;
	switch (c) {
	case C_AUTH:
		return closed ? PAM_AUTHINFO_UNAVAIL : PAM_AUTH_ERR;
	case C_OPEN:
		return PAM_SESSION_ERR;
	case C_ACCT:
	case C_SETCRED:
	case C_CLOSE:
	case C_DELCRED:
		return PAM_PERM_DENIED;
	default:
		return PAM_SUCCESS;
	}
}

static void check_service(const char *service, const char *class)
{
	static struct fd_set_snap fd0, fd1;
	static struct sig_snap sg0, sg1;
	struct talk talk = { .len = 0 };
	struct pam_conv pc = { conv, &talk };
	pam_handle_t *h = NULL;
	char why[2048];
	char user[160];
	int bad_fds = 0, bad_sigs = 0, bad_rc = 0;

	snprintf(user, sizeof(user), "u_%s", service);
	for (int c = 0; c < C_COUNT; c++) {
		int rc = PAM_SYSTEM_ERR;

		fds_take(&fd0);
		sigs_take(&sg0);
		switch ((enum call)c) {
		case C_START:
			rc = pam_start(service, user, &pc, &h);
			break;
		case C_AUTH:
			rc = pam_authenticate(h, 0);
			break;
		case C_SETCRED:
			rc = pam_setcred(h, PAM_ESTABLISH_CRED);
			break;
		case C_ACCT:
			rc = pam_acct_mgmt(h, 0);
			break;
		case C_CHAUTHTOK:
			rc = pam_chauthtok(h, 0);
			break;
		case C_OPEN:
			rc = pam_open_session(h, 0);
			break;
		case C_CLOSE:
			rc = pam_close_session(h, 0);
			break;
		case C_DELCRED:
			rc = pam_setcred(h, PAM_DELETE_CRED);
			break;
		case C_END:
			rc = pam_end(h, PAM_SUCCESS);
			h = NULL;
			break;
		case C_COUNT:
			break;
		}
		fds_take(&fd1);
		sigs_take(&sg1);
		if (!fds_same(&fd0, &fd1, why, sizeof(why))) {
			bad_fds++;
			result(false, "fds: %s: %s:%s", service, call_name[c], why);
		}
		if (!sigs_same(&sg0, &sg1, why, sizeof(why))) {
			bad_sigs++;
			result(false, "signals: %s: %s:%s", service, call_name[c], why);
		}
		if (rc != expected_rc(class, (enum call)c)) {
			bad_rc++;
			result(false, "%s: %s returned %d (%s), not %d", service, call_name[c], rc,
			       pam_strerror(h, rc), expected_rc(class, (enum call)c));
		}
		if (c == C_START && rc != PAM_SUCCESS)
			return;
	}
	if (bad_fds == 0)
		result(true, "fds: %s: no descriptor opened, closed or changed by any of %d calls",
		       service, C_COUNT);
	if (bad_sigs == 0)
		result(true,
		       "signals: %s: dispositions, mask, timer, umask and cwd unchanged by "
		       "any of %d calls",
		       service, C_COUNT);
	if (bad_rc == 0)
		result(true, "%s: every call returned what class \"%s\" expects", service, class);
	if (strcmp(class, "queue") == 0)
		/* Told its place; the turn is told only 2 s or more after the line before. */
		result(talk.infos > 0 && strstr(talk.msgs, "Login queue: you are ") != NULL,
		       "%s: a call waited in the queue and was told (%d messages: %.200s)", service,
		       talk.infos, talk.msgs);
}

/* ---- c. threads ---- */

struct login {
	int idx;
	char user[32];
	pthread_barrier_t *go;
	struct talk talk;
	int rc_start, rc_auth, rc_end;
	int64_t admitted_ns;
};

static void *login_thread(void *arg)
{
	struct login *l = arg;
	struct pam_conv pc = { conv, &l->talk };
	pam_handle_t *h = NULL;

	l->rc_start = pam_start("hyg_threads", l->user, &pc, &h);
	pthread_barrier_wait(l->go);
	if (l->rc_start != PAM_SUCCESS)
		return NULL;
	l->rc_auth = pam_authenticate(h, 0);
	l->admitted_ns = mono_ns();
	l->rc_end = pam_end(h, l->rc_auth);
	return NULL;
}

static int login_by_time(const void *a, const void *b)
{
	const struct login *x = *(const struct login *const *)a;
	const struct login *y = *(const struct login *const *)b;

	return (x->admitted_ns > y->admitted_ns) - (x->admitted_ns < y->admitted_ns);
}

/* Logins from the main thread, on a key of their own, until one has waited and been told so
   (the second, unless the first took longer than an interval). Binds what pam_wrapper binds
   lazily (see the top of the file), pam_vprompt included. */
static void warm_up(void)
{
	for (int i = 0; i < 20; i++) {
		struct talk talk = { .len = 0 };
		struct pam_conv pc = { conv, &talk };
		pam_handle_t *h = NULL;
		int rc = pam_start("hyg_warm", "warm", &pc, &h);

		if (rc == PAM_SUCCESS)
			rc = pam_authenticate(h, 0);
		pam_end(h, rc);
		if (rc != PAM_SUCCESS) {
			result(false, "warm-up login on hyg_warm: %d", rc);
			return;
		}
		if (talk.position > 0)
			return;
	}
	result(false, "warm-up logins on hyg_warm: none waited");
}

static void check_threads(int n, int interval_ms)
{
	static struct fd_set_snap fd0, fd1;
	static struct login logins[MAX_THREADS];
	struct login *order[MAX_THREADS];
	pthread_t tid[MAX_THREADS];
	pthread_barrier_t go;
	char why[2048];
	int64_t t0, min_gap = INT64_MAX;
	int admitted = 0, queued = 0, started = 0;
	int last_place = 0, distinct = 0;
	bool in_order = true;

	warm_up();
	fds_take(&fd0);
	pthread_barrier_init(&go, NULL, (unsigned)n + 1);
	for (int i = 0; i < n; i++) {
		logins[i].idx = i;
		logins[i].go = &go;
		snprintf(logins[i].user, sizeof(logins[i].user), "thread%02d", i + 1);
		if (pthread_create(&tid[i], NULL, login_thread, &logins[i]) != 0) {
			perror("hygiene: pthread_create");
			exit(2);
		}
	}
	t0 = mono_ns(); /* no thread passes the barrier before this */
	pthread_barrier_wait(&go);
	for (int i = 0; i < n; i++)
		pthread_join(tid[i], NULL);
	pthread_barrier_destroy(&go);
	fds_take(&fd1);

	for (int i = 0; i < n; i++) {
		order[i] = &logins[i];
		started += logins[i].rc_start == PAM_SUCCESS;
		admitted += logins[i].rc_start == PAM_SUCCESS && logins[i].rc_auth == PAM_SUCCESS;
		queued += logins[i].talk.position > 0;
	}
	qsort(order, (size_t)n, sizeof(order[0]), login_by_time);
	for (int i = 0; i < n; i++) {
		const struct login *l = order[i];

		printf("# %s: pam_authenticate %d, admitted at +%.1f ms, place told %d\n", l->user,
		       l->rc_auth, (double)(l->admitted_ns - t0) / 1e6, l->talk.position);
		if (i > 0) {
			int64_t gap = l->admitted_ns - order[i - 1]->admitted_ns;

			if (gap < min_gap)
				min_gap = gap;
		}
		/* Whoever waited was admitted in the order of the place told. The place is
		   1 + the wait in whole intervals when reserved (src/slot.lua). */
		if (l->talk.position > 0) {
			if (l->talk.position < last_place)
				in_order = false;
			distinct += l->talk.position != last_place;
			last_place = l->talk.position;
		}
	}
	result(started == n, "threads: %d of %d pam_start succeeded", started, n);
	result(admitted == n, "threads: %d of %d concurrent logins admitted", admitted, n);
	result(queued >= n / 2, "threads: most waited in the queue (%d of %d were told a place)",
	       queued, n);
	result(n < 2 || min_gap >= (int64_t)interval_ms * 1000000 / 2,
	       "threads: admissions distinct and at least %d ms apart (closest %.1f ms)",
	       interval_ms / 2, n < 2 ? 0.0 : (double)min_gap / 1e6);
	/* Not a test: a reservation more than an interval behind the one before it (a loaded
	   machine, a sanitizer's report) is rightly told a lower place. */
	printf("# threads: %s the order of the places told (%d distinct places)\n",
	       in_order ? "admitted in" : "NOT admitted in", distinct);
	result(fds_same(&fd0, &fd1, why, sizeof(why)),
	       "threads: no descriptor left behind by %d threads' logins:%s", n, why);
}

int main(int argc, char **argv)
{
	static struct sig_snap sg0, sg1;
	int threads = 16, interval_ms = 50;
	bool threads_only = false;
	char why[2048];
	int i;

	for (i = 1; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
		if (strcmp(argv[i], "--threads-only") == 0)
			threads_only = true;
		else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (strcmp(argv[i], "--interval-ms") == 0 && i + 1 < argc)
			interval_ms = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: hygiene [--threads N] [--interval-ms MS] "
					"[--threads-only] SERVICE:CLASS...\n");
			return 2;
		}
	}
	if (threads < 1 || threads > MAX_THREADS || interval_ms < 1) {
		fprintf(stderr, "hygiene: --threads 1..%d, --interval-ms 1..\n", MAX_THREADS);
		return 2;
	}
	sigs_take(&sg0);
	for (; !threads_only && i < argc; i++) {
		char service[128];
		const char *colon = strchr(argv[i], ':');

		if (colon == NULL || (size_t)(colon - argv[i]) >= sizeof(service)) {
			fprintf(stderr, "hygiene: SERVICE:CLASS, not %s\n", argv[i]);
			return 2;
		}
		memcpy(service, argv[i], (size_t)(colon - argv[i]));
		service[colon - argv[i]] = '\0';
		check_service(service, colon + 1);
	}
	check_threads(threads, interval_ms);
	sigs_take(&sg1);
	result(sigs_same(&sg0, &sg1, why, sizeof(why)), "signals: the whole run changed nothing:%s",
	       why);
	printf("%d passed, %d failed\n", passed, failed);
	return failed == 0 ? 0 : 1;
}
