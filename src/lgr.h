// SPDX-License-Identifier: BSD-2-Clause
/*
 * Private to the link groups: lgr.c, lgr_smcr.c, lgr_check.c, llc.c and
 * clc.c (and the tests that build groups on loopdev), as net/smc's
 * smc_core.h.  A group, its links and a context of groups; everybody
 * else holds them opaque and uses the lgr_* functions of smcproxyd.h.
 */
#ifndef SMCPROXYD_LGR_H
#define SMCPROXYD_LGR_H

#include <stdbool.h>
#include <stdint.h>

#include "smcproxyd.h"
#include "llc_wire.h"

#define LGR_DEVS_MAX 8
#define LGR_LLC_QUEUE 8	     /* LLC messages waiting for a TX slot */
#define LGR_TOKEN_BUCKETS 64 /* connection lookup by token (<= 255 each) */

enum lgr_state {
	LGR_STATE_CLC,	      /* CLC handshake on the control connection */
	LGR_STATE_CONFIRMING, /* first link: CONFIRM_LINK under way */
	LGR_STATE_ACTIVE,
	LGR_STATE_TERMINATING, /* DELETE_LINK sent; freed soon */
};

enum lgr_link_state {
	LGR_LINK_FREE,	     /* slot unused */
	LGR_LINK_INIT,	     /* QP created, not connected */
	LGR_LINK_ADDING,     /* server: ADD_LINK sent, awaiting the answer */
	LGR_LINK_CONFIRMING, /* QP connected, CONFIRM_LINK under way */
	LGR_LINK_ACTIVE,
	LGR_LINK_DOWN, /* failed or deleted; freed soon */
};

/* What an LLC flow on a link waits for (link->deadline_ms bounds it). */
enum lgr_link_wait {
	LGR_WAIT_NONE,
	LGR_WAIT_CONFIRM_REQ,  /* client: CONFIRM_LINK request */
	LGR_WAIT_CONFIRM_RESP, /* server: CONFIRM_LINK response */
	LGR_WAIT_ADD_RESP,     /* server: ADD_LINK response */
};

/* A device port links can use; local.len == 0: for any local address. */
struct lgr_dev {
	const struct dev_ops *ops;
	struct dev *dev;
	char name[32];
	struct addr local;
	bool owned; /* opened by us (ib_dev_open): closed by us */
};

struct lgr_llc_qent {
	uint8_t msg[LLC_MSG_LEN];
	wr_tx_done_fn done;
	void *arg;
};

struct lgr_link {
	struct lgr *lgr;
	enum lgr_link_state state;
	enum lgr_link_wait wait;
	uint8_t id; /* link_num on the wire; 0 until known */
	int slot;
	const struct lgr_dev *dev;
	struct dev *pd; /* its group's protection domain on dev */
	struct wr_link *wr;
	struct dev_qp_addr local, peer;
	uint64_t deadline_ms; /* of wait */
	uint64_t up_ms;
	uint64_t down_ms; /* freed once its sends have flushed */
	uint64_t act_ms;  /* last sign of life (completions moved) */
	uint64_t act_completions;
	bool test_pending;
	uint64_t test_deadline_ms;
	uint8_t test_data[16];
	uint64_t test_sent, test_answered;
	uint64_t test_sent_us; /* now_us() of the pending TEST_LINK */
	uint64_t test_rtt_us;  /* the last answered one's round trip; 0: none */
	int conns;
	size_t mem; /* its rings' bytes, charged (lgr_data_ops.link_mem) */
	struct wr_waiter waiter; /* parked for a TX slot (LLC queue) */
	struct lgr_llc_qent q[LGR_LLC_QUEUE];
	int q_head, q_len;
};

/*
 * rtoken.c: the peer's RMBs by their rkeys and addresses on each link of
 * a group, in both dialects (a row per RMB, on the links it is told for)
 */
#define RTOKEN_LINKS (LGR_LINK_SLOTS + 1) /* the ids a row keeps */
#define RTOKEN_MAX 255			  /* RMBs per group, as Linux */
struct rtoken_on {
	uint8_t link_id; /* 0: unused */
	uint32_t rkey;
	uint64_t vaddr; /* 0 where only the rkey was told */
};
struct rtoken {
	struct rtoken_on on[RTOKEN_LINKS];
};
struct rtoken_table {
	struct rtoken *v;
	int n, cap;
};
int rtoken_add(struct rtoken_table *t, uint8_t id, uint32_t rkey,
	       uint64_t vaddr);
int rtoken_set(struct rtoken_table *t, uint8_t id, uint32_t rkey,
	       uint64_t vaddr, uint8_t id2, uint32_t rkey2, uint64_t vaddr2);
int rtoken_del(struct rtoken_table *t, uint8_t id, uint32_t rkey,
	       uint64_t vaddr);
int rtoken_get(const struct rtoken_table *t, uint8_t id, uint32_t rkey,
	       uint64_t vaddr, uint8_t want, uint32_t *rkey_out,
	       uint64_t *vaddr_out);
