// SPDX-License-Identifier: BSD-2-Clause
/*
 * A proxied connection: its two sockets, its one close path, and what
 * every transport's relay shares: the upstream connect, the start of the
 * relay, the bounded relay loop, the byte counts and which side's FIN or
 * reset a close stands for.  The transports move the bytes themselves:
 * splice() in fallback.c, the registered buffers in session_rdma.c.
 * Below every transport: it reaches the one a session is on only
 * through the session_ops that transport set (accept.c picks it).
 * Every close has a reason, which is logged and counted.
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <jansson.h>

#include "smcproxyd.h"

static uint64_t session_ids;

uint64_t
session_id(const struct session *s)
{
	return s->id;
}

struct session *
session_next(const struct session *s)
{
	return LIST_NEXT(s, entry);
}

/* Whether a close reason cuts the stream short: the client must see RST. */
static bool
session_reason_aborts(enum session_reason r)
{
	return r != SESSION_CLIENT_FIN && r != SESSION_TARGET_FIN;
}

static void session_io(evutil_socket_t fd, short what, void *arg);
static void session_free(struct session *s, bool abort);
static void session_timeout(evutil_socket_t fd, short what, void *arg);

/* Enable or disable watching fd[i] for what (EV_READ or EV_WRITE). */
void
session_want(struct session *s, int i, short what, bool on)
{
	struct event *ev = what == EV_READ ? s->rev[i] : s->wev[i];

	if (ev == NULL)
		return;
	if (on)
		event_add(ev, NULL);
	else
		event_del(ev);
}

/*
 * Arm the session's one timer in milliseconds, from now.  libevent counts
 * a timeout from the time it cached when the loop last woke up; one turn
 * that handles a burst (a completion queue full of CONN_OPENs, each with
 * its target connect) can take seconds under load, and the later
 * sessions' timers then fired that much early (rxe 095: target connects
 * "timed out" after 0.28 s of a 5 s connect_timeout).  So the cache is
 * brought up to date first: one clock read.
 */
int
session_timer_ms(struct session *s, int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

	event_base_update_cache_time(worker_base(s->w));
	return event_add(s->timer, &tv);
}

/* Arm the session's one timer in seconds, from now; 0 disarms. */
int
session_timer(struct session *s, int seconds)
{
	if (seconds == 0)
		return event_del(s->timer);
	return session_timer_ms(s, seconds * 1000);
}

/* Take over fd as fd[i], with level-triggered events.  0 or -ENOMEM. */
static int
session_attach(struct session *s, int i, int fd)
{
	struct event_base *base = worker_base(s->w);

	s->fd[i] = fd;
	s->rev[i] = event_new(base, fd, EV_READ | EV_PERSIST, session_io, s);
	s->wev[i] = event_new(base, fd, EV_WRITE | EV_PERSIST, session_io, s);
	if (s->rev[i] == NULL || s->wev[i] == NULL)
		return -ENOMEM;
	return 0;
}

/*
 * A new session on worker w around the accepted socket fd (taken over:
 * closed on failure), or with no downstream socket when fd is -1 (the
 * export side of a connection carried over RDMA).  NULL on failure.
 */
struct session *
session_new(struct worker *w, int fd, enum session_role role)
{
	struct session *s;
	socklen_t len;
	int one = 1;

	s = calloc(1, sizeof(*s));
	if (s == NULL) {
		close(fd);
		return NULL;
	}
	s->w = w;
	s->id = __atomic_add_fetch(&session_ids, 1, __ATOMIC_RELAXED);
	s->role = role;
	s->mode = SESSION_MODE_FALLBACK;
	s->fd[0] = s->fd[1] = -1;
	s->pump[0].pipe[0] = s->pump[0].pipe[1] = -1;
	s->pump[1].pipe[0] = s->pump[1].pipe[1] = -1;
	s->conf = conf_hold(worker_conf(w));
	s->started_ms = s->active_ms = now_ms();
	s->timer = evtimer_new(worker_base(w), session_timeout, s);
	worker_session_add(w, s);
	if (fd < 0 && s->timer != NULL)
		return s;
	if (fd >= 0) {
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
				 sizeof(one));
		len = sizeof(s->addr[0].ss);
		if (getpeername(fd, (struct sockaddr *)&s->addr[0].ss, &len) ==
		    0)
			s->addr[0].len = len;
	}
	if (s->timer == NULL || session_attach(s, 0, fd)) {
		session_close(s, SESSION_RESOURCE);
		return NULL;
	}
	return s;
}

