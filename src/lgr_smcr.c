// SPDX-License-Identifier: BSD-2-Clause
/*
 * The SMC-R dialect's link groups (DESIGN.md §10), with kernel SMC-R
 * peers: made for the connection whose CLC (smcr.c) sets one up, found
 * by the system id, GID and QP a later CLC names, bounded per kernel
 * host, and connected once the CLC told each side the other's QP.  Each
 * connection brings its own CLC: no control connection.  Above the link
 * groups of lgr.c, which never call here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "smcproxyd.h"
#include "lgr.h"
#include "clc_wire.h"
#include "llc_wire.h"
/*
 * A new group of the SMC-R dialect (DESIGN.md §10) with a kernel
 * SMC-R peer of system id sysid, for the connection whose CLC came over
 * a TCP connection from local to host (the peer, to which the group is
 * bound: lgr_smcr_find): as the server (its PROPOSAL asked for
 * max_conns) or the client (its ACCEPT said first contact, max_conns).
 * A second link (max_links 2) when another device here may reach the
 * peer; its first QP on the device for local, not connected; no
 * control connection: each connection brings its own CLC.  Kernel peers
 * are one peer to the bounds, kernel_smc's.  NULL with *decline set.
 */
struct lgr *
lgr_smcr_new(struct lgr_ctx *ctx, enum lgr_role role, const uint8_t sysid[8],
	     const uint8_t gid[16], uint8_t max_conns, uint8_t max_links,
	     uint8_t release, const struct addr *local, const struct addr *host,
	     const uint8_t *eid, uint32_t *decline)
{
	struct conf *conf = lgr_ctx_conf(ctx);
	const struct conf_peer *peer = &conf->smcr.peer;
	const struct lgr_dev *dev;
	struct lgr *lgr;

	dev = lgr_dev_for(ctx, local, peer);
	if (dev == NULL) {
		*decline = CLC_DECL_NOSMCRDEV;
		return NULL;
	}
	lgr = lgr_new(ctx, role, conf, peer);
	if (lgr == NULL) {
		*decline = CLC_DECL_MEM;
		return NULL;
	}
	lgr->smcr = true;
	lgr->smcr_release = release;
	memcpy(lgr->smcr_gid, gid, sizeof(lgr->smcr_gid));
	lgr->smcr_host = *host;
	memcpy(lgr->smcr_eid, eid, sizeof(lgr->smcr_eid));
	lgr->max_conns = max_conns < conf->rdma.max_conns_per_lgr ?
				 max_conns :
				 (uint8_t)conf->rdma.max_conns_per_lgr;
	/* a second link only with a device for it here (max_links is what
	 * our ACCEPT says: a kernel client then waits for its ADD_LINK) */
	lgr->max_links = max_links < conf->rdma.max_links ?
				 max_links :
				 (uint8_t)conf->rdma.max_links;
	if (lgr->max_links > 1 && lgr_dev_alt(ctx, dev) == NULL)
		lgr->max_links = 1;
	memcpy(lgr->peer_system_id, sysid, sizeof(lgr->peer_system_id));
	/* the server names the first link 1; a link whose rings the
	 * host's share or the worker's memory cannot take: MEM */
	if (lgr_link_open(lgr, dev, lgr->next_link_id) == NULL) {
		*decline =
			errno == ENOBUFS ? CLC_DECL_MEM : CLC_DECL_ERR_RDYLNK;
		lgr_dead(lgr);
		return NULL;
	}
	if (role == LGR_ROLE_SERVER)
		STATS_INC(lgr->ctx->stats, smc_lgrs);
	else
		STATS_INC(lgr->ctx->stats, smc_out_lgrs);
	return lgr;
}

/*
 * An active standard group of role with the kernel peer sysid one of
 * whose links reaches the peer's GID (and its QP qpn, unless 0), with
 * room for one more connection: one a new connection may join, *link
 * (unless NULL) that link.  NULL if none.  Only a group made with host
 * (the new connection's peer; NULL: any, to tell a join that names
 * another host's group): the CLC is unauthenticated, and a server that
 * named the group we have with another server would have us write that
 * connection's bytes into the other's memory (issue 43, M1).
 */
struct lgr *
lgr_smcr_find(struct lgr_ctx *ctx, enum lgr_role role, const uint8_t sysid[8],
	      const uint8_t gid[16], uint32_t qpn, const struct addr *host,
	      struct lgr_link **linkp)
{
	struct lgr_link *link;
	struct lgr *lgr;
	int i;

