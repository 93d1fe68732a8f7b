// SPDX-License-Identifier: BSD-2-Clause
/*
 * buf.c on the loopback device model: sizes, reuse from the free lists,
 * the byte limit (-ENOBUFS without disturbing buffers in use, idle ones
 * released to make room), what a peer may write: an RMB element
 * through its own rkey, within its bounds and from a QP of the PD it is
 * registered in, never a send ring, never an idle element, how long an
 * aborted connection's RMB element cools, and how much of an element is
 * zeroed before it is handed out again.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <event2/event.h>

#include "smcproxyd.h"

static const struct dev_path smc_path = DEV_PATH_SMC;

#define K16 16384u

START_TEST(sizes_are_powers_of_two_from_16k)
{
	struct event_base *base = event_base_new();
	struct dev *dev = loopdev_new(base);
	struct buf_pool *p = buf_pool_new(&loopdev_ops, dev, 0);
	struct buf *b;

	ck_assert(buf_size_ok(K16));
	ck_assert(buf_size_ok(BUF_SIZE_MAX));
	ck_assert(!buf_size_ok(0));
	ck_assert(!buf_size_ok(8192));
	ck_assert(!buf_size_ok(3 * K16));
	ck_assert(!buf_size_ok((size_t)BUF_SIZE_MAX * 2));
	ck_assert_int_eq(buf_get(p, BUF_RMB, 8192, &b), -EINVAL);
	ck_assert_int_eq(buf_get(p, BUF_RMB, 3 * K16, &b), -EINVAL);
	ck_assert_int_eq(buf_get(p, BUF_RMB, K16, &b), 0);
	ck_assert_uint_eq(b->size, K16);
	ck_assert_ptr_nonnull(b->addr);
	ck_assert_uint_eq(buf_pool_stats(p)->bytes_used[BUF_RMB], K16);
	buf_put(b);
	ck_assert_uint_eq(buf_pool_stats(p)->bytes_used[BUF_RMB], 0);
	buf_pool_free(p);
	loopdev_free(dev);
	event_base_free(base);
}
END_TEST

START_TEST(reuse_from_free_list)
{
	struct event_base *base = event_base_new();
	struct dev *dev = loopdev_new(base);
	struct buf_pool *p = buf_pool_new(&loopdev_ops, dev, 0);
	struct buf *a, *b, *c;
	uint32_t rkey;

	ck_assert_int_eq(buf_get(p, BUF_RMB, K16, &a), 0);
	ck_assert_int_eq(buf_get(p, BUF_RMB, K16, &b), 0);
	/* one MR per element: an rkey covers one connection's RMB */
	ck_assert_uint_ne(a->mr[0].rkey, b->mr[0].rkey);
	memset(a->addr, 0xab, a->size);
	rkey = a->mr[0].rkey;
	buf_put(a);
	/* same class, same kind: handed out again, zeroed, with new keys */
	ck_assert_int_eq(buf_get(p, BUF_RMB, K16, &c), 0);
	ck_assert_ptr_eq(c, a);
	ck_assert_uint_ne(c->mr[0].rkey, rkey);
	ck_assert_uint_eq(((uint8_t *)c->addr)[100], 0);
	ck_assert_uint_eq(buf_pool_stats(p)->reuse_cnt, 1);
	ck_assert_uint_eq(buf_pool_stats(p)->alloc_cnt, 2);
	buf_put(c);
	/* another kind or class is not served from it */
	ck_assert_int_eq(buf_get(p, BUF_SNDBUF, K16, &c), 0);
	ck_assert_ptr_ne(c, a);
	buf_put(c);
	buf_put(b);
	ck_assert_uint_eq(buf_pool_stats(p)->bytes, 3 * K16);
	buf_pool_free(p);
	loopdev_free(dev);
	event_base_free(base);
}
END_TEST

