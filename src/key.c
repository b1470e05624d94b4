#include "flowslot/key.h"

#include <string.h>

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
		if (*p == '\0' || strchr("suh%", *p) == NULL) {
			*why = "'%' must be followed by s, u, h or %";
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

/* Appends n bytes to out at *len; returns -1 when they would not fit with the NUL. */
static int key_put(char *out, size_t outsz, size_t *len, const char *s, size_t n)
{
	if (n >= outsz - *len)
		return -1;
	memcpy(out + *len, s, n);
	*len += n;
	out[*len] = '\0';
	return 0;
}

static int key_put_encoded(char *out, size_t outsz, size_t *len, const char *value)
{
	static const char hex[] = "0123456789ABCDEF";

	for (const unsigned char *p = (const unsigned char *)value; value && *p; p++) {
		char enc[3] = { '%', hex[*p >> 4], hex[*p & 0xf] };
		int rc = key_byte_is_plain(*p) ? key_put(out, outsz, len, (const char *)p, 1)
					       : key_put(out, outsz, len, enc, sizeof(enc));
		if (rc != 0)
			return -1;
	}
	return 0;
}

int key_expand(const char *tmpl, const char *service, const char *user, const char *rhost,
	       char *out, size_t outsz)
{
	size_t len = 0;
	int rc = 0;

	if (outsz == 0)
		return -1;
	out[0] = '\0';
	for (const char *p = tmpl; rc == 0 && *p != '\0'; p++) {
		if (*p != '%') {
			rc = key_put(out, outsz, &len, p, 1);
			continue;
		}
		switch (*++p) {
		case 's':
			rc = key_put_encoded(out, outsz, &len, service);
			break;
		case 'u':
			rc = key_put_encoded(out, outsz, &len, user);
			break;
		case 'h':
			rc = key_put_encoded(out, outsz, &len, rhost);
			break;
		case '%':
			rc = key_put(out, outsz, &len, "%", 1);
			break;
		default: /* a template that key_check_template refused */
			rc = -1;
			break;
		}
	}
	return rc == 0 ? (int)len : -1;
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
