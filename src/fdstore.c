// SPDX-License-Identifier: BSD-2-Clause
/*
 * Listening sockets that outlive the process: under systemd each one is
 * handed to the service manager's file descriptor store (FDSTORE=1, the
 * unit's FileDescriptorStoreMax=) under a name that says what it is, and
 * a restart's next process takes them back (LISTEN_FDS, LISTEN_FDNAMES)
 * instead of binding anew.  The kernel's accept queue lives in the
 * socket, and systemd holds a copy of every one while no process does:
 * clients that connect between the old process's stop and the new one's
 * start wait in that queue and are accepted, not refused.
 *
 * A name is "KIND-WORKER-ADDRESS" ("rule-0-127.0.0.1_6380", "peer-1-...",
 * "metrics-..." without a worker), the address with ':' written as '_'
 * (LISTEN_FDNAMES separates names by ':').  A socket is kept by address,
 * as worker.c keeps a rule's listeners across a reload by address; the
 * name therefore stays the socket's as long as the socket lives.  Every
 * worker's own socket (SO_REUSEPORT) is stored, not one per address: the
 * connections already queued on a socket that was not stored would be
 * lost with it.
 *
 * A socket taken back must be bound to the address its name says and
 * listen (getsockname, SO_ACCEPTCONN); whatever the configuration no
 * longer wants is closed and removed from the store (FDSTOREREMOVE=1) once
 * the listeners are up.  A listener closed for good (a rule removed or
 * disabled) is removed from the store too; a stop keeps them all there.
 * Without NOTIFY_SOCKET nothing is stored; without LISTEN_FDS nothing is
 * taken: every socket is bound as before.
 */
#include <sys/socket.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "smcproxyd.h"

struct fdstore_fd {
	int fd; /* -1 once taken or closed */
	char name[FDSTORE_NAME_MAX];
	struct addr addr; /* bound to; len 0 when not a listening socket */
};

/* The sockets handed to us at start; taken by the main thread while the
 * listeners open, then by no one (the lock covers reloads' look-ups). */
static pthread_mutex_t fdstore_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fdstore_fd *fdstore_fds;
static int fdstore_nfds;

/* Where fd is bound, if it is a listening stream socket; else len 0. */
static void
fdstore_bound(int fd, struct addr *a)
{
	int type = 0, acc = 0;
	socklen_t len = sizeof(type);

	memset(a, 0, sizeof(*a));
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) ||
	    type != SOCK_STREAM)
		return;
	len = sizeof(acc);
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &len) || !acc)
		return;
	a->len = sizeof(a->ss);
	if (getsockname(fd, (struct sockaddr *)&a->ss, &a->len) ||
	    (a->ss.ss_family != AF_INET && a->ss.ss_family != AF_INET6))
		a->len = 0;
}

/*
 * The name of the socket of kind ("rule", "peer", "metrics") that worker
 * (-1: none) listens with on a, in buf.
 */
void
fdstore_name(char *buf, size_t len, const char *kind, int worker,
	     const struct addr *a)
{
	char as[ADDR_STRLEN], *p;

	addr_str(a, as, sizeof(as));
	for (p = as; *p != '\0'; p++)
		if (*p == ':')
			*p = '_';
	if (worker >= 0)
		snprintf(buf, len, "%s-%d-%s", kind, worker, as);
	else
		snprintf(buf, len, "%s-%s", kind, as);
}

/*
 * At start, before any listener opens and before a thread starts: take
 * the sockets systemd passes (LISTEN_FDS, LISTEN_FDNAMES; the variables
 * are unset).  On failure (logged) every listener binds anew.
 */
