// SPDX-License-Identifier: BSD-2-Clause
/*
 * loopdev: the device ops table (dev.h) as an in-process model of RC
 * semantics, so the engine's tests, fuzzers and benchmarks run without
 * hardware.  Two QPs, on one model device or two sharing an event_base,
 * are connected through qp_addr/qp_connect like real peers: a process-wide
 * registry maps QPNs to QPs, and traffic only flows when each side was
 * given the other's QPN, PSN and GID.
 *
 * What it models, as verbs on a real RNIC (and rxe) behave:
 * - Completions are asynchronous: post_send only queues; WRs execute and
 *   complete later, from a zero timer on the base (one round per loop
 *   iteration) or from loopdev_run(), never inside a post call.
 * - RC order: one QP's WRs execute in post order, so a SEND's receive
 *   completion comes after the data of every earlier WRITE has landed.
 * - Queue depth: a send WR holds its slot until a completion at or after
 *   it has been polled (an unsignaled WR is freed by a later signaled
 *   one's, as on a real send queue); a receive until its completion has
 *   been polled.  Posting beyond max_send_wr/max_recv_wr is -ENOMEM.
 * - Inline data is copied at post time; without DEV_SEND_INLINE the data
 *   is read when the WR executes, so a buffer reused too early shows.
 * - Protection domains: a device is a PD, and pd_open makes more; a QP
 *   and an MR belong to the PD of the handle they were made through.
 * - Keys: every SGE is checked against the MRs of its QP's PD (lkey and
 *   range; LOCAL_WRITE for receives), an RDMA WRITE against those of the
 *   peer QP's PD (rkey, range, REMOTE_WRITE): an rkey of the same device
 *   but another PD is a bad rkey, as on an RNIC.  A bad rkey completes
 *   the WRITE with
 *   REM_ACCESS_ERR and puts both QPs in error (rxe treats it as a class C
 *   responder error).  A SEND longer than the receive buffer completes
 *   with LOC_ERR at the receiver and GENERAL_ERR (verbs: remote invalid
 *   request) at the sender, both QPs in error.
 * - A WRITE with immediate (DEV_WR_WRITE_IMM, which the engine never
 *   posts: a test plays a peer with it) writes like a WRITE and then
 *   consumes the peer's first receive, whose completion says
 *   DEV_WC_RECV_RDMA_WITH_IMM with the length written; the receive
 *   buffer is not touched.
 * - Receiver not ready: with rnr_retry 7 (what ib.c sets: infinite) a
 *   SEND finding no receive posted waits, and the WRs behind it, until
 *   one is; loopdev_rnr_waits() counts such SENDs.  A peer QP not yet
 *   connected holds traffic the same way; a peer in error, destroyed, or
 *   connected to someone else gives RETRY_EXC_ERR.
 * - Error state: every send WR not yet executed and every receive
 *   posted completes with FLUSH_ERR, signaled or not, and so does any WR
 *   posted later.  Unsignaled WRs complete only when they fail.
 * - Notification: a completion added to an armed CQ disarms it and calls
 *   the completion callback (once, later); a completion already in the
 *   CQ when arming does not (poll, arm, poll again).  Both CQs are armed
 *   at creation, as ib.c does.
 *
 * Single-threaded per event_base: connected QPs must share one.  The
 * registry alone is shared between threads, under a mutex.
 */
#include <sys/queue.h>
#include <sys/time.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "dev.h"

#define LOOPDEV_MAX_SGE 8
#define LOOPDEV_MAX_WR 16384
#define LOOPDEV_MAX_INLINE 512 /* what rxe grants at most */
#define LOOPDEV_MTU 5	       /* IB MTU 4096 */
#define LOOPDEV_RUN_ROUNDS 100000
#define LOOPDEV_RUN_DEVS 16

struct loopdev_mr {
	LIST_ENTRY(loopdev_mr) entry;
	struct loopdev *pd; /* the handle it was registered through */
	uintptr_t addr;
	uint64_t iova; /* where its keys' addresses start (ibv_reg_mr_iova) */
	size_t len;
	int access;
	uint32_t lkey;
	uint32_t rkey;
};

/* A send WR, from post until a polled completion frees its slot. */
struct loopdev_swr {
	TAILQ_ENTRY(loopdev_swr) entry;
	uint64_t wr_id;
	enum dev_wr_opcode opcode;
	int flags;
	int num_sge;
	struct dev_sge sge[LOOPDEV_MAX_SGE];
	uint64_t remote_addr;
	uint32_t rkey;
	bool executed;
	bool rnr_counted;
	uint32_t inline_len;
	unsigned char inline_data[];
};

struct loopdev_rwr {
	TAILQ_ENTRY(loopdev_rwr) entry;
	uint64_t wr_id;
	int num_sge;
	struct dev_sge sge[LOOPDEV_MAX_SGE];
};

struct loopdev_cqe {
	TAILQ_ENTRY(loopdev_cqe) entry;
	struct dev_wc wc;
	struct loopdev_swr *swr; /* send CQE: the WR it completes */
};

TAILQ_HEAD(loopdev_cq, loopdev_cqe);

enum loopdev_state { LOOPDEV_INIT, LOOPDEV_RTS, LOOPDEV_ERR };

