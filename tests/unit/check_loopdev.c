// SPDX-License-Identifier: BSD-2-Clause
/*
 * The in-process device model: every RC semantic the engine's tests rely
 * on (loopdev.c lists them) and its fault injection, through the same
 * dev_ops calls the engine makes on a real device.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <event2/event.h>

#include "dev.h"

static const struct dev_path smc_path = DEV_PATH_SMC;

#define BUF 4096

/* One end: a QP, its buffers and what its callbacks saw. */
struct side {
	struct dev *dev;
	struct dev_qp *qp;
	struct dev_qp_caps caps;
	unsigned char src[BUF]; /* local, source of WRITEs and SENDs */
	unsigned char rmb[BUF]; /* remote-writable */
	unsigned char rx[BUF];	/* receive buffers */
	struct dev_mr src_mr, rmb_mr, rx_mr;
	int notified;
	int events[DEV_EV_DEVICE_REMOVED + 1];
	bool poll_in_cb; /* poll, arm, poll again like the engine */
	struct dev_wc wc[64];
	int nwc;
	bool destroy_in_cb;
	unsigned char rmb_at_recv[16]; /* rmb[0..16) when a receive completed */
};

static struct event_base *base;
static struct dev *dev;
static struct side *a, *b;

static void
collect(struct side *s)
{
	int n;

	while ((n = loopdev_ops.poll(s->qp, s->wc + s->nwc,
				     (int)(64 - s->nwc))) > 0)
		s->nwc += n;
	ck_assert_int_ge(n, 0);
}

static void
on_completion(struct dev_qp *qp, void *arg)
{
	struct side *s = arg;
	int i, from = s->nwc;

	ck_assert_ptr_eq(qp, s->qp);
	s->notified++;
	if (s->destroy_in_cb) {
		loopdev_ops.qp_destroy(qp);
		s->qp = NULL;
		return;
	}
	if (!s->poll_in_cb)
		return;
	collect(s);
	ck_assert_int_ge(loopdev_ops.arm(qp, true), 0);
	collect(s);
	for (i = from; i < s->nwc; i++)
		if (s->wc[i].opcode == DEV_WC_RECV)
			memcpy(s->rmb_at_recv, s->rmb, sizeof(s->rmb_at_recv));
}

static void
on_event(struct dev_qp *qp, enum dev_event ev, void *arg)
{
	struct side *s = arg;

	ck_assert_ptr_eq(qp, s->qp);
	s->events[ev]++;
}

static struct dev_qp_caps
caps(uint32_t send, uint32_t recv, uint32_t inl)
{
	struct dev_qp_caps c = {send, recv, 2, 2, inl};

	return c;
}

static struct side *
side_new(struct dev *d, struct dev_qp_caps want, int rmb_access)
{
	struct side *s = calloc(1, sizeof(*s));
	struct dev_qp_cb cb = {on_completion, on_event, NULL};

	ck_assert_ptr_nonnull(s);
	cb.arg = s;
	s->dev = d;
	s->qp = loopdev_ops.qp_create(d, base, &want, &s->caps, &cb);
	ck_assert_ptr_nonnull(s->qp);
	ck_assert_int_eq(loopdev_ops.mr_reg(d, s->src, BUF, 0,
					    DEV_ACCESS_LOCAL_WRITE, &s->src_mr),
			 0);
	ck_assert_int_eq(
		loopdev_ops.mr_reg(d, s->rmb, BUF, 0, rmb_access, &s->rmb_mr),
		0);
	ck_assert_int_eq(loopdev_ops.mr_reg(d, s->rx, BUF, 0,
					    DEV_ACCESS_LOCAL_WRITE, &s->rx_mr),
			 0);
	return s;
}

static void
side_free(struct side *s)
{
	if (s == NULL)
		return;
	if (s->qp != NULL)
		loopdev_ops.qp_destroy(s->qp);
	loopdev_ops.mr_dereg(s->dev, &s->src_mr);
	loopdev_ops.mr_dereg(s->dev, &s->rmb_mr);
	loopdev_ops.mr_dereg(s->dev, &s->rx_mr);
	free(s);
}

static void
connect_to(struct side *s, const struct side *peer)
{
	struct dev_qp_addr addr;

	ck_assert_int_eq(loopdev_ops.qp_addr(peer->qp, &addr), 0);
	ck_assert_int_eq(loopdev_ops.qp_connect(s->qp, &addr, &smc_path), 0);
}

/* a and b on dev, connected to each other. */
static void
pair(struct dev_qp_caps want, int rmb_access)
{
	a = side_new(dev, want, rmb_access);
	b = side_new(dev, want, rmb_access);
	connect_to(a, b);
	connect_to(b, a);
}

static void
setup(void)
{
	base = event_base_new();
	ck_assert_ptr_nonnull(base);
	dev = loopdev_new(base);
	ck_assert_ptr_nonnull(dev);
	a = b = NULL;
}

static void
teardown(void)
{
	side_free(a);
	side_free(b);
	loopdev_free(dev);
	event_base_free(base);
}

static int
post_recv(struct side *s, uint64_t id, size_t off, uint32_t len)
{
	struct dev_sge sge = {(uintptr_t)(s->rx + off), len, s->rx_mr.lkey};
	struct dev_recv_wr wr = {NULL, id, &sge, 1};

	return loopdev_ops.post_recv(s->qp, &wr);
}

static int
post_send(struct side *s, uint64_t id, size_t off, uint32_t len, int flags)
{
	struct dev_sge sge = {(uintptr_t)(s->src + off), len, s->src_mr.lkey};
	struct dev_send_wr wr = {NULL, id, DEV_WR_SEND, flags, &sge, 1, 0, 0};

	return loopdev_ops.post_send(s->qp, &wr);
}

