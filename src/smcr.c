// SPDX-License-Identifier: BSD-2-Clause
/*
 * Connections with Linux kernel SMC-R peers (the SMC-R dialect, DESIGN
 * §10), up to the answer to their CLC, in both roles.  One TCP connection
 * and one CLC handshake per connection, as the kernel runs them
 * (shared/reference/smc-interop.md §1.2); the SMC-R TCP option on SYN and
 * SYN-ACK comes from the BPF program of smc_opt.c.
 *
 * Export side (exports[].smc_listen, a kernel client connected to us):
 *   - our SYN-ACK echoed its option: the client owes us a CLC PROPOSAL
 *     and waits 6 s for our ACCEPT or DECLINE.  We read exactly the
 *     PROPOSAL and judge it: the client's address in kernel_smc.allow,
 *     SMC-Rv2 offered, one of its EIDs among kernel_smc.ueids, its RoCE
 *     v2 GID the address it connected from;
 *   - no echo (no program, or a SYN without the option): plain TCP.
 * Rule side (rules[].target_smc, we connect to a kernel server):
 *   - its SYN-ACK echoed our option: we owe it a PROPOSAL (our EIDs, our
 *     RoCE v2 GID) and read its ACCEPT or DECLINE;
 *   - no echo: plain TCP.
 *
 * Export side over SMC-R: a PROPOSAL that passes gets the export's
 * target connected, then a place on the link group we have with that
 * client (its system id and GID) or one of its own (first contact:
 * session_rdma.c, lgr_smcr.c), and our ACCEPT; the client's
 * CONFIRM connects the QPs of a new group, CONFIRM_LINK (LLC v2) brings
 * its link up, and the connection relays over RDMA, its TCP connection
 * kept open and silent as the kernel expects.
 *
 * Rule side over SMC-R: the server's ACCEPT (first contact, or a group of
 * ours it names by its QP) gets our CONFIRM, and the relay starts once
 * the link is up.
 *
 * Otherwise the connection is declined to TCP (the kernel's diagnosis
 * codes, counted by reason) and then relayed as a fallback connection is
 * (fallback.c); the kernel peer goes on as TCP on the very connection, as
 * the protocol intends.  Kernel peers are not authenticated (smcproxyd(8),
 * SECURITY): nothing here trusts what they say beyond the checks.
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "smcproxyd.h"
#include "clc_wire.h"
#include "smcr_clc_wire.h"
#include "smc_opt.h"

#define SMCR_CLC_WAIT_MS 6000 /* the kernel's CLC_WAIT_TIME */
/* a PROPOSAL waits this long at most for a group with its client on its
 * way: a third of the client's CLC_WAIT_TIME, the rest for our own */
#define SMCR_GROUP_WAIT_MS 2000

/* The handshake's state: the CLC message being read. */
struct smcr_hs {
	uint8_t buf[SMCR_CLC_MSG_MAX];
	size_t len;	/* bytes in buf */
	size_t want;	/* the message's length once its header is in */
	uint8_t owed;	/* the CLC type the peer owes us (or a DECLINE) */
	bool confirmed; /* export side: the client's CONFIRM came */
	/* export side over SMC-R: what the PROPOSAL asked for, kept for
	 * our ACCEPT */
	bool rdma;
	bool first; /* our ACCEPT said first contact */
	uint8_t eid[SMCR_CLC_EID_LEN];
	uint8_t gid[16]; /* the client's RoCE v2 GID */
	uint8_t sysid[8];
	uint8_t release;
	uint8_t max_conns;
	uint8_t max_links;  /* release 1: what it proposed; else 2 */
	struct addr local;  /* our end, on the device we answer from */
	bool group_waiting; /* parked, the timer bounds that wait */
	bool group_waited;  /* that wait is over: no other */
};

static void smcr_malformed(struct session *s, const char *why);
static const struct session_ops smcr_ops;

/* The CLC is over, or s goes: its buffer goes. */
static void
smcr_hs_free(struct session *s)
{
	free(s->shs);
	s->shs = NULL;
}

/* The socket of s that faces the kernel peer. */
static int
smcr_side(const struct session *s)
{
	return s->role == SESSION_ROLE_RULE ? 1 : 0;
}

/* The name of s's rule or export, for log lines. */
static const char *
smcr_name(const struct session *s)
{
	return s->role == SESSION_ROLE_RULE ? s->rule->name : s->export->name;
}

/*
 * The CLC is over: as TCP from here.  The export side connects to its
 * target first; the rule side has both sockets and relays at once.
 */
static void
smcr_open(struct session *s)
{
	enum session_reason r;

	smcr_hs_free(s);
	session_timer(s, 0);
	session_want(s, smcr_side(s), EV_READ, false);
	if (s->role == SESSION_ROLE_RULE) {
		intercept_learned(s, false);
		fallback_relay_start(s, STAT_smc_out_tcp);
	} else if (s->fd[1] >= 0) /* declined after the target connected */
		fallback_relay_start(s, STAT_smc_conns_tcp);
	else if (export_room(s->w, &r) != 0 || export_connect(s, &r) != 0)
		session_close(s, r);
}

