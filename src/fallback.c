// SPDX-License-Identifier: BSD-2-Clause
/*
 * The TCP fallback transport: one TCP connection to the peer's port per
 * client connection, opened by the hello of fallback_wire.h.  It is what
 * carries traffic whenever no link group can be had, so it is a complete
 * path of its own: authenticated (when the peer has a key), export
 * allow-lists enforced on the export side (export.c), refusals reported
 * back with their reason, and once open a relay that moves the bytes with
 * splice() through a pipe per direction, so a stream's payload never
 * passes through user space; a full pipe pauses reading (backpressure),
 * never drops.  Small messages (a burst under FB_COPY_MAX) are copied
 * through a buffer on the stack instead, with no pipe to fill and drain
 * (fb_pump_copy).  A FIN is passed on after every earlier byte; a reset
 * as a reset.
 *
 * Handshake messages are read exactly (header, then the announced length)
 * so not one byte of the relayed stream is consumed here.
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <endian.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "smcproxyd.h"
#include "fallback_wire.h"

#define FB_PEER_CONNECT_TIMEOUT 5 /* s: TCP connect to the peer port */
#define FB_RESULT_TIMEOUT 330	  /* s: > the largest connect_timeout */
#define FB_RESUMED_TIMEOUT 10	  /* s: a resume is answered at once */
#define FB_FD_WAIT_MS 100	  /* out of descriptors: retry the connect */
#define FB_FD_WAITS 50		  /* ... for 5 s at most */
#define FB_COPY_MAX 4096	  /* reads below this are relayed by copy */

/* A handshake's messages and state: only while one runs. */
struct fallback_hs {
	unsigned char in[FB_MSG_MAX];
	size_t in_len;
	unsigned char out[FB_MSG_MAX];
	size_t out_len, out_off;
	unsigned char hello[FB_MSG_MAX];
	size_t hello_len;
	unsigned char nonce[AUTH_NONCE_LEN];
	unsigned char challenge[FB_MSG_MAX];
	size_t challenge_len;
	/* the client side (fb_client_start) */
	bool resume;		 /* the HELLO asks to resume ri */
	struct fb_hello_info ri; /* what it names */
	bool connected;		 /* fd[1] is, and the HELLO went */
	bool origin;		 /* the HELLO names the client */
	bool accepted;		 /* RESULT 0, after the proof with a key */
	struct event *timer;	 /* connect and answer deadlines */
	/* a resume's client outcome, or the server's take (resume.c) */
	const struct fallback_resume_ops *rops;
};

static void
fb_hdr_fill(struct fb_hdr *h, enum fb_type type, size_t len)
{
	memcpy(h->eyecatcher, FB_EYECATCHER, 4);
	h->version = FB_VERSION;
	h->type = (uint8_t)type;
	h->length = htons((uint16_t)len);
}

/*
 * Check a message header (the first 8 bytes of buf): eyecatcher,
 * version, known type, a length that fits that type.  0 or -EPROTO.
 */
int
fb_hdr_check(const void *buf, size_t len, uint8_t *type, uint16_t *length)
{
	const struct fb_hdr *h = buf;
	size_t min, max;
	uint16_t l;

	if (len < sizeof(*h) || memcmp(h->eyecatcher, FB_EYECATCHER, 4) ||
	    h->version != FB_VERSION)
		return -EPROTO;
	l = ntohs(h->length);
	switch (h->type) {
	case FB_HELLO:
		min = sizeof(struct fb_hello) + 2;
		max = FB_HELLO_MAX;
		break;
	case FB_CHALLENGE:
		min = max = sizeof(struct fb_challenge);
		break;
	case FB_PROOF:
		min = max = sizeof(struct fb_proof);
		break;
	case FB_RESULT:
		min = max = sizeof(struct fb_result);
		break;
	case FB_RESUMED:
		min = max = sizeof(struct fb_resumed);
		break;
	default:
		return -EPROTO;
	}
	if (l < min || l > max)
		return -EPROTO;
	*type = h->type;
	*length = l;
	return 0;
}

/* Build a HELLO into buf (FB_HELLO_MAX bytes); returns its length. */
size_t
fb_hello_encode(void *buf, const uint8_t nonce[32], uint8_t flags,
		const char *name, const char *export)
{
	struct fb_hello *h = buf;
	size_t nl = strlen(name), el = strlen(export);
	size_t len = sizeof(*h) + nl + el;

	memset(h, 0, sizeof(*h));
	fb_hdr_fill(&h->hdr, FB_HELLO, len);
	memcpy(h->nonce, nonce, 32);
	h->flags = flags;
	h->name_len = (uint8_t)nl;
	h->export_len = (uint8_t)el;
	memcpy((char *)buf + sizeof(*h), name, nl);
	memcpy((char *)buf + sizeof(*h) + nl, export, el);
	return len;
}

/*
 * A HELLO asking to resume the connection resume names (its resume_id,
 * rx_off, tx_fin, worker) rather than to open one: FB_FLAG_RESUME and the
 * resume part after the names, inside what the MACs cover.
 */
size_t
fb_hello_resume_encode(void *buf, const uint8_t nonce[32], uint8_t flags,
		       const char *name, const char *export,
		       const struct fb_hello_info *resume)
{
	size_t len = fb_hello_encode(buf, nonce, flags | FB_FLAG_RESUME, name,
				     export);
	struct fb_resume r;

	memset(&r, 0, sizeof(r));
	memcpy(r.resume_id, resume->resume_id, sizeof(r.resume_id));
	r.rx_off = htobe64(resume->rx_off);
	r.tx_fin = htobe64(resume->tx_fin);
	r.worker = resume->worker;
	memcpy((char *)buf + len, &r, sizeof(r));
	len += sizeof(r);
	fb_hdr_fill(buf, FB_HELLO, len);
	return len;
}

/*
 * Add the origin part to the HELLO of len bytes in buf (FB_HELLO_MAX
 * bytes): FB_FLAG_ORIGIN and o after the names and any resume part,
 * inside what the MACs cover.  Returns the new length.
 */
size_t
fb_hello_origin_add(void *buf, size_t len, const struct fb_origin *origin)
{
	struct fb_hello *h = buf;

	h->flags |= FB_FLAG_ORIGIN;
	memcpy((char *)buf + len, origin, sizeof(*origin));
	len += sizeof(*origin);
	fb_hdr_fill(buf, FB_HELLO, len);
	return len;
}

/*
 * Fill o with the connection from src to dst.  0, or -EAFNOSUPPORT when
 * they are not both IPv4 or both IPv6.
 */
int
fb_origin_set(struct fb_origin *o, const struct addr *src,
	      const struct addr *dst)
{
	const struct sockaddr_in *s4 = (const void *)&src->ss;
	const struct sockaddr_in *d4 = (const void *)&dst->ss;
	const struct sockaddr_in6 *s6 = (const void *)&src->ss;
	const struct sockaddr_in6 *d6 = (const void *)&dst->ss;

	memset(o, 0, sizeof(*o));
	if (src->ss.ss_family != dst->ss.ss_family)
		return -EAFNOSUPPORT;
	switch (src->ss.ss_family) {
	case AF_INET:
		o->family = FB_ORIGIN_INET;
		o->src_port = s4->sin_port;
		o->dst_port = d4->sin_port;
		memcpy(o->src, &s4->sin_addr, 4);
		memcpy(o->dst, &d4->sin_addr, 4);
		return 0;
	case AF_INET6:
		o->family = FB_ORIGIN_INET6;
		o->src_port = s6->sin6_port;
		o->dst_port = d6->sin6_port;
		memcpy(o->src, &s6->sin6_addr, 16);
		memcpy(o->dst, &d6->sin6_addr, 16);
		return 0;
	default:
		return -EAFNOSUPPORT;
	}
}

