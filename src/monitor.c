// SPDX-License-Identifier: BSD-2-Clause
/*
 * Monitors: control socket clients that said `monitor` (smcproxyctl
 * monitor, as relayctl monitor) and from then on only receive events,
 * one JSON object a line, {"v":1,"event":"link_down","time":"...",
 * "peer":"b","lgr":3,"link":1,"message":"..."}, until they go away.  The
 * places where things happen (peer.c, lgr.c, smcproxyd.c, control.c)
 * raise them with monitor_event(), beside the line they log; this file
 * keeps the subscribers and writes each event to all of them.
 *
 * Events come from any thread.  One raised on the main thread is written
 * at once; one raised on a worker waits in a queue (at most
 * MONITOR_QUEUE_MAX, the rest counted as lost and announced) for the main
 * thread, which an event_active() wakes.  Nothing is rendered while
 * nobody monitors.
 *
 * A monitor never holds the daemon up: its socket is non-blocking, and
 * one that leaves more than MONITOR_OUT_MAX bytes unsent, or takes nothing
 * for MONITOR_STUCK_S while events wait, is dropped, logged and counted
 * (monitor_dropped).  At most MONITOR_MAX monitors, of which an ordinary
 * user has at most MONITOR_MAX_PER_UID and all of them together leave
 * MONITOR_RESERVED to root and the daemon's own user.  A monitor sends
 * nothing: any request it sends is answered with an error, and the
 * connection closed.
 */
#include <sys/queue.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <jansson.h>

#include "smcproxyd.h"
#include "monitor.h"

struct monitor {
	TAILQ_ENTRY(monitor) entry;
	struct bufferevent *bev;
	uid_t uid;
	pid_t pid;
	bool unlimited; /* root or the daemon's user */
	bool closing;	/* told why; closed once that went out */
};

struct monitor_line {
	STAILQ_ENTRY(monitor_line) entry;
	size_t len;
	char text[];
};

static const char *const monitor_names[MONITOR_N] = {
#define X(id, name) [MONITOR_##id] = name,
	MONITOR_EVENTS(X)
#undef X
};

static TAILQ_HEAD(, monitor) monitors = TAILQ_HEAD_INITIALIZER(monitors);
static int monitor_n; /* written on the main thread, read on any */
static pthread_t monitor_thread;
static struct event *monitor_wake; /* under monitor_lock */

/* Events raised on workers, for the main thread. */
static pthread_mutex_t monitor_lock = PTHREAD_MUTEX_INITIALIZER;
static STAILQ_HEAD(, monitor_line)
	monitor_queue = STAILQ_HEAD_INITIALIZER(monitor_queue);
static int monitor_queued;
static uint64_t monitor_lost;

static void
monitor_free(struct monitor *m)
{
	TAILQ_REMOVE(&monitors, m, entry);
	__atomic_store_n(&monitor_n, monitor_n - 1, __ATOMIC_RELAXED);
	bufferevent_free(m->bev);
	free(m);
}

/* Drop a monitor that does not take its events: logged and counted. */
static void
monitor_drop(struct monitor *m, const char *why)
{
	log_warnx("monitor: client uid %u pid %d %s; dropping it",
		  (unsigned int)m->uid, (int)m->pid, why);
	STATS_INC(stats_main(), monitor_dropped);
	monitor_free(m);
}

/* Write one line to every monitor, dropping those with no room for it. */
static void
monitor_write(const char *text, size_t len)
{
	struct monitor *m, *next;
	struct evbuffer *out;

	TAILQ_FOREACH_SAFE(m, &monitors, entry, next) {
		if (m->closing)
			continue;
		out = bufferevent_get_output(m->bev);
		if (evbuffer_get_length(out) + len > MONITOR_OUT_MAX) {
			monitor_drop(m, "left 64 KiB of events unread");
			continue;
		}
		evbuffer_add(out, text, len);
	}
}

/* An event as its line, newline included; NULL out of memory. */
static struct monitor_line *
monitor_render(enum monitor_event ev, const struct log_where *w,
	       const char *msg, json_int_t count)
{
	struct monitor_line *line;
	struct timespec ts;
	char at[40];
	struct tm tm;
	json_t *o;
	char *s;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(at + strlen(at), sizeof(at) - strlen(at), ".%03ldZ",
		 ts.tv_nsec / 1000000);
	o = json_pack("{s:i, s:s, s:s}", "v", CONTROL_VERSION, "event",
		      monitor_names[ev], "time", at);
	if (o == NULL)
		return NULL;
	if (w != NULL && w->peer != NULL)
		json_object_set_new(o, "peer", json_string(w->peer));
	if (w != NULL && w->rule != NULL)
		json_object_set_new(o, "rule", json_string(w->rule));
	if (w != NULL && w->lgr >= 0)
		json_object_set_new(o, "lgr", json_integer(w->lgr));
	if (w != NULL && w->link >= 0)
		json_object_set_new(o, "link", json_integer(w->link));
	if (count >= 0)
		json_object_set_new(o, "count", json_integer(count));
	json_object_set_new(o, "message", json_string(msg));
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (s == NULL)
		return NULL;
	line = malloc(sizeof(*line) + strlen(s) + 2);
	if (line != NULL) {
		line->len = strlen(s) + 1;
		memcpy(line->text, s, line->len - 1);
		line->text[line->len - 1] = '\n';
		line->text[line->len] = '\0';
	}
	free(s);
	return line;
}

