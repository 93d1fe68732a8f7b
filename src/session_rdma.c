// SPDX-License-Identifier: BSD-2-Clause
/*
 * Connections carried over an RDMA link group (DESIGN §2): the in-band
 * open (LLC CONN_OPEN, answered by CONN_ACCEPT or CONN_REJECT) and the
 * zero-copy relay between a TCP socket and the connection's registered
 * buffers.  The rule side reads its client straight into the send ring
 * (tx_space, readv, tx_produced, tx_push) and writes the peer's bytes
 * straight from its RMB element (rx_data, writev, rx_consumed); the
 * export side does the same with its target.  A session in this mode has
 * one TCP socket: fd[0] (the client) on the rule side, fd[1] (the
 * target) on the export side.
 *
 * Nothing is read from the client before the peer accepted: its bytes
 * wait in the kernel.  A FIN goes on as peer_done_writing after every
 * earlier byte, a reset as an abort; a link that fails moves the
 * connection to the group's other link (tx_failover); when the whole
 * group ends, the connection resumes from the exact byte on a new group
 * or over TCP (resume.c), and is reset (reason resume_failed) only when
 * that cannot be done in time.
 *
 * Keys per link: the send ring and the RMB element are registered in the
 * protection domain of each link of the connection's group they are
 * needed on (the group's own PD on that link's device, buf_mr), and an
 * rkey is only good on QPs of that PD.  The rkey in CONN_OPEN and
 * CONN_ACCEPT is for the link that message goes on (the acceptor joins
 * the connection to that link); each side then tells the other its
 * RMB's rkey on every other active link with CONFIRM_RKEY (on the
 * connection's link, after the open or accept, and again for a link that
 * comes up later).  The group keeps the peer's (rtoken.c), and a
 * connection asks it by the rkey it was given (lgr_conn_peer_rkey).  A
 * connection moves to a link only with the peer's rkey for it; without
 * one it is reset with reason link_failed.
 *
 * rconn and lgr callbacks can come from deep inside the relay loop
 * (rx_consumed, tx_push); they only record what happened and kick the
 * loop, which acts on it and is the one place a session is closed from.
 *
 * Per worker (one lgr_ctx each): a registered-buffer pool over its
 * devices, capped at the worker's share of rdma.max_buffer_memory (the
 * links' rings count there too: session_rdma_link_mem), and
 * the connection tokens, handed out in increasing order so that a CDC
 * for a token closed just now is told apart from a forged one.
 */
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <jansson.h>

#include "session_rdma.h"
#include "clc_wire.h"

static void session_rdma_run(struct session_rdma *sr);
static void session_rdma_end(struct session_rdma *sr,
			     enum session_reason reason);
static void session_rdma_link_up(struct lgr_link *link, void *arg);
static void session_rdma_llc_rx(struct lgr_link *link, const struct llc_info *m,
				void *arg);
static void session_rdma_unpark_group(struct session_rdma_worker *srw,
				      const struct lgr *lgr);
static void session_rdma_setup_failed(struct lgr *lgr, void *arg);
static void session_rdma_watch(evutil_socket_t fd, short what, void *arg);

static void session_rdma_rkeys(struct lgr_link *via, struct lgr_link *added,
			       struct llc_v2_info *v, int max, void *arg);
static int session_rdma_link_mem(struct lgr *lgr, size_t bytes, bool take,
				 void *arg);
static const struct lgr_data_ops session_rdma_lgr_ops = {
	.llc_rx = session_rdma_llc_rx,
	.link_up = session_rdma_link_up,
	.setup_failed = session_rdma_setup_failed,
	.rkeys = session_rdma_rkeys,
	.link_mem = session_rdma_link_mem,
};
static const struct lgr_data_ops session_rdma_no_ops;

/* The worker's share of the registered-memory cap, in bytes. */
static size_t
session_rdma_pool_limit(struct worker *w)
{
	const struct conf *conf = worker_conf(w);

	return ((size_t)conf->rdma.max_buffer_memory << 20) /
	       (size_t)conf->workers;
}

/*
 * Worker w's RDMA data path on its link-group context ctx (worker.c owns
 * both: made before the worker's loop runs): ctx answers CONN_OPEN from
 * now on.  NULL when out of memory.
 */
struct session_rdma_worker *
session_rdma_worker_new(struct worker *w, struct lgr_ctx *ctx)
{
	struct timeval tv = {1, 0};
	struct session_rdma_worker *srw;

	srw = calloc(1, sizeof(*srw));
	if (srw == NULL)
		return NULL;
	srw->w = w;
	srw->ctx = ctx;
	srw->run = session_rdma_run;
	TAILQ_INIT(&srw->parked.q);
	TAILQ_INIT(&srw->woken.q);
	TAILQ_INIT(&srw->resuming);
	LIST_INIT(&srw->shares);
	srw->pool = buf_pool_new(NULL, NULL, session_rdma_pool_limit(w));
	if (srw->pool == NULL) {
		free(srw);
		return NULL;
	}
	buf_pool_set_stats(srw->pool, worker_stats(w));
	srw->resume_ev = evtimer_new(worker_base(w), resume_tick, srw);
	srw->watch_ev = event_new(worker_base(w), -1, EV_PERSIST,
				  session_rdma_watch, srw);
	if (srw->resume_ev == NULL || srw->watch_ev == NULL ||
	    event_add(srw->watch_ev, &tv) != 0) {
		if (srw->resume_ev != NULL)
			event_free(srw->resume_ev);
		if (srw->watch_ev != NULL)
			event_free(srw->watch_ev);
		buf_pool_free(srw->pool);
		free(srw);
		return NULL;
	}
	lgr_ctx_set_ops(ctx, &session_rdma_lgr_ops, srw);
	return srw;
}

/* Whether buffers of the worker are still in use (by rconns). */
static bool
session_rdma_busy(const struct session_rdma_worker *srw)
{
	const struct buf_stats *bs = buf_pool_stats(srw->pool);

	return bs->bytes_used[0] + bs->bytes_used[1] > 0;
}

/*
 * The connections that outlived their sessions waiting for the answer to
 * their CONN_OPEN (session_rdma_await_answer) go before the worker's
 * data path does: no answer is read any more, and their groups end after
 * (lgr_ctx_free), when nothing of the data path is left to give their
 * buffers and their peer's share back to.
 */
static void
session_rdma_drop_waiting(struct session_rdma_worker *srw)
{
	struct lgr_conn *c, *next;
	struct session_rdma *sr;
	struct lgr *lgr;

	for (lgr = lgr_next(srw->ctx, NULL); lgr != NULL;
	     lgr = lgr_next(srw->ctx, lgr)) {
		for (c = lgr_conn_next(lgr, NULL); c != NULL; c = next) {
			next = lgr_conn_next(lgr, c);
			sr = c->arg;
			if (session_rdma_waiting_alone(sr))
				session_rdma_free(sr);
		}
	}
}

/*
 * End a worker's RDMA data path after its sessions closed, before its
 * link-group context: the loop runs a little longer (2 s at most) for the
 * last CDCs in flight to complete, then the pool goes (buffers still out
 * go when they come back).
 */
void
session_rdma_worker_free(struct session_rdma_worker *srw)
{
	struct timeval tv = {0, 20000};
	struct session_rdma_share *sh;
	int round;

	if (srw == NULL)
		return;
	session_rdma_drop_waiting(srw);
	/* the last CDCs of closed connections complete: their buffers back */
	for (round = 0; round < 100 && session_rdma_busy(srw); round++) {
		event_base_loopexit(worker_base(srw->w), &tv);
		event_base_dispatch(worker_base(srw->w));
	}
	buf_pool_free(srw->pool);
	event_free(srw->resume_ev);
	event_free(srw->watch_ev);
	while ((sh = LIST_FIRST(&srw->shares)) != NULL) {
		LIST_REMOVE(sh, entry);
		free(sh);
	}
	lgr_ctx_set_ops(srw->ctx, &session_rdma_no_ops, NULL);
	free(srw);
}

/*
 * Whether buffers can be registered for link: in its group's protection
 * domain on its device (buf_mr does it when they are first needed
 * there).  0 or -ENODEV.
 */
static int
session_rdma_devi(struct session_rdma_worker *srw, const struct lgr_link *link)
{
	(void)srw;
	return lgr_link_has_pd(link) ? 0 : -ENODEV;
}

/* An RMB element's size as the wire has it (never below 16 KiB). */
uint8_t
session_rdma_rmbe_size(size_t size)
{
	int n = clc_rmbe_compress(size);

	return n > 0 ? (uint8_t)n : 0;
}

/* The connection of lgr with our token, accepted or not; NULL if none. */
static struct session_rdma *
session_rdma_find(struct lgr *lgr, uint32_t token)
{
	struct lgr_conn *c = lgr_conn_find(lgr, token);

	return c != NULL ? c->arg : NULL;
}

/*
 * lgr.c: link of a group of ours became active.  The buffers of the
 * group's connections get registered in the group's protection domain on
 * its device (buf_mr), and the connections tell the peer their rkeys for
 * it.
 */
