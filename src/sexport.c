// SPDX-License-Identifier: BSD-2-Clause
/*
 * The standard dialect's export side, up to its answer to the CLC (DESIGN
 * §10): a Linux kernel SMC-R client connected to an export's smc_listen.
 * One TCP connection and one CLC handshake per connection, as the kernel
 * runs them (shared/reference/smc-interop.md §1.2):
 *
 *   - the SYN carried the SMC-R option and our SYN-ACK echoed it (the BPF
 *     program of smc_opt.c): the client owes us a CLC PROPOSAL and waits
 *     6 s for our ACCEPT or DECLINE.  We read exactly the PROPOSAL and
 *     judge it: the client's address in kernel_smc.allow, SMC-Rv2
 *     offered, one of its EIDs among kernel_smc.ueids, its RoCE v2 GID
 *     the address it connected from.  Then we DECLINE (the kernel's
 *     diagnosis codes, counted by reason), and the client goes on as TCP
 *     on this very connection, as the protocol intends;
 *   - no echo (no program, or a SYN without the option): plain TCP from
 *     the first byte, counted with the reason.
 *
 * Either way the connection is then relayed to the export's target as a
 * fallback connection is (fallback.c).  A PROPOSAL that passes every check
 * is declined too, with NOSMCRDEV: link groups of the standard dialect
 * (LLC v2, CONFIRM_RKEY per connection) are not built yet, so we have no
 * device to offer.  Kernel peers are not authenticated (smcproxyd(8),
 * SECURITY): nothing here trusts what the client says beyond the checks.
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "smcproxyd.h"
#include "clc_wire.h"
#include "sclc_wire.h"
#include "smc_opt.h"

#define SEXPORT_PROPOSAL_MS 6000 /* the kernel's CLC_WAIT_TIME */

/* The handshake's state: the CLC message being read. */
struct sexport_hs {
	uint8_t buf[SCLC_MSG_MAX];
	size_t len;  /* bytes in buf */
	size_t want; /* the message's length once its header is in */
};

static uint8_t sexport_system_id[8];
static pthread_once_t sexport_system_id_once = PTHREAD_ONCE_INIT;

static void
sexport_system_id_init(void)
{
	unsigned char rnd[AUTH_NONCE_LEN];

	auth_nonce(rnd);
	memcpy(sexport_system_id, rnd, sizeof(sexport_system_id));
}

void
sexport_hs_free(struct session *s)
{
	free(s->shs);
	s->shs = NULL;
}

/* Connect to the export's target; the relay starts when connected. */
static void
sexport_open(struct session *s)
{
	enum session_reason r;

	sexport_hs_free(s);
	session_timer(s, 0);
	session_want(s, 0, EV_READ, false);
	if (export_room(s->w, &r) != 0 || export_connect(s, &r) != 0)
		session_close(s, r);
}

/*
 * Answer the PROPOSAL with a DECLINE of code (counted as stat) and go on
 * as TCP.  The socket's buffer is empty and the message tiny: it goes
 * whole or the client is gone.
 */
static void
sexport_decline(struct session *s, uint32_t code, enum stats_id stat,
		uint8_t version)
{
	struct stats *st = worker_stats(s->w);
	struct sclc_decline_info d;
	uint8_t msg[sizeof(struct sclc_decline)];
	char who[ADDR_STRLEN];
	int n;

	pthread_once(&sexport_system_id_once, sexport_system_id_init);
	memset(&d, 0, sizeof(d));
	d.version = version == SCLC_VERSION_V1 ? SCLC_VERSION_V1 : SCLC_VERSION;
	d.diagnosis = code;
	d.os_type = SCLC_OS_LINUX;
	memcpy(d.system_id, sexport_system_id, sizeof(d.system_id));
	n = sclc_decline_encode(msg, sizeof(msg), &d);
	stats_add(st, stat, 1);
	STATS_INC(st, smc_declines_sent);
	s->smc_decline = code;
	log_debug("conn 0x%llx: export %s: kernel SMC-R client %s declined: "
		  "%s (0x%08x), going on as TCP",
		  (unsigned long long)s->id, s->export->name,
		  addr_str(&s->addr[0], who, sizeof(who)),
		  clc_decline_name(code), code);
	if (n < 0 ||
	    send(s->fd[0], msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) != n) {
		session_close(s, SESSION_CLIENT_RST);
		return;
	}
	sexport_open(s);
}

