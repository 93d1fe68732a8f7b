// SPDX-License-Identifier: BSD-2-Clause
/*
 * The connection data path (tx.c, rx.c, cdc.c's connection glue) between
 * two sides in one process on the loopback device model: streams checked
 * byte for byte across every wrap-around, the smallest buffers, full and
 * reopened windows, 1-byte reads, half-close and abort both ways, a link
 * dropped mid-stream and failed over, malformed CDCs, autocork, and many
 * connections sharing two TX slots.  Driven by loopdev_run(): no timers,
 * nothing depends on time.
 */
#include <sys/socket.h>
#include <sys/uio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>
#include <event2/event.h>

#include "smcproxyd.h"
#include "rconn.h"

static const struct dev_path smc_path = DEV_PATH_SMC;

#define K16 16384u
#define NCONN 40
#define TOKEN_A 0x1000
#define TOKEN_B 0x2000

struct harness;
struct side;

/* One end of a test connection: an rconn and the streams through it. */
struct tconn {
	struct side *s;
	struct rconn *rc;
	int idx;
	uint32_t seed_tx, seed_rx;
	uint64_t tx_total;  /* bytes to send */
	uint64_t tx_off;    /* produced so far */
	uint64_t rx_total;  /* bytes the peer sends */
	uint64_t rx_off;    /* consumed and checked so far */
	size_t slice;	    /* consume at most this per call; 0: all */
	bool hold;	    /* do not consume */
	bool fin_when_sent; /* tx_close(DONE_WRITING) after the last */
	bool fin_sent;
	int data_ready, space_ready, done, closed, aborts, link_failed;
	uint64_t done_at; /* rx_off when peer_done_writing came */
	uint64_t bad_at;  /* first mismatch + 1, 0: none */
};

struct side {
	struct harness *h;
	int id;
	struct wr_link *link[2];
	struct dev *pd[2]; /* each link's PD: its device's own, or its own */
	bool own_pd[2];
	int link_down[2];
	struct buf_pool *pool;
	struct tconn conn[NCONN];
	int nconn;
	struct rconn_stats sum;
	int rx_errors;
	int rx_unknown;
	const char *why;
	bool deaf;	 /* CDCs on link 0 are dropped, as by an ending group */
	size_t data_max; /* CDC data it takes (CLC_FEAT_CDC_DATA) */
};

struct harness {
	struct event_base *base;
	struct dev *dev;
	struct dev *dev2; /* link 1's device, or NULL: link 1 on dev too */
	struct side side[2];
	int nlinks;
	uint64_t drop_at; /* drop link 0 once A produced this much */
	bool dropped, failed_over;
	bool failover_in_cb; /* link_failed moves the connection itself */
	int on_link;	     /* h_conn puts new connections on this link */
	/* resume on link 1 (another group: its own PD) instead of failover */
	enum {
		H_FAILOVER,
		H_RESUME,
		H_RESUME_DEAF,
		H_RESUME_LATE,
		H_RESUME_TCP
	} after_drop;
	int sp[NCONN][2]; /* H_RESUME_TCP: each connection's socket pair */
	int took;	  /* resumes where B took bytes A saw complete */
	int skipped;	  /* resumes where A skipped bytes B already had */
};

/* The MR of b in the PD of side s's link li (registered there now). */
static const struct dev_mr *
h_mr(struct side *s, struct buf *b, int li)
{
	const struct dev_mr *mr = buf_mr(b, &loopdev_ops, s->pd[li]);

	ck_assert_ptr_nonnull(mr);
	return mr;
}

/* The byte at offset off of stream seed. */
static uint8_t
gen(uint32_t seed, uint64_t off)
{
	uint64_t x = off * 0x9e3779b97f4a7c15ull + seed * 0xbf58476d1ce4e5b9ull;

	x ^= x >> 31;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 29;
	return (uint8_t)x;
}

static struct rconn *
h_lookup(uint32_t token, void *arg)
{
	struct side *s = arg;
	int i;

	for (i = 0; i < s->nconn; i++)
		if (s->conn[i].rc != NULL && s->conn[i].rc->token == token)
			return s->conn[i].rc;
	return NULL;
}

/* A CDC to side s, as lgr_cdc_rx hands it over: 0, -ENOENT or -EPROTO. */
static int
h_recv(struct side *s, const void *msg, size_t len, const char **why)
{
	struct cdc_info m;
	struct rconn *rc;

	if (cdc_msg_check(msg, len, s->data_max, &m, why))
		return -EPROTO;
	rc = h_lookup(m.token, s);
	if (rc == NULL) {
		*why = "CDC for an unknown token";
		return -ENOENT;
	}
	return rx_cdc_recv(rc, &m, (const uint8_t *)msg + CDC_MSG_LEN, why);
}

static void
h_cdc_rx(struct wr_link *l, const void *msg, size_t len, void *arg)
{
	struct side *s = arg;
	const char *why;
	int err;

	if (s->deaf && l == s->link[0])
		return;
	err = h_recv(s, msg, len, &why);
	if (err == -ENOENT)
		s->rx_unknown++;
	else if (err) {
		s->rx_errors++;
		s->why = why;
	}
}

static void
h_down(struct wr_link *l, void *arg)
{
	struct side *s = arg;

	s->link_down[l == s->link[0] ? 0 : 1]++;
}

static void
t_data_ready(struct rconn *rc, void *arg)
{
	((struct tconn *)arg)->data_ready++;
}

static void
t_space_ready(struct rconn *rc, void *arg)
{
	((struct tconn *)arg)->space_ready++;
}

static void
t_done(struct rconn *rc, void *arg)
{
	struct tconn *c = arg;

	ck_assert_uint_eq(rx_readable(rc), 0);
	c->done++;
	c->done_at = c->rx_off;
}

static void
t_closed(struct rconn *rc, void *arg)
{
	((struct tconn *)arg)->closed++;
}

static void
t_abort(struct rconn *rc, void *arg)
{
	((struct tconn *)arg)->aborts++;
}

/*
 * Move c to its side's link li with the keys of li's device: its send
 * ring's lkey and the peer's RMB rkey there.
 */
static int
h_move(struct tconn *c, int li)
{
	struct harness *h = c->s->h;
	struct side *ps = &h->side[1 - c->s->id];
	struct rconn *peer = ps->conn[c->idx].rc;

	return tx_failover(c->rc, c->s->link[li],
			   h_mr(c->s, c->rc->sndbuf, li)->lkey,
			   h_mr(ps, peer->rmb, li)->rkey);
}

static void
t_link_failed(struct rconn *rc, void *arg)
{
	struct tconn *c = arg;

	c->link_failed++;
	/* from inside the failed link's completion handling */
	if (c->s->h->failover_in_cb && c->s->h->nlinks > 1)
		ck_assert_int_eq(h_move(c, 1), 0);
}

static const struct rconn_ops t_ops = {
	.data_ready = t_data_ready,
	.tx_space_ready = t_space_ready,
	.peer_done_writing = t_done,
	.peer_closed = t_closed,
	.peer_abort = t_abort,
	.link_failed = t_link_failed,
};

/* Did the groups negotiate CLC_FEAT_CDC_DATA (both sides, every link)? */
static void
h_cdc_data(struct harness *h, bool on)
{
	int i, k;

	for (k = 0; k < 2; k++) {
		h->side[k].data_max = on ? CDC_DATA_MAX : 0;
		for (i = 0; i < h->nlinks; i++)
			wr_link_cdc_data(h->side[k].link[i], on);
	}
}

/*
 * Both sides, nlinks links; link 1 on a second device if two_devs; each
 * link in a PD of its own if pd_per_link (as two link groups have), else
 * in its device's.
 */
static void
h_open3(struct harness *h, int nlinks, uint32_t slots, enum wr_slot_wait mode,
	bool two_devs, bool pd_per_link)
{
	struct wr_params prm = {.max_send_wr = slots,
				.max_recv_wr = 64,
				.inline_enabled = true,
				.inline_size = 128,
				.slot_wait = mode,
				.reap_lazily = true,
				.cdc_data = true};
	struct dev_qp_addr aa, ba;
	struct wr_link_cb cb;
	int i, k;

	memset(h, 0, sizeof(*h));
	h->base = event_base_new();
	ck_assert_ptr_nonnull(h->base);
	h->dev = loopdev_new(h->base);
	ck_assert_ptr_nonnull(h->dev);
	if (two_devs) {
		h->dev2 = loopdev_new(h->base);
		ck_assert_ptr_nonnull(h->dev2);
	}
	h->nlinks = nlinks;
	for (k = 0; k < 2; k++) {
		h->side[k].h = h;
		h->side[k].id = k;
		h->side[k].pool = buf_pool_new(NULL, NULL, 0);
		ck_assert_ptr_nonnull(h->side[k].pool);
		for (i = 0; i < 2; i++) {
			struct dev *d = i == 1 && two_devs ? h->dev2 : h->dev;

			h->side[k].own_pd[i] = pd_per_link;
			h->side[k].pd[i] =
				pd_per_link ? loopdev_ops.pd_open(d) : d;
			ck_assert_ptr_nonnull(h->side[k].pd[i]);
		}
	}
	for (i = 0; i < nlinks; i++) {
		for (k = 0; k < 2; k++) {
			cb.down = h_down;
			cb.arg = &h->side[k];
			snprintf(prm.name, sizeof(prm.name), "side %c link %d",
				 'A' + k, i);
			h->side[k].link[i] =
				wr_link_new(&loopdev_ops, h->side[k].pd[i],
					    h->base, &prm, &cb);
			ck_assert_ptr_nonnull(h->side[k].link[i]);
			wr_rx_register(h->side[k].link[i], CDC_MSG_TYPE,
				       h_cdc_rx);
		}
		ck_assert_int_eq(loopdev_ops.qp_addr(
					 wr_link_qp(h->side[0].link[i]), &aa),
				 0);
		ck_assert_int_eq(loopdev_ops.qp_addr(
					 wr_link_qp(h->side[1].link[i]), &ba),
				 0);
		ck_assert_int_eq(
			wr_link_connect(h->side[0].link[i], &ba, &smc_path), 0);
		ck_assert_int_eq(
			wr_link_connect(h->side[1].link[i], &aa, &smc_path), 0);
	}
	h_cdc_data(h, true);
}

static void
h_open2(struct harness *h, int nlinks, uint32_t slots, enum wr_slot_wait mode,
	bool two_devs)
{
	h_open3(h, nlinks, slots, mode, two_devs, false);
}

static void
h_open(struct harness *h, int nlinks, uint32_t slots, enum wr_slot_wait mode)
{
	h_open2(h, nlinks, slots, mode, false);
}

/* Run both devices until nothing moves: WRs completed. */
static int
h_loop_devs(struct harness *h)
{
	int n = loopdev_run(h->dev), m = 0;

	ck_assert_int_ge(n, 0);
	if (h->dev2 != NULL) {
		m = loopdev_run(h->dev2);
		ck_assert_int_ge(m, 0);
	}
	return n + m;
}

/* ... then what that made ready on the loop (a poll that a lazily
 * posted CDC's sender asked for, wr_tx_want_done), and again */
static int
h_loop(struct harness *h)
{
	int n = h_loop_devs(h);

	ck_assert_int_ge(event_base_loop(h->base, EVLOOP_NONBLOCK), 0);
	return n + h_loop_devs(h);
}

/*
 * Connection i between the sides: A's send ring sa and RMB ra, B's sb
 * and rb; A sends a_total bytes to B, B b_total to A.
 */