struct loopdev_qp {
	struct loopdev *dev;
	struct loopdev *pd;	      /* the handle it was created through */
	LIST_ENTRY(loopdev_qp) entry; /* in dev->qps */
	LIST_ENTRY(loopdev_qp) reg;   /* in the registry */
	struct dev_qp_cb cb;
	struct dev_qp_caps caps;
	enum loopdev_state state;
	uint32_t qpn;
	uint32_t psn;
	/* what qp_connect was told */
	uint32_t remote_qpn;
	uint32_t rq_psn;
	uint8_t remote_gid[16];
	struct dev_path path;
	struct loopdev_qp *peer; /* remote_qpn's QP while it exists */
	TAILQ_HEAD(, loopdev_swr) sq;
	unsigned int sq_used;
	TAILQ_HEAD(, loopdev_rwr) rq; /* posted, not yet consumed */
	unsigned int rq_used;	      /* posted, completion not polled */
	struct loopdev_cq scq;
	struct loopdev_cq rcq;
	bool armed_send;
	bool armed_recv;
	bool notify;	     /* completion callback due */
	unsigned int events; /* 1 << enum dev_event, due */
	bool inject;
	enum dev_wc_status inject_status;
	bool hold; /* loopdev_hold: its WRs wait, as for lost acks */
	unsigned int rnr_waits;
};

/*
 * A model device, or a protection domain of one (loopdev_pd_open): both
 * are handles the ops take.  A device is its own root and its own
 * default PD; a PD handle has only root, pds, refs and closed.
 */
struct loopdev {
	struct loopdev *root;
	LIST_ENTRY(loopdev) pds; /* a PD handle, in root->pd_list */
	LIST_HEAD(, loopdev) pd_list;
	int refs;    /* QPs and MRs made through this handle */
	bool closed; /* pd_close ran: freed with its last QP or MR */
	struct event_base *base;
	struct event *work_ev;
	bool kicked;
	LIST_HEAD(, loopdev_qp) qps;
	LIST_HEAD(, loopdev_mr) mrs;
	uint8_t gid[16];
	uint8_t id;
	int fail_post;
	void (*port_cb)(struct dev *d, void *arg);
	void *port_arg;
};

/* The QPN registry: every model QP of the process. */
static pthread_mutex_t loopdev_lock = PTHREAD_MUTEX_INITIALIZER;
static LIST_HEAD(, loopdev_qp)
	loopdev_registry = LIST_HEAD_INITIALIZER(loopdev_registry);
static uint32_t loopdev_next_qpn = 0x11;
static uint32_t loopdev_next_key = 0x1000;
static uint8_t loopdev_next_id;

static void loopdev_qp_destroy(struct dev_qp *qp);

/* The device of a handle (a device, or a PD of one). */
static struct loopdev *
loopdev_of(struct dev *d)
{
	return ((struct loopdev *)d)->root;
}

/* The protection domain of a handle: the handle itself. */
static struct loopdev *
loopdev_pd_of(struct dev *d)
{
	return (struct loopdev *)d;
}

/* A PD handle's QP or MR went: free it if it was closed and idle. */
static void
loopdev_pd_unref(struct loopdev *pd)
{
	if (--pd->refs > 0 || !pd->closed || pd->root == pd)
		return;
	LIST_REMOVE(pd, pds);
	free(pd);
}

static struct loopdev_qp *
loopdev_qp_of(struct dev_qp *qp)
{
	return (struct loopdev_qp *)qp;
}

/* Work for d: a zero timer, so it runs once per loop iteration. */
static void
loopdev_kick(struct loopdev *d)
{
	static const struct timeval now = {0, 0};

	if (d->kicked)
		return;
	d->kicked = true;
	event_add(d->work_ev, &now);
}

/* Something changed for q: its device and its peer's have work. */
static void
loopdev_kick_qp(struct loopdev_qp *q)
{
	loopdev_kick(q->dev);
	if (q->peer != NULL)
		loopdev_kick(q->peer->dev);
}

static void
loopdev_to_error(struct loopdev_qp *q)
{
	if (q->state == LOOPDEV_ERR)
		return;
	q->state = LOOPDEV_ERR;
	loopdev_kick_qp(q);
}

static void
loopdev_cqe_add(struct loopdev_qp *q, bool recv, uint64_t wr_id,
		enum dev_wc_status status, enum dev_wc_opcode opcode,
		uint32_t byte_len, struct loopdev_swr *swr)
{
	struct loopdev_cqe *e;

	/* at most one per WR holding a slot, so the CQ cannot overflow;
	 * a model out of memory cannot model anything */
	e = calloc(1, sizeof(*e));
	if (e == NULL)
		abort();
	e->wc.wr_id = wr_id;
	e->wc.status = status;
	e->wc.opcode = opcode;
	e->wc.byte_len = byte_len;
	e->swr = swr;
	TAILQ_INSERT_TAIL(recv ? &q->rcq : &q->scq, e, entry);
	if (recv ? q->armed_recv : q->armed_send) {
		if (recv)
			q->armed_recv = false;
		else
			q->armed_send = false;
		q->notify = true;
		loopdev_kick(q->dev);
	}
}

static enum dev_wc_opcode
loopdev_wc_opcode(const struct loopdev_swr *w)
{
	return w->opcode == DEV_WR_SEND ? DEV_WC_SEND : DEV_WC_RDMA_WRITE;
}

/* w ends: a completion when signaled or failed. */
static void
loopdev_swr_complete(struct loopdev_qp *q, struct loopdev_swr *w,
		     enum dev_wc_status status)
{
	w->executed = true;
	if (status != DEV_WC_SUCCESS || (w->flags & DEV_SEND_SIGNALED))
		loopdev_cqe_add(q, false, w->wr_id, status,
				loopdev_wc_opcode(w), 0, w);
	if (status != DEV_WC_SUCCESS)
		loopdev_to_error(q);
}

