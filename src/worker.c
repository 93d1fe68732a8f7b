// SPDX-License-Identifier: BSD-2-Clause
/*
 * Worker threads (memcached style).  Each worker has its own event_base,
 * its own listeners (SO_REUSEPORT), sessions and statistics, and shares
 * nothing with the others on the data path.  The main thread talks to a
 * worker only by message: worker_post() queues a function to run on the
 * worker's thread, worker_call() does the same and waits for it.
 *
 * Workers hand connections to each other with worker_pass(), over a
 * second pipe of the receiving worker's.  A worker never waits for
 * another: when that pipe is full (a flood of handshakes asking for the
 * other worker, whose own flood asks for this one) the message is not
 * sent, counted (worker_msgs_dropped), and its sender resets what it
 * carried.  The main thread's messages have a pipe of their own, which
 * may block the main thread but is always drained: no worker waits on
 * anything while it runs.
 *
 * A rule's listeners are open while the rule is enabled and its peer is
 * not draining: an operator's `disable rule` or `drain peer` closes them
 * on every worker, and takes them out of systemd's store (new clients
 * are refused, open connections go on), and
 * `enable rule` or `undrain peer` opens them again.  The disabled rules
 * are kept by name, so a reload keeps them disabled while the name stays.
 *
 * Each worker's loop is busypoll.c's: it may poll for a while after
 * RDMA data-path work instead of sleeping (rdma.busy_poll).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "smcproxyd.h"
#include "llc_wire.h"

#include "worker.h"

/* Rules the operator disabled, by name (any thread; main writes). */
static pthread_mutex_t worker_rules_lock = PTHREAD_MUTEX_INITIALIZER;
static char (*worker_disabled)[CONF_NAME_MAX + 1];
static int worker_ndisabled;

static struct worker_listener *
worker_listener_find(struct worker *w, const struct addr *a,
		     enum worker_listen_kind kind)
{
	struct worker_listener *wl;

	LIST_FOREACH(wl, &w->listeners, entry)
		if (wl->kind == kind && addr_equal(listener_addr(wl->l), a))
			return wl;
	return NULL;
}

static int
worker_listen(struct worker *w, const struct addr *a,
	      enum worker_listen_kind kind, void *arg)
{
	static void (*const accept[])(struct worker *, int, void *) = {
		[WORKER_LISTEN_RULE] = accept_rule,
		[WORKER_LISTEN_PEER] = accept_peer,
		[WORKER_LISTEN_SMC] = smcr_accept,
	};
	struct worker_listener *wl;

	wl = worker_listener_find(w, a, kind);
	if (wl != NULL) {
		listener_set_arg(wl->l, arg);
		wl->seen = true;
		return 0;
	}
	wl = calloc(1, sizeof(*wl));
	if (wl == NULL)
		return -ENOMEM;
	wl->l = listener_new(w, a,
			     kind == WORKER_LISTEN_PEER ? "peer" :
			     kind == WORKER_LISTEN_SMC	? "smc" :
							  "rule",
			     kind == WORKER_LISTEN_SMC, accept[kind], arg);
	if (wl->l == NULL) {
		free(wl);
		return -errno;
	}
	if (kind == WORKER_LISTEN_PEER)
		listener_set_room(wl->l, worker_preauth_room);
	wl->kind = kind;
	wl->seen = true;
	LIST_INSERT_HEAD(&w->listeners, wl, entry);
	return 0;
}

/*
 * Bring the worker's listeners in line with conf: keep sockets whose
 * address stays (no queued connection is lost), open new ones, close the
 * ones no longer configured.  Runs on the worker's thread.
 */
