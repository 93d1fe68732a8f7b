// SPDX-License-Identifier: BSD-2-Clause
/*
 * A connection over RDMA whose link group ended (docs/protocol.md,
 * "Resuming a connection"): it keeps its sockets, send ring and RMB
 * element and moves, from the exact byte, to a new group (CONN_RESUME),
 * or, when RDMA to the peer cannot be had again, to a TCP connection to
 * the peer port for the rest of its life.  Over TCP the client side is
 * the fallback's own handshake (fallback_resume): a RESUMED is believed
 * only after the peer proved its key and accepted.
 *
 * What a resume holds is allocated only while it runs (struct resume).
 * Every attempt has a deadline of seconds (a CONN_RESUME unanswered, a
 * TCP handshake that stalls), after which the next begins; the whole
 * resume has resume_timeout, and the rule's or export's idle_timeout
 * when shorter.  A peer holds at most peers[].max_resuming resuming
 * connections of a worker, within its buffer_share as before.
 */
#include <sys/socket.h>
#include <sys/uio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <jansson.h>

#include "session_rdma.h"
#include "fallback_wire.h"
#include "wire.h"

#define RESUME_TICK_MS 1000   /* rule side: next try for a group */
#define RESUME_ANSWER_MS 5000 /* a CONN_RESUME unanswered: ask again */

struct resume {
	struct session_rdma *sr;
	TAILQ_ENTRY(resume) entry; /* on srw->resuming */
	uint8_t peer_sysid[8]; /* the peer daemon's, of the group it was on */
	uint8_t peer_worker;   /* and its worker there + 1 (0: unknown) */
	bool sent;	       /* opener: an attempt is out (RDMA or TCP) */
	bool tcp;	       /* ... over TCP: fallback_resume runs */
	uint64_t since_ms;     /* the group ended */
	uint64_t sent_ms;      /* the CONN_RESUME went */
	uint64_t seen;	       /* resume_tick's pass that handled it */
	/* acceptor: what the answer's resume applies, once it went out */
	uint64_t res_rx, res_fin;
	uint32_t res_rkey;
};

static void resume_tcp_start(struct session_rdma *sr);

static bool
resume_id_set(const struct session_rdma *sr)
{
	return !wire_all_zero(sr->resume_id, sizeof(sr->resume_id));
}

static void
resume_soon(struct session_rdma_worker *srw, unsigned int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

	if (ms == 0 || !evtimer_pending(srw->resume_ev, NULL))
		evtimer_add(srw->resume_ev, &tv);
}

/* sr resumes no more (relays again, or goes): its resume state goes. */
void
resume_end(struct session_rdma *sr)
{
	struct session_rdma_worker *srw = sr->srw;
	struct resume *res = sr->res;

	if (res == NULL)
		return;
	if (res->tcp)
		fallback_hs_free(sr->s);
	TAILQ_REMOVE(&srw->resuming, res, entry);
	srw->nresuming--;
	srw->resume_ends++;
	if (sr->share != NULL && sr->share->nresuming > 0)
		sr->share->nresuming--;
	STATS_DEC(worker_stats(sr->s->w), conns_resuming);
	sr->res = NULL;
	free(res);
}

/* Whether sr, an opener, waits for the answer to an attempt. */
bool
resume_waiting(const struct session_rdma *sr)
{
	return sr->res != NULL && sr->res->sent;
}

/*
 * The session's timer while resuming: resume_timeout from when the
 * group ended, or the idle timeout from the last byte if sooner.
 */
static void
resume_timer(struct session_rdma *sr)
{
	struct session *s = sr->s;
	uint64_t now = now_ms(), left, gone;
	int idle = session_idle_timeout(s);

	left = (uint64_t)s->conf->resume_timeout * 1000;
	gone = now - sr->res->since_ms;
	left = gone < left ? left - gone : 1;
	if (idle > 0) {
		gone = now - s->active_ms;
		if (gone >= (uint64_t)idle * 1000)
			left = 1;
		else if ((uint64_t)idle * 1000 - gone < left)
			left = (uint64_t)idle * 1000 - gone;
	}
	session_timer_ms(s, (int)(left < INT32_MAX ? left : INT32_MAX));
}

/*
 * The group under sr ended, or a request to move it came (from: the
 * group it was on, which ended when ended; NULL when sr resumes already
 * and an attempt of it was lost), and the peer daemon may still have the
 * connection: sr keeps its sockets, ring and RMB element and waits, from
 * the first time on, for a new group to move to.  The rule side sets one
 * up (resume_tick); the export side waits to be asked.  false when it
 * cannot resume (then it is reset as before).
 */
