// SPDX-License-Identifier: BSD-2-Clause
/*
 * Transparent SMC-R's programs (src/bpf/intercept.bpf.c) as the daemon
 * loads them (src/intercept.c), in the running kernel, attached to a
 * cgroup of this test alone, on loopback.  This process plays the
 * daemon (its listeners on 127.0.0.1 and [::1], outside the cgroup) and
 * the servers (127.0.0.2, 127.0.0.3, [::1]); forked children play the
 * programs, in the cgroup or not.  A connect from the cgroup to an
 * intercepted destination lands on our listener, which learns the
 * original, and the program's getpeername answers the original; a
 * connect from outside, to another destination, of the daemon itself,
 * to a destination learned as TCP, with the switch off or with the
 * links gone goes direct.  Needs root (CAP_BPF, CAP_NET_ADMIN, and
 * CAP_SYS_ADMIN to mount a cgroup2): skipped (exit 77) without, and
 * likewise when the kernel refuses the programs, but a failure then
 * when CI=true.
 */
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>
#include <linux/types.h>

#include "smcproxyd.h"
#include "intercept.h"
#include "smcopt_env.h"

#ifndef INTERCEPT_OBJ
#define INTERCEPT_OBJ "src/bpf/intercept.bpf.o"
#endif

enum { LIS4, LIS6, SRV, PLAIN, SRV6, NLISTEN };

static struct {
	struct intercept *ic;
	char root[64];	/* our cgroup2 mount */
	char dir[96];	/* the intercepted cgroup in it */
	char home[512]; /* where this process was, in root */
	int fd[NLISTEN];
	struct sockaddr_storage sa[NLISTEN];
} t;

static const char *const where[NLISTEN] = {
	[LIS4] = "127.0.0.1",  [LIS6] = "::1", [SRV] = "127.0.0.2",
	[PLAIN] = "127.0.0.3", [SRV6] = "::1",
};

static uint16_t
port_of(int i)
{
	const struct sockaddr_storage *ss = &t.sa[i];

	return ntohs(ss->ss_family == AF_INET ?
			     ((const struct sockaddr_in *)ss)->sin_port :
			     ((const struct sockaddr_in6 *)ss)->sin6_port);
}

static socklen_t
len_of(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET ? sizeof(struct sockaddr_in) :
					  sizeof(struct sockaddr_in6);
}

static int
join(const char *dir)
{
	char path[600];
	int fd, rc;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	rc = write(fd, "0\n", 2) == 2 ? 0 : -errno;
	close(fd);
	return rc;
}

