// SPDX-License-Identifier: BSD-2-Clause
/*
 * Private to the RDMA data path's session files: session_rdma_smcr.c (a
 * kernel peer's open), session_rdma.c (the native in-band open and the
 * relay), resume.c (a connection whose link group ended, moving to a new
 * one or to TCP) and session_rdma_conn.c (what all do to one
 * connection), in that order from the top.  Nothing else includes
 * it; the rest of the daemon sees the opaque names in smcproxyd.h.
 */
#ifndef SMCPROXYD_SESSION_RDMA_H
#define SMCPROXYD_SESSION_RDMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#include "smcproxyd.h"
#include "llc_wire.h"

#define SESSION_RDMA_OPEN_TIMEOUT 330 /* s: > the largest connect_timeout */
#define SESSION_RDMA_WAIT_MS 3000     /* for a link group on its way */
#define SESSION_RDMA_PARKED_MAX 4096  /* connections waiting for one */
#define SESSION_RDMA_REOPENS 3	      /* opens lost with a group, at most */

/* Where a connection goes on its group (session_rdma_join). */
enum session_rdma_join_how {
	SESSION_RDMA_JOIN_LEAST, /* its least used active link */
	SESSION_RDMA_JOIN_ON,	 /* the active link given (the peer's) */
	SESSION_RDMA_JOIN_FIRST, /* a standard group's first, in its setup */
};

/* Sessions in order, linked through their park entry. */
struct session_rdma_queue {
	TAILQ_HEAD(, session) q;
	unsigned int n;
};

/*
 * Registered memory the connections of one peer hold on a worker: a
 * native peer's by its name; a kernel host's (smcr) by its address, its
 * groups' rings included (session_rdma_charge, session_rdma_link_mem).
 */
struct session_rdma_share {
	LIST_ENTRY(session_rdma_share) entry;
	char peer[CONF_NAME_MAX + 1];
	bool smcr;
	struct addr host; /* smcr: the kernel host */
	size_t bytes;
	unsigned int nresuming; /* of its connections, resuming now */
};

struct resume;

/* A worker's RDMA data path state: its lgr_ctx's llc_arg. */
#define SESSION_RDMA_ORIGINS 16 /* CONN_ORIGINs kept until their open */

struct session_rdma_worker {
	struct worker *w;
	struct lgr_ctx *ctx;
	/* session_rdma.c's relay loop, above session_rdma_conn.c's kick */
	void (*run)(struct session_rdma *sr);
	struct buf_pool *pool; /* on every device of the worker's links */
	/* client connections waiting for a group on its way (FIFO) */
	struct session_rdma_queue parked;
	/* taken off parked by a wake-up, each to go on exactly once */
	struct session_rdma_queue woken;
	/* connections whose group ended, both roles (resume.c) */
	TAILQ_HEAD(, resume) resuming;
	unsigned int nresuming;
	uint64_t resume_ends;	 /* resumes ended so far (resume_tick) */
	uint64_t resume_pass;	 /* resume_tick's passes */
	struct event *resume_ev; /* find or set up a group, deadlines */
	/* per peer (buffer_share), per kernel host (buffer_share_per_host) */
	LIST_HEAD(, session_rdma_share) shares;
	struct event *watch_ev; /* each second: peers that consume nothing */
	/* CONN_ORIGINs received, for the CONN_OPENs that follow them */
	struct {
		uint32_t lgr_id; /* 0: free */
		uint32_t token;
		struct fb_origin origin;
	} origins[SESSION_RDMA_ORIGINS];
	unsigned int origins_next;
};

