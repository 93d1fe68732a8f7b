// SPDX-License-Identifier: BSD-2-Clause
/*
 * The front door: what an accepted socket becomes.  A rule's client is
 * a session that tries its transports in order (a kernel SMC-R server
 * for a target_smc rule, else RDMA, else the TCP fallback; an intercept
 * rule's client first learns where it meant to go); a peer
 * daemon on the peer port is a stranger until its first bytes say which
 * handshake it opens.  A client of a rule with accept_proxy is one too
 * until its load balancer's PROXY header has come.  Above the session
 * and every transport, so that the session core calls none of them.
 */
#include <sys/socket.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "smcproxyd.h"
#include "clc_wire.h"

static int accept_wait_header(struct worker *w, int fd,
			      const struct conf_rule *rule);

/*
 * The session of a rule's client, on its way: h the PROXY header that
 * named the client behind a load balancer (NULL: none, or one that named
 * none), which the peer and the connection log then take for it.
 */
static void
accept_rule_open(struct worker *w, int fd, const struct conf_rule *rule,
		 const struct proxy_header *h)
{
	struct session *s;

	s = session_new(w, fd, SESSION_ROLE_RULE);
	if (s == NULL)
		return;
	if (h != NULL && !h->local) {
		s->origin[0] = h->src;
		s->origin[1] = h->dst;
	}
	s->rule = rule;
	s->peer = rule->peer;
	snprintf(s->export_name, sizeof(s->export_name), "%s", rule->export);
	tally_open(s);
	if (rule->nintercept > 0) {
		if (intercept_accepted(s) != 0) {
			STATS_INC(worker_stats(w), intercept_strays);
			session_close(s, SESSION_PROTOCOL_ERROR);
			return;
		}
		STATS_INC(worker_stats(w), intercept_conns);
	}
	if (rule->target_smc.len != 0) {
		smcr_connect(s);
		return;
	}
	if (!session_rdma_connect(s))
		fallback_connect(s);
}

/* Listener callback: a client connected to one of our rules. */
void
accept_rule(struct worker *w, int fd, void *arg)
{
	const struct conf_rule *rule = arg;

	STATS_INC(worker_stats(w), conns_accepted);
	if (!worker_has_room(w)) {
		sock_reset(fd);
		STATS_INC(worker_stats(w), conns_refused_limit);
		return;
	}
	if (!rule->accept_proxy)
		accept_rule_open(w, fd, rule, NULL);
	else if (accept_wait_header(w, fd, rule))
		sock_reset(fd);
}

/*
 * A stranger on the peer port until its first bytes say whether it opens
 * a link group (CLC's eyecatcher: clc.c) or a fallback connection
 * (fallback.c), or a rule's client (rule) until its PROXY header has come
 * whole: a socket, its place among strangers and a deadline, no session.
 */
struct accept_stranger {
	LIST_ENTRY(accept_stranger) entry; /* worker_strangers */
	struct worker *w;
	int fd;
	struct addr src;
	uint64_t since_ms, deadline_ms;
	struct event *rev, *timer;
	unsigned int peeks; /* at a part of an eyecatcher */
	/* a rule's client: its rule, in the configuration we hold */
	const struct conf_rule *rule;
	struct conf *conf;
};

/*
 * Part of an eyecatcher came: look again after 10 ms, then twice as long
 * each time up to 640 ms, so that a stranger that sends 1-3 bytes and
 * stops costs about ten peeks until first_byte_timeout, not one per
 * 10 ms (1024 of them took 55 % of a core).
 */
#define ACCEPT_PEEK_WAIT_MS 10
#define ACCEPT_PEEK_DOUBLINGS 6

static void
accept_stranger_free(struct accept_stranger *st)
{
	LIST_REMOVE(st, entry);
	if (st->conf != NULL)
		conf_drop(st->conf);
	if (st->rev != NULL)
		event_free(st->rev);
	if (st->timer != NULL)
		event_free(st->timer);
	free(st);
}

/*
 * Hand st's socket over, to clc.c when it opened with CLC's eyecatcher,
 * else to fallback.c, which also times out one that sent nothing.
 */
static void
accept_stranger_hand(struct accept_stranger *st, bool clc)
{
	struct worker *w = st->w;
	struct addr src = st->src;
	uint64_t since = st->since_ms;
	int fd = st->fd;

	accept_stranger_free(st);
	if (clc)
		clc_accept(w, fd, &src);
	else
		fallback_accept(w, fd, &src, since, &resume_tcp_ops);
}