/* An RDMA WRITE of s->src[off, off + len) to the peer's RMB at roff. */
static int
post_write(struct side *s, const struct side *peer, uint64_t id, size_t off,
	   uint32_t len, size_t roff, int flags)
{
	struct dev_sge sge = {(uintptr_t)(s->src + off), len, s->src_mr.lkey};
	struct dev_send_wr wr = {
		.wr_id = id,
		.opcode = DEV_WR_WRITE,
		.flags = flags,
		.sg_list = &sge,
		.num_sge = 1,
		.remote_addr = (uintptr_t)(peer->rmb + roff),
		.rkey = peer->rmb_mr.rkey,
	};

	return loopdev_ops.post_send(s->qp, &wr);
}

static void
expect_wc(const struct side *s, int i, uint64_t id, enum dev_wc_status st,
	  enum dev_wc_opcode op)
{
	ck_assert_int_gt(s->nwc, i);
	ck_assert_uint_eq(s->wc[i].wr_id, id);
	ck_assert_int_eq(s->wc[i].status, st);
	ck_assert_int_eq(s->wc[i].opcode, op);
}

#define RW (DEV_ACCESS_LOCAL_WRITE | DEV_ACCESS_REMOTE_WRITE)

START_TEST(completions_are_asynchronous)
{
	pair(caps(8, 8, 64), RW);
	memcpy(a->src, "hello", 5);
	ck_assert_int_eq(post_recv(b, 7, 0, 64), 0);
	ck_assert_int_eq(post_send(a, 1, 0, 5, DEV_SEND_SIGNALED), 0);
	/* nothing happens inside post_send */
	ck_assert_int_eq(a->notified + b->notified, 0);
	collect(a);
	collect(b);
	ck_assert_int_eq(a->nwc + b->nwc, 0);
	ck_assert_int_gt(loopdev_pending(dev), 0);

	ck_assert_int_gt(loopdev_run(dev), 0);
	ck_assert_int_eq(loopdev_pending(dev), 0);
	ck_assert_int_eq(a->notified, 1);
	ck_assert_int_eq(b->notified, 1);
	collect(a);
	collect(b);
	ck_assert_int_eq(a->nwc, 1);
	expect_wc(a, 0, 1, DEV_WC_SUCCESS, DEV_WC_SEND);
	ck_assert_int_eq(b->nwc, 1);
	expect_wc(b, 0, 7, DEV_WC_SUCCESS, DEV_WC_RECV);
	ck_assert_uint_eq(b->wc[0].byte_len, 5);
	ck_assert_mem_eq(b->rx, "hello", 5);
}
END_TEST

START_TEST(event_loop_delivers)
{
	int i;

	pair(caps(8, 8, 64), RW);
	a->poll_in_cb = b->poll_in_cb = true;
	ck_assert_int_eq(post_recv(b, 7, 0, 64), 0);
	ck_assert_int_eq(post_send(a, 1, 0, 44, DEV_SEND_SIGNALED), 0);
	for (i = 0; i < 10 && (a->nwc == 0 || b->nwc == 0); i++)
		event_base_loop(base, EVLOOP_NONBLOCK);
	ck_assert_int_eq(a->nwc, 1);
	ck_assert_int_eq(b->nwc, 1);
	ck_assert_int_eq(loopdev_pending(dev), 0);
}
END_TEST

START_TEST(connect_like_peers)
{
	struct dev_qp_addr aa, ba, bad;

	a = side_new(dev, caps(8, 8, 0), RW);
	b = side_new(dev, caps(8, 8, 0), RW);
	ck_assert_int_eq(loopdev_ops.qp_addr(a->qp, &aa), 0);
	ck_assert_int_eq(loopdev_ops.qp_addr(b->qp, &ba), 0);
	ck_assert_uint_ne(aa.qpn, ba.qpn);
	ck_assert_uint_le(aa.psn, 0xffffff);
	ck_assert_uint_ne(aa.psn, ba.psn);
	ck_assert_int_ge(aa.mtu, 1);
	ck_assert_int_le(aa.mtu, 5);
	/* receives may be posted before connecting, sends may not */
	ck_assert_int_eq(post_recv(b, 1, 0, 64), 0);
	ck_assert_int_eq(post_send(a, 1, 0, 8, DEV_SEND_SIGNALED), -EINVAL);

	/* b was told a wrong PSN for a: it drops a's packets, a gives up */
	bad = aa;
	bad.psn = (aa.psn + 1) & 0xffffff;
	ck_assert_int_eq(loopdev_ops.qp_connect(b->qp, &bad, &smc_path), 0);
	ck_assert_int_eq(loopdev_ops.qp_connect(a->qp, &ba, &smc_path), 0);
	ck_assert_int_eq(loopdev_ops.qp_connect(a->qp, &ba, &smc_path),
			 -EINVAL);
	ck_assert_int_eq(post_send(a, 2, 0, 8, DEV_SEND_SIGNALED), 0);
	loopdev_run(dev);
	collect(a);
	collect(b);
	expect_wc(a, 0, 2, DEV_WC_RETRY_EXC_ERR, DEV_WC_SEND);
	ck_assert_int_eq(b->nwc, 0);
}
END_TEST

START_TEST(peer_not_yet_connected_holds)
{
	a = side_new(dev, caps(8, 8, 0), RW);
	b = side_new(dev, caps(8, 8, 0), RW);
	connect_to(a, b);
	ck_assert_int_eq(post_recv(b, 1, 0, 64), 0);
	ck_assert_int_eq(post_send(a, 2, 0, 8, DEV_SEND_SIGNALED), 0);
	loopdev_run(dev);
	collect(a);
	ck_assert_int_eq(a->nwc, 0);
	ck_assert_int_eq(loopdev_pending(dev), 1);
	connect_to(b, a);
	loopdev_run(dev);
	collect(a);
	collect(b);
	expect_wc(a, 0, 2, DEV_WC_SUCCESS, DEV_WC_SEND);
	expect_wc(b, 0, 1, DEV_WC_SUCCESS, DEV_WC_RECV);
}
END_TEST

