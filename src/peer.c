// SPDX-License-Identifier: BSD-2-Clause
/*
 * The peer registry: what the whole process knows about each configured
 * peer, whichever worker learnt it, keyed by the peer's name so that it
 * outlives a reload that keeps the name.  lgr.c tells it when link groups
 * to a peer come and go and when RDMA to it fails (the back-off before
 * RDMA is tried again lives here), and the rule side's TCP connections
 * to the peer port whether they got through and why not; `show peers`
 * and the connection log read it.  When that changes how the peer is
 * reached (down, up over RDMA, up over the fallback) it logs the
 * PEER_UP or PEER_DOWN event.  Any thread: one mutex guards it, and nothing on a data path
 * takes it per byte.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "smcproxyd.h"
#include "clc_wire.h"
#include "monitor.h"

#define PEER_BUSY_BACKOFF_MS 2000 /* after a peer's DECLINE MEM (busy) */
#define PEER_ORIGIN_RETRY_MS (600 * 1000) /* peer_takes_origin */

struct peer_state {
	SLIST_ENTRY(peer_state) entry;
	char name[CONF_NAME_MAX + 1];
	int lgrs;	 /* active link groups */
	int server_lgrs; /* groups it set up with us (lgr_server_new), any state */
	int export_conns; /* connections it holds on our exports (export.c) */
	uint32_t reason;
	bool by_peer;
	uint64_t fallback_ms; /* when it last fell back (monotonic); 0: never */
	uint64_t backoff_until_ms;
	uint64_t backoff_ms; /* the next period */
	int reachable;	     /* 1 the last try got through, 0 not, -1 none */
	char error[PEER_ERROR_MAX];
	char error_code[PEER_CODE_MAX];
	time_t error_at;   /* wall clock, for people */
	uint64_t error_ms; /* monotonic, for its age */
	bool draining;	   /* the operator's: no new connections to it */
	uint64_t origin_refused_ms; /* its hello refused the client's address */
};

static pthread_mutex_t peer_lock = PTHREAD_MUTEX_INITIALIZER;
static SLIST_HEAD(, peer_state) peer_list = SLIST_HEAD_INITIALIZER(peer_list);

/* The peer's entry, created if need be; call with peer_lock held. */
static struct peer_state *
peer_find(const char *name, bool create)
{
	struct peer_state *p;

	SLIST_FOREACH(p, &peer_list, entry)
		if (strcmp(p->name, name) == 0)
			return p;
	if (!create)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return NULL;
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->reachable = -1;
	SLIST_INSERT_HEAD(&peer_list, p, entry);
	return p;
}

/* How the peer is reached now, as smcproxyd_peer_up says it. */
enum peer_reach { PEER_DOWN, PEER_UP_RDMA, PEER_UP_FALLBACK };

static enum peer_reach
peer_reach(const struct peer_state *p)
{
	if (p == NULL)
		return PEER_DOWN;
	if (p->lgrs > 0)
		return PEER_UP_RDMA;
	return p->reachable == 1 ? PEER_UP_FALLBACK : PEER_DOWN;
}

/* A change of p's reach since was, to log once peer_lock is let go. */
struct peer_change {
	enum peer_reach now;
	bool changed;
	char name[CONF_NAME_MAX + 1];
	char error[PEER_ERROR_MAX];
};

/* Note p's change from was (peer_lock held). */
static void
peer_changed(const struct peer_state *p, enum peer_reach was,
	     struct peer_change *ch)
{
	ch->now = peer_reach(p);
	ch->changed = p != NULL && ch->now != was;
	if (!ch->changed)
		return;
	snprintf(ch->name, sizeof(ch->name), "%s", p->name);
	snprintf(ch->error, sizeof(ch->error), "%s", p->error);
}

/*
 * The PEER_UP and PEER_DOWN events (peer_lock let go): up over RDMA or the
 * fallback, or down with the error that says why.
 */