/* s holds the place among strangers its socket was given at accept. */
void
session_preauth_take(struct session *s)
{
	s->preauth = true;
	worker_preauth_session(s->w, 1);
}

/* s authenticated (or goes): it gives back its place among strangers. */
void
session_preauth_done(struct session *s)
{
	if (!s->preauth)
		return;
	s->preauth = false;
	worker_preauth_session(s->w, -1);
	worker_preauth_put(s->w, &s->addr[0]);
}

/*
 * s (export side, s->peer set) takes a place among its peer's
 * connections on our exports, if peers[].max_conns leaves one: held
 * until s ends.  false when none is left.
 */
bool
session_peer_hold(struct session *s)
{
	if (!peer_export_conns(s->peer->name, s->peer->max_conns, 1))
		return false;
	s->peer_held = true;
	return true;
}

/* s ends: it gives back its place among its peer's connections. */
static void
session_peer_release(struct session *s)
{
	if (!s->peer_held)
		return;
	s->peer_held = false;
	peer_export_conns(s->peer->name, 0, -1);
}

/*
 * s moves to the transport ops (a kernel peer's connection after its
 * CLC, an RDMA connection falling back to TCP): the handshake state of
 * the transport it leaves goes.
 */
void
session_ops_set(struct session *s, const struct session_ops *ops)
{
	if (s->ops != NULL && s->ops != ops && s->ops->hs_free != NULL)
		s->ops->hs_free(s);
	s->ops = ops;
}

/* Take over fd as fd[1] (the upstream socket). */
static int
session_attach_upstream(struct session *s, int fd)
{
	return session_attach(s, 1, fd);
}

/*
 * Relay mode for fd[i]: edge-triggered events from here on, one for each
 * direction so that reading can pause alone (session_relay_read),
 * readiness remembered in rd_ready/wr_ready.  0 or -ENOMEM.
 */
static int
session_watch_relay(struct session *s, int i)
{
	struct event_base *base = worker_base(s->w);

	if (s->rev[i] != NULL)
		event_free(s->rev[i]);
	if (s->wev[i] != NULL)
		event_free(s->wev[i]);
	s->rev[i] = event_new(base, s->fd[i], EV_READ | EV_ET | EV_PERSIST,
			      session_io, s);
	s->wev[i] = event_new(base, s->fd[i], EV_WRITE | EV_ET | EV_PERSIST,
			      session_io, s);
	if (s->rev[i] == NULL || s->wev[i] == NULL ||
	    event_add(s->rev[i], NULL) || event_add(s->wev[i], NULL))
		return -ENOMEM;
	s->rd_ready[i] = s->wr_ready[i] = true;
	return 0;
}

/*
 * Relay mode: stop or go on waking for what arrives on fd[i] (autocork
 * at the door: what comes meanwhile waits in the kernel).  Turned on
 * again, a socket that became readable meanwhile is reported at once.
 */
void
session_relay_read(struct session *s, int i, bool on)
{
	session_want(s, i, EV_READ, on);
}

/*
 * Connect a new upstream socket fd[1] to to, from the local address from
 * (NULL or len 0: the kernel's choice), its SYN with the SMC-R option
 * when smc (a target_smc rule), without waiting: EV_WRITE on
 * fd[1] says when it is done (session_connect_error).  Out of
 * descriptors, accepting pauses.  0 or -errno.
 */
