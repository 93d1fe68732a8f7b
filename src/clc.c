// SPDX-License-Identifier: BSD-2-Clause
/*
 * CLC: the link-group handshake of clc_wire.h.
 *
 * The codec (first half) is pure functions on byte buffers, no I/O: the
 * control connection code reads the 8-byte header, asks clc_hdr_check()
 * how long the message is, reads exactly that and hands it to the decoder
 * of the type it expects.  Each decoder checks every byte before anything
 * is used, so a decoded message re-encodes to the very same bytes; the
 * encoders refuse what the decoders would refuse.
 *
 * The handshake (second half) runs that exchange on a non-blocking TCP
 * control connection for lgr.c: the client's PROPOSAL, the server's
 * ACCEPT with its nonce and MAC, the client's CONFIRM with its MAC, a
 * DECLINE with a reason from either side at any point, each message
 * within CLC_WAIT_TIME.  Authentication is designed in (docs/protocol.md,
 * "Authentication of link groups"): each side connects its QP only once
 * the other side's MAC has verified, and no rkey or RMB address ever
 * crosses the control connection.  After the handshake the connection
 * stays open for the life of the group: its loss ends the group.
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "smcproxyd.h"
#include "lgr.h"
#include "wire.h"
#include "clc_wire.h"

/* The fixed length of each type; 0 for a type we do not know. */
static size_t
clc_type_length(uint8_t type)
{
	switch (type) {
	case CLC_PROPOSAL:
		return sizeof(struct clc_proposal);
	case CLC_ACCEPT:
		return sizeof(struct clc_accept);
	case CLC_CONFIRM:
		return sizeof(struct clc_confirm);
	case CLC_DECLINE:
		return sizeof(struct clc_decline);
	}
	return 0;
}

static void
clc_hdr_fill(void *buf, enum clc_type type, bool first_contact)
{
	clc_frame_put(buf, (uint8_t)type,
		      (uint16_t)clc_type_length((uint8_t)type),
		      CLC_VERSION << CLC_VERSION_SHIFT |
			      (first_contact ? CLC_FLAG_FIRST_CONTACT : 0),
		      CLC_EYEC_SMCR);
}

/*
 * Check the 8-byte header at the start of buf: eyecatcher, version, a
 * known type and exactly that type's length.  Enough for a reader to know
 * how many bytes to read.  0 with *type and *length set, or -EPROTO with
 * *decline set (VERSMISMAT for another version, else BADMSG).
 */
int
clc_hdr_check(const void *buf, size_t len, uint8_t *type, uint16_t *length,
	      uint32_t *decline)
{
	const struct clc_hdr *h = buf;
	size_t want;

	if (len < sizeof(*h) ||
	    clc_eyecatcher(h->eyecatcher) != CLC_EYEC_SMCR) {
		*decline = CLC_DECL_BADMSG;
		return -EPROTO;
	}
	/* A newer peer may lay out everything else differently. */
	if (h->flags >> CLC_VERSION_SHIFT != CLC_VERSION) {
		*decline = CLC_DECL_VERSMISMAT;
		return -EPROTO;
	}
	want = clc_type_length(h->type);
	if (want == 0 || be16toh(h->length) != want ||
	    (h->flags & CLC_FLAGS_RESERVED)) {
		*decline = CLC_DECL_BADMSG;
		return -EPROTO;
	}
	*type = h->type;
	*length = (uint16_t)want;
	return 0;
}

/* Header of a whole message of the expected type, and its trailer. */
static int
clc_msg_check(const void *buf, size_t len, enum clc_type expect,
	      uint32_t *decline)
{
	const uint8_t *b = buf;
	uint16_t length;
	uint8_t type;
	int rc;

	rc = clc_hdr_check(buf, len, &type, &length, decline);
	if (rc)
		return rc;
	if (type != expect || len != length ||
	    clc_eyecatcher(b + len - sizeof(struct clc_trail)) !=
		    CLC_EYEC_SMCR) {
		*decline = CLC_DECL_BADMSG;
		return -EPROTO;
	}
	return 0;
}

static uint32_t
clc_link_check(const struct clc_link_info *l)
{
	if (wire_all_zero(l->gid, sizeof(l->gid)) || l->qpn < CLC_QPN_MIN ||
	    l->qpn > 0xffffff || l->psn > 0xffffff || l->mtu < CLC_MTU_MIN ||
	    l->mtu > CLC_MTU_MAX)
		return CLC_DECL_BADMSG;
	return 0;
}

static uint32_t
clc_limits_check(uint8_t max_conns, uint8_t max_links)
{
	/* max_conns <= 255 by its type */
	if (max_conns < CLC_MAX_CONNS_MIN)
		return CLC_DECL_MAXCONNERR;
	if (max_links < CLC_MAX_LINKS_MIN || max_links > CLC_MAX_LINKS_MAX)
		return CLC_DECL_MAXLINKERR;
	return 0;
}

static void
clc_lcl_put(struct clc_lcl *w, const uint8_t system_id[8],
	    const struct clc_link_info *l)
{
	memcpy(w->system_id, system_id, sizeof(w->system_id));
	memcpy(w->gid, l->gid, sizeof(w->gid));
	memcpy(w->mac, l->mac, sizeof(w->mac));
	wire_put24(w->qpn, l->qpn);
	wire_put24(w->psn, l->psn);
}

static void
clc_lcl_get(const struct clc_lcl *w, uint8_t system_id[8],
	    struct clc_link_info *l)
{
	memcpy(system_id, w->system_id, sizeof(w->system_id));
	memcpy(l->gid, w->gid, sizeof(l->gid));
	memcpy(l->mac, w->mac, sizeof(l->mac));
	l->qpn = wire_get24(w->qpn);
	l->psn = wire_get24(w->psn);
}

static uint32_t
clc_proposal_check(const struct clc_proposal_info *p)
{
	uint32_t decl;
	size_t nl = strnlen(p->name, sizeof(p->name));

	if (nl == sizeof(p->name) || !conf_name_valid_len(p->name, nl))
		return CLC_DECL_BADMSG;
	decl = clc_link_check(&p->link);
	if (decl == 0)
		decl = clc_limits_check(p->max_conns, p->max_links);
	return decl;
}

/*
 * Build a PROPOSAL into buf (size bytes).  Its length, -ENOSPC if buf is
 * too small, -EINVAL if the decoder would refuse *in.
 */
int
clc_proposal_encode(void *buf, size_t size, const struct clc_proposal_info *in)
{
	struct clc_proposal *w = buf;

	if (size < sizeof(*w))
		return -ENOSPC;
	if (clc_proposal_check(in))
		return -EINVAL;
	memset(w, 0, sizeof(*w));
	clc_hdr_fill(w, CLC_PROPOSAL, false);
	clc_lcl_put(&w->lcl, in->system_id, &in->link);
	w->qp_mtu = in->link.mtu;
	w->max_conns = in->max_conns;
	w->max_links = in->max_links;
	w->worker = in->worker;
	w->features = htobe32(in->features);
	memcpy(w->nonce, in->nonce, sizeof(w->nonce));
	memcpy(w->name, in->name, strlen(in->name));
	return (int)sizeof(*w);
}

