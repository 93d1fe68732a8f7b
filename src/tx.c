// SPDX-License-Identifier: BSD-2-Clause
/*
 * The send side of a connection carried over RDMA (net/smc's smc_tx.c and
 * the CDC send half of smc_cdc.c), and the connection object itself.
 *
 * The owner reads its TCP socket straight into the send ring (tx_space,
 * tx_produced) and calls tx_push().  A push RDMA-WRITEs the unsent bytes
 * that fit the peer's window into its RMB element at the producer cursor
 * (a span wrapping in the ring and/or in the RMB: at most two WRITEs of
 * at most two SGEs each), followed on the same TX slot by the CDC
 * carrying the new producer cursor; RC ordering makes the peer see the
 * bytes before the CDC.  Ring space comes back when the CDC completes
 * (tx_curs_fin); the peer's window only with its consumer cursor.
 *
 * Every CDC carries the whole current state (producer cursor, our
 * consumer cursor, sticky close flags), so whatever a CDC is posted for,
 * it also takes along every byte that may go.  tx_owe says why one is
 * owed even if autocork would hold the bytes back.
 *
 * Send engine (DESIGN §4), each rule switchable in struct tx_params:
 * - Autocork: a push posts nothing while the connection has CDCs in
 *   flight and at most min(sndbuf/2, autocork_size) bytes unsent; a push
 *   with nothing in flight never corks; the completion of the last CDC in
 *   flight pushes whatever waits, and so does the peer's window opening,
 *   so a corked tail is never stranded.  The owner corks at the door the
 *   same way (tx_cork_door): while the rule holds, it leaves its socket
 *   unread, the kernel's socket buffer being the cork, and reads what
 *   queued there in one go when tx_space_ready says the cork ended (the
 *   last completion, or a move to another link).
 * - Inline WRITEs and CDCs: decided by wr.c from the QP's real
 *   max_inline_data (and counted there).
 * - Slot waiting: with no free TX slot the connection parks its
 *   wr_waiter and posts when woken; a wake-up it no longer needs is handed
 *   on (wr_tx_wait_cancel).  -ENOLINK means the link failed.
 *
 * Failover: tx_failover() moves the connection to another link and
 * re-sends everything not confirmed by a completion, from tx_curs_fin,
 * after a validation CDC (seqno = last completed) that lets the peer
 * detect it lost something.
 *
 * Lifetime: tx_conn_free() frees at once if nothing is in flight, else
 * when the last CDC completes (the send ring may still be read by a
 * WRITE until then).  A link that fails flushes what was posted on it,
 * and a link freed before every completion came back completes the rest
 * with an error (wr_link_free), so a connection never waits forever.
 */
#include <sys/uio.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "smcproxyd.h"
#include "rconn.h"

static void tx_cdc_done(struct wr_link *l, struct wr_tx_slot *slot, int status,
			void *arg);

static size_t
tx_min(size_t a, size_t b)
{
	return a < b ? a : b;
}

/*
 * rc waits for one of its CDCs in flight to complete (ring space, corked
 * bytes, room in pend[], a FIN to confirm, its own end): have the
 * completion wake us even if the CDC was posted lazily.
 */
static void
tx_want_done(struct rconn *rc)
{
	if (rc->link != NULL && rc->cdc_pend_tx_wr > 0)
		wr_tx_want_done(rc->link);
}

/* Bytes produced into the ring but not yet RDMA-written. */
size_t
tx_unsent(const struct rconn *rc)
{
	return cdc_curs_diff(rc->sndbuf->size, &rc->tx_curs_sent,
			     &rc->tx_curs_prep);
}

/*
 * Has the peer all of rc, our FIN included, with the CDC that carried it
 * completed?  If not, the owner hears tx_space_ready at the next
 * completion and may ask again.  Until the FIN's CDC completed the
 * connection must stay, to resume and send it again were the group to
 * end.
 */
bool
tx_fin_confirmed(struct rconn *rc)
{
	if (rc->link != NULL && tx_unsent(rc) == 0 && rc->cdc_pend_tx_wr == 0 &&
	    (rc->local_tx_ctrl.conn_state_flags & CDC_CS_PEER_DONE_WRITING))
		return true;
	rc->flags |= RCONN_F_TX_BLOCKED;
	tx_want_done(rc);
	return false;
}

/* The peer's token for rc changed (a resume): our CDCs carry the new one. */
void
tx_peer_token_set(struct rconn *rc, uint32_t token)
{
	rc->peer_token = token;
	rc->local_tx_ctrl.token = token;
}

/* Add rc's send side (ring, cursors, window, counters) to JSON object o. */
void
tx_json(const struct rconn *rc, void *json_obj)
{
	json_t *o = json_obj;

	json_object_set_new(o, "sndbuf",
			    json_integer((json_int_t)rc->sndbuf->size));
	json_object_set_new(o, "tx_curs_prep",
			    json_integer(rc->tx_curs_prep.count));
	json_object_set_new(o, "tx_curs_sent",
			    json_integer(rc->tx_curs_sent.count));
	json_object_set_new(o, "tx_curs_fin",
			    json_integer(rc->tx_curs_fin.count));
	json_object_set_new(o, "tx_unsent",
			    json_integer((json_int_t)tx_unsent(rc)));
	json_object_set_new(o, "peer_window",
			    json_integer((json_int_t)rc->peer_rmbe_space));
	json_object_set_new(o, "cdcs_in_flight",
			    json_integer((json_int_t)rc->cdc_pend_tx_wr));
	json_object_set_new(o, "corked",
			    json_integer((json_int_t)rc->stats.corked));
	json_object_set_new(o, "door_corks",
			    json_integer((json_int_t)rc->stats.door_corks));
	json_object_set_new(o, "data_cdcs",
			    json_integer((json_int_t)rc->stats.data_cdcs));
	json_object_set_new(o, "resumes",
			    json_integer((json_int_t)rc->stats.resumes));
	json_object_set_new(o, "resent_bytes",
			    json_integer((json_int_t)rc->stats.resent_bytes));
}

