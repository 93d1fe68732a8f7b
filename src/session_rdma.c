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
 * connection to the group's other link (tx_failover), and with no link
 * left the connection is reset with reason link_failed.
 *
 * Keys per link: the send ring and the RMB element are registered in the
 * protection domain of each link of the connection's group they are
 * needed on (the group's own PD on that link's device, buf_mr), and an
 * rkey is only good on QPs of that PD.  The rkey in CONN_OPEN and
 * CONN_ACCEPT is for the link that message goes on (the acceptor joins
 * the connection to that link); each side then tells the other its
 * RMB's rkey on every other active link with CONFIRM_RKEY (on the
 * connection's link, after the open or accept, and again for a link that
 * comes up later).  A connection moves to a link only with the peer's
 * rkey for it; without one it is reset with reason link_failed.
 *
 * rconn and lgr callbacks can come from deep inside the relay loop
 * (rx_consumed, tx_push); they only record what happened and kick the
 * loop, which acts on it and is the one place a session is closed from.
 *
 * Per worker (one lgr_ctx each): a registered-buffer pool over its
 * devices, capped at the worker's share of rdma.max_buffer_memory, and
 * the connection tokens, handed out in increasing order so that a CDC
 * for a token closed just now is told apart from a forged one.
 */
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

#include "smcproxyd.h"
#include "clc_wire.h"
#include "fallback_wire.h"
#include "llc_wire.h"

#define SESSION_RDMA_OPEN_TIMEOUT 330 /* s: > the largest connect_timeout */
#define SESSION_RDMA_WAIT_MS 3000     /* for a link group on its way */
#define SESSION_RDMA_PARKED_MAX 4096  /* connections waiting for one */
#define SESSION_RDMA_RESUME_MS 1000   /* rule side: next try for a group */
#define SESSION_RDMA_REOPENS 3	      /* opens lost with a group, at most */

/* Sessions in order, linked through their park entry. */
struct session_rdma_queue {
	TAILQ_HEAD(, session) q;
	unsigned int n;
};

/* Registered memory the connections of one peer hold on a worker. */
struct session_rdma_share {
	LIST_ENTRY(session_rdma_share) entry;
	char peer[CONF_NAME_MAX + 1];
	size_t bytes;
};

/* A worker's RDMA data path state: its lgr_ctx's llc_arg. */
struct session_rdma_worker {
	struct worker *w;
	struct lgr_ctx *ctx;
	struct buf_pool *pool; /* on every device of the worker's links */
	/* client connections waiting for a group on its way (FIFO) */
	struct session_rdma_queue parked;
	/* taken off parked by a wake-up, each to go on exactly once */
	struct session_rdma_queue woken;
	/* connections whose group ended, both roles */
	TAILQ_HEAD(, session_rdma) resuming;
	unsigned int nresuming;
	struct event *resume_ev; /* rule side: find or set up a group */
	LIST_HEAD(, session_rdma_share) shares; /* per peer (buffer_share) */
	struct event *watch_ev; /* each second: peers that consume nothing */
};

/* What sr's own LLC message (waiting for a TX slot) is. */
enum session_rdma_llc {
	SESSION_RDMA_LLC_OPEN,
	SESSION_RDMA_LLC_ACCEPT,
	SESSION_RDMA_LLC_RKEY,
	SESSION_RDMA_LLC_RESUME,  /* opener's CONN_RESUME request */
	SESSION_RDMA_LLC_RESUMED, /* acceptor's answer: then resume */
};

/* Where a resume over TCP is (session_rdma_tcp_start). */
enum session_rdma_tcp {
	SESSION_RDMA_TCP_NONE,
	SESSION_RDMA_TCP_CONNECTING, /* rule side: connect under way */
	SESSION_RDMA_TCP_HANDSHAKE,  /* rule side: HELLO sent */
	SESSION_RDMA_TCP_RELAY,	     /* both: carried over TCP from now */
};

/* An rkey of the peer's RMB element, valid on the link with link_id. */
struct session_rdma_rkey {
	uint8_t link_id; /* 0: unused */
	uint32_t rkey;
};

struct session_rdma {
	struct session *s;
	struct session_rdma_worker *srw;
	struct lgr_conn lc;		/* membership of the link group */
	struct rconn *rc;		/* once accepted */
	struct buf *sndbuf, *rmb;	/* until rc takes them over */
	uint32_t peer_token;		/* ours: lc.token */
	struct rconn_peer_rmb peer_rmb; /* export side: from CONN_OPEN */
	int t;				/* index of the TCP socket in fd[] */
	bool answered;			/* export side: ACCEPT or REJECT sent */
	struct lgr_link *open_link;	/* export side: CONN_OPEN came here */
	bool rd_eof;			/* TCP EOF read, DONE_WRITING asked */
	bool rd_blocked;		/* ring full: until tx_space_ready */
	bool peer_done;			/* peer_done_writing told */
	bool wr_shut;			/* shutdown(SHUT_WR) of the TCP side */
	bool fin_set;
	enum session_reason fin_reason; /* which side finished first */
	bool closing;
	enum session_reason close_reason;
	struct lgr_link *failover_to; /* link_down: move there */
	bool in_run, again;
	struct llc_pending llc; /* our LLC message waiting for a TX slot */
	enum session_rdma_llc llc_kind;
	/* keys per link (see the top of the file) */
	struct session_rdma_rkey peer_rkeys[LGR_LINK_SLOTS];
	uint8_t told[LGR_LINK_SLOTS]; /* links the peer has our rkey for */
	bool opened;		      /* CONN_OPEN / CONN_ACCEPT went out */
	bool rkeys_owed;	      /* announce once llc went out */
	/* resuming on a new group (docs/protocol.md) */
	uint8_t resume_id[LLC_RESUME_ID_LEN]; /* all zero: cannot */
	uint8_t peer_sysid[8]; /* the peer daemon's, of the group it was on */
	uint8_t peer_worker;   /* and its worker there + 1 (0: unknown) */
	bool resuming;	       /* on srw->resuming */
	bool resume_sent;      /* opener: CONN_RESUME out, answer awaited */
	uint64_t resume_since_ms;
	TAILQ_ENTRY(session_rdma) resume_entry; /* on srw->resuming */
	/* acceptor: what the answer's resume applies, once it went out */
	uint64_t res_rx, res_fin;
	uint32_t res_rkey;
	struct session_rdma_share *share; /* charged charge bytes there */
	size_t charge;
	/* our bytes wait for the peer's window: since when it consumed
	 * nothing, and how much it had consumed then (session_rdma_watch) */
	uint64_t stuck_since_ms, stuck_cons;
	/* resumed over TCP: fd[1 - t] is the connection to the peer */
	enum session_rdma_tcp tcp_step;
	uint8_t tcp_in[FB_MSG_MAX];
	size_t tcp_in_len;
	bool tcp_eof;  /* the peer's FIN came */
	bool tcp_shut; /* ours went: shutdown(SHUT_WR) */
};

static void session_rdma_kick(struct session_rdma *sr);
static void session_rdma_free(struct session_rdma *sr);
static void session_rdma_relay_start(struct session_rdma *sr,
				     struct lgr_link *link);
static void session_rdma_link_up(struct lgr_link *link, void *arg);
static void session_rdma_rkeys_announce(struct session_rdma *sr);
static void session_rdma_unpark_peer(struct session_rdma_worker *srw,
				     const struct conf_peer *peer);
static void session_rdma_setup_failed(struct lgr *lgr, void *arg);
static void session_rdma_resume_tick(evutil_socket_t fd, short what, void *arg);
static void session_rdma_resume_apply(struct session_rdma *sr);
static void session_rdma_resume_rx(struct session_rdma_worker *srw,
				   struct lgr_link *link,
				   const struct llc_info *m);
static void session_rdma_resume_peer(struct session_rdma_worker *srw,
				     struct lgr *lgr, bool failed);
static void session_rdma_resume_fail(struct session_rdma *sr,
				     enum stats_id stat, const char *why);
static void session_rdma_resume_list_del(struct session_rdma *sr);
static void session_rdma_tcp_start(struct session_rdma *sr);
static void session_rdma_tcp_io(struct session_rdma *sr, short what);
static bool session_rdma_tcp_out(struct session_rdma *sr);
static bool session_rdma_tcp_in(struct session_rdma *sr);
static void session_rdma_watch(evutil_socket_t fd, short what, void *arg);

static unsigned long long
session_rdma_id(const struct session_rdma *sr)
{
	return (unsigned long long)sr->s->id;
}

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
	srw->resume_ev =
		evtimer_new(worker_base(w), session_rdma_resume_tick, srw);
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
	ctx->llc_rx = session_rdma_llc_rx;
	ctx->link_up = session_rdma_link_up;
	ctx->setup_failed = session_rdma_setup_failed;
	ctx->llc_arg = srw;
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
	srw->ctx->llc_rx = NULL;
	srw->ctx->link_up = NULL;
	srw->ctx->setup_failed = NULL;
	srw->ctx->llc_arg = NULL;
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
	return link->pd != NULL ? 0 : -ENODEV;
}

/* The MR of b in link's PD, registered there now if need be; or NULL. */
static const struct dev_mr *
session_rdma_mr(struct session_rdma_worker *srw, struct buf *b,
		const struct lgr_link *link)
{
	(void)srw;
	return b != NULL ? buf_mr(b, link->dev->ops, link->pd) : NULL;
}

static struct buf *
session_rdma_rmb(const struct session_rdma *sr)
{
	return sr->rc != NULL ? sr->rc->rmb : sr->rmb;
}

/* The peer's rkey for link_id: 0 with *rkey set, -ENOENT if not told. */
static int
session_rdma_peer_rkey(const struct session_rdma *sr, uint8_t link_id,
		       uint32_t *rkey)
{
	int i;

	for (i = 0; i < LGR_LINK_SLOTS; i++)
		if (link_id != 0 && sr->peer_rkeys[i].link_id == link_id) {
			*rkey = sr->peer_rkeys[i].rkey;
			return 0;
		}
	return -ENOENT;
}

/*
 * Remember the peer's rkey for link_id, in place of one for the same
 * link or of one for a link the group no longer has.
 */
