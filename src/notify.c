// SPDX-License-Identifier: BSD-2-Clause
/*
 * Telling systemd (Type=notify) how the daemon is, through libsystemd's
 * sd_notify(): READY=1, RELOADING=1, STOPPING=1 with EXTEND_TIMEOUT_USEC=
 * for the drain, WATCHDOG=1, and a STATUS= line for "systemctl status".
 * Nothing happens when not under a service manager.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <systemd/sd-daemon.h>

#include "smcproxyd.h"

/* Send state to the service manager; silently nothing when not under one. */
void
notify_send(const char *state)
{
	int rc;

	rc = sd_notify(0, state);
	if (rc < 0)
		log_warnx("sd_notify: %s", strerror(-rc));
}

/* notify_send() with a formatted state. */
static void __attribute__((format(printf, 1, 2)))
notify_sendf(const char *fmt, ...)
{
	char state[512];
	va_list ap;

	if (getenv("NOTIFY_SOCKET") == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(state, sizeof(state), fmt, ap);
	va_end(ap);
	notify_send(state);
}

/*
 * The stop begins: STOPPING=1, and the drain's timeout (plus the time to
 * close what is left and exit) as EXTEND_TIMEOUT_USEC=, so that a unit's
 * TimeoutStopSec= shorter than shutdown_timeout does not kill the drain.
 */
void
notify_stopping(int drain_s)
{
	notify_sendf("STOPPING=1\nEXTEND_TIMEOUT_USEC=%llu\nSTATUS=draining "
		     "(up to %d s)",
		     ((unsigned long long)drain_s + NOTIFY_STOP_SLACK_S) *
			     1000000ULL,
		     drain_s);
}

/*
 * The watchdog's period in microseconds when the unit has WatchdogSec=
 * (for this process), else 0.
 */
unsigned long long
notify_watchdog_usec(void)
{
	uint64_t usec = 0;

	if (sd_watchdog_enabled(0, &usec) <= 0)
		return 0;
	return usec;
}

/* Every worker answered: the daemon is alive. */
void
notify_watchdog(void)
{
	notify_send("WATCHDOG=1");
}

static const char *
notify_plural(int n)
{
	return n == 1 ? "" : "s";
}

/* "3 rules, 1 peer, 2 link groups": what conf serves, as STATUS= text. */
static void
notify_status_text(const struct conf *conf, char *buf, size_t len)
{
	struct peer_info info;
	int i, lgrs = 0;

	for (i = 0; i < conf->npeers; i++)
		if (peer_info(conf->peers[i].name, &info) == 0)
			lgrs += info.lgrs;
	snprintf(buf, len, "%d rule%s, %d export%s, %d peer%s, %d link group%s",
		 conf->nrules, notify_plural(conf->nrules), conf->nexports,
		 notify_plural(conf->nexports), conf->npeers,
		 notify_plural(conf->npeers), lgrs, notify_plural(lgrs));
}

/* The STATUS= last sent, and what goes before the counts ("" or why the
 * last reload failed): notify_status() sends again only what changed. */
static char notify_last[512], notify_prefix[256];

/* Serving conf: READY=1 with what it serves as STATUS=. */
void
notify_ready(const struct conf *conf)
{
	char status[256];

	notify_status_text(conf, status, sizeof(status));
	notify_prefix[0] = '\0';
	snprintf(notify_last, sizeof(notify_last), "%s", status);
	notify_sendf("READY=1\nSTATUS=%s", status);
}

/*
 * Now and then while serving conf: STATUS= again when what it says
 * changed (link groups come and go), so that "systemctl status" is not
 * stuck at what was true at the start or the last reload.
 */
void
notify_status(const struct conf *conf)
{
	char status[256], line[512];

	notify_status_text(conf, status, sizeof(status));
	snprintf(line, sizeof(line), "%s%s", notify_prefix, status);
	if (strcmp(line, notify_last) == 0)
		return;
	snprintf(notify_last, sizeof(notify_last), "%s", line);
	notify_sendf("STATUS=%s", line);
}

/*
 * A reload starts: RELOADING=1 with the CLOCK_MONOTONIC time that systemd
 * (Type=notify-reload) matches against the reload it asked for.
 */
void
notify_reloading(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	notify_sendf("RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading",
		     (unsigned long long)now.tv_sec * 1000000ULL +
			     (unsigned long long)now.tv_nsec / 1000);
}

/* A reload was refused: still serving conf, STATUS= says why (one line). */
void
notify_reload_failed(const struct conf *conf, const char *why)
{
	char status[256];

	notify_status_text(conf, status, sizeof(status));
	snprintf(notify_prefix, sizeof(notify_prefix), "reload failed: %.*s; ",
		 (int)strcspn(why, "\n"), why);
	snprintf(notify_last, sizeof(notify_last), "%s%s", notify_prefix,
		 status);
	notify_sendf("READY=1\nSTATUS=%s", notify_last);
}
