// SPDX-License-Identifier: BSD-2-Clause
/*
 * The SMC-R dialect's connections (DESIGN §10) over their link group:
 * what smcr.c, which runs a kernel peer's CLC in both roles, asks of
 * the data path.  A connection opens with the CLC (session_rdma_smcr_open:
 * the one join and, for a group on its way, the one wait of
 * session_rdma.c), learns the peer's end from its CONFIRM or ACCEPT
 * (session_rdma_smcr_confirm), and relays in session_rdma.c once its link
 * is up (session_rdma_smcr_start).  Above session_rdma.c, which never
 * calls here: the connection that sets a group up is woken by it through
 * the continuation it parked with.
 */
#include <stdlib.h>
#include <string.h>

#include "session_rdma.h"
#include "clc_wire.h"

/* Our role in s's standard group: a rule's is the client's. */
static enum lgr_role
session_rdma_smcr_role(const struct session *s)
{
	return s->role == SESSION_ROLE_RULE ? LGR_ROLE_CLIENT : LGR_ROLE_SERVER;
}

/*
 * A join that names a group we have with another host (its system id,
 * GID and QP, the only identity the CLC has): refused by lgr_smcr_find,
 * counted and said here.  A server does it to have us write to another
 * server's memory, a client to read what we send another client.
 */
static void
session_rdma_smcr_foreign(struct session *s,
			  const struct session_rdma_smcr_want *want)
{
	struct session_rdma_worker *srw = worker_rdma(s->w);
	enum lgr_role role = session_rdma_smcr_role(s);
	char host[ADDR_STRLEN] = "?";
	struct lgr *lgr;

	lgr = lgr_smcr_find(srw->ctx, role, want->sysid, want->gid, want->qpn,
			    NULL, NULL);
	if (lgr == NULL)
		return;
	STATS_INC(worker_stats(s->w), smc_join_foreign);
	addr_host(&want->host, host, sizeof(host));
	log_warnx_rl("kernel SMC-R foreign join", host,
		     "conn 0x%llx: %s %s: kernel SMC-R %s %s named lgr %u, "
		     "which is another host's: refused",
		     (unsigned long long)s->id,
		     s->role == SESSION_ROLE_RULE ? "rule" : "export",
		     s->role == SESSION_ROLE_RULE ? s->rule->name :
						    s->export->name,
		     s->role == SESSION_ROLE_RULE ? "server" : "client", host,
		     lgr_id(lgr));
}

static void session_rdma_smcr_woken(struct session *s);

/*
 * s, with a kernel peer, waits for the group with it that is on its way
 * on this worker when none of its groups takes s now and one is being
 * set up (lgr_smcr_pending): parked on it, and wake(s) once it is up or
 * failed its setup (session_rdma_wait).  false when there is nothing to
 * wait for, or too many wait: open now.
 */
bool
session_rdma_smcr_wait(struct session *s,
		       const struct session_rdma_smcr_want *want,
		       void (*wake)(struct session *s))
{
	struct session_rdma_worker *srw = worker_rdma(s->w);
	enum lgr_role role = session_rdma_smcr_role(s);
	struct lgr *on;

	if (srw == NULL || srw->parked.n >= SESSION_RDMA_PARKED_MAX ||
	    lgr_smcr_find(srw->ctx, role, want->sysid, want->gid, want->qpn,
			  &want->host, NULL) != NULL)
		return false;
	on = lgr_smcr_pending(srw->ctx, role, want->sysid, want->gid,
			      &want->host);
	if (on == NULL)
		return false;
	session_rdma_wait(srw, s, NULL, on, wake);
	return true;
}

/*
 * s, a connection with a kernel SMC-R peer of system id sysid (export
 * side: a client whose PROPOSAL passed, its target connected; rule side:
 * a server whose ACCEPT said first contact), gets a link group of its own
 * on the device for local (its end of the TCP connection) and its place
 * there: a send ring and an RMB element registered in the group's
 * protection domain.  *out: what our ACCEPT or CONFIRM says.  0, or the
 * CLC_DECL_* code to decline with (nothing is held then).
 */
