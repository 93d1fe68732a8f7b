// SPDX-License-Identifier: BSD-2-Clause
/*
 * Stateful fuzz target: two daemons' link-group contexts (a, the client,
 * and b, the server) on one event_base bring up a link group over
 * loopdev, as tests/unit/check_lgr.c does (CLC on a socketpair,
 * CONFIRM_LINK, with two devices also ADD_LINK), and open one connection
 * on it: an rconn each side with RMB elements registered in the groups'
 * protection domains, the peer's CDCs handed to it by its group's
 * demultiplexer in lgr.c (a bad one is lgr_protocol_error).  Then
 * the input is a sequence of records, each one of:
 *
 *   op & 7  0 LLC message   type selector, flags, up to 40 payload bytes
 *           1 CDC message   token/seqno/cursor deltas, flags
 *           2 produce       n bytes into the sender's send ring, pushed
 *           3 consume       up to n bytes of the sender's RMB element
 *           4 close         tx_close(how) of the sender's connection
 *           5 loop turns    n event-loop iterations
 *           6 fault         a completion error, a dropped link, an event
 *           7 raw 44 bytes  sent as they are
 *   op & 8  which side sends: 0 a (b receives), 1 b (a receives)
 *   op >> 4 which of the sender's links (its n-th active one)
 *
 * Messages are posted from the sender's real link (wr_tx_get/wr_tx_post)
 * so they arrive through loopdev's SEND delivery and the receiver's
 * receive completions, as a peer's would; an event-loop turn follows
 * every record.  After the sequence the loop runs a while, and each
 * side's groups must be consistent: active with an active link, or
 * terminating; the connection list matches nconns, every connection's
 * link is one of its group's, not a free slot.  Then everything is torn
 * down (ASan and LSan see use after free and leaks).
 *
 * Not covered: session_rdma.c's own CONN_OPEN/ACCEPT/REJECT/RESUME
 * handling (it needs a worker thread); the contexts' llc_rx counts those
 * and drops them.
 */
#include <sys/socket.h>
#include <sys/uio.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "smcproxyd.h"
#include "lgr.h"
#include "rconn.h"
#include "cdc_wire.h"
#include "llc_wire.h"
#include "fuzz.h"

#define FUZZ_SETUP_TURNS 1000 /* the handshake takes a few dozen */
#define FUZZ_SETUP_MS 3000
#define FUZZ_SETUP_TRIES 3
#define FUZZ_SETTLE_TURNS 200
#define FUZZ_RECORDS_MAX 256
#define FUZZ_BUF_SIZE 16384u

int fuzz_decoded;

struct fuzz_side;

struct fuzz_conn {
	struct fuzz_side *s;
	struct lgr_conn lc;
	struct rconn *rc;
	struct lgr_link *move_to; /* link_down: fail over there next turn */
	bool reset;		  /* peer_abort: free it next turn */
	uint64_t produced, consumed;
};

struct fuzz_side {
	const char *name;
	struct conf *conf;
	struct stats st;
	struct auth_limit al;
	struct lgr_ctx *ctx;
	struct dev *dev[2];
	int ndev;
	struct buf_pool *pool;
	struct fuzz_conn conn;
	int llc_data; /* CONN_* and rkey messages handed to llc_rx */
};

static struct event_base *fuzz_base;
static struct fuzz_side fuzz_a, fuzz_b;

static struct fuzz_side *
fuzz_other(const struct fuzz_side *s)
{
	return s == &fuzz_a ? &fuzz_b : &fuzz_a;
}

static struct lgr *
fuzz_lgr(const struct fuzz_side *s)
{
	return s->ctx != NULL ? TAILQ_FIRST(&s->ctx->lgrs) : NULL;
}

/* The n-th active link of s's group (cycling), or NULL. */
static struct lgr_link *
fuzz_link_nth(const struct fuzz_side *s, unsigned int n)
{
	struct lgr *lgr = fuzz_lgr(s);
	struct lgr_link *act[LGR_LINK_SLOTS];
	int i, k = 0;

	if (lgr == NULL)
		return NULL;
	for (i = 0; i < LGR_LINK_SLOTS; i++)
		if (lgr->link[i].state == LGR_LINK_ACTIVE &&
		    lgr->link[i].wr != NULL)
			act[k++] = &lgr->link[i];
	return k > 0 ? act[n % (unsigned int)k] : NULL;
}

/* ---- the connection: what session_rdma.c does, cut down ---- */

