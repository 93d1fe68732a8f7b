// SPDX-License-Identifier: BSD-2-Clause
/*
 * wr.c on the loopback device model: TX slots and completions, RDMA
 * WRITE + SEND, inline rules, exclusive vs herd slot waiting (wake-one,
 * pass-on, teardown wakes all, wait timeout), RX reposting, faults.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <event2/event.h>

#include "smcproxyd.h"

static const struct dev_path smc_path = DEV_PATH_SMC;

/* pair_open: wr_params.reap_lazily of both links */
static bool lazy_links;

struct pair {
	struct event_base *base;
	struct dev *dev;
	struct wr_link *a, *b;
	int a_down, b_down;
	int rx_count;
	uint8_t rx_last[48];
	size_t rx_len;
};

static void
down_cb(struct wr_link *l, void *arg)
{
	struct pair *p = arg;

	if (l == p->a)
		p->a_down++;
	else
		p->b_down++;
}

static void
rx_cb(struct wr_link *l, const void *msg, size_t len, void *arg)
{
	struct pair *p = arg;

	p->rx_count++;
	memcpy(p->rx_last, msg, len < 48 ? len : 48);
	p->rx_len = len;
}

static void
pair_open(struct pair *p, uint32_t slots, uint32_t recvs, bool inl,
	  enum wr_slot_wait mode)
{
	struct wr_params prm = {.max_send_wr = slots,
				.max_recv_wr = recvs,
				.inline_enabled = inl,
				.inline_size = 256,
				.slot_wait = mode,
				.reap_lazily = lazy_links};
	struct wr_link_cb cb = {down_cb, p};
	struct dev_qp_addr aa, ba;

	memset(p, 0, sizeof(*p));
	p->base = event_base_new();
	ck_assert_ptr_nonnull(p->base);
	p->dev = loopdev_new(p->base);
	ck_assert_ptr_nonnull(p->dev);
	snprintf(prm.name, sizeof(prm.name), "test a");
	p->a = wr_link_new(&loopdev_ops, p->dev, p->base, &prm, &cb);
	snprintf(prm.name, sizeof(prm.name), "test b");
	p->b = wr_link_new(&loopdev_ops, p->dev, p->base, &prm, &cb);
	ck_assert_ptr_nonnull(p->a);
	ck_assert_ptr_nonnull(p->b);
	ck_assert_int_eq(loopdev_ops.qp_addr(wr_link_qp(p->a), &aa), 0);
	ck_assert_int_eq(loopdev_ops.qp_addr(wr_link_qp(p->b), &ba), 0);
	ck_assert_int_eq(wr_link_connect(p->a, &ba, &smc_path), 0);
	ck_assert_int_eq(wr_link_connect(p->b, &aa, &smc_path), 0);
	wr_rx_register(p->b, 0x42, rx_cb);
	wr_rx_register(p->a, 0x42, rx_cb);
}

static void
pair_close(struct pair *p)
{
	wr_link_free(p->a);
	wr_link_free(p->b);
	loopdev_free(p->dev);
	event_base_free(p->base);
}

/* The device's work, then what it made ready on the loop (a poll that
 * wr_tx_want_done scheduled), then the device's again. */
static void
run(struct pair *p)
{
	ck_assert_int_ge(loopdev_run(p->dev), 0);
	ck_assert_int_ge(event_base_loop(p->base, EVLOOP_NONBLOCK), 0);
	ck_assert_int_ge(loopdev_run(p->dev), 0);
}

static int done_calls, done_status;

static void
done_cb(struct wr_link *l, struct wr_tx_slot *slot, int status, void *arg)
{
	done_calls++;
	done_status = status;
}

/* A TX slot of l holding a test message tagged tag. */
static struct wr_tx_slot *
msg_slot(struct wr_link *l, uint8_t tag)
{
	struct wr_tx_slot *slot;
	uint8_t *buf;

	ck_assert_int_eq(wr_tx_get(l, &slot, NULL), 0);
	buf = wr_tx_buf(slot);
	buf[0] = 0x42;
	buf[1] = tag;
	return slot;
}

static void
send_msg(struct pair *p, struct wr_link *l, uint8_t tag)
{
	struct wr_tx_slot *slot = msg_slot(l, tag);

	ck_assert_int_eq(wr_tx_post(l, slot, NULL, 0, done_cb, NULL), 0);
}