static void
session_rdma_link_up(struct lgr_link *link, void *arg)
{
	struct session_rdma_worker *srw = arg;
	struct lgr *lgr = lgr_link_group(link);
	struct lgr_conn *c;
	int di;

	if (srw == NULL)
		return;
	di = session_rdma_devi(srw, link);
	if (di < 0) {
		log_warnx("lgr %u link %u: %s: no buffers on it: %s",
			  lgr_id(lgr), lgr_link_id(link),
			  lgr_link_dev_name(link), strerror(-di));
		return;
	}
	if (lgr_is_smcr(lgr) && lgr_links_active(lgr) == 1) {
		/* its first: the connection that set the group up, then
		 * those that waited for it, in turn (session_rdma_wait) */
		session_rdma_unpark_group(srw, lgr);
		return;
	}
	/* a kernel peer's second: those its ADD_LINK did not carry */
	for (c = lgr_conn_next(lgr, NULL); c != NULL; c = lgr_conn_next(lgr, c))
		session_rdma_conn_rkeys_announce(c->arg);
	if (lgr_is_smcr(lgr))
		return;
	if (lgr_is_active(lgr) && srw->nresuming > 0)
		resume_peer(srw, lgr, false);
	if (lgr_role(lgr) == LGR_ROLE_CLIENT && lgr_is_active(lgr))
		session_rdma_unpark_group(srw, lgr);
}

/*
 * llc.c: a kernel peer's group adds link added (over via): our RMB
 * elements there, into v's rkey triples for its ADD_LINK, registered in
 * the group's protection domain on added's device now, up to max; the
 * rest are announced once added is up (CONFIRM_RKEY).
 */
static void
session_rdma_rkeys(struct lgr_link *via, struct lgr_link *added,
		   struct llc_v2_info *v, int max, void *arg)
{
	struct session_rdma_worker *srw = arg;
	struct lgr *lgr = lgr_link_group(via);
	const struct dev_mr *cur, *mr;
	struct session_rdma *sr;
	struct lgr_conn *c;
	struct buf *rmb;
	int n = 0;

	for (c = lgr_conn_next(lgr, NULL); c != NULL && n < max;
	     c = lgr_conn_next(lgr, c)) {
		sr = c->arg;
		rmb = session_rdma_conn_rmb(sr);
		/* the peer knows it once our CLC went (opened) */
		if (rmb == NULL || !sr->opened || c->link != via)
			continue;
		cur = session_rdma_conn_mr(srw, rmb, via);
		mr = session_rdma_conn_mr(srw, rmb, added);
		if (cur == NULL || mr == NULL)
			continue;
		v->rt[n].rkey = cur->rkey;
		v->rt[n].rkey_new = mr->rkey;
		v->rt[n].vaddr_new = rmb->iova;
		n++;
		session_rdma_conn_told_set(sr, lgr_link_id(added));
	}
	v->num_rkeys = (uint16_t)n;
}

/* ---- rconn callbacks: record, then kick the relay loop ---- */

static void
session_rdma_data_ready(struct rconn *rc, void *arg)
{
	session_rdma_conn_kick(arg);
}

static void
session_rdma_space_ready(struct rconn *rc, void *arg)
{
	struct session_rdma *sr = arg;

	sr->rd_blocked = false;
	session_rdma_conn_kick(sr);
}

static void
session_rdma_peer_done(struct rconn *rc, void *arg)
{
	struct session_rdma *sr = arg;

	sr->peer_done = true;
	session_rdma_conn_kick(sr);
}

static void
session_rdma_peer_abort(struct rconn *rc, void *arg)
{
	session_rdma_conn_fail(arg, SESSION_PEER_RST);
}

/* The link's failure reaches lgr.c too, which moves us (link_down). */
static void
session_rdma_link_failed(struct rconn *rc, void *arg)
{
	log_debug("conn 0x%llx: link failed, waiting for the group",
		  session_rdma_conn_id(arg));
}

static const struct rconn_ops session_rdma_ops = {
	.data_ready = session_rdma_data_ready,
	.tx_space_ready = session_rdma_space_ready,
	.peer_done_writing = session_rdma_peer_done,
	.peer_abort = session_rdma_peer_abort,
	.link_failed = session_rdma_link_failed,
};

/*
 * Rule side: the group our CONN_OPEN went on ended before the answer
 * came.  Nothing was read from the client yet, so the connection opens
 * again like a new one, on the next group or the fallback, as TCP sends
 * its SYN again: the open may never have arrived (the peer's end of the
 * group gone first, unknown to us until TEST_LINK went unanswered).  If
 * the peer had accepted and its answer was lost, its side gives up when
 * its resume_timeout passes; nothing of ours reached its target.  At most
 * SESSION_RDMA_REOPENS times; on the session's timer, since lgr.c is
 * still ending the group (session_rdma_timeout goes on).  false: s is to
 * close.
 */
static bool
session_rdma_reopen(struct session_rdma *sr, const struct lgr *ended)
{
	struct session *s = sr->s;

	if (s->role != SESSION_ROLE_RULE || s->state != SESSION_RDMA_OPEN ||
	    sr->closing || s->rdma_reopens >= SESSION_RDMA_REOPENS)
		return false;
	if (s->rdma_peer_stopping)
		log_info("conn 0x%llx: rule %s: peer %s is stopping "
			 "(CONN_REJECT "
			 "shutdown on lgr %u): opening again over TCP, where "
			 "its next process takes it",
			 session_rdma_conn_id(sr), s->rule->name, s->peer->name,
			 lgr_id(ended));
	else
		log_info("conn 0x%llx: rule %s: lgr %u ended before the peer "
			 "answered CONN_OPEN: opening again",
			 session_rdma_conn_id(sr), s->rule->name,
			 lgr_id(ended));
	s->rdma_reopens++;
	s->rdma = NULL;
	s->state = SESSION_RDMA_REOPEN;
	session_rdma_free(sr);
	STATS_INC(worker_stats(s->w), conns_reopened);
	session_timer_ms(s, 0);
	return true;
}

/*
 * lgr.c: our link went down; to is where we are now, NULL: none left.
 * With none left a connection that relays resumes on a new group if it
 * can (resume_begin, resume.c); one waiting for its resume answer
 * tries again.
 */
static void
session_rdma_link_down(struct lgr_conn *c, struct lgr_link *to)
{
	struct session_rdma *sr = c->arg;

	if (session_rdma_waiting_alone(sr)) {
		/* no answer can come from a group that ended, nor a WRITE;
		 * a link down leaves the answer to the others */
		if (to == NULL)
			session_rdma_free(sr);
		return;
	}
	if (sr->smcr && sr->rc == NULL) {
		/* its CLC is still smcr.c's: it closes on the timer */
		sr->closing = true;
		sr->close_reason = SESSION_LINK_FAILED;
		session_timer_ms(sr->s, 0);
		return;
	}
	if (sr->rc != NULL && sr->s->state == SESSION_RESUMING) {
		/* the group it moves to lost a link: ask again (c->ended is
		 * the old group's, long gone, when this one lives on) */
		if (to == NULL || resume_waiting(sr)) {
			lgr_conn_del(&sr->lc);
			if (!resume_begin(sr, NULL, false))
				session_rdma_conn_fail(sr, SESSION_LINK_FAILED);
		}
		return;
	}
	if (to == NULL && sr->rc != NULL && sr->s->state == SESSION_RELAY &&
	    !sr->closing && resume_begin(sr, c->ended, true))
		return;
	if (to == NULL && sr->rc == NULL && session_rdma_reopen(sr, c->ended))
		return;
	if (to == NULL || sr->rc == NULL) {
		/* an open in flight may be lost with the link */
		session_rdma_conn_fail(sr, SESSION_LINK_FAILED);
		return;
	}
	sr->failover_to = to;
	session_rdma_conn_kick(sr);
}

/* ---- the relay ---- */

static void
session_rdma_account(struct session_rdma *sr, bool to_peer, size_t n)
{
	session_account(sr->s, to_peer ? sr->t : 1 - sr->t, n);
}

/* The first of the two directions to finish names a normal close. */
static void
session_rdma_fin(struct session_rdma *sr, bool tcp_side)
{
	if (sr->fin_set)
		return;
	sr->fin_set = true;
	sr->fin_reason = session_fin_reason(tcp_side ? sr->t : 1 - sr->t);
}

static enum session_reason
session_rdma_tcp_reset(const struct session_rdma *sr)
{
	return session_rst_reason(sr->s, sr->t);
}

/* RMB -> TCP socket.  true if anything moved. */
static bool
session_rdma_write(struct session_rdma *sr)
{
	struct session *s = sr->s;
	struct iovec iov[2];
	bool moved = false;
	ssize_t n;
	int cnt;

	while (!sr->wr_shut && !sr->closing && s->wr_ready[sr->t]) {
		cnt = rx_data(sr->rc, iov);
		if (cnt <= 0)
			break; /* < 0: aborted, peer_abort says so */
		n = writev(s->fd[sr->t], iov, cnt);
		if (n > 0) {
			session_rdma_account(sr, false, (size_t)n);
			rx_consumed(sr->rc, (size_t)n);
			moved = true;
		} else if (n == -1 && errno == EAGAIN) {
			s->wr_ready[sr->t] = false;
		} else if (n == -1 && errno != EINTR) {
			tx_close(sr->rc, TX_CLOSE_ABORT);
			session_rdma_conn_fail(sr, session_rdma_tcp_reset(sr));
		}
	}
	if (sr->peer_done && !sr->wr_shut && !sr->closing &&
	    rx_readable(sr->rc) == 0) {
		sr->wr_shut = true;
		session_rdma_fin(sr, false);
		shutdown(s->fd[sr->t], SHUT_WR);
		moved = true;
	}
	return moved;
}