/*
 * Decode and validate a whole PROPOSAL.  Unknown feature bits are allowed
 * (the server answers with the intersection).  0, or -EPROTO with
 * *decline set (see clc_wire.h).
 */
int
clc_proposal_decode(const void *buf, size_t len, struct clc_proposal_info *out,
		    uint32_t *decline)
{
	const struct clc_proposal *w = buf;
	struct clc_proposal_info p;
	size_t nl;
	uint32_t decl;
	int rc;

	rc = clc_msg_check(buf, len, CLC_PROPOSAL, decline);
	if (rc)
		return rc;
	memset(&p, 0, sizeof(p));
	nl = strnlen(w->name, sizeof(w->name));
	if ((w->hdr.flags & CLC_FLAG_FIRST_CONTACT) || nl == sizeof(w->name) ||
	    !wire_all_zero(w->name + nl, sizeof(w->name) - nl)) {
		*decline = CLC_DECL_BADMSG;
		return -EPROTO;
	}
	clc_lcl_get(&w->lcl, p.system_id, &p.link);
	p.link.mtu = w->qp_mtu;
	p.max_conns = w->max_conns;
	p.max_links = w->max_links;
	p.worker = w->worker;
	p.features = be32toh(w->features);
	memcpy(p.nonce, w->nonce, sizeof(p.nonce));
	memcpy(p.name, w->name, nl);
	decl = clc_proposal_check(&p);
	if (decl) {
		*decline = decl;
		return -EPROTO;
	}
	*out = p;
	return 0;
}

static uint32_t
clc_accept_check(const struct clc_accept_info *a)
{
	uint64_t bytes = clc_rmbe_bytes(a->rmbe_size);
	uint32_t decl;

	decl = clc_link_check(&a->link);
	if (decl)
		return decl;
	decl = clc_limits_check(a->max_conns, a->max_links);
	if (decl)
		return decl;
	/* the region must not wrap the address space */
	if (bytes == 0 || a->alert_token == 0 ||
	    (a->features & ~(uint32_t)CLC_FEAT_KNOWN) ||
	    a->rmb_vaddr > UINT64_MAX - bytes)
		return CLC_DECL_BADMSG;
	return 0;
}

static void
clc_body_put(struct clc_acc_body *w, const struct clc_accept_info *in)
{
	clc_lcl_put(&w->lcl, in->system_id, &in->link);
	w->rmbe_mtu = (uint8_t)(in->rmbe_size << 4 | in->link.mtu);
	w->max_conns = in->max_conns;
	w->max_links = in->max_links;
	w->worker = in->worker;
	w->features = htobe32(in->features);
	w->rmb_rkey = htobe32(in->rmb_rkey);
	w->alert_token = htobe32(in->alert_token);
	w->rmb_vaddr = htobe64(in->rmb_vaddr);
}

/* Parse and check the shared body; the caller has checked the frame. */
static uint32_t
clc_body_get(const struct clc_acc_body *w, const struct clc_hdr *h,
	     struct clc_accept_info *a)
{
	a->worker = w->worker;
	a->first_contact = (h->flags & CLC_FLAG_FIRST_CONTACT) != 0;
	clc_lcl_get(&w->lcl, a->system_id, &a->link);
	a->rmbe_size = w->rmbe_mtu >> 4;
	a->link.mtu = w->rmbe_mtu & 0x0f;
	a->max_conns = w->max_conns;
	a->max_links = w->max_links;
	a->features = be32toh(w->features);
	a->rmb_rkey = be32toh(w->rmb_rkey);
	a->alert_token = be32toh(w->alert_token);
	a->rmb_vaddr = be64toh(w->rmb_vaddr);
	return clc_accept_check(a);
}

/*
 * ACCEPT and CONFIRM are one message but for the server's nonce, which
 * only ACCEPT carries: one body builds and reads both.
 */
_Static_assert(offsetof(struct clc_accept, body) ==
		       offsetof(struct clc_confirm, body),
	       "ACCEPT and CONFIRM share header and body");

/* Build an ACCEPT or CONFIRM (type) into buf: its length or -errno. */
static int
clc_acc_encode(void *buf, size_t size, enum clc_type type,
	       const struct clc_accept_info *in)
{
	struct clc_accept *a = buf;
	struct clc_confirm *c = buf;
	size_t len = type == CLC_ACCEPT ? sizeof(*a) : sizeof(*c);

	if (size < len)
		return -ENOSPC;
	if (clc_accept_check(in))
		return -EINVAL;
	memset(buf, 0, len);
	clc_hdr_fill(buf, type, in->first_contact);
	clc_body_put(&a->body, in);
	if (type == CLC_ACCEPT) {
		memcpy(a->nonce, in->nonce, sizeof(a->nonce));
		memcpy(a->mac, in->mac, sizeof(a->mac));
	} else {
		memcpy(c->mac, in->mac, sizeof(c->mac));
	}
	return (int)len;
}

/* Decode and validate a whole ACCEPT or CONFIRM (type): 0, or -EPROTO
 * with *decline set.  A CONFIRM's out->nonce is zeroed. */
static int
clc_acc_decode(const void *buf, size_t len, enum clc_type type,
	       struct clc_accept_info *out, uint32_t *decline)
{
	const struct clc_accept *a = buf;
	const struct clc_confirm *c = buf;
	struct clc_accept_info info;
	uint32_t decl;
	int rc;

	rc = clc_msg_check(buf, len, type, decline);
	if (rc)
		return rc;
	memset(&info, 0, sizeof(info));
	decl = clc_body_get(&a->body, &a->hdr, &info);
	if (decl) {
		*decline = decl;
		return -EPROTO;
	}
	if (type == CLC_ACCEPT) {
		memcpy(info.nonce, a->nonce, sizeof(info.nonce));
		memcpy(info.mac, a->mac, sizeof(info.mac));
	} else {
		memcpy(info.mac, c->mac, sizeof(info.mac));
	}
	*out = info;
	return 0;
}

/* Build an ACCEPT into buf: its length, -ENOSPC or -EINVAL. */
int
clc_accept_encode(void *buf, size_t size, const struct clc_accept_info *in)
{
	return clc_acc_encode(buf, size, CLC_ACCEPT, in);
}

/* Decode and validate a whole ACCEPT.  0, or -EPROTO with *decline set. */
int
clc_accept_decode(const void *buf, size_t len, struct clc_accept_info *out,
		  uint32_t *decline)
{
	return clc_acc_decode(buf, len, CLC_ACCEPT, out, decline);
}