START_TEST(destroyed_peer_is_unreachable)
{
	pair(caps(8, 8, 0), RW);
	side_free(b);
	b = NULL;
	ck_assert_int_eq(post_send(a, 3, 0, 8, DEV_SEND_SIGNALED), 0);
	ck_assert_int_eq(post_send(a, 4, 0, 8, 0), 0);
	loopdev_run(dev);
	collect(a);
	ck_assert_int_eq(a->nwc, 2);
	expect_wc(a, 0, 3, DEV_WC_RETRY_EXC_ERR, DEV_WC_SEND);
	expect_wc(a, 1, 4, DEV_WC_FLUSH_ERR, DEV_WC_SEND);
}
END_TEST

START_TEST(rc_order_writes_land_before_send)
{
	int i;

	pair(caps(16, 16, 0), RW);
	b->poll_in_cb = true;
	memset(a->src, 0xab, BUF);
	ck_assert_int_eq(post_recv(b, 1, 0, 64), 0);
	ck_assert_int_eq(post_write(a, b, 10, 0, 3000, 0, 0), 0);
	ck_assert_int_eq(post_send(a, 11, 0, 44, DEV_SEND_SIGNALED), 0);
	loopdev_run(dev);
	ck_assert_int_eq(b->nwc, 1);
	/* when the receive completed the WRITE's bytes were there */
	for (i = 0; i < 16; i++)
		ck_assert_uint_eq(b->rmb_at_recv[i], 0xab);
	ck_assert_uint_eq(b->rmb[2999], 0xab);
	ck_assert_uint_eq(b->rmb[3000], 0);
}
END_TEST

START_TEST(rc_order_sends_in_post_order)
{
	int i;

	pair(caps(16, 16, 0), RW);
	for (i = 0; i < 5; i++) {
		a->src[i * 8] = (unsigned char)('0' + i);
		ck_assert_int_eq(
			post_recv(b, 100 + (uint64_t)i, (size_t)i * 64, 64), 0);
	}
	for (i = 0; i < 5; i++)
		ck_assert_int_eq(post_send(a, (uint64_t)i, (size_t)i * 8, 8,
					   DEV_SEND_SIGNALED),
				 0);
	loopdev_run(dev);
	collect(a);
	collect(b);
	ck_assert_int_eq(a->nwc, 5);
	ck_assert_int_eq(b->nwc, 5);
	for (i = 0; i < 5; i++) {
		expect_wc(a, i, (uint64_t)i, DEV_WC_SUCCESS, DEV_WC_SEND);
		expect_wc(b, i, 100 + (uint64_t)i, DEV_WC_SUCCESS, DEV_WC_RECV);
		ck_assert_uint_eq(b->rx[i * 64], '0' + i);
	}
}
END_TEST

START_TEST(send_queue_depth)
{
	struct dev_sge sge[6];
	struct dev_send_wr wr[6];
	int i;

	pair(caps(4, 4, 0), RW);
	ck_assert_uint_eq(a->caps.max_send_wr, 4);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(post_write(a, b, (uint64_t)i, 0, 8, 0, 0), 0);
	ck_assert_int_eq(post_write(a, b, 3, 0, 8, 0, DEV_SEND_SIGNALED), 0);
	ck_assert_int_eq(post_write(a, b, 4, 0, 8, 0, 0), -ENOMEM);
	/* executed, but the slots stay taken until the completion is polled */
	loopdev_run(dev);
	ck_assert_int_eq(post_write(a, b, 4, 0, 8, 0, 0), -ENOMEM);
	collect(a);
	ck_assert_int_eq(a->nwc, 1);
	ck_assert_int_eq(post_write(a, b, 4, 0, 8, 0, 0), 0);

	/* unsignaled WRs alone never free their slots */
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(post_write(a, b, 5, 0, 8, 0, 0), 0);
	loopdev_run(dev);
	collect(a);
	ck_assert_int_eq(a->nwc, 1);
	ck_assert_int_eq(post_write(a, b, 6, 0, 8, 0, 0), -ENOMEM);

	/* a chain longer than the room: the head is posted (verbs' bad_wr) */
	side_free(a);
	side_free(b);
	pair(caps(4, 4, 0), RW);
	for (i = 0; i < 6; i++) {
		sge[i] = (struct dev_sge){(uintptr_t)a->src, 8, a->src_mr.lkey};
		wr[i] = (struct dev_send_wr){
			.next = i < 5 ? &wr[i + 1] : NULL,
			.wr_id = (uint64_t)i,
			.opcode = DEV_WR_WRITE,
			.flags = DEV_SEND_SIGNALED,
			.sg_list = &sge[i],
			.num_sge = 1,
			.remote_addr = (uintptr_t)b->rmb,
			.rkey = b->rmb_mr.rkey,
		};
	}
	ck_assert_int_eq(loopdev_ops.post_send(a->qp, wr), -ENOMEM);
	ck_assert_int_eq(loopdev_pending(dev), 4);
	loopdev_run(dev);
	collect(a);
	ck_assert_int_eq(a->nwc, 4);
}
END_TEST

START_TEST(recv_queue_depth)
{
	pair(caps(4, 2, 0), RW);
	ck_assert_int_eq(post_recv(b, 1, 0, 64), 0);
	ck_assert_int_eq(post_recv(b, 2, 64, 64), 0);
	ck_assert_int_eq(post_recv(b, 3, 128, 64), -ENOMEM);
	ck_assert_int_eq(post_send(a, 1, 0, 8, DEV_SEND_SIGNALED), 0);
	loopdev_run(dev);
	/* consumed, but its slot is free only once polled */
	ck_assert_int_eq(post_recv(b, 3, 128, 64), -ENOMEM);
	collect(b);
	ck_assert_int_eq(post_recv(b, 3, 128, 64), 0);
}
END_TEST