START_TEST(send_completes_and_frees_slot)
{
	struct pair p;
	int i;

	pair_open(&p, 2, 4, false, WR_WAIT_EXCLUSIVE);
	done_calls = 0;
	for (i = 0; i < 10; i++) {
		send_msg(&p, p.a, (uint8_t)i);
		run(&p);
	}
	/* more messages than receives posted: RX buffers are reposted */
	ck_assert_int_eq(p.rx_count, 10);
	ck_assert_int_eq(p.rx_last[1], 9);
	ck_assert_uint_eq(p.rx_len, 44);
	ck_assert_int_eq(done_calls, 10);
	ck_assert_int_eq(done_status, 0);
	ck_assert_uint_eq(wr_link_stats(p.a)->posted, 10);
	ck_assert_int_eq(p.a_down + p.b_down, 0);
	pair_close(&p);
}
END_TEST

START_TEST(slots_run_out)
{
	struct wr_tx_slot *s1, *s2, *s3;
	struct pair p;

	pair_open(&p, 2, 4, false, WR_WAIT_EXCLUSIVE);
	ck_assert_int_eq(wr_tx_get(p.a, &s1, NULL), 0);
	ck_assert_int_eq(wr_tx_get(p.a, &s2, NULL), 0);
	ck_assert_int_eq(wr_tx_get(p.a, &s3, NULL), -EBUSY);
	wr_tx_put(p.a, s1);
	ck_assert_int_eq(wr_tx_get(p.a, &s3, NULL), 0);
	ck_assert_ptr_eq(s3, s1);
	wr_tx_put(p.a, s2);
	wr_tx_put(p.a, s3);
	pair_close(&p);
}
END_TEST

/* RDMA WRITE of a wrapped span (two SGEs) lands before the SEND. */
static void
write_and_send(bool inl, size_t len, bool expect_inline)
{
	static uint8_t src[8192], rmb[8192];
	struct dev_mr smr, rmr;
	struct wr_tx_slot *slot;
	struct wr_write w;
	struct pair p;
	uint8_t *buf;
	size_t i;

	pair_open(&p, 4, 4, inl, WR_WAIT_EXCLUSIVE);
	for (i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 7 + 1);
	memset(rmb, 0, sizeof(rmb));
	ck_assert_int_eq(loopdev_ops.mr_reg(p.dev, src, sizeof(src), 0,
					    DEV_ACCESS_LOCAL_WRITE, &smr),
			 0);
	ck_assert_int_eq(loopdev_ops.mr_reg(p.dev, rmb, sizeof(rmb), 0,
					    DEV_ACCESS_LOCAL_WRITE |
						    DEV_ACCESS_REMOTE_WRITE,
					    &rmr),
			 0);
	memset(&w, 0, sizeof(w));
	/* the tail of the ring then its head, as a wrapped send buffer */
	w.sge[0] = (struct dev_sge){(uint64_t)(uintptr_t)(src + 8192 - len / 2),
				    (uint32_t)(len / 2), smr.lkey};
	w.sge[1] = (struct dev_sge){(uint64_t)(uintptr_t)src,
				    (uint32_t)(len - len / 2), smr.lkey};
	w.nsge = 2;
	w.remote_addr = (uint64_t)(uintptr_t)(rmb + 100);
	w.rkey = rmr.rkey;
	ck_assert_int_eq(wr_tx_get(p.a, &slot, NULL), 0);
	buf = wr_tx_buf(slot);
	buf[0] = 0x42;
	ck_assert_int_eq(wr_tx_post(p.a, slot, &w, 1, done_cb, NULL), 0);
	/* reusing the source right after post is only safe when inline */
	if (expect_inline)
		memset(src, 0xee, sizeof(src));
	run(&p);
	ck_assert_int_eq(p.rx_count, 1);
	if (expect_inline)
		for (i = 0; i < 8192; i++)
			src[i] = (uint8_t)(i * 7 + 1);
	ck_assert_mem_eq(rmb + 100, src + 8192 - len / 2, len / 2);
	ck_assert_mem_eq(rmb + 100 + len / 2, src, len - len / 2);
	ck_assert_uint_eq(
		wr_link_stats(p.a)->inline_wrs,
		(expect_inline ? 1 : 0) +
			(inl && wr_link_caps(p.a)->max_inline_data > 44 ? 1 :
									  0));
	loopdev_ops.mr_dereg(p.dev, &smr);
	loopdev_ops.mr_dereg(p.dev, &rmr);
	pair_close(&p);
}

