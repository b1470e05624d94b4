/* SPDX-License-Identifier: BSD-3-Clause */
/* Logging through pam_syslog, or to stderr when there is no PAM handle (tests, tools). */
#ifndef FLOWSLOT_LOG_H
#define FLOWSLOT_LOG_H

#include <stdarg.h>
#include <stddef.h>
#include <syslog.h>

#include <security/pam_modules.h>

void log_msg(const pam_handle_t *pamh, int prio, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void log_vmsg(const pam_handle_t *pamh, int prio, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* Copies untrusted text into out for a log line: bytes outside printable ASCII, and '\',
   become \xNN; what does not fit is cut and marked with "...". Returns out. */
const char *log_escape(const char *in, char *out, size_t outsz);

#endif