/*
 * Send the kernel peer a DECLINE of code (counted as stat) and go on as
 * TCP; sync_err: the first-contact bit, "your link group is not ours".
 * The socket's buffer is empty and the message tiny: it goes whole or
 * the peer is gone.
 */
static void
smcr_decline(struct session *s, uint32_t code, enum stats_id stat,
	     uint8_t version, bool sync_err)
{
	struct stats *st = worker_stats(s->w);
	struct smcr_clc_decline_info d;
	uint8_t msg[sizeof(struct smcr_clc_decline)];
	char who[ADDR_STRLEN];
	int i = smcr_side(s), n;

	memset(&d, 0, sizeof(d));
	d.version = version == SMCR_CLC_VERSION_V1 ? SMCR_CLC_VERSION_V1 :
						     SMCR_CLC_VERSION;
	d.sync_err = sync_err;
	d.diagnosis = code;
	d.os_type = SMCR_CLC_OS_LINUX;
	/* the one system id we have towards kernel peers */
	session_rdma_smcr_system_id(s, d.system_id);
	n = smcr_clc_decline_encode(msg, sizeof(msg), &d);
	stats_add(st, stat, 1);
	STATS_INC(st, smc_declines_sent);
	stats_decline(st, code, true);
	s->smc_decline = code;
	khost_decline(&s->addr[i], code, false);
	log_debug("conn 0x%llx: %s %s: kernel SMC-R %s %s declined: %s "
		  "(0x%08x), going on as TCP",
		  (unsigned long long)s->id, i ? "rule" : "export",
		  smcr_name(s), i ? "server" : "client",
		  addr_str(&s->addr[i], who, sizeof(who)),
		  clc_decline_name(code), code);
	if (n < 0 ||
	    send(s->fd[i], msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) != n) {
		session_close(s, i ? SESSION_TARGET_RST : SESSION_CLIENT_RST);
		return;
	}
	smcr_open(s);
}

/*
 * The kernel peer (a client, export side; a server, rule side) failed a
 * handshake by its own doing (what it sent, or nothing in time): its
 * host is charged in the table of the peer port's failed handshakes
 * (auth.c: 10 at once, then one a second), so that one that keeps at it
 * gets a DECLINE at once and no resources (smcr_limited).
 */
static void
smcr_charge(struct session *s)
{
	auth_failed(worker_auth(s->w), &s->addr[smcr_side(s)], now_ms());
}

/* Whether the peer's host failed too often to be given SMC-R now. */
static bool
smcr_limited(struct session *s)
{
	char host[ADDR_STRLEN] = "?";
	int i = smcr_side(s);

	if (!auth_rate_limited(worker_auth(s->w), &s->addr[i], now_ms()))
		return false;
	addr_host(&s->addr[i], host, sizeof(host));
	log_warnx_rl("kernel SMC-R rate limited", host,
		     "conn 0x%llx: %s %s: kernel SMC-R %s %s failed too many "
		     "handshakes: declined at once, TCP",
		     (unsigned long long)s->id, i ? "rule" : "export",
		     smcr_name(s), i ? "server" : "client", host);
	return true;
}

/* The first of the proposal's EIDs we serve, or NULL. */
static const uint8_t *
smcr_eid_ours(const struct conf_smcr *k, const struct smcr_clc_proposal_info *p)
{
	int j;

	for (j = 0; j < p->eid_cnt; j++)
		if (conf_smcr_serves(k, p->eid[j]))
			return p->eid[j];
	return NULL;
}

/* Whether the RoCE v2 GID is the IPv4 address a (IPv4-mapped). */
static bool
smcr_gid_of(const uint8_t gid[16], const struct addr *a)
{
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0,    0,
					   0, 0, 0, 0, 0xff, 0xff};
	const struct sockaddr_in *s4 = (const void *)&a->ss;
	const struct sockaddr_in6 *s6 = (const void *)&a->ss;

	if (memcmp(gid, mapped, sizeof(mapped)) != 0)
		return false;
	if (a->ss.ss_family == AF_INET)
		return memcmp(gid + 12, &s4->sin_addr, 4) == 0;
	return a->ss.ss_family == AF_INET6 &&
	       memcmp(gid, &s6->sin6_addr, 16) == 0;
}

/*
 * Export side: a PROPOSAL that passed.  Its target is connected first,
 * within the 6 s the client gives our answer, so that what the client
 * sends once its connect returns has somewhere to go; then our ACCEPT
 * (smcr_rdma_accept).
 */
static void
smcr_rdma_target(struct session *s, const struct smcr_clc_proposal_info *p,
		 const uint8_t *eid)
{
	struct smcr_hs *hs = s->shs;
	enum session_reason r;

	hs->rdma = true;
	memcpy(hs->eid, eid, sizeof(hs->eid));
	memcpy(hs->sysid, p->system_id, sizeof(hs->sysid));
	memcpy(hs->gid, p->roce_gid, sizeof(hs->gid));
	hs->release = p->release >= SMCR_CLC_RELEASE_1 ? SMCR_CLC_RELEASE_1 : 0;
	hs->max_conns = hs->release ? p->max_conns : CLC_MAX_CONNS_MAX;
	hs->max_links = hs->release ? p->max_links : CLC_MAX_LINKS_MAX;
	session_want(s, 0, EV_READ, false);
	if (export_room(s->w, &r) != 0 || export_connect(s, &r) != 0) {
		session_close(s, r);
		return;
	}
	session_timer_ms(s, SMCR_CLC_WAIT_MS);
}

