// SPDX-License-Identifier: BSD-2-Clause
/*
 * What every module asks of a worker (worker.h has the struct): its event
 * base, statistics, configuration, link-group context and data path, its
 * sessions and strangers, the pipes it lends to the fallback, the budget
 * of unauthenticated peer connections, and messages to it
 * (worker_post/worker_call from the main thread, worker_pass from another
 * worker).  Nothing here calls up into sessions, link groups or
 * listeners: worker.c, which starts, reconfigures and stops the threads,
 * does, and this file is what lets the modules below it know a worker
 * without depending on that.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "worker.h"

struct worker *workers;
int nworkers;
/*
 * One authentication rate limit for the whole daemon, not one per
 * worker: the peer port's listeners share a port (SO_REUSEPORT), so each
 * new connection of a host lands on any worker, and a handshake may
 * move to another worker (clc_hop).  A table per worker would let a
 * host fail workers times as often, and record its failures where its
 * next connection is never checked.  It is touched only when a stranger
 * connects or fails, under its own lock (auth.c).
 */
struct auth_limit worker_auth_limit;
struct event *worker_done_ev;

int
worker_count(void)
{
	return nworkers;
}

struct worker *
worker_get(int i)
{
	return &workers[i];
}

int
worker_id(const struct worker *w)
{
	return w->id;
}

struct event_base *
worker_base(const struct worker *w)
{
	return w->base;
}

struct stats *
worker_stats(struct worker *w)
{
	return &w->stats;
}

/* The daemon's authentication rate limit (shared by every worker). */
struct auth_limit *
worker_auth(struct worker *w)
{
	return &worker_auth_limit;
}

/* w's link-group context; NULL when it could not be made.  w's thread. */
struct lgr_ctx *
worker_lgr(struct worker *w)
{
	return w->lgr;
}

/* w's RDMA data path; NULL when it could not be made.  w's thread. */
struct session_rdma_worker *
worker_rdma(struct worker *w)
{
	return w->rdma;
}

/* The config new sessions of this worker use (held by the worker). */
struct conf *
worker_conf(const struct worker *w)
{
	return w->conf;
}

bool
worker_draining(const struct worker *w)
{
	return w->draining;
}

void
worker_msg_cb(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	struct worker_msg m;
	ssize_t n;
	int i;

	/* at most a batch: a flood from other workers waits its turn */
	for (i = 0; i < WORKER_MSG_BATCH; i++) {
		n = read(fd, &m, sizeof(m));
		if (n != sizeof(m)) {
			if (n == -1 && errno == EINTR)
				continue;
			return;
		}
		m.fn(w, m.arg);
		if (m.lock != NULL) {
			pthread_mutex_lock(m.lock);
			*m.done = true;
			pthread_cond_signal(m.cond);
			pthread_mutex_unlock(m.lock);
		}
	}
}

static void
worker_send(struct worker *w, struct worker_msg *m)
{
	ssize_t n;

	/* messages are smaller than PIPE_BUF: writes are atomic */
	do
		n = write(w->msg_fd[1], m, sizeof(*m));
	while (n == -1 && errno == EINTR);
	if (n != sizeof(*m))
		fatal("worker %d: message pipe", w->id);
}

/*
 * Run fn(w, arg) on w's thread, later.  The main thread's: it may wait
 * while w's pipe is full, and the message always arrives.  A worker
 * uses worker_pass().
 */
void
worker_post(struct worker *w, worker_fn fn, void *arg)
{
	struct worker_msg m = {fn, arg, NULL, NULL, NULL};

	worker_send(w, &m);
}

/*
 * From worker from's thread: run fn(to, arg) on to's thread, later,
 * without waiting for to.  0, or -EAGAIN when to has as many messages
 * waiting as its pipe holds (a pipe's worth, some 1600): fn will not
 * run, arg is still the caller's to free (and what it carries to close),
 * and the drop is counted in from's worker_msgs_dropped.
 */
int
worker_pass(struct worker *from, struct worker *to, worker_fn fn, void *arg)
{
	struct worker_msg m = {fn, arg, NULL, NULL, NULL};
	ssize_t n;

	/* smaller than PIPE_BUF: the whole message goes, or nothing */
	do
		n = write(to->pass_fd[1], &m, sizeof(m));
	while (n == -1 && errno == EINTR);
	if (n == sizeof(m))
		return 0;
	STATS_INC(&from->stats, worker_msgs_dropped);
	log_debug("worker %d: message for worker %d dropped: %s", from->id,
		  to->id, n == -1 ? strerror(errno) : "short write");
	return n == -1 && errno != EAGAIN ? -errno : -EAGAIN;
}

/* Run fn(w, arg) on w's thread and wait until it has returned. */
void
worker_call(struct worker *w, worker_fn fn, void *arg)
{
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
	bool done = false;
	struct worker_msg m = {fn, arg, &lock, &cond, &done};

	worker_send(w, &m);
	pthread_mutex_lock(&lock);
	while (!done)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	pthread_cond_destroy(&cond);
	pthread_mutex_destroy(&lock);
}

void
worker_session_add(struct worker *w, struct session *s)
{
	LIST_INSERT_HEAD(&w->sessions, s, entry);
	w->nsessions++;
	STATS_INC(&w->stats, conns_active);
}

void
worker_session_del(struct worker *w, struct session *s)
{
	LIST_REMOVE(s, entry);
	w->nsessions--;
	STATS_DEC(&w->stats, conns_active);
	if (w->draining && w->nsessions == 0)
		worker_drained(w);
}

struct session *
worker_sessions(struct worker *w)
{
	return LIST_FIRST(&w->sessions);
}

