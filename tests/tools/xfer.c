// SPDX-License-Identifier: BSD-2-Clause
/*
 * xfer: the traffic generator and checker behind the system tests and the
 * benchmarks.  One client process opens N connections to one server process
 * (directly or through a proxy pair) and moves pseudo-random data both ways
 * at once.  The data is a counter-based splitmix64 stream keyed by a seed the
 * client sends in a 64-byte header, so each side regenerates what it should
 * have received and checks every byte; both sides also hash what they sent
 * and received (SHA-256) and the server returns its two digests in a trailer
 * so the client can compare all four.
 *
 * Modes:
 *   duplex    data both ways, full duplex; --half-close, --rst-after,
 *             --server-rst-after and --expect-close vary how it ends
 *   stream    client -> server bulk, for benchmarks (-t seconds or -b bytes)
 *   pingpong  SIZE bytes out, SIZE bytes echoed back, ITER times; RTT
 *             percentiles
 * A reset cannot carry a verdict back, so for the reset cases the client
 * opens a second ("query") connection afterwards and asks the server what it
 * saw and when (CLOCK_MONOTONIC is shared by processes on one host, which
 * gives the propagation delay of the reset).
 *
 * One thread, nonblocking sockets, level-triggered epoll.
 */
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#define XFER_MAGIC_HDR 0x31524658u     /* "XFR1" */
#define XFER_MAGIC_TRAILER 0x54524658u /* "XFRT" */
#define XFER_MAGIC_REPLY 0x51524658u   /* "XFRQ" */
#define HDR_LEN 64
#define TRAILER_LEN 88
#define REPLY_LEN 64
#define UNTIL_EOF UINT64_MAX
#define CHUNK (256 * 1024)
#define SCRATCH (64 * 1024)
#define MAX_EVENTS 128
#define RECORDS 4096
#define DRAIN_MAX_NS (2 * NSEC)
#define QUERY_WAIT_NS (5 * NSEC)
#define NSEC 1000000000ull
#define RST_ACK 0x06

enum mode { MODE_DUPLEX = 1, MODE_STREAM, MODE_PINGPONG, MODE_QUERY };

enum hdr_flag {
	FL_HALF_CLOSE = 1 << 0,
	FL_CLIENT_RST = 1 << 1,
	FL_SERVER_RST = 1 << 2,
	FL_VERIFY = 1 << 3,
};

/* Verdicts, shared by both sides and carried in trailers and replies. */
enum status {
	ST_OK,
	ST_RUNNING,
	ST_MISMATCH,
	ST_EARLY_EOF,
	ST_EXTRA_DATA,
	ST_EOF_NOT_RST,
	ST_IO_ERROR,
	ST_TIMEOUT,
	ST_BAD_HEADER,
	ST_UNKNOWN_ID,
	ST_DIGEST,
	ST_CONNECT,
	ST_UNEXPECTED_DATA,
	ST_SLOW_RST,
};

static const char *const status_names[] = {
	[ST_OK] = "ok",
	[ST_RUNNING] = "still running",
	[ST_MISMATCH] = "data mismatch",
	[ST_EARLY_EOF] = "EOF before all data",
	[ST_EXTRA_DATA] = "data after the expected end",
	[ST_EOF_NOT_RST] = "clean EOF where a reset was expected",
	[ST_IO_ERROR] = "socket error",
	[ST_TIMEOUT] = "timeout",
	[ST_BAD_HEADER] = "bad header",
	[ST_UNKNOWN_ID] = "server does not know that connection",
	[ST_DIGEST] = "SHA-256 differs between the ends",
	[ST_CONNECT] = "connect failed",
	[ST_UNEXPECTED_DATA] = "received data where a close was expected",
	[ST_SLOW_RST] = "reset arrived too late",
};

struct hdr {
	uint8_t mode;
	uint8_t flags;
	uint32_t ping_size;
	uint32_t ping_iters;
	uint64_t id;
	uint64_t seed;
	uint64_t c2s;
	uint64_t s2c;
	uint64_t aux; /* query: the id asked about */
};

/* What the server remembers of a finished connection, for queries. */
struct record {
	uint64_t id;
	int status;
	int err;
	uint64_t bytes;	  /* received (client reset) or sent (server reset) */
	uint64_t t_event; /* when the reset was seen or sent */
};

enum cstate {
	CS_CONNECTING,
	CS_HEADER, /* server: reading the header */
	CS_RUN,
	CS_DRAIN, /* about to reset: waiting for the send queue to empty */
	CS_QUERY, /* server: query waiting for its record */
	CS_DONE,
};

struct conn {
	int fd;
	int idx;
	bool client;
	enum cstate state;
	struct hdr h;
	uint8_t hbuf[HDR_LEN];
	size_t hgot;
	uint32_t events; /* epoll interest now registered */

	uint8_t *obuf; /* pending output: header, data chunk, trailer, echo */
	size_t olen, opos, ocap;

	uint64_t tx_seed, tx_total, tx_done, tx_limit;
	uint64_t rx_seed, rx_total, rx_done;
	bool verify;
	EVP_MD_CTX *tx_sha, *rx_sha;
	uint8_t tx_digest[32], rx_digest[32];

	uint8_t tbuf[TRAILER_LEN]; /* trailer received (client) */
	size_t tgot;
	bool trailer_queued, trailer_sent, trailer_got;
	bool got_eof, wr_shut;
	bool tx_stop; /* a timed stream is past its time */
	bool acked;   /* client reset mode: the server has the header */
	bool paused;  /* --pause-read: done once, at half the answer */
	uint64_t t_resume;
	int err; /* first socket error seen */
	int status;
	char why[200];
	uint64_t t_start, t_end, t_event, t_drain;

	/* pingpong (client) */
	uint32_t iters_done;
	uint64_t ping_off, pgot, t_ping;

	/* query (server) */
	uint64_t t_query;
};

struct opts {
	const char *addr;
	enum mode mode;
	int conns;
	uint64_t c2s, s2c;
	bool s2c_set;
	bool half_close;
	long long rst_after, server_rst_after;
	bool expect_close;
	uint32_t ping_size, ping_iters, warmup;
	uint32_t gap_us;     /* pingpong: idle time between pings */
	bool connect_time;   /* pingpong: one at a time, timed from connect */
	bool serial;	     /* one at a time, each when the one before ended */
	uint32_t write_size; /* stream: at most this much per write() */
	double seconds;
	double timeout;
	double rst_max_ms;
	double pause_ms;
	uint64_t seed;
	bool verify;
	bool quiet;
	bool json;
	long exit_after;
	int sndbuf, rcvbuf;
};

static struct opts opt;
static int epfd = -1;
static uint8_t rbuf[CHUNK];
static uint8_t scratch[SCRATCH];
static uint8_t *static_data; /* unverified stream payload */
static struct record records[RECORDS];
static unsigned nrecords;
static struct conn **conns;
static int nconns, cap_conns;
static uint64_t *rtts;
static size_t nrtts, cap_rtts;

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC + (uint64_t)ts.tv_nsec;
}

/* Time since t; 0 if t is after now (now was read before t was set). */
static uint64_t
since(uint64_t now, uint64_t t)
{
	return now > t ? now - t : 0;
}

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("xfer: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(2);
}

static void *
xmalloc(size_t n)
{
	void *p = malloc(n);

	if (p == NULL)
		die("out of memory");
	return p;
}

/* The data stream: byte k of a seed's stream is byte k%8 of word k/8. */
static inline uint64_t
prng_word(uint64_t seed, uint64_t i)
{
	uint64_t z = seed + (i + 1) * 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Fill buf with bytes [off, off + len) of seed's stream. */
static void
prng_fill(uint64_t seed, uint64_t off, uint8_t *buf, size_t len)
{
	uint64_t w;
	size_t k;

	while (len > 0 && (off & 7)) {
		w = prng_word(seed, off >> 3);
		*buf++ = (uint8_t)(w >> (8 * (off & 7)));
		off++;
		len--;
	}
	for (; len >= 8; len -= 8, off += 8, buf += 8) {
		w = htole64(prng_word(seed, off >> 3));
		memcpy(buf, &w, 8);
	}
	if (len > 0) {
		w = prng_word(seed, off >> 3);
		for (k = 0; k < len; k++)
			buf[k] = (uint8_t)(w >> (8 * k));
	}
}

/* Check buf against the stream at off; returns -1 or the bad offset. */
static int64_t
prng_check(uint64_t seed, uint64_t off, const uint8_t *buf, size_t len)
{
	size_t n, k;

	while (len > 0) {
		n = len < SCRATCH ? len : SCRATCH;
		prng_fill(seed, off, scratch, n);
		if (memcmp(scratch, buf, n) != 0) {
			for (k = 0; k < n && scratch[k] == buf[k]; k++)
				;
			return (int64_t)(off + k);
		}
		off += n;
		buf += n;
		len -= n;
	}
	return -1;
}

static void
put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static void
put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

static uint32_t
get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

static uint64_t
get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return le64toh(v);
}

