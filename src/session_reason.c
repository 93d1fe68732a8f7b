// SPDX-License-Identifier: BSD-2-Clause
/*
 * What a close reason is called, in logs, counters and the connection
 * log, and the code that stands for it on the wire (fallback RESULT, LLC
 * CONN_REJECT).  Its own file, below the session and the files that
 * record closes (connlog.c, tally.c), so that those need no session.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "smcproxyd.h"

static const struct {
	const char *name;
	const char *desc;
} session_reasons[SESSION_NREASONS] = {
#define X(id, name, desc) [SESSION_##id] = {name, desc},
	SESSION_REASONS(X)
#undef X
};

const char *
session_reason_name(enum session_reason r)
{
	return r < SESSION_NREASONS ? session_reasons[r].name : "unknown";
}

const char *
session_reason_desc(enum session_reason r)
{
	return r < SESSION_NREASONS ? session_reasons[r].desc : "unknown";
}

/*
 * Whether r is the target's failure at the export's end (refused, timed
 * out, unreachable): news of one connection, which the connection log
 * has, not of the peer.
 */
bool
session_reason_target(enum session_reason r)
{
	return r == SESSION_TARGET_REFUSED || r == SESSION_TARGET_TIMEOUT ||
	       r == SESSION_TARGET_UNREACHABLE;
}

/* Result codes on the wire; stable, independent of the enum's order. */
static const struct {
	uint32_t code;
	enum session_reason reason;
} session_codes[] = {
	{1, SESSION_TARGET_REFUSED},	 {2, SESSION_TARGET_TIMEOUT},
	{3, SESSION_TARGET_UNREACHABLE}, {4, SESSION_EXPORT_DENIED},
	{5, SESSION_UNKNOWN_EXPORT},	 {6, SESSION_UNKNOWN_PEER},
	{7, SESSION_AUTH_FAILED},	 {8, SESSION_PROTOCOL_ERROR},
	{9, SESSION_SHUTDOWN},		 {10, SESSION_RESOURCE},
	{11, SESSION_RESUME_FAILED},
};

/* The wire code (fallback RESULT, LLC CONN_REJECT) for close reason r. */
uint32_t
session_reason_code(enum session_reason r)
{
	size_t i;

	for (i = 0; i < sizeof(session_codes) / sizeof(session_codes[0]); i++)
		if (session_codes[i].reason == r)
			return session_codes[i].code;
	return 8;
}

/* The close reason a peer's refusal code stands for. */
enum session_reason
session_reason_of_code(uint32_t code)
{
	size_t i;

	for (i = 0; i < sizeof(session_codes) / sizeof(session_codes[0]); i++)
		if (session_codes[i].code == code)
			return session_codes[i].reason;
	return SESSION_PROTOCOL_ERROR;
}

/* The close reason of a failed connect (errno err) to a target or peer. */
enum session_reason
session_reason_of_connect(int err, bool target)
{
	switch (err) {
	case ECONNREFUSED:
		return target ? SESSION_TARGET_REFUSED :
				SESSION_PEER_UNREACHABLE;
	case ETIMEDOUT:
		return target ? SESSION_TARGET_TIMEOUT : SESSION_PEER_TIMEOUT;
	case EMFILE:
	case ENFILE:
	case ENOBUFS:
	case ENOMEM:
		return SESSION_RESOURCE;
	default:
		return target ? SESSION_TARGET_UNREACHABLE :
				SESSION_PEER_UNREACHABLE;
	}
}
