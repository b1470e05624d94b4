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

#include "flowslot/fstime.h"
#include "flowslot/lslot.h"
#include "flowslot/lstore.h"
#include "flowslot/slot.h"
#include "flowslot/str.h"
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

/* Reads the entry name under dir into buf (bufsz bytes, NUL-terminated), if it was written
   in the last max_age_s seconds (0: whenever) and is one line. Returns its length without the
   newline, or -1. */
static ssize_t ncache_read(const char *dir, const char *name, int max_age_s, char *buf,
			   size_t bufsz)
{
	struct stat st;
	const char *why; /* unused: a hint that cannot be trusted is no hint */
	ssize_t n = -1;
	int dfd = trust_open_dir(dir, false, &why), fd = -1;

	if (dfd >= 0)
		fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0 && fstat(fd, &st) == 0 && trust_own_file(&st, 022) &&
	    st.st_size < (off_t)bufsz && (max_age_s == 0 || ncache_fresh(st.st_mtime, max_age_s)))
		n = read(fd, buf, bufsz - 1);
	if (fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	if (n <= 1 || buf[n - 1] != '\n')
		return -1;
	buf[n - 1] = '\0';
	return n - 1;
}

int ncache_get(const char *dir, const char *name, int max_age_s, struct url_node *node)
{
	char buf[NCACHE_FILE_MAX + 1];
	ssize_t n = ncache_read(dir, name, max_age_s, buf, sizeof(buf));

	return n < 0 ? -1 : url_parse_endpoint(buf, (size_t)n, node);
}

/* Stores len bytes of buf as the entry name under dir (created 0700 when missing). */
static int ncache_write(const char *dir, const char *name, const char *buf, int len)
{
	char tmp[NCACHE_NAME_MAX + 48];
	const char *why; /* unused, as in ncache_read */
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

int ncache_put(const char *dir, const char *name, const struct url_node *node)
{
	char buf[NCACHE_FILE_MAX + 1];
	int len = snprintf(buf, sizeof(buf), "%s:%d\n", node->host, node->port);

	return len > 0 && len < (int)sizeof(buf) ? ncache_write(dir, name, buf, len) : -1;
}

void ncache_heard_name(const struct url *u, const char *key, char *out, size_t outsz)
{
	char node[NCACHE_NAME_MAX], where[16];
	uint64_t hash;

	/* The nodes (Sentinel, Cluster), and the server of a direct url, its database and key. */
	ncache_name(u, "heard", node, sizeof(node));
	snprintf(where, sizeof(where), ",%d,%d,", u->port, u->db);
	hash = lslot_hash(lslot_hash(LSLOT_HASH_START, node), u->host);
	hash = lslot_hash(lslot_hash(lslot_hash(hash, u->socket), where), key);
	snprintf(out, outsz, "heard.%016" PRIx64, hash);
}

/* The entry's line: "BOOT NEXT_US", the boot's id and the next slot on its CLOCK_MONOTONIC. */
int64_t ncache_heard_get(const char *dir, const char *name)
{
	char buf[LSTORE_BOOT_MAX + 32], boot[LSTORE_BOOT_MAX + 1], *sp;
	ssize_t n = ncache_read(dir, name, 0, buf, sizeof(buf));
	long long next_us;
	int64_t now_us = fstime_mono_us();

	lstore_boot(boot);
	if (n < 0 || boot[0] == '\0' || (sp = strchr(buf, ' ')) == NULL ||
	    (size_t)(sp - buf) != strlen(boot) || memcmp(buf, boot, strlen(boot)) != 0 ||
	    str_parse_int(sp + 1, 1, INT64_MAX, &next_us) != 0 || next_us <= now_us ||
	    next_us - now_us > SLOT_HORIZON_MAX_US)
		return 0;
	return next_us - now_us;
}

int ncache_heard_put(const char *dir, const char *name, int64_t next_us)
{
	char buf[LSTORE_BOOT_MAX + 32], boot[LSTORE_BOOT_MAX + 1];
	int len;

	lstore_boot(boot);
	if (boot[0] == '\0')
		return -1;
	len = snprintf(buf, sizeof(buf), "%s %" PRId64 "\n", boot, next_us);
	return ncache_write(dir, name, buf, len);
}
