// SPDX-License-Identifier: BSD-2-Clause
/*
 * Logging: stderr in the foreground (the systemd journal picks it up with
 * the priority prefix), syslog otherwise.  Callers put __func__ and the
 * object id in the message themselves.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "smcproxyd.h"

static int log_foreground = 1;
static enum log_level log_current = LOG_LEVEL_INFO;

static const char *const log_names[] = {
	[LOG_LEVEL_ERR] = "error",
	[LOG_LEVEL_WARN] = "warning",
	[LOG_LEVEL_INFO] = "info",
	[LOG_LEVEL_DEBUG] = "debug",
};

/* Start logging; foreground logs go to stderr, else to syslog. */
void
log_init(int foreground, enum log_level level)
{
	log_foreground = foreground;
	log_current = level;
	if (!foreground)
		openlog("smcproxyd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void
log_set_level(enum log_level level)
{
	__atomic_store_n(&log_current, level, __ATOMIC_RELAXED);
}

/* Parse "error", "warning", "info" or "debug"; 0 or -EINVAL. */
int
log_level_parse(const char *name, enum log_level *out)
{
	size_t i;

	for (i = 0; i < sizeof(log_names) / sizeof(log_names[0]); i++) {
		if (strcmp(name, log_names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

bool
log_debug_enabled(void)
{
	return __atomic_load_n(&log_current, __ATOMIC_RELAXED) >=
	       LOG_LEVEL_DEBUG;
}

static void
log_vwrite(enum log_level level, int errnum, const char *fmt, va_list ap)
{
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	char msg[1024];
	int n;

	if (level > __atomic_load_n(&log_current, __ATOMIC_RELAXED))
		return;
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (n < 0)
		return;
	if (errnum && (size_t)n < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - (size_t)n, ": %s",
			 strerror(errnum));
	if (log_foreground)
		fprintf(stderr, "<%d>smcproxyd: %s\n", prio[level], msg);
	else
		syslog(prio[level], "%s", msg);
}

/* Warning with strerror(errno) appended. */
void
log_warn(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_WARN, saved, fmt, ap);
	va_end(ap);
	errno = saved;
}

void
log_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_WARN, 0, fmt, ap);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_INFO, 0, fmt, ap);
	va_end(ap);
}

void
log_debug(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_DEBUG, 0, fmt, ap);
	va_end(ap);
}

/* Startup only: log with strerror(errno) and exit 1. */
void
fatal(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_ERR, saved, fmt, ap);
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_ERR, 0, fmt, ap);
	va_end(ap);
	exit(1);
}