static int
listen_on(const char *host, struct sockaddr_storage *ss)
{
	struct addr a;
	socklen_t sl = sizeof(*ss);
	int fd, one = 1;

	if (addr_parse_host(host, &a) != 0)
		return -1;
	fd = socket(a.ss.ss_family, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a.ss, a.len) != 0 ||
	    getsockname(fd, (struct sockaddr *)ss, &sl) != 0 ||
	    listen(fd, 16) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * A child, in the intercepted cgroup or not, connects to dst; which of
 * our listeners got it (-1: none in 5 s), *acc its accepted end, *seen
 * what the child's getpeername said.  The child writes "ping" and waits
 * for *acc to close.
 */
static int
child_connect(const struct sockaddr_storage *dst, bool inside, int *acc,
	      struct sockaddr_storage *seen, pid_t *pid)
{
	struct pollfd p[NLISTEN];
	int pipefd[2], got = -1;
	char buf[8];

	ck_assert_int_eq(pipe(pipefd), 0);
	*pid = fork();
	ck_assert_int_ge(*pid, 0);
	if (*pid == 0) {
		struct sockaddr_storage peer;
		socklen_t pl = sizeof(peer);
		int fd;

		close(pipefd[0]);
		if (inside && join(t.dir) != 0)
			_exit(2);
		fd = socket(dst->ss_family, SOCK_STREAM, 0);
		if (fd < 0 ||
		    connect(fd, (const struct sockaddr *)dst, len_of(dst)))
			_exit(3);
		memset(&peer, 0, sizeof(peer));
		if (getpeername(fd, (struct sockaddr *)&peer, &pl) != 0)
			_exit(4);
		if (write(pipefd[1], &peer, sizeof(peer)) != sizeof(peer) ||
		    write(fd, "ping", 4) != 4)
			_exit(5);
		while (read(fd, buf, sizeof(buf)) > 0)
			;
		_exit(0);
	}
	close(pipefd[1]);
	ck_assert_int_eq(read(pipefd[0], seen, sizeof(*seen)), sizeof(*seen));
	close(pipefd[0]);
	for (int i = 0; i < NLISTEN; i++) {
		p[i].fd = t.fd[i];
		p[i].events = POLLIN;
	}
	if (poll(p, NLISTEN, 5000) <= 0)
		return -1;
	for (int i = 0; i < NLISTEN && got < 0; i++)
		if (p[i].revents & POLLIN)
			got = i;
	*acc = accept(t.fd[got], NULL, NULL);
	ck_assert_int_ge(*acc, 0);
	ck_assert_int_eq(read(*acc, buf, 4), 4);
	ck_assert(memcmp(buf, "ping", 4) == 0);
	return got;
}

static void
child_done(int acc, pid_t pid)
{
	int status;

	close(acc);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
}

/* Connect from a child; which listener took it (original: into *orig). */
static int
lands_on(int dst, bool inside, struct addr *orig)
{
	struct sockaddr_storage seen;
	int acc, got, rc;
	pid_t pid;

	got = child_connect(&t.sa[dst], inside, &acc, &seen, &pid);
	ck_assert_int_ge(got, 0);
	/* whatever it reached, the program sees the peer it asked for */
	ck_assert(memcmp(&seen, &t.sa[dst], len_of(&t.sa[dst])) == 0);
	rc = t.ic == NULL ? -ENOENT : intercept_original(t.ic, acc, orig);
	if (got == LIS4 || got == LIS6)
		ck_assert_int_eq(rc, 0);
	else
		ck_assert_int_eq(rc, -ENOENT);
	child_done(acc, pid);
	return got;
}

static struct intercept_count
counts(void)
{
	struct intercept_count n;

	ck_assert_int_eq(intercept_counts(t.ic, &n), 0);
	return n;
}

static void
assert_original(const struct addr *orig, int dst)
{
	ck_assert_uint_eq(orig->len, len_of(&t.sa[dst]));
	ck_assert(memcmp(&orig->ss, &t.sa[dst], orig->len) == 0);
}

START_TEST(taken_from_cgroup_with_original)
{
	struct intercept_count before = counts();
	struct addr orig;

	ck_assert_int_eq(lands_on(SRV, true, &orig), LIS4);
	assert_original(&orig, SRV);
	ck_assert_uint_eq(counts().taken, before.taken + 1);
	ck_assert_int_eq(lands_on(SRV6, true, &orig), LIS6);
	assert_original(&orig, SRV6);
	ck_assert_uint_eq(counts().taken, before.taken + 2);
}
END_TEST

START_TEST(outside_untouched)
{
	struct addr orig;

	ck_assert_int_eq(lands_on(SRV, false, &orig), SRV);
	ck_assert_int_eq(lands_on(SRV6, false, &orig), SRV6);
}
END_TEST

START_TEST(other_destination_untouched)
{
	struct addr orig;

	ck_assert_int_eq(lands_on(PLAIN, true, &orig), PLAIN);
}
END_TEST

START_TEST(daemon_own_connect_untouched)
{
	struct sockaddr_storage peer;
	socklen_t pl = sizeof(peer);
	int fd, acc;

	ck_assert_int_eq(join(t.dir), 0);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(
		connect(fd, (struct sockaddr *)&t.sa[SRV], len_of(&t.sa[SRV])),
		0);
	ck_assert_int_eq(join(t.home), 0);
	ck_assert_int_eq(getpeername(fd, (struct sockaddr *)&peer, &pl), 0);
	ck_assert(memcmp(&peer, &t.sa[SRV], pl) == 0);
	acc = accept(t.fd[SRV], NULL, NULL);
	ck_assert_int_ge(acc, 0);
	close(acc);
	close(fd);
}
END_TEST

START_TEST(learned_tcp_goes_direct_until_expiry)
{
	struct intercept_count before = counts();
	struct addr dst, orig;

	memcpy(&dst.ss, &t.sa[SRV], sizeof(dst.ss));
	dst.len = len_of(&t.sa[SRV]);
	ck_assert_int_eq(intercept_learn(t.ic, &dst, INTERCEPT_TCP, 60), 0);
	ck_assert_int_eq(lands_on(SRV, true, &orig), SRV);
	ck_assert_uint_eq(counts().bypassed, before.bypassed + 1);
	ck_assert_int_eq(intercept_learn(t.ic, &dst, INTERCEPT_TCP, 0), 0);
	ck_assert_int_eq(lands_on(SRV, true, &orig), LIS4);
	ck_assert_int_eq(intercept_learn(t.ic, &dst, INTERCEPT_SMC, 60), 0);
	ck_assert_int_eq(lands_on(SRV, true, &orig), LIS4);
	ck_assert_uint_eq(counts().bypassed, before.bypassed + 1);
}
END_TEST

START_TEST(switch_off_goes_direct)
{
	struct intercept_count before = counts();
	struct addr orig;

	ck_assert_int_eq(
		intercept_set(t.ic, false, port_of(LIS4), port_of(LIS6)), 0);
	ck_assert_int_eq(lands_on(SRV, true, &orig), SRV);
	ck_assert_uint_eq(counts().off, before.off + 1);
	ck_assert_int_eq(
		intercept_set(t.ic, true, port_of(LIS4), port_of(LIS6)), 0);
	ck_assert_int_eq(lands_on(SRV, true, &orig), LIS4);
}
END_TEST

static void
open_ic(void)
{
	struct addr_net net;
	char why[256];

	t.ic = intercept_open(INTERCEPT_OBJ, t.dir, why, sizeof(why));
	ck_assert_msg(t.ic != NULL, "%s", why);
	ck_assert_int_eq(addr_net_parse("127.0.0.2/32", &net), 0);
	ck_assert_int_eq(intercept_add(t.ic, &net, 0), 0);
	ck_assert_int_eq(addr_net_parse("::1", &net), 0);
	ck_assert_int_eq(intercept_add(t.ic, &net, port_of(SRV6)), 0);
	ck_assert_int_eq(
		intercept_set(t.ic, true, port_of(LIS4), port_of(LIS6)), 0);
}

START_TEST(links_gone_go_direct)
{
	struct addr orig;

	intercept_close(t.ic);
	t.ic = NULL;
	ck_assert_int_eq(lands_on(SRV, true, &orig), SRV);
	ck_assert_int_eq(lands_on(SRV6, true, &orig), SRV6);
	open_ic();
	ck_assert_int_eq(lands_on(SRV, true, &orig), LIS4);
}
END_TEST

/* NULL, or why this host cannot run the test. */
static const char *
setup(void)
{
	char line[512];
	FILE *f;

	for (int i = 0; i < NLISTEN; i++)
		t.fd[i] = -1;
	if (geteuid() != 0)
		return "not root";
	f = fopen("/proc/self/cgroup", "re");
	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "0::", 3) == 0) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(t.home, sizeof(t.home), "%s", line + 3);
		}
	if (f != NULL)
		fclose(f);
	if (t.home[0] == '\0')
		return "not in a cgroup v2";
	snprintf(t.root, sizeof(t.root), "/tmp/intercept-cg.XXXXXX");
	if (!mkdtemp(t.root)) {
		t.root[0] = '\0';
		return "mkdtemp failed";
	}
	if (mount("none", t.root, "cgroup2", 0, NULL)) {
		rmdir(t.root);
		t.root[0] = '\0';
		return "cannot mount a cgroup2";
	}
	snprintf(line, sizeof(line), "%s%.400s", t.root, t.home);
	snprintf(t.home, sizeof(t.home), "%s", line);
	snprintf(t.dir, sizeof(t.dir), "%s/intercept-%d", t.root,
		 (int)getpid());
	if (mkdir(t.dir, 0755)) {
		t.dir[0] = '\0';
		return "cannot make a cgroup";
	}
	for (int i = 0; i < NLISTEN; i++)
		if ((t.fd[i] = listen_on(where[i], &t.sa[i])) < 0)
			return "cannot listen on loopback";
	t.ic = intercept_open(INTERCEPT_OBJ, t.dir, line, sizeof(line));
	if (t.ic == NULL) {
		fprintf(stderr, "%s\n", line);
		return "cannot load or attach the programs";
	}
	intercept_close(t.ic);
	t.ic = NULL;
	return NULL;
}