START_TEST(limit_refuses_without_disturbing)
{
	struct event_base *base = event_base_new();
	struct dev *dev = loopdev_new(base);
	struct buf_pool *p = buf_pool_new(&loopdev_ops, dev, 4 * K16);
	struct buf *b[5];
	size_t i, j;

	for (i = 0; i < 4; i++) {
		ck_assert_int_eq(
			buf_get(p, i % 2 ? BUF_RMB : BUF_SNDBUF, K16, &b[i]),
			0);
		memset(b[i]->addr, (int)(i + 1), K16);
	}
	ck_assert_int_eq(buf_get(p, BUF_RMB, K16, &b[4]), -ENOBUFS);
	ck_assert_int_eq(buf_get(p, BUF_RMB, 2 * K16, &b[4]), -ENOBUFS);
	ck_assert_uint_eq(buf_pool_stats(p)->nobufs_cnt, 2);
	for (i = 0; i < 4; i++)
		for (j = 0; j < K16; j += 997)
			ck_assert_uint_eq(((uint8_t *)b[i]->addr)[j], i + 1);
	buf_put(b[1]);
	ck_assert_int_eq(buf_get(p, BUF_RMB, K16, &b[4]), 0);
	ck_assert_ptr_eq(b[4], b[1]);
	/* an idle element of another class makes room for a new one */
	buf_put(b[0]);
	buf_put(b[2]);
	ck_assert_int_eq(buf_get(p, BUF_RMB, 2 * K16, &b[0]), 0);
	ck_assert_uint_eq(buf_pool_stats(p)->evicted, 2);
	ck_assert_uint_le(buf_pool_stats(p)->bytes, 4 * K16);
	ck_assert_uint_eq(((uint8_t *)b[3]->addr)[5], 4);
	buf_put(b[0]);
	buf_put(b[3]);
	buf_put(b[4]);
	buf_pool_free(p);
	loopdev_free(dev);
	event_base_free(base);
}
END_TEST

/* The owner's gauges follow registrations and what is handed out. */
START_TEST(gauges_follow_the_pool)
{
	struct event_base *base = event_base_new();
	struct dev *dev = loopdev_new(base);
	struct buf_pool *p = buf_pool_new(&loopdev_ops, dev, 4 * K16);
	struct stats st;
	struct buf *a, *b;

	memset(&st, 0, sizeof(st));
	ck_assert_int_eq(buf_get(p, BUF_RMB, K16, &a), 0);
	buf_pool_set_stats(p, &st);
	ck_assert_uint_eq(stats_read(&st, STAT_rdma_buf_bytes), K16);
	ck_assert_uint_eq(stats_read(&st, STAT_rdma_buf_bytes_used), K16);
	ck_assert_int_eq(buf_get(p, BUF_SNDBUF, 2 * K16, &b), 0);
	ck_assert_uint_eq(stats_read(&st, STAT_rdma_buf_bytes), 3 * K16);
	ck_assert_uint_eq(stats_read(&st, STAT_rdma_buf_bytes_used), 3 * K16);
	buf_put(b);
	ck_assert_uint_eq(stats_read(&st, STAT_rdma_buf_bytes), 3 * K16);
	ck_assert_uint_eq(stats_read(&st, STAT_rdma_buf_bytes_used), K16);
	/* registered in a second PD, of another device: counted once */
	struct dev *dev2 = loopdev_new(base);
	ck_assert_ptr_nonnull(buf_mr(a, &loopdev_ops, dev2));
	ck_assert_uint_eq(stats_read(&st, STAT_rdma_buf_bytes), 3 * K16);
	/* an idle element evicted to make room is no longer counted */
	ck_assert_int_eq(buf_get(p, BUF_RMB, 2 * K16, &b), 0);
	ck_assert_uint_eq(stats_read(&st, STAT_rdma_buf_bytes), 3 * K16);
	buf_put(a);
	buf_put(b);
	ck_assert_uint_eq(stats_read(&st, STAT_rdma_buf_bytes_used), 0);
	buf_pool_free(p);
	ck_assert_uint_eq(stats_read(&st, STAT_rdma_buf_bytes), 0);
	loopdev_free(dev2);
	loopdev_free(dev);
	event_base_free(base);
}
END_TEST

/*
 * Memory registered elsewhere (a link's rings) reserved in the pool:
 * under the same limit as the elements, idle ones released to make room,
 * elements in use never; refused when it does not fit; given back.
 */