/* Our host name as ACCEPT and CONFIRM carry it: blank-padded. */
static void
smcr_hostname(uint8_t out[SMCR_CLC_HOSTNAME_LEN])
{
	char name[256] = "";
	size_t n;

	(void)gethostname(name, sizeof(name) - 1);
	n = strnlen(name, SMCR_CLC_HOSTNAME_LEN);
	memset(out, ' ', SMCR_CLC_HOSTNAME_LEN);
	memcpy(out, name, n);
}

/*
 * Our end of a first contact as ACCEPT or CONFIRM says it: the link's QP,
 * the RMB element (index 1, as Linux), the token, Linux's OS type; the
 * caller adds the EID, the release and the limits.
 */
static void
smcr_rdma_ours(const struct session_rdma_smcr *me,
	       struct smcr_clc_accept_info *a)
{
	memset(a, 0, sizeof(*a));
	a->first_contact = true;
	memcpy(a->system_id, me->system_id, sizeof(a->system_id));
	memcpy(a->gid, me->qp.gid, sizeof(a->gid));
	memcpy(a->mac, me->qp.mac, sizeof(a->mac));
	a->qpn = me->qp.qpn;
	a->psn = me->qp.psn;
	a->mtu = (uint8_t)me->qp.mtu;
	a->rmb_rkey = me->rmb_rkey;
	a->rmbe_idx = SMCR_CLC_RMBE_IDX_MIN;
	a->alert_token = me->token;
	a->rmbe_size = me->rmbe_size;
	a->rmb_vaddr = me->rmb_vaddr;
	a->first_contact = me->first_contact;
	if (!me->first_contact)
		return; /* no first-contact extension */
	a->direct = true;
	a->os_type = SMCR_CLC_OS_LINUX;
	smcr_hostname(a->hostname);
}

/* The peer's end as its ACCEPT or CONFIRM c says it. */
static void
smcr_rdma_theirs(const struct smcr_clc_accept_info *c,
		 struct session_rdma_smcr *peer)
{
	memset(peer, 0, sizeof(*peer));
	memcpy(peer->qp.gid, c->gid, sizeof(peer->qp.gid));
	memcpy(peer->qp.mac, c->mac, sizeof(peer->qp.mac));
	peer->qp.qpn = c->qpn;
	peer->qp.psn = c->psn;
	peer->qp.mtu = c->mtu;
	peer->token = c->alert_token;
	peer->rmb_rkey = c->rmb_rkey;
	/* Linux sends element 1; another may send a later one */
	peer->rmb_vaddr = c->rmb_vaddr + clc_rmbe_bytes(c->rmbe_size) *
						 (uint64_t)(c->rmbe_idx - 1);
	peer->rmbe_size = c->rmbe_size;
}

/*
 * Export side, the target connected: the client joins the group we have
 * with it (same system id and GID, room left) or gets one of its own
 * (first contact), and our ACCEPT: our QP, its RMB element and token, the
 * EID it proposed that we serve, for a new group release 1 limits (two
 * links only with a device here for the second: the client then waits
 * for its ADD_LINK).  Then its CONFIRM is owed.  With no group to give
 * (no device for the address, no buffers), a DECLINE: TCP.  The ACCEPT's
 * rkey is our RMB element's on the link it names; on a group of two
 * links CONFIRM_RKEY tells the other (session_rdma_smcr_start).
 *
 * A client's connections propose in parallel (Linux serializes only
 * from the ACCEPT on), and Linux's server takes one PROPOSAL at a time
 * (smc_server_lgr_pending), so that the next finds the group the first
 * set up.  Here one that finds this worker's group with that client on
 * its way waits for it (session_rdma_smcr_wait: parked, and back here
 * when that group is up or failed), SMCR_GROUP_WAIT_MS at most: else
 * each would be a first contact with a group of its own.
 */