/* Whether one of the proposal's EIDs is one we serve. */
static bool
sexport_eid_ours(const struct conf_ksmc *k, const struct sclc_proposal_info *p)
{
	uint8_t eid[SCLC_EID_LEN];
	int i, j;

	for (i = 0; i < k->nueids; i++) {
		if (sclc_eid_put(eid, k->ueids[i]) != 0)
			continue;
		for (j = 0; j < p->eid_cnt; j++)
			if (memcmp(eid, p->eid[j], SCLC_EID_LEN) == 0)
				return true;
	}
	return false;
}

/* Whether the client's address is in kernel_smc.allow. */
static bool
sexport_allowed(const struct conf_ksmc *k, const struct addr *a)
{
	int i;

	for (i = 0; i < k->nallow; i++)
		if (addr_net_match(&k->allow_nets[i], a))
			return true;
	return false;
}

/* Whether the RoCE v2 GID is the IPv4 address the client connected from. */
static bool
sexport_gid_ours(const uint8_t gid[16], const struct addr *a)
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

/* The whole PROPOSAL is in: judge it. */
static void
sexport_proposal(struct session *s)
{
	const struct conf_ksmc *k = &s->conf->ksmc;
	struct sexport_hs *hs = s->shs;
	struct sclc_proposal_info *p;
	uint32_t code = 0;

	STATS_INC(worker_stats(s->w), smc_proposals);
	p = malloc(sizeof(*p));
	if (p == NULL) {
		session_close(s, SESSION_RESOURCE);
		return;
	}
	if (sclc_proposal_decode(hs->buf, hs->len, p, &code) != 0) {
		free(p);
		sexport_decline(s, code, STAT_smc_decline_malformed,
				SCLC_VERSION);
		return;
	}
	if (!sexport_allowed(k, &s->addr[0]))
		sexport_decline(s, CLC_DECL_CNFERR, STAT_smc_decline_allow,
				SCLC_VERSION);
	else if (p->typev2 != SCLC_TYPE_R && p->typev2 != SCLC_TYPE_B)
		sexport_decline(s, CLC_DECL_MODEUNSUPP, STAT_smc_decline_mode,
				p->typev2 == SCLC_TYPE_N ? SCLC_VERSION_V1 :
							   SCLC_VERSION);
	else if (!sexport_eid_ours(k, p))
		sexport_decline(s, CLC_DECL_NOUEID, STAT_smc_decline_eid,
				SCLC_VERSION);
	else if (!sexport_gid_ours(p->roce_gid, &s->addr[0]))
		sexport_decline(s, CLC_DECL_NOROUTE, STAT_smc_decline_gid,
				SCLC_VERSION);
	else
		sexport_decline(s, CLC_DECL_NOSMCRDEV, STAT_smc_decline_nodev,
				SCLC_VERSION);
	free(p);
}

/*
 * Not a CLC message where the client owed us one: no DECLINE can be
 * framed, and no byte after it can be told from the message.  Reset,
 * counted and rate-limited per source as a failed handshake.
 */
static void
sexport_malformed(struct session *s, const char *why)
{
	char host[ADDR_STRLEN] = "?";

	addr_host(&s->addr[0], host, sizeof(host));
	STATS_INC(worker_stats(s->w), smc_clc_malformed);
	auth_failed(worker_auth(s->w), &s->addr[0], now_ms());
	log_warnx_rl("smc_listen refused", host,
		     "conn 0x%llx: export %s: kernel SMC-R client %s: %s",
		     (unsigned long long)s->id, s->export->name, host, why);
	session_close(s, SESSION_PROTOCOL_ERROR);
}