START_TEST(reserve_shares_the_limit)
{
	struct buf_pool *p = buf_pool_new(NULL, NULL, 4 * K16);
	struct stats st;
	struct buf *a, *b;

	memset(&st, 0, sizeof(st));
	buf_pool_set_stats(p, &st);
	ck_assert_int_eq(buf_pool_reserve(p, K16 + 100), 0);
	ck_assert_uint_eq(stats_read(&st, STAT_rdma_ring_bytes), K16 + 100);
	ck_assert_uint_eq(stats_read(&st, STAT_rdma_buf_bytes), 0);
	ck_assert_uint_eq(buf_pool_stats(p)->bytes, K16 + 100);
	/* two elements fit beside it, a third does not */
	ck_assert_int_eq(buf_get(p, BUF_RMB, K16, &a), 0);
	ck_assert_int_eq(buf_get(p, BUF_SNDBUF, K16, &b), 0);
	ck_assert_int_eq(buf_get(p, BUF_RMB, K16, &a), -ENOBUFS);
	/* nor does more of the reservation while both are in use */
	ck_assert_int_eq(buf_pool_reserve(p, K16), -ENOBUFS);
	ck_assert_uint_eq(stats_read(&st, STAT_rdma_ring_bytes), K16 + 100);
	/* an idle element is released for it */
	buf_put(b);
	ck_assert_int_eq(buf_pool_reserve(p, K16), 0);
	ck_assert_uint_eq(buf_pool_stats(p)->evicted, 1);
	ck_assert_uint_eq(stats_read(&st, STAT_rdma_buf_bytes), K16);
	ck_assert_uint_eq(stats_read(&st, STAT_rdma_ring_bytes), 2 * K16 + 100);
	/* given back, it is room for elements again */
	buf_pool_unreserve(p, 2 * K16 + 100);
	ck_assert_uint_eq(stats_read(&st, STAT_rdma_ring_bytes), 0);
	ck_assert_int_eq(buf_get(p, BUF_SNDBUF, 2 * K16, &b), 0);
	ck_assert_uint_eq(buf_pool_stats(p)->bytes, 3 * K16);
	buf_put(a);
	buf_put(b);
	buf_pool_free(p);
}
END_TEST

START_TEST(pool_freed_with_buffers_out)
{
	struct event_base *base = event_base_new();
	struct dev *dev = loopdev_new(base);
	struct buf_pool *p = buf_pool_new(&loopdev_ops, dev, 0);
	struct buf *a, *b;

	ck_assert_int_eq(buf_get(p, BUF_RMB, K16, &a), 0);
	ck_assert_int_eq(buf_get(p, BUF_SNDBUF, K16, &b), 0);
	buf_put(b);
	buf_pool_free(p); /* a still in use: freed when it comes back */
	memset(a->addr, 1, a->size);
	buf_put(a);
	loopdev_free(dev);
	event_base_free(base);
}
END_TEST

/* What a peer can reach with the rkeys it learns. */
struct reach {
	struct event_base *base;
	struct dev *dev;
	struct dev *pd; /* the links' PD, or NULL: dev's own */
	struct wr_link *a, *b;
	int down;
};

static void
reach_down(struct wr_link *l, void *arg)
{
	((struct reach *)arg)->down++;
}

static void
reach_rx(struct wr_link *l, const void *msg, size_t len, void *arg)
{
}

/* A connected pair of links on r's device (a fresh pair per fault). */
static void
reach_links(struct reach *r)
{
	struct wr_params prm = {.max_send_wr = 4, .max_recv_wr = 4};
	struct wr_link_cb cb = {reach_down, r};
	struct dev_qp_addr aa, ba;

	struct dev *pd = r->pd != NULL ? r->pd : r->dev;

	r->down = 0;
	r->a = wr_link_new(&loopdev_ops, pd, r->base, &prm, &cb);
	r->b = wr_link_new(&loopdev_ops, pd, r->base, &prm, &cb);
	ck_assert_ptr_nonnull(r->a);
	ck_assert_ptr_nonnull(r->b);
	ck_assert_int_eq(loopdev_ops.qp_addr(wr_link_qp(r->a), &aa), 0);
	ck_assert_int_eq(loopdev_ops.qp_addr(wr_link_qp(r->b), &ba), 0);
	ck_assert_int_eq(wr_link_connect(r->a, &ba, &smc_path), 0);
	ck_assert_int_eq(wr_link_connect(r->b, &aa, &smc_path), 0);
	wr_rx_register(r->b, 0x42, reach_rx);
}

