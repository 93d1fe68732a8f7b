/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The control socket's event stream (`smcproxyctl monitor`): the events
 * and the calls that raise and serve them.  See monitor.c.
 */
#ifndef SMCPROXYD_MONITOR_H
#define SMCPROXYD_MONITOR_H

#include <sys/types.h>
#include <stdbool.h>
#include <stddef.h>

struct bufferevent;
struct event_base;
struct log_where;

/* X(id, name): each event, as the stream's "event" member names it. */
#define MONITOR_EVENTS(X)                   \
	X(PEER_UP, "peer_up")               \
	X(PEER_DOWN, "peer_down")           \
	X(LINK_UP, "link_up")               \
	X(LINK_DOWN, "link_down")           \
	X(LGR_UP, "lgr_up")                 \
	X(LGR_DOWN, "lgr_down")             \
	X(RELOAD, "reload")                 \
	X(RELOAD_FAILED, "reload_failed")   \
	X(RULE_DISABLED, "rule_disabled")   \
	X(RULE_ENABLED, "rule_enabled")     \
	X(PEER_DRAINED, "peer_drained")     \
	X(PEER_UNDRAINED, "peer_undrained") \
	X(CONN_KILLED, "conn_killed")       \
	X(STATS_RESET, "stats_reset")       \
	X(LOG_LEVEL, "log_level")           \
	X(SHUTDOWN, "shutdown")             \
	X(EVENTS_LOST, "events_lost")

enum monitor_event {
#define X(id, name) MONITOR_##id,
	MONITOR_EVENTS(X)
#undef X
		MONITOR_N
};

#define MONITOR_MAX 16	      /* monitors at once */
#define MONITOR_RESERVED 4    /* of which only root and our uid get these */
#define MONITOR_MAX_PER_UID 4 /* for any other uid */
#define MONITOR_OUT_MAX (64 * 1024) /* unsent bytes before one is dropped */
#define MONITOR_STUCK_S 30	    /* seconds taking nothing: dropped */
#define MONITOR_QUEUE_MAX 1024	    /* events from workers not yet sent */

int monitor_init(struct event_base *base);
void monitor_shutdown(void);
int monitor_room(uid_t uid, bool unlimited, char *why, size_t len);
int monitor_subscribe(struct bufferevent *bev, uid_t uid, pid_t pid,
		      bool unlimited);
int monitor_count(void);
void monitor_event(enum monitor_event ev, const struct log_where *w,
		   const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif /* SMCPROXYD_MONITOR_H */