int
session_connect(struct session *s, const struct addr *to,
		const struct addr *from, bool smc)
{
	int fd, rc;

	rc = sock_connect(to, from, s->conf, smc, &fd);
	if (fd == -1) {
		if (rc == -EMFILE || rc == -ENFILE)
			worker_fd_exhausted(s->w);
		return rc;
	}
	if (rc != 0 && rc != -EINPROGRESS) {
		close(fd);
		return rc;
	}
	s->addr[1] = *to;
	if (session_attach_upstream(s, fd))
		return -ENOMEM;
	session_want(s, 1, EV_WRITE, true);
	return 0;
}

/* How the connect of fd[1] ended: 0 (connected) or an errno. */
int
session_connect_error(const struct session *s)
{
	socklen_t len = sizeof(int);
	int err = 0;

	if (getsockopt(s->fd[1], SOL_SOCKET, SO_ERROR, &err, &len) == -1)
		err = errno;
	return err;
}

/*
 * s relays from now on, counted as stat: the handshake's timer becomes
 * the idle timer and fd[i] (both sockets when i is -1) is watched
 * edge-triggered.  0, or -ENOMEM with s left to its caller to close.
 */
int
session_relay_begin(struct session *s, int i, enum stats_id stat)
{
	int j;

	if (s->state != SESSION_RESUMING)
		tally_setup(s, now_ms() - s->started_ms);
	s->state = SESSION_RELAY;
	stats_add(worker_stats(s->w), stat, 1);
	session_timer(s, 0);
	for (j = 0; j < 2; j++)
		if ((i < 0 || i == j) && session_watch_relay(s, j))
			return -ENOMEM;
	if (session_idle_timeout(s))
		session_timer(s, session_idle_timeout(s));
	return 0;
}

/*
 * The relay loop of both transports: round(arg) until it moves nothing
 * (0) or s closes or is closing (-1).  After a bounded number of rounds
 * s yields to others and reschedules itself through fd[i]'s event, since
 * the events are edge-triggered and no new edge would wake it for work
 * it already knows of.
 */
void
session_relay_run(struct session *s, int i, int (*round)(void *), void *arg)
{
	int n;

	for (n = 0; n < SESSION_RELAY_ROUNDS; n++)
		if (round(arg) <= 0)
			return;
	event_active(s->rev[i], 0, 0);
}

/*
 * The normal close a finished direction names when it finished first:
 * the one read from fd[i] (0: downstream, the client's side).
 */
enum session_reason
session_fin_reason(int i)
{
	return i == 0 ? SESSION_CLIENT_FIN : SESSION_TARGET_FIN;
}

/* Which reason a reset or an error seen on fd[i] means for s. */
enum session_reason
session_rst_reason(const struct session *s, int i)
{
	if (s->role == SESSION_ROLE_RULE && i == 0)
		return SESSION_CLIENT_RST;
	if (s->role == SESSION_ROLE_EXPORT && i == 1)
		return SESSION_TARGET_RST;
	return SESSION_PEER_RST;
}

/* n bytes read from fd[i] went on: counted for s and its worker. */
void
session_account(struct session *s, int i, size_t n)
{
	struct stats *st = worker_stats(s->w);

	s->bytes[i] += n;
	s->active_ms = now_ms();
	/* bytes read downstream on the rule side go to the peer daemon */
	if ((s->role == SESSION_ROLE_RULE) == (i == 0)) {
		STATS_ADD(st, tx_bytes, (int64_t)n);
		STATS_INC(st, tx_cnt);
	} else {
		STATS_ADD(st, rx_bytes, (int64_t)n);
		STATS_INC(st, rx_cnt);
	}
}

