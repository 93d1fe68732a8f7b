// SPDX-License-Identifier: BSD-2-Clause
/*
 * Unit tests for fdstore.c: what a restart's next process takes from the
 * sockets systemd passes (LISTEN_FDS, LISTEN_FDNAMES): only a listening
 * socket under the listener's name and bound to its address; the rest is
 * closed once the listeners are up.  And what goes to the store through
 * NOTIFY_SOCKET: FDSTORE=1 with the socket itself, FDSTOREREMOVE=1.
 *
 * The passed sockets must sit at descriptor 3 on, where Check keeps its
 * own in the test's process: those tests run in a child of their own,
 * which answers by its exit status (the step that failed).
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "smcproxyd.h"

/* A TCP socket on 127.0.0.1, any port, listening when listen_too. */
static int
tcp_socket(bool listen_too, struct addr *a)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)&a->ss;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	memset(a, 0, sizeof(*a));
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a->len = sizeof(*sin);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a->ss, a->len), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a->ss, &a->len),
			 0);
	if (listen_too)
		ck_assert_int_eq(listen(fd, 8), 0);
	return fd;
}

/* Whether a connection to a is accepted by the kernel (something listens). */
static bool
tcp_connects(const struct addr *a)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0), rc;

	rc = connect(fd, (const struct sockaddr *)&a->ss, a->len);
	close(fd);
	return rc == 0;
}

START_TEST(test_name)
{
	char buf[FDSTORE_NAME_MAX];
	struct addr a;

	ck_assert_int_eq(addr_parse("127.0.0.1:6380", &a), 0);
	fdstore_name(buf, sizeof(buf), "rule", 0, &a);
	ck_assert_str_eq(buf, "rule-0-127.0.0.1_6380");
	fdstore_name(buf, sizeof(buf), "metrics", -1, &a);
	ck_assert_str_eq(buf, "metrics-127.0.0.1_6380");
	/* no ':' (LISTEN_FDNAMES' separator), whatever the address */
	ck_assert_int_eq(addr_parse("[2001:db8::1]:7100", &a), 0);
	fdstore_name(buf, sizeof(buf), "peer", 17, &a);
	ck_assert_str_eq(buf, "peer-17-[2001_db8__1]_7100");
}
END_TEST

/*
 * In a child of its own: sockets 3.. as systemd passes them, named, then
 * the takeover.  Exit status: 0, or the number of the check that failed.
 */
static int
takeover_child(void)
{
	struct addr x, y, z, nl, other;
	int fx, fy, fz, fnl, fd, flags;
	char env[64], names[512], n[6][FDSTORE_NAME_MAX];

	fx = tcp_socket(true, &x);
	fy = tcp_socket(true, &y);
	fz = tcp_socket(true, &z);
	fnl = tcp_socket(false, &nl);
	tcp_socket(true, &other);
	/* x and z under their names; y under z's name; the unlistening one */
	fdstore_name(n[0], sizeof(n[0]), "rule", 0, &x);
	fdstore_name(n[1], sizeof(n[1]), "rule", 1, &z);
	fdstore_name(n[2], sizeof(n[2]), "rule", 0, &z);
	fdstore_name(n[3], sizeof(n[3]), "peer", 0, &nl);
	snprintf(names, sizeof(names), "%s:%s:%s:%s", n[0], n[1], n[2], n[3]);
	/* out of 3..6 first: one of them may sit there already */
	fx = fcntl(fx, F_DUPFD, 100);
	fy = fcntl(fy, F_DUPFD, 100);
	fz = fcntl(fz, F_DUPFD, 100);
	fnl = fcntl(fnl, F_DUPFD, 100);
	if (fx < 0 || fy < 0 || fz < 0 || fnl < 0 || dup2(fx, 3) != 3 ||
	    dup2(fy, 4) != 4 || dup2(fz, 5) != 5 || dup2(fnl, 6) != 6)
		return 1;
	close(fx);
	close(fy);
	close(fz);
	close(fnl);
	snprintf(env, sizeof(env), "%d", (int)getpid());
	setenv("LISTEN_PID", env, 1);
	setenv("LISTEN_FDS", "4", 1);
	setenv("LISTEN_FDNAMES", names, 1);
	unsetenv("NOTIFY_SOCKET");

	fdstore_init();
	if (getenv("LISTEN_FDS") != NULL || getenv("LISTEN_FDNAMES") != NULL)
		return 2;
	if (!fdstore_holds(&x) || !fdstore_holds(&y) || fdstore_holds(&other))
		return 3;
	/* nl is bound but does not listen: nobody's listener */
	if (fdstore_holds(&nl))
		return 4;
	/* y's socket passed under z's name: not taken for z's listener */
	if (fdstore_take(n[1], &z) != -1)
		return 5;
	fd = fdstore_take(n[0], &x);
	if (fd != 3)
		return 6;
	flags = fcntl(fd, F_GETFL);
	if (flags == -1 || !(flags & O_NONBLOCK) ||
	    !(fcntl(fd, F_GETFD) & FD_CLOEXEC))
		return 7;
	if (fdstore_take(n[0], &x) != -1)
		return 8;
	if (fdstore_take(n[2], &z) != 5)
		return 9;
	if (fdstore_take(n[3], &nl) != -1)
		return 10;
	if (fdstore_holds(&x) || !fdstore_holds(&y))
		return 11;

	/* what no listener took is closed: y stops listening */
	fdstore_close_unused();
	if (fcntl(4, F_GETFD) != -1 || errno != EBADF ||
	    fcntl(6, F_GETFD) != -1 || errno != EBADF)
		return 12;
	if (tcp_connects(&y) || !tcp_connects(&x) || !tcp_connects(&z))
		return 13;
	if (fdstore_holds(&y) || fdstore_take(n[1], &y) != -1)
		return 14;
	return 0;
}

