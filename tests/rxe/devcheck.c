// SPDX-License-Identifier: BSD-2-Clause
/*
 * ib_dev_ops on a real device (rxe in the Soft-RoCE VM): two QPs of one
 * port connected to each other through qp_addr/qp_connect, the way two
 * daemons connect theirs, then what the engine relies on: RDMA WRITE
 * inline and not, a signaled SEND received, the bytes in place, a chain
 * longer than one ibv_post_send batch, max_inline_data read back (and a
 * request the device refuses retried smaller), a receiver not ready
 * waited for (rnr_retry 7), a bad rkey failing with REM_ACCESS_ERR and
 * the QP flushing, qp_error flushing posted receives, and, given the
 * netdev under the device, the port going down reaching every QP as an
 * async event (the netdev is brought up again).  What the responder does
 * on errors is printed, so loopdev.c can be checked against it.
 *
 * usage: devcheck DEVICE LOCAL_IP [NETDEV]   (exit 0: all checks passed)
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "dev.h"
#include "smcproxyd.h"

static const struct dev_path smc_path = DEV_PATH_SMC;

#define BUF_SIZE 65536
#define RX_SIZE 64
#define WAIT_MS 5000

/* One QP and the completions its callback polled. */
struct end {
	const char *name;
	struct dev_qp *qp;
	struct dev_qp_caps caps;
	struct dev_wc wc[128];
	int nwc;
	int notified;
	int events;
	enum dev_event last_event;
};

static const struct dev_ops *ops = &ib_dev_ops;
static struct event_base *base;
static struct dev *dev;
static int failures;
static unsigned char *sbuf, *rmb, *rbuf;
/* where the RMB is registered (ibv_reg_mr_iova), its page offset added */
#define RMB_IOVA 0x5a5a5a5a0000ULL
static struct dev_mr smr, rmr, xmr;

static const char *const status_names[] = {
	[DEV_WC_SUCCESS] = "SUCCESS",
	[DEV_WC_FLUSH_ERR] = "FLUSH_ERR",
	[DEV_WC_REM_ACCESS_ERR] = "REM_ACCESS_ERR",
	[DEV_WC_RETRY_EXC_ERR] = "RETRY_EXC_ERR",
	[DEV_WC_RNR_RETRY_EXC_ERR] = "RNR_RETRY_EXC_ERR",
	[DEV_WC_LOC_ERR] = "LOC_ERR",
	[DEV_WC_GENERAL_ERR] = "GENERAL_ERR",
};

static void __attribute__((format(printf, 2, 3)))
check(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s: ", ok ? "ok" : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!ok)
		failures++;
}

static void
drain(struct end *e)
{
	int n;

	while (e->nwc < 128 &&
	       (n = ops->poll(e->qp, e->wc + e->nwc, 128 - e->nwc)) > 0)
		e->nwc += n;
}

/* What the engine does: poll, arm, poll again. */
static void
on_completion(struct dev_qp *qp, void *arg)
{
	struct end *e = arg;

	(void)qp;
	e->notified++;
	drain(e);
	if (ops->arm(e->qp, true) < 0)
		check(false, "%s: arm", e->name);
	drain(e);
}

static void
on_event(struct dev_qp *qp, enum dev_event ev, void *arg)
{
	struct end *e = arg;

	(void)qp;
	e->events++;
	e->last_event = ev;
	printf("info: %s: async event %d\n", e->name, ev);
}

static void
tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
}

/* Run the event loop until e has n completions or ms passed. */
static bool
wait_wc(struct end *e, int n, long ms)
{
	uint64_t end = now_ms() + ms;

	while (e->nwc < n && now_ms() < end)
		event_base_loop(base, EVLOOP_ONCE);
	return e->nwc >= n;
}

static void
settle(long ms)
{
	uint64_t end = now_ms() + ms;

	while (now_ms() < end)
		event_base_loop(base, EVLOOP_ONCE);
}

static bool
qp_new(struct end *e, const char *name, uint32_t inline_size)
{
	struct dev_qp_caps want = {48, 16, 2, 1, inline_size};
	struct dev_qp_cb cb = {on_completion, on_event, e};

	memset(e, 0, sizeof(*e));
	e->name = name;
	e->qp = ops->qp_create(dev, base, &want, &e->caps, &cb);
	if (e->qp == NULL) {
		check(false, "%s: qp_create: %s", name, strerror(errno));
		return false;
	}
	return true;
}