uint32_t
session_rdma_smcr_open(struct session *s, const struct addr *local,
		       const struct session_rdma_smcr_want *want,
		       struct session_rdma_smcr *out)
{
	struct session_rdma_worker *srw = worker_rdma(s->w);
	enum lgr_role role = session_rdma_smcr_role(s);
	struct session_rdma *sr;
	const struct dev_mr *mr;
	struct lgr *lgr = NULL;
	struct lgr_link *on = NULL;
	uint32_t code = CLC_DECL_NOSMCRDEV;
	bool joined;
	int rc;

	if (srw == NULL)
		return want->create ? CLC_DECL_NOSMCRDEV : CLC_DECL_SYNCERR;
	if (want->join)
		lgr = lgr_smcr_find(srw->ctx, role, want->sysid, want->gid,
				    want->qpn, &want->host, &on);
	joined = lgr != NULL;
	if (lgr == NULL && want->join)
		session_rdma_smcr_foreign(s, want);
	if (lgr == NULL && !want->create)
		return CLC_DECL_SYNCERR;
	if (lgr_smcr_budget(srw->ctx, &want->host, lgr == NULL) != 0)
		return CLC_DECL_MEM;
	if (lgr == NULL)
		lgr = lgr_smcr_new(srw->ctx, role, want->sysid, want->gid,
				   want->max_conns, want->max_links,
				   want->release, local, &want->host, want->eid,
				   &code);
	if (lgr == NULL)
		return code;
	sr = session_rdma_new(s, srw);
	if (sr == NULL) {
		if (!joined)
			lgr_terminate(lgr, LLC_DEL_PROG_INIT_TERM, true, false);
		return CLC_DECL_MEM;
	}
	sr->smcr = true;
	sr->answered = true; /* the CLC is the open: no CONN_REJECT */
	/* a client joins on the link the server's ACCEPT named; a server
	 * puts the connection on its least used link and names that one */
	rc = session_rdma_join(sr, lgr,
			       !joined ? SESSION_RDMA_JOIN_FIRST :
			       role == LGR_ROLE_CLIENT ?
					 SESSION_RDMA_JOIN_ON :
					 SESSION_RDMA_JOIN_LEAST,
			       on);
	if (rc) {
		lgr_conn_del(&sr->lc);
		if (!joined)
			lgr_terminate(lgr, LLC_DEL_PROG_INIT_TERM, true, false);
		session_rdma_free(sr);
		return CLC_DECL_MEM;
	}
	mr = session_rdma_conn_mr(srw, sr->rmb, sr->lc.link);
	s->rdma = sr;
	/* the connection that sets a group up is its first waiter: it
	 * relays once the first link is up (session_rdma_smcr_woken) */
	if (!joined)
		session_rdma_wait(srw, s, NULL, lgr, session_rdma_smcr_woken);
	memset(out, 0, sizeof(*out));
	out->first_contact = !joined;
	lgr_smcr_local(sr->lc.link, &out->qp, out->system_id);
	out->token = sr->lc.token;
	out->rmb_rkey = mr->rkey;
	sr->rmb_told = true;
	out->rmb_vaddr = sr->rmb->iova;
	out->rmbe_size = session_rdma_rmbe_size(sr->rmb->size);
	out->max_conns = (uint8_t)lgr_max_conns(lgr);
	out->max_links = lgr_max_links(lgr);
	if (joined)
		STATS_INC(worker_stats(s->w), smc_lgr_joins);
	log_debug("conn 0x%llx: %s %s: kernel SMC-R %s: %s lgr %u, token %u",
		  session_rdma_conn_id(sr),
		  s->role == SESSION_ROLE_RULE ? "rule" : "export",
		  s->role == SESSION_ROLE_RULE ? s->rule->name :
						 s->export->name,
		  s->role == SESSION_ROLE_RULE ? "server" : "client",
		  joined ? "joins" : "new", lgr_id(lgr), sr->lc.token);
	return 0;
}

/*
 * The kernel peer's CONFIRM (export side) or ACCEPT (rule side): its QP,
 * token and RMB element.  Our QP connects to its; CONFIRM_LINK goes out
 * or is awaited; the relay starts once the link is up
 * (session_rdma_smcr_start).  0, or the CLC_DECL_* code the group failed
 * with.  The peer's token is kept only from a message taken: a
 * connection that ends before its relay aborts the peer's end by it
 * (session_rdma_close), and one that named another link's QP may name
 * another connection's token too.
 */