static void
hdr_encode(const struct hdr *h, uint8_t *p)
{
	memset(p, 0, HDR_LEN);
	put32(p, XFER_MAGIC_HDR);
	p[4] = h->mode;
	p[5] = h->flags;
	put32(p + 8, h->ping_size);
	put32(p + 12, h->ping_iters);
	put64(p + 16, h->id);
	put64(p + 24, h->seed);
	put64(p + 32, h->c2s);
	put64(p + 40, h->s2c);
	put64(p + 48, h->aux);
}

static int
hdr_decode(const uint8_t *p, struct hdr *h)
{
	if (get32(p) != XFER_MAGIC_HDR)
		return -1;
	h->mode = p[4];
	h->flags = p[5];
	h->ping_size = get32(p + 8);
	h->ping_iters = get32(p + 12);
	h->id = get64(p + 16);
	h->seed = get64(p + 24);
	h->c2s = get64(p + 32);
	h->s2c = get64(p + 40);
	h->aux = get64(p + 48);
	if (h->mode < MODE_DUPLEX || h->mode > MODE_QUERY)
		return -1;
	return 0;
}

static void
hex(const uint8_t *d, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

static uint64_t
parse_size(const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || v < 0)
		die("bad size '%s'", s);
	switch (*end) {
	case 'k':
	case 'K':
		v *= 1024;
		end++;
		break;
	case 'm':
	case 'M':
		v *= 1024 * 1024;
		end++;
		break;
	case 'g':
	case 'G':
		v *= 1024.0 * 1024 * 1024;
		end++;
		break;
	case '\0':
		break;
	default:
		die("bad size '%s'", s);
	}
	if (*end == 'i' || *end == 'B')
		end++;
	if (*end == 'B')
		end++;
	if (*end != '\0')
		die("bad size '%s'", s);
	return (uint64_t)v;
}

static void
fmt_bytes(uint64_t b, char *out, size_t len)
{
	if (b >= (1ull << 30))
		snprintf(out, len, "%.1f GiB", (double)b / (1ull << 30));
	else if (b >= (1ull << 20))
		snprintf(out, len, "%.1f MiB", (double)b / (1ull << 20));
	else if (b >= 1024)
		snprintf(out, len, "%.1f KiB", (double)b / 1024);
	else
		snprintf(out, len, "%" PRIu64 " B", b);
}

/* "host:port", "[v6]:port" or ":port" into a sockaddr. */
static void
resolve(const char *spec, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[256];
	const char *colon, *port;
	struct addrinfo hints, *res = NULL;
	size_t hl;
	int rc;

	colon = strrchr(spec, ':');
	if (colon == NULL)
		die("address '%s' is not host:port", spec);
	port = colon + 1;
	hl = (size_t)(colon - spec);
	if (hl >= sizeof(host))
		die("address '%s' too long", spec);
	memcpy(host, spec, hl);
	host[hl] = '\0';
	if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
		memmove(host, host + 1, hl - 2);
		host[hl - 2] = '\0';
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
	rc = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
	if (rc != 0)
		die("address '%s': %s", spec, gai_strerror(rc));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
}