/* Build a CONFIRM into buf (in->nonce is not sent): length or -errno. */
int
clc_confirm_encode(void *buf, size_t size, const struct clc_accept_info *in)
{
	return clc_acc_encode(buf, size, CLC_CONFIRM, in);
}

/*
 * Decode and validate a whole CONFIRM; out->nonce is zeroed.  0, or
 * -EPROTO with *decline set.
 */
int
clc_confirm_decode(const void *buf, size_t len, struct clc_accept_info *out,
		   uint32_t *decline)
{
	return clc_acc_decode(buf, len, CLC_CONFIRM, out, decline);
}

/* Build a DECLINE into buf: its length, -ENOSPC, or -EINVAL for code 0. */
int
clc_decline_encode(void *buf, size_t size, const struct clc_decline_info *in)
{
	struct clc_decline *w = buf;

	if (size < sizeof(*w))
		return -ENOSPC;
	if (in->diagnosis == 0)
		return -EINVAL;
	memset(w, 0, sizeof(*w));
	clc_hdr_fill(w, CLC_DECLINE, in->sync_err);
	memcpy(w->system_id, in->system_id, sizeof(w->system_id));
	w->peer_diagnosis = htobe32(in->diagnosis);
	return (int)sizeof(*w);
}

/*
 * Decode a whole DECLINE.  Any non-zero diagnosis is accepted (a newer
 * peer may know more codes).  0, or -EPROTO with *decline set: a caller
 * never answers a DECLINE, but counts the reason.
 */
int
clc_decline_decode(const void *buf, size_t len, struct clc_decline_info *out,
		   uint32_t *decline)
{
	const struct clc_decline *w = buf;
	int rc;

	rc = clc_msg_check(buf, len, CLC_DECLINE, decline);
	if (rc)
		return rc;
	if (w->peer_diagnosis == 0 ||
	    !wire_all_zero(w->reserved, sizeof(w->reserved))) {
		*decline = CLC_DECL_BADMSG;
		return -EPROTO;
	}
	out->sync_err = (w->hdr.flags & CLC_FLAG_FIRST_CONTACT) != 0;
	memcpy(out->system_id, w->system_id, sizeof(out->system_id));
	out->diagnosis = be32toh(w->peer_diagnosis);
	return 0;
}

/* ---- the handshake on a control connection ---- */

#define CLC_CLOSE_WAIT_MS 1000 /* a declined peer gets this to read it */
#define CLC_PENDING_MAX 64     /* server groups awaiting CONFIRM per worker */

enum clc_step {
	CLC_STEP_CONNECT,  /* client: TCP connect under way */
	CLC_STEP_ACCEPT,   /* client: PROPOSAL sent, awaiting ACCEPT */
	CLC_STEP_PROPOSAL, /* server: awaiting PROPOSAL */
	CLC_STEP_CONFIRM,  /* server: ACCEPT sent, awaiting CONFIRM */
	CLC_STEP_DONE,	   /* handshake over: watching for the end */
	CLC_STEP_CLOSING,  /* DECLINE sent: draining until EOF */
};

struct clc_conn {
	LIST_ENTRY(clc_conn) entry; /* ctx->clcs, while it has no group */
	bool listed;
	struct lgr_ctx *ctx;
	struct lgr *lgr;
	int fd;
	enum clc_step step;
	struct event *rev, *wev, *timer;
	struct addr src; /* server: where the client connected from */
	bool preauth;	 /* holds a worker_preauth_get of src */
	bool hopped;	 /* server: came from another worker (clc_hop) */
	struct addr local;
	uint8_t in[CLC_MSG_MAX];
	size_t in_len;
	uint8_t out[2 * CLC_MSG_MAX];
	size_t out_len, out_off;
	uint8_t proposal[sizeof(struct clc_proposal)];
	uint8_t accept[sizeof(struct clc_accept)];
	struct clc_proposal_info prop;
};

static void clc_io(evutil_socket_t fd, short what, void *arg);
static bool clc_message(struct clc_conn *c);
static void clc_timeout(evutil_socket_t fd, short what, void *arg);

/*
 * What the handshake tells its group goes through the handlers lgr.c set
 * (ctx->clc_ops): the groups are above, the handshake only calls down.
 */
static void
clc_lgr_body(const struct lgr *lgr, struct clc_accept_info *out)
{
	lgr->ctx->clc_ops->body(lgr, out);
}

static uint32_t
clc_lgr_peer(struct lgr *lgr, const struct clc_accept_info *in)
{
	return lgr->ctx->clc_ops->peer(lgr, in);
}

static void
clc_lgr_done(struct lgr *lgr)
{
	lgr->ctx->clc_ops->done(lgr);
}

static void
clc_lgr_end(struct lgr *lgr, uint32_t code, bool by_peer)
{
	lgr->ctx->clc_ops->end(lgr, code, by_peer);
}

static const char *
clc_who(const struct clc_conn *c, char *buf, size_t len)
{
	if (c->lgr != NULL) {
		snprintf(buf, len, "lgr %u: peer %s", c->lgr->id,
			 c->lgr->peer->name);
		return buf;
	}
	return addr_str(&c->src, buf, len);
}

/*
 * A handshake that failed authentication: the AUTH_FAILED event, with
 * the peer's name (the one it claimed, when no group is made yet) and
 * its link group when there is one.
 */
static void
clc_auth_failed(const struct clc_conn *c, const char *why)
{
	char who[ADDR_STRLEN + 64];
	struct log_where w = {c->lgr != NULL ? c->lgr->peer->name :
					       c->prop.name,
			      NULL, c->lgr != NULL ? (long)c->lgr->id : -1, -1};

	log_event(LOG_EV_AUTH_FAILED, LOG_LEVEL_WARN, &w,
		  "clc: %s: authentication failed: %s",
		  clc_who(c, who, sizeof(who)), why);
}

static void
clc_unlist(struct clc_conn *c)
{
	struct lgr_ctx *ctx = c->ctx;

	if (!c->listed)
		return;
	LIST_REMOVE(c, entry);
	c->listed = false;
	ctx->nclcs--;
}

/* c authenticated (CONFIRM) or goes: its place among strangers back. */
static void
clc_preauth_done(struct clc_conn *c)
{
	if (!c->preauth)
		return;
	c->preauth = false;
	if (c->ctx->w != NULL)
		worker_preauth_put(c->ctx->w, &c->src);
}

/*
 * A server handshake from a stranger that did not finish in time or was
 * cut short: a failure of its host for the rate limit, like a wrong key.
 */
static void
clc_preauth_failed(struct clc_conn *c)
{
	if (c->ctx->auth == NULL || c->src.len == 0)
		return;
	STATS_INC(c->ctx->stats, preauth_timeouts);
	auth_failed(c->ctx->auth, &c->src, now_ms());
}