static void
peer_log_change(const struct peer_change *ch)
{
	struct log_where w = {ch->name, NULL, -1, -1};
	char msg[CONF_NAME_MAX + PEER_ERROR_MAX + 32];

	if (!ch->changed)
		return;
	if (ch->now == PEER_DOWN) {
		snprintf(msg, sizeof(msg), "peer %s: down: %s", ch->name,
			 ch->error[0] != '\0' ? ch->error : "not reached");
		log_event(LOG_EV_PEER_DOWN, LOG_LEVEL_WARN, &w, "%s", msg);
		monitor_event(MONITOR_PEER_DOWN, &w, "%s", msg);
		return;
	}
	snprintf(msg, sizeof(msg), "peer %s: up over %s", ch->name,
		 ch->now == PEER_UP_RDMA ? "rdma" : "the fallback");
	log_event(LOG_EV_PEER_UP, LOG_LEVEL_INFO, &w, "%s", msg);
	monitor_event(MONITOR_PEER_UP, &w, "%s", msg);
}

/*
 * An active link group to the peer came (+1) or went (-1).  One coming
 * forgets the last failure; the next back-off starts at first_backoff_ms.
 */
void
peer_lgr_count(const char *name, int delta, uint64_t first_backoff_ms)
{
	struct peer_change ch;
	struct peer_state *p;
	enum peer_reach was;

	pthread_mutex_lock(&peer_lock);
	p = peer_find(name, true);
	was = peer_reach(p);
	if (p != NULL) {
		p->lgrs += delta;
		if (delta > 0) {
			/* RDMA works: forget the last failure */
			p->reason = 0;
			p->by_peer = false;
			p->backoff_until_ms = 0;
			p->backoff_ms = first_backoff_ms;
			p->reachable = 1;
		}
	}
	peer_changed(p, was, &ch);
	pthread_mutex_unlock(&peer_lock);
	peer_log_change(&ch);
}

/* Keep the error, its code and when; with peer_lock held. */
static void
peer_note(struct peer_state *p, const char *code, const char *fmt, va_list ap)
{
	vsnprintf(p->error, sizeof(p->error), fmt, ap);
	snprintf(p->error_code, sizeof(p->error_code), "%s",
		 code != NULL ? code : "");
	p->error_at = time(NULL);
	p->error_ms = now_ms();
}

static void peer_notef(struct peer_state *p, const char *code, const char *fmt,
		       ...) __attribute__((format(printf, 3, 4)));

static void
peer_notef(struct peer_state *p, const char *code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	peer_note(p, code, fmt, ap);
	va_end(ap);
}

/*
 * RDMA to the peer failed for reason (a CLC_DECL_* code): keep it, and
 * unless backoff_ms is 0 put the peer on the fallback for the current
 * period (the first one backoff_ms), doubling the next up to max_ms.
 * A peer that declined for being busy now (MEM: its handshake slots are
 * full) is tried again soon, and the period does not grow.  Returns the
 * period in ms (0 without back-off).
 */
uint64_t
peer_fallback(const char *name, uint32_t reason, bool by_peer,
	      uint64_t backoff_ms, uint64_t max_ms)
{
	struct peer_change ch;
	struct peer_state *p;
	uint64_t period = 0;
	enum peer_reach was;
	char code[16];

	snprintf(code, sizeof(code), "0x%08x", reason);
	pthread_mutex_lock(&peer_lock);
	p = peer_find(name, true);
	was = peer_reach(p);
	if (p != NULL) {
		p->reason = reason;
		p->by_peer = by_peer;
		p->fallback_ms = now_ms();
		/* a peer that declines answered: it is there */
		if (by_peer)
			p->reachable = 1;
		/* no RDMA device here is ours, not the peer's: REASON says it */
		if (by_peer || reason != CLC_DECL_NOSMCRDEV)
			peer_notef(p, code, "RDMA declined by %s: %s",
				   by_peer ? "the peer" : "us",
				   clc_decline_name(reason));
		if (backoff_ms && by_peer && reason == CLC_DECL_MEM) {
			period = PEER_BUSY_BACKOFF_MS;
			p->backoff_until_ms = now_ms() + period;
		} else if (backoff_ms) {
			if (p->backoff_ms == 0)
				p->backoff_ms = backoff_ms;
			period = p->backoff_ms;
			p->backoff_until_ms = now_ms() + period;
			p->backoff_ms *= 2;
			if (p->backoff_ms > max_ms)
				p->backoff_ms = max_ms;
		}
	}
	peer_changed(p, was, &ch);
	pthread_mutex_unlock(&peer_lock);
	peer_log_change(&ch);
	return period;
}