/* The stream offset of tx_curs_sent: bytes written so far. */
static uint64_t
tx_sent_off(const struct rconn *rc)
{
	return rc->tx_prep_off - tx_unsent(rc);
}

/* tx_curs_sent moved on: remember the furthest it has been. */
static void
tx_sent_hi_note(struct rconn *rc)
{
	if (tx_sent_off(rc) > rc->tx_sent_hi_off)
		rc->tx_sent_hi_off = tx_sent_off(rc);
}

/* Free bytes of the ring: those whose CDC completed. */
static size_t
tx_ring_free(const struct rconn *rc)
{
	return rc->sndbuf->size - cdc_curs_diff(rc->sndbuf->size,
						&rc->tx_curs_fin,
						&rc->tx_curs_prep);
}

/*
 * The peer's consumer cursor moved: recompute its window.  After a
 * failover it can be ahead of our producer cursor (the peer consumed
 * bytes whose completions the old link never delivered): those are not
 * sent again.  Completions move tx_curs_fin up later.
 */
void
tx_peer_consumed(struct rconn *rc)
{
	size_t psize = rc->peer_rmb.size;
	int64_t ahead = cdc_curs_comp(psize, &rc->local_tx_ctrl.prod,
				      &rc->local_rx_ctrl.cons);

	if (ahead > 0) {
		cdc_curs_add(&rc->tx_curs_sent, (size_t)ahead,
			     rc->sndbuf->size);
		cdc_curs_add(&rc->local_tx_ctrl.prod, (size_t)ahead, psize);
	}
	rc->peer_rmbe_space =
		psize - cdc_curs_diff(psize, &rc->local_rx_ctrl.cons,
				      &rc->local_tx_ctrl.prod);
}

static void
tx_waiter_wake(struct wr_waiter *w, int status)
{
	struct rconn *rc = container_of(w, struct rconn, waiter);

	tx_conn_hold(rc);
	if (status < 0) {
		/* the link is gone: nothing to hand on */
		w->woken = false;
		tx_link_failed(rc);
	} else if (tx_kick(rc, 0) == -ENOLINK) {
		tx_link_failed(rc);
	}
	tx_conn_put(rc);
}

/*
 * A connection on link, set up as *in says; it takes over in->sndbuf and
 * in->rmb (on success only).  NULL with errno EINVAL for a missing part,
 * a zero token or a buffer size buf_size_ok() refuses; ENOMEM.
 */
struct rconn *
tx_conn_new(const struct rconn_init *in)
{
	struct rconn *rc;

	if (in->link == NULL || in->ops == NULL || in->sndbuf == NULL ||
	    in->rmb == NULL || in->token == 0 || in->peer_token == 0 ||
	    !buf_size_ok(in->sndbuf->size) || !buf_size_ok(in->rmb->size) ||
	    !buf_size_ok(in->peer_rmb.size)) {
		errno = EINVAL;
		return NULL;
	}
	rc = calloc(1, sizeof(*rc));
	if (rc == NULL)
		return NULL;
	rc->id = in->id;
	rc->link = in->link;
	rc->token = in->token;
	rc->peer_token = in->peer_token;
	rc->ops = in->ops;
	rc->arg = in->arg;
	rc->params = in->params;
	rc->sum = in->sum;
	rc->sndbuf = in->sndbuf;
	rc->lkey = in->lkey;
	rc->rmb = in->rmb;
	rc->peer_rmb = in->peer_rmb;
	rc->local_tx_ctrl.token = in->peer_token;
	rc->local_rx_ctrl.token = in->token;
	rc->peer_rmbe_space = in->peer_rmb.size;
	rc->waiter.wake = tx_waiter_wake;
	return rc;
}

/* How far from the start of a ring of size bytes cursor c has come. */
static size_t
tx_extent(const struct cdc_cursor *c, size_t size)
{
	return c->wrap > 0 ? size : tx_min(c->count, size);
}

/*
 * Give the buffers back, saying how much of them can hold this
 * connection's bytes (zeroed before reuse): of the send ring what was
 * produced into it (after an abort tx_close said so, before it rolled
 * the cursor back over unsent bytes that are still there); of the RMB what the peer's cursor covered, when the
 * peer said it was done writing or closed (a correct peer writes nothing
 * it does not announce, and nothing after that), else all of it.  The
 * RMB element goes back at once when the peer has stopped writing (it
 * said done, closed or aborted: its WRITEs come before that CDC); else,
 * after our abort, it cools for RMB_COOL_MS first, still registered:
 * the peer's WRITEs still in flight land in it, read by nobody, instead
 * of failing at the peer and taking its link with every connection on it
 * down, or landing in the stream of the next connection to get it (it
 * loses its keys when it is given back, and comes zeroed whole).
 */