START_TEST(inline_copied_at_post)
{
	struct dev_qp_caps want = caps(8, 8, 1024), got;
	struct dev_qp_cb cb = {on_completion, on_event, NULL};
	struct dev_qp *qp;

	pair(caps(8, 8, 64), RW);
	ck_assert_uint_eq(a->caps.max_inline_data, 64);
	memset(a->src, 'i', 32);
	memset(a->src + 32, 'n', 32);
	ck_assert_int_eq(post_write(a, b, 1, 0, 32, 0, DEV_SEND_INLINE), 0);
	ck_assert_int_eq(post_write(a, b, 2, 32, 32, 32, 0), 0);
	/* the caller reuses both buffers before the WRs execute */
	memset(a->src, 'X', 64);
	loopdev_run(dev);
	ck_assert_uint_eq(b->rmb[0], 'i');
	ck_assert_uint_eq(b->rmb[31], 'i');
	ck_assert_uint_eq(b->rmb[32], 'X'); /* read late: reuse shows */
	ck_assert_uint_eq(b->rmb[63], 'X');

	/* more than max_inline_data inline: refused at post */
	ck_assert_int_eq(post_write(a, b, 3, 0, 65, 0, DEV_SEND_INLINE),
			 -EINVAL);
	/* an inline SGE needs no valid lkey */
	a->src_mr.lkey ^= 0xdead;
	ck_assert_int_eq(post_write(a, b, 4, 0, 4, 0,
				    DEV_SEND_INLINE | DEV_SEND_SIGNALED),
			 0);
	a->src_mr.lkey ^= 0xdead;
	loopdev_run(dev);
	collect(a);
	expect_wc(a, 0, 4, DEV_WC_SUCCESS, DEV_WC_RDMA_WRITE);

	/* a request the device cannot meet is granted what it can do */
	cb.arg = a;
	qp = loopdev_ops.qp_create(dev, base, &want, &got, &cb);
	ck_assert_ptr_nonnull(qp);
	ck_assert_uint_eq(got.max_inline_data, 512);
	loopdev_ops.qp_destroy(qp);
}
END_TEST

/* A WRITE that fails the responder's checks: both QPs go to error. */
static void
expect_access_error(uint32_t rkey, size_t roff, uint32_t len)
{
	struct dev_sge sge = {(uintptr_t)a->src, len, a->src_mr.lkey};
	struct dev_send_wr wr = {
		.wr_id = 5,
		.opcode = DEV_WR_WRITE,
		.sg_list = &sge,
		.num_sge = 1,
		.remote_addr = (uintptr_t)b->rmb + roff,
		.rkey = rkey,
	};

	memset(a->src, 0x5a, BUF);
	ck_assert_int_eq(post_recv(b, 9, 0, 64), 0);
	/* unsignaled, but a failure always completes */
	ck_assert_int_eq(loopdev_ops.post_send(a->qp, &wr), 0);
	ck_assert_int_eq(post_send(a, 6, 0, 8, DEV_SEND_SIGNALED), 0);
	loopdev_run(dev);
	collect(a);
	collect(b);
	ck_assert_int_eq(a->nwc, 2);
	expect_wc(a, 0, 5, DEV_WC_REM_ACCESS_ERR, DEV_WC_RDMA_WRITE);
	expect_wc(a, 1, 6, DEV_WC_FLUSH_ERR, DEV_WC_SEND);
	ck_assert_int_eq(b->nwc, 1);
	expect_wc(b, 0, 9, DEV_WC_FLUSH_ERR, DEV_WC_RECV);
	ck_assert_uint_eq(b->rmb[0], 0);
	ck_assert_uint_eq(b->rmb[BUF - 1], 0);
	/* and later posts flush */
	ck_assert_int_eq(post_send(a, 7, 0, 8, 0), 0);
	loopdev_run(dev);
	collect(a);
	expect_wc(a, 2, 7, DEV_WC_FLUSH_ERR, DEV_WC_SEND);
}

START_TEST(bad_rkey)
{
	pair(caps(8, 8, 0), RW);
	expect_access_error(b->rmb_mr.rkey ^ 0x100, 0, 16);
}
END_TEST

/*
 * Protection domains: a and b are connected in one PD of the device, c
 * has its RMB in another.  c's rkey on b's QP is no key (remote access
 * error, both QPs to error, c's RMB untouched), c's lkey none for a's
 * QP; in their own PD the same operations work.
 */
START_TEST(keys_of_another_pd)
{
	struct dev *pd_p = loopdev_ops.pd_open(dev);
	struct dev *pd_q = loopdev_ops.pd_open(dev);
	struct side *c;
	struct dev_sge sge;
	struct dev_send_wr wr;

	ck_assert_ptr_nonnull(pd_p);
	ck_assert_ptr_nonnull(pd_q);
	a = side_new(pd_p, caps(8, 8, 0), RW);
	b = side_new(pd_p, caps(8, 8, 0), RW);
	c = side_new(pd_q, caps(8, 8, 0), RW);
	connect_to(a, b);
	connect_to(b, a);
	/* in their own PD: a writes b's RMB */
	memset(a->src, 0x5a, BUF);
	ck_assert_int_eq(post_write(a, b, 1, 0, 16, 0, DEV_SEND_SIGNALED), 0);
	loopdev_run(dev);
	collect(a);
	ck_assert_int_eq(a->nwc, 1);
	expect_wc(a, 0, 1, DEV_WC_SUCCESS, DEV_WC_RDMA_WRITE);
	ck_assert_uint_eq(b->rmb[0], 0x5a);
	/* c's rkey through b's QP: refused, c's RMB untouched */
	ck_assert_int_eq(post_recv(b, 9, 0, 64), 0);
	ck_assert_int_eq(post_write(a, c, 2, 0, 16, 0, 0), 0);
	loopdev_run(dev);
	collect(a);
	collect(b);
	ck_assert_int_eq(a->nwc, 2);
	expect_wc(a, 1, 2, DEV_WC_REM_ACCESS_ERR, DEV_WC_RDMA_WRITE);
	ck_assert_int_eq(b->nwc, 1);
	expect_wc(b, 0, 9, DEV_WC_FLUSH_ERR, DEV_WC_RECV);
	ck_assert_uint_eq(c->rmb[0], 0);
	side_free(a);
	side_free(b);
	/* c's lkey in a QP of another PD: a local protection error */
	a = side_new(pd_p, caps(8, 8, 0), RW);
	b = side_new(pd_p, caps(8, 8, 0), RW);
	connect_to(a, b);
	connect_to(b, a);
	ck_assert_int_eq(post_recv(b, 9, 0, 64), 0);
	sge = (struct dev_sge){(uintptr_t)c->src, 8, c->src_mr.lkey};
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 3;
	wr.opcode = DEV_WR_SEND;
	wr.flags = DEV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	ck_assert_int_eq(loopdev_ops.post_send(a->qp, &wr), 0);
	loopdev_run(dev);
	collect(a);
	ck_assert_int_eq(a->nwc, 1);
	expect_wc(a, 0, 3, DEV_WC_LOC_ERR, DEV_WC_SEND);
	side_free(c);
	side_free(a);
	side_free(b);
	a = b = NULL;
	/* a PD goes with its last QP and MR; the device outlives it */
	loopdev_ops.pd_close(pd_p);
	loopdev_ops.pd_close(pd_q);
}
END_TEST

