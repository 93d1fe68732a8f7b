// SPDX-License-Identifier: BSD-2-Clause
/*
 * The TCP sockets every module opens the same way: the one outgoing
 * connect (a fallback or resume to a peer daemon, a target, a link
 * group's control connection), the liveness every long-lived one gets,
 * and the close that the other end sees as a reset.
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <errno.h>
#include <unistd.h>

#include "smcproxyd.h"
#include "smc_opt.h"

/*
 * fd is a TCP connection to a peer daemon or a target: a far end that
 * vanishes without a FIN or reset (host down, cable, NAT state gone)
 * must not pin it forever.  Keepalive after tcp_keepalive seconds of
 * silence (3 probes, a third of that apart) and TCP_USER_TIMEOUT for
 * data that is never acknowledged.  Best effort: a socket that is not
 * TCP ignores it.
 */
void
sock_tcp_liveness(int fd, const struct conf *conf)
{
	int one = 1, idle = conf->tcp_keepalive, cnt = 3, intvl;
	unsigned int ms = (unsigned int)conf->tcp_user_timeout * 1000;

	if (idle > 0) {
		intvl = idle / 3 > 0 ? idle / 3 : 1;
		(void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one,
				 sizeof(one));
		(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle,
				 sizeof(idle));
		(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl,
				 sizeof(intvl));
		(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt,
				 sizeof(cnt));
	}
	if (ms > 0)
		(void)setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms,
				 sizeof(ms));
}

/*
 * Start a TCP connection to to, without waiting: a non-blocking socket
 * with TCP_NODELAY and conf's liveness, in *fd (-1 when none could be
 * made), leaving from the host of from when it is set (len != 0; a
 * peer's source: a host that lacks it gives -EADDRNOTAVAIL), its SYN
 * carrying the SMC-R option when smc and the option's program is
 * attached (smc_opt.c).  0 when it connected at once, -EINPROGRESS when
 * EV_WRITE will say how it ended (SO_ERROR), else -errno: then the
 * caller closes *fd when there is one.
 */
int
sock_connect(const struct addr *to, const struct addr *from,
	     const struct conf *conf, bool smc, int *fd)
{
	int one = 1, rc;

	*fd = socket(to->ss.ss_family,
		     SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (*fd == -1)
		return -errno;
	(void)setsockopt(*fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	sock_tcp_liveness(*fd, conf);
	if (from != NULL && from->len != 0 &&
	    (rc = addr_bind_source(*fd, from)) < 0)
		return rc;
	if (smc && smc_opt_attached() &&
	    (rc = smc_opt_mark(*fd, SMC_OPT_CONNECT)) < 0)
		return rc;
	if (connect(*fd, (const struct sockaddr *)&to->ss, to->len) == -1)
		return -errno;
	return 0;
}

/* Close fd so that the other end sees a reset, not a FIN. */
void
sock_reset(int fd)
{
	struct linger lg = {1, 0};

	if (fd < 0)
		return;
	(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
}
