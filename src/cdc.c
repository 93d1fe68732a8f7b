// SPDX-License-Identifier: BSD-2-Clause
/*
 * CDC codec and cursor arithmetic (cdc_wire.h).  Pure functions: the data
 * path builds its CDC messages here and runs every received one through
 * cdc_msg_decode(), then cdc_curs_check() against the RMB element size
 * and the last cursor it accepted, before a single byte of the peer's
 * data or window is believed.  Cursor semantics follow Linux smc_curs_*,
 * except that comparisons respect the 0xffff -> 0 wrap of the wrap
 * counter.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "cdc_wire.h"
#include "smcproxyd.h"
#include "rconn.h"
#include "wire.h"

static bool
cdc_info_ok(const struct cdc_info *m)
{
	return m->token != 0 && !(m->prod_flags & CDC_PF_RESERVED) &&
	       !(m->conn_state_flags & CDC_CS_RESERVED) &&
	       m->data_len <= CDC_DATA_MAX &&
	       (m->data_len == 0 ||
		!(m->prod_flags & CDC_PF_FAILOVER_VALIDATION));
}

static void
cdc_curs_put(struct cdc_curs_wire *w, const struct cdc_cursor *c)
{
	w->reserved = 0;
	w->wrap = htobe16(c->wrap);
	w->count = htobe32(c->count);
}

static void
cdc_curs_get(const struct cdc_curs_wire *w, struct cdc_cursor *c)
{
	c->wrap = be16toh(w->wrap);
	c->count = be32toh(w->count);
}

/*
 * Build the CDC message *in into buf (size bytes): its header, whose
 * data_len bytes the caller puts behind it.  CDC_MSG_LEN, -ENOSPC, or
 * -EINVAL if the decoder would refuse it (token 0, reserved flags, more
 * than CDC_DATA_MAX bytes, data on a failover validation).
 */
int
cdc_msg_encode(void *buf, size_t size, const struct cdc_info *in)
{
	struct cdc_msg *w = buf;

	if (size < sizeof(*w))
		return -ENOSPC;
	if (!cdc_info_ok(in))
		return -EINVAL;
	memset(w, 0, sizeof(*w));
	w->type = CDC_MSG_TYPE;
	w->len = CDC_MSG_LEN;
	w->seqno = htobe16(in->seqno);
	w->token = htobe32(in->token);
	cdc_curs_put(&w->prod, &in->prod);
	cdc_curs_put(&w->cons, &in->cons);
	w->prod_flags = in->prod_flags;
	w->conn_state_flags = in->conn_state_flags;
	w->data_len = htobe16(in->data_len);
	return CDC_MSG_LEN;
}

/*
 * Decode one received CDC message of len bytes: exactly CDC_MSG_LEN plus
 * the data_len it says it carries (at most CDC_DATA_MAX, none on a
 * failover validation), type 0xfe, length 44, a non-zero token, reserved
 * bytes and bits zero.
 * The cursors are only parsed: cdc_curs_check() them against the RMB.
 * 0 or -EPROTO; *out untouched then.
 */
int
cdc_msg_decode(const void *buf, size_t len, struct cdc_info *out)
{
	const struct cdc_msg *w = buf;
	struct cdc_info m;

	if (len < sizeof(*w) || len != sizeof(*w) + be16toh(w->data_len) ||
	    w->type != CDC_MSG_TYPE || w->len != CDC_MSG_LEN ||
	    w->prod.reserved != 0 || w->cons.reserved != 0 ||
	    !wire_all_zero(w->reserved, sizeof(w->reserved)))
		return -EPROTO;
	m.seqno = be16toh(w->seqno);
	m.token = be32toh(w->token);
	cdc_curs_get(&w->prod, &m.prod);
	cdc_curs_get(&w->cons, &m.cons);
	m.prod_flags = w->prod_flags;
	m.conn_state_flags = w->conn_state_flags;
	m.data_len = be16toh(w->data_len);
	if (!cdc_info_ok(&m))
		return -EPROTO;
	*out = m;
	return 0;
}

/*
 * A CDC received on a link group that allows data_max bytes in one (0
 * unless it negotiated CLC_FEAT_CDC_DATA): decoded into *m, the bytes it
 * carries at (const uint8_t *)msg + CDC_MSG_LEN.  0 or -EPROTO with *why.
 */
int
cdc_msg_check(const void *msg, size_t len, size_t data_max, struct cdc_info *m,
	      const char **why)
{
	if (cdc_msg_decode(msg, len, m)) {
		*why = "malformed CDC message";
		return -EPROTO;
	}
	if (m->data_len > data_max) {
		*why = "CDC carries data the group did not negotiate";
		return -EPROTO;
	}
	return 0;
}

/*
 * Advance *c by n bytes in a ring of size bytes (c->count < size), bumping
 * the wrap counter (mod 2^16) for every turn.  No-op for size 0.
 */
void
cdc_curs_add(struct cdc_cursor *c, size_t n, size_t size)
{
	uint64_t rem, cnt = c->count, wraps;

	if (size == 0)
		return;
	wraps = n / size;
	rem = n % size;
	if (cnt >= size - rem) {
		cnt -= size - rem;
		wraps++;
	} else {
		cnt += rem;
	}
	c->count = (uint32_t)cnt;
	c->wrap = (uint16_t)(c->wrap + wraps);
}

/*
 * Bytes from old to new in a ring of size bytes, for old <= new at most
 * one turn apart (smc_curs_diff): 0 when new is behind old in the same
 * turn.  Use cdc_curs_check() first for cursors from the wire.
 */
size_t
cdc_curs_diff(size_t size, const struct cdc_cursor *old,
	      const struct cdc_cursor *new)
{
	if (old->wrap != new->wrap)
		return size - old->count + new->count;
	return new->count > old->count ? new->count - old->count : 0;
}