bool
resume_begin(struct session_rdma *sr, const struct lgr *from, bool ended)
{
	struct session *s = sr->s;
	struct session_rdma_worker *srw = sr->srw;
	struct resume *res = sr->res;
	const struct conf_peer *p = s->peer;

	if (s->conf->resume_timeout <= 0 || !resume_id_set(sr) ||
	    worker_draining(s->w) || (res == NULL && from == NULL) ||
	    (from != NULL && ended && !lgr_resumable(from)))
		return false;
	if (res == NULL) {
		if (sr->share != NULL &&
		    sr->share->nresuming >= (unsigned int)p->max_resuming) {
			STATS_INC(worker_stats(s->w), resume_failed_limit);
			log_warnx("conn 0x%llx: peer %s has %u connections "
				  "resuming on this worker (max_resuming): "
				  "reset",
				  session_rdma_conn_id(sr), p->name,
				  sr->share->nresuming);
			return false;
		}
		res = calloc(1, sizeof(*res));
		if (res == NULL)
			return false;
		res->sr = sr;
		res->since_ms = now_ms();
		memcpy(res->peer_sysid, lgr_peer_system_id(from),
		       sizeof(res->peer_sysid));
		res->peer_worker = lgr_peer_worker(from);
		sr->res = res;
		TAILQ_INSERT_HEAD(&srw->resuming, res, entry);
		srw->nresuming++;
		if (sr->share != NULL)
			sr->share->nresuming++;
		STATS_INC(worker_stats(s->w), conns_resuming);
		log_info("conn 0x%llx: %s %s: link group %u %s: resuming "
			 "(sent %llu, received %llu bytes)",
			 session_rdma_conn_id(sr),
			 s->role == SESSION_ROLE_RULE ? "rule" : "export",
			 s->role == SESSION_ROLE_RULE ? s->rule->name :
							s->export->name,
			 lgr_id(from), ended ? "ended" : "is left",
			 (unsigned long long)tx_fin_off(sr->rc),
			 (unsigned long long)rx_received_off(sr->rc));
	}
	tx_detach(sr->rc);
	lgr_conn_del(&sr->lc);
	sr->failover_to = NULL;
	res->sent = false;
	memset(sr->told, 0, sizeof(sr->told));
	s->state = SESSION_RESUMING;
	resume_timer(sr);
	if (s->role == SESSION_ROLE_RULE)
		resume_soon(srw, 0);
	session_rdma_conn_kick(sr);
	return true;
}

/* sr resumes no more: reset its connection, counted under stat. */
void
resume_fail(struct session_rdma *sr, enum stats_id stat, const char *why)
{
	stats_add(worker_stats(sr->s->w), stat, 1);
	log_warnx("conn 0x%llx: %s %s: not resumed after %llu ms: %s",
		  session_rdma_conn_id(sr),
		  sr->s->role == SESSION_ROLE_RULE ? "rule" : "export",
		  sr->s->role == SESSION_ROLE_RULE ? sr->s->rule->name :
						     sr->s->export->name,
		  sr->res != NULL ?
			  (unsigned long long)(now_ms() - sr->res->since_ms) :
			  0ULL,
		  why);
	session_rdma_conn_fail(sr, SESSION_RESUME_FAILED);
}

/* The session's timer fired while resuming: which deadline passed. */
void
resume_timeout(struct session_rdma *sr)
{
	struct session *s = sr->s;
	int idle = session_idle_timeout(s);

	if (sr->res == NULL)
		return;
	if (now_ms() - sr->res->since_ms >=
	    (uint64_t)s->conf->resume_timeout * 1000) {
		resume_fail(sr, STAT_resume_failed_timeout,
			    "resume_timeout passed");
		return;
	}
	if (idle > 0 && now_ms() - s->active_ms >= (uint64_t)idle * 1000) {
		resume_fail(sr, STAT_resume_failed_timeout,
			    "idle_timeout passed");
		return;
	}
	resume_timer(sr);
}

/* sr is on its new group and relays again. */
static void
resume_done(struct session_rdma *sr, struct lgr_link *link)
{
	struct session *s = sr->s;
	uint64_t since = sr->res->since_ms;

	resume_end(sr);
	s->state = SESSION_RELAY;
	STATS_INC(worker_stats(s->w), conns_resumed_rdma);
	session_timer(s, 0);
	if (session_idle_timeout(s))
		session_timer(s, session_idle_timeout(s));
	log_info("conn 0x%llx: resumed on lgr %u link %u after %llu ms "
		 "(from byte %llu sent, %llu received)",
		 session_rdma_conn_id(sr), lgr_id(lgr_link_group(link)),
		 lgr_link_id(link), (unsigned long long)(now_ms() - since),
		 (unsigned long long)tx_fin_off(sr->rc),
		 (unsigned long long)rx_received_off(sr->rc));
	session_rdma_conn_told_set(sr, lgr_link_id(link));
	session_rdma_conn_rkeys_announce(sr);
	session_rdma_conn_kick(sr);
}

