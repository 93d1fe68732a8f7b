// SPDX-License-Identifier: BSD-2-Clause
/*
 * Work requests of one link (net/smc's smc_wr.c): the TX slot table, the
 * posted receive buffers, and completion handling.
 *
 * TX: max_send_wr slots, each a control-message buffer (CDC or LLC, 44
 * bytes, and behind a CDC up to CDC_DATA_MAX bytes it carries: wr_tx_len)
 * with a pre-built signaled SEND and two pre-built RDMA WRITEs for the
 * data in front of it.  The slot index is the wr_id,
 * so a completion finds its slot in O(1) instead of the kernel's scan.
 * WRITEs are unsignaled; only a failed one completes, and any failure
 * takes the link down.
 *
 * Slot waiting: a sender that finds no free slot parks a struct
 * wr_waiter in the link's FIFO.  With WR_WAIT_EXCLUSIVE each freed slot
 * wakes exactly one waiter, and a woken waiter that no longer wants the
 * slot hands the wake-up on (wr_tx_wait_cancel), so none is lost; with
 * WR_WAIT_ALL every waiter is woken for every freed slot (the herd the
 * exclusive mode removes; kept to measure against).  Teardown wakes all.
 * A waiter parked longer than WR_SLOT_WAIT_MAX_MS is a link fault.
 *
 * RX: max_recv_wr buffers (48 bytes, or room for a CDC with its data
 * when the link offers CLC_FEAT_CDC_DATA), each reposted as soon as its
 * message has been dispatched by its first byte (the message type) to a
 * handler.  Only a SEND delivers a message: any other receive completion
 * (a peer's WRITE with immediate) leaves the buffer as it was, and is a
 * protocol violation that takes the link down (counted in rx_bad_opcode).
 *
 * Completions: the device calls wr_completion(); we poll in batches,
 * re-arm, and poll again so a completion racing the re-arm is not lost.
 *
 * Lazy send completions (wr_params.reap_lazily): a SEND nobody waits for
 * (wr_tx_lazy: a CDC whose connection needs nothing back from it) does
 * not arm the send CQ.  Its completion is reaped with the next receive
 * (both CQs are polled together) or the next prompt one, so a ping-pong
 * costs one wake-up per round trip instead of two: the ACK of our SEND
 * and the peer's reply used to wake us apart.  The send CQ is armed while
 * a prompt SEND is in flight or a sender is parked for a slot, and
 * wr_tx_want_done() makes the newest SEND in flight prompt for a sender
 * that finds it must wait after all (corked bytes, a full ring, a FIN to
 * confirm): RC completes SENDs in post order, so the newest one's
 * completion comes after every older one's.  A link that fails flushes
 * its receive queue too, so an error still wakes us.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "smcproxyd.h"
#include "cdc_wire.h"
#include "llc_wire.h"
#include "wire.h"

/*
 * A message's buffer, as SMC's SMC_WR_BUF_SIZE: one message and 4 bytes
 * of room, so that a message a little too long still arrives and its
 * decoder refuses it by length.  A CDC may carry CDC_DATA_MAX bytes
 * behind it (WR_BIG_SIZE).
 */
#define WR_MSG_SIZE (WIRE_MSG_LEN + 4)
#define WR_BIG_SIZE (CDC_MSG_LEN + CDC_DATA_MAX + 4)
#define WR_POLL_BATCH 16
#define WR_SLOT_WAIT_MAX_MS 10000

/* wr_id = kind << 32 | index */
enum wr_kind { WR_KIND_SEND = 1, WR_KIND_WRITE = 2, WR_KIND_RECV = 3 };

struct wr_tx_slot {
	uint8_t buf[WR_BIG_SIZE];
	struct dev_sge send_sge;
	struct dev_send_wr send;
	struct dev_sge write_sge[2][2];
	struct dev_send_wr write[2];
	wr_tx_done_fn done;
	void *arg;
	bool busy;   /* handed out by wr_tx_get */
	bool posted; /* its SEND is in flight */
	bool lazy;   /* nobody waits for its completion (wr_tx_lazy) */
	uint32_t index;
};