static void
tx_conn_destroy(struct rconn *rc)
{
	if (!(rc->flags & RCONN_F_ABORT))
		buf_written(rc->sndbuf,
			    tx_extent(&rc->tx_curs_prep, rc->sndbuf->size));
	if ((rc->flags & (RCONN_F_PEER_DONE | RCONN_F_PEER_CLOSED)) &&
	    !(rc->flags & (RCONN_F_PEER_ABORT | RCONN_F_OUT_OF_SYNC)))
		buf_written(rc->rmb,
			    tx_extent(&rc->local_rx_ctrl.prod, rc->rmb->size));
	buf_put(rc->sndbuf);
	if (rc->flags &
	    (RCONN_F_PEER_DONE | RCONN_F_PEER_CLOSED | RCONN_F_PEER_ABORT))
		buf_put(rc->rmb);
	else
		buf_put_cooled(rc->rmb, now_ms() + RMB_COOL_MS);
	free(rc);
}

/*
 * An abort the peer has not been told yet: a connection freed with one
 * lingers until it is posted (the peer would otherwise keep its end, and
 * its buffers, until something else closed it).
 */
static bool
tx_abort_owed(const struct rconn *rc)
{
	return (rc->flags & RCONN_F_ABORT) &&
	       !(rc->flags & (RCONN_F_ABORT_SENT | RCONN_F_PEER_ABORT));
}

/* Keep rc allocated across a callback that might free it. */
void
tx_conn_hold(struct rconn *rc)
{
	rc->nest++;
}

/* Undo tx_conn_hold(); rc is freed here if it was waiting for that. */
void
tx_conn_put(struct rconn *rc)
{
	if (--rc->nest == 0 && (rc->flags & RCONN_F_FREEING) &&
	    rc->cdc_pend_tx_wr == 0 && rc->cdc_pend_old == 0 &&
	    !rc->waiter.queued)
		tx_conn_destroy(rc);
}

/*
 * Free the connection and give back its buffers: now, or when its CDCs
 * in flight have completed.  Nothing more is received, and nothing more
 * sent but an abort not yet posted (parked for a TX slot, or behind a
 * full pending list): that one still goes, then the connection is freed.
 * NULL is ignored.
 */
void
tx_conn_free(struct rconn *rc)
{
	if (rc == NULL || (rc->flags & RCONN_F_FREEING))
		return;
	rc->flags |= RCONN_F_FREEING;
	if (rc->waiter.queued && rc->link != NULL && !tx_abort_owed(rc))
		wr_tx_wait_cancel(rc->link, &rc->waiter);
	tx_want_done(rc); /* the ring is freed when they have completed */
	tx_conn_hold(rc);
	tx_conn_put(rc);
}

/* Tell the owner, once per link, that the link failed under rc. */
void
tx_link_failed(struct rconn *rc)
{
	if (rc->flags & (RCONN_F_LINK_FAILED | RCONN_F_FREEING))
		return;
	rc->flags |= RCONN_F_LINK_FAILED;
	if (rc->ops->link_failed != NULL)
		rc->ops->link_failed(rc, rc->arg);
}

/*
 * The free spans of the send ring, where the owner may read new bytes
 * (at most two: the ring wraps).  How many spans, 0 when the ring is full
 * (tx_space_ready follows when space comes back), or -EPIPE once the
 * connection was closed for sending or aborted.
 */
int
tx_space(struct rconn *rc, struct iovec iov[2])
{
	size_t size = rc->sndbuf->size, avail;
	uint8_t *ring = rc->sndbuf->addr;

	if (rc->flags & (RCONN_F_CLOSE_WR | RCONN_F_ABORT | RCONN_F_PEER_ABORT |
			 RCONN_F_FREEING))
		return -EPIPE;
	avail = tx_ring_free(rc);
	if (avail == 0) {
		rc->flags |= RCONN_F_TX_BLOCKED;
		RCONN_STAT(rc, ring_full, 1);
		tx_want_done(rc);
		return 0;
	}
	return cdc_ring_spans(ring, size, rc->tx_curs_prep.count, avail, iov);
}

/*
 * The owner put n new bytes at the start of the spans tx_space() gave.
 * They go out with the next tx_push().
 */
void
tx_produced(struct rconn *rc, size_t n)
{
	size_t avail = tx_ring_free(rc);

	if (rc->flags & (RCONN_F_CLOSE_WR | RCONN_F_ABORT))
		return;
	if (n > avail) {
		log_warnx("conn 0x%llx: %zu bytes produced, %zu free",
			  (unsigned long long)rc->id, n, avail);
		n = avail;
	}
	cdc_curs_add(&rc->tx_curs_prep, n, rc->sndbuf->size);
	rc->tx_prep_off += n;
}

/* Autocork (smc_should_autocork): hold unsent bytes back for now? */
static bool
tx_should_cork(const struct rconn *rc, size_t unsent)
{
	size_t limit;

	if (!rc->params.autocork || rc->params.autocork_size == 0 ||
	    rc->cdc_pend_tx_wr == 0)
		return false;
	limit = tx_min(rc->sndbuf->size / 2, rc->params.autocork_size);
	return unsent <= limit;
}

/*
 * Autocork at the door: should the owner leave the queued bytes waiting
 * in its socket unread for now?  Yes while the rule above would cork
 * them once read (CDCs in flight, the ring's unsent bytes and these at
 * most the limit): then tx_space_ready tells it when the cork ends, and
 * it reads them all in one go.  Where the cork sits decides what it
 * saves: in the ring, the owner still wakes and reads once per write of
 * its client; at the door, once per round trip.
 */
bool
tx_cork_door(struct rconn *rc, size_t queued)
{
	if (rc->link == NULL || wr_link_is_down(rc->link) ||
	    (rc->flags & (RCONN_F_ABORT | RCONN_F_PEER_ABORT)) ||
	    !tx_should_cork(rc, tx_unsent(rc) + queued))
		return false;
	rc->flags |= RCONN_F_DOOR;
	tx_want_done(rc);
	RCONN_STAT(rc, door_corks, 1);
	return true;
}

