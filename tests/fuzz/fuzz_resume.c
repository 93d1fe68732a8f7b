// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target for resuming a connection over RDMA (resume.c, the rule
 * side of session_rdma.c) against a peer that lies.  Daemon A runs in a
 * real worker thread, as in tests/fuzz/fuzz_fallback.c and the "resume2"
 * cases of tests/unit/check_session_rdma.c: two loopdev devices a side,
 * groups of two links.  The input plays peer b (a server-side lgr_ctx on
 * A's event base): a client's connection to A's rule relays over a group
 * to b, A's group ends, A sets up a new one and sends CONN_RESUME on it,
 * and from then on the records say what b does.
 *
 * The first byte is how many bytes (times 8) the client writes before the
 * group ends.  Then records, op & 7:
 *
 *   0  answer: a selector byte, then two signed 16-bit deltas moving the
 *      honest offsets (b received everything, wrote nothing).  Selector
 *      bits: 0x01 a wrong resume id, 0x02 a token b does not have, 0x04
 *      a wrong rkey, 0x08 on the group's other link, 0x10 without the
 *      response flag (a request to a client)
 *   1  answer with raw offsets (16 bytes)
 *   2  CONN_REJECT: a selector byte (0x01 a raw token, 0x02 the other
 *      link) and a reason byte
 *   3  a link drops (loopdev): 0x01 the one the request came on, else the
 *      other
 *   4  DELETE_LINK from b: 0x01 the request's link, else the other; 0x02
 *      b's own link failure (the handler llc.c calls), else a bare
 *      DELETE_LINK message; 0x04 ALL
 *   5  wait: bit 0x80 until A asks again (at most a second), else
 *      (n & 31) ms
 *   6  the client writes n * 8 bytes more
 *   7  A's new group ends
 *
 * A holds its answer while the records run (a hold is an input that never
 * answers); A's 5 s answer deadline (RESUME_ANSWER_MS, on the real clock)
 * is never reached.  Records 3 and 4 on the request's link while the
 * answer is held are finding M1 of issue 29.
 *
 * What A must keep: it resumed only after b sent an answer it may take
 * (the right id, offsets within what A sent and the window it gave);
 * resumed, it writes toward b from no earlier than what b had confirmed
 * and no further than the client wrote; and the connection is, at the
 * end, relaying after a counted resume, still resuming (counted in
 * conns_resuming), or gone with its close counted.  fuzz_decoded is 1
 * when A resumed, so seed-ok-* and
 * seed-bad-* names hold A to its answer in make check.
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "session_rdma.h"
#include "lgr.h"
#include "clc_wire.h"
#include "dev.h"
#include "llc_wire.h"
#include "fuzz.h"
#include "../unit/harness.h"

#define FUZZ_WAIT_MS 5000    /* an answer from A; far more than it takes */
#define FUZZ_ASKED_MS 1000   /* record 5: A asks again */
#define FUZZ_SETTLE_MS 30    /* after the records */
#define FUZZ_STREAM_MAX 8192 /* client bytes: within b's 16 KiB element */
#define FUZZ_RECORDS 64
#define FUZZ_B_TOKEN 0x99
#define FUZZ_B_TOKEN2 0x77
#define FUZZ_ID_BYTE 0x5a /* b's resume id: LLC_RESUME_ID_LEN of these */

/* abort, saying where: the compiler merges the calls of abort() */
#define FUZZ_FAIL()                                                      \
	do {                                                             \
		fprintf(stderr, "fuzz_resume.c:%d: failed\n", __LINE__); \
		abort();                                                 \
	} while (0)

int fuzz_decoded;

static struct conf *conf_a, *conf_b;
static struct worker *w;
static struct lgr_ctx *ctx_b;
static struct stats st_b;
static struct auth_limit al_b;
static struct dev *dev_a, *dev_b, *dev_a2, *dev_b2;
static int port_b = -1; /* b's peer port: A's CLC comes here */
static int rule_r;

/* ---- b, on A's worker ---- */

static struct buf_pool *b_pool;
static struct buf *b_rmb;
static struct lgr_conn b_conn, b_conn2; /* opened; resumed */
static bool b_opened;
static struct llc_conn_resume_info b_req; /* A's last CONN_RESUME */
static uint32_t b_req_lgr;
static uint8_t b_req_link;
static int b_nreq;

static void
b_llc_rx(struct lgr_link *link, const struct llc_info *m, void *arg)
{
	const struct dev_mr *mr;
	struct llc_info a;

	if (m->type == LLC_CONN_RESUME && !(m->flags & LLC_FLAG_RESP)) {
		b_req = m->conn_resume;
		b_req_lgr = link->lgr->id;
		b_req_link = link->id;
		b_nreq++;
		return;
	}
	if (m->type != LLC_CONN_OPEN || b_opened)
		return;
	b_opened = true;
	mr = buf_mr(b_rmb, link->dev->ops, link->pd);
	if (mr == NULL)
		FUZZ_FAIL();
	b_conn.token = FUZZ_B_TOKEN;
	if (lgr_conn_add(link->lgr, &b_conn) != 0)
		FUZZ_FAIL();
	memset(&a, 0, sizeof(a));
	a.type = LLC_CONN_ACCEPT;
	a.flags = LLC_FLAG_RESP;
	a.conn_accept.opener_token = m->conn_open.token;
	a.conn_accept.token = b_conn.token;
	a.conn_accept.rmb_rkey = mr->rkey;
	a.conn_accept.rmb_vaddr = b_rmb->iova;
	memset(a.conn_accept.resume_id, FUZZ_ID_BYTE, LLC_RESUME_ID_LEN);
	(void)llc_send(link, &a, NULL, NULL);
}

static const struct lgr_data_ops b_ops = {.llc_rx = b_llc_rx};

/*
 * An active link of b's group that A's last CONN_RESUME came on: that
 * link (req) or another one; NULL if there is none.
 */
static struct lgr_link *
b_link(bool req)
{
	struct lgr *lgr;
	struct lgr_link *k;
	int i;

	if (b_nreq == 0)
		return NULL;
	TAILQ_FOREACH(lgr, &ctx_b->lgrs, entry)
		if (lgr->id == b_req_lgr && lgr->state == LGR_STATE_ACTIVE)
			break;
	if (lgr == NULL)
		return NULL;
	for (i = 0; i < LGR_LINK_SLOTS; i++) {
		k = &lgr->link[i];
		if (k->state == LGR_LINK_ACTIVE && (k->id == b_req_link) == req)
			return k;
	}
	return NULL;
}

/* What the harness tells the worker to do, and what it reads back. */
struct fuzz_act {
	uint8_t op, sel, reason;
	uint64_t rx, fin;
	bool valid; /* out: an answer A may take went */
};

static uint64_t a_window; /* A's RMB element: what b may say it wrote */
static uint64_t before;	  /* client bytes b confirmed before the end */

static void
fuzz_answer_cb(struct lgr_link *k, struct fuzz_act *a)
{
	const struct dev_mr *mr;
	struct llc_info m;

	if (b_conn2.lgr != k->lgr) {
		lgr_conn_del(&b_conn2);
		b_conn2.token = FUZZ_B_TOKEN2;
		if (lgr_conn_add(k->lgr, &b_conn2) != 0)
			FUZZ_FAIL();
	}
	mr = buf_mr(b_rmb, k->dev->ops, k->pd);
	memset(&m, 0, sizeof(m));
	m.type = LLC_CONN_RESUME;
	m.flags = a->sel & 0x10 ? 0 : LLC_FLAG_RESP;
	memset(m.conn_resume.resume_id, FUZZ_ID_BYTE, LLC_RESUME_ID_LEN);
	if (a->sel & 0x01)
		m.conn_resume.resume_id[a->sel >> 5] ^= 1;
	m.conn_resume.token = a->sel & 0x02 ? 0x1234 : b_conn2.token;
	m.conn_resume.rmb_rkey = mr != NULL ? mr->rkey : 0;
	if (a->sel & 0x04)
		m.conn_resume.rmb_rkey ^= 1;
	m.conn_resume.rx_off = a->rx;
	m.conn_resume.tx_fin = a->fin;
	if (!(a->sel & 0x11) && a->rx <= before && a->fin <= a_window)
		a->valid = true;
	(void)llc_send(k, &m, NULL, NULL);
}

static void
fuzz_act_cb(struct worker *wk, void *arg)
{
	struct fuzz_act *a = arg;
	struct lgr_link *k, *via;
	struct llc_info m;

	switch (a->op) {
	case 0:
	case 1:
		k = b_link(!(a->sel & 0x08));
		if (k != NULL)
			fuzz_answer_cb(k, a);
		break;
	case 2:
		k = b_link(!(a->sel & 0x02));
		if (k == NULL)
			break;
		memset(&m, 0, sizeof(m));
		m.type = LLC_CONN_REJECT;
		m.flags = LLC_FLAG_RESP;
		m.conn_reject.opener_token =
			a->sel & 0x01 ? a->sel : b_req.token;
		m.conn_reject.reason = a->reason;
		(void)llc_send(k, &m, NULL, NULL);
		break;
	case 3:
		k = b_link(a->sel & 0x01);
		if (k != NULL)
			loopdev_drop_link(wr_link_qp(k->wr));
		break;
	case 4:
		k = b_link(a->sel & 0x01);
		if (k == NULL)
			break;
		if (a->sel & 0x02) {
			k->lgr->ctx->llc_ops->link_fail(k, LLC_DEL_LOST_PATH,
							false, "fuzz");
			break;
		}
		via = b_link(!(a->sel & 0x01));
		memset(&m, 0, sizeof(m));
		m.type = LLC_DELETE_LINK;
		m.flags = a->sel & 0x04 ? LLC_FLAG_DEL_LINK_ALL : 0;
		m.delete_link.link_num = k->id;
		m.delete_link.reason = LLC_DEL_LOST_PATH;
		(void)llc_send(via != NULL ? via : k, &m, NULL, NULL);
		break;
	default:
		break;
	}
}

/* ---- A, on its worker ---- */

static void
fuzz_setup_cb(struct worker *wk, void *arg)
{
	struct lgr_ctx *ctx_a = worker_lgr(wk);
	struct dev_ops *a_ops = harness_dev_ops();

	ctx_a->t.backoff_ms = 0;
	dev_a = loopdev_new(worker_base(wk));
	dev_b = loopdev_new(worker_base(wk));
	dev_a2 = loopdev_new(worker_base(wk));
	dev_b2 = loopdev_new(worker_base(wk));
	if (dev_a == NULL || dev_b == NULL || dev_a2 == NULL ||
	    dev_b2 == NULL || lgr_ctx_add_dev(ctx_a, a_ops, dev_a, "loopa") ||
	    lgr_ctx_add_dev(ctx_a, a_ops, dev_a2, "loopa2"))
		FUZZ_FAIL();
	auth_limit_init(&al_b);
	ctx_b = lgr_ctx_new(worker_base(wk), conf_b, &st_b, &al_b, NULL);
	if (ctx_b == NULL ||
	    lgr_ctx_add_dev(ctx_b, &loopdev_ops, dev_b, "loopb") ||
	    lgr_ctx_add_dev(ctx_b, &loopdev_ops, dev_b2, "loopb2"))
		FUZZ_FAIL();
	lgr_ctx_set_ops(ctx_b, &b_ops, NULL);
	b_pool = buf_pool_new(NULL, NULL, 0);
	if (b_pool == NULL || buf_get(b_pool, BUF_RMB, BUF_SIZE_MIN, &b_rmb))
		FUZZ_FAIL();
}

static void
fuzz_serve_cb(struct worker *wk, void *arg)
{
	if (clc_serve(ctx_b, *(int *)arg, NULL, NULL, 0) != 0)
		FUZZ_FAIL();
}

/* A's newest group ends as if b had gone (no DELETE_LINK to b). */
static void
fuzz_terminate_cb(struct worker *wk, void *arg)
{
	struct lgr *lgr = TAILQ_FIRST(&worker_lgr(wk)->lgrs);

	if (lgr != NULL && lgr->state == LGR_STATE_ACTIVE)
		lgr_terminate(lgr, LLC_DEL_LOST_PATH, false, true);
}

/* A new input: b's element empty, b knows of nothing. */
static void
fuzz_begin_cb(struct worker *wk, void *arg)
{
	memset(b_rmb->addr, 0, b_rmb->size);
	b_opened = false;
	b_nreq = 0;
}

static void
fuzz_close_cb(struct worker *wk, void *arg)
{
	struct lgr *lgr, *next;

	session_close_all(wk, SESSION_SHUTDOWN);
	lgr_conn_del(&b_conn);
	lgr_conn_del(&b_conn2);
	memset(&b_conn, 0, sizeof(b_conn));
	memset(&b_conn2, 0, sizeof(b_conn2));
	/* while b's groups and their PDs are still there */
	buf_mr_drop(b_rmb);
	TAILQ_FOREACH_SAFE(lgr, &worker_lgr(wk)->lgrs, entry, next)
		lgr_terminate(lgr, LLC_DEL_PROG_INIT_TERM, false, true);
	TAILQ_FOREACH_SAFE(lgr, &ctx_b->lgrs, entry, next)
		lgr_terminate(lgr, LLC_DEL_PROG_INIT_TERM, false, true);
}

static void
fuzz_groups_cb(struct worker *wk, void *arg)
{
	*(bool *)arg =
		TAILQ_EMPTY(&worker_lgr(wk)->lgrs) && TAILQ_EMPTY(&ctx_b->lgrs);
}

/* The input's session is gone (groups end in their own time). */
static void
fuzz_gone_cb(struct worker *wk, void *arg)
{
	*(bool *)arg = worker_sessions(wk) == NULL;
}

static void
fuzz_devs_cb(struct worker *wk, void *arg)
{
	buf_put(b_rmb);
	buf_pool_free(b_pool);
	b_pool = NULL;
	lgr_ctx_free(ctx_b);
	ctx_b = NULL;
	loopdev_free(dev_a);
	loopdev_free(dev_b);
	loopdev_free(dev_a2);
	loopdev_free(dev_b2);
	harness_devs_gone(wk);
}

/* Where A and b stand, read on the worker. */
struct fuzz_view {
	int state;	   /* A's session's; -1: gone */
	int nreq;	   /* CONN_RESUMEs b got */
	int links, groups; /* A's: active links of its active group; groups */
	uint64_t window;   /* A's RMB element size */
	uint64_t resumed;  /* conns_resumed_rdma */
	uint64_t resuming; /* conns_resuming (a gauge) */
	uint64_t failed;   /* resume_failed_* together */
	uint64_t closed;   /* closes, every reason */
	uint64_t fin;	   /* A's tx_fin_off: confirmed in b's element */
	uint64_t sent_hi;  /* A's tx_sent_hi_off: furthest written */
};

static uint8_t
fuzz_byte_at(uint64_t off)
{
	return (uint8_t)(1 + (off * 13 + (off >> 8)) % 255);
}

static void
fuzz_view_cb(struct worker *wk, void *arg)
{
	struct fuzz_view *v = arg;
	struct session *s = worker_sessions(wk);
	struct stats *st = worker_stats(wk);
	struct lgr *lgr;
	int r;

	memset(v, 0, sizeof(*v));
	v->state = s != NULL ? (int)s->state : -1;
	if (s != NULL && s->rdma != NULL && s->rdma->rc != NULL) {
		v->window = rx_rmb(s->rdma->rc)->size;
		v->fin = tx_fin_off(s->rdma->rc);
		v->sent_hi = tx_sent_hi_off(s->rdma->rc);
	}
	v->nreq = b_nreq;
	TAILQ_FOREACH(lgr, &worker_lgr(wk)->lgrs, entry) {
		v->groups++;
		if (lgr->state == LGR_STATE_ACTIVE)
			v->links = lgr_links_active(lgr);
	}
	v->resumed = stats_read(st, STAT_conns_resumed_rdma);
	v->resuming = stats_read(st, STAT_conns_resuming);
	v->failed = stats_read(st, STAT_resume_failed_timeout) +
		    stats_read(st, STAT_resume_failed_refused) +
		    stats_read(st, STAT_resume_failed_peer_gone) +
		    stats_read(st, STAT_resume_failed_protocol) +
		    stats_read(st, STAT_resume_failed_auth) +
		    stats_read(st, STAT_resume_failed_limit);
	for (r = 0; r < SESSION_NREASONS; r++)
		v->closed += stats_read(st, STAT_CLOSE_BASE + r);
}

static void
fuzz_view(struct fuzz_view *v)
{
	worker_call(w, fuzz_view_cb, v);
}

/* ---- the world, made on the first input ---- */

static int
fuzz_listen(int *port)
{
	int fd = loopnet_listen(port);

	if (fd < 0)
		FUZZ_FAIL();
	return fd;
}

static int
fuzz_connect(int port)
{
	int fd = loopnet_connect(port);

	if (fd < 0)
		FUZZ_FAIL();
	return fd;
}

/* The next CLC connection to b's port within FUZZ_WAIT_MS, or -1. */
static int
fuzz_peer_accept(void)
{
	return harness_accept(port_b, FUZZ_WAIT_MS, NULL);
}

static void
fuzz_world_free(void)
{
	harness_stop(w, fuzz_close_cb, fuzz_groups_cb, fuzz_devs_cb,
		     FUZZ_WAIT_MS);
	close(port_b);
	conf_drop(conf_a);
	conf_drop(conf_b);
}

static void
fuzz_world(void)
{
	static bool made;
	char text[1024];
	int pb;

	if (made)
		return;
	made = true;
	log_init(1, getenv("FUZZ_DEBUG") ? LOG_LEVEL_DEBUG : LOG_LEVEL_ERR);
	port_b = fuzz_listen(&pb);
	close(fuzz_listen(&rule_r));
	snprintf(text, sizeof(text),
		 "smcproxyd: { name = \"a\"; workers = 1; };\n"
		 "peers = ( { name = \"b\"; address = \"127.0.0.1:%d\";"
		 " insecure = true; any_source = true; } );\n"
		 "rules = ( { name = \"r\"; listen = \"127.0.0.1:%d\";"
		 " peer = \"b\"; export = \"e\"; } );\n"
		 "rdma: { max_links = 2; };\n",
		 pb, rule_r);
	conf_a = conf_load_string(text, "a.conf", stderr);
	conf_b = conf_load_string(
		"smcproxyd: { name = \"b\"; workers = 1; };\n"
		"peers = ( { name = \"a\"; address = \"127.0.0.1:1\";"
		" insecure = true; any_source = true; } );\n",
		"b.conf", stderr);
	if (conf_a == NULL || conf_b == NULL)
		FUZZ_FAIL();
	conf_hold(conf_a);
	conf_hold(conf_b);
	if (worker_start_all(conf_a) != 0)
		FUZZ_FAIL();
	w = worker_get(0);
	worker_call(w, fuzz_setup_cb, NULL);
	atexit(fuzz_world_free);
}

/* ---- one input ---- */

static uint64_t written; /* client bytes so far */

static void
fuzz_write(int client, size_t n)
{
	uint8_t buf[2048];
	size_t i;

	if (n > FUZZ_STREAM_MAX - written)
		n = FUZZ_STREAM_MAX - written;
	for (i = 0; i < n; i++)
		buf[i] = fuzz_byte_at(written + i);
	/* A may have reset the connection: then nothing more goes */
	if (n > 0 && send(client, buf, n, MSG_NOSIGNAL) == (ssize_t)n)
		written += n;
}

static bool
fuzz_wait(bool (*done)(const struct fuzz_view *), struct fuzz_view *v, int ms)
{
	int i;

	for (i = 0; i < ms; i++) {
		fuzz_view(v);
		if (done(v))
			return true;
		usleep(1000);
	}
	return false;
}

static bool
fuzz_relays(const struct fuzz_view *v)
{
	return v->state == SESSION_RELAY;
}

static bool
fuzz_resuming(const struct fuzz_view *v)
{
	return v->state == SESSION_RESUMING;
}

static bool
fuzz_arrived(const struct fuzz_view *v)
{
	return v->fin >= before;
}

static bool
fuzz_asked(const struct fuzz_view *v)
{
	return v->nreq > 0 && v->links == 2;
}

/* A's old group is freed (it takes a while): a failover now is M1's. */
static bool
fuzz_old_freed(const struct fuzz_view *v)
{
	return v->groups == 1;
}

/* The connection is where an input may leave it (see the top). */
static bool
fuzz_settled(const struct fuzz_view *v)
{
	return v->state == SESSION_RELAY || v->state == SESSION_RESUMING ||
	       v->state == -1;
}

static int asked_before;

static bool
fuzz_asked_again(const struct fuzz_view *v)
{
	return v->nreq > asked_before;
}

static size_t
fuzz_u8(const uint8_t **data, size_t *size)
{
	uint8_t b = *size > 0 ? **data : 0;

	if (*size > 0) {
		(*data)++;
		(*size)--;
	}
	return b;
}

static uint64_t
fuzz_take(const uint8_t **data, size_t *size, int n)
{
	uint64_t v = 0;

	while (n-- > 0)
		v = v << 8 | fuzz_u8(data, size);
	return v;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_view v, start;
	struct fuzz_act a;
	bool valid = false, gone = false;
	int client, fd, i, n;
	uint8_t op;

	fuzz_decoded = 0;
	if (size == 0)
		return 0;
	fuzz_world();
	while ((fd = accept4(port_b, NULL, NULL, SOCK_CLOEXEC)) >= 0)
		close(fd);
	worker_call(w, fuzz_begin_cb, NULL);
	written = 0;
	before = fuzz_u8(&data, &size) * 8;
	client = fuzz_connect(rule_r);
	fd = fuzz_peer_accept();
	if (fd < 0)
		FUZZ_FAIL();
	worker_call(w, fuzz_serve_cb, &fd);
	if (!fuzz_wait(fuzz_relays, &v, FUZZ_WAIT_MS))
		FUZZ_FAIL();
	a_window = v.window;
	fuzz_write(client, before);
	if (!fuzz_wait(fuzz_arrived, &v, FUZZ_WAIT_MS))
		FUZZ_FAIL();
	fuzz_view(&start);
	worker_call(w, fuzz_terminate_cb, NULL);
	if (!fuzz_wait(fuzz_resuming, &v, FUZZ_WAIT_MS))
		FUZZ_FAIL();
	fd = fuzz_peer_accept();
	if (fd < 0)
		FUZZ_FAIL();
	worker_call(w, fuzz_serve_cb, &fd);
	/* asked, on a group of two links */
	(void)fuzz_wait(fuzz_asked, &v, FUZZ_WAIT_MS);
	if (v.nreq == 0)
		FUZZ_FAIL();
	for (n = 0; size > 0 && n < FUZZ_RECORDS; n++) {
		op = (uint8_t)fuzz_u8(&data, &size);
		memset(&a, 0, sizeof(a));
		a.op = op & 7;
		switch (a.op) {
		case 0:
			a.sel = (uint8_t)fuzz_u8(&data, &size);
			a.rx = before + (uint64_t)(int64_t)(int16_t)fuzz_take(
						&data, &size, 2);
			a.fin = (uint64_t)(int64_t)(int16_t)fuzz_take(&data,
								      &size, 2);
			break;
		case 1:
			a.sel = op & 0xf8;
			a.rx = fuzz_take(&data, &size, 8);
			a.fin = fuzz_take(&data, &size, 8);
			break;
		case 2:
			a.sel = (uint8_t)fuzz_u8(&data, &size);
			a.reason = (uint8_t)fuzz_u8(&data, &size);
			break;
		case 3:
		case 4:
			a.sel = (uint8_t)fuzz_u8(&data, &size);
			(void)fuzz_wait(fuzz_old_freed, &v, FUZZ_WAIT_MS);
			break;
		case 5:
			i = (int)fuzz_u8(&data, &size);
			asked_before = v.nreq;
			if (i & 0x80)
				(void)fuzz_wait(fuzz_asked_again, &v,
						FUZZ_ASKED_MS);
			else
				usleep((unsigned int)(i & 31) * 1000);
			continue;
		case 6:
			fuzz_write(client, fuzz_u8(&data, &size) * 8);
			continue;
		default:
			worker_call(w, fuzz_terminate_cb, NULL);
			continue;
		}
		worker_call(w, fuzz_act_cb, &a);
		valid |= a.valid;
		fuzz_view(&v);
	}
	usleep(FUZZ_SETTLE_MS * 1000);
	if (!fuzz_wait(fuzz_settled, &v, FUZZ_WAIT_MS))
		FUZZ_FAIL();
	/* A writes toward b from where both agree (b had all of before),
	 * and never past what the client gave it */
	if (v.state == SESSION_RELAY && (v.fin < before || v.sent_hi > written))
		FUZZ_FAIL();
	/* resumed only on an answer it may take, and counted */
	if (v.resumed != start.resumed && !valid)
		FUZZ_FAIL();
	if (v.state == SESSION_RELAY && v.resumed == start.resumed)
		FUZZ_FAIL();
	if (v.resuming != (v.state == SESSION_RESUMING ? 1 : 0))
		FUZZ_FAIL();
	/* gone: reset, and counted */
	if (v.state == -1 && v.closed == start.closed)
		FUZZ_FAIL();
	fuzz_decoded = v.resumed != start.resumed;
	close(client);
	worker_call(w, fuzz_close_cb, NULL);
	for (i = 0; i < FUZZ_WAIT_MS && !gone; i++) {
		worker_call(w, fuzz_gone_cb, &gone);
		if (!gone)
			usleep(1000);
	}
	if (!gone)
		FUZZ_FAIL();
	return 0;
}
