// SPDX-License-Identifier: BSD-2-Clause
/*
 * smcpreload.so: an LD_PRELOAD library that turns a program's TCP sockets
 * into the kernel's SMC sockets, as smc-tools' smc_run does, so that xfer,
 * sockperf, redis-server and redis-benchmark run over Linux's own SMC-R
 * unchanged (issue 31: kernel SMC-R as a test peer and a baseline).
 *
 *   LD_PRELOAD=tests/tools/smcpreload.so xfer client -c 10.99.0.2:7000
 *
 * socket(AF_INET or AF_INET6, SOCK_STREAM, 0 or IPPROTO_TCP) becomes
 * socket(same, same, IPPROTO_SMC): Linux 6.11 and later, smc loaded.  An
 * older kernel (Linux 6.1, the ksmc61.rxe lane's) has no IPPROTO_SMC
 * (EPROTONOSUPPORT): there it becomes socket(AF_SMC, same, SMCPROTO_SMC
 * or SMCPROTO_SMC6), smc-tools' smc_run's way, the same SMC socket behind
 * the older address family (it takes and gives AF_INET/AF_INET6
 * addresses).  The kernel then tries SMC-R on connect and listen and falls
 * back to TCP on the same socket by itself when the peer or the path
 * cannot do it; a test proves which one happened from the kernel's SMC
 * statistics (tests/tools/smcnl stats), not from this library.  A kernel
 * with neither (no smc module) makes socket() fail with its error (said
 * once on stderr): a measurement must never pass off TCP as SMC-R.
 *
 * Built without the sanitizers: it is loaded into programs that may have
 * none (a sanitized program needs ASAN_OPTIONS=verify_asan_link_order=0,
 * since the runtime is then not first in the library list).
 */
#include <sys/socket.h>
#include <sys/syscall.h>
#include <netinet/in.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifndef IPPROTO_SMC
#define IPPROTO_SMC 256
#endif

#ifndef AF_SMC
#define AF_SMC 43
#endif
/* AF_SMC's protocols (linux/smc.h's values, net/smc/smc.h) */
#define SMCPROTO_SMC 0
#define SMCPROTO_SMC6 1

#define SOCK_TYPE_MASK 0xf

int socket(int domain, int type, int protocol);

/* The system call itself: libc's socket() is the symbol we replace. */
static int
smcpreload_sys_socket(int domain, int type, int protocol)
{
	return (int)syscall(SYS_socket, domain, type, protocol);
}

/* socket(2), with TCP replaced by SMC. */
int
socket(int domain, int type, int protocol)
{
	static int said, af_smc;
	int fd, err;

	if ((domain != AF_INET && domain != AF_INET6) ||
	    (type & SOCK_TYPE_MASK) != SOCK_STREAM ||
	    (protocol != 0 && protocol != IPPROTO_TCP))
		return smcpreload_sys_socket(domain, type, protocol);
	fd = af_smc ? -1 : smcpreload_sys_socket(domain, type, IPPROTO_SMC);
	if (fd < 0 && (af_smc || errno == EPROTONOSUPPORT)) {
		/* before Linux 6.11: the same socket under AF_SMC */
		fd = smcpreload_sys_socket(AF_SMC, type,
					   domain == AF_INET6 ? SMCPROTO_SMC6 :
								SMCPROTO_SMC);
		if (fd >= 0)
			af_smc = 1;
	}
	if (fd < 0 && !said) {
		err = errno;
		said = 1;
		fprintf(stderr,
			"smcpreload: socket(%s, SOCK_STREAM, IPPROTO_SMC) "
			"and socket(AF_SMC, SOCK_STREAM, ...): %s "
			"(needs the smc module loaded)\n",
			domain == AF_INET ? "AF_INET" : "AF_INET6",
			strerror(err));
		errno = err;
	}
	return fd;
}