/*
 * Join lgr for a resume (on link, NULL: its least used): the ring and
 * the RMB element lose the keys of the old group and get the new
 * group's.  The RMB's MR on the joined link, or NULL (sr not joined).
 */
static const struct dev_mr *
resume_join(struct session_rdma *sr, struct lgr *lgr, struct lgr_link *link)
{
	const struct dev_mr *mr;

	if (lgr_conn_add_on(lgr, &sr->lc, link))
		return NULL;
	buf_mr_drop(tx_sndbuf(sr->rc));
	buf_mr_drop(rx_rmb(sr->rc));
	mr = session_rdma_conn_mr(sr->srw, rx_rmb(sr->rc), sr->lc.link);
	if (mr == NULL || session_rdma_conn_mr(sr->srw, tx_sndbuf(sr->rc),
					       sr->lc.link) == NULL) {
		lgr_conn_del(&sr->lc);
		return NULL;
	}
	return mr;
}

/* Opener: ask the peer to move sr onto lgr.  0 or -errno (try later). */
static int
resume_send(struct session_rdma *sr, struct lgr *lgr)
{
	const struct dev_mr *mr = resume_join(sr, lgr, NULL);
	struct llc_info m;
	int rc;

	if (mr == NULL)
		return -ENOBUFS;
	memset(&m, 0, sizeof(m));
	m.type = LLC_CONN_RESUME;
	memcpy(m.conn_resume.resume_id, sr->resume_id, sizeof(sr->resume_id));
	m.conn_resume.token = sr->lc.token;
	m.conn_resume.rmb_rkey = mr->rkey;
	m.conn_resume.rx_off = rx_received_off(sr->rc);
	m.conn_resume.tx_fin = tx_fin_off(sr->rc);
	rc = session_rdma_conn_llc_send(sr, sr->lc.link, &m, NULL);
	if (rc < 0) {
		lgr_conn_del(&sr->lc);
		return rc;
	}
	sr->res->sent = true;
	sr->res->sent_ms = now_ms();
	log_debug("conn 0x%llx: CONN_RESUME on lgr %u link %u (received "
		  "%llu, sent %llu)",
		  session_rdma_conn_id(sr), lgr_id(lgr),
		  lgr_link_id(sr->lc.link),
		  (unsigned long long)m.conn_resume.rx_off,
		  (unsigned long long)m.conn_resume.tx_fin);
	return 0;
}

/*
 * Opener: the CONN_RESUME out for longer than RESUME_ANSWER_MS (the
 * peer holds its answer, or it was lost with a link): leave the group
 * and ask again at the next try.
 */
static void
resume_unanswered(struct session_rdma *sr)
{
	log_info("conn 0x%llx: CONN_RESUME unanswered for %d ms: asking "
		 "again",
		 session_rdma_conn_id(sr), RESUME_ANSWER_MS);
	STATS_INC(worker_stats(sr->s->w), resume_retries);
	lgr_conn_del(&sr->lc);
	sr->res->sent = false;
}

/* One connection's turn in resume_tick (rule side). */
static void
resume_try(struct session_rdma_worker *srw, struct session_rdma *sr)
{
	struct resume *res = sr->res;
	struct lgr *lgr;
	bool coming;

	if (res->sent && !res->tcp &&
	    now_ms() - res->sent_ms >= RESUME_ANSWER_MS)
		resume_unanswered(sr);
	if (res->sent)
		return;
	/* the connection can only move within the peer's worker */
	lgr = lgr_client_on(srw->ctx, sr->s->peer, res->peer_worker, &coming);
	if (lgr == NULL) {
		if (!coming &&
		    lgr_client_new_on(srw->ctx, sr->s->peer, -1,
				      res->peer_worker, true) == NULL)
			/* no device of ours reaches it: over TCP */
			resume_tcp_start(sr);
		return;
	}
	if (!lgr_peer_is(lgr, res->peer_sysid)) {
		resume_fail(sr, STAT_resume_failed_peer_gone,
			    "the peer daemon restarted");
		return;
	}
	if (resume_send(sr, lgr) != 0)
		log_debug("conn 0x%llx: CONN_RESUME on lgr %u: later",
			  session_rdma_conn_id(sr), lgr_id(lgr));
}

/*
 * Soon after a group ended and then every RESUME_TICK_MS while
 * connections wait: each rule-side one goes to an active group to its
 * peer if there is one (a peer daemon that restarted since has lost it:
 * reset), else a new group is set up, the fallback's back-off
 * notwithstanding; an unanswered attempt past its deadline is given up
 * for the next.  What one connection's turn does may end others (a group
 * that fails at once ends the resumes of its peer): then the walk starts
 * again from the head, skipping those done this pass.
 */
