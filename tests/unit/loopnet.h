/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The loopback sockets of the tests that run daemon A against a test-side
 * peer on loopdev (check_session_rdma, fuzz_fallback, fuzz_resume): a
 * listener on 127.0.0.1 at any port, and a connection to one.  Each
 * caller fails its own way on -1 (ck_assert, FUZZ_FAIL).
 */
#ifndef SMCPROXYD_LOOPNET_H
#define SMCPROXYD_LOOPNET_H

#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <string.h>
#include <unistd.h>

/* A non-blocking listener on 127.0.0.1, its port in *port: fd or -1. */
static inline int
loopnet_listen(int *port)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0 ||
	    listen(fd, 1024) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) != 0) {
		close(fd);
		return -1;
	}
	*port = ntohs(sin.sin_port);
	return fd;
}

/* A blocking connection to 127.0.0.1:port: fd or -1. */
static inline int
loopnet_connect(int port)
{
	struct sockaddr_in sin;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

#endif /* SMCPROXYD_LOOPNET_H */
