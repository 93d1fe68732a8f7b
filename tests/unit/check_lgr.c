// SPDX-License-Identifier: BSD-2-Clause
/*
 * Link groups end to end, in one process: two "daemons" (an lgr_ctx each,
 * one event_base) speak CLC over a socketpair and LLC over loopdev's model
 * of RC queue pairs.  What a user would notice: a link group comes up and
 * is proven by CONFIRM_LINK, gets its second link, survives losing one,
 * notices a silent peer, and when RDMA cannot be had (no device, wrong
 * key, a broken or hostile peer) says why and falls back; a monitor
 * (smcproxyctl monitor) sees groups and links come and go.
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <jansson.h>

#include "smcproxyd.h"
#include "lgr.h"
#include "monitor.h"
#include "smcr_clc_wire.h"
#include "clc_wire.h"
#include "llc_wire.h"

#define WAIT_MS 3000 /* generous bound for anything that should happen */

struct side {
	struct conf *conf;
	struct stats st;
	struct auth_limit al;
	struct lgr_ctx *ctx;
	struct dev *dev[2];
	int ndev;
};

static struct event_base *base;
static struct side A, B; /* A: daemon "a", the client; B: "b", the server */
static struct lgr_timeouts tmo;
static const char *side_extra = ""; /* more sections for side_init */

/* ---- harness ---- */

static void
side_init(struct side *s, const char *name, const char *peer, int ndev,
	  const char *rdma, const char *peer_addr)
{
	char text[1024];
	int i;

	memset(s, 0, sizeof(*s));
	snprintf(text, sizeof(text),
		 "smcproxyd: { name = \"%s\"; workers = 1; };\n"
		 "peers = ( { name = \"%s\"; address = \"%s\";"
		 " insecure = true; any_source = true; } );\n"
		 "rdma: { %s };\n%s",
		 name, peer, peer_addr ? peer_addr : "127.0.0.1:17100",
		 rdma ? rdma : "", side_extra);
	s->conf = conf_load_string(text, "test.conf", stderr);
	ck_assert_ptr_nonnull(s->conf);
	conf_hold(s->conf);
	auth_limit_init(&s->al);
	s->ctx = lgr_ctx_new(base, s->conf, &s->st, &s->al, &tmo);
	ck_assert_ptr_nonnull(s->ctx);
	for (i = 0; i < ndev; i++) {
		char dn[16];

		s->dev[i] = loopdev_new(base);
		ck_assert_ptr_nonnull(s->dev[i]);
		snprintf(dn, sizeof(dn), "loop%d", i);
		ck_assert_int_eq(
			lgr_ctx_add_dev(s->ctx, &loopdev_ops, s->dev[i], dn),
			0);
	}
	s->ndev = ndev;
}

static void
side_free(struct side *s)
{
	int i;

	lgr_ctx_free(s->ctx);
	s->ctx = NULL;
	for (i = 0; i < s->ndev; i++)
		loopdev_free(s->dev[i]);
	s->ndev = 0;
	conf_drop(s->conf);
}

/* The peer entry of side s (its only one), to set keys on. */
static struct conf_peer *
side_peer(struct side *s)
{
	return &s->conf->peers[0];
}

static void
side_key(struct side *s, unsigned char fill)
{
	struct conf_peer *p = side_peer(s);

	memset(p->key, fill, 32);
	p->key_len = 32;
	p->insecure = false;
}

static void
setup(void)
{
	memset(&A, 0, sizeof(A));
	memset(&B, 0, sizeof(B));
	base = event_base_new();
	ck_assert_ptr_nonnull(base);
	memset(&tmo, 0, sizeof(tmo));
	tmo.clc_wait_ms = 500;
	tmo.llc_wait_ms = 200;
}

static void
teardown(void)
{
	if (A.ctx != NULL)
		side_free(&A);
	if (B.ctx != NULL)
		side_free(&B);
	event_base_free(base);
}

static void
run_once(void)
{
	event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	usleep(100);
}

static bool
run_until(bool (*pred)(void), unsigned int ms)
{
	uint64_t end = now_ms() + ms;

	for (;;) {
		if (pred())
			return true;
		if (now_ms() > end)
			return false;
		run_once();
	}
}

static void
run_for(unsigned int ms)
{
	uint64_t end = now_ms() + ms;

	while (now_ms() < end)
		run_once();
}

static struct lgr *
lgr_of(const struct side *s)
{
	return s->ctx != NULL ? TAILQ_FIRST(&s->ctx->lgrs) : NULL;
}

static bool
lgr_active(const struct side *s, int links)
{
	const struct lgr *l = lgr_of(s);

	return l != NULL && l->state == LGR_STATE_ACTIVE &&
	       lgr_links_active(l) == links;
}

static bool
both_active(void)
{
	return lgr_active(&A, 1) && lgr_active(&B, 1);
}

static bool
both_two_links(void)
{
	return lgr_active(&A, 2) && lgr_active(&B, 2);
}

static bool
none_left(void)
{
	return lgr_of(&A) == NULL && lgr_of(&B) == NULL;
}

static bool
a_gone(void)
{
	return lgr_of(&A) == NULL;
}

static uint64_t
stat(const struct side *s, enum stats_id id)
{
	return stats_read(&s->st, id);
}

/* The counters of one decline code, as stat()'s id. */
#define DECL_SENT(nm) (STAT_DECL_SENT_BASE + CLC_DECLI_##nm)
#define DECL_RECEIVED(nm) (STAT_DECL_RECEIVED_BASE + CLC_DECLI_##nm)

/* Start a handshake from A to B over a socketpair. */
static void
connect_ab(void)
{
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_ptr_nonnull(lgr_client_new(A.ctx, side_peer(&A), sv[0]));
	ck_assert_int_eq(clc_serve(B.ctx, sv[1], NULL, NULL, 0), 0);
}

static struct lgr_link *
link_n(const struct side *s, uint8_t id)
{
	return lgr_link_by_id(lgr_of(s), id);
}

/* ---- a raw peer: the test speaks CLC itself ---- */

static int raw_fd = -1;
static uint8_t raw_buf[CLC_MSG_MAX];
static size_t raw_len, raw_want;

static bool
raw_readable(void)
{
	ssize_t n = recv(raw_fd, raw_buf + raw_len, raw_want - raw_len, 0);

	if (n > 0)
		raw_len += (size_t)n;
	return raw_len == raw_want || n == 0;
}

/* Read want bytes of what the daemon sends us (0 more at EOF). */
static size_t
raw_read(size_t want)
{
	raw_len = 0;
	raw_want = want;
	run_until(raw_readable, WAIT_MS);
	return raw_len;
}

