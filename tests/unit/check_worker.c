// SPDX-License-Identifier: BSD-2-Clause
/*
 * Workers, with real threads.  Two workers flooding each other with
 * hand-overs (as a PROPOSAL flood asking each for the other does) never
 * wait for each other: what does not fit is dropped, counted and freed
 * by its sender, and the main thread still reaches both.  And strangers
 * on a peer port shared by two workers: whichever worker a connection
 * lands on, a host that keeps failing (an unknown name that asks for
 * the other worker, malformed CLC, malformed fallback hellos) meets the
 * rate limit after its burst.
 */
#include <sys/socket.h>
#include <sys/time.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "smcproxyd.h"
#include "clc_wire.h"
#include "fallback_wire.h"

#define FLOOD 20000  /* hand-overs each worker starts at once */
#define HOPS 3	     /* each goes back and forth this often */
#define WAIT_MS 8000 /* a hang fails the test well before Check's timeout */
#define TRIES 40     /* connections of a failing stranger */
#define BURST 10     /* failures auth.c allows at once */

static struct conf *conf;
static int peer_port;

static int
free_port(void)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	ck_assert_int_ge(fd, 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	port = ntohs(sin.sin_port);
	close(fd);
	return port;
}

static void
start(bool peer_listen)
{
	char text[512], listen[128] = "";

	log_init(1, LOG_LEVEL_WARN);
	peer_port = free_port();
	if (peer_listen)
		snprintf(listen, sizeof(listen),
			 "peer_listen: { address = \"127.0.0.1:%d\"; };\n",
			 peer_port);
	snprintf(text, sizeof(text),
		 "smcproxyd: { name = \"a\"; workers = 2; };\n%s"
		 "peers = ( { name = \"b\"; address = \"127.0.0.1:1\";"
		 " insecure = true; } );\n",
		 listen);
	conf = conf_load_string(text, "a.conf", stderr);
	ck_assert_ptr_nonnull(conf);
	conf_hold(conf);
	ck_assert_int_eq(worker_start_all(conf), 0);
}

static void
stop(void)
{
	worker_stop_all(0, NULL);
	worker_exit_all();
	worker_join_all();
	conf_drop(conf);
}

static uint64_t
stat_sum(enum stats_id id)
{
	uint64_t n = 0;
	int i;

	for (i = 0; i < worker_count(); i++)
		n += stats_read(worker_stats(worker_get(i)), id);
	return n;
}

/* ---- workers handing over to each other ---- */

struct token {
	int hops;
};

static int delivered, dropped, flooded;

static struct worker *
other(struct worker *w)
{
	return worker_get(1 - worker_id(w));
}

/* A token's sender keeps it when it could not go: it frees it. */
static void
pass_on(struct worker *w, worker_fn fn, struct token *t)
{
	if (worker_pass(w, other(w), fn, t)) {
		free(t);
		__atomic_add_fetch(&dropped, 1, __ATOMIC_RELAXED);
	}
}

static void
hop_cb(struct worker *w, void *arg)
{
	struct token *t = arg;

	if (--t->hops > 0) {
		pass_on(w, hop_cb, t);
		return;
	}
	free(t);
	__atomic_add_fetch(&delivered, 1, __ATOMIC_RELAXED);
}

static void
flood_cb(struct worker *w, void *arg)
{
	struct token *t;
	int i;

	for (i = 0; i < FLOOD; i++) {
		t = calloc(1, sizeof(*t));
		ck_assert_ptr_nonnull(t);
		t->hops = HOPS;
		pass_on(w, hop_cb, t);
	}
	__atomic_add_fetch(&flooded, 1, __ATOMIC_RELAXED);
}

static void
nothing_cb(struct worker *w, void *arg)
{
	*(int *)arg = worker_id(w) + 1;
}

/*
 * Each worker hands FLOOD tokens to the other at once, and each token
 * goes back and forth: with a blocking pipe both workers wait for each
 * other as soon as both pipes are full, forever.  Now every token either
 * arrives or is dropped (and freed: the sanitizer would see a leak), the
 * drops are counted, and worker_call still reaches both workers.
 */
