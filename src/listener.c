// SPDX-License-Identifier: BSD-2-Clause
/*
 * Listening sockets.  Every worker opens its own socket on each listen
 * address with SO_REUSEPORT, so the kernel spreads new connections over
 * the workers and no accept lock is shared.  On EMFILE/ENFILE accepting
 * pauses for a second (counted) instead of spinning.  Under systemd each
 * socket is also in the service manager's store (fdstore.c), and a
 * restart's next process listens with the same socket.
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "smcproxyd.h"
#include "smc_opt.h"

#define LISTENER_BACKLOG 4096

struct listener {
	struct worker *w;
	int fd;
	struct addr addr;
	char name[FDSTORE_NAME_MAX]; /* in systemd's store */
	struct event *ev;
	struct event *pause_ev;
	void (*cb)(struct worker *, int, void *);
	void *arg;
	bool (*room)(struct worker *); /* NULL: always */
};

#define LISTENER_ROOM_WAIT_MS 50 /* no room: look again after this */

/* A socket bound to addr (listening when backlog), shared with our other
 * workers' (SO_REUSEPORT) when share, marked for the SMC-R option's BPF
 * program (smc_opt.c) before it listens when smc.  fd or -errno. */
static int
listener_socket(const struct addr *addr, int backlog, bool share, bool smc)
{
	int fd, one = 1;

	fd = socket(addr->ss.ss_family,
		    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    (share &&
	     setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one))))
		goto fail;
	if (addr->ss.ss_family == AF_INET6 &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)))
		goto fail;
	if (bind(fd, (const struct sockaddr *)&addr->ss, addr->len))
		goto fail;
	/* without the program, the listener serves as plain TCP */
	if (smc && smc_opt_attached() && smc_opt_mark(fd, SMC_OPT_LISTEN) < 0)
		log_warnx("listener: cannot mark the socket for the SMC-R "
			  "option");
	if (backlog && listen(fd, backlog))
		goto fail;
	return fd;
fail:
	one = -errno;
	close(fd);
	return one;
}

static void
listener_resume(evutil_socket_t fd, short what, void *arg)
{
	struct listener *l = arg;

	event_add(l->ev, NULL);
}

static void
listener_accept(evutil_socket_t lfd, short what, void *arg)
{
	struct listener *l = arg;
	struct timeval second = {1, 0};
	char buf[ADDR_STRLEN];
	int fd, i;

	/* a bounded batch keeps one busy listener from starving the rest */
	for (i = 0; i < 64; i++) {
		if (l->room != NULL && !l->room(l->w)) {
			/* the rest wait in the listen queue, not reset */
			struct timeval tv = {0, LISTENER_ROOM_WAIT_MS * 1000};

			STATS_INC(worker_stats(l->w), preauth_full);
			event_del(l->ev);
			evtimer_add(l->pause_ev, &tv);
			return;
		}
		fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			l->cb(l->w, fd, l->arg);
			if (!worker_fd_exhausted_take(l->w))
				continue;
			errno = EMFILE;
		}
		switch (errno) {
		case EINTR:
		case ECONNABORTED:
			continue;
		case EAGAIN:
			return;
		case EMFILE:
		case ENFILE:
		case ENOBUFS:
		case ENOMEM:
			log_warn("worker %d listener %s: pausing 1 s",
				 worker_id(l->w),
				 addr_str(&l->addr, buf, sizeof(buf)));
			STATS_INC(worker_stats(l->w), accept_pauses);
			event_del(l->ev);
			evtimer_add(l->pause_ev, &second);
			return;
		default:
			log_warn("listener: accept");
			return;
		}
	}
}

/*
 * Listen on addr in worker w, with the socket of that kind ("rule",
 * "peer", "smc") the service manager passed at start when there is one,
 * else a new one, which goes to its store; cb(w, fd, arg) gets each
 * accepted socket (non-blocking).  smc: SYN-ACKs echo the SMC-R option of
 * a kernel SMC-R client's SYN (an export's smc_listen).  NULL on failure,
 * with errno set and logged.
 */
struct listener *
listener_new(struct worker *w, const struct addr *addr, const char *kind,
	     bool smc, void (*cb)(struct worker *, int, void *), void *arg)
{
	struct listener *l;
	char buf[ADDR_STRLEN], name[FDSTORE_NAME_MAX];
	int fd;

	fdstore_name(name, sizeof(name), kind, worker_id(w), addr);
	fd = fdstore_take(name, addr);
	/* a socket from the store listens already: known to the program
	 * by its address (smc_opt_listen), its header callbacks still on */
	if (fd >= 0 && smc && smc_opt_attached())
		(void)smc_opt_listening(fd);
	if (fd < 0)
		fd = listener_socket(addr, LISTENER_BACKLOG, true, smc);
	if (fd < 0) {
		errno = -fd;
		log_warn("worker %d: listen on %s", worker_id(w),
			 addr_str(addr, buf, sizeof(buf)));
		return NULL;
	}
	l = calloc(1, sizeof(*l));
	if (l == NULL)
		goto fail;
	l->w = w;
	l->fd = fd;
	l->addr = *addr;
	snprintf(l->name, sizeof(l->name), "%s", name);
	l->cb = cb;
	l->arg = arg;
	l->ev = event_new(worker_base(w), fd, EV_READ | EV_PERSIST,
			  listener_accept, l);
	l->pause_ev = evtimer_new(worker_base(w), listener_resume, l);
	if (l->ev == NULL || l->pause_ev == NULL || event_add(l->ev, NULL))
		goto fail;
	fdstore_keep(l->name, fd);
	return l;
fail:
	if (l != NULL) {
		if (l->ev)
			event_free(l->ev);
		if (l->pause_ev)
			event_free(l->pause_ev);
		free(l);
	}
	fdstore_forget(name);
	close(fd);
	errno = ENOMEM;
	return NULL;
}

/* Change what accepted connections are handed with (after a reload). */
void
listener_set_arg(struct listener *l, void *arg)
{
	l->arg = arg;
}

/*
 * Accept only while room(w) says so; else stop for a moment and leave
 * the connections queued in the kernel (the peer port while the strangers'
 * budget is full).
 */
void
listener_set_room(struct listener *l, bool (*room)(struct worker *))
{
	l->room = room;
}

const struct addr *
listener_addr(const struct listener *l)
{
	return &l->addr;
}

/*
 * Stop listening.  keep_stored (a stop): the copy in systemd's store
 * keeps the socket and its queue for the next process.  Else the socket
 * leaves the store too and closes: queued connections not yet accepted
 * are reset, new ones refused.
 */
void
listener_free(struct listener *l, bool keep_stored)
{
	if (l == NULL)
		return;
	event_free(l->ev);
	event_free(l->pause_ev);
	if (!keep_stored)
		fdstore_forget(l->name);
	close(l->fd);
	free(l);
}

/*
 * Is addr free of every listener, ours included?  Binds a socket without
 * SO_REUSEPORT and without listening: a socket that listens there makes
 * it fail with EADDRINUSE, also one with SO_REUSEPORT, which our own
 * listeners would otherwise share with silently (another smcproxyd left
 * running with the same addresses would take every other connection).
 * Call it before our own sockets exist on addr.  0 or -errno.
 */
int
listener_probe(const struct addr *addr)
{
	int fd = listener_socket(addr, 0, false, false);

	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}
