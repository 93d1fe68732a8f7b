// SPDX-License-Identifier: BSD-2-Clause
/*
 * The export side of a connection, whichever transport carried its open
 * (an LLC CONN_OPEN in session_rdma.c, a fallback hello in fallback.c):
 * whether the peer may use the export it named, whether the worker has
 * room for it (max_conns) and the peer a place of its own
 * (peers[].max_conns, all workers together), and the connection to the
 * export's target as the session's upstream socket fd[1], begun with a
 * PROXY protocol v2 header when the export asks for one.  One copy, so
 * that both transports log, count and refuse alike.
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include <event2/event.h>

#include "smcproxyd.h"

/*
 * The export name in conf, if peer may use it.  Else NULL and *why, the
 * reason to refuse the open with, logged as who's ("conn 0x1f", "lgr 3")
 * and counted.
 */
const struct conf_export *
export_find(struct worker *w, const struct conf *conf, const char *who,
	    const char *peer, const char *name, enum session_reason *why)
{
	const struct conf_export *exp = conf_export_find(conf, name);

	if (exp == NULL) {
		log_warnx("%s: peer %s asked for unknown export %s", who, peer,
			  name);
		*why = SESSION_UNKNOWN_EXPORT;
		return NULL;
	}
	if (!conf_export_allows(exp, peer)) {
		log_warnx("%s: peer %s may not use export %s: refused", who,
			  peer, name);
		STATS_INC(worker_stats(w), export_denied);
		*why = SESSION_EXPORT_DENIED;
		return NULL;
	}
	return exp;
}

/*
 * Whether w may take one more connection opened by a peer (max_conns,
 * which rule clients share): 0, else -ESHUTDOWN or -ENOSPC (counted) with
 * *why, the reason to refuse the open with.  Ask before the new
 * connection counts towards max_conns (it has no session yet, or one that
 * is still a stranger's).
 */
int
export_room(struct worker *w, enum session_reason *why)
{
	if (worker_draining(w)) {
		*why = SESSION_SHUTDOWN;
		return -ESHUTDOWN;
	}
	if (worker_has_room(w))
		return 0;
	STATS_INC(worker_stats(w), export_refused_limit);
	*why = SESSION_RESOURCE;
	return -ENOSPC;
}

/*
 * Start connecting s (export side, s->export and s->peer set) to its
 * target, within the export's connect_timeout, once its peer has a place
 * for it (peers[].max_conns: held until s ends); EV_WRITE on
 * fd[1] then goes to export_connected.  0 when under way, else -errno
 * with *why, the reason to refuse the open with (logged).
 */
int
export_connect(struct session *s, enum session_reason *why)
{
	char buf[ADDR_STRLEN];
	int rc;

	/* a kernel SMC-R client (s->peer NULL) has no peers[].max_conns */
	if (s->peer != NULL && !session_peer_hold(s)) {
		log_debug("conn 0x%llx: peer %s holds %d connections on our "
			  "exports (max_conns): refused",
			  (unsigned long long)s->id, s->peer->name,
			  s->peer->max_conns);
		STATS_INC(worker_stats(s->w), peer_conns_limit);
		*why = SESSION_RESOURCE;
		return -ENOSPC;
	}
	tally_open(s);
	s->state = SESSION_CONNECT_TARGET;
	rc = session_connect(s, &s->export->target, NULL, false);
	if (rc == 0) {
		session_timer(s, s->export->connect_timeout);
		return 0;
	}
	errno = -rc;
	addr_str(&s->export->target, buf, sizeof(buf));
	log_warn_rl("connect to target", buf,
		    "conn 0x%llx: export %s: connect to %s",
		    (unsigned long long)s->id, s->export->name, buf);
	*why = session_reason_of_connect(-rc, true);
	return rc;
}

/*
 * Begin s's target connection with its PROXY header: the client the peer
 * named, else LOCAL (a peer that did not say).  The socket is fresh and
 * empty, so the header goes whole.  0 or -errno.
 */
static int
export_proxy_send(struct session *s)
{
	uint8_t hdr[PROXY_V2_MAX];
	bool known = s->origin[0].len != 0;
	size_t len = proxy_header_write(hdr, known ? &s->origin[0] : NULL,
					&s->origin[1]);
	ssize_t n = send(s->fd[1], hdr, len, MSG_NOSIGNAL);

	if (n < 0)
		return -errno;
	if ((size_t)n != len)
		return -EPIPE;
	if (!known)
		log_debug("conn 0x%llx: export %s: the peer did not name the "
			  "client: PROXY header with LOCAL",
			  (unsigned long long)s->id, s->export->name);
	return 0;
}

/*
 * The target connect of s finished: 0 when connected (and its PROXY
 * header sent, if the export wants one), else -errno with *why, the
 * reason to refuse the open with (logged).
 */
int
export_connected(struct session *s, enum session_reason *why)
{
	char buf[ADDR_STRLEN];
	int err;

	session_want(s, 1, EV_WRITE, false);
	err = session_connect_error(s);
	if (err == 0 && s->export->proxy_protocol)
		err = -export_proxy_send(s);
	if (err == 0)
		return 0;
	errno = err;
	addr_str(&s->export->target, buf, sizeof(buf));
	log_warn_rl("connect to target", buf,
		    "conn 0x%llx: export %s: target %s",
		    (unsigned long long)s->id, s->export->name, buf);
	*why = session_reason_of_connect(err, true);
	return -err;
}

/* The target connect of s took too long: the reason to refuse with. */
enum session_reason
export_timed_out(struct session *s)
{
	char buf[ADDR_STRLEN];

	addr_str(&s->export->target, buf, sizeof(buf));
	log_warnx_rl("connect to target", buf,
		     "conn 0x%llx: export %s: target connect timed out",
		     (unsigned long long)s->id, s->export->name);
	return SESSION_TARGET_TIMEOUT;
}