struct wr_link {
	const struct dev_ops *ops;
	struct dev *dev;
	struct dev_qp *qp;
	struct dev_qp_caps caps;
	struct wr_params params;
	struct wr_link_cb cb;
	struct event *wait_ev;
	struct event *poll_ev; /* a poll after arming outside a completion */
	bool down;
	bool polling; /* in wr_poll: wr_link_poll() does nothing */
	bool freeing; /* wr_link_free: no more messages dispatched */

	struct wr_tx_slot *tx;
	uint32_t tx_cnt;
	uint32_t *tx_free; /* stack of free slot indices */
	uint32_t tx_nfree;
	uint32_t tx_prompt;	    /* posted SENDs that are not lazy */
	struct wr_tx_slot *tx_last; /* the newest SEND posted */
	struct dev_mr tx_mr;
	TAILQ_HEAD(wr_waiters, wr_waiter) waiters; /* FIFO */

	uint32_t data_max; /* bytes a CDC may carry to the peer */

	uint8_t *rx_bufs;
	uint32_t rx_buf_size; /* WR_BIG_SIZE with params.cdc_data; rx_msg_max */
	uint32_t rx_cnt;
	struct dev_mr rx_mr;
	struct dev_sge *rx_sge;
	struct dev_recv_wr *rx_wr;
	wr_rx_fn rx_handler[256];

	struct wr_stats stats;
};

static void wr_poll(struct wr_link *l);

static uint64_t
wr_id_make(enum wr_kind kind, uint32_t index)
{
	return (uint64_t)kind << 32 | index;
}

const struct wr_stats *
wr_link_stats(const struct wr_link *l)
{
	return &l->stats;
}

/*
 * The memory the link registered for its messages: its TX slots and its
 * posted receive buffers (the rings a link group's owner counts in
 * rdma.max_buffer_memory).
 */
size_t
wr_link_mem(const struct wr_link *l)
{
	return l->tx_cnt * sizeof(*l->tx) + (size_t)l->rx_cnt * l->rx_buf_size;
}

const struct dev_qp_caps *
wr_link_caps(const struct wr_link *l)
{
	return &l->caps;
}

struct dev_qp *
wr_link_qp(const struct wr_link *l)
{
	return l->qp;
}

bool
wr_link_is_down(const struct wr_link *l)
{
	return l->down;
}

/*
 * The group negotiated CLC_FEAT_CDC_DATA (on), or not: whether the peer's
 * receives take a CDC carrying up to CDC_DATA_MAX bytes.
 */
void
wr_link_cdc_data(struct wr_link *l, bool on)
{
	l->data_max = on ? CDC_DATA_MAX : 0;
}

/* The most bytes a CDC posted on l may carry (0: none). */
size_t
wr_link_data_max(const struct wr_link *l)
{
	return l->data_max;
}

/* Register the handler for messages whose first byte is type. */
void
wr_rx_register(struct wr_link *l, uint8_t type, wr_rx_fn fn)
{
	l->rx_handler[type] = fn;
}

static void
wr_waiter_unlink(struct wr_link *l, struct wr_waiter *w)
{
	TAILQ_REMOVE(&l->waiters, w, entry);
	w->queued = false;
}

static void
wr_waiter_append(struct wr_link *l, struct wr_waiter *w)
{
	TAILQ_INSERT_TAIL(&l->waiters, w, entry);
	w->queued = true;
}

static void
wr_waiter_prepend(struct wr_link *l, struct wr_waiter *w)
{
	TAILQ_INSERT_HEAD(&l->waiters, w, entry);
	w->queued = true;
}

static void
wr_wait_account(struct wr_link *l, struct wr_waiter *w, uint64_t now)
{
	uint64_t waited = now - w->since_ms;

	if (waited > l->stats.longest_wait_ms)
		l->stats.longest_wait_ms = waited;
}

