/* SPDX-License-Identifier: BSD-3-Clause */
#include "flowslot/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <security/pam_ext.h>

void log_vmsg(const pam_handle_t *pamh, int prio, const char *fmt, va_list ap)
{
	if (pamh != NULL) {
		pam_vsyslog(pamh, prio, fmt, ap);
	} else {
		fputs("pam_flowslot: ", stderr);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
}

void log_msg(const pam_handle_t *pamh, int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(pamh, prio, fmt, ap);
	va_end(ap);
}

const char *log_escape(const char *in, char *out, size_t outsz)
{
	static const char more[] = "...";
	size_t o = 0;

	if (outsz < sizeof(more) + 4)
		return "";
	for (const unsigned char *p = (const unsigned char *)in; *p != '\0'; p++) {
		int printable = *p >= 0x20 && *p < 0x7f && *p != '\\';
		size_t need = printable ? 1 : 4;

		if (o + need + sizeof(more) > outsz) {
			memcpy(out + o, more, sizeof(more));
			return out;
		}
		if (printable)
			out[o++] = (char)*p;
		else
			o += (size_t)snprintf(out + o, 5, "\\x%02x", *p);
	}
	out[o] = '\0';
	return out;
}
