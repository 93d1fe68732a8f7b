// SPDX-License-Identifier: BSD-2-Clause
/*
 * Unit tests for log.c's rate limit of repeated warnings (log_warn_rl):
 * a burst per kind and source per window, the count of what was left out
 * said when the next window opens or when another kind and source takes
 * the slot, sources apart from each other, and one limit for all threads;
 * and the events' journal fields (log_event): MESSAGE_ID and what the
 * event is about, formatted, and as a journal receives them on a socket
 * of this test's own (a private /run, when run as root).
 * Standard error goes to a file here, so lines come as "<4>smcproxyd: ...",
 * with -t (log_set_times) "<4>smcproxyd: SECONDS.MICROSECONDS ...".
 */
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

/* Counts still pending at stop are said then, once, not lost. */
START_TEST(test_flush_at_stop)
{
	int i;

	for (i = 0; i < 14; i++)
		log_warnx_rl("connect to target", "192.0.2.1:80",
			     "conn %d: target refused", i);
	log_warnx_rl("peer port refused", "192.0.2.7", "once");
	ck_assert_int_eq(lines_with("suppressed"), 0);
	log_rl_flush();
	ck_assert_int_eq(lines_with("<4>smcproxyd: connect to target "
				    "192.0.2.1:80: 4 similar messages "
				    "suppressed"),
			 1);
	ck_assert_int_eq(lines_with("suppressed"), 1);
	log_rl_flush();
	ck_assert_int_eq(lines_with("suppressed"), 1);
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

/* -t: a line starts with the wall clock, seconds and microseconds. */
START_TEST(test_times)
{
	struct timespec before, after;
	char line[1024];
	long long sec;
	long usec;
	FILE *f;
	int n = 0;

	ck_assert_int_eq(clock_gettime(CLOCK_REALTIME, &before), 0);
	log_set_times(true);
	log_warnx("stamped");
	log_set_times(false);
	log_warnx("plain");
	ck_assert_int_eq(clock_gettime(CLOCK_REALTIME, &after), 0);
	fflush(stderr);
	f = fopen(log_path, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strstr(line, "plain") != NULL) {
			ck_assert_str_eq(line, "<4>smcproxyd: plain\n");
			n++;
			continue;
		}
		ck_assert_int_eq(sscanf(line, "<4>smcproxyd: %lld.%6ld stamped",
					&sec, &usec),
				 2);
		ck_assert_int_ge(sec, before.tv_sec);
		ck_assert_int_le(sec, after.tv_sec);
		ck_assert(usec >= 0 && usec < 1000000);
		ck_assert_int_eq(line[strcspn(line, ".") + 7], ' ');
		n++;
	}
	fclose(f);
	ck_assert_int_eq(n, 2);
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

/* The fields of an event: MESSAGE_ID first, then only what it names. */
START_TEST(test_event_fields)
{
	const char *f[LOG_EVENT_FIELDS_MAX];
	char buf[LOG_EVENT_FIELDS_LEN], name[CONF_NAME_MAX + 1];
	struct log_where w = {"b", NULL, 3, 1};

	ck_assert_int_eq(
		log_event_fields(LOG_EV_LINK_UP, &w, buf, sizeof(buf), f), 4);
	ck_assert_str_eq(f[0], "MESSAGE_ID=a1019f3f1de7421dbaed4d90612770e0");
	ck_assert_str_eq(f[1], "PEER=b");
	ck_assert_str_eq(f[2], "LGR=3");
	ck_assert_str_eq(f[3], "LINK=1");

	w = (struct log_where){"b", "redis", -1, -1};
	ck_assert_int_eq(
		log_event_fields(LOG_EV_AUTH_FAILED, &w, buf, sizeof(buf), f),
		3);
	ck_assert_str_eq(f[0], "MESSAGE_ID=cf64de56aaf1493fb3ae6f27f7457a89");
	ck_assert_str_eq(f[1], "PEER=b");
	ck_assert_str_eq(f[2], "RULE=redis");

	ck_assert_int_eq(log_event_fields(LOG_EV_RELOAD, LOG_NOWHERE, buf,
					  sizeof(buf), f),
			 1);
	ck_assert_str_eq(f[0], "MESSAGE_ID=99eb0c885a0c4c2da9e65459e167112b");

	/* the longest names and ids fit; a short buffer is refused */
	memset(name, 'n', CONF_NAME_MAX);
	name[CONF_NAME_MAX] = '\0';
	w = (struct log_where){name, name, 4294967295L, 4294967295L};
	ck_assert_int_eq(
		log_event_fields(LOG_EV_LINK_DOWN, &w, buf, sizeof(buf), f), 5);
	ck_assert_str_eq(f[4], "LINK=4294967295");
	ck_assert_int_eq(log_event_fields(LOG_EV_LINK_DOWN, &w, buf, 60, f),
			 -ENOSPC);
}
END_TEST

/* Every MESSAGE_ID is 128 bits in lower-case hex, none twice. */
START_TEST(test_event_ids)
{
	const char *f[LOG_EVENT_FIELDS_MAX];
	char buf[LOG_EVENT_FIELDS_LEN], ids[LOG_EV_N][33];
	int ev, j;

	for (ev = 0; ev < LOG_EV_N; ev++) {
		ck_assert_int_eq(log_event_fields((enum log_event)ev,
						  LOG_NOWHERE, buf, sizeof(buf),
						  f),
				 1);
		ck_assert_uint_eq(strlen(f[0]), strlen("MESSAGE_ID=") + 32);
		ck_assert_uint_eq(strspn(f[0] + 11, "0123456789abcdef"), 32);
		memcpy(ids[ev], f[0] + 11, 33);
		for (j = 0; j < ev; j++)
			ck_assert_str_ne(ids[ev], ids[j]);
	}
}
END_TEST

/*
 * In a child with a private /run (root only): a socket where libsystemd
 * sends journal entries, standard error named by JOURNAL_STREAM as
 * systemd does, and one event logged.  0: the entry came with its fields;
 * 77: no private /run to be had here; else what failed.
 */
static int
journal_child(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char entry[4096], env[64];
	struct timeval tv = {5, 0};
	struct stat st;
	ssize_t n;
	int fd;

	if (unshare(CLONE_NEWNS) == -1 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1 ||
	    mount("tmpfs", "/run", "tmpfs", 0, NULL) == -1)
		return 77;
	if (mkdir("/run/systemd", 0755) == -1 ||
	    mkdir("/run/systemd/journal", 0755) == -1)
		return 2;
	snprintf(sa.sun_path, sizeof(sa.sun_path),
		 "/run/systemd/journal/socket");
	fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	if (fd == -1 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == -1)
		return 3;
	if (fstat(STDERR_FILENO, &st) == -1)
		return 4;
	snprintf(env, sizeof(env), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	setenv("JOURNAL_STREAM", env, 1);
	log_init(1, LOG_LEVEL_INFO);
	log_event(LOG_EV_PEER_DOWN, LOG_LEVEL_WARN,
		  &(struct log_where){"b", "redis", 7, 2}, "peer %s: down",
		  "b");
	n = recv(fd, entry, sizeof(entry) - 1, 0);
	if (n <= 0)
		return 5;
	entry[n] = '\0';
	if (strstr(entry, "MESSAGE=peer b: down\n") == NULL ||
	    strstr(entry, "PRIORITY=4\n") == NULL ||
	    strstr(entry, "MESSAGE_ID=7f26b048b33b4e3f876f27c3b3cadcb7\n") ==
		    NULL ||
	    strstr(entry, "\nPEER=b\n") == NULL ||
	    strstr(entry, "\nRULE=redis\n") == NULL ||
	    strstr(entry, "\nLGR=7\n") == NULL ||
	    strstr(entry, "\nLINK=2\n") == NULL) {
		fprintf(stderr, "journal entry: %s\n", entry);
		return 6;
	}
	return 0;
}

/* An event as the journal receives it, fields and all. */
START_TEST(test_event_journal)
{
	pid_t pid;
	int status;

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(journal_child());
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77 && getenv("CI") == NULL) {
		dprintf(saved_stderr, "check_log: no private /run (not "
				      "root?): the journal entry not "
				      "checked\n");
		return;
	}
	ck_assert_msg(WEXITSTATUS(status) == 0,
		      "journal child: %d (77: no private /run)",
		      WEXITSTATUS(status));
	ck_assert_int_eq(lines_with("peer b: down"), 0); /* not on stderr */
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
	tcase_add_test(tc, test_flush_at_stop);
	tcase_add_test(tc, test_errno_appended);
	tcase_add_test(tc, test_times);
	tcase_add_test(tc, test_one_limit_for_all_threads);
	suite_add_tcase(s, tc);
	tc = tcase_create("events");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_event_fields);
	tcase_add_test(tc, test_event_ids);
	tcase_add_test(tc, test_event_journal);
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
