// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target for the fallback handshake of fallback.c, both ends of it.
 * The first input byte says what the rest is (mode = byte % 3):
 *
 *   0  one message for the codec: HELLO and RESULT must re-encode to the
 *      same bytes; CHALLENGE and PROOF must point inside the input.
 *   1  the answers of a lying peer port to a rule's fallback connection
 *      (fallback_connect: the client side in open mode).
 *   2  the same to a connection over RDMA that resumes over TCP
 *      (fallback_resume, from resume.c: the client side in resume mode).
 *
 * Modes 1 and 2 drive daemon A in a real worker thread, as
 * tests/unit/check_session_rdma.c does (impostor_gets_nothing): a client
 * connects to one of A's rules, and this harness is the peer port.  A's
 * peers: b and d with a key (the harness knows it, so it can answer a
 * CHALLENGE correctly or not), c without one; mode 1 reaches d or c
 * (their rules' exports are too long for CONN_OPEN, so they take the
 * fallback at once), mode 2 b, whose groups nothing else sets up.  In
 * mode 2 the connection first relays over a link group to "daemon" b (a
 * server-side lgr_ctx on A's event base, over loopdev), the group ends
 * under A, the harness declines the next group's CLC, and A resumes over
 * TCP with a HELLO that names the connection.
 *
 * Then the input is the peer's side of the handshake: a byte of flags
 * (bit 0: in mode 1 the keyed peer d, else c; bit 1: end with a reset
 * instead of a FIN) and records, op & 7:
 *
 *   0  CHALLENGE with the right MAC over A's HELLO (nonce: 1 byte, spread)
 *   1  CHALLENGE, nonce and MAC raw (64 bytes)
 *   2  CHALLENGE with the key's MAC, but the label a PROOF uses (a
 *      reflection) or, op & 8, over another HELLO
 *   3  RESULT: code (1 byte), op & 8: a reserved byte set
 *   4  RESUMED: the HELLO's offsets, swapped as a peer answers, moved by
 *      two signed deltas (2 bytes each)
 *   5  RESUMED with raw offsets (16 bytes)
 *   6  raw bytes: a length byte, then that many (garbage, a cut message)
 *   7  flush: what is written so far goes, and the harness waits a moment
 *      for A's answer (its PROOF) before writing the rest
 *
 * What A must do (the rule of docs/protocol.md, "nothing from a peer is
 * believed before its proof"): it starts relaying (mode 1) or takes the
 * RESUMED (mode 2: resume.c's resume_tcp_through) exactly when the
 * stream, read as whole messages, has, with a key, a CHALLENGE whose MAC
 * verifies, then a RESULT 0, then (mode 2) a RESUMED; without a key a
 * RESULT 0 and no CHALLENGE.  fuzz_model() reads the stream so; the
 * harness aborts when A believed what it should not, and (ending with a
 * FIN, where no byte is lost) when it refused what it should take.
 * fuzz_decoded is 1 when A believed, so the corpus's seed-ok-* and
 * seed-bad-* names hold A to its answer in make check.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "smcproxyd.h"
#include "lgr.h"
#include "clc_wire.h"
#include "dev.h"
#include "fallback_wire.h"
#include "llc_wire.h"
#include "fuzz.h"
#include "../unit/harness.h"

#define FUZZ_WAIT_MS 5000 /* an answer from A; far more than it takes */
#define FUZZ_FLUSH_MS 20  /* record 7: A's PROOF */
#define FUZZ_SCRIPT_MAX 4096
/* rules o and u never try RDMA: their peers' device is none of A's */
#define FUZZ_NO_DEVICE "nodev"

/* abort, saying where: the compiler merges the calls of abort() */
#define FUZZ_FAIL()                                                        \
	do {                                                               \
		fprintf(stderr, "fuzz_fallback.c:%d: failed\n", __LINE__); \
		abort();                                                   \
	} while (0)

int fuzz_decoded;

enum fuzz_mode { FUZZ_CODEC, FUZZ_OPEN, FUZZ_RESUME };

/* A: the daemon under test.  b, d: its keyed peers; c: one without. */
static struct conf *conf_a, *conf_b;
static struct worker *w;
static struct lgr_ctx *ctx_b;
static struct stats st_b;
static struct auth_limit al_b;
static struct dev *dev_a, *dev_b;
/* listening: the peer ports of b, c and d */
static int port_b = -1, port_c = -1, port_d = -1;
static int rule_o, rule_u, rule_r; /* A's rules: open d, open c, RDMA b */
static char key_path[64];
static unsigned char key[32];

/* b's side of the connection over RDMA (mode 2), one per input */
static struct buf_pool *b_pool;
static struct buf *b_rmb;
static struct lgr_conn b_conn;

/* b takes the first CONN_OPEN of the input into an RMB element of its own. */
static void
b_llc_rx(struct lgr_link *link, const struct llc_info *m, void *arg)
{
	const struct dev_mr *mr;
	struct llc_info a;

	if (m->type != LLC_CONN_OPEN || b_conn.lgr != NULL)
		return;
	if (b_pool == NULL) {
		b_pool = buf_pool_new(NULL, NULL, 0);
		if (b_pool == NULL ||
		    buf_get(b_pool, BUF_RMB, BUF_SIZE_MIN, &b_rmb) != 0)
			FUZZ_FAIL();
	}
	mr = buf_mr(b_rmb, link->dev->ops, link->pd);
	if (mr == NULL)
		FUZZ_FAIL();
	b_conn.token = 0x99;
	if (lgr_conn_add(link->lgr, &b_conn) != 0)
		FUZZ_FAIL();
	memset(&a, 0, sizeof(a));
	a.type = LLC_CONN_ACCEPT;
	a.flags = LLC_FLAG_RESP;
	a.conn_accept.opener_token = m->conn_open.token;
	a.conn_accept.token = b_conn.token;
	a.conn_accept.rmb_rkey = mr->rkey;
	a.conn_accept.rmb_vaddr = b_rmb->iova;
	memset(a.conn_accept.resume_id, 0x5a, LLC_RESUME_ID_LEN);
	(void)llc_send(link, &a, NULL, NULL);
}

static const struct lgr_data_ops b_ops = {.llc_rx = b_llc_rx};

static int
fuzz_listen(int *port)
{
	int fd = loopnet_listen(port);

	if (fd < 0)
		FUZZ_FAIL();
	return fd;
}

static int
fuzz_connect(int port)
{
	int fd = loopnet_connect(port);

	if (fd < 0)
		FUZZ_FAIL();
	return fd;
}

/*
 * The next connection to peer port lfd within FUZZ_WAIT_MS whose first
 * bytes are CLC's (clc) or the fallback's; others (a group A sets up
 * beside a fallback connection) are closed.  -1 if none came.
 */
static int
fuzz_peer_accept(int lfd, bool clc)
{
	return harness_accept(lfd, FUZZ_WAIT_MS,
			      clc ? CLC_EYECATCHER : FB_EYECATCHER);
}

/* Close whatever waits on the peer ports (retries of earlier inputs). */
static void
fuzz_peer_drain(void)
{
	int fd;

	while ((fd = accept4(port_b, NULL, NULL, SOCK_CLOEXEC)) >= 0)
		close(fd);
	while ((fd = accept4(port_c, NULL, NULL, SOCK_CLOEXEC)) >= 0)
		close(fd);
	while ((fd = accept4(port_d, NULL, NULL, SOCK_CLOEXEC)) >= 0)
		close(fd);
}

/* One whole fallback message from fd within FUZZ_WAIT_MS; its length. */
static size_t
fuzz_msg_read(int fd, unsigned char *buf)
{
	struct pollfd p = {fd, POLLIN, 0};
	size_t len = 0;
	int i, rc;

	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	for (i = 0; i < FUZZ_WAIT_MS / 10; i++) {
		rc = fallback_msg_read(fd, buf, &len);
		if (rc == 1)
			return len;
		if (rc < 0)
			FUZZ_FAIL();
		(void)poll(&p, 1, 10);
	}
	FUZZ_FAIL();
}

/* ---- on A's worker ---- */

static void
fuzz_setup_cb(struct worker *wk, void *arg)
{
	struct lgr_ctx *ctx_a = worker_lgr(wk);

	/* a declined group must not put b on the fallback for the next input */
	ctx_a->t.backoff_ms = 0;
	dev_a = loopdev_new(worker_base(wk));
	dev_b = loopdev_new(worker_base(wk));
	if (dev_a == NULL || dev_b == NULL ||
	    lgr_ctx_add_dev(ctx_a, harness_dev_ops(), dev_a, "loopa") != 0)
		FUZZ_FAIL();
	auth_limit_init(&al_b);
	ctx_b = lgr_ctx_new(worker_base(wk), conf_b, &st_b, &al_b, NULL);
	if (ctx_b == NULL ||
	    lgr_ctx_add_dev(ctx_b, &loopdev_ops, dev_b, "loopb") != 0)
		FUZZ_FAIL();
	lgr_ctx_set_ops(ctx_b, &b_ops, NULL);
}

static void
fuzz_serve_cb(struct worker *wk, void *arg)
{
	if (clc_serve(ctx_b, *(int *)arg, NULL, NULL, 0) != 0)
		FUZZ_FAIL();
}

/* A's group ends as if b had gone (no DELETE_LINK to b). */
static void
fuzz_terminate_cb(struct worker *wk, void *arg)
{
	struct lgr *lgr = TAILQ_FIRST(&worker_lgr(wk)->lgrs);

	if (lgr == NULL)
		FUZZ_FAIL();
	lgr_terminate(lgr, LLC_DEL_LOST_PATH, false, true);
}

/* The input is over: its connection and every group go. */
static void
fuzz_close_cb(struct worker *wk, void *arg)
{
	struct lgr *lgr, *next;

	session_close_all(wk, SESSION_SHUTDOWN);
	lgr_conn_del(&b_conn);
	memset(&b_conn, 0, sizeof(b_conn));
	/* while b's group and its PD are still there */
	if (b_rmb != NULL)
		buf_mr_drop(b_rmb);
	TAILQ_FOREACH_SAFE(lgr, &worker_lgr(wk)->lgrs, entry, next)
		lgr_terminate(lgr, LLC_DEL_PROG_INIT_TERM, false, true);
	TAILQ_FOREACH_SAFE(lgr, &ctx_b->lgrs, entry, next)
		lgr_terminate(lgr, LLC_DEL_PROG_INIT_TERM, false, true);
}

/* The input's session is gone (groups end in their own time). */
static void
fuzz_gone_cb(struct worker *wk, void *arg)
{
	*(bool *)arg = worker_sessions(wk) == NULL;
}

/* Both contexts are without groups: their devices may go. */
static void
fuzz_groups_cb(struct worker *wk, void *arg)
{
	*(bool *)arg =
		TAILQ_EMPTY(&worker_lgr(wk)->lgrs) && TAILQ_EMPTY(&ctx_b->lgrs);
}

/* The devices go with the harness, not with A's context. */
static void
fuzz_devs_cb(struct worker *wk, void *arg)
{
	if (b_pool != NULL) {
		buf_put(b_rmb);
		buf_pool_free(b_pool);
		b_pool = NULL;
	}
	lgr_ctx_free(ctx_b);
	ctx_b = NULL;
	loopdev_free(dev_a);
	loopdev_free(dev_b);
	harness_devs_gone(wk);
}

/* What A counted of the handshakes' outcomes. */
struct fuzz_counts {
	bool gone;	  /* the session closed */
	uint64_t failed;  /* clnt_hshake_err_cnt: fb_client_fail (or CLC) */
	uint64_t relayed; /* conns_fallback */
	uint64_t resumed; /* conns_resumed_tcp */
	uint64_t offsets; /* resume_failed_protocol: RESUMED taken, refused */
};

static void
fuzz_counts_cb(struct worker *wk, void *arg)
{
	struct fuzz_counts *c = arg;
	struct stats *st = worker_stats(wk);

	c->gone = worker_sessions(wk) == NULL;
	c->failed = stats_read(st, STAT_clnt_hshake_err_cnt);
	c->relayed = stats_read(st, STAT_conns_fallback);
	c->resumed = stats_read(st, STAT_conns_resumed_tcp);
	c->offsets = stats_read(st, STAT_resume_failed_protocol);
}

static bool
fuzz_wait_state(int want)
{
	return harness_wait_session_state(w, want, FUZZ_WAIT_MS);
}

/* ---- the world, made on the first input that needs it ---- */

static void
fuzz_world_free(void)
{
	harness_stop(w, fuzz_close_cb, fuzz_groups_cb, fuzz_devs_cb,
		     FUZZ_WAIT_MS);
	close(port_b);
	close(port_c);
	close(port_d);
	conf_drop(conf_a);
	conf_drop(conf_b);
	unlink(key_path);
}

static void
fuzz_world(void)
{
	static bool made;
	char text[2048];
	int fd, pb, pc, pd;

	if (made)
		return;
	made = true;
	log_init(1, getenv("FUZZ_DEBUG") ? LOG_LEVEL_DEBUG : LOG_LEVEL_ERR);
	snprintf(key_path, sizeof(key_path), "/tmp/fuzz_fallback.XXXXXX");
	fd = mkstemp(key_path);
	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (unsigned char)(0xa5 ^ i);
	if (fd < 0 || write(fd, key, sizeof(key)) != (ssize_t)sizeof(key) ||
	    fchmod(fd, 0600) != 0)
		FUZZ_FAIL();
	close(fd);
	port_b = fuzz_listen(&pb);
	port_c = fuzz_listen(&pc);
	port_d = fuzz_listen(&pd);
	close(fuzz_listen(&rule_o));
	close(fuzz_listen(&rule_u));
	close(fuzz_listen(&rule_r));
	snprintf(text, sizeof(text),
		 "smcproxyd: { name = \"a\"; workers = 1; };\n"
		 "peers = ( { name = \"b\"; address = \"127.0.0.1:%d\";"
		 " key_file = \"%s\"; any_source = true; },\n"
		 " { name = \"c\"; address = \"127.0.0.1:%d\";"
		 " insecure = true; any_source = true;"
		 " device = \"" FUZZ_NO_DEVICE "\"; },\n"
		 " { name = \"d\"; address = \"127.0.0.1:%d\";"
		 " key_file = \"%s\"; any_source = true;"
		 " device = \"" FUZZ_NO_DEVICE "\"; } );\n"
		 "rules = ( { name = \"o\"; listen = \"127.0.0.1:%d\";"
		 " peer = \"d\"; export = \"e\"; },\n"
		 " { name = \"u\"; listen = \"127.0.0.1:%d\";"
		 " peer = \"c\"; export = \"e\"; },\n"
		 " { name = \"r\"; listen = \"127.0.0.1:%d\";"
		 " peer = \"b\"; export = \"e\"; } );\n"
		 "rdma: { max_links = 1; };\n",
		 pb, key_path, pc, pd, key_path, rule_o, rule_u, rule_r);
	conf_a = conf_load_string(text, "a.conf", stderr);
	snprintf(text, sizeof(text),
		 "smcproxyd: { name = \"b\"; workers = 1; };\n"
		 "peers = ( { name = \"a\"; address = \"127.0.0.1:1\";"
		 " key_file = \"%s\"; any_source = true; } );\n",
		 key_path);
	conf_b = conf_load_string(text, "b.conf", stderr);
	if (conf_a == NULL || conf_b == NULL)
		FUZZ_FAIL();
	conf_hold(conf_a);
	conf_hold(conf_b);
	if (worker_start_all(conf_a) != 0)
		FUZZ_FAIL();
	w = worker_get(0);
	worker_call(w, fuzz_setup_cb, NULL);
	atexit(fuzz_world_free);
}

/* ---- the peer's answers ---- */

static void
fuzz_challenge(unsigned char *out, const uint8_t nonce[32],
	       const uint8_t mac[32])
{
	struct fb_challenge ch;

	memset(&ch, 0, sizeof(ch));
	memcpy(ch.hdr.eyecatcher, FB_EYECATCHER, 4);
	ch.hdr.version = FB_VERSION;
	ch.hdr.type = FB_CHALLENGE;
	ch.hdr.length = htons(sizeof(ch));
	memcpy(ch.nonce, nonce, sizeof(ch.nonce));
	memcpy(ch.mac, mac, sizeof(ch.mac));
	memcpy(out, &ch, sizeof(ch));
}

/*
 * Whether a client that keeps the rule may believe the peer after the
 * stream out (len bytes) answered hello: its whole messages, up to the
 * first that ends the handshake, as fb_client_* reads them.
 */
static bool
fuzz_model(const unsigned char *out, size_t len, const unsigned char *hello,
	   size_t hello_len, bool keyed, bool resume)
{
	unsigned char mac[AUTH_MAC_LEN];
	const uint8_t *nonce, *their;
	bool verified = false, challenged = false, accepted = false;
	size_t off = 0;
	uint16_t length;
	uint64_t rx, fin;
	uint32_t code;
	uint8_t type;

	while (len - off >= sizeof(struct fb_hdr)) {
		if (fb_hdr_check(out + off, len - off, &type, &length) ||
		    length > len - off)
			return false;
		switch (type) {
		case FB_CHALLENGE:
			if (!keyed || challenged ||
			    fb_challenge_decode(out + off, length, &nonce,
						&their))
				return false;
			challenged = true;
			auth_mac(key, sizeof(key), "s", hello, hello_len, nonce,
				 32, mac);
			if (!auth_mac_equal(mac, their))
				return false;
			verified = true;
			break;
		case FB_RESULT:
			if (accepted ||
			    fb_result_decode(out + off, length, &code) ||
			    code != 0 || (keyed && !verified))
				return false;
			accepted = true;
			if (!resume)
				return true;
			break;
		case FB_RESUMED:
			return resume && accepted &&
			       fb_resumed_decode(out + off, length, &rx,
						 &fin) == 0;
		default:
			return false;
		}
		off += length;
	}
	return false;
}

/*
 * Write what is gathered in out to fd, then give A FUZZ_FLUSH_MS to
 * answer (what it sends is read and dropped).
 */
static void
fuzz_flush(int fd, const unsigned char *out, size_t *sent, size_t len)
{
	struct pollfd p = {fd, POLLIN, 0};
	unsigned char junk[256];

	if (len > *sent && send(fd, out + *sent, len - *sent, MSG_NOSIGNAL) !=
				   (ssize_t)(len - *sent)) {
		*sent = len; /* A closed: the rest cannot matter */
		return;
	}
	*sent = len;
	if (poll(&p, 1, FUZZ_FLUSH_MS) == 1)
		(void)recv(fd, junk, sizeof(junk), MSG_DONTWAIT);
}

/*
 * Play the peer on fd, which brought A's HELLO (hello_len bytes): the
 * records of data, then the end.  Returns whether the rule lets A
 * believe what was written.
 */
static bool
fuzz_answer(int fd, const unsigned char *hello, size_t hello_len,
	    const uint8_t *data, size_t size, bool keyed, bool resume,
	    bool reset)
{
	static unsigned char out[FUZZ_SCRIPT_MAX];
	unsigned char nonce[32], mac[AUTH_MAC_LEN], other[FB_MSG_MAX];
	struct fb_hello_info hi;
	struct linger lg = {1, 0};
	size_t len = 0, sent = 0, n;
	uint64_t rx, fin;
	bool allowed;
	uint8_t op;

	if (fb_hello_decode(hello, hello_len, &hi) != 0 ||
	    !(hi.flags & FB_FLAG_RESUME) != !resume ||
	    !(hi.flags & FB_FLAG_AUTH) != !keyed ||
	    !(hi.flags & FB_FLAG_ORIGIN) != resume)
		FUZZ_FAIL();
	while (size > 0 && len + FB_MSG_MAX + 256 < sizeof(out)) {
		op = *data++;
		size--;
		switch (op & 7) {
		case 0:
			memset(nonce, size > 0 ? data[0] : 0, sizeof(nonce));
			nonce[0] = op;
			auth_mac(key, sizeof(key), "s", hello, hello_len, nonce,
				 32, mac);
			fuzz_challenge(out + len, nonce, mac);
			len += sizeof(struct fb_challenge);
			n = 1;
			break;
		case 1:
			memset(other, 0, 64);
			n = size < 64 ? size : 64;
			memcpy(other, data, n);
			fuzz_challenge(out + len, other, other + 32);
			len += sizeof(struct fb_challenge);
			break;
		case 2:
			memset(nonce, size > 0 ? data[0] : 0, sizeof(nonce));
			if (op & 8) {
				/* a HELLO of another connection */
				memcpy(other, hello, hello_len);
				other[8] ^= 1;
				auth_mac(key, sizeof(key), "s", other,
					 hello_len, nonce, 32, mac);
			} else {
				auth_mac(key, sizeof(key), "c", hello,
					 hello_len, nonce, 32, mac);
			}
			fuzz_challenge(out + len, nonce, mac);
			len += sizeof(struct fb_challenge);
			n = 1;
			break;
		case 3:
			len += fb_result_encode(out + len,
						size > 0 ? data[0] : 0);
			if (op & 8)
				out[len - 1] = 1;
			n = 1;
			break;
		case 4:
			rx = hi.tx_fin;
			fin = hi.rx_off;
			if (size >= 4) {
				rx += (uint64_t)(int64_t)(int16_t)(data[0] << 8 |
								   data[1]);
				fin += (uint64_t)(int64_t)(int16_t)(data[2] << 8 |
								    data[3]);
			}
			len += fb_resumed_encode(out + len, rx, fin);
			n = 4;
			break;
		case 5:
			len += fb_resumed_encode(out + len, 0, 0);
			n = size < 16 ? size : 16;
			memcpy(out + len - 16, data, n);
			break;
		case 6:
			n = size > 0 ? data[0] : 0;
			if (n > size - (size > 0))
				n = size - (size > 0);
			memcpy(out + len, data + 1, n);
			len += n;
			n++;
			break;
		default:
			fuzz_flush(fd, out, &sent, len);
			n = 0;
			break;
		}
		if (n > size)
			n = size;
		data += n;
		size -= n;
	}
	allowed = fuzz_model(out, len, hello, hello_len, keyed, resume);
	if (len > sent)
		(void)send(fd, out + sent, len - sent, MSG_NOSIGNAL);
	if (reset)
		(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	else
		shutdown(fd, SHUT_WR);
	return allowed;
}

/*
 * Mode 2's way to the resume HELLO: the client relays over a group to
 * b, the group ends, the next one is declined.  The peer connection
 * that brought the HELLO (into msg), or -1 when A did not get so far.
 */
static int
fuzz_resume_hello(int client, unsigned char *msg, size_t *len)
{
	unsigned char buf[4096];
	struct clc_decline_info d;
	struct pollfd p;
	ssize_t got;
	int fd;

	fd = fuzz_peer_accept(port_b, true);
	if (fd < 0)
		FUZZ_FAIL();
	worker_call(w, fuzz_serve_cb, &fd);
	if (!fuzz_wait_state(SESSION_RELAY))
		return -1;
	if (write(client, "before", 6) != 6)
		FUZZ_FAIL();
	worker_call(w, fuzz_terminate_cb, NULL);
	if (!fuzz_wait_state(SESSION_RESUMING))
		return -1;
	fd = fuzz_peer_accept(port_b, true);
	if (fd < 0)
		FUZZ_FAIL();
	p.fd = fd;
	p.events = POLLIN;
	if (poll(&p, 1, FUZZ_WAIT_MS) != 1 ||
	    recv(fd, buf, sizeof(buf), MSG_DONTWAIT) <= 0)
		FUZZ_FAIL();
	memset(&d, 0, sizeof(d));
	d.diagnosis = CLC_DECL_NOSMCRDEV;
	got = clc_decline_encode(buf, sizeof(buf), &d);
	if (got <= 0 || write(fd, buf, (size_t)got) != got)
		FUZZ_FAIL();
	close(fd);
	fd = fuzz_peer_accept(port_b, false);
	if (fd < 0)
		FUZZ_FAIL();
	*len = fuzz_msg_read(fd, msg);
	return fd;
}

/*
 * Whether A's handshake is over: in mode 1 the connection relays or was
 * closed (clnt_hshake_err_cnt also counts the CLC of the group A sets up
 * beside it); in mode 2 fb_client_fail counted, or the RESUMED was taken
 * (resumed over TCP, or its offsets refused).
 */
static bool
fuzz_done(enum fuzz_mode mode, const struct fuzz_counts *before,
	  const struct fuzz_counts *after)
{
	if (mode == FUZZ_OPEN)
		return after->relayed != before->relayed || after->gone;
	return after->failed != before->failed ||
	       after->resumed != before->resumed ||
	       after->offsets != before->offsets;
}

/* Modes 1 and 2: A's client side against the peer data describes. */
static void
fuzz_client(enum fuzz_mode mode, const uint8_t *data, size_t size)
{
	unsigned char hello[FB_MSG_MAX];
	struct fuzz_counts before, after;
	uint8_t flags = size > 0 ? data[0] : 0;
	bool keyed = mode == FUZZ_RESUME || (flags & 1);
	bool reset = flags & 2, allowed, believed, gone = false;
	size_t hello_len = 0;
	int client, fd, i;

	fuzz_world();
	data += size > 0;
	size -= size > 0;
	fuzz_peer_drain();
	if (mode == FUZZ_OPEN) {
		client = fuzz_connect(keyed ? rule_o : rule_u);
		fd = fuzz_peer_accept(keyed ? port_d : port_c, false);
		if (fd < 0)
			FUZZ_FAIL();
		hello_len = fuzz_msg_read(fd, hello);
	} else {
		client = fuzz_connect(rule_r);
		fd = fuzz_resume_hello(client, hello, &hello_len);
	}
	if (fd >= 0) {
		/* from here (the group's CLC is done) */
		worker_call(w, fuzz_counts_cb, &before);
		allowed = fuzz_answer(fd, hello, hello_len, data, size, keyed,
				      mode == FUZZ_RESUME, reset);
		if (reset) {
			close(fd); /* with SO_LINGER 0: a reset */
			fd = -1;
		}
		for (i = 0; i < FUZZ_WAIT_MS; i++) {
			worker_call(w, fuzz_counts_cb, &after);
			if (fuzz_done(mode, &before, &after))
				break;
			usleep(1000);
		}
		if (i == FUZZ_WAIT_MS)
			FUZZ_FAIL(); /* the handshake neither failed nor ended */
		believed = mode == FUZZ_OPEN ? after.relayed != before.relayed :
					       after.failed == before.failed;
		/* the rule: nothing believed before the proof */
		if (believed && !allowed)
			FUZZ_FAIL();
		/* and what keeps it is taken (a reset may lose the bytes) */
		if (!believed && allowed && !reset)
			FUZZ_FAIL();
		fuzz_decoded = believed;
		if (fd >= 0)
			close(fd);
	}
	close(client);
	worker_call(w, fuzz_close_cb, NULL);
	for (i = 0; i < FUZZ_WAIT_MS && !gone; i++) {
		worker_call(w, fuzz_gone_cb, &gone);
		if (!gone)
			usleep(1000);
	}
	if (!gone)
		FUZZ_FAIL();
}

/* Mode 0: one message for the codec. */
static void
fuzz_codec(const uint8_t *data, size_t size)
{
	uint8_t re[FB_MSG_MAX];
	struct fb_hello_info hi;
	const uint8_t *nonce, *mac;
	uint16_t length;
	uint64_t rx, fin;
	uint32_t code;
	uint8_t type;

	if (fb_hdr_check(data, size, &type, &length) == 0 &&
	    (length < 8 || length > FB_MSG_MAX))
		FUZZ_FAIL();
	if (fb_hello_decode(data, size, &hi) == 0) {
		uint8_t flags = hi.flags & ~(FB_FLAG_RESUME | FB_FLAG_ORIGIN);
		size_t len;

		fuzz_decoded++;
		len = (hi.flags & FB_FLAG_RESUME) ?
			      fb_hello_resume_encode(re, hi.nonce, flags,
						     hi.name, hi.export, &hi) :
			      fb_hello_encode(re, hi.nonce, flags, hi.name,
					      hi.export);
		if (hi.flags & FB_FLAG_ORIGIN)
			len = fb_hello_origin_add(re, len, &hi.origin);
		if (strlen(hi.name) == 0 || strlen(hi.export) == 0 ||
		    len != size || memcmp(re, data, size) != 0)
			FUZZ_FAIL();
	}
	if (fb_resumed_decode(data, size, &rx, &fin) == 0) {
		fuzz_decoded++;
		if (fb_resumed_encode(re, rx, fin) != size ||
		    memcmp(re, data, size) != 0)
			FUZZ_FAIL();
	}
	if (fb_result_decode(data, size, &code) == 0) {
		fuzz_decoded++;
		if (fb_result_encode(re, code) != size ||
		    memcmp(re, data, size) != 0)
			FUZZ_FAIL();
	}
	if (fb_challenge_decode(data, size, &nonce, &mac) == 0) {
		fuzz_decoded++;
		if (size != sizeof(struct fb_challenge) || nonce != data + 8 ||
		    mac != data + 40)
			FUZZ_FAIL();
	}
	if (fb_proof_decode(data, size, &mac) == 0) {
		fuzz_decoded++;
		if (size != sizeof(struct fb_proof) || mac != data + 8)
			FUZZ_FAIL();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_decoded = 0;
	if (size == 0)
		return 0;
	switch (data[0] % 3) {
	case FUZZ_CODEC:
		fuzz_codec(data + 1, size - 1);
		break;
	case FUZZ_OPEN:
		fuzz_client(FUZZ_OPEN, data + 1, size - 1);
		break;
	default:
		fuzz_client(FUZZ_RESUME, data + 1, size - 1);
		break;
	}
	return 0;
}