/*
 * Wake one waiter (exclusive) or all (herd).  The woken are unlinked
 * before their callbacks run, so a callback may park again.
 */
static void
wr_wake(struct wr_link *l, bool all)
{
	struct wr_waiters batch = TAILQ_HEAD_INITIALIZER(batch);
	struct wr_waiter *w;
	uint64_t now = now_ms();

	if (!all) {
		w = TAILQ_FIRST(&l->waiters);
		if (w == NULL)
			return;
		wr_waiter_unlink(l, w);
		wr_wait_account(l, w, now);
		w->woken = true;
		l->stats.wakeups++;
		w->wake(w, l->down ? -ENOLINK : 0);
		return;
	}
	/* detach the whole queue first: waiters that re-park go behind */
	TAILQ_CONCAT(&batch, &l->waiters, entry);
	while ((w = TAILQ_FIRST(&batch)) != NULL) {
		TAILQ_REMOVE(&batch, w, entry);
		w->queued = false;
		wr_wait_account(l, w, now);
		w->woken = true;
		l->stats.wakeups++;
		w->wake(w, l->down ? -ENOLINK : 0);
	}
}

/*
 * Take a free TX slot.  0 with *out set; -EBUSY when none is free (w, if
 * given, is parked and its wake() called when one may be had: call
 * wr_tx_get again then); -ENOLINK when the link is down.
 */
int
wr_tx_get(struct wr_link *l, struct wr_tx_slot **out, struct wr_waiter *w)
{
	struct wr_tx_slot *slot;
	bool woken = w != NULL && w->woken;

	if (l->down)
		return -ENOLINK;
	if (w != NULL)
		w->woken = false;
	if (l->tx_nfree == 0 ||
	    (w != NULL && !w->queued && !woken && !TAILQ_EMPTY(&l->waiters) &&
	     l->params.slot_wait == WR_WAIT_EXCLUSIVE)) {
		/* FIFO: a newcomer does not overtake parked waiters */
		if (w == NULL || w->queued)
			return -EBUSY;
		if (woken) {
			/* woken but beaten to the slot: back to the front */
			wr_waiter_prepend(l, w);
		} else {
			w->since_ms = now_ms();
			wr_waiter_append(l, w);
			l->stats.slot_waits++;
		}
		wr_tx_want_done(l); /* a slot frees with a completion */
		if (l->tx_nfree > 0)
			wr_wake(l, false);
		return -EBUSY;
	}
	if (w != NULL && w->queued)
		wr_waiter_unlink(l, w);
	slot = &l->tx[l->tx_free[--l->tx_nfree]];
	slot->busy = true;
	memset(slot->buf, 0, WR_MSG_SIZE);
	wr_tx_len(l, slot, LLC_MSG_LEN);
	*out = slot;
	return 0;
}

/*
 * A parked or just-woken waiter gives up (its connection closed, or it no
 * longer needs a slot).  A wake-up it received but did not use is handed
 * on to the next waiter, so a freed slot is never left unclaimed.
 */
void
wr_tx_wait_cancel(struct wr_link *l, struct wr_waiter *w)
{
	if (w->queued) {
		wr_waiter_unlink(l, w);
		return;
	}
	if (w->woken) {
		w->woken = false;
		if (l->tx_nfree > 0 && l->params.slot_wait == WR_WAIT_EXCLUSIVE)
			wr_wake(l, false);
	}
}

static void
wr_tx_free(struct wr_link *l, struct wr_tx_slot *slot)
{
	if (slot->posted && !slot->lazy)
		l->tx_prompt--;
	if (l->tx_last == slot)
		l->tx_last = NULL;
	slot->busy = false;
	slot->posted = false;
	slot->lazy = false;
	slot->done = NULL;
	slot->arg = NULL;
	l->tx_free[l->tx_nfree++] = slot->index;
	if (!TAILQ_EMPTY(&l->waiters)) {
		l->stats.contended_frees++;
		wr_wake(l, l->params.slot_wait == WR_WAIT_ALL);
	}
}