/* x and y, connected to each other like two daemons' link QPs. */
static bool
pair_new(struct end *x, struct end *y, const char *nx, const char *ny)
{
	struct dev_qp_addr ax, ay;
	int rx, ry;

	if (!qp_new(x, nx, 256) || !qp_new(y, ny, 256))
		return false;
	ops->qp_addr(x->qp, &ax);
	ops->qp_addr(y->qp, &ay);
	rx = ops->qp_connect(x->qp, &ay, &smc_path);
	ry = ops->qp_connect(y->qp, &ax, &smc_path);
	check(rx == 0 && ry == 0,
	      "%s qpn %u psn 0x%06x <-> %s qpn %u psn 0x%06x connected "
	      "(mtu enum %d)",
	      nx, ax.qpn, ax.psn, ny, ay.qpn, ay.psn, ax.mtu);
	return rx == 0 && ry == 0;
}

static void
pair_free(struct end *x, struct end *y)
{
	if (x->qp != NULL)
		ops->qp_destroy(x->qp);
	if (y->qp != NULL)
		ops->qp_destroy(y->qp);
	x->qp = y->qp = NULL;
}

static int
post_recv(struct end *e, uint64_t id, uint32_t slot, uint32_t len)
{
	struct dev_sge sge = {(uintptr_t)(rbuf + slot * RX_SIZE), len,
			      xmr.lkey};
	struct dev_recv_wr wr = {NULL, id, &sge, 1};

	return ops->post_recv(e->qp, &wr);
}

static const char *
st(enum dev_wc_status s)
{
	return status_names[s];
}

static void
fill(unsigned char *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(seed + i * 7);
}

/* An SGE over sbuf[off, off + len). */
static struct dev_sge
sge_at(size_t off, uint32_t len)
{
	struct dev_sge sge = {(uintptr_t)sbuf + off, len, smr.lkey};

	return sge;
}

/* A send WR; a WRITE goes to the RMB at roff with rkey. */
static struct dev_send_wr
wr_make(uint64_t id, enum dev_wr_opcode op, int flags, struct dev_sge *sge,
	int nsge, size_t roff, uint32_t rkey)
{
	struct dev_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.opcode = op;
	wr.flags = flags;
	wr.sg_list = sge;
	wr.num_sge = nsge;
	if (op == DEV_WR_WRITE) {
		wr.remote_addr = rmr.iova + roff;
		wr.rkey = rkey;
	}
	return wr;
}