static void
reach_unlink(struct reach *r)
{
	wr_link_free(r->a);
	wr_link_free(r->b);
}

/* WRITE len bytes from src into dst + off with rkey; link still up? */
static bool
reach_write_key(struct reach *r, const struct dev_mr *src, struct buf *dst,
		uint32_t rkey, size_t off, size_t len)
{
	struct wr_tx_slot *slot;
	struct wr_write w;

	memset(&w, 0, sizeof(w));
	w.sge[0].addr = (uint64_t)(uintptr_t)src->addr;
	w.sge[0].length = (uint32_t)len;
	w.sge[0].lkey = src->lkey;
	w.nsge = 1;
	w.remote_addr = dst->iova + off;
	w.rkey = rkey;
	ck_assert_int_eq(wr_tx_get(r->a, &slot, NULL), 0);
	((uint8_t *)wr_tx_buf(slot))[0] = 0x42;
	ck_assert_int_eq(wr_tx_post(r->a, slot, &w, 1, NULL, NULL), 0);
	ck_assert_int_ge(loopdev_run(r->dev), 0);
	return r->down == 0;
}

/* WRITE len bytes from src into dst + off with dst's rkey in the pool's PD. */
static bool
reach_write(struct reach *r, struct buf *src, struct buf *dst, size_t off,
	    size_t len)
{
	return reach_write_key(r, &src->mr[0], dst, dst->mr[0].rkey, off, len);
}

START_TEST(peer_writes_only_its_rmb)
{
	struct buf *src, *rmb, *ring;
	struct buf_pool *p;
	struct reach r;

	memset(&r, 0, sizeof(r));
	r.base = event_base_new();
	r.dev = loopdev_new(r.base);
	p = buf_pool_new(&loopdev_ops, r.dev, 0);
	ck_assert_int_eq(buf_get(p, BUF_SNDBUF, K16, &src), 0);
	ck_assert_int_eq(buf_get(p, BUF_RMB, K16, &rmb), 0);
	ck_assert_int_eq(buf_get(p, BUF_SNDBUF, K16, &ring), 0);
	memset(src->addr, 0x5a, K16);
	reach_links(&r);
	/* peers learn the element's IOVA, never where our heap is */
	ck_assert_uint_ne(rmb->iova, (uintptr_t)rmb->addr);
	ck_assert_uint_eq(rmb->iova & 0x1fffff,
			  (uintptr_t)rmb->addr & 0x1fffff);
	ck_assert_uint_eq(rmb->mr[0].iova, rmb->iova);
	ck_assert_uint_eq(src->iova, (uintptr_t)src->addr);
	ck_assert(reach_write(&r, src, rmb, 0, K16));
	ck_assert_mem_eq(rmb->addr, src->addr, K16);
	/* one byte past the element: refused, the link goes down */
	ck_assert(!reach_write(&r, src, rmb, 1, K16));
	reach_unlink(&r);
	/* a send ring is not remotely writable at all */
	reach_links(&r);
	ck_assert(!reach_write(&r, src, ring, 0, 16));
	reach_unlink(&r);
	buf_put(src);
	buf_put(rmb);
	buf_put(ring);
	buf_pool_free(p);
	loopdev_free(r.dev);
	event_base_free(r.base);
}
END_TEST

/*
 * An RMB element gets new keys each time it is handed out, to the same
 * peer or another: the rkey a peer learned for an earlier connection no
 * longer reaches it (a WRITE still in flight for an aborted connection
 * cannot land in the next one's stream), and while it is idle no rkey
 * reaches it at all.
 */