static void
smcr_rdma_offer(struct session *s)
{
	struct smcr_hs *hs = s->shs;
	struct session_rdma_smcr_want want;
	struct session_rdma_smcr me;
	struct smcr_clc_accept_info a;
	uint8_t msg[SMCR_CLC_ACCEPT_FC_LEN];
	uint32_t code;
	int n;

	memset(&want, 0, sizeof(want));
	memcpy(want.sysid, hs->sysid, sizeof(want.sysid));
	memcpy(want.gid, hs->gid, sizeof(want.gid));
	want.host = s->addr[0];
	memcpy(want.eid, hs->eid, sizeof(want.eid));
	want.max_conns = hs->max_conns;
	want.max_links = hs->max_links;
	want.release = hs->release;
	want.join = want.create = true;
	if (!hs->group_waited &&
	    session_rdma_smcr_wait(s, &want, smcr_rdma_offer)) {
		if (!hs->group_waiting)
			session_timer_ms(s, SMCR_GROUP_WAIT_MS);
		hs->group_waiting = true;
		return;
	}
	hs->group_waiting = false;
	code = session_rdma_smcr_open(s, &hs->local, &want, &me);
	if (code != 0) {
		smcr_decline(s, code, STAT_smc_decline_nodev, SMCR_CLC_VERSION,
			     false);
		return;
	}
	hs->first = me.first_contact;
	smcr_rdma_ours(&me, &a);
	memcpy(a.eid, hs->eid, sizeof(a.eid));
	a.release = hs->first ? hs->release : 0;
	if (a.release) {
		a.max_conns = me.max_conns;
		a.max_links = me.max_links;
	}
	n = smcr_clc_accept_encode(msg, sizeof(msg), &a);
	if (n < 0 ||
	    send(s->fd[0], msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) != n) {
		session_close(s, n < 0 ? SESSION_RESOURCE : SESSION_CLIENT_RST);
		return;
	}
	STATS_INC(worker_stats(s->w), smc_accepts);
	hs->len = hs->want = 0;
	hs->owed = CLC_CONFIRM;
	session_want(s, 0, EV_READ, true);
	session_timer_ms(s, SMCR_CLC_WAIT_MS);
}

/* Export side: the target answered; our ACCEPT (smcr_rdma_offer). */
static void
smcr_rdma_accept(struct session *s)
{
	struct smcr_hs *hs = s->shs;
	socklen_t len = sizeof(hs->local.ss);
	enum session_reason r;

	if (export_connected(s, &r) != 0) {
		session_close(s, r);
		return;
	}
	memset(&hs->local, 0, sizeof(hs->local));
	if (getsockname(s->fd[0], (struct sockaddr *)&hs->local.ss, &len) !=
	    0) {
		session_close(s, SESSION_CLIENT_RST);
		return;
	}
	hs->local.len = len;
	s->state = SESSION_HANDSHAKE;
	smcr_rdma_offer(s);
}

/*
 * Export side: the client's CONFIRM.  Our QP connects to its and sends
 * CONFIRM_LINK; once the client answers, the relay starts over RDMA
 * (session_rdma.c).  From here the client waits for CONFIRM_LINK, not for
 * a CLC message: a CONFIRM we cannot take ends the connection (a DECLINE
 * now would reach the client's program as data).
 */
static void
smcr_rdma_confirmed(struct session *s)
{
	struct smcr_hs *hs = s->shs;
	struct session_rdma_smcr peer;
	struct smcr_clc_accept_info c;
	uint32_t code = 0;

	/* a first contact's GID is the client's address; a joining one's
	 * is that of its link our ACCEPT named (session_rdma_smcr_confirm) */
	if (smcr_clc_confirm_decode(hs->buf, hs->len, &c, &code) != 0 ||
	    c.first_contact != hs->first ||
	    (hs->first && !smcr_gid_of(c.gid, &s->addr[0]))) {
		smcr_malformed(s, "a CONFIRM we cannot take");
		return;
	}
	smcr_rdma_theirs(&c, &peer);
	hs->confirmed = true;
	STATS_INC(worker_stats(s->w), smc_confirms);
	session_want(s, 0, EV_READ, false);
	code = session_rdma_smcr_confirm(s, &peer);
	if (code == CLC_DECL_SYNCERR) {
		smcr_malformed(s, "a CONFIRM from another link than ours");
		return;
	}
	if (code != 0) {
		session_close(s, SESSION_LINK_FAILED);
		return;
	}
	if (!hs->first) {
		session_rdma_smcr_start(s); /* the link is up already */
		return;
	}
	session_timer_ms(s, SMCR_CLC_WAIT_MS);
}

/* Export side: the whole PROPOSAL is in: judge it. */
static void
smcr_proposal(struct session *s)
{
	const struct conf_smcr *k = &s->conf->smcr;
	struct smcr_hs *hs = s->shs;
	struct smcr_clc_proposal_info *p;
	enum stats_id stat;
	uint32_t code = 0;
	uint8_t version;

	STATS_INC(worker_stats(s->w), smc_proposals);
	p = malloc(sizeof(*p));
	if (p == NULL) {
		session_close(s, SESSION_RESOURCE);
		return;
	}
	if (smcr_clc_proposal_decode(hs->buf, hs->len, p, &code) != 0) {
		free(p);
		smcr_charge(s);
		smcr_decline(s, code, STAT_smc_decline_malformed,
			     SMCR_CLC_VERSION, false);
		return;
	}
	version = SMCR_CLC_VERSION;
	if (smcr_limited(s)) {
		code = CLC_DECL_CNFERR;
		stat = STAT_smc_rate_limited;
	} else if (!conf_smcr_allows(k, &s->addr[0])) {
		code = CLC_DECL_CNFERR;
		stat = STAT_smc_decline_allow;
	} else if (p->typev2 != SMCR_CLC_TYPE_R &&
		   p->typev2 != SMCR_CLC_TYPE_B) {
		code = CLC_DECL_MODEUNSUPP;
		stat = STAT_smc_decline_mode;
		if (p->typev2 == SMCR_CLC_TYPE_N)
			version = SMCR_CLC_VERSION_V1;
	} else if (smcr_eid_ours(k, p) == NULL) {
		/* as Linux 6.12 answers it (340-smcr-target saw it) */
		code = CLC_DECL_NOSMCDEV;
		stat = STAT_smc_decline_eid;
	} else if (!smcr_gid_of(p->roce_gid, &s->addr[0])) {
		code = CLC_DECL_NOROUTE;
		stat = STAT_smc_decline_gid;
	} else {
		smcr_rdma_target(s, p, smcr_eid_ours(k, p));
		free(p);
		return;
	}
	free(p);
	/* each of these but the first is the client's doing */
	if (stat != STAT_smc_rate_limited)
		smcr_charge(s);
	smcr_decline(s, code, stat, version, false);
}