static void
session_rdma_peer_rkey_set(struct session_rdma *sr, uint8_t link_id,
			   uint32_t rkey)
{
	struct session_rdma_rkey *e, *spare = NULL;
	struct lgr *lgr = sr->lc.lgr;
	int i;

	for (i = 0; i < LGR_LINK_SLOTS; i++) {
		e = &sr->peer_rkeys[i];
		if (e->link_id == link_id) {
			e->rkey = rkey;
			return;
		}
		if (spare == NULL && (e->link_id == 0 || lgr == NULL ||
				      lgr_link_by_id(lgr, e->link_id) == NULL))
			spare = e;
	}
	if (spare == NULL)
		spare = &sr->peer_rkeys[0];
	spare->link_id = link_id;
	spare->rkey = rkey;
}

static bool
session_rdma_told(const struct session_rdma *sr, uint8_t link_id)
{
	int i;

	for (i = 0; i < LGR_LINK_SLOTS; i++)
		if (sr->told[i] == link_id)
			return true;
	return false;
}

static void
session_rdma_told_set(struct session_rdma *sr, uint8_t link_id)
{
	struct lgr *lgr = sr->lc.lgr;
	int i;

	if (session_rdma_told(sr, link_id))
		return;
	for (i = 0; i < LGR_LINK_SLOTS; i++)
		if (sr->told[i] == 0 || lgr == NULL ||
		    lgr_link_by_id(lgr, sr->told[i]) == NULL)
			break;
	sr->told[i < LGR_LINK_SLOTS ? i : 0] = link_id;
}

/* Compressed RMB element size of the wire: 1 << (n + 14), rounded down. */
static uint8_t
session_rdma_rmbe_size(size_t size)
{
	uint8_t n = 0;

	while (n < 15 && ((size_t)1 << (n + 15)) <= size)
		n++;
	return n;
}

/* The connection of lgr with our token, accepted or not; NULL if none. */
static struct session_rdma *
session_rdma_find(struct lgr *lgr, uint32_t token)
{
	struct lgr_conn *c = lgr_conn_find(lgr, token);

	return c != NULL ? c->arg : NULL;
}

/* Close the session from outside the relay loop, or have the loop do it. */
static void
session_rdma_fail(struct session_rdma *sr, enum session_reason r)
{
	if (!sr->closing) {
		sr->closing = true;
		sr->close_reason = r;
	}
	session_rdma_kick(sr);
}

/*
 * sr's LLC message that waited for a TX slot went out (status 0) or could
 * not.  Once the export side's CONN_ACCEPT went out the relay starts: no
 * CDC of ours may overtake it.
 */
static void
session_rdma_llc_sent(struct llc_pending *p, int status)
{
	struct session_rdma *sr = container_of(p, struct session_rdma, llc);

	if (status) {
		session_rdma_fail(sr, SESSION_LINK_FAILED);
		return;
	}
	/* before the relay, which may close (and free) sr */
	if (sr->rkeys_owed)
		session_rdma_rkeys_announce(sr);
	if (sr->llc_kind == SESSION_RDMA_LLC_ACCEPT)
		session_rdma_relay_start(sr, sr->lc.link);
	else if (sr->llc_kind == SESSION_RDMA_LLC_RESUMED)
		session_rdma_resume_apply(sr);
}

/*
 * Send m, the LLC message of sr's open (CONN_OPEN, CONN_ACCEPT), on
 * link.  llc.c's queue is short and a burst of opens fills it: then sr
 * waits for a TX slot in its turn rather than give up.  0 when it went
 * out or was queued by llc.c, 1 when sr waits (session_rdma_llc_sent
 * goes on), -errno.
 */
static int
session_rdma_llc_send(struct session_rdma *sr, struct lgr_link *link,
		      const struct llc_info *m, enum session_rdma_llc kind)
{
	sr->llc_kind = kind;
	return llc_send_wait(link, m, &sr->llc, session_rdma_llc_sent);
}

/* ---- rkeys of the other links ---- */

/*
 * Tell the peer our RMB element's rkey on every active link of the group
 * it does not have one for yet: a CONFIRM_RKEY per link on the
 * connection's link, whose rkey there names the RMB element.  Once our
 * open or accept went out; while a message of ours waits for a TX slot,
 * after it (nothing may overtake the open).
 */
static void
session_rdma_rkeys_announce(struct session_rdma *sr)
{
	struct lgr *lgr = sr->lc.lgr;
	struct lgr_link *via = sr->lc.link, *l;
	const struct dev_mr *cur, *mr;
	struct buf *rmb = session_rdma_rmb(sr);
	struct llc_info m;
	int i, rc;

	if (!sr->opened || lgr == NULL || via == NULL || rmb == NULL ||
	    via->state != LGR_LINK_ACTIVE)
		return;
	if (llc_pending_waits(&sr->llc)) {
		sr->rkeys_owed = true;
		return;
	}
	sr->rkeys_owed = false;
	cur = session_rdma_mr(sr->srw, rmb, via);
	if (cur == NULL)
		return;
	for (i = 0; i < LGR_LINK_SLOTS; i++) {
		l = &lgr->link[i];
		if (l == via || l->state != LGR_LINK_ACTIVE || l->id == 0 ||
		    session_rdma_told(sr, l->id))
			continue;
		mr = session_rdma_mr(sr->srw, rmb, l);
		if (mr == NULL)
			continue; /* not registered there: cannot move there */
		memset(&m, 0, sizeof(m));
		m.type = LLC_CONFIRM_RKEY;
		m.confirm_rkey.num_rkeys = 1;
		m.confirm_rkey.rt[0].rkey = cur->rkey;
		m.confirm_rkey.rt[0].vaddr = (uint64_t)(uintptr_t)rmb->addr;
		m.confirm_rkey.rt[1].link_id = l->id;
		m.confirm_rkey.rt[1].rkey = mr->rkey;
		m.confirm_rkey.rt[1].vaddr = (uint64_t)(uintptr_t)rmb->addr;
		rc = session_rdma_llc_send(sr, via, &m, SESSION_RDMA_LLC_RKEY);
		if (rc < 0) {
			log_debug("conn 0x%llx: CONFIRM_RKEY for link %u: %s",
				  session_rdma_id(sr), l->id, strerror(-rc));
			return;
		}
		session_rdma_told_set(sr, l->id);
		if (rc == 1) {
			sr->rkeys_owed = true; /* the rest after this one */
			return;
		}
	}
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
	struct lgr_conn *c;
	int di;

	if (srw == NULL)
		return;
	di = session_rdma_devi(srw, link);
	if (di < 0) {
		log_warnx("lgr %u link %u: %s: no buffers on it: %s",
			  link->lgr->id, link->id, link->dev->name,
			  strerror(-di));
		return;
	}
	TAILQ_FOREACH(c, &link->lgr->conns, entry)
		session_rdma_rkeys_announce(c->arg);
	if (link->lgr->state == LGR_STATE_ACTIVE && srw->nresuming > 0)
		session_rdma_resume_peer(srw, link->lgr, false);
	if (link->lgr->role == LGR_ROLE_CLIENT &&
	    link->lgr->state == LGR_STATE_ACTIVE)
		session_rdma_unpark_peer(srw, link->lgr->peer);
}

/*
 * CONFIRM_RKEY on link: the rkeys of a peer's RMB element on other links
 * of the group.  rt[0] names the element by its rkey on link; one that
 * names none of ours belongs to a connection closed meanwhile.
 */
static void
session_rdma_confirm_rkey(struct lgr_link *link, const struct llc_info *m)
{
	const struct llc_confirm_rkey_info *c = &m->confirm_rkey;
	struct lgr_conn *lc;
	struct session_rdma *sr = NULL;
	uint32_t rkey;
	char why[80];
	int i;

	if (m->flags & LLC_FLAG_RESP)
		return; /* we ask for no answers */
	TAILQ_FOREACH(lc, &link->lgr->conns, entry) {
		sr = lc->arg;
		if (sr->peer_rmb.vaddr == c->rt[0].vaddr &&
		    session_rdma_peer_rkey(sr, link->id, &rkey) == 0 &&
		    rkey == c->rt[0].rkey)
			break;
	}
	if (lc == NULL) {
		log_debug("lgr %u link %u: CONFIRM_RKEY for rkey 0x%x: no "
			  "such connection (closed)",
			  link->lgr->id, link->id, c->rt[0].rkey);
		return;
	}
	for (i = 1; i <= c->num_rkeys; i++) {
		if (c->rt[i].link_id == 0 || c->rt[i].vaddr != c->rt[0].vaddr) {
			snprintf(why, sizeof(why),
				 "CONFIRM_RKEY on link %u: rtoken %d is not "
				 "for the same RMB element",
				 link->id, i);
			lgr_protocol_error(link->lgr, why);
			return;
		}
		session_rdma_peer_rkey_set(sr, c->rt[i].link_id, c->rt[i].rkey);
	}
}

/* ---- rconn callbacks: record, then kick the relay loop ---- */

static void
session_rdma_data_ready(struct rconn *rc, void *arg)
{
	session_rdma_kick(arg);
}

static void
session_rdma_space_ready(struct rconn *rc, void *arg)
{
	struct session_rdma *sr = arg;

	sr->rd_blocked = false;
	session_rdma_kick(sr);
}

static void
session_rdma_peer_done(struct rconn *rc, void *arg)
{
	struct session_rdma *sr = arg;

	sr->peer_done = true;
	session_rdma_kick(sr);
}

static void
session_rdma_peer_abort(struct rconn *rc, void *arg)
{
	session_rdma_fail(arg, SESSION_PEER_RST);
}

/* The link's failure reaches lgr.c too, which moves us (link_down). */
static void
session_rdma_link_failed(struct rconn *rc, void *arg)
{
	log_debug("conn 0x%llx: link failed, waiting for the group",
		  session_rdma_id(arg));
}

static const struct rconn_ops session_rdma_ops = {
	.data_ready = session_rdma_data_ready,
	.tx_space_ready = session_rdma_space_ready,
	.peer_done_writing = session_rdma_peer_done,
	.peer_abort = session_rdma_peer_abort,
	.link_failed = session_rdma_link_failed,
};

static bool session_rdma_resume_begin(struct session_rdma *sr,
				      const struct lgr *ended);

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
	log_info("conn 0x%llx: rule %s: lgr %u ended before the peer answered "
		 "CONN_OPEN: opening again",
		 session_rdma_id(sr), s->rule->name, ended->id);
	s->rdma_reopens++;
	s->rdma = NULL;
	s->state = SESSION_RDMA_WAIT;
	session_rdma_free(sr);
	STATS_INC(worker_stats(s->w), conns_reopened);
	session_timer_ms(s, 0);
	return true;
}