/*
 * Signed distance from old to new: > 0 when new is ahead, < 0 behind, 0
 * equal.  Wrap counters compare modulo 2^16, so 0 is one turn after
 * 0xffff.  Exact for size <= 2^32 and counts < size.
 */
int64_t
cdc_curs_comp(size_t size, const struct cdc_cursor *old,
	      const struct cdc_cursor *new)
{
	int64_t turns = (int16_t)(uint16_t)(new->wrap - old->wrap);

	/* unsigned arithmetic: garbage, never UB, outside the contract */
	return (int64_t)((uint64_t)turns * (uint64_t)size +
			 (uint64_t) new->count - (uint64_t)old->count);
}

/*
 * Check a cursor new received from the peer against the last one, old,
 * for an RMB element of rmb_size bytes: -EINVAL for a size of 0 or over
 * 2^32, -ERANGE if either count is outside the element, -EPROTO if new is
 * behind old or more than rmb_size ahead (the peer would have written
 * past the window).  0 when new is old or up to one full window ahead.
 */
int
cdc_curs_check(size_t rmb_size, const struct cdc_cursor *old,
	       const struct cdc_cursor *new)
{
	int64_t d;

	if (rmb_size == 0 || (uint64_t)rmb_size > (uint64_t)1 << 32)
		return -EINVAL;
	if (new->count >= rmb_size || old->count >= rmb_size)
		return -ERANGE;
	d = cdc_curs_comp(rmb_size, old, new);
	if (d < 0 || (uint64_t)d > rmb_size)
		return -EPROTO;
	return 0;
}

/* Whether sequence number a is newer than b, modulo 2^16. */
bool
cdc_seq_newer(uint16_t a, uint16_t b)
{
	return (int16_t)(uint16_t)(a - b) > 0;
}

/*
 * The data path's side of the CDC (tx.c and rx.c): building a
 * connection's outgoing messages and checking an incoming one against
 * the connection's state.  Still pure functions of the rconn: nothing
 * here touches a link or a buffer.
 */

/*
 * Encode rc's CDC into buf (size bytes): seqno, the peer's token, the
 * producer cursor prod, our consumer cursor, the flags given, and that
 * data_len bytes follow (the caller puts them behind).  CDC_MSG_LEN or
 * -errno as cdc_msg_encode().
 */
int
cdc_conn_build(const struct rconn *rc, uint16_t seqno,
	       const struct cdc_cursor *prod, uint8_t prod_flags,
	       uint8_t conn_state_flags, uint16_t data_len, void *buf,
	       size_t size)
{
	struct cdc_info m = {
		.seqno = seqno,
		.token = rc->peer_token,
		.prod = *prod,
		.cons = rc->local_tx_ctrl.cons,
		.prod_flags = prod_flags,
		.conn_state_flags = conn_state_flags,
		.data_len = data_len,
	};

	return cdc_msg_encode(buf, size, &m);
}

/*
 * Check the cursors of m, a decoded CDC for rc that is not stale, before
 * any of it is believed.  Its producer cursor (in our RMB element) must
 * lie inside the element, not move backwards, not move after the peer
 * said it was done writing, and not run more than the element's size
 * ahead of the consumer cursor we last sent (the window it was given);
 * the data it carries must be of the bytes it announces now.
 * Its consumer cursor (in the peer's RMB element, where we write) must
 * lie inside that element, not move backwards, and not pass the furthest
 * producer cursor we ever sent.  0, or -EPROTO with *why set.
 */
int
cdc_conn_check(const struct rconn *rc, const struct cdc_info *m,
	       const char **why)
{
	const struct cdc_info *last = &rc->local_rx_ctrl;
	size_t rsize = rc->rmb->size, psize = rc->peer_rmb.size;
	int err;

	err = cdc_curs_check(rsize, &last->prod, &m->prod);
	if (err) {
		*why = err == -ERANGE ? "producer cursor outside the RMB" :
					"producer cursor moved backwards";
		return -EPROTO;
	}
	if (cdc_curs_comp(rsize, &rc->rx_curs_confirmed, &m->prod) >
	    (int64_t)rsize) {
		*why = "producer cursor past the window";
		return -EPROTO;
	}
	if (m->data_len > 0 && cdc_curs_comp(rsize, &last->prod, &m->prod) <
				       (int64_t)m->data_len) {
		*why = "CDC data beyond the bytes it announces";
		return -EPROTO;
	}
	if ((rc->flags & (RCONN_F_PEER_DONE | RCONN_F_PEER_CLOSED)) &&
	    cdc_curs_comp(rsize, &last->prod, &m->prod) != 0) {
		*why = "data after peer_done_writing";
		return -EPROTO;
	}
	err = cdc_curs_check(psize, &last->cons, &m->cons);
	if (err) {
		*why = err == -ERANGE ? "consumer cursor outside the peer RMB" :
					"consumer cursor moved backwards";
		return -EPROTO;
	}
	if (cdc_curs_comp(psize, &m->cons, &rc->tx_prod_hi) < 0) {
		*why = "consumer cursor past the data sent";
		return -EPROTO;
	}
	return 0;
}

/*
 * The spans of n bytes from offset start in a ring of size bytes at base:
 * one, or two when they wrap.  Returns how many iov entries it filled.
 */
int
cdc_ring_spans(void *base, size_t size, size_t start, size_t n,
	       struct iovec iov[2])
{
	size_t first = n < size - start ? n : size - start;

	if (n == 0)
		return 0;
	iov[0].iov_base = (char *)base + start;
	iov[0].iov_len = first;
	if (n == first)
		return 1;
	iov[1].iov_base = base;
	iov[1].iov_len = n - first;
	return 2;
}