static int
worker_listen_all(struct worker *w, struct conf *conf)
{
	struct worker_listener *wl, *next;
	int i, rc = 0;

	LIST_FOREACH(wl, &w->listeners, entry)
		wl->seen = false;
	for (i = 0; i < conf->nrules && rc == 0; i++)
		if (worker_rule_accepting(&conf->rules[i]))
			rc = worker_listen(w, &conf->rules[i].listen,
					   WORKER_LISTEN_RULE, &conf->rules[i]);
	if (rc == 0 && conf->has_peer_listen)
		rc = worker_listen(w, &conf->peer_listen, WORKER_LISTEN_PEER,
				   NULL);
	for (i = 0; i < conf->nexports && rc == 0; i++)
		if (conf->exports[i].smc_listen.len != 0)
			rc = worker_listen(w, &conf->exports[i].smc_listen,
					   WORKER_LISTEN_SMC,
					   &conf->exports[i]);
	LIST_FOREACH_SAFE(wl, &w->listeners, entry, next) {
		if (wl->seen)
			continue;
		LIST_REMOVE(wl, entry);
		listener_free(wl->l, false);
		free(wl);
	}
	return rc;
}

/* Whether the operator left rule @name enabled. */
bool
worker_rule_enabled(const char *name)
{
	bool on = true;
	int i;

	pthread_mutex_lock(&worker_rules_lock);
	for (i = 0; i < worker_ndisabled && on; i++)
		on = strcmp(worker_disabled[i], name) != 0;
	pthread_mutex_unlock(&worker_rules_lock);
	return on;
}

/* Whether rule r listens: enabled, and its peer not draining. */
bool
worker_rule_accepting(const struct conf_rule *r)
{
	return worker_rule_enabled(r->name) &&
	       (r->peer == NULL || !peer_draining(r->peer->name));
}

/* Mark rule @name (not) disabled; 0 or -ENOMEM. */
static int
worker_rule_mark(const char *name, bool enable)
{
	char(*p)[CONF_NAME_MAX + 1];
	int i, rc = 0;

	pthread_mutex_lock(&worker_rules_lock);
	for (i = 0; i < worker_ndisabled; i++)
		if (strcmp(worker_disabled[i], name) == 0)
			break;
	if (enable && i < worker_ndisabled) {
		memmove(worker_disabled[i], worker_disabled[--worker_ndisabled],
			sizeof(*worker_disabled));
	} else if (!enable && i == worker_ndisabled) {
		p = realloc(worker_disabled,
			    (size_t)(worker_ndisabled + 1) * sizeof(*p));
		if (p == NULL) {
			rc = -ENOMEM;
		} else {
			worker_disabled = p;
			snprintf(worker_disabled[worker_ndisabled++],
				 sizeof(*p), "%s", name);
		}
	}
	pthread_mutex_unlock(&worker_rules_lock);
	return rc;
}

/* Forget the disabled rules conf no longer has (after a reload). */
static void
worker_rules_prune(const struct conf *conf)
{
	int i, j;

	pthread_mutex_lock(&worker_rules_lock);
	for (i = 0; i < worker_ndisabled;) {
		for (j = 0; j < conf->nrules; j++)
			if (!strcmp(conf->rules[j].name, worker_disabled[i]))
				break;
		if (j < conf->nrules)
			i++;
		else
			memmove(worker_disabled[i],
				worker_disabled[--worker_ndisabled],
				sizeof(*worker_disabled));
	}
	pthread_mutex_unlock(&worker_rules_lock);
}

static void
worker_relisten_cb(struct worker *w, void *arg)
{
	int *rc = arg, r;

	/* stopping: the listeners stay closed */
	if (w->draining)
		return;
	r = worker_listen_all(w, w->conf);
	if (r && *rc == 0)
		*rc = r;
}

/*
 * Open and close the rule listeners of every worker to match the rules'
 * and peers' states (after `enable rule`, `drain peer` ...).  0, or
 * -errno when a listener could not be opened.
 */
int
worker_relisten_all(void)
{
	int i, rc = 0;

	for (i = 0; i < nworkers; i++)
		worker_call(&workers[i], worker_relisten_cb, &rc);
	return rc;
}

/*
 * Disable (close its listeners; its connections go on) or enable rule
 * @name.  0, -ENOMEM, or -errno when enabling could not listen: the rule
 * is then disabled again.
 */