/*
 * lgr.c: our link went down; to is where we are now, NULL: none left.
 * With none left a connection that relays resumes on a new group if it
 * can (session_rdma_resume_begin); one waiting for its resume answer
 * tries again.
 */
static void
session_rdma_link_down(struct lgr_conn *c, struct lgr_link *to)
{
	struct session_rdma *sr = c->arg;

	if (sr->rc != NULL && sr->s->state == SESSION_RESUMING) {
		if (to == NULL || sr->resume_sent) {
			lgr_conn_del(&sr->lc);
			if (!session_rdma_resume_begin(sr, c->ended))
				session_rdma_fail(sr, SESSION_LINK_FAILED);
		}
		return;
	}
	if (to == NULL && sr->rc != NULL && sr->s->state == SESSION_RELAY &&
	    !sr->closing && session_rdma_resume_begin(sr, c->ended))
		return;
	if (to == NULL && sr->rc == NULL && session_rdma_reopen(sr, c->ended))
		return;
	if (to == NULL || sr->rc == NULL) {
		/* an open in flight may be lost with the link */
		session_rdma_fail(sr, SESSION_LINK_FAILED);
		return;
	}
	sr->failover_to = to;
	session_rdma_kick(sr);
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
			session_rdma_fail(sr, session_rdma_tcp_reset(sr));
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
	if (n > 0) {
		tx_produced(sr->rc, (size_t)n);
		session_rdma_account(sr, true, (size_t)n);
		err = tx_push(sr->rc);
		if (err && err != -ENOLINK && err != -EBUSY)
			log_debug("conn 0x%llx: push: %s", session_rdma_id(sr),
				  strerror(-err));
		return true;
	}
	if (n == 0) {
		sr->rd_eof = true;
		session_rdma_fin(sr, true);
		tx_close(sr->rc, TX_CLOSE_DONE_WRITING);
		return true;
	}
	if (errno == EAGAIN) {
		s->rd_ready[sr->t] = false;
		return false;
	}
	if (errno == EINTR)
		return true;
	tx_close(sr->rc, TX_CLOSE_ABORT);
	session_rdma_fail(sr, session_rdma_tcp_reset(sr));
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
	const struct dev_mr *mr = session_rdma_mr(sr->srw, sr->rc->sndbuf, to);
	uint32_t rkey;

	if (mr == NULL || session_rdma_peer_rkey(sr, to->id, &rkey)) {
		STATS_INC(worker_stats(sr->s->w), conn_failover_failed);
		log_warnx("conn 0x%llx: cannot move to lgr %u link %u: %s",
			  session_rdma_id(sr), to->lgr->id, to->id,
			  mr == NULL ? "buffers not registered on its device" :
				       "the peer's rkey for it is unknown");
		return -ENOKEY;
	}
	log_debug("conn 0x%llx: moves to lgr %u link %u", session_rdma_id(sr),
		  to->lgr->id, to->id);
	STATS_INC(worker_stats(sr->s->w), conn_failovers);
	return tx_failover(sr->rc, to->wr, mr->lkey, rkey);
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
		if (sr->rc->link != NULL && to->wr != sr->rc->link &&
		    session_rdma_failover(sr, to) != 0)
			session_rdma_fail(sr, SESSION_LINK_FAILED);
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
	if (sr->tcp_step == SESSION_RDMA_TCP_RELAY) {
		tcp_moved = session_rdma_tcp_out(sr);
		tcp_moved |= session_rdma_tcp_in(sr);
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

static void
session_rdma_kick(struct session_rdma *sr)
{
	if (sr->in_run) {
		sr->again = true;
		return;
	}
	session_rdma_run(sr);
}

/* Both sides: the peer has our RMB and we have its; relay from now. */
static void
session_rdma_relay_start(struct session_rdma *sr, struct lgr_link *link)
{
	struct session *s = sr->s;
	const struct conf_rdma *r = &s->conf->rdma;
	const struct dev_mr *mr = session_rdma_mr(sr->srw, sr->sndbuf, link);
	struct rconn_init in;

	memset(&in, 0, sizeof(in));
	in.id = s->id;
	in.link = link->wr;
	in.token = sr->lc.token;
	in.peer_token = sr->peer_token;
	in.sndbuf = sr->sndbuf;
	in.rmb = sr->rmb;
	in.peer_rmb = sr->peer_rmb;
	if (mr == NULL ||
	    session_rdma_peer_rkey(sr, link->id, &in.peer_rmb.rkey)) {
		log_warnx("conn 0x%llx: no keys for lgr %u link %u",
			  session_rdma_id(sr), link->lgr->id, link->id);
		session_close(s, SESSION_LINK_FAILED);
		return;
	}
	in.lkey = mr->lkey;
	in.params.autocork = r->autocork;
	in.params.autocork_size = (uint32_t)r->autocork_size;
	in.ops = &session_rdma_ops;
	in.arg = sr;
	sr->rc = tx_conn_new(&in);
	sr->lc.rc = sr->rc;
	if (sr->rc == NULL) {
		log_warn("conn 0x%llx: connection over RDMA",
			 session_rdma_id(sr));
		session_close(s, SESSION_RESOURCE);
		return;
	}
	sr->sndbuf = sr->rmb = NULL;
	if (session_relay_begin(s, sr->t, STAT_conns_rdma)) {
		session_close(s, SESSION_RESOURCE);
		return;
	}
	log_debug("conn 0x%llx: relaying over lgr %u link %u (%s)",
		  session_rdma_id(sr), link->lgr->id, link->id,
		  s->role == SESSION_ROLE_RULE ? s->rule->name :
						 s->export->name);
	session_rdma_kick(sr);
}

static struct session_rdma *
session_rdma_new(struct session *s, struct session_rdma_worker *srw)
{
	struct session_rdma *sr = calloc(1, sizeof(*sr));

	if (sr == NULL)
		return NULL;
	sr->s = s;
	sr->srw = srw;
	sr->lc.link_down = session_rdma_link_down;
	sr->lc.arg = sr;
	sr->t = s->role == SESSION_ROLE_RULE ? 0 : 1;
	return sr;
}

/*
 * Charge bytes of registered memory to peer on sr's worker: its share
 * (buffer_share percent of the worker's part of max_buffer_memory) is
 * what one peer's connections may hold, so that no peer starves the
 * others.  0 or -ENOBUFS (counted; the connection takes the fallback).
 */
static int
session_rdma_charge(struct session_rdma *sr, const struct conf_peer *peer,
		    size_t bytes)
{
	struct session_rdma_worker *srw = sr->srw;
	struct session_rdma_share *sh;
	size_t limit = session_rdma_pool_limit(srw->w) *
		       (size_t)peer->buffer_share / 100;

	LIST_FOREACH(sh, &srw->shares, entry)
		if (strcmp(sh->peer, peer->name) == 0)
			break;
	if (sh == NULL) {
		sh = calloc(1, sizeof(*sh));
		if (sh == NULL)
			return -ENOMEM;
		snprintf(sh->peer, sizeof(sh->peer), "%s", peer->name);
		LIST_INSERT_HEAD(&srw->shares, sh, entry);
	}
	if (sh->bytes + bytes > limit) {
		STATS_INC(worker_stats(srw->w), peer_buffer_full);
		STATS_INC(worker_stats(srw->w), conns_rdma_nobufs);
		log_debug("conn 0x%llx: peer %s holds %zu bytes of its %zu: "
			  "fallback",
			  session_rdma_id(sr), peer->name, sh->bytes, limit);
		return -ENOBUFS;
	}
	sh->bytes += bytes;
	sr->share = sh;
	sr->charge = bytes;
	return 0;
}

/*
 * Join lgr on link (NULL: its least used) and take a send ring and an
 * RMB element, registered in the group's protection domain on the link's
 * device.  0 or -errno (counted conns_rdma_nobufs when there are no
 * buffers or the registration fails).
 */
static int
session_rdma_join(struct session_rdma *sr, struct lgr *lgr,
		  struct lgr_link *link)
{
	const struct conf_rdma *r = &sr->s->conf->rdma;
	struct buf_pool *pool = sr->srw->pool;
	int i, rc;

	rc = lgr_conn_add_on(lgr, &sr->lc, link);
	if (rc)
		return rc;
	for (i = 0; i < LGR_LINK_SLOTS; i++)
		if (lgr->link[i].state == LGR_LINK_ACTIVE &&
		    (rc = session_rdma_devi(sr->srw, &lgr->link[i])) < 0)
			return rc;
	rc = session_rdma_charge(sr, lgr->peer,
				 (size_t)r->sndbuf + (size_t)r->rmb);
	if (rc)
		return rc;
	rc = buf_get(pool, BUF_SNDBUF, (size_t)r->sndbuf, &sr->sndbuf);
	if (rc == 0)
		rc = buf_get_for(pool, BUF_RMB, (size_t)r->rmb, lgr->peer->name,
				 &sr->rmb);
	/* the cap, or the device refused a registration in the group's PD
	 * (memlock limit: ib.c says) */
	if (rc == 0 &&
	    (session_rdma_mr(sr->srw, sr->sndbuf, sr->lc.link) == NULL ||
	     session_rdma_mr(sr->srw, sr->rmb, sr->lc.link) == NULL))
		rc = -EIO;
	if (rc) {
		STATS_INC(worker_stats(sr->s->w), conns_rdma_nobufs);
		return rc;
	}
	return 0;
}

static void
session_rdma_free(struct session_rdma *sr)
{
	if (sr->share != NULL)
		sr->share->bytes -= sr->charge;
	llc_pending_cancel(&sr->llc);
	lgr_conn_del(&sr->lc);
	buf_put(sr->sndbuf);
	buf_put(sr->rmb);
	free(sr);
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
 * No group to s's peer has room, but one is on its way (set up at start,
 * after a failure, or the next one begun at three quarters full): s waits
 * for it, SESSION_RDMA_WAIT_MS at most, instead of taking the fallback
 * for the rest of its life (kernel SMC-R's first contact waits for its
 * link the same way).  The client's bytes wait in its socket meanwhile.
 * false (take the fallback now) when none is on its way or too many wait.
 */
static bool
session_rdma_park(struct session_rdma_worker *srw, struct session *s)
{
	if (s->parked || s->woken || srw->parked.n >= SESSION_RDMA_PARKED_MAX ||
	    !lgr_on_its_way(srw->ctx, s->peer))
		return false;
	session_rdma_queue_add(&srw->parked, s);
	s->parked = true;
	s->mode = SESSION_MODE_RDMA; /* its timer comes to us */
	s->state = SESSION_RDMA_WAIT;
	session_timer_ms(s, SESSION_RDMA_WAIT_MS);
	STATS_INC(worker_stats(s->w), conns_lgr_waits);
	log_debug("conn 0x%llx: rule %s: peer %s: waiting for the link group "
		  "on its way",
		  (unsigned long long)s->id, s->rule->name, s->peer->name);
	return true;
}

/* s waits no more (parked, or woken and not yet gone on); else a no-op. */
static void
session_rdma_unpark(struct session_rdma_worker *srw, struct session *s)
{
	if (s->parked)
		session_rdma_queue_del(&srw->parked, s);
	else if (s->woken)
		session_rdma_queue_del(&srw->woken, s);
	else
		return;
	s->parked = s->woken = false;
	session_timer(s, 0);
	s->mode = SESSION_MODE_FALLBACK;
}

/*
 * A group to peer became active, or one failed: the connections waiting
 * for one go on, in the order they came (any that find no room wait for
 * the next group if one is on its way, else fall back).  Going on can
 * start a group whose setup fails at once, which wakes peer's waiters
 * again from inside this loop: so they are all moved to the woken queue
 * first, and each leaves it before it goes on, whoever takes it.  One
 * that parks again meanwhile waits for the next wake-up.
 */
static void
session_rdma_unpark_peer(struct session_rdma_worker *srw,
			 const struct conf_peer *peer)
{
	struct session *s, *next;

	TAILQ_FOREACH_SAFE(s, &srw->parked.q, park, next) {
		if (strcmp(s->peer->name, peer->name) != 0)
			continue;
		session_rdma_queue_del(&srw->parked, s);
		s->parked = false;
		session_rdma_queue_add(&srw->woken, s);
		s->woken = true;
	}
	while ((s = TAILQ_FIRST(&srw->woken.q)) != NULL) {
		session_rdma_unpark(srw, s);
		if (!session_rdma_connect(s))
			fallback_connect(s);
	}
}

/*
 * lgr.c: the setup of a client group to lgr's peer failed (the peer is
 * backed off now): the connections waiting for it take the fallback at
 * once rather than when their wait ends.
 */
static void
session_rdma_setup_failed(struct lgr *lgr, void *arg)
{
	struct session_rdma_worker *srw = arg;

	if (srw == NULL)
		return;
	if (srw->nresuming > 0)
		session_rdma_resume_peer(srw, lgr, true);
	session_rdma_unpark_peer(srw, lgr->peer);
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
	rc = session_rdma_join(sr, lgr, NULL);
	if (rc)
		goto fallback;
	memset(&m, 0, sizeof(m));
	m.type = LLC_CONN_OPEN;
	m.conn_open.token = sr->lc.token;
	m.conn_open.rmb_rkey = session_rdma_mr(srw, sr->rmb, sr->lc.link)->rkey;
	m.conn_open.rmb_vaddr = (uint64_t)(uintptr_t)sr->rmb->addr;
	m.conn_open.rmbe_size = session_rdma_rmbe_size(sr->rmb->size);
	snprintf(m.conn_open.export, sizeof(m.conn_open.export), "%s",
		 s->export_name);
	rc = session_rdma_llc_send(sr, sr->lc.link, &m, SESSION_RDMA_LLC_OPEN);
	if (rc < 0)
		goto fallback;
	s->rdma = sr;
	s->mode = SESSION_MODE_RDMA;
	s->state = SESSION_RDMA_OPEN;
	sr->opened = true;
	session_rdma_told_set(sr, sr->lc.link->id);
	session_rdma_rkeys_announce(sr);
	session_timer(s, SESSION_RDMA_OPEN_TIMEOUT);
	log_debug("conn 0x%llx: rule %s: CONN_OPEN %s on lgr %u link %u, "
		  "token %u",
		  session_rdma_id(sr), s->rule->name, s->export_name, lgr->id,
		  sr->lc.link->id, sr->lc.token);
	return true;
fallback:
	log_debug("conn 0x%llx: rule %s: lgr %u: %s: fallback",
		  (unsigned long long)s->id, s->rule->name, lgr->id,
		  strerror(-rc));
	session_rdma_free(sr);
	return false;
}

static void
session_rdma_accepted(struct lgr_link *link,
		      const struct llc_conn_accept_info *a)
{
	struct session_rdma *sr = session_rdma_find(link->lgr, a->opener_token);

	if (sr == NULL || sr->rc != NULL || sr->s->state != SESSION_RDMA_OPEN) {
		log_warnx("lgr %u: CONN_ACCEPT for token %u, not waiting: "
			  "ignored",
			  link->lgr->id, a->opener_token);
		return;
	}
	sr->peer_token = a->token;
	sr->peer_rmb.rkey = a->rmb_rkey;
	sr->peer_rmb.vaddr = a->rmb_vaddr;
	sr->peer_rmb.size = 1u << (a->rmbe_size + 14);
	session_rdma_peer_rkey_set(sr, link->id, a->rmb_rkey);
	if (link->lgr->features & CLC_FEAT_RESUME)
		memcpy(sr->resume_id, a->resume_id, sizeof(sr->resume_id));
	session_rdma_relay_start(sr, sr->lc.link);
}

static void
session_rdma_rejected(struct lgr_link *link,
		      const struct llc_conn_reject_info *rj)
{
	struct session_rdma *sr =
		session_rdma_find(link->lgr, rj->opener_token);
	enum session_reason r;

	if (sr != NULL && sr->resume_sent && sr->rc != NULL) {
		/* done both ways here and the FIN sent: the peer closed */
		if (sr->rd_eof && sr->wr_shut && tx_unsent(sr->rc) == 0) {
			session_rdma_resume_list_del(sr);
			session_rdma_fail(sr, sr->fin_reason);
			return;
		}
		session_rdma_resume_fail(sr, STAT_resume_failed_refused,
					 "the peer daemon does not have it");
		return;
	}
	if (sr == NULL || sr->rc != NULL || sr->s->state != SESSION_RDMA_OPEN) {
		log_warnx("lgr %u: CONN_REJECT for token %u, not waiting: "
			  "ignored",
			  link->lgr->id, rj->opener_token);
		return;
	}
	r = fallback_code_reason(rj->reason);
	log_warnx("conn 0x%llx: rule %s: peer %s: %s", session_rdma_id(sr),
		  sr->s->rule->name, sr->s->peer->name, session_reason_desc(r));
	STATS_INC(worker_stats(sr->s->w), clnt_hshake_err_cnt);
	session_close(sr->s, r);
}

/* ---- export side ---- */

/*
 * Refuse the opener's CONN_OPEN (opener_token) on link with reason r.  A
 * burst of refusals can fill llc.c's queue: then the message waits for a
 * TX slot on its own, since the session it belonged to is going (the
 * opener would otherwise wait out its open timeout).  The link going
 * down wakes and frees it.  0 or -errno.
 */
static int
session_rdma_reject_send(struct lgr_link *link, uint32_t opener_token,
			 enum session_reason r)
{
	struct llc_info m;

	if (link == NULL)
		return -ENOLINK;
	memset(&m, 0, sizeof(m));
	m.type = LLC_CONN_REJECT;
	m.flags = LLC_FLAG_RESP;
	m.conn_reject.opener_token = opener_token;
	m.conn_reject.reason = fallback_reason_code(r);
	return llc_send_detached(link, &m);
}

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
	(void)session_rdma_reject_send(link, opener_token, r);
}

static void
session_rdma_open(struct session_rdma_worker *srw, struct lgr_link *link,
		  const struct llc_conn_open_info *o)
{
	struct lgr *lgr = link->lgr;
	struct worker *w = srw->w;
	const struct conf *conf = worker_conf(w);
	enum session_reason r;
	struct session_rdma *sr;
	struct session *s;
	char who[32];
	int rc;

	STATS_INC(worker_stats(w), conns_from_peers);
	snprintf(who, sizeof(who), "lgr %u", lgr->id);
	if (export_find(w, conf, who, lgr->peer->name, o->export, &r) == NULL) {
		session_rdma_refuse_open(srw, link, o->token, r);
		return;
	}
	if (!worker_has_room(w) || worker_draining(w)) {
		session_rdma_refuse_open(srw, link, o->token,
					 worker_draining(w) ? SESSION_SHUTDOWN :
							      SESSION_RESOURCE);
		return;
	}
	s = session_new(w, -1, SESSION_ROLE_EXPORT);
	if (s == NULL) {
		session_rdma_refuse_open(srw, link, o->token, SESSION_RESOURCE);
		return;
	}
	s->export = conf_export_find(s->conf, o->export);
	s->peer = conf_peer_find(s->conf, lgr->peer->name);
	snprintf(s->export_name, sizeof(s->export_name), "%s", o->export);
	sr = session_rdma_new(s, srw);
	if (sr == NULL || s->export == NULL) {
		free(sr);
		session_rdma_refuse_open(srw, link, o->token, SESSION_RESOURCE);
		session_close(s, SESSION_RESOURCE);
		return;
	}
	s->rdma = sr;
	s->mode = SESSION_MODE_RDMA;
	s->state = SESSION_CONNECT_TARGET;
	sr->peer_token = o->token;
	sr->open_link = link;
	sr->peer_rmb.rkey = o->rmb_rkey;
	sr->peer_rmb.vaddr = o->rmb_vaddr;
	sr->peer_rmb.size = 1u << (o->rmbe_size + 14);
	session_rdma_peer_rkey_set(sr, link->id, o->rmb_rkey);
	/* on the link it came on: the rkey is for that link's device */
	rc = session_rdma_join(sr, lgr, link);
	if (rc) {
		log_warnx("conn 0x%llx: export %s over lgr %u: %s",
			  session_rdma_id(sr), s->export->name, lgr->id,
			  strerror(-rc));
		session_rdma_refuse(sr, SESSION_RESOURCE);
		return;
	}
	r = export_connect(s);
	if (r != SESSION_NREASONS) {
		session_rdma_refuse(sr, r);
		return;
	}
	log_debug("conn 0x%llx: peer %s: CONN_OPEN %s (token %u) on lgr %u",
		  session_rdma_id(sr), lgr->peer->name, o->export, o->token,
		  lgr->id);
}

/* Export side: the target connect finished; accept or refuse the open. */
static void
session_rdma_target_connected(struct session_rdma *sr)
{
	struct session *s = sr->s;
	enum session_reason r = export_connected(s);
	struct llc_info m;
	int rc;

	if (r != SESSION_NREASONS) {
		session_rdma_refuse(sr, r);
		return;
	}
	memset(&m, 0, sizeof(m));
	m.type = LLC_CONN_ACCEPT;
	m.flags = LLC_FLAG_RESP;
	m.conn_accept.opener_token = sr->peer_token;
	m.conn_accept.token = sr->lc.token;
	m.conn_accept.rmb_rkey =
		session_rdma_mr(sr->srw, sr->rmb, sr->lc.link)->rkey;
	m.conn_accept.rmb_vaddr = (uint64_t)(uintptr_t)sr->rmb->addr;
	m.conn_accept.rmbe_size = session_rdma_rmbe_size(sr->rmb->size);
	if (sr->lc.lgr != NULL && (sr->lc.lgr->features & CLC_FEAT_RESUME)) {
		unsigned char id[AUTH_NONCE_LEN];

		auth_nonce(id);
		memcpy(sr->resume_id, id, sizeof(sr->resume_id));
		memcpy(m.conn_accept.resume_id, id, sizeof(sr->resume_id));
	}
	sr->answered = true;
	rc = sr->lc.link != NULL ?
		     session_rdma_llc_send(sr, sr->lc.link, &m,
					   SESSION_RDMA_LLC_ACCEPT) :
		     -ENOLINK;
	if (rc < 0) {
		/* the link is gone: nobody to tell */
		session_close(s, SESSION_LINK_FAILED);
		return;
	}
	sr->opened = true;
	session_rdma_told_set(sr, sr->lc.link->id);
	if (rc == 0) {
		session_rdma_rkeys_announce(sr);
		session_rdma_relay_start(sr, sr->lc.link);
	} else {
		sr->rkeys_owed = true;
		session_timer(s, 0); /* the link's own bound covers the wait */
	}
}

/*
 * The data path's LLC messages on an active link of a group of ours
 * (lgr_ctx.llc_rx): CONN_OPEN, CONN_ACCEPT, CONN_REJECT, CONFIRM_RKEY.
 * Anything else is a protocol error.
 */
void
session_rdma_llc_rx(struct lgr_link *link, const struct llc_info *m, void *arg)
{
	struct session_rdma_worker *srw = arg;
	char why[64];

	if (srw == NULL)
		return;
	switch (m->type) {
	case LLC_CONN_OPEN:
		session_rdma_open(srw, link, &m->conn_open);
		return;
	case LLC_CONN_ACCEPT:
		session_rdma_accepted(link, &m->conn_accept);
		return;
	case LLC_CONN_REJECT:
		session_rdma_rejected(link, &m->conn_reject);
		return;
	case LLC_CONFIRM_RKEY:
		session_rdma_confirm_rkey(link, m);
		return;
	case LLC_CONN_RESUME:
		session_rdma_resume_rx(srw, link, m);
		return;
	}
	snprintf(why, sizeof(why), "unexpected LLC %s on link %u",
		 llc_type_name(m->type), link->id);
	lgr_protocol_error(link->lgr, why);
}

/* ---- resuming on a new link group (docs/protocol.md) ---- */

static void
session_rdma_resume_list_del(struct session_rdma *sr)
{
	struct session_rdma_worker *srw = sr->srw;

	if (!sr->resuming)
		return;
	TAILQ_REMOVE(&srw->resuming, sr, resume_entry);
	sr->resuming = false;
	srw->nresuming--;
	STATS_DEC(worker_stats(sr->s->w), conns_resuming);
}

static bool
session_rdma_resume_id_set(const struct session_rdma *sr)
{
	static const uint8_t zero[LLC_RESUME_ID_LEN];

	return memcmp(sr->resume_id, zero, sizeof(zero)) != 0;
}

static void
session_rdma_resume_soon(struct session_rdma_worker *srw, unsigned int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

	if (ms == 0 || !evtimer_pending(srw->resume_ev, NULL))
		evtimer_add(srw->resume_ev, &tv);
}

/*
 * The group under sr ended (ended: the group, or NULL when it was a new
 * one still waiting for its answer) and the peer daemon may still have
 * the connection: sr keeps its sockets, ring and RMB element and waits,
 * resume_timeout at most from the first time, for a new group to move
 * to.  The rule side sets one up (session_rdma_resume_tick); the export
 * side waits to be asked.  false when it cannot resume (then it is
 * reset as before).
 */
static bool
session_rdma_resume_begin(struct session_rdma *sr, const struct lgr *ended)
{
	struct session *s = sr->s;
	struct session_rdma_worker *srw = sr->srw;
	int timeout = s->conf->resume_timeout;
	uint64_t now = now_ms(), left;

	if (timeout <= 0 || !session_rdma_resume_id_set(sr) ||
	    worker_draining(s->w) || (ended != NULL && !ended->resumable))
		return false;
	if (ended != NULL) {
		memcpy(sr->peer_sysid, ended->peer_system_id,
		       sizeof(sr->peer_sysid));
		sr->peer_worker = ended->peer_worker;
	}
	tx_detach(sr->rc);
	lgr_conn_del(&sr->lc);
	sr->failover_to = NULL;
	sr->resume_sent = false;
	memset(sr->peer_rkeys, 0, sizeof(sr->peer_rkeys));
	memset(sr->told, 0, sizeof(sr->told));
	if (!sr->resuming) {
		if (s->state == SESSION_RELAY)
			sr->resume_since_ms = now;
		TAILQ_INSERT_HEAD(&srw->resuming, sr, resume_entry);
		sr->resuming = true;
		srw->nresuming++;
		STATS_INC(worker_stats(s->w), conns_resuming);
	}
	if (s->state == SESSION_RELAY)
		log_info("conn 0x%llx: %s %s: link group %u ended: resuming "
			 "(sent %llu, received %llu bytes)",
			 session_rdma_id(sr),
			 s->role == SESSION_ROLE_RULE ? "rule" : "export",
			 s->role == SESSION_ROLE_RULE ? s->rule->name :
							s->export->name,
			 ended != NULL ? ended->id : 0,
			 (unsigned long long)tx_fin_off(sr->rc),
			 (unsigned long long)sr->rc->rx_off);
	s->state = SESSION_RESUMING;
	left = (uint64_t)timeout * 1000;
	left = now - sr->resume_since_ms < left ?
		       left - (now - sr->resume_since_ms) :
		       1;
	session_timer_ms(s, (int)(left < INT32_MAX ? left : INT32_MAX));
	if (s->role == SESSION_ROLE_RULE)
		session_rdma_resume_soon(srw, 0);
	session_rdma_kick(sr);
	return true;
}

/* sr resumes no more: reset its connection, counted under stat. */
static void
session_rdma_resume_fail(struct session_rdma *sr, enum stats_id stat,
			 const char *why)
{
	stats_add(worker_stats(sr->s->w), stat, 1);
	log_warnx("conn 0x%llx: %s %s: not resumed after %llu ms: %s",
		  session_rdma_id(sr),
		  sr->s->role == SESSION_ROLE_RULE ? "rule" : "export",
		  sr->s->role == SESSION_ROLE_RULE ? sr->s->rule->name :
						     sr->s->export->name,
		  (unsigned long long)(now_ms() - sr->resume_since_ms), why);
	session_rdma_fail(sr, SESSION_RESUME_FAILED);
}

/* sr is on its new group and relays again. */
static void
session_rdma_resumed(struct session_rdma *sr, struct lgr_link *link)
{
	struct session *s = sr->s;

	session_rdma_resume_list_del(sr);
	sr->resume_sent = false;
	s->state = SESSION_RELAY;
	STATS_INC(worker_stats(s->w), conns_resumed_rdma);
	session_timer(s, 0);
	if (session_idle_timeout(s))
		session_timer(s, session_idle_timeout(s));
	log_info("conn 0x%llx: resumed on lgr %u link %u after %llu ms "
		 "(from byte %llu sent, %llu received)",
		 session_rdma_id(sr), link->lgr->id, link->id,
		 (unsigned long long)(now_ms() - sr->resume_since_ms),
		 (unsigned long long)tx_fin_off(sr->rc),
		 (unsigned long long)sr->rc->rx_off);
	session_rdma_told_set(sr, link->id);
	session_rdma_rkeys_announce(sr);
	session_rdma_kick(sr);
}

/*
 * Join lgr for a resume (on link, NULL: its least used): the ring and
 * the RMB element lose the keys of the old group and get the new
 * group's.  The RMB's MR on the joined link, or NULL (sr not joined).
 */
static const struct dev_mr *
session_rdma_resume_join(struct session_rdma *sr, struct lgr *lgr,
			 struct lgr_link *link)
{
	const struct dev_mr *mr;

	if (lgr_conn_add_on(lgr, &sr->lc, link))
		return NULL;
	buf_mr_drop(sr->rc->sndbuf);
	buf_mr_drop(sr->rc->rmb);
	mr = session_rdma_mr(sr->srw, sr->rc->rmb, sr->lc.link);
	if (mr == NULL ||
	    session_rdma_mr(sr->srw, sr->rc->sndbuf, sr->lc.link) == NULL) {
		lgr_conn_del(&sr->lc);
		return NULL;
	}
	return mr;
}

/* Opener: ask the peer to move sr onto lgr.  0 or -errno (try later). */
static int
session_rdma_resume_send(struct session_rdma *sr, struct lgr *lgr)
{
	const struct dev_mr *mr = session_rdma_resume_join(sr, lgr, NULL);
	struct llc_info m;
	int rc;

	if (mr == NULL)
		return -ENOBUFS;
	memset(&m, 0, sizeof(m));
	m.type = LLC_CONN_RESUME;
	memcpy(m.conn_resume.resume_id, sr->resume_id, sizeof(sr->resume_id));
	m.conn_resume.token = sr->lc.token;
	m.conn_resume.rmb_rkey = mr->rkey;
	m.conn_resume.rx_off = sr->rc->rx_off;
	m.conn_resume.tx_fin = tx_fin_off(sr->rc);
	rc = session_rdma_llc_send(sr, sr->lc.link, &m,
				   SESSION_RDMA_LLC_RESUME);
	if (rc < 0) {
		lgr_conn_del(&sr->lc);
		return rc;
	}
	sr->resume_sent = true;
	log_debug("conn 0x%llx: CONN_RESUME on lgr %u link %u (received "
		  "%llu, sent %llu)",
		  session_rdma_id(sr), lgr->id, sr->lc.link->id,
		  (unsigned long long)m.conn_resume.rx_off,
		  (unsigned long long)m.conn_resume.tx_fin);
	return 0;
}

/*
 * A client group to sr's peer, on the peer's worker that has sr's other
 * end (a group lands on any worker unless it asks, and the connection
 * can only move within one): an active one with room, or NULL with
 * *coming set if one is being set up.
 */
static struct lgr *
session_rdma_resume_lgr(struct session_rdma_worker *srw,
			const struct session_rdma *sr, bool *coming)
{
	struct lgr *lgr;

	*coming = false;
	TAILQ_FOREACH(lgr, &srw->ctx->lgrs, entry) {
		if (lgr->role != LGR_ROLE_CLIENT ||
		    strcmp(lgr->peer->name, sr->s->peer->name) != 0)
			continue;
		if (lgr->state == LGR_STATE_CLC ||
		    lgr->state == LGR_STATE_CONFIRMING) {
			*coming |= lgr->want_worker == sr->peer_worker;
			continue;
		}
		if (lgr->state == LGR_STATE_ACTIVE &&
		    lgr->peer_worker == sr->peer_worker &&
		    lgr->nconns < lgr->max_conns && lgr_links_active(lgr) > 0)
			return lgr;
	}
	return NULL;
}

/*
 * Rule side, soon after a group ended and then every
 * SESSION_RDMA_RESUME_MS while connections wait: each goes to an active
 * group to its peer if there is one (a peer daemon that restarted since
 * has lost it: reset), else a new group is set up, the fallback's
 * back-off notwithstanding.
 */
static void
session_rdma_resume_tick(evutil_socket_t fd, short what, void *arg)
{
	struct session_rdma_worker *srw = arg;
	struct session_rdma *sr, *next;
	struct lgr *lgr;
	bool again = false, coming;

	TAILQ_FOREACH_SAFE(sr, &srw->resuming, resume_entry, next) {
		if (sr->s->role != SESSION_ROLE_RULE || sr->resume_sent ||
		    sr->closing)
			continue;
		again = true;
		lgr = session_rdma_resume_lgr(srw, sr, &coming);
		if (lgr == NULL) {
			if (!coming &&
			    lgr_client_new_on(srw->ctx, sr->s->peer, -1,
					      sr->peer_worker, true) == NULL)
				/* no device of ours reaches it: over TCP */
				session_rdma_tcp_start(sr);
			continue;
		}
		if (memcmp(lgr->peer_system_id, sr->peer_sysid,
			   sizeof(sr->peer_sysid)) != 0) {
			session_rdma_resume_fail(sr,
						 STAT_resume_failed_peer_gone,
						 "the peer daemon restarted");
			continue;
		}
		if (session_rdma_resume_send(sr, lgr) != 0)
			log_debug("conn 0x%llx: CONN_RESUME on lgr %u: later",
				  session_rdma_id(sr), lgr->id);
	}
	if (again)
		session_rdma_resume_soon(srw, SESSION_RDMA_RESUME_MS);
}

/*
 * A group to peer became active (role as given) or a client group's
 * setup failed (refused: nobody listens on the peer port).  Connections
 * of a daemon instance that is gone are reset at once: a new group from
 * another instance (its system id) or a refused connect says so.
 */
static void
session_rdma_resume_peer(struct session_rdma_worker *srw, struct lgr *lgr,
			 bool failed)
{
	struct session_rdma *sr, *next;
	enum session_role role = lgr->role == LGR_ROLE_CLIENT ?
					 SESSION_ROLE_RULE :
					 SESSION_ROLE_EXPORT;

	TAILQ_FOREACH_SAFE(sr, &srw->resuming, resume_entry, next) {
		if (sr->s->role != role || sr->closing ||
		    strcmp(sr->s->peer->name, lgr->peer->name) != 0)
			continue;
		if (failed && lgr->refused)
			session_rdma_resume_fail(sr,
						 STAT_resume_failed_peer_gone,
						 "the peer daemon does not "
						 "listen on its peer port");
		else if (failed && lgr->tcp_connected && !sr->resume_sent)
			/* its daemon answers, RDMA does not: over TCP */
			session_rdma_tcp_start(sr);
		else if (!failed && memcmp(lgr->peer_system_id, sr->peer_sysid,
					   sizeof(sr->peer_sysid)) != 0)
			session_rdma_resume_fail(sr,
						 STAT_resume_failed_peer_gone,
						 "the peer daemon restarted");
	}
	if (!failed && role == SESSION_ROLE_RULE && srw->nresuming > 0)
		session_rdma_resume_soon(srw, 0);
}

/*
 * Find the export-side connection of ours that resume id names, from
 * peer (asking on lgr, or over TCP with NULL).
 */
static struct session_rdma *
session_rdma_resume_find(struct session_rdma_worker *srw, const char *peer,
			 const struct lgr *lgr, const uint8_t *id)
{
	struct session_rdma *sr;
	struct lgr *old;
	struct lgr_conn *c;

	TAILQ_FOREACH(sr, &srw->resuming, resume_entry)
		if (sr->s->role == SESSION_ROLE_EXPORT &&
		    memcmp(sr->resume_id, id, LLC_RESUME_ID_LEN) == 0 &&
		    strcmp(sr->s->peer->name, peer) == 0)
			return sr;
	/* its old group may not have noticed yet that it is gone */
	TAILQ_FOREACH(old, &srw->ctx->lgrs, entry) {
		if (old == lgr || old->role != LGR_ROLE_SERVER ||
		    old->state != LGR_STATE_ACTIVE ||
		    strcmp(old->peer->name, peer) != 0)
			continue;
		TAILQ_FOREACH(c, &old->conns, entry) {
			sr = c->arg;
			if (sr->rc != NULL && sr->s->state == SESSION_RELAY &&
			    memcmp(sr->resume_id, id, LLC_RESUME_ID_LEN) == 0)
				return sr;
		}
	}
	return NULL;
}

/* Acceptor: the answer went out; move the connection to its new link. */
static void
session_rdma_resume_apply(struct session_rdma *sr)
{
	struct lgr_link *link = sr->lc.link;
	const struct dev_mr *mr;
	const char *why;
	int rc;

	if (link == NULL || sr->closing)
		return;
	mr = session_rdma_mr(sr->srw, sr->rc->sndbuf, link);
	rc = mr != NULL ? tx_resume(sr->rc, link->wr, mr->lkey, sr->res_rkey,
				    sr->res_rx, sr->res_fin, &why) :
			  -ENOKEY;
	if (rc) {
		session_rdma_resume_fail(sr, STAT_resume_failed_protocol,
					 rc == -EPROTO ? why : strerror(-rc));
		return;
	}
	session_rdma_resumed(sr, link);
}

/* Acceptor: the opener asks to move a connection onto link's group. */
static void
session_rdma_resume_asked(struct session_rdma_worker *srw,
			  struct lgr_link *link,
			  const struct llc_conn_resume_info *r)
{
	struct lgr *lgr = link->lgr;
	struct session_rdma *sr = session_rdma_resume_find(srw, lgr->peer->name,
							   lgr, r->resume_id);
	const struct dev_mr *mr;
	struct llc_info m;
	uint64_t rx, fin;
	const char *why;
	int rc;

	if (sr == NULL) {
		log_info("lgr %u: peer %s: CONN_RESUME for a connection we do "
			 "not have (token %u): refused",
			 lgr->id, lgr->peer->name, r->token);
		(void)session_rdma_reject_send(link, r->token,
					       SESSION_RESUME_FAILED);
		return;
	}
	if (sr->s->state == SESSION_RELAY) {
		memcpy(sr->peer_sysid, sr->lc.lgr->peer_system_id,
		       sizeof(sr->peer_sysid));
		if (!session_rdma_resume_begin(sr, NULL)) {
			(void)session_rdma_reject_send(link, r->token,
						       SESSION_RESUME_FAILED);
			session_rdma_fail(sr, SESSION_LINK_FAILED);
			return;
		}
	}
	if (sr->lc.lgr != NULL || memcmp(lgr->peer_system_id, sr->peer_sysid,
					 sizeof(sr->peer_sysid)) != 0) {
		log_info("lgr %u: peer %s: CONN_RESUME for conn 0x%llx: "
			 "refused (%s)",
			 lgr->id, lgr->peer->name, session_rdma_id(sr),
			 sr->lc.lgr != NULL ? "it is moving already" :
					      "another daemon instance");
		(void)session_rdma_reject_send(link, r->token,
					       SESSION_RESUME_FAILED);
		return;
	}
	if (tx_resume_check(sr->rc, r->rx_off, r->tx_fin, &rx, &fin, &why)) {
		(void)session_rdma_reject_send(link, r->token,
					       SESSION_PROTOCOL_ERROR);
		session_rdma_resume_fail(sr, STAT_resume_failed_protocol, why);
		return;
	}
	mr = session_rdma_resume_join(sr, lgr, link);
	if (mr == NULL) {
		(void)session_rdma_reject_send(link, r->token,
					       SESSION_RESOURCE);
		session_rdma_resume_fail(sr, STAT_conns_rdma_nobufs,
					 "no buffers on the new group");
		return;
	}
	sr->peer_token = r->token;
	tx_peer_token_set(sr->rc, r->token);
	session_rdma_peer_rkey_set(sr, link->id, r->rmb_rkey);
	sr->res_rkey = r->rmb_rkey;
	sr->res_rx = r->rx_off;
	sr->res_fin = r->tx_fin;
	memset(&m, 0, sizeof(m));
	m.type = LLC_CONN_RESUME;
	m.flags = LLC_FLAG_RESP;
	memcpy(m.conn_resume.resume_id, sr->resume_id, sizeof(sr->resume_id));
	m.conn_resume.token = sr->lc.token;
	m.conn_resume.rmb_rkey = mr->rkey;
	m.conn_resume.rx_off = rx;
	m.conn_resume.tx_fin = fin;
	rc = session_rdma_llc_send(sr, link, &m, SESSION_RDMA_LLC_RESUMED);
	if (rc < 0) {
		lgr_conn_del(&sr->lc);
		log_debug("conn 0x%llx: resume answer: %s", session_rdma_id(sr),
			  strerror(-rc));
		return; /* the opener asks again on its next group */
	}
	if (rc == 0)
		session_rdma_resume_apply(sr);
}

/* Opener: the answer to our CONN_RESUME. */
static void
session_rdma_resume_answered(struct lgr_link *link,
			     const struct llc_conn_resume_info *r)
{
	struct lgr_conn *c;
	struct session_rdma *sr = NULL;
	const struct dev_mr *mr;
	const char *why;
	int rc;

	TAILQ_FOREACH(c, &link->lgr->conns, entry) {
		sr = c->arg;
		if (sr->resume_sent &&
		    memcmp(sr->resume_id, r->resume_id, LLC_RESUME_ID_LEN) == 0)
			break;
	}
	if (c == NULL) {
		log_warnx("lgr %u: CONN_RESUME answer for no connection "
			  "waiting: ignored",
			  link->lgr->id);
		return;
	}
	sr->peer_token = r->token;
	tx_peer_token_set(sr->rc, r->token);
	session_rdma_peer_rkey_set(sr, link->id, r->rmb_rkey);
	mr = session_rdma_mr(sr->srw, sr->rc->sndbuf, sr->lc.link);
	rc = mr != NULL ? tx_resume(sr->rc, sr->lc.link->wr, mr->lkey,
				    r->rmb_rkey, r->rx_off, r->tx_fin, &why) :
			  -ENOKEY;
	if (rc == -EPROTO) {
		session_rdma_resume_fail(sr, STAT_resume_failed_protocol, why);
		lgr_protocol_error(link->lgr, why);
		return;
	}
	if (rc) {
		/* the new link is down too: its group's end brings us back */
		log_debug("conn 0x%llx: resume: %s", session_rdma_id(sr),
			  strerror(-rc));
		return;
	}
	session_rdma_resumed(sr, sr->lc.link);
}

/* CONN_RESUME on link: a request (export side) or an answer. */
static void
session_rdma_resume_rx(struct session_rdma_worker *srw, struct lgr_link *link,
		       const struct llc_info *m)
{
	if (!(link->lgr->features & CLC_FEAT_RESUME)) {
		lgr_protocol_error(link->lgr, "CONN_RESUME not negotiated");
		return;
	}
	if (m->flags & LLC_FLAG_RESP) {
		if (link->lgr->role == LGR_ROLE_CLIENT)
			session_rdma_resume_answered(link, &m->conn_resume);
		else
			lgr_protocol_error(link->lgr,
					   "CONN_RESUME answer to a server");
		return;
	}
	if (link->lgr->role == LGR_ROLE_SERVER)
		session_rdma_resume_asked(srw, link, &m->conn_resume);
	else
		lgr_protocol_error(link->lgr, "CONN_RESUME asked of a client");
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

	if (tx_unsent(rc) == 0 || rc->peer_rmbe_space > 0 ||
	    rc->peer_cons_off != sr->stuck_cons || sr->stuck_since_ms == 0) {
		sr->stuck_cons = rc->peer_cons_off;
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
		log_warnx("conn 0x%llx: peer %s consumed nothing for %d s "
			  "(tcp_user_timeout) with %zu bytes waiting: reset",
			  session_rdma_id(sr), s->peer->name,
			  conf->tcp_user_timeout, tx_unsent(sr->rc));
		STATS_INC(worker_stats(srw->w), conns_window_timeout);
		tx_close(sr->rc, TX_CLOSE_ABORT);
		session_rdma_fail(sr, SESSION_PEER_TIMEOUT);
	}
}

/* ---- resuming over TCP (docs/protocol.md) ---- */

/* The index in fd[] of the TCP connection sr resumes over. */
static int
session_rdma_u(const struct session_rdma *sr)
{
	return 1 - sr->t;
}

/* A TCP resume that did not get through: the next try may do better. */
static void
session_rdma_tcp_abandon(struct session_rdma *sr, const char *why)
{
	struct session *s = sr->s;
	int u = session_rdma_u(sr);

	log_info("conn 0x%llx: resume over TCP: %s", session_rdma_id(sr), why);
	if (s->rev[u] != NULL)
		event_free(s->rev[u]);
	if (s->wev[u] != NULL)
		event_free(s->wev[u]);
	s->rev[u] = s->wev[u] = NULL;
	if (s->fd[u] >= 0)
		close(s->fd[u]);
	s->fd[u] = -1;
	sr->tcp_step = SESSION_RDMA_TCP_NONE;
	sr->tcp_in_len = 0;
	sr->resume_sent = false;
}

/*
 * Rule side: RDMA to the peer cannot be had again (it declined, or we
 * have no device for it) though its daemon answers: resume sr over a
 * TCP connection to its peer port, for the rest of its life.  The
 * handshake is the fallback's, with a HELLO that names the connection.
 */
static void
session_rdma_tcp_start(struct session_rdma *sr)
{
	struct session *s = sr->s;
	const struct addr *to = &s->peer->addr;
	int u = session_rdma_u(sr), fd, one = 1;

	if (sr->tcp_step != SESSION_RDMA_TCP_NONE || sr->resume_sent ||
	    s->fd[u] >= 0)
		return;
	fd = socket(to->ss.ss_family,
		    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	session_tcp_liveness(fd, s->conf);
	if ((connect(fd, (const struct sockaddr *)&to->ss, to->len) == -1 &&
	     errno != EINPROGRESS) ||
	    session_attach(s, u, fd)) {
		if (s->fd[u] != fd)
			close(fd);
		session_rdma_tcp_abandon(sr, "cannot connect");
		return;
	}
	sr->tcp_step = SESSION_RDMA_TCP_CONNECTING;
	sr->resume_sent = true;
	session_want(s, u, EV_WRITE, true);
	log_info("conn 0x%llx: RDMA to %s cannot be had: resuming over TCP",
		 session_rdma_id(sr), s->peer->name);
}

/* Both sides: the handshake is through; relay over the TCP connection. */
static void
session_rdma_tcp_relay(struct session_rdma *sr)
{
	struct session *s = sr->s;

	sr->tcp_step = SESSION_RDMA_TCP_RELAY;
	session_rdma_resume_list_del(sr);
	sr->resume_sent = false;
	sr->rd_blocked = false;
	if (session_relay_begin(s, session_rdma_u(sr),
				STAT_conns_resumed_tcp)) {
		session_rdma_fail(sr, SESSION_RESOURCE);
		return;
	}
	log_info("conn 0x%llx: resumed over TCP after %llu ms (from byte %llu "
		 "sent, %llu received)",
		 session_rdma_id(sr),
		 (unsigned long long)(now_ms() - sr->resume_since_ms),
		 (unsigned long long)tx_fin_off(sr->rc),
		 (unsigned long long)sr->rc->rx_off);
	session_rdma_kick(sr);
}

/* Rule side: the TCP connection is up; send the HELLO naming sr. */
static void
session_rdma_tcp_hello(struct session_rdma *sr)
{
	struct session *s = sr->s;
	struct fb_hello_info ri;
	struct fallback_hs *hs;
	int u = session_rdma_u(sr), err;

	session_want(s, u, EV_WRITE, false);
	err = session_connect_error(s);
	if (err) {
		session_rdma_tcp_abandon(sr, strerror(err));
		return;
	}
	hs = fallback_hs_get(s);
	if (hs == NULL) {
		session_rdma_tcp_abandon(sr, "out of memory");
		return;
	}
	memset(&ri, 0, sizeof(ri));
	memcpy(ri.resume_id, sr->resume_id, sizeof(ri.resume_id));
	ri.rx_off = sr->rc->rx_off;
	ri.tx_fin = tx_fin_off(sr->rc);
	ri.worker = sr->peer_worker;
	auth_nonce(hs->nonce);
	hs->hello_len = fb_hello_resume_encode(
		hs->hello, hs->nonce, s->peer->key_len ? FB_FLAG_AUTH : 0,
		s->conf->name, s->export_name, &ri);
	hs->challenge_len = 0;
	/* a fresh socket takes a message this small whole */
	if (send(s->fd[u], hs->hello, hs->hello_len, MSG_NOSIGNAL) !=
	    (ssize_t)hs->hello_len) {
		session_rdma_tcp_abandon(sr, "cannot send the hello");
		return;
	}
	sr->tcp_step = SESSION_RDMA_TCP_HANDSHAKE;
	session_want(s, u, EV_READ, true);
}

/*
 * Read one whole handshake message into sr->tcp_in, never a byte more
 * (the stream follows).  1 when whole, 0 for more later, -1 when the
 * connection broke or the bytes are no message.
 */
static int
session_rdma_tcp_read(struct session_rdma *sr)
{
	int rc = fallback_msg_read(sr->s->fd[session_rdma_u(sr)], sr->tcp_in,
				   &sr->tcp_in_len);

	return rc < 0 ? -1 : rc;
}

/* Rule side: the export side's CHALLENGE, RESULT and RESUMED. */
static void
session_rdma_tcp_answer(struct session_rdma *sr)
{
	struct session *s = sr->s;
	struct fallback_hs *hs = s->hs;
	int u = session_rdma_u(sr), rc;
	struct fb_proof proof;
	uint64_t rx, fin;
	const char *why;
	uint32_t code;

	while ((rc = session_rdma_tcp_read(sr)) == 1) {
		switch (sr->tcp_in[5]) {
		case FB_CHALLENGE:
			if (hs->challenge_len != 0 ||
			    fallback_answer(s->peer, hs->hello, hs->hello_len,
					    sr->tcp_in, sr->tcp_in_len, &proof,
					    &why) != SESSION_NREASONS) {
				session_rdma_resume_fail(
					sr, STAT_resume_failed_protocol,
					hs->challenge_len ?
						"a second challenge" :
						why);
				return;
			}
			hs->challenge_len = sr->tcp_in_len;
			if (send(s->fd[u], &proof, sizeof(proof),
				 MSG_NOSIGNAL) != (ssize_t)sizeof(proof)) {
				session_rdma_tcp_abandon(sr, "proof not sent");
				return;
			}
			break;
		case FB_RESULT:
			if (fb_result_decode(sr->tcp_in, sr->tcp_in_len,
					     &code) ||
			    (code == 0 && s->peer->key_len &&
			     hs->challenge_len == 0)) {
				session_rdma_resume_fail(
					sr, STAT_resume_failed_protocol,
					"bad result to the resume hello");
				return;
			}
			if (code != 0) {
				session_rdma_resume_fail(
					sr, STAT_resume_failed_refused,
					session_reason_desc(
						fallback_code_reason(code)));
				return;
			}
			break;
		case FB_RESUMED:
			if (fb_resumed_decode(sr->tcp_in, sr->tcp_in_len, &rx,
					      &fin) ||
			    tx_resume_tcp(sr->rc, rx, fin, &why)) {
				session_rdma_resume_fail(
					sr, STAT_resume_failed_protocol,
					"bad offsets in RESUMED");
				return;
			}
			session_rdma_tcp_relay(sr);
			return;
		default:
			session_rdma_resume_fail(sr,
						 STAT_resume_failed_protocol,
						 "unexpected message");
			return;
		}
		sr->tcp_in_len = 0;
	}
	if (rc < 0)
		session_rdma_tcp_abandon(sr, "the peer closed the connection");
}

/* An event of the TCP connection while its resume handshake runs. */
static void
session_rdma_tcp_io(struct session_rdma *sr, short what)
{
	if (sr->tcp_step == SESSION_RDMA_TCP_CONNECTING) {
		if (what & EV_WRITE)
			session_rdma_tcp_hello(sr);
		return;
	}
	if (what & EV_READ)
		session_rdma_tcp_answer(sr);
}

/* Ring -> TCP connection.  true if anything moved. */
static bool
session_rdma_tcp_out(struct session_rdma *sr)
{
	struct session *s = sr->s;
	int u = session_rdma_u(sr), cnt;
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
			session_rdma_fail(sr, SESSION_PEER_RST);
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
session_rdma_tcp_in(struct session_rdma *sr)
{
	struct session *s = sr->s;
	int u = session_rdma_u(sr), cnt;
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
			session_rdma_fail(sr, SESSION_PEER_RST);
		}
	}
	return moved;
}

/* A resume over TCP on its way to the worker it names (hop). */
struct session_rdma_tcp_hop {
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
session_rdma_tcp_adopt(struct session_rdma *sr, int fd,
		       const struct fb_hello_info *hi)
{
	struct session *s = sr->s;
	uint8_t msg[sizeof(struct fb_result) + sizeof(struct fb_resumed)];
	int u = session_rdma_u(sr);
	uint64_t rx, fin;
	const char *why;
	size_t len;

	if (tx_resume_check(sr->rc, hi->rx_off, hi->tx_fin, &rx, &fin, &why)) {
		len = fb_result_encode(
			msg, fallback_reason_code(SESSION_PROTOCOL_ERROR));
		(void)send(fd, msg, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		close(fd);
		session_rdma_resume_fail(sr, STAT_resume_failed_protocol, why);
		return;
	}
	len = fb_result_encode(msg, 0);
	len += fb_resumed_encode(msg + len, rx, fin);
	if (send(fd, msg, len, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)len ||
	    tx_resume_tcp(sr->rc, hi->rx_off, hi->tx_fin, &why)) {
		close(fd);
		return; /* the opener tries again */
	}
	s->fd[u] = fd;
	session_rdma_tcp_relay(sr);
}

/* The export-side connection hi names among srw's, from peer; or NULL. */
static struct session_rdma *
session_rdma_tcp_find(struct session_rdma_worker *srw, const char *peer,
		      const struct fb_hello_info *hi)
{
	struct session_rdma *sr =
		session_rdma_resume_find(srw, peer, NULL, hi->resume_id);

	if (sr == NULL || sr->tcp_step != SESSION_RDMA_TCP_NONE)
		return NULL;
	if (sr->s->state == SESSION_RELAY) {
		memcpy(sr->peer_sysid, sr->lc.lgr->peer_system_id,
		       sizeof(sr->peer_sysid));
		if (!session_rdma_resume_begin(sr, NULL))
			return NULL;
	}
	return sr->lc.lgr == NULL ? sr : NULL;
}

static void
session_rdma_tcp_arrive(struct worker *w, void *arg)
{
	struct session_rdma_tcp_hop *h = arg;
	struct session_rdma_worker *srw = worker_rdma(w);
	struct session_rdma *sr =
		srw != NULL ? session_rdma_tcp_find(srw, h->peer, &h->hi) :
			      NULL;
	uint8_t msg[sizeof(struct fb_result)];

	if (sr != NULL) {
		session_rdma_tcp_adopt(sr, h->fd, &h->hi);
	} else {
		(void)send(h->fd, msg,
			   fb_result_encode(
				   msg,
				   fallback_reason_code(SESSION_RESUME_FAILED)),
			   MSG_NOSIGNAL | MSG_DONTWAIT);
		close(h->fd);
	}
	free(h);
}

/*
 * Export side (fallback.c): fs, an authenticated connection on our peer
 * port, asks with HELLO hi to resume a connection of ours over it.  The
 * connection takes fs's socket (fs goes), here or on the worker hi names.
 * SESSION_NREASONS when taken, else why fs is to be refused.
 */
enum session_reason
session_rdma_resume_tcp(struct session *fs, const struct fb_hello_info *hi)
{
	struct session_rdma_worker *srw = worker_rdma(fs->w);
	struct session_rdma_tcp_hop *h;
	struct session_rdma *sr;
	struct worker *w;
	int want = hi->worker - 1;

	if (srw == NULL || fs->peer == NULL)
		return SESSION_RESUME_FAILED;
	sr = session_rdma_tcp_find(srw, fs->peer->name, hi);
	if (sr != NULL) {
		session_rdma_tcp_adopt(sr, session_detach(fs), hi);
		return SESSION_NREASONS;
	}
	if (hi->worker == 0 || want == worker_id(fs->w) ||
	    want >= worker_count()) {
		log_info("conn 0x%llx: peer %s asks to resume a connection we "
			 "do not have: refused",
			 (unsigned long long)fs->id, fs->peer->name);
		return SESSION_RESUME_FAILED;
	}
	h = calloc(1, sizeof(*h));
	if (h == NULL)
		return SESSION_RESOURCE;
	snprintf(h->peer, sizeof(h->peer), "%s", fs->peer->name);
	h->hi = *hi;
	w = fs->w;
	h->fd = session_detach(fs);
	if (worker_pass(w, worker_get(want), session_rdma_tcp_arrive, h)) {
		session_reset_fd(h->fd); /* that worker is flooded */
		free(h);
	}
	return SESSION_NREASONS;
}

/* ---- session.c's hooks ---- */

/* A socket event of s in RDMA mode (session.c hands them over). */
void
session_rdma_io(struct session *s, int i, short what)
{
	struct session_rdma *sr = s->rdma;

	if (s->state == SESSION_CONNECT_TARGET) {
		if (i == 1 && (what & EV_WRITE))
			session_rdma_target_connected(sr);
		return;
	}
	if (sr->tcp_step != SESSION_RDMA_TCP_NONE && i == 1 - sr->t &&
	    sr->tcp_step != SESSION_RDMA_TCP_RELAY) {
		session_rdma_tcp_io(sr, what);
		return;
	}
	if ((s->state != SESSION_RELAY && s->state != SESSION_RESUMING) ||
	    (i != sr->t && sr->tcp_step != SESSION_RDMA_TCP_RELAY))
		return;
	session_rdma_kick(sr);
}

/* The open timer of s fired (CONN_OPEN unanswered, target connect). */
void
session_rdma_timeout(struct session *s)
{
	struct session_rdma *sr = s->rdma;

	if (s->state == SESSION_RDMA_WAIT && !s->parked && !s->woken) {
		/* session_rdma_reopen */
		s->mode = SESSION_MODE_FALLBACK;
		if (!session_rdma_connect(s))
			fallback_connect(s);
		return;
	}
	if (s->state == SESSION_RDMA_WAIT) {
		log_debug("conn 0x%llx: rule %s: peer %s: no link group in "
			  "%d ms: fallback",
			  (unsigned long long)s->id, s->rule->name,
			  s->peer->name, SESSION_RDMA_WAIT_MS);
		session_rdma_unpark(worker_rdma(s->w), s);
		fallback_connect(s);
		return;
	}
	if (s->state == SESSION_RESUMING) {
		session_rdma_resume_fail(sr, STAT_resume_failed_timeout,
					 "resume_timeout passed");
		return;
	}
	if (s->state == SESSION_RDMA_OPEN) {
		log_warnx("conn 0x%llx: rule %s: peer %s: no answer to "
			  "CONN_OPEN in %d s",
			  session_rdma_id(sr), s->rule->name, s->peer->name,
			  SESSION_RDMA_OPEN_TIMEOUT);
		STATS_INC(worker_stats(s->w), clnt_hshake_err_cnt);
		session_close(s, SESSION_PEER_TIMEOUT);
		return;
	}
	session_rdma_refuse(sr, export_timed_out(s));
}

/*
 * s closes with reason: its connection leaves the group; unless it ended
 * normally the peer is told to reset (an abort).  The rconn goes when
 * its last CDC completed.
 */
void
session_rdma_close(struct session *s, enum session_reason reason)
{
	struct session_rdma *sr = s->rdma;

	session_rdma_unpark(worker_rdma(s->w), s);
	if (sr == NULL)
		return;
	session_rdma_resume_list_del(sr);
	s->rdma = NULL;
	if (s->role == SESSION_ROLE_EXPORT && !sr->answered)
		(void)session_rdma_reject_send(
			sr->lc.link != NULL ? sr->lc.link : sr->open_link,
			sr->peer_token, reason);
	if (sr->rc != NULL) {
		if (reason != SESSION_CLIENT_FIN &&
		    reason != SESSION_TARGET_FIN && reason != SESSION_PEER_RST)
			tx_close(sr->rc, TX_CLOSE_ABORT);
		sr->lc.rc = NULL;
		tx_conn_free(sr->rc);
	}
	session_rdma_free(sr);
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
			      sr->lc.lgr != NULL ? sr->lc.lgr->id : 0);
	session_rdma_json_int(o, "link",
			      sr->lc.link != NULL ? sr->lc.link->id : 0);
	json_object_set_new(o, "resumable",
			    json_boolean(session_rdma_resume_id_set(sr)));
	if (sr->resuming)
		json_object_set_new(
			o, "resuming_s",
			json_real((double)(now_ms() - sr->resume_since_ms) /
				  1000.0));
	if (sr->rc != NULL) {
		tx_json(sr->rc, o);
		rx_json(sr->rc, o);
	}
	json_object_set_new(json_obj, "rdma", o);
}