START_TEST(bad_rkey_local_key)
{
	/* the lkey of the right MR is no rkey */
	pair(caps(8, 8, 0), RW);
	expect_access_error(b->rmb_mr.lkey, 0, 16);
}
END_TEST

START_TEST(write_beyond_mr)
{
	pair(caps(8, 8, 0), RW);
	expect_access_error(b->rmb_mr.rkey, BUF - 8, 16);
}
END_TEST

START_TEST(write_before_mr)
{
	struct dev_sge sge;
	struct dev_send_wr wr;

	pair(caps(8, 8, 0), RW);
	sge = (struct dev_sge){(uintptr_t)a->src, 16, a->src_mr.lkey};
	wr = (struct dev_send_wr){
		.wr_id = 5,
		.opcode = DEV_WR_WRITE,
		.flags = DEV_SEND_SIGNALED,
		.sg_list = &sge,
		.num_sge = 1,
		.remote_addr = (uintptr_t)b->rmb - 8,
		.rkey = b->rmb_mr.rkey,
	};
	ck_assert_int_eq(loopdev_ops.post_send(a->qp, &wr), 0);
	loopdev_run(dev);
	collect(a);
	expect_wc(a, 0, 5, DEV_WC_REM_ACCESS_ERR, DEV_WC_RDMA_WRITE);
}
END_TEST

/* An MR registered at an IOVA: peers name the IOVA, never the address. */
START_TEST(write_at_iova)
{
	const uint64_t iova = 0x5a5a00000000ULL;
	struct dev_mr mr;
	struct dev_sge sge;
	struct dev_send_wr wr;

	pair(caps(8, 8, 0), RW);
	loopdev_ops.mr_dereg(b->dev, &b->rmb_mr);
	ck_assert_int_eq(loopdev_ops.mr_reg(b->dev, b->rmb, BUF, iova, RW, &mr),
			 0);
	ck_assert_uint_eq(mr.iova, iova);
	b->rmb_mr = mr;
	memset(a->src, 0x77, 16);
	sge = (struct dev_sge){(uintptr_t)a->src, 16, a->src_mr.lkey};
	wr = (struct dev_send_wr){
		.wr_id = 4,
		.opcode = DEV_WR_WRITE,
		.flags = DEV_SEND_SIGNALED,
		.sg_list = &sge,
		.num_sge = 1,
		.remote_addr = iova + 100,
		.rkey = mr.rkey,
	};
	ck_assert_int_eq(loopdev_ops.post_send(a->qp, &wr), 0);
	loopdev_run(dev);
	collect(a);
	expect_wc(a, 0, 4, DEV_WC_SUCCESS, DEV_WC_RDMA_WRITE);
	ck_assert_uint_eq(b->rmb[100], 0x77);
	ck_assert_uint_eq(b->rmb[115], 0x77);
	ck_assert_uint_eq(b->rmb[116], 0);
	/* the buffer's own address is outside the MR */
	wr.wr_id = 5;
	wr.remote_addr = (uintptr_t)b->rmb;
	ck_assert_int_eq(loopdev_ops.post_send(a->qp, &wr), 0);
	loopdev_run(dev);
	collect(a);
	expect_wc(a, 1, 5, DEV_WC_REM_ACCESS_ERR, DEV_WC_RDMA_WRITE);
	ck_assert_uint_eq(b->rmb[0], 0);
}
END_TEST

START_TEST(write_without_remote_write)
{
	pair(caps(8, 8, 0), DEV_ACCESS_LOCAL_WRITE);
	expect_access_error(b->rmb_mr.rkey, 0, 16);
}
END_TEST

START_TEST(mr_access_rules)
{
	static unsigned char buf[64];
	struct dev_mr mr;

	ck_assert_int_eq(loopdev_ops.mr_reg(dev, buf, sizeof(buf), 0,
					    DEV_ACCESS_REMOTE_WRITE, &mr),
			 -EINVAL);
	ck_assert_int_eq(
		loopdev_ops.mr_reg(dev, buf, 0, 0, DEV_ACCESS_LOCAL_WRITE, &mr),
		-EINVAL);
	ck_assert_int_eq(loopdev_ops.mr_reg(dev, buf, sizeof(buf), 0, 0, &mr),
			 0);
	ck_assert_uint_ne(mr.lkey, mr.rkey);
	loopdev_ops.mr_dereg(dev, &mr);
	ck_assert_ptr_null(mr.priv);
}
END_TEST

START_TEST(bad_lkey)
{
	struct dev_sge sge;
	struct dev_send_wr wr;

	pair(caps(8, 8, 0), RW);
	ck_assert_int_eq(post_recv(b, 9, 0, 64), 0);
	sge = (struct dev_sge){(uintptr_t)a->src, 8, a->src_mr.lkey + 1000};
	wr = (struct dev_send_wr){NULL, 1, DEV_WR_SEND, 0, &sge, 1, 0, 0};
	ck_assert_int_eq(loopdev_ops.post_send(a->qp, &wr), 0);
	loopdev_run(dev);
	collect(a);
	collect(b);
	expect_wc(a, 0, 1, DEV_WC_LOC_ERR, DEV_WC_SEND);
	ck_assert_int_eq(b->nwc, 0);
}
END_TEST