static void
h_conn(struct harness *h, int i, size_t sa, size_t ra, size_t sb, size_t rb,
       const struct tx_params *tp, uint64_t a_total, uint64_t b_total)
{
	struct buf *snd[2], *rmb[2];
	size_t ssz[2] = {sa, sb}, rsz[2] = {ra, rb};
	uint64_t total[2] = {a_total, b_total};
	struct rconn_init in;
	int k;

	for (k = 0; k < 2; k++) {
		ck_assert_int_eq(
			buf_get(h->side[k].pool, BUF_SNDBUF, ssz[k], &snd[k]),
			0);
		ck_assert_int_eq(
			buf_get(h->side[k].pool, BUF_RMB, rsz[k], &rmb[k]), 0);
	}
	for (k = 0; k < 2; k++) {
		struct side *s = &h->side[k];
		struct tconn *c = &s->conn[i];

		memset(c, 0, sizeof(*c));
		c->s = s;
		c->idx = i;
		c->seed_tx = (uint32_t)(i * 2 + k + 1);
		c->seed_rx = (uint32_t)(i * 2 + (1 - k) + 1);
		c->tx_total = total[k];
		c->rx_total = total[1 - k];
		memset(&in, 0, sizeof(in));
		in.id = (uint64_t)(k << 16 | i);
		in.link = s->link[h->on_link];
		in.token = (uint32_t)((k ? TOKEN_B : TOKEN_A) + i);
		in.peer_token = (uint32_t)((k ? TOKEN_A : TOKEN_B) + i);
		in.sndbuf = snd[k];
		in.lkey = h_mr(s, snd[k], h->on_link)->lkey;
		in.rmb = rmb[k];
		in.peer_rmb.vaddr = rmb[1 - k]->iova;
		in.peer_rmb.rkey =
			h_mr(&h->side[1 - k], rmb[1 - k], h->on_link)->rkey;
		in.peer_rmb.size = (uint32_t)rmb[1 - k]->size;
		in.params = *tp;
		in.ops = &t_ops;
		in.arg = c;
		in.sum = &s->sum;
		c->rc = tx_conn_new(&in);
		ck_assert_ptr_nonnull(c->rc);
		if (s->nconn <= i)
			s->nconn = i + 1;
	}
}

static void
h_run(struct harness *h)
{
	h_loop(h);
}

/* Produce what fits of c's stream into its ring and push: bytes. */
static size_t
produce(struct tconn *c, size_t max)
{
	struct iovec iov[2];
	size_t got = 0, want, j;
	int n, k;

	if (c->rc == NULL)
		return 0;
	if (c->tx_off == c->tx_total) {
		if (c->fin_when_sent && !c->fin_sent) {
			c->fin_sent = true;
			tx_close(c->rc, TX_CLOSE_DONE_WRITING);
		}
		return 0;
	}
	n = tx_space(c->rc, iov);
	if (n <= 0)
		return 0;
	if (max == 0 || max > c->tx_total - c->tx_off)
		max = (size_t)(c->tx_total - c->tx_off);
	for (k = 0; k < n && got < max; k++) {
		want = iov[k].iov_len < max - got ? iov[k].iov_len : max - got;
		for (j = 0; j < want; j++)
			((uint8_t *)iov[k].iov_base)[j] =
				gen(c->seed_tx, c->tx_off + got + j);
		got += want;
	}
	tx_produced(c->rc, got);
	c->tx_off += got;
	tx_push(c->rc);
	return got;
}

/* Consume (and check) what is readable, slice bytes per call: bytes. */
static size_t
consume(struct tconn *c, size_t max)
{
	struct iovec iov[2];
	size_t total = 0, take, j, left;
	int n, k;

	while (c->rc != NULL && !c->hold && (max == 0 || total < max)) {
		n = rx_data(c->rc, iov);
		if (n <= 0)
			break;
		take = iov[0].iov_len + (n > 1 ? iov[1].iov_len : 0);
		if (c->slice > 0 && take > c->slice)
			take = c->slice;
		if (max > 0 && take > max - total)
			take = max - total;
		left = take;
		for (k = 0; k < n && left > 0; k++) {
			size_t m =
				iov[k].iov_len < left ? iov[k].iov_len : left;

			for (j = 0; j < m; j++)
				if (((uint8_t *)iov[k].iov_base)[j] !=
					    gen(c->seed_rx, c->rx_off + j) &&
				    c->bad_at == 0)
					c->bad_at = c->rx_off + j + 1;
			c->rx_off += m;
			left -= m;
		}
		rx_consumed(c->rc, take);
		total += take;
	}
	return total;
}

static struct rconn *
A(struct harness *h, int i)
{
	return h->side[0].conn[i].rc;
}

static struct rconn *
B(struct harness *h, int i)
{
	return h->side[1].conn[i].rc;
}

static void
h_failover(struct harness *h)
{
	int k, i;

	for (k = 0; k < 2; k++)
		for (i = 0; i < h->side[k].nconn; i++)
			if (h->side[k].conn[i].rc != NULL &&
			    h->side[k].conn[i].rc->link != h->side[k].link[1])
				ck_assert_int_eq(h_move(&h->side[k].conn[i], 1),
						 0);
	h->failed_over = true;
}

/*
 * Both ends of every connection let go of link 0 and resume on link 1,
 * in a PD of its own as a new link group has: A asks with its counts, B
 * checks them and answers with its own, each moves (docs/protocol.md,
 * "Resuming a connection").
 */
static void
h_resume(struct harness *h)
{
	uint64_t b_rx, b_fin, a_rx, a_fin;
	const char *why;
	int i;

	for (i = 0; i < h->side[0].nconn; i++) {
		struct rconn *a = A(h, i), *b = B(h, i);

		tx_detach(a);
		tx_detach(b);
		buf_mr_drop(a->sndbuf);
		buf_mr_drop(a->rmb);
		buf_mr_drop(b->sndbuf);
		buf_mr_drop(b->rmb);
		a_rx = a->rx_off;
		a_fin = tx_fin_off(a);
		h->took += a_fin > b->rx_off;
		h->skipped += b->rx_off > a_fin;
		ck_assert_int_eq(
			tx_resume_check(b, a_rx, a_fin, &b_rx, &b_fin, &why),
			0);
		ck_assert_int_eq(
			tx_resume(b, h->side[1].link[1],
				  h_mr(&h->side[1], b->sndbuf, 1)->lkey,
				  h_mr(&h->side[0], a->rmb, 1)->rkey, a_rx,
				  a_fin, &why),
			0);
		ck_assert_int_eq(
			tx_resume(a, h->side[0].link[1],
				  h_mr(&h->side[0], a->sndbuf, 1)->lkey,
				  h_mr(&h->side[1], b->rmb, 1)->rkey, b_rx,
				  b_fin, &why),
			0);
	}
	h->side[0].deaf = h->side[1].deaf = false;
	h->failed_over = true;
}

/*
 * As h_resume, but each connection resumes over a TCP-like stream (a
 * socket pair) instead of a new link group: the counts are exchanged the
 * same way (docs/protocol.md, "Resuming a connection").
 */
static void
h_resume_tcp(struct harness *h)
{
	uint64_t b_rx, b_fin, a_rx, a_fin;
	const char *why;
	int i, k;

	for (i = 0; i < h->side[0].nconn; i++) {
		struct rconn *a = A(h, i), *b = B(h, i);

		tx_detach(a);
		tx_detach(b);
		ck_assert_int_eq(socketpair(AF_UNIX,
					    SOCK_STREAM | SOCK_NONBLOCK, 0,
					    h->sp[i]),
				 0);
		a_rx = a->rx_off;
		a_fin = tx_fin_off(a);
		ck_assert_int_eq(
			tx_resume_check(b, a_rx, a_fin, &b_rx, &b_fin, &why),
			0);
		ck_assert_int_eq(tx_resume_tcp(b, a_rx, a_fin, &why), 0);
		ck_assert_int_eq(tx_resume_tcp(a, b_rx, b_fin, &why), 0);
		for (k = 0; k < 2; k++)
			ck_assert_ptr_null(h->side[k].conn[i].rc->link);
	}
	h->failed_over = true;
}

/* Over the socket pairs: rings out, RMBs in.  Bytes moved. */
static size_t
h_tcp_move(struct harness *h)
{
	struct iovec iov[2];
	size_t moved = 0;
	ssize_t n;
	int i, k, cnt;

	if (h->after_drop != H_RESUME_TCP || !h->failed_over)
		return 0;
	for (i = 0; i < h->side[0].nconn; i++)
		for (k = 0; k < 2; k++) {
			struct rconn *rc = h->side[k].conn[i].rc;

			while ((cnt = tx_tcp_spans(rc, iov)) > 0 &&
			       (n = writev(h->sp[i][k], iov, cnt)) > 0) {
				tx_tcp_sent(rc, (size_t)n);
				moved += (size_t)n;
			}
			while ((cnt = rx_tcp_space(rc, iov)) > 0 &&
			       (n = readv(h->sp[i][k], iov, cnt)) > 0) {
				rx_tcp_received(rc, (size_t)n);
				moved += (size_t)n;
			}
		}
	return moved;
}

/*
 * Step the event loop one device round at a time until bytes of A's
 * first connection are in flight, then break link 0 under them.  With
 * H_RESUME_DEAF, B stops hearing CDCs on link 0 first while A's
 * complete (the peer saw them complete; an ending group dropped them);
 * with H_RESUME_LATE, A lets go of link 0 first and what it had in
 * flight arrives at B (B has bytes whose completions A never saw).
 */
