// SPDX-License-Identifier: BSD-2-Clause
/*
 * show lgrs / show links (control_show.c): each group of a worker and each of
 * its links as JSON, as net/smc's smc_diag.c reports its own.  Above the
 * link groups of lgr.c, which never call here.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>

#include <jansson.h>

#include "smcproxyd.h"
#include "lgr.h"

static const char *
lgr_state_name(enum lgr_state st)
{
	switch (st) {
	case LGR_STATE_CLC:
		return "clc";
	case LGR_STATE_CONFIRMING:
		return "confirming";
	case LGR_STATE_ACTIVE:
		return "active";
	case LGR_STATE_TERMINATING:
		return "terminating";
	}
	return "unknown";
}

static const char *
lgr_link_state_name(enum lgr_link_state st)
{
	switch (st) {
	case LGR_LINK_FREE:
		return "free";
	case LGR_LINK_INIT:
		return "init";
	case LGR_LINK_ADDING:
		return "adding";
	case LGR_LINK_CONFIRMING:
		return "confirming";
	case LGR_LINK_ACTIVE:
		return "active";
	case LGR_LINK_DOWN:
		return "down";
	}
	return "unknown";
}

static void
lgr_hex(const uint8_t *b, size_t n, char *out)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = hex[b[i] >> 4];
		out[2 * i + 1] = hex[b[i] & 0xf];
	}
	out[2 * n] = '\0';
}

static json_t *
lgr_link_json(const struct lgr_link *link, uint64_t now)
{
	const struct wr_stats *ws = wr_link_stats(link->wr);
	const struct dev_qp_caps *caps = wr_link_caps(link->wr);
	char gid[INET6_ADDRSTRLEN], pgid[INET6_ADDRSTRLEN];
	json_t *o;

	inet_ntop(AF_INET6, link->local.gid, gid, sizeof(gid));
	inet_ntop(AF_INET6, link->peer.gid, pgid, sizeof(pgid));
	o = json_pack(
		"{s:I, s:i, s:s, s:s, s:s, s:s, s:I, s:I, s:i, s:i, s:I,"
		" s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I,"
		" s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f}",
		"lgr", (json_int_t)link->lgr->id, "link", (int)link->id,
		"state", lgr_link_state_name(link->state), "device",
		link->dev->name, "gid", gid, "peer_gid", pgid, "qpn",
		(json_int_t)link->local.qpn, "peer_qpn",
		(json_int_t)link->peer.qpn, "mtu", link->local.mtu, "conns",
		link->conns, "max_inline", (json_int_t)caps->max_inline_data,
		"wrs_posted", (json_int_t)ws->posted, "writes",
		(json_int_t)ws->writes, "inline_wrs",
		(json_int_t)ws->inline_wrs, "completions",
		(json_int_t)ws->completions, "errors", (json_int_t)ws->errors,
		"slot_waits", (json_int_t)ws->slot_waits, "wakeups",
		(json_int_t)ws->wakeups, "slot_wait_timeouts",
		(json_int_t)ws->slot_wait_timeouts, "rx_unknown",
		(json_int_t)ws->rx_unknown, "rx_bad_opcode",
		(json_int_t)ws->rx_bad_opcode, "drained",
		(json_int_t)ws->drained, "cq_events", (json_int_t)ws->cq_events,
		"lazy_posts", (json_int_t)ws->lazy_posts, "lazy_wanted",
		(json_int_t)ws->lazy_wanted, "data_sends",
		(json_int_t)ws->data_sends, "test_link_sent",
		(json_int_t)link->test_sent, "test_link_answered",
		(json_int_t)link->test_answered, "test_link_rtt_us",
		(json_int_t)link->test_rtt_us, "up_s",
		link->up_ms ? (double)(now - link->up_ms) / 1000.0 : 0.0);
	if (o != NULL)
		json_object_set_new(
			o, "dialect",
			json_string(link->lgr->smcr ? "smc-r" : "native"));
	return o;
}

/*
 * Append a JSON object per link group of ctx to the jansson array lgrs
 * and one per link to links (either may be NULL).  On ctx's thread.
 */
void
lgr_json(struct lgr_ctx *ctx, void *lgrs, void *links)
{
	uint64_t now = now_ms();
	char sysid[17], uid[9];
	char host[ADDR_STRLEN];
	struct lgr *lgr;
	json_t *o;
	int i;

	TAILQ_FOREACH(lgr, &ctx->lgrs, entry) {
		lgr_hex(lgr->peer_system_id, sizeof(lgr->peer_system_id),
			sysid);
		lgr_hex(lgr->uid, sizeof(lgr->uid), uid);
		o = json_pack(
			"{s:I, s:i, s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:i,"
			" s:I, s:s, s:s, s:f}",
			"id", (json_int_t)lgr->id, "worker",
			ctx->w != NULL ? worker_id(ctx->w) : 0, "peer",
			lgr->peer->name, "dialect",
			lgr->smcr ? "smc-r" : "native", "role",
			lgr->role == LGR_ROLE_CLIENT ? "client" : "server",
			"state", lgr_state_name(lgr->state), "links",
			lgr_links_active(lgr), "conns", lgr->nconns,
			"max_conns", lgr->max_conns, "max_links",
			lgr->max_links, "features", (json_int_t)lgr->features,
			"peer_system_id", sysid, "uid", uid, "age_s",
			(double)(now - lgr->created_ms) / 1000.0);
		/* a kernel peer's group: the host it is with (show peers) */
		if (o != NULL && lgr->smcr &&
		    addr_host(&lgr->smcr_host, host, sizeof(host)))
			json_object_set_new(o, "host", json_string(host));
		if (o != NULL && lgrs != NULL)
			json_array_append_new(lgrs, o);
		else
			json_decref(o);
		for (i = 0; links != NULL && i < LGR_LINK_SLOTS; i++) {
			if (lgr->link[i].state == LGR_LINK_FREE)
				continue;
			o = lgr_link_json(&lgr->link[i], now);
			if (o != NULL)
				json_array_append_new(links, o);
		}
	}
}

/*
 * lgr_json for worker w's groups, if it has any; run it on w's thread
 * (worker_call).
 */
void
lgr_worker_json(struct worker *w, void *lgrs, void *links)
{
	struct lgr_ctx *ctx = worker_lgr(w);

	if (ctx != NULL)
		lgr_json(ctx, lgrs, links);
}