START_TEST(rnr_holds_send_until_receive)
{
	pair(caps(8, 8, 0), RW);
	memset(a->src, 'd', 64);
	ck_assert_int_eq(post_send(a, 1, 0, 8, DEV_SEND_SIGNALED), 0);
	ck_assert_int_eq(post_write(a, b, 2, 0, 16, 0, DEV_SEND_SIGNALED), 0);
	loopdev_run(dev);
	collect(a);
	ck_assert_int_eq(a->nwc, 0);
	ck_assert_uint_eq(loopdev_rnr_waits(a->qp), 1);
	ck_assert_int_eq(loopdev_pending(dev), 2);
	/* RC order: the WRITE behind the waiting SEND waits too */
	ck_assert_uint_eq(b->rmb[0], 0);
	loopdev_run(dev);
	ck_assert_uint_eq(loopdev_rnr_waits(a->qp), 1);

	ck_assert_int_eq(post_recv(b, 9, 0, 64), 0);
	loopdev_run(dev);
	collect(a);
	collect(b);
	ck_assert_int_eq(a->nwc, 2);
	expect_wc(a, 0, 1, DEV_WC_SUCCESS, DEV_WC_SEND);
	expect_wc(a, 1, 2, DEV_WC_SUCCESS, DEV_WC_RDMA_WRITE);
	expect_wc(b, 0, 9, DEV_WC_SUCCESS, DEV_WC_RECV);
	ck_assert_uint_eq(b->rmb[0], 'd');
	ck_assert_int_eq(loopdev_pending(dev), 0);
}
END_TEST

START_TEST(send_longer_than_receive)
{
	pair(caps(8, 8, 0), RW);
	ck_assert_int_eq(post_recv(b, 9, 0, 16), 0);
	ck_assert_int_eq(post_recv(b, 10, 16, 64), 0);
	ck_assert_int_eq(post_send(a, 1, 0, 32, DEV_SEND_SIGNALED), 0);
	loopdev_run(dev);
	collect(a);
	collect(b);
	expect_wc(a, 0, 1, DEV_WC_GENERAL_ERR, DEV_WC_SEND);
	ck_assert_int_eq(b->nwc, 2);
	expect_wc(b, 0, 9, DEV_WC_LOC_ERR, DEV_WC_RECV);
	expect_wc(b, 1, 10, DEV_WC_FLUSH_ERR, DEV_WC_RECV);
}
END_TEST

START_TEST(error_flushes_everything)
{
	int i;

	pair(caps(8, 8, 0), RW);
	for (i = 0; i < 2; i++)
		ck_assert_int_eq(post_recv(a, 50 + (uint64_t)i, 0, 64), 0);
	ck_assert_int_eq(post_recv(b, 60, 0, 64), 0);
	ck_assert_int_eq(post_write(a, b, 1, 0, 8, 0, 0), 0);
	ck_assert_int_eq(post_send(a, 2, 0, 8, DEV_SEND_SIGNALED), 0);
	ck_assert_int_eq(post_write(a, b, 3, 0, 8, 0, 0), 0);
	ck_assert_int_eq(loopdev_ops.qp_error(a->qp), 0);
	ck_assert_int_eq(loopdev_ops.qp_error(a->qp), 0);
	ck_assert_int_eq(a->notified, 0);
	loopdev_run(dev);
	collect(a);
	collect(b);
	/* every outstanding WR, signaled or not, send or receive */
	ck_assert_int_eq(a->nwc, 5);
	expect_wc(a, 0, 1, DEV_WC_FLUSH_ERR, DEV_WC_RDMA_WRITE);
	expect_wc(a, 1, 2, DEV_WC_FLUSH_ERR, DEV_WC_SEND);
	expect_wc(a, 2, 3, DEV_WC_FLUSH_ERR, DEV_WC_RDMA_WRITE);
	expect_wc(a, 3, 50, DEV_WC_FLUSH_ERR, DEV_WC_RECV);
	expect_wc(a, 4, 51, DEV_WC_FLUSH_ERR, DEV_WC_RECV);
	/* the peer does not know yet */
	ck_assert_int_eq(b->nwc, 0);
	/* later posts flush too */
	ck_assert_int_eq(post_send(a, 4, 0, 8, 0), 0);
	ck_assert_int_eq(post_recv(a, 52, 0, 64), 0);
	loopdev_run(dev);
	collect(a);
	expect_wc(a, 5, 4, DEV_WC_FLUSH_ERR, DEV_WC_SEND);
	expect_wc(a, 6, 52, DEV_WC_FLUSH_ERR, DEV_WC_RECV);
	/* and the peer's next SEND finds nobody answering */
	ck_assert_int_eq(post_send(b, 70, 0, 8, 0), 0);
	loopdev_run(dev);
	collect(b);
	expect_wc(b, 0, 70, DEV_WC_RETRY_EXC_ERR, DEV_WC_SEND);
	expect_wc(b, 1, 60, DEV_WC_FLUSH_ERR, DEV_WC_RECV);
}
END_TEST

START_TEST(unsignaled_writes_complete_silently)
{
	int i;

	pair(caps(8, 8, 0), RW);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(
			post_write(a, b, (uint64_t)i, 0, 8, (size_t)i * 8, 0),
			0);
	loopdev_run(dev);
	collect(a);
	ck_assert_int_eq(a->nwc, 0);
	ck_assert_int_eq(a->notified, 0);
	ck_assert_int_eq(post_write(a, b, 3, 0, 8, 0, DEV_SEND_SIGNALED), 0);
	loopdev_run(dev);
	collect(a);
	ck_assert_int_eq(a->nwc, 1);
	expect_wc(a, 0, 3, DEV_WC_SUCCESS, DEV_WC_RDMA_WRITE);
}
END_TEST

