// SPDX-License-Identifier: BSD-2-Clause
/*
 * The worker's event loop with busy polling (rdma.busy_poll_us): it
 * polls without sleeping only after data-path work, and stops once the
 * budget passed with none; an idle loop sleeps.
 */
#include <stdlib.h>

#include <check.h>
#include <event2/event.h>

#include "smcproxyd.h"

static struct event_base *base;
static uint64_t spins, spins_mid;

static void
exit_cb(evutil_socket_t fd, short what, void *arg)
{
	event_base_loopexit(base, NULL);
}

static void
work_cb(evutil_socket_t fd, short what, void *arg)
{
	worker_busy_note();
}

static void
mid_cb(evutil_socket_t fd, short what, void *arg)
{
	spins_mid = spins;
}

static void
at_ms(event_callback_fn fn, int ms)
{
	struct timeval tv = {0, ms * 1000};

	ck_assert_int_eq(event_base_once(base, -1, EV_TIMEOUT, fn, NULL, &tv),
			 0);
}

static void
setup(void)
{
	base = event_base_new();
	ck_assert_ptr_nonnull(base);
	spins = spins_mid = 0;
}

static void
teardown(void)
{
	event_base_free(base);
}

/* Timers fire and the loop ends, but nothing noted work: no spinning. */
START_TEST(idle_does_not_spin)
{
	at_ms(mid_cb, 50);
	at_ms(exit_cb, 150);
	worker_loop(base, 1000000, &spins);
	ck_assert_uint_eq(spins, 0);
}
END_TEST

/* Work at 10 ms: it spins, and has stopped well before 300 ms (budget
 * 50 ms), so the count at 300 ms is the count at the end. */
START_TEST(budget_ends)
{
	at_ms(work_cb, 10);
	at_ms(mid_cb, 300);
	at_ms(exit_cb, 450);
	worker_loop(base, 50000, &spins);
	ck_assert_uint_gt(spins, 0);
	ck_assert_uint_eq(spins, spins_mid);
}
END_TEST

/* Work noted while spinning extends the spin: still polling at 80 ms
 * after work at 10 and 60 ms with a 50 ms budget. */
START_TEST(work_extends_budget)
{
	at_ms(work_cb, 10);
	at_ms(work_cb, 60);
	at_ms(mid_cb, 80);
	at_ms(exit_cb, 400);
	worker_loop(base, 50000, &spins);
	ck_assert_uint_gt(spins_mid, 0);
	ck_assert_uint_gt(spins, spins_mid);
}
END_TEST

/* busy_poll_us = 0: plain dispatch, exit still ends it. */
START_TEST(off_is_dispatch)
{
	at_ms(work_cb, 10);
	at_ms(exit_cb, 50);
	worker_loop(base, 0, &spins);
	ck_assert_uint_eq(spins, 0);
}
END_TEST

static Suite *
worker_suite(void)
{
	Suite *s = suite_create("worker");
	TCase *tc = tcase_create("busy_poll");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, idle_does_not_spin);
	tcase_add_test(tc, budget_ends);
	tcase_add_test(tc, work_extends_budget);
	tcase_add_test(tc, off_is_dispatch);
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
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