static int
accept_stranger_wait(struct accept_stranger *st, uint64_t ms)
{
	struct timeval tv = {(time_t)(ms / 1000),
			     (suseconds_t)(ms % 1000) * 1000};

	event_base_update_cache_time(
		worker_base(st->w)); /* see session_timer_ms */
	return evtimer_add(st->timer, &tv);
}

/*
 * Peek at the first bytes, reading none: whoever st goes to reads its
 * messages whole.  Both eyecatchers begin alike, so a part of one waits
 * a moment for the rest rather than spin on a readable socket.
 */
static void
accept_stranger_read(evutil_socket_t fd, short what, void *arg)
{
	struct accept_stranger *st = arg;
	unsigned char b[4];
	ssize_t n = recv(fd, b, sizeof(b), MSG_PEEK | MSG_DONTWAIT);
	uint64_t now, wait;

	STATS_INC(worker_stats(st->w), preauth_peeks);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0 && (size_t)n < sizeof(b) &&
	    memcmp(b, CLC_EYECATCHER, (size_t)n) == 0) {
		now = now_ms();
		wait = (uint64_t)ACCEPT_PEEK_WAIT_MS
		       << (st->peeks < ACCEPT_PEEK_DOUBLINGS ?
				   st->peeks :
				   ACCEPT_PEEK_DOUBLINGS);
		st->peeks++;
		if (now + wait > st->deadline_ms)
			wait = st->deadline_ms > now ? st->deadline_ms - now :
						       0;
		event_del(st->rev);
		accept_stranger_wait(st, wait);
		return;
	}
	accept_stranger_hand(st,
			     n == (ssize_t)sizeof(b) &&
				     memcmp(b, CLC_EYECATCHER, sizeof(b)) == 0);
}

/*
 * A rule's client that did not begin with a PROXY header, or not with
 * one we take, or not in time: reset, counted, said (rate limited per
 * client host).
 */
static void
accept_header_refuse(struct accept_stranger *st, const char *why)
{
	char buf[ADDR_STRLEN], host[ADDR_STRLEN];
	int fd = st->fd;

	STATS_INC(worker_stats(st->w), proxy_refused);
	addr_host(&st->src, host, sizeof(host));
	log_warnx_rl("accept_proxy", host,
		     "rule %s: client %s reset: %s (accept_proxy: its "
		     "connections must begin with a PROXY header)",
		     st->rule->name, addr_str(&st->src, buf, sizeof(buf)), why);
	accept_stranger_free(st);
	sock_reset(fd);
}

/*
 * A rule's client's first bytes: once its PROXY header is there whole,
 * read that much (and no more: the client's own bytes stay for the
 * relay) and open its session.  Peeked, so a header that comes in parts
 * is read once.
 */
static void
accept_header_read(evutil_socket_t fd, short what, void *arg)
{
	struct accept_stranger *st = arg;
	struct worker *w = st->w;
	const struct conf_rule *rule = st->rule;
	unsigned char b[PROXY_HEADER_MAX];
	struct proxy_header h;
	char why[96];
	ssize_t n = recv(fd, b, sizeof(b), MSG_PEEK | MSG_DONTWAIT);
	int rc;

	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		accept_header_refuse(st, n == 0 ? "closed before its header" :
						  strerror(errno));
		return;
	}
	rc = proxy_header_read(b, (size_t)n, &h, why, sizeof(why));
	if (rc == 0 && (size_t)n < sizeof(b))
		return; /* the rest of it comes (or the deadline) */
	if (rc <= 0) {
		accept_header_refuse(st, rc == 0 ? "header too long" : why);
		return;
	}
	if (recv(fd, b, h.len, MSG_DONTWAIT) != (ssize_t)h.len) {
		accept_header_refuse(st, "its header could not be read");
		return;
	}
	/* the session holds the worker's configuration, and a reload
	 * during the wait made a new one: the rule of that name in it */
	if (st->conf != worker_conf(w) &&
	    (rule = conf_rule_find(worker_conf(w), rule->name)) == NULL) {
		accept_header_refuse(st, "its rule was removed by a reload");
		return;
	}
	if (h.local)
		STATS_INC(worker_stats(w), proxy_local);
	else
		STATS_INC(worker_stats(w), proxy_accepted);
	accept_stranger_free(st);
	accept_rule_open(w, fd, rule, &h);
}