static void
fuzz_conn_free(struct fuzz_conn *c)
{
	lgr_conn_del(&c->lc);
	c->lc.rc = NULL;
	tx_conn_free(c->rc);
	c->rc = NULL;
	c->move_to = NULL;
}

static void
fuzz_link_down(struct lgr_conn *lc, struct lgr_link *to)
{
	struct fuzz_conn *c = lc->arg;

	if (to == NULL) {
		c->lc.rc = NULL;
		tx_conn_free(c->rc);
		c->rc = NULL;
		c->move_to = NULL;
		return;
	}
	c->move_to = to;
}

/* The peer's RMB rkey for link id on its side, or 0 when it has none. */
static uint32_t
fuzz_peer_rkey(struct fuzz_side *s, uint8_t id)
{
	struct fuzz_side *p = fuzz_other(s);
	struct lgr_link *pl;
	const struct dev_mr *mr;

	if (p->conn.rc == NULL || fuzz_lgr(p) == NULL)
		return 0;
	pl = lgr_link_by_id(fuzz_lgr(p), id);
	if (pl == NULL || pl->pd == NULL)
		return 0;
	mr = buf_mr(p->conn.rc->rmb, pl->dev->ops, pl->pd);
	return mr != NULL ? mr->rkey : 0;
}

/* A link_down with somewhere to go: move there, or end when we cannot. */
static void
fuzz_conn_move(struct fuzz_side *s)
{
	struct fuzz_conn *c = &s->conn;
	struct lgr_link *to = c->move_to;
	const struct dev_mr *mr;
	uint32_t rkey;

	if (c->rc != NULL && c->reset) {
		fuzz_conn_free(c);
		return;
	}
	if (c->rc == NULL || to == NULL)
		return;
	c->move_to = NULL;
	if (c->lc.lgr == NULL || c->lc.link != to ||
	    to->state != LGR_LINK_ACTIVE || to->wr == NULL) {
		fuzz_conn_free(c);
		return;
	}
	mr = buf_mr(c->rc->sndbuf, to->dev->ops, to->pd);
	rkey = fuzz_peer_rkey(s, to->id);
	if (mr == NULL || rkey == 0 ||
	    tx_failover(c->rc, to->wr, mr->lkey, rkey) != 0)
		fuzz_conn_free(c);
}

static void
fuzz_nop(struct rconn *rc, void *arg)
{
	(void)rc;
	(void)arg;
}

/* The peer reset us: the daemon's session closes (next turn); ours too. */
static void
fuzz_peer_abort(struct rconn *rc, void *arg)
{
	struct fuzz_conn *c = arg;

	(void)rc;
	c->reset = true;
}

static const struct rconn_ops fuzz_rconn_ops = {
	.data_ready = fuzz_nop,
	.tx_space_ready = fuzz_nop,
	.peer_done_writing = fuzz_nop,
	.peer_closed = fuzz_nop,
	.peer_abort = fuzz_peer_abort,
	.link_failed = fuzz_nop,
};

static void
fuzz_llc_rx(struct lgr_link *link, const struct llc_info *m, void *arg)
{
	struct fuzz_side *s = arg;

	(void)link;
	(void)m;
	s->llc_data++;
}

static const struct lgr_data_ops fuzz_ops = {.llc_rx = fuzz_llc_rx};