/*
 * Arm the CQs for the next completion: the receive CQ always, the send CQ
 * when send says a completion there is awaited.  1 if the device armed
 * something just now (poll once more: a completion already queued does
 * not notify), 0, or -errno.
 */
static int
wr_arm(struct wr_link *l, bool send)
{
	return l->ops->arm(l->qp, send || !l->params.reap_lazily);
}

/* Is anybody waiting for a send completion? */
static bool
wr_send_awaited(const struct wr_link *l)
{
	return l->tx_prompt > 0 || !TAILQ_EMPTY(&l->waiters);
}

static void
wr_poll_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	wr_link_poll(arg);
}

/*
 * Nothing may go until a SEND in flight completes (a TX slot, ring space,
 * corked bytes, a FIN to confirm): have the completion of the newest one
 * wake us, which comes after all the others'.  The poll that catches one
 * already completed runs from the loop, not from the caller's stack.
 */
void
wr_tx_want_done(struct wr_link *l)
{
	struct wr_tx_slot *slot = l->tx_last;

	if (l->down || l->qp == NULL || slot == NULL || !slot->lazy)
		return;
	slot->lazy = false;
	l->tx_prompt++;
	l->stats.lazy_wanted++;
	if (wr_arm(l, true) > 0)
		event_active(l->poll_ev, EV_TIMEOUT, 1);
}

/*
 * The slot's SEND is one nobody waits for: its completion may be reaped
 * whenever the link next polls (see the top of this file).  Between
 * wr_tx_get and wr_tx_post.
 */
void
wr_tx_lazy(struct wr_tx_slot *slot)
{
	slot->lazy = true;
}

/* Give back a slot taken with wr_tx_get without posting it. */
void
wr_tx_put(struct wr_link *l, struct wr_tx_slot *slot)
{
	wr_tx_free(l, slot);
}

/*
 * The slot's message buffer: 44 bytes of an LLC or CDC message (zeroed
 * by wr_tx_get), and behind a CDC up to CDC_DATA_MAX bytes it carries
 * (say how long the whole is with wr_tx_len).
 */
void *
wr_tx_buf(struct wr_tx_slot *slot)
{
	return slot->buf;
}

/* May a WR of len bytes go inline? */
static bool
wr_inline_ok(const struct wr_link *l, uint32_t len)
{
	/* drivers check length < max_inline_data (smc-r.md §5) */
	return l->params.inline_enabled && len < l->caps.max_inline_data;
}

/*
 * The slot's message is len bytes (LLC_MSG_LEN, the default, to
 * CDC_MSG_LEN + CDC_DATA_MAX): inline when the QP takes that much.
 */
void
wr_tx_len(struct wr_link *l, struct wr_tx_slot *slot, uint32_t len)
{
	slot->send_sge.length = len;
	slot->send.flags = DEV_SEND_SIGNALED | DEV_SEND_SOLICITED;
	if (wr_inline_ok(l, len))
		slot->send.flags |= DEV_SEND_INLINE;
}

static void
wr_link_fault(struct wr_link *l, const char *why)
{
	if (l->down)
		return;
	l->down = true;
	log_warnx("link %s: down: %s", l->params.name, why);
	/* what is still queued flushes now, not when the peer gives up;
	 * every flush is wanted, lazily posted SENDs' too */
	if (l->qp != NULL) {
		l->ops->qp_error(l->qp);
		(void)wr_arm(l, true);
	}
	if (l->cb.down != NULL)
		l->cb.down(l, l->cb.arg);
	/* teardown wakes all: each sees -ENOLINK */
	wr_wake(l, true);
}

/*
 * Post up to two RDMA WRITEs (w[i]: local buffer, lkey, remote address,
 * rkey) and then the slot's message as a signaled SEND; done(slot, status)
 * runs when the SEND completes, after which the slot is free again.
 * 0, or -errno (the link is then down and the slot given back).
 */