START_TEST(rmb_gets_new_keys_each_time)
{
	struct buf *src, *rmb, *again;
	struct buf_pool *p;
	struct dev_mr old;
	struct reach r;

	memset(&r, 0, sizeof(r));
	r.base = event_base_new();
	r.dev = loopdev_new(r.base);
	p = buf_pool_new(&loopdev_ops, r.dev, 0);
	ck_assert_int_eq(buf_get(p, BUF_SNDBUF, K16, &src), 0);
	memset(src->addr, 0x5a, K16);
	ck_assert_int_eq(buf_get_for(p, BUF_RMB, K16, "x", &rmb), 0);
	old = rmb->mr[0];
	buf_put(rmb);
	/* idle: its old rkey is refused, nothing lands */
	reach_links(&r);
	ck_assert(!reach_write_key(&r, &src->mr[0], rmb, old.rkey, 0, 64));
	reach_unlink(&r);
	ck_assert_int_eq(buf_get_for(p, BUF_RMB, K16, "x", &again), 0);
	ck_assert_ptr_eq(again, rmb); /* the same memory ... */
	ck_assert_uint_ne(again->mr[0].rkey, old.rkey); /* ... new keys */
	ck_assert_uint_eq(buf_pool_stats(p)->deregs, 1);
	/* the old rkey: refused, nothing lands in the new user's RMB */
	reach_links(&r);
	ck_assert(!reach_write_key(&r, &src->mr[0], again, old.rkey, 0, 64));
	ck_assert_uint_eq(((uint8_t *)again->addr)[0], 0);
	reach_unlink(&r);
	/* the new one works */
	reach_links(&r);
	ck_assert(reach_write(&r, src, again, 0, 64));
	ck_assert_uint_eq(((uint8_t *)again->addr)[0], 0x5a);
	reach_unlink(&r);
	buf_put(again);
	ck_assert_int_eq(buf_get_for(p, BUF_RMB, K16, "y", &again), 0);
	ck_assert_ptr_eq(again, rmb);
	ck_assert_str_eq(again->owner, "y");
	buf_put(again);
	buf_put(src);
	buf_pool_free(p);
	loopdev_free(r.dev);
	event_base_free(r.base);
}
END_TEST

/*
 * Registered per protection domain (a link group's): an RMB element is
 * reachable only from QPs of the PDs it was registered in (buf_mr),
 * with the rkey of that PD; from a QP of another PD on the same device,
 * with any of its rkeys, not at all.  A send ring keeps its MR while
 * idle and uses it again in the same PD, and drops it for another.
 */
