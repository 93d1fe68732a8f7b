// SPDX-License-Identifier: BSD-2-Clause
/*
 * Unit tests for monitor.c, the control socket's event stream: an event
 * reaches a monitor as one JSON line naming what it is about, whether it
 * was raised on the main thread or a worker's; a monitor that does not
 * read is dropped once 64 KiB wait for it, and counted, and the daemon
 * never waits for it; one that sends a request is told it takes none and
 * closed; the number of monitors is bounded, per user and in all; events
 * beyond the queue from workers are counted as lost and announced.
 * The monitors are socketpairs on an event_base of the test's own.
 */
#include <sys/socket.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <jansson.h>

#include "smcproxyd.h"
#include "monitor.h"

static struct event_base *base;

static void
setup(void)
{
	ck_assert_int_eq(evthread_use_pthreads(), 0);
	base = event_base_new();
	ck_assert_ptr_nonnull(base);
	ck_assert_int_eq(monitor_init(base), 0);
}

static void
teardown(void)
{
	monitor_shutdown();
	event_base_free(base);
}

/* A monitor of @uid on one end of a socketpair; the other end returned. */
static int
subscribe(uid_t uid)
{
	struct bufferevent *bev;
	int sv[2];

	ck_assert_int_eq(
		socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	bev = bufferevent_socket_new(base, sv[0], BEV_OPT_CLOSE_ON_FREE);
	ck_assert_ptr_nonnull(bev);
	ck_assert_int_eq(monitor_subscribe(bev, uid, 42, uid == 0), 0);
	return sv[1];
}

static void
spin(void)
{
	int i;

	for (i = 0; i < 20; i++)
		event_base_loop(base, EVLOOP_NONBLOCK);
}

/* The next line from @fd, run the loop meanwhile; NULL at EOF. */
static char *
next_line(int fd, char *buf, size_t len)
{
	size_t n = 0;
	ssize_t r;
	int i;

	for (i = 0; i < 2000 && n < len - 1; i++) {
		event_base_loop(base, EVLOOP_NONBLOCK);
		r = read(fd, buf + n, 1);
		if (r == 0)
			return NULL;
		if (r < 0) {
			usleep(1000);
			continue;
		}
		if (buf[n] == '\n') {
			buf[n] = '\0';
			return buf;
		}
		n++;
		i = 0;
	}
	ck_abort_msg("no line within 2 s");
	return NULL;
}

static const char *
member(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static void *
worker_raise(void *arg)
{
	int n = *(int *)arg, i;

	for (i = 0; i < n; i++)
		monitor_event(MONITOR_LINK_DOWN,
			      &(struct log_where){"b", NULL, 3, 1},
			      "lgr 3 link 1 (rxe0): down: event %d", i);
	return NULL;
}

START_TEST(test_event_lines)
{
	char buf[4096];
	json_t *o;
	pthread_t t;
	int fd, one = 1;

	/* nobody monitors: nothing is rendered or queued */
	monitor_event(MONITOR_RELOAD, LOG_NOWHERE, "reloaded");
	fd = subscribe(0);
	ck_assert_int_eq(monitor_count(), 1);
	monitor_event(MONITOR_RULE_DISABLED,
		      &(struct log_where){NULL, "x", -1, -1},
		      "rule x disabled by uid 0 pid 7");
	o = json_loads(next_line(fd, buf, sizeof(buf)), 0, NULL);
	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(json_integer_value(json_object_get(o, "v")), 1);
	ck_assert_str_eq(member(o, "event"), "rule_disabled");
	ck_assert_str_eq(member(o, "rule"), "x");
	ck_assert_ptr_null(json_object_get(o, "peer"));
	ck_assert_ptr_null(json_object_get(o, "lgr"));
	ck_assert_str_eq(member(o, "message"),
			 "rule x disabled by uid 0 pid 7");
	ck_assert_int_eq(strlen(member(o, "time")), 24); /* ...:SS.mmmZ */
	json_decref(o);

	/* from a worker thread: queued, and the main loop woken for it */
	ck_assert_int_eq(pthread_create(&t, NULL, worker_raise, &one), 0);
	pthread_join(t, NULL);
	o = json_loads(next_line(fd, buf, sizeof(buf)), 0, NULL);
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(member(o, "event"), "link_down");
	ck_assert_str_eq(member(o, "peer"), "b");
	ck_assert_int_eq(json_integer_value(json_object_get(o, "lgr")), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(o, "link")), 1);
	json_decref(o);

	/* the monitor goes away: so does its subscription */
	close(fd);
	spin();
	ck_assert_int_eq(monitor_count(), 0);
}
END_TEST

START_TEST(test_slow_monitor_dropped)
{
	uint64_t dropped = stats_read(stats_main(), STAT_monitor_dropped);
	char buf[4096];
	int fd, i, small = 4096, fast;

	fd = subscribe(1000);
	fast = subscribe(0);
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	/* the slow one never reads; each event is written at once */
	for (i = 0; i < 4000 && monitor_count() == 2; i++) {
		monitor_event(MONITOR_PEER_DOWN,
			      &(struct log_where){"b", NULL, -1, -1},
			      "peer b: down: connect: Connection refused "
			      "(event %d)",
			      i);
		event_base_loop(base, EVLOOP_NONBLOCK);
		while (read(fast, buf, sizeof(buf)) > 0)
			;
	}
	ck_assert_int_lt(i, 4000);
	ck_assert_int_eq(monitor_count(), 1);
	ck_assert_uint_eq(stats_read(stats_main(), STAT_monitor_dropped),
			  dropped + 1);
	/* what was sent to it ends, then the connection does */
	for (i = 0; i < 2000; i++) {
		ssize_t r = read(fd, buf, sizeof(buf));

		if (r == 0)
			break;
		if (r < 0)
			usleep(1000);
	}
	ck_assert_int_lt(i, 2000);
	/* the other one still gets events */
	monitor_event(MONITOR_RELOAD, LOG_NOWHERE, "reloaded");
	ck_assert_ptr_nonnull(strstr(next_line(fast, buf, sizeof(buf)),
				     "\"event\":\"reload\""));
	close(fd);
	close(fast);
}
END_TEST

START_TEST(test_request_refused)
{
	uint64_t dropped = stats_read(stats_main(), STAT_monitor_dropped);
	char buf[4096];
	int fd;

	fd = subscribe(0);
	/* blank lines are not requests */
	ck_assert_int_eq(write(fd, "\n\r\n", 3), 3);
	spin();
	ck_assert_int_eq(monitor_count(), 1);
	ck_assert_int_eq(write(fd, "{\"v\":1,\"cmd\":\"stats\"}\n", 22), 22);
	ck_assert_ptr_nonnull(strstr(next_line(fd, buf, sizeof(buf)),
				     "\"ok\":false,\"error\":\"this connection "
				     "is a monitor: it takes no requests"));
	ck_assert_ptr_null(next_line(fd, buf, sizeof(buf)));
	ck_assert_int_eq(monitor_count(), 0);
	ck_assert_uint_eq(stats_read(stats_main(), STAT_monitor_dropped),
			  dropped);
	close(fd);
}
END_TEST

START_TEST(test_limits)
{
	char why[128];
	int fds[MONITOR_MAX], n = 0, i;

	for (i = 0; i < MONITOR_MAX_PER_UID; i++) {
		ck_assert_int_eq(monitor_room(1000, false, why, sizeof(why)),
				 0);
		fds[n++] = subscribe(1000);
	}
	ck_assert_int_eq(monitor_room(1000, false, why, sizeof(why)), -EUSERS);
	ck_assert_ptr_nonnull(strstr(why, "for uid 1000"));
	/* other users, up to the slots kept for root */
	for (i = 0; monitor_room(1001 + (uid_t)i, false, why, sizeof(why)) == 0;
	     i++)
		fds[n++] = subscribe(1001 + (uid_t)i);
	ck_assert_int_eq(n, MONITOR_MAX - MONITOR_RESERVED);
	ck_assert_ptr_nonnull(strstr(why, "kept for root"));
	while (monitor_room(0, true, why, sizeof(why)) == 0)
		fds[n++] = subscribe(0);
	ck_assert_int_eq(n, MONITOR_MAX);
	ck_assert_str_eq(why, "too many monitors (at most 16)");
	for (i = 0; i < n; i++)
		close(fds[i]);
	spin();
	ck_assert_int_eq(monitor_count(), 0);
}
END_TEST

START_TEST(test_events_lost)
{
	uint64_t lost = stats_read(stats_main(), STAT_monitor_events_lost);
	int n = MONITOR_QUEUE_MAX + 5, fd;
	pthread_t t;

	fd = subscribe(0);
	/* the main loop does not run while the worker raises them */
	ck_assert_int_eq(pthread_create(&t, NULL, worker_raise, &n), 0);
	pthread_join(t, NULL);
	spin();
	ck_assert_uint_eq(stats_read(stats_main(), STAT_monitor_events_lost),
			  lost + 5);
	close(fd);
}
END_TEST

static Suite *
monitor_suite(void)
{
	Suite *s = suite_create("monitor");
	TCase *tc = tcase_create("monitor");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_event_lines);
	tcase_add_test(tc, test_slow_monitor_dropped);
	tcase_add_test(tc, test_request_refused);
	tcase_add_test(tc, test_limits);
	tcase_add_test(tc, test_events_lost);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(monitor_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