/*
 * Autocork at the door: the socket, read dry since its last bytes, has
 * more; while the send engine would cork them (tx_cork_door: CDCs in
 * flight, little unsent), they wait in the kernel and its read event is
 * off, so that the client's further writes wake nobody; the completion
 * that ends the cork has them read in one go (session_rdma_read).  How
 * much is queued (FIONREAD) decides, as a push's size does in the ring.
 */
static bool
session_rdma_cork(struct session_rdma *sr)
{
	struct session *s = sr->s;
	int queued = 0;

	if (ioctl(s->fd[sr->t], FIONREAD, &queued) != 0 || queued <= 0 ||
	    !tx_cork_door(sr->rc, (size_t)queued))
		return false;
	sr->rd_corked = true;
	session_relay_read(s, sr->t, false);
	STATS_INC(worker_stats(s->w), autocork_door);
	return true;
}

/* TCP socket -> send ring.  true if anything moved. */
static bool
session_rdma_read(struct session_rdma *sr)
{
	struct session *s = sr->s;
	struct iovec iov[2];
	ssize_t n;
	int cnt, err;

	if (sr->rd_eof || sr->rd_blocked || sr->closing || !s->rd_ready[sr->t])
		return false;
	if (sr->rd_corked) {
		if (tx_door_closed(sr->rc))
			return false;
		/* the cork ended: everything queued in one go */
		sr->rd_corked = sr->rd_dry = false;
		session_relay_read(s, sr->t, true);
	} else if (sr->rd_dry && session_rdma_cork(sr)) {
		return false;
	}
	cnt = tx_space(sr->rc, iov);
	if (cnt == 0) {
		sr->rd_blocked = true;
		STATS_INC(worker_stats(s->w), buf_full_cnt);
		return false;
	}
	if (cnt < 0) {
		sr->rd_eof = true; /* closed or aborted: nothing more goes */
		return false;
	}
	n = readv(s->fd[sr->t], iov, cnt);
	STATS_INC(worker_stats(s->w), relay_reads);
	if (n > 0) {
		sr->rd_dry = false;
		tx_produced(sr->rc, (size_t)n);
		session_rdma_account(sr, true, (size_t)n);
		err = tx_push(sr->rc);
		if (err && err != -ENOLINK && err != -EBUSY)
			log_debug("conn 0x%llx: push: %s",
				  session_rdma_conn_id(sr), strerror(-err));
		return true;
	}
	if (n == 0) {
		sr->rd_eof = true;
		session_rdma_fin(sr, true);
		/*
		 * A kernel peer done writing, all of it written out here:
		 * the connection is over both ways, and peer_conn_closed
		 * goes with our FIN, as Linux's server sends it when its
		 * program closes after EOF.  The peer's close() then finds
		 * us closed and ends its side at once, inside that call,
		 * instead of a CDC later, while its program opens the next
		 * connection (docs/performance.md, "Connect timeline").
		 */
		tx_close(sr->rc, sr->smcr && sr->wr_shut ?
					 TX_CLOSE_CLOSED :
					 TX_CLOSE_DONE_WRITING);
		return true;
	}
	if (errno == EAGAIN) {
		s->rd_ready[sr->t] = false;
		sr->rd_dry = true;
		return false;
	}
	if (errno == EINTR)
		return true;
	tx_close(sr->rc, TX_CLOSE_ABORT);
	session_rdma_conn_fail(sr, session_rdma_tcp_reset(sr));
	return false;
}

/*
 * Both directions are done on our side.  Close once the last byte and the
 * FIN went out (the peer's window may still hold them back): until then
 * the rconn calls tx_space_ready at each CDC completion, which is when
 * that can change.  Freeing the rconn earlier would drop the tail.
 */
static void
session_rdma_done(struct session_rdma *sr)
{
	if (tx_fin_confirmed(sr->rc)) {
		sr->closing = true;
		sr->close_reason = sr->fin_reason;
	}
}

/*
 * Move sr to link to: with the send ring's lkey on its device and the
 * peer's rkey for it.  0, or -ENOKEY when either is missing, -ENOLINK.
 */
static int
session_rdma_failover(struct session_rdma *sr, struct lgr_link *to)
{
	const struct dev_mr *mr =
		session_rdma_conn_mr(sr->srw, tx_sndbuf(sr->rc), to);
	uint32_t rkey;
	int rc;

	if (mr == NULL || lgr_conn_peer_rkey(&sr->lc, lgr_link_id(to), &rkey)) {
		STATS_INC(worker_stats(sr->s->w), conn_failover_failed);
		log_warnx("conn 0x%llx: cannot move to lgr %u link %u: %s",
			  session_rdma_conn_id(sr), lgr_id(lgr_link_group(to)),
			  lgr_link_id(to),
			  mr == NULL ? "buffers not registered on its device" :
				       "the peer's rkey for it is unknown");
		return -ENOKEY;
	}
	log_debug("conn 0x%llx: moves to lgr %u link %u",
		  session_rdma_conn_id(sr), lgr_id(lgr_link_group(to)),
		  lgr_link_id(to));
	STATS_INC(worker_stats(sr->s->w), conn_failovers);
	rc = tx_failover(sr->rc, lgr_link_wr(to), mr->lkey, rkey);
	if (rc == 0) /* asked by its rkey there from now on */
		rc = lgr_conn_peer_rmb(&sr->lc, to, rkey, sr->lc.peer_vaddr);
	return rc;
}

/*
 * One round of the relay loop (session_relay_run): act on what callbacks
 * recorded, move bytes both ways.  1 when anything moved or a callback
 * asked for another round, 0 when not, -1 when sr is closing or no longer
 * relays.
 */
static int
session_rdma_round(void *arg)
{
	struct session_rdma *sr = arg;
	struct session *s = sr->s;
	struct lgr_link *to;
	bool moved, tcp_moved;

	sr->again = false;
	if (sr->failover_to != NULL && !sr->closing) {
		to = sr->failover_to;
		sr->failover_to = NULL;
		if (tx_link(sr->rc) != NULL &&
		    lgr_link_wr(to) != tx_link(sr->rc) &&
		    session_rdma_failover(sr, to) != 0)
			session_rdma_conn_fail(sr, SESSION_LINK_FAILED);
	}
	/* resuming: the RMB still drains, the ring still fills */
	if (sr->closing ||
	    (s->state != SESSION_RELAY && s->state != SESSION_RESUMING))
		return -1;
	moved = false;
	/* busy polling: what the thread waits for next (rdma.busy_poll) */
	if (session_rdma_write(sr)) {
		busy_poll_wait(BUSY_WAIT_LOCAL);
		moved = true;
	}
	if (session_rdma_read(sr)) {
		busy_poll_wait(BUSY_WAIT_PEER);
		moved = true;
	}
	if (sr->over_tcp) {
		tcp_moved = resume_tcp_relay(sr);
		if (tcp_moved)
			busy_poll_note();
		moved |= tcp_moved;
		if (sr->rd_eof && sr->wr_shut && sr->tcp_shut && !sr->closing) {
			sr->closing = true;
			sr->close_reason = sr->fin_reason;
		}
	} else if (sr->rd_eof && sr->wr_shut && !sr->closing) {
		session_rdma_done(sr);
	}
	return moved || sr->again;
}

/*
 * The relay loop, the one place a session in RDMA mode is closed from:
 * rounds until nothing moves, then the close when both directions are
 * done or something failed.
 */
static void
session_rdma_run(struct session_rdma *sr)
{
	sr->in_run = true;
	session_relay_run(sr->s, sr->t, session_rdma_round, sr);
	sr->in_run = false;
	if (sr->closing)
		session_close(sr->s, sr->close_reason);
}

/*
 * sr's rconn on link, from its tokens and buffers, which it takes over
 * (sr->sndbuf and sr->rmb are NULL after); with keys, the peer's RMB
 * element's rkey on link too and the session's autocork (the relay
 * writes there; an abort writes nothing, and may outlive its session).
 * NULL with errno ENOKEY (no keys), or tx_conn_new's.
 */
static struct rconn *
session_rdma_rconn_new(struct session_rdma *sr, struct lgr_link *link,
		       bool keys)
{
	const struct dev_mr *mr =
		session_rdma_conn_mr(sr->srw, sr->sndbuf, link);
	struct rconn_init in;
	struct rconn *rc;

	memset(&in, 0, sizeof(in));
	in.id = sr->id;
	in.link = lgr_link_wr(link);
	in.token = sr->lc.token;
	in.peer_token = sr->peer_token;
	in.sndbuf = sr->sndbuf;
	in.rmb = sr->rmb;
	in.peer_rmb = sr->peer_rmb;
	if (mr == NULL ||
	    (keys && lgr_conn_peer_rkey(&sr->lc, lgr_link_id(link),
					&in.peer_rmb.rkey))) {
		errno = ENOKEY;
		return NULL;
	}
	in.lkey = mr->lkey;
	if (keys) {
		in.params.autocork = sr->s->conf->rdma.autocork;
		in.params.autocork_size =
			(uint32_t)sr->s->conf->rdma.autocork_size;
	}
	in.ops = &session_rdma_ops;
	in.arg = sr;
	rc = tx_conn_new(&in);
	if (rc != NULL)
		sr->sndbuf = sr->rmb = NULL;
	return rc;
}