	TAILQ_FOREACH(lgr, &ctx->lgrs, entry) {
		if (!lgr->smcr || lgr->role != role ||
		    lgr->state != LGR_STATE_ACTIVE ||
		    lgr->nconns >= lgr->max_conns ||
		    memcmp(lgr->peer_system_id, sysid,
			   sizeof(lgr->peer_system_id)) != 0 ||
		    (host != NULL && !addr_same_host(&lgr->smcr_host, host)))
			continue;
		for (i = 0; i < LGR_LINK_SLOTS; i++) {
			link = &lgr->link[i];
			if (link->state == LGR_LINK_ACTIVE &&
			    memcmp(link->peer.gid, gid,
				   sizeof(link->peer.gid)) == 0 &&
			    (qpn == 0 || link->peer.qpn == qpn)) {
				if (linkp != NULL)
					*linkp = link;
				return lgr;
			}
		}
	}
	return NULL;
}

/*
 * Whether a kernel host (host, the new connection's peer) may have one
 * more connection with us on this worker, on a new group (group) or on
 * one it has: kernel_smc's budgets, which keep one host from holding
 * QPs, buffers and handshakes that every other host and the native
 * peers need (issue 43, M2/M3).  Groups not yet up count, as they hold
 * a QP and receive buffers from the CLC on.  The native peer port's
 * handshakes are bounded apart (CLC_PENDING_MAX, clc.c).  0, or
 * -ENOSPC with the bound counted.
 */
int
lgr_smcr_budget(struct lgr_ctx *ctx, const struct addr *host, bool group)
{
	const struct conf_smcr *k = &lgr_ctx_conf(ctx)->smcr;
	int pending = 0, host_pending = 0, host_lgrs = 0, host_conns = 0;
	enum stats_id over;
	const struct lgr *lgr;
	bool up;

	TAILQ_FOREACH(lgr, &ctx->lgrs, entry) {
		if (!lgr->smcr || lgr->state == LGR_STATE_TERMINATING)
			continue;
		up = lgr->state == LGR_STATE_ACTIVE;
		pending += !up;
		if (!addr_same_host(&lgr->smcr_host, host))
			continue;
		host_pending += !up;
		host_lgrs++;
		host_conns += lgr->nconns;
	}
	if (host_conns >= k->max_conns_per_host)
		over = STAT_smc_budget_host_conns;
	else if (!group)
		return 0;
	else if (host_lgrs >= k->max_lgrs_per_host)
		over = STAT_smc_budget_host_lgrs;
	else if (host_pending >= k->max_pending_per_host)
		over = STAT_smc_budget_host_pending;
	else if (pending >= k->max_pending)
		over = STAT_smc_budget_pending;
	else
		return 0;
	stats_add(ctx->stats, over, 1);
	return -ENOSPC;
}

/*
 * Each standard group of ctx that holds its host's budget (not
 * terminating, as lgr_smcr_budget counts them) to fn: the kernel host it
 * is with, whether it is up (else pending), its connections and active
 * links.  For show peers; on ctx's worker.
 */
void
lgr_smcr_foreach(const struct lgr_ctx *ctx, lgr_smcr_fn fn, void *arg)
{
	const struct lgr *lgr;
	int i, links;

	TAILQ_FOREACH(lgr, &ctx->lgrs, entry) {
		if (!lgr->smcr || lgr->state == LGR_STATE_TERMINATING)
			continue;
		for (i = 0, links = 0; i < LGR_LINK_SLOTS; i++)
			links += lgr->link[i].state == LGR_LINK_ACTIVE;
		fn(&lgr->smcr_host, lgr->state == LGR_STATE_ACTIVE,
		   (int)lgr->nconns, links, arg);
	}
}

/*
 * Whether a kernel peer's group may stay under k (after a reload): the
 * SMC-R dialect still on, the EID it was made under still served,
 * and a client host (our server role) still in allow.  One that may not
 * ends, as a native peer's whose key changed: the peer loses the rkeys
 * it holds into our buffers.
 */
bool
lgr_smcr_kept(const struct lgr *lgr, const struct conf_smcr *k)
{
	return k->enabled && conf_smcr_serves(k, lgr->smcr_eid) &&
	       (lgr->role == LGR_ROLE_CLIENT ||
		conf_smcr_allows(k, &lgr->smcr_host));
}