/* The two addresses of o, which fb_hello_decode took. */
void
fb_origin_get(const struct fb_origin *o, struct addr *src, struct addr *dst)
{
	struct addr *a[2] = {src, dst};
	const uint8_t *ip[2] = {o->src, o->dst};
	uint16_t port[2] = {o->src_port, o->dst_port};

	for (int i = 0; i < 2; i++) {
		memset(a[i], 0, sizeof(*a[i]));
		if (o->family == FB_ORIGIN_INET) {
			struct sockaddr_in *sin = (void *)&a[i]->ss;

			sin->sin_family = AF_INET;
			sin->sin_port = port[i];
			memcpy(&sin->sin_addr, ip[i], 4);
			a[i]->len = sizeof(*sin);
		} else {
			struct sockaddr_in6 *sin6 = (void *)&a[i]->ss;

			sin6->sin6_family = AF_INET6;
			sin6->sin6_port = port[i];
			memcpy(&sin6->sin6_addr, ip[i], 16);
			a[i]->len = sizeof(*sin6);
		}
	}
}

size_t
fb_resumed_encode(void *buf, uint64_t rx_off, uint64_t tx_fin)
{
	struct fb_resumed *r = buf;

	memset(r, 0, sizeof(*r));
	fb_hdr_fill(&r->hdr, FB_RESUMED, sizeof(*r));
	r->rx_off = htobe64(rx_off);
	r->tx_fin = htobe64(tx_fin);
	return sizeof(*r);
}

int
fb_resumed_decode(const void *buf, size_t len, uint64_t *rx_off,
		  uint64_t *tx_fin)
{
	const struct fb_resumed *r = buf;
	uint16_t length;
	uint8_t type;

	if (fb_hdr_check(buf, len, &type, &length) || type != FB_RESUMED ||
	    length != len)
		return -EPROTO;
	*rx_off = be64toh(r->rx_off);
	*tx_fin = be64toh(r->tx_fin);
	return 0;
}

/* Decode and validate a whole HELLO.  0 or -EPROTO. */
int
fb_hello_decode(const void *buf, size_t len, struct fb_hello_info *out)
{
	const struct fb_hello *h = buf;
	const char *names = (const char *)buf + sizeof(*h);
	size_t resume_len, origin_len;
	uint16_t length;
	uint8_t type;

	if (fb_hdr_check(buf, len, &type, &length) || type != FB_HELLO ||
	    length != len)
		return -EPROTO;
	resume_len = h->flags & FB_FLAG_RESUME ? sizeof(struct fb_resume) : 0;
	origin_len = h->flags & FB_FLAG_ORIGIN ? sizeof(struct fb_origin) : 0;
	if (sizeof(*h) + h->name_len + h->export_len + resume_len +
			    origin_len !=
		    len ||
	    h->reserved != 0 ||
	    (h->flags & ~(FB_FLAG_AUTH | FB_FLAG_RESUME | FB_FLAG_ORIGIN)))
		return -EPROTO;
	if (!conf_name_valid_len(names, h->name_len) ||
	    !conf_name_valid_len(names + h->name_len, h->export_len))
		return -EPROTO;
	memset(out, 0, sizeof(*out));
	if (h->flags & FB_FLAG_RESUME) {
		struct fb_resume r;
		static const uint8_t zero[7], none[16];

		memcpy(&r, names + h->name_len + h->export_len, sizeof(r));
		if (memcmp(r.reserved, zero, sizeof(zero)) != 0 ||
		    memcmp(r.resume_id, none, sizeof(none)) == 0)
			return -EPROTO;
		memcpy(out->resume_id, r.resume_id, sizeof(r.resume_id));
		out->rx_off = be64toh(r.rx_off);
		out->tx_fin = be64toh(r.tx_fin);
		out->worker = r.worker;
	}
	if (h->flags & FB_FLAG_ORIGIN) {
		memcpy(&out->origin,
		       names + h->name_len + h->export_len + resume_len,
		       sizeof(out->origin));
		if (!fb_origin_valid(&out->origin))
			return -EPROTO;
	}
	memcpy(out->nonce, h->nonce, 32);
	out->flags = h->flags;
	memcpy(out->name, names, h->name_len);
	out->name[h->name_len] = '\0';
	memcpy(out->export, names + h->name_len, h->export_len);
	out->export[h->export_len] = '\0';
	return 0;
}

size_t
fb_result_encode(void *buf, uint32_t code)
{
	struct fb_result *r = buf;

	memset(r, 0, sizeof(*r));
	fb_hdr_fill(&r->hdr, FB_RESULT, sizeof(*r));
	r->code = htonl(code);
	return sizeof(*r);
}

int
fb_result_decode(const void *buf, size_t len, uint32_t *code)
{
	const struct fb_result *r = buf;
	uint16_t length;
	uint8_t type;

	if (fb_hdr_check(buf, len, &type, &length) || type != FB_RESULT ||
	    length != len || r->reserved != 0)
		return -EPROTO;
	*code = ntohl(r->code);
	return 0;
}

int
fb_challenge_decode(const void *buf, size_t len, const uint8_t **nonce,
		    const uint8_t **mac)
{
	const struct fb_challenge *c = buf;
	uint16_t length;
	uint8_t type;

	if (fb_hdr_check(buf, len, &type, &length) || type != FB_CHALLENGE ||
	    length != len)
		return -EPROTO;
	*nonce = c->nonce;
	*mac = c->mac;
	return 0;
}

int
fb_proof_decode(const void *buf, size_t len, const uint8_t **mac)
{
	const struct fb_proof *p = buf;
	uint16_t length;
	uint8_t type;

	if (fb_hdr_check(buf, len, &type, &length) || type != FB_PROOF ||
	    length != len)
		return -EPROTO;
	*mac = p->mac;
	return 0;
}

/*
 * A stranger on the peer port did not authenticate in time, or cut its
 * handshake short: a failure of its host for the rate limit, like a
 * wrong key, so that idling and reconnecting buys it nothing.
 */
static void
fb_preauth_failed(struct session *s, const char *why)
{
	char buf[ADDR_STRLEN];

	STATS_INC(worker_stats(s->w), preauth_timeouts);
	auth_failed(worker_auth(s->w), &s->addr[0], now_ms());
	log_info("conn 0x%llx: peer connection from %s: %s",
		 (unsigned long long)s->id,
		 addr_str(&s->addr[0], buf, sizeof(buf)), why);
}

/*
 * A stranger on the peer port sent what is no step of the handshake
 * (no message, a malformed hello, a message out of order): a failure of
 * its host for the rate limit, as a wrong key is, lest garbage be free
 * to repeat.
 */
static void
fb_preauth_malformed(struct session *s, const char *why)
{
	char buf[ADDR_STRLEN];

	if (!s->preauth)
		return;
	STATS_INC(worker_stats(s->w), preauth_malformed);
	auth_failed(worker_auth(s->w), &s->addr[0], now_ms());
	log_info("conn 0x%llx: peer connection from %s: %s",
		 (unsigned long long)s->id,
		 addr_str(&s->addr[0], buf, sizeof(buf)), why);
}

/* The first header came: the rest of the handshake has what is left. */
static void
fb_handshake_deadline(struct session *s)
{
	int64_t left = (int64_t)s->conf->handshake_timeout * 1000 -
		       (int64_t)(now_ms() - s->started_ms);

	session_timer_ms(s, left > 1 ? (int)left : 1);
}

