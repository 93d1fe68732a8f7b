// SPDX-License-Identifier: BSD-2-Clause
/*
 * The receive side of a connection carried over RDMA (net/smc's
 * smc_rx.c and the CDC receive half of smc_cdc.c).
 *
 * The peer RDMA-writes into our RMB element and then sends a CDC with its
 * producer cursor.  Nothing in it is believed before it has passed every
 * check: the message's length, type and reserved bits (cdc_msg_check, in
 * the group's handler lgr_cdc_rx, which then finds the connection by its
 * token), and here a fresh seqno and cursors consistent with the
 * connection's state (cdc_conn_check).  Every span handed out
 * is computed from cursors that passed those checks, so a hostile peer
 * can make us refuse its CDCs but never read or write outside the RMB.
 *
 * The owner writes straight from the RMB (rx_data, rx_consumed); the
 * consumer cursor goes back to the peer by the window-update rule of
 * rx_update_due().
 */
#include <sys/uio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "smcproxyd.h"
#include "rconn.h"

#define RX_UPDATE_MIN 1024 /* never announce less window than this */

/* Bytes the peer has written that we have not consumed yet. */
size_t
rx_readable(const struct rconn *rc)
{
	return cdc_curs_diff(rc->rmb->size, &rc->local_tx_ctrl.cons,
			     &rc->local_rx_ctrl.prod);
}

/* The RMB element (its memory registered on each link the owner moves to). */
struct buf *
rx_rmb(const struct rconn *rc)
{
	return rc->rmb;
}

/* Bytes the peer announced to us, since the open (tx_resume). */
uint64_t
rx_received_off(const struct rconn *rc)
{
	return rc->rx_off;
}

/* Add rc's receive side (RMB element, consumer cursor) to JSON object o. */
void
rx_json(const struct rconn *rc, void *json_obj)
{
	json_t *o = json_obj;

	json_object_set_new(o, "rmb", json_integer((json_int_t)rc->rmb->size));
	json_object_set_new(o, "rx_cons",
			    json_integer(rc->local_tx_ctrl.cons.count));
	json_object_set_new(o, "rx_readable",
			    json_integer((json_int_t)rx_readable(rc)));
	json_object_set_new(o, "rx_data_cdcs",
			    json_integer((json_int_t)rc->stats.rx_data_cdcs));
}

/*
 * Window update rule: must our consumer cursor go to the peer now?
 *
 * RFC 7609 and smc_tx_consumer_update: announce consumed bytes when there
 * are more than limit = max(rmb/10, 1 KiB) of them (no silly window) and
 * the peer is short of window: what it thinks is free (the RMB less what
 * it wrote past our last announced cursor) is at most half the RMB, or it
 * said write_blocked.  Alone that rule has the throughput cliff of
 * smc-r.md §2.3: when the reader drains the RMB in pieces smaller than
 * limit (the head of a message that nearly fills the RMB, or a socket
 * taking a few bytes at a time) the blocked writer waits although we
 * hold nothing more to read, so the two sides take turns instead of
 * overlapping.  Hence a third case: the peer is write_blocked and we
 * have consumed everything it wrote, then any consumed byte goes back at
 * once.  That costs at most one CDC per data CDC received (a drain needs
 * new data first), so it cannot turn into a stream of tiny updates.
 * Requests (cons_curs_upd_req) are answered when they arrive; nothing is
 * announced once the peer is done writing, as it will not write again.
 */
static bool
rx_update_due(const struct rconn *rc)
{
	size_t size = rc->rmb->size;
	size_t limit = size / 10 > RX_UPDATE_MIN ? size / 10 : RX_UPDATE_MIN;
	size_t to_confirm, sender_free;
	bool blocked = rc->local_rx_ctrl.prod_flags & CDC_PF_WRITE_BLOCKED;

	if (rc->flags & (RCONN_F_PEER_DONE | RCONN_F_PEER_CLOSED |
			 RCONN_F_PEER_ABORT | RCONN_F_ABORT))
		return false;
	to_confirm = cdc_curs_diff(size, &rc->rx_curs_confirmed,
				   &rc->local_tx_ctrl.cons);
	if (to_confirm == 0)
		return false;
	/* a Linux sender of urgent data writes nothing more until its
	 * whole window is back (smc_cdc_msg_recv_action, urg_tx_pend) */
	if ((rc->flags & RCONN_F_URG) && rx_readable(rc) == 0)
		return true;
	sender_free = size - cdc_curs_diff(size, &rc->rx_curs_confirmed,
					   &rc->local_rx_ctrl.prod);
	if (to_confirm > limit && (sender_free <= size / 2 || blocked))
		return true;
	return blocked && rx_readable(rc) == 0;
}

/*
 * The peer's close flags take effect after every byte it wrote before
 * them has been consumed.
 */