void
resume_tick(evutil_socket_t fd, short what, void *arg)
{
	struct session_rdma_worker *srw = arg;
	uint64_t pass = ++srw->resume_pass, ends;
	struct resume *res;
	bool again = false;

restart:
	ends = srw->resume_ends;
	TAILQ_FOREACH(res, &srw->resuming, entry) {
		if (res->seen == pass)
			continue;
		res->seen = pass;
		if (res->sr->s->role != SESSION_ROLE_RULE || res->sr->closing)
			continue;
		again = true;
		resume_try(srw, res->sr);
		if (srw->resume_ends != ends)
			goto restart;
	}
	if (again)
		resume_soon(srw, RESUME_TICK_MS);
}

/*
 * A group to peer became active (role as given) or a client group's
 * setup failed (refused: nobody listens on the peer port).  Connections
 * of a daemon instance that is gone are reset at once: a new group from
 * another instance (its system id) or a refused connect says so.
 */
void
resume_peer(struct session_rdma_worker *srw, struct lgr *lgr, bool failed)
{
	enum session_role role = lgr_role(lgr) == LGR_ROLE_CLIENT ?
					 SESSION_ROLE_RULE :
					 SESSION_ROLE_EXPORT;
	struct session_rdma *sr;
	struct resume *res;
	uint64_t ends;

restart:
	ends = srw->resume_ends;
	TAILQ_FOREACH(res, &srw->resuming, entry) {
		sr = res->sr;
		if (sr->s->role != role || sr->closing ||
		    strcmp(sr->s->peer->name, lgr_peer(lgr)->name) != 0)
			continue;
		if (failed && lgr_refused(lgr))
			resume_fail(sr, STAT_resume_failed_peer_gone,
				    "the peer daemon does not listen on its "
				    "peer port");
		else if (failed && lgr_tcp_connected(lgr) && !res->sent)
			/* its daemon answers, RDMA does not: over TCP */
			resume_tcp_start(sr);
		else if (!failed && !lgr_peer_is(lgr, res->peer_sysid))
			resume_fail(sr, STAT_resume_failed_peer_gone,
				    "the peer daemon restarted");
		if (srw->resume_ends != ends)
			goto restart;
	}
	if (!failed && role == SESSION_ROLE_RULE && srw->nresuming > 0)
		resume_soon(srw, 0);
}

/*
 * Find the export-side connection of ours that resume id names, from
 * peer (asking on lgr, or over TCP with NULL).
 */
static struct session_rdma *
resume_find(struct session_rdma_worker *srw, const char *peer,
	    const struct lgr *lgr, const uint8_t *id)
{
	struct session_rdma *sr;
	struct resume *res;
	struct lgr *old;
	struct lgr_conn *c;

	TAILQ_FOREACH(res, &srw->resuming, entry) {
		sr = res->sr;
		if (sr->s->role == SESSION_ROLE_EXPORT &&
		    memcmp(sr->resume_id, id, LLC_RESUME_ID_LEN) == 0 &&
		    strcmp(sr->s->peer->name, peer) == 0)
			return sr;
	}
	/* its old group may not have noticed yet that it is gone */
	for (old = lgr_next(srw->ctx, NULL); old != NULL;
	     old = lgr_next(srw->ctx, old)) {
		if (old == lgr || lgr_role(old) != LGR_ROLE_SERVER ||
		    !lgr_is_active(old) ||
		    strcmp(lgr_peer(old)->name, peer) != 0)
			continue;
		for (c = lgr_conn_next(old, NULL); c != NULL;
		     c = lgr_conn_next(old, c)) {
			sr = c->arg;
			if (sr->rc != NULL && sr->s->state == SESSION_RELAY &&
			    memcmp(sr->resume_id, id, LLC_RESUME_ID_LEN) == 0)
				return sr;
		}
	}
	return NULL;
}

/*
 * Acceptor: the answer went out (status 0) and the connection moves to
 * its new link; or it could not go (the link failed meanwhile): sr
 * leaves the new group and waits to be asked again.
 */
static void
resume_answer_sent(struct session_rdma *sr, int status)
{
	struct lgr_link *link = sr->lc.link;
	struct resume *res = sr->res;
	const struct dev_mr *mr;
	const char *why;
	int rc;

	if (link == NULL || sr->closing || res == NULL)
		return;
	if (status) {
		log_info("conn 0x%llx: resume answer lost with its link: "
			 "waiting to be asked again",
			 session_rdma_conn_id(sr));
		lgr_conn_del(&sr->lc);
		return;
	}
	mr = session_rdma_conn_mr(sr->srw, tx_sndbuf(sr->rc), link);
	rc = mr != NULL ?
		     tx_resume(sr->rc, lgr_link_wr(link), mr->lkey,
			       res->res_rkey, res->res_rx, res->res_fin, &why) :
		     -ENOKEY;
	if (rc) {
		resume_fail(sr, STAT_resume_failed_protocol,
			    rc == -EPROTO ? why : strerror(-rc));
		return;
	}
	resume_done(sr, link);
}