START_TEST(write_then_send)
{
	write_and_send(false, 4000, false);
}
END_TEST

START_TEST(inline_only_below_max_inline)
{
	struct pair p;
	uint32_t max;

	pair_open(&p, 2, 2, true, WR_WAIT_EXCLUSIVE);
	max = wr_link_caps(p.a)->max_inline_data;
	pair_close(&p);
	ck_assert_uint_ge(max, 256);
	write_and_send(true, 10, true);
	write_and_send(true, max - 1, true);
	write_and_send(true, max, false); /* never at or beyond the limit */
	write_and_send(true, max + 1, false);
	write_and_send(false, 10, false); /* switched off */
}
END_TEST

/* ---- lazy send completions ---- */

static void
count_cb(struct wr_link *l, struct wr_tx_slot *slot, int status, void *arg)
{
	(*(int *)arg)++;
}

/* Post one message from l, lazily (nobody waits for its completion). */
static void
send_lazy(struct wr_link *l, uint8_t tag, int *done)
{
	struct wr_tx_slot *slot = msg_slot(l, tag);

	wr_tx_lazy(slot);
	ck_assert_int_eq(wr_tx_post(l, slot, NULL, 0, count_cb, done), 0);
}

START_TEST(lazy_send_is_reaped_with_the_reply)
{
	struct pair p;
	uint64_t ev;
	int a_done = 0, b_done = 0;

	lazy_links = true;
	pair_open(&p, 4, 8, false, WR_WAIT_EXCLUSIVE);
	/* the send CQ is armed at creation: the first completion notifies */
	send_lazy(p.a, 1, &a_done);
	run(&p);
	ck_assert_int_eq(a_done, 1);
	ev = wr_link_stats(p.a)->cq_events;
	/* now nobody waits: delivered, but a is not woken for the ACK */
	send_lazy(p.a, 2, &a_done);
	run(&p);
	ck_assert_int_eq(p.rx_count, 2);
	ck_assert_int_eq(a_done, 1);
	ck_assert_uint_eq(wr_link_stats(p.a)->cq_events, ev);
	ck_assert_uint_eq(wr_link_stats(p.a)->lazy_posts, 2);
	/* the reply wakes a once, and that reaps both completions */
	send_lazy(p.b, 3, &b_done);
	run(&p);
	ck_assert_int_eq(p.rx_count, 3);
	ck_assert_int_eq(a_done, 2);
	ck_assert_uint_eq(wr_link_stats(p.a)->cq_events, ev + 1);
	/* a sender that comes to wait makes the newest one prompt */
	send_lazy(p.a, 4, &a_done);
	send_lazy(p.a, 5, &a_done);
	run(&p);
	ck_assert_int_eq(a_done, 2);
	wr_tx_want_done(p.a);
	run(&p);
	ck_assert_int_eq(a_done, 4);
	ck_assert_uint_eq(wr_link_stats(p.a)->lazy_wanted, 1);
	/* nothing in flight: nothing to want */
	wr_tx_want_done(p.a);
	run(&p);
	ck_assert_uint_eq(wr_link_stats(p.a)->lazy_wanted, 1);
	/* a prompt SEND after lazy ones: its wake-up reaps them all */
	send_lazy(p.a, 6, &a_done);
	send_msg(&p, p.a, 7);
	done_calls = 0;
	run(&p);
	ck_assert_int_eq(a_done, 5);
	ck_assert_int_eq(done_calls, 1);
	pair_close(&p);
	lazy_links = false;
}
END_TEST

START_TEST(lazy_off_wakes_for_every_send)
{
	struct pair p;
	int a_done = 0, i;

	pair_open(&p, 4, 8, false, WR_WAIT_EXCLUSIVE);
	for (i = 0; i < 3; i++) {
		send_lazy(p.a, (uint8_t)i, &a_done);
		run(&p);
		ck_assert_int_eq(a_done, i + 1);
	}
	ck_assert_uint_eq(wr_link_stats(p.a)->lazy_posts, 0);
	pair_close(&p);
}
END_TEST