/* Whether the owner's cork at the door still holds. */
bool
tx_door_closed(const struct rconn *rc)
{
	return (rc->flags & RCONN_F_DOOR) != 0;
}

/* The cork at the door ends: the owner reads again (tx_space_ready). */
static void
tx_door_open(struct rconn *rc)
{
	if (!(rc->flags & RCONN_F_DOOR))
		return;
	rc->flags &= ~RCONN_F_DOOR;
	if (rc->ops->tx_space_ready != NULL)
		rc->ops->tx_space_ready(rc, rc->arg);
}

/*
 * The WRITEs moving len unsent bytes from the ring at tx_curs_sent to the
 * peer's RMB at its producer cursor: one per piece of the destination
 * (it wraps at most once as len <= peer_rmb.size), each with one SGE per
 * piece of the source (which wraps at most once as len <= sndbuf size).
 * How many WRITEs, or -EINVAL if that would not cover len (a bug).
 */
static int
tx_writes(const struct rconn *rc, size_t len, struct wr_write w[2])
{
	size_t ssize = rc->sndbuf->size, dsize = rc->peer_rmb.size;
	size_t src = rc->tx_curs_sent.count, dst = rc->local_tx_ctrl.prod.count;
	uint8_t *ring = rc->sndbuf->addr;
	size_t done = 0, chunk, piece;
	int nw;

	for (nw = 0; done < len && nw < 2; nw++) {
		struct wr_write *cur = &w[nw];

		chunk = tx_min(len - done, dsize - dst);
		cur->remote_addr = rc->peer_rmb.vaddr + dst;
		cur->rkey = rc->peer_rmb.rkey;
		for (cur->nsge = 0; chunk > 0 && cur->nsge < 2; cur->nsge++) {
			piece = tx_min(chunk, ssize - src);
			cur->sge[cur->nsge].addr =
				(uint64_t)(uintptr_t)(ring + src);
			cur->sge[cur->nsge].length = (uint32_t)piece;
			cur->sge[cur->nsge].lkey = rc->lkey;
			src = (src + piece) % ssize;
			dst = (dst + piece) % dsize;
			chunk -= piece;
			done += piece;
		}
	}
	return done == len ? nw : -EINVAL;
}

/*
 * The len unsent bytes at tx_curs_sent go behind the CDC header in the
 * slot (len <= CDC_DATA_MAX): the peer copies them into its RMB element
 * at the producer cursor, as our WRITE would have put them.
 */
static void
tx_cdc_data(const struct rconn *rc, struct wr_tx_slot *slot, size_t len)
{
	uint8_t *to = (uint8_t *)wr_tx_buf(slot) + CDC_MSG_LEN;
	struct iovec iov[2];
	int i, n;

	n = cdc_ring_spans(rc->sndbuf->addr, rc->sndbuf->size,
			   rc->tx_curs_sent.count, len, iov);
	for (i = 0; i < n; i++) {
		memcpy(to, iov[i].iov_base, iov[i].iov_len);
		to += iov[i].iov_len;
	}
	wr_tx_len(rc->link, slot, (uint32_t)(CDC_MSG_LEN + len));
}

/* Conn state flags for a CDC after which all_sent is true or not. */
static uint8_t
tx_state_flags(const struct rconn *rc, bool all_sent)
{
	uint8_t cs = rc->local_tx_ctrl.conn_state_flags;

	if (rc->flags & RCONN_F_ABORT)
		return cs | CDC_CS_PEER_CONN_ABORT;
	if (all_sent && (rc->flags & RCONN_F_CLOSE_WR))
		cs |= CDC_CS_PEER_DONE_WRITING;
	if (all_sent && (rc->flags & RCONN_F_CLOSE))
		cs |= CDC_CS_PEER_CONN_CLOSED;
	return cs;
}

static void
tx_pend_add(struct rconn *rc, const struct rconn_pend *p)
{
	rc->pend[(rc->pend_head + rc->pend_len) % RCONN_PEND_MAX] = *p;
	rc->pend_len++;
	rc->cdc_pend_tx_wr++;
	RCONN_STAT(rc, tx_cdcs, 1);
}

/* Take a TX slot; -EBUSY: parked, the waiter calls back. */
static int
tx_slot(struct rconn *rc, struct wr_tx_slot **slot)
{
	int err = wr_tx_get(rc->link, slot, &rc->waiter);

	if (err == -EBUSY)
		RCONN_STAT(rc, slot_waits, 1);
	return err;
}

/*
 * After a failover: a CDC with failover_validation and the seqno of the
 * last completed CDC, so the peer sees whether it missed one.  Its
 * cursors are ignored by the receiver.
 */
static int
tx_post_validation(struct rconn *rc)
{
	struct rconn_pend p = {.validation = true};
	struct wr_link *l = rc->link;
	struct wr_tx_slot *slot;
	int err;

	err = tx_slot(rc, &slot);
	if (err)
		return err == -EBUSY ? 0 : err;
	err = cdc_conn_build(rc, rc->tx_seq_fin, &rc->local_tx_ctrl.prod,
			     rc->local_tx_ctrl.prod_flags |
				     CDC_PF_FAILOVER_VALIDATION,
			     rc->local_tx_ctrl.conn_state_flags, 0,
			     wr_tx_buf(slot), CDC_MSG_LEN);
	if (err < 0) {
		wr_tx_put(l, slot);
		return err;
	}
	err = wr_tx_post(l, slot, NULL, 0, tx_cdc_done, rc);
	if (err)
		return rc->link != l ? 0 : -ENOLINK;
	p.seqno = rc->tx_seq_fin;
	tx_pend_add(rc, &p);
	rc->tx_owe &= ~RCONN_OWE_VALIDATE;
	return 0;
}