static void
data_path(struct end *a, struct end *b)
{
	struct dev_sge sg_in, sg_w[2], sg_s, sg_c[20];
	struct dev_send_wr wr[3], chain[20];
	unsigned char expect[4000];
	int i, ret;
	bool ok;

	for (i = 0; i < 8; i++)
		post_recv(b, 100 + (uint64_t)i, (uint32_t)i, RX_SIZE);

	/* inline WRITE, 2-SGE WRITE, signaled SEND: the engine's pattern */
	memcpy(sbuf, "inline-write-ok!", 16);
	fill(sbuf + 4096, 3000, 1);
	fill(sbuf + 10000, 1000, 2);
	fill(sbuf + 20000, 44, 3);
	sg_in = sge_at(0, 16);
	sg_w[0] = sge_at(4096, 3000);
	sg_w[1] = sge_at(10000, 1000);
	sg_s = sge_at(20000, 44);
	wr[0] = wr_make(1, DEV_WR_WRITE, DEV_SEND_INLINE, &sg_in, 1, 0,
			rmr.rkey);
	wr[1] = wr_make(2, DEV_WR_WRITE, 0, sg_w, 2, 1024, rmr.rkey);
	wr[2] = wr_make(3, DEV_WR_SEND, DEV_SEND_SIGNALED | DEV_SEND_SOLICITED,
			&sg_s, 1, 0, 0);
	wr[0].next = &wr[1];
	wr[1].next = &wr[2];
	ret = ops->post_send(a->qp, wr);
	/* inline: the buffer is ours again at once */
	memset(sbuf, 'X', 16);
	check(ret == 0, "post WRITE inline + WRITE 2 SGEs + SEND: %d", ret);
	ok = wait_wc(a, 1, WAIT_MS) && wait_wc(b, 1, WAIT_MS);
	check(ok && a->nwc == 1 && a->wc[0].wr_id == 3 &&
		      a->wc[0].status == DEV_WC_SUCCESS &&
		      a->wc[0].opcode == DEV_WC_SEND,
	      "sender: one completion, the signaled SEND (%d, %s)", a->nwc,
	      a->nwc ? st(a->wc[0].status) : "-");
	check(ok && b->nwc == 1 && b->wc[0].wr_id == 100 &&
		      b->wc[0].status == DEV_WC_SUCCESS &&
		      b->wc[0].opcode == DEV_WC_RECV && b->wc[0].byte_len == 44,
	      "receiver: RECV of 44 bytes (%d, %s, %u bytes)", b->nwc,
	      b->nwc ? st(b->wc[0].status) : "-",
	      b->nwc ? b->wc[0].byte_len : 0);
	check(memcmp(rbuf, sbuf + 20000, 44) == 0, "SEND payload received");
	check(memcmp(rmb, "inline-write-ok!", 16) == 0,
	      "inline WRITE landed, copied at post time");
	memcpy(expect, sbuf + 4096, 3000);
	memcpy(expect + 3000, sbuf + 10000, 1000);
	check(memcmp(rmb + 1024, expect, 4000) == 0,
	      "2-SGE WRITE landed (4000 bytes)");

	/* 19 unsignaled WRITEs and a SEND: two ibv_post_send batches */
	fill(sbuf + 30000, 2000, 4);
	for (i = 0; i < 19; i++) {
		sg_c[i] = sge_at(30000 + (size_t)i * 100, 100);
		chain[i] = wr_make(10 + (uint64_t)i, DEV_WR_WRITE, 0, &sg_c[i],
				   1, 30000 + (size_t)i * 100, rmr.rkey);
		chain[i].next = &chain[i + 1];
	}
	sg_c[19] = sge_at(32000, 40); /* fits a receive */
	chain[19] =
		wr_make(29, DEV_WR_SEND, DEV_SEND_SIGNALED, &sg_c[19], 1, 0, 0);
	ret = ops->post_send(a->qp, chain);
	ok = ret == 0 && wait_wc(a, 2, WAIT_MS) && wait_wc(b, 2, WAIT_MS);
	check(ok && a->wc[1].wr_id == 29 && a->wc[1].status == DEV_WC_SUCCESS,
	      "chain of 20 WRs posted (%d) and completed", ret);
	check(memcmp(rmb + 30000, sbuf + 30000, 1900) == 0,
	      "its 19 WRITEs landed");

	/* 6 receives left: the 7th SEND waits for a receive (RNR retry 7) */
	for (i = 0; i < 7; i++)
		ops->post_send(a->qp, &chain[19]);
	wait_wc(b, 8, WAIT_MS);
	settle(300);
	check(b->nwc == 8 && a->nwc == 8,
	      "receiver not ready: 6 SENDs delivered, the 7th waits "
	      "(sender %d, receiver %d completions)",
	      a->nwc, b->nwc);
	post_recv(b, 200, 0, RX_SIZE);
	wait_wc(a, 9, WAIT_MS);
	wait_wc(b, 9, WAIT_MS);
	check(a->nwc == 9 && a->wc[8].status == DEV_WC_SUCCESS && b->nwc == 9 &&
		      b->wc[8].wr_id == 200,
	      "...and completes once a receive is posted (%s)",
	      a->nwc > 8 ? st(a->wc[8].status) : "none");
}

