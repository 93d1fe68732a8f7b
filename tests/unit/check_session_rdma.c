// SPDX-License-Identifier: BSD-2-Clause
/*
 * The rule side of the RDMA data path in a real worker thread: client
 * connections that wait for a link group on its way, and what happens to
 * them when it comes.  The worker's group reaches a second "daemon" (a
 * server-side lgr_ctx on the worker's event base) over loopdev; the peer
 * port is a socket of the test, which counts the fallback connections.
 * What a user would notice: a client connection taken twice (two
 * connections to the peer, a leaked socket, or a crash); a peer whose
 * key or address changed on reload still reaching us over its group.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>
#include <event2/event.h>

#include "session_rdma.h"
#include "lgr.h"
#include "harness.h"
#include "clc_wire.h"
#include "dev.h"
#include "fallback_wire.h"
#include "llc_wire.h"
#include "cdc_wire.h"
#include "rconn.h"

#define NCLIENTS 200
#define GROUP_CONNS 16 /* max_conns_per_lgr: the rest fall back */
#define WAIT_MS 5000

static struct conf *conf_a, *conf_b, *conf_next;
static struct worker *w;
static struct lgr_ctx *ctx_b;
static struct stats st_b;
static struct auth_limit al_b;
static struct dev *dev_a, *dev_b, *dev_a2, *dev_b2;
static int ndevs = 1;		      /* per side: 2 for groups of two links */
static int qps_max = 1;		      /* A's QPs before creation fails */
static const char *rule_extra = "";   /* into A's rule */
static const char *a_rdma_extra = ""; /* into A's rdma */
static const char *a_extra = "";      /* a section of A's config */
static int max_links = 1;
static int peer_fd = -1; /* the peer port, A's fallback connects here */
static int clients[NCLIENTS];
static int peers[NCLIENTS + 1]; /* what came to the peer port */
static int npeers;
static int rule_port, peer_port;

/*
 * A's device: its QP creation fails after the first; it goes before the
 * worker's buffer pool, whose deregistrations then have nothing to do.
 */
static struct dev_ops *flaky_ops;
static int qps_created;

static struct dev_qp *
flaky_qp_create(struct dev *d, struct event_base *base,
		const struct dev_qp_caps *want, struct dev_qp_caps *got,
		const struct dev_qp_cb *cb)
{
	if (qps_created++ >= qps_max) {
		errno = ENOMEM;
		return NULL;
	}
	return loopdev_ops.qp_create(d, base, want, got, cb);
}

/*
 * B takes CONN_OPEN and never answers, so A's connections just wait; or,
 * with b_accepts, B accepts the first into an RMB element of its own
 * (what A writes there is not read: the bytes only have to go).
 */
static bool b_accepts;
static bool b_stopping; /* B drains to stop: it refuses opens, shutdown */
static struct buf_pool *b_pool;
static struct buf *b_rmb;
static struct lgr_conn b_conns[4];
static int b_nconns;
static int b_resumes; /* CONN_RESUME requests B got (and never answers) */
static struct llc_info b_origin; /* the last CONN_ORIGIN B got */
static int b_origins, b_opens;
static bool b_origin_first; /* ... with the token of the open after it */

/*
 * With b_early, B answers the next open as a peer whose CONN_ACCEPT A
 * cannot relay with: on its group's other link, with its RMB element's
 * rkey there only, so A has no key for the connection's own link and
 * ends it before its relay (session_rdma_relay_start).  B's end is open
 * by then (b_early_rc, a real rconn): it must be told to reset.  When it
 * is, it posts a WRITE into A's RMB element as one still in flight
 * would be; it must land (status 0), not fail and take the link down.
 */
static bool b_early;
static struct lgr_conn b_early_conn;
static struct rconn *b_early_rc;
static int b_early_aborts;
static int b_late_done = -1; /* the WRITE's status once completed */

static void
b_late_write_done(struct wr_link *l, struct wr_tx_slot *slot, int status,
		  void *arg)
{
	b_late_done = status;
}

/* B's end writes 64 bytes into A's RMB element, and their CDC. */
static void
b_write_into_a(struct rconn *rc)
{
	struct cdc_cursor prod = {0, 0};
	struct wr_tx_slot *slot;
	struct wr_write wr;

	memset(&wr, 0, sizeof(wr));
	memset(rc->sndbuf->addr, 0x5a, 64);
	wr.sge[0].addr = (uint64_t)(uintptr_t)rc->sndbuf->addr;
	wr.sge[0].length = 64;
	wr.sge[0].lkey = rc->lkey;
	wr.nsge = 1;
	wr.remote_addr = rc->peer_rmb.vaddr;
	wr.rkey = rc->peer_rmb.rkey;
	cdc_curs_add(&prod, 64, rc->peer_rmb.size);
	ck_assert_int_eq(wr_tx_get(rc->link, &slot, NULL), 0);
	ck_assert_int_eq(cdc_conn_build(rc, 1, &prod, 0, 0, 0, wr_tx_buf(slot),
					CDC_MSG_LEN),
			 CDC_MSG_LEN);
	ck_assert_int_eq(
		wr_tx_post(rc->link, slot, &wr, 1, b_late_write_done, NULL), 0);
}

static void
b_early_abort(struct rconn *rc, void *arg)
{
	b_early_aborts++;
	b_write_into_a(rc);
}

static const struct rconn_ops b_early_ops = {.peer_abort = b_early_abort};

static void
b_pool_get(void)
{
	if (b_pool != NULL)
		return;
	b_pool = buf_pool_new(NULL, NULL, 0);
	ck_assert_ptr_nonnull(b_pool);
	ck_assert_int_eq(buf_get(b_pool, BUF_RMB, BUF_SIZE_MIN, &b_rmb), 0);
}

/*
 * B's end of A's open m on link (b_early_conn, b_early_rc, with ops),
 * then its CONN_ACCEPT on via, with its RMB element's rkey there.
 */
static void
b_accept_with(struct lgr_link *link, struct lgr_link *via,
	      const struct llc_info *m, const struct rconn_ops *ops)
{
	const struct dev_mr *mr;
	struct rconn_init in;
	struct buf *sb, *rb;
	struct llc_info a;

	b_pool_get();
	ck_assert_int_eq(buf_get(b_pool, BUF_SNDBUF, BUF_SIZE_MIN, &sb), 0);
	ck_assert_int_eq(buf_get(b_pool, BUF_RMB, BUF_SIZE_MIN, &rb), 0);
	b_early_conn.token = 0x77;
	ck_assert_int_eq(lgr_conn_add(link->lgr, &b_early_conn), 0);
	memset(&in, 0, sizeof(in));
	in.link = link->wr;
	in.token = b_early_conn.token;
	in.peer_token = m->conn_open.token;
	in.sndbuf = sb;
	mr = buf_mr(sb, link->dev->ops, link->pd);
	ck_assert_ptr_nonnull(mr);
	in.lkey = mr->lkey;
	in.rmb = rb;
	in.peer_rmb.rkey = m->conn_open.rmb_rkey;
	in.peer_rmb.vaddr = m->conn_open.rmb_vaddr;
	in.peer_rmb.size = (uint32_t)clc_rmbe_bytes(m->conn_open.rmbe_size);
	in.ops = ops;
	b_early_rc = tx_conn_new(&in);
	ck_assert_ptr_nonnull(b_early_rc);
	b_early_conn.rc = b_early_rc;
	mr = buf_mr(rb, via->dev->ops, via->pd);
	ck_assert_ptr_nonnull(mr);
	memset(&a, 0, sizeof(a));
	a.type = LLC_CONN_ACCEPT;
	a.flags = LLC_FLAG_RESP;
	a.conn_accept.opener_token = m->conn_open.token;
	a.conn_accept.token = b_early_conn.token;
	a.conn_accept.rmb_rkey = mr->rkey;
	a.conn_accept.rmb_vaddr = rb->iova;
	ck_assert_int_eq(llc_send(via, &a, NULL, NULL), 0);
}

static void
b_early_accept(struct lgr_link *link, const struct llc_info *m)
{
	struct lgr_link *other = NULL, *l;

	b_early = false;
	for (l = lgr_link_next_active(link->lgr, NULL); l != NULL;
	     l = lgr_link_next_active(link->lgr, l))
		if (l != link)
			other = l;
	ck_assert_ptr_nonnull(other);
	b_accept_with(link, other, m, &b_early_ops);
}

/*
 * With b_late, B keeps the next open unanswered (b_late_open, on
 * b_late_link) until the test has it accepted (b_late_accept_cb).
 */
static bool b_late;
static struct llc_info b_late_open;
static struct lgr_link *b_late_link;

static void
b_late_abort(struct rconn *rc, void *arg)
{
	b_early_aborts++;
}

static const struct rconn_ops b_late_ops = {.peer_abort = b_late_abort};

