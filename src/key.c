/* SPDX-License-Identifier: BSD-3-Clause */
#include "flowslot/key.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "flowslot/hash.h"

static bool key_byte_is_plain(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       strchr("._:@-", c) != NULL;
}

int key_check_template(const char *tmpl, const char **why)
{
	if (*tmpl == '\0') {
		*why = "empty";
		return -1;
	}
	for (const char *p = tmpl; *p != '\0'; p++) {
		if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f) {
			*why = "only printable ASCII without spaces is allowed";
			return -1;
		}
		if (*p != '%')
			continue;
		p++;
		if (*p == '\0' || strchr("suhH%", *p) == NULL) {
			*why = "'%' must be followed by s, u, h, H or %";
			return -1;
		}
	}
	return 0;
}

bool key_uses_user(const char *tmpl)
{
	for (const char *p = tmpl; *p != '\0'; p++) {
		if (*p == '%' && p[1] != '\0') {
			if (p[1] == 'u')
				return true;
			p++;
		}
	}
	return false;
}

/* Where an expansion goes: whole units (a byte, or a byte's %XX) while they fit, and a hash
   and the length of all of it, so that one too long can be shortened deterministically. */
struct key_sink {
	char *out;
	size_t outsz;
	size_t len;	  /* bytes in out */
	size_t short_len; /* bytes of whole units within outsz - 1 - KEY_HASH_LEN */
	size_t total;	  /* bytes of the whole expansion */
	uint64_t hash;	  /* FNV-1a of the whole expansion */
};

#define KEY_HASH_LEN 17 /* "~" and 16 hex digits */

static void key_put(struct key_sink *k, const char *s, size_t n)
{
	char unit[4];

	memcpy(unit, s, n);
	unit[n] = '\0';
	k->hash = hash_str(k->hash, unit);
	k->total += n;
	if (k->total != k->len + n)
		return;
	if (k->len + n < k->outsz) {
		memcpy(k->out + k->len, s, n);
		k->len += n;
		k->out[k->len] = '\0';
	}
	if (k->len == k->total && k->len + KEY_HASH_LEN < k->outsz)
		k->short_len = k->len;
}

static void key_put_encoded(struct key_sink *k, const char *value)
{
	static const char hex[] = "0123456789ABCDEF";

	for (const unsigned char *p = (const unsigned char *)value; value && *p; p++) {
		char enc[3] = { '%', hex[*p >> 4], hex[*p & 0xf] };

		if (key_byte_is_plain(*p))
			key_put(k, (const char *)p, 1);
		else
			key_put(k, enc, sizeof(enc));
	}
}

int key_expand(const char *tmpl, const char *service, const char *user, const char *rhost,
	       char *out, size_t outsz)
{
	struct key_sink k = { .out = out, .outsz = outsz, .hash = HASH_START };
	char host[HOST_NAME_MAX + 1] = "";

	if (strstr(tmpl, "%H") != NULL && gethostname(host, sizeof(host)) != 0)
		host[0] = '\0';
	host[sizeof(host) - 1] = '\0';
	if (outsz == 0)
		return -1;
	out[0] = '\0';
	for (const char *p = tmpl; *p != '\0'; p++) {
		if (*p != '%') {
			key_put(&k, p, 1);
			continue;
		}
		switch (*++p) {
		case 's':
			key_put_encoded(&k, service);
			break;
		case 'u':
			key_put_encoded(&k, user);
			break;
		case 'h':
			key_put_encoded(&k, rhost);
			break;
		case 'H':
			key_put_encoded(&k, host);
			break;
		case '%':
			key_put(&k, "%", 1);
			break;
		default: /* a template that key_check_template refused */
			return -1;
		}
	}
	if (k.total == k.len)
		return (int)k.len;
	if (outsz <= KEY_HASH_LEN)
		return -1;
	snprintf(out + k.short_len, outsz - k.short_len, "~%016" PRIx64, k.hash);
	return (int)(k.short_len + KEY_HASH_LEN);
}

/* CRC-16/XMODEM, the checksum Redis Cluster spreads keys with. */
static unsigned key_crc16(const char *s, size_t n)
{
	unsigned crc = 0;

	for (size_t i = 0; i < n; i++) {
		crc ^= (unsigned)(unsigned char)s[i] << 8;
		for (int bit = 0; bit < 8; bit++)
			crc = (crc & 0x8000) ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
	}
	return crc;
}

int key_hash_slot(const char *key)
{
	const char *open = strchr(key, '{');
	const char *close = open ? strchr(open + 1, '}') : NULL;

	/* A hash tag: only what is between the first '{' and the next '}', if anything. */
	if (close != NULL && close > open + 1)
		return (int)(key_crc16(open + 1, (size_t)(close - open - 1)) & 16383);
	return (int)(key_crc16(key, strlen(key)) & 16383);
}