START_TEST(flood_between_two_workers)
{
	int i, ran;

	start(false);
	delivered = dropped = flooded = 0;
	worker_post(worker_get(0), flood_cb, NULL);
	worker_post(worker_get(1), flood_cb, NULL);
	for (i = 0; i < WAIT_MS / 10; i++) {
		if (__atomic_load_n(&flooded, __ATOMIC_RELAXED) == 2 &&
		    __atomic_load_n(&delivered, __ATOMIC_RELAXED) +
				    __atomic_load_n(&dropped,
						    __ATOMIC_RELAXED) ==
			    2 * FLOOD)
			break;
		usleep(10000);
	}
	ck_assert_msg(i < WAIT_MS / 10,
		      "workers stuck: %d flooded, %d delivered, %d dropped",
		      flooded, delivered, dropped);
	/* so many at once cannot all fit: some were dropped, and counted */
	ck_assert_int_gt(dropped, 0);
	ck_assert_int_gt(delivered, 0);
	ck_assert_uint_eq(stat_sum(STAT_worker_msgs_dropped),
			  (uint64_t)dropped);
	for (i = 0; i < 2; i++) {
		ran = 0;
		worker_call(worker_get(i), nothing_cb, &ran);
		ck_assert_int_eq(ran, i + 1);
	}
	stop();
}
END_TEST

/* ---- the watchdog's ping ---- */

static int stall_fds[2];

/* Stand for a worker stuck in a call: its loop waits for one byte. */
static void
stall_cb(struct worker *w, void *arg)
{
	char c;

	ck_assert_int_eq(read(stall_fds[0], &c, 1), 1);
}

/* Wait for worker_unanswered() to be want; whether it came. */
static bool
unanswered_is(int want)
{
	int i;

	for (i = 0; i < WAIT_MS / 10; i++) {
		if (worker_unanswered() == want)
			return true;
		usleep(10000);
	}
	return false;
}

/*
 * The main loop sends WATCHDOG=1 only when worker_unanswered() is -1: both
 * loops answer a ping; a stuck worker does not until it runs again.
 */
START_TEST(watchdog_ping_needs_every_worker)
{
	start(false);
	ck_assert_int_eq(pipe(stall_fds), 0);
	worker_ping_all();
	ck_assert(unanswered_is(-1));

	worker_post(worker_get(1), stall_cb, NULL);
	worker_ping_all();
	usleep(200000);
	ck_assert_int_eq(worker_unanswered(), 1);
	ck_assert_int_eq(write(stall_fds[1], "x", 1), 1);
	ck_assert(unanswered_is(-1));
	close(stall_fds[0]);
	close(stall_fds[1]);
	stop();
}
END_TEST

/* ---- strangers on the peer port ---- */

/*
 * One connection to the peer port that sends msg: whether the daemon
 * answered it (read anything: a DECLINE, a RESULT) rather than resetting
 * it unread (rate limited).
 */
static bool
stranger(const void *msg, size_t len)
{
	struct timeval tv = {2, 0};
	struct sockaddr_in sin;
	uint8_t buf[256];
	size_t got = 0;
	ssize_t n;
	int fd, tries;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons((uint16_t)peer_port);
	/* a loaded machine may refuse one while the listener catches up */
	for (tries = 0; connect(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0;
	     tries++) {
		ck_assert_msg(tries < 50, "connect: %s", strerror(errno));
		close(fd);
		usleep(20000);
		fd = socket(AF_INET, SOCK_STREAM, 0);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv,
					    sizeof(tv)),
				 0);
	}
	(void)send(fd, msg, len, MSG_NOSIGNAL);
	/* until the daemon is done with it: EOF or reset */
	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) {
		/* a declined one drains until we are done too */
		if (got == 0)
			shutdown(fd, SHUT_WR);
		got += (size_t)n;
	}
	ck_assert_msg(n == 0 || errno == ECONNRESET, "recv: %s",
		      strerror(errno));
	close(fd);
	return got > 0;
}