int
wr_tx_post(struct wr_link *l, struct wr_tx_slot *slot, const struct wr_write *w,
	   int nwrites, wr_tx_done_fn done, void *arg)
{
	struct dev_send_wr *first = &slot->send;
	int i, j, rc;

	if (l->down) {
		wr_tx_free(l, slot);
		return -ENOLINK;
	}
	if (!l->params.reap_lazily)
		slot->lazy = false;
	/* armed before the post, its completion cannot slip past */
	if (!slot->lazy && wr_arm(l, true) < 0) {
		wr_tx_free(l, slot);
		wr_link_fault(l, "arming the send CQ failed");
		return -EIO;
	}
	for (i = nwrites - 1; i >= 0; i--) {
		struct dev_send_wr *wr = &slot->write[i];
		uint32_t len = 0;

		wr->num_sge = w[i].nsge;
		for (j = 0; j < w[i].nsge; j++) {
			wr->sg_list[j] = w[i].sge[j];
			len += w[i].sge[j].length;
		}
		wr->remote_addr = w[i].remote_addr;
		wr->rkey = w[i].rkey;
		wr->flags = wr_inline_ok(l, len) ? DEV_SEND_INLINE : 0;
		if (wr->flags & DEV_SEND_INLINE)
			l->stats.inline_wrs++;
		wr->next = first;
		first = wr;
	}
	if (slot->send.flags & DEV_SEND_INLINE)
		l->stats.inline_wrs++;
	if (slot->send_sge.length > CDC_MSG_LEN)
		l->stats.data_sends++;
	slot->done = done;
	slot->arg = arg;
	slot->posted = true;
	rc = l->ops->post_send(l->qp, first);
	if (rc) {
		slot->posted = false;
		l->stats.errors++;
		wr_tx_free(l, slot);
		wr_link_fault(l, "post_send failed");
		return rc;
	}
	if (!slot->lazy)
		l->tx_prompt++;
	else
		l->stats.lazy_posts++;
	l->tx_last = slot;
	l->stats.posted += (uint64_t)nwrites + 1;
	l->stats.writes += (uint64_t)nwrites;
	return 0;
}

static int
wr_rx_post(struct wr_link *l, uint32_t index)
{
	l->rx_wr[index].next = NULL;
	return l->ops->post_recv(l->qp, &l->rx_wr[index]);
}

static void
wr_handle_wc(struct wr_link *l, const struct dev_wc *wc)
{
	enum wr_kind kind = (enum wr_kind)(wc->wr_id >> 32);
	uint32_t index = (uint32_t)wc->wr_id;
	struct wr_tx_slot *slot;
	const uint8_t *msg;
	wr_rx_fn fn;

	l->stats.completions++;
	if (wc->status != DEV_WC_SUCCESS)
		l->stats.errors++;
	switch (kind) {
	case WR_KIND_RECV:
		if (index >= l->rx_cnt)
			break;
		if (l->freeing)
			return;
		switch (wc->status) {
		case DEV_WC_SUCCESS:
			break;
		case DEV_WC_FLUSH_ERR:
		case DEV_WC_RETRY_EXC_ERR:
		case DEV_WC_RNR_RETRY_EXC_ERR:
			/* as the kernel: these mean the link is gone */
			wr_link_fault(l, "receive completion error");
			return;
		default:
			if (!l->down && wr_rx_post(l, index))
				wr_link_fault(l, "post_recv failed");
			return;
		}
		if (wc->opcode != DEV_WC_RECV) {
			/* a peer's WRITE with immediate consumed the receive:
			 * its buffer still holds the last message */
			l->stats.rx_bad_opcode++;
			wr_link_down(l, "a receive completed by no SEND "
					"(protocol violation)");
			return;
		}
		msg = l->rx_bufs + (size_t)index * l->rx_buf_size;
		fn = wc->byte_len > 0 ? l->rx_handler[msg[0]] : NULL;
		if (fn != NULL)
			fn(l, msg, wc->byte_len, l->cb.arg);
		else
			l->stats.rx_unknown++;
		if (!l->down && wr_rx_post(l, index))
			wr_link_fault(l, "post_recv failed");
		return;
	case WR_KIND_SEND:
	case WR_KIND_WRITE:
		if (index >= l->tx_cnt)
			break;
		slot = &l->tx[index];
		if (wc->status != DEV_WC_SUCCESS)
			wr_link_fault(l, kind == WR_KIND_WRITE ?
						 "RDMA write failed" :
						 "send completion error");
		if (kind == WR_KIND_WRITE || !slot->posted)
			return; /* the SEND behind it completes too */
		if (slot->done != NULL)
			slot->done(l, slot,
				   wc->status == DEV_WC_SUCCESS ? 0 : -EIO,
				   slot->arg);
		wr_tx_free(l, slot);
		return;
	}
	log_warnx("link %s: completion with unknown wr_id 0x%llx",
		  l->params.name, (unsigned long long)wc->wr_id);
}