static void
bad_rkey(struct end *a, struct end *b)
{
	struct dev_sge sge = sge_at(0, 64);
	struct dev_send_wr w, s;
	int ret1, ret2;

	/* unsignaled: a failed WRITE completes anyway */
	w = wr_make(1, DEV_WR_WRITE, 0, &sge, 1, 60000, rmr.rkey ^ 0x5a00);
	s = wr_make(2, DEV_WR_SEND, DEV_SEND_SIGNALED, &sge, 1, 0, 0);
	memset(rmb + 60000, 0, 64);
	post_recv(b, 300, 0, RX_SIZE);
	ret1 = ops->post_send(a->qp, &w);
	ret2 = ops->post_send(a->qp, &s);
	wait_wc(a, 2, WAIT_MS);
	check(ret1 == 0 && ret2 == 0 && a->nwc >= 1 && a->wc[0].wr_id == 1 &&
		      a->wc[0].status == DEV_WC_REM_ACCESS_ERR,
	      "bad rkey: unsignaled WRITE completes with REM_ACCESS_ERR (%s)",
	      a->nwc ? st(a->wc[0].status) : "none");
	check(a->nwc == 2 && a->wc[1].wr_id == 2 &&
		      a->wc[1].status == DEV_WC_FLUSH_ERR,
	      "...and the SEND behind it is flushed (%s)",
	      a->nwc > 1 ? st(a->wc[1].status) : "none");
	check(rmb[60000] == 0, "...and nothing landed");
	ret1 = ops->post_send(a->qp, &s);
	if (ret1 == 0)
		wait_wc(a, 3, WAIT_MS);
	check(ret1 < 0 || (a->nwc == 3 && a->wc[2].status == DEV_WC_FLUSH_ERR),
	      "...and a later post flushes (post %d, %s)", ret1,
	      a->nwc > 2 ? st(a->wc[2].status) : "none");
	wait_wc(b, 1, 1000);
	printf("info: responder after the bad rkey: %d completion(s)%s%s, "
	       "%d async event(s)\n",
	       b->nwc, b->nwc ? ", first " : "",
	       b->nwc ? st(b->wc[0].status) : "", b->events);
}

static void
send_too_long(struct end *a, struct end *b)
{
	struct dev_sge sge = sge_at(0, 32);
	struct dev_send_wr s;
	int ret;

	s = wr_make(1, DEV_WR_SEND, DEV_SEND_SIGNALED, &sge, 1, 0, 0);
	post_recv(b, 400, 0, 16);
	post_recv(b, 401, 1, RX_SIZE);
	ret = ops->post_send(a->qp, &s);
	wait_wc(a, 1, WAIT_MS);
	check(ret == 0 && a->nwc == 1 && a->wc[0].status != DEV_WC_SUCCESS,
	      "SEND of 32 bytes into a 16-byte receive fails (sender %s)",
	      a->nwc ? st(a->wc[0].status) : "none");
	wait_wc(b, 2, 1000);
	printf("info: receiver of the long SEND: %d completion(s): %s, %s\n",
	       b->nwc, b->nwc > 0 ? st(b->wc[0].status) : "-",
	       b->nwc > 1 ? st(b->wc[1].status) : "-");
}

static void
qp_error_flushes(struct end *b)
{
	int ret;

	post_recv(b, 500, 0, RX_SIZE);
	post_recv(b, 501, 1, RX_SIZE);
	ret = ops->qp_error(b->qp);
	wait_wc(b, 2, WAIT_MS);
	check(ret == 0 && b->nwc == 2 && b->wc[0].status == DEV_WC_FLUSH_ERR &&
		      b->wc[1].status == DEV_WC_FLUSH_ERR &&
		      b->wc[0].opcode == DEV_WC_RECV,
	      "qp_error flushes both posted receives (%d completions)", b->nwc);
	check(ops->qp_error(b->qp) == 0, "qp_error twice is fine");
}

/* The port goes down under two QPs: each hears about it. */
static void
port_down(struct end *a, struct end *b, const char *netdev)
{
	char cmd[128];
	uint64_t end;

	snprintf(cmd, sizeof(cmd), "ip link set %s down", netdev);
	if (system(cmd) != 0) {
		check(false, "%s", cmd);
		return;
	}
	end = now_ms() + WAIT_MS;
	while ((a->events == 0 || b->events == 0) && now_ms() < end)
		event_base_loop(base, EVLOOP_ONCE);
	check(a->events == 1 && a->last_event == DEV_EV_PORT_DOWN &&
		      b->events == 1 && b->last_event == DEV_EV_PORT_DOWN,
	      "%s down: both QPs get DEV_EV_PORT_DOWN (%d, %d events)", netdev,
	      a->events, b->events);
	snprintf(cmd, sizeof(cmd), "ip link set %s up", netdev);
	check(system(cmd) == 0, "%s", cmd);
	settle(200);
}