/* Both sides: the peer has our RMB and we have its; relay from now. */
void
session_rdma_relay_start(struct session_rdma *sr, struct lgr_link *link)
{
	struct session *s = sr->s;

	sr->rc = session_rdma_rconn_new(sr, link, true);
	if (sr->rc == NULL && errno == ENOKEY) {
		log_warnx("conn 0x%llx: no keys for lgr %u link %u",
			  session_rdma_conn_id(sr),
			  lgr_id(lgr_link_group(link)), lgr_link_id(link));
		session_close(s, SESSION_LINK_FAILED);
		return;
	}
	sr->lc.rc = sr->rc;
	if (sr->rc == NULL) {
		log_warn("conn 0x%llx: connection over RDMA",
			 session_rdma_conn_id(sr));
		session_close(s, SESSION_RESOURCE);
		return;
	}
	if (session_relay_begin(s, sr->t, STAT_conns_rdma)) {
		session_close(s, SESSION_RESOURCE);
		return;
	}
	lgr_conn_replay(&sr->lc); /* may fail the connection: kick sees it */
	log_debug("conn 0x%llx: relaying over lgr %u link %u (%s)",
		  session_rdma_conn_id(sr), lgr_id(lgr_link_group(link)),
		  lgr_link_id(link),
		  s->role == SESSION_ROLE_RULE ? s->rule->name :
						 s->export->name);
	session_rdma_conn_kick(sr);
}

struct session_rdma *
session_rdma_new(struct session *s, struct session_rdma_worker *srw)
{
	struct session_rdma *sr = calloc(1, sizeof(*sr));

	if (sr == NULL)
		return NULL;
	sr->s = s;
	sr->id = (unsigned long long)s->id;
	sr->srw = srw;
	sr->lc.link_down = session_rdma_link_down;
	sr->lc.arg = sr;
	sr->t = s->role == SESSION_ROLE_RULE ? 0 : 1;
	return sr;
}

/*
 * The share of lgr's peer on srw: a native peer's by its name, a kernel
 * host's by its address (all kernel hosts are one peer to the config,
 * "smc-r", but each has a share of its own); made if need be (create).
 * NULL when there is none (or no memory for it).
 */
static struct session_rdma_share *
session_rdma_share_get(struct session_rdma_worker *srw, const struct lgr *lgr,
		       bool create)
{
	const struct conf_peer *peer = lgr_peer(lgr);
	const struct addr *host = lgr_smcr_host(lgr);
	struct session_rdma_share *sh;

	LIST_FOREACH(sh, &srw->shares, entry)
		if (strcmp(sh->peer, peer->name) == 0 &&
		    sh->smcr == (host != NULL) &&
		    (host == NULL || addr_same_host(&sh->host, host)))
			return sh;
	if (!create || (sh = calloc(1, sizeof(*sh))) == NULL)
		return NULL;
	snprintf(sh->peer, sizeof(sh->peer), "%s", peer->name);
	if (host != NULL) {
		sh->smcr = true;
		sh->host = *host;
	}
	LIST_INSERT_HEAD(&srw->shares, sh, entry);
	return sh;
}

/*
 * What lgr's peer may hold on srw, in bytes: a native peer its
 * buffer_share, a kernel host kernel_smc.buffer_share_per_host, in
 * percent of the worker's part of max_buffer_memory.
 */
static size_t
session_rdma_share_limit(struct session_rdma_worker *srw, const struct lgr *lgr)
{
	if (lgr_is_smcr(lgr))
		return session_rdma_host_limit(worker_conf(srw->w));
	return session_rdma_pool_limit(srw->w) *
	       (size_t)lgr_peer(lgr)->buffer_share / 100;
}

/*
 * bytes charged to sh go back.  A kernel host's share that holds nothing
 * any more goes (nothing points to it then: a connection or a link holds
 * its charge), so that hosts come and go without the list growing.
 */
static void
session_rdma_share_put(struct session_rdma_share *sh, size_t bytes)
{
	sh->bytes -= bytes < sh->bytes ? bytes : sh->bytes;
	if (sh->smcr && sh->bytes == 0 && sh->nresuming == 0) {
		LIST_REMOVE(sh, entry);
		free(sh);
	}
}

/* A share is full: counted as its kind of peer is. */
static void
session_rdma_share_full(struct session_rdma_worker *srw,
			const struct session_rdma_share *sh)
{
	if (sh->smcr)
		STATS_INC(worker_stats(srw->w), smc_budget_host_memory);
	else
		STATS_INC(worker_stats(srw->w), peer_buffer_full);
}

/*
 * Charge bytes of registered memory to the peer of lgr (sr's group) on
 * sr's worker: its share (session_rdma_share_limit) is what one peer's
 * connections, or one kernel host's connections and groups, may hold, so
 * that no peer starves the others.  0 or -ENOBUFS (counted; the
 * connection takes the fallback, a kernel peer's is declined MEM).
 */
static int
session_rdma_charge(struct session_rdma *sr, const struct lgr *lgr,
		    size_t bytes)
{
	struct session_rdma_worker *srw = sr->srw;
	struct session_rdma_share *sh;
	size_t limit = session_rdma_share_limit(srw, lgr);
	char host[ADDR_STRLEN] = "";

	sh = session_rdma_share_get(srw, lgr, true);
	if (sh == NULL)
		return -ENOMEM;
	if (sh->bytes + bytes > limit) {
		session_rdma_share_full(srw, sh);
		STATS_INC(worker_stats(srw->w), conns_rdma_nobufs);
		if (sh->smcr)
			addr_host(&sh->host, host, sizeof(host));
		log_debug("conn 0x%llx: %s %s holds %zu bytes of its %zu: "
			  "fallback",
			  session_rdma_conn_id(sr),
			  sh->smcr ? "kernel host" : "peer",
			  sh->smcr ? host : sh->peer, sh->bytes, limit);
		session_rdma_share_put(sh, 0);
		return -ENOBUFS;
	}
	sh->bytes += bytes;
	sr->share = sh;
	sr->charge = bytes;
	return 0;
}

/*
 * Each kernel host's registered memory on w (its connections' buffers and
 * its groups' rings: what buffer_share_per_host bounds) to fn, for show
 * peers; on w's thread.
 */
void
session_rdma_host_memory(struct worker *w, session_rdma_host_fn fn, void *arg)
{
	struct session_rdma_worker *srw = worker_rdma(w);
	const struct session_rdma_share *sh;

	if (srw == NULL)
		return;
	LIST_FOREACH(sh, &srw->shares, entry)
		if (sh->smcr && sh->bytes > 0)
			fn(&sh->host, sh->bytes, arg);
}

/* What one kernel host may hold per worker under conf, in bytes. */
size_t
session_rdma_host_limit(const struct conf *conf)
{
	return ((size_t)conf->rdma.max_buffer_memory << 20) /
	       (size_t)conf->workers *
	       (size_t)conf->smcr.buffer_share_per_host / 100;
}

/*
 * lgr_data_ops.link_mem: a link of lgr registered bytes for its rings
 * (take), or it went (!take).  The rings count in the worker's pool
 * (buf_pool_reserve: one accounting for all its registered memory) and,
 * for a kernel host's group, in the host's share.  0 or -ENOBUFS
 * (counted in link_nobufs: the link is refused).
 */
static int
session_rdma_link_mem(struct lgr *lgr, size_t bytes, bool take, void *arg)
{
	struct session_rdma_worker *srw = arg;
	struct session_rdma_share *sh = NULL;

	if (lgr_is_smcr(lgr)) {
		sh = session_rdma_share_get(srw, lgr, take);
		if (take && sh == NULL)
			return -ENOBUFS;
	}
	if (!take) {
		if (sh != NULL)
			session_rdma_share_put(sh, bytes);
		buf_pool_unreserve(srw->pool, bytes);
		return 0;
	}
	if (sh != NULL &&
	    sh->bytes + bytes > session_rdma_share_limit(srw, lgr)) {
		session_rdma_share_full(srw, sh);
		STATS_INC(worker_stats(srw->w), link_nobufs);
		session_rdma_share_put(sh, 0);
		return -ENOBUFS;
	}
	if (buf_pool_reserve(srw->pool, bytes) != 0) {
		STATS_INC(worker_stats(srw->w), link_nobufs);
		if (sh != NULL)
			session_rdma_share_put(sh, 0);
		return -ENOBUFS;
	}
	if (sh != NULL)
		sh->bytes += bytes;
	return 0;
}

/*
 * The one join of a connection, both dialects: sr goes on lgr as how
 * says and takes a send ring and an RMB element, registered in the
 * group's protection domain on its link's device.  0 or -errno (counted
 * conns_rdma_nobufs when there are no buffers or the registration
 * fails); the caller frees sr.
 */
int
session_rdma_join(struct session_rdma *sr, struct lgr *lgr,
		  enum session_rdma_join_how how, struct lgr_link *link)
{
	const struct conf_rdma *r = &sr->s->conf->rdma;
	struct buf_pool *pool = sr->srw->pool;
	struct lgr_link *l;
	int rc;