int
worker_rule_enable(const char *name, bool enable)
{
	bool was = worker_rule_enabled(name);
	int rc;

	rc = worker_rule_mark(name, enable);
	if (rc == 0)
		rc = worker_relisten_all();
	if (rc && enable && !was) {
		worker_rule_mark(name, false);
		worker_relisten_all();
	}
	return rc;
}

/*
 * Stop listening (stopping, or not starting): the sockets stay in
 * systemd's store, where the next process takes them with what queued.
 */
static void
worker_listeners_close(struct worker *w)
{
	struct worker_listener *wl;

	while ((wl = LIST_FIRST(&w->listeners)) != NULL) {
		LIST_REMOVE(wl, entry);
		listener_free(wl->l, true);
		free(wl);
	}
}

struct worker_reconf {
	struct conf *conf;
	int rc;
};

/* Whether what was authenticated under peer still is under conf. */
static bool
worker_peer_kept(const struct conf *conf, const struct conf_peer *peer)
{
	const struct conf_peer *now = conf_peer_find(conf, peer->name);

	return now != NULL && conf_peer_auth_same(now, peer);
}

/*
 * After a reload: what was authenticated under a peer entry that changed
 * (key, address, insecure, any_source) or went is revoked.  Its
 * connections close (auth_failed) and its link groups end, and with them
 * the rkeys the peer holds into our buffers; a new connection has to
 * authenticate under the new entry.
 */
static void
worker_revoke(struct worker *w, const struct conf *conf)
{
	struct lgr_ctx *ctx = worker_lgr(w);
	struct session *s, *snext;
	struct lgr *lgr, *lnext;

	LIST_FOREACH_SAFE(s, &w->sessions, entry, snext) {
		if (s->peer == NULL || worker_peer_kept(conf, s->peer))
			continue;
		log_info("conn 0x%llx: peer %s %s on reload: closing",
			 (unsigned long long)s->id, s->peer->name,
			 conf_peer_find(conf, s->peer->name) ? "changed" :
							       "removed");
		session_close(s, SESSION_AUTH_FAILED);
	}
	if (ctx == NULL)
		return;
	for (lgr = lgr_next(ctx, NULL); lgr != NULL; lgr = lnext) {
		lnext = lgr_next(ctx, lgr);
		/* a kernel peer's group stays while kernel_smc still serves
		 * its EID and, a client's, its host */
		if (lgr_is_ending(lgr) ||
		    (lgr_is_smcr(lgr) ? lgr_smcr_kept(lgr, &conf->smcr) :
					worker_peer_kept(conf, lgr_peer(lgr))))
			continue;
		log_info("lgr %u: peer %s %s on reload: ending its link group",
			 lgr_id(lgr), lgr_peer(lgr)->name,
			 lgr_is_smcr(lgr) ?
				 (conf->smcr.enabled ?
					  "(kernel_smc: its host or EID) "
					  "no longer allowed" :
					  "(kernel_smc) removed") :
			 conf_peer_find(conf, lgr_peer(lgr)->name) ? "changed" :
								     "removed");
		lgr_terminate(lgr, LLC_DEL_PROG_INIT_TERM, true, false);
	}
}

static void
worker_reconf_cb(struct worker *w, void *arg)
{
	struct worker_reconf *r = arg;
	struct conf *old = w->conf;

	w->conf = conf_hold(r->conf);
	r->rc = worker_listen_all(w, w->conf);
	worker_revoke(w, w->conf);
	if (old != NULL)
		conf_drop(old);
}

/*
 * Switch every worker to conf (after a reload).  Sessions keep the config
 * they started with.  0, or -errno if a listener could not be opened.
 */
int
worker_reconfigure_all(struct conf *conf)
{
	struct worker_reconf r;
	int i, rc = 0;

	worker_rules_prune(conf);
	for (i = 0; i < nworkers; i++) {
		r.conf = conf;
		r.rc = 0;
		worker_call(&workers[i], worker_reconf_cb, &r);
		if (r.rc && rc == 0)
			rc = r.rc;
	}
	return rc;
}