/* Acceptor: the opener asks to move a connection onto link's group. */
static void
resume_asked(struct session_rdma_worker *srw, struct lgr_link *link,
	     const struct llc_conn_resume_info *r)
{
	struct lgr *lgr = lgr_link_group(link);
	struct session_rdma *sr =
		resume_find(srw, lgr_peer(lgr)->name, lgr, r->resume_id);
	const struct dev_mr *mr;
	struct llc_info m;
	uint64_t rx, fin;
	const char *why;
	int rc;

	if (sr == NULL) {
		log_info("lgr %u: peer %s: CONN_RESUME for a connection we do "
			 "not have (token %u): refused",
			 lgr_id(lgr), lgr_peer(lgr)->name, r->token);
		(void)session_rdma_conn_reject(link, r->token,
					       SESSION_RESUME_FAILED);
		return;
	}
	if (sr->s->state == SESSION_RELAY &&
	    !resume_begin(sr, sr->lc.lgr, false)) {
		(void)session_rdma_conn_reject(link, r->token,
					       SESSION_RESUME_FAILED);
		session_rdma_conn_fail(sr, SESSION_LINK_FAILED);
		return;
	}
	if (sr->lc.lgr != NULL || sr->over_tcp ||
	    !lgr_peer_is(lgr, sr->res->peer_sysid)) {
		log_info("lgr %u: peer %s: CONN_RESUME for conn 0x%llx: "
			 "refused (%s)",
			 lgr_id(lgr), lgr_peer(lgr)->name,
			 session_rdma_conn_id(sr),
			 sr->lc.lgr != NULL || sr->over_tcp ?
				 "it is moving already" :
				 "another daemon instance");
		(void)session_rdma_conn_reject(link, r->token,
					       SESSION_RESUME_FAILED);
		return;
	}
	if (tx_resume_check(sr->rc, r->rx_off, r->tx_fin, &rx, &fin, &why)) {
		(void)session_rdma_conn_reject(link, r->token,
					       SESSION_PROTOCOL_ERROR);
		resume_fail(sr, STAT_resume_failed_protocol, why);
		return;
	}
	mr = resume_join(sr, lgr, link);
	if (mr != NULL &&
	    lgr_conn_peer_rmb(&sr->lc, link, r->rmb_rkey, sr->peer_rmb.vaddr)) {
		lgr_conn_del(&sr->lc);
		mr = NULL;
	}
	if (mr == NULL) {
		(void)session_rdma_conn_reject(link, r->token,
					       SESSION_RESOURCE);
		resume_fail(sr, STAT_conns_rdma_nobufs,
			    "no buffers on the new group");
		return;
	}
	sr->peer_token = r->token;
	tx_peer_token_set(sr->rc, r->token);
	sr->res->res_rkey = r->rmb_rkey;
	sr->res->res_rx = r->rx_off;
	sr->res->res_fin = r->tx_fin;
	memset(&m, 0, sizeof(m));
	m.type = LLC_CONN_RESUME;
	m.flags = LLC_FLAG_RESP;
	memcpy(m.conn_resume.resume_id, sr->resume_id, sizeof(sr->resume_id));
	m.conn_resume.token = sr->lc.token;
	m.conn_resume.rmb_rkey = mr->rkey;
	m.conn_resume.rx_off = rx;
	m.conn_resume.tx_fin = fin;
	rc = session_rdma_conn_llc_send(sr, link, &m, resume_answer_sent);
	if (rc < 0) {
		lgr_conn_del(&sr->lc);
		log_debug("conn 0x%llx: resume answer: %s",
			  session_rdma_conn_id(sr), strerror(-rc));
		return; /* the opener asks again on its next group */
	}
	if (rc == 0)
		resume_answer_sent(sr, 0);
}

/* Opener: the answer to our CONN_RESUME. */
static void
resume_answered(struct lgr_link *link, const struct llc_conn_resume_info *r)
{
	struct lgr *lgr = lgr_link_group(link);
	struct lgr_conn *c;
	struct session_rdma *sr = NULL;
	const struct dev_mr *mr;
	const char *why;
	int rc;

	for (c = lgr_conn_next(lgr, NULL); c != NULL;
	     c = lgr_conn_next(lgr, c)) {
		sr = c->arg;
		if (resume_waiting(sr) && !sr->res->tcp &&
		    memcmp(sr->resume_id, r->resume_id, LLC_RESUME_ID_LEN) == 0)
			break;
	}
	if (c == NULL) {
		log_warnx("lgr %u: CONN_RESUME answer for no connection "
			  "waiting: ignored",
			  lgr_id(lgr));
		return;
	}
	sr->peer_token = r->token;
	tx_peer_token_set(sr->rc, r->token);
	mr = lgr_conn_peer_rmb(&sr->lc, link, r->rmb_rkey,
			       sr->peer_rmb.vaddr) == 0 ?
		     session_rdma_conn_mr(sr->srw, tx_sndbuf(sr->rc),
					  sr->lc.link) :
		     NULL;
	rc = mr != NULL ? tx_resume(sr->rc, lgr_link_wr(sr->lc.link), mr->lkey,
				    r->rmb_rkey, r->rx_off, r->tx_fin, &why) :
			  -ENOKEY;
	if (rc == -EPROTO) {
		resume_fail(sr, STAT_resume_failed_protocol, why);
		lgr_protocol_error(lgr, why);
		return;
	}
	if (rc) {
		/* the new link is down too: its group's end brings us back */
		log_debug("conn 0x%llx: resume: %s", session_rdma_conn_id(sr),
			  strerror(-rc));
		return;
	}
	resume_done(sr, sr->lc.link);
}