/* On the main thread: write what the workers raised, in order. */
static void
monitor_flush(void)
{
	STAILQ_HEAD(, monitor_line) q = STAILQ_HEAD_INITIALIZER(q);
	struct monitor_line *line, *lost = NULL;
	char msg[96];
	uint64_t n;

	pthread_mutex_lock(&monitor_lock);
	STAILQ_CONCAT(&q, &monitor_queue);
	monitor_queued = 0;
	n = monitor_lost;
	monitor_lost = 0;
	pthread_mutex_unlock(&monitor_lock);
	if (n > 0) {
		STATS_ADD(stats_main(), monitor_events_lost, (int64_t)n);
		snprintf(msg, sizeof(msg),
			 "%llu events lost: more than %d waited to be sent",
			 (unsigned long long)n, MONITOR_QUEUE_MAX);
		lost = monitor_render(MONITOR_EVENTS_LOST, NULL, msg,
				      (json_int_t)n);
	}
	while ((line = STAILQ_FIRST(&q)) != NULL) {
		STAILQ_REMOVE_HEAD(&q, entry);
		monitor_write(line->text, line->len);
		free(line);
	}
	if (lost != NULL)
		monitor_write(lost->text, lost->len);
	free(lost);
}

static void
monitor_wake_cb(evutil_socket_t fd, short what, void *arg)
{
	monitor_flush();
}

/**
 * monitor_event() - Raise event @ev about what @w names (NULL: nothing in
 * particular), @fmt saying it for people: every monitor gets it.  Any
 * thread; costs nothing while nobody monitors.
 */
void
monitor_event(enum monitor_event ev, const struct log_where *w, const char *fmt,
	      ...)
{
	struct monitor_line *line;
	char msg[1024];
	va_list ap;
	bool main;

	if (__atomic_load_n(&monitor_n, __ATOMIC_RELAXED) == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	line = monitor_render(ev, w, msg, -1);
	main = pthread_equal(pthread_self(), monitor_thread);
	pthread_mutex_lock(&monitor_lock);
	if (line == NULL || monitor_queued >= MONITOR_QUEUE_MAX) {
		monitor_lost++;
		free(line);
	} else {
		STAILQ_INSERT_TAIL(&monitor_queue, line, entry);
		monitor_queued++;
	}
	if (!main && monitor_wake != NULL)
		event_active(monitor_wake, EV_TIMEOUT, 0);
	pthread_mutex_unlock(&monitor_lock);
	if (main)
		monitor_flush();
}

/* A monitor sent something: it gets an error, then the connection ends. */
static void
monitor_read_cb(struct bufferevent *bev, void *arg)
{
	static const char refused[] =
		"{\"v\":1,\"ok\":false,\"error\":\"this connection is a "
		"monitor: it takes no requests (close it to stop "
		"monitoring)\"}\n";
	struct monitor *m = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t len = evbuffer_get_length(in), i;
	const char *p;

	p = (const char *)evbuffer_pullup(in, (ssize_t)len);
	for (i = 0; p != NULL && i < len; i++)
		if (p[i] != '\n' && p[i] != '\r' && p[i] != ' ' && p[i] != '\t')
			break;
	evbuffer_drain(in, len);
	if (m->closing || p == NULL || i == len)
		return;
	log_debug("monitor: client uid %u pid %d sent a request; closing",
		  (unsigned int)m->uid, (int)m->pid);
	m->closing = true;
	bufferevent_disable(bev, EV_READ);
	evbuffer_add(bufferevent_get_output(bev), refused, sizeof(refused) - 1);
}

/* All written: a monitor told why it ends goes now. */
static void
monitor_write_cb(struct bufferevent *bev, void *arg)
{
	struct monitor *m = arg;

	if (m->closing)
		monitor_free(m);
}

static void
monitor_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct monitor *m = arg;

	if ((what & BEV_EVENT_TIMEOUT) && !m->closing) {
		monitor_drop(m, "took no event for 30 s");
		return;
	}
	log_debug("monitor: client uid %u pid %d gone", (unsigned int)m->uid,
		  (int)m->pid);
	monitor_free(m);
}