/*
 * Post one CDC with every unsent byte the peer's window takes, if one is
 * owed or autocork lets the bytes go (*corked set if it does not).  0
 * (posted, corked, parked, or nothing to do) or -errno.
 */
static int
tx_post_data(struct rconn *rc, bool *corked)
{
	struct wr_link *l = rc->link;
	struct cdc_info *tc = &rc->local_tx_ctrl;
	size_t unsent = tx_unsent(rc), len, resent = 0;
	struct rconn_pend p = {.validation = false};
	struct cdc_cursor prod = tc->prod;
	struct wr_tx_slot *slot;
	struct wr_write w[2];
	unsigned int owe = rc->tx_owe;
	uint8_t pf, cs;
	int64_t behind;
	bool data;
	int nw, err;

	len = rc->flags & RCONN_F_ABORT ? 0 :
					  tx_min(unsent, rc->peer_rmbe_space);
	cs = tx_state_flags(rc, len == unsent);
	if (len == 0 && !(owe & (RCONN_OWE_CONS | RCONN_OWE_CDC)) &&
	    cs == tc->conn_state_flags)
		return 0;
	if (len > 0 && !(owe & ~RCONN_OWE_VALIDATE) &&
	    cs == tc->conn_state_flags && tx_should_cork(rc, unsent)) {
		*corked = true;
		tx_want_done(rc); /* the last completion pushes them */
		return 0;
	}
	if (rc->pend_len == RCONN_PEND_MAX) {
		tx_want_done(rc); /* a completion comes and retries */
		return 0;
	}
	/* a resend (failover, resume): the peer may have announced them */
	behind = cdc_curs_comp(rc->peer_rmb.size, &tc->prod, &rc->tx_prod_hi);
	if (behind > 0)
		resent = tx_min(len, (size_t)behind);
	/* a few new bytes ride in the CDC itself, no WRITE before it */
	data = len > 0 && len <= wr_link_data_max(l) && resent == 0;
	nw = data ? 0 : tx_writes(rc, len, w);
	if (nw < 0)
		return nw;
	err = tx_slot(rc, &slot);
	if (err)
		return err == -EBUSY ? 0 : err;
	cdc_curs_add(&prod, len, rc->peer_rmb.size);
	/* tell the peer we want more window than it has given */
	pf = unsent > 0 && unsent >= rc->peer_rmbe_space ?
		     CDC_PF_WRITE_BLOCKED :
		     0;
	err = cdc_conn_build(rc, (uint16_t)(tc->seqno + 1), &prod, pf, cs,
			     data ? (uint16_t)len : 0, wr_tx_buf(slot),
			     CDC_MSG_LEN);
	if (err < 0) {
		wr_tx_put(l, slot);
		return err;
	}
	if (data)
		tx_cdc_data(rc, slot, len);
	/*
	 * Lazy unless somebody waits for its completion: the owner for ring
	 * space (TX_BLOCKED: it may have found the ring full while nothing
	 * was in flight to ask a completion of, and the peer may be waiting
	 * for us in turn) or corked at the door (DOOR: the last completion
	 * in flight opens it, and this CDC is now the last; lazy, it waited
	 * for the peer's next message, which a stream's tail never brings),
	 * a closing or freed connection.
	 */
	if (!(cs & (CDC_CS_PEER_DONE_WRITING | CDC_CS_PEER_CONN_CLOSED |
		    CDC_CS_PEER_CONN_ABORT)) &&
	    !(rc->flags &
	      (RCONN_F_FREEING | RCONN_F_TX_BLOCKED | RCONN_F_DOOR)))
		wr_tx_lazy(slot);
	err = wr_tx_post(l, slot, w, nw, tx_cdc_done, rc);
	if (err) /* link down; a failover (maybe already done) resends */
		return rc->link != l ? 0 : -ENOLINK;
	tc->seqno++;
	tc->prod = prod;
	tc->prod_flags = pf;
	tc->conn_state_flags = cs;
	if (cdc_curs_comp(rc->peer_rmb.size, &rc->tx_prod_hi, &prod) > 0)
		rc->tx_prod_hi = prod;
	cdc_curs_add(&rc->tx_curs_sent, len, rc->sndbuf->size);
	tx_sent_hi_note(rc);
	rc->peer_rmbe_space -= len;
	rc->rx_curs_confirmed = tc->cons;
	p.sent = rc->tx_curs_sent;
	p.prod = prod;
	p.seqno = tc->seqno;
	tx_pend_add(rc, &p);
	rc->tx_owe &= RCONN_OWE_VALIDATE;
	if (cs & CDC_CS_PEER_CONN_ABORT)
		rc->flags |= RCONN_F_ABORT_SENT;
	RCONN_STAT(rc, tx_bytes, len - resent);
	RCONN_STAT(rc, resent_bytes, resent);
	if (owe & RCONN_OWE_CONS)
		RCONN_STAT(rc, cons_updates, 1);
	if ((owe & RCONN_OWE_LAST) && len > 0)
		RCONN_STAT(rc, completion_pushes, 1);
	if (pf & CDC_PF_WRITE_BLOCKED)
		RCONN_STAT(rc, peer_window_full, 1);
	if (data)
		RCONN_STAT(rc, data_cdcs, 1);
	return 0;
}