/*
 * The MR of q's device with key that covers the range with access need,
 * if it is in q's protection domain: a key of another PD is no key for
 * q (an RNIC checks the MR's PD against the QP's).
 */
static struct loopdev_mr *
loopdev_mr_find(const struct loopdev_qp *q, uint32_t key, bool remote,
		uint64_t addr, size_t len, int need)
{
	struct loopdev_mr *mr;

	for (mr = LIST_FIRST(&q->dev->mrs); mr != NULL;
	     mr = LIST_NEXT(mr, entry)) {
		if ((remote ? mr->rkey : mr->lkey) != key)
			continue;
		if (mr->pd != q->pd)
			return NULL;
		if ((mr->access & need) != need || addr < mr->iova ||
		    addr - mr->iova > mr->len ||
		    len > mr->len - (addr - mr->iova))
			return NULL;
		return mr;
	}
	return NULL;
}

/* Where addr, an address in mr's key space, is in this process. */
static uint64_t
loopdev_mr_local(const struct loopdev_mr *mr, uint64_t addr)
{
	return mr->addr + (addr - mr->iova);
}

/* A list of byte ranges and a cursor over it. */
struct loopdev_span {
	unsigned char *base[LOOPDEV_MAX_SGE];
	size_t len[LOOPDEV_MAX_SGE];
	int n;
	size_t total;
};

static void
loopdev_span_add(struct loopdev_span *s, uint64_t addr, size_t len)
{
	s->base[s->n] = (unsigned char *)(uintptr_t)addr;
	s->len[s->n] = len;
	s->n++;
	s->total += len;
}

/* Copy all of src into the front of dst (which is large enough). */
static void
loopdev_span_copy(const struct loopdev_span *dst,
		  const struct loopdev_span *src)
{
	size_t doff = 0, soff = 0, chunk;
	int di = 0, si = 0;

	while (si < src->n && di < dst->n) {
		chunk = src->len[si] - soff;
		if (chunk > dst->len[di] - doff)
			chunk = dst->len[di] - doff;
		if (chunk > 0)
			memmove(dst->base[di] + doff, src->base[si] + soff,
				chunk);
		soff += chunk;
		doff += chunk;
		if (soff == src->len[si]) {
			si++;
			soff = 0;
		}
		if (doff == dst->len[di]) {
			di++;
			doff = 0;
		}
	}
}

/*
 * Is p the QP q reaches, and does it answer?  1: yes; 0: not yet (its QP
 * is not connected: q retries); -1: never (RETRY_EXC_ERR).
 */
static int
loopdev_peer_ok(const struct loopdev_qp *q, const struct loopdev_qp *p)
{
	if (p == NULL || p->state == LOOPDEV_ERR)
		return -1;
	if (memcmp(q->remote_gid, p->dev->gid, sizeof(q->remote_gid)) != 0)
		return -1;
	if (p->state == LOOPDEV_INIT)
		return 0;
	/* p drops packets out of sequence, and acks another QP */
	if (p->rq_psn != q->psn || p->remote_qpn != q->qpn ||
	    memcmp(p->remote_gid, q->dev->gid, sizeof(p->remote_gid)) != 0)
		return -1;
	return 1;
}

/* The SEND w meets p's first receive.  false: none posted (RNR). */
static bool
loopdev_deliver_send(struct loopdev_qp *q, struct loopdev_swr *w,
		     struct loopdev_qp *p, const struct loopdev_span *src)
{
	struct loopdev_rwr *r = TAILQ_FIRST(&p->rq);
	struct loopdev_span dst = {.n = 0};
	struct loopdev_mr *mr;
	enum dev_wc_status st;
	int i;

	if (r == NULL) {
		if (!w->rnr_counted) {
			w->rnr_counted = true;
			q->rnr_waits++;
		}
		return false;
	}
	TAILQ_REMOVE(&p->rq, r, entry);
	st = DEV_WC_SUCCESS;
	if (p->inject) {
		p->inject = false;
		st = p->inject_status;
	}
	for (i = 0; i < r->num_sge && st == DEV_WC_SUCCESS; i++) {
		mr = loopdev_mr_find(p, r->sge[i].lkey, false, r->sge[i].addr,
				     r->sge[i].length, DEV_ACCESS_LOCAL_WRITE);
		if (mr == NULL)
			st = DEV_WC_LOC_ERR;
		else
			loopdev_span_add(&dst,
					 loopdev_mr_local(mr, r->sge[i].addr),
					 r->sge[i].length);
	}
	if (st == DEV_WC_SUCCESS && dst.total < src->total)
		st = DEV_WC_LOC_ERR;
	if (st == DEV_WC_SUCCESS)
		loopdev_span_copy(&dst, src);
	loopdev_cqe_add(p, true, r->wr_id, st, DEV_WC_RECV,
			st == DEV_WC_SUCCESS ? (uint32_t)src->total : 0, NULL);
	free(r);
	if (st != DEV_WC_SUCCESS) {
		loopdev_to_error(p);
		/* an injected fault looks like a dead peer to the sender */
		loopdev_swr_complete(q, w,
				     st == DEV_WC_LOC_ERR ?
					     DEV_WC_GENERAL_ERR :
					     DEV_WC_RETRY_EXC_ERR);
		return true;
	}
	loopdev_swr_complete(q, w, DEV_WC_SUCCESS);
	return true;
}