/* The answered connections of TRIES that send msg from one host. */
static int
strangers(const void *msg, size_t len)
{
	int i, answered = 0;

	for (i = 0; i < TRIES; i++)
		answered += stranger(msg, len);
	return answered;
}

static void
proposal(uint8_t *msg, int *len, const char *name)
{
	struct clc_proposal_info p;

	memset(&p, 0, sizeof(p));
	p.system_id[0] = 1;
	p.link.gid[15] = 1;
	p.link.qpn = 0x100;
	p.link.mtu = 3;
	p.max_conns = 255;
	p.max_links = 2;
	p.features = CLC_FEAT_CONN_OPEN | CLC_FEAT_RESUME;
	p.worker = 2; /* worker 1, plus 1 */
	snprintf(p.name, sizeof(p.name), "%s", name);
	*len = clc_proposal_encode(msg, CLC_MSG_MAX, &p);
	ck_assert_int_gt(*len, 0);
}

static const char *serve_src = "127.0.0.9:1";

static void
serve_cb(struct worker *w, void *arg)
{
	struct addr src;

	ck_assert_int_eq(addr_parse(serve_src, &src), 0);
	ck_assert_int_eq(clc_serve(worker_lgr(w), *(int *)arg, &src, NULL, 0),
			 0);
}