static void
b_llc_rx(struct lgr_link *link, const struct llc_info *m, void *arg)
{
	struct lgr_conn *c = &b_conns[b_nconns];
	const struct dev_mr *mr;
	struct llc_info a;

	if (m->type == LLC_CONN_RESUME && !(m->flags & LLC_FLAG_RESP))
		b_resumes++;
	if (m->type == LLC_CONN_ORIGIN) {
		b_origin = *m;
		b_origins++;
	}
	if (b_stopping && m->type == LLC_CONN_OPEN) {
		memset(&a, 0, sizeof(a));
		a.type = LLC_CONN_REJECT;
		a.flags = LLC_FLAG_RESP;
		a.conn_reject.opener_token = m->conn_open.token;
		a.conn_reject.reason = session_reason_code(SESSION_SHUTDOWN);
		ck_assert_int_eq(llc_send(link, &a, NULL, NULL), 0);
		return;
	}
	if (m->type == LLC_CONN_OPEN && b_opens++ == 0)
		b_origin_first = b_origins == 1 && b_origin.conn_origin.token ==
							   m->conn_open.token;
	if (b_early && m->type == LLC_CONN_OPEN) {
		b_early_accept(link, m);
		return;
	}
	if (b_late && m->type == LLC_CONN_OPEN) {
		b_late = false;
		b_late_open = *m;
		b_late_link = link;
		return;
	}
	if (!b_accepts || m->type != LLC_CONN_OPEN || b_nconns == 4)
		return;
	b_nconns++;
	b_pool_get();
	mr = buf_mr(b_rmb, link->dev->ops, link->pd);
	ck_assert_ptr_nonnull(mr);
	c->token = 0x99 + (uint32_t)b_nconns;
	ck_assert_int_eq(lgr_conn_add(link->lgr, c), 0);
	memset(&a, 0, sizeof(a));
	a.type = LLC_CONN_ACCEPT;
	a.flags = LLC_FLAG_RESP;
	a.conn_accept.opener_token = m->conn_open.token;
	a.conn_accept.token = c->token;
	a.conn_accept.rmb_rkey = mr->rkey;
	a.conn_accept.rmb_vaddr = b_rmb->iova;
	a.conn_accept.rmbe_size = 0;
	memset(a.conn_accept.resume_id, 0x5a, LLC_RESUME_ID_LEN);
	ck_assert_int_eq(llc_send(link, &a, NULL, NULL), 0);
}

static const struct lgr_data_ops b_ops = {.llc_rx = b_llc_rx};

static int
listen_any(int *port)
{
	int fd = loopnet_listen(port);

	ck_assert_int_ge(fd, 0);
	return fd;
}

static int
connect_to(int port)
{
	int fd = loopnet_connect(port);

	ck_assert_int_ge(fd, 0);
	return fd;
}

/* The next connection to the peer port within ms, or -1. */
static int
peer_accept(int ms)
{
	return harness_accept(peer_fd, ms, NULL);
}

static uint64_t
stat_a(enum stats_id id)
{
	return harness_stat(w, id);
}

static bool
wait_stat_a(enum stats_id id, uint64_t want)
{
	return harness_wait_stat(w, id, HARNESS_GE, want, WAIT_MS);
}

static void
setup_cb(struct worker *wk, void *arg)
{
	struct lgr_ctx *ctx_a = worker_lgr(wk);

	ck_assert_ptr_nonnull(ctx_a);
	flaky_ops = harness_dev_ops();
	flaky_ops->qp_create = flaky_qp_create;
	dev_a = loopdev_new(worker_base(wk));
	dev_b = loopdev_new(worker_base(wk));
	ck_assert_ptr_nonnull(dev_a);
	ck_assert_ptr_nonnull(dev_b);
	ck_assert_int_eq(lgr_ctx_add_dev(ctx_a, flaky_ops, dev_a, "loopa"), 0);
	auth_limit_init(&al_b);
	ctx_b = lgr_ctx_new(worker_base(wk), conf_b, &st_b, &al_b, NULL);
	ck_assert_ptr_nonnull(ctx_b);
	lgr_ctx_set_ops(ctx_b, &b_ops, NULL);
	ck_assert_int_eq(lgr_ctx_add_dev(ctx_b, &loopdev_ops, dev_b, "loopb"),
			 0);
	if (ndevs == 2) {
		dev_a2 = loopdev_new(worker_base(wk));
		dev_b2 = loopdev_new(worker_base(wk));
		ck_assert_int_eq(
			lgr_ctx_add_dev(ctx_a, flaky_ops, dev_a2, "loopa2"), 0);
		ck_assert_int_eq(
			lgr_ctx_add_dev(ctx_b, &loopdev_ops, dev_b2, "loopb2"),
			0);
	}
}

static void
serve_cb(struct worker *wk, void *arg)
{
	ck_assert_int_eq(clc_serve(ctx_b, *(int *)arg, NULL, NULL, 0), 0);
}

static void
close_cb(struct worker *wk, void *arg)
{
	int i;

	session_close_all(wk, SESSION_SHUTDOWN);
	for (i = 0; i < 4; i++)
		lgr_conn_del(&b_conns[i]);
	b_early_conn.rc = NULL;
	tx_conn_free(b_early_rc);
	b_early_rc = NULL;
	lgr_conn_del(&b_early_conn);
	b_early = false;
	b_late = false;
	b_late_link = NULL;
	lgr_ctx_free(ctx_b);
	ctx_b = NULL;
}

/* A's device goes with the test, not with the worker's context. */
static void
devs_cb(struct worker *wk, void *arg)
{
	if (b_pool != NULL) {
		buf_put(b_rmb);
		buf_pool_free(b_pool);
		b_pool = NULL;
	}
	loopdev_free(dev_a);
	loopdev_free(dev_b);
	if (dev_a2 != NULL) {
		loopdev_free(dev_a2);
		loopdev_free(dev_b2);
		dev_a2 = dev_b2 = NULL;
	}
	harness_devs_gone(wk);
}

/*
 * How A and B know each other: without a key, or with the key in
 * key_path (the impostor tests).
 */
static char key_path[64], key_conf[128] = "insecure = true";

static void
key_make(void)
{
	unsigned char k[32];
	int fd;

	snprintf(key_path, sizeof(key_path), "/tmp/check_session_rdma.XXXXXX");
	fd = mkstemp(key_path);
	ck_assert_int_ge(fd, 0);
	auth_nonce(k);
	ck_assert_int_eq(write(fd, k, sizeof(k)), (ssize_t)sizeof(k));
	ck_assert_int_eq(fchmod(fd, 0600), 0);
	close(fd);
	snprintf(key_conf, sizeof(key_conf), "key_file = \"%s\"", key_path);
}

/* A's config; peer_extra goes into b's peer entry, rdma_extra to rdma. */
static struct conf *
a_conf2(const char *peer_extra, const char *rdma_extra)
{
	char text[1024];
	struct conf *c;

	snprintf(text, sizeof(text),
		 "smcproxyd: { name = \"a\"; workers = 1; };\n%s"
		 "peers = ( { name = \"b\"; address = \"127.0.0.1:%d\";"
		 " %s; %s } );\n"
		 "rules = ( { name = \"r\"; listen = \"127.0.0.1:%d\";"
		 " peer = \"b\"; export = \"e\"; %s } );\n"
		 "rdma: { max_links = %d; max_conns_per_lgr = %d; %s };\n",
		 a_extra, peer_port, key_conf, peer_extra, rule_port,
		 rule_extra, max_links, GROUP_CONNS, rdma_extra);
	c = conf_load_string(text, "a.conf", stderr);
	ck_assert_ptr_nonnull(c);
	return conf_hold(c);
}

static struct conf *
a_conf(const char *peer_extra)
{
	return a_conf2(peer_extra, "");
}

static void
setup(void)
{
	char text[512];
	int fd, i;

	log_init(1, getenv("CK_DEBUG") ? LOG_LEVEL_DEBUG : LOG_LEVEL_WARN);
	b_origins = b_opens = 0;
	b_origin_first = false;
	peer_fd = listen_any(&peer_port);
	fd = listen_any(&rule_port);
	close(fd);
	conf_a = a_conf2("any_source = true;", a_rdma_extra);
	conf_next = NULL;
	snprintf(text, sizeof(text),
		 "smcproxyd: { name = \"b\"; workers = 1; };\n"
		 "peers = ( { name = \"a\"; address = \"127.0.0.1:1\";"
		 " %s; any_source = true; } );\n",
		 key_conf);
	conf_b = conf_load_string(text, "b.conf", stderr);
	ck_assert_ptr_nonnull(conf_b);
	conf_hold(conf_b);
	for (i = 0; i < NCLIENTS; i++)
		clients[i] = -1;
	npeers = 0;
	ck_assert_int_eq(worker_start_all(conf_a), 0);
	w = worker_get(0);
	worker_call(w, setup_cb, NULL);
}

static void
teardown(void)
{
	int i;

	harness_stop(w, close_cb, NULL, devs_cb, WAIT_MS);
	for (i = 0; i < NCLIENTS; i++)
		if (clients[i] >= 0)
			close(clients[i]);
	for (i = 0; i < npeers; i++)
		close(peers[i]);
	close(peer_fd);
	conf_drop(conf_a);
	conf_drop(conf_b);
	if (conf_next != NULL)
		conf_drop(conf_next);
}

/*
 * 200 connections wait for the group on its way; when it comes, the
 * first take it until it is three quarters full, and the next group it
 * wants cannot be had (no QP): that failure wakes the waiters again from
 * inside the first wake-up.  Each waiter goes on once: 16 in the group,
 * every other one over exactly one fallback connection.
 */
START_TEST(woken_once)
{
	int clc_fd, fd, i;

	clients[0] = connect_to(rule_port);
	/* the first client starts the group: its CLC connection, held */
	clc_fd = peer_accept(WAIT_MS);
	ck_assert_int_ge(clc_fd, 0);
	for (i = 1; i < NCLIENTS; i++)
		clients[i] = connect_to(rule_port);
	ck_assert(wait_stat_a(STAT_conns_lgr_waits, NCLIENTS));
	ck_assert_int_eq(stat_a(STAT_conns_accepted), NCLIENTS);
	worker_call(w, serve_cb, &clc_fd);
	while (npeers <= NCLIENTS - GROUP_CONNS &&
	       (fd = peer_accept(npeers < NCLIENTS - GROUP_CONNS ? WAIT_MS :
								   500)) >= 0)
		peers[npeers++] = fd;
	ck_assert_int_eq(qps_created, 2);
	ck_assert_int_eq(npeers, NCLIENTS - GROUP_CONNS);
	ck_assert_uint_eq(stat_a(STAT_conns_active), NCLIENTS);
}
END_TEST

static void
lgr_state_cb(struct worker *wk, void *arg)
{
	struct lgr *lgr = TAILQ_FIRST(&worker_lgr(wk)->lgrs);

	*(int *)arg = lgr != NULL ? (int)lgr->state : -1;
}

static int
lgr_state_a(void)
{
	int st;

	worker_call(w, lgr_state_cb, &st);
	return st;
}