/*
 * Rule side: the server's ACCEPT.  First contact: a link group of our own
 * (client role) with our QP connected to its, our RMB element
 * registered, and our CONFIRM with the same release and limits; the
 * server then sends CONFIRM_LINK on the new link, and the relay starts
 * once we answered it (session_rdma.c).  Otherwise it names the group of
 * ours it chose by its QP: our CONFIRM, and the relay starts at once.  No
 * group to give: a DECLINE, and TCP; a group we do not have: SYNCERR with
 * the first-contact bit (the server then ends that group).
 */
static void
smcr_rdma_confirm(struct session *s, const struct smcr_clc_accept_info *a)
{
	struct session_rdma_smcr_want want;
	struct session_rdma_smcr me, peer;
	struct smcr_clc_accept_info c;
	uint8_t msg[SMCR_CLC_CONFIRM_MAX];
	struct addr local;
	socklen_t len = sizeof(local.ss);
	uint32_t code;
	int n;

	memset(&local, 0, sizeof(local));
	if (getsockname(s->fd[1], (struct sockaddr *)&local.ss, &len) != 0) {
		session_close(s, SESSION_TARGET_RST);
		return;
	}
	local.len = len;
	memset(&want, 0, sizeof(want));
	memcpy(want.sysid, a->system_id, sizeof(want.sysid));
	memcpy(want.gid, a->gid, sizeof(want.gid));
	want.qpn = a->qpn;
	want.host = s->addr[1];
	memcpy(want.eid, a->eid, sizeof(want.eid));
	want.max_conns = a->release ? a->max_conns : CLC_MAX_CONNS_MAX;
	want.max_links = a->release ? a->max_links : CLC_MAX_LINKS_MAX;
	want.release = a->release;
	want.join = !a->first_contact;
	want.create = a->first_contact;
	code = session_rdma_smcr_open(s, &local, &want, &me);
	smcr_rdma_theirs(a, &peer);
	if (code == 0 && (code = session_rdma_smcr_confirm(s, &peer)) != 0)
		session_rdma_smcr_drop(s);
	if (code == CLC_DECL_SYNCERR) {
		smcr_charge(s); /* a group we never had, or another's */
		smcr_decline(s, code, STAT_smc_out_decline_sync,
			     SMCR_CLC_VERSION, true);
		return;
	}
	if (code != 0) {
		smcr_decline(s, code, STAT_smc_out_decline_nodev,
			     SMCR_CLC_VERSION, false);
		return;
	}
	smcr_rdma_ours(&me, &c);
	memcpy(c.system_id, s->shs->sysid, sizeof(c.system_id));
	if (a->mtu < c.mtu)
		c.mtu = a->mtu;
	memcpy(c.eid, a->eid, sizeof(c.eid));
	if (a->first_contact) {
		c.direct = a->direct;
		c.release = a->release;
		c.max_conns = a->max_conns;
		c.max_links = a->max_links;
		c.gid_cnt = 1;
		memcpy(c.gids[0], me.qp.gid, sizeof(c.gids[0]));
	}
	n = smcr_clc_confirm_encode(msg, sizeof(msg), &c);
	if (n < 0 ||
	    send(s->fd[1], msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) != n) {
		session_close(s, n < 0 ? SESSION_RESOURCE : SESSION_TARGET_RST);
		return;
	}
	STATS_INC(worker_stats(s->w), smc_out_confirms);
	session_want(s, 1, EV_READ, false);
	if (!a->first_contact) {
		session_rdma_smcr_start(s); /* the link is up already */
		return;
	}
	session_timer_ms(s, SMCR_CLC_WAIT_MS);
}

/*
 * Rule side: the server's ACCEPT gets our CONFIRM (smcr_rdma_confirm),
 * or a DECLINE, as a kernel client does when it cannot go on: one whose
 * RoCE v2 GID is not the address we connected to NOROUTE, one that does
 * not decode with its code.
 */