/**
 * monitor_room() - Whether a client of @uid (@unlimited: root or the
 * daemon's user) may become a monitor now; if not, why in @why.
 * Return: 0, or -EUSERS.
 */
int
monitor_room(uid_t uid, bool unlimited, char *why, size_t len)
{
	const struct monitor *m;
	int mine = 0, limited = 0;

	if (monitor_n >= MONITOR_MAX) {
		snprintf(why, len, "too many monitors (at most %d)",
			 MONITOR_MAX);
		return -EUSERS;
	}
	if (unlimited)
		return 0;
	TAILQ_FOREACH(m, &monitors, entry) {
		if (m->uid == uid)
			mine++;
		if (!m->unlimited)
			limited++;
	}
	if (mine >= MONITOR_MAX_PER_UID) {
		snprintf(why, len,
			 "too many monitors for uid %u (at most %d per user)",
			 (unsigned int)uid, MONITOR_MAX_PER_UID);
		return -EUSERS;
	}
	if (limited >= MONITOR_MAX - MONITOR_RESERVED) {
		snprintf(why, len,
			 "too many monitors (the last %d are kept for root "
			 "and the daemon's user)",
			 MONITOR_RESERVED);
		return -EUSERS;
	}
	return 0;
}

/**
 * monitor_subscribe() - Make the control client on @bev (taken: it is
 * this file's to free from now on) a monitor; monitor_room() said yes.
 * What is already in its output goes out first.
 * Return: 0, or -ENOMEM (@bev freed).
 */
int
monitor_subscribe(struct bufferevent *bev, uid_t uid, pid_t pid, bool unlimited)
{
	struct timeval stuck = {MONITOR_STUCK_S, 0};
	struct monitor *m;

	m = calloc(1, sizeof(*m));
	if (m == NULL) {
		bufferevent_free(bev);
		return -ENOMEM;
	}
	m->bev = bev;
	m->uid = uid;
	m->pid = pid;
	m->unlimited = unlimited;
	TAILQ_INSERT_TAIL(&monitors, m, entry);
	__atomic_store_n(&monitor_n, monitor_n + 1, __ATOMIC_RELAXED);
	bufferevent_setcb(bev, monitor_read_cb, monitor_write_cb,
			  monitor_event_cb, m);
	bufferevent_set_timeouts(bev, NULL, &stuck);
	bufferevent_enable(bev, EV_READ | EV_WRITE);
	log_debug("monitor: client uid %u pid %d monitors", (unsigned int)uid,
		  (int)pid);
	/* requests that came with `monitor` */
	if (evbuffer_get_length(bufferevent_get_input(bev)) > 0)
		monitor_read_cb(bev, m);
	return 0;
}

/* How many monitors there are. */
int
monitor_count(void)
{
	return monitor_n;
}

/**
 * monitor_init() - Serve monitors on @base, the main thread's event_base;
 * the calling thread is the main thread.
 * Return: 0, or -ENOMEM.
 */
int
monitor_init(struct event_base *base)
{
	struct event *ev;

	monitor_thread = pthread_self();
	ev = event_new(base, -1, 0, monitor_wake_cb, NULL);
	if (ev == NULL)
		return -ENOMEM;
	pthread_mutex_lock(&monitor_lock);
	monitor_wake = ev;
	pthread_mutex_unlock(&monitor_lock);
	return 0;
}

/**
 * monitor_shutdown() - Write out what is left for each monitor (the
 * `shutdown` event) as far as its socket takes it, and close them.
 */
void
monitor_shutdown(void)
{
	struct monitor_line *line;
	struct evbuffer *out;
	struct monitor *m;

	monitor_flush();
	TAILQ_FOREACH(m, &monitors, entry) {
		/* as control_shutdown: the front of the output is frozen */
		out = bufferevent_get_output(m->bev);
		evbuffer_unfreeze(out, 1);
		(void)evbuffer_write(out, bufferevent_getfd(m->bev));
	}
	while (!TAILQ_EMPTY(&monitors))
		monitor_free(TAILQ_FIRST(&monitors));
	pthread_mutex_lock(&monitor_lock);
	if (monitor_wake != NULL)
		event_free(monitor_wake);
	monitor_wake = NULL;
	while ((line = STAILQ_FIRST(&monitor_queue)) != NULL) {
		STAILQ_REMOVE_HEAD(&monitor_queue, entry);
		free(line);
	}
	monitor_queued = 0;
	monitor_lost = 0;
	pthread_mutex_unlock(&monitor_lock);
}