static void
set_nonblock_opts(int fd)
{
	int one = 1;

	if (opt.sndbuf > 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &opt.sndbuf,
			   sizeof(opt.sndbuf));
	if (opt.rcvbuf > 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &opt.rcvbuf,
			   sizeof(opt.rcvbuf));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void fail(struct conn *c, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Record the first failure of a connection; later ones are consequences. */
static void
fail(struct conn *c, int status, const char *fmt, ...)
{
	va_list ap;

	if (c->status != ST_RUNNING && c->status != ST_OK)
		return;
	c->status = status;
	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
}

static void
conn_watch(struct conn *c, uint32_t ev)
{
	struct epoll_event e;

	if (c->fd < 0 || ev == c->events)
		return;
	memset(&e, 0, sizeof(e));
	e.events = ev;
	e.data.ptr = c;
	if (epoll_ctl(epfd,
		      c->events == 0 && ev != 0 ? EPOLL_CTL_ADD :
		      ev == 0			? EPOLL_CTL_DEL :
						  EPOLL_CTL_MOD,
		      c->fd, &e) < 0)
		die("epoll_ctl: %s", strerror(errno));
	c->events = ev;
}

static struct conn *
conn_new(int fd, bool client)
{
	struct conn *c = xmalloc(sizeof(*c));

	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->client = client;
	c->status = ST_RUNNING;
	c->ocap = CHUNK;
	c->obuf = xmalloc(c->ocap);
	c->tx_sha = EVP_MD_CTX_new();
	c->rx_sha = EVP_MD_CTX_new();
	if (c->tx_sha == NULL || c->rx_sha == NULL ||
	    !EVP_DigestInit_ex(c->tx_sha, EVP_sha256(), NULL) ||
	    !EVP_DigestInit_ex(c->rx_sha, EVP_sha256(), NULL))
		die("EVP_DigestInit failed");
	c->t_start = now_ns();
	if (nconns == cap_conns) {
		cap_conns = cap_conns ? 2 * cap_conns : 64;
		conns = realloc(conns, (size_t)cap_conns * sizeof(*conns));
		if (conns == NULL)
			die("out of memory");
	}
	conns[nconns++] = c;
	return c;
}

static void
conn_free(struct conn *c)
{
	EVP_MD_CTX_free(c->tx_sha);
	EVP_MD_CTX_free(c->rx_sha);
	free(c->obuf);
	free(c);
}

static void
conn_close_fd(struct conn *c, bool reset)
{
	struct linger lg = {.l_onoff = 1, .l_linger = 0};

	if (c->fd < 0)
		return;
	conn_watch(c, 0);
	if (reset)
		setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(c->fd);
	c->fd = -1;
}

static void
queue_out(struct conn *c, const uint8_t *p, size_t n)
{
	memcpy(c->obuf + c->olen, p, n);
	c->olen += n;
}

/* --- the server side ------------------------------------------------- */

static struct record *
record_find(uint64_t id)
{
	unsigned i, n = nrecords < RECORDS ? nrecords : RECORDS;

	for (i = 0; i < n; i++)
		if (records[i].id == id)
			return &records[i];
	return NULL;
}

static void
record_add(const struct conn *c, uint64_t bytes)
{
	struct record *r = &records[nrecords++ % RECORDS];

	r->id = c->h.id;
	r->status = c->status;
	r->err = c->err;
	r->bytes = bytes;
	r->t_event = c->t_event;
}

static long server_done, server_failed;

static const char *
mode_name(int mode)
{
	switch (mode) {
	case MODE_DUPLEX:
		return "duplex";
	case MODE_STREAM:
		return "stream";
	case MODE_PINGPONG:
		return "pingpong";
	case MODE_QUERY:
		return "query";
	}
	return "?";
}

static void
server_finish(struct conn *c)
{
	char txh[65], rxh[65];

	if (c->state == CS_DONE)
		return;
	c->state = CS_DONE;
	c->t_end = now_ns();
	if (c->status == ST_RUNNING)
		c->status = ST_OK;
	if (c->h.mode != MODE_QUERY && c->hgot == HDR_LEN) {
		if (!c->trailer_queued) {
			EVP_DigestFinal_ex(c->tx_sha, c->tx_digest, NULL);
			EVP_DigestFinal_ex(c->rx_sha, c->rx_digest, NULL);
		}
		hex(c->tx_digest, 32, txh);
		hex(c->rx_digest, 32, rxh);
		if (!opt.quiet || c->status != ST_OK)
			printf("server conn id=%016" PRIx64
			       " %s%s%s: recv %" PRIu64
			       " sha256=%s sent %" PRIu64
			       " sha256=%s: %s%s%s\n",
			       c->h.id, mode_name(c->h.mode),
			       c->h.flags & FL_HALF_CLOSE ? " half-close" : "",
			       c->h.flags & FL_CLIENT_RST ? " client-rst" :
			       c->h.flags & FL_SERVER_RST ? " server-rst" :
							    "",
			       c->rx_done, c->verify ? rxh : "-", c->tx_done,
			       c->verify ? txh : "-", status_names[c->status],
			       c->why[0] ? ": " : "", c->why);
		record_add(c, c->h.flags & FL_SERVER_RST ? c->tx_done :
							   c->rx_done);
		server_done++;
		if (c->status != ST_OK)
			server_failed++;
	} else if (c->h.mode != MODE_QUERY && c->hgot > 0) {
		printf("server conn: closed before a full header (%zu bytes)"
		       "%s%s\n",
		       c->hgot, c->why[0] ? ": " : "", c->why);
	}
	fflush(stdout);
	conn_close_fd(c, false);
}

static void
server_start(struct conn *c)
{
	struct hdr *h = &c->h;

	c->t_start = now_ns();
	c->rx_seed = h->seed ^ 0x5851f42d4c957f2dull;
	c->tx_seed = h->seed ^ 0x14057b7ef767814full;
	switch (h->mode) {
	case MODE_DUPLEX:
		c->verify = true;
		c->rx_total = h->c2s;
		c->tx_total = h->s2c;
		c->tx_limit = h->flags & FL_HALF_CLOSE ? h->s2c / 2 : h->s2c;
		if (h->flags & FL_CLIENT_RST) {
			/*
			 * Tell the client the whole path is up: a proxy may
			 * drop a connection reset before it reached us.
			 */
			uint8_t ack = RST_ACK;

			queue_out(c, &ack, 1);
		}
		break;
	case MODE_STREAM:
		c->verify = h->flags & FL_VERIFY;
		c->rx_total = h->c2s;
		break;
	case MODE_PINGPONG:
		c->rx_total = UNTIL_EOF;
		break;
	case MODE_QUERY:
		c->state = CS_QUERY;
		c->t_query = now_ns();
		return;
	}
	c->state = CS_RUN;
}

/* Data received by the server, after the header. */
static void
server_data(struct conn *c, const uint8_t *p, size_t n)
{
	size_t take;
	int64_t bad;

	if (c->h.mode == MODE_PINGPONG) {
		/* server_read never reads more than the echo buffer holds */
		queue_out(c, p, n);
		c->rx_done += n;
		return;
	}
	if (c->rx_total != UNTIL_EOF && c->rx_done + n > c->rx_total) {
		fail(c, ST_EXTRA_DATA, "%" PRIu64 " bytes expected, got more",
		     c->rx_total);
		take = (size_t)(c->rx_total - c->rx_done);
	} else {
		take = n;
	}
	if (c->verify && take > 0) {
		bad = prng_check(c->rx_seed, c->rx_done, p, take);
		if (bad >= 0)
			fail(c, ST_MISMATCH,
			     "first bad byte at offset %" PRId64, bad);
		EVP_DigestUpdate(c->rx_sha, p, take);
	}
	c->rx_done += take;
}

static bool
server_rx_complete(const struct conn *c)
{
	if (c->rx_total == UNTIL_EOF)
		return c->got_eof;
	if (c->h.flags & FL_HALF_CLOSE)
		return c->got_eof && c->rx_done == c->rx_total;
	return c->rx_done == c->rx_total;
}

static void
server_queue_trailer(struct conn *c)
{
	uint8_t t[TRAILER_LEN];

	EVP_DigestFinal_ex(c->tx_sha, c->tx_digest, NULL);
	EVP_DigestFinal_ex(c->rx_sha, c->rx_digest, NULL);
	if (c->status == ST_RUNNING)
		c->status = ST_OK;
	put32(t, XFER_MAGIC_TRAILER);
	put32(t + 4, (uint32_t)c->status);
	put64(t + 8, c->rx_done);
	put64(t + 16, c->tx_done);
	memcpy(t + 24, c->rx_digest, 32);
	memcpy(t + 56, c->tx_digest, 32);
	queue_out(c, t, TRAILER_LEN);
	c->trailer_queued = true;
}

static void
server_query_reply(struct conn *c, bool final)
{
	struct record *r = record_find(c->h.aux);
	uint8_t q[REPLY_LEN];

	if ((r == NULL || r->status == ST_RUNNING) && !final)
		return;
	memset(q, 0, sizeof(q));
	put32(q, XFER_MAGIC_REPLY);
	put32(q + 4, r ? (uint32_t)r->status : ST_UNKNOWN_ID);
	put32(q + 8, r ? (uint32_t)r->err : 0);
	put64(q + 16, r ? r->bytes : 0);
	put64(q + 24, r ? r->t_event : 0);
	queue_out(c, q, REPLY_LEN);
	c->state = CS_RUN;
	c->trailer_queued = true;
}

/* Refill the output buffer once it is empty. */
static void
server_fill(struct conn *c)
{
	size_t n;

	if (c->opos < c->olen || c->state != CS_RUN)
		return;
	c->olen = c->opos = 0;
	if (c->h.mode == MODE_PINGPONG || c->h.mode == MODE_QUERY)
		return;
	if (c->tx_done < c->tx_limit) {
		n = c->tx_limit - c->tx_done < CHUNK ?
			    (size_t)(c->tx_limit - c->tx_done) :
			    CHUNK;
		prng_fill(c->tx_seed, c->tx_done, c->obuf, n);
		EVP_DigestUpdate(c->tx_sha, c->obuf, n);
		c->olen = n;
		c->tx_done += n;
		return;
	}
	if (c->h.flags & FL_SERVER_RST) {
		c->state = CS_DRAIN;
		c->t_drain = now_ns();
		return;
	}
	if (c->h.flags & FL_CLIENT_RST || c->trailer_queued)
		return;
	if (c->tx_done == c->tx_total && server_rx_complete(c))
		server_queue_trailer(c);
}

static void
server_on_eof(struct conn *c)
{
	c->got_eof = true;
	if (c->h.flags & FL_CLIENT_RST) {
		fail(c, ST_EOF_NOT_RST, "after %" PRIu64 " bytes", c->rx_done);
		c->t_event = now_ns();
		server_finish(c);
		return;
	}
	if (c->h.mode == MODE_PINGPONG) {
		if (c->opos == c->olen)
			server_finish(c);
		return;
	}
	if (c->rx_total != UNTIL_EOF && c->rx_done < c->rx_total) {
		fail(c, ST_EARLY_EOF, "got %" PRIu64 " of %" PRIu64 " bytes",
		     c->rx_done, c->rx_total);
		server_finish(c);
		return;
	}
	if (c->h.flags & FL_HALF_CLOSE)
		c->tx_limit = c->tx_total;
	if (c->trailer_sent)
		server_finish(c);
}

static void
server_on_error(struct conn *c, int err)
{
	if (c->err == 0)
		c->err = err;
	if (c->h.flags & FL_CLIENT_RST && c->hgot == HDR_LEN &&
	    (err == ECONNRESET || err == EPIPE)) {
		c->t_event = now_ns();
		server_finish(c);
		return;
	}
	fail(c, ST_IO_ERROR, "%s after %" PRIu64 " bytes in, %" PRIu64 " out",
	     strerror(err), c->rx_done, c->tx_done);
	server_finish(c);
}

static void
server_read(struct conn *c)
{
	ssize_t r;
	size_t want, off;
	int rounds;

	for (rounds = 0; rounds < 8 && c->state != CS_DONE; rounds++) {
		want = sizeof(rbuf);
		if (c->h.mode == MODE_PINGPONG && c->hgot == HDR_LEN) {
			if (c->opos == c->olen)
				c->opos = c->olen = 0;
			want = c->ocap - c->olen;
			if (want == 0)
				return;
		}
		r = read(c->fd, rbuf, want);
		if (r < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			server_on_error(c, errno);
			return;
		}
		if (r == 0) {
			if (c->hgot < HDR_LEN) {
				fail(c, ST_BAD_HEADER, "EOF inside the header");
				server_finish(c);
				return;
			}
			server_on_eof(c);
			return;
		}
		off = 0;
		if (c->hgot < HDR_LEN) {
			off = HDR_LEN - c->hgot < (size_t)r ?
				      HDR_LEN - c->hgot :
				      (size_t)r;
			memcpy(c->hbuf + c->hgot, rbuf, off);
			c->hgot += off;
			if (c->hgot < HDR_LEN)
				continue;
			if (hdr_decode(c->hbuf, &c->h) < 0) {
				fail(c, ST_BAD_HEADER, "bad magic or mode");
				c->hgot = 0;
				server_finish(c);
				return;
			}
			server_start(c);
			if (c->h.mode == MODE_PINGPONG &&
			    (size_t)r - off > c->ocap) {
				fail(c, ST_EXTRA_DATA, "ping larger than %zu",
				     c->ocap);
				server_finish(c);
				return;
			}
		}
		if ((size_t)r > off) {
			if (c->h.mode == MODE_QUERY) {
				fail(c, ST_EXTRA_DATA, "data after a query");
				server_finish(c);
				return;
			}
			server_data(c, rbuf + off, (size_t)r - off);
		}
	}
}

/* --- the client side ------------------------------------------------- */

static void
client_start_pingpong(struct conn *c)
{
	if (c->opos == c->olen)
		c->opos = c->olen = 0;
	c->ping_off = (uint64_t)c->iters_done * c->h.ping_size;
	prng_fill(c->tx_seed, c->ping_off, c->obuf + c->olen, c->h.ping_size);
	c->olen += c->h.ping_size;
	c->pgot = 0;
	c->t_ping = now_ns();
}

static struct conn *
client_open(const struct sockaddr_storage *ss, socklen_t sl, int idx)
{
	struct conn *c;
	struct hdr *h;
	uint64_t r;
	int fd;

	fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0)
		die("socket: %s", strerror(errno));
	set_nonblock_opts(fd);
	c = conn_new(fd, true);
	c->idx = idx;
	h = &c->h;
	h->mode = (uint8_t)opt.mode;
	h->flags = (opt.half_close ? FL_HALF_CLOSE : 0) |
		   (opt.rst_after >= 0 ? FL_CLIENT_RST : 0) |
		   (opt.server_rst_after >= 0 ? FL_SERVER_RST : 0) |
		   (opt.verify ? FL_VERIFY : 0);
	r = prng_word(opt.seed, (uint64_t)idx + 1000003);
	h->id = r ^ ((uint64_t)getpid() << 32);
	h->seed = prng_word(opt.seed, (uint64_t)idx);
	h->c2s = opt.c2s;
	h->s2c = opt.s2c;
	if (opt.rst_after >= 0) {
		h->c2s = (uint64_t)opt.rst_after;
		h->s2c = 0;
	}
	if (opt.server_rst_after >= 0) {
		h->c2s = 0;
		h->s2c = (uint64_t)opt.server_rst_after;
	}
	if (opt.mode == MODE_STREAM) {
		h->s2c = 0;
		if (opt.seconds > 0)
			h->c2s = UNTIL_EOF;
	}
	if (opt.mode == MODE_PINGPONG) {
		h->ping_size = opt.ping_size;
		h->ping_iters = opt.ping_iters;
		h->c2s = h->s2c = 0;
		if (c->ocap < HDR_LEN + opt.ping_size) {
			c->ocap = HDR_LEN + opt.ping_size;
			free(c->obuf);
			c->obuf = xmalloc(c->ocap);
		}
	}
	c->tx_seed = h->seed ^ 0x5851f42d4c957f2dull;
	c->rx_seed = h->seed ^ 0x14057b7ef767814full;
	c->tx_total = h->c2s;
	c->tx_limit = h->flags & FL_CLIENT_RST ? 0 : h->c2s;
	c->rx_total = h->s2c;
	c->verify = opt.mode == MODE_DUPLEX || opt.verify;
	hdr_encode(h, c->obuf);
	c->olen = HDR_LEN;
	if (opt.mode == MODE_PINGPONG && opt.ping_iters > 0)
		client_start_pingpong(c);
	c->state = CS_CONNECTING;
	if (connect(fd, (const struct sockaddr *)ss, sl) < 0 &&
	    errno != EINPROGRESS) {
		c->err = errno;
		fail(c, ST_CONNECT, "%s", strerror(errno));
		c->state = CS_DONE;
		conn_close_fd(c, false);
		return c;
	}
	conn_watch(c, EPOLLOUT);
	return c;
}

static void
client_finish(struct conn *c)
{
	if (c->state == CS_DONE)
		return;
	c->state = CS_DONE;
	c->t_end = now_ns();
	conn_close_fd(c, false);
}

static void
client_check_trailer(struct conn *c)
{
	const uint8_t *t = c->tbuf;
	uint32_t st;

	c->trailer_got = true;
	if (c->verify) {
		EVP_DigestFinal_ex(c->tx_sha, c->tx_digest, NULL);
		EVP_DigestFinal_ex(c->rx_sha, c->rx_digest, NULL);
	}
	if (get32(t) != XFER_MAGIC_TRAILER) {
		fail(c, ST_MISMATCH, "bad trailer magic");
		return;
	}
	st = get32(t + 4);
	if (st != ST_OK) {
		fail(c, (int)st, "server says: %s",
		     st < sizeof(status_names) / sizeof(status_names[0]) ?
			     status_names[st] :
			     "?");
		return;
	}
	if (opt.mode == MODE_STREAM) {
		c->rx_done = 0;
		c->tx_total = get64(t + 8); /* what the server counted */
		if (opt.seconds <= 0 && c->tx_total != c->tx_done)
			fail(c, ST_EARLY_EOF,
			     "server received %" PRIu64 " of %" PRIu64,
			     c->tx_total, c->tx_done);
		if (!c->verify)
			return;
	}
	if (get64(t + 8) != c->tx_done || get64(t + 16) != c->rx_done)
		fail(c, ST_DIGEST,
		     "server counted %" PRIu64 "/%" PRIu64
		     " bytes, client %" PRIu64 "/%" PRIu64,
		     get64(t + 8), get64(t + 16), c->tx_done, c->rx_done);
	else if (memcmp(t + 24, c->tx_digest, 32) != 0)
		fail(c, ST_DIGEST, "client->server digests differ");
	else if (memcmp(t + 56, c->rx_digest, 32) != 0)
		fail(c, ST_DIGEST, "server->client digests differ");
}

static void
client_data(struct conn *c, const uint8_t *p, size_t n)
{
	size_t take;
	int64_t bad;
	uint64_t t;

	if (opt.expect_close) {
		fail(c, ST_UNEXPECTED_DATA, "%zu bytes", n);
		return;
	}
	if (opt.mode == MODE_PINGPONG) {
		if (c->iters_done >= c->h.ping_iters ||
		    c->pgot + n > c->h.ping_size) {
			fail(c, ST_EXTRA_DATA, "echo longer than the ping");
			return;
		}
		bad = prng_check(c->tx_seed, c->ping_off + c->pgot, p, n);
		if (bad >= 0)
			fail(c, ST_MISMATCH, "echo differs at offset %" PRId64,
			     bad);
		c->pgot += n;
		if (c->pgot < c->h.ping_size)
			return;
		t = now_ns();
		if (c->iters_done >= opt.warmup) {
			if (nrtts == cap_rtts) {
				cap_rtts = cap_rtts ? 2 * cap_rtts : 4096;
				rtts = realloc(rtts, cap_rtts * sizeof(*rtts));
				if (rtts == NULL)
					die("out of memory");
			}
			rtts[nrtts++] = t - c->t_ping;
		}
		c->iters_done++;
		if (c->iters_done < c->h.ping_iters) {
			if (opt.gap_us > 0)
				usleep(opt.gap_us); /* not in the RTT */
			client_start_pingpong(c);
		}
		return;
	}
	if (c->h.flags & FL_CLIENT_RST) {
		if (c->acked || n != 1 || p[0] != RST_ACK) {
			fail(c, ST_UNEXPECTED_DATA,
			     "%zu bytes where one ack "
			     "byte was expected",
			     n);
			return;
		}
		c->acked = true;
		c->tx_limit = c->tx_total;
		return;
	}
	while (n > 0) {
		if (c->rx_done < c->rx_total) {
			take = c->rx_total - c->rx_done < n ?
				       (size_t)(c->rx_total - c->rx_done) :
				       n;
			if (c->verify) {
				bad = prng_check(c->rx_seed, c->rx_done, p,
						 take);
				if (bad >= 0)
					fail(c, ST_MISMATCH,
					     "first bad byte at offset "
					     "%" PRId64,
					     bad);
				EVP_DigestUpdate(c->rx_sha, p, take);
			}
			c->rx_done += take;
		} else if (c->h.flags & FL_SERVER_RST) {
			fail(c, ST_EXTRA_DATA, "more than %" PRIu64 " bytes",
			     c->rx_total);
			return;
		} else if (c->tgot < TRAILER_LEN) {
			take = TRAILER_LEN - c->tgot < n ?
				       TRAILER_LEN - c->tgot :
				       n;
			memcpy(c->tbuf + c->tgot, p, take);
			c->tgot += take;
			if (c->tgot == TRAILER_LEN)
				client_check_trailer(c);
		} else {
			fail(c, ST_EXTRA_DATA, "%zu bytes after the trailer",
			     n);
			return;
		}
		p += take;
		n -= take;
	}
}

static bool
client_tx_finished(const struct conn *c)
{
	if (opt.mode == MODE_PINGPONG)
		return c->iters_done >= c->h.ping_iters;
	if (opt.mode == MODE_STREAM && opt.seconds > 0)
		return c->tx_stop;
	return c->tx_done >= c->tx_limit;
}

static void
client_fill(struct conn *c, uint64_t now)
{
	size_t n;

	if (c->opos < c->olen || c->state != CS_RUN)
		return;
	c->olen = c->opos = 0;
	if (opt.mode == MODE_PINGPONG || opt.expect_close) {
		if (opt.expect_close && c->tx_done < c->tx_limit)
			goto data;
		return;
	}
	if (opt.mode == MODE_STREAM && opt.seconds > 0) {
		if (since(now, c->t_start) < (uint64_t)(opt.seconds * NSEC)) {
			c->tx_limit = c->tx_done +
				      (opt.write_size ? opt.write_size : CHUNK);
			goto data;
		}
		c->tx_limit = c->tx_done;
		c->tx_stop = true;
		return;
	}
	if (c->tx_done >= c->tx_limit)
		return;
data:
	n = c->tx_limit - c->tx_done < CHUNK ?
		    (size_t)(c->tx_limit - c->tx_done) :
		    CHUNK;
	if (opt.write_size && n > opt.write_size)
		n = opt.write_size;
	if (c->verify) {
		prng_fill(c->tx_seed, c->tx_done, c->obuf, n);
		EVP_DigestUpdate(c->tx_sha, c->obuf, n);
	} else {
		memcpy(c->obuf, static_data, n);
	}
	c->olen = n;
	c->tx_done += n;
}

/* After sending everything: half-close, reset, or wait. */
static void
client_after_tx(struct conn *c)
{
	if (c->wr_shut || c->state != CS_RUN || c->opos < c->olen ||
	    !client_tx_finished(c))
		return;
	if (c->h.flags & FL_CLIENT_RST) {
		if (!c->acked)
			return;
		c->state = CS_DRAIN;
		c->t_drain = now_ns();
		return;
	}
	if (opt.expect_close)
		return;
	/*
	 * Half-close shuts down right after the data; otherwise the client
	 * waits for the whole answer (trailer included) before it does.
	 */
	if (opt.half_close || opt.mode == MODE_STREAM ||
	    opt.mode == MODE_PINGPONG || c->trailer_got) {
		if (shutdown(c->fd, SHUT_WR) < 0) {
			c->err = errno;
			fail(c, ST_IO_ERROR, "shutdown: %s", strerror(errno));
			client_finish(c);
			return;
		}
		c->wr_shut = true;
	}
}

static void
client_on_eof(struct conn *c)
{
	c->got_eof = true;
	c->t_event = now_ns();
	if (opt.expect_close) {
		if (c->status == ST_RUNNING)
			snprintf(c->why, sizeof(c->why), "closed (FIN)");
		client_finish(c);
		return;
	}
	if (c->h.flags & FL_SERVER_RST)
		fail(c, ST_EOF_NOT_RST, "after %" PRIu64 " bytes", c->rx_done);
	else if (opt.mode == MODE_PINGPONG && !client_tx_finished(c))
		fail(c, ST_EARLY_EOF, "after %u of %u pings", c->iters_done,
		     c->h.ping_iters);
	else if (opt.mode != MODE_PINGPONG && !c->trailer_got)
		fail(c, ST_EARLY_EOF,
		     "received %" PRIu64 " of %" PRIu64 " bytes%s", c->rx_done,
		     c->rx_total,
		     c->rx_done == c->rx_total ? " (no trailer)" : "");
	else if (!c->wr_shut)
		fail(c, ST_EARLY_EOF, "server closed before the client");
	client_finish(c);
}

static void
client_on_error(struct conn *c, int err)
{
	if (c->err == 0)
		c->err = err;
	c->t_event = now_ns();
	if (opt.expect_close) {
		if (c->status == ST_RUNNING)
			snprintf(c->why, sizeof(c->why), "closed (%s)",
				 strerror(err));
		client_finish(c);
		return;
	}
	if (!(c->h.flags & FL_SERVER_RST &&
	      (err == ECONNRESET || err == EPIPE)))
		fail(c, ST_IO_ERROR,
		     "%s after %" PRIu64 " bytes out, %" PRIu64 " in",
		     strerror(err), c->tx_done, c->rx_done);
	client_finish(c);
}

static void
client_read(struct conn *c)
{
	ssize_t r;
	int rounds;

	for (rounds = 0; rounds < 8 && c->state == CS_RUN; rounds++) {
		if (c->t_resume)
			return;
		r = read(c->fd, rbuf, sizeof(rbuf));
		if (r < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			client_on_error(c, errno);
			return;
		}
		if (r == 0) {
			client_on_eof(c);
			return;
		}
		client_data(c, rbuf, (size_t)r);
		if (opt.pause_ms > 0 && !c->paused &&
		    c->rx_done >= c->rx_total / 2 && c->rx_total > 0) {
			/* stop reading: the proxies must hold back, not drop */
			c->paused = true;
			c->t_resume = now_ns() + (uint64_t)(opt.pause_ms * 1e6);
			return;
		}
		/* a complete echo: send the next ping before reading again */
		if (opt.mode == MODE_PINGPONG && c->pgot == 0)
			return;
	}
}

/* --- common I/O ------------------------------------------------------ */

static void
conn_write(struct conn *c, uint64_t now)
{
	ssize_t w;
	int rounds, max_rounds;

	/*
	 * Small writes (--write-size) measure the write path, not epoll: many
	 * of them per wake-up, as a program that writes in a loop would.
	 */
	max_rounds = c->client && opt.write_size && opt.write_size < 4096 ?
			     4096 :
			     16;
	for (rounds = 0; rounds < max_rounds; rounds++) {
		if (c->state != CS_RUN)
			return;
		if (c->client)
			client_fill(c, now);
		else
			server_fill(c);
		if (c->opos == c->olen)
			break;
		w = write(c->fd, c->obuf + c->opos, c->olen - c->opos);
		if (w < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			if (c->client)
				client_on_error(c, errno);
			else
				server_on_error(c, errno);
			return;
		}
		c->opos += (size_t)w;
		if (!c->client && c->opos == c->olen && c->trailer_queued &&
		    !c->trailer_sent) {
			c->trailer_sent = true;
			if (c->h.mode == MODE_QUERY || c->got_eof)
				server_finish(c);
			return;
		}
		if (!c->client && c->h.mode == MODE_PINGPONG &&
		    c->opos == c->olen && c->got_eof) {
			server_finish(c);
			return;
		}
	}
	if (c->client)
		client_after_tx(c);
}

static void
conn_update_watch(struct conn *c)
{
	uint32_t ev = 0;

	if (c->fd < 0)
		return;
	if (c->state == CS_CONNECTING) {
		conn_watch(c, EPOLLOUT);
		return;
	}
	if (!c->got_eof && c->state != CS_QUERY && !c->t_resume &&
	    !(c->h.mode == MODE_PINGPONG && !c->client && c->olen == c->ocap &&
	      c->opos < c->olen))
		ev |= EPOLLIN | EPOLLRDHUP;
	if (c->state == CS_RUN && c->opos < c->olen)
		ev |= EPOLLOUT;
	else if (c->state == CS_RUN && c->client && !client_tx_finished(c) &&
		 opt.mode != MODE_PINGPONG)
		ev |= EPOLLOUT;
	else if (c->state == CS_RUN && !c->client &&
		 (c->tx_done < c->tx_limit ||
		  (c->h.flags & FL_SERVER_RST && c->hgot == HDR_LEN) ||
		  (!c->trailer_queued && c->h.mode != MODE_PINGPONG &&
		   c->hgot == HDR_LEN && c->tx_done == c->tx_total &&
		   server_rx_complete(c) && !(c->h.flags & FL_CLIENT_RST))))
		ev |= EPOLLOUT;
	conn_watch(c, ev);
}

static void
client_connected(struct conn *c)
{
	int err = 0;
	socklen_t el = sizeof(err);

	getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
	if (err != 0 && opt.expect_close && err != ECONNREFUSED) {
		/* accepted, then closed before we looked: what we expect */
		client_on_error(c, err);
		return;
	}
	if (err != 0) {
		c->err = err;
		fail(c, ST_CONNECT, "%s", strerror(err));
		client_finish(c);
		return;
	}
	c->state = CS_RUN;
	c->t_start = now_ns();
	/* --connect-time: the first ping's time runs from before connect() */
	if (opt.mode == MODE_PINGPONG && opt.ping_iters > 0 &&
	    !opt.connect_time)
		c->t_ping = c->t_start;
}

static void
conn_event(struct conn *c, uint32_t ev, uint64_t now)
{
	if (c->state == CS_CONNECTING) {
		client_connected(c);
		if (c->state == CS_DONE)
			return;
	}
	if (ev & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP) && !c->got_eof) {
		if (c->client)
			client_read(c);
		else
			server_read(c);
	} else if (ev & (EPOLLERR | EPOLLHUP) && c->fd >= 0) {
		/* after the EOF, a hang-up means the peer reset or vanished */
		int err = 0;
		socklen_t el = sizeof(err);

		getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
		if (c->client)
			client_on_error(c, err ? err : ECONNRESET);
		else
			server_on_error(c, err ? err : ECONNRESET);
		return;
	}
	if (c->fd >= 0 && c->state == CS_RUN)
		conn_write(c, now);
	if (c->fd >= 0)
		conn_update_watch(c);
}

