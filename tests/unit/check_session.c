// SPDX-License-Identifier: BSD-2-Clause
/*
 * session.c's relay readiness on real loopback TCP sockets and a real
 * event base, with the event flags session_watch_relay() uses: a short
 * read marks the socket drained (no read just to hear EAGAIN), yet the
 * peer's FIN is never lost, whether it came with the last bytes (before
 * the event was reported: no later edge would announce it) or after.
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>
#include <event2/event.h>

#include "smcproxyd.h"

struct rig {
	struct event_base *base;
	struct event *ev;
	struct session s;
	int cli; /* the peer writing to s.fd[0] */
	int reads, events;
	bool eof;
	size_t got;
};

static void
rig_io(evutil_socket_t fd, short what, void *arg)
{
	struct rig *r = arg;

	r->events++;
	session_io_mark(&r->s, 0, what);
}

static void
rig_open(struct rig *r)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int l, one = 1;

	memset(r, 0, sizeof(*r));
	l = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(l, 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(l, (struct sockaddr *)&sin, sizeof(sin)), 0);
	ck_assert_int_eq(listen(l, 1), 0);
	ck_assert_int_eq(getsockname(l, (struct sockaddr *)&sin, &len), 0);
	r->cli = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_eq(connect(r->cli, (struct sockaddr *)&sin, sizeof(sin)),
			 0);
	setsockopt(r->cli, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	r->s.fd[0] = accept(l, NULL, NULL);
	ck_assert_int_ge(r->s.fd[0], 0);
	close(l);
	ck_assert_int_eq(fcntl(r->s.fd[0], F_SETFL, O_NONBLOCK), 0);
	r->base = event_base_new();
	ck_assert_ptr_nonnull(r->base);
	/* as session_watch_relay() */
	r->ev = event_new(r->base, r->s.fd[0],
			  EV_READ | EV_WRITE | EV_CLOSED | EV_ET | EV_PERSIST,
			  rig_io, r);
	ck_assert_int_eq(event_add(r->ev, NULL), 0);
	r->s.hup_reported = (event_base_get_features(r->base) &
			     EV_FEATURE_EARLY_CLOSE) != 0;
	ck_assert(r->s.hup_reported); /* epoll: the daemon's backend */
	r->s.rd_ready[0] = r->s.wr_ready[0] = true;
}

static void
rig_close(struct rig *r)
{
	event_free(r->ev);
	event_base_free(r->base);
	close(r->s.fd[0]);
	if (r->cli >= 0)
		close(r->cli);
}

/* What is reported now (the bytes were written before: loopback TCP
 * delivers within the write). */
static void
rig_events(struct rig *r)
{
	ck_assert_int_ge(event_base_loop(r->base, EVLOOP_NONBLOCK), 0);
}

/* The relay's read loop (session_rdma_read, fb_pump): read while ready. */
static void
rig_relay(struct rig *r)
{
	char buf[4096];
	ssize_t n;

	while (r->s.rd_ready[0] && !r->eof) {
		r->reads++;
		n = read(r->s.fd[0], buf, sizeof(buf));
		if (n > 0) {
			r->got += (size_t)n;
			session_read_short(&r->s, 0, (size_t)n, sizeof(buf));
		} else if (n == 0) {
			r->eof = true;
		} else {
			ck_assert_int_eq(errno, EAGAIN);
			r->s.rd_ready[0] = false;
		}
	}
}

/* Bytes, then nothing: one read, not two (the second only for EAGAIN). */
START_TEST(short_read_needs_no_eagain)
{
	struct rig r;

	rig_open(&r);
	rig_events(&r);
	rig_relay(&r); /* nothing there yet: one EAGAIN */
	ck_assert_int_eq(r.reads, 1);
	ck_assert_int_eq(write(r.cli, "hello", 5), 5);
	rig_events(&r);
	rig_relay(&r);
	ck_assert_uint_eq(r.got, 5);
	ck_assert_int_eq(r.reads, 2);
	ck_assert(!r.eof);
	/* the next bytes bring the next edge */
	ck_assert_int_eq(write(r.cli, "again", 5), 5);
	rig_events(&r);
	rig_relay(&r);
	ck_assert_uint_eq(r.got, 10);
	ck_assert_int_eq(r.reads, 3);
	/* and so does the FIN */
	ck_assert_int_eq(shutdown(r.cli, SHUT_WR), 0);
	rig_events(&r);
	rig_relay(&r);
	ck_assert(r.eof);
	rig_close(&r);
}
END_TEST

/* The last bytes and the FIN queued before the event is reported: the
 * short read must not end reading, no edge comes for the EOF. */
START_TEST(fin_with_the_last_bytes_is_read)
{
	struct rig r;
	int i;

	rig_open(&r);
	rig_events(&r);
	rig_relay(&r);
	ck_assert_int_eq(write(r.cli, "last words", 10), 10);
	ck_assert_int_eq(shutdown(r.cli, SHUT_WR), 0);
	rig_events(&r);
	rig_relay(&r);
	ck_assert_uint_eq(r.got, 10);
	for (i = 0; i < 3 && !r.eof; i++) { /* nothing more would come */
		rig_events(&r);
		rig_relay(&r);
	}
	ck_assert_msg(r.eof, "the EOF after a short read was never read");
	rig_close(&r);
}
END_TEST

static Suite *
session_suite(void)
{
	Suite *s = suite_create("session");
	TCase *tc = tcase_create("relay readiness");

	tcase_add_test(tc, short_read_needs_no_eagain);
	tcase_add_test(tc, fin_with_the_last_bytes_is_read);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(session_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