static void
session_io(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;
	int i = fd == s->fd[0] ? 0 : 1;

	/*
	 * Relay mode remembers readiness (edge-triggered events); a mark
	 * set at another time is harmless: relaying starts with both set.
	 * A socket is read until EAGAIN, even after a short read: the FIN
	 * or reset queued behind the last bytes brings no further edge
	 * (libevent reports EPOLLERR and EPOLLHUP as EV_READ | EV_WRITE,
	 * without EV_CLOSED), and a stream is never judged empty early.
	 */
	if (what & EV_READ)
		s->rd_ready[i] = true;
	if (what & EV_WRITE)
		s->wr_ready[i] = true;
	if (s->ops != NULL)
		s->ops->io(s, i, what);
}

static void
session_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;
	uint64_t idle_ms, now = now_ms();
	int idle;

	if (s->state != SESSION_RELAY) {
		if (s->ops != NULL)
			s->ops->timeout(s);
		return;
	}
	idle = session_idle_timeout(s);
	if (idle == 0)
		return;
	idle_ms = now - s->active_ms;
	if (idle_ms >= (uint64_t)idle * 1000) {
		session_close(s, SESSION_IDLE_TIMEOUT);
		return;
	}
	session_timer(s, (int)(((uint64_t)idle * 1000 - idle_ms) / 1000) + 1);
}

/*
 * The one way a session ends.  A normal end (both directions finished)
 * closes gracefully; every other reason resets both sockets so neither
 * end mistakes a cut stream for a complete one.
 */
void
session_close(struct session *s, enum session_reason reason)
{
	bool abort = session_reason_aborts(reason);

	if (s->state == SESSION_CLOSED)
		return;
	connlog_close(s, reason);
	tally_close(s, reason);
	if (s->khost)
		khost_close(&s->addr[s->role == SESSION_ROLE_RULE ? 1 : 0]);
	s->state = SESSION_CLOSED;
	stats_add(worker_stats(s->w), STAT_CLOSE_BASE + reason, 1);
	/*
	 * One info line per connection, the connection log's, and only where
	 * log_connections asks for it: an abort is counted (close_REASON),
	 * not logged, lest a refusing target write a line per client.
	 */
	log_debug("conn 0x%llx: closed: %s (%s), %llu bytes in, %llu out",
		  (unsigned long long)s->id, session_reason_name(reason),
		  session_reason_desc(reason), (unsigned long long)s->bytes[0],
		  (unsigned long long)s->bytes[1]);
	if (s->ops != NULL && s->ops->close != NULL)
		s->ops->close(s, reason);
	session_free(s, abort);
}

/*
 * Free s and what it holds; sockets still open are closed, with a reset
 * when abort.
 */
static void
session_free(struct session *s, bool abort)
{
	int i;

	s->state = SESSION_CLOSED;
	session_preauth_done(s);
	session_peer_release(s);
	for (i = 0; i < 2; i++) {
		if (s->rev[i])
			event_free(s->rev[i]);
		if (s->wev[i])
			event_free(s->wev[i]);
		if (abort && !(i == 0 && s->fin_downstream))
			sock_reset(s->fd[i]);
		else if (s->fd[i] >= 0)
			close(s->fd[i]);
		worker_pipe_put(s->w, s->pump[i].pipe, s->pump[i].cap,
				s->pump[i].pending == 0);
	}
	if (s->timer)
		event_free(s->timer);
	if (s->ops != NULL && s->ops->hs_free != NULL)
		s->ops->hs_free(s);
	worker_session_del(s->w, s);
	conf_drop(s->conf);
	free(s);
}

/*
 * Hand the downstream socket over to another owner (a connection over
 * RDMA that resumes over this fallback connection): the session ends
 * without being a connection that closed, so no close reason is counted.
 * Returns the socket.
 */
int
session_detach(struct session *s)
{
	int fd = s->fd[0];

	s->fd[0] = -1;
	session_free(s, false);
	return fd;
}