START_TEST(notify_needs_arm)
{
	pair(caps(8, 8, 0), RW);
	ck_assert_int_eq(post_write(a, b, 1, 0, 8, 0, DEV_SEND_SIGNALED), 0);
	loopdev_run(dev);
	ck_assert_int_eq(a->notified, 1);
	/* not re-armed: the next completion is not announced */
	ck_assert_int_eq(post_write(a, b, 2, 0, 8, 0, DEV_SEND_SIGNALED), 0);
	loopdev_run(dev);
	ck_assert_int_eq(a->notified, 1);
	/* arming with completions already queued announces nothing... */
	ck_assert_int_eq(loopdev_ops.arm(a->qp, true), 1);
	loopdev_run(dev);
	ck_assert_int_eq(a->notified, 1);
	collect(a);
	ck_assert_int_eq(a->nwc, 2);
	/* ...only a new one does */
	ck_assert_int_eq(post_write(a, b, 3, 0, 8, 0, DEV_SEND_SIGNALED), 0);
	loopdev_run(dev);
	ck_assert_int_eq(a->notified, 2);
}
END_TEST

START_TEST(fail_post)
{
	pair(caps(8, 8, 0), RW);
	loopdev_fail_post(dev, 2);
	ck_assert_int_eq(post_write(a, b, 1, 0, 8, 0, DEV_SEND_SIGNALED), 0);
	ck_assert_int_eq(post_write(a, b, 2, 0, 8, 0, DEV_SEND_SIGNALED),
			 -ENOMEM);
	ck_assert_int_eq(post_write(a, b, 3, 0, 8, 0, DEV_SEND_SIGNALED), 0);
	loopdev_run(dev);
	collect(a);
	ck_assert_int_eq(a->nwc, 2);
	expect_wc(a, 0, 1, DEV_WC_SUCCESS, DEV_WC_RDMA_WRITE);
	expect_wc(a, 1, 3, DEV_WC_SUCCESS, DEV_WC_RDMA_WRITE);
	/* cancelled */
	loopdev_fail_post(dev, 1);
	loopdev_fail_post(dev, 0);
	ck_assert_int_eq(post_write(a, b, 4, 0, 8, 0, 0), 0);
}
END_TEST

START_TEST(error_next_send_completion)
{
	pair(caps(8, 8, 0), RW);
	ck_assert_int_eq(post_recv(b, 9, 0, 64), 0);
	loopdev_error_next_completion(a->qp, DEV_WC_RETRY_EXC_ERR);
	ck_assert_int_eq(post_write(a, b, 1, 0, 8, 0, 0), 0);
	ck_assert_int_eq(post_send(a, 2, 0, 8, DEV_SEND_SIGNALED), 0);
	loopdev_run(dev);
	collect(a);
	collect(b);
	ck_assert_int_eq(a->nwc, 2);
	expect_wc(a, 0, 1, DEV_WC_RETRY_EXC_ERR, DEV_WC_RDMA_WRITE);
	expect_wc(a, 1, 2, DEV_WC_FLUSH_ERR, DEV_WC_SEND);
	ck_assert_int_eq(b->nwc, 0);
	ck_assert_uint_eq(b->rmb[0], 0);
}
END_TEST

START_TEST(error_next_recv_completion)
{
	pair(caps(8, 8, 0), RW);
	ck_assert_int_eq(post_recv(b, 9, 0, 64), 0);
	ck_assert_int_eq(post_recv(b, 10, 0, 64), 0);
	loopdev_error_next_completion(b->qp, DEV_WC_GENERAL_ERR);
	ck_assert_int_eq(post_send(a, 1, 0, 8, DEV_SEND_SIGNALED), 0);
	loopdev_run(dev);
	collect(a);
	collect(b);
	expect_wc(b, 0, 9, DEV_WC_GENERAL_ERR, DEV_WC_RECV);
	expect_wc(b, 1, 10, DEV_WC_FLUSH_ERR, DEV_WC_RECV);
	expect_wc(a, 0, 1, DEV_WC_RETRY_EXC_ERR, DEV_WC_SEND);
}
END_TEST

START_TEST(drop_link_flushes_both_ends)
{
	pair(caps(8, 8, 0), RW);
	ck_assert_int_eq(post_recv(a, 20, 0, 64), 0);
	ck_assert_int_eq(post_recv(b, 30, 0, 64), 0);
	ck_assert_int_eq(post_write(a, b, 1, 0, 8, 0, 0), 0);
	ck_assert_int_eq(post_send(b, 2, 0, 8, 0), 0);
	loopdev_drop_link(a->qp);
	loopdev_run(dev);
	collect(a);
	collect(b);
	ck_assert_int_eq(a->nwc, 2);
	expect_wc(a, 0, 1, DEV_WC_FLUSH_ERR, DEV_WC_RDMA_WRITE);
	expect_wc(a, 1, 20, DEV_WC_FLUSH_ERR, DEV_WC_RECV);
	ck_assert_int_eq(b->nwc, 2);
	expect_wc(b, 0, 2, DEV_WC_FLUSH_ERR, DEV_WC_SEND);
	expect_wc(b, 1, 30, DEV_WC_FLUSH_ERR, DEV_WC_RECV);
	ck_assert_uint_eq(b->rmb[0], 0);
	ck_assert_int_eq(post_send(b, 3, 0, 8, DEV_SEND_SIGNALED), 0);
	loopdev_run(dev);
	collect(b);
	expect_wc(b, 2, 3, DEV_WC_FLUSH_ERR, DEV_WC_SEND);
}
END_TEST

START_TEST(async_event_later)
{
	pair(caps(8, 8, 0), RW);
	loopdev_async_event(a->qp, DEV_EV_PORT_DOWN);
	loopdev_async_event(b->qp, DEV_EV_QP_FATAL);
	ck_assert_int_eq(a->events[DEV_EV_PORT_DOWN], 0);
	ck_assert_int_eq(loopdev_pending(dev), 2);
	event_base_loop(base, EVLOOP_NONBLOCK);
	ck_assert_int_eq(a->events[DEV_EV_PORT_DOWN], 1);
	ck_assert_int_eq(b->events[DEV_EV_QP_FATAL], 1);
	ck_assert_int_eq(b->events[DEV_EV_PORT_DOWN], 0);
}
END_TEST

