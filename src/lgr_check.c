// SPDX-License-Identifier: BSD-2-Clause
/*
 * Live checks of a peer (smcproxyctl check PEER, control_check.c): TEST_LINK
 * over an active link of a group to it, or, with none, a group set up
 * for the check; the answer, or why there is none, within the check's
 * time.  Above the link groups of lgr.c, which never call here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "smcproxyd.h"
#include "lgr.h"
#include "clc_wire.h"
#include "llc_wire.h"

/* An active link of an active group (either role) to peer, or NULL. */
static struct lgr_link *
lgr_check_link(struct lgr_ctx *ctx, const char *peer)
{
	struct lgr_link *link;
	struct lgr *lgr;

	TAILQ_FOREACH(lgr, &ctx->lgrs, entry) {
		if (lgr->state != LGR_STATE_ACTIVE ||
		    strcmp(lgr->peer->name, peer) != 0)
			continue;
		link = lgr_link_next_active(lgr, NULL);
		if (link != NULL)
			return link;
	}
	return NULL;
}

/* Whether ctx has an active group to peer (the place to check it). */
bool
lgr_has_active(struct lgr_ctx *ctx, const char *peer)
{
	return ctx != NULL && lgr_check_link(ctx, peer) != NULL;
}

/* A check of peer that gives up after timeout_ms. */
void
lgr_check_init(struct lgr_check *c, const char *peer, int timeout_ms)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->peer, sizeof(c->peer), "%s", peer);
	c->started_ms = now_ms();
	c->deadline_ms = c->started_ms + (uint64_t)timeout_ms;
}

static bool
lgr_check_end(struct lgr_check *c, int rc, const char *why)
{
	c->rc = rc;
	snprintf(c->error, sizeof(c->error), "%s", why);
	return true;
}

/*
 * The setup the check asked for ended without an active group: why, from
 * what the peer registry heard since the check began (a decline, ours or
 * the peer's, and the last error).
 */
static bool
lgr_check_failed(struct lgr_check *c)
{
	uint64_t since = now_ms() - c->started_ms;
	struct peer_info pi;
	char why[64];

	peer_info(c->peer, &pi);
	if (pi.fallback_age_ms <= since) {
		c->decline = pi.reason;
		c->by_peer = pi.by_peer;
	}
	if (pi.error[0] != '\0' && pi.error_age_ms <= since)
		return lgr_check_end(c, -ECONNREFUSED, pi.error);
	if (c->decline != 0) {
		snprintf(why, sizeof(why), "RDMA declined by %s: %s",
			 c->by_peer ? "the peer" : "us",
			 clc_decline_name(c->decline));
		return lgr_check_end(c, -ECONNREFUSED, why);
	}
	return lgr_check_end(c, -ECONNREFUSED, "the link group setup failed");
}

/* The TEST_LINK went on link lgr_id/link_id: its answer, or why not. */
static bool
lgr_check_answer(struct lgr_ctx *ctx, struct lgr_check *c)
{
	struct lgr_link *link = NULL;
	struct lgr *lgr;

	TAILQ_FOREACH(lgr, &ctx->lgrs, entry)
		if (lgr->id == c->lgr_id)
			break;
	if (lgr != NULL && lgr->state == LGR_STATE_ACTIVE)
		link = lgr_link_by_id(lgr, c->link_id);
	if (link == NULL || link->state != LGR_LINK_ACTIVE)
		return lgr_check_end(c, -ENOLINK,
				     "the link went down before TEST_LINK was "
				     "answered");
	if (link->test_answered > c->answered) {
		c->rtt_us = link->test_rtt_us;
		return lgr_check_end(c, 0, "");
	}
	if (now_ms() >= c->deadline_ms)
		return lgr_check_end(c, -ETIMEDOUT,
				     "no answer to TEST_LINK in time");
	return false;
}

/*
 * One step of check c on ctx (a worker's groups), as smc_chk probes a
 * peer: a TEST_LINK round trip on an active link of a group to it; with
 * none, a group is set up first (TCP connect to its port, CLC handshake,
 * the first link's CONFIRM_LINK), back-off or not, and a setup that fails
 * gives its decline without putting the peer on the back-off: a check
 * that failed three times must not keep connections off RDMA for seven
 * minutes.  true when c has its result.
 */
bool
lgr_check_step(struct lgr_ctx *ctx, struct lgr_check *c)
{
	const struct conf_peer *peer;
	struct lgr_link *link;

	if (ctx == NULL)
		return lgr_check_end(c, -ENODEV, "RDMA is off in this daemon");
	if (c->lgr_id != 0)
		return lgr_check_answer(ctx, c);
	peer = conf_peer_find(lgr_ctx_conf(ctx), c->peer);
	if (peer == NULL)
		return lgr_check_end(c, -ENOENT, "no such peer");
	link = lgr_check_link(ctx, c->peer);
	if (link != NULL) {
		c->lgr_id = link->lgr->id;
		c->link_id = link->id;
		c->answered = link->test_answered;
		/* one already on its way is as good as ours */
		if (!link->test_pending && llc_test_link_send(link) != 0)
			return lgr_check_end(c, -EIO, "cannot send TEST_LINK");
		return false;
	}
	if (!c->set_up) {
		/* back-off or not; one already on its way will do */
		c->set_up = true;
		if (!lgr_on_its_way(ctx, peer)) {
			log_info("peer %s: checking it: setting up a link "
				 "group",
				 peer->name);
			lgr_client_new_on(ctx, peer, -1, 0, true);
		}
	}
	if (!lgr_on_its_way(ctx, peer))
		return lgr_check_failed(c);
	if (now_ms() >= c->deadline_ms)
		return lgr_check_end(c, -ETIMEDOUT,
				     "the link group was not set up in time");
	return false;
}