/* Execute w, q's oldest WR not yet executed.  false: it must wait. */
static bool
loopdev_swr_execute(struct loopdev_qp *q, struct loopdev_swr *w)
{
	struct loopdev_qp *p = q->peer;
	struct loopdev_span src = {.n = 0};
	struct loopdev_mr *mr;
	int i, ok;

	if (q->inject) {
		q->inject = false;
		loopdev_swr_complete(q, w, q->inject_status);
		return true;
	}
	ok = loopdev_peer_ok(q, p);
	if (ok == 0)
		return false;
	if (ok < 0) {
		loopdev_swr_complete(q, w, DEV_WC_RETRY_EXC_ERR);
		return true;
	}
	if (w->flags & DEV_SEND_INLINE) {
		loopdev_span_add(&src, (uintptr_t)w->inline_data,
				 w->inline_len);
	} else {
		for (i = 0; i < w->num_sge; i++) {
			mr = loopdev_mr_find(q, w->sge[i].lkey, false,
					     w->sge[i].addr, w->sge[i].length,
					     0);
			if (mr == NULL) {
				loopdev_swr_complete(q, w, DEV_WC_LOC_ERR);
				return true;
			}
			loopdev_span_add(&src,
					 loopdev_mr_local(mr, w->sge[i].addr),
					 w->sge[i].length);
		}
	}
	if (w->opcode == DEV_WR_SEND)
		return loopdev_deliver_send(q, w, p, &src);
	/* with immediate: it needs a receive of p, as a SEND does */
	if (w->opcode == DEV_WR_WRITE_IMM && TAILQ_EMPTY(&p->rq)) {
		if (!w->rnr_counted) {
			w->rnr_counted = true;
			q->rnr_waits++;
		}
		return false;
	}

	mr = NULL;
	if (src.total > 0 &&
	    (mr = loopdev_mr_find(p, w->rkey, true, w->remote_addr, src.total,
				  DEV_ACCESS_REMOTE_WRITE)) == NULL) {
		loopdev_swr_complete(q, w, DEV_WC_REM_ACCESS_ERR);
		loopdev_to_error(p);
		return true;
	}
	if (mr != NULL) {
		struct loopdev_span dst = {.n = 0};

		loopdev_span_add(&dst, loopdev_mr_local(mr, w->remote_addr),
				 src.total);
		loopdev_span_copy(&dst, &src);
	}
	if (w->opcode == DEV_WR_WRITE_IMM) {
		struct loopdev_rwr *r = TAILQ_FIRST(&p->rq);

		/* the receive is consumed, its buffer left as it was */
		TAILQ_REMOVE(&p->rq, r, entry);
		loopdev_cqe_add(p, true, r->wr_id, DEV_WC_SUCCESS,
				DEV_WC_RECV_RDMA_WITH_IMM, (uint32_t)src.total,
				NULL);
		free(r);
	}
	loopdev_swr_complete(q, w, DEV_WC_SUCCESS);
	return true;
}

/* In error: every WR not yet executed, and every receive, flushes. */
static int
loopdev_flush(struct loopdev_qp *q)
{
	struct loopdev_swr *w;
	struct loopdev_rwr *r;
	int n = 0;

	for (w = TAILQ_FIRST(&q->sq); w != NULL; w = TAILQ_NEXT(w, entry)) {
		if (w->executed)
			continue;
		w->executed = true;
		loopdev_cqe_add(q, false, w->wr_id, DEV_WC_FLUSH_ERR,
				loopdev_wc_opcode(w), 0, w);
		n++;
	}
	while ((r = TAILQ_FIRST(&q->rq)) != NULL) {
		TAILQ_REMOVE(&q->rq, r, entry);
		loopdev_cqe_add(q, true, r->wr_id, DEV_WC_FLUSH_ERR,
				DEV_WC_RECV, 0, NULL);
		free(r);
		n++;
	}
	return n;
}

/* q's oldest send WR not yet executed, if any. */
static struct loopdev_swr *
loopdev_sq_next(struct loopdev_qp *q)
{
	struct loopdev_swr *w;

	for (w = TAILQ_FIRST(&q->sq); w != NULL; w = TAILQ_NEXT(w, entry))
		if (!w->executed)
			return w;
	return NULL;
}

/* Run q's send queue as far as it goes; WRs completed. */
static int
loopdev_qp_execute(struct loopdev_qp *q)
{
	struct loopdev_swr *w;
	int n = 0;

	while (q->state == LOOPDEV_RTS && !q->hold &&
	       (w = loopdev_sq_next(q)) != NULL && loopdev_swr_execute(q, w))
		n++;
	if (q->state == LOOPDEV_ERR)
		n += loopdev_flush(q);
	return n;
}

/* The first QP of d with a callback due. */
static struct loopdev_qp *
loopdev_due(struct loopdev *d)
{
	struct loopdev_qp *q;

	for (q = LIST_FIRST(&d->qps); q != NULL; q = LIST_NEXT(q, entry))
		if (q->events != 0 || q->notify)
			return q;
	return NULL;
}

/*
 * Callbacks due on d: async events, then completions.  A callback may
 * post, poll, arm or destroy QPs, so each one restarts the search.
 */
static int
loopdev_callbacks(struct loopdev *d)
{
	struct loopdev_qp *q;
	unsigned int ev;
	int n = 0;

	while ((q = loopdev_due(d)) != NULL) {
		n++;
		if (q->events != 0) {
			ev = (unsigned int)__builtin_ctz(q->events);
			q->events &= ~(1u << ev);
			if (q->cb.event != NULL)
				q->cb.event((struct dev_qp *)q,
					    (enum dev_event)ev, q->cb.arg);
			continue;
		}
		q->notify = false;
		if (q->cb.completion != NULL)
			q->cb.completion((struct dev_qp *)q, q->cb.arg);
	}
	return n;
}