static void
wr_poll(struct wr_link *l)
{
	struct dev_wc wc[WR_POLL_BATCH];
	int i, n;

	l->polling = true;
	do {
		n = l->ops->poll(l->qp, wc, WR_POLL_BATCH);
		if (n < 0) {
			wr_link_fault(l, "poll failed");
			break;
		}
		if (n > 0)
			busy_poll_note();
		for (i = 0; i < n; i++)
			wr_handle_wc(l, &wc[i]);
	} while (n == WR_POLL_BATCH);
	l->polling = false;
}

/*
 * Handle l's completions now, not when its event comes: a failover
 * validation CDC on another link must meet every CDC that reached us on
 * this one first.  Nothing while l's completions are being handled
 * already (a handler of l called us).
 */
void
wr_link_poll(struct wr_link *l)
{
	if (l != NULL && l->qp != NULL && !l->polling)
		wr_poll(l);
}

/* The device says completions are ready: poll, re-arm, poll again. */
static void
wr_completion(struct dev_qp *qp, void *arg)
{
	struct wr_link *l = arg;

	l->stats.cq_events++;
	wr_poll(l);
	/* down: the flushes come on both CQs, and every one is wanted */
	if (wr_arm(l, wr_send_awaited(l) || l->down) >= 0)
		wr_poll(l);
}

static void
wr_event(struct dev_qp *qp, enum dev_event ev, void *arg)
{
	static const char *const names[] = {
		[DEV_EV_PORT_DOWN] = "port down",
		[DEV_EV_QP_FATAL] = "QP fatal error",
		[DEV_EV_DEVICE_REMOVED] = "device removed",
	};

	wr_link_fault(arg, names[ev]);
}

/* Periodically: a waiter parked too long means the link is stuck. */
static void
wr_wait_check(evutil_socket_t fd, short what, void *arg)
{
	struct wr_link *l = arg;

	if (!TAILQ_EMPTY(&l->waiters) &&
	    now_ms() - TAILQ_FIRST(&l->waiters)->since_ms >
		    l->params.slot_wait_max_ms) {
		char why[64];

		snprintf(why, sizeof(why), "no TX slot freed for %u ms",
			 l->params.slot_wait_max_ms);
		l->stats.slot_wait_timeouts++;
		wr_link_fault(l, why);
	}
}

static void
wr_slot_init(struct wr_link *l, struct wr_tx_slot *slot, uint32_t i)
{
	int k;

	slot->index = i;
	slot->send_sge.addr = (uint64_t)(uintptr_t)slot->buf;
	slot->send_sge.lkey = l->tx_mr.lkey;
	slot->send.wr_id = wr_id_make(WR_KIND_SEND, i);
	slot->send.opcode = DEV_WR_SEND;
	wr_tx_len(l, slot, LLC_MSG_LEN);
	slot->send.sg_list = &slot->send_sge;
	slot->send.num_sge = 1;
	for (k = 0; k < 2; k++) {
		slot->write[k].wr_id = wr_id_make(WR_KIND_WRITE, i);
		slot->write[k].opcode = DEV_WR_WRITE;
		slot->write[k].sg_list = slot->write_sge[k];
	}
}