/*
 * A stranger sent what is no step of the handshake (malformed, another
 * type, cut short) before it authenticated: a failure of its host for
 * the rate limit, as a wrong key is, lest garbage be free to repeat.
 * Only the server's side has strangers (src is set) and only until the
 * CONFIRM verified.
 */
static void
clc_preauth_malformed(struct clc_conn *c)
{
	if (c->src.len == 0 ||
	    (c->step != CLC_STEP_PROPOSAL && c->step != CLC_STEP_CONFIRM))
		return;
	STATS_INC(c->ctx->stats, preauth_malformed);
	if (c->ctx->auth != NULL)
		auth_failed(c->ctx->auth, &c->src, now_ms());
}

/*
 * Close the control connection and free it; a group that has it forgets
 * it.  Never from inside its own event callback but as its last step.
 */
void
clc_conn_free(struct clc_conn *c)
{
	if (c == NULL)
		return;
	clc_preauth_done(c);
	clc_unlist(c);
	if (c->lgr != NULL && c->lgr->clc == c)
		c->lgr->clc = NULL;
	if (c->rev != NULL)
		event_free(c->rev);
	if (c->wev != NULL)
		event_free(c->wev);
	if (c->timer != NULL)
		event_free(c->timer);
	if (c->fd >= 0)
		close(c->fd);
	free(c);
}

/* A control connection on fd (taken over: closed on failure).  NULL. */
static struct clc_conn *
clc_conn_new(struct lgr_ctx *ctx, int fd, enum clc_step step)
{
	struct clc_conn *c;
	socklen_t len;
	int one = 1;

	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		close(fd);
		return NULL;
	}
	c->ctx = ctx;
	c->fd = fd;
	c->step = step;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* a group's control connection lives as long as the group */
	sock_tcp_liveness(fd, lgr_ctx_conf(ctx));
	len = sizeof(c->local.ss);
	if (getsockname(fd, (struct sockaddr *)&c->local.ss, &len) == 0)
		c->local.len = len;
	c->rev = event_new(ctx->base, fd, EV_READ | EV_PERSIST, clc_io, c);
	c->wev = event_new(ctx->base, fd, EV_WRITE | EV_PERSIST, clc_io, c);
	c->timer = evtimer_new(ctx->base, clc_timeout, c);
	if (c->rev == NULL || c->wev == NULL || c->timer == NULL ||
	    evutil_make_socket_nonblocking(fd) < 0) {
		clc_conn_free(c);
		return NULL;
	}
	return c;
}

static void
clc_timer(struct clc_conn *c, unsigned int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

	if (ms == 0)
		event_del(c->timer);
	else
		event_add(c->timer, &tv);
}

/* Write what is queued.  0, or -errno when the connection broke. */
static int
clc_flush(struct clc_conn *c)
{
	ssize_t n;

	while (c->out_off < c->out_len) {
		n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
			 MSG_NOSIGNAL);
		if (n > 0) {
			c->out_off += (size_t)n;
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			event_add(c->wev, NULL);
			return 0;
		}
		return n == 0 ? -EPIPE : -errno;
	}
	c->out_len = c->out_off = 0;
	event_del(c->wev);
	if (c->step == CLC_STEP_CLOSING)
		shutdown(c->fd, SHUT_WR);
	return 0;
}

static int
clc_send(struct clc_conn *c, const void *msg, size_t len)
{
	if (len > sizeof(c->out) - c->out_len)
		return -ENOBUFS;
	memcpy(c->out + c->out_len, msg, len);
	c->out_len += len;
	return clc_flush(c);
}

/*
 * Tell the peer why with a DECLINE, then read nothing more from it: the
 * connection drains until the peer closes (or the group that has it is
 * freed, or a second passes).
 */
void
clc_decline_send(struct clc_conn *c, uint32_t code)
{
	struct clc_decline_info d;
	uint8_t msg[sizeof(struct clc_decline)];
	int len;

	if (c->step == CLC_STEP_CLOSING)
		return;
	memset(&d, 0, sizeof(d));
	memcpy(d.system_id, c->ctx->system_id, sizeof(d.system_id));
	d.diagnosis = code;
	c->step = CLC_STEP_CLOSING;
	c->in_len = 0;
	event_add(c->rev, NULL);
	clc_timer(c, CLC_CLOSE_WAIT_MS);
	len = clc_decline_encode(msg, sizeof(msg), &d);
	if (len > 0 && clc_send(c, msg, (size_t)len) == 0)
		stats_decline(c->ctx->stats, code, true);
}

/*
 * Read one message into c->in, exactly: the header, then the rest of the
 * length it announces, never a byte more.  1 when whole, 0 when more is
 * to come, -EPROTO with *decline set (malformed or cut short),
 * -ECONNRESET at a clean EOF, or -errno.
 */