static void
smcr_accepted(struct session *s)
{
	struct smcr_hs *hs = s->shs;
	struct smcr_clc_accept_info a;
	uint32_t code = 0;

	STATS_INC(worker_stats(s->w), smc_out_accepts);
	if (smcr_clc_accept_decode(hs->buf, hs->len, &a, &code) != 0) {
		smcr_charge(s);
		smcr_decline(s, code, STAT_smc_out_decline_bad,
			     SMCR_CLC_VERSION, false);
	} else if (!a.first_contact) { /* SYNCERR unless it names ours */
		smcr_rdma_confirm(s, &a);
	} else if (!smcr_gid_of(a.gid, &s->addr[1])) {
		smcr_charge(s);
		smcr_decline(s, CLC_DECL_NOROUTE, STAT_smc_out_decline_gid,
			     SMCR_CLC_VERSION, false);
	} else {
		smcr_rdma_confirm(s, &a);
	}
}

/*
 * Not a CLC message where the peer owed us one: no DECLINE can be framed,
 * and no byte after it can be told from the message.  Reset, counted, the
 * peer's host charged as a failed handshake.
 */
static void
smcr_malformed(struct session *s, const char *why)
{
	char host[ADDR_STRLEN] = "?";
	int i = smcr_side(s);

	addr_host(&s->addr[i], host, sizeof(host));
	smcr_charge(s);
	if (i == 0)
		STATS_INC(worker_stats(s->w), smc_clc_malformed);
	else
		STATS_INC(worker_stats(s->w), smc_out_malformed);
	log_warnx_rl(i ? "target_smc broken" : "smc_listen refused", host,
		     "conn 0x%llx: %s %s: kernel SMC-R %s %s: %s",
		     (unsigned long long)s->id, i ? "rule" : "export",
		     smcr_name(s), i ? "server" : "client", host, why);
	session_close(s, SESSION_PROTOCOL_ERROR);
}

/* The peer's DECLINE (it gave up on SMC-R first): TCP it is. */
static void
smcr_declined(struct session *s)
{
	struct smcr_hs *hs = s->shs;
	struct smcr_clc_decline_info d;
	uint32_t code;

	if (smcr_clc_decline_decode(hs->buf, hs->len, &d, &code) != 0) {
		smcr_malformed(s, "malformed DECLINE");
		return;
	}
	if (s->role == SESSION_ROLE_RULE)
		STATS_INC(worker_stats(s->w), smc_out_declines_received);
	else
		STATS_INC(worker_stats(s->w), smc_declines_received);
	stats_decline(worker_stats(s->w), d.diagnosis, false);
	s->smc_decline = d.diagnosis;
	khost_decline(&s->addr[smcr_side(s)], d.diagnosis, true);
	session_rdma_smcr_drop(s);
	smcr_open(s);
}

/* Read what is due of the CLC message; 1 when it is whole, 0, or -1. */
static int
smcr_read(struct session *s)
{
	struct smcr_hs *hs = s->shs;
	size_t need = hs->want ? hs->want : sizeof(struct clc_hdr);
	int i = smcr_side(s);
	uint8_t owed = hs->owed;
	uint32_t code;
	uint16_t length;
	uint8_t type;
	ssize_t n;

	while (hs->len < need) {
		n = recv(s->fd[i], hs->buf + hs->len, need - hs->len, 0);
		if (n == 0) {
			session_close(s, session_fin_reason(i));
			return -1;
		}
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			session_close(s, session_rst_reason(s, i));
			return -1;
		}
		hs->len += (size_t)n;
		if (hs->want || hs->len < sizeof(struct clc_hdr))
			continue;
		if (smcr_clc_hdr_check(hs->buf, hs->len, &type, &length,
				       &code) ||
		    (type != owed && type != CLC_DECLINE)) {
			smcr_malformed(s, i ? "no CLC ACCEPT or DECLINE after "
					      "our PROPOSAL" :
					  owed == CLC_CONFIRM ?
					      "no CLC CONFIRM or DECLINE after "
					      "our ACCEPT" :
					      "no CLC PROPOSAL after the "
					      "SMC-R option");
			return -1;
		}
		hs->want = need = length;
	}
	return 1;
}

static int
smcr_hs_new(struct session *s)
{
	s->shs = calloc(1, sizeof(*s->shs));
	if (s->shs == NULL) {
		session_close(s, SESSION_RESOURCE);
		return -ENOMEM;
	}
	s->shs->owed = s->role == SESSION_ROLE_RULE ? CLC_ACCEPT : CLC_PROPOSAL;
	s->state = SESSION_HANDSHAKE;
	session_want(s, smcr_side(s), EV_READ, true);
	session_timer_ms(s, SMCR_CLC_WAIT_MS);
	return 0;
}

/*
 * The PROPOSAL we owe a kernel SMC-R server that echoed our option on fd
 * (connected), into buf (SMCR_CLC_MSG_MAX bytes): SMC-Rv2 only, as Linux
 * 6.12 sends it (release 1, 255 connections, rdma.max_links links),
 * feature_mask 0, system id sysid, conf's EIDs and the RoCE v2 GID of
 * the address we connected from.  Its length; or, without an EID to
 * offer or over IPv6 (the kernel proposes SMC-Rv2 on IPv4 only), -EINVAL
 * with the code to DECLINE at once in *decline; -ENOMEM.  The rule side
 * (smcr_propose) and a check (smcr_check.c) send the same.
 */