/*
 * Create a link's QP and its work requests on dev: TX slots and posted
 * receives.  NULL on failure (errno set).
 */
struct wr_link *
wr_link_new(const struct dev_ops *ops, struct dev *dev, struct event_base *base,
	    const struct wr_params *params, const struct wr_link_cb *cb)
{
	struct dev_qp_caps want = {0};
	struct dev_qp_cb qcb = {wr_completion, wr_event, NULL};
	struct timeval check;
	struct wr_link *l;
	uint32_t i;
	int rc = -ENOMEM;

	l = calloc(1, sizeof(*l));
	if (l == NULL)
		return NULL;
	TAILQ_INIT(&l->waiters);
	l->ops = ops;
	l->dev = dev;
	l->params = *params;
	l->cb = *cb;
	if (l->params.slot_wait_max_ms == 0)
		l->params.slot_wait_max_ms = WR_SLOT_WAIT_MAX_MS;
	qcb.arg = l;
	/* a slot posts at most 2 WRITEs + 1 SEND (smc-r.md §0) */
	want.max_send_wr = params->max_send_wr * 3;
	want.max_recv_wr = params->max_recv_wr;
	want.max_send_sge = 2;
	want.max_recv_sge = 1;
	want.max_inline_data = params->inline_enabled ? params->inline_size : 0;
	l->qp = ops->qp_create(dev, base, &want, &l->caps, &qcb);
	if (l->qp == NULL) {
		rc = -errno;
		goto fail;
	}
	l->tx_cnt = params->max_send_wr;
	if (l->caps.max_send_wr / 3 < l->tx_cnt)
		l->tx_cnt = l->caps.max_send_wr / 3;
	l->rx_cnt = params->max_recv_wr;
	if (l->caps.max_recv_wr < l->rx_cnt)
		l->rx_cnt = l->caps.max_recv_wr;
	if (l->tx_cnt < 1 || l->rx_cnt < 1) {
		rc = -EINVAL;
		goto fail;
	}
	l->tx = calloc(l->tx_cnt, sizeof(*l->tx));
	l->tx_free = calloc(l->tx_cnt, sizeof(*l->tx_free));
	l->rx_buf_size = params->cdc_data ? WR_BIG_SIZE : WR_MSG_SIZE;
	if (l->rx_buf_size < params->rx_msg_max)
		l->rx_buf_size = params->rx_msg_max;
	l->rx_bufs = calloc(l->rx_cnt, l->rx_buf_size);
	l->rx_sge = calloc(l->rx_cnt, sizeof(*l->rx_sge));
	l->rx_wr = calloc(l->rx_cnt, sizeof(*l->rx_wr));
	l->wait_ev = event_new(base, -1, EV_PERSIST, wr_wait_check, l);
	l->poll_ev = event_new(base, -1, 0, wr_poll_cb, l);
	if (l->tx == NULL || l->tx_free == NULL || l->rx_bufs == NULL ||
	    l->rx_sge == NULL || l->rx_wr == NULL || l->wait_ev == NULL ||
	    l->poll_ev == NULL)
		goto fail;
	rc = ops->mr_reg(dev, l->tx, l->tx_cnt * sizeof(*l->tx), 0,
			 DEV_ACCESS_LOCAL_WRITE, &l->tx_mr);
	if (rc)
		goto fail;
	rc = ops->mr_reg(dev, l->rx_bufs, (size_t)l->rx_cnt * l->rx_buf_size, 0,
			 DEV_ACCESS_LOCAL_WRITE, &l->rx_mr);
	if (rc)
		goto fail;
	for (i = 0; i < l->tx_cnt; i++) {
		wr_slot_init(l, &l->tx[i], i);
		l->tx_free[l->tx_cnt - 1 - i] = i;
	}
	l->tx_nfree = l->tx_cnt;
	for (i = 0; i < l->rx_cnt; i++) {
		l->rx_sge[i].addr =
			(uint64_t)(uintptr_t)(l->rx_bufs +
					      (size_t)i * l->rx_buf_size);
		l->rx_sge[i].length = l->rx_buf_size;
		l->rx_sge[i].lkey = l->rx_mr.lkey;
		l->rx_wr[i].wr_id = wr_id_make(WR_KIND_RECV, i);
		l->rx_wr[i].sg_list = &l->rx_sge[i];
		l->rx_wr[i].num_sge = 1;
		rc = wr_rx_post(l, i);
		if (rc)
			goto fail;
	}
	rc = wr_arm(l, false);
	if (rc < 0)
		goto fail;
	/* check a few times per bound: a stuck link shows within 1.25x */
	check.tv_sec = l->params.slot_wait_max_ms / 4000;
	check.tv_usec = (l->params.slot_wait_max_ms / 4 % 1000) * 1000;
	event_add(l->wait_ev, &check);
	return l;
fail:
	wr_link_free(l);
	errno = -rc;
	return NULL;
}