/* Close fd[1] and its events: a handshake over it starts again. */
void
session_upstream_drop(struct session *s)
{
	if (s->rev[1] != NULL)
		event_free(s->rev[1]);
	if (s->wev[1] != NULL)
		event_free(s->wev[1]);
	s->rev[1] = s->wev[1] = NULL;
	if (s->fd[1] != -1)
		close(s->fd[1]);
	s->fd[1] = -1;
}

/* Close every session of w (on w's thread). */
void
session_close_all(struct worker *w, enum session_reason reason)
{
	struct session *s;

	while ((s = worker_sessions(w)) != NULL)
		session_close(s, reason);
}

/* Close session id of w as killed by an operator; 0 or -ENOENT. */
int
session_kill(struct worker *w, uint64_t id)
{
	struct session *s;

	for (s = worker_sessions(w); s != NULL; s = LIST_NEXT(s, entry)) {
		if (s->id == id) {
			session_close(s, SESSION_ADMIN_KILL);
			return 0;
		}
	}
	return -ENOENT;
}

/* The idle timeout of s's rule or export in seconds; 0: none. */
int
session_idle_timeout(const struct session *s)
{
	if (s->rule != NULL)
		return s->rule->idle_timeout;
	return s->export != NULL ? s->export->idle_timeout : 0;
}

/* Append a JSON object describing s to the jansson array json_array. */
void
session_json_add(const struct session *s, void *json_array)
{
	char id[24], a0[ADDR_STRLEN], a1[ADDR_STRLEN], host[ADDR_STRLEN] = "";
	uint64_t now = now_ms();
	bool rule = s->role == SESSION_ROLE_RULE;
	bool smcr = s->dialect == SESSION_DIALECT_SMCR;
	json_t *o;

	snprintf(id, sizeof(id), "0x%llx", (unsigned long long)s->id);
	addr_str(&s->addr[0], a0, sizeof(a0));
	addr_str(&s->addr[1], a1, sizeof(a1));
	/* a kernel SMC-R peer has no name: its host stands for it, as in
	 * show peers (the connection log gives its address and port) */
	if (smcr && !addr_host(&s->addr[rule ? 1 : 0], host, sizeof(host)))
		host[0] = '\0';
	o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I,"
		      " s:f, s:f, s:I}",
		      "id", id, "mode",
		      s->mode == SESSION_MODE_RDMA ? "rdma" : "fallback",
		      "role", rule ? "rule" : "export", "rule",
		      rule && s->rule ? s->rule->name : "", "export",
		      rule ? s->export_name :
			     (s->export ? s->export->name : ""),
		      "peer",
		      smcr    ? host :
		      s->peer ? s->peer->name :
				"",
		      "state", session_state_name(s->state), "downstream", a0,
		      "upstream", a1, "bytes_in", (json_int_t)s->bytes[0],
		      "bytes_out", (json_int_t)s->bytes[1], "age_s",
		      (double)(now - s->started_ms) / 1000.0, "idle_s",
		      (double)(now - s->active_ms) / 1000.0, "worker",
		      (json_int_t)worker_id(s->w));
	if (o == NULL)
		return;
	json_object_set_new(o, "dialect",
			    json_string(smcr ? "smc-r" : "native"));
	/* the kernel peer's end of the connection, as smcss's Peer Address */
	if (smcr)
		json_object_set_new(o, "peer_address",
				    json_string(rule ? a1 : a0));
	/* the connection log's word: a kernel peer's TCP is no fallback
	 * protocol, a native peer's is */
	json_object_set_new(o, "transport",
			    json_string(s->mode == SESSION_MODE_RDMA ? "rdma" :
					smcr			     ? "tcp" :
					       "fallback"));
	if (s->smc_decline != 0) {
		snprintf(id, sizeof(id), "0x%08x", s->smc_decline);
		json_object_set_new(o, "smc_decline", json_string(id));
	}
	if (s->ops != NULL && s->ops->json != NULL)
		s->ops->json(s, o);
	json_array_append_new(json_array, o);
}