static bool
wait_lgr_state_a(int want)
{
	int i;

	for (i = 0; i < WAIT_MS / 10; i++) {
		if (lgr_state_a() == want)
			return true;
		usleep(10000);
	}
	return false;
}

/*
 * The group negotiated CONN_ORIGIN: before its CONN_OPEN, on the same
 * link, A names the client connection (its address and port, and the
 * rule's listener it connected to) for the export's PROXY header.
 */
START_TEST(open_names_its_client)
{
	struct addr src, dst, got_src, got_dst;
	int clc_fd, i;

	clients[0] = connect_to(rule_port);
	clc_fd = peer_accept(WAIT_MS);
	ck_assert_int_ge(clc_fd, 0);
	worker_call(w, serve_cb, &clc_fd);
	for (i = 0; i < WAIT_MS / 10 && b_opens == 0; i++) {
		usleep(10000);
		worker_call(w, lgr_state_cb, &clc_fd);
	}
	ck_assert_int_eq(b_opens, 1);
	ck_assert(b_origin_first);
	src.len = sizeof(src.ss);
	ck_assert_int_eq(
		getsockname(clients[0], (struct sockaddr *)&src.ss, &src.len),
		0);
	ck_assert_int_eq(addr_parse("127.0.0.1:1", &dst), 0);
	((struct sockaddr_in *)&dst.ss)->sin_port = htons((uint16_t)rule_port);
	fb_origin_get(&b_origin.conn_origin.origin, &got_src, &got_dst);
	ck_assert(addr_equal(&got_src, &src));
	ck_assert(addr_equal(&got_dst, &dst));
	ck_assert_uint_eq(b_origin.flags, 0);
}
END_TEST

/*
 * A reload that leaves b's entry as it was keeps the group and its
 * connection; one that changes how b authenticates (here any_source)
 * ends both: what b proved under the old entry proves nothing now.
 */
START_TEST(reload_revokes)
{
	uint64_t closed = stat_a(STAT_CLOSE_BASE + SESSION_AUTH_FAILED);
	int clc_fd;

	clients[0] = connect_to(rule_port);
	clc_fd = peer_accept(WAIT_MS);
	ck_assert_int_ge(clc_fd, 0);
	worker_call(w, serve_cb, &clc_fd);
	ck_assert(wait_lgr_state_a(LGR_STATE_ACTIVE));
	ck_assert_uint_eq(stat_a(STAT_conns_active), 1);

	conf_next = a_conf("any_source = true;");
	ck_assert_int_eq(worker_reconfigure_all(conf_next), 0);
	ck_assert_int_eq(lgr_state_a(), LGR_STATE_ACTIVE);
	ck_assert_uint_eq(stat_a(STAT_conns_active), 1);
	conf_drop(conf_next);

	conf_next = a_conf("any_source = false;");
	ck_assert_int_eq(worker_reconfigure_all(conf_next), 0);
	ck_assert_int_ne(lgr_state_a(), LGR_STATE_ACTIVE);
	ck_assert_uint_eq(stat_a(STAT_conns_active), 0);
	ck_assert_uint_eq(stat_a(STAT_CLOSE_BASE + SESSION_AUTH_FAILED),
			  closed + 1);
}
END_TEST

/*
 * One peer's connections hold at most its buffer_share of the worker's
 * registered memory: with 1 MiB and 25 %, two connections of a 64 KiB
 * ring and a 64 KiB RMB element; the next ones take the fallback.
 */
START_TEST(buffer_share_per_peer)
{
	int clc_fd, i, fd;

	conf_next =
		a_conf2("any_source = true; buffer_share = 25;",
			"max_buffer_memory = 1; sndbuf = 65536; rmb = 65536;");
	ck_assert_int_eq(worker_reconfigure_all(conf_next), 0);
	clients[0] = connect_to(rule_port);
	clc_fd = peer_accept(WAIT_MS);
	ck_assert_int_ge(clc_fd, 0);
	worker_call(w, serve_cb, &clc_fd);
	ck_assert(wait_lgr_state_a(LGR_STATE_ACTIVE));
	for (i = 1; i < 6; i++)
		clients[i] = connect_to(rule_port);
	ck_assert(wait_stat_a(STAT_peer_buffer_full, 4));
	while (npeers < 4 && (fd = peer_accept(WAIT_MS)) >= 0)
		peers[npeers++] = fd; /* their fallback connections */
	ck_assert_int_eq(npeers, 4);
	ck_assert_uint_eq(stat_a(STAT_conns_rdma_nobufs), 4);
	ck_assert_uint_eq(stat_a(STAT_rdma_buf_bytes_used), 2 * 2 * 65536);
}
END_TEST

/* Whether A's stat id comes down to want (a gauge) within WAIT_MS. */
static bool
wait_stat_a_down(enum stats_id id, uint64_t want)
{
	return harness_wait_stat(w, id, HARNESS_LE, want, WAIT_MS);
}

static bool
wait_session_state_a(int want)
{
	return harness_wait_session_state(w, want, WAIT_MS);
}

/* A's group ends as if its peer had gone (no DELETE_LINK to b). */
static void
terminate_cb(struct worker *wk, void *arg)
{
	struct lgr *lgr = TAILQ_FIRST(&worker_lgr(wk)->lgrs);

	ck_assert_ptr_nonnull(lgr);
	qps_created = 0; /* the next group may have its QP */
	lgr_terminate(lgr, LLC_DEL_LOST_PATH, false, true);
}

/*
 * The group ends while a connection's CONN_OPEN waits for its answer (b
 * never answers here), as when the peer's end of the group went first:
 * nothing of the client's was read, so it opens again on the next group
 * (a new CLC connection), three times at most; the fourth loss closes it
 * (link_failed).  It used to close at the first.
 */
START_TEST(open_lost_with_group)
{
	uint64_t failed = stat_a(STAT_CLOSE_BASE + SESSION_LINK_FAILED);
	int clc_fd, i;

	clients[0] = connect_to(rule_port);
	for (i = 0; i < 4; i++) {
		clc_fd = peer_accept(WAIT_MS);
		ck_assert_int_ge(clc_fd, 0);
		worker_call(w, serve_cb, &clc_fd);
		ck_assert(wait_session_state_a(SESSION_RDMA_OPEN));
		ck_assert_uint_eq(stat_a(STAT_conns_reopened), (uint64_t)i);
		worker_call(w, terminate_cb, NULL);
		if (i < 3)
			ck_assert(wait_stat_a(STAT_conns_reopened, i + 1));
	}
	ck_assert(
		wait_stat_a(STAT_CLOSE_BASE + SESSION_LINK_FAILED, failed + 1));
	ck_assert_uint_eq(stat_a(STAT_conns_reopened), 3);
	ck_assert_uint_eq(stat_a(STAT_conns_active), 0);
	ck_assert_uint_eq(stat_a(STAT_conns_fallback), 0);
}
END_TEST

/* ---- resuming on the rule side: deadlines, limits, a failover ---- */

static void
setup_resume(void)
{
	b_accepts = true;
	setup();
}

static void
setup_resume2(void)
{
	ndevs = 2;
	qps_max = 100;
	max_links = 2;
	setup_resume();
}

/* Two links, and the bytes by RDMA WRITE only (B reads no CDC). */
static void
setup_rkeys2(void)
{
	a_rdma_extra = "cdc_data = false;";
	setup_resume2();
}

/* One link, and the bytes by RDMA WRITE only (B reads no CDC). */
static void
setup_late(void)
{
	a_rdma_extra = "cdc_data = false;";
	setup_resume();
}

static void
teardown_resume(void)
{
	/* a group A still sets up for a resume is refused: it goes */
	close(peer_fd);
	peer_fd = -1;
	teardown();
	b_accepts = false;
	ndevs = 1;
	qps_max = 1;
	max_links = 1;
	rule_extra = "";
	a_rdma_extra = "";
}

static int b_resumes_seen;

static void
b_resumes_cb(struct worker *wk, void *arg)
{
	b_resumes_seen = b_resumes;
}

/* B got n CONN_RESUME requests within ms. */
static bool
wait_b_resumes(int n, int ms)
{
	int i;

	for (i = 0; i < ms / 10; i++) {
		worker_call(w, b_resumes_cb, NULL);
		if (b_resumes_seen >= n)
			return true;
		usleep(10000);
	}
	return false;
}

/* A client's connection relays over a group to B (served here). */
static void
relay_one(int i)
{
	int clc_fd;

	clients[i] = connect_to(rule_port);
	if (i == 0) {
		clc_fd = peer_accept(WAIT_MS);
		ck_assert_int_ge(clc_fd, 0);
		worker_call(w, serve_cb, &clc_fd);
	}
	ck_assert(wait_stat_a(STAT_conns_rdma, (uint64_t)i + 1));
}

/* Hold (or let go) the sends of A's first link: its completions wait. */
static void
hold_cb(struct worker *wk, void *arg)
{
	struct lgr *lgr = TAILQ_FIRST(&worker_lgr(wk)->lgrs);

	loopdev_hold(wr_link_qp(lgr->link[0].wr), *(bool *)arg);
}

static void
hold_a(bool on)
{
	worker_call(w, hold_cb, &on);
}

static uint64_t a_wrs;

static void
a_wrs_cb(struct worker *wk, void *arg)
{
	struct lgr *lgr = TAILQ_FIRST(&worker_lgr(wk)->lgrs);

	(void)arg;
	a_wrs = wr_link_stats(lgr->link[0].wr)->posted;
}

/* WRs A's first link has posted so far */
static uint64_t
wrs_a(void)
{
	worker_call(w, a_wrs_cb, NULL);
	return a_wrs;
}

static int b_rmb_got;

static void
b_rmb_cb(struct worker *wk, void *arg)
{
	const unsigned char *want = arg;
	int i;

	for (i = 0;
	     i < 1000 && ((const unsigned char *)b_rmb->addr)[i] == want[i];
	     i++)
		;
	b_rmb_got = i;
}