static void
lazy_waiter_wake(struct wr_waiter *ww, int status)
{
	int *woken = (int *)(ww + 1);

	(*woken)++;
}

START_TEST(waiter_for_a_slot_held_by_lazy_sends_is_woken)
{
	struct {
		struct wr_waiter w;
		int woken;
	} wt = {.w.wake = lazy_waiter_wake};
	struct wr_tx_slot *slot;
	struct pair p;
	int a_done = 0;

	lazy_links = true;
	pair_open(&p, 2, 8, false, WR_WAIT_EXCLUSIVE);
	send_lazy(p.a, 1, &a_done); /* takes the arm made at creation */
	run(&p);
	send_lazy(p.a, 2, &a_done);
	send_lazy(p.a, 3, &a_done);
	run(&p);
	ck_assert_int_eq(p.rx_count, 3);
	ck_assert_int_eq(a_done, 1); /* both slots held, completions queued */
	ck_assert_int_eq(wr_tx_get(p.a, &slot, &wt.w), -EBUSY);
	run(&p);
	ck_assert_int_eq(a_done, 3);
	ck_assert_int_eq(wt.woken, 1);
	ck_assert_int_eq(wr_tx_get(p.a, &slot, &wt.w), 0);
	wr_tx_put(p.a, slot);
	pair_close(&p);
	lazy_links = false;
}
END_TEST

/* ---- slot waiting ---- */

struct waiter {
	struct wr_waiter w;
	struct pair *p;
	int woken;
	int got;
	bool cancel; /* gives up instead of taking the slot */
	int status;
};

static void
waiter_wake(struct wr_waiter *ww, int status)
{
	struct waiter *w = (struct waiter *)ww;
	struct wr_tx_slot *slot;

	w->woken++;
	w->status = status;
	if (status)
		return;
	if (w->cancel) {
		wr_tx_wait_cancel(w->p->a, ww);
		return;
	}
	if (wr_tx_get(w->p->a, &slot, ww) == 0) {
		w->got++;
		((uint8_t *)wr_tx_buf(slot))[0] = 0x42;
		ck_assert_int_eq(wr_tx_post(w->p->a, slot, NULL, 0, NULL, NULL),
				 0);
	}
}

static void
park(struct pair *p, struct waiter *ws, int n)
{
	struct wr_tx_slot *slot;
	int i;

	for (i = 0; i < n; i++) {
		memset(&ws[i], 0, sizeof(ws[i]));
		ws[i].p = p;
		ws[i].w.wake = waiter_wake;
		ck_assert_int_eq(wr_tx_get(p->a, &slot, &ws[i].w), -EBUSY);
	}
}

START_TEST(exclusive_wakes_one_per_freed_slot)
{
	struct waiter ws[8];
	struct pair p;
	int i, got = 0;

	pair_open(&p, 2, 16, false, WR_WAIT_EXCLUSIVE);
	send_msg(&p, p.a, 1);
	send_msg(&p, p.a, 2);
	park(&p, ws, 8);
	ck_assert_uint_eq(wr_link_stats(p.a)->slot_waits, 8);
	run(&p); /* 2 completions, each wakes one, who posts: and so on */
	for (i = 0; i < 8; i++) {
		ck_assert_int_eq(ws[i].woken, 1); /* nobody woken for nothing */
		got += ws[i].got;
	}
	ck_assert_int_eq(got, 8);
	ck_assert_uint_eq(wr_link_stats(p.a)->wakeups,
			  wr_link_stats(p.a)->contended_frees);
	ck_assert_int_eq(p.rx_count, 10);
	pair_close(&p);
}
END_TEST

START_TEST(all_mode_is_a_herd)
{
	struct waiter ws[8];
	struct pair p;
	int i, got = 0, woken = 0;

	pair_open(&p, 2, 16, false, WR_WAIT_ALL);
	send_msg(&p, p.a, 1);
	send_msg(&p, p.a, 2);
	park(&p, ws, 8);
	run(&p);
	for (i = 0; i < 8; i++) {
		got += ws[i].got;
		woken += ws[i].woken;
	}
	ck_assert_int_eq(got, 8);
	ck_assert_int_gt(woken, 8); /* woken for slots they did not get */
	ck_assert_uint_gt(wr_link_stats(p.a)->wakeups,
			  2 * wr_link_stats(p.a)->contended_frees);
	ck_assert_int_eq(p.rx_count, 10);
	pair_close(&p);
}
END_TEST

