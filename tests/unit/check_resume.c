// SPDX-License-Identifier: BSD-2-Clause
/*
 * The export side of a resume (docs/protocol.md, "Resuming a connection")
 * in a real worker thread: daemon A has export e; "daemons" b and c are
 * client-side lgr_ctx on A's event base that speak the in-band messages
 * themselves over loopdev.  b opens two connections, their link group
 * breaks, and on new groups A is asked to resume them: a forged resume
 * id, another peer's request, impossible offsets and a replay are
 * refused, the real one goes through.  And a peer that takes our bytes
 * but never consumes them is reset after tcp_user_timeout; an export with
 * proxy_protocol hands its target the client a CONN_ORIGIN named.
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>
#include <event2/event.h>

#include "smcproxyd.h"
#include "lgr.h"
#include "llc_wire.h"
#include "harness.h"

#define WAIT_MS 5000
#define TOKEN1 0x77
#define TOKEN2 0x78

/* A client-side daemon of the test: its context and what it was told. */
struct side {
	const char *name;
	struct conf *conf;
	struct lgr_ctx *ctx;
	struct stats st;
	struct auth_limit al;
	struct dev *dev;
	struct buf_pool *pool;
	struct buf *rmb;
	struct llc_info got[16]; /* CONN_* messages A sent, in order */
	int ngot;
	/* its connections (TOKEN1, TOKEN2) on its group: A's CDCs for them
	 * are known tokens, dropped, not protocol errors */
	struct lgr_conn conns[2];
};

static struct side B = {.name = "b"}, C = {.name = "c"};
static struct conf *conf_a;
static struct worker *w;
static struct dev *dev_a;
static int target_fd = -1, target_port, peer_port;

static int
listen_any(int *port)
{
	int fd = loopnet_listen(port);

	ck_assert_int_ge(fd, 0);
	return fd;
}

static void
side_llc_rx(struct lgr_link *link, const struct llc_info *m, void *arg)
{
	struct side *s = arg;

	if (s->ngot < (int)(sizeof(s->got) / sizeof(s->got[0])))
		s->got[s->ngot++] = *m;
}

static const struct lgr_data_ops side_ops = {.llc_rx = side_llc_rx};

static void
side_init(struct side *s)
{
	char text[512];

	snprintf(text, sizeof(text),
		 "smcproxyd: { name = \"%s\"; workers = 1; };\n"
		 "peers = ( { name = \"a\"; address = \"127.0.0.1:%d\";"
		 " insecure = true; } );\n",
		 s->name, peer_port);
	s->conf = conf_load_string(text, "side.conf", stderr);
	ck_assert_ptr_nonnull(s->conf);
	conf_hold(s->conf);
	auth_limit_init(&s->al);
	s->ctx = lgr_ctx_new(worker_base(w), s->conf, &s->st, &s->al, NULL);
	ck_assert_ptr_nonnull(s->ctx);
	lgr_ctx_set_ops(s->ctx, &side_ops, s);
	s->dev = loopdev_new(worker_base(w));
	ck_assert_ptr_nonnull(s->dev);
	ck_assert_int_eq(lgr_ctx_add_dev(s->ctx, &loopdev_ops, s->dev, s->name),
			 0);
	s->pool = buf_pool_new(NULL, NULL, 0);
	ck_assert_ptr_nonnull(s->pool);
	ck_assert_int_eq(buf_get(s->pool, BUF_RMB, BUF_SIZE_MIN, &s->rmb), 0);
}

static void
setup_cb(struct worker *wk, void *arg)
{
	dev_a = loopdev_new(worker_base(wk));
	ck_assert_ptr_nonnull(dev_a);
	ck_assert_int_eq(lgr_ctx_add_dev(worker_lgr(wk), harness_dev_ops(),
					 dev_a, "loopa"),
			 0);
	side_init(&B);
	side_init(&C);
}

/* The sides' groups go; A's follow (their control connections end). */
static void
close_cb(struct worker *wk, void *arg)
{
	session_close_all(wk, SESSION_SHUTDOWN);
	lgr_ctx_free(B.ctx);
	lgr_ctx_free(C.ctx);
}