/* B's RMB element holds want[0..999] within WAIT_MS. */
static bool
wait_b_rmb(const unsigned char *want)
{
	int i;

	for (i = 0; i < WAIT_MS / 10; i++) {
		worker_call(w, b_rmb_cb, (void *)want);
		if (b_rmb_got == 1000)
			return true;
		usleep(10000);
	}
	return false;
}

/*
 * Autocork at the door (issue 45): a client writes 1000 single bytes
 * while A's first CDC is in flight (its completion held).  The first is
 * read and sent at once; the other 999 wait in the kernel, unread: the
 * socket's read event is off, so they wake nobody; the completion has
 * them read in one go.  Counted, not timed: A reads the client's socket
 * a handful of times, not 1000 (before: once per write), and posts a
 * handful of WRs (*wrs).  With rdma.autocork off every write is read as
 * it comes.
 */
static uint64_t
stream_of_single_bytes(uint64_t *wrs)
{
	unsigned char want[1000];
	uint64_t reads0, wrs0;
	int i;

	relay_one(0);
	wrs0 = wrs_a();
	for (i = 0; i < 1000; i++)
		want[i] = (unsigned char)(i * 7 + 1);
	reads0 = stat_a(STAT_relay_reads);
	hold_a(true);
	ck_assert_int_eq(write(clients[0], want, 1), 1);
	/* read, sent (held in flight), then read dry */
	ck_assert(wait_stat_a(STAT_relay_reads, reads0 + 2));
	for (i = 1; i < 1000; i++) {
		ck_assert_int_eq(write(clients[0], &want[i], 1), 1);
		usleep(200);
	}
	usleep(50000);
	hold_a(false);
	ck_assert_msg(wait_b_rmb(want),
		      "B's RMB has the first %d bytes; %llu reads, %llu corks",
		      b_rmb_got,
		      (unsigned long long)(stat_a(STAT_relay_reads) - reads0),
		      (unsigned long long)stat_a(STAT_autocork_door));
	*wrs = wrs_a() - wrs0;
	return stat_a(STAT_relay_reads) - reads0;
}

START_TEST(autocork_at_the_door)
{
	uint64_t wrs;
	uint64_t reads = stream_of_single_bytes(&wrs);

	ck_assert_uint_le(reads, 5);
	/* the first byte's CDC, then the rest in one or two */
	ck_assert_uint_le(wrs, 5);
	ck_assert_uint_eq(stat_a(STAT_autocork_door), 1);
}
END_TEST

START_TEST(autocork_off_reads_each_write)
{
	uint64_t wrs;
	uint64_t reads = stream_of_single_bytes(&wrs);

	ck_assert_uint_ge(reads, 100);
	ck_assert_uint_eq(stat_a(STAT_autocork_door), 0);
}
END_TEST

/* the bytes by WRITE into B's RMB element, where the test finds them */
static void
setup_cork(void)
{
	a_rdma_extra = "cdc_data = false;";
	setup_resume();
}

static void
setup_cork_off(void)
{
	a_rdma_extra = "cdc_data = false; autocork = false;";
	setup_resume();
}

/* The group A resumes on: its CLC served, CONN_RESUME sent to B. */
static void
new_group_asked(int n)
{
	int clc_fd = peer_accept(WAIT_MS);

	ck_assert_int_ge(clc_fd, 0);
	worker_call(w, serve_cb, &clc_fd);
	ck_assert(wait_b_resumes(n, WAIT_MS));
}

/*
 * B holds its answer to CONN_RESUME: after 5 s A leaves that attempt and
 * asks again (resume_retries), instead of waiting out resume_timeout.
 */
START_TEST(resume_unanswered_asks_again)
{
	relay_one(0);
	worker_call(w, terminate_cb, NULL);
	ck_assert(wait_session_state_a(SESSION_RESUMING));
	new_group_asked(1);
	ck_assert_uint_eq(stat_a(STAT_resume_retries), 0);
	ck_assert(wait_b_resumes(2, 8000));
	ck_assert_uint_eq(stat_a(STAT_resume_retries), 1);
	ck_assert_int_eq(lgr_state_a(), LGR_STATE_ACTIVE);
	ck_assert(wait_session_state_a(SESSION_RESUMING));
}
END_TEST

static int links_up, ngroups;

static void
links_cb(struct worker *wk, void *arg)
{
	struct lgr *lgr;

	links_up = ngroups = 0;
	TAILQ_FOREACH(lgr, &worker_lgr(wk)->lgrs, entry) {
		ngroups++;
		if (lgr->state == LGR_STATE_ACTIVE)
			links_up = lgr_links_active(lgr);
	}
}

/* Whether A comes to have an active group of links links and groups
 * groups in all (0: any number) within WAIT_MS. */
static bool
wait_links(int links, int groups)
{
	int i;

	for (i = 0; i < WAIT_MS / 10; i++) {
		worker_call(w, links_cb, NULL);
		if (links_up == links && (groups == 0 || ngroups == groups))
			return true;
		usleep(10000);
	}
	return false;
}

/* The link A's resuming connection asked on goes down (the peer's side). */
static void
drop_conn_link_cb(struct worker *wk, void *arg)
{
	struct session *s = worker_sessions(wk);
	struct session_rdma *sr = s->rdma;

	ck_assert_ptr_nonnull(sr->lc.link);
	loopdev_drop_link(wr_link_qp(sr->lc.link->wr));
}

/*
 * Finding M1: the group a connection resumes on loses the link its
 * CONN_RESUME went on while the answer is held: the connection moves to
 * the group's other link (link_down with a link to go to), long after its
 * old group was freed.  It asks again on the link that is left, and
 * never reads the old group (ASan: heap-use-after-free before the fix).
 */
START_TEST(resume_failover_while_asking)
{
	relay_one(0);
	worker_call(w, terminate_cb, NULL);
	ck_assert(wait_session_state_a(SESSION_RESUMING));
	new_group_asked(1);
	/* both links of the new group up, and the old group freed */
	ck_assert(wait_links(2, 1));
	worker_call(w, drop_conn_link_cb, NULL);
	ck_assert(wait_b_resumes(2, WAIT_MS));
	ck_assert_uint_eq(stat_a(STAT_resume_retries), 0);
	ck_assert(wait_session_state_a(SESSION_RESUMING));
}
END_TEST

/* ---- a group of two links: the peer's rkeys, failover, the table ---- */

/* What the test sees of A's group and connection, and of B's rkeys. */
static struct {
	uint8_t id, other;    /* A's connection's link at first, the other */
	uint32_t rkey, rkey2; /* B's RMB element's rkey on each */
	uint8_t link_now;     /* A's connection's link now; 0: none */
	uint32_t asked;	      /* ... and the peer rkey it asks for there */
	uint32_t asked_other; /* ... and on other */
	int rows;	      /* A's group's rtoken rows */
	bool has_conn;
} rk;

static void
rk_cb(struct worker *wk, void *arg)
{
	struct lgr *lgr = TAILQ_FIRST(&worker_lgr(wk)->lgrs);
	struct session *s = worker_sessions(wk);
	struct session_rdma *sr = s != NULL ? s->rdma : NULL;

	(void)arg;
	rk.rows = lgr != NULL ? lgr->rtokens.n : -1;
	rk.has_conn = sr != NULL && sr->lc.lgr != NULL;
	rk.link_now = 0;
	rk.asked = 0;
	if (!rk.has_conn)
		return;
	rk.link_now = lgr_link_id(sr->lc.link);
	if (lgr_conn_peer_rkey(&sr->lc, rk.link_now, &rk.asked))
		rk.asked = 0;
	if (rk.other == 0 ||
	    lgr_conn_peer_rkey(&sr->lc, rk.other, &rk.asked_other))
		rk.asked_other = 0;
}

static void
rk_read(void)
{
	worker_call(w, rk_cb, NULL);
}

/*
 * B, as a peer of our dialect, tells A its RMB element's rkey on the
 * other link in CONFIRM_RKEY on the connection's link (rkey2, *arg 0);
 * or (*arg 1), after the connection ended, the same for that element
 * again on the link that is left.
 */
static void
b_confirm_rkey_cb(struct worker *wk, void *arg)
{
	struct session *s = worker_sessions(wk);
	struct lgr *lb = TAILQ_FIRST(&ctx_b->lgrs);
	struct lgr_link *via, *to = NULL, *l;
	const struct dev_mr *cur, *mr;
	struct llc_info m;

	if (*(int *)arg == 0) {
		rk.id = lgr_link_id(s->rdma->lc.link);
		via = lgr_link_by_id(lb, rk.id);
		for (l = lgr_link_next_active(lb, NULL); l != NULL;
		     l = lgr_link_next_active(lb, l))
			if (l != via)
				to = l;
		ck_assert_ptr_nonnull(via);
		ck_assert_ptr_nonnull(to);
		rk.other = to->id;
	} else {
		via = lgr_link_by_id(lb, rk.other);
		to = lgr_link_by_id(lb, rk.id);
		ck_assert_ptr_nonnull(via);
	}
	cur = buf_mr(b_rmb, via->dev->ops, via->pd);
	ck_assert_ptr_nonnull(cur);
	memset(&m, 0, sizeof(m));
	m.type = LLC_CONFIRM_RKEY;
	m.confirm_rkey.num_rkeys = 1;
	m.confirm_rkey.rt[0].rkey = cur->rkey;
	m.confirm_rkey.rt[0].vaddr = b_rmb->iova;
	m.confirm_rkey.rt[1].link_id = rk.id;
	m.confirm_rkey.rt[1].rkey = rk.rkey;
	m.confirm_rkey.rt[1].vaddr = b_rmb->iova;
	if (*(int *)arg == 0) {
		mr = buf_mr(b_rmb, to->dev->ops, to->pd);
		ck_assert_ptr_nonnull(mr);
		rk.rkey = cur->rkey;
		rk.rkey2 = mr->rkey;
		m.confirm_rkey.rt[1].link_id = to->id;
		m.confirm_rkey.rt[1].rkey = mr->rkey;
	}
	ck_assert_int_eq(llc_send(via, &m, NULL, NULL), 0);
}