	if (how == SESSION_RDMA_JOIN_FIRST)
		rc = lgr_conn_add_first(lgr, &sr->lc);
	else
		rc = lgr_conn_add_on(lgr, &sr->lc,
				     how == SESSION_RDMA_JOIN_ON ? link : NULL);
	if (rc)
		return rc;
	for (l = lgr_link_next_active(lgr, NULL); l != NULL;
	     l = lgr_link_next_active(lgr, l))
		if ((rc = session_rdma_devi(sr->srw, l)) < 0)
			return rc;
	rc = session_rdma_charge(sr, lgr, (size_t)r->sndbuf + (size_t)r->rmb);
	if (rc)
		return rc;
	rc = buf_get(pool, BUF_SNDBUF, (size_t)r->sndbuf, &sr->sndbuf);
	if (rc == 0)
		rc = buf_get_for(pool, BUF_RMB, (size_t)r->rmb,
				 lgr_peer(lgr)->name, &sr->rmb);
	/* the cap, or the device refused a registration in the group's PD
	 * (memlock limit: ib.c says) */
	if (rc == 0 &&
	    (session_rdma_conn_mr(sr->srw, sr->sndbuf, sr->lc.link) == NULL ||
	     session_rdma_conn_mr(sr->srw, sr->rmb, sr->lc.link) == NULL))
		rc = -EIO;
	if (rc) {
		STATS_INC(worker_stats(sr->s->w), conns_rdma_nobufs);
		return rc;
	}
	return 0;
}

/*
 * sr leaves its group and gives its buffers back.  A kernel peer's group
 * still being set up was set up for this connection, its first
 * (session_rdma_smcr_open): it goes with it, whether the CLC failed
 * (session_rdma_smcr_drop) or the connection closed
 * (session_rdma_close).  Kept, it would hold its QP, its buffers and a
 * place in its host's pending budget for good: nothing else ends a group
 * whose CONFIRM never came (375-ksmc-flood).  One the connection joined
 * stays.
 */
void
session_rdma_free(struct session_rdma *sr)
{
	struct lgr *setup = NULL;

	if (sr->smcr && sr->lc.lgr != NULL && !lgr_is_active(sr->lc.lgr) &&
	    !lgr_is_ending(sr->lc.lgr))
		setup = sr->lc.lgr;
	if (sr->share != NULL)
		session_rdma_share_put(sr->share, sr->charge);
	llc_pending_cancel(&sr->llc);
	lgr_conn_del(&sr->lc);
	buf_put(sr->sndbuf);
	/*
	 * Ending before its relay, after the peer was given its RMB
	 * element's rkey (a kernel client between our ACCEPT and its
	 * CONFIRM, a kernel server's connection whose CONFIRM went): the
	 * peer may already write into it.  It cools, still registered, as
	 * an aborted relay's does (tx.c): a WRITE that finds it gone would
	 * fail at the peer and take its link, and every connection of the
	 * group with it, down (issue 43).
	 */
	if (sr->rmb_told && sr->rmb != NULL)
		buf_put_cooled(sr->rmb, now_ms() + RMB_COOL_MS);
	else
		buf_put(sr->rmb);
	free(sr);
	if (setup != NULL)
		lgr_terminate(setup, LLC_DEL_PROG_INIT_TERM, true, false);
}

/* ---- rule side ---- */

static void
session_rdma_queue_add(struct session_rdma_queue *q, struct session *s)
{
	TAILQ_INSERT_TAIL(&q->q, s, park);
	q->n++;
}

static void
session_rdma_queue_del(struct session_rdma_queue *q, struct session *s)
{
	TAILQ_REMOVE(&q->q, s, park);
	q->n--;
}

/*
 * The one wait of a connection for a link group (net/smc's first contact
 * waits for its link the same way): s is parked on lgr, on its way, or
 * with lgr NULL on any group to peer on its way, until that group (one
 * of them) becomes active or fails its setup; then wake(s), once, in the
 * order they came.  What it waits for is the caller's: a rule's
 * connection for a group to its peer daemon (session_rdma_park), a
 * kernel peer's for the group its CLC would join (session_rdma_smcr_wait)
 * or the one it set up (session_rdma_smcr_open); the caller also bounds
 * the wait, and the number waiting.
 */
void
session_rdma_wait(struct session_rdma_worker *srw, struct session *s,
		  const struct conf_peer *peer, const struct lgr *lgr,
		  void (*wake)(struct session *s))
{
	session_rdma_queue_add(&srw->parked, s);
	s->parked = true;
	s->park_peer = peer;
	s->park_lgr = lgr;
	s->wake = wake;
}

/* s waits no more (parked, or woken and not yet gone on); else a no-op. */
void
session_rdma_unpark(struct session_rdma_worker *srw, struct session *s)
{
	if (s->parked)
		session_rdma_queue_del(&srw->parked, s);
	else if (s->woken)
		session_rdma_queue_del(&srw->woken, s);
	else
		return;
	s->parked = s->woken = false;
	s->park_peer = NULL;
	s->park_lgr = NULL;
	s->wake = NULL;
}

/* A rule's connection goes on from its wait: a group, or the fallback. */
static void
session_rdma_woken(struct session *s)
{
	session_timer(s, 0);
	s->mode = SESSION_MODE_FALLBACK;
	if (!session_rdma_connect(s))
		fallback_connect(s);
}

/*
 * No group to s's peer has room, but one is on its way (set up at start,
 * after a failure, or the next one begun at three quarters full): s waits
 * for it, SESSION_RDMA_WAIT_MS at most, instead of taking the fallback
 * for the rest of its life.  The client's bytes wait in its socket
 * meanwhile.  false (take the fallback now) when none is on its way or
 * too many wait.
 */
static bool
session_rdma_park(struct session_rdma_worker *srw, struct session *s)
{
	if (s->parked || s->woken || srw->parked.n >= SESSION_RDMA_PARKED_MAX ||
	    !lgr_on_its_way(srw->ctx, s->peer))
		return false;
	session_rdma_wait(srw, s, s->peer, NULL, session_rdma_woken);
	/* its timer comes to us */
	session_ops_set(s, &session_rdma_session_ops);
	s->mode = SESSION_MODE_RDMA;
	s->state = SESSION_RDMA_WAIT;
	session_timer_ms(s, SESSION_RDMA_WAIT_MS);
	STATS_INC(worker_stats(s->w), conns_lgr_waits);
	log_debug("conn 0x%llx: rule %s: peer %s: waiting for the link group "
		  "on its way",
		  (unsigned long long)s->id, s->rule->name, s->peer->name);
	return true;
}

/*
 * lgr became active, or its setup failed: the connections waiting for it
 * (or for any group to its peer) go on, in the order they came (any that
 * find no room wait for the next group if one is on its way, else go on
 * without).  Going on can start a group whose setup fails at once, which
 * wakes its peer's waiters again from inside this loop: so they are all
 * moved to the woken queue first, and each leaves it before it goes on,
 * whoever takes it.  One that parks again meanwhile waits for the next
 * wake-up.
 */
static void
session_rdma_unpark_group(struct session_rdma_worker *srw,
			  const struct lgr *lgr)
{
	const char *peer = lgr_peer(lgr)->name;
	void (*wake)(struct session *);
	struct session *s, *next;

	TAILQ_FOREACH_SAFE(s, &srw->parked.q, park, next) {
		if (s->park_lgr != NULL ? s->park_lgr != lgr :
					  strcmp(s->park_peer->name, peer) != 0)
			continue;
		session_rdma_queue_del(&srw->parked, s);
		s->parked = false;
		session_rdma_queue_add(&srw->woken, s);
		s->woken = true;
	}
	while ((s = TAILQ_FIRST(&srw->woken.q)) != NULL) {
		wake = s->wake;
		session_rdma_unpark(srw, s);
		wake(s);
	}
}

/*
 * lgr.c: the setup of a client group to lgr's peer failed (the peer is
 * backed off now), or of a kernel peer's group: the connections waiting
 * for it go on at once (to the fallback, or to a group of their own)
 * rather than when their wait ends.
 */
static void
session_rdma_setup_failed(struct lgr *lgr, void *arg)
{
	struct session_rdma_worker *srw = arg;

	if (srw == NULL)
		return;
	if (srw->nresuming > 0)
		resume_peer(srw, lgr, true);
	session_rdma_unpark_group(srw, lgr);
}

/*
 * Rule side, before sr's CONN_OPEN: its client, in a CONN_ORIGIN on the
 * same link, when the group negotiated it.  Only when it goes now or
 * into llc.c's queue, so that it is ahead of the open; else (a burst
 * filled the queue) the export side names no client for this one.
 */
static void
session_rdma_origin_send(struct session_rdma *sr)
{
	struct llc_info m;

	if (!lgr_has_feature(sr->lc.lgr, CLC_FEAT_ORIGIN))
		return;
	memset(&m, 0, sizeof(m));
	if (fallback_origin(sr->s, &m.conn_origin.origin) != 0)
		return;
	m.type = LLC_CONN_ORIGIN;
	if (m.conn_origin.origin.family == FB_ORIGIN_INET6)
		m.flags = LLC_FLAG_ORIGIN_INET6;
	m.conn_origin.token = sr->lc.token;
	if (llc_send(sr->lc.link, &m, NULL, NULL) != 0)
		log_debug("conn 0x%llx: CONN_ORIGIN not sent: the export side "
			  "will not name the client",
			  session_rdma_conn_id(sr));
}

/*
 * Rule side: carry the new client connection s over an active link group
 * to its peer, if there is one with room and buffers: CONN_OPEN is sent
 * and the answer awaited.  false when s is to take the fallback (s is
 * untouched then); true when s is taken care of.
 */