/* Once no group is left: the devices, which go with the test. */
static void
devs_cb(struct worker *wk, void *arg)
{
	struct side *sides[] = {&B, &C};
	int i;

	for (i = 0; i < 2; i++) {
		buf_put(sides[i]->rmb);
		buf_pool_free(sides[i]->pool);
		loopdev_free(sides[i]->dev);
		conf_drop(sides[i]->conf);
	}
	loopdev_free(dev_a);
	harness_devs_gone(wk);
}

/* A new group from side s to A, over a socket pair. */
static void
group_cb(struct worker *wk, void *arg)
{
	struct side *s = arg;
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_ptr_nonnull(
		lgr_client_new(s->ctx, &s->conf->peers[0], sv[0]));
	ck_assert_int_eq(clc_serve(worker_lgr(wk), sv[1], NULL, NULL, 0), 0);
}

static bool is_active;

static void
active_cb(struct worker *wk, void *arg)
{
	struct side *s = arg;

	is_active = !TAILQ_EMPTY(&s->ctx->lgrs) &&
		    TAILQ_FIRST(&s->ctx->lgrs)->state == LGR_STATE_ACTIVE;
}

/* A new group from s to A, waited for until active. */
static void
new_group(struct side *s)
{
	int i;

	worker_call(w, group_cb, s);
	for (i = 0; i < WAIT_MS / 10; i++) {
		worker_call(w, active_cb, s);
		if (is_active)
			return;
		usleep(10000);
	}
	ck_abort_msg("no new group from %s", s->name);
}

/* What a call on the worker sends: an LLC message from side s. */
struct send {
	struct side *s;
	struct llc_info m;
};

/* s's connection with token is on lgr (once, whatever it asks A). */
static void
side_conn(struct side *s, struct lgr *lgr, uint32_t token)
{
	struct lgr_conn *c = &s->conns[token == TOKEN1 ? 0 : 1];

	if (c->lgr == lgr)
		return;
	lgr_conn_del(c);
	c->token = token;
	ck_assert_int_eq(lgr_conn_add(lgr, c), 0);
}

static void
send_cb(struct worker *wk, void *arg)
{
	struct send *sd = arg;
	struct lgr_link *link = &TAILQ_FIRST(&sd->s->ctx->lgrs)->link[0];
	const struct dev_mr *mr = buf_mr(sd->s->rmb, link->dev->ops, link->pd);

	ck_assert_ptr_nonnull(mr);
	side_conn(sd->s, link->lgr,
		  sd->m.type == LLC_CONN_OPEN ? sd->m.conn_open.token :
						sd->m.conn_resume.token);
	if (sd->m.type == LLC_CONN_OPEN) {
		sd->m.conn_open.rmb_rkey = mr->rkey;
		sd->m.conn_open.rmb_vaddr = sd->s->rmb->iova;
	} else {
		sd->m.conn_resume.rmb_rkey = mr->rkey;
	}
	ck_assert_int_eq(llc_send(link, &sd->m, NULL, NULL), 0);
}

static void
open_conn_to(struct side *s, uint32_t token, const char *export)
{
	struct send sd = {.s = s};

	sd.m.type = LLC_CONN_OPEN;
	sd.m.conn_open.token = token;
	sd.m.conn_open.rmbe_size = 0;
	snprintf(sd.m.conn_open.export, sizeof(sd.m.conn_open.export), "%s",
		 export);
	worker_call(w, send_cb, &sd);
}

static void
open_conn(struct side *s, uint32_t token)
{
	open_conn_to(s, token, "e");
}

static void
origin_cb(struct worker *wk, void *arg)
{
	struct send *sd = arg;
	struct lgr_link *link = &TAILQ_FIRST(&sd->s->ctx->lgrs)->link[0];

	ck_assert_int_eq(llc_send(link, &sd->m, NULL, NULL), 0);
}