static void
b_confirm_rkey(int after_end)
{
	worker_call(w, b_confirm_rkey_cb, &after_end);
}

/*
 * Issue 44: the peer's rkeys have one home, the group's table.  A
 * connection of a group of two links learns its peer's rkey on the other
 * link from the peer's CONFIRM_RKEY; its link fails and it moves there,
 * with that rkey (B's RMB element gets the bytes written after: a wrong
 * rkey would be refused by the device).  When it ends its row goes, and
 * a CONFIRM_RKEY for its element that comes late is ignored: the table
 * stays empty and the group up.
 */
START_TEST(failover_with_the_told_rkey)
{
	unsigned char want[1000];
	struct linger lg = {.l_onoff = 1, .l_linger = 0};
	int i, after_end;

	relay_one(0);
	ck_assert(wait_links(2, 0));
	rk_read();
	ck_assert(rk.has_conn);
	ck_assert_int_eq(rk.rows, 1); /* its CONN_ACCEPT's */
	memset(&rk, 0, sizeof(rk));
	b_confirm_rkey(0);
	ck_assert_uint_ne(rk.rkey, rk.rkey2);
	for (i = 0; i < WAIT_MS / 10; i++) {
		rk_read();
		if (rk.asked_other != 0)
			break;
		usleep(10000);
	}
	ck_assert_uint_eq(rk.asked_other, rk.rkey2);
	ck_assert_uint_eq(rk.asked, rk.rkey);
	ck_assert_int_eq(rk.rows, 1);
	/* its link fails: the connection moves to the other, with rkey2 */
	worker_call(w, drop_conn_link_cb, NULL);
	ck_assert(wait_stat_a(STAT_conn_failovers, 1));
	for (i = 0; i < WAIT_MS / 10; i++) {
		rk_read();
		if (rk.link_now == rk.other)
			break;
		usleep(10000);
	}
	ck_assert_uint_eq(rk.link_now, rk.other);
	ck_assert_uint_eq(rk.asked, rk.rkey2);
	ck_assert_int_eq(rk.rows, 1);
	ck_assert_uint_eq(stat_a(STAT_conn_failover_failed), 0);
	for (i = 0; i < 1000; i++)
		want[i] = (unsigned char)(i * 13 + 5);
	ck_assert_int_eq(write(clients[0], want, sizeof(want)),
			 (ssize_t)sizeof(want));
	ck_assert(wait_b_rmb(want));
	/* the client resets: the connection ends, its row goes */
	ck_assert_int_eq(
		setsockopt(clients[0], SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)),
		0);
	close(clients[0]);
	clients[0] = -1;
	for (i = 0; i < WAIT_MS / 10; i++) {
		rk_read();
		if (!rk.has_conn)
			break;
		usleep(10000);
	}
	ck_assert(!rk.has_conn);
	ck_assert_int_eq(rk.rows, 0);
	/* the peer's CONFIRM_RKEY for the closed connection: ignored */
	after_end = 1;
	b_confirm_rkey(after_end);
	usleep(200000);
	rk_read();
	ck_assert_int_eq(rk.rows, 0);
	ck_assert_int_eq(lgr_state_a(), LGR_STATE_ACTIVE);
}
END_TEST

static void
b_early_cb(struct worker *wk, void *arg)
{
	b_early = true;
	b_early_aborts = 0;
	b_late_done = -1;
}

struct early_seen {
	int aborts, late_done, b_state, b_links;
};

static void
early_seen_cb(struct worker *wk, void *arg)
{
	struct early_seen *e = arg;
	struct lgr *lgr = TAILQ_FIRST(&ctx_b->lgrs);

	e->aborts = b_early_aborts;
	e->late_done = b_late_done;
	e->b_state = lgr != NULL ? (int)lgr->state : -1;
	e->b_links = lgr != NULL ? lgr_links_active(lgr) : 0;
}

/*
 * Issue 43: no RMB element pulled out under a peer.  A connection that
 * ends between its open and its relay, after the peer learned its token
 * and RMB element (here: a CONN_ACCEPT it cannot relay with), sends the
 * peer an abort: the peer's end is reset (peer_abort), once, counted in
 * conns_early_aborts.  The element stays registered after: a WRITE of
 * the peer's still in flight lands.  Both groups, both links and the
 * other connection live on.
 */
START_TEST(early_end_aborts_the_peer)
{
	uint64_t failed = stat_a(STAT_CLOSE_BASE + SESSION_LINK_FAILED);
	unsigned char want[1000];
	struct early_seen e;
	int i;

	relay_one(0);
	ck_assert(wait_links(2, 0));
	usleep(100000); /* B's side of the second link too */
	worker_call(w, b_early_cb, NULL);
	clients[1] = connect_to(rule_port);
	ck_assert(
		wait_stat_a(STAT_CLOSE_BASE + SESSION_LINK_FAILED, failed + 1));
	for (i = 0; i < WAIT_MS / 10; i++) {
		worker_call(w, early_seen_cb, &e);
		if (e.aborts > 0 && e.late_done >= 0)
			break;
		usleep(10000);
	}
	ck_assert_msg(e.aborts == 1, "B's connection got %d aborts", e.aborts);
	ck_assert_uint_eq(stat_a(STAT_conns_early_aborts), 1);
	ck_assert_msg(e.late_done == 0, "B's late WRITE completed with %d",
		      e.late_done);
	/* nothing failed on either side */
	usleep(200000);
	worker_call(w, early_seen_cb, &e);
	ck_assert_int_eq(e.aborts, 1);
	ck_assert_int_eq(e.b_state, LGR_STATE_ACTIVE);
	ck_assert_int_eq(e.b_links, 2);
	worker_call(w, links_cb, NULL);
	ck_assert_int_eq(links_up, 2);
	ck_assert_int_eq(lgr_state_a(), LGR_STATE_ACTIVE);
	ck_assert_uint_eq(stat_a(STAT_conns_rdma), 1);
	for (i = 0; i < 1000; i++)
		want[i] = (unsigned char)(i * 11 + 3);
	ck_assert_int_eq(write(clients[0], want, sizeof(want)),
			 (ssize_t)sizeof(want));
	ck_assert(wait_b_rmb(want));
}
END_TEST

static void
b_late_cb(struct worker *wk, void *arg)
{
	b_late = true;
	b_late_link = NULL;
	b_early_aborts = 0;
	b_late_done = -1;
}

static void
b_late_got_cb(struct worker *wk, void *arg)
{
	*(bool *)arg = b_late_link != NULL;
}

/* A closes its connection that waits for its CONN_OPEN's answer. */
static void
close_opening_cb(struct worker *wk, void *arg)
{
	struct session *s;

	for (s = worker_sessions(wk); s != NULL; s = session_next(s))
		if (s->state == SESSION_RDMA_OPEN) {
			session_close(s, SESSION_SHUTDOWN);
			return;
		}
	ck_abort_msg("no connection waits for its CONN_ACCEPT");
}

/* B accepts the open it kept, and its end writes into A's element at
 * once, as an export whose target speaks first. */
static void
b_late_accept_cb(struct worker *wk, void *arg)
{
	ck_assert_ptr_nonnull(b_late_link);
	b_accept_with(b_late_link, b_late_link, &b_late_open, &b_late_ops);
	b_write_into_a(b_early_rc);
}

/*
 * A connection closes (a shutdown, a reload, a client gone) with its
 * CONN_OPEN unanswered, and the peer's CONN_ACCEPT comes after the
 * cooling time of an RMB element (RMB_COOL_MS), with a new connection
 * in between, whose buffers are taken after it.  The peer's end opens
 * with the accept and writes into A's element at once: the WRITE lands
 * (status 0; a remote access error were the element deregistered,
 * which takes the link down), the peer's end is aborted, once, counted
 * in conns_early_aborts, and the group, its link and the other
 * connections live on.
 */
START_TEST(late_accept_aborts_the_peer)
{
	uint64_t shut = stat_a(STAT_CLOSE_BASE + SESSION_SHUTDOWN);
	unsigned char want[1000];
	struct early_seen e;
	bool got = false;
	int i;

	relay_one(0);
	worker_call(w, b_late_cb, NULL);
	clients[1] = connect_to(rule_port);
	for (i = 0; i < WAIT_MS / 10 && !got; i++) {
		worker_call(w, b_late_got_cb, &got);
		usleep(10000);
	}
	ck_assert_msg(got, "B got no CONN_OPEN");
	worker_call(w, close_opening_cb, NULL);
	ck_assert(wait_stat_a(STAT_CLOSE_BASE + SESSION_SHUTDOWN, shut + 1));
	usleep((RMB_COOL_MS + 300) * 1000);
	clients[2] = connect_to(rule_port);
	ck_assert(wait_stat_a(STAT_conns_rdma, 2));
	worker_call(w, b_late_accept_cb, NULL);
	for (i = 0; i < WAIT_MS / 10; i++) {
		worker_call(w, early_seen_cb, &e);
		if (e.aborts > 0 && e.late_done >= 0)
			break;
		usleep(10000);
	}
	ck_assert_msg(e.late_done == 0, "B's WRITE completed with %d",
		      e.late_done);
	ck_assert_msg(e.aborts == 1, "B's connection got %d aborts", e.aborts);
	ck_assert_uint_eq(stat_a(STAT_conns_early_aborts), 1);
	/* nothing failed on either side */
	usleep(200000);
	worker_call(w, early_seen_cb, &e);
	ck_assert_int_eq(e.aborts, 1);
	ck_assert_int_eq(e.b_state, LGR_STATE_ACTIVE);
	ck_assert_int_eq(e.b_links, 1);
	ck_assert(wait_links(1, 1));
	ck_assert_int_eq(lgr_state_a(), LGR_STATE_ACTIVE);
	ck_assert_uint_eq(stat_a(STAT_conns_rdma), 2);
	ck_assert_uint_eq(stat_a(STAT_conns_active), 2);
	for (i = 0; i < 1000; i++)
		want[i] = (unsigned char)(i * 13 + 5);
	ck_assert_int_eq(write(clients[0], want, sizeof(want)),
			 (ssize_t)sizeof(want));
	ck_assert(wait_b_rmb(want));
}
END_TEST