/* One round on d: execute every QP's queue, then the callbacks due. */
static int
loopdev_step(struct loopdev *d)
{
	struct loopdev_qp *q;
	int n = 0;

	d->kicked = false;
	for (q = LIST_FIRST(&d->qps); q != NULL; q = LIST_NEXT(q, entry))
		n += loopdev_qp_execute(q);
	return n + loopdev_callbacks(d);
}

static void
loopdev_work_cb(evutil_socket_t fd, short what, void *arg)
{
	struct loopdev *d = arg;

	(void)fd;
	(void)what;
	/* one round per loop iteration: sockets get their turn */
	if (loopdev_step(d) > 0)
		loopdev_kick(d);
}

/* d and the devices its QPs' peers are on. */
static int
loopdev_fabric(struct loopdev *d, struct loopdev **devs, int max)
{
	struct loopdev_qp *q;
	int n = 1, i;

	devs[0] = d;
	for (q = LIST_FIRST(&d->qps); q != NULL; q = LIST_NEXT(q, entry)) {
		if (q->peer == NULL)
			continue;
		for (i = 0; i < n && devs[i] != q->peer->dev; i++)
			;
		if (i == n && n < max)
			devs[n++] = q->peer->dev;
	}
	return n;
}

/*
 * A new model device on base.  Its QPs' work and callbacks run from an
 * event on base, or from loopdev_run().  NULL with errno set.
 */
struct dev *
loopdev_new(struct event_base *base)
{
	struct loopdev *d;

	d = calloc(1, sizeof(*d));
	if (d == NULL)
		return NULL;
	d->root = d;
	LIST_INIT(&d->pd_list);
	d->base = base;
	LIST_INIT(&d->qps);
	LIST_INIT(&d->mrs);
	d->work_ev = event_new(base, -1, 0, loopdev_work_cb, d);
	if (d->work_ev == NULL) {
		free(d);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&loopdev_lock);
	d->id = ++loopdev_next_id;
	pthread_mutex_unlock(&loopdev_lock);
	/* ::ffff:127.0.1.id, a RoCE v2 style IPv4 GID */
	d->gid[10] = 0xff;
	d->gid[11] = 0xff;
	d->gid[12] = 127;
	d->gid[14] = 1;
	d->gid[15] = d->id;
	return (struct dev *)d;
}

/* Free a model device, with whatever QPs and MRs it still has. */
void
loopdev_free(struct dev *dev)
{
	struct loopdev *d, *pd;
	struct loopdev_qp *q;
	struct loopdev_mr *mr;

	if (dev == NULL)
		return;
	d = loopdev_of(dev);
	while ((q = LIST_FIRST(&d->qps)) != NULL)
		loopdev_qp_destroy((struct dev_qp *)q);
	while ((mr = LIST_FIRST(&d->mrs)) != NULL) {
		LIST_REMOVE(mr, entry);
		free(mr);
	}
	while ((pd = LIST_FIRST(&d->pd_list)) != NULL) {
		LIST_REMOVE(pd, pds);
		free(pd);
	}
	event_free(d->work_ev);
	free(d);
}

/*
 * Execute and deliver everything due on d and on its QPs' peers' devices
 * until nothing moves: WRs held by a receiver not ready or a peer not yet
 * connected stay (loopdev_pending() counts them).  Returns how many WRs
 * completed and callbacks ran, -ELOOP if still busy after
 * LOOPDEV_RUN_ROUNDS rounds.  Not from a callback; callbacks must not
 * free a device.
 */
int
loopdev_run(struct dev *dev)
{
	struct loopdev *devs[LOOPDEV_RUN_DEVS];
	int round, total = 0, n, ndevs, i;

	for (round = 0; round < LOOPDEV_RUN_ROUNDS; round++) {
		ndevs = loopdev_fabric(loopdev_of(dev), devs, LOOPDEV_RUN_DEVS);
		n = 0;
		for (i = 0; i < ndevs; i++)
			n += loopdev_step(devs[i]);
		if (n == 0)
			return total;
		total += n;
	}
	return -ELOOP;
}

/*
 * Work not yet done on d and its QPs' peers' devices: send WRs not yet
 * executed (including held ones), receives to flush, callbacks due.
 */
int
loopdev_pending(struct dev *dev)
{
	struct loopdev *devs[LOOPDEV_RUN_DEVS];
	struct loopdev_qp *q;
	struct loopdev_swr *w;
	struct loopdev_rwr *r;
	int n = 0, ndevs, i;

	ndevs = loopdev_fabric(loopdev_of(dev), devs, LOOPDEV_RUN_DEVS);
	for (i = 0; i < ndevs; i++) {
		for (q = LIST_FIRST(&devs[i]->qps); q != NULL;
		     q = LIST_NEXT(q, entry)) {
			for (w = TAILQ_FIRST(&q->sq); w != NULL;
			     w = TAILQ_NEXT(w, entry))
				n += !w->executed;
			if (q->state == LOOPDEV_ERR)
				for (r = TAILQ_FIRST(&q->rq); r != NULL;
				     r = TAILQ_NEXT(r, entry))
					n++;
			n += q->notify + __builtin_popcount(q->events);
		}
	}
	return n;
}