int
smcr_proposal_build(const struct conf *conf, int fd, const uint8_t sysid[8],
		    uint8_t *buf, uint32_t *decline)
{
	const struct conf_smcr *k = &conf->smcr;
	struct smcr_clc_proposal_info *p;
	struct sockaddr_in me;
	socklen_t len = sizeof(me);
	int i, n;

	if (getsockname(fd, (struct sockaddr *)&me, &len) != 0 ||
	    me.sin_family != AF_INET) {
		*decline = CLC_DECL_NOSMCRDEV;
		return -EINVAL;
	}
	if (k->nueids == 0) {
		*decline = CLC_DECL_NOUEID;
		return -EINVAL;
	}
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return -ENOMEM;
	memcpy(p->system_id, sysid, sizeof(p->system_id));
	p->typev1 = SMCR_CLC_TYPE_N;
	p->typev2 = SMCR_CLC_TYPE_R;
	p->release = SMCR_CLC_RELEASE_1;
	p->max_conns = CLC_MAX_CONNS_MAX;
	/* a second link if the server has a device for one; without a
	 * device here for ours we refuse its ADD_LINK at once */
	p->max_links = (uint8_t)conf->rdma.max_links;
	for (i = 0; i < k->nueids && p->eid_cnt < SMCR_CLC_EID_MAX; i++)
		if (smcr_clc_eid_put(p->eid[p->eid_cnt], k->ueids[i]) == 0)
			p->eid_cnt++;
	p->roce_gid[10] = p->roce_gid[11] = 0xff;
	memcpy(p->roce_gid + 12, &me.sin_addr, 4);
	n = smcr_clc_proposal_encode(buf, SMCR_CLC_MSG_MAX, p);
	free(p);
	return n < 0 ? -ENOMEM : n;
}

/* Rule side: the server echoed our option, so we owe it a PROPOSAL. */
static void
smcr_propose(struct session *s)
{
	uint8_t buf[SMCR_CLC_MSG_MAX];
	unsigned char rnd[AUTH_NONCE_LEN];
	uint32_t code = 0;
	int n;

	/*
	 * A system id of the connection's own where Linux leaves zero
	 * without v1: the server matches link groups by it and the GID, and
	 * the GID of this host is also its kernel's.  With zero, a server
	 * that has a link group with this host's kernel SMC-R takes us for
	 * that peer and ACCEPTs us into its group; our SYNCERR then ends the
	 * group and the server resets the connection (340-smcr-target
	 * after 310 saw it).  The worker's: a group the server names in its
	 * ACCEPT is then one of this worker's.
	 */
	session_rdma_smcr_system_id(s, rnd);
	n = smcr_proposal_build(s->conf, s->fd[1], rnd, buf, &code);
	if (n == -EINVAL) {
		smcr_decline(s, code, STAT_smc_out_decline_nodev,
			     SMCR_CLC_VERSION, false);
		return;
	}
	if (n < 0 || smcr_hs_new(s) != 0) {
		if (n < 0)
			session_close(s, SESSION_RESOURCE);
		return;
	}
	memcpy(s->shs->sysid, rnd, sizeof(s->shs->sysid));
	STATS_INC(worker_stats(s->w), smc_out_proposals);
	if (send(s->fd[1], buf, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) != n)
		session_close(s, SESSION_TARGET_RST);
}

/* Rule side: the connect to target_smc ended. */
static void
smcr_connected(struct session *s)
{
	struct stats *st = worker_stats(s->w);
	char buf[ADDR_STRLEN];
	int err;

	session_want(s, 1, EV_WRITE, false);
	err = session_connect_error(s);
	if (err != 0) {
		errno = err;
		addr_str(&s->addr[1], buf, sizeof(buf));
		log_warn_rl("connect to target", buf,
			    "conn 0x%llx: rule %s: target_smc %s",
			    (unsigned long long)s->id, s->rule->name, buf);
		session_close(s, session_reason_of_connect(err, true));
		return;
	}
	switch (smc_opt_connected(s->fd[1])) {
	case SMC_OPT_ECHOED:
		STATS_INC(st, smc_out_echoed);
		if (smcr_limited(s)) /* no PROPOSAL: TCP at once */
			smcr_decline(s, CLC_DECL_CNFERR, STAT_smc_out_limited,
				     SMCR_CLC_VERSION, false);
		else
			smcr_propose(s);
		return;
	case SMC_OPT_PLAIN:
		STATS_INC(st, smc_out_plain);
		break;
	default:
		STATS_INC(st, smc_out_unavailable);
		break;
	}
	smcr_open(s);
}