/* Resets and query waits are timed, not evented. */
static void
conn_tick(struct conn *c, uint64_t now)
{
	int outq = 0;

	if (c->state == CS_DRAIN) {
		if (ioctl(c->fd, SIOCOUTQ, &outq) == 0 && outq > 0 &&
		    since(now, c->t_drain) < DRAIN_MAX_NS)
			return;
		c->t_event = now_ns();
		conn_close_fd(c, true);
		if (c->client) {
			c->state = CS_DONE;
			c->t_end = c->t_event;
		} else {
			c->state = CS_RUN;
			server_finish(c);
		}
		return;
	}
	if (c->state == CS_QUERY) {
		server_query_reply(c, since(now, c->t_query) > QUERY_WAIT_NS);
		if (c->state == CS_RUN) {
			conn_write(c, now);
			conn_update_watch(c);
		}
	}
}

/* --- the programs ---------------------------------------------------- */

static void
usage(void)
{
	fputs("usage: xfer server -l HOST:PORT [-x COUNT] [-q]\n"
	      "       xfer client -c HOST:PORT [-m duplex|stream|pingpong] [-n "
	      "CONNS]\n"
	      "            [-b BYTES] [-B BYTES_BACK] [--half-close] "
	      "[--rst-after N]\n"
	      "            [--server-rst-after N] [--expect-close] [-s SIZE] "
	      "[-i ITER]\n"
	      "            [-w WARMUP] [-t SECONDS] [-T TIMEOUT] [--verify] "
	      "[--seed N]\n"
	      "            [--rst-max-ms MS] [--pause-read MS] [--sndbuf N] "
	      "[--rcvbuf N]\n"
	      "            [--write-size N] [--serial] [-q] [--json]\n"
	      "\n"
	      "duplex (default): -b bytes client->server, -B bytes back "
	      "(default -b),\n"
	      "  full duplex, every byte verified, SHA-256 compared on both "
	      "ends.\n"
	      "  --half-close     client shuts down writing after its data; "
	      "the server\n"
	      "                   sends half its data before the EOF and half "
	      "after\n"
	      "  --rst-after N    client sends N bytes then resets; the server "
	      "must see\n"
	      "                   ECONNRESET within --rst-max-ms (asked "
	      "afterwards)\n"
	      "  --server-rst-after N  the server sends N bytes then resets; "
	      "the client\n"
	      "                   must see ECONNRESET\n"
	      "  --serial         the -n connections one after another, each "
	      "opened when\n"
	      "                   the one before ended (-T bounds them all)\n"
	      "  --expect-close   the connection must be closed (FIN or RST) "
	      "without\n"
	      "                   any byte from the other end (target down, "
	      "denied)\n"
	      "  --pause-read MS  stop reading for MS ms at half the answer\n"
	      "stream: client->server bulk for -t seconds or -b bytes "
	      "(--verify checks)\n"
	      "  --write-size N  at most N bytes per write() (default 256 "
	      "KiB)\n"
	      "pingpong: -s SIZE bytes echoed -i ITER times; RTT percentiles "
	      "in us;\n"
	      "  --gap-us US  idle this long between pings (not counted; "
	      "with -n 1)\n"
	      "  --connect-time  the -n connections one after another, one "
	      "ping each,\n"
	      "               timed from before connect() to the echo "
	      "(-i 1 -w 0)\n"
	      "exit: 0 all verified, 1 a check failed, 2 usage or setup "
	      "error\n",
	      stderr);
	exit(2);
}