/* Make the nth post_send on d from now (1: the next) fail with -ENOMEM,
 * posting nothing; 0 cancels. */
void
loopdev_fail_post(struct dev *dev, int n)
{
	loopdev_of(dev)->fail_post = n > 0 ? n : 0;
}

/*
 * The next WR of qp to complete, send or receive, completes with status
 * instead and the QP goes to error.  A receive failed this way looks to
 * the sender like a dead peer (RETRY_EXC_ERR).
 */
void
loopdev_error_next_completion(struct dev_qp *qp, enum dev_wc_status status)
{
	struct loopdev_qp *q = loopdev_qp_of(qp);

	q->inject = true;
	q->inject_status = status;
	loopdev_kick_qp(q);
}

/* The link under qp breaks: it and its peer go to error and flush. */
void
loopdev_drop_link(struct dev_qp *qp)
{
	struct loopdev_qp *q = loopdev_qp_of(qp);

	if (q->peer != NULL)
		loopdev_to_error(q->peer);
	loopdev_to_error(q);
}

/*
 * With on, qp's send WRs stop executing, as when its peer stops
 * acknowledging (RC retries, and nothing completes until the QP goes
 * to error, which flushes them); off lets them go again.
 */
void
loopdev_hold(struct dev_qp *qp, bool on)
{
	struct loopdev_qp *q = loopdev_qp_of(qp);

	q->hold = on;
	loopdev_kick_qp(q);
}

/* Deliver the async event ev to qp's callback, later. */
void
loopdev_async_event(struct dev_qp *qp, enum dev_event ev)
{
	struct loopdev_qp *q = loopdev_qp_of(qp);

	q->events |= 1u << ev;
	loopdev_kick(q->dev);
}

/* How many SENDs of qp found no receive posted and had to wait. */
unsigned int
loopdev_rnr_waits(const struct dev_qp *qp)
{
	return ((const struct loopdev_qp *)qp)->rnr_waits;
}