/* A connection to the peer's port got through. */
void
peer_reached(const char *name)
{
	struct peer_change ch;
	struct peer_state *p;
	enum peer_reach was;

	pthread_mutex_lock(&peer_lock);
	p = peer_find(name, true);
	was = peer_reach(p);
	if (p != NULL)
		p->reachable = 1;
	peer_changed(p, was, &ch);
	pthread_mutex_unlock(&peer_lock);
	peer_log_change(&ch);
}

/*
 * Reaching the peer failed: keep the error (printf-style text, and code,
 * an errno name like "ECONNREFUSED" or a close reason; NULL: none) with
 * its time; unreachable when the peer's port did not answer at all.
 */
void
peer_error(const char *name, bool unreachable, const char *code,
	   const char *fmt, ...)
{
	struct peer_change ch;
	struct peer_state *p;
	enum peer_reach was;
	va_list ap;

	pthread_mutex_lock(&peer_lock);
	p = peer_find(name, true);
	was = peer_reach(p);
	if (p != NULL) {
		if (unreachable)
			p->reachable = 0;
		va_start(ap, fmt);
		peer_note(p, code, fmt, ap);
		va_end(ap);
	}
	peer_changed(p, was, &ch);
	pthread_mutex_unlock(&peer_lock);
	peer_log_change(&ch);
}

/* Until when (now_ms()) RDMA to the peer is backed off; 0: it is not. */
uint64_t
peer_backoff_until(const char *name)
{
	struct peer_state *p;
	uint64_t until = 0;

	pthread_mutex_lock(&peer_lock);
	p = peer_find(name, false);
	if (p != NULL)
		until = p->backoff_until_ms;
	pthread_mutex_unlock(&peer_lock);
	return until;
}

/*
 * One of the peer's bounded counts (its member at off): +1 is taken
 * (true, counted) unless it is at max already (0: no bound); -1 gives
 * one back (always true).
 */
static bool
peer_bounded(const char *name, size_t off, int max, int delta)
{
	struct peer_state *p;
	bool ok = false;
	int *n;

	pthread_mutex_lock(&peer_lock);
	p = peer_find(name, true);
	if (p != NULL) {
		n = (int *)((char *)p + off);
		if (delta < 0 || max == 0 || *n < max) {
			*n += delta;
			ok = true;
		}
	}
	pthread_mutex_unlock(&peer_lock);
	return ok;
}

/*
 * A server group for the peer may be set up (+1: true, counted) unless
 * it has max already; -1: one went (always true).
 */
bool
peer_server_lgrs(const char *name, int max, int delta)
{
	return peer_bounded(name, offsetof(struct peer_state, server_lgrs), max,
			    delta);
}

/*
 * The peer may hold one more connection on our exports (+1: true,
 * counted) unless it holds max already (0: no bound); -1: one went
 * (always true).
 */
bool
peer_export_conns(const char *name, int max, int delta)
{
	return peer_bounded(name, offsetof(struct peer_state, export_conns),
			    max, delta);
}

/*
 * What reaches the peer called name, for `show peers`: out->rdma when an
 * active link group does; else the reason it last fell back (a CLC_DECL_*
 * code, 0 if RDMA was never tried) and how long until it is tried again;
 * whether the peer answered the last try and the last error.
 * 0, or -ENOENT when nothing is known about the peer.
 */