/* A socketpair end for the test, the other served by B. */
static void
raw_to_b(void)
{
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_int_eq(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
	raw_fd = sv[0];
	ck_assert_int_eq(clc_serve(B.ctx, sv[1], NULL, NULL, 0), 0);
}

static void
raw_close(void)
{
	if (raw_fd >= 0)
		close(raw_fd);
	raw_fd = -1;
}

static void
raw_send(const void *buf, size_t len)
{
	ck_assert_int_eq(send(raw_fd, buf, len, MSG_NOSIGNAL), (ssize_t)len);
}

static void
raw_proposal(struct clc_proposal_info *p, const char *name)
{
	int i;

	memset(p, 0, sizeof(*p));
	for (i = 0; i < 8; i++)
		p->system_id[i] = (uint8_t)(0x40 + i);
	p->link.gid[10] = 0xff;
	p->link.gid[11] = 0xff;
	p->link.gid[15] = 0x99;
	p->link.qpn = 0x0abcde;
	p->link.psn = 0x123;
	p->link.mtu = 3;
	p->max_conns = 255;
	p->max_links = 2;
	p->features = CLC_FEAT_CONN_OPEN;
	for (i = 0; i < 32; i++)
		p->nonce[i] = (uint8_t)i;
	snprintf(p->name, sizeof(p->name), "%s", name);
}

/* The DECLINE B answered with: its reason (0 if none came). */
static uint32_t
raw_decline(void)
{
	struct clc_decline_info d;
	uint32_t decl;

	if (raw_read(sizeof(struct clc_decline)) != sizeof(struct clc_decline))
		return 0;
	if (clc_decline_decode(raw_buf, raw_len, &d, &decl))
		return 0;
	return d.diagnosis;
}

/* ---- tests ---- */

/* The handshake ends in a link proven by CONFIRM_LINK on both sides. */
START_TEST(handshake_confirmed)
{
	struct lgr *la, *lb;
	struct lgr_link *ka, *kb;
	json_t *lgrs, *links, *o;
	uint32_t reason = 1;

	side_init(&A, "a", "b", 1, NULL, NULL);
	side_init(&B, "b", "a", 1, NULL, NULL);
	connect_ab();
	ck_assert(run_until(both_active, WAIT_MS));
	la = lgr_of(&A);
	lb = lgr_of(&B);
	ck_assert_int_eq(la->role, LGR_ROLE_CLIENT);
	ck_assert_int_eq(lb->role, LGR_ROLE_SERVER);
	ck_assert_mem_eq(la->uid, lb->uid, 4);
	ck_assert_mem_eq(la->peer_system_id, B.ctx->system_id, 8);
	ck_assert_mem_eq(lb->peer_system_id, A.ctx->system_id, 8);
	ck_assert_uint_eq(la->max_conns, 255);
	ck_assert_uint_eq(la->max_links, 2);
	ck_assert_uint_eq(la->peer_token, lb->token);
	ck_assert_uint_eq(lb->peer_token, la->token);
	ka = link_n(&A, 1);
	kb = link_n(&B, 1);
	ck_assert_ptr_nonnull(ka);
	ck_assert_ptr_nonnull(kb);
	ck_assert_uint_eq(ka->peer.qpn, kb->local.qpn);
	ck_assert_uint_eq(kb->peer.qpn, ka->local.qpn);
	ck_assert_mem_eq(ka->peer.gid, kb->local.gid, 16);
	ck_assert_uint_eq(stat(&A, STAT_lgr_created), 1);
	ck_assert_uint_eq(stat(&B, STAT_lgr_created), 1);
	ck_assert_uint_eq(stat(&A, STAT_link_up), 1);
	ck_assert_uint_eq(stat(&B, STAT_link_up), 1);
	ck_assert_uint_eq(stat(&A, STAT_clc_declines_sent), 0);
	ck_assert_str_eq(peer_mode("b", &reason), "rdma");
	ck_assert_uint_eq(reason, 0);
	ck_assert_str_eq(peer_mode("a", NULL), "rdma");

	lgrs = json_array();
	links = json_array();
	lgr_json(A.ctx, lgrs, links);
	ck_assert_uint_eq(json_array_size(lgrs), 1);
	ck_assert_uint_eq(json_array_size(links), 1);
	o = json_array_get(lgrs, 0);
	ck_assert_str_eq(json_string_value(json_object_get(o, "state")),
			 "active");
	ck_assert_str_eq(json_string_value(json_object_get(o, "role")),
			 "client");
	ck_assert_str_eq(json_string_value(json_object_get(o, "peer")), "b");
	ck_assert_int_eq(json_integer_value(json_object_get(o, "links")), 1);
	o = json_array_get(links, 0);
	ck_assert_str_eq(json_string_value(json_object_get(o, "state")),
			 "active");
	ck_assert_str_eq(json_string_value(json_object_get(o, "device")),
			 "loop0");
	ck_assert_int_eq(json_integer_value(json_object_get(o, "qpn")),
			 ka->local.qpn);
	ck_assert_int_eq(json_integer_value(json_object_get(o, "peer_qpn")),
			 kb->local.qpn);
	/* the CONFIRM_LINK response went out and completed */
	ck_assert_int_ge(json_integer_value(json_object_get(o, "wrs_posted")),
			 1);
	ck_assert_int_ge(json_integer_value(json_object_get(o, "completions")),
			 1);
	ck_assert_int_eq(json_integer_value(json_object_get(o, "errors")), 0);
	ck_assert_ptr_nonnull(json_object_get(o, "slot_waits"));
	ck_assert_ptr_nonnull(json_object_get(o, "inline_wrs"));
	json_decref(lgrs);
	json_decref(links);
}
END_TEST

static bool
smcr_both_active(void)
{
	const struct lgr *la = lgr_of(&A), *lb = lgr_of(&B);

	return la != NULL && lb != NULL && lgr_is_active(la) &&
	       lgr_is_active(lb);
}

/* What B's link got of the v2-form ADD_LINK type (A's answer). */
static uint8_t smcr_answer[LLC_MSG_LEN];
static size_t smcr_answer_len;

static void
smcr_answer_rx(struct wr_link *l, const void *msg, size_t len, void *arg)
{
	(void)l;
	(void)arg;
	smcr_answer_len = len < sizeof(smcr_answer) ? len : sizeof(smcr_answer);
	memcpy(smcr_answer, msg, smcr_answer_len);
}

static bool
smcr_answered(void)
{
	return smcr_answer_len > 0;
}

/*
 * Post raw bytes on link as one SEND, as a kernel peer's longer LLC
 * messages (a v2 ADD_LINK carries its rkeys behind the 44 bytes).
 */
static void
post_raw(struct lgr_link *link, const void *msg, size_t len)
{
	struct wr_tx_slot *slot;

	ck_assert_int_eq(wr_tx_get(link->wr, &slot, NULL), 0);
	memcpy(wr_tx_buf(slot), msg, len);
	wr_tx_len(link->wr, slot, (uint32_t)len);
	ck_assert_int_eq(wr_tx_post(link->wr, slot, NULL, 0, NULL, NULL), 0);
}

/* Both sides with kernel_smc on (the SMC-R dialect), ndev devices. */
/*
 * Both sides serve the EID "LAB"; allow_a and allow_b are their
 * kernel_smc.allow lists (a quoted, comma separated list).  The second
 * link's GIDs are loopdev's 127.0.1.N: a side whose list lacks them
 * refuses the other's second link (lgr_smcr_gid_bound).
 */
static void
smcr_sides_allow(int ndev, const char *allow_a, const char *allow_b)
{
	static char extra[160];

	snprintf(extra, sizeof(extra),
		 "kernel_smc: { ueids = [ \"LAB\" ]; allow = [ %s ]; };\n",
		 allow_a);
	side_extra = extra;
	side_init(&A, "a", "b", ndev, NULL, NULL);
	snprintf(extra, sizeof(extra),
		 "kernel_smc: { ueids = [ \"LAB\" ]; allow = [ %s ]; };\n",
		 allow_b);
	side_init(&B, "b", "a", ndev, NULL, NULL);
	side_extra = "";
}

static void
smcr_sides(int ndev)
{
	smcr_sides_allow(ndev, "\"127.0.1.0/24\"", "\"127.0.1.0/24\"");
}

/* The EID smcr_sides serve, as the wire has it: "LAB", blank-padded. */
static const uint8_t *
lab_eid(void)
{
	static uint8_t eid[SMCR_CLC_EID_LEN];

	ck_assert_int_eq(smcr_clc_eid_put(eid, "LAB"), 0);
	return eid;
}

/* The TCP addresses the standard groups are made with (smcr_host). */
static struct addr host_a, host_b, host_x;

static int smcr_seen; /* groups lgr_smcr_foreach gave smcr_seen_cb */

static void
smcr_seen_cb(const struct addr *h, bool up, int conns, int links, void *arg)
{
	char ip[ADDR_STRLEN];

	ck_assert(addr_host(h, ip, sizeof(ip)));
	ck_assert_str_eq(ip, "192.0.2.1");
	ck_assert(up);
	ck_assert_int_eq(conns, 1);
	ck_assert_int_eq(links, 1);
	smcr_seen++;
}

static const struct addr *
host(struct addr *a, const char *ip)
{
	ck_assert_int_eq(addr_parse_host(ip, a), 0);
	return a;
}

/*
 * s's standard group of role with the peer sysid, gid (release, asking
 * for two links), as smcr.c makes it, with its first connection c: its
 * first link's QP and our system id for the CLC in *q and sys.  The
 * peer's TCP address: A's (192.0.2.1) for B's server groups, B's
 * (192.0.2.2) for A's client groups.
 */
static struct lgr *
smcr_group(struct side *s, enum lgr_role role, const uint8_t sysid[8],
	   const uint8_t gid[16], uint8_t release, struct lgr_conn *c,
	   struct dev_qp_addr *q, uint8_t sys[8])
{
	const struct addr *peer = role == LGR_ROLE_SERVER ?
					  host(&host_a, "192.0.2.1") :
					  host(&host_b, "192.0.2.2");
	struct addr any;
	uint32_t decline = 0;
	struct lgr *l;

	memset(&any, 0, sizeof(any));
	memset(c, 0, sizeof(*c));
	l = lgr_smcr_new(s->ctx, role, sysid, gid, 255, 2, release, &any, peer,
			 lab_eid(), &decline);
	ck_assert_ptr_nonnull(l);
	ck_assert_int_eq(lgr_conn_add_first(l, c), 0);
	ck_assert_uint_ne(c->token, 0);
	lgr_smcr_local(&l->link[0], q, sys);
	return l;
}

/*
 * The SMC-R dialect's groups (kernel SMC-R peers), set up as smcr.c
 * does once the CLC told each side the other's QP: the server's group
 * and the client's, each with the connection of that CLC on it from the
 * start, come up by CONFIRM_LINK in LLC v2's form (each side decodes
 * only that on such a group), one link, no ADD_LINK; a second
 * connection finds them (lgr_smcr_find) by system id, GID and QP; both
 * are accounted to the kernel peers' pseudo-peer and named smc-r.
 */
START_TEST(smcr_groups_both_roles)
{
	struct lgr_conn ca, cb, ca2;
	struct dev_qp_addr qa, qb;
	uint8_t sa[8], sb[8], zero[8] = {0};
	/* the GIDs the CLC gave each (the client's, the server's) */
	const uint8_t ga[16] = {0xfe, 0x80, [15] = 0xa},
		      gb[16] = {0xfe, 0x80, [15] = 0xb};
	struct lgr *la, *lb;
	struct lgr_link *on = NULL;
	json_t *lgrs, *links;
	struct llc_v2_info *v2;
	uint8_t raw[LLC_V2_ADD_LINK_LEN(1)];
	int n;

	smcr_sides(1);
	memset(&ca2, 0, sizeof(ca2));
	/* the client's PROPOSAL (v2 only, as Linux: system id zero) */
	/* the client is release 0 (Linux 6.1): B offers an ADD_LINK
	 * without a link once the group is up (one device: one link) */
	lb = smcr_group(&B, LGR_ROLE_SERVER, zero, ga, 0, &cb, &qb, sb);
	/* on its way: a second PROPOSAL from that client waits for it */
	ck_assert(lgr_smcr_pending(B.ctx, LGR_ROLE_SERVER, zero, ga, &host_a));
	ck_assert(!lgr_smcr_pending(B.ctx, LGR_ROLE_SERVER, zero, gb, &host_a));
	ck_assert(!lgr_smcr_pending(B.ctx, LGR_ROLE_CLIENT, zero, ga, &host_a));
	/* not for another host claiming that client's system id and GID */
	ck_assert(!lgr_smcr_pending(B.ctx, LGR_ROLE_SERVER, zero, ga,
				    host(&host_x, "192.0.2.9")));
	/* B's ACCEPT: A's group with B, its QP connected, waiting */
	la = smcr_group(&A, LGR_ROLE_CLIENT, sb, gb, 1, &ca, &qa, sa);
	/* not before the group is active: only at its setup */
	ck_assert_int_eq(lgr_conn_add_first(la, &ca2), -EINVAL);
	ck_assert_uint_eq(lgr_smcr_peer(la, &qb), 0);
	/* A's CONFIRM: B connects and sends CONFIRM_LINK */
	ck_assert_uint_eq(lgr_smcr_peer(lb, &qa), 0);
	ck_assert(run_until(smcr_both_active, WAIT_MS));
	ck_assert(lgr_is_smcr(la) && lgr_is_smcr(lb));
	ck_assert(!lgr_smcr_pending(B.ctx, LGR_ROLE_SERVER, zero, ga, &host_a));
	ck_assert_uint_eq(la->max_links, 1);
	ck_assert_uint_eq(lb->max_links, 1);
	ck_assert_str_eq(lgr_peer(la)->name, CONF_SMCR_PEER);
	ck_assert_uint_eq(stat(&B, STAT_smc_lgrs), 1);
	ck_assert_uint_eq(stat(&A, STAT_smc_out_lgrs), 1);
	ck_assert_uint_eq(stat(&A, STAT_link_up), 1);
	ck_assert_uint_eq(stat(&B, STAT_link_up), 1);
	/* our system id towards kernel peers: the worker's, not zero */
	ck_assert(memcmp(sa, zero, 8) != 0);
	/* a later connection joins: the server by system id and GID, the
	 * client by the QP the server's ACCEPT names */
	ck_assert_ptr_eq(lgr_smcr_find(B.ctx, LGR_ROLE_SERVER, zero, qa.gid, 0,
				       &host_a, NULL),
			 lb);
	ck_assert_ptr_eq(lgr_smcr_find(A.ctx, LGR_ROLE_CLIENT, sb, qb.gid,
				       qb.qpn, &host_b, &on),
			 la);
	ck_assert_ptr_eq(on, &la->link[0]);
	ck_assert_ptr_null(lgr_smcr_find(A.ctx, LGR_ROLE_CLIENT, sb, qb.gid,
					 qb.qpn + 1, &host_b, NULL));
	ck_assert_ptr_null(lgr_smcr_find(A.ctx, LGR_ROLE_SERVER, sb, qb.gid, 0,
					 &host_b, NULL));
	/* issue 43, M1: a join is bound to the host the group was made
	 * with.  Another server (192.0.2.9), whose ACCEPT names B's system
	 * id, GID and QP, does not get A's group with B (A would write its
	 * client's bytes into B's memory at the rkey the other chose); nor
	 * does another client that names A's in its PROPOSAL get B's.  With
	 * no host (session_rdma_smcr_foreign: is it another's?) both show */
	host(&host_x, "192.0.2.9");
	ck_assert_ptr_null(lgr_smcr_find(A.ctx, LGR_ROLE_CLIENT, sb, qb.gid,
					 qb.qpn, &host_x, NULL));
	ck_assert_ptr_null(lgr_smcr_find(B.ctx, LGR_ROLE_SERVER, zero, qa.gid,
					 0, &host_x, NULL));
	ck_assert_ptr_eq(lgr_smcr_find(A.ctx, LGR_ROLE_CLIENT, sb, qb.gid,
				       qb.qpn, NULL, NULL),
			 la);
	/* the same host under another address family is the same host */
	ck_assert_ptr_eq(lgr_smcr_find(A.ctx, LGR_ROLE_CLIENT, sb, qb.gid,
				       qb.qpn,
				       host(&host_x, "::ffff:192.0.2.2"), NULL),
			 la);
	ck_assert_int_eq(lgr_conn_add(la, &ca2), 0);
	ck_assert_ptr_eq(lgr_conn_find(la, ca2.token), &ca2);
	/* B's offer without a link went out once and A refused it, as a
	 * Linux client does; no second link is tried */
	run_for(3 * tmo.llc_wait_ms);
	ck_assert_uint_eq(stat(&B, STAT_smc_add_link_none), 1);
	ck_assert_uint_eq(stat(&A, STAT_smc_add_link_rejects), 1);
	ck_assert(!lb->smcr_offered);
	ck_assert_int_eq(lgr_links_active(la), 1);
	ck_assert_int_eq(lgr_links_active(lb), 1);
	ck_assert_uint_eq(stat(&A, STAT_llc_protocol_errors), 0);
	ck_assert_uint_eq(stat(&B, STAT_llc_protocol_errors), 0);
	/* a Linux 6.1 server (release 0) offers a second link anyway: a v2
	 * ADD_LINK with its RMB's rkey behind the 44 bytes.  A refuses it
	 * in v2 form, as a Linux client without an alternate path, and
	 * keeps its one link (B's link takes the answer here: our server
	 * never asks) */
	wr_rx_register(lb->link[0].wr, LLC_V2_FORM | LLC_ADD_LINK,
		       smcr_answer_rx);
	v2 = calloc(1, sizeof(*v2));
	ck_assert_ptr_nonnull(v2);
	v2->form = 2;
	v2->m.type = LLC_ADD_LINK;
	memcpy(v2->m.add_link.gid, qb.gid, sizeof(qb.gid));
	v2->m.add_link.qpn = qb.qpn + 1;
	v2->m.add_link.link_num = 2;
	v2->m.add_link.mtu = 3;
	v2->m.add_link.psn = 1;
	memcpy(v2->target_gid, qa.gid, sizeof(qa.gid));
	v2->num_rkeys = 1;
	v2->rt[0].rkey = 0x1234;
	v2->rt[0].rkey_new = 0x5678;
	v2->rt[0].vaddr_new = 0x10000;
	n = llc_v2_encode(raw, sizeof(raw), v2);
	ck_assert_int_eq(n, (int)LLC_V2_ADD_LINK_LEN(1));
	post_raw(&lb->link[0], raw, (size_t)n);
	ck_assert(run_until(smcr_answered, WAIT_MS));
	ck_assert_uint_eq(smcr_answer_len, LLC_MSG_LEN);
	ck_assert_int_eq(llc_v2_decode(smcr_answer, smcr_answer_len, v2), 0);
	ck_assert_uint_eq(v2->form, 2);
	ck_assert_uint_eq(v2->m.type, LLC_ADD_LINK);
	ck_assert_uint_eq(v2->m.flags, LLC_FLAG_RESP | LLC_FLAG_ADD_LINK_REJ);
	/* a Linux client's REQ_ADD_LINK with two GIDs (60 bytes): B
	 * answers as Linux does, the first 44 bytes with RESP set */
	smcr_answer_len = 0;
	wr_rx_register(la->link[0].wr, LLC_V2_FORM | LLC_REQ_ADD_LINK,
		       smcr_answer_rx);
	memset(v2, 0, sizeof(*v2));
	v2->form = 2;
	v2->m.type = LLC_REQ_ADD_LINK;
	v2->gid_cnt = 2;
	memcpy(v2->gids[0], qa.gid, sizeof(qa.gid));
	memcpy(v2->gids[1], qb.gid, sizeof(qb.gid));
	n = llc_v2_encode(raw, sizeof(raw), v2);
	ck_assert_int_eq(n, LLC_MSG_LEN + 16);
	post_raw(&la->link[0], raw, (size_t)n);
	ck_assert(run_until(smcr_answered, WAIT_MS));
	ck_assert_uint_eq(smcr_answer_len, LLC_MSG_LEN);
	ck_assert_int_eq(llc_v2_decode(smcr_answer, smcr_answer_len, v2), 0);
	ck_assert_uint_eq(v2->m.type, LLC_REQ_ADD_LINK);
	ck_assert_uint_eq(v2->m.flags, LLC_FLAG_RESP);
	ck_assert_uint_eq(v2->gid_cnt, 1);
	ck_assert_mem_eq(v2->gids[0], qa.gid, sizeof(qa.gid));
	ck_assert_int_eq(lgr_links_active(lb), 1);
	ck_assert_uint_eq(stat(&B, STAT_llc_protocol_errors), 0);
	free(v2);
	ck_assert_uint_eq(stat(&A, STAT_smc_add_link_rejects), 2);
	ck_assert_uint_eq(stat(&A, STAT_llc_protocol_errors), 0);
	ck_assert_int_eq(lgr_links_active(la), 1);
	ck_assert(lgr_is_active(la));
	lgrs = json_array();
	links = json_array();
	lgr_json(B.ctx, lgrs, links);
	ck_assert_str_eq(json_string_value(json_object_get(
				 json_array_get(lgrs, 0), "dialect")),
			 "smc-r");
	ck_assert_str_eq(json_string_value(json_object_get(
				 json_array_get(lgrs, 0), "host")),
			 "192.0.2.1");
	/* show peers' walk: B's server group with A's host, up, its
	 * connection and its one link */
	smcr_seen = 0;
	lgr_smcr_foreach(B.ctx, smcr_seen_cb, NULL);
	ck_assert_int_eq(smcr_seen, 1);
	json_decref(lgrs);
	json_decref(links);
	lgr_conn_del(&ca2);
	lgr_conn_del(&ca);
	lgr_conn_del(&cb);
}
END_TEST

/*
 * Routed RoCE v2: each side's QPs are connected along its peer's path
 * (rdma's DSCP, priority, timeout and retry counts, or the peer's own),
 * on the peer's device when it names one.
 */
START_TEST(links_take_the_peers_path)
{
	const struct dev_path *pa, *pb;
	struct lgr_link *ka, *kb;
	json_t *lgrs, *links;

	side_init(&A, "a", "b", 2,
		  "max_links = 1; dscp = 26; priority = 3; qp_timeout = 18; "
		  "retry_count = 5; rnr_retry = 6;",
		  NULL);
	side_init(&B, "b", "a", 1, "max_links = 1; dscp = 26;", NULL);
	snprintf(side_peer(&A)->device, sizeof(side_peer(&A)->device), "loop1");
	side_peer(&B)->route.dscp = 46;
	connect_ab();
	ck_assert(run_until(both_active, WAIT_MS));
	ka = link_n(&A, 1);
	kb = link_n(&B, 1);
	ck_assert_ptr_nonnull(ka);
	ck_assert_ptr_nonnull(kb);
	pa = loopdev_qp_path(wr_link_qp(ka->wr));
	ck_assert_uint_eq(pa->traffic_class, 26 << 2);
	ck_assert_uint_eq(pa->sl, 3);
	ck_assert_uint_eq(pa->timeout, 18);
	ck_assert_uint_eq(pa->retry_cnt, 5);
	ck_assert_uint_eq(pa->rnr_retry, 6);
	pb = loopdev_qp_path(wr_link_qp(kb->wr));
	ck_assert_uint_eq(pb->traffic_class, 46 << 2);
	ck_assert_uint_eq(pb->sl, 0);
	ck_assert_uint_eq(pb->timeout, 15);
	ck_assert_uint_eq(pb->retry_cnt, 7);
	ck_assert_uint_eq(pb->rnr_retry, 7);

	/* peers[].device: loop1, not the first device */
	lgrs = json_array();
	links = json_array();
	lgr_json(A.ctx, lgrs, links);
	ck_assert_uint_eq(json_array_size(links), 1);
	ck_assert_str_eq(json_string_value(json_object_get(
				 json_array_get(links, 0), "device")),
			 "loop1");
	json_decref(lgrs);
	json_decref(links);
}
END_TEST

/*
 * A path that works one way only (a route whose hop limit dies at a
 * router, a firewall dropping RoCE one way): the client gets the
 * server's CONFIRM_LINK and takes its group for active, but its response
 * never arrives and the server declines TIMEOUT_CL on the control
 * connection.  That is a failed setup, not a lost path: the peer goes on
 * the fallback's back-off, as for any decline, and no new group is tried
 * for each connection (before, each one tried four and was reset).
 */
START_TEST(decline_after_client_confirmed)
{
	struct lgr_link *ka;
	struct peer_info info;
	uint32_t reason = 0;

	side_init(&A, "a", "b", 1, NULL, NULL);
	side_init(&B, "b", "a", 1, NULL, NULL);
	connect_ab();
	ck_assert_ptr_nonnull(lgr_of(&A));
	ka = &lgr_of(&A)->link[0]; /* its first, not yet confirmed */
	ck_assert_ptr_nonnull(ka->wr);
	loopdev_hold(wr_link_qp(ka->wr), true); /* a's sends never arrive */
	ck_assert(run_until(none_left, WAIT_MS));
	ck_assert_uint_eq(stat(&B, STAT_clc_declines_sent), 1);
	ck_assert_uint_eq(stat(&A, STAT_clc_declines_received), 1);
	ck_assert_uint_eq(stat(&B, DECL_SENT(TIMEOUT_CL)), 1);
	ck_assert_uint_eq(stat(&A, DECL_RECEIVED(TIMEOUT_CL)), 1);
	ck_assert_str_eq(peer_mode("b", &reason), "fallback");
	ck_assert_str_eq(clc_decline_name(reason), "TIMEOUT_CL");
	ck_assert_int_eq(peer_info("b", &info), 0);
	ck_assert(info.by_peer);
	ck_assert_uint_gt(info.backoff_left_ms, 0);
	ck_assert_uint_eq(stat(&A, STAT_clnt_hshake_err_cnt), 1);
	/* backed off: the next connection does not try again */
	ck_assert_ptr_null(lgr_get(A.ctx, side_peer(&A)));
	ck_assert_ptr_null(lgr_of(&A));
}
END_TEST

/* With the right pre-shared key on both sides the MACs verify. */
START_TEST(handshake_with_key)
{
	side_init(&A, "a", "b", 1, NULL, NULL);
	side_init(&B, "b", "a", 1, NULL, NULL);
	side_key(&A, 0x5a);
	side_key(&B, 0x5a);
	connect_ab();
	ck_assert(run_until(both_active, WAIT_MS));
	ck_assert_uint_eq(stat(&A, STAT_auth_failures), 0);
	ck_assert_uint_eq(stat(&B, STAT_auth_failures), 0);
}
END_TEST

/* Both sides have a second device: the server adds a second link. */
START_TEST(second_link)
{
	struct lgr_conn c[2];
	struct lgr_link *ka, *kb;

	side_init(&A, "a", "b", 2, NULL, NULL);
	side_init(&B, "b", "a", 2, NULL, NULL);
	connect_ab();
	ck_assert(run_until(both_two_links, WAIT_MS));
	ka = link_n(&A, 2);
	kb = link_n(&B, 2);
	ck_assert_ptr_nonnull(ka);
	ck_assert_ptr_nonnull(kb);
	ck_assert_str_eq(ka->dev->name, "loop1");
	ck_assert_str_eq(kb->dev->name, "loop1");
	ck_assert_uint_eq(ka->peer.qpn, kb->local.qpn);
	ck_assert_uint_eq(stat(&A, STAT_link_up), 2);
	ck_assert_uint_eq(stat(&B, STAT_link_up), 2);
	/* connections spread over both links */
	memset(c, 0, sizeof(c));
	ck_assert_int_eq(lgr_conn_add(lgr_of(&A), &c[0]), 0);
	ck_assert_int_eq(lgr_conn_add(lgr_of(&A), &c[1]), 0);
	ck_assert_ptr_ne(c[0].link, c[1].link);
	lgr_conn_del(&c[0]);
	lgr_conn_del(&c[1]);
	ck_assert_int_eq(lgr_of(&A)->nconns, 0);
	/* an acceptor joins the link the open came on, loaded or not */
	ck_assert_int_eq(lgr_conn_add_on(lgr_of(&A), &c[0], ka), 0);
	ck_assert_int_eq(lgr_conn_add_on(lgr_of(&A), &c[1], ka), 0);
	ck_assert_ptr_eq(c[0].link, ka);
	ck_assert_ptr_eq(c[1].link, ka);
	ck_assert_int_eq(ka->conns, 2);
	lgr_conn_del(&c[0]);
	lgr_conn_del(&c[1]);
	/* not a link of this group, or not active: refused */
	ck_assert_int_eq(lgr_conn_add_on(lgr_of(&A), &c[0], kb), -ENOLINK);
	ck_assert_int_eq(lgr_of(&A)->nconns, 0);
	ck_assert_int_eq(ka->conns, 0);
}
END_TEST

/* The client has no second device: it rejects ADD_LINK, one link stays. */
START_TEST(add_link_rejected)
{
	side_init(&A, "a", "b", 1, NULL, NULL);
	side_init(&B, "b", "a", 2, NULL, NULL);
	connect_ab();
	ck_assert(run_until(both_active, WAIT_MS));
	run_for(4 * tmo.llc_wait_ms);
	ck_assert(both_active());
	ck_assert_uint_eq(stat(&B, STAT_link_up), 1);
	ck_assert_uint_eq(stat(&B, STAT_llc_protocol_errors), 0);
	ck_assert_uint_eq(stat(&A, STAT_llc_protocol_errors), 0);
	/* the server tried and waits before trying again */
	ck_assert_uint_gt(lgr_of(&B)->next_add_ms, now_ms() + 1000);
	ck_assert_int_eq(lgr_of(&B)->link[1].state, LGR_LINK_FREE);
	ck_assert_int_eq(lgr_of(&B)->link[2].state, LGR_LINK_FREE);
}
END_TEST

static bool
tests_answered(void)
{
	return link_n(&A, 1) != NULL && link_n(&A, 1)->test_answered >= 2 &&
	       link_n(&B, 1) != NULL && link_n(&B, 1)->test_answered >= 2;
}

/*
 * A silent link is probed with TEST_LINK and answered; once the peer
 * stops answering, the link is down within test_link_time + 2 s (here
 * scaled down) and, being the only one, takes its group with it.
 */
START_TEST(test_link)
{
	uint64_t t0, took;

	tmo.test_link_ms = 40;
	side_init(&A, "a", "b", 1, NULL, NULL);
	side_init(&B, "b", "a", 1, NULL, NULL);
	connect_ab();
	ck_assert(run_until(both_active, WAIT_MS));
	ck_assert(run_until(tests_answered, WAIT_MS));
	/* each answer timed: a round trip, not a time since some epoch */
	ck_assert_uint_gt(link_n(&A, 1)->test_rtt_us, 0);
	ck_assert_uint_lt(link_n(&A, 1)->test_rtt_us, 60 * 1000000);
	ck_assert_uint_eq(stat(&A, STAT_link_down), 0);
	/* B goes deaf to TEST_LINK: it neither answers nor hears answers */
	wr_rx_register(link_n(&B, 1)->wr, LLC_TEST_LINK, NULL);
	t0 = now_ms();
	ck_assert(run_until(a_gone, WAIT_MS));
	took = now_ms() - t0;
	/* a bound, not a measurement: generous for a loaded machine */
	ck_assert_uint_le(took, tmo.test_link_ms + tmo.llc_wait_ms + 2000);
	ck_assert_uint_ge(took, tmo.llc_wait_ms);
	ck_assert_uint_eq(stat(&A, STAT_link_down), 1);
	ck_assert_uint_eq(stat(&A, STAT_lgr_terminated), 1);
	ck_assert_str_eq(peer_mode("b", NULL), "fallback");
}
END_TEST

/* Step check c on side s's groups until it has its result. */
static void
check_run(struct side *s, struct lgr_check *c)
{
	uint64_t end = now_ms() + WAIT_MS;

	while (!lgr_check_step(s->ctx, c)) {
		ck_assert_uint_lt(now_ms(), end);
		run_once();
	}
}

/*
 * smcproxyctl check on a group that is up: a TEST_LINK round trip of its
 * own on the group's link, timed.  Once the peer stops answering, the
 * check says so instead.
 */
START_TEST(check_peer_round_trip)
{
	struct lgr_check c;
	uint64_t before;

	side_init(&A, "a", "b", 1, NULL, NULL);
	side_init(&B, "b", "a", 1, NULL, NULL);
	connect_ab();
	ck_assert(run_until(both_active, WAIT_MS));
	ck_assert(lgr_has_active(A.ctx, "b"));
	ck_assert(!lgr_has_active(A.ctx, "c"));
	before = link_n(&B, 1)->test_answered;
	lgr_check_init(&c, "b", WAIT_MS);
	check_run(&A, &c);
	ck_assert_int_eq(c.rc, 0);
	ck_assert(!c.set_up);
	ck_assert_uint_eq(c.lgr_id, lgr_of(&A)->id);
	ck_assert_uint_eq(c.link_id, 1);
	ck_assert_uint_gt(c.rtt_us, 0);
	ck_assert_uint_lt(c.rtt_us, 60 * 1000000);
	/* the round trip is A's TEST_LINK, answered by B */
	ck_assert_uint_eq(link_n(&A, 1)->test_answered, 1);
	ck_assert_uint_eq(link_n(&B, 1)->test_answered, before);
	/* B goes deaf to TEST_LINK: no answer, the check fails */
	wr_rx_register(link_n(&B, 1)->wr, LLC_TEST_LINK, NULL);
	lgr_check_init(&c, "b", WAIT_MS);
	check_run(&A, &c);
	ck_assert_int_ne(c.rc, 0);
	ck_assert_str_ne(c.error, "");
	ck_assert_uint_eq(c.rtt_us, 0);
}
END_TEST

/*
 * Without a group, the check sets one up now: with no device here, the
 * answer is our own NOSMCRDEV, and the peer is not put on the back-off
 * (checked three times: it would double each time); to a port nobody
 * listens on, the error of the TCP connect.  A peer not configured is no
 * such peer.
 */
START_TEST(check_peer_without_group)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	struct lgr_check c;
	char addr[32];
	int fd, i;

	side_init(&A, "a", "b", 0, NULL, NULL);
	lgr_check_init(&c, "b", WAIT_MS);
	check_run(&A, &c);
	ck_assert_int_eq(c.rc, -ECONNREFUSED);
	ck_assert(c.set_up);
	ck_assert_uint_eq(c.decline, CLC_DECL_NOSMCRDEV);
	ck_assert(!c.by_peer);
	ck_assert_msg(strstr(c.error, "NOSMCRDEV") != NULL, "%s", c.error);
	/* a check sees the decline, and connections are not kept off RDMA */
	for (i = 0; i < 3; i++) {
		lgr_check_init(&c, "b", WAIT_MS);
		check_run(&A, &c);
		ck_assert_uint_eq(c.decline, CLC_DECL_NOSMCRDEV);
		ck_assert_uint_eq(peer_backoff_until("b"), 0);
	}
	lgr_check_init(&c, "c", WAIT_MS);
	check_run(&A, &c);
	ck_assert_int_eq(c.rc, -ENOENT);
	side_free(&A);

	fd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", ntohs(sin.sin_port));
	side_init(&A, "a", "b", 1, NULL, addr);
	lgr_check_init(&c, "b", WAIT_MS);
	check_run(&A, &c);
	close(fd);
	ck_assert_int_ne(c.rc, 0);
	ck_assert(c.set_up);
	ck_assert_str_ne(c.error, "");
	ck_assert(lgr_of(&A) == NULL || lgr_of(&A)->state != LGR_STATE_ACTIVE);
}
END_TEST