static int
clc_read(struct clc_conn *c, uint32_t *decline)
{
	uint16_t length;
	uint8_t type;
	size_t need;
	ssize_t n;

	for (;;) {
		need = sizeof(struct clc_hdr);
		if (c->in_len >= need) {
			if (clc_hdr_check(c->in, c->in_len, &type, &length,
					  decline))
				return -EPROTO;
			need = length;
			if (c->in_len == need)
				return 1;
		}
		n = recv(c->fd, c->in + c->in_len, need - c->in_len, 0);
		if (n > 0) {
			c->in_len += (size_t)n;
			continue;
		}
		if (n == 0) {
			if (c->in_len == 0)
				return -ECONNRESET;
			*decline = CLC_DECL_BADMSG; /* truncated */
			return -EPROTO;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		return -errno;
	}
}

/* HMAC-SHA-256 under the peer's key; all zero for an insecure peer. */
static void
clc_mac(const struct conf_peer *p, const char *label, const void *a,
	size_t alen, const void *b, size_t blen, uint8_t mac[CLC_MAC_LEN])
{
	if (p->key_len == 0) {
		memset(mac, 0, CLC_MAC_LEN);
		return;
	}
	auth_mac(p->key, p->key_len, label, a, alen, b, blen, mac);
}

/* Whether got is the MAC we computed; an insecure peer sends zeros. */
static bool
clc_mac_ok(const struct conf_peer *p, const uint8_t *want, const uint8_t *got)
{
	if (p->key_len == 0)
		return wire_all_zero(got, CLC_MAC_LEN);
	return auth_mac_equal(want, got);
}

/*
 * The server's MAC, in ACCEPT: over the whole PROPOSAL (the client's
 * nonce, system id, name and link) and the whole ACCEPT with its MAC
 * field zero (the server's nonce, system id and link).
 */
static void
clc_mac_accept(const struct clc_conn *c, const struct conf_peer *p,
	       uint8_t mac[CLC_MAC_LEN])
{
	uint8_t acc[sizeof(struct clc_accept)];

	memcpy(acc, c->accept, sizeof(acc));
	memset(acc + offsetof(struct clc_accept, mac), 0, CLC_MAC_LEN);
	clc_mac(p, "smcr-accept", c->proposal, sizeof(c->proposal), acc,
		sizeof(acc), mac);
}

/* The client's MAC, in CONFIRM: PROPOSAL, ACCEPT, CONFIRM (MAC zero). */
static void
clc_mac_confirm(const struct clc_conn *c, const struct conf_peer *p,
		const uint8_t *confirm, uint8_t mac[CLC_MAC_LEN])
{
	uint8_t pa[sizeof(struct clc_proposal) + sizeof(struct clc_accept)];
	uint8_t cf[sizeof(struct clc_confirm)];

	memcpy(pa, c->proposal, sizeof(c->proposal));
	memcpy(pa + sizeof(c->proposal), c->accept, sizeof(c->accept));
	memcpy(cf, confirm, sizeof(cf));
	memset(cf + offsetof(struct clc_confirm, mac), 0, CLC_MAC_LEN);
	clc_mac(p, "smcr-confirm", pa, sizeof(pa), cf, sizeof(cf), mac);
}

static bool
clc_link_equal(const struct clc_link_info *a, const struct clc_link_info *b)
{
	return memcmp(a->gid, b->gid, sizeof(a->gid)) == 0 &&
	       memcmp(a->mac, b->mac, sizeof(a->mac)) == 0 &&
	       a->qpn == b->qpn && a->psn == b->psn && a->mtu == b->mtu;
}

/* ---- server ---- */

/*
 * Refuse a handshake that has no group yet: count it, DECLINE with code,
 * drain and close.
 */
static void
clc_refuse(struct clc_conn *c, uint32_t code, const char *why)
{
	char who[ADDR_STRLEN + 64];

	STATS_INC(c->ctx->stats, srv_hshake_err_cnt);
	if (code == CLC_DECL_AUTHFAIL)
		STATS_INC(c->ctx->stats, auth_failures);
	if ((code == CLC_DECL_AUTHFAIL || code == CLC_DECL_PEERUNKNOWN) &&
	    c->ctx->auth != NULL && c->src.len)
		auth_failed(c->ctx->auth, &c->src, now_ms());
	if (code == CLC_DECL_TIMEOUT_CL)
		clc_preauth_failed(c);
	if (code == CLC_DECL_AUTHFAIL)
		clc_auth_failed(c, why);
	else
		log_warnx("clc: %s: declined %s (0x%08x): %s",
			  clc_who(c, who, sizeof(who)), clc_decline_name(code),
			  code, why);
	clc_decline_send(c, code);
}

/* The server's handshake failed after its group was made. */
static void
clc_server_fail(struct clc_conn *c, uint32_t code, const char *why)
{
	char who[ADDR_STRLEN + 64];

	if (code == CLC_DECL_AUTHFAIL) {
		STATS_INC(c->ctx->stats, auth_failures);
		if (c->ctx->auth != NULL && c->src.len)
			auth_failed(c->ctx->auth, &c->src, now_ms());
	} else if (code == CLC_DECL_TIMEOUT_CL && c->preauth) {
		clc_preauth_failed(c);
	}
	if (code == CLC_DECL_AUTHFAIL)
		clc_auth_failed(c, why);
	else
		log_warnx("clc: %s: %s", clc_who(c, who, sizeof(who)), why);
	clc_decline_send(c, code);
	clc_lgr_end(c->lgr, code, false);
}

static int clc_serve_conn(struct lgr_ctx *ctx, int fd, const struct addr *src,
			  const void *in, size_t in_len, bool preauth,
			  bool hopped);

/* A PROPOSAL on its way to the worker it asked for (clc_hop). */
struct clc_hop {
	int fd;
	struct addr src;
	uint8_t msg[sizeof(struct clc_proposal)];
	size_t len;
};

static void
clc_hop_arrive(struct worker *w, void *arg)
{
	struct clc_hop *h = arg;
	struct lgr_ctx *ctx = worker_lgr(w);

	if (ctx == NULL || worker_preauth_get(w, &h->src) != 0) {
		log_debug("clc: PROPOSAL for worker %d: no room there",
			  worker_id(w));
		close(h->fd);
	} else {
		clc_serve_conn(ctx, h->fd, &h->src, h->msg, h->len, true, true);
	}
	free(h);
}

/*
 * The PROPOSAL asks for another worker of ours: the one with the
 * connections of a group that ended, which are to resume on the group
 * this sets up.  The connection goes there with what was read (once:
 * that worker serves it, whatever it asks).  Whether it went (or was
 * reset because that worker's queue was full: worker_pass).
 *
 * Only a PROPOSAL whose peer name and source address passed here gets
 * this far, so a stranger cannot pick the worker that judges it; its
 * failures there count in the daemon's one rate limit (worker_auth),
 * which its next connection meets on whichever worker it lands.
 */
static bool
clc_hop(struct clc_conn *c)
{
	struct lgr_ctx *ctx = c->ctx;
	struct clc_hop *h;
	int want = c->prop.worker - 1;

	if (c->hopped || c->prop.worker == 0 || ctx->w == NULL ||
	    want == worker_id(ctx->w) || want >= worker_count() ||
	    c->in_len > sizeof(h->msg))
		return false;
	h = calloc(1, sizeof(*h));
	if (h == NULL)
		return false;
	h->fd = c->fd;
	h->src = c->src;
	memcpy(h->msg, c->in, c->in_len);
	h->len = c->in_len;
	c->fd = -1;
	clc_conn_free(c);
	if (worker_pass(ctx->w, worker_get(want), clc_hop_arrive, h)) {
		/* that worker is flooded: the peer tries again */
		sock_reset(h->fd);
		free(h);
	}
	return true;
}

/* Handle the PROPOSAL in c->in; false when c went to another worker. */
static bool
clc_server_proposal(struct clc_conn *c)
{
	struct lgr_ctx *ctx = c->ctx;
	const struct conf_peer *peer;
	struct clc_accept_info acc;
	struct clc_decline_info d;
	uint8_t nonce[AUTH_NONCE_LEN], mac[CLC_MAC_LEN];
	struct lgr *lgr;
	uint32_t decl;

	if (c->in[4] != CLC_PROPOSAL) {
		if (c->in[4] == CLC_DECLINE) {
			if (clc_decline_decode(c->in, c->in_len, &d, &decl))
				d.diagnosis = CLC_DECL_BADMSG;
			stats_decline(ctx->stats, d.diagnosis, false);
		}
		clc_preauth_malformed(c);
		clc_refuse(c, CLC_DECL_BADMSG, "expected a PROPOSAL");
		return true;
	}
	if (clc_proposal_decode(c->in, c->in_len, &c->prop, &decl)) {
		clc_preauth_malformed(c);
		clc_refuse(c, decl, "malformed PROPOSAL");
		return true;
	}
	peer = conf_peer_find(lgr_ctx_conf(ctx), c->prop.name);
	if (peer == NULL) {
		clc_refuse(c, CLC_DECL_PEERUNKNOWN, c->prop.name);
		return true;
	}
	if (!peer->any_source && !addr_same_host(&peer->addr, &c->src)) {
		clc_refuse(c, CLC_DECL_AUTHFAIL,
			   "peer connected from another address than its own");
		return true;
	}
	if (clc_hop(c))
		return false;
	memcpy(c->proposal, c->in, sizeof(c->proposal));
	lgr = ctx->clc_ops->server_new(ctx, peer, &c->prop, &c->local, &decl);
	if (lgr == NULL) {
		clc_refuse(c, decl,
			   decl == CLC_DECL_NOSMCRDEV ?
				   "no RDMA device for this address" :
				   "cannot set up a link group");
		return true;
	}
	clc_unlist(c);
	c->lgr = lgr;
	lgr->clc = c;
	clc_lgr_body(lgr, &acc);
	auth_nonce(nonce);
	memcpy(acc.nonce, nonce, sizeof(acc.nonce));
	if (clc_accept_encode(c->accept, sizeof(c->accept), &acc) < 0) {
		clc_server_fail(c, CLC_DECL_INTERR, "cannot build ACCEPT");
		return true;
	}
	clc_mac_accept(c, peer, mac);
	memcpy(c->accept + offsetof(struct clc_accept, mac), mac, sizeof(mac));
	c->step = CLC_STEP_CONFIRM;
	clc_timer(c, ctx->t.clc_wait_ms);
	if (clc_send(c, c->accept, sizeof(c->accept)))
		clc_lgr_end(lgr, CLC_DECL_PEERDECL, true);
	return true;
}

static void
clc_server_confirm(struct clc_conn *c)
{
	struct lgr *lgr = c->lgr;
	struct clc_accept_info cf;
	uint8_t mac[CLC_MAC_LEN];
	uint32_t decl;

	if (clc_confirm_decode(c->in, c->in_len, &cf, &decl)) {
		clc_preauth_malformed(c);
		clc_server_fail(c, decl, "malformed CONFIRM");
		return;
	}
	clc_mac_confirm(c, lgr->peer, c->in, mac);
	if (!clc_mac_ok(lgr->peer, mac, cf.mac)) {
		clc_server_fail(c, CLC_DECL_AUTHFAIL,
				"CONFIRM failed authentication (wrong key?)");
		return;
	}
	if (!cf.first_contact) {
		clc_server_fail(c, CLC_DECL_SYNCERR,
				"CONFIRM for a link group we do not have");
		return;
	}
	if (memcmp(cf.system_id, c->prop.system_id, sizeof(cf.system_id)) ||
	    !clc_link_equal(&cf.link, &c->prop.link) ||
	    cf.max_conns != lgr->max_conns || cf.max_links != lgr->max_links ||
	    cf.features != lgr->features || cf.rmb_rkey || cf.rmb_vaddr) {
		clc_server_fail(c, CLC_DECL_BADMSG,
				"CONFIRM does not match PROPOSAL and ACCEPT");
		return;
	}
	decl = clc_lgr_peer(lgr, &cf);
	if (decl) {
		clc_server_fail(c, decl,
				decl == CLC_DECL_MEM ?
					"the peer has max_lgrs link groups" :
					"cannot connect the first link");
		return;
	}
	c->step = CLC_STEP_DONE;
	clc_timer(c, 0);
	clc_preauth_done(c);
	clc_lgr_done(lgr);
}

/*
 * The time a stranger gets for its PROPOSAL: a worker's handshake_timeout
 * (the connection is on the strangers' budget until its CONFIRM), else
 * CLC's wait.
 */
static unsigned int
clc_proposal_ms(const struct lgr_ctx *ctx)
{
	unsigned int ms = ctx->t.clc_wait_ms;

	if (ctx->w != NULL &&
	    (unsigned int)lgr_ctx_conf(ctx)->handshake_timeout * 1000 < ms)
		ms = (unsigned int)lgr_ctx_conf(ctx)->handshake_timeout * 1000;
	return ms;
}

/*
 * A server handshake on fd from src, of which in_len bytes were read
 * into in already: at most the header, or a whole PROPOSAL that came
 * from another worker (hopped), which is handled at once.
 */
static int
clc_serve_conn(struct lgr_ctx *ctx, int fd, const struct addr *src,
	       const void *hdr, size_t hdr_len, bool preauth, bool hopped)
{
	struct clc_conn *c;
	struct lgr *lgr;
	int pending = 0;

	if (hdr_len >
	    (hopped ? sizeof(struct clc_proposal) : sizeof(struct clc_hdr))) {
		close(fd);
		if (preauth && ctx->w != NULL)
			worker_preauth_put(ctx->w, src);
		return -EINVAL;
	}
	c = clc_conn_new(ctx, fd, CLC_STEP_PROPOSAL);
	if (c == NULL) {
		if (preauth && ctx->w != NULL)
			worker_preauth_put(ctx->w, src);
		return -ENOMEM;
	}
	if (src != NULL)
		c->src = *src;
	c->preauth = preauth;
	if (hdr_len > 0)
		memcpy(c->in, hdr, hdr_len);
	c->in_len = hdr_len;
	LIST_INSERT_HEAD(&ctx->clcs, c, entry);
	c->listed = true;
	ctx->nclcs++;
	event_add(c->rev, NULL);
	clc_timer(c, clc_proposal_ms(ctx));
	/*
	 * Connections that sent no PROPOSAL yet hold nothing but a socket
	 * and are bounded by the strangers' budget (worker_preauth_get):
	 * only groups that hold QPs count here, lest a few idle
	 * connections turn every real peer away.  Kernel peers' groups
	 * have budgets of their own (lgr_smcr_budget): an allowed host's
	 * smc_listen handshakes must not refuse authenticated peers.
	 */
	TAILQ_FOREACH(lgr, &ctx->lgrs, entry)
		pending += lgr->role == LGR_ROLE_SERVER &&
			   lgr->state == LGR_STATE_CLC && !lgr->smcr;
	c->hopped = hopped;
	if (pending >= CLC_PENDING_MAX)
		clc_refuse(c, CLC_DECL_MEM, "too many handshakes under way");
	else if (hopped)
		clc_message(c);
	return 0;
}

/*
 * Serve a CLC handshake a peer opened on our peer port: fd (taken over)
 * from src, of which hdr_len bytes (at most the 8-byte header) were read
 * into hdr already.  0 or -errno (fd is closed then).
 */
int
clc_serve(struct lgr_ctx *ctx, int fd, const struct addr *src, const void *hdr,
	  size_t hdr_len)
{
	return clc_serve_conn(ctx, fd, src, hdr, hdr_len, false, false);
}

/*
 * A stranger on our peer port opened with CLC's eyecatcher (session.c
 * peeked at it, nothing is read yet): serve its handshake.  fd (taken
 * over) from src holds one of w's places among strangers, which goes
 * with it until its CONFIRM.
 */
void
clc_accept(struct worker *w, int fd, const struct addr *src)
{
	struct lgr_ctx *ctx = worker_lgr(w);

	if (ctx == NULL) {
		worker_preauth_put(w, src);
		close(fd);
		return;
	}
	(void)clc_serve_conn(ctx, fd, src, NULL, 0, true, false);
}

/* ---- client ---- */

static void
clc_client_fail(struct clc_conn *c, uint32_t code, bool decline,
		const char *why)
{
	char who[ADDR_STRLEN + 64];

	if (code == CLC_DECL_AUTHFAIL)
		clc_auth_failed(c, why);
	else
		log_warnx("clc: %s: %s", clc_who(c, who, sizeof(who)), why);
	if (decline)
		clc_decline_send(c, code);
	clc_lgr_end(c->lgr, code, false);
}

static void
clc_client_proposal(struct clc_conn *c)
{
	struct lgr *lgr = c->lgr;
	const struct conf *conf = lgr->conf;
	struct clc_proposal_info *p = &c->prop;
	struct clc_accept_info body;

	clc_lgr_body(lgr, &body);
	memset(p, 0, sizeof(*p));
	memcpy(p->system_id, body.system_id, sizeof(p->system_id));
	p->link = body.link;
	p->max_conns = (uint8_t)conf->rdma.max_conns_per_lgr;
	p->max_links = (uint8_t)conf->rdma.max_links;
	p->worker = lgr->want_worker;
	p->features = CLC_FEAT_CONN_OPEN | CLC_FEAT_RESUME | CLC_FEAT_ORIGIN |
		      (conf->rdma.inline_enabled ? CLC_FEAT_INLINE : 0) |
		      (conf->rdma.cdc_data ? CLC_FEAT_CDC_DATA : 0);
	auth_nonce(p->nonce);
	snprintf(p->name, sizeof(p->name), "%s", conf->name);
	if (clc_proposal_encode(c->proposal, sizeof(c->proposal), p) < 0) {
		clc_client_fail(c, CLC_DECL_INTERR, false,
				"cannot build PROPOSAL");
		return;
	}
	c->step = CLC_STEP_ACCEPT;
	event_add(c->rev, NULL);
	clc_timer(c, c->ctx->t.clc_wait_ms);
	if (clc_send(c, c->proposal, sizeof(c->proposal)))
		clc_client_fail(c, CLC_DECL_PEERNOSMC, false,
				"connection lost sending PROPOSAL");
}

static void
clc_client_accept(struct clc_conn *c)
{
	struct lgr *lgr = c->lgr;
	struct clc_accept_info acc, cf;
	uint8_t mac[CLC_MAC_LEN], confirm[sizeof(struct clc_confirm)];
	uint32_t decl;

	if (clc_accept_decode(c->in, c->in_len, &acc, &decl)) {
		clc_client_fail(c, decl, true, "malformed ACCEPT");
		return;
	}
	memcpy(c->accept, c->in, sizeof(c->accept));
	clc_mac_accept(c, lgr->peer, mac);
	if (!clc_mac_ok(lgr->peer, mac, acc.mac)) {
		STATS_INC(c->ctx->stats, auth_failures);
		clc_client_fail(c, CLC_DECL_AUTHFAIL, true,
				"ACCEPT failed authentication (wrong key?)");
		return;
	}
	if (!acc.first_contact) {
		clc_client_fail(c, CLC_DECL_SYNCERR, true,
				"ACCEPT for a link group we do not have");
		return;
	}
	if (acc.max_conns > c->prop.max_conns) {
		clc_client_fail(c, CLC_DECL_MAXCONNERR, true,
				"ACCEPT raises max_conns");
		return;
	}
	if (acc.max_links > c->prop.max_links) {
		clc_client_fail(c, CLC_DECL_MAXLINKERR, true,
				"ACCEPT raises max_links");
		return;
	}
	if ((acc.features & ~c->prop.features) || acc.rmb_rkey ||
	    acc.rmb_vaddr) {
		clc_client_fail(c, CLC_DECL_BADMSG, true,
				"ACCEPT with features or an RMB not asked for");
		return;
	}
	decl = clc_lgr_peer(lgr, &acc);
	if (decl) {
		clc_client_fail(c, decl, true, "cannot connect the first link");
		return;
	}
	clc_lgr_body(lgr, &cf);
	if (clc_confirm_encode(confirm, sizeof(confirm), &cf) < 0) {
		clc_client_fail(c, CLC_DECL_INTERR, true,
				"cannot build CONFIRM");
		return;
	}
	clc_mac_confirm(c, lgr->peer, confirm, mac);
	memcpy(confirm + offsetof(struct clc_confirm, mac), mac, sizeof(mac));
	c->step = CLC_STEP_DONE;
	clc_timer(c, 0);
	if (clc_send(c, confirm, sizeof(confirm))) {
		clc_client_fail(c, CLC_DECL_PEERDECL, false,
				"connection lost sending CONFIRM");
		return;
	}
	clc_lgr_done(lgr);
}

static void
clc_connected(struct clc_conn *c)
{
	socklen_t len = sizeof(int);
	int err = 0;

	event_del(c->wev);
	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1)
		err = errno;
	if (err) {
		errno = err;
		log_warn("lgr %u: peer %s: connect", c->lgr->id,
			 c->lgr->peer->name);
		c->lgr->refused = err == ECONNREFUSED;
		clc_lgr_end(c->lgr,
			    err == ETIMEDOUT ? CLC_DECL_TIMEOUT_CL :
					       CLC_DECL_PEERNOSMC,
			    false);
		return;
	}
	len = sizeof(c->local.ss);
	if (getsockname(c->fd, (struct sockaddr *)&c->local.ss, &len) == 0)
		c->local.len = len;
	c->lgr->tcp_connected = true;
	clc_client_proposal(c);
}