/* A socket event of s while it connects or owes its peer a CLC answer. */
static void
smcr_io(struct session *s, int i, short what)
{
	enum session_reason r;
	uint8_t type;

	if (s->state == SESSION_CONNECT_TARGET) {
		if (i != 1 || !(what & EV_WRITE))
			return;
		if (s->role == SESSION_ROLE_RULE)
			smcr_connected(s);
		else if (s->shs != NULL && s->shs->rdma)
			smcr_rdma_accept(s);
		else if (export_connected(s, &r) != 0)
			session_close(s, r);
		else
			fallback_relay_start(s, STAT_smc_conns_tcp);
		return;
	}
	if (i != smcr_side(s) || !(what & EV_READ) || smcr_read(s) <= 0)
		return;
	type = ((const struct clc_hdr *)s->shs->buf)->type;
	if (type == CLC_DECLINE)
		smcr_declined(s);
	else if (type == CLC_CONFIRM)
		smcr_rdma_confirmed(s);
	else if (s->role == SESSION_ROLE_RULE)
		smcr_accepted(s);
	else
		smcr_proposal(s);
}

/* The timer of s fired before its handshake ended. */
static void
smcr_timeout(struct session *s)
{
	struct stats *st = worker_stats(s->w);

	if (s->shs != NULL && s->shs->group_waiting) {
		/* the group it waited for is not up yet: one of its own */
		s->shs->group_waiting = false;
		s->shs->group_waited = true;
		session_rdma_smcr_unwait(s);
		smcr_rdma_offer(s);
		return;
	}
	if (s->state == SESSION_CONNECT_TARGET) {
		if (s->role == SESSION_ROLE_EXPORT)
			session_close(s, export_timed_out(s));
		else
			session_close(s, SESSION_TARGET_TIMEOUT);
		return;
	}
	if (s->rdma != NULL) {
		/* our ACCEPT went and its CONFIRM did not come: a CLC
		 * timeout, charged to the client's host as any other (a
		 * host that floods ACCEPTs it never confirms is rate limited)
		 */
		if (s->role == SESSION_ROLE_EXPORT && s->shs != NULL &&
		    !s->shs->confirmed) {
			STATS_INC(st, smc_clc_timeouts);
			smcr_charge(s);
		}
		/* else the link did not come up in time */
		session_close(s, SESSION_LINK_FAILED);
		return;
	}
	if (s->role == SESSION_ROLE_RULE)
		STATS_INC(st, smc_out_timeouts);
	else
		STATS_INC(st, smc_clc_timeouts);
	smcr_charge(s);
	session_close(s, SESSION_PROTOCOL_ERROR);
}

/*
 * Rule side: s, a client of a target_smc rule, connects to the kernel
 * SMC-R server with the option on its SYN.
 */
void
smcr_connect(struct session *s)
{
	const struct addr *to;
	char buf[ADDR_STRLEN];
	int rc;

	s->dialect = SESSION_DIALECT_SMCR;
	session_ops_set(s, &smcr_ops);
	STATS_INC(worker_stats(s->w), smc_out_conns);
	s->state = SESSION_CONNECT_TARGET;
	/* an intercept rule's: where the client meant to go (intercept.c) */
	to = conf_rule_original(s->rule) ? &s->origin[1] : &s->rule->target_smc;
	rc = session_connect(s, to, NULL, true);
	if (rc == 0) {
		s->khost = khost_open(&s->addr[1]);
		session_timer(s, s->conf->handshake_timeout);
		return;
	}
	errno = -rc;
	addr_str(to, buf, sizeof(buf));
	log_warn_rl("connect to target", buf,
		    "conn 0x%llx: rule %s: target_smc %s",
		    (unsigned long long)s->id, s->rule->name, buf);
	session_close(s, session_reason_of_connect(-rc, true));
}

/*
 * Listener callback: a client connected to an export's smc_listen (arg is
 * the export).  Whether its SYN-ACK echoed the SMC-R option decides if a
 * CLC PROPOSAL comes first.
 */
void
smcr_accept(struct worker *w, int fd, void *arg)
{
	const struct conf_export *exp = arg;
	struct stats *st = worker_stats(w);
	struct session *s;
	int echoed;

	STATS_INC(st, smc_conns);
	echoed = smc_opt_echoed(fd);
	s = session_new(w, fd, SESSION_ROLE_EXPORT);
	if (s == NULL)
		return;
	s->dialect = SESSION_DIALECT_SMCR;
	s->khost = khost_open(&s->addr[0]);
	session_ops_set(s, &smcr_ops);
	s->export = exp;
	snprintf(s->export_name, sizeof(s->export_name), "%s", exp->name);
	if (!smc_opt_attached()) {
		STATS_INC(st, smc_opt_unavailable);
		smcr_open(s);
		return;
	}
	if (echoed <= 0) {
		STATS_INC(st, smc_opt_absent);
		smcr_open(s);
		return;
	}
	STATS_INC(st, smc_opt_echoed);
	(void)smcr_hs_new(s);
}

/* Until its relay starts, s may hold an RDMA connection set up by its CLC. */
static const struct session_ops smcr_ops = {
	.io = smcr_io,
	.timeout = smcr_timeout,
	.close = session_rdma_close,
	.hs_free = smcr_hs_free,
	.json = session_rdma_json,
};