/* The client's DECLINE (it gave up on SMC-R first): TCP it is. */
static void
sexport_declined(struct session *s)
{
	struct sexport_hs *hs = s->shs;
	struct sclc_decline_info d;
	uint32_t code;

	if (sclc_decline_decode(hs->buf, hs->len, &d, &code) != 0) {
		sexport_malformed(s, "malformed DECLINE");
		return;
	}
	STATS_INC(worker_stats(s->w), smc_declines_received);
	s->smc_decline = d.diagnosis;
	sexport_open(s);
}

/* Read what is due of the CLC message; 1 when it is whole, 0, or -1. */
static int
sexport_read(struct session *s)
{
	struct sexport_hs *hs = s->shs;
	size_t need = hs->want ? hs->want : sizeof(struct clc_hdr);
	uint32_t code;
	uint16_t length;
	uint8_t type;
	ssize_t n;

	while (hs->len < need) {
		n = recv(s->fd[0], hs->buf + hs->len, need - hs->len, 0);
		if (n == 0) {
			session_close(s, SESSION_CLIENT_FIN);
			return -1;
		}
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			session_close(s, SESSION_CLIENT_RST);
			return -1;
		}
		hs->len += (size_t)n;
		if (hs->want || hs->len < sizeof(struct clc_hdr))
			continue;
		if (sclc_hdr_check(hs->buf, hs->len, &type, &length, &code) ||
		    (type != CLC_PROPOSAL && type != CLC_DECLINE)) {
			sexport_malformed(s, "no CLC PROPOSAL after the SMC-R "
					     "option");
			return -1;
		}
		hs->want = need = length;
	}
	return 1;
}

/* A socket event of s while it owes its client a CLC answer. */
void
sexport_io(struct session *s, int i, short what)
{
	if (s->state == SESSION_CONNECT_TARGET) {
		enum session_reason r;

		if (i == 1 && (what & EV_WRITE)) {
			if (export_connected(s, &r) != 0)
				session_close(s, r);
			else
				fallback_relay_start(s, STAT_smc_conns_tcp);
		}
		return;
	}
	if (i != 0 || !(what & EV_READ) || sexport_read(s) <= 0)
		return;
	if (((const struct clc_hdr *)s->shs->buf)->type == CLC_DECLINE)
		sexport_declined(s);
	else
		sexport_proposal(s);
}

/* The handshake timer of s fired. */
void
sexport_timeout(struct session *s)
{
	if (s->state == SESSION_CONNECT_TARGET) {
		session_close(s, export_timed_out(s));
		return;
	}
	STATS_INC(worker_stats(s->w), smc_clc_timeouts);
	session_close(s, SESSION_PROTOCOL_ERROR);
}

/*
 * Listener callback: a client connected to an export's smc_listen (arg is
 * the export).  Whether its SYN-ACK echoed the SMC-R option decides if a
 * CLC PROPOSAL comes first.
 */
void
sexport_accept(struct worker *w, int fd, void *arg)
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
	s->export = exp;
	snprintf(s->export_name, sizeof(s->export_name), "%s", exp->name);
	if (echoed > 0 &&
	    auth_rate_limited(worker_auth(w), &s->addr[0], now_ms())) {
		STATS_INC(st, smc_rate_limited);
		session_close(s, SESSION_PROTOCOL_ERROR);
		return;
	}
	if (!smc_opt_attached()) {
		STATS_INC(st, smc_opt_unavailable);
		sexport_open(s);
		return;
	}
	if (echoed <= 0) {
		STATS_INC(st, smc_opt_absent);
		sexport_open(s);
		return;
	}
	STATS_INC(st, smc_opt_echoed);
	s->shs = calloc(1, sizeof(*s->shs));
	if (s->shs == NULL) {
		session_close(s, SESSION_RESOURCE);
		return;
	}
	s->state = SESSION_HANDSHAKE;
	session_want(s, 0, EV_READ, true);
	session_timer_ms(s, SEXPORT_PROPOSAL_MS);
}