static struct lgr_link *moved_to;
static int moved;

static void
conn_link_down(struct lgr_conn *c, struct lgr_link *to)
{
	moved_to = to;
	moved++;
}

static bool
b_one_link(void)
{
	return lgr_active(&B, 1) && lgr_active(&A, 1);
}

/*
 * A completion error on one link takes it down: its connection moves to
 * the other link, the peer deletes its half, the group carries on.
 */
START_TEST(completion_error_failover)
{
	struct lgr_conn c[2];
	struct lgr_link *k1, *k2, *bad;
	int i;

	side_init(&A, "a", "b", 2, NULL, NULL);
	side_init(&B, "b", "a", 2, NULL, NULL);
	connect_ab();
	ck_assert(run_until(both_two_links, WAIT_MS));
	k1 = link_n(&A, 1);
	k2 = link_n(&A, 2);
	memset(c, 0, sizeof(c));
	for (i = 0; i < 2; i++) {
		c[i].link_down = conn_link_down;
		ck_assert_int_eq(lgr_conn_add(lgr_of(&A), &c[i]), 0);
	}
	bad = c[1].link;
	moved = 0;
	loopdev_error_next_completion(wr_link_qp(bad->wr),
				      DEV_WC_RETRY_EXC_ERR);
	ck_assert_int_eq(llc_test_link_send(bad), 0);
	ck_assert(run_until(b_one_link, WAIT_MS));
	ck_assert_int_eq(moved, 1);
	ck_assert_ptr_eq(moved_to, bad == k1 ? k2 : k1);
	ck_assert_ptr_eq(c[0].link, moved_to);
	ck_assert_ptr_eq(c[1].link, moved_to);
	ck_assert_int_eq(moved_to->conns, 2);
	ck_assert_uint_eq(stat(&A, STAT_link_down), 1);
	ck_assert_uint_eq(stat(&B, STAT_link_down), 1);
	ck_assert_uint_eq(stat(&A, STAT_lgr_terminated), 0);
	ck_assert_str_eq(peer_mode("b", NULL), "rdma");
	/* a later ADD_LINK try may bring a link back; none is stuck */
	run_for(50);
	ck_assert_int_eq(lgr_of(&A)->state, LGR_STATE_ACTIVE);
	lgr_conn_del(&c[0]);
	lgr_conn_del(&c[1]);
}
END_TEST

