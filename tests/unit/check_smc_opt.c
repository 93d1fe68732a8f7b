// SPDX-License-Identifier: BSD-2-Clause
/*
 * The SMC-R TCP option's BPF program (src/bpf/smc_opt.bpf.c), loaded into
 * the running kernel and attached to a cgroup of this test alone, on
 * loopback: a marked listener echoes the option to a SYN that carried it
 * (the client's SYN-ACK had it, the listener saved a SYN with it, and the
 * echo is recorded under the 4-tuple), and to no other SYN; an unmarked
 * listener never echoes.  Needs root (CAP_BPF, CAP_NET_ADMIN, and
 * CAP_SYS_ADMIN to mount a cgroup2): skipped (exit 77) without.
 */
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <check.h>
#include <linux/types.h>

#include "smc_opt.h"

#ifndef SMC_OPT_OBJ
#define SMC_OPT_OBJ "src/bpf/smc_opt.bpf.o"
#endif

static struct bpf_object *obj;
static int mark_fd = -1, echoed_fd = -1, cg_fd = -1, prog_fd = -1;
static char cg_root[] = "/tmp/smc-opt-cg.XXXXXX";
static char cg_dir[64];

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
		ck_assert_int_eq(
			bpf_map_update_elem(mark_fd, &fd, &mark, BPF_NOEXIST),
			0);
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
		ck_assert_int_eq(
			bpf_map_update_elem(mark_fd, &fd, &mark, BPF_NOEXIST),
			0);
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

	ck_assert_int_eq(bpf_map_lookup_elem(mark_fd, &fd, &v), 0);
	return v;
}

/* Whether the echo of the accepted socket acc was recorded. */
static bool
echo_recorded(int acc)
{
	struct sockaddr_in l, r;
	socklen_t sl = sizeof(l);
	struct smc_opt_tuple t;
	uint32_t v;

	ck_assert_int_eq(getsockname(acc, (struct sockaddr *)&l, &sl), 0);
	sl = sizeof(r);
	ck_assert_int_eq(getpeername(acc, (struct sockaddr *)&r, &sl), 0);
	memset(&t, 0, sizeof(t));
	t.local_ip4 = l.sin_addr.s_addr;
	t.remote_ip4 = r.sin_addr.s_addr;
	t.local_port = ntohs(l.sin_port);
	t.remote_port = ntohs(r.sin_port);
	return bpf_map_lookup_elem(echoed_fd, &t, &v) == 0 && v == 1;
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
	ck_assert(echo_recorded(a));
	close(a);
	close(c);
	close(l);
}
END_TEST

START_TEST(plain_syn_gets_no_echo)
{
	struct sockaddr_in sin;
	int l, c, a;

	l = listener(SMC_OPT_LISTEN, &sin);
	c = connected(0, &sin, l, &a);
	ck_assert(!syn_had_option(a));
	ck_assert(!echo_recorded(a));
	close(a);
	close(c);
	close(l);
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
	ck_assert(!echo_recorded(a));
	close(a);
	close(c);
	close(l);
}
END_TEST

static int
write_pid(const char *dir)
{
	char path[128], pid[32];
	int fd, n, rc;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	rc = write(fd, pid, (size_t)n) == n ? 0 : -errno;
	close(fd);
	return rc;
}

/* Load the program, attach it to a cgroup2 of our own, and move in. */
static const char *
setup(void)
{
	struct bpf_program *prog;

	if (geteuid() != 0)
		return "not root";
	obj = bpf_object__open_file(SMC_OPT_OBJ, NULL);
	if (!obj || libbpf_get_error(obj))
		return "cannot open " SMC_OPT_OBJ;
	if (bpf_object__load(obj))
		return "the kernel refused to load the program";
	prog = bpf_object__find_program_by_name(obj, "smc_opt");
	mark_fd = bpf_object__find_map_fd_by_name(obj, "smc_opt_mark");
	echoed_fd = bpf_object__find_map_fd_by_name(obj, "smc_opt_echoed");
	if (!prog || mark_fd < 0 || echoed_fd < 0)
		return "program or maps missing from " SMC_OPT_OBJ;
	prog_fd = bpf_program__fd(prog);
	if (!mkdtemp(cg_root))
		return "mkdtemp failed";
	if (mount("none", cg_root, "cgroup2", 0, NULL)) {
		rmdir(cg_root);
		cg_root[0] = '\0';
		return "cannot mount a cgroup2";
	}
	snprintf(cg_dir, sizeof(cg_dir), "%s/test", cg_root);
	if (mkdir(cg_dir, 0755))
		return "cannot make a cgroup";
	cg_fd = open(cg_dir, O_RDONLY | O_DIRECTORY);
	if (cg_fd < 0 ||
	    bpf_prog_attach(prog_fd, cg_fd, BPF_CGROUP_SOCK_OPS, 0))
		return "cannot attach the program to the cgroup";
	if (write_pid(cg_dir))
		return "cannot move into the cgroup";
	return NULL;
}

static void
teardown(void)
{
	if (cg_root[0] == '\0')
		return;
	write_pid(cg_root);
	if (cg_fd >= 0) {
		bpf_prog_detach2(prog_fd, cg_fd, BPF_CGROUP_SOCK_OPS);
		close(cg_fd);
	}
	if (cg_dir[0])
		rmdir(cg_dir);
	umount(cg_root);
	rmdir(cg_root);
}

int
main(void)
{
	Suite *s = suite_create("smc_opt");
	TCase *tc = tcase_create("loopback");
	const char *why;
	SRunner *sr;
	int failed;

	why = setup();
	if (why) {
		printf("SKIP: %s\n", why);
		teardown();
		if (obj)
			bpf_object__close(obj);
		return 77;
	}
	tcase_add_test(tc, marked_listener_echoes_marked_syn);
	tcase_add_test(tc, plain_syn_gets_no_echo);
	tcase_add_test(tc, unmarked_listener_never_echoes);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	teardown();
	bpf_object__close(obj);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