/* CONN_RESUME on link: a request (export side) or an answer. */
void
resume_rx(struct session_rdma_worker *srw, struct lgr_link *link,
	  const struct llc_info *m)
{
	struct lgr *lgr = lgr_link_group(link);

	if (!lgr_has_feature(lgr, CLC_FEAT_RESUME)) {
		lgr_protocol_error(lgr, "CONN_RESUME not negotiated");
		return;
	}
	if (m->flags & LLC_FLAG_RESP) {
		if (lgr_role(lgr) == LGR_ROLE_CLIENT)
			resume_answered(link, &m->conn_resume);
		else
			lgr_protocol_error(lgr,
					   "CONN_RESUME answer to a server");
		return;
	}
	if (lgr_role(lgr) == LGR_ROLE_SERVER)
		resume_asked(srw, link, &m->conn_resume);
	else
		lgr_protocol_error(lgr, "CONN_RESUME asked of a client");
}

/* ---- resuming over TCP (docs/protocol.md) ---- */

/* The index in fd[] of the TCP connection sr resumes over. */
static int
resume_u(const struct session_rdma *sr)
{
	return 1 - sr->t;
}

/* Close the TCP connection of an attempt that did not get through. */
static void
resume_tcp_drop(struct session_rdma *sr)
{
	struct session *s = sr->s;
	int u = resume_u(sr);

	if (s->rev[u] != NULL)
		event_free(s->rev[u]);
	if (s->wev[u] != NULL)
		event_free(s->wev[u]);
	s->rev[u] = s->wev[u] = NULL;
	if (s->fd[u] >= 0)
		close(s->fd[u]);
	s->fd[u] = -1;
}

/*
 * Rule side: RDMA to the peer cannot be had again (it declined, or we
 * have no device for it) though its daemon answers: resume sr over a
 * TCP connection to its peer port, for the rest of its life.  The
 * handshake is the fallback's (fallback_resume), with a HELLO that
 * names the connection.
 */
static void
resume_tcp_start(struct session_rdma *sr)
{
	struct session *s = sr->s;
	struct resume *res = sr->res;
	struct fb_hello_info ri;

	if (res == NULL || res->sent || s->fd[resume_u(sr)] >= 0)
		return;
	memset(&ri, 0, sizeof(ri));
	memcpy(ri.resume_id, sr->resume_id, sizeof(ri.resume_id));
	ri.rx_off = rx_received_off(sr->rc);
	ri.tx_fin = tx_fin_off(sr->rc);
	ri.worker = res->peer_worker;
	res->sent = true;
	res->tcp = true;
	log_info("conn 0x%llx: RDMA to %s cannot be had: resuming over TCP",
		 session_rdma_conn_id(sr), s->peer->name);
	fallback_resume(s, &ri, &resume_tcp_ops);
}

/* Both sides: the handshake is through; relay over the TCP connection. */
static void
resume_tcp_relay_start(struct session_rdma *sr)
{
	struct session *s = sr->s;
	uint64_t since = sr->res->since_ms;

	sr->res->tcp = false; /* the handshake's state is gone already */
	resume_end(sr);
	sr->over_tcp = true;
	sr->rd_blocked = false;
	/* no WRITE goes to the old group's keys again */
	buf_mr_drop(tx_sndbuf(sr->rc));
	buf_mr_drop(rx_rmb(sr->rc));
	if (session_relay_begin(s, resume_u(sr), STAT_conns_resumed_tcp)) {
		session_rdma_conn_fail(sr, SESSION_RESOURCE);
		return;
	}
	log_info("conn 0x%llx: resumed over TCP after %llu ms (from byte %llu "
		 "sent, %llu received)",
		 session_rdma_conn_id(sr),
		 (unsigned long long)(now_ms() - since),
		 (unsigned long long)tx_fin_off(sr->rc),
		 (unsigned long long)rx_received_off(sr->rc));
	session_rdma_conn_kick(sr);
}