static void
rx_tell_close(struct rconn *rc)
{
	if (rx_readable(rc) > 0 || (rc->flags & RCONN_F_FREEING))
		return;
	if ((rc->flags & (RCONN_F_PEER_DONE | RCONN_F_DONE_TOLD)) ==
	    RCONN_F_PEER_DONE) {
		rc->flags |= RCONN_F_DONE_TOLD;
		if (rc->ops->peer_done_writing != NULL)
			rc->ops->peer_done_writing(rc, rc->arg);
		if (rc->flags & RCONN_F_FREEING)
			return;
	}
	if ((rc->flags & (RCONN_F_PEER_CLOSED | RCONN_F_CLOSED_TOLD)) ==
	    RCONN_F_PEER_CLOSED) {
		rc->flags |= RCONN_F_CLOSED_TOLD;
		if (rc->ops->peer_closed != NULL)
			rc->ops->peer_closed(rc, rc->arg);
	}
}

/* After consuming or receiving: window update, close flags. */
static void
rx_after(struct rconn *rc)
{
	if (rx_update_due(rc) && tx_kick(rc, RCONN_OWE_CONS) == -ENOLINK)
		tx_link_failed(rc);
	if (rx_readable(rc) == 0)
		rc->flags &= ~RCONN_F_URG;
	rx_tell_close(rc);
}

/*
 * The readable spans of the RMB element (at most two: it wraps), for the
 * owner to write out.  How many spans (0: nothing to read), or
 * -ECONNRESET after an abort either way.
 */
int
rx_data(struct rconn *rc, struct iovec iov[2])
{
	size_t size = rc->rmb->size, n;
	uint8_t *rmb = rc->rmb->addr;

	if (rc->flags & (RCONN_F_ABORT | RCONN_F_PEER_ABORT))
		return -ECONNRESET;
	n = rx_readable(rc);
	if (n == 0)
		return 0;
	return cdc_ring_spans(rmb, size, rc->local_tx_ctrl.cons.count, n, iov);
}

/*
 * The owner wrote out n bytes from the start of rx_data()'s spans:
 * advance our consumer cursor, tell the peer when the window-update rule
 * says so, and run peer_done_writing / peer_closed once the last byte
 * before them is gone.
 */
void
rx_consumed(struct rconn *rc, size_t n)
{
	size_t avail = rx_readable(rc);

	if (n > avail) {
		log_warnx("conn 0x%llx: %zu bytes consumed, %zu readable",
			  (unsigned long long)rc->id, n, avail);
		n = avail;
	}
	if (n == 0 || (rc->flags & RCONN_F_FREEING))
		return;
	tx_conn_hold(rc);
	cdc_curs_add(&rc->local_tx_ctrl.cons, n, rc->rmb->size);
	RCONN_STAT(rc, rx_bytes, n);
	rx_after(rc);
	tx_conn_put(rc);
}

/* A failover validation CDC: did the peer see completions we missed? */
static void
rx_validate(struct rconn *rc, const struct cdc_info *m)
{
	if (!cdc_seq_newer(m->seqno, rc->local_rx_ctrl.seqno) ||
	    (rc->flags & (RCONN_F_PEER_ABORT | RCONN_F_ABORT)))
		return;
	/* a CDC it saw completing never reached us: bytes are lost */
	log_warnx("conn 0x%llx: out of sync after failover (peer seqno %u, "
		  "ours %u): abort",
		  (unsigned long long)rc->id, m->seqno,
		  rc->local_rx_ctrl.seqno);
	rc->flags |= RCONN_F_OUT_OF_SYNC;
	RCONN_STAT(rc, out_of_sync, 1);
	tx_close(rc, TX_CLOSE_ABORT);
	rc->flags |= RCONN_F_PEER_ABORT;
	if (!(rc->flags & RCONN_F_FREEING) && rc->ops->peer_abort != NULL)
		rc->ops->peer_abort(rc, rc->arg);
}

