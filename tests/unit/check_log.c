// SPDX-License-Identifier: BSD-2-Clause
/*
 * Unit tests for log.c's rate limit of repeated warnings (log_warn_rl):
 * a burst per kind and source per window, the count of what was left out
 * said when the next window opens or when another kind and source takes
 * the slot, sources apart from each other, and one limit for all threads.
 * Standard error goes to a file here, so lines come as "<4>smcproxyd: ...".
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "smcproxyd.h"

static char log_path[] = "/tmp/check_log.XXXXXX";
static int saved_stderr = -1;

static void
setup(void)
{
	int fd = mkstemp(log_path);

	ck_assert_int_ge(fd, 0);
	fflush(stderr);
	saved_stderr = dup(STDERR_FILENO);
	ck_assert_int_ge(saved_stderr, 0);
	ck_assert_int_ge(dup2(fd, STDERR_FILENO), 0);
	close(fd);
	unsetenv("JOURNAL_STREAM");
	log_init(1, LOG_LEVEL_INFO);
	log_rl_limits(60000, LOG_RL_BURST);
}

static void
teardown(void)
{
	fflush(stderr);
	dup2(saved_stderr, STDERR_FILENO);
	close(saved_stderr);
	unlink(log_path);
	strcpy(log_path, "/tmp/check_log.XXXXXX");
}

/* The lines logged so far that contain @what. */
static int
lines_with(const char *what)
{
	char line[1024];
	FILE *f;
	int n = 0;

	fflush(stderr);
	f = fopen(log_path, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f) != NULL)
		if (strstr(line, what) != NULL)
			n++;
	fclose(f);
	return n;
}

START_TEST(test_burst_then_quiet)
{
	int i;

	for (i = 0; i < 25; i++)
		log_warnx_rl("connect to target", "192.0.2.1:80",
			     "conn %d: target refused", i);
	ck_assert_int_eq(lines_with("target refused"), LOG_RL_BURST);
	ck_assert_int_eq(lines_with("conn 9: target refused"), 1);
	ck_assert_int_eq(lines_with("conn 10: target refused"), 0);
	ck_assert_int_eq(lines_with("suppressed"), 0);
}
END_TEST

START_TEST(test_next_window_says_the_count)
{
	int i;

	log_rl_limits(100, 3);
	for (i = 0; i < 10; i++)
		log_warnx_rl("connect to target", "192.0.2.1:80",
			     "conn %d: target refused", i);
	ck_assert_int_eq(lines_with("target refused"), 3);
	usleep(300 * 1000); /* past the window, however slow the clock */
	log_warnx_rl("connect to target", "192.0.2.1:80", "conn 10: again");
	ck_assert_int_eq(lines_with("<4>smcproxyd: connect to target "
				    "192.0.2.1:80: 7 similar messages "
				    "suppressed"),
			 1);
	ck_assert_int_eq(lines_with("conn 10: again"), 1);
}
END_TEST

START_TEST(test_sources_apart)
{
	int i;

	for (i = 0; i < 20; i++) {
		log_warnx_rl("peer port refused", "192.0.2.1", "from a %d", i);
		log_warnx_rl("peer port refused", "192.0.2.2", "from b %d", i);
		log_warnx_rl("reaching peer", "192.0.2.1", "kind %d", i);
	}
	ck_assert_int_eq(lines_with("from a"), LOG_RL_BURST);
	ck_assert_int_eq(lines_with("from b"), LOG_RL_BURST);
	ck_assert_int_eq(lines_with("kind"), LOG_RL_BURST);
}
END_TEST

/*
 * 200 sources in a table of fewer slots: those that lose their slot with
 * a line left out say so when they lose it (at least 200 - 64 do).
 */
START_TEST(test_evicted_say_their_count)
{
	char src[32];
	int i, j;

	log_rl_limits(60000, 1);
	for (i = 0; i < 200; i++) {
		snprintf(src, sizeof(src), "198.51.100.%d", i);
		for (j = 0; j < 2; j++)
			log_warnx_rl("peer port refused", src, "src %d try %d",
				     i, j);
	}
	ck_assert_int_eq(lines_with("try 0"), 200);
	ck_assert_int_eq(lines_with("try 1"), 0);
	ck_assert_int_ge(lines_with(": 1 similar message suppressed"),
			 200 - 64);
}
END_TEST

START_TEST(test_errno_appended)
{
	errno = ECONNREFUSED;
	log_warn_rl("connect to target", "192.0.2.9:1", "connect to %s",
		    "192.0.2.9:1");
	ck_assert_int_eq(errno, ECONNREFUSED);
	ck_assert_int_eq(lines_with("connect to 192.0.2.9:1: Connection "
				    "refused"),
			 1);
}
END_TEST

static void *
hammer(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < 2000; i++)
		log_warnx_rl("connect to target", "192.0.2.7:7", "hammered");
	return NULL;
}

START_TEST(test_one_limit_for_all_threads)
{
	pthread_t t[4];
	int i;

	for (i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, hammer, NULL), 0);
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	ck_assert_int_eq(lines_with("hammered"), LOG_RL_BURST);
}
END_TEST

static Suite *
log_suite(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("ratelimit");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_burst_then_quiet);
	tcase_add_test(tc, test_next_window_says_the_count);
	tcase_add_test(tc, test_sources_apart);
	tcase_add_test(tc, test_evicted_say_their_count);
	tcase_add_test(tc, test_errno_appended);
	tcase_add_test(tc, test_one_limit_for_all_threads);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(log_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