/*
 * A peer holds at most max_resuming resuming connections per worker:
 * with 1, the second connection of a group that ends is reset at once
 * (resume_failed_limit), the first resumes as before.
 */
START_TEST(resume_limit_per_peer)
{
	conf_next = a_conf("any_source = true; max_resuming = 1;");
	ck_assert_int_eq(worker_reconfigure_all(conf_next), 0);
	relay_one(0);
	relay_one(1);
	worker_call(w, terminate_cb, NULL);
	ck_assert(wait_stat_a(STAT_resume_failed_limit, 1));
	ck_assert(wait_stat_a_down(STAT_conns_active, 1));
	ck_assert_uint_eq(stat_a(STAT_conns_active), 1);
	ck_assert_uint_eq(stat_a(STAT_conns_resuming), 1);
}
END_TEST

/*
 * The rule's idle_timeout applies while a connection resumes: with 1 s
 * and no new group to be had, it is reset within seconds, not after
 * resume_timeout (900 s).
 */
START_TEST(resume_idle_timeout)
{
	rule_extra = "idle_timeout = 1;";
	conf_next = a_conf("any_source = true;");
	ck_assert_int_eq(worker_reconfigure_all(conf_next), 0);
	relay_one(0);
	worker_call(w, terminate_cb, NULL);
	ck_assert(wait_session_state_a(SESSION_RESUMING));
	ck_assert(wait_stat_a(STAT_resume_failed_timeout, 1));
	ck_assert(wait_stat_a_down(STAT_conns_active, 0));
}
END_TEST

/*
 * Nothing listens on the peer port any more when two connections try to
 * resume: the first one's try fails the new group at once (connection
 * refused), which ends both resumes from inside resume_tick's walk.  Both
 * are reset, counted, and the walk reads neither after its end (ASan:
 * heap-use-after-free with a walk that keeps a pointer to the next).
 */
START_TEST(resume_peer_gone_ends_all)
{
	relay_one(0);
	relay_one(1);
	close(peer_fd);
	peer_fd = -1;
	worker_call(w, terminate_cb, NULL);
	ck_assert(wait_stat_a(STAT_resume_failed_peer_gone, 2));
	ck_assert(wait_stat_a_down(STAT_conns_resuming, 0));
	ck_assert(wait_stat_a_down(STAT_conns_active, 0));
}
END_TEST

/* ---- a hostile responder on the peer's port (H1) ---- */

static void
setup_keyed(void)
{
	key_make();
	b_accepts = true;
	setup();
}

static void
teardown_keyed(void)
{
	teardown();
	b_accepts = false;
	unlink(key_path);
	snprintf(key_conf, sizeof(key_conf), "insecure = true");
}

/* Up to len bytes from fd within ms: what came, 0 at EOF, -1 if none. */
static ssize_t
recv_within(int fd, void *buf, size_t len, int ms)
{
	struct pollfd p = {fd, POLLIN, 0};

	if (poll(&p, 1, ms) <= 0)
		return -1;
	return recv(fd, buf, len, MSG_DONTWAIT);
}

/* One whole fallback message from fd into buf (FB_MSG_MAX bytes). */
static size_t
fb_msg_within(int fd, unsigned char *buf)
{
	size_t len = 0;
	int i, rc;

	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	for (i = 0; i < WAIT_MS / 10; i++) {
		rc = fallback_msg_read(fd, buf, &len);
		ck_assert_int_ge(rc, 0);
		if (rc == 1)
			return len;
		usleep(10000);
	}
	ck_abort_msg("no whole message from A");
	return 0;
}

/*
 * The peer daemon drains to stop (a restart) and refuses the open with
 * CONN_REJECT shutdown: the connection is not closed but opens again over
 * TCP, where the peer port's listening socket waits for the peer's next
 * process (fdstore.c); its first message is the fallback HELLO.
 */
START_TEST(open_refused_by_stopping_peer)
{
	uint64_t closed = stat_a(STAT_CLOSE_BASE + SESSION_SHUTDOWN);
	unsigned char buf[FB_MSG_MAX];
	int clc_fd, fd;

	b_stopping = true;
	clients[0] = connect_to(rule_port);
	clc_fd = peer_accept(WAIT_MS);
	ck_assert_int_ge(clc_fd, 0);
	worker_call(w, serve_cb, &clc_fd);
	ck_assert(wait_stat_a(STAT_conns_reopened, 1));
	fd = peer_accept(WAIT_MS);
	ck_assert_int_ge(fd, 0);
	ck_assert_uint_ge(fb_msg_within(fd, buf), sizeof(struct fb_hdr));
	ck_assert(memcmp(buf, FB_EYECATCHER, 4) == 0);
	ck_assert_uint_eq(buf[5], FB_HELLO);
	ck_assert_uint_eq(stat_a(STAT_CLOSE_BASE + SESSION_SHUTDOWN), closed);
	ck_assert_uint_eq(stat_a(STAT_conns_active), 1);
	close(fd);
	b_stopping = false;
}
END_TEST

enum impostor { IMP_RESUMED, IMP_RESULT0_RESUMED, IMP_BAD_CHALLENGE };

#define SECRET "bytes only the real peer may read"
#define MARKER "IMPOSTOR-BYTES"

/*
 * The peer's daemon dies under a keyed client connection that relays
 * over a group to B ("before" sent over it, SECRET written while it
 * resumes) and the peer port answers what comes: the new group's CLC is
 * declined, so A resumes over TCP.  The TCP connection of that resume,
 * its HELLO read into hello (*hello_len bytes, decoded into *hi).
 */
static int
resume_to_peer_port(unsigned char *hello, size_t *hello_len,
		    struct fb_hello_info *hi)
{
	struct clc_decline_info d;
	char buf[4096];
	ssize_t got;
	int clc_fd, fd;

	clients[0] = connect_to(rule_port);
	clc_fd = peer_accept(WAIT_MS);
	ck_assert_int_ge(clc_fd, 0);
	worker_call(w, serve_cb, &clc_fd);
	ck_assert(wait_session_state_a(SESSION_RELAY));
	ck_assert_int_eq(write(clients[0], "before", 6), 6);
	ck_assert(wait_stat_a(STAT_tx_bytes, 6));
	worker_call(w, terminate_cb, NULL);
	ck_assert(wait_session_state_a(SESSION_RESUMING));
	ck_assert_int_eq(write(clients[0], SECRET, sizeof(SECRET)),
			 (ssize_t)sizeof(SECRET));

	/* the new group's CLC: declined */
	fd = peer_accept(WAIT_MS);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_gt(recv_within(fd, buf, sizeof(buf), WAIT_MS), 0);
	memset(&d, 0, sizeof(d));
	d.diagnosis = CLC_DECL_NOSMCRDEV;
	got = clc_decline_encode(buf, sizeof(buf), &d);
	ck_assert_int_gt(got, 0);
	ck_assert_int_eq(write(fd, buf, (size_t)got), got);
	close(fd);

	/* the resume over TCP: its HELLO names the connection */
	fd = peer_accept(WAIT_MS);
	ck_assert_int_ge(fd, 0);
	*hello_len = fb_msg_within(fd, hello);
	ck_assert_int_eq(fb_hello_decode(hello, *hello_len, hi), 0);
	ck_assert(hi->flags & FB_FLAG_RESUME);
	ck_assert(hi->flags & FB_FLAG_AUTH);
	return fd;
}

/* A CHALLENGE with nonce and mac as given, into out. */
static size_t
challenge_encode(void *out, const uint8_t nonce[32], const uint8_t mac[32])
{
	struct fb_challenge ch;

	memset(&ch, 0, sizeof(ch));
	memcpy(ch.hdr.eyecatcher, FB_EYECATCHER, 4);
	ch.hdr.version = FB_VERSION;
	ch.hdr.type = FB_CHALLENGE;
	ch.hdr.length = htons(sizeof(ch));
	memcpy(ch.nonce, nonce, sizeof(ch.nonce));
	memcpy(ch.mac, mac, sizeof(ch.mac));
	memcpy(out, &ch, sizeof(ch));
	return sizeof(ch);
}

/*
 * A keyed peer b; A's client connection relays over their group.  b's
 * daemon dies (its group ends under A, not orderly) and an impostor
 * without the key takes b's port: it declines the new group's CLC, so A
 * resumes over TCP, and answers the resume HELLO as _i says: RESUMED
 * built from the HELLO's own offsets, RESULT 0 without a CHALLENGE then
 * RESUMED, or a CHALLENGE whose MAC it cannot make.  None of the client's
 * bytes reach it, none of its bytes reach the client, and the connection
 * is reset, counted as resume_failed_auth and auth_failures.
 */
START_TEST(impostor_gets_nothing)
{
	unsigned char msg[FB_MSG_MAX], out[FB_MSG_MAX * 2];
	uint8_t nonce[32], mac[32];
	struct fb_hello_info hi;
	char buf[4096];
	size_t len, n;
	ssize_t got;
	int fd;

	fd = resume_to_peer_port(msg, &len, &hi);
	n = 0;
	switch (_i) {
	case IMP_RESULT0_RESUMED:
		n = fb_result_encode(out, 0);
		/* fall through */
	case IMP_RESUMED:
		n += fb_resumed_encode(out + n, hi.tx_fin, hi.rx_off);
		break;
	case IMP_BAD_CHALLENGE:
		memset(nonce, 1, sizeof(nonce));
		memset(mac, 2, sizeof(mac));
		n = challenge_encode(out, nonce, mac);
		break;
	}
	memcpy(out + n, MARKER, sizeof(MARKER));
	n += sizeof(MARKER);
	ck_assert_int_eq(write(fd, out, n), (ssize_t)n);

	ck_assert(wait_stat_a(STAT_resume_failed_auth, 1));
	ck_assert_uint_ge(stat_a(STAT_auth_failures), 1);
	ck_assert_uint_eq(stat_a(STAT_conns_resumed_tcp), 0);
	/* the impostor got the HELLO and nothing after it */
	got = recv_within(fd, buf, sizeof(buf), WAIT_MS);
	ck_assert_int_le(got, 0);
	close(fd);
	/* the client got nothing, and its connection was reset */
	fcntl(clients[0], F_SETFL, fcntl(clients[0], F_GETFL) | O_NONBLOCK);
	got = recv_within(clients[0], buf, sizeof(buf), WAIT_MS);
	ck_assert_int_le(got, 0);
	ck_assert(wait_stat_a(STAT_CLOSE_BASE + SESSION_RESUME_FAILED, 1));
}
END_TEST

