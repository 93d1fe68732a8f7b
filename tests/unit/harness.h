/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Daemon A on a worker thread of its own, with the tests' other daemon
 * (a context of link groups on A's event base) beside it on loopdev: the
 * harness of check_session_rdma, check_resume, fuzz_fallback and
 * fuzz_resume.  A's device goes with the test, before the worker's
 * buffer pool (harness_dev_ops); A is waited on from the test thread
 * (harness_wait_*); A stops with its groups gone first (harness_stop).
 * Nothing here fails a test itself: each caller fails its own way on
 * false or -1 (ck_assert, FUZZ_FAIL).
 */
#ifndef SMCPROXYD_HARNESS_H
#define SMCPROXYD_HARNESS_H

#include <sys/socket.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "smcproxyd.h"
#include "lgr.h"
#include "loopnet.h"

static struct dev_ops harness_ops;
static bool harness_devs_freed;

/* The pool's last deregistrations, after the test freed the devices. */
static void
harness_mr_dereg(struct dev *d, struct dev_mr *mr)
{
	if (!harness_devs_freed)
		loopdev_ops.mr_dereg(d, mr);
}

/*
 * loopdev's ops for A's devices, which a caller may change further (a
 * QP creation that fails); harness_stop's devs callback frees them.
 */
static inline struct dev_ops *
harness_dev_ops(void)
{
	harness_ops = loopdev_ops;
	harness_ops.mr_dereg = harness_mr_dereg;
	harness_devs_freed = false;
	return &harness_ops;
}

static inline uint64_t
harness_stat(struct worker *w, enum stats_id id)
{
	return stats_read(worker_stats(w), id);
}

enum harness_cmp { HARNESS_EQ, HARNESS_GE, HARNESS_LE };

/* Whether A's counter or gauge id compares to want within ms. */
static inline bool
harness_wait_stat(struct worker *w, enum stats_id id, enum harness_cmp cmp,
		  uint64_t want, int ms)
{
	uint64_t v;
	int i;

	for (i = 0; i <= ms / 10; i++) {
		v = harness_stat(w, id);
		if (cmp == HARNESS_EQ ? v == want :
		    cmp == HARNESS_GE ? v >= want :
					v <= want)
			return true;
		usleep(10000);
	}
	return false;
}

static void
harness_state_cb(struct worker *wk, void *arg)
{
	struct session *s = worker_sessions(wk);

	*(int *)arg = s != NULL ? (int)s->state : -1;
}

/* The state of A's (first) session; -1 when it has none. */
static inline int
harness_session_state(struct worker *w)
{
	int st;

	worker_call(w, harness_state_cb, &st);
	return st;
}

/* Whether A's session reaches state want (-1: gone) within ms. */
static inline bool
harness_wait_session_state(struct worker *w, int want, int ms)
{
	int i;

	for (i = 0; i <= ms; i++) {
		if (harness_session_state(w) == want)
			return true;
		usleep(1000);
	}
	return false;
}

/*
 * The next connection to listener lfd within ms whose first bytes are
 * eye (4 bytes; NULL: any); others are closed.  fd, or -1.
 */
static inline int
harness_accept(int lfd, int ms, const char *eye)
{
	struct pollfd p = {lfd, POLLIN, 0}, q;
	unsigned char got[4];
	int fd, i;

	for (i = 0; i <= ms / 10; i++) {
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR)
				return -1;
			(void)poll(&p, 1, 10);
			continue;
		}
		if (eye == NULL)
			return fd;
		q.fd = fd;
		q.events = POLLIN;
		q.revents = 0;
		if (poll(&q, 1, ms) == 1 &&
		    recv(fd, got, sizeof(got), MSG_PEEK | MSG_WAITALL) == 4 &&
		    memcmp(got, eye, 4) == 0)
			return fd;
		close(fd);
	}
	return -1;
}

static void
harness_groups_cb(struct worker *wk, void *arg)
{
	*(bool *)arg = TAILQ_EMPTY(&worker_lgr(wk)->lgrs);
}

/*
 * Stop A: close_cb (its sessions, the other daemon's groups) on the
 * worker, then, once the groups are gone (gone_cb sets its bool; NULL:
 * A's groups) or ms passed, devs_cb (which frees the devices and calls
 * harness_devs_gone), and the workers.
 */
static inline void
harness_stop(struct worker *w, worker_fn close_cb, worker_fn gone_cb,
	     worker_fn devs_cb, int ms)
{
	bool gone = false;
	int i;

	worker_call(w, close_cb, NULL);
	for (i = 0; i <= ms && !gone; i++) {
		worker_call(w, gone_cb != NULL ? gone_cb : harness_groups_cb,
			    &gone);
		if (!gone)
			usleep(1000);
	}
	worker_call(w, devs_cb, NULL);
	worker_stop_all(0, NULL);
	worker_exit_all();
	worker_join_all();
}

/* From devs_cb: A's devices are freed, deregistrations do nothing. */
static inline void
harness_devs_gone(struct worker *wk)
{
	worker_lgr(wk)->ndevs = 0;
	harness_devs_freed = true;
}

#endif /* SMCPROXYD_HARNESS_H */
