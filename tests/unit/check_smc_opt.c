// SPDX-License-Identifier: BSD-2-Clause
/*
 * The SMC-R TCP option's BPF program (src/bpf/smc_opt.bpf.c), loaded into
 * the running kernel and attached to a cgroup of this test alone, on
 * loopback: a marked listener echoes the option to a SYN that carried it
 * (the client's SYN-ACK had it, the listener saved a SYN with it, and the
 * echo is recorded under the 4-tuple), and to no other SYN; an unmarked
 * listener never echoes.  Needs root (CAP_BPF, CAP_NET_ADMIN, and
 * CAP_SYS_ADMIN to mount a cgroup2): skipped (exit 77) without.  Any other
 * reason not to run (the object missing, the kernel refusing the program)
 * is a skip too, but a failure when CI=true: CI builds and loads it, and
 * only a host that withholds root or cgroup2 may skip there, if
 * .ci/allowed-skips says so.
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <check.h>
#include <linux/types.h>

#include "smc_opt.h"
#include "smcopt_env.h"

#ifndef SMC_OPT_OBJ
#define SMC_OPT_OBJ "src/bpf/smc_opt.bpf.o"
#endif

static struct smcopt_env env;

static int
listener(uint32_t mark, struct sockaddr_in *sin)
{
	socklen_t sl = sizeof(*sin);
	int fd, one = 1;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)sin, sizeof(*sin)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)sin, &sl), 0);
	ck_assert_int_eq(
		setsockopt(fd, IPPROTO_TCP, TCP_SAVE_SYN, &one, sizeof(one)),
		0);
	if (mark)
		ck_assert_int_eq(smcopt_mark(&env, fd, mark), 0);
	ck_assert_int_eq(listen(fd, 8), 0);
	return fd;
}

/* Connect (marked or not) to sin; *acc is the accepted end. */
static int
connected(uint32_t mark, const struct sockaddr_in *sin, int lfd, int *acc)
{
	int fd;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	if (mark)
		ck_assert_int_eq(smcopt_mark(&env, fd, mark), 0);
	ck_assert_int_eq(
		connect(fd, (const struct sockaddr *)sin, sizeof(*sin)), 0);
	*acc = accept(lfd, NULL, NULL);
	ck_assert_int_ge(*acc, 0);
	/* the connection carries data after its handshake */
	ck_assert_int_eq(write(fd, "ping", 4), 4);
	return fd;
}

static uint32_t
mark_of(int fd)
{
	uint32_t v = 0;

	ck_assert_int_eq(bpf_map_lookup_elem(env.mark_fd, &fd, &v), 0);
	return v;
}

/* Whether the SYN the listener saved for acc carried the option. */
static bool
syn_had_option(int acc)
{
	static const uint8_t opt[] = {SMC_OPT_KIND, SMC_OPT_LEN, 0xe2,
				      0xd4,	    0xc3,	 0xd9};
	uint8_t syn[256];
	socklen_t len = sizeof(syn);
	size_t ihl, off, end;

	ck_assert_int_eq(getsockopt(acc, IPPROTO_TCP, TCP_SAVED_SYN, syn, &len),
			 0);
	ihl = (syn[0] & 0x0f) * 4u;
	end = ihl + (syn[ihl + 12] >> 4) * 4u;
	ck_assert_uint_le(end, len);
	for (off = ihl + 20; off < end;) {
		if (syn[off] == 0)
			break;
		if (syn[off] == 1) {
			off++;
			continue;
		}
		if (off + 6 <= end && memcmp(syn + off, opt, 6) == 0)
			return true;
		if (off + 1 >= end || syn[off + 1] < 2)
			break;
		off += syn[off + 1];
	}
	return false;
}