static int
listen_on(const char *spec)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int fd, one = 1;

	resolve(spec, &ss, &sl);
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0)
		die("socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0)
		die("bind %s: %s", spec, strerror(errno));
	if (listen(fd, 1024) < 0)
		die("listen %s: %s", spec, strerror(errno));
	return fd;
}

static void
prune_conns(void)
{
	int i, j;

	for (i = j = 0; i < nconns; i++) {
		if (conns[i]->state == CS_DONE && !conns[i]->client)
			conn_free(conns[i]);
		else
			conns[j++] = conns[i];
	}
	nconns = j;
}

static int
run_server(void)
{
	struct epoll_event evs[MAX_EVENTS], e;
	struct conn *c;
	int lfd, n, i, fd, timeout;
	uint64_t now;
	bool ticking;

	lfd = listen_on(opt.addr);
	memset(&e, 0, sizeof(e));
	e.events = EPOLLIN;
	e.data.ptr = NULL;
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, lfd, &e) < 0)
		die("epoll_ctl: %s", strerror(errno));
	fprintf(stderr, "xfer: server listening on %s\n", opt.addr);
	for (;;) {
		ticking = false;
		for (i = 0; i < nconns; i++)
			if (conns[i]->state == CS_DRAIN ||
			    conns[i]->state == CS_QUERY)
				ticking = true;
		timeout = ticking ? 1 : 1000;
		n = epoll_wait(epfd, evs, MAX_EVENTS, timeout);
		if (n < 0 && errno != EINTR)
			die("epoll_wait: %s", strerror(errno));
		now = now_ns();
		for (i = 0; i < n; i++) {
			if (evs[i].data.ptr == NULL) {
				while ((fd = accept4(lfd, NULL, NULL,
						     SOCK_NONBLOCK |
							     SOCK_CLOEXEC)) >=
				       0) {
					set_nonblock_opts(fd);
					c = conn_new(fd, false);
					c->state = CS_HEADER;
					conn_watch(c, EPOLLIN | EPOLLRDHUP);
				}
				continue;
			}
			conn_event(evs[i].data.ptr, evs[i].events, now);
		}
		for (i = 0; i < nconns; i++)
			conn_tick(conns[i], now);
		prune_conns();
		if (opt.exit_after > 0 && server_done >= opt.exit_after) {
			/* let pending queries be answered first */
			for (i = 0; i < nconns; i++)
				if (conns[i]->h.mode == MODE_QUERY)
					break;
			if (i == nconns)
				break;
		}
	}
	printf("server: %ld connections, %ld failed\n", server_done,
	       server_failed);
	return server_failed ? 1 : 0;
}