bool
session_rdma_connect(struct session *s)
{
	struct session_rdma_worker *srw = worker_rdma(s->w);
	struct session_rdma *sr = NULL;
	struct llc_info m;
	struct lgr *lgr;
	int rc;

	if (srw == NULL || strlen(s->export_name) > LLC_EXPORT_MAX)
		return false;
	lgr = lgr_get(srw->ctx, s->peer);
	if (lgr == NULL)
		return session_rdma_park(srw, s);
	sr = session_rdma_new(s, srw);
	if (sr == NULL)
		return false;
	rc = session_rdma_join(sr, lgr, SESSION_RDMA_JOIN_LEAST, NULL);
	if (rc)
		goto fallback;
	session_rdma_origin_send(sr);
	memset(&m, 0, sizeof(m));
	m.type = LLC_CONN_OPEN;
	m.conn_open.token = sr->lc.token;
	m.conn_open.rmb_rkey =
		session_rdma_conn_mr(srw, sr->rmb, sr->lc.link)->rkey;
	sr->rmb_told = true;
	m.conn_open.rmb_vaddr = sr->rmb->iova;
	m.conn_open.rmbe_size = session_rdma_rmbe_size(sr->rmb->size);
	snprintf(m.conn_open.export, sizeof(m.conn_open.export), "%s",
		 s->export_name);
	rc = session_rdma_conn_llc_send(sr, sr->lc.link, &m, NULL);
	if (rc < 0)
		goto fallback;
	s->rdma = sr;
	session_ops_set(s, &session_rdma_session_ops);
	s->mode = SESSION_MODE_RDMA;
	s->state = SESSION_RDMA_OPEN;
	sr->opened = true;
	session_rdma_conn_told_set(sr, lgr_link_id(sr->lc.link));
	session_rdma_conn_rkeys_announce(sr);
	session_timer(s, SESSION_RDMA_OPEN_TIMEOUT);
	log_debug("conn 0x%llx: rule %s: CONN_OPEN %s on lgr %u link %u, "
		  "token %u",
		  session_rdma_conn_id(sr), s->rule->name, s->export_name,
		  lgr_id(lgr), lgr_link_id(sr->lc.link), sr->lc.token);
	return true;
fallback:
	log_debug("conn 0x%llx: rule %s: lgr %u: %s: fallback",
		  (unsigned long long)s->id, s->rule->name, lgr_id(lgr),
		  strerror(-rc));
	session_rdma_free(sr);
	return false;
}

/*
 * The CONN_ACCEPT a for sr, whose session closed while it waited
 * (session_rdma_await_answer): the peer's end is open now and is told
 * to reset at once, as after an early end, and the element cools after
 * that abort as after any other.
 */
static void
session_rdma_accepted_late(struct session_rdma *sr,
			   const struct llc_conn_accept_info *a)
{
	log_debug("conn 0x%llx: CONN_ACCEPT after its close: peer token %u",
		  session_rdma_conn_id(sr), a->token);
	sr->peer_token = a->token;
	sr->peer_rmb.rkey = a->rmb_rkey;
	sr->peer_rmb.vaddr = a->rmb_vaddr;
	sr->peer_rmb.size = clc_rmbe_bytes(a->rmbe_size);
	session_rdma_end(sr, sr->close_reason);
}

static void
session_rdma_accepted(struct lgr_link *link,
		      const struct llc_conn_accept_info *a)
{
	struct session_rdma *sr =
		session_rdma_find(lgr_link_group(link), a->opener_token);

	if (sr != NULL && session_rdma_waiting_alone(sr)) {
		session_rdma_accepted_late(sr, a);
		return;
	}
	if (sr == NULL || sr->rc != NULL || sr->s->state != SESSION_RDMA_OPEN) {
		log_warnx("lgr %u: CONN_ACCEPT for token %u, not waiting: "
			  "ignored",
			  lgr_id(lgr_link_group(link)), a->opener_token);
		return;
	}
	sr->peer_token = a->token;
	sr->peer_rmb.rkey = a->rmb_rkey;
	sr->peer_rmb.vaddr = a->rmb_vaddr;
	sr->peer_rmb.size = clc_rmbe_bytes(a->rmbe_size);
	if (lgr_conn_peer_rmb(&sr->lc, link, a->rmb_rkey, a->rmb_vaddr)) {
		session_close(sr->s, SESSION_RESOURCE);
		return;
	}
	if (lgr_has_feature(lgr_link_group(link), CLC_FEAT_RESUME))
		memcpy(sr->resume_id, a->resume_id, sizeof(sr->resume_id));
	session_rdma_relay_start(sr, sr->lc.link);
}

static void
session_rdma_rejected(struct lgr_link *link,
		      const struct llc_conn_reject_info *rj)
{
	struct session_rdma *sr =
		session_rdma_find(lgr_link_group(link), rj->opener_token);
	enum session_reason r;

	if (sr != NULL && session_rdma_waiting_alone(sr)) {
		/* its session went first: the peer's end never opened */
		session_rdma_free(sr);
		return;
	}
	if (sr != NULL && resume_waiting(sr) && sr->rc != NULL) {
		/* done both ways here and the FIN sent: the peer closed */
		if (sr->rd_eof && sr->wr_shut && tx_unsent(sr->rc) == 0) {
			resume_end(sr);
			session_rdma_conn_fail(sr, sr->fin_reason);
			return;
		}
		resume_fail(sr, STAT_resume_failed_refused,
			    "the peer daemon does not have it");
		return;
	}
	if (sr == NULL || sr->rc != NULL || sr->s->state != SESSION_RDMA_OPEN) {
		log_warnx("lgr %u: CONN_REJECT for token %u, not waiting: "
			  "ignored",
			  lgr_id(lgr_link_group(link)), rj->opener_token);
		return;
	}
	r = session_reason_of_code(rj->reason);
	/*
	 * The peer daemon drains to stop (a restart): its group takes no
	 * new connection, but its peer port's listening socket waits in
	 * the service manager's store for its next process (fdstore.c).
	 * Nothing was read from the client yet: open again over TCP.
	 */
	if (r == SESSION_SHUTDOWN) {
		sr->s->rdma_peer_stopping = true;
		if (session_rdma_reopen(sr, lgr_link_group(link)))
			return;
	}
	/* the peer reached, its target not: the connection log says so */
	if (session_reason_target(r))
		log_debug("conn 0x%llx: rule %s: peer %s: %s",
			  session_rdma_conn_id(sr), sr->s->rule->name,
			  sr->s->peer->name, session_reason_desc(r));
	else
		log_warnx_rl("reaching peer", sr->s->peer->name,
			     "conn 0x%llx: rule %s: peer %s: %s",
			     session_rdma_conn_id(sr), sr->s->rule->name,
			     sr->s->peer->name, session_reason_desc(r));
	STATS_INC(worker_stats(sr->s->w), clnt_hshake_err_cnt);
	session_close(sr->s, r);
}

/* ---- export side ---- */

/*
 * Refuse the open of sr with reason r (logged by the caller): the close
 * sends the CONN_REJECT.
 */
static void
session_rdma_refuse(struct session_rdma *sr, enum session_reason r)
{
	STATS_INC(worker_stats(sr->s->w), srv_hshake_err_cnt);
	session_close(sr->s, r);
}

/* Refuse a CONN_OPEN that got no session. */
static void
session_rdma_refuse_open(struct session_rdma_worker *srw, struct lgr_link *link,
			 uint32_t opener_token, enum session_reason r)
{
	STATS_INC(worker_stats(srw->w), srv_hshake_err_cnt);
	stats_add(worker_stats(srw->w), STAT_CLOSE_BASE + r, 1);
	(void)session_rdma_conn_reject(link, opener_token, r);
}

/* Export side: a CONN_ORIGIN, kept for the CONN_OPEN that follows. */
static void
session_rdma_origin(struct session_rdma_worker *srw, struct lgr_link *link,
		    const struct llc_conn_origin_info *o)
{
	unsigned int i = srw->origins_next++ % SESSION_RDMA_ORIGINS;

	srw->origins[i].lgr_id = lgr_id(lgr_link_group(link));
	srw->origins[i].token = o->token;
	srw->origins[i].origin = o->origin;
}

/* The client that the CONN_ORIGIN before opener token's open named. */
static void
session_rdma_origin_take(struct session_rdma_worker *srw, struct lgr *lgr,
			 uint32_t token, struct session *s)
{
	unsigned int i;

	for (i = 0; i < SESSION_RDMA_ORIGINS; i++) {
		if (srw->origins[i].lgr_id != lgr_id(lgr) ||
		    srw->origins[i].token != token)
			continue;
		fb_origin_get(&srw->origins[i].origin, &s->origin[0],
			      &s->origin[1]);
		srw->origins[i].lgr_id = 0;
		return;
	}
}