START_TEST(rmb_reachable_only_in_its_pd)
{
	struct buf *src, *rmb;
	const struct dev_mr *s_p, *r_p, *r_q, *again;
	struct dev *pd_p, *pd_q;
	struct buf_pool *p;
	struct reach r;

	memset(&r, 0, sizeof(r));
	r.base = event_base_new();
	r.dev = loopdev_new(r.base);
	pd_p = loopdev_ops.pd_open(r.dev);
	pd_q = loopdev_ops.pd_open(r.dev);
	ck_assert_ptr_nonnull(pd_p);
	ck_assert_ptr_nonnull(pd_q);
	p = buf_pool_new(NULL, NULL, 0);
	ck_assert_int_eq(buf_get(p, BUF_SNDBUF, K16, &src), 0);
	ck_assert_int_eq(buf_get(p, BUF_RMB, K16, &rmb), 0);
	memset(src->addr, 0x5a, K16);
	s_p = buf_mr(src, &loopdev_ops, pd_p);
	ck_assert_ptr_nonnull(s_p);
	/* only in q's PD: p's QPs cannot reach it */
	r_q = buf_mr(rmb, &loopdev_ops, pd_q);
	ck_assert_ptr_nonnull(r_q);
	r.pd = pd_p;
	reach_links(&r);
	ck_assert(!reach_write_key(&r, s_p, rmb, r_q->rkey, 0, 64));
	ck_assert_uint_eq(((uint8_t *)rmb->addr)[0], 0);
	reach_unlink(&r);
	/* registered in p's PD too: with that rkey it is */
	r_p = buf_mr(rmb, &loopdev_ops, pd_p);
	ck_assert_ptr_nonnull(r_p);
	ck_assert_ptr_eq(buf_mr(rmb, &loopdev_ops, pd_p), r_p);
	ck_assert_uint_ne(r_p->rkey, r_q->rkey);
	reach_links(&r);
	ck_assert(reach_write_key(&r, s_p, rmb, r_p->rkey, 0, 64));
	ck_assert_uint_eq(((uint8_t *)rmb->addr)[0], 0x5a);
	reach_unlink(&r);
	ck_assert_uint_eq(buf_pool_stats(p)->regs, 3);
	/* the send ring keeps its MR in p's PD while idle */
	buf_put(src);
	ck_assert_int_eq(buf_get(p, BUF_SNDBUF, K16, &src), 0);
	again = buf_mr(src, &loopdev_ops, pd_p);
	ck_assert_ptr_eq(again, s_p);
	ck_assert_uint_eq(buf_pool_stats(p)->regs, 3);
	/* ... and drops it when its next user needs another PD */
	buf_put(src);
	ck_assert_int_eq(buf_get(p, BUF_SNDBUF, K16, &src), 0);
	ck_assert_ptr_nonnull(buf_mr(src, &loopdev_ops, pd_q));
	ck_assert_uint_eq(buf_pool_stats(p)->deregs, 1);
	buf_put(src);
	buf_put(rmb);
	ck_assert_uint_eq(buf_pool_stats(p)->deregs, 3);
	buf_pool_free(p);
	loopdev_ops.pd_close(pd_p);
	loopdev_ops.pd_close(pd_q);
	loopdev_free(r.dev);
	event_base_free(r.base);
}
END_TEST

/*
 * An RMB element given back after our abort cools (buf_put_cooled),
 * still registered, until its time is up or no peer can reach it: every
 * PD it is registered in was closed (its link group went with its QPs).
 * One still open keeps it cooling; one with no MR at all is reused at
 * once.  Reuse deregisters it and zeroes it whole.
 */
START_TEST(rmb_cooling_ends_when_its_groups_go)
{
	struct event_base *base = event_base_new();
	struct dev *dev = loopdev_new(base);
	struct dev *pd_p = loopdev_ops.pd_open(dev);
	struct dev *pd_q = loopdev_ops.pd_open(dev);
	struct buf_pool *p = buf_pool_new(NULL, NULL, 0);
	struct buf *cooled, *b, *c, *d;
	const struct buf_stats *st = buf_pool_stats(p);
	uint64_t later = now_ms() + 600000;

	ck_assert_ptr_nonnull(pd_p);
	ck_assert_ptr_nonnull(pd_q);
	ck_assert(!loopdev_ops.pd_closed(pd_p));
	ck_assert(!loopdev_ops.pd_closed(dev)); /* a device's own: never */
	ck_assert_int_eq(buf_get_for(p, BUF_RMB, K16, "x", &cooled), 0);
	ck_assert_ptr_nonnull(buf_mr(cooled, &loopdev_ops, pd_p));
	ck_assert_ptr_nonnull(buf_mr(cooled, &loopdev_ops, pd_q));
	memset(cooled->addr, 0x77, K16);
	buf_put_cooled(cooled, later);
	ck_assert_int_eq(buf_get_for(p, BUF_RMB, K16, "x", &b), 0);
	ck_assert_ptr_ne(b, cooled);
	/* one of its groups went: the other's peer may still write */
	loopdev_ops.pd_close(pd_p);
	ck_assert(loopdev_ops.pd_closed(pd_p));
	ck_assert_int_eq(buf_get_for(p, BUF_RMB, K16, "x", &c), 0);
	ck_assert_ptr_ne(c, cooled);
	ck_assert_uint_eq(st->deregs, 0);
	/* both went: reused long before its time, with no MR, zeroed */
	loopdev_ops.pd_close(pd_q);
	ck_assert_int_eq(buf_get_for(p, BUF_RMB, K16, "x", &d), 0);
	ck_assert_ptr_eq(d, cooled);
	ck_assert_uint_eq(st->reuse_cnt, 1);
	ck_assert_uint_eq(st->deregs, 2);
	ck_assert_ptr_null(d->reg[0].pd);
	ck_assert_ptr_null(d->reg[1].pd);
	ck_assert_uint_eq(((uint8_t *)d->addr)[K16 - 1], 0);
	/* registered nowhere (its MRs dropped when it moved): at once */
	buf_put_cooled(d, later);
	ck_assert_int_eq(buf_get_for(p, BUF_RMB, K16, "x", &d), 0);
	ck_assert_ptr_eq(d, cooled);
	ck_assert_uint_eq(st->reuse_cnt, 2);
	buf_put(b);
	buf_put(c);
	buf_put(d);
	buf_pool_free(p);
	loopdev_free(dev);
	event_base_free(base);
}
END_TEST