static int
loopdev_mr_reg(struct dev *dev, void *addr, size_t len, uint64_t iova,
	       int access, struct dev_mr *out)
{
	struct loopdev *d = loopdev_of(dev), *pd = loopdev_pd_of(dev);
	struct loopdev_mr *mr;

	if (pd->closed || addr == NULL || len == 0 ||
	    (access & ~(DEV_ACCESS_LOCAL_WRITE | DEV_ACCESS_REMOTE_WRITE)))
		return -EINVAL;
	/* verbs: remote write needs local write */
	if ((access & DEV_ACCESS_REMOTE_WRITE) &&
	    !(access & DEV_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	mr = calloc(1, sizeof(*mr));
	if (mr == NULL)
		return -ENOMEM;
	mr->pd = pd;
	pd->refs++;
	mr->addr = (uintptr_t)addr;
	mr->iova = iova != 0 ? iova : (uintptr_t)addr;
	mr->len = len;
	mr->access = access;
	pthread_mutex_lock(&loopdev_lock);
	mr->lkey = loopdev_next_key++;
	mr->rkey = loopdev_next_key++;
	pthread_mutex_unlock(&loopdev_lock);
	LIST_INSERT_HEAD(&d->mrs, mr, entry);
	out->addr = addr;
	out->iova = mr->iova;
	out->len = len;
	out->lkey = mr->lkey;
	out->rkey = mr->rkey;
	out->priv = mr;
	return 0;
}

static void
loopdev_mr_dereg(struct dev *dev, struct dev_mr *out)
{
	struct loopdev_mr *mr = out->priv;

	(void)dev;
	if (mr == NULL)
		return;
	LIST_REMOVE(mr, entry);
	loopdev_pd_unref(mr->pd);
	free(mr);
	out->priv = NULL;
}

static struct dev_qp *
loopdev_qp_create(struct dev *dev, struct event_base *base,
		  const struct dev_qp_caps *want, struct dev_qp_caps *got,
		  const struct dev_qp_cb *cb)
{
	struct loopdev *d = loopdev_of(dev), *pd = loopdev_pd_of(dev);
	struct loopdev_qp *q;

	if (pd->closed || base != d->base || cb == NULL ||
	    want->max_send_wr == 0 || want->max_recv_wr == 0 ||
	    want->max_send_wr > LOOPDEV_MAX_WR ||
	    want->max_recv_wr > LOOPDEV_MAX_WR ||
	    want->max_send_sge > LOOPDEV_MAX_SGE ||
	    want->max_recv_sge > LOOPDEV_MAX_SGE) {
		errno = EINVAL;
		return NULL;
	}
	q = calloc(1, sizeof(*q));
	if (q == NULL)
		return NULL;
	q->dev = d;
	q->pd = pd;
	pd->refs++;
	q->cb = *cb;
	q->caps = *want;
	if (q->caps.max_inline_data > LOOPDEV_MAX_INLINE)
		q->caps.max_inline_data = LOOPDEV_MAX_INLINE;
	*got = q->caps;
	q->state = LOOPDEV_INIT;
	q->armed_send = true;
	q->armed_recv = true;
	TAILQ_INIT(&q->sq);
	TAILQ_INIT(&q->rq);
	TAILQ_INIT(&q->scq);
	TAILQ_INIT(&q->rcq);
	pthread_mutex_lock(&loopdev_lock);
	q->qpn = loopdev_next_qpn++ & 0xffffff;
	LIST_INSERT_HEAD(&loopdev_registry, q, reg);
	pthread_mutex_unlock(&loopdev_lock);
	/* deterministic, but no two alike and none a small number */
	q->psn = (q->qpn * 0x9e3779b1u) & 0xffffff;
	LIST_INSERT_HEAD(&d->qps, q, entry);
	return (struct dev_qp *)q;
}

static int
loopdev_qp_addr(struct dev_qp *qp, struct dev_qp_addr *out)
{
	struct loopdev_qp *q = loopdev_qp_of(qp);

	memset(out, 0, sizeof(*out));
	memcpy(out->gid, q->dev->gid, sizeof(out->gid));
	out->mac[0] = 0x02;
	out->mac[5] = q->dev->id;
	out->qpn = q->qpn;
	out->psn = q->psn;
	out->mtu = LOOPDEV_MTU;
	return 0;
}

/* The path qp_connect was given (zeros before it was). */
const struct dev_path *
loopdev_qp_path(const struct dev_qp *qp)
{
	return &((const struct loopdev_qp *)qp)->path;
}

static int
loopdev_qp_connect(struct dev_qp *qp, const struct dev_qp_addr *peer,
		   const struct dev_path *path)
{
	struct loopdev_qp *q = loopdev_qp_of(qp), *p;

	if (q->state != LOOPDEV_INIT || peer->mtu < 1 || peer->mtu > 5 ||
	    peer->qpn > 0xffffff || peer->psn > 0xffffff ||
	    !dev_path_valid(path))
		return -EINVAL;
	pthread_mutex_lock(&loopdev_lock);
	for (p = LIST_FIRST(&loopdev_registry); p != NULL;
	     p = LIST_NEXT(p, reg))
		if (p->qpn == peer->qpn)
			break;
	pthread_mutex_unlock(&loopdev_lock);
	if (p != NULL && p->dev->base != q->dev->base)
		return -EINVAL;
	q->remote_qpn = peer->qpn;
	q->rq_psn = peer->psn;
	memcpy(q->remote_gid, peer->gid, sizeof(q->remote_gid));
	q->path = *path;
	q->peer = p;
	q->state = LOOPDEV_RTS;
	/* the peer may have traffic waiting for us */
	loopdev_kick_qp(q);
	return 0;
}

static int
loopdev_qp_error(struct dev_qp *qp)
{
	loopdev_to_error(loopdev_qp_of(qp));
	return 0;
}

static void
loopdev_qp_destroy(struct dev_qp *qp)
{
	struct loopdev_qp *q = loopdev_qp_of(qp), *p;
	struct loopdev_swr *w;
	struct loopdev_rwr *r;
	struct loopdev_cqe *e;

	pthread_mutex_lock(&loopdev_lock);
	LIST_REMOVE(q, reg);
	for (p = LIST_FIRST(&loopdev_registry); p != NULL;
	     p = LIST_NEXT(p, reg)) {
		if (p->peer == q) {
			p->peer = NULL;
			loopdev_kick(p->dev);
		}
	}
	pthread_mutex_unlock(&loopdev_lock);
	LIST_REMOVE(q, entry);
	while ((e = TAILQ_FIRST(&q->scq)) != NULL) {
		TAILQ_REMOVE(&q->scq, e, entry);
		free(e);
	}
	while ((e = TAILQ_FIRST(&q->rcq)) != NULL) {
		TAILQ_REMOVE(&q->rcq, e, entry);
		free(e);
	}
	while ((w = TAILQ_FIRST(&q->sq)) != NULL) {
		TAILQ_REMOVE(&q->sq, w, entry);
		free(w);
	}
	while ((r = TAILQ_FIRST(&q->rq)) != NULL) {
		TAILQ_REMOVE(&q->rq, r, entry);
		free(r);
	}
	loopdev_pd_unref(q->pd);
	free(q);
}

/*
 * dev_ops.pd_open: a protection domain of dev's device.  NULL with
 * errno set.
 */
static struct dev *
loopdev_pd_open(struct dev *dev)
{
	struct loopdev *d = loopdev_of(dev), *pd;

	pd = calloc(1, sizeof(*pd));
	if (pd == NULL)
		return NULL;
	pd->root = d;
	LIST_INSERT_HEAD(&d->pd_list, pd, pds);
	return (struct dev *)pd;
}

/* dev_ops.pd_close: freed now, or with its last QP or MR. */
static void
loopdev_pd_close(struct dev *dev)
{
	struct loopdev *pd = loopdev_pd_of(dev);

	if (pd == NULL || pd->root == pd || pd->closed)
		return;
	pd->closed = true;
	pd->refs++;
	loopdev_pd_unref(pd);
}

/* dev_ops.pd_closed */
static bool
loopdev_pd_closed(struct dev *dev)
{
	struct loopdev *pd = loopdev_pd_of(dev);

	return pd != NULL && pd->root != pd && pd->closed;
}

/* One send WR into q's queue: 0 or -errno as verbs would fail it. */
static int
loopdev_post_one(struct loopdev_qp *q, const struct dev_send_wr *wr)
{
	struct loopdev_swr *w;
	size_t len = 0;
	unsigned char *p;
	int i;

	if (q->sq_used >= q->caps.max_send_wr)
		return -ENOMEM;
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > q->caps.max_send_sge ||
	    (wr->opcode != DEV_WR_SEND && wr->opcode != DEV_WR_WRITE &&
	     wr->opcode != DEV_WR_WRITE_IMM))
		return -EINVAL;
	if (wr->flags & DEV_SEND_INLINE) {
		for (i = 0; i < wr->num_sge; i++)
			len += wr->sg_list[i].length;
		if (len > q->caps.max_inline_data)
			return -EINVAL;
	}
	w = calloc(1, sizeof(*w) + len);
	if (w == NULL)
		return -ENOMEM;
	w->wr_id = wr->wr_id;
	w->opcode = wr->opcode;
	w->flags = wr->flags;
	w->remote_addr = wr->remote_addr;
	w->rkey = wr->rkey;
	if (wr->flags & DEV_SEND_INLINE) {
		/* the caller may reuse the buffer once we return */
		p = w->inline_data;
		for (i = 0; i < wr->num_sge; i++) {
			memcpy(p, (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			p += wr->sg_list[i].length;
		}
		w->inline_len = (uint32_t)len;
	} else {
		w->num_sge = wr->num_sge;
		memcpy(w->sge, wr->sg_list,
		       (size_t)wr->num_sge * sizeof(w->sge[0]));
	}
	TAILQ_INSERT_TAIL(&q->sq, w, entry);
	q->sq_used++;
	return 0;
}

static int
loopdev_post_send(struct dev_qp *qp, struct dev_send_wr *wr)
{
	struct loopdev_qp *q = loopdev_qp_of(qp);
	struct loopdev *d = q->dev;
	int ret = 0, n = 0;

	if (d->fail_post > 0 && --d->fail_post == 0)
		return -ENOMEM;
	if (q->state == LOOPDEV_INIT)
		return -EINVAL;
	for (; wr != NULL; wr = wr->next, n++) {
		ret = loopdev_post_one(q, wr);
		if (ret < 0)
			break;
	}
	if (n > 0)
		loopdev_kick_qp(q);
	return ret;
}

static int
loopdev_post_recv(struct dev_qp *qp, struct dev_recv_wr *wr)
{
	struct loopdev_qp *q = loopdev_qp_of(qp);
	struct loopdev_rwr *r;
	int ret = 0, n = 0;

	for (; wr != NULL; wr = wr->next, n++) {
		if (q->rq_used >= q->caps.max_recv_wr) {
			ret = -ENOMEM;
			break;
		}
		if (wr->num_sge < 0 ||
		    (uint32_t)wr->num_sge > q->caps.max_recv_sge) {
			ret = -EINVAL;
			break;
		}
		r = calloc(1, sizeof(*r));
		if (r == NULL) {
			ret = -ENOMEM;
			break;
		}
		r->wr_id = wr->wr_id;
		r->num_sge = wr->num_sge;
		memcpy(r->sge, wr->sg_list,
		       (size_t)wr->num_sge * sizeof(r->sge[0]));
		TAILQ_INSERT_TAIL(&q->rq, r, entry);
		q->rq_used++;
	}
	/* a SEND of the peer may be waiting for it */
	if (n > 0)
		loopdev_kick_qp(q);
	return ret;
}

/* A polled send completion frees its WR's slot and those before it. */
static void
loopdev_retire(struct loopdev_qp *q, struct loopdev_swr *upto)
{
	struct loopdev_swr *w;

	bool last = false;

	while (!last && (w = TAILQ_FIRST(&q->sq)) != NULL) {
		TAILQ_REMOVE(&q->sq, w, entry);
		q->sq_used--;
		last = w == upto;
		free(w);
	}
}

static int
loopdev_poll(struct dev_qp *qp, struct dev_wc *wc, int n)
{
	struct loopdev_qp *q = loopdev_qp_of(qp);
	struct loopdev_cqe *e;
	int got = 0;

	while (got < n && (e = TAILQ_FIRST(&q->scq)) != NULL) {
		TAILQ_REMOVE(&q->scq, e, entry);
		wc[got++] = e->wc;
		loopdev_retire(q, e->swr);
		free(e);
	}
	while (got < n && (e = TAILQ_FIRST(&q->rcq)) != NULL) {
		TAILQ_REMOVE(&q->rcq, e, entry);
		wc[got++] = e->wc;
		q->rq_used--;
		free(e);
	}
	return got;
}

static int
loopdev_arm(struct dev_qp *qp, bool send)
{
	struct loopdev_qp *q = loopdev_qp_of(qp);
	int armed = !q->armed_recv || (send && !q->armed_send);

	if (send)
		q->armed_send = true;
	q->armed_recv = true;
	return armed;
}

static void
loopdev_port_watch(struct dev *dev, void (*cb)(struct dev *d, void *arg),
		   void *arg)
{
	struct loopdev *d = loopdev_of(dev);

	d->port_cb = cb;
	d->port_arg = arg;
}

/* The device's port became active again: tell whoever watches it, now. */
void
loopdev_port_active(struct dev *dev)
{
	struct loopdev *d = loopdev_of(dev);

	if (d->port_cb != NULL)
		d->port_cb(dev, d->port_arg);
}

const struct dev_ops loopdev_ops = {
	.name = "loopdev",
	.pd_open = loopdev_pd_open,
	.pd_close = loopdev_pd_close,
	.pd_closed = loopdev_pd_closed,
	.mr_reg = loopdev_mr_reg,
	.mr_dereg = loopdev_mr_dereg,
	.qp_create = loopdev_qp_create,
	.qp_addr = loopdev_qp_addr,
	.qp_connect = loopdev_qp_connect,
	.qp_error = loopdev_qp_error,
	.qp_destroy = loopdev_qp_destroy,
	.post_send = loopdev_post_send,
	.post_recv = loopdev_post_recv,
	.poll = loopdev_poll,
	.arm = loopdev_arm,
	.port_watch = loopdev_port_watch,
};