struct session_rdma {
	/* NULL once s closed with its CONN_OPEN unanswered: sr waits for
	 * the answer alone (session_rdma_await_answer) */
	struct session *s;
	unsigned long long id; /* s's: names sr in the log after s went */
	struct session_rdma_worker *srw;
	struct lgr_conn lc;		/* membership of the link group */
	struct rconn *rc;		/* once accepted */
	struct buf *sndbuf, *rmb;	/* until rc takes them over */
	uint32_t peer_token;		/* ours: lc.token */
	struct rconn_peer_rmb peer_rmb; /* export side: from CONN_OPEN */
	int t;				/* index of the TCP socket in fd[] */
	bool answered;			/* export side: ACCEPT or REJECT sent */
	struct lgr_link *open_link;	/* export side: CONN_OPEN came here */
	bool rd_eof;			/* TCP EOF read, DONE_WRITING asked */
	bool rd_blocked;		/* ring full: until tx_space_ready */
	/* autocork at the door (tx_cork_door): reading paused, its event
	 * off; and whether the socket was read dry since the last bytes */
	bool rd_corked, rd_dry;
	bool peer_done; /* peer_done_writing told */
	bool wr_shut;	/* shutdown(SHUT_WR) of the TCP side */
	bool fin_set;
	enum session_reason fin_reason; /* which side finished first */
	bool closing;
	enum session_reason close_reason;
	struct lgr_link *failover_to; /* link_down: move there */
	bool in_run, again;
	struct llc_pending llc; /* our LLC message waiting for a TX slot */
	/* its sender's next step once it went (session_rdma_conn_llc_send) */
	void (*llc_then)(struct session_rdma *sr, int status);
	/* keys per link (see the top of session_rdma.c): the peer's are
	 * its group's (lgr_conn_peer_rkey) */
	uint8_t told[LGR_LINK_SLOTS]; /* links the peer has our rkey for */
	bool opened;		      /* CONN_OPEN / CONN_ACCEPT went out */
	bool rkeys_owed;	      /* announce once llc went out */
	uint8_t resume_id[LLC_RESUME_ID_LEN]; /* all zero: cannot resume */
	struct resume *res;		  /* only while resuming (resume.c) */
	struct session_rdma_share *share; /* charged charge bytes there */
	size_t charge;
	/* our bytes wait for the peer's window: since when it consumed
	 * nothing, and how much it had consumed then (session_rdma_watch) */
	uint64_t stuck_since_ms, stuck_cons;
	/* resumed over TCP: fd[1 - t] carries it for the rest of its life */
	bool over_tcp;
	bool tcp_eof;  /* the peer's FIN came */
	bool tcp_shut; /* ours went: shutdown(SHUT_WR) */
	/* the SMC-R dialect: a kernel peer's connection, opened by its
	 * own CLC (smcr.c) on a group of its own until the link is up */
	bool smcr;
	bool rmb_told; /* its RMB element's rkey went to the peer */
};

/* session_rdma_conn.c: one connection, for session_rdma.c and resume.c */
unsigned long long session_rdma_conn_id(const struct session_rdma *sr);
const struct dev_mr *session_rdma_conn_mr(struct session_rdma_worker *srw,
					  struct buf *b,
					  const struct lgr_link *link);
struct buf *session_rdma_conn_rmb(const struct session_rdma *sr);
void session_rdma_conn_told_set(struct session_rdma *sr, uint8_t link_id);
void session_rdma_conn_rkeys_announce(struct session_rdma *sr);
void session_rdma_conn_kick(struct session_rdma *sr);
void session_rdma_conn_fail(struct session_rdma *sr, enum session_reason r);
int session_rdma_conn_llc_send(struct session_rdma *sr, struct lgr_link *link,
			       const struct llc_info *m,
			       void (*then)(struct session_rdma *sr,
					    int status));
int session_rdma_conn_reject(struct lgr_link *link, uint32_t opener_token,
			     enum session_reason r);

/* resume.c */
bool resume_begin(struct session_rdma *sr, const struct lgr *from, bool ended);
void resume_end(struct session_rdma *sr);
void resume_fail(struct session_rdma *sr, enum stats_id stat, const char *why);
bool resume_waiting(const struct session_rdma *sr);
void resume_timeout(struct session_rdma *sr);
void resume_peer(struct session_rdma_worker *srw, struct lgr *lgr, bool failed);
void resume_rx(struct session_rdma_worker *srw, struct lgr_link *link,
	       const struct llc_info *m);
void resume_tick(evutil_socket_t fd, short what, void *arg);
bool resume_tcp_io(struct session_rdma *sr, int i, short what);
bool resume_tcp_relay(struct session_rdma *sr);
void resume_json(const struct session_rdma *sr, struct json_t *o);

/*
 * session_rdma.c's pieces that session_rdma_smcr.c (the SMC-R
 * dialect's open) takes as the native open does.
 */
extern const struct session_ops session_rdma_session_ops;
struct session_rdma *session_rdma_new(struct session *s,
				      struct session_rdma_worker *srw);
int session_rdma_join(struct session_rdma *sr, struct lgr *lgr,
		      enum session_rdma_join_how how, struct lgr_link *link);
void session_rdma_free(struct session_rdma *sr);
void session_rdma_wait(struct session_rdma_worker *srw, struct session *s,
		       const struct conf_peer *peer, const struct lgr *lgr,
		       void (*wake)(struct session *s));
void session_rdma_unpark(struct session_rdma_worker *srw, struct session *s);
void session_rdma_relay_start(struct session_rdma *sr, struct lgr_link *link);
uint8_t session_rdma_rmbe_size(size_t size);

/* Its session closed with its CONN_OPEN unanswered: sr waits alone for
 * the answer, which only frees it (session_rdma_await_answer). */
static inline bool
session_rdma_waiting_alone(const struct session_rdma *sr)
{
	return sr->s == NULL;
}

#endif /* SMCPROXYD_SESSION_RDMA_H */