static void
accept_stranger_timer(evutil_socket_t fd, short what, void *arg)
{
	struct accept_stranger *st = arg;
	uint64_t now = now_ms();

	if (st->rule != NULL) {
		accept_header_refuse(st, "no PROXY header within "
					 "first_byte_timeout");
		return;
	}
	if (now >= st->deadline_ms) {
		/* nothing whole in time: the fallback counts the failure */
		accept_stranger_hand(st, false);
		return;
	}
	event_add(st->rev, NULL);
	accept_stranger_wait(st, st->deadline_ms - now);
}

/*
 * Listener callback: a peer daemon connected to our peer port.  Until it
 * authenticates it is a stranger: refused at once when its host failed
 * too often or the strangers' budget is full, and never counted towards
 * max_conns.  Its first bytes, due within first_byte_timeout, say which
 * handshake it is.
 */
void
accept_peer(struct worker *w, int fd, void *unused)
{
	const struct conf *conf = worker_conf(w);
	struct accept_stranger *st;
	struct addr src;
	socklen_t len = sizeof(src.ss);

	memset(&src, 0, sizeof(src));
	if (getpeername(fd, (struct sockaddr *)&src.ss, &len) == -1) {
		close(fd);
		return;
	}
	src.len = len;
	if (auth_rate_limited(worker_auth(w), &src, now_ms())) {
		STATS_INC(worker_stats(w), auth_rate_limited);
		sock_reset(fd);
		return;
	}
	if (worker_preauth_get(w, &src)) {
		STATS_INC(worker_stats(w), preauth_refused);
		sock_reset(fd);
		return;
	}
	sock_tcp_liveness(fd, conf);
	st = calloc(1, sizeof(*st));
	if (st == NULL) {
		worker_preauth_put(w, &src);
		close(fd);
		return;
	}
	st->w = w;
	st->fd = fd;
	st->src = src;
	st->since_ms = now_ms();
	st->deadline_ms =
		st->since_ms + (uint64_t)conf->first_byte_timeout * 1000;
	LIST_INSERT_HEAD(worker_strangers(w), st, entry);
	st->rev = event_new(worker_base(w), fd, EV_READ | EV_PERSIST,
			    accept_stranger_read, st);
	st->timer = evtimer_new(worker_base(w), accept_stranger_timer, st);
	if (st->rev == NULL || st->timer == NULL || event_add(st->rev, NULL) ||
	    accept_stranger_wait(st,
				 (uint64_t)conf->first_byte_timeout * 1000)) {
		accept_stranger_free(st);
		worker_preauth_put(w, &src);
		close(fd);
	}
}

/*
 * A client of rule, which has accept_proxy: a stranger until its PROXY
 * header comes, due within first_byte_timeout.  0, or -1 out of memory
 * (the caller resets fd).
 */
static int
accept_wait_header(struct worker *w, int fd, const struct conf_rule *rule)
{
	struct conf *conf = worker_conf(w);
	struct accept_stranger *st;
	socklen_t len;

	st = calloc(1, sizeof(*st));
	if (st == NULL)
		return -1;
	st->w = w;
	st->fd = fd;
	st->rule = rule;
	st->conf = conf_hold(conf);
	len = sizeof(st->src.ss);
	if (getpeername(fd, (struct sockaddr *)&st->src.ss, &len) == 0)
		st->src.len = len;
	st->since_ms = now_ms();
	st->deadline_ms =
		st->since_ms + (uint64_t)conf->first_byte_timeout * 1000;
	LIST_INSERT_HEAD(worker_strangers(w), st, entry);
	st->rev = event_new(worker_base(w), fd, EV_READ | EV_PERSIST,
			    accept_header_read, st);
	st->timer = evtimer_new(worker_base(w), accept_stranger_timer, st);
	if (st->rev == NULL || st->timer == NULL || event_add(st->rev, NULL) ||
	    accept_stranger_wait(st,
				 (uint64_t)conf->first_byte_timeout * 1000)) {
		accept_stranger_free(st);
		return -1;
	}
	return 0;
}

/*
 * Close every session of w (on w's thread), and reset the strangers on
 * its peer port that are none yet (and the rules' clients whose PROXY
 * header has not come).
 */
void
accept_close_all(struct worker *w, enum session_reason reason)
{
	struct accept_stranger *st;
	int fd;

	while ((st = LIST_FIRST(worker_strangers(w))) != NULL) {
		fd = st->fd;
		if (st->rule == NULL)
			worker_preauth_put(w, &st->src);
		accept_stranger_free(st);
		sock_reset(fd);
	}
	session_close_all(w, reason);
}