void rtoken_drop_link(struct rtoken_table *t, uint8_t id);
void rtoken_free(struct rtoken_table *t);
void rtoken_link_new(struct lgr *lgr, uint8_t id);
void rtoken_conn_gone(struct lgr_conn *c);
struct llc_v2_info;
int rtoken_confirm_rkey(struct lgr_link *link, const struct llc_info *m);
void rtoken_delete_rkey(struct lgr_link *link, const struct llc_info *m);
void rtoken_add_link_rkeys(struct lgr_link *via, struct lgr_link *added,
			   const struct llc_v2_info *v);

TAILQ_HEAD(lgr_conns, lgr_conn);
LIST_HEAD(lgr_conn_bucket, lgr_conn);

struct lgr {
	TAILQ_ENTRY(lgr) entry; /* ctx->lgrs */
	struct lgr_ctx *ctx;
	uint32_t id;
	enum lgr_role role;
	enum lgr_state state;
	struct conf *conf; /* held: peer points into it */
	const struct conf_peer *peer;
	uint8_t peer_system_id[8];
	uint8_t uid[4];	   /* CONFIRM_LINK link_uid: the server's */
	uint8_t max_conns; /* negotiated */
	uint8_t max_links;
	uint32_t features;
	uint32_t token, peer_token; /* alert tokens from CLC */
	uint8_t peer_rmbe_size;
	struct lgr_link link[LGR_LINK_SLOTS];
	/* the group's own protection domain per device (ctx->devs[i]) */
	struct dev *pd[LGR_DEVS_MAX];
	uint8_t next_link_id;
	int nconns;
	struct lgr_conns conns;
	struct lgr_conn_bucket by_token[LGR_TOKEN_BUCKETS];
	struct clc_conn *clc; /* the control connection */
	struct event *tick;
	uint64_t created_ms, active_ms, idle_since_ms, next_add_ms;
	uint64_t term_deadline_ms; /* DELETE_LINK ALL given until then */
	uint64_t dead_ms;	   /* done with: freed after the flush */
	uint32_t term_reason;
	int term_conns;	 /* connections it had when it ended */
	bool counted_up; /* in lgr_created and the peer's count */
	/* it ended in a way its connections may resume from (not orderly,
	 * no protocol violation: the peer daemon may still have them) */
	bool resumable;
	bool refused;	      /* client: the peer port refused us */
	bool counted_server;  /* in its peer's server_lgrs */
	bool for_resume;      /* client: set up to resume on */
	bool tcp_connected;   /* client: the peer port answered */
	bool smcr;	      /* SMC-R dialect: a kernel SMC-R peer */
	uint8_t smcr_release; /* its SMC-Rv2 release: 0 waits for ADD_LINK */
	uint8_t smcr_gid[16]; /* the GID the peer's CLC gave */
	/* the peer's TCP address at first contact (its port unused): only
	 * connections with that host join the group */
	struct addr smcr_host;
	uint8_t smcr_eid[32]; /* the EID its first CLC agreed on */
	bool smcr_offered;    /* server: our ADD_LINK without a link is out */
	struct rtoken_table rtokens; /* the peer's RMBs per link (rtoken.c) */
	/* the server's worker + 1 (0: unknown); a client's wish for it */
	uint8_t peer_worker, want_worker;
};

/*
 * What llc.c tells the groups of their links and of the peer's LLC
 * requests: lgr.c's handlers, which lgr_ctx_new sets in ctx->llc_ops.  The
 * LLC sits below the groups and calls up only through these, as the
 * data path hears of the groups through lgr_data_ops.
 */
struct lgr_llc_ops {
	/* CONFIRM_LINK went through on link: it is active */
	void (*link_confirmed)(struct lgr_link *link);
	/* link is lost or deleted (reason: LLC_DEL_*); the group fails over */
	void (*link_fail)(struct lgr_link *link, uint32_t reason, bool by_peer,
			  const char *why);
	/* the LLC flow link->wait names did not finish by its deadline */
	void (*link_timeout)(struct lgr_link *link);
	/* client: the server's ADD_LINK; our new link, or NULL to reject */
	struct lgr_link *(*link_add_peer)(struct lgr *lgr, uint8_t link_num,
					  const struct dev_qp_addr *peer);
	/* server: the client's answer to our ADD_LINK for link */
	int (*link_add_answer)(struct lgr_link *link,
			       const struct dev_qp_addr *peer);
	void (*link_add_rejected)(struct lgr_link *link);
	/*
	 * The rkeys of the peer's RMBs on other links (rtoken.c), as its
	 * CONFIRM_RKEY on link tells them in both dialects (0, or -errno:
	 * refused; -EPROTO in ours ends the group), and a kernel peer's
	 * ADD_LINK for added (over via); its DELETE_RKEY drops them.
	 */
	int (*confirm_rkey)(struct lgr_link *link, const struct llc_info *m);
	void (*delete_rkey)(struct lgr_link *link, const struct llc_info *m);
	void (*add_link_rkeys)(struct lgr_link *via, struct lgr_link *added,
			       const struct llc_v2_info *v);
	void (*protocol_error)(struct lgr *lgr, const char *why);
	void (*terminate)(struct lgr *lgr, uint32_t reason, bool orderly,
			  bool by_peer);
};