/*
 * The group of role with the kernel peer (system id and GID, at host)
 * on its way: set up, its first link not yet confirmed; NULL if none.
 * A connection that finds one waits for it rather than making a group of
 * its own.
 */
struct lgr *
lgr_smcr_pending(struct lgr_ctx *ctx, enum lgr_role role,
		 const uint8_t sysid[8], const uint8_t gid[16],
		 const struct addr *host)
{
	struct lgr *lgr;

	TAILQ_FOREACH(lgr, &ctx->lgrs, entry)
		if (lgr->smcr && lgr->role == role &&
		    (lgr->state == LGR_STATE_CLC ||
		     lgr->state == LGR_STATE_CONFIRMING) &&
		    memcmp(lgr->peer_system_id, sysid,
			   sizeof(lgr->peer_system_id)) == 0 &&
		    memcmp(lgr->smcr_gid, gid, sizeof(lgr->smcr_gid)) == 0 &&
		    addr_same_host(&lgr->smcr_host, host))
			return lgr;
	return NULL;
}

/*
 * Our system id towards kernel peers: one per worker, since a kernel
 * server matches groups by it and the GID, and a group it names in an
 * ACCEPT must be on the worker whose connection it answers.
 */
void
lgr_smcr_system_id(const struct lgr_ctx *ctx, uint8_t out[8])
{
	memcpy(out, ctx->system_id, sizeof(ctx->system_id));
	out[7] ^= (uint8_t)((ctx->w != NULL ? worker_id(ctx->w) : 0) + 1);
}

/* The connections lgr may hold (negotiated). */
uint8_t
lgr_max_conns(const struct lgr *lgr)
{
	return lgr->max_conns;
}

/* The kernel host a standard group is with; NULL for a native one. */
const struct addr *
lgr_smcr_host(const struct lgr *lgr)
{
	return lgr->smcr ? &lgr->smcr_host : NULL;
}

/* Whether lgr speaks the SMC-R dialect (a kernel SMC-R peer's). */
bool
lgr_is_smcr(const struct lgr *lgr)
{
	return lgr->smcr;
}

/* A standard group's link's QP and our system id, for the CLC. */
void
lgr_smcr_local(const struct lgr_link *link, struct dev_qp_addr *qp,
	       uint8_t sysid[8])
{
	*qp = link->local;
	lgr_smcr_system_id(link->lgr->ctx, sysid);
}

/* Whether link's peer is the QP qpn with GID gid. */
bool
lgr_link_peer_is(const struct lgr_link *link, const uint8_t gid[16],
		 uint32_t qpn)
{
	return link != NULL && link->peer.qpn == qpn &&
	       memcmp(link->peer.gid, gid, sizeof(link->peer.gid)) == 0;
}

/* Links the group may have (negotiated). */
uint8_t
lgr_max_links(const struct lgr *lgr)
{
	return lgr->max_links;
}

/*
 * The kernel peer's CONFIRM (we serve) or ACCEPT (we are the client)
 * named its QP peer: connect ours to it; the server sends CONFIRM_LINK on
 * it, the client waits for that, as in our own dialect.  0, or the
 * CLC_DECL_* code the group failed with (it is ending then).
 */
uint32_t
lgr_smcr_peer(struct lgr *lgr, const struct dev_qp_addr *peer)
{
	struct clc_accept_info in;
	uint32_t code;

	memset(&in, 0, sizeof(in));
	memcpy(in.system_id, lgr->peer_system_id, sizeof(in.system_id));
	memcpy(in.link.gid, peer->gid, sizeof(in.link.gid));
	memcpy(in.link.mac, peer->mac, sizeof(in.link.mac));
	in.link.qpn = peer->qpn;
	in.link.psn = peer->psn;
	in.link.mtu = (uint8_t)peer->mtu;
	in.max_conns = lgr->max_conns;
	in.max_links = lgr->max_links;
	code = lgr_clc_peer(lgr, &in);
	if (code != 0) {
		lgr_fail(lgr, code, false, false);
		return code;
	}
	lgr_clc_done(lgr);
	return lgr->state == LGR_STATE_TERMINATING ? CLC_DECL_ERR_RDYLNK : 0;
}