static void
fuzz_turn(void)
{
	event_base_loop(fuzz_base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	fuzz_conn_move(&fuzz_a);
	fuzz_conn_move(&fuzz_b);
}

/* ---- setup and teardown ---- */

static int
fuzz_side_init(struct fuzz_side *s, const char *name, const char *peer,
	       int ndev, const struct lgr_timeouts *t)
{
	char text[512];
	int i;

	memset(s, 0, sizeof(*s));
	s->name = name;
	snprintf(text, sizeof(text),
		 "smcproxyd: { name = \"%s\"; workers = 1; };\n"
		 "peers = ( { name = \"%s\"; address = \"127.0.0.1:17100\";"
		 " insecure = true; any_source = true; } );\n"
		 "rdma: { max_conns_per_lgr = 16; };\n",
		 name, peer);
	s->conf = conf_load_string(text, "fuzz.conf", NULL);
	if (s->conf == NULL)
		return -1;
	conf_hold(s->conf);
	auth_limit_init(&s->al);
	s->ctx = lgr_ctx_new(fuzz_base, s->conf, &s->st, &s->al, t);
	if (s->ctx == NULL)
		return -1;
	lgr_ctx_set_ops(s->ctx, &fuzz_ops, s);
	for (i = 0; i < ndev; i++) {
		s->dev[i] = loopdev_new(fuzz_base);
		if (s->dev[i] == NULL)
			return -1;
		s->ndev = i + 1;
		if (lgr_ctx_add_dev(s->ctx, &loopdev_ops, s->dev[i],
				    i == 0 ? "loop0" : "loop1") != 0)
			return -1;
	}
	s->pool = buf_pool_new(NULL, NULL, 0);
	return s->pool != NULL ? 0 : -1;
}

static void
fuzz_side_free(struct fuzz_side *s)
{
	lgr_ctx_free(s->ctx);
	s->ctx = NULL;
}

static void
fuzz_side_release(struct fuzz_side *s)
{
	int i;

	/* the rconns went with the groups; their buffers with their CDCs */
	buf_pool_free(s->pool);
	for (i = 0; i < s->ndev; i++)
		loopdev_free(s->dev[i]);
	if (s->conf != NULL)
		conf_drop(s->conf);
	memset(s, 0, sizeof(*s));
}

static bool
fuzz_both_active(int links)
{
	return fuzz_lgr(&fuzz_a) != NULL && fuzz_lgr(&fuzz_b) != NULL &&
	       fuzz_lgr(&fuzz_a)->state == LGR_STATE_ACTIVE &&
	       fuzz_lgr(&fuzz_b)->state == LGR_STATE_ACTIVE &&
	       lgr_links_active(fuzz_lgr(&fuzz_a)) == links &&
	       lgr_links_active(fuzz_lgr(&fuzz_b)) == links;
}

/* s's connection joins its group on its first link: a token for it. */
static void
fuzz_conn_join(struct fuzz_side *s)
{
	struct fuzz_conn *c = &s->conn;
	struct lgr_link *k = fuzz_link_nth(s, 0);

	memset(c, 0, sizeof(*c));
	c->s = s;
	c->lc.link_down = fuzz_link_down;
	c->lc.arg = c;
	if (k == NULL || lgr_conn_add_on(k->lgr, &c->lc, k) != 0)
		abort();
}

/*
 * s's half of the connection, to p's rmb: from now its group hands it
 * the CDCs naming its token.
 */
static void
fuzz_conn_open(struct fuzz_side *s, struct buf *snd, struct buf *rmb,
	       struct fuzz_side *p, struct buf *prmb)
{
	struct fuzz_conn *c = &s->conn;
	struct lgr_link *k = c->lc.link, *pk;
	const struct dev_mr *mr, *pmr;
	struct rconn_init in;

	pk = lgr_link_by_id(fuzz_lgr(p), k->id);
	if (pk == NULL)
		abort();
	mr = buf_mr(snd, k->dev->ops, k->pd);
	pmr = buf_mr(prmb, pk->dev->ops, pk->pd);
	if (mr == NULL || pmr == NULL)
		abort();
	memset(&in, 0, sizeof(in));
	in.id = c->lc.token;
	in.link = k->wr;
	in.token = c->lc.token;
	in.peer_token = p->conn.lc.token;
	in.sndbuf = snd;
	in.lkey = mr->lkey;
	in.rmb = rmb;
	in.peer_rmb.vaddr = prmb->iova;
	in.peer_rmb.rkey = pmr->rkey;
	in.peer_rmb.size = (uint32_t)prmb->size;
	in.ops = &fuzz_rconn_ops;
	in.arg = c;
	c->rc = tx_conn_new(&in);
	if (c->rc == NULL)
		abort();
	c->lc.rc = c->rc;
}

static int
fuzz_setup(bool two_devs)
{
	struct buf *ab[2], *bb[2];
	struct lgr_timeouts t;
	int sv[2], i, links = two_devs ? 2 : 1;
	uint64_t end;

	memset(&t, 0, sizeof(t));
	t.clc_wait_ms = 2000;
	/* a tick of 5 ms: the second link comes soon; LLC answers not
	 * there in 20 ms time out, which the input can provoke too */
	t.llc_wait_ms = 20;
	/* a group the input ended must not keep the next one from coming */
	t.backoff_ms = 1;
	t.backoff_max_ms = 1;
	fuzz_base = event_base_new();
	if (fuzz_base == NULL ||
	    fuzz_side_init(&fuzz_a, "a", "b", links, &t) != 0 ||
	    fuzz_side_init(&fuzz_b, "b", "a", links, &t) != 0)
		abort();
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		abort();
	if (lgr_client_new(fuzz_a.ctx, &fuzz_a.conf->peers[0], sv[0]) == NULL ||
	    clc_serve(fuzz_b.ctx, sv[1], NULL, NULL, 0) != 0)
		abort();
	/* the second link comes from the server's tick: wait for it */
	end = now_ms() + FUZZ_SETUP_MS;
	for (i = 0; !fuzz_both_active(links) && now_ms() < end; i++) {
		fuzz_turn();
		if (i > FUZZ_SETUP_TURNS)
			usleep(50);
	}
	/*
	 * Not up in time: on a loaded machine an LLC answer can miss its
	 * 20 ms.  Not the input's doing; the caller tries again.
	 */
	if (!fuzz_both_active(links))
		return -1;
	for (i = 0; i < 2; i++)
		if (buf_get(fuzz_a.pool, i ? BUF_RMB : BUF_SNDBUF,
			    FUZZ_BUF_SIZE, &ab[i]) ||
		    buf_get(fuzz_b.pool, i ? BUF_RMB : BUF_SNDBUF,
			    FUZZ_BUF_SIZE, &bb[i]))
			abort();
	fuzz_conn_join(&fuzz_a);
	fuzz_conn_join(&fuzz_b);
	fuzz_conn_open(&fuzz_a, ab[0], ab[1], &fuzz_b, bb[1]);
	fuzz_conn_open(&fuzz_b, bb[0], bb[1], &fuzz_a, ab[1]);
	return 0;
}

/* What must hold of s's groups whatever the peer sent. */
static void
fuzz_check(const struct fuzz_side *s)
{
	const struct lgr *lgr;
	const struct lgr_conn *c;
	int n;

	for (lgr = fuzz_lgr(s); lgr != NULL; lgr = TAILQ_NEXT(lgr, entry)) {
		if (lgr->ctx != s->ctx)
			abort();
		if (lgr->state == LGR_STATE_ACTIVE && lgr_links_active(lgr) < 1)
			abort();
		n = 0;
		TAILQ_FOREACH(c, &lgr->conns, entry) {
			if (c->lgr != lgr || c->link == NULL ||
			    lgr_conn_find(lgr, c->token) != c ||
			    c->link->lgr != lgr ||
			    c->link->state == LGR_LINK_FREE)
				abort();
			n++;
		}
		if (n != lgr->nconns)
			abort();
	}
	if (s->conn.rc != NULL && s->conn.lc.lgr != NULL &&
	    s->conn.lc.lgr->ctx != s->ctx)
		abort();
}

static void
fuzz_teardown(void)
{
	fuzz_check(&fuzz_a);
	fuzz_check(&fuzz_b);
	fuzz_side_free(&fuzz_a);
	fuzz_side_free(&fuzz_b);
	fuzz_side_release(&fuzz_a);
	fuzz_side_release(&fuzz_b);
	event_base_free(fuzz_base);
	fuzz_base = NULL;
}

/* ---- records ---- */

struct fuzz_in {
	const uint8_t *p;
	size_t n;
};

static uint8_t
fuzz_byte(struct fuzz_in *in)
{
	if (in->n == 0)
		return 0;
	in->n--;
	return *in->p++;
}

static uint16_t
fuzz_u16(struct fuzz_in *in)
{
	uint16_t v = fuzz_byte(in);

	return (uint16_t)(v << 8 | fuzz_byte(in));
}

/* Post 44 bytes on link k: a SEND from the sender's real QP. */
static void
fuzz_send(struct lgr_link *k, const uint8_t msg[44])
{
	struct wr_tx_slot *slot;

	if (k == NULL || wr_tx_get(k->wr, &slot, NULL) != 0)
		return;
	memcpy(wr_tx_buf(slot), msg, 44);
	if (wr_tx_post(k->wr, slot, NULL, 0, NULL, NULL) != 0)
		wr_tx_put(k->wr, slot);
}

static const uint8_t fuzz_llc_types[] = {
	LLC_CONFIRM_LINK, LLC_ADD_LINK,	   LLC_ADD_LINK_CONT, LLC_DELETE_LINK,
	LLC_CONFIRM_RKEY, LLC_TEST_LINK,   LLC_DELETE_RKEY,   LLC_CONN_OPEN,
	LLC_CONN_ACCEPT,  LLC_CONN_REJECT, LLC_CONN_RESUME,   0x05,
};

/*
 * An LLC message: a type from the table (or the selector itself), the
 * flags, the payload.  Selector bit 0x40 set: where it decodes, link
 * numbers, QP address and group uid become the real ones, so that the
 * message reaches the state machine rather than its first check.
 */
static void
fuzz_rec_llc(struct fuzz_side *s, struct lgr_link *k, struct fuzz_in *in)
{
	uint8_t sel = fuzz_byte(in), msg[LLC_MSG_LEN];
	struct lgr_link *pk;
	struct llc_info m;
	size_t i;

	memset(msg, 0, sizeof(msg));
	msg[0] =
		sel & 0x80 ? fuzz_llc_types[sel % sizeof(fuzz_llc_types)] : sel;
	msg[1] = LLC_MSG_LEN;
	msg[3] = fuzz_byte(in);
	for (i = 4; i < LLC_MSG_LEN && in->n > 0; i++)
		msg[i] = fuzz_byte(in);
	if (k != NULL && (sel & 0x40) &&
	    llc_msg_decode(msg, sizeof(msg), &m) == 0) {
		pk = lgr_link_by_id(fuzz_lgr(fuzz_other(s)), k->id);
		switch (m.type) {
		case LLC_CONFIRM_LINK:
			memcpy(m.confirm_link.mac, k->local.mac, 6);
			memcpy(m.confirm_link.gid, k->local.gid, 16);
			m.confirm_link.qpn = k->local.qpn;
			m.confirm_link.link_num = k->id;
			memcpy(m.confirm_link.link_uid, k->lgr->uid, 4);
			break;
		case LLC_ADD_LINK:
			memcpy(m.add_link.mac, k->local.mac, 6);
			memcpy(m.add_link.gid, k->local.gid, 16);
			m.add_link.link_num = (uint8_t)(k->id + (sel & 1));
			break;
		case LLC_ADD_LINK_CONT:
			m.add_link_cont.link_num = (uint8_t)(k->id + (sel & 1));
			break;
		case LLC_DELETE_LINK:
			m.delete_link.link_num =
				pk != NULL && (sel & 1) ? pk->id : k->id;
			break;
		case LLC_CONFIRM_RKEY:
			if (m.confirm_rkey.num_rkeys > 0)
				m.confirm_rkey.rt[1].link_id = k->id;
			break;
		}
		fuzz_decoded++;
		llc_msg_encode(msg, sizeof(msg), &m);
	}
	fuzz_send(k, msg);
}

/*
 * A CDC: the sender's own cursors (what its rconn last announced) moved
 * by small signed deltas, its next seqno moved too, the receiver's token
 * unless told otherwise.
 */
static void
fuzz_rec_cdc(struct fuzz_side *s, struct lgr_link *k, struct fuzz_in *in)
{
	uint8_t how = fuzz_byte(in), msg[CDC_MSG_LEN];
	struct rconn *rc = s->conn.rc;
	struct cdc_info m;
	int16_t dseq = (int16_t)fuzz_u16(in);
	int16_t dprod = (int16_t)fuzz_u16(in);
	int16_t dcons = (int16_t)fuzz_u16(in);

	memset(&m, 0, sizeof(m));
	m.prod_flags = fuzz_byte(in) & ~CDC_PF_RESERVED;
	m.conn_state_flags = fuzz_byte(in) & ~CDC_CS_RESERVED;
	m.token = how & 1 ? fuzz_other(s)->conn.lc.token ^ fuzz_byte(in) :
			    fuzz_other(s)->conn.lc.token;
	if (m.token == 0)
		m.token = 1;
	if (rc != NULL) {
		m.seqno = (uint16_t)(rc->local_tx_ctrl.seqno + dseq);
		m.prod = rc->local_tx_ctrl.prod;
		m.cons = rc->local_tx_ctrl.cons;
	}
	if (how & 2) {
		m.prod.wrap = (uint16_t)(m.prod.wrap + (how >> 4 & 3) - 1);
		m.cons.wrap = (uint16_t)(m.cons.wrap + (how >> 6 & 3) - 1);
	}
	m.prod.count = (uint32_t)((int64_t)m.prod.count + dprod) %
		       (FUZZ_BUF_SIZE + (how & 4 ? 64 : 0));
	m.cons.count = (uint32_t)((int64_t)m.cons.count + dcons) %
		       (FUZZ_BUF_SIZE + (how & 8 ? 64 : 0));
	if (cdc_msg_encode(msg, sizeof(msg), &m) != CDC_MSG_LEN)
		return;
	fuzz_decoded++;
	fuzz_send(k, msg);
}

static void
fuzz_rec_produce(struct fuzz_side *s, struct fuzz_in *in)
{
	size_t want = (size_t)fuzz_u16(in) % (2 * FUZZ_BUF_SIZE), n, done = 0;
	struct iovec iov[2];
	int spans, i;

	if (s->conn.rc == NULL)
		return;
	spans = tx_space(s->conn.rc, iov);
	for (i = 0; i < spans && done < want; i++) {
		n = iov[i].iov_len < want - done ? iov[i].iov_len : want - done;
		memset(iov[i].iov_base, (int)(s->conn.produced + done), n);
		done += n;
	}
	if (done > 0)
		tx_produced(s->conn.rc, done);
	s->conn.produced += done;
	tx_push(s->conn.rc);
}

static void
fuzz_rec_consume(struct fuzz_side *s, struct fuzz_in *in)
{
	size_t want = (size_t)fuzz_u16(in) % (2 * FUZZ_BUF_SIZE), have = 0;
	struct iovec iov[2];
	int spans, i;

	if (s->conn.rc == NULL)
		return;
	spans = rx_data(s->conn.rc, iov);
	for (i = 0; i < spans; i++)
		have += iov[i].iov_len;
	if (have > want)
		have = want;
	if (have > 0)
		rx_consumed(s->conn.rc, have);
	s->conn.consumed += have;
}

static void
fuzz_rec_fault(struct fuzz_side *s, struct lgr_link *k, struct fuzz_in *in)
{
	uint8_t what = fuzz_byte(in);

	if (k == NULL)
		return;
	switch (what % 6) {
	case 0:
		loopdev_error_next_completion(wr_link_qp(k->wr),
					      DEV_WC_RETRY_EXC_ERR);
		break;
	case 1:
		loopdev_error_next_completion(wr_link_qp(k->wr),
					      DEV_WC_REM_ACCESS_ERR);
		break;
	case 2:
		loopdev_drop_link(wr_link_qp(k->wr));
		break;
	case 3:
		loopdev_async_event(wr_link_qp(k->wr), DEV_EV_QP_FATAL);
		break;
	case 4:
		loopdev_async_event(wr_link_qp(k->wr), DEV_EV_PORT_DOWN);
		break;
	default:
		/* the daemon's own end of the connection */
		if (s->conn.rc != NULL)
			fuzz_conn_free(&s->conn);
		break;
	}
}

static const enum tx_close_how fuzz_close_how[] = {
	TX_CLOSE_DONE_WRITING,
	TX_CLOSE_CLOSED,
	TX_CLOSE_ABORT,
};

static void
fuzz_record(struct fuzz_in *in)
{
	uint8_t op = fuzz_byte(in), raw[44];
	struct fuzz_side *s = op & 8 ? &fuzz_b : &fuzz_a;
	struct lgr_link *k = fuzz_link_nth(s, op >> 4);
	unsigned int n;
	size_t i;

	switch (op & 7) {
	case 0:
		fuzz_rec_llc(s, k, in);
		break;
	case 1:
		fuzz_rec_cdc(s, k, in);
		break;
	case 2:
		fuzz_rec_produce(s, in);
		break;
	case 3:
		fuzz_rec_consume(s, in);
		break;
	case 4:
		n = fuzz_byte(in) % 3;
		if (s->conn.rc != NULL)
			tx_close(s->conn.rc, fuzz_close_how[n]);
		break;
	case 5:
		for (n = fuzz_byte(in) % 32; n > 0; n--)
			fuzz_turn();
		break;
	case 6:
		fuzz_rec_fault(s, k, in);
		break;
	default:
		memset(raw, 0, sizeof(raw));
		for (i = 0; i < sizeof(raw) && in->n > 0; i++)
			raw[i] = fuzz_byte(in);
		fuzz_send(k, raw);
		break;
	}
	fuzz_turn();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = {data, size};
	static bool logged;
	int i;

	if (!logged) {
		/* the harness's own failures are abort()s; the daemon's
		 * warnings about hostile input are expected and many */
		log_init(1, LOG_LEVEL_ERR);
		logged = true;
	}
	fuzz_decoded = 0;
	for (i = 0; fuzz_setup(size > 0 && (data[0] & 1)) != 0; i++) {
		fuzz_teardown();
		/* three times in a row is no accident */
		if (i == FUZZ_SETUP_TRIES)
			abort();
	}
	fuzz_byte(&in);
	for (i = 0; i < FUZZ_RECORDS_MAX && in.n > 0; i++)
		fuzz_record(&in);
	for (i = 0; i < FUZZ_SETTLE_TURNS; i++)
		fuzz_turn();
	fuzz_teardown();
	return 0;
}