void
fdstore_init(void)
{
	char **names = NULL;
	int i, n;

	n = sd_listen_fds_with_names(1, &names);
	if (n < 0)
		log_warnx("fd store: LISTEN_FDS: %s", strerror(-n));
	if (n <= 0)
		return;
	fdstore_fds = calloc((size_t)n, sizeof(*fdstore_fds));
	if (fdstore_fds == NULL) {
		log_warnx("fd store: out of memory: closing the %d sockets "
			  "passed",
			  n);
		for (i = 0; i < n; i++)
			close(SD_LISTEN_FDS_START + i);
	}
	for (i = 0; i < n && fdstore_fds != NULL; i++) {
		struct fdstore_fd *s = &fdstore_fds[i];

		s->fd = SD_LISTEN_FDS_START + i;
		snprintf(s->name, sizeof(s->name), "%s",
			 names != NULL && names[i] != NULL ? names[i] : "");
		(void)fcntl(s->fd, F_SETFD, FD_CLOEXEC);
		(void)fcntl(s->fd, F_SETFL, fcntl(s->fd, F_GETFL) | O_NONBLOCK);
		fdstore_bound(s->fd, &s->addr);
	}
	for (i = 0; names != NULL && i < n; i++)
		free(names[i]);
	free(names);
	if (fdstore_fds == NULL)
		return;
	fdstore_nfds = n;
	log_info("%d listening socket%s passed by the service manager", n,
		 n == 1 ? "" : "s");
}

/*
 * The socket passed at start under name, when it listens on a (it is
 * ours now: non-blocking, close-on-exec), else -1: bind a new one.
 */
int
fdstore_take(const char *name, const struct addr *a)
{
	int i, fd = -1;

	pthread_mutex_lock(&fdstore_lock);
	for (i = 0; i < fdstore_nfds && fd < 0; i++) {
		struct fdstore_fd *s = &fdstore_fds[i];

		if (s->fd < 0 || strcmp(s->name, name) != 0 ||
		    s->addr.len == 0 || !addr_equal(&s->addr, a))
			continue;
		fd = s->fd;
		s->fd = -1;
	}
	pthread_mutex_unlock(&fdstore_lock);
	if (fd >= 0)
		log_debug("fd store: %s: taken over (fd %d)", name, fd);
	return fd;
}

/*
 * Whether a socket passed at start and not taken yet listens on a: a
 * probe of a (listener_probe) would find it taken by ourselves.
 */
bool
fdstore_holds(const struct addr *a)
{
	bool held = false;
	int i;

	pthread_mutex_lock(&fdstore_lock);
	for (i = 0; i < fdstore_nfds && !held; i++)
		held = fdstore_fds[i].fd >= 0 && fdstore_fds[i].addr.len &&
		       addr_equal(&fdstore_fds[i].addr, a);
	pthread_mutex_unlock(&fdstore_lock);
	return held;
}

/*
 * Once every listener is open: close the passed sockets none took (a
 * rule gone, a listen address changed, fewer workers) and remove them
 * from the store, so that nobody's connection waits in a queue no one
 * accepts from.
 */
void
fdstore_close_unused(void)
{
	int i;

	pthread_mutex_lock(&fdstore_lock);
	for (i = 0; i < fdstore_nfds; i++) {
		struct fdstore_fd *s = &fdstore_fds[i];

		if (s->fd < 0)
			continue;
		log_info("fd store: closing %s: %s", s->name[0] ? s->name : "?",
			 s->addr.len ? "no listener of this configuration "
				       "takes it" :
				       "not a listening TCP socket");
		fdstore_forget(s->name);
		close(s->fd);
		s->fd = -1;
	}
	free(fdstore_fds);
	fdstore_fds = NULL;
	fdstore_nfds = 0;
	pthread_mutex_unlock(&fdstore_lock);
}

/*
 * Hand a copy of listening socket fd to the service manager's store
 * under name (nothing when not under one).  Storing one twice is
 * harmless: systemd keeps one copy of a socket.
 */
void
fdstore_keep(const char *name, int fd)
{
	char state[FDSTORE_NAME_MAX + 32];
	int rc;

	if (getenv("NOTIFY_SOCKET") == NULL)
		return;
	snprintf(state, sizeof(state), "FDSTORE=1\nFDNAME=%s", name);
	rc = sd_pid_notify_with_fds(0, 0, state, &fd, 1);
	if (rc < 0)
		log_warnx("fd store: %s: %s", name, strerror(-rc));
}

/* Remove the socket(s) stored under name: it closes for good. */
void
fdstore_forget(const char *name)
{
	char state[FDSTORE_NAME_MAX + 32];
	int rc;

	if (getenv("NOTIFY_SOCKET") == NULL)
		return;
	snprintf(state, sizeof(state), "FDSTOREREMOVE=1\nFDNAME=%s", name);
	rc = sd_notify(0, state);
	if (rc < 0)
		log_warnx("fd store: %s: %s", name, strerror(-rc));
}