/*
 * Start the client's handshake of lgr (its first link's QP made) on fd,
 * a connected stream socket, or with -1 on a new TCP connection to the
 * peer's port.  fd is taken over.  0, or -errno after failing the group.
 */
int
clc_client_start(struct lgr *lgr, int fd)
{
	const struct conf_peer *peer = lgr->peer;
	struct clc_conn *c;
	bool connecting = false;
	int rc;

	if (fd < 0) {
		rc = sock_connect(&peer->addr, &peer->source,
				  lgr_ctx_conf(lgr->ctx), false, &fd);
		if (fd == -1) {
			clc_lgr_end(lgr, CLC_DECL_MEM, false);
			return rc;
		}
		if (rc == -EADDRNOTAVAIL && peer->source.len != 0) {
			errno = -rc;
			log_warn("lgr %u: peer %s: source address", lgr->id,
				 peer->name);
			close(fd);
			clc_lgr_end(lgr, CLC_DECL_NOSMCRDEV, false);
			return rc;
		}
		if (rc != 0 && rc != -EINPROGRESS) {
			close(fd);
			lgr->refused = rc == -ECONNREFUSED;
			clc_lgr_end(lgr, CLC_DECL_PEERNOSMC, false);
			return rc;
		}
		connecting = rc == -EINPROGRESS;
	}
	c = clc_conn_new(lgr->ctx, fd, CLC_STEP_CONNECT);
	if (c == NULL) {
		clc_lgr_end(lgr, CLC_DECL_MEM, false);
		return -ENOMEM;
	}
	c->lgr = lgr;
	c->src = peer->addr;
	lgr->clc = c;
	if (connecting) {
		event_add(c->wev, NULL);
		clc_timer(c, lgr->ctx->t.clc_wait_ms);
		return 0;
	}
	lgr->tcp_connected = true;
	clc_client_proposal(c);
	return 0;
}