static void
worker_drain_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;

	if (w->nsessions > 0)
		log_info("worker %d: %s, closing %d connections", w->id,
			 what & EV_TIMEOUT ? "shutdown timeout" :
					     "drain cut short",
			 w->nsessions);
	accept_close_all(w, SESSION_SHUTDOWN);
	worker_drained(w);
}

static void
worker_stop_cb(struct worker *w, void *arg)
{
	struct timeval tv = {*(int *)arg, 0};

	worker_listeners_close(w);
	w->draining = true;
	if (w->nsessions == 0) {
		worker_drained(w);
		return;
	}
	log_info("worker %d: draining %d connections (up to %d s)", w->id,
		 w->nsessions, (int)tv.tv_sec);
	evtimer_add(w->drain_ev, &tv);
}

/*
 * Stop accepting everywhere and let open sessions finish within timeout
 * seconds; the rest are closed with reason "shutdown".  done (an event
 * of the main thread's base, or NULL) is made active each time a worker
 * has no session left; worker_all_drained() tells when all have.
 */
void
worker_stop_all(int timeout, struct event *done)
{
	static int t;
	int i;

	t = timeout;
	worker_done_ev = done;
	for (i = 0; i < nworkers; i++)
		worker_post(&workers[i], worker_stop_cb, &t);
}

static void
worker_stop_now_cb(struct worker *w, void *arg)
{
	if (!w->draining || w->drained)
		return;
	evtimer_del(w->drain_ev);
	worker_drain_timeout(-1, 0, w);
}

/* Cut the drain short: close what is still open now (after stop_all). */
void
worker_stop_now_all(void)
{
	int i;

	for (i = 0; i < nworkers; i++)
		worker_post(&workers[i], worker_stop_now_cb, NULL);
}

static unsigned worker_ping_seq; /* the main thread's */

static void
worker_pong_cb(struct worker *w, void *arg)
{
	__atomic_store_n(&w->pong, (unsigned)(uintptr_t)arg, __ATOMIC_RELEASE);
}

/*
 * For the watchdog: ask every worker's loop to answer.  The main thread
 * pings again only once all have answered (worker_unanswered() < 0), so a
 * stuck worker never has more than one ping waiting in its pipe.
 */
void
worker_ping_all(void)
{
	int i;

	worker_ping_seq++;
	for (i = 0; i < nworkers; i++)
		worker_post(&workers[i], worker_pong_cb,
			    (void *)(uintptr_t)worker_ping_seq);
}

/* The id of a worker that has not answered the last ping, or -1. */
int
worker_unanswered(void)
{
	int i;

	for (i = 0; i < nworkers; i++)
		if (__atomic_load_n(&workers[i].pong, __ATOMIC_ACQUIRE) !=
		    worker_ping_seq)
			return workers[i].id;
	return -1;
}

/* Whether every worker has drained since worker_stop_all(). */
bool
worker_all_drained(void)
{
	int i;

	for (i = 0; i < nworkers; i++)
		if (!__atomic_load_n(&workers[i].drained, __ATOMIC_ACQUIRE))
			return false;
	return true;
}

static void
worker_exit_cb(struct worker *w, void *arg)
{
	busy_poll_exit(w->base);
}

/* End every worker's loop (once drained); worker_join_all() waits. */
void
worker_exit_all(void)
{
	int i;

	for (i = 0; i < nworkers; i++)
		worker_post(&workers[i], worker_exit_cb, NULL);
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	struct busy_poll bp;

	w->lgr = lgr_worker_new(w);
	if (w->lgr != NULL)
		w->rdma = session_rdma_worker_new(w, w->lgr);
	if (w->rdma == NULL)
		log_warnx("worker %d: out of memory: RDMA data path off",
			  w->id);
	busy_poll_init(&bp, w->conf->rdma.busy_poll,
		       (uint32_t)w->conf->rdma.busy_poll_us, 0, &w->stats);
	if (bp.mode != w->conf->rdma.busy_poll && w->conf->rdma.busy_poll_us)
		log_info("worker %d: adaptive busy polling off: "
			 "it may run on one CPU only",
			 w->id);
	busy_poll_loop(w->base, &bp);
	accept_close_all(w, SESSION_SHUTDOWN);
	session_rdma_worker_free(w->rdma);
	w->rdma = NULL;
	lgr_ctx_free(w->lgr);
	w->lgr = NULL;
	return NULL;
}