/*
 * What clc.c tells the groups of their handshakes: lgr.c's handlers,
 * which lgr_ctx_new sets in ctx->clc_ops.  The handshake runs below the
 * groups, on their control connections, and calls up only through these.
 */
struct lgr_clc_ops {
	/* server: a PROPOSAL from peer came; its group, or NULL, *decline */
	struct lgr *(*server_new)(struct lgr_ctx *ctx,
				  const struct conf_peer *peer,
				  const struct clc_proposal_info *p,
				  const struct addr *local, uint32_t *decline);
	/* our side of ACCEPT or CONFIRM */
	void (*body)(const struct lgr *lgr, struct clc_accept_info *out);
	/* the peer's ACCEPT or CONFIRM verified: 0, or a CLC_DECL_* code */
	uint32_t (*peer)(struct lgr *lgr, const struct clc_accept_info *in);
	/* the handshake is over: the first link's LLC starts */
	void (*done)(struct lgr *lgr);
	/* it failed (code: CLC_DECL_*) or the control connection ended */
	void (*end)(struct lgr *lgr, uint32_t code, bool by_peer);
};

/* One daemon's link groups on one event_base (a worker; a test side). */
struct lgr_ctx {
	struct event_base *base;
	const struct lgr_llc_ops *llc_ops; /* lgr.c's, for llc.c */
	const struct lgr_clc_ops *clc_ops; /* lgr.c's, for clc.c */
	struct worker *w;		   /* NULL in tests */
	struct conf *conf;		   /* held when w is NULL */
	struct stats *stats;
	struct auth_limit *auth;
	struct lgr_timeouts t;
	uint8_t system_id[8];
	struct lgr_dev devs[LGR_DEVS_MAX];
	int ndevs;
	bool probe; /* open ib devices on demand */
	struct {
		struct addr local;
		char device[CONF_NAME_MAX + 1]; /* asked of it; "": any */
		uint64_t until_ms;
	} tried[LGR_DEVS_MAX]; /* addresses no device served */
	int ntried;
	struct {
		char peer[CONF_NAME_MAX + 1];
		uint64_t until_ms;
	} backoff[LGR_DEVS_MAX]; /* cached: no lock per connection */
	unsigned int nbackoff;
	TAILQ_HEAD(lgr_list, lgr) lgrs; /* newest first */
	LIST_HEAD(, clc_conn) clcs;	/* server handshakes without a group */
	int nclcs;
	struct lgr_data_ops ops; /* lgr_ctx_set_ops */
	void *ops_arg;
	uint32_t last_token; /* 1..last_token were handed out */
};

/*
 * The config the context works with now (a worker's follows reloads);
 * inline, so that clc.c and llc.c reading it do not call up into lgr.c.
 */
static inline struct conf *
lgr_ctx_conf(const struct lgr_ctx *ctx)
{
	return ctx->w != NULL ? worker_conf(ctx->w) : ctx->conf;
}

/* The statistics the group counts into: its context's. */
static inline struct stats *
lgr_stats(const struct lgr *lgr)
{
	return lgr->ctx->stats;
}

/*
 * The link with wire id, in any state but free/down; NULL if none.  The
 * one lookup: lgr_link_by_id() is the same for the other modules.
 */
static inline struct lgr_link *
lgr_link_find(struct lgr *lgr, uint8_t id)
{
	int i;

	for (i = 0; i < LGR_LINK_SLOTS; i++)
		if (lgr->link[i].id == id && id != 0 &&
		    lgr->link[i].state != LGR_LINK_FREE &&
		    lgr->link[i].state != LGR_LINK_DOWN)
			return &lgr->link[i];
	return NULL;
}

/*
 * lgr.c's steps that the files above it (lgr_smcr.c: a kernel peer's
 * groups) take as lgr.c takes them for ours.
 */
struct lgr *lgr_new(struct lgr_ctx *ctx, enum lgr_role role, struct conf *conf,
		    const struct conf_peer *peer);
const struct lgr_dev *lgr_dev_for(struct lgr_ctx *ctx, const struct addr *local,
				  const struct conf_peer *peer);
const struct lgr_dev *lgr_dev_alt(struct lgr_ctx *ctx,
				  const struct lgr_dev *skip);
struct lgr_link *lgr_link_open(struct lgr *lgr, const struct lgr_dev *dev,
			       uint8_t id);
uint32_t lgr_clc_peer(struct lgr *lgr, const struct clc_accept_info *in);
void lgr_clc_done(struct lgr *lgr);
void lgr_fail(struct lgr *lgr, uint32_t code, bool by_peer, bool decline);
void lgr_dead(struct lgr *lgr);

#endif /* SMCPROXYD_LGR_H */