/* The race of the patch review: a woken waiter that gives up must not
 * swallow the wake-up; the next waiter gets it. */
START_TEST(cancelled_wakeup_is_passed_on)
{
	struct waiter ws[3];
	struct pair p;

	pair_open(&p, 1, 8, false, WR_WAIT_EXCLUSIVE);
	send_msg(&p, p.a, 1);
	park(&p, ws, 3);
	ws[0].cancel = true;
	run(&p);
	ck_assert_int_eq(ws[0].woken, 1);
	ck_assert_int_eq(ws[0].got, 0);
	ck_assert_int_eq(ws[1].got, 1);
	ck_assert_int_eq(ws[2].got, 1);
	ck_assert_int_eq(p.rx_count, 3);
	pair_close(&p);
}
END_TEST

START_TEST(parked_waiter_cancel_unlinks)
{
	struct waiter ws[2];
	struct pair p;

	pair_open(&p, 1, 8, false, WR_WAIT_EXCLUSIVE);
	send_msg(&p, p.a, 1);
	park(&p, ws, 2);
	wr_tx_wait_cancel(p.a, &ws[0].w); /* its connection closed */
	run(&p);
	ck_assert_int_eq(ws[0].woken, 0);
	ck_assert_int_eq(ws[1].got, 1);
	pair_close(&p);
}
END_TEST

START_TEST(teardown_wakes_all)
{
	struct waiter ws[5];
	struct pair p;
	int i;

	pair_open(&p, 1, 8, false, WR_WAIT_EXCLUSIVE);
	send_msg(&p, p.a, 1);
	park(&p, ws, 5);
	wr_link_down(p.a, "test");
	for (i = 0; i < 5; i++) {
		ck_assert_int_eq(ws[i].woken, 1);
		ck_assert_int_eq(ws[i].status, -ENOLINK);
	}
	ck_assert_int_eq(p.a_down, 1);
	pair_close(&p);
}
END_TEST

START_TEST(slot_wait_timeout_is_link_fault)
{
	struct wr_params prm = {
		.max_send_wr = 1, .max_recv_wr = 4, .slot_wait_max_ms = 40};
	struct wr_link_cb cb;
	struct wr_tx_slot *slot;
	struct waiter ws[1];
	struct pair p;

	memset(&p, 0, sizeof(p));
	cb.down = down_cb;
	cb.arg = &p;
	p.base = event_base_new();
	p.dev = loopdev_new(p.base);
	snprintf(prm.name, sizeof(prm.name), "stuck");
	/* never connected: the one slot posted never completes */
	p.a = wr_link_new(&loopdev_ops, p.dev, p.base, &prm, &cb);
	ck_assert_ptr_nonnull(p.a);
	ck_assert_int_eq(wr_tx_get(p.a, &slot, NULL), 0);
	memset(ws, 0, sizeof(ws));
	ws[0].p = &p;
	ws[0].w.wake = waiter_wake;
	ck_assert_int_eq(wr_tx_get(p.a, &slot, &ws[0].w), -EBUSY);
	while (p.a_down == 0)
		event_base_loop(p.base, EVLOOP_ONCE);
	ck_assert_uint_eq(wr_link_stats(p.a)->slot_wait_timeouts, 1);
	ck_assert_int_eq(ws[0].status, -ENOLINK);
	ck_assert_uint_ge(wr_link_stats(p.a)->longest_wait_ms, 40);
	wr_link_free(p.a);
	loopdev_free(p.dev);
	event_base_free(p.base);
}
END_TEST

/* ---- faults ---- */

