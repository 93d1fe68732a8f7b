// SPDX-License-Identifier: BSD-2-Clause
/*
 * The connection log: one info line for each proxied connection when it
 * ends, as HAProxy's tcplog: its id, the rule (or export) and peer, the
 * client (or target) address, on the export side the client the peer
 * named, the transport and, for the fallback, the peer's last SMC decline
 * (for a kernel SMC-R peer: dialect=smc-r, its address as the peer and
 * the DECLINE of the CLC; for an intercept rule the destination its
 * client connected to), whether it got connected, how long it lived,
 * the bytes each way and the close reason.  The line is key=value pairs
 * for people and scripts; in the journal the same values are fields
 * (CONN_ID=, RULE=, EXPORT=, PEER=, ...).  Rules and exports switch it
 * with log_connections; it is a connection's only line above debug, so
 * that with it off an aborted one is counted (close_REASON), not logged.
 * Connections that never named a rule or an
 * export (strangers on the peer port) are logged where they fail.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "clc_wire.h"
#include "smcproxyd.h"

struct connlog_line {
	char id[32], name[16 + CONF_NAME_MAX];
	char peer[8 + CONF_NAME_MAX + ADDR_STRLEN];
	char addr[16 + ADDR_STRLEN], origin[16 + ADDR_STRLEN];
	char destination[16 + ADDR_STRLEN];
	char transport[32], decline[48];
	char duration[32], in[40], out[40], reason[48], connected[24];
	char dialect[24];
};

/* Whether s's rule or export wants its connections logged. */
static bool
connlog_wanted(const struct session *s)
{
	if (s->role == SESSION_ROLE_RULE)
		return s->rule != NULL && s->rule->log_connections;
	return s->export != NULL && s->export->log_connections;
}

/*
 * connlog_close() - Log s, which closes now for reason; state is still the
 * one it was in (relay, or a handshake or connect that did not finish).
 */
void
connlog_close(const struct session *s, enum session_reason reason)
{
	bool rule = s->role == SESSION_ROLE_RULE;
	struct connlog_line l;
	const char *fields[14];
	bool smcr = s->dialect == SESSION_DIALECT_SMCR;
	char a[ADDR_STRLEN], o[ADDR_STRLEN], via[ADDR_STRLEN];
	char who[CONF_NAME_MAX + ADDR_STRLEN], d[ADDR_STRLEN];
	/* the export side knows the client when the peer named it, the
	 * rule side when a load balancer's PROXY header did (accept_proxy):
	 * then the client is that one, via the balancer */
	bool origin = s->origin[0].len != 0;
	/* an intercept rule's: where the client meant to go */
	bool dest = rule && s->rule != NULL && s->rule->nintercept > 0 &&
		    s->origin[1].len != 0;
	uint64_t ms = now_ms() - s->started_ms;
	uint32_t code = 0;
	int n = 0;

	if (!connlog_wanted(s) || !log_info_enabled())
		return;
	snprintf(l.id, sizeof(l.id), "CONN_ID=0x%" PRIx64, s->id);
	if (rule)
		snprintf(l.name, sizeof(l.name), "RULE=%s", s->rule->name);
	else
		snprintf(l.name, sizeof(l.name), "EXPORT=%s", s->export->name);
	/* a kernel SMC-R client has no name: its address stands for it */
	if (smcr)
		addr_str(&s->addr[rule ? 1 : 0], who, sizeof(who));
	else
		snprintf(who, sizeof(who), "%s",
			 s->peer != NULL ? s->peer->name : "-");
	snprintf(l.peer, sizeof(l.peer), "PEER=%s", who);
	snprintf(l.dialect, sizeof(l.dialect), "DIALECT=%s",
		 smcr ? "smc-r" : "native");
	addr_str(&s->addr[rule ? 0 : 1], a, sizeof(a));
	if (origin) {
		addr_str(&s->origin[0], o, sizeof(o));
		if (rule) { /* the client first, then the balancer */
			memcpy(via, a, sizeof(via));
			memcpy(a, o, sizeof(a));
			memcpy(o, via, sizeof(o));
		}
		snprintf(l.origin, sizeof(l.origin), "%s=%s",
			 rule ? "VIA" : "CLIENT", o);
	}
	snprintf(l.addr, sizeof(l.addr), "%s=%s", rule ? "CLIENT" : "TARGET",
		 a);
	if (dest) {
		addr_str(&s->origin[1], d, sizeof(d));
		snprintf(l.destination, sizeof(l.destination), "DESTINATION=%s",
			 d);
	}
	snprintf(l.transport, sizeof(l.transport), "TRANSPORT=%s",
		 s->mode == SESSION_MODE_RDMA ? "rdma" :
		 smcr			      ? "tcp" :
						"fallback");
	if (smcr)
		code = s->smc_decline;
	else if (s->mode != SESSION_MODE_RDMA && s->peer != NULL)
		peer_mode(s->peer->name, &code);
	snprintf(l.decline, sizeof(l.decline), "DECLINE=%s",
		 code != 0 ? clc_decline_name(code) : "-");
	snprintf(l.connected, sizeof(l.connected), "CONNECTED=%s",
		 s->state == SESSION_RELAY || s->state == SESSION_RESUMING ?
			 "yes" :
			 "no");
	snprintf(l.duration, sizeof(l.duration), "DURATION_MS=%" PRIu64, ms);
	snprintf(l.in, sizeof(l.in), "BYTES_IN=%" PRIu64,
		 (uint64_t)s->bytes[0]);
	snprintf(l.out, sizeof(l.out), "BYTES_OUT=%" PRIu64,
		 (uint64_t)s->bytes[1]);
	snprintf(l.reason, sizeof(l.reason), "CLOSE_REASON=%s",
		 session_reason_name(reason));

	fields[n++] = l.id;
	fields[n++] = l.name;
	fields[n++] = l.peer;
	fields[n++] = l.dialect;
	fields[n++] = l.addr;
	if (origin)
		fields[n++] = l.origin;
	if (dest)
		fields[n++] = l.destination;
	fields[n++] = l.transport;
	fields[n++] = l.decline;
	fields[n++] = l.connected;
	fields[n++] = l.duration;
	fields[n++] = l.in;
	fields[n++] = l.out;
	fields[n++] = l.reason;
	log_info_fields(
		fields, n,
		"conn 0x%" PRIx64
		" %s=%s peer=%s%s %s=%s%s%s%s%s transport=%s%s%s "
		"connected=%s duration=%" PRIu64 ".%03us bytes_in=%" PRIu64
		" bytes_out=%" PRIu64 " close=%s",
		s->id, rule ? "rule" : "export",
		rule ? s->rule->name : s->export->name, who,
		smcr ? " dialect=smc-r" : "", rule ? "client" : "target", a,
		!origin ? "" :
		rule	? " via=" :
			  " client=",
		origin ? o : "", dest ? " destination=" : "", dest ? d : "",
		l.transport + strlen("TRANSPORT="),
		code != 0 ? " decline=" : "",
		code != 0 ? clc_decline_name(code) : "",
		s->state == SESSION_RELAY || s->state == SESSION_RESUMING ?
			"yes" :
			"no",
		ms / 1000, (unsigned int)(ms % 1000), (uint64_t)s->bytes[0],
		(uint64_t)s->bytes[1], session_reason_name(reason));
}