/* ---- events ---- */

/*
 * A whole message arrived in c->in: act on it for the current step.
 * False when c is gone (handed to another worker): not to be touched.
 */
static bool
clc_message(struct clc_conn *c)
{
	struct clc_decline_info d;
	char who[ADDR_STRLEN + 64];
	uint32_t decl;

	if (c->in[4] == CLC_DECLINE && c->step != CLC_STEP_PROPOSAL) {
		if (clc_decline_decode(c->in, c->in_len, &d, &decl))
			d.diagnosis = CLC_DECL_BADMSG;
		stats_decline(c->ctx->stats, d.diagnosis, false);
		log_warnx("clc: %s: peer declined: %s (0x%08x)",
			  clc_who(c, who, sizeof(who)),
			  clc_decline_name(d.diagnosis), d.diagnosis);
		c->step = CLC_STEP_CLOSING;
		clc_timer(c, CLC_CLOSE_WAIT_MS);
		clc_lgr_end(c->lgr, d.diagnosis, true);
		return true;
	}
	switch (c->step) {
	case CLC_STEP_PROPOSAL:
		return clc_server_proposal(c);
	case CLC_STEP_CONFIRM:
		if (c->in[4] == CLC_CONFIRM) {
			clc_server_confirm(c);
		} else {
			clc_preauth_malformed(c);
			clc_server_fail(c, CLC_DECL_BADMSG,
					"expected a CONFIRM");
		}
		break;
	case CLC_STEP_ACCEPT:
		if (c->in[4] == CLC_ACCEPT)
			clc_client_accept(c);
		else
			clc_client_fail(c, CLC_DECL_BADMSG, true,
					"expected an ACCEPT");
		break;
	case CLC_STEP_DONE:
		/* nothing but a DECLINE may follow the handshake */
		log_warnx("clc: %s: unexpected CLC message after the "
			  "handshake",
			  clc_who(c, who, sizeof(who)));
		c->step = CLC_STEP_CLOSING;
		clc_lgr_end(c->lgr, CLC_DECL_BADMSG, false);
		break;
	case CLC_STEP_CONNECT:
	case CLC_STEP_CLOSING:
		break;
	}
	return true;
}