START_TEST(completion_error_takes_link_down)
{
	struct pair p;

	pair_open(&p, 2, 4, false, WR_WAIT_EXCLUSIVE);
	done_calls = 0;
	loopdev_error_next_completion(wr_link_qp(p.a), DEV_WC_RETRY_EXC_ERR);
	send_msg(&p, p.a, 1);
	run(&p);
	ck_assert_int_eq(p.a_down, 1);
	ck_assert_int_eq(done_calls, 1);
	ck_assert_int_eq(done_status, -EIO);
	ck_assert(wr_link_is_down(p.a));
	ck_assert_uint_ge(wr_link_stats(p.a)->errors, 1);
	pair_close(&p);
}
END_TEST

START_TEST(post_failure_takes_link_down_and_frees_slot)
{
	struct wr_tx_slot *slot;
	struct pair p;

	pair_open(&p, 1, 4, false, WR_WAIT_EXCLUSIVE);
	loopdev_fail_post(p.dev, 1);
	ck_assert_int_eq(wr_tx_get(p.a, &slot, NULL), 0);
	ck_assert_int_lt(wr_tx_post(p.a, slot, NULL, 0, NULL, NULL), 0);
	ck_assert_int_eq(p.a_down, 1);
	ck_assert_int_eq(wr_tx_get(p.a, &slot, NULL), -ENOLINK);
	pair_close(&p);
}
END_TEST

START_TEST(dropped_link_flushes)
{
	struct pair p;

	pair_open(&p, 2, 4, false, WR_WAIT_EXCLUSIVE);
	send_msg(&p, p.a, 1);
	loopdev_drop_link(wr_link_qp(p.a));
	run(&p);
	ck_assert_int_eq(p.a_down, 1);
	ck_assert_int_eq(p.b_down, 1);
	pair_close(&p);
}
END_TEST

START_TEST(bad_rkey_is_remote_access_error)
{
	static uint8_t src[64];
	struct dev_mr smr;
	struct wr_tx_slot *slot;
	struct wr_write w;
	struct pair p;

	pair_open(&p, 2, 4, false, WR_WAIT_EXCLUSIVE);
	ck_assert_int_eq(loopdev_ops.mr_reg(p.dev, src, sizeof(src), 0,
					    DEV_ACCESS_LOCAL_WRITE, &smr),
			 0);
	memset(&w, 0, sizeof(w));
	w.sge[0] = (struct dev_sge){(uint64_t)(uintptr_t)src, 64, smr.lkey};
	w.nsge = 1;
	w.remote_addr = 0x1000;
	w.rkey = 0xdead;
	ck_assert_int_eq(wr_tx_get(p.a, &slot, NULL), 0);
	((uint8_t *)wr_tx_buf(slot))[0] = 0x42;
	ck_assert_int_eq(wr_tx_post(p.a, slot, &w, 1, done_cb, NULL), 0);
	run(&p);
	ck_assert_int_eq(p.a_down, 1);
	ck_assert_int_eq(p.rx_count, 0); /* the SEND behind it never lands */
	loopdev_ops.mr_dereg(p.dev, &smr);
	pair_close(&p);
}
END_TEST

/*
 * A peer's WRITE with immediate consumes a receive without writing its
 * buffer, which still holds an earlier message: it must not be taken for
 * a message (the old one would be dispatched again), it is a protocol
 * violation that takes the link down.
 */
START_TEST(write_with_imm_is_protocol_violation)
{
	static uint8_t src[16], rmb[64];
	struct dev_mr smr, rmr;
	struct dev_sge sge;
	struct dev_send_wr wr;
	struct pair p;
	int i;

	pair_open(&p, 4, 4, false, WR_WAIT_EXCLUSIVE);
	/* every receive buffer of b has held a message once */
	for (i = 0; i < 4; i++) {
		send_msg(&p, p.a, (uint8_t)i);
		run(&p);
	}
	ck_assert_int_eq(p.rx_count, 4);
	ck_assert_int_eq(loopdev_ops.mr_reg(p.dev, src, sizeof(src), 0,
					    DEV_ACCESS_LOCAL_WRITE, &smr),
			 0);
	ck_assert_int_eq(loopdev_ops.mr_reg(p.dev, rmb, sizeof(rmb), 0,
					    DEV_ACCESS_LOCAL_WRITE |
						    DEV_ACCESS_REMOTE_WRITE,
					    &rmr),
			 0);
	sge = (struct dev_sge){(uint64_t)(uintptr_t)src, sizeof(src), smr.lkey};
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x77;
	wr.opcode = DEV_WR_WRITE_IMM;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.remote_addr = (uint64_t)(uintptr_t)rmb;
	wr.rkey = rmr.rkey;
	ck_assert_int_eq(loopdev_ops.post_send(wr_link_qp(p.a), &wr), 0);
	run(&p);
	ck_assert_int_eq(p.rx_count, 4); /* nothing dispatched again */
	ck_assert_int_eq(p.b_down, 1);
	ck_assert(wr_link_is_down(p.b));
	ck_assert_uint_eq(wr_link_stats(p.b)->rx_bad_opcode, 1);
	loopdev_ops.mr_dereg(p.dev, &smr);
	loopdev_ops.mr_dereg(p.dev, &rmr);
	pair_close(&p);
}
END_TEST