static void
session_rdma_open(struct session_rdma_worker *srw, struct lgr_link *link,
		  const struct llc_conn_open_info *o)
{
	struct lgr *lgr = lgr_link_group(link);
	struct worker *w = srw->w;
	const struct conf *conf = worker_conf(w);
	enum session_reason r;
	struct session_rdma *sr;
	struct session *s;
	char who[32];
	int rc;

	STATS_INC(worker_stats(w), conns_from_peers);
	snprintf(who, sizeof(who), "lgr %u", lgr_id(lgr));
	if (export_find(w, conf, who, lgr_peer(lgr)->name, o->export, &r) ==
	    NULL) {
		session_rdma_refuse_open(srw, link, o->token, r);
		return;
	}
	if (export_room(w, &r) != 0) {
		session_rdma_refuse_open(srw, link, o->token, r);
		return;
	}
	s = session_new(w, -1, SESSION_ROLE_EXPORT);
	if (s == NULL) {
		session_rdma_refuse_open(srw, link, o->token, SESSION_RESOURCE);
		return;
	}
	s->export = conf_export_find(s->conf, o->export);
	s->peer = conf_peer_find(s->conf, lgr_peer(lgr)->name);
	snprintf(s->export_name, sizeof(s->export_name), "%s", o->export);
	session_rdma_origin_take(srw, lgr, o->token, s);
	sr = session_rdma_new(s, srw);
	if (sr == NULL || s->export == NULL) {
		free(sr);
		session_rdma_refuse_open(srw, link, o->token, SESSION_RESOURCE);
		session_close(s, SESSION_RESOURCE);
		return;
	}
	s->rdma = sr;
	session_ops_set(s, &session_rdma_session_ops);
	s->mode = SESSION_MODE_RDMA;
	s->state = SESSION_CONNECT_TARGET;
	sr->peer_token = o->token;
	sr->open_link = link;
	sr->peer_rmb.rkey = o->rmb_rkey;
	sr->peer_rmb.vaddr = o->rmb_vaddr;
	sr->peer_rmb.size = clc_rmbe_bytes(o->rmbe_size);
	/* on the link it came on: the rkey is for that link's device */
	rc = session_rdma_join(sr, lgr, SESSION_RDMA_JOIN_ON, link);
	if (rc == 0)
		rc = lgr_conn_peer_rmb(&sr->lc, link, o->rmb_rkey,
				       o->rmb_vaddr);
	if (rc) {
		log_warnx("conn 0x%llx: export %s over lgr %u: %s",
			  session_rdma_conn_id(sr), s->export->name,
			  lgr_id(lgr), strerror(-rc));
		session_rdma_refuse(sr, SESSION_RESOURCE);
		return;
	}
	if (export_connect(s, &r) != 0) {
		session_rdma_refuse(sr, r);
		return;
	}
	log_debug("conn 0x%llx: peer %s: CONN_OPEN %s (token %u) on lgr %u",
		  session_rdma_conn_id(sr), lgr_peer(lgr)->name, o->export,
		  o->token, lgr_id(lgr));
}

/*
 * The CONN_ACCEPT that waited for a TX slot went out: the relay starts,
 * since no CDC of ours may overtake it; or it could not go.
 */
static void
session_rdma_accept_sent(struct session_rdma *sr, int status)
{
	if (status)
		session_rdma_conn_fail(sr, SESSION_LINK_FAILED);
	else
		session_rdma_relay_start(sr, sr->lc.link);
}

/* Export side: the target connect finished; accept or refuse the open. */
static void
session_rdma_target_connected(struct session_rdma *sr)
{
	struct session *s = sr->s;
	enum session_reason r;
	struct llc_info m;
	int rc;

	if (export_connected(s, &r) != 0) {
		session_rdma_refuse(sr, r);
		return;
	}
	memset(&m, 0, sizeof(m));
	m.type = LLC_CONN_ACCEPT;
	m.flags = LLC_FLAG_RESP;
	m.conn_accept.opener_token = sr->peer_token;
	m.conn_accept.token = sr->lc.token;
	m.conn_accept.rmb_rkey =
		session_rdma_conn_mr(sr->srw, sr->rmb, sr->lc.link)->rkey;
	sr->rmb_told = true;
	m.conn_accept.rmb_vaddr = sr->rmb->iova;
	m.conn_accept.rmbe_size = session_rdma_rmbe_size(sr->rmb->size);
	if (sr->lc.lgr != NULL &&
	    lgr_has_feature(sr->lc.lgr, CLC_FEAT_RESUME)) {
		unsigned char id[AUTH_NONCE_LEN];

		auth_nonce(id);
		memcpy(sr->resume_id, id, sizeof(sr->resume_id));
		memcpy(m.conn_accept.resume_id, id, sizeof(sr->resume_id));
	}
	sr->answered = true;
	rc = sr->lc.link != NULL ?
		     session_rdma_conn_llc_send(sr, sr->lc.link, &m,
						session_rdma_accept_sent) :
		     -ENOLINK;
	if (rc < 0) {
		/* the link is gone: nobody to tell */
		session_close(s, SESSION_LINK_FAILED);
		return;
	}
	sr->opened = true;
	session_rdma_conn_told_set(sr, lgr_link_id(sr->lc.link));
	if (rc == 0) {
		session_rdma_conn_rkeys_announce(sr);
		session_rdma_relay_start(sr, sr->lc.link);
	} else {
		sr->rkeys_owed = true;
		session_timer(s, 0); /* the link's own bound covers the wait */
	}
}

/*
 * The data path's LLC messages on an active link of a group of ours
 * (lgr_ctx.llc_rx): CONN_ORIGIN, CONN_OPEN, CONN_ACCEPT, CONN_REJECT,
 * CONN_RESUME.  Anything else is a protocol error (CONFIRM_RKEY is the
 * group's: rtoken.c).
 */
static void
session_rdma_llc_rx(struct lgr_link *link, const struct llc_info *m, void *arg)
{
	struct session_rdma_worker *srw = arg;
	char why[64];

	if (srw == NULL)
		return;
	switch (m->type) {
	case LLC_CONN_ORIGIN:
		session_rdma_origin(srw, link, &m->conn_origin);
		return;
	case LLC_CONN_OPEN:
		session_rdma_open(srw, link, &m->conn_open);
		return;
	case LLC_CONN_ACCEPT:
		session_rdma_accepted(link, &m->conn_accept);
		return;
	case LLC_CONN_REJECT:
		session_rdma_rejected(link, &m->conn_reject);
		return;
	case LLC_CONN_RESUME:
		resume_rx(srw, link, m);
		return;
	}
	snprintf(why, sizeof(why), "unexpected LLC %s on link %u",
		 llc_type_name(m->type), lgr_link_id(link));
	lgr_protocol_error(lgr_link_group(link), why);
}

/*
 * Has sr's peer been consuming nothing for longer than bound while our
 * bytes wait for its window?  A slow reader moves its consumer cursor
 * now and then (however shut the window looks at any one moment); one
 * whose side never reads does not, while its daemon still answers
 * TEST_LINK and its link stays up.
 */
static bool
session_rdma_stuck(struct session_rdma *sr, uint64_t now, uint64_t bound)
{
	const struct rconn *rc = sr->rc;

	if (tx_unsent(rc) == 0 || tx_peer_window(rc) > 0 ||
	    tx_peer_cons_off(rc) != sr->stuck_cons || sr->stuck_since_ms == 0) {
		sr->stuck_cons = tx_peer_cons_off(rc);
		sr->stuck_since_ms = tx_unsent(rc) > 0 ? now : 0;
		return false;
	}
	return now - sr->stuck_since_ms > bound;
}

/*
 * Each second: a connection whose bytes have waited for the peer's
 * window while the peer consumed nothing for longer than
 * tcp_user_timeout is reset, as Linux drops a TCP connection whose zero
 * window outlasts TCP_USER_TIMEOUT: the peer is there but its side never
 * reads, and would pin the connection, its sockets and buffers forever.
 */
static void
session_rdma_watch(evutil_socket_t fd, short what, void *arg)
{
	struct session_rdma_worker *srw = arg;
	const struct conf *conf = worker_conf(srw->w);
	uint64_t now = now_ms(), bound;
	struct session *s, *next;
	struct session_rdma *sr;

	if (conf->tcp_user_timeout <= 0)
		return;
	bound = (uint64_t)conf->tcp_user_timeout * 1000;
	for (s = worker_sessions(srw->w); s != NULL; s = next) {
		next = session_next(s);
		sr = s->rdma;
		if (s->mode != SESSION_MODE_RDMA || sr == NULL ||
		    s->state != SESSION_RELAY || sr->rc == NULL ||
		    sr->closing || !session_rdma_stuck(sr, now, bound))
			continue;
		/* a kernel peer's session has no peer entry: its group's
		 * pseudo-peer names it (smc-r) */
		log_warnx("conn 0x%llx: peer %s consumed nothing for %d s "
			  "(tcp_user_timeout) with %zu bytes waiting: reset",
			  session_rdma_conn_id(sr), lgr_peer(sr->lc.lgr)->name,
			  conf->tcp_user_timeout, tx_unsent(sr->rc));
		STATS_INC(worker_stats(srw->w), conns_window_timeout);
		tx_close(sr->rc, TX_CLOSE_ABORT);
		session_rdma_conn_fail(sr, SESSION_PEER_TIMEOUT);
	}
}

/* ---- session.c's hooks ---- */

/* A socket event of s in RDMA mode (session.c hands them over). */
static void
session_rdma_io(struct session *s, int i, short what)
{
	struct session_rdma *sr = s->rdma;

	if (s->state == SESSION_CONNECT_TARGET) {
		if (i == 1 && (what & EV_WRITE))
			session_rdma_target_connected(sr);
		return;
	}
	if (resume_tcp_io(sr, i, what))
		return;
	if ((s->state != SESSION_RELAY && s->state != SESSION_RESUMING) ||
	    (i != sr->t && !sr->over_tcp))
		return;
	session_rdma_conn_kick(sr);
}