/* Apply m, checked, to rc and tell the owner what changed. */
static void
rx_apply(struct rconn *rc, const struct cdc_info *m)
{
	size_t rsize = rc->rmb->size, psize = rc->peer_rmb.size;
	int64_t new_data, freed;
	unsigned int owe = 0;

	new_data = cdc_curs_comp(rsize, &rc->local_rx_ctrl.prod, &m->prod);
	freed = cdc_curs_comp(psize, &rc->local_rx_ctrl.cons, &m->cons);
	rc->local_rx_ctrl = *m;
	if (new_data > 0)
		rc->rx_off += (uint64_t)new_data;
	if (freed > 0)
		rc->peer_cons_off += (uint64_t)freed;
	RCONN_STAT(rc, rx_cdcs, 1);
	if (m->conn_state_flags & CDC_CS_PEER_CONN_ABORT) {
		rc->flags |= RCONN_F_PEER_ABORT;
		if (rc->ops->peer_abort != NULL)
			rc->ops->peer_abort(rc, rc->arg);
		return;
	}
	/* closed is done writing too: Linux's passive close (after our
	 * done_writing) sends peer_conn_closed alone */
	if (m->conn_state_flags &
	    (CDC_CS_PEER_DONE_WRITING | CDC_CS_PEER_CONN_CLOSED))
		rc->flags |= RCONN_F_PEER_DONE;
	if (m->conn_state_flags & CDC_CS_PEER_CONN_CLOSED)
		rc->flags |= RCONN_F_PEER_CLOSED;
	if (freed > 0) {
		tx_peer_consumed(rc);
		/* the window opened: corked or blocked bytes go now */
		if (tx_unsent(rc) > 0)
			owe |= RCONN_OWE_PUSH;
	}
	/* urgent data (a kernel peer's MSG_OOB) is read inline, in its
	 * place in the stream; pending: the peer wants our cursor now */
	if (m->prod_flags &
	    (CDC_PF_CONS_CURS_UPD_REQ | CDC_PF_URG_DATA_PENDING))
		owe |= RCONN_OWE_CONS;
	if (m->prod_flags & (CDC_PF_URG_DATA_PENDING | CDC_PF_URG_DATA_PRESENT))
		rc->flags |= RCONN_F_URG;
	if (owe && tx_kick(rc, owe) == -ENOLINK)
		tx_link_failed(rc);
	if (rc->flags & RCONN_F_FREEING)
		return;
	if (new_data > 0 && rc->ops->data_ready != NULL) {
		rc->ops->data_ready(rc, rc->arg);
		if (rc->flags & RCONN_F_FREEING)
			return;
	}
	rx_after(rc);
}

/*
 * The bytes a CDC carries (m->data_len at data): the last ones before its
 * producer cursor, checked to be of those it announces.  Into the RMB
 * element before the cursor is believed, as an RDMA WRITE would have put
 * them.
 */
static void
rx_cdc_data(struct rconn *rc, const struct cdc_info *m, const uint8_t *data)
{
	size_t rsize = rc->rmb->size, n = m->data_len;
	size_t start = (m->prod.count + rsize - n) % rsize;
	struct iovec iov[2];
	int i, cnt;

	cnt = cdc_ring_spans(rc->rmb->addr, rsize, start, n, iov);
	for (i = 0; i < cnt; i++) {
		memcpy(iov[i].iov_base, data, iov[i].iov_len);
		data += iov[i].iov_len;
	}
	RCONN_STAT(rc, rx_data_cdcs, 1);
}

/*
 * Handle CDC m, the next of rc's on any link of its link group (the
 * group decoded it with cdc_msg_check() and found rc by its token); data:
 * the m->data_len bytes it carries.  0 when it was applied, or dropped
 * as stale (counted; a failover validation is handled here too); -EPROTO
 * with *why for anything inconsistent with the connection's state (the
 * group ends then).
 */
int
rx_cdc_recv(struct rconn *rc, const struct cdc_info *m, const void *data,
	    const char **why)
{
	int err = 0;

	*why = NULL;
	if (rc->flags & RCONN_F_FREEING)
		return 0;
	tx_conn_hold(rc);
	if (m->prod_flags & CDC_PF_FAILOVER_VALIDATION) {
		rx_validate(rc, m);
		goto out;
	}
	if (!cdc_seq_newer(m->seqno, rc->local_rx_ctrl.seqno)) {
		RCONN_STAT(rc, rx_stale, 1);
		goto out;
	}
	/* after an abort either way nothing of it matters any more */
	if (rc->flags & (RCONN_F_PEER_ABORT | RCONN_F_ABORT))
		goto out;
	err = cdc_conn_check(rc, m, why);
	if (err) {
		RCONN_STAT(rc, proto_errors, 1);
		goto out;
	}
	if (m->data_len > 0)
		rx_cdc_data(rc, m, data);
	rx_apply(rc, m);
out:
	tx_conn_put(rc);
	return err;
}

/* Over TCP (tx_resume_tcp): the free spans of the RMB element; how many. */
int
rx_tcp_space(const struct rconn *rc, struct iovec iov[2])
{
	size_t size = rc->rmb->size, n = size - rx_readable(rc);

	if (n == 0)
		return 0;
	return cdc_ring_spans(rc->rmb->addr, size, rc->local_rx_ctrl.prod.count,
			      n, iov);
}

/* Over TCP: n bytes were read into the spans rx_tcp_space() gave. */
void
rx_tcp_received(struct rconn *rc, size_t n)
{
	size_t room = rc->rmb->size - rx_readable(rc);

	if (n > room)
		n = room;
	cdc_curs_add(&rc->local_rx_ctrl.prod, n, rc->rmb->size);
	rc->rx_off += n;
}