uint32_t
session_rdma_smcr_confirm(struct session *s,
			  const struct session_rdma_smcr *peer)
{
	struct session_rdma *sr = s->rdma;
	uint32_t code = 0;

	if (sr == NULL || !sr->smcr || sr->lc.lgr == NULL)
		return CLC_DECL_INTERR;
	sr->peer_token = peer->token;
	sr->peer_rmb.rkey = peer->rmb_rkey;
	sr->peer_rmb.vaddr = peer->rmb_vaddr;
	sr->peer_rmb.size = clc_rmbe_bytes(peer->rmbe_size);
	if (lgr_is_active(sr->lc.lgr)) {
		/* joined: session_rdma_smcr_start now, on the link whose peer
		 * QP that is (a client joins on the link our ACCEPT named) */
		if (!lgr_link_peer_is(sr->lc.link, peer->qp.gid, peer->qp.qpn))
			code = CLC_DECL_SYNCERR;
	} else {
		code = lgr_smcr_peer(sr->lc.lgr, &peer->qp);
	}
	if (code != 0)
		sr->peer_token = 0;
	return code;
}

/* Our system id towards kernel peers (the worker's; random without). */
void
session_rdma_smcr_system_id(struct session *s, uint8_t out[8])
{
	struct session_rdma_worker *srw = worker_rdma(s->w);
	unsigned char rnd[AUTH_NONCE_LEN];

	if (srw != NULL) {
		lgr_smcr_system_id(srw->ctx, out);
		return;
	}
	auth_nonce(rnd);
	memcpy(out, rnd, 8);
}

/*
 * The peer declined our ACCEPT, or we decline its ACCEPT after all (it
 * goes on as TCP): let go of the group and the buffers.
 */
void
session_rdma_smcr_drop(struct session *s)
{
	struct session_rdma *sr = s->rdma;

	if (sr == NULL)
		return;
	session_rdma_unpark(sr->srw, s);
	s->rdma = NULL;
	session_rdma_free(sr); /* with a group set up for it */
}

/*
 * The connection that set its group up, woken by the group: it relays
 * once the first link is up.  A failed setup closes it (on its timer:
 * session_rdma_link_down), not here, deep in the failure.
 */
static void
session_rdma_smcr_woken(struct session *s)
{
	if (s->rdma != NULL && !s->rdma->closing)
		session_rdma_smcr_start(s);
}

/*
 * A kernel peer's connection relays from here, in RDMA mode, on link:
 * the link came up (the connection set its group up) or the CLC that
 * joined an active group is through.  s may be gone on return.
 */
void
session_rdma_smcr_start(struct session *s)
{
	struct session_rdma *sr = s->rdma;
	struct lgr_link *link = sr != NULL ? sr->lc.link : NULL;

	if (sr == NULL || sr->closing || sr->rc != NULL || link == NULL) {
		session_close(s, SESSION_LINK_FAILED);
		return;
	}
	(void)lgr_conn_peer_rmb(&sr->lc, link, sr->peer_rmb.rkey,
				sr->peer_rmb.vaddr);
	session_rdma_conn_told_set(sr, lgr_link_id(link));
	/* on a group of two links, our RMB element's rkey on the other
	 * (Linux's smcr_lgr_reg_rmbs: CONFIRM_RKEY) */
	sr->opened = true;
	session_rdma_conn_rkeys_announce(sr);
	/* smcr.c's CLC is over */
	session_ops_set(s, &session_rdma_session_ops);
	s->mode = SESSION_MODE_RDMA;
	if (s->role == SESSION_ROLE_RULE) {
		STATS_INC(worker_stats(s->w), smc_out_rdma);
		intercept_learned(s, true);
	} else
		STATS_INC(worker_stats(s->w), smc_conns_rdma);
	session_rdma_relay_start(sr, link);
}

/* A kernel peer's connection gives up its wait (its bound passed). */
void
session_rdma_smcr_unwait(struct session *s)
{
	session_rdma_unpark(worker_rdma(s->w), s);
}
