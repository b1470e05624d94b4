/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: the schedule key. The input is four NUL-separated fields: template,
   service, user and rhost (a missing field is NULL). A valid template is expanded, and every
   key, expanded or not, is turned into a local slot file name. */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>

#include "flowslot/hash.h"
#include "flowslot/key.h"
#include "flowslot/lslot.h"
#include "flowslot/opt.h"
#include "fuzz.h"

#define NAME_SIZE (NAME_MAX + 1)
#define NAME_PREFIX "slot."
#define NAME_READABLE_MAX (NAME_SIZE - 1 - 17) /* room left for "~" and 16 hex digits */
#define REF_SIZE_MAX (64 * 1024)

static bool plain(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       (c != '\0' && strchr("._:@-", c) != NULL);
}

static bool upper_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F');
}

/* key.h's rules for a template, written out again. */
static bool ref_template_ok(const char *t)
{
	if (*t == '\0')
		return false;
	for (; *t != '\0'; t++) {
		if ((unsigned char)*t <= ' ' || (unsigned char)*t >= 0x7f)
			return false;
		if (*t == '%' && (t[1] == '\0' || strchr("suhH%", t[1]) == NULL))
			return false;
		if (*t == '%')
			t++;
	}
	return true;
}

/* %H: this host's name, as gethostname gives it. */
static const char *ref_host(void)
{
	static char host[HOST_NAME_MAX + 1];

	if (host[0] == '\0' && gethostname(host, sizeof(host) - 1) != 0)
		host[0] = '\0';
	return host;
}

/* The value a template's %X stands for. */
static const char *ref_value(char x, const char *service, const char *user, const char *rhost)
{
	return x == 's' ? service : x == 'u' ? user : x == 'h' ? rhost : x == 'H' ? ref_host() : NULL;
}

static bool ref_uses_user(const char *t)
{
	for (; *t != '\0'; t++) {
		if (*t == '%' && t[1] == 'u')
			return true;
		if (*t == '%')
			t++;
	}
	return false;
}

static char *ref_put_value(char *o, const char *v)
{
	for (const unsigned char *p = (const unsigned char *)v; v != NULL && *p != '\0'; p++) {
		if (plain(*p))
			*o++ = (char)*p;
		else
			o += sprintf(o, "%%%02X", *p);
	}
	return o;
}

/* The room ref_expand needs, NUL included: each value can take three bytes a byte. */
static size_t ref_size(const char *t, const char *service, const char *user, const char *rhost)
{
	size_t n = 1;

	for (; *t != '\0'; t++) {
		const char *v = NULL;

		if (*t == '%') {
			t++;
			v = ref_value(*t, service, user, rhost);
		}
		n += v != NULL ? 3 * strlen(v) : 1;
	}
	return n;
}

/* The expansion of a valid template, without a size limit, into ref_size bytes. */
static size_t ref_expand(const char *t, const char *service, const char *user, const char *rhost,
			 char *out)
{
	char *o = out;

	for (; *t != '\0'; t++) {
		if (*t != '%') {
			*o++ = *t;
			continue;
		}
		switch (*++t) {
		case 's':
			o = ref_put_value(o, service);
			break;
		case 'u':
			o = ref_put_value(o, user);
			break;
		case 'h':
		case 'H':
			o = ref_put_value(o, ref_value(*t, service, user, rhost));
			break;
		default:
			*o++ = '%';
			break;
		}
	}
	*o = '\0';
	return (size_t)(o - out);
}

static unsigned hex_value(char c)
{
	return c <= '9' ? (unsigned)(c - '0') : (unsigned)(c - 'A' + 10);
}

/* An expanded key holds the template's own bytes (printable ASCII without spaces), and for
   each value its bytes in [A-Za-z0-9._:@-] as they are and every other byte as %XX. Checked
   walking the template and the key together. */
static void check_key_bytes(const char *t, const char *service, const char *user, const char *rhost,
			    const char *key, size_t len)
{
	size_t o = 0;

	FUZZ_CHECK(strlen(key) == len);
	for (size_t i = 0; i < len; i++)
		FUZZ_CHECK((unsigned char)key[i] > ' ' && (unsigned char)key[i] < 0x7f);
	for (; *t != '\0'; t++) {
		const char *v;

		if (*t != '%' || t[1] == '%') {
			FUZZ_CHECK(o < len && key[o] == *t);
			o++;
			t += *t == '%';
			continue;
		}
		t++;
		v = ref_value(*t, service, user, rhost);
		for (const unsigned char *p = (const unsigned char *)v; v != NULL && *p != '\0';
		     p++) {
			if (plain(*p)) {
				FUZZ_CHECK(o < len && key[o] == (char)*p);
				o++;
				continue;
			}
			FUZZ_CHECK(o + 2 < len && key[o] == '%');
			FUZZ_CHECK(upper_hex(key[o + 1]) && upper_hex(key[o + 2]));
			FUZZ_CHECK((hex_value(key[o + 1]) << 4 | hex_value(key[o + 2])) == *p);
			o += 3;
		}
	}
	FUZZ_CHECK(o == len);
}

/* lslot_file_name: "slot." and the key with '/' as %2F while that fits; cut otherwise, with
   "~" and a 64-bit hash in hex at the end. Never a path, never over NAME_MAX. */