/*
 * An impostor that takes the resume HELLO and says nothing holds the
 * connection for 10 s at most: the attempt is given up and the next one
 * begins (a new group's CLC on the peer port), nothing sent its way.
 */
START_TEST(impostor_silent_is_left)
{
	unsigned char msg[FB_MSG_MAX];
	struct fb_hello_info hi;
	char buf[4096];
	size_t len;
	ssize_t got;
	int fd, fd2;

	fd = resume_to_peer_port(msg, &len, &hi);
	/* silence: within 10 s (and a tick) A gives up and starts again */
	fd2 = peer_accept(15000);
	ck_assert_int_ge(fd2, 0);
	got = recv_within(fd, buf, sizeof(buf), 100);
	ck_assert_int_le(got, 0);
	ck_assert_uint_eq(stat_a(STAT_resume_failed_auth), 0);
	ck_assert_uint_eq(stat_a(STAT_conns_resumed_tcp), 0);
	ck_assert(wait_session_state_a(SESSION_RESUMING));
	close(fd);
	close(fd2);
}
END_TEST

/*
 * The real peer on the port (the test, with the key): it proves the key
 * in its CHALLENGE, checks the PROOF, accepts and answers RESUMED; the
 * connection goes on over TCP from the exact byte both ways, through the
 * one client handshake.
 */
START_TEST(resume_over_tcp_with_the_key)
{
	const struct conf_peer *p = &conf_a->peers[0];
	unsigned char msg[FB_MSG_MAX], hello[FB_MSG_MAX], mac[AUTH_MAC_LEN];
	unsigned char out[FB_MSG_MAX * 2], ch[FB_MSG_MAX];
	uint8_t nonce[32], chmac[32];
	struct fb_hello_info hi;
	const uint8_t *their;
	size_t hello_len, len, n, chlen;
	char buf[4096];
	ssize_t got;
	int fd;

	fd = resume_to_peer_port(hello, &hello_len, &hi);
	/* what the group took and B confirmed is not sent again */
	ck_assert_uint_le(hi.tx_fin, 6);
	auth_nonce(nonce);
	auth_mac(p->key, p->key_len, "s", hello, hello_len, nonce,
		 sizeof(nonce), chmac);
	chlen = challenge_encode(ch, nonce, chmac);
	ck_assert_int_eq(write(fd, ch, chlen), (ssize_t)chlen);
	len = fb_msg_within(fd, msg);
	ck_assert_int_eq(fb_proof_decode(msg, len, &their), 0);
	auth_mac(p->key, p->key_len, "c", hello, hello_len, ch, chlen, mac);
	ck_assert_mem_eq(mac, their, AUTH_MAC_LEN);
	n = fb_result_encode(out, 0);
	n += fb_resumed_encode(out + n, hi.tx_fin, hi.rx_off);
	memcpy(out + n, "FROM-PEER", 9);
	n += 9;
	ck_assert_int_eq(write(fd, out, n), (ssize_t)n);

	ck_assert(wait_stat_a(STAT_conns_resumed_tcp, 1));
	/* the client's stream from the byte B had, to the last */
	snprintf((char *)out, sizeof(out), "before%s", SECRET);
	n = 6 + sizeof(SECRET) - hi.tx_fin;
	len = 0;
	while (len < n && (got = recv_within(fd, buf + len, sizeof(buf) - len,
					     WAIT_MS)) > 0)
		len += (size_t)got;
	ck_assert_uint_eq(len, n);
	ck_assert_mem_eq(buf, out + hi.tx_fin, n);
	got = recv_within(clients[0], buf, sizeof(buf), WAIT_MS);
	ck_assert_int_eq(got, 9);
	ck_assert_mem_eq(buf, "FROM-PEER", 9);
	ck_assert_uint_eq(stat_a(STAT_resume_failed_auth), 0);
	close(fd);
}
END_TEST

/*
 * A kernel client's PROPOSALs (smcr.c) that find the group with it on
 * its way wait for it, parked (session_rdma_smcr_wait) behind the
 * connection that set it up, and are woken by the group itself: nothing
 * runs while it is set up (no poll), and its failure wakes each waiter
 * at once, once, in the order they came, with nothing left to wait for.
 */
#define SMCR_WAITERS 8

static struct conf_export smcr_exp = {.name = "e"};
static struct session *smcr_first, *smcr_waiter[SMCR_WAITERS];
static uint64_t smcr_woken[SMCR_WAITERS]; /* ids, in the order woken */
static int smcr_nwoken;
static struct session_rdma_smcr_want smcr_want;

static void
smcr_woken_close(struct session *s, enum session_reason reason)
{
	session_rdma_close(s, reason);
}

static void
smcr_woken_timeout(struct session *s)
{
	ck_abort_msg("conn 0x%llx: its timer ran while it waited",
		     (unsigned long long)s->id);
}

static const struct session_ops smcr_ops = {
	.timeout = smcr_woken_timeout,
	.close = smcr_woken_close,
};

/* The continuation of a waiter: it finds nothing to wait for now. */
static void
smcr_wake(struct session *s)
{
	ck_assert(!s->parked && !s->woken);
	ck_assert_int_lt(smcr_nwoken, SMCR_WAITERS);
	smcr_woken[smcr_nwoken++] = s->id;
	ck_assert(!session_rdma_smcr_wait(s, &smcr_want, smcr_wake));
}

static struct session *
smcr_session(struct worker *wk)
{
	struct session *s = session_new(wk, -1, SESSION_ROLE_EXPORT);

	ck_assert_ptr_nonnull(s);
	s->export = &smcr_exp;
	s->dialect = SESSION_DIALECT_SMCR;
	session_ops_set(s, &smcr_ops);
	return s;
}

static void
smcr_park_cb(struct worker *wk, void *arg)
{
	struct session_rdma_smcr_want other;
	struct session_rdma_smcr me;
	struct addr any;
	int i;

	memset(&any, 0, sizeof(any));
	memset(&smcr_want, 0, sizeof(smcr_want));
	memset(smcr_want.sysid, 0x11, sizeof(smcr_want.sysid));
	smcr_want.gid[10] = smcr_want.gid[11] = 0xff;
	smcr_want.gid[12] = 192;
	smcr_want.gid[14] = 2;
	smcr_want.gid[15] = 1;
	ck_assert_int_eq(addr_parse_host("192.0.2.1", &smcr_want.host), 0);
	memset(smcr_want.eid, ' ', sizeof(smcr_want.eid));
	memcpy(smcr_want.eid, "LAB", 3);
	smcr_want.max_conns = 255;
	smcr_want.max_links = 1;
	smcr_want.release = 1;
	smcr_want.join = smcr_want.create = true;
	/* nothing on its way yet: no wait */
	smcr_first = smcr_session(wk);
	ck_assert(!session_rdma_smcr_wait(smcr_first, &smcr_want, smcr_wake));
	/* the first PROPOSAL sets the group up, the others wait for it */
	ck_assert_uint_eq(
		session_rdma_smcr_open(smcr_first, &any, &smcr_want, &me), 0);
	ck_assert(me.first_contact);
	/* it is its group's first waiter: it relays once the link is up */
	ck_assert(smcr_first->parked);
	for (i = 0; i < SMCR_WAITERS; i++) {
		smcr_waiter[i] = smcr_session(wk);
		ck_assert(session_rdma_smcr_wait(smcr_waiter[i], &smcr_want,
						 smcr_wake));
		ck_assert(smcr_waiter[i]->parked);
	}
	/* another host's connection has nothing to wait for */
	other = smcr_want;
	ck_assert_int_eq(addr_parse_host("192.0.2.9", &other.host), 0);
	ck_assert(!session_rdma_smcr_wait(smcr_session(wk), &other, smcr_wake));
	smcr_nwoken = 0;
}

static void
smcr_still_cb(struct worker *wk, void *arg)
{
	int i;

	ck_assert_int_eq(smcr_nwoken, 0);
	ck_assert(smcr_first->parked);
	for (i = 0; i < SMCR_WAITERS; i++)
		ck_assert(smcr_waiter[i]->parked);
}

static void
smcr_fail_cb(struct worker *wk, void *arg)
{
	int i;

	/* the first connection's client declined: its group goes, and
	 * wakes its waiters from inside its failure */
	session_rdma_smcr_drop(smcr_first);
	ck_assert(!smcr_first->parked);
	ck_assert_int_eq(smcr_nwoken, SMCR_WAITERS);
	for (i = 0; i < SMCR_WAITERS; i++) {
		ck_assert_uint_eq(smcr_woken[i], smcr_waiter[i]->id);
		ck_assert(!smcr_waiter[i]->parked && !smcr_waiter[i]->woken);
	}
}

static void
smcr_fail_cb_after(struct worker *wk, void *arg)
{
	ck_assert_int_eq(smcr_nwoken, SMCR_WAITERS);
}

START_TEST(smcr_waits_woken)
{
	worker_call(w, smcr_park_cb, NULL);
	/* set up for 300 ms: no waiter ran (a poll would have) */
	usleep(300000);
	worker_call(w, smcr_still_cb, NULL);
	worker_call(w, smcr_fail_cb, NULL);
	/* and once only */
	usleep(100000);
	worker_call(w, smcr_fail_cb_after, NULL);
}
END_TEST