/* Drain a declined connection; free it at EOF if no group has it. */
static void
clc_drain(struct clc_conn *c)
{
	uint8_t junk[256];
	ssize_t n;

	do
		n = recv(c->fd, junk, sizeof(junk), 0);
	while (n > 0 || (n == -1 && errno == EINTR));
	if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return;
	event_del(c->rev);
	if (c->lgr == NULL)
		clc_conn_free(c);
}

/* The connection broke or ended (rc from clc_read) in the current step. */
static void
clc_lost(struct clc_conn *c, int rc, uint32_t decl)
{
	char who[ADDR_STRLEN + 64];
	enum clc_step step = c->step;

	if (rc == -EPROTO) {
		/* malformed: tell the peer why */
		clc_preauth_malformed(c);
		if (c->lgr == NULL) {
			clc_refuse(c, decl, "malformed CLC message");
			return;
		}
		log_warnx("clc: %s: malformed CLC message",
			  clc_who(c, who, sizeof(who)));
		clc_decline_send(c, decl);
		clc_lgr_end(c->lgr, decl, false);
		return;
	}
	event_del(c->rev);
	if (c->lgr == NULL) {
		log_debug("clc: %s: closed before a PROPOSAL",
			  clc_who(c, who, sizeof(who)));
		if (c->preauth)
			clc_preauth_failed(c);
		clc_conn_free(c);
		return;
	}
	c->step = CLC_STEP_CLOSING;
	clc_timer(c, 0);
	if (step == CLC_STEP_ACCEPT)
		/* no answer to our PROPOSAL: it does not speak CLC */
		clc_lgr_end(c->lgr, CLC_DECL_PEERNOSMC, false);
	else if (step == CLC_STEP_CONFIRM)
		clc_lgr_end(c->lgr, CLC_DECL_PEERDECL, true);
	else
		clc_lgr_end(c->lgr, 0, false);
}

static void
clc_io(evutil_socket_t fd, short what, void *arg)
{
	struct clc_conn *c = arg;
	uint32_t decl = CLC_DECL_BADMSG;
	int rc;

	if (what & EV_WRITE) {
		if (c->step == CLC_STEP_CONNECT) {
			clc_connected(c);
			return;
		}
		if (clc_flush(c)) {
			clc_lost(c, -EPIPE, 0);
			return;
		}
	}
	if (!(what & EV_READ))
		return;
	if (c->step == CLC_STEP_CLOSING) {
		clc_drain(c);
		return;
	}
	rc = clc_read(c, &decl);
	if (rc == 0)
		return;
	if (rc < 0) {
		clc_lost(c, rc, decl);
		return;
	}
	/* a PROPOSAL handed to another worker took c with it */
	if (clc_message(c) && c->step != CLC_STEP_CLOSING)
		c->in_len = 0;
}

static void
clc_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct clc_conn *c = arg;
	char who[ADDR_STRLEN + 64];

	switch (c->step) {
	case CLC_STEP_CLOSING:
		event_del(c->rev);
		if (c->lgr == NULL)
			clc_conn_free(c);
		return;
	case CLC_STEP_PROPOSAL:
		clc_refuse(c, CLC_DECL_TIMEOUT_CL, "no PROPOSAL in time");
		return;
	case CLC_STEP_CONNECT:
		log_warnx("clc: %s: connect timed out",
			  clc_who(c, who, sizeof(who)));
		c->step = CLC_STEP_CLOSING;
		clc_lgr_end(c->lgr, CLC_DECL_TIMEOUT_CL, false);
		return;
	case CLC_STEP_ACCEPT:
		clc_client_fail(c, CLC_DECL_TIMEOUT_CL, true,
				"no ACCEPT in time");
		return;
	case CLC_STEP_CONFIRM:
		clc_server_fail(c, CLC_DECL_TIMEOUT_CL, "no CONFIRM in time");
		return;
	case CLC_STEP_DONE:
		return;
	}
}