/*
 * Read one handshake message from fd into buf (FB_MSG_MAX bytes), of
 * which *len bytes are there already, and never a byte more: the relayed
 * stream follows it.  1 when whole, 0 when more is to come, -EPROTO when
 * the bytes are no message, -EPIPE when the connection closed or broke.
 */
int
fallback_msg_read(int fd, unsigned char *buf, size_t *len)
{
	size_t need = sizeof(struct fb_hdr);
	uint16_t length;
	uint8_t type;
	ssize_t n;

	for (;;) {
		if (*len >= sizeof(struct fb_hdr)) {
			if (fb_hdr_check(buf, *len, &type, &length))
				return -EPROTO;
			need = length;
			if (*len == need)
				return 1;
		}
		n = recv(fd, buf + *len, need - *len, 0);
		if (n > 0) {
			*len += (size_t)n;
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		return n == -1 && errno == EAGAIN ? 0 : -EPIPE;
	}
}

/*
 * Read the next handshake message from fd[i] into hs->in.  1 when
 * whole, 0 when more is needed, or a negative value after closing the
 * session.
 */
static int
fb_read(struct session *s, int i)
{
	struct fallback_hs *hs = s->hs;
	uint16_t length;
	uint8_t type;
	size_t had;
	int rc;

	/* the previous message was handled: start the next */
	if (hs->in_len >= sizeof(struct fb_hdr) &&
	    fb_hdr_check(hs->in, hs->in_len, &type, &length) == 0 &&
	    hs->in_len == length)
		hs->in_len = 0;
	had = hs->in_len;
	rc = fallback_msg_read(s->fd[i], hs->in, &hs->in_len);
	if (rc == -EPROTO) {
		fb_preauth_malformed(s, "no handshake message");
		session_close(s, SESSION_PROTOCOL_ERROR);
		return -1;
	}
	if (rc < 0) {
		if (s->preauth && (hs->in_len > 0 || hs->hello_len > 0))
			fb_preauth_failed(s, "handshake cut short");
		session_close(s, s->role == SESSION_ROLE_RULE ?
					 SESSION_PEER_RST :
					 SESSION_PROTOCOL_ERROR);
		return -1;
	}
	/* the first header came: the rest of the handshake has what is left */
	if (had < sizeof(struct fb_hdr) &&
	    hs->in_len >= sizeof(struct fb_hdr) && s->preauth &&
	    hs->hello_len == 0)
		fb_handshake_deadline(s);
	return rc;
}

/* Write the queued handshake message to fd[i]; false if s closed. */
static bool
fb_flush(struct session *s, int i)
{
	struct fallback_hs *hs = s->hs;
	ssize_t n;

	while (hs->out_off < hs->out_len) {
		n = send(s->fd[i], hs->out + hs->out_off,
			 hs->out_len - hs->out_off, MSG_NOSIGNAL);
		if (n > 0) {
			hs->out_off += (size_t)n;
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN) {
			session_want(s, i, EV_WRITE, true);
			return true;
		}
		session_close(s, s->role == SESSION_ROLE_RULE ?
					 SESSION_PEER_RST :
					 SESSION_PROTOCOL_ERROR);
		return false;
	}
	session_want(s, i, EV_WRITE, false);
	return true;
}

static bool
fb_send(struct session *s, int i, const void *msg, size_t len)
{
	struct fallback_hs *hs = s->hs;

	memcpy(hs->out, msg, len);
	hs->out_len = len;
	hs->out_off = 0;
	return fb_flush(s, i);
}

/*
 * s's handshake state, made on first use (a relayed connection holds
 * none).  NULL when out of memory.
 */
static struct fallback_hs *
fallback_hs_get(struct session *s)
{
	if (s->hs == NULL)
		s->hs = calloc(1, sizeof(*s->hs));
	return s->hs;
}

/* The handshake is over (or s goes): what it held goes. */
void
fallback_hs_free(struct session *s)
{
	if (s->hs == NULL)
		return;
	if (s->hs->timer != NULL)
		event_free(s->hs->timer);
	free(s->hs);
	s->hs = NULL;
}

/* ---- the relay ---- */

static void fb_relay(struct session *s);
static const struct session_ops fallback_ops;

/*
 * No descriptor for a pipe (every one taken: accepting pauses,
 * worker_fd_exhausted): the bytes go by copy, as small messages do
 * (fb_pump_copy), peeked, sent, and only what the receiver took is
 * consumed, so nothing waits for a descriptor that may never come back
 * (170-emfile: 60 of 80 clients timed out, waiting for their pipes while
 * the held connections kept every descriptor).  An EOF or a reset is seen
 * as before, so a closing connection frees its descriptors.
 */
static int
fb_pump_nopipe(struct session *s, int i, int moved)
{
	char buf[FB_COPY_MAX];
	ssize_t n, sent;
	int dst = 1 - i;

	worker_fd_exhausted(s->w);
	if (!s->wr_ready[dst])
		return moved;
	n = recv(s->fd[i], buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
	if (n == 0) {
		s->pump[i].eof = true;
		return 1;
	}
	if (n == -1 && errno == EAGAIN) {
		s->rd_ready[i] = false;
		return moved;
	}
	if (n == -1 && errno == EINTR)
		return 1;
	if (n == -1) {
		session_close(s, session_rst_reason(s, i));
		return -1;
	}
	do
		sent = send(s->fd[dst], buf, (size_t)n,
			    MSG_DONTWAIT | MSG_NOSIGNAL);
	while (sent == -1 && errno == EINTR);
	if (sent == -1 && errno == EAGAIN) {
		s->wr_ready[dst] = false;
		return moved;
	}
	if (sent == -1) {
		/* the receiver is gone: pass the reset back */
		session_close(s, session_rst_reason(s, dst));
		return -1;
	}
	/* what was sent, taken out of the socket: peeked, so it is there */
	if (recv(s->fd[i], buf, (size_t)sent, MSG_DONTWAIT) != sent) {
		session_close(s, SESSION_RESOURCE);
		return -1;
	}
	session_account(s, i, (size_t)sent);
	return 1;
}

/*
 * fd[i] was found empty: what came since decides how the next bytes are
 * moved.  A burst under FB_COPY_MAX (a request, a reply) goes by copy; a
 * stream, which a partial splice does not interrupt, keeps splicing.
 */
static void
fb_pump_drained(struct session *s, int i)
{
	struct session_pump *p = &s->pump[i];

	s->rd_ready[i] = false;
	p->bulk = p->burst >= FB_COPY_MAX;
	p->burst = 0;
	/* an idle connection holds no pipe */
	worker_pipe_put(s->w, p->pipe, p->cap, true);
}

/*
 * Small messages by copy.  With the pipe empty and the last burst small,
 * recv() into a buffer on the stack and send() it on at once, with no
 * pipe to fill and drain.  What the receiver does not take now goes into
 * the pipe (empty, and larger than the buffer), to leave as any other
 * bytes.  Returns as fb_pump().
 */
static int
fb_pump_copy(struct session *s, int i, int moved)
{
	struct session_pump *p = &s->pump[i];
	int dst = 1 - i;
	char buf[FB_COPY_MAX];
	ssize_t n, sent;

	n = recv(s->fd[i], buf, sizeof(buf), MSG_DONTWAIT);
	if (n == 0) {
		p->eof = true;
		return 1;
	}
	if (n == -1) {
		if (errno == EAGAIN) {
			fb_pump_drained(s, i);
			return moved;
		}
		if (errno == EINTR)
			return 1;
		session_close(s, session_rst_reason(s, i));
		return -1;
	}
	session_account(s, i, (size_t)n);
	p->burst += (size_t)n;
	if ((size_t)n == sizeof(buf))
		p->bulk = true;
	do
		sent = send(s->fd[dst], buf, (size_t)n,
			    MSG_DONTWAIT | MSG_NOSIGNAL);
	while (sent == -1 && errno == EINTR);
	if (sent == -1 && errno == EAGAIN) {
		s->wr_ready[dst] = false;
		sent = 0;
	} else if (sent == -1) {
		/* the receiver is gone: pass the reset back */
		session_close(s, session_rst_reason(s, dst));
		return -1;
	}
	if (sent < n) {
		ssize_t left = n - sent;

		if (write(p->pipe[1], buf + sent, (size_t)left) != left) {
			log_warn("conn 0x%llx: pipe write",
				 (unsigned long long)s->id);
			session_close(s, SESSION_RESOURCE);
			return -1;
		}
		p->pending = (size_t)left;
	} else {
		worker_pipe_put(s->w, p->pipe, p->cap, true);
	}
	return 1;
}

/*
 * Move what can be moved for pump i: drain its pipe into fd[1 - i], pass
 * the FIN on once it is empty, then fill it from fd[i].  Returns 1 if
 * anything moved, 0 if not, -1 if the session was closed.
 */
static int
fb_pump(struct session *s, int i)
{
	struct session_pump *p = &s->pump[i];
	int dst = 1 - i, moved = 0;
	ssize_t n;

	while (p->pending > 0 && s->wr_ready[dst]) {
		n = splice(p->pipe[0], NULL, s->fd[dst], NULL, p->pending,
			   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n > 0) {
			p->pending -= (size_t)n;
			moved = 1;
		} else if (n == -1 && errno == EAGAIN) {
			s->wr_ready[dst] = false;
		} else if (n == -1 && errno == EINTR) {
			continue;
		} else {
			/* the receiver is gone: pass the reset back */
			session_close(s, session_rst_reason(s, dst));
			return -1;
		}
	}
	if (p->pending == 0) {
		worker_pipe_put(s->w, p->pipe, p->cap, true);
		if (p->eof && !p->done) {
			p->done = true;
			if (!s->pump[dst].eof)
				s->fin_reason = session_fin_reason(i);
			shutdown(s->fd[dst], SHUT_WR);
			if (s->pump[dst].done) {
				session_close(s, s->fin_reason);
				return -1;
			}
		}
	}
	if (p->eof || !s->rd_ready[i] ||
	    (p->pipe[0] != -1 && p->pending >= p->cap))
		return moved;
	if (p->pipe[0] == -1) {
		n = worker_pipe_get(s->w, p->pipe);
		if (n == -EMFILE || n == -ENFILE)
			return fb_pump_nopipe(s, i, moved);
		if (n < 0) {
			errno = (int)-n;
			log_warn("conn 0x%llx: pipe",
				 (unsigned long long)s->id);
			session_close(s, SESSION_RESOURCE);
			return -1;
		}
		p->cap = (size_t)n;
	}
	if (p->pending == 0 && !p->bulk && s->wr_ready[dst] &&
	    p->cap > FB_COPY_MAX)
		return fb_pump_copy(s, i, moved);
	n = splice(s->fd[i], NULL, p->pipe[1], NULL, p->cap - p->pending,
		   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
	if (n > 0) {
		p->pending += (size_t)n;
		p->burst += (size_t)n;
		session_account(s, i, (size_t)n);
		return 1;
	}
	if (n == 0) {
		p->eof = true;
		return 1;
	}
	if (errno == EAGAIN) {
		/*
		 * With bytes in the pipe, EAGAIN means the pipe has no free
		 * slot (partly filled pages count whole): the socket stays
		 * readable and is read again once the pipe drains.
		 */
		if (p->pending == 0) {
			fb_pump_drained(s, i); /* nothing to read */
		} else {
			STATS_INC(worker_stats(s->w), buf_full_cnt);
		}
		return moved;
	}
	if (errno == EINTR)
		return 1;
	session_close(s, session_rst_reason(s, i));
	return -1;
}

/* One round of the relay loop: both pumps (session_relay_run). */
static int
fb_relay_round(void *arg)
{
	struct session *s = arg;
	int a, b;

	a = fb_pump(s, 0);
	if (a < 0)
		return -1;
	b = fb_pump(s, 1);
	if (b < 0)
		return -1;
	return a || b;
}

static void
fb_relay(struct session *s)
{
	session_relay_run(s, 0, fb_relay_round, s);
}

/*
 * Start relaying: both sockets connected and the handshake done.  Bytes
 * the client sent meanwhile wait in the kernel and go first.  Pipes are
 * taken from the worker's pool only while bytes are in flight, so an idle
 * connection costs its two sockets and nothing more.
 */
void
fallback_relay_start(struct session *s, enum stats_id stat)
{
	/* the handshake is done: its buffers are not needed again */
	fallback_hs_free(s);
	session_ops_set(s, &fallback_ops);
	if (session_relay_begin(s, -1, stat)) {
		session_close(s, SESSION_RESOURCE);
		return;
	}
	log_debug("conn 0x%llx: relaying (%s)", (unsigned long long)s->id,
		  s->role == SESSION_ROLE_RULE ? s->rule->name :
						 s->export->name);
	fb_relay(s);
}

/*
 * The rule side's answer to the peer's CHALLENGE (len bytes at msg) to
 * the HELLO it sent: the peer's MAC checked, *proof built.  0 when good,
 * else -EPROTO (a bad challenge) or -EACCES with *why.
 */
int
fallback_answer(const struct conf_peer *p, const void *hello, size_t hello_len,
		const void *msg, size_t len, struct fb_proof *proof,
		const char **why)
{
	unsigned char mac[AUTH_MAC_LEN];
	const uint8_t *nonce, *their;

	if (fb_challenge_decode(msg, len, &nonce, &their)) {
		*why = "bad challenge";
		return -EPROTO;
	}
	if (p->key_len == 0) {
		*why = "peer asks for a key we do not have";
		return -EACCES;
	}
	auth_mac(p->key, p->key_len, "s", hello, hello_len, nonce, 32, mac);
	if (!auth_mac_equal(mac, their)) {
		*why = "peer failed authentication (wrong key?)";
		return -EACCES;
	}
	memset(proof, 0, sizeof(*proof));
	fb_hdr_fill(&proof->hdr, FB_PROOF, sizeof(*proof));
	auth_mac(p->key, p->key_len, "c", hello, hello_len, msg, len,
		 proof->mac);
	return 0;
}

/* ---- the client side of every TCP connection to a peer ---- */

/*
 * One handshake for the rule side's fallback connection and for a
 * connection over RDMA that resumes over TCP (resume.c): the same
 * connect (session_connect: socket options, liveness, the pause when out
 * of descriptors), the same HELLO, CHALLENGE and PROOF, RESULT, and the
 * same rule: with a key, nothing from the peer is believed before its
 * CHALLENGE proved the key and a RESULT 0 followed.  Only then does a
 * fallback connection relay, or a resume take the RESUMED that follows.
 * The peer connection is fd[1]; the handshake has its own timer, so a
 * resume keeps the session's (resume_timeout).
 */

static void fb_client_timeout(evutil_socket_t fd, short what, void *arg);

static bool
fb_client_timer(struct session *s, int ms)
{
	struct fallback_hs *hs = s->hs;
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

	if (hs->timer == NULL)
		hs->timer =
			evtimer_new(worker_base(s->w), fb_client_timeout, s);
	return hs->timer != NULL && evtimer_add(hs->timer, &tv) == 0;
}

/*
 * The handshake failed with reason r (peer_said: the peer's RESULT code
 * says so; code: the error's name for show peers, NULL: r's): logged and
 * counted the same for both uses, then a fallback connection closes and
 * a resume hears of it (it may try again).
 */
static void
fb_client_fail_code(struct session *s, enum session_reason r, bool peer_said,
		    const char *code, const char *why)
{
	const struct fallback_resume_ops *rops = s->hs->rops;
	bool resume = s->hs->resume;

	/* the peer reached, its target not: the connection log says so */
	if (peer_said && session_reason_target(r))
		log_debug("conn 0x%llx: rule %s: peer %s: %s%s",
			  (unsigned long long)s->id, s->rule->name,
			  s->peer->name, resume ? "resume over TCP: " : "",
			  why);
	else if (r == SESSION_AUTH_FAILED)
		log_event_rl("reaching peer", s->peer->name, LOG_EV_AUTH_FAILED,
			     &(struct log_where){s->peer->name, s->rule->name,
						 -1, -1},
			     "conn 0x%llx: rule %s: peer %s: %s%s",
			     (unsigned long long)s->id, s->rule->name,
			     s->peer->name, resume ? "resume over TCP: " : "",
			     why);
	else
		log_warnx_rl("reaching peer", s->peer->name,
			     "conn 0x%llx: rule %s: peer %s: %s%s",
			     (unsigned long long)s->id, s->rule->name,
			     s->peer->name, resume ? "resume over TCP: " : "",
			     why);
	peer_error(s->peer->name,
		   r == SESSION_PEER_TIMEOUT || r == SESSION_PEER_UNREACHABLE,
		   code != NULL ? code : session_reason_name(r), "%s", why);
	STATS_INC(worker_stats(s->w), clnt_hshake_err_cnt);
	if (r == SESSION_AUTH_FAILED)
		STATS_INC(worker_stats(s->w), auth_failures);
	fallback_hs_free(s);
	if (resume)
		rops->failed(s, r, peer_said);
	else
		session_close(s, r);
}

static void
fb_client_fail(struct session *s, enum session_reason r, bool peer_said,
	       const char *why)
{
	fb_client_fail_code(s, r, peer_said, NULL, why);
}

/* The connect to the peer port failed with errno err. */
static void
fb_client_connect_failed(struct session *s, int err)
{
	char buf[ADDR_STRLEN], why[ADDR_STRLEN + 64];

	snprintf(why, sizeof(why), "connect to %s: %s",
		 addr_str(&s->peer->addr, buf, sizeof(buf)), strerror(err));
	fb_client_fail_code(s, session_reason_of_connect(err, false), false,
			    strerrorname_np(err), why);
}

/* Open the TCP connection to the peer: fd[1], connected later. */
static void
fb_client_connect(struct session *s)
{
	int rc;

	rc = session_connect(s, &s->peer->addr, &s->peer->source, false);
	if ((rc == -EMFILE || rc == -ENFILE) && s->fd_waits < FB_FD_WAITS) {
		/* the client waits, as queued ones do while accepting pauses */
		s->fd_waits++;
		if (!fb_client_timer(s, FB_FD_WAIT_MS))
			fb_client_fail(s, SESSION_RESOURCE, false,
				       "out of memory");
		return;
	}
	if (rc) {
		fb_client_connect_failed(s, -rc);
		return;
	}
	s->fd_waits = 0;
	if (!fb_client_timer(s, FB_PEER_CONNECT_TIMEOUT * 1000))
		fb_client_fail(s, SESSION_RESOURCE, false, "out of memory");
}

/*
 * Start the handshake on s: to open s's connection to its export
 * (resume NULL), or to resume it (resume.c).  The result comes back
 * through fb_relay_start, rops->through or, failed, session_close or
 * rops->failed.
 */
static void
fb_client_start(struct session *s, const struct fb_hello_info *resume,
		const struct fallback_resume_ops *rops)
{
	struct fallback_hs *hs = fallback_hs_get(s);

	if (hs == NULL) {
		if (resume != NULL)
			rops->failed(s, SESSION_RESOURCE, false);
		else
			session_close(s, SESSION_RESOURCE);
		return;
	}
	hs->rops = rops;
	hs->resume = resume != NULL;
	if (resume != NULL)
		hs->ri = *resume;
	else
		s->state = SESSION_CONNECT_PEER;
	s->fd_waits = 0;
	fb_client_connect(s);
}

/* Rule side: open the TCP connection to the rule's peer. */
void
fallback_connect(struct session *s)
{
	session_ops_set(s, &fallback_ops);
	lgr_want(worker_lgr(s->w), s->peer);
	/* the handshake keeps its own time */
	session_timer(s, 0);
	fb_client_start(s, NULL, NULL);
}

/*
 * Resume s over a new TCP connection to its peer (resume.c): the HELLO
 * names the connection (ri: resume id, offsets, the peer's worker).
 */
void
fallback_resume(struct session *s, const struct fb_hello_info *ri,
		const struct fallback_resume_ops *rops)
{
	fb_client_start(s, ri, rops);
}

/* A message of the client handshake whole; false if it could not go. */
static bool
fb_client_send(struct session *s, const void *msg, size_t len)
{
	/* a fresh socket, or one whose last message was answered, takes a
	 * message this small whole */
	if (send(s->fd[1], msg, len, MSG_NOSIGNAL) == (ssize_t)len)
		return true;
	fb_client_fail(s, SESSION_PEER_RST, false, "the peer connection broke");
	return false;
}

/*
 * The client connection of rule-side session s, for the peer (the
 * HELLO's origin part, LLC CONN_ORIGIN): from the client to the address
 * it connected to (the rule's listen address; the one it took when that
 * is a wildcard), or those its load balancer's PROXY header named
 * (accept_proxy).  0 or -errno.
 */
int
fallback_origin(const struct session *s, struct fb_origin *o)
{
	struct addr local;

	if (s->origin[0].len != 0)
		return fb_origin_set(o, &s->origin[0], &s->origin[1]);

	local.len = sizeof(local.ss);
	if (getsockname(s->fd[0], (struct sockaddr *)&local.ss, &local.len))
		return -errno;
	return fb_origin_set(o, &s->addr[0], &local);
}

/* fd[1] connected (or not): send the HELLO. */
static void
fb_client_connected(struct session *s)
{
	struct fallback_hs *hs = s->hs;
	const struct conf *conf = s->conf;
	uint8_t flags = s->peer->key_len ? FB_FLAG_AUTH : 0;
	struct fb_origin origin;
	int err;

	session_want(s, 1, EV_WRITE, false);
	err = session_connect_error(s);
	if (err) {
		fb_client_connect_failed(s, err);
		return;
	}
	peer_reached(s->peer->name);
	auth_nonce(hs->nonce);
	if (hs->resume)
		hs->hello_len = fb_hello_resume_encode(hs->hello, hs->nonce,
						       flags, conf->name,
						       s->export_name, &hs->ri);
	else
		hs->hello_len = fb_hello_encode(hs->hello, hs->nonce, flags,
						conf->name, s->export_name);
	hs->origin = !hs->resume && peer_takes_origin(s->peer->name) &&
		     fallback_origin(s, &origin) == 0;
	if (hs->origin)
		hs->hello_len =
			fb_hello_origin_add(hs->hello, hs->hello_len, &origin);
	hs->connected = true;
	if (!hs->resume)
		s->state = SESSION_HELLO;
	/* a resume is answered at once; an open after the target's connect */
	if (!fb_client_timer(s, hs->resume ? FB_RESUMED_TIMEOUT * 1000 :
					     FB_RESULT_TIMEOUT * 1000)) {
		fb_client_fail(s, SESSION_RESOURCE, false, "out of memory");
		return;
	}
	if (fb_client_send(s, hs->hello, hs->hello_len))
		session_want(s, 1, EV_READ, true);
}

static bool
fb_client_challenge(struct session *s)
{
	struct fallback_hs *hs = s->hs;
	struct fb_proof proof;
	const char *why;

	if (hs->challenge_len) {
		fb_client_fail(s, SESSION_AUTH_FAILED, false,
			       "a second challenge");
		return false;
	}
	if (fallback_answer(s->peer, hs->hello, hs->hello_len, hs->in,
			    hs->in_len, &proof, &why) != 0) {
		fb_client_fail(s, SESSION_AUTH_FAILED, false, why);
		return false;
	}
	memcpy(hs->challenge, hs->in, hs->in_len);
	hs->challenge_len = hs->in_len;
	return fb_client_send(s, &proof, sizeof(proof));
}

/*
 * The peer refused our HELLO as malformed before any challenge: a daemon
 * older than the origin part (fallback_wire.h) does so.  Open s again
 * with a HELLO without it, and send the peer none for a while.
 */
static void
fb_client_retry_plain(struct session *s)
{
	struct fallback_hs *hs = s->hs;

	log_info("conn 0x%llx: rule %s: peer %s refused a hello naming the "
		 "client (a daemon older than that?): opening again without, "
		 "and its PROXY headers will not name clients",
		 (unsigned long long)s->id, s->rule->name, s->peer->name);
	peer_origin_refused(s->peer->name);
	session_upstream_drop(s);
	hs->connected = hs->accepted = false;
	hs->in_len = hs->hello_len = hs->challenge_len = 0;
	s->state = SESSION_CONNECT_PEER;
	s->fd_waits = 0;
	fb_client_connect(s);
}

/*
 * RESULT: 0 after the proof (with a key) lets the peer be believed.
 * true when the handshake goes on (a resume: RESUMED follows).
 */
static bool
fb_client_result(struct session *s)
{
	struct fallback_hs *hs = s->hs;
	enum session_reason r;
	uint32_t code;

	if (fb_result_decode(hs->in, hs->in_len, &code) || hs->accepted) {
		fb_client_fail(s, SESSION_PROTOCOL_ERROR, false,
			       hs->accepted ? "a second result" : "bad result");
		return false;
	}
	if (code != 0) {
		r = session_reason_of_code(code);
		if (r == SESSION_PROTOCOL_ERROR && hs->origin &&
		    hs->challenge_len == 0) {
			fb_client_retry_plain(s);
			return false;
		}
		fb_client_fail(s, r, true, session_reason_desc(r));
		return false;
	}
	if (s->peer->key_len && hs->challenge_len == 0) {
		fb_client_fail(s, SESSION_AUTH_FAILED, false,
			       "peer accepted without authenticating");
		return false;
	}
	hs->accepted = true;
	if (!hs->resume) {
		fallback_relay_start(s, STAT_conns_fallback);
		return false;
	}
	/* a resume: RESUMED follows, with the offsets both go on from */
	return true;
}

/* RESUMED: only after an accepting RESULT, only to a resume HELLO. */
static void
fb_client_resumed(struct session *s)
{
	struct fallback_hs *hs = s->hs;
	const struct fallback_resume_ops *rops;
	uint64_t rx, fin;

	if (!hs->resume || !hs->accepted) {
		fb_client_fail(s, SESSION_AUTH_FAILED, false,
			       !hs->resume ? "RESUMED to an open" :
					     "RESUMED before the peer's "
					     "RESULT: not believed");
		return;
	}
	if (fb_resumed_decode(hs->in, hs->in_len, &rx, &fin)) {
		fb_client_fail(s, SESSION_PROTOCOL_ERROR, false, "bad RESUMED");
		return;
	}
	rops = hs->rops;
	fallback_hs_free(s);
	rops->through(s, rx, fin);
}

/*
 * An event of fd[1] while the handshake runs.  Messages are read whole
 * and never a byte beyond: the relayed stream follows the last.
 */
void
fallback_client_io(struct session *s, short what)
{
	struct fallback_hs *hs = s->hs;
	int rc;

	if (hs == NULL)
		return;
	if (!hs->connected) {
		if (what & EV_WRITE)
			fb_client_connected(s);
		return;
	}
	if (!(what & EV_READ))
		return;
	for (;;) {
		rc = fallback_msg_read(s->fd[1], hs->in, &hs->in_len);
		if (rc == 0)
			return;
		if (rc < 0) {
			fb_client_fail(
				s,
				rc == -EPROTO ? SESSION_PROTOCOL_ERROR :
						SESSION_PEER_RST,
				false,
				rc == -EPROTO ?
					"bytes that are no message" :
					"the peer closed the connection");
			return;
		}
		/* each handler says whether s, hs and fd[1] are still ours */
		switch (hs->in[5]) {
		case FB_CHALLENGE:
			if (!fb_client_challenge(s))
				return;
			break;
		case FB_RESULT:
			if (!fb_client_result(s))
				return;
			break;
		case FB_RESUMED:
			fb_client_resumed(s);
			return;
		default:
			fb_client_fail(s, SESSION_PROTOCOL_ERROR, false,
				       "unexpected message");
			return;
		}
		hs->in_len = 0;
	}
}

static void
fb_client_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;
	struct fallback_hs *hs = s->hs;

	if (s->fd[1] == -1) {
		/* waiting for a descriptor: try again */
		fb_client_connect(s);
		return;
	}
	fb_client_fail(s, SESSION_PEER_TIMEOUT, false,
		       hs->connected ? "no answer to hello" :
				       "connect timed out");
}

/* ---- a check of the path (smcproxyctl check PEER) ---- */

/*
 * The check opens what a client's connection opens, with the same
 * messages and the same proof of the key (fallback_answer), but no
 * session: nothing is relayed, and it tells the peer registry nothing,
 * so a check never changes what connections take.  It runs on the
 * control thread, stepped every few milliseconds, never blocking.
 */

/* The check ends at its stage with rc and why (printf-style). */
static bool fb_check_end(struct fallback_check *c, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static bool
fb_check_end(struct fallback_check *c, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->error, sizeof(c->error), fmt, ap);
	va_end(ap);
	c->rc = rc;
	c->done = true;
	fallback_check_end(c);
	return true;
}

/*
 * A check of the fallback path to peer, opening export (conf's names),
 * that gives up after timeout_ms.  It connects on the first step.
 */
void
fallback_check_init(struct fallback_check *c, const struct conf *conf,
		    const struct conf_peer *peer, const char *export,
		    int timeout_ms)
{
	memset(c, 0, sizeof(*c));
	c->conf = conf;
	c->peer = peer;
	snprintf(c->export, sizeof(c->export), "%s", export);
	c->fd = -1;
	c->started_us = now_us();
	c->deadline_ms = now_ms() + (uint64_t)timeout_ms;
}

/* Its socket and handshake state go; the result stays. */
void
fallback_check_end(struct fallback_check *c)
{
	if (c->fd != -1)
		close(c->fd);
	c->fd = -1;
	free(c->hs);
	c->hs = NULL;
}

static bool fb_check_connected(struct fallback_check *c);

static bool
fb_check_connect(struct fallback_check *c)
{
	char buf[ADDR_STRLEN];
	int rc;

	c->hs = calloc(1, sizeof(*c->hs));
	if (c->hs == NULL)
		return fb_check_end(c, -ENOMEM, "out of memory");
	rc = sock_connect(&c->peer->addr, &c->peer->source, c->conf, false,
			  &c->fd);
	if (rc != 0 && rc != -EINPROGRESS)
		return fb_check_end(c, rc, "connect to %s: %s",
				    addr_str(&c->peer->addr, buf, sizeof(buf)),
				    strerror(-rc));
	/* on loopback it is done already: the time is then the connect's */
	return fb_check_connected(c);
}

/* The connect ended (or not yet): send the HELLO, as fb_client_connected. */
static bool
fb_check_connected(struct fallback_check *c)
{
	struct fallback_hs *hs = c->hs;
	struct pollfd pfd = {c->fd, POLLOUT, 0};
	char buf[ADDR_STRLEN];
	socklen_t len = sizeof(int);
	int err = 0;

	if (poll(&pfd, 1, 0) == 0) {
		if (now_us() - c->started_us <
			    FB_PEER_CONNECT_TIMEOUT * 1000000ULL &&
		    now_ms() < c->deadline_ms)
			return false;
		return fb_check_end(c, -ETIMEDOUT, "connect to %s timed out",
				    addr_str(&c->peer->addr, buf, sizeof(buf)));
	}
	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1)
		err = errno;
	if (err != 0)
		return fb_check_end(c, -err, "connect to %s: %s",
				    addr_str(&c->peer->addr, buf, sizeof(buf)),
				    strerror(err));
	c->connect_us = now_us() - c->started_us;
	auth_nonce(hs->nonce);
	hs->hello_len = fb_hello_encode(hs->hello, hs->nonce,
					c->peer->key_len ? FB_FLAG_AUTH : 0,
					c->conf->name, c->export);
	hs->connected = true;
	c->stage = FALLBACK_CHECK_AUTH;
	if (send(c->fd, hs->hello, hs->hello_len, MSG_NOSIGNAL) !=
	    (ssize_t)hs->hello_len)
		return fb_check_end(c, -EPIPE,
				    "the peer connection broke before the "
				    "hello went");
	return false;
}

/* The peer's CHALLENGE: its proof of the key checked, ours sent. */
static bool
fb_check_challenge(struct fallback_check *c)
{
	struct fallback_hs *hs = c->hs;
	struct fb_proof proof;
	const char *why;
	int rc;

	if (hs->challenge_len != 0)
		return fb_check_end(c, -EPROTO, "a second challenge");
	rc = fallback_answer(c->peer, hs->hello, hs->hello_len, hs->in,
			     hs->in_len, &proof, &why);
	if (rc != 0)
		return fb_check_end(c, rc, "%s", why);
	hs->challenge_len = hs->in_len;
	c->keyed = true;
	c->stage = FALLBACK_CHECK_EXPORT;
	if (send(c->fd, &proof, sizeof(proof), MSG_NOSIGNAL) !=
	    (ssize_t)sizeof(proof))
		return fb_check_end(c, -EPIPE,
				    "the peer connection broke before the "
				    "proof went");
	return false;
}

/*
 * The peer's RESULT: 0 once the export's target took the connection
 * (which the peer now relays, until we close); else why not.  A refusal
 * of who we are is the authentication's, the rest the export's.
 */
static bool
fb_check_result(struct fallback_check *c)
{
	struct fallback_hs *hs = c->hs;
	enum session_reason r;

	if (fb_result_decode(hs->in, hs->in_len, &c->code))
		return fb_check_end(c, -EPROTO, "bad result");
	if (c->code == 0) {
		if (c->peer->key_len != 0 && hs->challenge_len == 0)
			return fb_check_end(c, -EACCES,
					    "peer accepted without "
					    "authenticating (it has no key "
					    "for us)");
		c->stage = FALLBACK_CHECK_EXPORT;
		return fb_check_end(c, 0, "%s", "");
	}
	r = session_reason_of_code(c->code);
	if (r == SESSION_AUTH_FAILED || r == SESSION_UNKNOWN_PEER) {
		c->stage = FALLBACK_CHECK_AUTH;
		return fb_check_end(c, -EACCES, "the peer refused us: %s",
				    session_reason_desc(r));
	}
	c->stage = FALLBACK_CHECK_EXPORT;
	return fb_check_end(c, -ECONNREFUSED, "%s", session_reason_desc(r));
}

/*
 * One step of check c: true when it has its result (c->rc, c->stage,
 * c->error), its connection then closed.
 */
bool
fallback_check_step(struct fallback_check *c)
{
	struct fallback_hs *hs = c->hs;
	int rc;

	if (c->done)
		return true;
	if (hs == NULL)
		return fb_check_connect(c);
	if (!hs->connected)
		return fb_check_connected(c);
	for (;;) {
		rc = fallback_msg_read(c->fd, hs->in, &hs->in_len);
		if (rc < 0)
			return fb_check_end(
				c, rc,
				rc == -EPROTO ? "bytes that are no message" :
						"the peer closed the "
						"connection");
		if (rc == 0)
			break;
		if (hs->in[5] == FB_CHALLENGE && fb_check_challenge(c))
			return true;
		if (hs->in[5] == FB_RESULT)
			return fb_check_result(c);
		if (hs->in[5] != FB_CHALLENGE)
			return fb_check_end(c, -EPROTO, "unexpected message");
		hs->in_len = 0;
	}
	if (now_ms() >= c->deadline_ms)
		return fb_check_end(c, -ETIMEDOUT,
				    c->stage == FALLBACK_CHECK_AUTH ?
					    "no answer to hello in time" :
					    "no result in time (the export's "
					    "target is slow to connect?)");
	return false;
}

/* ---- export side ---- */

/*
 * Export side: fd (taken over), a stranger from src on our peer port
 * since since_ms whose first bytes are not CLC's (accept.c checked the
 * rate limit and gave it a place among strangers): await its hello,
 * whose header is due within first_byte_timeout of since_ms.  A HELLO
 * that asks to resume a connection goes to rops->take.
 */
void
fallback_accept(struct worker *w, int fd, const struct addr *src,
		uint64_t since_ms, const struct fallback_resume_ops *rops)
{
	struct session *s = session_new(w, fd, SESSION_ROLE_EXPORT);
	int64_t left;

	if (s == NULL) {
		worker_preauth_put(w, src);
		return;
	}
	session_ops_set(s, &fallback_ops);
	session_preauth_take(s);
	s->started_ms = since_ms;
	if (fallback_hs_get(s) == NULL) {
		session_close(s, SESSION_RESOURCE);
		return;
	}
	s->hs->rops = rops;
	s->state = SESSION_HANDSHAKE;
	session_want(s, 0, EV_READ, true);
	left = (int64_t)s->conf->first_byte_timeout * 1000 -
	       (int64_t)(now_ms() - since_ms);
	session_timer_ms(s, left > 1 ? (int)left : 1);
}

/*
 * Refuse the peer's request with reason r: tell it why, then close.  The
 * peer connection closes gracefully so the result is not lost to a reset.
 */
static void
fb_export_refuse(struct session *s, enum session_reason r)
{
	uint8_t msg[sizeof(struct fb_result)];
	size_t len = fb_result_encode(msg, session_reason_code(r));

	STATS_INC(worker_stats(s->w), srv_hshake_err_cnt);
	if (r == SESSION_AUTH_FAILED)
		STATS_INC(worker_stats(s->w), auth_failures);
	/* a name we do not know is a guess, as in CLC (clc_refuse) */
	if (r == SESSION_AUTH_FAILED || r == SESSION_UNKNOWN_PEER)
		auth_failed(worker_auth(s->w), &s->addr[0], now_ms());
	(void)send(s->fd[0], msg, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	s->fin_downstream = true;
	session_close(s, r);
}

static void
fb_export_open(struct session *s)
{
	struct fallback_hs *hs = s->hs;
	enum session_reason r;
	char who[32];
	int err;

	if (hs->hello_len > sizeof(struct fb_hello) &&
	    (((const struct fb_hello *)hs->hello)->flags & FB_FLAG_RESUME)) {
		struct fb_hello_info hi;

		/* authenticated (or a peer without a key): no stranger now */
		session_preauth_done(s);
		/* a connection over RDMA whose group ended goes on here */
		r = SESSION_PROTOCOL_ERROR;
		if (fb_hello_decode(hs->hello, hs->hello_len, &hi) != 0 ||
		    hs->rops->take(s, &hi, &r) != 0)
			fb_export_refuse(s, r);
		return;
	}
	snprintf(who, sizeof(who), "conn 0x%llx", (unsigned long long)s->id);
	s->export = export_find(s->w, s->conf, who, s->peer->name,
				s->export_name, &r);
	/* asked while s is a stranger's, which max_conns does not count */
	err = s->export != NULL ? export_room(s->w, &r) : -ENOENT;
	session_preauth_done(s);
	if (err) {
		fb_export_refuse(s, r);
		return;
	}
	session_want(s, 0, EV_READ, false);
	if (export_connect(s, &r) != 0)
		fb_export_refuse(s, r);
}

static void
fb_export_hello(struct session *s)
{
	struct fallback_hs *hs = s->hs;
	struct fb_challenge ch;
	struct fb_hello_info hi;
	char buf[ADDR_STRLEN], host[ADDR_STRLEN] = "?";

	addr_host(&s->addr[0], host, sizeof(host));
	if (fb_hello_decode(hs->in, hs->in_len, &hi)) {
		fb_preauth_malformed(s, "malformed hello");
		fb_export_refuse(s, SESSION_PROTOCOL_ERROR);
		return;
	}
	STATS_INC(worker_stats(s->w), conns_from_peers);
	memcpy(hs->hello, hs->in, hs->in_len);
	hs->hello_len = hs->in_len;
	snprintf(s->export_name, sizeof(s->export_name), "%s", hi.export);
	if (hi.flags & FB_FLAG_ORIGIN)
		fb_origin_get(&hi.origin, &s->origin[0], &s->origin[1]);
	s->peer = conf_peer_find(s->conf, hi.name);
	if (s->peer == NULL) {
		log_warnx_rl(
			"peer port refused", host,
			"conn 0x%llx: hello from unknown peer \"%s\" at %s",
			(unsigned long long)s->id, hi.name,
			addr_str(&s->addr[0], buf, sizeof(buf)));
		fb_export_refuse(s, SESSION_UNKNOWN_PEER);
		return;
	}
	if (!s->peer->any_source &&
	    !addr_same_host(&s->peer->addr, &s->addr[0])) {
		log_event_rl("peer port refused", host, LOG_EV_AUTH_FAILED,
			     &(struct log_where){s->peer->name, NULL, -1, -1},
			     "conn 0x%llx: peer %s connected from %s, not its "
			     "configured address",
			     (unsigned long long)s->id, s->peer->name,
			     addr_str(&s->addr[0], buf, sizeof(buf)));
		fb_export_refuse(s, SESSION_AUTH_FAILED);
		return;
	}
	if (s->peer->key_len == 0) {
		fb_export_open(s);
		return;
	}
	memset(&ch, 0, sizeof(ch));
	fb_hdr_fill(&ch.hdr, FB_CHALLENGE, sizeof(ch));
	auth_nonce(hs->nonce);
	memcpy(ch.nonce, hs->nonce, sizeof(ch.nonce));
	auth_mac(s->peer->key, s->peer->key_len, "s", hs->hello, hs->hello_len,
		 ch.nonce, sizeof(ch.nonce), ch.mac);
	memcpy(hs->challenge, &ch, sizeof(ch));
	hs->challenge_len = sizeof(ch);
	fb_send(s, 0, &ch, sizeof(ch));
}

static void
fb_export_proof(struct session *s)
{
	struct fallback_hs *hs = s->hs;
	unsigned char mac[AUTH_MAC_LEN];
	const uint8_t *their;
	char host[ADDR_STRLEN] = "?";

	addr_host(&s->addr[0], host, sizeof(host));
	if (hs->challenge_len == 0 ||
	    fb_proof_decode(hs->in, hs->in_len, &their)) {
		fb_preauth_malformed(s, "proof out of order or malformed");
		fb_export_refuse(s, SESSION_PROTOCOL_ERROR);
		return;
	}
	auth_mac(s->peer->key, s->peer->key_len, "c", hs->hello, hs->hello_len,
		 hs->challenge, hs->challenge_len, mac);
	if (!auth_mac_equal(mac, their)) {
		log_event_rl("peer port refused", host, LOG_EV_AUTH_FAILED,
			     &(struct log_where){s->peer->name, NULL, -1, -1},
			     "conn 0x%llx: peer %s failed authentication "
			     "(wrong key?)",
			     (unsigned long long)s->id, s->peer->name);
		fb_export_refuse(s, SESSION_AUTH_FAILED);
		return;
	}
	fb_export_open(s);
}

static void
fb_export_connected(struct session *s)
{
	uint8_t msg[sizeof(struct fb_result)];
	enum session_reason r;

	if (export_connected(s, &r) != 0) {
		fb_export_refuse(s, r);
		return;
	}
	/* the result is tiny and the socket's buffer empty: it goes whole */
	if (send(s->fd[0], msg, fb_result_encode(msg, 0), MSG_NOSIGNAL) !=
	    (ssize_t)sizeof(msg)) {
		session_close(s, SESSION_PEER_RST);
		return;
	}
	fallback_relay_start(s, STAT_conns_fallback);
}

static void
fb_export_io(struct session *s, int i, short what)
{
	struct fallback_hs *hs = s->hs;
	int rc;

	if (s->state == SESSION_CONNECT_TARGET) {
		if (i == 1 && (what & EV_WRITE))
			fb_export_connected(s);
		return;
	}
	if (what & EV_WRITE && !fb_flush(s, i))
		return;
	if (!(what & EV_READ) || i != 0)
		return;
	rc = fb_read(s, 0);
	if (rc <= 0)
		return;
	if (hs->in[5] == FB_HELLO && hs->hello_len == 0) {
		fb_export_hello(s);
	} else if (hs->in[5] == FB_PROOF) {
		fb_export_proof(s);
	} else {
		fb_preauth_malformed(s, "message out of order");
		fb_export_refuse(s, SESSION_PROTOCOL_ERROR);
	}
}

/* A socket event of s in fallback mode (session.c hands them over). */
static void
fallback_io(struct session *s, int i, short what)
{
	if (s->state == SESSION_RELAY) {
		fb_relay(s);
		return;
	}
	if (s->role == SESSION_ROLE_RULE) {
		if (i == 1)
			fallback_client_io(s, what);
	} else
		fb_export_io(s, i, what);
}

/* The handshake timer fired. */
static void
fallback_timeout(struct session *s)
{
	struct fallback_hs *hs = s->hs;

	switch (s->state) {
	case SESSION_CONNECT_PEER:
	case SESSION_HELLO:
		/* the client handshake keeps its own time (fb_client_timer) */
		break;
	case SESSION_CONNECT_TARGET:
		fb_export_refuse(s, export_timed_out(s));
		break;
	default:
		if (s->preauth)
			fb_preauth_failed(
				s, hs->in_len == 0 && hs->hello_len == 0 ?
					   "nothing sent in time" :
					   "handshake not done in time");
		fb_export_refuse(s, SESSION_PROTOCOL_ERROR);
		break;
	}
}

static const struct session_ops fallback_ops = {
	.io = fallback_io,
	.timeout = fallback_timeout,
	.hs_free = fallback_hs_free,
};