/* tx_kick(), saying whether autocork held bytes back. */
static int
tx_flush(struct rconn *rc, unsigned int owe, bool *corked)
{
	int err = 0;

	rc->tx_owe |= owe;
	if ((rc->flags & RCONN_F_ABORT_SENT) ||
	    ((rc->flags & RCONN_F_FREEING) && !tx_abort_owed(rc)))
		goto out;
	if (rc->link == NULL)
		return -ENOLINK; /* detached: what is owed goes after tx_resume */
	if (wr_link_is_down(rc->link)) {
		err = -ENOLINK;
		goto out;
	}
	if (rc->waiter.queued)
		return 0; /* parked: the wake-up comes back here */
	if (rc->tx_owe & RCONN_OWE_VALIDATE) {
		err = tx_post_validation(rc);
		if (err || (rc->tx_owe & RCONN_OWE_VALIDATE))
			goto out;
	}
	err = tx_post_data(rc, corked);
out:
	/* woken for a slot we did not take: the next waiter gets it */
	if (rc->waiter.woken)
		wr_tx_wait_cancel(rc->link, &rc->waiter);
	return err;
}

/*
 * Add owe to what the connection owes the peer and post what may go now.
 * 0 (posted, corked, parked for a slot, or nothing to send) or -ENOLINK.
 */
int
tx_kick(struct rconn *rc, unsigned int owe)
{
	bool corked = false;

	return tx_flush(rc, owe, &corked);
}

/*
 * Send what was produced, unless autocork holds it back for a moment.
 * 0 (posted, corked or parked for a slot: it goes out by itself), -EPIPE
 * after an abort, or -ENOLINK when the link is down (the bytes stay in
 * the ring for tx_failover).
 */
int
tx_push(struct rconn *rc)
{
	bool corked = false;
	int err;

	if (rc->flags & (RCONN_F_ABORT | RCONN_F_PEER_ABORT))
		return -EPIPE;
	tx_conn_hold(rc);
	err = tx_flush(rc, 0, &corked);
	if (corked)
		RCONN_STAT(rc, corked, 1);
	tx_conn_put(rc);
	return err;
}

/*
 * Close the sending side: TX_CLOSE_DONE_WRITING sends peer_done_writing
 * with the CDC that carries the last byte produced, TX_CLOSE_CLOSED also
 * peer_conn_closed, TX_CLOSE_ABORT drops unsent bytes and sends
 * peer_conn_abort now.  0, or -ENOLINK (sent after tx_failover).
 */
int
tx_close(struct rconn *rc, enum tx_close_how how)
{
	int err;

	switch (how) {
	case TX_CLOSE_DONE_WRITING:
		rc->flags |= RCONN_F_CLOSE_WR;
		break;
	case TX_CLOSE_CLOSED:
		rc->flags |= RCONN_F_CLOSE_WR | RCONN_F_CLOSE;
		break;
	case TX_CLOSE_ABORT:
		if (rc->flags & RCONN_F_ABORT)
			break;
		/* the unsent bytes stay in the ring: zeroed before reuse */
		buf_written(rc->sndbuf,
			    tx_extent(&rc->tx_curs_prep, rc->sndbuf->size));
		rc->flags |= RCONN_F_ABORT;
		rc->tx_prep_off -= tx_unsent(rc);
		rc->tx_curs_prep = rc->tx_curs_sent;
		break;
	default:
		return -EINVAL;
	}
	if (rc->flags & RCONN_F_PEER_ABORT)
		return 0; /* nobody left to tell */
	tx_conn_hold(rc);
	err = tx_kick(rc, RCONN_OWE_PUSH);
	tx_conn_put(rc);
	return err;
}

/*
 * Ring space came back (a CDC completed, a failover skipped bytes the
 * peer had consumed): tell an owner who found the ring full.
 */
static void
tx_space_opened(struct rconn *rc)
{
	if (!(rc->flags & RCONN_F_TX_BLOCKED) || tx_ring_free(rc) == 0)
		return;
	rc->flags &= ~RCONN_F_TX_BLOCKED;
	if (rc->ops->tx_space_ready != NULL)
		rc->ops->tx_space_ready(rc, rc->arg);
}

/*
 * A CDC's SEND completed (smc_cdc_tx_handler).  CDCs complete in post
 * order on a link, so it is the oldest in flight on rc->link; one of a
 * link we failed over from only counts down.
 */
static void
tx_cdc_done(struct wr_link *l, struct wr_tx_slot *slot, int status, void *arg)
{
	struct rconn *rc = arg;
	struct rconn_pend *p;
	unsigned int owe = 0;

	tx_conn_hold(rc);
	if (l != rc->link) {
		rc->cdc_pend_old--;
		goto out;
	}
	p = &rc->pend[rc->pend_head];
	rc->pend_head = (rc->pend_head + 1) % RCONN_PEND_MAX;
	rc->pend_len--;
	rc->cdc_pend_tx_wr--;
	if (status) {
		tx_link_failed(rc);
		goto out;
	}
	if (!p->validation) {
		rc->tx_curs_fin = p->sent;
		rc->tx_prod_fin = p->prod;
		rc->tx_seq_fin = p->seqno;
	}
	if (rc->flags & RCONN_F_FREEING) {
		if (tx_abort_owed(rc)) /* it waited for room in pend[] */
			(void)tx_kick(rc, 0);
		goto out;
	}
	tx_space_opened(rc);
	if (rc->flags & RCONN_F_FREEING)
		goto out;
	if (rc->cdc_pend_tx_wr == 0)
		tx_door_open(rc);
	/* the last one in flight pushes what autocork held back */
	if (rc->cdc_pend_tx_wr == 0 && tx_unsent(rc) > 0)
		owe = RCONN_OWE_PUSH | RCONN_OWE_LAST;
	if (tx_kick(rc, owe) == -ENOLINK)
		tx_link_failed(rc);
out:
	tx_conn_put(rc);
}