static void
teardown(void)
{
	intercept_close(t.ic);
	for (int i = 0; i < NLISTEN; i++)
		if (t.fd[i] >= 0)
			close(t.fd[i]);
	if (t.root[0]) {
		if (t.dir[0])
			rmdir(t.dir);
		umount(t.root);
		rmdir(t.root);
	}
}

static void
fixture(void)
{
	if (t.ic == NULL)
		open_ic();
}

int
main(void)
{
	const char *why;
	Suite *s;
	TCase *tc;
	SRunner *sr;
	int failed;

	why = setup();
	if (why) {
		teardown();
		return smcopt_env_skip(why);
	}
	s = suite_create("intercept");
	tc = tcase_create("loopback");
	tcase_add_checked_fixture(tc, fixture, NULL);
	tcase_add_test(tc, taken_from_cgroup_with_original);
	tcase_add_test(tc, outside_untouched);
	tcase_add_test(tc, other_destination_untouched);
	tcase_add_test(tc, daemon_own_connect_untouched);
	tcase_add_test(tc, learned_tcp_goes_direct_until_expiry);
	tcase_add_test(tc, switch_off_goes_direct);
	tcase_add_test(tc, links_gone_go_direct);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	/* the daemon's own connects are exempt by process: one process */
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	teardown();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