/* The events a monitor has received on @fd so far, as "event peer". */
static void
monitor_read(int fd, char *buf, size_t len)
{
	char line[1024], *nl, *p;
	const char *ev, *peer;
	size_t n = 0, off = 0;
	json_t *o;
	ssize_t r;

	buf[0] = '\0';
	run_for(20);
	while ((r = read(fd, line + n, sizeof(line) - 1 - n)) > 0) {
		n += (size_t)r;
		line[n] = '\0';
		while ((nl = strchr(line, '\n')) != NULL) {
			*nl = '\0';
			o = json_loads(line, 0, NULL);
			ck_assert_ptr_nonnull(o);
			ev = json_string_value(json_object_get(o, "event"));
			peer = json_string_value(json_object_get(o, "peer"));
			off += (size_t)snprintf(buf + off, len - off, "%s %s\n",
						ev, peer != NULL ? peer : "-");
			ck_assert_uint_lt(off, len);
			json_decref(o);
			p = nl + 1;
			n -= (size_t)(p - line);
			memmove(line, p, n + 1);
		}
	}
}

/*
 * What a monitor sees of the groups (monitor.c, raised in lgr.c and
 * peer.c): each side's group and its links coming up, the peers reached,
 * a link going down, and the group ending, each naming the peer.
 */