START_TEST(marked_listener_echoes_marked_syn)
{
	struct sockaddr_in sin;
	int l, c, a;

	l = listener(SMC_OPT_LISTEN, &sin);
	c = connected(SMC_OPT_CONNECT, &sin, l, &a);
	ck_assert(syn_had_option(a));
	ck_assert_uint_eq(mark_of(c), SMC_OPT_ECHOED);
	ck_assert(smcopt_echoed(&env, a));
	close(a);
	close(c);
	close(l);
}
END_TEST

/* a's SYN was plain and no echo is recorded for it; l, c, a closed */
static void
plain_and_close(int l, int c, int a)
{
	ck_assert(!syn_had_option(a));
	ck_assert(!smcopt_echoed(&env, a));
	close(a);
	close(c);
	close(l);
}

START_TEST(plain_syn_gets_no_echo)
{
	struct sockaddr_in sin;
	int l, c, a;

	l = listener(SMC_OPT_LISTEN, &sin);
	c = connected(0, &sin, l, &a);
	plain_and_close(l, c, a);
}
END_TEST

/* A connection to sin from 127.0.0.1:port (0: any), accepted as *acc. */
static int
connected_from(uint32_t mark, const struct sockaddr_in *sin, int lfd, int *acc,
	       uint16_t *port)
{
	struct sockaddr_in me;
	socklen_t sl = sizeof(me);
	int fd, one = 1;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)), 0);
	memset(&me, 0, sizeof(me));
	me.sin_family = AF_INET;
	me.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	me.sin_port = htons(*port);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&me, sizeof(me)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&me, &sl), 0);
	*port = ntohs(me.sin_port);
	if (mark)
		ck_assert_int_eq(smcopt_mark(&env, fd, mark), 0);
	ck_assert_int_eq(
		connect(fd, (const struct sockaddr *)sin, sizeof(*sin)), 0);
	*acc = accept(lfd, NULL, NULL);
	ck_assert_int_ge(*acc, 0);
	return fd;
}

/* Close fd with a reset: no TIME_WAIT holds its 4-tuple. */
static void
close_reset(int fd)
{
	struct linger lg = {1, 0};

	ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)),
			 0);
	close(fd);
}

/*
 * An echo recorded for a SYN whose connection the daemon never took (a
 * spoofed SYN leaves the same) must not make a later plain client on
 * the same 4-tuple look like a kernel client: that client's SYN-ACK,
 * without the option, forgets it.
 */
START_TEST(stale_echo_forgotten)
{
	struct sockaddr_in sin;
	uint16_t port = 0;
	int l, c, a;

	l = listener(SMC_OPT_LISTEN, &sin);
	c = connected_from(SMC_OPT_CONNECT, &sin, l, &a, &port);
	ck_assert(syn_had_option(a));
	/* never asked for: the record stays */
	close_reset(c);
	close(a);
	c = connected_from(0, &sin, l, &a, &port);
	plain_and_close(l, c, a);
}
END_TEST

START_TEST(unmarked_listener_never_echoes)
{
	struct sockaddr_in sin;
	int l, c, a;

	l = listener(0, &sin);
	c = connected(SMC_OPT_CONNECT, &sin, l, &a);
	ck_assert(syn_had_option(a));
	ck_assert_uint_eq(mark_of(c), SMC_OPT_PLAIN);
	ck_assert(!smcopt_echoed(&env, a));
	close(a);
	close(c);
	close(l);
}
END_TEST

int
main(void)
{
	const char *why;
	Suite *s;
	TCase *tc;
	SRunner *sr;
	int failed;

	why = smcopt_env_setup(&env, SMC_OPT_OBJ);
	if (why) {
		smcopt_env_teardown(&env);
		return smcopt_env_skip(why);
	}
	s = suite_create("smc_opt");
	tc = tcase_create("loopback");
	tcase_add_test(tc, marked_listener_echoes_marked_syn);
	tcase_add_test(tc, plain_syn_gets_no_echo);
	tcase_add_test(tc, unmarked_listener_never_echoes);
	tcase_add_test(tc, stale_echo_forgotten);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	smcopt_env_teardown(&env);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