int
peer_info(const char *name, struct peer_info *out)
{
	struct peer_state *p;
	uint64_t now = now_ms();

	memset(out, 0, sizeof(*out));
	out->reachable = -1;
	out->fallback_age_ms = UINT64_MAX;
	pthread_mutex_lock(&peer_lock);
	p = peer_find(name, false);
	if (p != NULL) {
		out->lgrs = p->lgrs;
		out->rdma = p->lgrs > 0;
		out->reason = p->reason;
		out->by_peer = p->by_peer;
		if (now < p->backoff_until_ms)
			out->backoff_left_ms = p->backoff_until_ms - now;
		out->reachable = p->reachable;
		memcpy(out->error, p->error, sizeof(out->error));
		memcpy(out->error_code, p->error_code, sizeof(out->error_code));
		out->error_at = p->error_at;
		out->error_age_ms = p->error_ms != 0 ? now - p->error_ms : 0;
		if (p->fallback_ms != 0)
			out->fallback_age_ms = now - p->fallback_ms;
		out->draining = p->draining;
	}
	pthread_mutex_unlock(&peer_lock);
	return p != NULL ? 0 : -ENOENT;
}

/*
 * The operator drains the peer (no new connections to it: worker.c
 * closes the listeners of its rules) or stops draining it.  Kept by name,
 * so a reload that keeps the peer keeps it draining.
 */
void
peer_set_draining(const char *name, bool draining)
{
	struct peer_state *p;

	pthread_mutex_lock(&peer_lock);
	p = peer_find(name, true);
	if (p != NULL)
		p->draining = draining;
	pthread_mutex_unlock(&peer_lock);
}

bool
peer_draining(const char *name)
{
	struct peer_state *p;
	bool draining = false;

	pthread_mutex_lock(&peer_lock);
	p = peer_find(name, false);
	if (p != NULL)
		draining = p->draining;
	pthread_mutex_unlock(&peer_lock);
	return draining;
}

/*
 * Whether the fallback hello to the peer names the client (the origin
 * part, fallback_wire.h): not within PEER_ORIGIN_RETRY_MS of the peer
 * refusing it (peer_origin_refused), as a daemon older than the origin
 * part does; then again, in case it was upgraded.
 */
bool
peer_takes_origin(const char *name)
{
	struct peer_state *p;
	bool takes = true;

	pthread_mutex_lock(&peer_lock);
	p = peer_find(name, false);
	if (p != NULL && p->origin_refused_ms != 0 &&
	    now_ms() - p->origin_refused_ms < PEER_ORIGIN_RETRY_MS)
		takes = false;
	pthread_mutex_unlock(&peer_lock);
	return takes;
}

/* The peer refused a hello for naming the client. */
void
peer_origin_refused(const char *name)
{
	struct peer_state *p;

	pthread_mutex_lock(&peer_lock);
	p = peer_find(name, true);
	if (p != NULL)
		p->origin_refused_ms = now_ms();
	pthread_mutex_unlock(&peer_lock);
}

/*
 * "rdma" when an active link group reaches the peer, else "fallback";
 * *reason (if not NULL) the CLC_DECL_* code of the last fallback, 0 if
 * none (clc_decline_name() names it).
 */
const char *
peer_mode(const char *name, uint32_t *reason)
{
	struct peer_info info;

	peer_info(name, &info);
	if (reason != NULL)
		*reason = info.reason;
	return info.rdma ? "rdma" : "fallback";
}

/* Forget every peer (the end of the process, and between unit tests). */
void
peer_shutdown(void)
{
	struct peer_state *p;

	pthread_mutex_lock(&peer_lock);
	while ((p = SLIST_FIRST(&peer_list)) != NULL) {
		SLIST_REMOVE_HEAD(&peer_list, entry);
		free(p);
	}
	pthread_mutex_unlock(&peer_lock);
}