START_TEST(monitor_events)
{
	struct lgr_link *bad;
	struct bufferevent *bev;
	char seen[4096];
	struct lgr_conn c;
	int sv[2];

	ck_assert_int_eq(monitor_init(base), 0);
	ck_assert_int_eq(
		socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	bev = bufferevent_socket_new(base, sv[0], BEV_OPT_CLOSE_ON_FREE);
	ck_assert_ptr_nonnull(bev);
	ck_assert_int_eq(monitor_subscribe(bev, 0, 1, true), 0);
	side_init(&A, "a", "b", 2, NULL, NULL);
	side_init(&B, "b", "a", 2, NULL, NULL);
	connect_ab();
	ck_assert(run_until(both_two_links, WAIT_MS));
	monitor_read(sv[1], seen, sizeof(seen));
	ck_assert_msg(strstr(seen, "lgr_up b\n") != NULL &&
			      strstr(seen, "lgr_up a\n") != NULL &&
			      strstr(seen, "link_up b\n") != NULL &&
			      strstr(seen, "link_up a\n") != NULL &&
			      strstr(seen, "peer_up b\n") != NULL,
		      "seen: %s", seen);
	ck_assert_ptr_null(strstr(seen, "down"));

	memset(&c, 0, sizeof(c));
	c.link_down = conn_link_down;
	ck_assert_int_eq(lgr_conn_add(lgr_of(&A), &c), 0);
	bad = c.link;
	loopdev_error_next_completion(wr_link_qp(bad->wr),
				      DEV_WC_RETRY_EXC_ERR);
	ck_assert_int_eq(llc_test_link_send(bad), 0);
	ck_assert(run_until(b_one_link, WAIT_MS));
	lgr_conn_del(&c);
	monitor_read(sv[1], seen, sizeof(seen));
	ck_assert_msg(strstr(seen, "link_down b\n") != NULL, "seen: %s", seen);

	lgr_terminate(lgr_of(&A), LLC_DEL_OP_INIT_TERM, true, false);
	monitor_read(sv[1], seen, sizeof(seen));
	ck_assert_msg(strstr(seen, "lgr_down b\n") != NULL, "seen: %s", seen);
	monitor_shutdown();
	close(sv[1]);
}
END_TEST

/* A's rkey for the peer's RMB 0x1111 on link 1, told for link id. */
static uint32_t smcr_rkey_id;

static bool
smcr_rkey_told(void)
{
	uint32_t rkey = 0;
	uint64_t vaddr;

	return rtoken_get(&lgr_of(&A)->rtokens, 1, 0x1111, 0x20000,
			  (uint8_t)smcr_rkey_id, &rkey, &vaddr) == 0 &&
	       rkey == 0x2222 && vaddr == 0x20000;
}

static bool
smcr_rkey_gone(void)
{
	return !smcr_rkey_told();
}

/* A kernel peer's message m in v2 form over B's link to A's. */
static void
smcr_post(struct lgr_link *link, const struct llc_info *m)
{
	struct llc_v2_info *v = calloc(1, sizeof(*v));
	uint8_t raw[LLC_MSG_LEN];

	ck_assert_ptr_nonnull(v);
	v->form = 2;
	v->m = *m;
	ck_assert_int_eq(llc_v2_encode(raw, sizeof(raw), v), LLC_MSG_LEN);
	post_raw(link, raw, sizeof(raw));
	free(v);
}

/*
 * Standard groups where both sides have a second device: the server (a
 * release 0 client's) adds the second link with a v2 ADD_LINK, and the
 * client takes it, where one device each gets the offer without a link
 * (smcr_groups_both_roles).  A kernel peer's CONFIRM_RKEY tells the rkey
 * of its RMB on the other link (kept by the group, rtoken.c) and its
 * DELETE_RKEY drops it; a link's failure moves the connections to the
 * other, as in our own dialect.
 */
START_TEST(smcr_second_link)
{
	struct lgr_conn ca, cb, c2;
	struct dev_qp_addr qa, qb;
	struct lgr_link *ka, *kb, *bad;
	uint8_t sa[8], sb[8], zero[8] = {0};
	const uint8_t ga[16] = {0xfe, 0x80, [15] = 0xa},
		      gb[16] = {0xfe, 0x80, [15] = 0xb};
	struct lgr *la, *lb;
	struct llc_info m;

	smcr_sides(2);
	memset(&c2, 0, sizeof(c2));
	lb = smcr_group(&B, LGR_ROLE_SERVER, zero, ga, 0, &cb, &qb, sb);
	ck_assert_uint_eq(lb->max_links, 2);
	la = smcr_group(&A, LGR_ROLE_CLIENT, sb, gb, 0, &ca, &qa, sa);
	ck_assert_uint_eq(la->max_links, 2);
	ck_assert_uint_eq(lgr_smcr_peer(la, &qb), 0);
	ck_assert_uint_eq(lgr_smcr_peer(lb, &qa), 0);
	ck_assert(run_until(both_two_links, WAIT_MS));
	ka = link_n(&A, 2);
	kb = link_n(&B, 2);
	ck_assert_ptr_nonnull(ka);
	ck_assert_ptr_nonnull(kb);
	ck_assert_str_eq(ka->dev->name, "loop1");
	ck_assert_str_eq(kb->dev->name, "loop1");
	ck_assert_uint_eq(ka->peer.qpn, kb->local.qpn);
	ck_assert_uint_eq(stat(&B, STAT_smc_add_link_none), 0);
	ck_assert_uint_eq(stat(&A, STAT_smc_add_link_rejects), 0);
	ck_assert_uint_eq(stat(&A, STAT_llc_protocol_errors), 0);
	ck_assert_uint_eq(stat(&B, STAT_llc_protocol_errors), 0);
	/* the client joins on the link the ACCEPT names: the second's QP */
	ck_assert_ptr_eq(lgr_smcr_find(A.ctx, LGR_ROLE_CLIENT, sb,
				       kb->local.gid, kb->local.qpn, &host_b,
				       &bad),
			 la);
	ck_assert_ptr_eq(bad, ka);
	/* the kernel server's CONFIRM_RKEY for a new RMB, over link 1 */
	smcr_rkey_id = ka->id;
	memset(&m, 0, sizeof(m));
	m.type = LLC_CONFIRM_RKEY;
	m.confirm_rkey.num_rkeys = 1;
	m.confirm_rkey.rt[0].rkey = 0x1111;
	m.confirm_rkey.rt[0].vaddr = 0x20000;
	m.confirm_rkey.rt[1].link_id = ka->id;
	m.confirm_rkey.rt[1].rkey = 0x2222;
	m.confirm_rkey.rt[1].vaddr = 0x20000;
	smcr_post(&lb->link[0], &m);
	ck_assert(run_until(smcr_rkey_told, WAIT_MS));
	memset(&m, 0, sizeof(m));
	m.type = LLC_DELETE_RKEY;
	m.delete_rkey.num_rkeys = 1;
	m.delete_rkey.rkey[0] = 0x1111;
	smcr_post(&lb->link[0], &m);
	ck_assert(run_until(smcr_rkey_gone, WAIT_MS));
	ck_assert_uint_eq(stat(&A, STAT_llc_protocol_errors), 0);
	/* link 1 fails: A's connections move to link 2, the group stays */
	ca.link_down = conn_link_down;
	ck_assert_int_eq(lgr_conn_add_on(la, &c2, ka), 0);
	c2.link_down = conn_link_down;
	bad = &la->link[0];
	moved = 0;
	loopdev_error_next_completion(wr_link_qp(bad->wr),
				      DEV_WC_RETRY_EXC_ERR);
	ck_assert_int_eq(llc_test_link_send(bad), 0);
	ck_assert(run_until(b_one_link, WAIT_MS));
	ck_assert_int_eq(moved, 1);
	ck_assert_ptr_eq(moved_to, ka);
	ck_assert_ptr_eq(ca.link, ka);
	ck_assert_int_eq(ka->conns, 2);
	ck_assert(lgr_is_active(la) && lgr_is_active(lb));
	ck_assert_uint_eq(stat(&A, STAT_lgr_terminated), 0);
	ck_assert_uint_eq(stat(&B, STAT_lgr_terminated), 0);
	lgr_conn_del(&c2);
	lgr_conn_del(&ca);
	lgr_conn_del(&cb);
}
END_TEST

static bool
a_refused_gid(void)
{
	return stat(&A, STAT_smc_add_link_gid_refused) == 1;
}

static bool
b_refused_gid(void)
{
	return stat(&B, STAT_smc_add_link_gid_refused) == 1;
}

/*
 * Standard groups of two devices each, A the client, B the server, with
 * those kernel_smc.allow lists (smcr_sides_allow): B's group in *lb,
 * A's in *la, their first connections ca and cb, the first links up.
 */
static void
smcr_pair(const char *allow_a, const char *allow_b, struct lgr **la,
	  struct lgr **lb, struct lgr_conn *ca, struct lgr_conn *cb)
{
	static const uint8_t ga[16] = {0xfe, 0x80, [15] = 0xa},
			     gb[16] = {0xfe, 0x80, [15] = 0xb};
	uint8_t sa[8], sb[8], zero[8] = {0};
	struct dev_qp_addr qa, qb;

	smcr_sides_allow(2, allow_a, allow_b);
	*lb = smcr_group(&B, LGR_ROLE_SERVER, zero, ga, 0, cb, &qb, sb);
	*la = smcr_group(&A, LGR_ROLE_CLIENT, sb, gb, 0, ca, &qa, sa);
	ck_assert_uint_eq(lgr_smcr_peer(*la, &qb), 0);
	ck_assert_uint_eq(lgr_smcr_peer(*lb, &qa), 0);
}

/*
 * A kernel peer's second link must lead to the host the group was made
 * with or to one kernel_smc.allow lists, never elsewhere: the client
 * refuses an ADD_LINK naming a GID bound to nothing (its connections
 * stay on the first link, the group lives), and the server refuses such
 * an answer, deletes the link and offers no more in that group.  No LLC
 * protocol error either way.
 */
START_TEST(smcr_second_link_unbound)
{
	const char *loop = "\"127.0.1.0/24\"", *other = "\"198.51.100.0/24\"";
	struct lgr_conn ca, cb;
	struct lgr *la, *lb;

	/* the client A lacks B's second GID in allow */
	smcr_pair(other, loop, &la, &lb, &ca, &cb);
	ck_assert(run_until(a_refused_gid, WAIT_MS));
	run_for(50);
	ck_assert(lgr_active(&A, 1) && lgr_active(&B, 1));
	ck_assert_uint_eq(stat(&B, STAT_smc_add_link_gid_refused), 0);
	ck_assert_ptr_eq(ca.link, &la->link[0]);
	ck_assert_uint_eq(stat(&A, STAT_llc_protocol_errors) +
				  stat(&B, STAT_llc_protocol_errors),
			  0);
	lgr_conn_del(&ca);
	lgr_conn_del(&cb);
	side_free(&A);
	side_free(&B);

	/* the server B lacks A's second GID: it refuses A's answer */
	smcr_pair(loop, other, &la, &lb, &ca, &cb);
	ck_assert(run_until(b_refused_gid, WAIT_MS));
	ck_assert(run_until(both_active, WAIT_MS));
	ck_assert_uint_eq(lb->max_links, 1);
	ck_assert_uint_eq(stat(&A, STAT_smc_add_link_gid_refused), 0);
	ck_assert_uint_eq(stat(&A, STAT_llc_protocol_errors) +
				  stat(&B, STAT_llc_protocol_errors),
			  0);
	lgr_conn_del(&ca);
	lgr_conn_del(&cb);
}
END_TEST

/*
 * A link fails; the server would offer a new one only after its retry
 * period (60 s), but the device's port coming back brings it in about a
 * second.
 */
START_TEST(port_active_readds_link)
{
	struct lgr_link *k2;
	uint64_t t0;

	side_init(&A, "a", "b", 2, NULL, NULL);
	side_init(&B, "b", "a", 2, NULL, NULL);
	connect_ab();
	ck_assert(run_until(both_two_links, WAIT_MS));
	k2 = link_n(&B, 2);
	ck_assert_ptr_nonnull(k2);
	loopdev_error_next_completion(wr_link_qp(k2->wr), DEV_WC_RETRY_EXC_ERR);
	ck_assert_int_eq(llc_test_link_send(k2), 0);
	ck_assert(run_until(b_one_link, WAIT_MS));
	run_for(1500);
	ck_assert(b_one_link()); /* nothing yet: the retry period runs */
	t0 = now_ms();
	loopdev_port_active(B.dev[1]);
	ck_assert(run_until(both_two_links, WAIT_MS));
	ck_assert_uint_ge(now_ms() - t0, 900);
	ck_assert_uint_eq(stat(&B, STAT_link_up), 3);
	ck_assert_uint_eq(stat(&A, STAT_link_up), 3);
	ck_assert_str_eq(link_n(&B, 3)->dev->name, "loop1");
	ck_assert_uint_eq(stat(&B, STAT_llc_protocol_errors), 0);
}
END_TEST

static int flushed, flush_status;

static void
flush_done(struct wr_link *l, struct wr_tx_slot *slot, int status, void *arg)
{
	flushed++;
	flush_status = status;
}

static bool
a_link2_freed(void)
{
	return lgr_of(&A) != NULL && lgr_of(&A)->link[1].state == LGR_LINK_FREE;
}

/*
 * A link that breaks with a send in flight: the send's completion still
 * comes back (flushed, with an error) before the link is freed, so the
 * data path can count it; the group carries on over the other link.
 */
START_TEST(broken_link_flushes)
{
	struct wr_tx_slot *slot;
	struct lgr_link *k2;
	uint8_t *buf;

	side_init(&A, "a", "b", 2, NULL, NULL);
	side_init(&B, "b", "a", 2, NULL, NULL);
	connect_ab();
	ck_assert(run_until(both_two_links, WAIT_MS));
	k2 = link_n(&A, 2);
	ck_assert_ptr_eq(k2, &lgr_of(&A)->link[1]);
	ck_assert_int_eq(wr_tx_get(k2->wr, &slot, NULL), 0);
	buf = wr_tx_buf(slot);
	buf[0] = LLC_TEST_LINK;
	buf[1] = LLC_MSG_LEN;
	flushed = 0;
	ck_assert_int_eq(wr_tx_post(k2->wr, slot, NULL, 0, flush_done, NULL),
			 0);
	loopdev_drop_link(wr_link_qp(k2->wr));
	ck_assert(run_until(b_one_link, WAIT_MS));
	ck_assert(run_until(a_link2_freed, WAIT_MS));
	ck_assert_int_eq(flushed, 1);
	ck_assert_int_ne(flush_status, 0);
	ck_assert_uint_eq(stat(&A, STAT_link_down), 1);
	ck_assert_uint_eq(stat(&B, STAT_link_down), 1);
	ck_assert_int_eq(lgr_of(&A)->state, LGR_STATE_ACTIVE);
}
END_TEST

static int setup_failures;

static void
count_setup_failed(struct lgr *lgr, void *arg)
{
	ck_assert_int_eq(lgr->role, LGR_ROLE_CLIENT);
	ck_assert_int_eq(lgr->state, LGR_STATE_TERMINATING);
	/* what waited for it must not wait for it again */
	ck_assert(!lgr_on_its_way(lgr->ctx, lgr->peer));
	setup_failures++;
}

static const struct lgr_data_ops count_ops = {.setup_failed =
						      count_setup_failed};

/*
 * The server has no device: it declines NOSMCRDEV and A falls back; A's
 * data path hears of the failure once (its waiting connections go now).
 */
START_TEST(decline_nosmcrdev)
{
	struct peer_info info;
	uint32_t reason = 0;

	side_init(&A, "a", "b", 1, NULL, NULL);
	side_init(&B, "b", "a", 0, NULL, NULL);
	setup_failures = 0;
	lgr_ctx_set_ops(A.ctx, &count_ops, NULL);
	lgr_ctx_set_ops(B.ctx, &count_ops, NULL); /* server: never */
	connect_ab();
	ck_assert(run_until(none_left, WAIT_MS));
	ck_assert_int_eq(setup_failures, 1);
	ck_assert_str_eq(peer_mode("b", &reason), "fallback");
	ck_assert_uint_eq(reason, CLC_DECL_NOSMCRDEV);
	ck_assert_str_eq(clc_decline_name(reason), "NOSMCRDEV");
	ck_assert_int_eq(peer_info("b", &info), 0);
	ck_assert(info.by_peer);
	ck_assert_uint_gt(info.backoff_left_ms, 0);
	ck_assert_uint_eq(stat(&A, STAT_clc_declines_received), 1);
	ck_assert_uint_eq(stat(&A, DECL_RECEIVED(NOSMCRDEV)), 1);
	ck_assert_uint_eq(stat(&A, STAT_clnt_hshake_err_cnt), 1);
	ck_assert_uint_eq(stat(&B, STAT_clc_declines_sent), 1);
	ck_assert_uint_eq(stat(&B, DECL_SENT(NOSMCRDEV)), 1);
	ck_assert_uint_eq(stat(&B, DECL_SENT(AUTHFAIL)), 0);
	ck_assert_uint_eq(stat(&B, STAT_srv_hshake_err_cnt), 1);
	ck_assert_str_eq(peer_mode("a", &reason), "fallback");
	ck_assert_uint_eq(reason, CLC_DECL_NOSMCRDEV);
	/* backed off: the next connection does not try again */
	ck_assert_ptr_null(lgr_get(A.ctx, side_peer(&A)));
	ck_assert_ptr_null(lgr_of(&A));
}
END_TEST

/*
 * What a side's data path lets its links' rings hold (link_mem): the
 * worker's pool in the daemon, a budget here.
 */
struct ring_budget {
	size_t budget, held;
	int refused;
};

static int
ring_link_mem(struct lgr *lgr, size_t bytes, bool take, void *arg)
{
	struct ring_budget *rb = arg;

	if (!take) {
		ck_assert_uint_ge(rb->held, bytes);
		rb->held -= bytes;
		return 0;
	}
	if (rb->held + bytes > rb->budget) {
		rb->refused++;
		return -ENOBUFS;
	}
	rb->held += bytes;
	return 0;
}

static const struct lgr_data_ops ring_ops = {
	.setup_failed = count_setup_failed,
	.link_mem = ring_link_mem,
};

/*
 * A link's rings are charged when it is made and given back when it
 * goes (issue 43).  A server whose rings find no room declines MEM: the
 * client takes the fallback with the peer's backoff, and its own link's
 * rings come back with its group.  A client without room for its rings
 * starts no handshake: the peer is on the fallback, MEM of our own.
 */
START_TEST(decline_mem_rings)
{
	struct ring_budget ra = {SIZE_MAX, 0, 0}, rb = {0, 0, 0};
	struct peer_info info;
	uint32_t reason = 0;
	int sv[2];
	char c;

	side_init(&A, "a", "b", 1, NULL, NULL);
	side_init(&B, "b", "a", 1, NULL, NULL);
	setup_failures = 0;
	lgr_ctx_set_ops(A.ctx, &ring_ops, &ra);
	lgr_ctx_set_ops(B.ctx, &ring_ops, &rb);
	connect_ab();
	ck_assert(run_until(none_left, WAIT_MS));
	ck_assert_int_eq(rb.refused, 1);
	ck_assert_uint_eq(rb.held, 0);
	ck_assert_uint_eq(stat(&B, DECL_SENT(MEM)), 1);
	ck_assert_int_eq(setup_failures, 1);
	ck_assert_str_eq(peer_mode("b", &reason), "fallback");
	ck_assert_uint_eq(reason, CLC_DECL_MEM);
	ck_assert_int_eq(peer_info("b", &info), 0);
	ck_assert(info.by_peer);
	/* A's link was charged, and gave it back with its group */
	ck_assert_int_eq(ra.refused, 0);
	ck_assert_uint_eq(ra.held, 0);

	side_free(&B);
	side_free(&A);
	side_init(&A, "a", "b", 1, NULL, NULL);
	ra.budget = 0;
	lgr_ctx_set_ops(A.ctx, &ring_ops, &ra);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_ptr_null(lgr_client_new(A.ctx, side_peer(&A), sv[0]));
	ck_assert_int_eq(read(sv[1], &c, 1), 0); /* closed, nothing sent */
	close(sv[1]);
	ck_assert_int_eq(ra.refused, 1);
	ck_assert_int_eq(peer_info("b", &info), 0);
	ck_assert(!info.by_peer);
	ck_assert_uint_eq(info.reason, CLC_DECL_MEM);
}
END_TEST

/* No device here: no CLC at all, NOSMCRDEV of our own. */
START_TEST(local_nosmcrdev)
{
	struct peer_info info;
	char c;
	int sv[2];

	side_init(&A, "a", "b", 0, NULL, NULL);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_ptr_null(lgr_client_new(A.ctx, side_peer(&A), sv[0]));
	ck_assert_int_eq(read(sv[1], &c, 1), 0); /* closed, nothing sent */
	close(sv[1]);
	ck_assert_int_eq(peer_info("b", &info), 0);
	ck_assert(!info.rdma);
	ck_assert(!info.by_peer);
	ck_assert_uint_eq(info.reason, CLC_DECL_NOSMCRDEV);
	ck_assert_uint_eq(stat(&A, STAT_clc_declines_sent), 0);
}
END_TEST

/* Keys differ: the client finds the server's MAC wrong, AUTHFAIL. */
START_TEST(wrong_key)
{
	uint32_t reason = 0;

	side_init(&A, "a", "b", 1, NULL, NULL);
	side_init(&B, "b", "a", 1, NULL, NULL);
	side_key(&A, 0x11);
	side_key(&B, 0x22);
	connect_ab();
	ck_assert(run_until(none_left, WAIT_MS));
	ck_assert_str_eq(peer_mode("b", &reason), "fallback");
	ck_assert_uint_eq(reason, CLC_DECL_AUTHFAIL);
	ck_assert_uint_eq(stat(&A, STAT_auth_failures), 1);
	ck_assert_uint_eq(stat(&A, STAT_clc_declines_sent), 1);
	ck_assert_uint_eq(stat(&B, STAT_clc_declines_received), 1);
	ck_assert_uint_eq(stat(&A, DECL_SENT(AUTHFAIL)), 1);
	ck_assert_uint_eq(stat(&B, DECL_RECEIVED(AUTHFAIL)), 1);
	ck_assert_uint_eq(stat(&A, STAT_link_up), 0);
	ck_assert_uint_eq(stat(&B, STAT_link_up), 0);
}
END_TEST

/*
 * A client without the key: B's ACCEPT discloses no rkey or RMB address,
 * B's QP stays unconnected, and a CONFIRM with a wrong MAC is declined
 * AUTHFAIL and counted.
 */
START_TEST(wrong_key_no_rkey)
{
	struct clc_proposal_info p;
	struct clc_accept_info acc, cf;
	uint8_t msg[CLC_MSG_MAX];
	uint32_t decl;
	int len;

	side_init(&B, "b", "a", 1, NULL, NULL);
	side_key(&B, 0x22);
	raw_to_b();
	raw_proposal(&p, "a");
	len = clc_proposal_encode(msg, sizeof(msg), &p);
	raw_send(msg, (size_t)len);
	ck_assert_uint_eq(raw_read(sizeof(struct clc_accept)),
			  sizeof(struct clc_accept));
	ck_assert_int_eq(clc_accept_decode(raw_buf, raw_len, &acc, &decl), 0);
	ck_assert(acc.first_contact);
	ck_assert_uint_eq(acc.rmb_rkey, 0);
	ck_assert_uint_eq(acc.rmb_vaddr, 0);
	ck_assert_ptr_nonnull(lgr_of(&B));
	ck_assert_int_eq(lgr_of(&B)->link[0].state, LGR_LINK_INIT);
	cf = acc;
	memcpy(cf.system_id, p.system_id, sizeof(cf.system_id));
	cf.link = p.link;
	cf.alert_token = 7;
	memset(cf.mac, 0x33, sizeof(cf.mac));
	len = clc_confirm_encode(msg, sizeof(msg), &cf);
	ck_assert_int_gt(len, 0);
	raw_send(msg, (size_t)len);
	ck_assert_uint_eq(raw_decline(), CLC_DECL_AUTHFAIL);
	ck_assert(run_until(none_left, WAIT_MS));
	ck_assert_uint_eq(stat(&B, STAT_auth_failures), 1);
	ck_assert_uint_eq(stat(&B, STAT_link_up), 0);
	ck_assert_uint_eq(stat(&B, STAT_srv_hshake_err_cnt), 1);
	raw_close();
}
END_TEST

/* An unauthenticated client that only proposes learns nothing usable. */
START_TEST(unknown_peer)
{
	struct clc_proposal_info p;
	uint8_t msg[CLC_MSG_MAX];
	int len;

	side_init(&B, "b", "a", 1, NULL, NULL);
	raw_to_b();
	raw_proposal(&p, "mallory");
	len = clc_proposal_encode(msg, sizeof(msg), &p);
	raw_send(msg, (size_t)len);
	ck_assert_uint_eq(raw_decline(), CLC_DECL_PEERUNKNOWN);
	ck_assert_ptr_null(lgr_of(&B));
	raw_close();
}
END_TEST

/* One malformed input to B; the DECLINE reason it answers with. */
static uint32_t
malformed(const void *msg, size_t len, bool eof)
{
	uint32_t code;

	raw_to_b();
	raw_send(msg, len);
	if (eof)
		shutdown(raw_fd, SHUT_WR);
	code = raw_decline();
	raw_close();
	return code;
}

START_TEST(malformed_clc)
{
	struct clc_proposal_info p;
	struct clc_accept_info cf;
	struct clc_decline_info d;
	uint8_t good[CLC_MSG_MAX], bad[CLC_MSG_MAX];
	struct clc_hdr *h = (struct clc_hdr *)bad;
	size_t len;

	side_init(&B, "b", "a", 1, NULL, NULL);
	raw_proposal(&p, "a");
	len = (size_t)clc_proposal_encode(good, sizeof(good), &p);

	memcpy(bad, good, len);
	bad[3] = 0xc6; /* "SMCF": the fallback's, not CLC */
	ck_assert_uint_eq(malformed(bad, len, false), CLC_DECL_BADMSG);

	memcpy(bad, good, len);
	h->length = htobe16(100); /* short */
	ck_assert_uint_eq(malformed(bad, len, false), CLC_DECL_BADMSG);

	memcpy(bad, good, len);
	h->length = htobe16(200); /* long */
	ck_assert_uint_eq(malformed(bad, len, false), CLC_DECL_BADMSG);

	memcpy(bad, good, len);
	h->type = 9; /* unknown */
	ck_assert_uint_eq(malformed(bad, len, false), CLC_DECL_BADMSG);

	memcpy(bad, good, len);
	h->flags = 2 << CLC_VERSION_SHIFT; /* another version */
	ck_assert_uint_eq(malformed(bad, len, false), CLC_DECL_VERSMISMAT);

	/* truncated: the peer stops half way through */
	ck_assert_uint_eq(malformed(good, len / 2, true), CLC_DECL_BADMSG);

	memcpy(bad, good, len);
	bad[offsetof(struct clc_proposal, max_conns)] = 8;
	ck_assert_uint_eq(malformed(bad, len, false), CLC_DECL_MAXCONNERR);

	memcpy(bad, good, len);
	bad[offsetof(struct clc_proposal, max_links)] = 3;
	ck_assert_uint_eq(malformed(bad, len, false), CLC_DECL_MAXLINKERR);

	memcpy(bad, good, len);
	bad[len - 1] ^= 1; /* trailer */
	ck_assert_uint_eq(malformed(bad, len, false), CLC_DECL_BADMSG);

	/* well formed, but not what a server expects first */
	memset(&cf, 0, sizeof(cf));
	cf.first_contact = true;
	cf.link = p.link;
	cf.max_conns = 16;
	cf.max_links = 1;
	cf.alert_token = 1;
	len = (size_t)clc_confirm_encode(bad, sizeof(bad), &cf);
	ck_assert_uint_eq(malformed(bad, len, false), CLC_DECL_BADMSG);

	/* a DECLINE first: counted by its code, a code not listed too */
	memset(&d, 0, sizeof(d));
	d.diagnosis = CLC_DECL_NOSMCRDEV;
	len = (size_t)clc_decline_encode(bad, sizeof(bad), &d);
	ck_assert_uint_eq(malformed(bad, len, false), CLC_DECL_BADMSG);
	d.diagnosis = 0x0b000000;
	len = (size_t)clc_decline_encode(bad, sizeof(bad), &d);
	ck_assert_uint_eq(malformed(bad, len, false), CLC_DECL_BADMSG);
	ck_assert_uint_eq(stat(&B, STAT_clc_declines_received), 2);
	ck_assert_uint_eq(stat(&B, DECL_RECEIVED(NOSMCRDEV)), 1);
	ck_assert_uint_eq(stat(&B, STAT_DECL_RECEIVED_BASE + CLC_DECL_NCODES),
			  1);

	ck_assert_uint_eq(stat(&B, STAT_clc_declines_sent), 12);
	ck_assert_uint_eq(stat(&B, DECL_SENT(VERSMISMAT)), 1);
	ck_assert_uint_eq(stat(&B, DECL_SENT(MAXCONNERR)), 1);
	ck_assert_uint_eq(stat(&B, DECL_SENT(MAXLINKERR)), 1);
	ck_assert_uint_eq(stat(&B, DECL_SENT(BADMSG)), 9);
	ck_assert_uint_eq(stat(&B, STAT_srv_hshake_err_cnt), 12);
	run_for(20);
	ck_assert_ptr_null(lgr_of(&B));
	ck_assert_int_eq(B.ctx->nclcs, 0);
}
END_TEST

/* A client gets a malformed ACCEPT: it declines and falls back. */
START_TEST(malformed_accept)
{
	struct clc_accept_info acc;
	uint8_t msg[CLC_MSG_MAX];
	uint32_t reason = 0;
	int sv[2], len, i;

	side_init(&A, "a", "b", 1, NULL, NULL);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_int_eq(fcntl(sv[1], F_SETFL, O_NONBLOCK), 0);
	raw_fd = sv[1];
	ck_assert_ptr_nonnull(lgr_client_new(A.ctx, side_peer(&A), sv[0]));
	ck_assert_uint_eq(raw_read(sizeof(struct clc_proposal)),
			  sizeof(struct clc_proposal));
	memset(&acc, 0, sizeof(acc));
	acc.first_contact = true;
	acc.link.gid[0] = 1;
	acc.link.qpn = 77;
	acc.link.mtu = 3;
	acc.max_conns = 16;
	acc.max_links = 1;
	acc.alert_token = 9;
	for (i = 0; i < 8; i++)
		acc.system_id[i] = (uint8_t)i;
	len = clc_accept_encode(msg, sizeof(msg), &acc);
	msg[7] = 3 << CLC_VERSION_SHIFT;
	raw_send(msg, (size_t)len);
	ck_assert_uint_eq(raw_decline(), CLC_DECL_VERSMISMAT);
	ck_assert(run_until(a_gone, WAIT_MS));
	ck_assert_str_eq(peer_mode("b", &reason), "fallback");
	ck_assert_uint_eq(reason, CLC_DECL_VERSMISMAT);
	raw_close();
}
END_TEST

/* An idle group lingers lgr_idle_timeout, then both sides end it. */
START_TEST(idle_linger)
{
	uint32_t reason = 1;

	tmo.idle_ms = 150;
	side_init(&A, "a", "b", 1, NULL, NULL);
	side_init(&B, "b", "a", 1, NULL, NULL);
	connect_ab();
	ck_assert(run_until(both_active, WAIT_MS));
	run_for(60);
	ck_assert(both_active());
	ck_assert(run_until(none_left, WAIT_MS));
	ck_assert_uint_eq(stat(&A, STAT_lgr_terminated), 1);
	ck_assert_uint_eq(stat(&B, STAT_lgr_terminated), 1);
	ck_assert_uint_eq(stat(&A, STAT_llc_protocol_errors), 0);
	/* not a failure: no reason, no back-off */
	ck_assert_str_eq(peer_mode("b", &reason), "fallback");
	ck_assert_uint_eq(reason, 0);
}
END_TEST

/* The peer daemon goes away: its group ends here too. */
START_TEST(peer_gone)
{
	side_init(&A, "a", "b", 1, NULL, NULL);
	side_init(&B, "b", "a", 1, NULL, NULL);
	connect_ab();
	ck_assert(run_until(both_active, WAIT_MS));
	lgr_ctx_free(B.ctx);
	B.ctx = NULL;
	ck_assert(run_until(a_gone, WAIT_MS));
	ck_assert_uint_eq(stat(&A, STAT_lgr_terminated), 1);
	loopdev_free(B.dev[0]);
	conf_drop(B.conf);
}
END_TEST

/* A malformed LLC message ends the group (only it) and is counted. */
START_TEST(malformed_llc)
{
	struct wr_tx_slot *slot;
	struct lgr_link *k;
	uint8_t *buf;

	side_init(&A, "a", "b", 1, NULL, NULL);
	side_init(&B, "b", "a", 1, NULL, NULL);
	connect_ab();
	ck_assert(run_until(both_active, WAIT_MS));
	k = link_n(&A, 1);
	ck_assert_int_eq(wr_tx_get(k->wr, &slot, NULL), 0);
	buf = wr_tx_buf(slot);
	buf[0] = LLC_TEST_LINK;
	buf[1] = LLC_MSG_LEN;
	buf[20] = 1; /* reserved */
	ck_assert_int_eq(wr_tx_post(k->wr, slot, NULL, 0, NULL, NULL), 0);
	ck_assert(run_until(none_left, WAIT_MS));
	ck_assert_uint_eq(stat(&B, STAT_llc_protocol_errors), 1);
	ck_assert_uint_eq(stat(&B, STAT_lgr_terminated), 1);
	ck_assert_uint_eq(stat(&A, STAT_lgr_terminated), 1);
}
END_TEST

/* A CDC from A's link k naming token, carrying data_len bytes. */
static void
post_cdc_data(struct lgr_link *k, uint32_t token, uint16_t data_len)
{
	struct wr_tx_slot *slot;
	struct cdc_info m;

	memset(&m, 0, sizeof(m));
	m.seqno = 1;
	m.token = token;
	m.prod.count = data_len;
	m.data_len = data_len;
	ck_assert_int_eq(wr_tx_get(k->wr, &slot, NULL), 0);
	ck_assert_int_eq(cdc_msg_encode(wr_tx_buf(slot), CDC_MSG_LEN, &m),
			 CDC_MSG_LEN);
	wr_tx_len(k->wr, slot, CDC_MSG_LEN + data_len);
	ck_assert_int_eq(wr_tx_post(k->wr, slot, NULL, 0, NULL, NULL), 0);
}

static void
post_cdc(struct lgr_link *k, uint32_t token)
{
	post_cdc_data(k, token, 0);
}

/*
 * Data inside CDCs (CLC_FEAT_CDC_DATA) when both daemons offer it: every
 * link of the group may send CDC_DATA_MAX bytes in one.  When one does
 * not, no link may, and a CDC carrying data anyway ends the group.
 */
START_TEST(cdc_data_negotiated)
{
	struct lgr_conn c;

	side_init(&A, "a", "b", 1, NULL, NULL);
	side_init(&B, "b", "a", 1, NULL, NULL);
	connect_ab();
	ck_assert(run_until(both_active, WAIT_MS));
	ck_assert_uint_ne(lgr_of(&A)->features & CLC_FEAT_CDC_DATA, 0);
	ck_assert_uint_ne(lgr_of(&B)->features & CLC_FEAT_CDC_DATA, 0);
	ck_assert_uint_eq(wr_link_data_max(link_n(&A, 1)->wr), CDC_DATA_MAX);
	ck_assert_uint_eq(wr_link_data_max(link_n(&B, 1)->wr), CDC_DATA_MAX);
	side_free(&A);
	side_free(&B);

	side_init(&A, "a", "b", 1, "cdc_data = false;", NULL);
	side_init(&B, "b", "a", 1, NULL, NULL);
	connect_ab();
	ck_assert(run_until(both_active, WAIT_MS));
	ck_assert_uint_eq(lgr_of(&A)->features & CLC_FEAT_CDC_DATA, 0);
	ck_assert_uint_eq(lgr_of(&B)->features & CLC_FEAT_CDC_DATA, 0);
	ck_assert_uint_eq(wr_link_data_max(link_n(&A, 1)->wr), 0);
	ck_assert_uint_eq(wr_link_data_max(link_n(&B, 1)->wr), 0);
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(lgr_conn_add(lgr_of(&B), &c), 0);
	post_cdc_data(link_n(&A, 1), c.token, 5);
	ck_assert(run_until(none_left, WAIT_MS));
	ck_assert_uint_eq(stat(&B, STAT_llc_protocol_errors), 1);
}
END_TEST

/*
 * The group hands a CDC to the connection its token names: one that
 * has not started relaying drops it, a token the context never handed
 * out is a protocol violation that ends the group.
 */
START_TEST(cdc_demux)
{
	struct lgr_conn c[3];
	int i;

	side_init(&A, "a", "b", 1, NULL, NULL);
	side_init(&B, "b", "a", 1, NULL, NULL);
	connect_ab();
	ck_assert(run_until(both_active, WAIT_MS));
	memset(c, 0, sizeof(c));
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(lgr_conn_add(lgr_of(&B), &c[i]), 0);
	/* tokens are distinct, never 0, and found by token */
	ck_assert_uint_ne(c[0].token, 0);
	ck_assert_uint_ne(c[0].token, c[1].token);
	ck_assert_uint_ne(c[1].token, c[2].token);
	for (i = 0; i < 3; i++)
		ck_assert_ptr_eq(lgr_conn_find(lgr_of(&B), c[i].token), &c[i]);
	lgr_conn_del(&c[1]);
	ck_assert_ptr_null(lgr_conn_find(lgr_of(&B), c[1].token));
	/* not relaying yet, or closed just now: dropped */
	post_cdc(link_n(&A, 1), c[0].token);
	post_cdc(link_n(&A, 1), c[1].token);
	run_for(100);
	ck_assert_uint_eq(stat(&B, STAT_llc_protocol_errors), 0);
	ck_assert_int_eq(lgr_of(&B)->state, LGR_STATE_ACTIVE);
	/* never handed out: the group ends */
	post_cdc(link_n(&A, 1), c[2].token + 1000);
	ck_assert(run_until(none_left, WAIT_MS));
	ck_assert_uint_eq(stat(&B, STAT_llc_protocol_errors), 1);
}
END_TEST

static int pending_calls, pending_status;

static void
pending_sent(struct llc_pending *p, int status)
{
	pending_calls++;
	pending_status = status;
}

static bool
pending_done(void)
{
	return pending_calls > 0;
}

/* Take every TX slot of link k; how many in held[]. */
static int
hold_slots(struct lgr_link *k, struct wr_tx_slot **held, int max)
{
	int n = 0;

	while (n < max && wr_tx_get(k->wr, &held[n], NULL) == 0)
		n++;
	ck_assert_int_lt(n, max);
	return n;
}

/*
 * Past llc.c's short queue a message waits for a TX slot on its own, in
 * the caller's llc_pending (told when it went out) or detached (freed
 * by llc.c); a cancelled one is not sent.
 */
START_TEST(llc_waits_past_queue)
{
	struct wr_tx_slot *held[256];
	struct llc_pending p;
	struct llc_info m;
	struct lgr_link *k;
	int i, n;

	side_init(&A, "a", "b", 1, NULL, NULL);
	side_init(&B, "b", "a", 1, NULL, NULL);
	connect_ab();
	ck_assert(run_until(both_active, WAIT_MS));
	k = link_n(&A, 1);
	memset(&m, 0, sizeof(m));
	m.type = LLC_TEST_LINK;
	memset(&p, 0, sizeof(p));
	pending_calls = 0;

	n = hold_slots(k, held, 256);
	for (i = 0; i < LGR_LLC_QUEUE; i++)
		ck_assert_int_eq(llc_send(k, &m, NULL, NULL), 0);
	ck_assert_int_eq(llc_send(k, &m, NULL, NULL), -ENOBUFS);
	ck_assert_int_eq(llc_send_wait(k, &m, &p, pending_sent), 1);
	ck_assert(llc_pending_waits(&p));
	ck_assert_int_eq(llc_send_detached(k, &m), 0);
	for (i = 0; i < n; i++)
		wr_tx_put(k->wr, held[i]);
	ck_assert(run_until(pending_done, WAIT_MS));
	ck_assert_int_eq(pending_calls, 1);
	ck_assert_int_eq(pending_status, 0);
	ck_assert(!llc_pending_waits(&p));
	run_for(100);
	ck_assert_uint_eq(stat(&A, STAT_llc_protocol_errors), 0);
	ck_assert_uint_eq(stat(&B, STAT_llc_protocol_errors), 0);
	ck_assert_int_eq(lgr_of(&A)->state, LGR_STATE_ACTIVE);
	ck_assert_int_eq(lgr_of(&B)->state, LGR_STATE_ACTIVE);

	/* cancelled while it waits: never sent, never told */
	n = hold_slots(k, held, 256);
	for (i = 0; i < LGR_LLC_QUEUE; i++)
		ck_assert_int_eq(llc_send(k, &m, NULL, NULL), 0);
	ck_assert_int_eq(llc_send_wait(k, &m, &p, pending_sent), 1);
	llc_pending_cancel(&p);
	ck_assert(!llc_pending_waits(&p));
	for (i = 0; i < n; i++)
		wr_tx_put(k->wr, held[i]);
	run_for(100);
	ck_assert_int_eq(pending_calls, 1);
	ck_assert_int_eq(lgr_of(&A)->state, LGR_STATE_ACTIVE);
}
END_TEST

/* ---- groups are reused until full, then a new one is made ---- */

static int lfd = -1;

static bool
accept_one(void)
{
	int fd = accept(lfd, NULL, NULL);

	if (fd < 0)
		return false;
	ck_assert_int_eq(clc_serve(B.ctx, fd, NULL, NULL, 0), 0);
	return true;
}

static bool
two_groups(void)
{
	return lgr_of(&A) != NULL && TAILQ_NEXT(lgr_of(&A), entry) != NULL &&
	       lgr_of(&A)->state == LGR_STATE_ACTIVE &&
	       TAILQ_NEXT(lgr_of(&A), entry)->state == LGR_STATE_ACTIVE;
}

START_TEST(reuse_until_full)
{
	struct sockaddr_in sin;
	socklen_t slen = sizeof(sin);
	struct lgr_conn c[17];
	struct lgr *first;
	char addr[32];
	int i;

	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	ck_assert_int_ge(lfd, 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	ck_assert_int_eq(listen(lfd, 4), 0);
	ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&sin, &slen), 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", ntohs(sin.sin_port));
	side_init(&A, "a", "b", 1, "max_conns_per_lgr = 16;", addr);
	side_init(&B, "b", "a", 1, NULL, NULL);

	/* the first rule connection asks for a group over TCP */
	ck_assert(!lgr_on_its_way(A.ctx, side_peer(&A)));
	ck_assert_ptr_null(lgr_get(A.ctx, side_peer(&A)));
	ck_assert(lgr_on_its_way(A.ctx, side_peer(&A))); /* worth waiting */
	ck_assert(run_until(accept_one, WAIT_MS));
	ck_assert(run_until(both_active, WAIT_MS));
	ck_assert(!lgr_on_its_way(A.ctx, side_peer(&A)));
	first = lgr_of(&A);
	ck_assert_uint_eq(first->max_conns, 16);
	memset(c, 0, sizeof(c));
	for (i = 0; i < 16; i++) {
		ck_assert_ptr_eq(lgr_get(A.ctx, side_peer(&A)), first);
		ck_assert_int_eq(lgr_conn_add(first, &c[i]), 0);
		/* three quarters full: the next group is on its way */
		ck_assert_int_eq(lgr_of(&A) != first, i >= 12);
		ck_assert_int_eq(lgr_on_its_way(A.ctx, side_peer(&A)), i >= 12);
	}
	ck_assert_int_eq(lgr_conn_add(first, &c[16]), -ENOSPC);
	/* full, the next group not active yet: wait for it (session_rdma) */
	ck_assert_ptr_null(lgr_get(A.ctx, side_peer(&A)));
	ck_assert(run_until(accept_one, WAIT_MS));
	ck_assert(run_until(two_groups, WAIT_MS));
	ck_assert(!lgr_on_its_way(A.ctx, side_peer(&A)));
	ck_assert_ptr_eq(TAILQ_NEXT(lgr_of(&A), entry), first);
	ck_assert_ptr_eq(lgr_get(A.ctx, side_peer(&A)), lgr_of(&A));
	ck_assert_uint_eq(stat(&A, STAT_lgr_created), 2);
	/* each group in a protection domain of its own, not the device's */
	ck_assert_ptr_nonnull(first->link[0].pd);
	ck_assert_ptr_nonnull(lgr_of(&A)->link[0].pd);
	ck_assert_ptr_ne(first->link[0].pd, lgr_of(&A)->link[0].pd);
	ck_assert_ptr_ne(first->link[0].pd, first->link[0].dev->dev);
	for (i = 0; i < 16; i++)
		lgr_conn_del(&c[i]);
	close(lfd);
}
END_TEST

static int b_active_groups;

static bool
b_groups_settled(void)
{
	const struct lgr *l;
	int n = 0, pending = 0;

	for (l = lgr_of(&B); l != NULL; l = TAILQ_NEXT(l, entry)) {
		n += l->state == LGR_STATE_ACTIVE;
		pending += l->state != LGR_STATE_ACTIVE &&
			   l->state != LGR_STATE_TERMINATING;
	}
	b_active_groups = n;
	return pending == 0 &&
	       stat(&A, STAT_clnt_hshake_err_cnt) + (uint64_t)n >= 3;
}

/*
 * A peer may set up max_lgrs groups with us and no more: the next is
 * declined for lack of resources (it falls back for a moment), counted.
 */
/* A pending standard server group on B with the client at ip. */
static struct lgr *
smcr_pending_on_b(const char *ip)
{
	static const uint8_t zero[8], g[16] = {0xfe, 0x80, [15] = 0xa};
	struct addr any, peer;
	uint32_t decline = 0;
	struct lgr *l;

	memset(&any, 0, sizeof(any));
	l = lgr_smcr_new(B.ctx, LGR_ROLE_SERVER, zero, g, 255, 1, 1, &any,
			 host(&peer, ip), lab_eid(), &decline);
	ck_assert_ptr_nonnull(l);
	return l;
}

/*
 * Issue 43, M3: kernel peers' budgets are per host.  One host's groups
 * not yet up stop at max_pending_per_host while another host still gets
 * its own; all hosts together at max_pending; a host's connections at
 * max_conns_per_host, joins included.  Each bound is counted.
 */
START_TEST(smcr_budgets_per_host)
{
	struct conf_smcr *k;
	struct lgr_conn c;
	struct addr h;
	char ip[32];
	struct lgr *first = NULL;
	int i, n;

	smcr_sides(1);
	k = &B.conf->smcr;
	ck_assert_int_eq(k->max_pending_per_host, 4);
	ck_assert_int_eq(k->max_pending, 32);
	host(&host_a, "192.0.2.1");
	for (n = 0; lgr_smcr_budget(B.ctx, &host_a, true) == 0; n++) {
		ck_assert_int_lt(n, 100);
		first = smcr_pending_on_b("192.0.2.1");
	}
	ck_assert_int_eq(n, 4);
	ck_assert_uint_eq(stat(&B, STAT_smc_budget_host_pending), 1);
	/* another host is not held up by the first */
	ck_assert_int_eq(lgr_smcr_budget(B.ctx, host(&h, "192.0.2.9"), true),
			 0);
	/* all hosts together: 28 more from seven others, then none */
	for (i = 2; i < 9; i++) {
		snprintf(ip, sizeof(ip), "198.51.100.%d", i);
		for (n = 0; n < 4; n++) {
			ck_assert_int_eq(
				lgr_smcr_budget(B.ctx, host(&h, ip), true), 0);
			smcr_pending_on_b(ip);
		}
	}
	ck_assert_int_eq(lgr_smcr_budget(B.ctx, host(&h, "192.0.2.9"), true),
			 -ENOSPC);
	ck_assert_uint_eq(stat(&B, STAT_smc_budget_pending), 1);
	/* a join needs no new group: only the host's connections count */
	ck_assert_int_eq(lgr_smcr_budget(B.ctx, &host_a, false), 0);
	k->max_conns_per_host = 1;
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(lgr_conn_add_first(first, &c), 0);
	ck_assert_int_eq(lgr_smcr_budget(B.ctx, &host_a, false), -ENOSPC);
	ck_assert_uint_eq(stat(&B, STAT_smc_budget_host_conns), 1);
	lgr_conn_del(&c);
}
END_TEST

/*
 * Issue 43, item 4: on reload a kernel peer's group stays only while
 * its EID is still served and, for a client's (our server role), its
 * host still in allow (worker_revoke ends the others).
 */
START_TEST(smcr_kept_on_reload)
{
	struct conf_smcr k;
	struct addr_net net;
	char *allow[] = {"192.0.2.0/24"}, *ueids[] = {"LAB"},
	     *other[] = {"OTHER"};
	struct lgr *mine;

	smcr_sides(1);
	mine = smcr_pending_on_b("192.0.2.1");
	memset(&k, 0, sizeof(k));
	k.enabled = true;
	k.allow = allow;
	k.nallow = 1;
	k.allow_nets = &net;
	ck_assert_int_eq(addr_net_parse(allow[0], &net), 0);
	k.ueids = ueids;
	k.nueids = 1;
	ck_assert(lgr_smcr_kept(mine, &k));
	/* its host out of allow */
	ck_assert_int_eq(addr_net_parse("198.51.100.0/24", &net), 0);
	ck_assert(!lgr_smcr_kept(mine, &k));
	ck_assert_int_eq(addr_net_parse(allow[0], &net), 0);
	/* its EID no longer served */
	k.ueids = other;
	ck_assert(!lgr_smcr_kept(mine, &k));
	k.ueids = ueids;
	/* kernel_smc gone */
	k.enabled = false;
	ck_assert(!lgr_smcr_kept(mine, &k));
}
END_TEST

/* A's group with B active on both sides, B's among its kernel groups. */
static bool
native_up_beside_smcr(void)
{
	const struct lgr *l;

	if (!lgr_active(&A, 1))
		return stat(&A, STAT_clnt_hshake_err_cnt) > 0;
	TAILQ_FOREACH(l, &B.ctx->lgrs, entry)
		if (!l->smcr && l->state == LGR_STATE_ACTIVE)
			return true;
	return false;
}

/*
 * Issue 43, M2: kernel clients' groups waiting for their CONFIRM do not
 * count towards the native peer port's CLC_PENDING_MAX (64).  With 70 of
 * them on B (budgets raised, as if 70 hosts each had one), the
 * authenticated peer A still gets its group (before: DECLINE MEM).
 */
START_TEST(smcr_pending_spare_native_peers)
{
	char ip[32];
	int i;

	smcr_sides(1);
	B.conf->smcr.max_pending = 4096;
	for (i = 0; i < 70; i++) {
		snprintf(ip, sizeof(ip), "198.51.100.%d", i + 1);
		smcr_pending_on_b(ip);
	}
	connect_ab();
	ck_assert(run_until(native_up_beside_smcr, WAIT_MS));
	ck_assert_uint_eq(stat(&A, STAT_clnt_hshake_err_cnt), 0);
}
END_TEST

START_TEST(max_lgrs_per_peer)
{
	side_init(&A, "a", "b", 1, NULL, NULL);
	side_init(&B, "b", "a", 1, NULL, NULL);
	side_peer(&B)->max_lgrs = 2;
	connect_ab();
	connect_ab();
	connect_ab();
	ck_assert(run_until(b_groups_settled, WAIT_MS));
	ck_assert_int_eq(b_active_groups, 2);
	ck_assert_uint_eq(stat(&B, STAT_peer_lgr_limit), 1);
	ck_assert_uint_eq(stat(&A, STAT_clnt_hshake_err_cnt), 1);
	ck_assert_uint_eq(stat(&B, STAT_lgr_created), 2);
}
END_TEST

static bool
b_two_active(void)
{
	const struct lgr *l;
	int n = 0;

	for (l = lgr_of(&B); l != NULL; l = TAILQ_NEXT(l, entry))
		n += l->state == LGR_STATE_ACTIVE;
	return n == 2 || stat(&A, STAT_clnt_hshake_err_cnt) > 0;
}

/*
 * Strangers that only propose under the peer's name (it has no key;
 * they never send a CONFIRM) take nothing of its max_lgrs: the peer
 * itself still gets its groups.  Before, each PROPOSAL was charged and
 * the peer was declined.
 */
START_TEST(max_lgrs_charged_after_auth)
{
	struct clc_proposal_info p;
	uint8_t msg[CLC_MSG_MAX];
	int held[2], len, i;

	side_init(&A, "a", "b", 1, NULL, NULL);
	side_init(&B, "b", "a", 1, NULL, NULL);
	side_peer(&B)->max_lgrs = 2;
	raw_proposal(&p, "a");
	len = clc_proposal_encode(msg, sizeof(msg), &p);
	for (i = 0; i < 2; i++) {
		raw_to_b();
		raw_send(msg, (size_t)len);
		ck_assert_uint_eq(raw_read(sizeof(struct clc_accept)),
				  sizeof(struct clc_accept));
		held[i] = raw_fd;
		raw_fd = -1;
	}
	connect_ab();
	connect_ab();
	ck_assert(run_until(b_two_active, WAIT_MS));
	ck_assert_uint_eq(stat(&B, STAT_peer_lgr_limit), 0);
	ck_assert_uint_eq(stat(&A, STAT_clnt_hshake_err_cnt), 0);
	for (i = 0; i < 2; i++)
		close(held[i]);
}
END_TEST

static Suite *
lgr_suite(void)
{
	Suite *s = suite_create("lgr");
	TCase *tc = tcase_create("link groups");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, handshake_confirmed);
	tcase_add_test(tc, smcr_groups_both_roles);
	tcase_add_test(tc, smcr_second_link);
	tcase_add_test(tc, smcr_second_link_unbound);
	tcase_add_test(tc, links_take_the_peers_path);
	tcase_add_test(tc, decline_after_client_confirmed);
	tcase_add_test(tc, handshake_with_key);
	tcase_add_test(tc, second_link);
	tcase_add_test(tc, add_link_rejected);
	tcase_add_test(tc, test_link);
	tcase_add_test(tc, check_peer_round_trip);
	tcase_add_test(tc, check_peer_without_group);
	tcase_add_test(tc, completion_error_failover);
	tcase_add_test(tc, monitor_events);
	tcase_add_test(tc, port_active_readds_link);
	tcase_add_test(tc, broken_link_flushes);
	tcase_add_test(tc, decline_nosmcrdev);
	tcase_add_test(tc, decline_mem_rings);
	tcase_add_test(tc, local_nosmcrdev);
	tcase_add_test(tc, wrong_key);
	tcase_add_test(tc, wrong_key_no_rkey);
	tcase_add_test(tc, unknown_peer);
	tcase_add_test(tc, malformed_clc);
	tcase_add_test(tc, malformed_accept);
	tcase_add_test(tc, idle_linger);
	tcase_add_test(tc, peer_gone);
	tcase_add_test(tc, malformed_llc);
	tcase_add_test(tc, cdc_demux);
	tcase_add_test(tc, cdc_data_negotiated);
	tcase_add_test(tc, llc_waits_past_queue);
	tcase_add_test(tc, reuse_until_full);
	tcase_add_test(tc, max_lgrs_per_peer);
	tcase_add_test(tc, smcr_budgets_per_host);
	tcase_add_test(tc, smcr_kept_on_reload);
	tcase_add_test(tc, smcr_pending_spare_native_peers);
	tcase_add_test(tc, max_lgrs_charged_after_auth);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(lgr_suite());
	int failed;

	log_init(1, LOG_LEVEL_WARN);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