static int
worker_init(struct worker *w, int id, struct conf *conf)
{
	w->id = id;
	w->msg_fd[0] = w->msg_fd[1] = -1;
	w->pass_fd[0] = w->pass_fd[1] = -1;
	LIST_INIT(&w->strangers);
	LIST_INIT(&w->sessions);
	LIST_INIT(&w->listeners);
	w->base = event_base_new();
	if (w->base == NULL)
		return -ENOMEM;
	if (pipe2(w->msg_fd, O_CLOEXEC) == -1)
		return -errno;
	if (fcntl(w->msg_fd[0], F_SETFL, O_NONBLOCK) == -1)
		return -errno;
	if (pipe2(w->pass_fd, O_CLOEXEC | O_NONBLOCK) == -1)
		return -errno;
	w->msg_ev = event_new(w->base, w->msg_fd[0], EV_READ | EV_PERSIST,
			      worker_msg_cb, w);
	w->pass_ev = event_new(w->base, w->pass_fd[0], EV_READ | EV_PERSIST,
			       worker_msg_cb, w);
	w->drain_ev = evtimer_new(w->base, worker_drain_timeout, w);
	if (w->msg_ev == NULL || w->pass_ev == NULL || w->drain_ev == NULL ||
	    event_add(w->msg_ev, NULL) || event_add(w->pass_ev, NULL))
		return -ENOMEM;
	w->conf = conf_hold(conf);
	return worker_listen_all(w, conf);
}

/*
 * Create conf->workers workers, open their listeners and start their
 * threads with every signal blocked (signals belong to the main thread).
 * 0 or -errno; on error nothing is left running.
 */
int
worker_start_all(struct conf *conf)
{
	sigset_t all, old;
	int i, rc;

	workers = calloc((size_t)conf->workers, sizeof(*workers));
	if (workers == NULL)
		return -ENOMEM;
	nworkers = conf->workers;
	auth_limit_init(&worker_auth_limit);
	for (i = 0; i < nworkers; i++) {
		rc = worker_init(&workers[i], i, conf);
		if (rc)
			goto fail;
	}
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (i = 0; i < nworkers; i++) {
		rc = -pthread_create(&workers[i].thread, NULL, worker_main,
				     &workers[i]);
		if (rc)
			fatalx("worker thread: pthread_create: %s",
			       strerror(-rc));
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return 0;
fail:
	for (i = 0; i < nworkers; i++)
		worker_listeners_close(&workers[i]);
	return rc;
}

/* Wait for every worker thread to end and free the workers. */
void
worker_join_all(void)
{
	struct worker *w;
	int i;

	for (i = 0; i < nworkers; i++) {
		w = &workers[i];
		pthread_join(w->thread, NULL);
		worker_listeners_close(w);
		while (w->npipes > 0) {
			w->npipes--;
			close(w->pipes[w->npipes][0]);
			close(w->pipes[w->npipes][1]);
		}
		event_free(w->msg_ev);
		event_free(w->pass_ev);
		event_free(w->drain_ev);
		event_base_free(w->base);
		free(w->preauth);
		close(w->msg_fd[0]);
		close(w->msg_fd[1]);
		close(w->pass_fd[0]);
		close(w->pass_fd[1]);
		conf_drop(w->conf);
	}
	free(workers);
	workers = NULL;
	nworkers = 0;
	auth_limit_destroy(&worker_auth_limit);
	free(worker_disabled);
	worker_disabled = NULL;
	worker_ndisabled = 0;
}