static int
h_drop(struct harness *h)
{
	int n, i;

	for (n = 0; n < 1000; n++) {
		if (memcmp(&A(h, 0)->tx_curs_fin, &A(h, 0)->tx_curs_sent,
			   sizeof(struct cdc_cursor)) != 0) {
			if (h->after_drop == H_RESUME_DEAF) {
				h->side[1].deaf = true;
				produce(&h->side[0].conn[0], 0);
				h_loop(h);
				h_loop(h);
			}
			/* what is in flight arrives, A never hears of it */
			if (h->after_drop == H_RESUME_LATE) {
				for (i = 0; i < h->side[0].nconn; i++)
					tx_detach(A(h, i));
				h_loop(h);
			}
			loopdev_drop_link(wr_link_qp(h->side[0].link[0]));
			h->dropped = true;
			return 1;
		}
		event_base_loop(h->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		consume(&h->side[1].conn[0], 0);
	}
	return 0;
}

/* Reap every completion now, lazily posted CDCs' too (the daemon does
 * with the next message received on the link). */
static void
h_reap(struct harness *h)
{
	int k, i;

	for (k = 0; k < 2; k++)
		for (i = 0; i < h->nlinks; i++)
			wr_link_poll(h->side[k].link[i]);
}

/* Move every stream until nothing moves any more. */
static void
h_pump(struct harness *h)
{
	int round, k, i;
	size_t moved;
	int ran;

	for (round = 0; round < 1000000; round++) {
		moved = 0;
		for (k = 0; k < 2; k++)
			for (i = 0; i < h->side[k].nconn; i++)
				moved += produce(&h->side[k].conn[i], 0);
		if (h->drop_at > 0 && !h->dropped &&
		    h->side[0].conn[0].tx_off >= h->drop_at)
			moved += h_drop(h);
		ran = h_loop(h);
		for (k = 0; k < 2; k++)
			for (i = 0; i < h->side[k].nconn; i++)
				moved += consume(&h->side[k].conn[i], 0);
		if (h->dropped && !h->failed_over) {
			h_run(h);
			ck_assert_int_eq(h->side[0].link_down[0], 1);
			ck_assert_int_eq(h->side[1].link_down[0], 1);
			if (h->after_drop == H_FAILOVER)
				h_failover(h);
			else if (h->after_drop == H_RESUME_TCP)
				h_resume_tcp(h);
			else
				h_resume(h);
			moved++;
		}
		moved += h_tcp_move(h);
		if (moved == 0 && ran == 0)
			return;
	}
	ck_abort_msg("pump did not settle");
}

/* Every stream arrived whole, exactly once, byte for byte. */
static void
h_check_streams(struct harness *h)
{
	int k, i;

	for (k = 0; k < 2; k++)
		for (i = 0; i < h->side[k].nconn; i++) {
			struct tconn *c = &h->side[k].conn[i];

			if (c->rc == NULL)
				continue;
			ck_assert_msg(c->bad_at == 0,
				      "side %d conn %d: byte %llu differs", k,
				      i, (unsigned long long)c->bad_at - 1);
			ck_assert_uint_eq(c->tx_off, c->tx_total);
			ck_assert_uint_eq(c->rx_off, c->rx_total);
			ck_assert_uint_eq(tx_unsent(c->rc), 0);
			ck_assert_uint_eq(rx_readable(c->rc), 0);
		}
	ck_assert_int_eq(h->side[0].rx_errors, 0);
	ck_assert_int_eq(h->side[1].rx_errors, 0);
}

static void
h_close(struct harness *h)
{
	int k, i;

	for (k = 0; k < 2; k++)
		for (i = 0; i < h->side[k].nconn; i++) {
			tx_conn_free(h->side[k].conn[i].rc);
			h->side[k].conn[i].rc = NULL;
		}
	h_run(h);
	for (k = 0; k < 2; k++) {
		/* every buffer came back: deferred frees happened */
		ck_assert_uint_eq(
			buf_pool_stats(h->side[k].pool)->bytes_used[0], 0);
		ck_assert_uint_eq(
			buf_pool_stats(h->side[k].pool)->bytes_used[1], 0);
		for (i = 0; i < h->nlinks; i++)
			wr_link_free(h->side[k].link[i]);
		buf_pool_free(h->side[k].pool);
		for (i = 0; i < 2; i++)
			if (h->side[k].own_pd[i])
				loopdev_ops.pd_close(h->side[k].pd[i]);
	}
	loopdev_free(h->dev);
	if (h->dev2 != NULL)
		loopdev_free(h->dev2);
	event_base_free(h->base);
}

static const struct tx_params no_cork = {.autocork = false};
static const struct tx_params cork = {.autocork = true, .autocork_size = 65536};

/* ---- streams ---- */

START_TEST(smallest_buffers_duplex)
{
	struct harness h;

	h_open(&h, 1, 16, WR_WAIT_EXCLUSIVE);
	h_conn(&h, 0, K16, K16, K16, K16, &no_cork, 1 << 20, 1 << 20);
	h_pump(&h);
	h_check_streams(&h);
	ck_assert_uint_eq(A(&h, 0)->stats.tx_bytes, 1 << 20);
	ck_assert_uint_eq(B(&h, 0)->stats.rx_bytes, 1 << 20);
	ck_assert_uint_eq(h.side[0].sum.tx_bytes, 1 << 20);
	h_close(&h);
}
END_TEST

/*
 * Cursors placed at 0, 1, size/2, size-1, size and beyond in the ring and
 * the RMB (of equal or different sizes), then an exact fill of the ring
 * or the window, whichever is smaller.
 */
static void
wrap_case(size_t ssize, size_t rsize, size_t at)
{
	size_t fill = ssize < rsize ? ssize : rsize;
	struct iovec iov[2];
	struct harness h;
	struct tconn *a, *b;

	h_open(&h, 1, 16, WR_WAIT_EXCLUSIVE);
	h_conn(&h, 0, ssize, K16, K16, rsize, &no_cork, at + 2 * fill, 100);
	a = &h.side[0].conn[0];
	b = &h.side[1].conn[0];
	while (b->rx_off < at) {
		if (a->tx_off < at)
			produce(a, (size_t)(at - a->tx_off));
		h_run(&h);
		ck_assert_uint_gt(consume(b, 0), 0);
	}
	/* a CDC of B's carries its consumer cursor: the whole window */
	ck_assert_uint_eq(produce(b, 1), 1);
	h_run(&h);
	ck_assert_uint_eq(A(&h, 0)->peer_rmbe_space, rsize);
	ck_assert_uint_eq(A(&h, 0)->tx_curs_sent.count, at % ssize);
	ck_assert_uint_eq(B(&h, 0)->local_tx_ctrl.cons.count, at % rsize);
	/* the ring is empty: all of it is free, in two spans unless at 0 */
	ck_assert_int_eq(tx_space(A(&h, 0), iov), at % ssize ? 2 : 1);
	ck_assert_uint_eq(produce(a, fill), fill);
	h_run(&h);
	ck_assert_uint_eq(rx_readable(B(&h, 0)), fill);
	ck_assert_int_eq(rx_data(B(&h, 0), iov),
			 at % rsize + fill > rsize ? 2 : 1);
	if (fill == ssize)
		ck_assert_uint_eq(A(&h, 0)->tx_curs_fin.count,
				  A(&h, 0)->tx_curs_prep.count);
	if (fill == rsize)
		ck_assert_uint_eq(A(&h, 0)->peer_rmbe_space, 0);
	ck_assert_uint_eq(consume(b, 0), fill);
	h_pump(&h);
	h_check_streams(&h);
	h_close(&h);
}

START_TEST(wrap_around_every_boundary)
{
	size_t sizes[][2] = {{K16, K16}, {K16, 2 * K16}, {2 * K16, K16}};
	size_t i, j;

	for (i = 0; i < 3; i++) {
		size_t m =
			sizes[i][0] > sizes[i][1] ? sizes[i][0] : sizes[i][1];
		size_t at[] = {0, 1, K16 / 2, K16 - 1, K16, m - 1, m + 5};

		for (j = 0; j < sizeof(at) / sizeof(at[0]); j++)
			wrap_case(sizes[i][0], sizes[i][1], at[j]);
	}
}
END_TEST

START_TEST(ring_full_and_window_full)
{
	struct harness h;
	struct tconn *a, *b;
	struct iovec iov[2];

	h_open(&h, 1, 16, WR_WAIT_EXCLUSIVE);
	h_conn(&h, 0, K16, K16, K16, K16, &no_cork, 3 * K16, 0);
	a = &h.side[0].conn[0];
	b = &h.side[1].conn[0];
	b->hold = true;
	h_pump(&h);
	/* the peer's window (its RMB) is full, and then our ring */
	ck_assert_uint_eq(rx_readable(B(&h, 0)), K16);
	ck_assert_uint_eq(A(&h, 0)->peer_rmbe_space, 0);
	ck_assert_uint_eq(tx_unsent(A(&h, 0)), K16);
	ck_assert_int_eq(tx_space(A(&h, 0), iov), 0);
	ck_assert_uint_ge(A(&h, 0)->stats.ring_full, 1);
	ck_assert_uint_ge(A(&h, 0)->stats.peer_window_full, 1);
	ck_assert(A(&h, 0)->local_tx_ctrl.prod_flags & CDC_PF_WRITE_BLOCKED);
	ck_assert_int_eq(a->space_ready, 0);
	/* the reader drains: window update, push, ring space again */
	b->hold = false;
	h_pump(&h);
	ck_assert_int_ge(a->space_ready, 1);
	ck_assert_uint_ge(B(&h, 0)->stats.cons_updates, 1);
	h_check_streams(&h);
	h_close(&h);
}
END_TEST

START_TEST(one_byte_reads)
{
	struct harness h;
	struct tconn *b;
	uint64_t total = 200000, updates;

	h_open(&h, 1, 16, WR_WAIT_EXCLUSIVE);
	h_conn(&h, 0, K16, K16, K16, K16, &no_cork, total, 0);
	b = &h.side[1].conn[0];
	b->slice = 1;
	h_pump(&h);
	h_check_streams(&h);
	updates = B(&h, 0)->stats.cons_updates;
	ck_assert_uint_gt(updates, 0);
	/* no update per byte: at most one per CDC received plus one per
	 * 10% of the RMB consumed */
	ck_assert_uint_le(updates, B(&h, 0)->stats.rx_cdcs + total / 1638 + 1);
	h_close(&h);
}
END_TEST

/*
 * The cliff of smc-r.md §2.3: the peer is write_blocked, we drain the RMB
 * in a piece below the 10% threshold: the window goes back at once.
 */
START_TEST(drained_reader_reopens_window_at_once)
{
	struct harness h;
	struct tconn *a, *b;
	uint64_t before;

	h_open(&h, 1, 16, WR_WAIT_EXCLUSIVE);
	h_conn(&h, 0, K16, K16, K16, K16, &no_cork, 4 * K16, 0);
	a = &h.side[0].conn[0];
	b = &h.side[1].conn[0];
	ck_assert_uint_eq(produce(a, 0), K16);
	h_run(&h);
	ck_assert_uint_eq(produce(a, 0), K16);
	ck_assert(B(&h, 0)->local_rx_ctrl.prod_flags & CDC_PF_WRITE_BLOCKED);
	/* most of it: above the threshold, window update (kernel rule) */
	ck_assert_uint_eq(consume(b, K16 - 1000), K16 - 1000);
	ck_assert_uint_eq(B(&h, 0)->stats.cons_updates, 1);
	/* all but one byte of the rest: below the threshold, RMB not
	 * drained: still held back */
	before = B(&h, 0)->stats.tx_cdcs;
	ck_assert_uint_eq(consume(b, 999), 999);
	ck_assert_uint_eq(B(&h, 0)->stats.tx_cdcs, before);
	/* the last byte drains it: the blocked writer gets it back now */
	ck_assert_uint_eq(consume(b, 1), 1);
	ck_assert_uint_eq(B(&h, 0)->stats.cons_updates, 2);
	ck_assert_uint_eq(B(&h, 0)->rx_curs_confirmed.count,
			  B(&h, 0)->local_tx_ctrl.cons.count);
	h_pump(&h);
	h_check_streams(&h);
	h_close(&h);
}
END_TEST

/* ---- close ---- */

START_TEST(half_close_each_direction)
{
	struct iovec iov[2];
	struct harness h;
	struct tconn *a, *b;

	h_open(&h, 1, 16, WR_WAIT_EXCLUSIVE);
	h_conn(&h, 0, K16, K16, K16, K16, &no_cork, 20000, 30000);
	a = &h.side[0].conn[0];
	b = &h.side[1].conn[0];
	a->fin_when_sent = true;
	b->hold = true;
	h_pump(&h);
	/* A is done writing but 16 KiB still wait in B's RMB */
	ck_assert(a->fin_sent);
	ck_assert_int_eq(b->done, 0);
	ck_assert_int_eq(tx_space(A(&h, 0), iov), -EPIPE);
	b->hold = false;
	h_pump(&h);
	/* after every byte, once; B still sends to A */
	ck_assert_int_eq(b->done, 1);
	ck_assert_uint_eq(b->done_at, 20000);
	ck_assert_int_eq(a->done, 0);
	ck_assert_uint_eq(a->rx_off, 30000);
	b->fin_when_sent = true;
	h_pump(&h);
	ck_assert_int_eq(a->done, 1);
	ck_assert_uint_eq(a->done_at, 30000);
	h_check_streams(&h);
	ck_assert_int_eq(tx_close(A(&h, 0), TX_CLOSE_CLOSED), 0);
	ck_assert_int_eq(tx_close(B(&h, 0), TX_CLOSE_CLOSED), 0);
	h_run(&h);
	ck_assert_int_eq(a->closed, 1);
	ck_assert_int_eq(b->closed, 1);
	ck_assert_int_eq(a->done + b->done, 2);
	h_close(&h);
}
END_TEST

/* FIN asked while the window holds bytes back: it follows the last one. */
START_TEST(fin_waits_for_window)
{
	struct harness h;
	struct tconn *a, *b;

	h_open(&h, 1, 16, WR_WAIT_EXCLUSIVE);
	h_conn(&h, 0, 2 * K16, K16, K16, K16, &no_cork, 2 * K16, 0);
	a = &h.side[0].conn[0];
	b = &h.side[1].conn[0];
	ck_assert_uint_eq(produce(a, 0), 2 * K16);
	ck_assert_int_eq(tx_close(A(&h, 0), TX_CLOSE_DONE_WRITING), 0);
	h_run(&h);
	ck_assert_uint_eq(tx_unsent(A(&h, 0)), K16);
	ck_assert(!(B(&h, 0)->flags & RCONN_F_PEER_DONE));
	h_pump(&h);
	ck_assert_int_eq(b->done, 1);
	ck_assert_uint_eq(b->done_at, 2 * K16);
	h_check_streams(&h);
	h_close(&h);
}
END_TEST

static void
abort_case(int from)
{
	struct harness h;
	struct tconn *x, *y;
	struct iovec iov[2];

	h_open(&h, 1, 16, WR_WAIT_EXCLUSIVE);
	h_conn(&h, 0, K16, K16, K16, K16, &no_cork, 3 * K16, 3 * K16);
	x = &h.side[from].conn[0];
	y = &h.side[1 - from].conn[0];
	y->hold = true;
	produce(x, 0);
	produce(y, 0);
	h_run(&h);
	produce(x, 0);
	ck_assert_int_eq(tx_close(x->rc, TX_CLOSE_ABORT), 0);
	ck_assert_uint_eq(tx_unsent(x->rc), 0); /* unsent bytes dropped */
	ck_assert_int_eq(tx_push(x->rc), -EPIPE);
	h_run(&h);
	ck_assert_int_eq(y->aborts, 1);
	ck_assert_int_eq(x->aborts, 0);
	ck_assert_int_eq(rx_data(y->rc, iov), -ECONNRESET);
	ck_assert_int_eq(tx_push(y->rc), -EPIPE);
	ck_assert_int_eq(tx_space(y->rc, iov), -EPIPE);
	/* nothing comes back after an abort */
	ck_assert_int_eq(tx_close(y->rc, TX_CLOSE_ABORT), 0);
	h_run(&h);
	ck_assert_int_eq(x->aborts, 0);
	ck_assert_int_eq(h.side[0].rx_errors + h.side[1].rx_errors, 0);
	h_close(&h);
}

START_TEST(abort_each_direction)
{
	abort_case(0);
	abort_case(1);
}
END_TEST

/* Every byte of a pool's idle buffers of kind is zero. */
static void
h_pool_all_zero(struct buf_pool *p, enum buf_kind kind, size_t size, int n)
{
	struct buf *b[4];
	size_t off;
	int i;

	for (i = 0; i < n; i++) {
		ck_assert_int_eq(buf_get(p, kind, size, &b[i]), 0);
		for (off = 0; off < size; off++)
			ck_assert_msg(((uint8_t *)b[i]->addr)[off] == 0,
				      "kind %d buffer %d: byte %zu not zeroed",
				      (int)kind, i, off);
	}
	for (i = 0; i < n; i++)
		buf_put(b[i]);
}

/*
 * Buffers go back saying how far they were written, so only that much
 * is zeroed before reuse (a short connection clears a few hundred bytes,
 * not 2 x 64 KiB): of the ring what was produced, of the RMB what the
 * peer's cursor covered once it said it was done; the whole RMB after an
 * abort, whatever the peer wrote past its cursor.  Either way the next
 * connection sees zeroes only.
 */
START_TEST(buffers_zeroed_as_far_as_written)
{
	struct buf *sndbuf[2], *rmb[2];
	struct harness h;
	int k, i;

	for (i = 0; i < 2; i++) {
		h_open(&h, 1, 16, WR_WAIT_EXCLUSIVE);
		h_conn(&h, 0, 2 * K16, 2 * K16, 2 * K16, 2 * K16, &no_cork,
		       5000, 7000);
		for (k = 0; k < 2; k++) {
			h.side[k].conn[0].fin_when_sent = (i == 0);
			sndbuf[k] = h.side[k].conn[0].rc->sndbuf;
			rmb[k] = h.side[k].conn[0].rc->rmb;
		}
		h_pump(&h);
		h_check_streams(&h);
		/* what a peer might write past its cursor and never announce */
		if (i == 1)
			memset((uint8_t *)rmb[1]->addr + 9000, 0xee, 100);
		for (k = 0; k < 2; k++)
			ck_assert_int_eq(tx_close(h.side[k].conn[0].rc,
						  i == 0 ? TX_CLOSE_CLOSED :
							   TX_CLOSE_ABORT),
					 0);
		h_run(&h);
		for (k = 0; k < 2; k++) {
			tx_conn_free(h.side[k].conn[0].rc);
			h.side[k].conn[0].rc = NULL;
		}
		h_run(&h);
		ck_assert_uint_eq(sndbuf[0]->dirty, 5000);
		ck_assert_uint_eq(sndbuf[1]->dirty, 7000);
		if (i == 0) {
			ck_assert_uint_eq(rmb[0]->dirty, 7000);
			ck_assert_uint_eq(rmb[1]->dirty, 5000);
		} else {
			/* aborted: no peer said it was done writing */
			ck_assert_uint_eq(rmb[0]->dirty, 2 * K16);
			ck_assert_uint_eq(rmb[1]->dirty, 2 * K16);
		}
		for (k = 0; k < 2; k++) {
			h_pool_all_zero(h.side[k].pool, BUF_SNDBUF, 2 * K16, 1);
			h_pool_all_zero(h.side[k].pool, BUF_RMB, 2 * K16, 1);
		}
		h_close(&h);
	}
}
END_TEST

/*
 * An abort drops the unsent bytes by rolling the ring's cursor back to
 * what was sent; the bytes stay in the ring all the same, so the ring
 * goes back to be zeroed whole: none of them may reach the peer of the
 * next connection to get it.
 */
START_TEST(aborted_ring_zeroed_past_rolled_back_cursor)
{
	struct iovec iov[2];
	struct harness h;
	struct buf *ring;
	int n, k;

	h_open(&h, 1, 16, WR_WAIT_EXCLUSIVE);
	h_conn(&h, 0, 2 * K16, 2 * K16, 2 * K16, 2 * K16, &no_cork, 0, 0);
	ring = A(&h, 0)->sndbuf;
	/* produced but never pushed: nothing of it sent */
	n = tx_space(A(&h, 0), iov);
	ck_assert_int_ge(n, 1);
	ck_assert_uint_ge(iov[0].iov_len, 3000);
	memset(iov[0].iov_base, 0xab, 3000);
	tx_produced(A(&h, 0), 3000);
	ck_assert_int_eq(tx_close(A(&h, 0), TX_CLOSE_ABORT), 0);
	h_run(&h);
	for (k = 0; k < 2; k++) {
		tx_conn_free(h.side[k].conn[0].rc);
		h.side[k].conn[0].rc = NULL;
	}
	h_run(&h);
	ck_assert_uint_ge(ring->dirty, 3000);
	h_pool_all_zero(h.side[0].pool, BUF_SNDBUF, 2 * K16, 1);
	h_close(&h);
}
END_TEST

/* ---- links ---- */

START_TEST(link_failure_is_reported)
{
	struct harness h;
	struct tconn *a;

	h_open(&h, 1, 16, WR_WAIT_EXCLUSIVE);
	h_conn(&h, 0, K16, K16, K16, K16, &no_cork, K16, 0);
	a = &h.side[0].conn[0];
	produce(a, 100);
	loopdev_drop_link(wr_link_qp(h.side[0].link[0]));
	h_run(&h);
	ck_assert_int_eq(a->link_failed, 1);
	ck_assert_int_eq(h.side[0].link_down[0], 1);
	ck_assert_int_eq(produce(a, 0), K16 - 100); /* ring still usable */
	ck_assert_int_eq(tx_push(A(&h, 0)), -ENOLINK);
	h_close(&h);
}
END_TEST

/* Several MiB each way on two connections; link 0 dies midway. */
static void
failover_case(uint64_t drop_at, bool cork_on, bool in_cb, bool two_devs)
{
	struct harness h;
	int k, i;

	h_open2(&h, 2, 4, WR_WAIT_EXCLUSIVE, two_devs);
	h.failover_in_cb = in_cb;
	h_conn(&h, 0, K16, K16, 2 * K16, K16, cork_on ? &cork : &no_cork,
	       3 << 20, 2 << 20);
	h_conn(&h, 1, K16, 2 * K16, K16, K16, cork_on ? &cork : &no_cork,
	       2 << 20, 3 << 20);
	h.side[1].conn[0].slice = 5000;
	h.side[0].conn[1].slice = 777;
	h.drop_at = drop_at;
	h_pump(&h);
	ck_assert(h.failed_over);
	h_check_streams(&h);
	for (k = 0; k < 2; k++)
		for (i = 0; i < 2; i++) {
			struct rconn *rc = h.side[k].conn[i].rc;

			ck_assert_uint_eq(rc->stats.failovers, 1);
			ck_assert_uint_eq(rc->stats.out_of_sync, 0);
			ck_assert_ptr_eq(rc->link, h.side[k].link[1]);
			ck_assert_int_eq(h.side[k].conn[i].aborts, 0);
			ck_assert_int_eq(rc->cdc_pend_old, 0);
		}
	ck_assert_uint_eq(A(&h, 0)->stats.tx_bytes, 3 << 20);
	/* bytes whose CDC was flushed went again, counted apart */
	ck_assert_uint_gt(
		h.side[0].sum.resent_bytes + h.side[1].sum.resent_bytes, 0);
	h_close(&h);
}

/*
 * The link group ends under both connections (bytes in flight, at any
 * point of the streams, rings and RMBs wrapping, autocork holding bytes)
 * and each resumes on a new group (link 1, a PD of its own, buffers
 * registered anew): both directions arrive whole, once, in order.
 */
static void
resume_case(uint64_t drop_at, bool cork_on, int mode)
{
	struct harness h;
	int k, i;

	h_open3(&h, 2, 4, WR_WAIT_EXCLUSIVE, false, true);
	h.after_drop = mode;
	h_conn(&h, 0, K16, K16, 2 * K16, K16, cork_on ? &cork : &no_cork,
	       3 << 20, 2 << 20);
	h_conn(&h, 1, K16, 2 * K16, K16, K16, cork_on ? &cork : &no_cork,
	       2 << 20, 3 << 20);
	h.side[1].conn[0].slice = 5000;
	h.side[0].conn[1].slice = 777;
	h.drop_at = drop_at;
	h_pump(&h);
	ck_assert(h.failed_over);
	h_check_streams(&h);
	h_reap(&h);
	for (k = 0; k < 2; k++)
		for (i = 0; i < 2; i++) {
			struct rconn *rc = h.side[k].conn[i].rc;

			ck_assert_uint_eq(rc->stats.resumes, 1);
			ck_assert_ptr_eq(rc->link, mode == H_RESUME_TCP ?
							   NULL :
							   h.side[k].link[1]);
			ck_assert_int_eq(h.side[k].conn[i].aborts, 0);
			ck_assert_uint_eq(rc->rx_off,
					  h.side[k].conn[i].rx_total);
			ck_assert_uint_eq(tx_fin_off(rc),
					  h.side[k].conn[i].tx_total);
		}
	ck_assert_uint_eq(A(&h, 0)->stats.tx_bytes, 3 << 20);
	if (mode == H_RESUME_DEAF)
		ck_assert_int_gt(h.took, 0);
	if (mode == H_RESUME_LATE)
		ck_assert_int_gt(h.skipped, 0);
	if (mode == H_RESUME_TCP)
		for (i = 0; i < 2; i++) {
			close(h.sp[i][0]);
			close(h.sp[i][1]);
		}
	h_close(&h);
}

START_TEST(resume_preserves_streams)
{
	resume_case(1 << 20, false, H_RESUME);
	resume_case(1, false, H_RESUME);
	resume_case((1 << 20) + 12345, true, H_RESUME);
	resume_case((3 << 20) - 100, true, H_RESUME);
}
END_TEST

/* The same, resumed over TCP (a socket pair) instead of a new group. */
START_TEST(resume_over_tcp_preserves_streams)
{
	resume_case(1 << 20, false, H_RESUME_TCP);
	resume_case(1, true, H_RESUME_TCP);
	resume_case((2 << 20) + 4321, true, H_RESUME_TCP);
}
END_TEST

/* CDCs the receiver never handled: it takes the sender's word for them. */
START_TEST(resume_takes_bytes_peer_saw_complete)
{
	resume_case(1 << 20, false, H_RESUME_DEAF);
	resume_case((1 << 19) + 333, true, H_RESUME_DEAF);
	resume_case(1, true, H_RESUME_DEAF);
}
END_TEST

/* Completions the sender never saw: the receiver's count wins. */
START_TEST(resume_skips_bytes_peer_has)
{
	resume_case(1 << 20, false, H_RESUME_LATE);
	resume_case((2 << 20) + 1, true, H_RESUME_LATE);
	resume_case(1, false, H_RESUME_LATE);
}
END_TEST

/*
 * A peer's counts that cannot be true are refused, and nothing moves:
 * received more than we ever wrote, less than it said it consumed,
 * written past the window we gave it.
 */
START_TEST(resume_refuses_impossible_offsets)
{
	struct harness h;
	uint64_t rx, fin;
	const char *why;
	struct rconn *a;

	h_open3(&h, 2, 4, WR_WAIT_EXCLUSIVE, false, true);
	h_conn(&h, 0, K16, K16, K16, K16, &no_cork, 40000, 30000);
	h_pump(&h);
	h_check_streams(&h);
	a = A(&h, 0);
	tx_detach(a);
	ck_assert_int_eq(tx_resume_check(a, 40000, 30000, &rx, &fin, &why), 0);
	ck_assert_uint_eq(rx, 30000);
	ck_assert_uint_eq(fin, 40000);
	ck_assert_int_eq(tx_resume_check(a, 40001, 30000, &rx, &fin, &why),
			 -EPROTO);
	ck_assert_str_eq(why, "peer received more than was sent");
	ck_assert_int_eq(tx_resume_check(a, 100, 30000, &rx, &fin, &why),
			 -EPROTO);
	ck_assert_str_eq(why, "peer received less than it consumed");
	ck_assert_int_eq(
		tx_resume_check(a, 40000, 30000 + K16 + 1, &rx, &fin, &why),
		-EPROTO);
	ck_assert_str_eq(why, "peer wrote past the window");
	ck_assert_int_eq(tx_resume(a, h.side[0].link[1],
				   h_mr(&h.side[0], a->sndbuf, 1)->lkey, 1,
				   UINT64_MAX, 0, &why),
			 -EPROTO);
	ck_assert_ptr_null(a->link);
	ck_assert_uint_eq(a->stats.resumes, 0);
	h_close(&h);
}
END_TEST

START_TEST(failover_preserves_streams)
{
	failover_case(1 << 20, false, false, false);
	failover_case(1, false, false, false);
	failover_case((1 << 20) + 12345, true, false, false);
	failover_case((3 << 20) - 100, true, false, false);
	failover_case(1 << 20, false, true, false);
	failover_case(1 << 19, true, true, false);
}
END_TEST

/*
 * The second link on another device: the same bytes have other keys
 * there (a send ring's lkey, the peer RMB's rkey), and the connections
 * move with them.
 */
START_TEST(failover_to_another_device)
{
	failover_case(1 << 20, false, false, true);
	failover_case(1, true, false, true);
	failover_case((2 << 20) + 999, true, true, true);
}
END_TEST

/*
 * Moving to the other device with the first device's rkey is what a
 * data path that pins one device would do: the peer's device refuses
 * the WRITE (remote access error) and that link fails too; no byte
 * lands in the RMB through a key of another device.
 */
START_TEST(failover_with_other_devices_key_fails)
{
	struct harness h;
	struct tconn *c;

	h_open2(&h, 2, 4, WR_WAIT_EXCLUSIVE, true);
	h_conn(&h, 0, K16, K16, K16, K16, &no_cork, 300, 0);
	c = &h.side[0].conn[0];
	produce(c, 100);
	h_run(&h);
	consume(&h.side[1].conn[0], 0);
	ck_assert_uint_eq(h.side[1].conn[0].rx_off, 100);
	produce(c, 200);
	loopdev_drop_link(wr_link_qp(h.side[0].link[0]));
	h_run(&h);
	ck_assert_int_eq(c->link_failed, 1);
	ck_assert_int_eq(tx_failover(c->rc, h.side[0].link[1],
				     h_mr(&h.side[0], c->rc->sndbuf, 1)->lkey,
				     h_mr(&h.side[1], B(&h, 0)->rmb, 0)->rkey),
			 0);
	h_run(&h);
	consume(&h.side[1].conn[0], 0);
	ck_assert_int_eq(h.side[0].link_down[1], 1);
	ck_assert_uint_eq(h.side[1].conn[0].rx_off, 100);
	ck_assert_int_eq(c->link_failed, 2);
	h_close(&h);
}
END_TEST

/*
 * The old link flushed a CDC whose bytes the peer had in fact received
 * and consumed (its consumer cursor says so): they are not sent again,
 * and the window is whole.
 */
START_TEST(failover_skips_bytes_peer_consumed)
{
	struct cdc_info m = {0};
	uint8_t buf[CDC_MSG_LEN];
	struct harness h;
	const char *why;

	h_open(&h, 2, 4, WR_WAIT_EXCLUSIVE);
	h_conn(&h, 0, K16, K16, K16, K16, &no_cork, 300, 0);
	produce(&h.side[0].conn[0], 100);
	h_run(&h);
	ck_assert_uint_eq(A(&h, 0)->tx_curs_fin.count, 100);
	produce(&h.side[0].conn[0], 200);
	loopdev_drop_link(wr_link_qp(h.side[0].link[0]));
	h_run(&h);
	ck_assert_int_eq(h.side[0].conn[0].link_failed, 1);
	ck_assert_uint_eq(A(&h, 0)->tx_curs_fin.count, 100);
	/* what B would have said had that CDC reached it */
	m.seqno = (uint16_t)(A(&h, 0)->local_rx_ctrl.seqno + 1);
	m.token = A(&h, 0)->token;
	m.cons.count = 300;
	ck_assert_int_eq(cdc_msg_encode(buf, sizeof(buf), &m), CDC_MSG_LEN);
	ck_assert_int_eq(h_recv(&h.side[0], buf, sizeof(buf), &why), 0);
	ck_assert_int_eq(h_move(&h.side[0].conn[0], 1), 0);
	ck_assert_uint_eq(A(&h, 0)->tx_curs_sent.count, 300);
	ck_assert_uint_eq(A(&h, 0)->local_tx_ctrl.prod.count, 300);
	ck_assert_uint_eq(A(&h, 0)->peer_rmbe_space, K16);
	ck_assert_uint_eq(tx_unsent(A(&h, 0)), 0);
	h_run(&h);
	ck_assert_uint_eq(A(&h, 0)->stats.resent_bytes, 0);
	ck_assert_uint_eq(A(&h, 0)->tx_curs_fin.count, 300);
	ck_assert_uint_eq(A(&h, 0)->stats.tx_bytes, 300);
	ck_assert_int_eq(A(&h, 0)->cdc_pend_old, 0);
	h_close(&h);
}
END_TEST

/* ---- malformed CDCs ---- */

struct forge {
	struct harness h;
	struct cdc_info m;
	uint8_t buf[CDC_MSG_LEN + CDC_DATA_MAX + 1];
};

/* B has 100 bytes from A in its RMB, A 100 bytes from B. */
static void
forge_open(struct forge *f)
{
	h_open(&f->h, 1, 16, WR_WAIT_EXCLUSIVE);
	h_conn(&f->h, 0, K16, K16, K16, K16, &no_cork, 100, 100);
	produce(&f->h.side[0].conn[0], 0);
	produce(&f->h.side[1].conn[0], 0);
	h_run(&f->h);
	ck_assert_uint_eq(rx_readable(B(&f->h, 0)), 100);
	/* a valid next CDC from A, to be spoilt */
	memset(&f->m, 0, sizeof(f->m));
	f->m.seqno = (uint16_t)(B(&f->h, 0)->local_rx_ctrl.seqno + 1);
	f->m.token = B(&f->h, 0)->token;
	f->m.prod.count = 100;
}

/* Feed f->m (or f->buf when raw) to B: h_recv's result. */
static int
forge_feed(struct forge *f, bool raw, size_t len)
{
	struct side *s = &f->h.side[1];
	struct cdc_info before = B(&f->h, 0)->local_rx_ctrl, *now;
	const char *why = NULL;
	int err;

	if (!raw)
		ck_assert_int_eq(cdc_msg_encode(f->buf, sizeof(f->buf), &f->m),
				 CDC_MSG_LEN);
	err = h_recv(s, f->buf, len, &why);
	if (err) {
		ck_assert_ptr_nonnull(why);
		s->why = why;
		/* refused: nothing of it was believed */
		now = &B(&f->h, 0)->local_rx_ctrl;
		ck_assert_uint_eq(now->seqno, before.seqno);
		ck_assert_uint_eq(now->prod.wrap, before.prod.wrap);
		ck_assert_uint_eq(now->prod.count, before.prod.count);
		ck_assert_uint_eq(now->cons.wrap, before.cons.wrap);
		ck_assert_uint_eq(now->cons.count, before.cons.count);
		ck_assert_uint_eq(now->conn_state_flags,
				  before.conn_state_flags);
		ck_assert_uint_eq(rx_readable(B(&f->h, 0)), 100);
	}
	return err;
}

START_TEST(malformed_cdcs_refused)
{
	struct forge f;
	struct cdc_info good;
	uint64_t errors;

	forge_open(&f);
	good = f.m;
	ck_assert_int_eq(forge_feed(&f, false, CDC_MSG_LEN), 0); /* valid */
	good.seqno++;
	/* length, type, reserved bytes */
	f.m = good;
	ck_assert_int_eq(cdc_msg_encode(f.buf, sizeof(f.buf), &f.m),
			 CDC_MSG_LEN);
	ck_assert_int_eq(forge_feed(&f, true, 43), -EPROTO);
	f.buf[0] = 0x42;
	ck_assert_int_eq(forge_feed(&f, true, CDC_MSG_LEN), -EPROTO);
	ck_assert_int_eq(cdc_msg_encode(f.buf, sizeof(f.buf), &f.m),
			 CDC_MSG_LEN);
	f.buf[40] = 1;
	ck_assert_int_eq(forge_feed(&f, true, CDC_MSG_LEN), -EPROTO);
	/* unknown token */
	f.m.token = 0x7777;
	ck_assert_int_eq(forge_feed(&f, false, CDC_MSG_LEN), -ENOENT);
	/* stale seqno: dropped and counted, no error */
	f.m = good;
	f.m.seqno = (uint16_t)(good.seqno - 1);
	f.m.prod.count = 5000;
	ck_assert_int_eq(forge_feed(&f, false, CDC_MSG_LEN), 0);
	ck_assert_uint_eq(B(&f.h, 0)->stats.rx_stale, 1);
	ck_assert_uint_eq(rx_readable(B(&f.h, 0)), 100);
	errors = B(&f.h, 0)->stats.proto_errors;
	/* producer cursor outside the RMB, backwards, past the window */
	f.m = good;
	f.m.prod.count = K16;
	ck_assert_int_eq(forge_feed(&f, false, CDC_MSG_LEN), -EPROTO);
	f.m.prod.count = 99;
	ck_assert_int_eq(forge_feed(&f, false, CDC_MSG_LEN), -EPROTO);
	f.m.prod.wrap = 0xffff;
	f.m.prod.count = 100;
	ck_assert_int_eq(forge_feed(&f, false, CDC_MSG_LEN), -EPROTO);
	f.m.prod.wrap = 1;
	f.m.prod.count = 1; /* within one turn of 100, past cons 0 + 16 KiB */
	ck_assert_int_eq(forge_feed(&f, false, CDC_MSG_LEN), -EPROTO);
	/* consumer cursor outside the peer's RMB, past what B sent */
	f.m = good;
	f.m.cons.count = K16 + 1;
	ck_assert_int_eq(forge_feed(&f, false, CDC_MSG_LEN), -EPROTO);
	f.m.cons.count = 101;
	ck_assert_int_eq(forge_feed(&f, false, CDC_MSG_LEN), -EPROTO);
	/* a real consumer update, then one moving backwards */
	f.m.cons.count = 60;
	ck_assert_int_eq(forge_feed(&f, false, CDC_MSG_LEN), 0);
	ck_assert_uint_eq(B(&f.h, 0)->peer_rmbe_space, K16 - 40);
	good.seqno++;
	f.m = good;
	f.m.cons.count = 59;
	ck_assert_int_eq(forge_feed(&f, false, CDC_MSG_LEN), -EPROTO);
	/* data after peer_done_writing */
	f.m = good;
	f.m.cons.count = 60;
	f.m.conn_state_flags = CDC_CS_PEER_DONE_WRITING;
	ck_assert_int_eq(forge_feed(&f, false, CDC_MSG_LEN), 0);
	f.m.seqno++;
	f.m.prod.count = 110;
	ck_assert_int_eq(forge_feed(&f, false, CDC_MSG_LEN), -EPROTO);
	ck_assert_uint_eq(B(&f.h, 0)->stats.proto_errors, errors + 8);
	ck_assert_int_eq(f.h.side[1].conn[0].aborts, 0);
	h_close(&f.h);
}
END_TEST

/*
 * Linux's passive close (after our done_writing) sends peer_conn_closed
 * alone: it ends the peer's stream as done_writing does, once the bytes
 * before it are read (340-ksmc-target hung on it).
 */
START_TEST(closed_alone_ends_the_stream)
{
	struct forge f;
	struct tconn *b;

	forge_open(&f);
	b = &f.h.side[1].conn[0];
	f.m.conn_state_flags = CDC_CS_PEER_CONN_CLOSED;
	ck_assert_int_eq(forge_feed(&f, false, CDC_MSG_LEN), 0);
	ck_assert_int_eq(b->done, 0); /* 100 bytes before it still unread */
	ck_assert_uint_eq(consume(b, 0), 100);
	ck_assert_int_eq(b->done, 1);
	ck_assert_uint_eq(b->done_at, 100);
	ck_assert_int_eq(b->closed, 1);
	ck_assert_int_eq(b->aborts, 0);
	h_close(&f.h);
}
END_TEST

/*
 * Urgent data (a Linux peer's MSG_OOB) is read inline; once it is read,
 * every consumed byte is confirmed at once, however few: a Linux sender
 * of urgent data writes nothing more until its window is whole again.
 */
START_TEST(urgent_data_confirmed_in_full)
{
	struct forge f;
	struct tconn *b;

	forge_open(&f);
	b = &f.h.side[1].conn[0];
	f.m.prod_flags = CDC_PF_URG_DATA_PRESENT;
	ck_assert_int_eq(forge_feed(&f, false, CDC_MSG_LEN), 0);
	ck_assert_uint_eq(B(&f.h, 0)->rx_curs_confirmed.count, 0);
	ck_assert_uint_eq(consume(b, 0), 100);
	/* 100 bytes: far below the window-update rule's threshold */
	ck_assert_uint_eq(B(&f.h, 0)->rx_curs_confirmed.count, 100);
	ck_assert_int_eq(b->aborts, 0);
	h_close(&f.h);
}
END_TEST

/* Feed f->m's header with n bytes of data behind it, raw. */
static int
forge_data(struct forge *f, const char *data, size_t n)
{
	f->m.data_len = (uint16_t)n;
	ck_assert_int_eq(cdc_msg_encode(f->buf, sizeof(f->buf), &f->m),
			 CDC_MSG_LEN);
	memcpy(f->buf + CDC_MSG_LEN, data, n);
	return forge_feed(f, true, CDC_MSG_LEN + n);
}

START_TEST(cdc_data_checked_then_copied)
{
	struct forge f;
	struct cdc_info good;
	const uint8_t *rmb;

	forge_open(&f);
	good = f.m;
	rmb = B(&f.h, 0)->rmb->addr;
	/* more bytes than the cursor announces */
	f.m.prod.count = 103;
	ck_assert_int_eq(forge_data(&f, "abcde", 5), -EPROTO);
	ck_assert_str_eq(f.h.side[1].why,
			 "CDC data beyond the bytes it announces");
	/* the length is not the header and the data it names */
	f.m.prod.count = 105;
	f.m.data_len = 0;
	ck_assert_int_eq(cdc_msg_encode(f.buf, sizeof(f.buf), &f.m),
			 CDC_MSG_LEN);
	ck_assert_int_eq(forge_feed(&f, true, CDC_MSG_LEN + 5), -EPROTO);
	/* a group that did not negotiate it */
	f.h.side[1].data_max = 0;
	ck_assert_int_eq(forge_data(&f, "abcde", 5), -EPROTO);
	ck_assert_str_eq(f.h.side[1].why,
			 "CDC carries data the group did not negotiate");
	f.h.side[1].data_max = CDC_DATA_MAX;
	/* a stale one is not copied: its place may hold newer bytes */
	f.m.seqno = (uint16_t)(good.seqno - 1);
	ck_assert_int_eq(forge_data(&f, "zzzzz", 5), 0);
	ck_assert_uint_eq(B(&f.h, 0)->stats.rx_stale, 1);
	ck_assert_uint_eq(rmb[100], 0);
	/* good: the last data_len bytes before the cursor */
	f.m = good;
	f.m.prod.count = 108;
	ck_assert_int_eq(forge_data(&f, "abcde", 5), 0);
	ck_assert_uint_eq(rx_readable(B(&f.h, 0)), 108);
	ck_assert_mem_eq(rmb + 103, "abcde", 5);
	/* forge_open's 100 bytes came in a CDC too */
	ck_assert_uint_eq(B(&f.h, 0)->stats.rx_data_cdcs, 2);
	ck_assert_uint_eq(B(&f.h, 0)->stats.proto_errors, 1);
	h_close(&f.h);
}
END_TEST

/* WRs A's link 0 posts for one push of n bytes, taken by B at once. */
static uint64_t
push_wrs(struct harness *h, size_t n)
{
	const struct wr_stats *ws = wr_link_stats(h->side[0].link[0]);
	uint64_t before = ws->posted;

	ck_assert_uint_eq(produce(&h->side[0].conn[0], n), n);
	h_run(h);
	consume(&h->side[1].conn[0], 0);
	h_run(h);
	return ws->posted - before;
}

START_TEST(small_pushes_ride_in_the_cdc)
{
	static const size_t sizes[] = {1, 7, 333, 1000, 1024, 1025, 4000, 17};
	struct harness h;
	struct tconn *a, *b;
	uint64_t cdcs;
	size_t i;

	h_open(&h, 1, 16, WR_WAIT_EXCLUSIVE);
	h_conn(&h, 0, K16, K16, K16, K16, &no_cork, 1 << 20, 0);
	a = &h.side[0].conn[0];
	b = &h.side[1].conn[0];
	/* one SEND up to CDC_DATA_MAX, a WRITE and a SEND above */
	ck_assert_uint_eq(push_wrs(&h, 1), 1);
	ck_assert_uint_eq(push_wrs(&h, 100), 1);
	ck_assert_uint_eq(push_wrs(&h, CDC_DATA_MAX), 1);
	ck_assert_uint_eq(push_wrs(&h, CDC_DATA_MAX + 1), 2);
	ck_assert_uint_eq(A(&h, 0)->stats.data_cdcs, 3);
	ck_assert_uint_eq(B(&h, 0)->stats.rx_data_cdcs, 3);
	ck_assert_uint_eq(wr_link_stats(h.side[0].link[0])->data_sends, 3);
	ck_assert_uint_eq(wr_link_stats(h.side[0].link[0])->writes, 1);
	/* across the end of the ring and of the RMB at once */
	ck_assert_uint_eq(push_wrs(&h, K16 - 10 - a->tx_off % K16), 2);
	ck_assert_uint_eq(push_wrs(&h, 100), 1);
	ck_assert_uint_eq(A(&h, 0)->tx_curs_sent.count, 90);
	ck_assert_uint_eq(B(&h, 0)->stats.rx_data_cdcs, 4);
	ck_assert_uint_eq(b->bad_at, 0);
	/* a group without the feature: every push a WRITE and a CDC */
	h_cdc_data(&h, false);
	ck_assert_uint_eq(push_wrs(&h, 100), 2);
	ck_assert_uint_eq(A(&h, 0)->stats.data_cdcs, 4);
	h_cdc_data(&h, true);
	/* odd sizes at every offset, byte for byte */
	cdcs = A(&h, 0)->stats.data_cdcs;
	for (i = 0; a->tx_off < a->tx_total; i++) {
		produce(a, sizes[i % 8]);
		h_run(&h);
		consume(b, 0);
	}
	h_pump(&h);
	h_check_streams(&h);
	ck_assert_uint_gt(A(&h, 0)->stats.data_cdcs, cdcs + 600);
	ck_assert_uint_eq(B(&h, 0)->stats.rx_data_cdcs,
			  A(&h, 0)->stats.data_cdcs);
	h_close(&h);
}
END_TEST

START_TEST(validation_newer_than_seen_aborts)
{
	struct forge f;

	forge_open(&f);
	/* claims a CDC completed that we never saw: out of sync */
	f.m.seqno = (uint16_t)(B(&f.h, 0)->local_rx_ctrl.seqno);
	f.m.prod_flags = CDC_PF_FAILOVER_VALIDATION;
	f.m.prod.count = 5000; /* ignored in a validation */
	ck_assert_int_eq(forge_feed(&f, false, CDC_MSG_LEN), 0);
	ck_assert_int_eq(f.h.side[1].conn[0].aborts, 0);
	f.m.seqno++;
	ck_assert_int_eq(forge_feed(&f, false, CDC_MSG_LEN), 0);
	ck_assert_int_eq(f.h.side[1].conn[0].aborts, 1);
	ck_assert_uint_eq(B(&f.h, 0)->stats.out_of_sync, 1);
	h_run(&f.h);
	/* and the peer is told */
	ck_assert_int_eq(f.h.side[0].conn[0].aborts, 1);
	h_close(&f.h);
}
END_TEST

/* ---- autocork ---- */

START_TEST(first_send_never_corks)
{
	struct harness h;
	struct tconn *a;

	h_open(&h, 1, 16, WR_WAIT_EXCLUSIVE);
	h_conn(&h, 0, K16, K16, K16, K16, &cork, 30, 0);
	a = &h.side[0].conn[0];
	ck_assert_uint_eq(produce(a, 10), 10);
	ck_assert_uint_eq(A(&h, 0)->stats.tx_cdcs, 1); /* posted at once */
	ck_assert_uint_eq(A(&h, 0)->stats.corked, 0);
	/* a 10-byte WRITE goes inline (wr.c decides and counts) */
	ck_assert_uint_ge(wr_link_stats(h.side[0].link[0])->inline_wrs, 1);
	ck_assert_uint_eq(produce(a, 10), 10);
	ck_assert_uint_eq(produce(a, 10), 10);
	ck_assert_uint_eq(A(&h, 0)->stats.tx_cdcs, 1);
	ck_assert_uint_eq(A(&h, 0)->stats.corked, 2);
	ck_assert_uint_eq(tx_unsent(A(&h, 0)), 20);
	/* the completion of the only CDC in flight pushes the 20 bytes */
	h_run(&h);
	ck_assert_uint_eq(A(&h, 0)->stats.tx_cdcs, 2);
	ck_assert_uint_eq(A(&h, 0)->stats.completion_pushes, 1);
	ck_assert_uint_eq(tx_unsent(A(&h, 0)), 0);
	ck_assert_uint_eq(rx_readable(B(&h, 0)), 30);
	ck_assert_uint_eq(B(&h, 0)->stats.rx_cdcs, 2);
	ck_assert_uint_eq(h.side[0].sum.corked, 2);
	ck_assert_uint_eq(h.side[0].sum.completion_pushes, 1);
	h_pump(&h);
	h_check_streams(&h);
	/* without autocork every push posts */
	h_close(&h);
	h_open(&h, 1, 16, WR_WAIT_EXCLUSIVE);
	h_conn(&h, 0, K16, K16, K16, K16, &no_cork, 30, 0);
	a = &h.side[0].conn[0];
	produce(a, 10);
	produce(a, 10);
	produce(a, 10);
	ck_assert_uint_eq(A(&h, 0)->stats.tx_cdcs, 3);
	ck_assert_uint_eq(A(&h, 0)->stats.corked, 0);
	h_pump(&h);
	h_close(&h);
}
END_TEST

START_TEST(cork_limit_respected)
{
	struct tx_params small = {.autocork = true, .autocork_size = 1000};
	struct harness h;
	struct tconn *a;

	/* autocork_size below sndbuf/2 */
	h_open(&h, 1, 16, WR_WAIT_EXCLUSIVE);
	h_conn(&h, 0, K16, K16, K16, K16, &small, 4000, 0);
	a = &h.side[0].conn[0];
	produce(a, 10);
	produce(a, 1000); /* == limit: corked */
	ck_assert_uint_eq(A(&h, 0)->stats.corked, 1);
	produce(a, 1); /* 1001 > limit: goes */
	ck_assert_uint_eq(A(&h, 0)->stats.tx_cdcs, 2);
	ck_assert_uint_eq(tx_unsent(A(&h, 0)), 0);
	h_pump(&h);
	h_check_streams(&h);
	h_close(&h);
	/* sndbuf/2 below autocork_size */
	h_open(&h, 1, 16, WR_WAIT_EXCLUSIVE);
	h_conn(&h, 0, K16, K16, K16, K16, &cork, K16, 0);
	a = &h.side[0].conn[0];
	produce(a, 10);
	produce(a, K16 / 2);
	ck_assert_uint_eq(A(&h, 0)->stats.corked, 1);
	ck_assert_uint_eq(A(&h, 0)->stats.tx_cdcs, 1);
	produce(a, 1);
	ck_assert_uint_eq(A(&h, 0)->stats.tx_cdcs, 2);
	h_pump(&h);
	h_check_streams(&h);
	h_close(&h);
}
END_TEST

/*
 * Lazy completions: the ring filled while the peer's window was shut and
 * nothing was in flight, so the owner waits for ring space with no CDC
 * to ask a completion of.  When the window opens, the push's CDC must be
 * one whose completion wakes us: nothing else may ever arrive on the link
 * (the peer may be waiting for us the same way), and a lazily posted CDC
 * would leave both sides waiting.
 */
START_TEST(ring_full_behind_shut_window_wakes_on_push)
{
	struct harness h;
	struct tconn *a, *b;
	int ready;

	h_open(&h, 1, 16, WR_WAIT_EXCLUSIVE);
	h_conn(&h, 0, K16, K16, K16, K16, &no_cork, 4 * K16, 0);
	a = &h.side[0].conn[0];
	b = &h.side[1].conn[0];
	b->hold = true;
	ck_assert_uint_eq(produce(a, 0), K16); /* fills B's window */
	h_run(&h);
	h_reap(&h);
	ck_assert_uint_eq(produce(a, 0), K16); /* into the ring, unsent */
	h_run(&h);
	ck_assert_uint_eq(produce(a, 0), 0); /* ring full: TX_BLOCKED */
	ck_assert_int_eq(A(&h, 0)->cdc_pend_tx_wr, 0);
	ready = a->space_ready;
	b->hold = false;
	ck_assert_uint_eq(consume(b, 0), K16); /* B's update opens the window */
	h_run(&h);
	h_run(&h); /* a notification the last turn raised */
	ck_assert_uint_eq(tx_unsent(A(&h, 0)), 0);
	/* the push's completion came by itself and gave the ring back */
	ck_assert_int_eq(A(&h, 0)->cdc_pend_tx_wr, 0);
	ck_assert_int_gt(a->space_ready, ready);
	h_pump(&h);
	h_check_streams(&h);
	h_close(&h);
}
END_TEST

/* Two CDCs in flight, a tail corked: the first completion keeps it
 * corked, the last pushes it. */
START_TEST(last_completion_pushes_tail)
{
	struct harness h;
	struct tconn *a;

	h_open(&h, 1, 16, WR_WAIT_EXCLUSIVE);
	h_conn(&h, 0, K16, K16, K16, K16, &cork, 10 + 9000 + 5, 0);
	a = &h.side[0].conn[0];
	produce(a, 10);
	produce(a, 9000); /* over sndbuf/2: not corked */
	ck_assert_int_eq(A(&h, 0)->cdc_pend_tx_wr, 2);
	produce(a, 5);
	ck_assert_uint_eq(A(&h, 0)->stats.corked, 1);
	h_run(&h);
	ck_assert_uint_eq(tx_unsent(A(&h, 0)), 0);
	ck_assert_uint_eq(A(&h, 0)->stats.corked, 1); /* one push corked */
	ck_assert_uint_eq(A(&h, 0)->stats.completion_pushes, 1);
	ck_assert_uint_eq(A(&h, 0)->stats.tx_cdcs, 3);
	/* the push's own CDC was posted lazily: nobody waits for it */
	ck_assert_int_eq(A(&h, 0)->cdc_pend_tx_wr, 1);
	h_reap(&h);
	ck_assert_int_eq(A(&h, 0)->cdc_pend_tx_wr, 0);
	h_pump(&h);
	h_check_streams(&h);
	h_close(&h);
}
END_TEST

/* The last completion's push finds no free slot (the one slot is freed
 * only after the completion): it parks and goes when woken. */
START_TEST(corked_tail_through_slot_wait)
{
	struct harness h;
	struct tconn *a;

	h_open(&h, 1, 1, WR_WAIT_EXCLUSIVE);
	h_conn(&h, 0, K16, K16, K16, K16, &cork, 15, 0);
	a = &h.side[0].conn[0];
	produce(a, 10);
	produce(a, 5);
	ck_assert_uint_eq(A(&h, 0)->stats.corked, 1);
	h_run(&h);
	ck_assert_uint_eq(tx_unsent(A(&h, 0)), 0);
	ck_assert_uint_eq(A(&h, 0)->stats.slot_waits, 1);
	ck_assert_uint_eq(A(&h, 0)->stats.completion_pushes, 1);
	ck_assert_uint_eq(rx_readable(B(&h, 0)), 15);
	h_pump(&h);
	h_check_streams(&h);
	h_close(&h);
}
END_TEST

/* A corked tail while the window is shut goes when it opens. */
START_TEST(corked_tail_when_window_opens)
{
	struct harness h;
	struct tconn *a, *b;

	h_open(&h, 1, 16, WR_WAIT_EXCLUSIVE);
	h_conn(&h, 0, 2 * K16, K16, K16, K16, &cork, K16 + 100, 0);
	a = &h.side[0].conn[0];
	b = &h.side[1].conn[0];
	b->hold = true;
	produce(a, K16);
	produce(a, 100); /* corked behind the full window */
	h_run(&h);
	ck_assert_uint_eq(tx_unsent(A(&h, 0)), 100);
	ck_assert_uint_eq(A(&h, 0)->peer_rmbe_space, 0);
	b->hold = false;
	consume(b, 0);
	h_run(&h);
	ck_assert_uint_eq(tx_unsent(A(&h, 0)), 0);
	consume(b, 0);
	h_pump(&h);
	h_check_streams(&h);
	h_close(&h);
}
END_TEST

/*
 * The owner corked at the door waits for the last CDC in flight; one
 * posted behind it meanwhile (here our window update) becomes the last,
 * so it is awaited too and must not be lazy: with nothing else coming
 * to poll, its completion alone opens the door (two-host streams of
 * 256 B writes stalled 30 and 60 s at their tail, until a TEST_LINK made
 * the link poll).
 */
START_TEST(door_awaits_a_cdc_posted_behind_it)
{
	struct harness h;
	struct tconn *a;
	uint64_t lazy;
	int ready;

	h_open(&h, 1, 16, WR_WAIT_EXCLUSIVE);
	h_conn(&h, 0, K16, K16, K16, K16, &cork, 100, K16);
	a = &h.side[0].conn[0];
	a->hold = true;
	ck_assert_uint_eq(produce(&h.side[1].conn[0], 0), K16); /* A's RMB */
	h_run(&h);
	h_reap(&h);
	ck_assert_uint_eq(produce(a, 10), 10); /* nothing in flight: goes */
	ck_assert_int_eq(A(&h, 0)->cdc_pend_tx_wr, 1);
	ck_assert(tx_cork_door(A(&h, 0), 50));
	ready = a->space_ready;
	lazy = wr_link_stats(h.side[0].link[0])->lazy_posts;
	a->hold = false;
	ck_assert_uint_eq(consume(a, 0), K16); /* drained: window update */
	ck_assert_int_eq(A(&h, 0)->cdc_pend_tx_wr, 2);
	ck_assert_uint_eq(wr_link_stats(h.side[0].link[0])->lazy_posts, lazy);
	h_run(&h);
	h_run(&h); /* a notification the last turn raised */
	ck_assert_int_eq(A(&h, 0)->cdc_pend_tx_wr, 0);
	ck_assert(!tx_door_closed(A(&h, 0)));
	ck_assert_int_gt(a->space_ready, ready);
	h_pump(&h);
	h_check_streams(&h);
	h_close(&h);
}
END_TEST

/* ---- slot waiting ---- */

static void
many_conns(enum wr_slot_wait mode, bool cork_on)
{
	struct harness h;
	uint64_t waits = 0;
	int i;

	h_open(&h, 1, 2, mode);
	for (i = 0; i < NCONN; i++)
		h_conn(&h, i, K16, K16, K16, K16, cork_on ? &cork : &no_cork,
		       100000 + (uint64_t)i * 1000, 20000);
	for (i = 0; i < NCONN; i += 3)
		h.side[1].conn[i].slice = 3000;
	h_pump(&h);
	h_check_streams(&h);
	for (i = 0; i < NCONN; i++)
		waits += A(&h, i)->stats.slot_waits;
	ck_assert_uint_gt(waits, 0);
	ck_assert_uint_eq(h.side[0].sum.slot_waits, waits);
	ck_assert_uint_gt(wr_link_stats(h.side[0].link[0])->slot_waits, 0);
	ck_assert_uint_ge(wr_link_stats(h.side[0].link[0])->wakeups,
			  wr_link_stats(h.side[0].link[0])->contended_frees);
	h_close(&h);
}

START_TEST(scarce_slots_many_conns)
{
	many_conns(WR_WAIT_EXCLUSIVE, false);
	many_conns(WR_WAIT_EXCLUSIVE, true);
	many_conns(WR_WAIT_ALL, false);
}
END_TEST

START_TEST(free_with_cdcs_in_flight)
{
	struct harness h;

	h_open(&h, 1, 16, WR_WAIT_EXCLUSIVE);
	h_conn(&h, 0, K16, K16, K16, K16, &no_cork, K16, 0);
	produce(&h.side[0].conn[0], 0);
	ck_assert_int_eq(A(&h, 0)->cdc_pend_tx_wr, 1);
	tx_conn_free(A(&h, 0)); /* deferred: the ring is still being read */
	h.side[0].conn[0].rc = NULL;
	ck_assert_uint_eq(buf_pool_stats(h.side[0].pool)->bytes_used[0], K16);
	h_run(&h);
	ck_assert_uint_eq(buf_pool_stats(h.side[0].pool)->bytes_used[0], 0);
	ck_assert_uint_eq(rx_readable(B(&h, 0)), K16);
	h_close(&h);
}
END_TEST

/*
 * Connections aborted and freed at once by their owner while the link's
 * only TX slot is taken (an idle-timeout sweep, say): each abort still
 * reaches the peer once a slot frees, and only then are the connections
 * and their buffers freed.
 */
START_TEST(free_after_abort_parked_for_slot)
{
	struct harness h;
	int i;

	h_open(&h, 1, 1, WR_WAIT_EXCLUSIVE);
	for (i = 0; i < 4; i++)
		h_conn(&h, i, K16, K16, K16, K16, &no_cork, 0, 0);
	produce(&h.side[0].conn[0], 0);
	/* conn 0 sends something: its CDC holds the one slot */
	h.side[0].conn[0].tx_total = 100;
	produce(&h.side[0].conn[0], 0);
	ck_assert_int_eq(A(&h, 0)->cdc_pend_tx_wr, 1);
	for (i = 1; i < 4; i++) {
		ck_assert_int_eq(tx_close(A(&h, i), TX_CLOSE_ABORT), 0);
		ck_assert(A(&h, i)->waiter.queued);
		tx_conn_free(A(&h, i));
		h.side[0].conn[i].rc = NULL;
	}
	ck_assert_uint_eq(buf_pool_stats(h.side[0].pool)->bytes_used[0],
			  4 * K16);
	h_run(&h);
	for (i = 1; i < 4; i++)
		ck_assert_int_eq(h.side[1].conn[i].aborts, 1);
	ck_assert_int_eq(h.side[1].conn[0].aborts, 0);
	/* the three went once their aborts completed */
	ck_assert_uint_eq(buf_pool_stats(h.side[0].pool)->bytes_used[0], K16);
	ck_assert_uint_eq(buf_pool_stats(h.side[0].pool)->bytes_used[1], K16);
	h_close(&h);
}
END_TEST

/*
 * A link is freed (lgr.c does it on a timer after it went down) while
 * its peer stopped answering: the CDCs in flight on it never completed.
 * The connection moved to the other link meanwhile; freeing the old one
 * completes them with an error, so the connection, once freed by its
 * owner, goes and its buffers come back (they leaked: its count of CDCs
 * in flight on old links stayed above 0).
 */
START_TEST(link_freed_with_cdcs_in_flight)
{
	struct harness h;
	struct tconn *a;

	h_open(&h, 2, 4, WR_WAIT_EXCLUSIVE);
	h_conn(&h, 0, K16, K16, K16, K16, &no_cork, 300, 0);
	a = &h.side[0].conn[0];
	loopdev_hold(wr_link_qp(h.side[0].link[0]), true);
	produce(a, 100);
	h_run(&h);
	ck_assert_int_eq(A(&h, 0)->cdc_pend_tx_wr, 1);
	ck_assert_int_eq(h_move(a, 1), 0);
	ck_assert_int_eq(A(&h, 0)->cdc_pend_old, 1);
	wr_link_free(h.side[0].link[0]);
	h.side[0].link[0] = NULL;
	ck_assert_int_eq(A(&h, 0)->cdc_pend_old, 0);
	produce(a, 0);
	h_run(&h);
	consume(&h.side[1].conn[0], 0);
	ck_assert_uint_eq(h.side[1].conn[0].rx_off, 300);
	ck_assert_uint_eq(h.side[1].conn[0].bad_at, 0);
	h_close(&h);
}
END_TEST

/*
 * Two link groups to one daemon (B), each with its PD: Q's connection
 * on link 0, P's on link 1, on the same device.  P learned (or guessed)
 * the address and rkey of Q's RMB at B and writes there: B's device
 * refuses it (remote access error), P's link goes down, Q's link and
 * stream are untouched.
 */
START_TEST(rkey_of_another_group_is_refused)
{
	struct harness h;
	struct tconn *q, *p;

	h_open3(&h, 2, 4, WR_WAIT_EXCLUSIVE, false, true);
	h_cdc_data(&h, false); /* P's bytes go by WRITE, to the rkey */
	h_conn(&h, 0, K16, K16, K16, K16, &no_cork, 300, 0);
	h.on_link = 1;
	h_conn(&h, 1, K16, K16, K16, K16, &no_cork, 100, 0);
	q = &h.side[0].conn[0];
	p = &h.side[0].conn[1];
	produce(q, 100);
	h_run(&h);
	consume(&h.side[1].conn[0], 0);
	ck_assert_uint_eq(h.side[1].conn[0].rx_off, 100);
	A(&h, 1)->peer_rmb.vaddr = B(&h, 0)->rmb->iova;
	A(&h, 1)->peer_rmb.rkey = h_mr(&h.side[1], B(&h, 0)->rmb, 0)->rkey;
	A(&h, 1)->local_tx_ctrl.prod.count = 100; /* where Q's next bytes go */
	produce(p, 0);
	h_run(&h);
	ck_assert_int_eq(h.side[0].link_down[1], 1);
	ck_assert_int_eq(p->link_failed, 1);
	ck_assert_int_eq(h.side[0].link_down[0], 0);
	ck_assert_int_eq(h.side[1].link_down[0], 0);
	ck_assert_uint_eq(rx_readable(B(&h, 0)), 0);
	produce(q, 0);
	h_run(&h);
	consume(&h.side[1].conn[0], 0);
	ck_assert_uint_eq(h.side[1].conn[0].rx_off, 300);
	ck_assert_uint_eq(h.side[1].conn[0].bad_at, 0);
	ck_assert_int_eq(h.side[1].rx_errors, 0);
	h_close(&h);
}
END_TEST

/*
 * B aborts a connection and frees it while A's WRITE for it is still in
 * flight on link 0 (held: not yet executed).  The RMB element cools,
 * still registered and read by nobody: B's next connection with A gets
 * another element, on link 1, and A writes its first bytes there.  Then
 * the old WRITE executes: it lands in the cooling element, so neither of
 * A's links goes down (before, the element was given back at once: with
 * its old keys the old WRITE landed in the next connection's stream; with
 * new keys it took A's link, and every connection on it, down), and the
 * new connection's bytes are what B reads.
 */
START_TEST(aborted_rmb_cools_for_old_writes)
{
	struct harness h;
	struct tconn *old, *next;
	void *elem;

	h_open(&h, 2, 4, WR_WAIT_EXCLUSIVE);
	h_conn(&h, 0, K16, K16, K16, K16, &no_cork, 100, 0);
	loopdev_hold(wr_link_qp(h.side[0].link[0]), true);
	produce(&h.side[0].conn[0], 0);
	h_run(&h);
	ck_assert_int_eq(tx_close(B(&h, 0), TX_CLOSE_ABORT), 0);
	h_run(&h);
	ck_assert_int_eq(h.side[0].conn[0].aborts, 1);
	elem = B(&h, 0)->rmb->addr;
	tx_conn_free(B(&h, 0));
	h.side[1].conn[0].rc = NULL;
	h_run(&h);
	ck_assert_uint_eq(buf_pool_stats(h.side[1].pool)->bytes_used[BUF_RMB],
			  0);
	h.on_link = 1;
	h_conn(&h, 1, K16, K16, K16, K16, &no_cork, 100, 0);
	ck_assert_ptr_ne(B(&h, 1)->rmb->addr, elem); /* it cools */
	next = &h.side[1].conn[1];
	next->hold = true;
	produce(&h.side[0].conn[1], 0);
	h_run(&h);
	ck_assert_uint_eq(rx_readable(B(&h, 1)), 100);
	/* the old connection's WRITE goes now */
	loopdev_hold(wr_link_qp(h.side[0].link[0]), false);
	h_run(&h);
	ck_assert_int_eq(h.side[0].link_down[0], 0);
	ck_assert_int_eq(h.side[0].link_down[1], 0);
	next->hold = false;
	consume(next, 0);
	ck_assert_uint_eq(next->rx_off, 100);
	ck_assert_uint_eq(next->bad_at, 0);
	old = &h.side[0].conn[0];
	tx_conn_free(old->rc);
	old->rc = NULL;
	h_close(&h);
}
END_TEST

static Suite *
rconn_suite(void)
{
	Suite *s = suite_create("rconn");
	TCase *tc = tcase_create("stream");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, smallest_buffers_duplex);
	tcase_add_test(tc, small_pushes_ride_in_the_cdc);
	tcase_add_test(tc, wrap_around_every_boundary);
	tcase_add_test(tc, ring_full_and_window_full);
	tcase_add_test(tc, one_byte_reads);
	tcase_add_test(tc, drained_reader_reopens_window_at_once);
	tcase_add_test(tc, free_with_cdcs_in_flight);
	suite_add_tcase(s, tc);
	tc = tcase_create("close");
	tcase_set_timeout(tc, 60); /* ASan on a loaded machine */
	tcase_add_test(tc, half_close_each_direction);
	tcase_add_test(tc, fin_waits_for_window);
	tcase_add_test(tc, abort_each_direction);
	tcase_add_test(tc, buffers_zeroed_as_far_as_written);
	tcase_add_test(tc, aborted_ring_zeroed_past_rolled_back_cursor);
	tcase_add_test(tc, free_after_abort_parked_for_slot);
	tcase_add_test(tc, aborted_rmb_cools_for_old_writes);
	suite_add_tcase(s, tc);
	tc = tcase_create("link");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, link_failure_is_reported);
	tcase_add_test(tc, failover_preserves_streams);
	tcase_add_test(tc, failover_to_another_device);
	tcase_add_test(tc, failover_with_other_devices_key_fails);
	tcase_add_test(tc, failover_skips_bytes_peer_consumed);
	tcase_add_test(tc, link_freed_with_cdcs_in_flight);
	tcase_add_test(tc, rkey_of_another_group_is_refused);
	tcase_add_test(tc, resume_preserves_streams);
	tcase_add_test(tc, resume_over_tcp_preserves_streams);
	tcase_add_test(tc, resume_takes_bytes_peer_saw_complete);
	tcase_add_test(tc, resume_skips_bytes_peer_has);
	tcase_add_test(tc, resume_refuses_impossible_offsets);
	suite_add_tcase(s, tc);
	tc = tcase_create("hardening");
	tcase_set_timeout(tc, 60); /* ASan on a loaded machine */
	tcase_add_test(tc, malformed_cdcs_refused);
	tcase_add_test(tc, closed_alone_ends_the_stream);
	tcase_add_test(tc, urgent_data_confirmed_in_full);
	tcase_add_test(tc, cdc_data_checked_then_copied);
	tcase_add_test(tc, validation_newer_than_seen_aborts);
	suite_add_tcase(s, tc);
	tc = tcase_create("autocork");
	tcase_set_timeout(tc, 60); /* ASan on a loaded machine */
	tcase_add_test(tc, first_send_never_corks);
	tcase_add_test(tc, cork_limit_respected);
	tcase_add_test(tc, last_completion_pushes_tail);
	tcase_add_test(tc, ring_full_behind_shut_window_wakes_on_push);
	tcase_add_test(tc, corked_tail_through_slot_wait);
	tcase_add_test(tc, corked_tail_when_window_opens);
	tcase_add_test(tc, door_awaits_a_cdc_posted_behind_it);
	suite_add_tcase(s, tc);
	tc = tcase_create("slot_wait");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, scarce_slots_many_conns);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(rconn_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