START_TEST(two_devices_like_two_daemons)
{
	struct dev *dev2 = loopdev_new(base);

	ck_assert_ptr_nonnull(dev2);
	a = side_new(dev, caps(8, 8, 0), RW);
	b = side_new(dev2, caps(8, 8, 0), RW);
	connect_to(a, b);
	connect_to(b, a);
	memset(a->src, 'z', 16);
	ck_assert_int_eq(post_recv(b, 9, 0, 64), 0);
	ck_assert_int_eq(post_write(a, b, 1, 0, 16, 0, 0), 0);
	ck_assert_int_eq(post_send(a, 2, 0, 8, DEV_SEND_SIGNALED), 0);
	/* running one device runs its peers' too */
	loopdev_run(dev);
	ck_assert_int_eq(b->notified, 1);
	collect(a);
	collect(b);
	expect_wc(a, 0, 2, DEV_WC_SUCCESS, DEV_WC_SEND);
	expect_wc(b, 0, 9, DEV_WC_SUCCESS, DEV_WC_RECV);
	ck_assert_uint_eq(b->rmb[15], 'z');

	/* an rkey of a's own device means nothing on b's */
	ck_assert_int_eq(post_write(a, a, 3, 0, 8, 0, 0), 0);
	loopdev_run(dev);
	collect(a);
	expect_wc(a, 1, 3, DEV_WC_REM_ACCESS_ERR, DEV_WC_RDMA_WRITE);
	side_free(b);
	b = NULL;
	loopdev_free(dev2);
}
END_TEST

START_TEST(callback_may_destroy_qp)
{
	pair(caps(8, 8, 0), RW);
	b->destroy_in_cb = true;
	ck_assert_int_eq(post_recv(b, 9, 0, 64), 0);
	ck_assert_int_eq(post_send(a, 1, 0, 8, DEV_SEND_SIGNALED), 0);
	loopdev_run(dev);
	ck_assert_int_eq(b->notified, 1);
	ck_assert_ptr_null(b->qp);
	collect(a);
	expect_wc(a, 0, 1, DEV_WC_SUCCESS, DEV_WC_SEND);
	/* gone now: the next SEND finds nobody */
	ck_assert_int_eq(post_send(a, 2, 0, 8, DEV_SEND_SIGNALED), 0);
	loopdev_run(dev);
	collect(a);
	expect_wc(a, 1, 2, DEV_WC_RETRY_EXC_ERR, DEV_WC_SEND);
}
END_TEST

START_TEST(scatter_gather)
{
	struct dev_sge ssge[2], rsge[2];
	struct dev_send_wr swr;
	struct dev_recv_wr rwr;

	pair(caps(8, 8, 0), RW);
	memcpy(a->src, "abcd", 4);
	memcpy(a->src + 100, "efghij", 6);
	ssge[0] = (struct dev_sge){(uintptr_t)a->src, 4, a->src_mr.lkey};
	ssge[1] = (struct dev_sge){(uintptr_t)a->src + 100, 6, a->src_mr.lkey};
	rsge[0] = (struct dev_sge){(uintptr_t)b->rx, 3, b->rx_mr.lkey};
	rsge[1] = (struct dev_sge){(uintptr_t)b->rx + 50, 64, b->rx_mr.lkey};
	rwr = (struct dev_recv_wr){NULL, 9, rsge, 2};
	swr = (struct dev_send_wr){
		.wr_id = 1,
		.opcode = DEV_WR_SEND,
		.flags = DEV_SEND_SIGNALED,
		.sg_list = ssge,
		.num_sge = 2,
	};
	ck_assert_int_eq(loopdev_ops.post_recv(b->qp, &rwr), 0);
	ck_assert_int_eq(loopdev_ops.post_send(a->qp, &swr), 0);
	loopdev_run(dev);
	collect(b);
	ck_assert_uint_eq(b->wc[0].byte_len, 10);
	ck_assert_mem_eq(b->rx, "abc", 3);
	ck_assert_mem_eq(b->rx + 50, "defghij", 7);
}
END_TEST

static Suite *
loopdev_suite(void)
{
	Suite *s = suite_create("loopdev");
	TCase *tc = tcase_create("model");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, completions_are_asynchronous);
	tcase_add_test(tc, event_loop_delivers);
	tcase_add_test(tc, connect_like_peers);
	tcase_add_test(tc, peer_not_yet_connected_holds);
	tcase_add_test(tc, destroyed_peer_is_unreachable);
	tcase_add_test(tc, rc_order_writes_land_before_send);
	tcase_add_test(tc, rc_order_sends_in_post_order);
	tcase_add_test(tc, send_queue_depth);
	tcase_add_test(tc, recv_queue_depth);
	tcase_add_test(tc, inline_copied_at_post);
	tcase_add_test(tc, bad_rkey);
	tcase_add_test(tc, bad_rkey_local_key);
	tcase_add_test(tc, keys_of_another_pd);
	tcase_add_test(tc, write_beyond_mr);
	tcase_add_test(tc, write_before_mr);
	tcase_add_test(tc, write_at_iova);
	tcase_add_test(tc, write_without_remote_write);
	tcase_add_test(tc, mr_access_rules);
	tcase_add_test(tc, bad_lkey);
	tcase_add_test(tc, rnr_holds_send_until_receive);
	tcase_add_test(tc, send_longer_than_receive);
	tcase_add_test(tc, error_flushes_everything);
	tcase_add_test(tc, unsignaled_writes_complete_silently);
	tcase_add_test(tc, notify_needs_arm);
	tcase_add_test(tc, scatter_gather);
	tcase_add_test(tc, fail_post);
	tcase_add_test(tc, error_next_send_completion);
	tcase_add_test(tc, error_next_recv_completion);
	tcase_add_test(tc, drop_link_flushes_both_ends);
	tcase_add_test(tc, async_event_later);
	tcase_add_test(tc, two_devices_like_two_daemons);
	tcase_add_test(tc, callback_may_destroy_qp);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(loopdev_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