/*
 * Move rc to newlink after its link failed (smc_switch_conns): CDCs in
 * flight on the old link no longer count; everything not confirmed by a
 * completion is sent again from tx_curs_fin, except bytes the peer's
 * consumer cursor shows it already consumed; a validation CDC goes
 * first, then one CDC even if there is no data, so the peer also learns
 * our consumer cursor.  lkey is the send ring's on newlink's device,
 * peer_rkey the peer's RMB element's there (both as before when newlink
 * is on the same devices).  0, -EINVAL, or -ENOLINK if newlink is down
 * too.
 */
int
tx_failover(struct rconn *rc, struct wr_link *newlink, uint32_t lkey,
	    uint32_t peer_rkey)
{
	int err;

	if (newlink == NULL || newlink == rc->link)
		return -EINVAL;
	if (wr_link_is_down(newlink))
		return -ENOLINK;
	tx_conn_hold(rc);
	if (rc->waiter.queued)
		wr_tx_wait_cancel(rc->link, &rc->waiter);
	rc->cdc_pend_old += rc->cdc_pend_tx_wr;
	rc->cdc_pend_tx_wr = 0;
	rc->pend_len = 0;
	rc->pend_head = 0;
	rc->tx_curs_sent = rc->tx_curs_fin;
	rc->local_tx_ctrl.prod = rc->tx_prod_fin;
	tx_peer_consumed(rc);
	rc->link = newlink;
	rc->lkey = lkey;
	rc->peer_rmb.rkey = peer_rkey;
	rc->flags &= ~RCONN_F_LINK_FAILED;
	RCONN_STAT(rc, failovers, 1);
	tx_door_open(rc);
	err = 0;
	if (!(rc->flags & (RCONN_F_ABORT_SENT | RCONN_F_PEER_ABORT)))
		err = tx_kick(rc, RCONN_OWE_VALIDATE | RCONN_OWE_CDC |
					  RCONN_OWE_PUSH);
	tx_conn_put(rc);
	return err;
}

/*
 * The link group under rc ended and the connection is to resume on a new
 * one (tx_resume): it lets go of its link before that goes.  CDCs in
 * flight on it only count down from now; nothing is posted until
 * tx_resume, while the owner may still fill the ring and drain the RMB.
 */
void
tx_detach(struct rconn *rc)
{
	if (rc->link == NULL)
		return;
	if (rc->waiter.queued || rc->waiter.woken)
		wr_tx_wait_cancel(rc->link, &rc->waiter);
	tx_want_done(rc); /* they count down, and rc may be freed after */
	rc->cdc_pend_old += rc->cdc_pend_tx_wr;
	rc->cdc_pend_tx_wr = 0;
	rc->pend_len = 0;
	rc->pend_head = 0;
	rc->link = NULL;
	rc->flags |= RCONN_F_LINK_FAILED;
	tx_door_open(rc); /* resuming: the ring still fills */
}

/* The send ring (its memory registered on each link the owner moves to). */
struct buf *
tx_sndbuf(const struct rconn *rc)
{
	return rc->sndbuf;
}

/* The link rc sends on; NULL once detached. */
struct wr_link *
tx_link(const struct rconn *rc)
{
	return rc->link;
}

/* Bytes the peer's window takes now. */
size_t
tx_peer_window(const struct rconn *rc)
{
	return rc->peer_rmbe_space;
}

/* Bytes the peer said it consumed, since the open. */
uint64_t
tx_peer_cons_off(const struct rconn *rc)
{
	return rc->peer_cons_off;
}

/* The furthest byte ever RDMA-written, since the open. */
uint64_t
tx_sent_hi_off(const struct rconn *rc)
{
	return rc->tx_sent_hi_off;
}

/* Bytes of ours confirmed by a completed CDC: in the peer's RMB. */
uint64_t
tx_fin_off(const struct rconn *rc)
{
	return rc->tx_prep_off - cdc_curs_diff(rc->sndbuf->size,
					       &rc->tx_curs_fin,
					       &rc->tx_curs_prep);
}

/*
 * The peer's half of a resume (docs/protocol.md, "Resuming a
 * connection"): peer_rx bytes of ours it received, peer_fin bytes of its
 * known to be in our RMB (its CDC for them completed, so its WRITEs did).
 * Each direction resumes at the larger of the receiver's count and the
 * sender's: *rx is where ours does (what we take as received), *fin
 * where we send from.  -EPROTO with *why when the peer claims to have
 * received more than we ever wrote or less than it said it consumed, or
 * to have written past the window we gave it.
 */
int
tx_resume_check(const struct rconn *rc, uint64_t peer_rx, uint64_t peer_fin,
		uint64_t *rx, uint64_t *fin, const char **why)
{
	uint64_t cons = rc->rx_off - rx_readable(rc), ours = tx_fin_off(rc);

	*why = NULL;
	if (peer_rx > rc->tx_sent_hi_off)
		*why = "peer received more than was sent";
	else if (peer_rx < rc->peer_cons_off)
		*why = "peer received less than it consumed";
	else if (peer_fin > cons + rc->rmb->size)
		*why = "peer wrote past the window";
	if (*why != NULL)
		return -EPROTO;
	*rx = peer_fin > rc->rx_off ? peer_fin : rc->rx_off;
	*fin = peer_rx > ours ? peer_rx : ours;
	if (*fin > rc->tx_prep_off) {
		*why = "peer received more than was produced";
		return -EPROTO;
	}
	return 0;
}