/* A session of w took (1) or gave back (-1) a place among strangers. */
void
worker_preauth_session(struct worker *w, int delta)
{
	w->npreauth_sessions += delta;
}

/* w's strangers on the peer port that are no sessions yet (accept.c). */
struct accept_strangers *
worker_strangers(struct worker *w)
{
	return &w->strangers;
}

/*
 * A session of w found no descriptor for its other socket: its listeners
 * pause like on EMFILE from accept(), instead of taking (and resetting)
 * every waiting client one after another.
 */
void
worker_fd_exhausted(struct worker *w)
{
	w->fd_exhausted = true;
}

/* Whether a session ran out of descriptors since the last call. */
bool
worker_fd_exhausted_take(struct worker *w)
{
	bool was = w->fd_exhausted;

	w->fd_exhausted = false;
	return was;
}

/*
 * Whether this worker may take one more session (max_conns).  Peer
 * connections that have not authenticated have their own budget
 * (worker_preauth_get) and take no room here.
 */
bool
worker_has_room(const struct worker *w)
{
	return w->conf->max_conns == 0 ||
	       w->nsessions - w->npreauth_sessions < w->conf->max_conns;
}

/* Whether the peer port may accept another stranger now. */
bool
worker_preauth_room(struct worker *w)
{
	return w->npreauth < w->conf->preauth_max;
}

static int
worker_preauth_find(const struct worker *w, const struct addr *src)
{
	int i;

	for (i = 0; i < w->npreauth_src; i++)
		if (addr_same_host(&w->preauth[i].src, src))
			return i;
	return -1;
}

/*
 * How many of a worker's places among strangers one source host may
 * hold: preauth_per_source, or all of preauth_max for the host of a
 * configured peer's address (its burst of clients over the TCP fallback
 * authenticates there; a stranger on another host cannot use it).
 */
static int
worker_preauth_cap(const struct conf *conf, const struct addr *src)
{
	int i;

	for (i = 0; i < conf->npeers; i++)
		if (!conf->peers[i].any_source &&
		    addr_same_host(&conf->peers[i].addr, src))
			return conf->preauth_max;
	return conf->preauth_per_source;
}

/*
 * A peer connection from src that has not authenticated yet: take one of
 * the worker's preauth_max (the peer port stops accepting while they are
 * taken: worker_preauth_room), preauth_per_source of them from src's
 * host.  0 (give it back with worker_preauth_put once it authenticated
 * or closed), -EAGAIN when the worker's are all taken, -EBUSY when src's
 * are, -ENOMEM.
 */
int
worker_preauth_get(struct worker *w, const struct addr *src)
{
	struct worker_preauth *p;
	int i;

	if (w->npreauth >= w->conf->preauth_max)
		return -EAGAIN;
	i = worker_preauth_find(w, src);
	if (i >= 0 && w->preauth[i].n >= worker_preauth_cap(w->conf, src))
		return -EBUSY;
	if (i < 0) {
		if (w->npreauth_src == w->preauth_cap) {
			p = reallocarray(w->preauth,
					 (size_t)w->preauth_cap * 2 + 16,
					 sizeof(*p));
			if (p == NULL)
				return -ENOMEM;
			w->preauth = p;
			w->preauth_cap = w->preauth_cap * 2 + 16;
		}
		i = w->npreauth_src++;
		w->preauth[i].src = *src;
		w->preauth[i].n = 0;
	}
	w->preauth[i].n++;
	w->npreauth++;
	STATS_INC(&w->stats, preauth_conns);
	return 0;
}

/* Give back what worker_preauth_get(w, src) took. */
void
worker_preauth_put(struct worker *w, const struct addr *src)
{
	int i = worker_preauth_find(w, src);

	if (i < 0)
		return;
	if (--w->preauth[i].n == 0)
		w->preauth[i] = w->preauth[--w->npreauth_src];
	w->npreauth--;
	STATS_DEC(&w->stats, preauth_conns);
}

/*
 * A pipe for splice, from the worker's pool of empty ones.  Returns its
 * capacity in bytes, or -errno.
 */
int
worker_pipe_get(struct worker *w, int fds[2])
{
	int cap;

	if (w->npipes > 0) {
		w->npipes--;
		fds[0] = w->pipes[w->npipes][0];
		fds[1] = w->pipes[w->npipes][1];
		return w->pipe_cap[w->npipes];
	}
	if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) == -1)
		return -errno;
	/* a larger pipe moves more per splice; the default will do too */
	(void)fcntl(fds[1], F_SETPIPE_SZ, SESSION_PIPE_SIZE);
	cap = fcntl(fds[1], F_GETPIPE_SZ);
	return cap > 0 ? cap : 65536;
}

/* Give back a pipe (no-op if none); only an empty pipe may be pooled. */
void
worker_pipe_put(struct worker *w, int fds[2], size_t cap, bool empty)
{
	if (fds[0] == -1)
		return;
	if (empty && w->npipes < WORKER_PIPE_POOL) {
		w->pipes[w->npipes][0] = fds[0];
		w->pipes[w->npipes][1] = fds[1];
		w->pipe_cap[w->npipes] = (int)cap;
		w->npipes++;
	} else {
		close(fds[0]);
		close(fds[1]);
	}
	fds[0] = fds[1] = -1;
}

/*
 * The worker has no session left while stopping: tell the main thread,
 * once.  The worker goes on running (answering worker_call() for the
 * control socket) until worker_exit_all().
 */
void
worker_drained(struct worker *w)
{
	if (w->drained)
		return;
	__atomic_store_n(&w->drained, true, __ATOMIC_RELEASE);
	if (worker_done_ev != NULL)
		event_active(worker_done_ev, EV_TIMEOUT, 0);
}
