// SPDX-License-Identifier: BSD-2-Clause
/*
 * One connection over RDMA as both its relay (session_rdma.c) and its
 * resume (resume.c) act on it: the links the peer has our rkeys for (the
 * peer's are the group's, rtoken.c, asked for by lgr_conn_peer_rkey),
 * its own LLC messages (the wait for a TX slot, CONFIRM_RKEY,
 * CONN_REJECT), and its close from outside the relay loop.  Below both
 * of them, so that resume.c needs nothing of session_rdma.c: the loop
 * itself is reached through the worker's run hook.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "session_rdma.h"

/* sr's connection id, for log lines. */
unsigned long long
session_rdma_conn_id(const struct session_rdma *sr)
{
	return sr->id;
}

/* The MR of b in link's PD, registered there now if need be; or NULL. */
const struct dev_mr *
session_rdma_conn_mr(struct session_rdma_worker *srw, struct buf *b,
		     const struct lgr_link *link)
{
	(void)srw;
	return lgr_link_mr(link, b);
}

/* sr's RMB element: the rconn's once it has one. */
struct buf *
session_rdma_conn_rmb(const struct session_rdma *sr)
{
	return sr->rc != NULL ? rx_rmb(sr->rc) : sr->rmb;
}

static bool
session_rdma_conn_told(const struct session_rdma *sr, uint8_t link_id)
{
	int i;

	for (i = 0; i < LGR_LINK_SLOTS; i++)
		if (sr->told[i] == link_id)
			return true;
	return false;
}

/* The peer has our rkey for link_id from now on. */
void
session_rdma_conn_told_set(struct session_rdma *sr, uint8_t link_id)
{
	struct lgr *lgr = sr->lc.lgr;
	int i;

	if (session_rdma_conn_told(sr, link_id))
		return;
	for (i = 0; i < LGR_LINK_SLOTS; i++)
		if (sr->told[i] == 0 || lgr == NULL ||
		    lgr_link_by_id(lgr, sr->told[i]) == NULL)
			break;
	sr->told[i < LGR_LINK_SLOTS ? i : 0] = link_id;
}

/*
 * Run sr's relay loop now (session_rdma.c's, through the worker's hook),
 * or have the run under way go round once more.
 */
void
session_rdma_conn_kick(struct session_rdma *sr)
{
	if (sr->in_run) {
		sr->again = true;
		return;
	}
	sr->srw->run(sr);
}

/* Close the session from outside the relay loop, or have the loop do it. */
void
session_rdma_conn_fail(struct session_rdma *sr, enum session_reason r)
{
	if (!sr->closing) {
		sr->closing = true;
		sr->close_reason = r;
	}
	session_rdma_conn_kick(sr);
}

/*
 * sr's LLC message that waited for a TX slot went out (status 0) or could
 * not.  The rkeys owed go first, then its sender's next step (llc_then);
 * without one, a message that could not go fails the connection.
 */
static void
session_rdma_conn_llc_sent(struct llc_pending *p, int status)
{
	struct session_rdma *sr = container_of(p, struct session_rdma, llc);
	void (*then)(struct session_rdma *, int) = sr->llc_then;

	if (status) {
		if (then != NULL)
			then(sr, status);
		else
			session_rdma_conn_fail(sr, SESSION_LINK_FAILED);
		return;
	}
	/* before the next step, which may close (and free) sr */
	if (sr->rkeys_owed)
		session_rdma_conn_rkeys_announce(sr);
	if (then != NULL)
		then(sr, 0);
}

/*
 * Send m, an LLC message of sr's own (CONN_OPEN, CONN_ACCEPT,
 * CONFIRM_RKEY, CONN_RESUME), on link.  llc.c's queue is short and a
 * burst of opens fills it: then sr waits for a TX slot in its turn rather
 * than give up.  then (NULL: none) is called once it went, or with the
 * error when it could not.  0 when it went out or was queued by llc.c, 1
 * when sr waits, -errno.
 */
int
session_rdma_conn_llc_send(struct session_rdma *sr, struct lgr_link *link,
			   const struct llc_info *m,
			   void (*then)(struct session_rdma *sr, int status))
{
	sr->llc_then = then;
	return llc_send_wait(link, m, &sr->llc, session_rdma_conn_llc_sent);
}

/*
 * Tell the peer our RMB element's rkey on every active link of the group
 * it does not have one for yet: a CONFIRM_RKEY per link on the
 * connection's link, whose rkey there names the RMB element.  Once our
 * open or accept went out; while a message of ours waits for a TX slot,
 * after it (nothing may overtake the open).
 */
void
session_rdma_conn_rkeys_announce(struct session_rdma *sr)
{
	struct lgr *lgr = sr->lc.lgr;
	struct lgr_link *via = sr->lc.link, *l;
	const struct dev_mr *cur, *mr;
	struct buf *rmb = session_rdma_conn_rmb(sr);
	struct llc_info m;
	uint8_t id;
	int rc;

	/* one whose session went tells no more: what it sent could only
	 * fail it, and nothing of it is left to fail */
	if (!sr->opened || session_rdma_waiting_alone(sr) || lgr == NULL ||
	    via == NULL || rmb == NULL || !lgr_link_is_active(via))
		return;
	if (llc_pending_waits(&sr->llc)) {
		sr->rkeys_owed = true;
		return;
	}
	sr->rkeys_owed = false;
	cur = session_rdma_conn_mr(sr->srw, rmb, via);
	if (cur == NULL)
		return;
	for (l = lgr_link_next_active(lgr, NULL); l != NULL;
	     l = lgr_link_next_active(lgr, l)) {
		id = lgr_link_id(l);
		if (l == via || id == 0 || session_rdma_conn_told(sr, id))
			continue;
		mr = session_rdma_conn_mr(sr->srw, rmb, l);
		if (mr == NULL)
			continue; /* not registered there: cannot move there */
		memset(&m, 0, sizeof(m));
		m.type = LLC_CONFIRM_RKEY;
		m.confirm_rkey.num_rkeys = 1;
		m.confirm_rkey.rt[0].rkey = cur->rkey;
		m.confirm_rkey.rt[0].vaddr = rmb->iova;
		m.confirm_rkey.rt[1].link_id = id;
		m.confirm_rkey.rt[1].rkey = mr->rkey;
		m.confirm_rkey.rt[1].vaddr = rmb->iova;
		rc = session_rdma_conn_llc_send(sr, via, &m, NULL);
		if (rc < 0) {
			log_debug("conn 0x%llx: CONFIRM_RKEY for link %u: %s",
				  session_rdma_conn_id(sr), id, strerror(-rc));
			return;
		}
		session_rdma_conn_told_set(sr, id);
		if (rc == 1) {
			sr->rkeys_owed = true; /* the rest after this one */
			return;
		}
	}
}

/*
 * Refuse the opener's CONN_OPEN (opener_token) on link with reason r.  A
 * burst of refusals can fill llc.c's queue: then the message waits for a
 * TX slot on its own, since the session it belonged to is going (the
 * opener would otherwise wait out its open timeout).  The link going
 * down wakes and frees it.  0 or -errno.
 */
int
session_rdma_conn_reject(struct lgr_link *link, uint32_t opener_token,
			 enum session_reason r)
{
	struct llc_info m;

	if (link == NULL)
		return -ENOLINK;
	memset(&m, 0, sizeof(m));
	m.type = LLC_CONN_REJECT;
	m.flags = LLC_FLAG_RESP;
	m.conn_reject.opener_token = opener_token;
	m.conn_reject.reason = session_reason_code(r);
	return llc_send_detached(link, &m);
}