/*
 * Reuse zeroes what the last user said it can have written (buf_written),
 * the whole element when it said nothing, and the whole RMB element when
 * it goes to another peer.
 */
START_TEST(reuse_zeroes_what_was_written)
{
	struct event_base *base = event_base_new();
	struct dev *dev = loopdev_new(base);
	struct buf_pool *p = buf_pool_new(&loopdev_ops, dev, 0);
	struct buf *a, *b;
	uint8_t *m;

	ck_assert_int_eq(buf_get(p, BUF_SNDBUF, K16, &a), 0);
	ck_assert_uint_eq(a->dirty, K16); /* until told otherwise */
	memset(a->addr, 0x11, 300);
	buf_written(a, 300);
	ck_assert_uint_eq(a->dirty, 300);
	buf_written(a, 5 * K16); /* capped at the size */
	ck_assert_uint_eq(a->dirty, K16);
	buf_written(a, 300);
	buf_put(a);
	ck_assert_int_eq(buf_get(p, BUF_SNDBUF, K16, &b), 0);
	ck_assert_ptr_eq(b, a);
	m = b->addr;
	ck_assert_uint_eq(m[0], 0);
	ck_assert_uint_eq(m[299], 0);
	/* nothing said: the whole element */
	memset(b->addr, 0x22, K16);
	buf_put(b);
	ck_assert_int_eq(buf_get(p, BUF_SNDBUF, K16, &b), 0);
	ck_assert_uint_eq(m[0], 0);
	ck_assert_uint_eq(m[K16 - 1], 0);
	buf_put(b);
	/* an RMB element for another peer: whole, whatever was said */
	ck_assert_int_eq(buf_get_for(p, BUF_RMB, K16, "x", &a), 0);
	memset(a->addr, 0x33, K16);
	buf_written(a, 0);
	buf_put(a);
	ck_assert_int_eq(buf_get_for(p, BUF_RMB, K16, "y", &b), 0);
	ck_assert_ptr_eq(b, a);
	m = b->addr;
	ck_assert_uint_eq(m[0], 0);
	ck_assert_uint_eq(m[K16 - 1], 0);
	buf_put(b);
	buf_pool_free(p);
	loopdev_free(dev);
	event_base_free(base);
}
END_TEST

static Suite *
buf_suite(void)
{
	Suite *s = suite_create("buf");
	TCase *tc = tcase_create("pool");

	tcase_add_test(tc, sizes_are_powers_of_two_from_16k);
	tcase_add_test(tc, reuse_from_free_list);
	tcase_add_test(tc, limit_refuses_without_disturbing);
	tcase_add_test(tc, gauges_follow_the_pool);
	tcase_add_test(tc, reserve_shares_the_limit);
	tcase_add_test(tc, pool_freed_with_buffers_out);
	tcase_add_test(tc, peer_writes_only_its_rmb);
	tcase_add_test(tc, rmb_gets_new_keys_each_time);
	tcase_add_test(tc, rmb_reachable_only_in_its_pd);
	tcase_add_test(tc, rmb_cooling_ends_when_its_groups_go);
	tcase_add_test(tc, reuse_zeroes_what_was_written);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(buf_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