/*
 * fallback.c: the peer proved its key, accepted, and answered our resume
 * HELLO with RESUMED (rx, fin): relay from there.
 */
static void
resume_tcp_through(struct session *s, uint64_t rx, uint64_t fin)
{
	struct session_rdma *sr = s->rdma;
	const char *why;

	if (sr == NULL || sr->res == NULL)
		return;
	sr->res->tcp = false;
	sr->res->sent = false;
	if (tx_resume_tcp(sr->rc, rx, fin, &why)) {
		resume_fail(sr, STAT_resume_failed_protocol, why);
		return;
	}
	resume_tcp_relay_start(sr);
}

/*
 * fallback.c: our resume over TCP failed with reason r (peer_said: the
 * peer's RESULT says so).  A broken or silent connection is tried again
 * at the next tick; a peer that refuses, or fails to prove its key (an
 * impostor on its port), ends the resume.
 */
static void
resume_tcp_failed(struct session *s, enum session_reason r, bool peer_said)
{
	struct session_rdma *sr = s->rdma;

	if (sr == NULL || sr->res == NULL)
		return;
	sr->res->tcp = false;
	sr->res->sent = false;
	resume_tcp_drop(sr);
	if (peer_said) {
		resume_fail(sr, STAT_resume_failed_refused,
			    session_reason_desc(r));
		return;
	}
	switch (r) {
	case SESSION_AUTH_FAILED:
		resume_fail(sr, STAT_resume_failed_auth,
			    "the peer port did not prove the peer's key");
		break;
	case SESSION_PROTOCOL_ERROR:
		resume_fail(sr, STAT_resume_failed_protocol,
			    "the peer broke the resume handshake");
		break;
	default:
		/* broken, refused or silent: the next tick tries again */
		break;
	}
}

/*
 * A socket event of sr while it resumes over TCP: the handshake's.  true
 * when it was one.
 */
bool
resume_tcp_io(struct session_rdma *sr, int i, short what)
{
	if (sr->res == NULL || !sr->res->tcp || i != resume_u(sr))
		return false;
	fallback_client_io(sr->s, what);
	return true;
}

/* Ring -> TCP connection.  true if anything moved. */
static bool
resume_tcp_out(struct session_rdma *sr)
{
	struct session *s = sr->s;
	int u = resume_u(sr), cnt;
	struct iovec iov[2];
	bool moved = false;
	ssize_t n;

	while (!sr->closing && s->wr_ready[u] &&
	       (cnt = tx_tcp_spans(sr->rc, iov)) > 0) {
		n = writev(s->fd[u], iov, cnt);
		if (n > 0) {
			tx_tcp_sent(sr->rc, (size_t)n);
			moved = true;
		} else if (n == -1 && errno == EAGAIN) {
			s->wr_ready[u] = false;
		} else if (n == -1 && errno != EINTR) {
			session_rdma_conn_fail(sr, SESSION_PEER_RST);
		}
	}
	if (sr->rd_eof && !sr->tcp_shut && !sr->closing &&
	    tx_unsent(sr->rc) == 0) {
		sr->tcp_shut = true;
		shutdown(s->fd[u], SHUT_WR);
		moved = true;
	}
	return moved;
}

/* TCP connection -> RMB element.  true if anything moved. */
static bool
resume_tcp_in(struct session_rdma *sr)
{
	struct session *s = sr->s;
	int u = resume_u(sr), cnt;
	struct iovec iov[2];
	bool moved = false;
	ssize_t n;

	while (!sr->closing && !sr->tcp_eof && s->rd_ready[u] &&
	       (cnt = rx_tcp_space(sr->rc, iov)) > 0) {
		n = readv(s->fd[u], iov, cnt);
		if (n > 0) {
			rx_tcp_received(sr->rc, (size_t)n);
			moved = true;
		} else if (n == 0) {
			sr->tcp_eof = true;
			sr->peer_done = true;
			moved = true;
		} else if (errno == EAGAIN) {
			s->rd_ready[u] = false;
		} else if (errno != EINTR) {
			tx_close(sr->rc, TX_CLOSE_ABORT);
			session_rdma_conn_fail(sr, SESSION_PEER_RST);
		}
	}
	return moved;
}

/* The relay's TCP half, once resumed over TCP.  true if anything moved. */
bool
resume_tcp_relay(struct session_rdma *sr)
{
	bool moved = resume_tcp_out(sr);

	moved |= resume_tcp_in(sr);
	return moved;
}

/* A resume over TCP on its way to the worker it names (hop). */
struct resume_tcp_hop {
	int fd;
	char peer[CONF_NAME_MAX + 1];
	struct fb_hello_info hi;
};

/*
 * Export side: take fd, the authenticated peer connection whose HELLO hi
 * asks to resume sr over it: tell the opener where both resume, then
 * relay.  fd is taken over.
 */