/*
 * Issue 43: registered memory per kernel host.  A kernel peer's PROPOSAL
 * (export side, as smcr.c opens it) from host gets a group of its own
 * (none of them comes up here) and a connection's buffers: its ACCEPT's
 * code, 0 or a DECLINE's.  Each link's rings (its TX slots and receive
 * buffers, wr_link_mem) count in max_buffer_memory and in the host's
 * buffer_share_per_host with the buffers, and are given back with the
 * link.
 */
#define KMEM_MAX 8

static struct session *kmem_sess[KMEM_MAX];
static int kmem_n;

struct kmem_open {
	const char *host;
	uint32_t code;
};

static void
kmem_open_cb(struct worker *wk, void *arg)
{
	struct kmem_open *o = arg;
	struct session_rdma_smcr_want want;
	struct session_rdma_smcr me;
	struct session *s = smcr_session(wk);
	struct addr any;

	memset(&any, 0, sizeof(any));
	memset(&want, 0, sizeof(want));
	memset(want.sysid, 0x22, sizeof(want.sysid));
	want.gid[10] = want.gid[11] = 0xff;
	want.gid[12] = 192;
	want.gid[14] = 2;
	want.gid[15] = 1;
	ck_assert_int_eq(addr_parse_host(o->host, &want.host), 0);
	memset(want.eid, ' ', sizeof(want.eid));
	memcpy(want.eid, "LAB", 3);
	want.max_conns = 255;
	want.max_links = 1;
	want.release = 1;
	want.join = want.create = true;
	o->code = session_rdma_smcr_open(s, &any, &want, &me);
	if (o->code == 0) {
		ck_assert_int_lt(kmem_n, KMEM_MAX);
		kmem_sess[kmem_n++] = s;
	}
}

static uint32_t
kmem_open(const char *host)
{
	struct kmem_open o = {host, ~0u};

	worker_call(w, kmem_open_cb, &o);
	return o.code;
}

/* Every accepted connection's client declines after all: all go. */
static void
kmem_drop_cb(struct worker *wk, void *arg)
{
	int i;

	for (i = 0; i < kmem_n; i++)
		session_rdma_smcr_drop(kmem_sess[i]);
	kmem_n = 0;
}

/* One kernel link's rings (the first group's), as the gauge has them. */
static uint64_t kmem_ring;

static void
kmem_first(const char *host)
{
	ck_assert_uint_eq(kmem_open(host), 0);
	kmem_ring = stat_a(STAT_rdma_ring_bytes);
	/* a TX slot table and 48 receive buffers of an SMC-Rv2 LLC each */
	ck_assert_uint_gt(kmem_ring, 48 * 4096);
	ck_assert_uint_lt(kmem_ring, 256 * 1024);
}

/*
 * With 1 MiB and a connection of 256 KiB, four connections of four
 * hosts fit the buffers alone; with each group's rings (about 220 KiB)
 * counted, the third host's group is refused for its link: DECLINE MEM,
 * counted in link_nobufs.  Everything comes back when the groups go.
 */
START_TEST(kmem_rings_counted)
{
	kmem_first("192.0.2.1");
	ck_assert_uint_eq(stat_a(STAT_rdma_buf_bytes_used), 256 * 1024);
	ck_assert_uint_eq(kmem_open("192.0.2.2"), 0);
	ck_assert_uint_eq(stat_a(STAT_rdma_ring_bytes), 2 * kmem_ring);
	ck_assert_uint_eq(kmem_open("192.0.2.3"), CLC_DECL_MEM);
	ck_assert_uint_eq(stat_a(STAT_link_nobufs), 1);
	ck_assert_uint_eq(stat_a(STAT_smc_budget_host_memory), 0);
	ck_assert_uint_eq(stat_a(STAT_rdma_ring_bytes), 2 * kmem_ring);
	ck_assert_uint_eq(stat_a(STAT_rdma_buf_bytes_used), 2 * 256 * 1024);
	/* the links' rings are given back with the links */
	worker_call(w, kmem_drop_cb, NULL);
	ck_assert(wait_stat_a_down(STAT_rdma_ring_bytes, 0));
	ck_assert(wait_stat_a_down(STAT_rdma_buf_bytes_used, 0));
	/* and room is made for the next host */
	ck_assert_uint_eq(kmem_open("192.0.2.3"), 0);
	ck_assert_uint_eq(stat_a(STAT_rdma_ring_bytes), kmem_ring);
}
END_TEST

/*
 * With 2 MiB and buffer_share_per_host 50, one host may hold 1 MiB: its
 * first connection (a group's rings and 384 KiB of buffers) and its
 * second group's rings fit, not that group's connection's buffers: the
 * host is declined MEM (smc_budget_host_memory, conns_rdma_nobufs) and
 * its new group goes, while another host is accepted.  Before, all
 * kernel hosts were one peer holding the whole pool.
 */
START_TEST(kmem_share_per_host)
{
	kmem_first("192.0.2.1");
	ck_assert_uint_eq(kmem_open("192.0.2.1"), CLC_DECL_MEM);
	ck_assert_uint_eq(stat_a(STAT_smc_budget_host_memory), 1);
	ck_assert_uint_eq(stat_a(STAT_conns_rdma_nobufs), 1);
	ck_assert_uint_eq(stat_a(STAT_link_nobufs), 0);
	ck_assert_uint_eq(stat_a(STAT_peer_buffer_full), 0);
	/* its second group goes, and its rings with it */
	ck_assert(wait_stat_a_down(STAT_rdma_ring_bytes, kmem_ring));
	/* another host still has its share */
	ck_assert_uint_eq(kmem_open("192.0.2.2"), 0);
	ck_assert_uint_eq(stat_a(STAT_rdma_buf_bytes_used), 2 * 384 * 1024);
	/* the first host is still held to its share */
	ck_assert_uint_eq(kmem_open("192.0.2.1"), CLC_DECL_MEM);
	ck_assert_uint_eq(stat_a(STAT_smc_budget_host_memory), 2);
	ck_assert_uint_eq(stat_a(STAT_conns_rdma_nobufs), 2);
}
END_TEST

static void
setup_kmem_rings(void)
{
	qps_max = 100;
	a_extra = "kernel_smc: { ueids = [ \"LAB\" ];"
		  " buffer_share_per_host = 100; };\n";
	a_rdma_extra = "max_buffer_memory = 1; sndbuf = 131072; rmb = 131072;";
	setup();
}

static void
setup_kmem_share(void)
{
	qps_max = 100;
	a_extra = "kernel_smc: { ueids = [ \"LAB\" ];"
		  " buffer_share_per_host = 50; };\n";
	a_rdma_extra = "max_buffer_memory = 2; sndbuf = 262144; rmb = 131072;";
	setup();
}

static void
teardown_kmem(void)
{
	/* the groups go before the device their QPs are on */
	worker_call(w, kmem_drop_cb, NULL);
	ck_assert(wait_stat_a_down(STAT_rdma_ring_bytes, 0));
	teardown();
	qps_max = 1;
	a_extra = a_rdma_extra = "";
	kmem_n = 0;
}

static void
setup_ksmc(void)
{
	a_extra = "kernel_smc: { ueids = [ \"LAB\" ]; };\n";
	setup();
}

static void
teardown_ksmc(void)
{
	teardown();
	a_extra = "";
}

/* A case of one test, with its fixture and timeout, added to s. */
static void
one_case(Suite *s, const char *name, SFun up, SFun down, int timeout,
	 const TTest *test)
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, up, down);
	tcase_set_timeout(tc, timeout);
	tcase_add_test(tc, test);
	suite_add_tcase(s, tc);
}

static Suite *
session_rdma_suite(void)
{
	Suite *s = suite_create("session_rdma");
	TCase *tc = tcase_create("park");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, woken_once);
	tcase_add_test(tc, open_names_its_client);
	tcase_add_test(tc, open_lost_with_group);
	tcase_add_test(tc, open_refused_by_stopping_peer);
	suite_add_tcase(s, tc);
	tc = tcase_create("reload");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, reload_revokes);
	tcase_add_test(tc, buffer_share_per_peer);
	suite_add_tcase(s, tc);
	tc = tcase_create("impostor");
	tcase_add_checked_fixture(tc, setup_keyed, teardown_keyed);
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, impostor_gets_nothing, IMP_RESUMED,
			    IMP_BAD_CHALLENGE + 1);
	tcase_add_test(tc, impostor_silent_is_left);
	tcase_add_test(tc, resume_over_tcp_with_the_key);
	suite_add_tcase(s, tc);
	tc = tcase_create("resume");
	tcase_add_checked_fixture(tc, setup_resume, teardown_resume);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, resume_unanswered_asks_again);
	tcase_add_test(tc, resume_limit_per_peer);
	tcase_add_test(tc, resume_idle_timeout);
	tcase_add_test(tc, resume_peer_gone_ends_all);
	suite_add_tcase(s, tc);
	one_case(s, "autocork", setup_cork, teardown_resume, 30,
		 autocork_at_the_door);
	one_case(s, "autocork_off", setup_cork_off, teardown_resume, 30,
		 autocork_off_reads_each_write);
	one_case(s, "smcr_wait", setup_ksmc, teardown_ksmc, 30,
		 smcr_waits_woken);
	one_case(s, "smcr_memory", setup_kmem_rings, teardown_kmem, 30,
		 kmem_rings_counted);
	one_case(s, "smcr_memory_share", setup_kmem_share, teardown_kmem, 30,
		 kmem_share_per_host);
	one_case(s, "resume2", setup_resume2, teardown_resume, 60,
		 resume_failover_while_asking);
	one_case(s, "rkeys2", setup_rkeys2, teardown_resume, 60,
		 failover_with_the_told_rkey);
	one_case(s, "early_abort", setup_rkeys2, teardown_resume, 60,
		 early_end_aborts_the_peer);
	one_case(s, "late_accept", setup_late, teardown_resume, 60,
		 late_accept_aborts_the_peer);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(session_rdma_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