/* A PROPOSAL served on worker 0: the reason of the DECLINE it gets. */
static uint32_t
served_on_0(const uint8_t *msg, int len)
{
	uint8_t ans[sizeof(struct clc_decline)];
	struct timeval tv = {2, 0};
	struct clc_decline_info d;
	uint32_t decl;
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_int_eq(
		setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	worker_call(worker_get(0), serve_cb, &sv[1]);
	ck_assert_int_eq(send(sv[0], msg, (size_t)len, MSG_NOSIGNAL), len);
	ck_assert_int_eq(recv(sv[0], ans, sizeof(ans), MSG_WAITALL),
			 sizeof(ans));
	ck_assert_int_eq(clc_decline_decode(ans, sizeof(ans), &d, &decl), 0);
	close(sv[0]);
	return d.diagnosis;
}

/*
 * The peer's own PROPOSAL asking for worker 1 goes there, and is served
 * there (no device here: declined NOSMCRDEV by worker 1).  Before, the
 * worker it left read the connection it had just freed.
 */
START_TEST(peer_proposal_goes_to_its_worker)
{
	uint8_t msg[CLC_MSG_MAX];
	int len;

	start(true); /* the strangers' budget is peer_listen's */
	proposal(msg, &len, "b");
	serve_src = "127.0.0.1:5";
	ck_assert_uint_eq(served_on_0(msg, len), CLC_DECL_NOSMCRDEV);
	serve_src = "127.0.0.9:1";
	ck_assert_uint_eq(stats_read(worker_stats(worker_get(0)),
				     STAT_srv_hshake_err_cnt),
			  0);
	ck_assert_uint_eq(stats_read(worker_stats(worker_get(1)),
				     STAT_srv_hshake_err_cnt),
			  1);
	stop();
}
END_TEST

/*
 * A PROPOSAL that arrives on worker 0 under a name we do not know and
 * asks for worker 1 is judged on worker 0, which declines it: it does
 * not go to worker 1 (before, it did, and worker 1 declined it).
 */
START_TEST(unknown_name_judged_where_it_arrived)
{
	uint8_t msg[CLC_MSG_MAX];
	int len, i;

	start(false);
	proposal(msg, &len, "mallory");
	for (i = 0; i < 3; i++)
		ck_assert_uint_eq(served_on_0(msg, len), CLC_DECL_PEERUNKNOWN);
	ck_assert_uint_eq(stats_read(worker_stats(worker_get(0)),
				     STAT_srv_hshake_err_cnt),
			  3);
	ck_assert_uint_eq(stats_read(worker_stats(worker_get(1)),
				     STAT_srv_hshake_err_cnt),
			  0);
	stop();
}
END_TEST

/*
 * A PROPOSAL under a name we do not know, asking for worker 1 (byte
 * 47): it is refused where it arrived, and its failures count in the
 * limit both workers check.  Before, it went to worker 1 unjudged and
 * failed there, while the rate limit of worker 0 (where about half the
 * connections land) never heard of it: about half of them were served.
 */
START_TEST(unknown_name_cannot_choose_its_worker)
{
	uint8_t msg[CLC_MSG_MAX];
	int len, answered;

	start(true);
	proposal(msg, &len, "mallory");
	answered = strangers(msg, (size_t)len);
	ck_assert_int_ge(answered, BURST);
	ck_assert_int_le(answered, BURST + 2);
	ck_assert_uint_ge(stat_sum(STAT_auth_rate_limited),
			  (uint64_t)(TRIES - BURST - 2));
	ck_assert_uint_eq(stat_sum(STAT_worker_msgs_dropped), 0);
	stop();
}
END_TEST

/* Malformed CLC: counted, and a failure for the rate limit. */
START_TEST(malformed_clc_is_a_failure)
{
	uint8_t msg[sizeof(struct clc_hdr)];
	int answered;

	start(true);
	memset(msg, 0, sizeof(msg));
	memcpy(msg, CLC_EYECATCHER, 4);
	msg[4] = 0x7f; /* no such type */
	msg[6] = sizeof(msg);
	answered = strangers(msg, sizeof(msg));
	ck_assert_int_le(answered, BURST + 2);
	ck_assert_uint_ge(stat_sum(STAT_preauth_malformed), BURST);
	ck_assert_uint_ge(stat_sum(STAT_auth_rate_limited),
			  (uint64_t)(TRIES - BURST - 2));
	stop();
}
END_TEST

/* A fallback header that is none (wrong version): the same. */
START_TEST(malformed_fallback_header_is_a_failure)
{
	uint8_t msg[sizeof(struct fb_hdr)];

	start(true);
	memset(msg, 0, sizeof(msg));
	memcpy(msg, FB_EYECATCHER, 4);
	msg[4] = FB_VERSION + 1;
	msg[5] = FB_HELLO;
	msg[7] = 60;
	(void)strangers(msg, sizeof(msg));
	ck_assert_uint_ge(stat_sum(STAT_preauth_malformed), BURST);
	ck_assert_uint_le(stat_sum(STAT_preauth_malformed), BURST + 2);
	ck_assert_uint_ge(stat_sum(STAT_auth_rate_limited),
			  (uint64_t)(TRIES - BURST - 2));
	stop();
}
END_TEST

/* A whole hello whose name is no name: answered, then limited. */
START_TEST(malformed_hello_is_a_failure)
{
	uint8_t msg[FB_HELLO_MAX], nonce[32];
	size_t len;
	int answered;

	start(true);
	memset(nonce, 7, sizeof(nonce));
	len = fb_hello_encode(msg, nonce, 0, "b!", "e");
	answered = strangers(msg, len);
	ck_assert_int_ge(answered, BURST);
	ck_assert_int_le(answered, BURST + 2);
	ck_assert_uint_ge(stat_sum(STAT_preauth_malformed), BURST);
	ck_assert_uint_ge(stat_sum(STAT_auth_rate_limited),
			  (uint64_t)(TRIES - BURST - 2));
	stop();
}
END_TEST

static Suite *
worker_suite(void)
{
	Suite *s = suite_create("worker");
	TCase *tc = tcase_create("messages");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, flood_between_two_workers);
	tcase_add_test(tc, watchdog_ping_needs_every_worker);
	suite_add_tcase(s, tc);
	tc = tcase_create("strangers");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, peer_proposal_goes_to_its_worker);
	tcase_add_test(tc, unknown_name_judged_where_it_arrived);
	tcase_add_test(tc, unknown_name_cannot_choose_its_worker);
	tcase_add_test(tc, malformed_clc_is_a_failure);
	tcase_add_test(tc, malformed_fallback_header_is_a_failure);
	tcase_add_test(tc, malformed_hello_is_a_failure);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(worker_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