/* Connect the link's QP to the peer's (RTR, RTS) along path. */
int
wr_link_connect(struct wr_link *l, const struct dev_qp_addr *peer,
		const struct dev_path *path)
{
	int rc = l->ops->qp_connect(l->qp, peer, path);

	if (rc)
		wr_link_fault(l, "QP connect failed");
	return rc;
}

/* Take the link down now (e.g. DELETE_LINK, or a protocol violation). */
void
wr_link_down(struct wr_link *l, const char *why)
{
	wr_link_fault(l, why);
	if (l->qp != NULL)
		l->ops->qp_error(l->qp);
}

/*
 * Every SEND still in flight ends: the completions the device has are
 * handled, and the slots whose completion has not come (a flush not yet
 * delivered, a QP the peer stopped answering) complete with -ENOLINK,
 * so that whoever waits for them (a connection's CDCs in flight, an LLC
 * flow) hears of it before the QP and its CQs go.
 */
static void
wr_link_drain(struct wr_link *l)
{
	struct wr_tx_slot *slot;
	uint32_t i;

	if (l->qp == NULL || l->tx == NULL)
		return;
	l->freeing = true;
	l->ops->qp_error(l->qp);
	if (!l->polling)
		wr_poll(l);
	for (i = 0; i < l->tx_cnt; i++) {
		slot = &l->tx[i];
		if (!slot->posted)
			continue;
		l->stats.drained++;
		if (slot->done != NULL)
			slot->done(l, slot, -ENOLINK, slot->arg);
		wr_tx_free(l, slot);
	}
}

/*
 * Destroy the link: every waiter is woken with -ENOLINK first, every
 * SEND in flight completes (wr_link_drain), then the QP goes and the
 * memory is deregistered before it is freed.
 */
void
wr_link_free(struct wr_link *l)
{
	if (l == NULL)
		return;
	if (!l->down) {
		l->down = true;
		wr_wake(l, true);
	}
	wr_link_drain(l);
	if (l->wait_ev != NULL)
		event_free(l->wait_ev);
	if (l->poll_ev != NULL)
		event_free(l->poll_ev);
	if (l->qp != NULL)
		l->ops->qp_destroy(l->qp);
	if (l->tx_mr.priv != NULL)
		l->ops->mr_dereg(l->dev, &l->tx_mr);
	if (l->rx_mr.priv != NULL)
		l->ops->mr_dereg(l->dev, &l->rx_mr);
	free(l->tx);
	free(l->tx_free);
	free(l->rx_bufs);
	free(l->rx_sge);
	free(l->rx_wr);
	free(l);
}