static void check_file_name(const char *key)
{
	char *name = malloc(NAME_SIZE); /* exact size: ASan sees a byte past it */
	char *readable = malloc(strlen(NAME_PREFIX) + 3 * strlen(key) + 1);
	char *o;
	size_t len;

	if (name == NULL || readable == NULL)
		abort();
	o = readable + sprintf(readable, "%s", NAME_PREFIX);
	for (const char *p = key; *p != '\0'; p++) {
		if (*p == '/')
			o += sprintf(o, "%%2F");
		else
			*o++ = *p;
	}
	*o = '\0';

	lslot_file_name(key, name, NAME_SIZE);
	FUZZ_CHECK(fuzz_terminated(name, NAME_SIZE));
	len = strlen(name);
	FUZZ_CHECK(len <= NAME_MAX);
	FUZZ_CHECK(strchr(name, '/') == NULL);
	FUZZ_CHECK(strncmp(name, NAME_PREFIX, strlen(NAME_PREFIX)) == 0);
	FUZZ_CHECK(strcmp(name, ".") != 0 && strcmp(name, "..") != 0);
	if (strlen(readable) <= NAME_READABLE_MAX) {
		FUZZ_CHECK(strcmp(name, readable) == 0);
	} else {
		size_t cut = len - 17;

		FUZZ_CHECK(len > 17 && name[cut] == '~');
		for (size_t i = cut + 1; i < len; i++)
			FUZZ_CHECK((name[i] >= '0' && name[i] <= '9') ||
				   (name[i] >= 'a' && name[i] <= 'f'));
		FUZZ_CHECK(cut <= NAME_READABLE_MAX && cut + 3 > NAME_READABLE_MAX);
		FUZZ_CHECK(strncmp(name, readable, cut) == 0);
	}
	free(readable);
	free(name);
}

/* key_expand into a heap buffer of exactly outsz bytes. */
static int expand(const char *t, const char *service, const char *user, const char *rhost,
		  size_t outsz, char **out)
{
	*out = malloc(outsz > 0 ? outsz : 1);
	if (*out == NULL)
		abort();
	return key_expand(t, service, user, rhost, *out, outsz);
}

/* A key cut to fit outsz: a prefix of the whole (ref, ref_len bytes, whose FNV-1a is given),
   cut after whole units, then "~" and the hash in 16 hex digits. */
static void check_cut(const char *out, int n, size_t outsz, const char *ref, uint64_t hash)
{
	char tail[32];
	size_t cut;

	FUZZ_CHECK(n >= 17 && (size_t)n < outsz && strlen(out) == (size_t)n);
	cut = (size_t)n - 17;
	FUZZ_CHECK(cut + 17 + 3 > outsz - 1);
	FUZZ_CHECK(strncmp(out, ref, cut) == 0);
	snprintf(tail, sizeof(tail), "~%016" PRIx64, hash);
	FUZZ_CHECK(strcmp(out + cut, tail) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *field[4] = { NULL, NULL, NULL, NULL };
	size_t nfields = 0, start = 0;
	const char *why = NULL;
	char *out, *ref;
	size_t ref_sz, ref_len;
	uint64_t hash;
	int n;

	for (size_t i = 0; i <= size && nfields < 4; i++) {
		if (i < size && data[i] != '\0')
			continue;
		field[nfields++] = fuzz_cstr(data + start, i - start);
		start = i + 1;
	}
	if (field[0] == NULL)
		field[0] = fuzz_cstr(data, 0);

	/* Any key at all may name a file: the template itself does when its expansion is too
	   long. */
	for (size_t i = 0; i < nfields; i++)
		check_file_name(field[i]);

	if (key_check_template(field[0], &why) != 0) {
		FUZZ_CHECK(!ref_template_ok(field[0]));
		FUZZ_CHECK(why != NULL && why[0] != '\0');
		goto out;
	}
	FUZZ_CHECK(ref_template_ok(field[0]));
	FUZZ_CHECK(key_uses_user(field[0]) == ref_uses_user(field[0]));

	/* A template that repeats a long value can ask for megabytes: it cannot fit (a third
	   of that bound is past OPT_KEY_MAX), and the reference is not worth the time. */
	ref_sz = ref_size(field[0], field[1], field[2], field[3]);
	if (ref_sz > REF_SIZE_MAX) {
		n = expand(field[0], field[1], field[2], field[3], OPT_KEY_MAX + 1, &out);
		FUZZ_CHECK(n > 17 && n <= OPT_KEY_MAX && out[n - 17] == '~');
		free(out);
		goto out;
	}
	ref = malloc(ref_sz);
	if (ref == NULL)
		abort();
	ref_len = ref_expand(field[0], field[1], field[2], field[3], ref);

	/* As pam_flowslot.c does it: OPT_KEY_MAX bytes and the NUL. */
	hash = hash_str(HASH_START, ref);
	n = expand(field[0], field[1], field[2], field[3], OPT_KEY_MAX + 1, &out);
	if (ref_len > OPT_KEY_MAX) {
		check_cut(out, n, OPT_KEY_MAX + 1, ref, hash);
		check_file_name(out);
	} else {
		FUZZ_CHECK(n >= 0 && (size_t)n == ref_len && (size_t)n < OPT_KEY_MAX + 1);
		FUZZ_CHECK(strcmp(out, ref) == 0);
		check_key_bytes(field[0], field[1], field[2], field[3], out, (size_t)n);
		check_file_name(out);
	}
	free(out);

	/* Exactly the room it needs, and one byte less. */
	n = expand(field[0], field[1], field[2], field[3], ref_len + 1, &out);
	FUZZ_CHECK(n >= 0 && (size_t)n == ref_len && strcmp(out, ref) == 0);
	free(out);
	n = expand(field[0], field[1], field[2], field[3], ref_len, &out);
	if (ref_len < 18)
		FUZZ_CHECK(n == -1);
	else
		check_cut(out, n, ref_len, ref, hash);
	free(out);

	free(ref);
out:
	for (size_t i = 0; i < 4; i++)
		free(field[i]);
	return 0;
}
