// SPDX-License-Identifier: BSD-2-Clause
/*
 * The SMC-R TCP option's BPF program in the running kernel, for tests
 * (smcopt_env.h): tests/unit/check_smc_opt.c on loopback, and
 * tests/tools/ksmcdecline in the kernel SMC-R lane.
 */
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/types.h>

#include <arpa/inet.h>

#include "smcproxyd.h"
#include "clc_wire.h"
#include "smcr_clc_wire.h"
#include "smc_opt.h"
#include "smcopt_env.h"

static int
smcopt_env_join(const char *dir)
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

/*
 * Load the object at path, attach its program to a new cgroup2 and move
 * the calling process into it.  NULL, or why not (the caller skips then,
 * and tears down what was made).
 */
const char *
smcopt_env_setup(struct smcopt_env *e, const char *path)
{
	struct bpf_program *prog;

	memset(e, 0, sizeof(*e));
	e->prog_fd = e->mark_fd = e->echoed_fd = e->cg_fd = -1;
	if (geteuid() != 0)
		return "not root";
	e->obj = bpf_object__open_file(path, NULL);
	if (libbpf_get_error(e->obj)) {
		e->obj = NULL;
		return "cannot open the BPF object";
	}
	if (bpf_object__load(e->obj))
		return "the kernel refused to load the program";
	prog = bpf_object__find_program_by_name(e->obj, "smc_opt");
	e->mark_fd = bpf_object__find_map_fd_by_name(e->obj, "smc_opt_mark");
	e->echoed_fd =
		bpf_object__find_map_fd_by_name(e->obj, "smc_opt_echoed");
	if (!prog || e->mark_fd < 0 || e->echoed_fd < 0)
		return "program or maps missing from the BPF object";
	e->prog_fd = bpf_program__fd(prog);
	snprintf(e->root, sizeof(e->root), "/tmp/smc-opt-cg.XXXXXX");
	if (!mkdtemp(e->root)) {
		e->root[0] = '\0';
		return "mkdtemp failed";
	}
	if (mount("none", e->root, "cgroup2", 0, NULL)) {
		rmdir(e->root);
		e->root[0] = '\0';
		return "cannot mount a cgroup2";
	}
	/* every mount of cgroup2 is the same tree: one name per process */
	snprintf(e->dir, sizeof(e->dir), "%s/smcopt-%d", e->root,
		 (int)getpid());
	if (mkdir(e->dir, 0755)) {
		e->dir[0] = '\0';
		return "cannot make a cgroup";
	}
	e->cg_fd = open(e->dir, O_RDONLY | O_DIRECTORY);
	if (e->cg_fd < 0 ||
	    bpf_prog_attach(e->prog_fd, e->cg_fd, BPF_CGROUP_SOCK_OPS, 0))
		return "cannot attach the program to the cgroup";
	if (smcopt_env_join(e->dir))
		return "cannot move into the cgroup";
	return NULL;
}

/* Leave and remove the cgroup and its mount, detach, unload. */
void
smcopt_env_teardown(struct smcopt_env *e)
{
	if (e->root[0]) {
		smcopt_env_join(e->root);
		if (e->cg_fd >= 0) {
			bpf_prog_detach2(e->prog_fd, e->cg_fd,
					 BPF_CGROUP_SOCK_OPS);
			close(e->cg_fd);
		}
		if (e->dir[0])
			rmdir(e->dir);
		umount(e->root);
		rmdir(e->root);
	}
	if (e->obj)
		bpf_object__close(e->obj);
	memset(e, 0, sizeof(*e));
}

/*
 * A BPF test that cannot run, for why: its exit status, 77 (a skip), or
 * a failure when CI=true unless the host withholds root or cgroup2 (CI
 * builds and loads the programs; .ci/allowed-skips names such hosts).
 */
int
smcopt_env_skip(const char *why)
{
	const char *ci = getenv("CI");

	if (ci != NULL && strcmp(ci, "true") == 0 &&
	    strcmp(why, "not root") != 0 &&
	    strcmp(why, "cannot mount a cgroup2") != 0) {
		printf("FAIL: %s (a skip is a failure when CI=true)\n", why);
		return EXIT_FAILURE;
	}
	printf("SKIP: %s\n", why);
	return 77;
}

/* Mark the socket fd (SMC_OPT_*): 0 or -errno (smc_opt.c's). */
int
smcopt_mark(struct smcopt_env *e, int fd, unsigned int mark)
{
	return smc_opt_map_mark(e->mark_fd, fd, mark);
}

/* Whether the SYN-ACK of the accepted IPv4 socket fd echoed the option. */
int
smcopt_echoed(struct smcopt_env *e, int fd)
{
	return smc_opt_map_echoed(e->echoed_fd, fd, false) == 1;
}

/*
 * Read one standard CLC message from fd into buf (SMCR_CLC_MSG_MAX bytes):
 * its header, then the rest its length says.  The length, or -1 when the
 * connection ended or the header is none (*decl: why).
 */
int
smcopt_clc_read(int fd, uint8_t *buf, uint8_t *type, uint32_t *decl)
{
	uint16_t length;
	size_t got = 0, want = sizeof(struct clc_hdr);
	ssize_t n;

	*decl = 0;
	while (got < want) {
		n = read(fd, buf + got, want - got);
		if (n <= 0)
			return -1;
		got += (size_t)n;
		if (got == sizeof(struct clc_hdr) && want == got) {
			if (smcr_clc_hdr_check(buf, got, type, &length, decl))
				return -1;
			want = length;
		}
	}
	return (int)want;
}

/* "IPV4:PORT" into sin: 0, or -1. */
int
smcopt_addr4(const char *s, struct sockaddr_in *sin)
{
	char host[64];
	const char *colon = strrchr(s, ':');

	if (colon == NULL || (size_t)(colon - s) >= sizeof(host))
		return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons((uint16_t)atoi(colon + 1));
	return inet_pton(AF_INET, host, &sin->sin_addr) == 1 ? 0 : -1;
}