START_TEST(test_takeover)
{
	int status;
	pid_t pid;

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(takeover_child());
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status), "the child died: status 0x%x", status);
	ck_assert_msg(WEXITSTATUS(status) == 0, "check %d failed",
		      WEXITSTATUS(status));
}
END_TEST

/* Without LISTEN_FDS: nothing to take, every listener binds anew. */
START_TEST(test_nothing_passed)
{
	struct addr a;
	int fd;

	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_PID");
	fd = tcp_socket(true, &a);
	fdstore_init();
	ck_assert(!fdstore_holds(&a));
	ck_assert_int_eq(fdstore_take("rule-0-127.0.0.1_1", &a), -1);
	fdstore_close_unused();
	ck_assert(tcp_connects(&a));
	close(fd);
}
END_TEST

/* The store's side: what arrives on NOTIFY_SOCKET. */
START_TEST(test_keep_forget)
{
	char dir[] = "/tmp/check_fdstore.XXXXXX", path[64], msg[256];
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	struct iovec iov = {msg, sizeof(msg) - 1};
	struct msghdr mh = {0};
	struct cmsghdr *c;
	struct stat st0, st1;
	struct addr a;
	int ns, fd, got = -1;
	ssize_t n;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/notify", dir);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	ns = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(ns, 0);
	ck_assert_int_eq(bind(ns, (struct sockaddr *)&sun, sizeof(sun)), 0);
	fd = tcp_socket(true, &a);

	/* not under a service manager: nothing is sent */
	unsetenv("NOTIFY_SOCKET");
	fdstore_keep("rule-0-x", fd);
	ck_assert_int_eq(recv(ns, msg, sizeof(msg), MSG_DONTWAIT), -1);

	setenv("NOTIFY_SOCKET", path, 1);
	fdstore_keep("rule-0-x", fd);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cbuf;
	mh.msg_controllen = sizeof(cbuf);
	n = recvmsg(ns, &mh, MSG_DONTWAIT);
	ck_assert_int_gt(n, 0);
	msg[n] = '\0';
	ck_assert_str_eq(msg, "FDSTORE=1\nFDNAME=rule-0-x");
	for (c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			memcpy(&got, CMSG_DATA(c), sizeof(got));
	ck_assert_int_ge(got, 0);
	/* the store holds the listening socket itself, not a new one */
	ck_assert_int_eq(fstat(fd, &st0), 0);
	ck_assert_int_eq(fstat(got, &st1), 0);
	ck_assert_uint_eq(st0.st_ino, st1.st_ino);
	/* ours closed, the store's copy still listens */
	close(fd);
	ck_assert(tcp_connects(&a));

	fdstore_forget("rule-0-x");
	n = recv(ns, msg, sizeof(msg) - 1, MSG_DONTWAIT);
	ck_assert_int_gt(n, 0);
	msg[n] = '\0';
	ck_assert_str_eq(msg, "FDSTOREREMOVE=1\nFDNAME=rule-0-x");
	unsetenv("NOTIFY_SOCKET");
	close(got);
	close(ns);
	unlink(path);
	rmdir(dir);
}
END_TEST

static Suite *
fdstore_suite(void)
{
	Suite *s = suite_create("fdstore");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_name);
	tcase_add_test(tc, test_takeover);
	tcase_add_test(tc, test_nothing_passed);
	tcase_add_test(tc, test_keep_forget);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(fdstore_suite());
	int failed;

	log_init(1, LOG_LEVEL_WARN);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
