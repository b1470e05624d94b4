/* SPDX-License-Identifier: BSD-3-Clause */
#include "flowslot/ncache.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "flowslot/lslot.h"
#include "flowslot/trust.h"
#include "flowslot/url.h"

#define NCACHE_FILE_MAX 300 /* "host:port\n" */

void ncache_name(const struct url *u, const char *what, char *out, size_t outsz)
{
	char port[16];
	uint64_t hash = lslot_hash(LSLOT_HASH_START,
				   u->backend == URL_BACKEND_SENTINEL ? "sentinel" : "cluster");

	/* Two stacks that name other servers must not share entries. */
	for (int i = 0; i < u->n_nodes; i++) {
		snprintf(port, sizeof(port), ",%d", u->nodes[i].port);
		hash = lslot_hash(lslot_hash(hash, u->nodes[i].host), port);
	}
	hash = lslot_hash(hash, u->master);
	snprintf(out, outsz, "node.%016" PRIx64 ".%s", hash, what);
}

/* Whether an entry written at mtime is at most max_age_s old. One written later than now
   (the clock was stepped back since) has no age to trust: taken, it would outlive max_age by
   the size of the step. A second's grace, for file times finer than time()'s. */
static bool ncache_fresh(time_t mtime, int max_age_s)
{
	time_t age = time(NULL) - mtime;

	return age >= -1 && age <= max_age_s;
}

int ncache_get(const char *dir, const char *name, int max_age_s, struct url_node *node)
{
	char buf[NCACHE_FILE_MAX + 1];
	struct stat st;
	const char *why; /* unused: a hint that cannot be trusted is no hint */
	ssize_t n = -1;
	int dfd = trust_open_dir(dir, false, &why), fd = -1;

	if (dfd >= 0)
		fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0 && fstat(fd, &st) == 0 && trust_own_file(&st, 022) &&
	    st.st_size <= NCACHE_FILE_MAX &&
	    (max_age_s == 0 || ncache_fresh(st.st_mtime, max_age_s)))
		n = read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	if (n <= 1 || buf[n - 1] != '\n')
		return -1;
	return url_parse_endpoint(buf, (size_t)n - 1, node);
}

int ncache_put(const char *dir, const char *name, const struct url_node *node)
{
	char tmp[NCACHE_NAME_MAX + 48], buf[NCACHE_FILE_MAX + 1];
	const char *why; /* unused, as in ncache_get */
	int len = snprintf(buf, sizeof(buf), "%s:%d\n", node->host, node->port);
	int dfd = trust_open_dir(dir, true, &why), fd = -1;
	unsigned rnd = 0;
	bool stored = false;

	if (dfd < 0)
		return -1;
	/* Written whole under a name of its own, then renamed over the entry: a reader sees the
	   old node or the new one, never half of either. */
	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
		rnd = (unsigned)gettid();
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld.%08x", name, (long)getpid(), rnd);
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		bool written = write(fd, buf, (size_t)len) == len;

		stored = close(fd) == 0 && written && renameat(dfd, tmp, dfd, name) == 0;
		if (!stored)
			unlinkat(dfd, tmp, 0);
	}
	close(dfd);
	return stored ? 0 : -1;
}