/* The open timer of s fired (CONN_OPEN unanswered, target connect). */
static void
session_rdma_timeout(struct session *s)
{
	struct session_rdma *sr = s->rdma;

	if (s->state == SESSION_RDMA_REOPEN) {
		s->mode = SESSION_MODE_FALLBACK;
		if (s->rdma_peer_stopping || !session_rdma_connect(s))
			fallback_connect(s);
		return;
	}
	if (s->state == SESSION_RDMA_WAIT) {
		log_debug("conn 0x%llx: rule %s: peer %s: no link group in "
			  "%d ms: fallback",
			  (unsigned long long)s->id, s->rule->name,
			  s->peer->name, SESSION_RDMA_WAIT_MS);
		session_rdma_unpark(worker_rdma(s->w), s);
		s->mode = SESSION_MODE_FALLBACK;
		fallback_connect(s);
		return;
	}
	if (s->state == SESSION_RESUMING) {
		resume_timeout(sr);
		return;
	}
	if (s->state == SESSION_RDMA_OPEN) {
		log_warnx("conn 0x%llx: rule %s: peer %s: no answer to "
			  "CONN_OPEN in %d s",
			  session_rdma_conn_id(sr), s->rule->name,
			  s->peer->name, SESSION_RDMA_OPEN_TIMEOUT);
		STATS_INC(worker_stats(s->w), clnt_hshake_err_cnt);
		session_close(s, SESSION_PEER_TIMEOUT);
		return;
	}
	session_rdma_refuse(sr, export_timed_out(s));
}

/*
 * A kernel peer's connection ends: the peer drops our RMB element's rkey
 * from its group's table (255 entries: without this a group could carry
 * no more than 255 connections in its life), as Linux does for its own
 * at every close on a live group.  The element is deregistered when it
 * is given back in any case (buf.c).
 */
static void
session_rdma_smcr_delete_rkey(struct session_rdma *sr)
{
	struct lgr_link *link = sr->lc.link;
	const struct dev_mr *mr;
	struct llc_info m;

	if (!sr->smcr || link == NULL || !lgr_link_is_active(link) ||
	    sr->lc.lgr == NULL || !lgr_is_active(sr->lc.lgr))
		return;
	mr = session_rdma_conn_mr(sr->srw, session_rdma_conn_rmb(sr), link);
	if (mr == NULL)
		return;
	memset(&m, 0, sizeof(m));
	m.type = LLC_DELETE_RKEY;
	m.delete_rkey.num_rkeys = 1;
	m.delete_rkey.rkey[0] = mr->rkey;
	if (llc_send_detached(link, &m) == 0)
		STATS_INC(worker_stats(sr->s->w), smc_delete_rkeys);
}

/*
 * sr ends between its CLC and its relay (no rconn yet), after the peer
 * was given its token and RMB element and told us its own: a native
 * peer's CONN_ACCEPT whose keys did not serve, or that came after our
 * session closed (session_rdma_accepted_late), a kernel peer's CONFIRM
 * or ACCEPT before the relay began.  The peer's end may be open already
 * and writing into the element (a kernel client's is, once its CONFIRM
 * went).  Its abort goes as a relay's does (tx_close), through an rconn
 * made for it: one CDC with peer_conn_abort, seqno 1 and both cursors
 * at 0, which Linux takes as any first CDC and ends its connection with
 * ECONNRESET (smc_cdc_msg_recv_action), as a native peer does
 * (rx_cdc_recv); it writes no more.  The rconn takes the buffers, and
 * the element cools when the rconn goes, still registered, for WRITEs
 * already in flight (tx_conn_destroy).  NULL when it cannot be sent (no
 * active link of an active group: a group still set up goes with the
 * connection, session_rdma_end): sr keeps its buffers, and
 * session_rdma_free cools the element.
 */
static struct rconn *
session_rdma_abort_early(struct session_rdma *sr)
{
	struct rconn *rc;

	/* an ACCEPT of ours still waiting for a TX slot never goes: the
	 * peer knows nothing of us */
	if (sr->rc != NULL || !sr->rmb_told || sr->peer_token == 0 ||
	    llc_pending_waits(&sr->llc) || sr->sndbuf == NULL ||
	    sr->rmb == NULL || sr->lc.lgr == NULL ||
	    !lgr_is_active(sr->lc.lgr) || sr->lc.link == NULL ||
	    !lgr_link_is_active(sr->lc.link))
		return NULL;
	rc = session_rdma_rconn_new(sr, sr->lc.link, false);
	if (rc == NULL)
		return NULL;
	log_debug("conn 0x%llx: ends before its relay: peer token %u told "
		  "to abort",
		  session_rdma_conn_id(sr), sr->peer_token);
	STATS_INC(worker_stats(sr->srw->w), conns_early_aborts);
	return rc;
}

/*
 * sr's connection ends with reason: it leaves the group; unless it ended
 * normally the peer is told to reset (an abort), as is a peer that knew
 * it before its relay started.  The rconn goes when its last CDC
 * completed.
 */
static void
session_rdma_end(struct session_rdma *sr, enum session_reason reason)
{
	if (sr->rc == NULL && (sr->rc = session_rdma_abort_early(sr)) != NULL)
		tx_close(sr->rc, TX_CLOSE_ABORT);
	else if (sr->rc != NULL && reason != SESSION_CLIENT_FIN &&
		 reason != SESSION_TARGET_FIN && reason != SESSION_PEER_RST)
		tx_close(sr->rc, TX_CLOSE_ABORT);
	else if (sr->rc != NULL && sr->smcr)
		/* Linux's connection waits for peer_conn_closed to leave
		 * its group (PEERFINCLOSEWAIT, PEERCLOSEWAIT2) */
		tx_close(sr->rc, TX_CLOSE_CLOSED);
	/* after the abort: Linux drops the rkey from its table at once
	 * (smc_rtoken_delete), and a WRITE of a connection not yet told to
	 * stop would find it gone and take the link down */
	session_rdma_smcr_delete_rkey(sr);
	if (sr->rc != NULL) {
		sr->lc.rc = NULL;
		tx_conn_free(sr->rc);
	}
	session_rdma_free(sr);
}

/*
 * Rule side: sr's session closes (reason) with its CONN_OPEN unanswered.
 * The peer has our token and RMB element; its end opens when it
 * accepts, however late, and may write into the element at once, and
 * we cannot tell it to stop before its CONN_ACCEPT names its token.
 * Cooled and deregistered meanwhile (RMB_COOL_MS), the element would
 * fail that WRITE at the peer and take its link, and every connection
 * on it, down.  So sr outlives its session (sr->s NULL), in its group
 * with its token (no connection takes it, and the answer finds sr) and
 * its buffers, until the answer: a CONN_ACCEPT gets the abort of an
 * early end (session_rdma_accepted_late), a CONN_REJECT or the group's
 * end frees it.  A peer that never answers keeps it while its group
 * lives, in a place a connection would take.  true when sr was kept.
 */
static bool
session_rdma_await_answer(struct session_rdma *sr, enum session_reason reason)
{
	if (sr->s->role != SESSION_ROLE_RULE || sr->smcr || !sr->opened ||
	    sr->rc != NULL || sr->peer_token != 0 || !sr->rmb_told ||
	    sr->rmb == NULL || llc_pending_waits(&sr->llc) ||
	    sr->lc.lgr == NULL || !lgr_is_active(sr->lc.lgr))
		return false;
	log_debug("conn 0x%llx: closed with its CONN_OPEN unanswered: token "
		  "%u kept for the answer",
		  session_rdma_conn_id(sr), sr->lc.token);
	sr->s = NULL;
	sr->close_reason = reason;
	return true;
}

/*
 * s closes with reason: its connection ends (session_rdma_end), or,
 * with its CONN_OPEN unanswered, waits for the answer without it.
 */
void
session_rdma_close(struct session *s, enum session_reason reason)
{
	struct session_rdma *sr = s->rdma;

	session_rdma_unpark(worker_rdma(s->w), s);
	if (sr == NULL)
		return;
	resume_end(sr);
	s->rdma = NULL;
	if (s->role == SESSION_ROLE_EXPORT && !sr->answered)
		(void)session_rdma_conn_reject(
			sr->lc.link != NULL ? sr->lc.link : sr->open_link,
			sr->peer_token, reason);
	if (!session_rdma_await_answer(sr, reason))
		session_rdma_end(sr, reason);
}

static void
session_rdma_json_int(json_t *o, const char *key, uint64_t v)
{
	json_object_set_new(o, key, json_integer((json_int_t)v));
}

/* Add s's RDMA state (tokens, cursors, windows) to its JSON object. */
void
session_rdma_json(const struct session *s, void *json_obj)
{
	const struct session_rdma *sr = s->rdma;
	json_t *o;

	if (sr == NULL)
		return;
	o = json_object();
	if (o == NULL)
		return;
	session_rdma_json_int(o, "token", sr->lc.token);
	session_rdma_json_int(o, "peer_token", sr->peer_token);
	session_rdma_json_int(o, "lgr",
			      sr->lc.lgr != NULL ? lgr_id(sr->lc.lgr) : 0);
	session_rdma_json_int(
		o, "link", sr->lc.link != NULL ? lgr_link_id(sr->lc.link) : 0);
	resume_json(sr, o);
	if (sr->rc != NULL) {
		tx_json(sr->rc, o);
		rx_json(sr->rc, o);
	}
	json_object_set_new(json_obj, "rdma", o);
}

const struct session_ops session_rdma_session_ops = {
	.io = session_rdma_io,
	.timeout = session_rdma_timeout,
	.close = session_rdma_close,
	.json = session_rdma_json,
};