/*
 * The cursors of a resume that tx_resume_check() allowed: ours resume at
 * fin (the ring is free before it, the rest goes again to the same place
 * of the peer's RMB element), theirs at rx (received up to there).
 */
static void
tx_resume_cursors(struct rconn *rc, uint64_t rx, uint64_t fin)
{
	size_t psize = rc->peer_rmb.size;
	uint64_t skip = fin - tx_fin_off(rc);

	cdc_curs_add(&rc->tx_curs_fin, (size_t)skip, rc->sndbuf->size);
	rc->tx_curs_sent = rc->tx_curs_fin;
	cdc_curs_add(&rc->tx_prod_fin, (size_t)skip, psize);
	rc->local_tx_ctrl.prod = rc->tx_prod_fin;
	if (cdc_curs_comp(psize, &rc->tx_prod_hi, &rc->tx_prod_fin) > 0)
		rc->tx_prod_hi = rc->tx_prod_fin;
	cdc_curs_add(&rc->local_rx_ctrl.prod, (size_t)(rx - rc->rx_off),
		     rc->rmb->size);
	rc->rx_off = rx;
	tx_peer_consumed(rc);
}

/*
 * Move rc, detached (tx_detach), onto newlink of a new link group, whose
 * peer said peer_rx and peer_fin (tx_resume_check): bytes the peer shows
 * it has are taken as sent (their ring space comes back), everything
 * after is written again to the same place of the same RMB element;
 * bytes it shows to be in our RMB count as received.  Then one CDC goes
 * even without data, so the peer learns our consumer cursor.  0,
 * -EPROTO (*why), -EINVAL, or -ENOLINK if newlink is down too.
 */
int
tx_resume(struct rconn *rc, struct wr_link *newlink, uint32_t lkey,
	  uint32_t peer_rkey, uint64_t peer_rx, uint64_t peer_fin,
	  const char **why)
{
	uint64_t rx, fin;
	int err;

	*why = NULL;
	if (newlink == NULL || rc->link != NULL)
		return -EINVAL;
	err = tx_resume_check(rc, peer_rx, peer_fin, &rx, &fin, why);
	if (err)
		return err;
	if (wr_link_is_down(newlink))
		return -ENOLINK;
	tx_conn_hold(rc);
	tx_resume_cursors(rc, rx, fin);
	rc->link = newlink;
	rc->lkey = lkey;
	rc->peer_rmb.rkey = peer_rkey;
	rc->flags &= ~RCONN_F_LINK_FAILED;
	RCONN_STAT(rc, resumes, 1);
	err = 0;
	if (!(rc->flags & (RCONN_F_ABORT_SENT | RCONN_F_PEER_ABORT)))
		err = tx_kick(rc,
			      RCONN_OWE_CDC | RCONN_OWE_CONS | RCONN_OWE_PUSH);
	tx_space_opened(rc);
	tx_conn_put(rc);
	return err;
}

/*
 * rc, detached, resumes over a TCP connection instead (the peer's counts
 * checked as for tx_resume): from now on the owner writes the ring's
 * unsent bytes to that socket (tx_tcp_spans, tx_tcp_sent) and reads the
 * socket into the RMB element (rx_tcp_space, rx_tcp_received); TCP's own
 * window replaces the RMB's.  0 or -EPROTO (*why).
 */
int
tx_resume_tcp(struct rconn *rc, uint64_t peer_rx, uint64_t peer_fin,
	      const char **why)
{
	uint64_t rx, fin;
	int err;

	if (rc->link != NULL)
		return -EINVAL;
	err = tx_resume_check(rc, peer_rx, peer_fin, &rx, &fin, why);
	if (err)
		return err;
	tx_resume_cursors(rc, rx, fin);
	rc->peer_rmbe_space = rc->peer_rmb.size; /* not used over TCP */
	RCONN_STAT(rc, resumes, 1);
	return 0;
}

/* Over TCP: the ring's unsent bytes, at most two spans; how many. */
int
tx_tcp_spans(const struct rconn *rc, struct iovec iov[2])
{
	size_t n = tx_unsent(rc);

	if (n == 0)
		return 0;
	return cdc_ring_spans(rc->sndbuf->addr, rc->sndbuf->size,
			      rc->tx_curs_sent.count, n, iov);
}

/* Over TCP: n bytes of tx_tcp_spans() went into the socket. */
void
tx_tcp_sent(struct rconn *rc, size_t n)
{
	uint64_t from = tx_sent_off(rc), again = 0;

	if (n > tx_unsent(rc))
		n = tx_unsent(rc);
	if (rc->tx_sent_hi_off > from)
		again = rc->tx_sent_hi_off - from < n ?
				rc->tx_sent_hi_off - from :
				n;
	cdc_curs_add(&rc->tx_curs_sent, n, rc->sndbuf->size);
	rc->tx_curs_fin = rc->tx_curs_sent;
	cdc_curs_add(&rc->local_tx_ctrl.prod, n, rc->peer_rmb.size);
	rc->tx_prod_fin = rc->local_tx_ctrl.prod;
	rc->tx_prod_hi = rc->tx_prod_fin;
	tx_sent_hi_note(rc);
	RCONN_STAT(rc, tx_bytes, n - again);
	RCONN_STAT(rc, resent_bytes, again);
	tx_space_opened(rc);
}