static void
inline_sizes(void)
{
	struct end e;

	if (qp_new(&e, "q-inline-0", 0)) {
		printf("info: asked inline 0, got %u\n",
		       e.caps.max_inline_data);
		ops->qp_destroy(e.qp);
	}
	if (qp_new(&e, "q-inline-256", 256)) {
		check(e.caps.max_inline_data >= 256,
		      "asked inline 256, read back %u", e.caps.max_inline_data);
		ops->qp_destroy(e.qp);
	}
	/* rxe refuses 1024: ib.c asks again for less */
	if (qp_new(&e, "q-inline-1024", 1024)) {
		check(e.caps.max_inline_data > 44,
		      "asked inline 1024, QP created anyway with %u",
		      e.caps.max_inline_data);
		ops->qp_destroy(e.qp);
	}
}

int
main(int argc, char **argv)
{
	struct timeval every = {0, 50000};
	struct event *tick_ev = NULL;
	struct end a, b;

	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: devcheck DEVICE LOCAL_IP [NETDEV]\n");
		return 2;
	}
	log_init(1, LOG_LEVEL_INFO);
	base = event_base_new();
	tick_ev = event_new(base, -1, EV_PERSIST, tick, NULL);
	event_add(tick_ev, &every);
	dev = ib_dev_open(argv[1], 0, argv[2], -1);
	if (dev == NULL) {
		check(false, "ib_dev_open %s for %s: %s", argv[1], argv[2],
		      strerror(errno));
		return 1;
	}
	check(strcmp(ib_dev_name(dev), argv[1]) == 0, "opened %s",
	      ib_dev_name(dev));
	sbuf = calloc(1, BUF_SIZE);
	rmb = calloc(1, BUF_SIZE);
	rbuf = calloc(1, BUF_SIZE);
	if (sbuf == NULL || rmb == NULL || rbuf == NULL ||
	    ops->mr_reg(dev, sbuf, BUF_SIZE, 0, DEV_ACCESS_LOCAL_WRITE, &smr) ||
	    ops->mr_reg(dev, rmb, BUF_SIZE, RMB_IOVA | ((uintptr_t)rmb & 0xfff),
			DEV_ACCESS_LOCAL_WRITE | DEV_ACCESS_REMOTE_WRITE,
			&rmr) ||
	    ops->mr_reg(dev, rbuf, BUF_SIZE, 0, DEV_ACCESS_LOCAL_WRITE, &xmr)) {
		check(false, "memory registration");
		return 1;
	}
	printf("info: send buffer lkey 0x%x, RMB rkey 0x%x at IOVA 0x%llx\n",
	       smr.lkey, rmr.rkey, (unsigned long long)rmr.iova);
	/* the peer writes at the IOVA (buf.c registers RMB elements so) */
	check(rmr.iova != (uintptr_t)rmb,
	      "the RMB is registered at IOVA "
	      "0x%llx, not at its address",
	      (unsigned long long)rmr.iova);

	inline_sizes();
	if (pair_new(&a, &b, "A", "B")) {
		printf("info: caps send %u recv %u sge %u/%u inline %u\n",
		       a.caps.max_send_wr, a.caps.max_recv_wr,
		       a.caps.max_send_sge, a.caps.max_recv_sge,
		       a.caps.max_inline_data);
		data_path(&a, &b);
	}
	pair_free(&a, &b);
	if (pair_new(&a, &b, "C", "D"))
		bad_rkey(&a, &b);
	pair_free(&a, &b);
	if (pair_new(&a, &b, "E", "F"))
		send_too_long(&a, &b);
	pair_free(&a, &b);
	if (pair_new(&a, &b, "G", "H"))
		qp_error_flushes(&b);
	pair_free(&a, &b);
	if (argc > 3 && pair_new(&a, &b, "I", "J"))
		port_down(&a, &b, argv[3]);
	pair_free(&a, &b);

	ops->mr_dereg(dev, &smr);
	ops->mr_dereg(dev, &rmr);
	ops->mr_dereg(dev, &xmr);
	ib_dev_close(dev);
	event_free(tick_ev);
	event_base_free(base);
	free(sbuf);
	free(rmb);
	free(rbuf);
	printf("%s: %d failure(s)\n", failures ? "FAIL" : "ok", failures);
	return failures ? 1 : 0;
}
