/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A worker's state, private to worker.c (its thread: start, listeners,
 * reconfiguration, stop) and wctx.c (what every other module asks of a
 * worker: its base, statistics, sessions, pipes, messages).  The rest of
 * the daemon holds struct worker opaque (smcproxyd.h).
 */
#ifndef SMCPROXYD_WORKER_H
#define SMCPROXYD_WORKER_H

#include <pthread.h>

#include "smcproxyd.h"

#define WORKER_PIPE_POOL 64
#define WORKER_MSG_BATCH 64 /* messages per wake-up: the loop stays fair */

struct worker_msg {
	worker_fn fn;
	void *arg;
	pthread_mutex_t *lock; /* set for worker_call: signal when done */
	pthread_cond_t *cond;
	bool *done;
};

enum worker_listen_kind {
	WORKER_LISTEN_RULE, /* rules[].listen: accept_rule */
	WORKER_LISTEN_PEER, /* peer_listen: accept_peer */
	WORKER_LISTEN_SMC,  /* exports[].smc_listen: smcr_accept */
};

struct worker_listener {
	LIST_ENTRY(worker_listener) entry;
	struct listener *l;
	enum worker_listen_kind kind;
	bool seen;
};

struct worker {
	int id;
	pthread_t thread;
	struct event_base *base;
	int msg_fd[2];	/* from the main thread: blocking writes */
	int pass_fd[2]; /* from other workers: never blocks them */
	struct event *msg_ev, *pass_ev;
	struct event *drain_ev;
	struct stats stats;
	struct conf *conf;
	LIST_HEAD(, worker_listener) listeners;
	LIST_HEAD(, session) sessions; /* newest first */
	int nsessions;
	struct accept_strangers strangers; /* peer port: not yet sessions */
	bool draining;
	bool drained;	   /* told the main thread; its own thread writes */
	bool fd_exhausted; /* a session could not get a descriptor */
	int pipes[WORKER_PIPE_POOL][2];
	int pipe_cap[WORKER_PIPE_POOL];
	int npipes;
	/* peer connections not authenticated yet, per source host */
	struct worker_preauth {
		struct addr src;
		int n;
	} * preauth;
	int npreauth_src, preauth_cap;
	int npreauth;
	/* the RDMA side, on this thread: link groups and the data path */
	struct lgr_ctx *lgr;
	struct session_rdma_worker *rdma;
	int npreauth_sessions; /* of npreauth, those that are sessions */
	unsigned pong; /* the last worker_ping_all() its loop answered */
};

/* wctx.c: the workers, and what they share */
extern struct worker *workers;
extern int nworkers;
extern struct auth_limit worker_auth_limit;
extern struct event *worker_done_ev; /* the main thread's, while stopping */

void worker_msg_cb(evutil_socket_t fd, short what, void *arg);
bool worker_preauth_room(struct worker *w);
void worker_drained(struct worker *w);

#endif /* SMCPROXYD_WORKER_H */