static void
resume_tcp_adopt(struct session_rdma *sr, int fd,
		 const struct fb_hello_info *hi)
{
	struct session *s = sr->s;
	uint8_t msg[sizeof(struct fb_result) + sizeof(struct fb_resumed)];
	uint64_t rx, fin;
	const char *why;
	size_t len;

	if (tx_resume_check(sr->rc, hi->rx_off, hi->tx_fin, &rx, &fin, &why)) {
		len = fb_result_encode(
			msg, session_reason_code(SESSION_PROTOCOL_ERROR));
		(void)send(fd, msg, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		close(fd);
		resume_fail(sr, STAT_resume_failed_protocol, why);
		return;
	}
	len = fb_result_encode(msg, 0);
	len += fb_resumed_encode(msg + len, rx, fin);
	if (send(fd, msg, len, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)len ||
	    tx_resume_tcp(sr->rc, hi->rx_off, hi->tx_fin, &why)) {
		close(fd);
		return; /* the opener tries again */
	}
	s->fd[resume_u(sr)] = fd;
	resume_tcp_relay_start(sr);
}

/* The export-side connection hi names among srw's, from peer; or NULL. */
static struct session_rdma *
resume_tcp_find(struct session_rdma_worker *srw, const char *peer,
		const struct fb_hello_info *hi)
{
	struct session_rdma *sr = resume_find(srw, peer, NULL, hi->resume_id);

	if (sr == NULL || sr->over_tcp)
		return NULL;
	if (sr->s->state == SESSION_RELAY &&
	    !resume_begin(sr, sr->lc.lgr, false))
		return NULL;
	return sr->lc.lgr == NULL ? sr : NULL;
}

static void
resume_tcp_arrive(struct worker *w, void *arg)
{
	struct resume_tcp_hop *h = arg;
	struct session_rdma_worker *srw = worker_rdma(w);
	struct session_rdma *sr =
		srw != NULL ? resume_tcp_find(srw, h->peer, &h->hi) : NULL;
	uint8_t msg[sizeof(struct fb_result)];

	if (sr != NULL) {
		resume_tcp_adopt(sr, h->fd, &h->hi);
	} else {
		(void)send(h->fd, msg,
			   fb_result_encode(
				   msg,
				   session_reason_code(SESSION_RESUME_FAILED)),
			   MSG_NOSIGNAL | MSG_DONTWAIT);
		close(h->fd);
	}
	free(h);
}

/*
 * Export side (fallback.c): fs, an authenticated connection on our peer
 * port, asks with HELLO hi to resume a connection of ours over it.  The
 * connection takes fs's socket (fs goes), here or on the worker hi names.
 * 0 when taken, else -errno with *why, the reason fs is to be refused.
 */
static int
resume_tcp_take(struct session *fs, const struct fb_hello_info *hi,
		enum session_reason *why)
{
	struct session_rdma_worker *srw = worker_rdma(fs->w);
	struct resume_tcp_hop *h;
	struct session_rdma *sr;
	struct worker *w;
	int want = hi->worker - 1;

	*why = SESSION_RESUME_FAILED;
	if (srw == NULL || fs->peer == NULL)
		return -ENOENT;
	sr = resume_tcp_find(srw, fs->peer->name, hi);
	if (sr != NULL) {
		resume_tcp_adopt(sr, session_detach(fs), hi);
		return 0;
	}
	if (hi->worker == 0 || want == worker_id(fs->w) ||
	    want >= worker_count()) {
		log_info("conn 0x%llx: peer %s asks to resume a connection we "
			 "do not have: refused",
			 (unsigned long long)fs->id, fs->peer->name);
		return -ENOENT;
	}
	h = calloc(1, sizeof(*h));
	if (h == NULL) {
		*why = SESSION_RESOURCE;
		return -ENOMEM;
	}
	snprintf(h->peer, sizeof(h->peer), "%s", fs->peer->name);
	h->hi = *hi;
	w = fs->w;
	h->fd = session_detach(fs);
	if (worker_pass(w, worker_get(want), resume_tcp_arrive, h)) {
		sock_reset(h->fd); /* that worker is flooded */
		free(h);
	}
	return 0;
}

const struct fallback_resume_ops resume_tcp_ops = {
	.through = resume_tcp_through,
	.failed = resume_tcp_failed,
	.take = resume_tcp_take,
};

/* sr's resume in its JSON object (show conns). */
void
resume_json(const struct session_rdma *sr, json_t *o)
{
	json_object_set_new(o, "resumable", json_boolean(resume_id_set(sr)));
	if (sr->over_tcp)
		json_object_set_new(o, "over_tcp", json_true());
	if (sr->res != NULL)
		json_object_set_new(
			o, "resuming_s",
			json_real((double)(now_ms() - sr->res->since_ms) /
				  1000.0));
}