/*
 * Freeing a link whose SENDs never completed (its peer stopped
 * answering): each completes with -ENOLINK first, so whoever waits for
 * it hears of it.
 */
START_TEST(free_completes_sends_in_flight)
{
	struct pair p;

	pair_open(&p, 4, 4, false, WR_WAIT_EXCLUSIVE);
	done_calls = 0;
	done_status = 0;
	loopdev_hold(wr_link_qp(p.a), true);
	send_msg(&p, p.a, 1);
	send_msg(&p, p.a, 2);
	run(&p);
	ck_assert_int_eq(done_calls, 0);
	wr_link_free(p.a);
	p.a = NULL;
	ck_assert_int_eq(done_calls, 2);
	ck_assert_int_eq(done_status, -ENOLINK);
	ck_assert_int_eq(p.rx_count, 0);
	pair_close(&p);
}
END_TEST

/*
 * A fault wr.c finds itself (here an async QP error; also a slot wait
 * over its bound) moves the QP to error, so what is in flight flushes at
 * once instead of when the peer gives up, before lgr.c frees the link.
 */
START_TEST(fault_flushes_sends_in_flight)
{
	struct pair p;

	pair_open(&p, 4, 4, false, WR_WAIT_EXCLUSIVE);
	done_calls = 0;
	done_status = 0;
	loopdev_hold(wr_link_qp(p.a), true);
	send_msg(&p, p.a, 1);
	run(&p);
	ck_assert_int_eq(done_calls, 0);
	loopdev_async_event(wr_link_qp(p.a), DEV_EV_QP_FATAL);
	run(&p);
	ck_assert_int_eq(p.a_down, 1);
	ck_assert_int_eq(done_calls, 1);
	ck_assert_int_eq(done_status, -EIO);
	pair_close(&p);
}
END_TEST

static Suite *
wr_suite(void)
{
	Suite *s = suite_create("wr");
	TCase *tc = tcase_create("tx");

	tcase_add_test(tc, send_completes_and_frees_slot);
	tcase_add_test(tc, slots_run_out);
	tcase_add_test(tc, write_then_send);
	tcase_add_test(tc, lazy_send_is_reaped_with_the_reply);
	tcase_add_test(tc, lazy_off_wakes_for_every_send);
	tcase_add_test(tc, waiter_for_a_slot_held_by_lazy_sends_is_woken);
	tcase_add_test(tc, inline_only_below_max_inline);
	suite_add_tcase(s, tc);
	tc = tcase_create("slot_wait");
	tcase_add_test(tc, exclusive_wakes_one_per_freed_slot);
	tcase_add_test(tc, all_mode_is_a_herd);
	tcase_add_test(tc, cancelled_wakeup_is_passed_on);
	tcase_add_test(tc, parked_waiter_cancel_unlinks);
	tcase_add_test(tc, teardown_wakes_all);
	tcase_add_test(tc, slot_wait_timeout_is_link_fault);
	suite_add_tcase(s, tc);
	tc = tcase_create("faults");
	tcase_add_test(tc, completion_error_takes_link_down);
	tcase_add_test(tc, post_failure_takes_link_down_and_frees_slot);
	tcase_add_test(tc, dropped_link_flushes);
	tcase_add_test(tc, bad_rkey_is_remote_access_error);
	tcase_add_test(tc, write_with_imm_is_protocol_violation);
	tcase_add_test(tc, free_completes_sends_in_flight);
	tcase_add_test(tc, fault_flushes_sends_in_flight);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(wr_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