/* s names the client of its next open with token: from src to dst. */
static void
origin(struct side *s, uint32_t token, const char *src, const char *dst)
{
	struct send sd = {.s = s};
	struct addr a, b;

	ck_assert_int_eq(addr_parse(src, &a), 0);
	ck_assert_int_eq(addr_parse(dst, &b), 0);
	sd.m.type = LLC_CONN_ORIGIN;
	sd.m.conn_origin.token = token;
	ck_assert_int_eq(fb_origin_set(&sd.m.conn_origin.origin, &a, &b), 0);
	if (sd.m.conn_origin.origin.family == FB_ORIGIN_INET6)
		sd.m.flags = LLC_FLAG_ORIGIN_INET6;
	worker_call(w, origin_cb, &sd);
}

/* The next connection A made to the target, within WAIT_MS. */
static int
target_accept(void)
{
	int i, t = -1;

	for (i = 0; i < WAIT_MS / 10 && t < 0; i++) {
		t = accept(target_fd, NULL, NULL);
		if (t < 0)
			usleep(10000);
	}
	ck_assert_int_ge(t, 0);
	return t;
}

/* The first len bytes the target gets on t, which are all there are. */
static void
target_reads(int t, const uint8_t *want, size_t len)
{
	struct timeval tv = {WAIT_MS / 1000, 0};
	uint8_t got[PROXY_V2_MAX + 1];
	size_t have = 0;
	ssize_t n;

	ck_assert_int_eq(
		setsockopt(t, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	while (have < len) {
		n = read(t, got + have, len - have);
		ck_assert_int_gt(n, 0);
		have += (size_t)n;
	}
	ck_assert_mem_eq(got, want, len);
	ck_assert_int_eq(recv(t, got, 1, MSG_DONTWAIT), -1);
	ck_assert_int_eq(errno, EAGAIN);
}

static void
resume(struct side *s, const uint8_t *id, uint32_t token, uint64_t rx,
       uint64_t fin)
{
	struct send sd = {.s = s};

	sd.m.type = LLC_CONN_RESUME;
	memcpy(sd.m.conn_resume.resume_id, id, LLC_RESUME_ID_LEN);
	sd.m.conn_resume.token = token;
	sd.m.conn_resume.rx_off = rx;
	sd.m.conn_resume.tx_fin = fin;
	worker_call(w, send_cb, &sd);
}

/* Nothing: returning, the worker has handled what came before. */
static void
sync_cb(struct worker *wk, void *arg)
{
}

/* The next message A sends side s (the n-th in all), within WAIT_MS. */
static const struct llc_info *
answer(struct side *s, int n)
{
	int i;

	for (i = 0; i < WAIT_MS / 10; i++) {
		worker_call(w, sync_cb, NULL);
		if (s->ngot > n)
			return &s->got[n];
		usleep(10000);
	}
	ck_abort_msg("no answer %d from A to %s", n, s->name);
	return NULL;
}

static uint64_t
stat_a(enum stats_id id)
{
	return harness_stat(w, id);
}

static bool
wait_stat_a(enum stats_id id, uint64_t want)
{
	return harness_wait_stat(w, id, HARNESS_EQ, want, WAIT_MS);
}

static void
kill_cb(struct worker *wk, void *arg)
{
	struct side *s = arg;

	loopdev_drop_link(wr_link_qp(TAILQ_FIRST(&s->ctx->lgrs)->link[0].wr));
}

static void
setup(void)
{
	char text[1024];
	int fd;

	log_init(1, getenv("CK_DEBUG") ? LOG_LEVEL_DEBUG : LOG_LEVEL_WARN);
	target_fd = listen_any(&target_port);
	fd = listen_any(&peer_port);
	close(fd);
	snprintf(text, sizeof(text),
		 "smcproxyd: { name = \"a\"; workers = 1; resume_timeout = 60;"
		 " tcp_user_timeout = 1; };\n"
		 "peer_listen: { address = \"127.0.0.1:%d\"; };\n"
		 "peers = ( { name = \"b\"; address = \"127.0.0.1:1\";"
		 " insecure = true; any_source = true; },\n"
		 "  { name = \"c\"; address = \"127.0.0.2:1\";"
		 " insecure = true; any_source = true; } );\n"
		 "exports = ( { name = \"e\"; target = \"127.0.0.1:%d\";"
		 " peers = [ \"b\", \"c\" ]; },\n"
		 "  { name = \"p\"; target = \"127.0.0.1:%d\";"
		 " peers = [ \"b\" ]; proxy_protocol = true; } );\n"
		 "rdma: { max_links = 1; max_send_wr = 2; };\n",
		 peer_port, target_port, target_port);
	conf_a = conf_load_string(text, "a.conf", stderr);
	ck_assert_ptr_nonnull(conf_a);
	conf_hold(conf_a);
	ck_assert_int_eq(worker_start_all(conf_a), 0);
	w = worker_get(0);
	worker_call(w, setup_cb, NULL);
}

static void
teardown(void)
{
	harness_stop(w, close_cb, NULL, devs_cb, WAIT_MS);
	close(target_fd);
	conf_drop(conf_a);
}

START_TEST(resume_refusals_and_the_real_one)
{
	uint8_t id1[LLC_RESUME_ID_LEN], id2[LLC_RESUME_ID_LEN];
	uint8_t forged[LLC_RESUME_ID_LEN];
	const struct llc_info *m;
	uint32_t a_token1;

	new_group(&B);
	open_conn(&B, TOKEN1);
	m = answer(&B, 0);
	ck_assert_uint_eq(m->type, LLC_CONN_ACCEPT);
	ck_assert_uint_eq(m->conn_accept.opener_token, TOKEN1);
	memcpy(id1, m->conn_accept.resume_id, sizeof(id1));
	a_token1 = m->conn_accept.token;
	open_conn(&B, TOKEN2);
	m = answer(&B, 1);
	ck_assert_uint_eq(m->type, LLC_CONN_ACCEPT);
	memcpy(id2, m->conn_accept.resume_id, sizeof(id2));
	/* random ids, not zero, not the same twice */
	memset(forged, 0, sizeof(forged));
	ck_assert(memcmp(id1, forged, sizeof(id1)) != 0);
	ck_assert(memcmp(id1, id2, sizeof(id1)) != 0);

	/* the group breaks: A's two connections wait to resume */
	worker_call(w, kill_cb, &B);
	ck_assert(wait_stat_a(STAT_conns_resuming, 2));
	ck_assert_uint_eq(stat_a(STAT_conns_active), 2);
	new_group(&B);
	new_group(&C);

	/* a forged id: refused, nothing else changes */
	memcpy(forged, id1, sizeof(forged));
	forged[0] ^= 1;
	resume(&B, forged, TOKEN1, 0, 0);
	m = answer(&B, 2);
	ck_assert_uint_eq(m->type, LLC_CONN_REJECT);
	ck_assert_uint_eq(m->conn_reject.opener_token, TOKEN1);
	ck_assert_uint_eq(m->conn_reject.reason, 11);
	/* the right id from another peer: refused */
	resume(&C, id1, TOKEN1, 0, 0);
	m = answer(&C, 0);
	ck_assert_uint_eq(m->type, LLC_CONN_REJECT);
	ck_assert_uint_eq(m->conn_reject.reason, 11);
	ck_assert_uint_eq(stat_a(STAT_conns_resuming), 2);

	/* offsets that cannot be true: refused, and that connection ends */
	resume(&B, id2, TOKEN2, 1, 0);
	m = answer(&B, 3);
	ck_assert_uint_eq(m->type, LLC_CONN_REJECT);
	ck_assert_uint_eq(m->conn_reject.reason, 8);
	ck_assert(wait_stat_a(STAT_resume_failed_protocol, 1));
	ck_assert(wait_stat_a(STAT_conns_resuming, 1));

	/* the real one: answered with A's counts, relaying again */
	resume(&B, id1, TOKEN1, 0, 0);
	m = answer(&B, 4);
	ck_assert_uint_eq(m->type, LLC_CONN_RESUME);
	ck_assert(m->flags & LLC_FLAG_RESP);
	ck_assert_mem_eq(m->conn_resume.resume_id, id1, sizeof(id1));
	ck_assert_uint_eq(m->conn_resume.token, a_token1);
	ck_assert_uint_eq(m->conn_resume.rx_off, 0);
	ck_assert_uint_eq(m->conn_resume.tx_fin, 0);
	ck_assert(wait_stat_a(STAT_conns_resumed_rdma, 1));
	ck_assert_uint_eq(stat_a(STAT_conns_resuming), 0);
	ck_assert_uint_eq(stat_a(STAT_conns_active), 1);

	/* replayed on the group it is on now: refused, still there */
	resume(&B, id1, TOKEN1, 0, 0);
	m = answer(&B, 5);
	ck_assert_uint_eq(m->type, LLC_CONN_REJECT);
	ck_assert_uint_eq(m->conn_reject.reason, 11);
	ck_assert_uint_eq(stat_a(STAT_conns_active), 1);
	ck_assert_uint_eq(stat_a(STAT_conns_resumed_rdma), 1);
}
END_TEST

/*
 * b's side of a connection never consumes: once A's bytes from the
 * target fill b's RMB element, A's window stays shut with b's daemon
 * there and its link up.  After tcp_user_timeout (1 s here) A resets
 * the connection instead of holding it, its sockets and buffers forever.
 */
START_TEST(peer_that_never_consumes_is_reset)
{
	static char data[64 * 1024];
	const struct llc_info *m;
	ssize_t n, sent = 0;
	int i, t = -1;

	new_group(&B);
	open_conn(&B, TOKEN1);
	m = answer(&B, 0);
	ck_assert_uint_eq(m->type, LLC_CONN_ACCEPT);
	for (i = 0; i < WAIT_MS / 10 && t < 0; i++) {
		t = accept(target_fd, NULL, NULL);
		if (t < 0)
			usleep(10000);
	}
	ck_assert_int_ge(t, 0);
	/* more than b's 16 KiB element and A's socket buffers can take in */
	memset(data, 'x', sizeof(data));
	ck_assert_int_eq(fcntl(t, F_SETFL, O_NONBLOCK), 0);
	for (i = 0; i < 4; i++) {
		n = write(t, data, sizeof(data));
		if (n > 0)
			sent += n;
	}
	ck_assert_int_gt(sent, BUF_SIZE_MIN);
	ck_assert_uint_eq(stat_a(STAT_conns_window_timeout), 0);
	ck_assert(wait_stat_a(STAT_conns_window_timeout, 1));
	ck_assert(wait_stat_a(STAT_conns_active, 0));
	close(t);
}
END_TEST

/*
 * Over RDMA, an export with proxy_protocol starts its target connection
 * with a PROXY v2 header naming the client of the CONN_ORIGIN that came
 * before the open; an open without one gets LOCAL.
 */
START_TEST(open_names_its_client)
{
	uint8_t want[PROXY_V2_MAX];
	const struct llc_info *m;
	struct addr src, dst;
	size_t len;
	int t;

	new_group(&B);
	origin(&B, TOKEN1, "127.0.0.5:40112", "127.0.0.1:6380");
	open_conn_to(&B, TOKEN1, "p");
	t = target_accept();
	ck_assert_int_eq(addr_parse("127.0.0.5:40112", &src), 0);
	ck_assert_int_eq(addr_parse("127.0.0.1:6380", &dst), 0);
	len = proxy_header_write(want, &src, &dst);
	ck_assert_uint_eq(len, 28);
	target_reads(t, want, len);
	m = answer(&B, 0);
	ck_assert_uint_eq(m->type, LLC_CONN_ACCEPT);
	ck_assert_uint_eq(m->conn_accept.opener_token, TOKEN1);
	close(t);

	open_conn_to(&B, TOKEN2, "p");
	t = target_accept();
	len = proxy_header_write(want, NULL, &dst);
	target_reads(t, want, len);
	m = answer(&B, 1);
	ck_assert_uint_eq(m->type, LLC_CONN_ACCEPT);
	close(t);
}
END_TEST

/* What A's active group's link does next (the test's hand on it). */
static bool a_link_done;

static void
a_link_cb(struct worker *wk, void *arg)
{
	struct lgr *lgr;

	a_link_done = false;
	TAILQ_FOREACH(lgr, &worker_lgr(wk)->lgrs, entry)
		if (lgr->state == LGR_STATE_ACTIVE &&
		    lgr_links_active(lgr) > 0) {
			if (arg != NULL)
				loopdev_hold(wr_link_qp(lgr->link[0].wr), true);
			else
				loopdev_drop_link(wr_link_qp(lgr->link[0].wr));
			a_link_done = true;
			return;
		}
}

/* Hold (hold: true) or fail A's active link, once there is one. */
static void
a_link(bool hold)
{
	int i;

	for (i = 0; i < WAIT_MS / 10; i++) {
		worker_call(w, a_link_cb, hold ? &B : NULL);
		if (a_link_done)
			return;
		usleep(10000);
	}
	ck_abort_msg("A has no active group");
}

static void
test_link_cb(struct worker *wk, void *arg)
{
	struct side *s = arg;
	struct lgr_link *link = &TAILQ_FIRST(&s->ctx->lgrs)->link[0];
	struct llc_info m;

	memset(&m, 0, sizeof(m));
	m.type = LLC_TEST_LINK;
	(void)llc_send(link, &m, NULL, NULL);
}

/*
 * A's answer to CONN_RESUME waits for a TX slot (its two and its LLC
 * queue are taken by TEST_LINK answers that do not complete: the link is
 * held) and the link
 * fails under it: the connection goes back to waiting to be asked, as
 * after any lost attempt, instead of being reset; asked again on a new
 * group it resumes.  It was reset (link_failed) before.
 */
START_TEST(resume_answer_lost_with_its_link)
{
	const struct llc_info *m;
	uint64_t failed = stat_a(STAT_CLOSE_BASE + SESSION_LINK_FAILED);
	uint8_t id1[LLC_RESUME_ID_LEN];
	int i, n;

	new_group(&B);
	open_conn(&B, TOKEN1);
	m = answer(&B, 0);
	ck_assert_uint_eq(m->type, LLC_CONN_ACCEPT);
	memcpy(id1, m->conn_accept.resume_id, sizeof(id1));
	worker_call(w, kill_cb, &B);
	ck_assert(wait_stat_a(STAT_conns_resuming, 1));

	new_group(&B);
	n = B.ngot;
	a_link(true);
	/* A's answers take its two TX slots and its queue of 8: one more
	 * TEST_LINK answer would end the link, CONN_RESUME's answer waits */
	for (i = 0; i < 2 + LGR_LLC_QUEUE; i++)
		worker_call(w, test_link_cb, &B);
	resume(&B, id1, TOKEN1, 0, 0);
	for (i = 0; i < 20; i++) {
		worker_call(w, sync_cb, NULL);
		usleep(5000);
	}
	ck_assert_int_eq(B.ngot, n); /* nothing of A's got through */
	a_link(false);		     /* the link fails */
	usleep(300000);
	worker_call(w, sync_cb, NULL);
	ck_assert_uint_eq(stat_a(STAT_CLOSE_BASE + SESSION_LINK_FAILED),
			  failed);
	ck_assert_uint_eq(stat_a(STAT_conns_resuming), 1);
	ck_assert_uint_eq(stat_a(STAT_conns_active), 1);

	new_group(&B);
	n = B.ngot;
	resume(&B, id1, TOKEN1, 0, 0);
	m = answer(&B, n);
	ck_assert_uint_eq(m->type, LLC_CONN_RESUME);
	ck_assert(m->flags & LLC_FLAG_RESP);
	ck_assert(wait_stat_a(STAT_conns_resumed_rdma, 1));
}
END_TEST

static Suite *
resume_suite(void)
{
	Suite *s = suite_create("resume");
	TCase *tc = tcase_create("export side");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, resume_refusals_and_the_real_one);
	tcase_add_test(tc, peer_that_never_consumes_is_reset);
	tcase_add_test(tc, open_names_its_client);
	tcase_add_test(tc, resume_answer_lost_with_its_link);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(resume_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