/* Blocking query: what did the server see on connection id? */
static int
client_query(const struct sockaddr_storage *ss, socklen_t sl, uint64_t id,
	     int *status, int *err, uint64_t *bytes, uint64_t *t_event)
{
	struct hdr h;
	uint8_t b[HDR_LEN], q[REPLY_LEN];
	struct pollfd pfd;
	size_t got = 0;
	ssize_t r;
	int fd, rc = -1;

	fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	memset(&h, 0, sizeof(h));
	h.mode = MODE_QUERY;
	h.aux = id;
	hdr_encode(&h, b);
	if (connect(fd, (const struct sockaddr *)ss, sl) < 0 ||
	    write(fd, b, HDR_LEN) != HDR_LEN)
		goto out;
	pfd.fd = fd;
	pfd.events = POLLIN;
	while (got < REPLY_LEN) {
		if (poll(&pfd, 1, 10000) <= 0)
			goto out;
		r = read(fd, q + got, REPLY_LEN - got);
		if (r <= 0)
			goto out;
		got += (size_t)r;
	}
	if (get32(q) != XFER_MAGIC_REPLY)
		goto out;
	*status = (int)get32(q + 4);
	*err = (int)get32(q + 8);
	*bytes = get64(q + 16);
	*t_event = get64(q + 24);
	rc = 0;
out:
	close(fd);
	return rc;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double
pct_us(double p)
{
	size_t i;

	if (nrtts == 0)
		return 0;
	i = (size_t)(p / 100.0 * (double)(nrtts - 1) + 0.5);
	return (double)rtts[i] / 1000.0;
}

static void
client_print_conn(const struct conn *c, double rst_ms)
{
	char txh[65], rxh[65];

	if ((opt.quiet || opt.mode != MODE_DUPLEX) && c->status == ST_OK)
		return;
	if (opt.mode == MODE_DUPLEX && !opt.expect_close &&
	    !(c->h.flags & (FL_CLIENT_RST | FL_SERVER_RST)) && c->trailer_got) {
		hex(c->tx_digest, 32, txh);
		hex(c->rx_digest, 32, rxh);
		printf("conn %d id=%016" PRIx64 ": sent %" PRIu64
		       " sha256=%s recv %" PRIu64 " sha256=%s: %s%s%s\n",
		       c->idx, c->h.id, c->tx_done, txh, c->rx_done, rxh,
		       status_names[c->status], c->why[0] ? ": " : "", c->why);
		return;
	}
	printf("conn %d id=%016" PRIx64 ": sent %" PRIu64 " recv %" PRIu64
	       ": %s%s%s",
	       c->idx, c->h.id, c->tx_done, c->rx_done, status_names[c->status],
	       c->why[0] ? ": " : "", c->why);
	if (rst_ms >= 0)
		printf(" (reset seen by the other end after %.2f ms)", rst_ms);
	printf("\n");
}

static int
run_client(void)
{
	struct epoll_event evs[MAX_EVENTS];
	struct sockaddr_storage ss;
	socklen_t sl;
	struct conn *c;
	uint64_t t0, t1, now, deadline, sent = 0, recvd = 0, bytes, tev;
	int i, n, active, opened, failed = 0, qst, qerr, timeout;
	double secs, rst_ms, max_rst_ms = -1;
	char b1[32], b2[32];

	resolve(opt.addr, &ss, &sl);
	t0 = now_ns();
	deadline = t0 + (uint64_t)(opt.timeout * NSEC);
	/*
	 * --connect-time, --serial: each connection opens when the one before
	 * ended, in one process (what a loop of clients costs in process
	 * starts under emulation buys no check)
	 */
	for (opened = 0;
	     opened < (opt.connect_time || opt.serial ? 1 : opt.conns);
	     opened++)
		client_open(&ss, sl, opened);
	for (;;) {
		active = 0;
		timeout = 100;
		for (i = 0; i < nconns; i++) {
			if (conns[i]->state != CS_DONE)
				active++;
			if (conns[i]->state == CS_DRAIN)
				timeout = 1;
			if (conns[i]->t_resume)
				timeout = 10;
		}
		if (active == 0 && opened < opt.conns) {
			client_open(&ss, sl, opened++);
			continue;
		}
		if (active == 0)
			break;
		now = now_ns();
		if (now > deadline) {
			for (i = 0; i < nconns; i++) {
				c = conns[i];
				if (c->state == CS_DONE)
					continue;
				fail(c, ST_TIMEOUT,
				     "after %.1f s: sent %" PRIu64 "/%" PRIu64
				     " recv %" PRIu64 "/%" PRIu64 "%s%s",
				     opt.timeout, c->tx_done, c->tx_limit,
				     c->rx_done, c->rx_total,
				     c->trailer_got ? ", trailer in" : "",
				     c->wr_shut ? ", write side shut" : "");
				client_finish(c);
			}
			break;
		}
		if (opt.mode == MODE_STREAM && opt.seconds > 0)
			timeout = 10;
		n = epoll_wait(epfd, evs, MAX_EVENTS, timeout);
		if (n < 0 && errno != EINTR)
			die("epoll_wait: %s", strerror(errno));
		now = now_ns();
		for (i = 0; i < n; i++)
			conn_event(evs[i].data.ptr, evs[i].events, now);
		for (i = 0; i < nconns; i++) {
			c = conns[i];
			if (c->t_resume && now >= c->t_resume) {
				c->t_resume = 0;
				conn_update_watch(c);
			}
			conn_tick(c, now);
			/* a timed stream ends by the clock, not by an event */
			if (opt.mode == MODE_STREAM && opt.seconds > 0 &&
			    c->state == CS_RUN && !c->wr_shut) {
				conn_write(c, now);
				conn_update_watch(c);
			}
		}
	}
	t1 = now_ns();

	for (i = 0; i < nconns; i++) {
		c = conns[i];
		rst_ms = -1;
		if (c->status == ST_RUNNING &&
		    c->h.flags & (FL_CLIENT_RST | FL_SERVER_RST)) {
			if (c->h.flags & FL_SERVER_RST && c->err == 0)
				fail(c, ST_EOF_NOT_RST, "no reset seen");
			else if (client_query(&ss, sl, c->h.id, &qst, &qerr,
					      &bytes, &tev) < 0)
				fail(c, ST_IO_ERROR,
				     "query to the server failed");
			else if (qst != ST_OK)
				fail(c, qst, "server says: %s%s%s",
				     (size_t)qst < sizeof(status_names) /
							     sizeof(status_names
									    [0]) ?
					     status_names[qst] :
					     "?",
				     qerr ? ", " : "",
				     qerr ? strerror(qerr) : "");
			else if (c->h.flags & FL_CLIENT_RST) {
				rst_ms = ((double)tev - (double)c->t_event) /
					 1e6;
				if (bytes > c->tx_done)
					fail(c, ST_EXTRA_DATA,
					     "server got %" PRIu64
					     " bytes of %" PRIu64,
					     bytes, c->tx_done);
				snprintf(c->why, sizeof(c->why),
					 "server got %" PRIu64 " of %" PRIu64
					 " bytes, then %s",
					 bytes, c->tx_done, strerror(qerr));
			} else {
				rst_ms = ((double)c->t_event - (double)tev) /
					 1e6;
				snprintf(c->why, sizeof(c->why),
					 "got %" PRIu64 " of %" PRIu64
					 " bytes, then %s",
					 c->rx_done, bytes, strerror(c->err));
			}
			if (rst_ms > opt.rst_max_ms)
				fail(c, ST_SLOW_RST, "%.1f ms > %.1f ms",
				     rst_ms, opt.rst_max_ms);
			if (rst_ms > max_rst_ms)
				max_rst_ms = rst_ms;
		}
		if (c->status == ST_RUNNING)
			c->status = ST_OK;
		if (c->status != ST_OK)
			failed++;
		sent += c->tx_done;
		recvd += c->rx_done;
		client_print_conn(c, rst_ms);
	}

	secs = (double)(t1 - t0) / 1e9;
	if (opt.mode == MODE_PINGPONG) {
		if (nrtts > 0) /* none when no connection got through */
			qsort(rtts, nrtts, sizeof(*rtts), cmp_u64);
		if (opt.json)
			printf("{\"mode\":\"pingpong\",\"conns\":%d,\"size\":%"
			       "u,"
			       "\"iters\":%u,\"samples\":%zu,\"min_us\":%.2f,"
			       "\"p50_us\":%.2f,\"p99_us\":%.2f,"
			       "\"p999_us\":%.2f,\"max_us\":%.2f,\"failed\":%d}"
			       "\n",
			       opt.conns, opt.ping_size, opt.ping_iters, nrtts,
			       pct_us(0), pct_us(50), pct_us(99), pct_us(99.9),
			       pct_us(100), failed);
		else
			printf("pingpong: %d connections, %u x %u B, rtt us: "
			       "min %.1f p50 %.1f p99 %.1f p99.9 %.1f max %.1f,"
			       " %s\n",
			       opt.conns, opt.ping_iters, opt.ping_size,
			       pct_us(0), pct_us(50), pct_us(99), pct_us(99.9),
			       pct_us(100), failed ? "FAILED" : "all verified");
	} else if (opt.mode == MODE_STREAM) {
		/* throughput counts what the server confirmed it received */
		bytes = 0;
		for (i = 0; i < nconns; i++)
			bytes += conns[i]->trailer_got ? conns[i]->tx_total : 0;
		fmt_bytes(bytes, b1, sizeof(b1));
		if (opt.json)
			printf("{\"mode\":\"stream\",\"conns\":%d,\"bytes\":"
			       "%" PRIu64 ",\"seconds\":%.4f,\"gbit_s\":%.3f,"
			       "\"failed\":%d}\n",
			       opt.conns, bytes, secs,
			       (double)bytes * 8 / secs / 1e9, failed);
		else
			printf("stream: %d connections, %s received by the "
			       "server in %.2f s, %.2f Gbit/s, %s\n",
			       opt.conns, b1, secs,
			       (double)bytes * 8 / secs / 1e9,
			       failed	  ? "FAILED" :
			       opt.verify ? "all verified" :
					    "not verified");
	} else if (opt.expect_close) {
		printf("%d connections, %s\n", opt.conns,
		       failed ? "FAILED" :
				"all closed by the other end "
				"without data");
	} else if (opt.rst_after >= 0 || opt.server_rst_after >= 0) {
		printf("%d connections, %s reset propagated%s", opt.conns,
		       opt.rst_after >= 0 ? "client" : "server",
		       failed ? ": FAILED" : ", all verified");
		if (max_rst_ms >= 0)
			printf(" (slowest %.2f ms)", max_rst_ms);
		printf("\n");
	} else {
		fmt_bytes(opt.c2s * (uint64_t)opt.conns, b1, sizeof(b1));
		fmt_bytes(opt.s2c * (uint64_t)opt.conns, b2, sizeof(b2));
		if (opt.c2s == opt.s2c)
			printf("%d connections, %s each way%s, %s, %.2f s, "
			       "%.2f Gbit/s each way\n",
			       opt.conns, b1,
			       opt.half_close ? " with half-close" : "",
			       failed ? "FAILED" : "all verified", secs,
			       (double)sent * 8 / secs / 1e9);
		else
			printf("%d connections, %s out and %s back%s, %s, "
			       "%.2f s, %.2f/%.2f Gbit/s\n",
			       opt.conns, b1, b2,
			       opt.half_close ? " with half-close" : "",
			       failed ? "FAILED" : "all verified", secs,
			       (double)sent * 8 / secs / 1e9,
			       (double)recvd * 8 / secs / 1e9);
		if (opt.json)
			printf("{\"mode\":\"duplex\",\"conns\":%d,\"sent\":"
			       "%" PRIu64 ",\"received\":%" PRIu64
			       ",\"seconds\":"
			       "%.4f,\"failed\":%d}\n",
			       opt.conns, sent, recvd, secs, failed);
	}
	if (failed)
		printf("%d of %d connections FAILED\n", failed, opt.conns);
	fflush(stdout);
	return failed ? 1 : 0;
}

enum long_only {
	OPT_HALF_CLOSE = 256,
	OPT_RST_AFTER,
	OPT_SERVER_RST_AFTER,
	OPT_EXPECT_CLOSE,
	OPT_VERIFY,
	OPT_SEED,
	OPT_JSON,
	OPT_RST_MAX_MS,
	OPT_SNDBUF,
	OPT_RCVBUF,
	OPT_PAUSE_READ,
	OPT_GAP_US,
	OPT_WRITE_SIZE,
	OPT_CONNECT_TIME,
	OPT_SERIAL,
};

static const struct option longopts[] = {
	{"listen", required_argument, NULL, 'l'},
	{"connect", required_argument, NULL, 'c'},
	{"mode", required_argument, NULL, 'm'},
	{"conns", required_argument, NULL, 'n'},
	{"bytes", required_argument, NULL, 'b'},
	{"bytes-back", required_argument, NULL, 'B'},
	{"size", required_argument, NULL, 's'},
	{"iterations", required_argument, NULL, 'i'},
	{"warmup", required_argument, NULL, 'w'},
	{"time", required_argument, NULL, 't'},
	{"timeout", required_argument, NULL, 'T'},
	{"exit-after", required_argument, NULL, 'x'},
	{"quiet", no_argument, NULL, 'q'},
	{"half-close", no_argument, NULL, OPT_HALF_CLOSE},
	{"rst-after", required_argument, NULL, OPT_RST_AFTER},
	{"server-rst-after", required_argument, NULL, OPT_SERVER_RST_AFTER},
	{"expect-close", no_argument, NULL, OPT_EXPECT_CLOSE},
	{"verify", no_argument, NULL, OPT_VERIFY},
	{"seed", required_argument, NULL, OPT_SEED},
	{"json", no_argument, NULL, OPT_JSON},
	{"rst-max-ms", required_argument, NULL, OPT_RST_MAX_MS},
	{"sndbuf", required_argument, NULL, OPT_SNDBUF},
	{"rcvbuf", required_argument, NULL, OPT_RCVBUF},
	{"pause-read", required_argument, NULL, OPT_PAUSE_READ},
	{"gap-us", required_argument, NULL, OPT_GAP_US},
	{"write-size", required_argument, NULL, OPT_WRITE_SIZE},
	{"connect-time", no_argument, NULL, OPT_CONNECT_TIME},
	{"serial", no_argument, NULL, OPT_SERIAL},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

int
main(int argc, char **argv)
{
	bool server;
	int ch;

	if (argc < 2)
		usage();
	if (strcmp(argv[1], "server") == 0)
		server = true;
	else if (strcmp(argv[1], "client") == 0)
		server = false;
	else
		usage();
	opt.mode = MODE_DUPLEX;
	opt.conns = 1;
	opt.c2s = 1 << 20;
	opt.rst_after = opt.server_rst_after = -1;
	opt.ping_size = 64;
	opt.ping_iters = 10000;
	opt.warmup = (uint32_t)-1;
	opt.timeout = 300;
	opt.rst_max_ms = 1000;
	opt.seed = (uint64_t)now_ns() ^ ((uint64_t)getpid() << 40);
	optind = 2;
	while ((ch = getopt_long(argc, argv, "l:c:m:n:b:B:s:i:w:t:T:x:qh",
				 longopts, NULL)) != -1) {
		switch (ch) {
		case 'l':
			opt.addr = optarg;
			break;
		case 'c':
			opt.addr = optarg;
			break;
		case 'm':
			if (strcmp(optarg, "duplex") == 0)
				opt.mode = MODE_DUPLEX;
			else if (strcmp(optarg, "stream") == 0 ||
				 strcmp(optarg, "bulk") == 0)
				opt.mode = MODE_STREAM;
			else if (strcmp(optarg, "pingpong") == 0)
				opt.mode = MODE_PINGPONG;
			else
				usage();
			break;
		case 'n':
			opt.conns = atoi(optarg);
			break;
		case 'b':
			opt.c2s = parse_size(optarg);
			break;
		case 'B':
			opt.s2c = parse_size(optarg);
			opt.s2c_set = true;
			break;
		case 's':
			opt.ping_size = (uint32_t)parse_size(optarg);
			break;
		case 'i':
			opt.ping_iters = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'w':
			opt.warmup = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 't':
			opt.seconds = atof(optarg);
			break;
		case 'T':
			opt.timeout = atof(optarg);
			break;
		case 'x':
			opt.exit_after = atol(optarg);
			break;
		case 'q':
			opt.quiet = true;
			break;
		case OPT_HALF_CLOSE:
			opt.half_close = true;
			break;
		case OPT_RST_AFTER:
			opt.rst_after = (long long)parse_size(optarg);
			break;
		case OPT_SERVER_RST_AFTER:
			opt.server_rst_after = (long long)parse_size(optarg);
			break;
		case OPT_EXPECT_CLOSE:
			opt.expect_close = true;
			break;
		case OPT_VERIFY:
			opt.verify = true;
			break;
		case OPT_SEED:
			opt.seed = strtoull(optarg, NULL, 0);
			break;
		case OPT_JSON:
			opt.json = true;
			break;
		case OPT_RST_MAX_MS:
			opt.rst_max_ms = atof(optarg);
			break;
		case OPT_SNDBUF:
			opt.sndbuf = (int)parse_size(optarg);
			break;
		case OPT_RCVBUF:
			opt.rcvbuf = (int)parse_size(optarg);
			break;
		case OPT_PAUSE_READ:
			opt.pause_ms = atof(optarg);
			break;
		case OPT_GAP_US:
			opt.gap_us = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case OPT_CONNECT_TIME:
			opt.connect_time = true;
			opt.mode = MODE_PINGPONG;
			break;
		case OPT_SERIAL:
			opt.serial = true;
			break;
		case OPT_WRITE_SIZE:
			opt.write_size = (uint32_t)parse_size(optarg);
			if (opt.write_size == 0 || opt.write_size > CHUNK)
				die("--write-size must be 1..%d", CHUNK);
			break;
		default:
			usage();
		}
	}
	if (optind != argc || opt.addr == NULL || opt.conns < 1)
		usage();
	if (!opt.s2c_set)
		opt.s2c = opt.c2s;
	if (opt.connect_time) {
		if (opt.mode != MODE_PINGPONG)
			die("--connect-time is a pingpong");
		opt.ping_iters = 1;
		opt.warmup = 0;
	}
	if (opt.warmup == (uint32_t)-1)
		opt.warmup =
			opt.ping_iters / 10 < 100 ? opt.ping_iters / 10 : 100;
	if (opt.warmup >= opt.ping_iters && opt.ping_iters > 0)
		opt.warmup = 0;
	if (opt.ping_size == 0 || opt.ping_size > CHUNK)
		die("-s must be 1..%d", CHUNK);
	if (opt.expect_close)
		opt.s2c = 0;
	if ((opt.rst_after >= 0) + (opt.server_rst_after >= 0) +
			    opt.expect_close + opt.half_close >
		    1 ||
	    (opt.mode != MODE_DUPLEX &&
	     (opt.rst_after >= 0 || opt.server_rst_after >= 0 ||
	      opt.expect_close || opt.half_close)))
		die("--half-close, --rst-after, --server-rst-after and "
		    "--expect-close exclude each other and need -m duplex");
	signal(SIGPIPE, SIG_IGN);
	static_data = xmalloc(CHUNK);
	prng_fill(opt.seed, 0, static_data, CHUNK);
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		die("epoll_create1: %s", strerror(errno));
	setvbuf(stdout, NULL, _IOLBF, 0);
	return server ? run_server() : run_client();
}
