// SPDX-License-Identifier: BSD-2-Clause
/*
 * The peer's RMBs as its group knows them: each one's rkey and address
 * on every link of the group (Linux's rtokens, smc_rtoken_add and
 * smc_rtoken_set in net/smc/smc_core.c), in both dialects.  A row is
 * keyed by any of its (link id, rkey, address) triples; an address of 0
 * is one not told (ADD_LINK and DELETE_RKEY name an RMB by its rkey
 * alone) and matches any.  A connection keeps the triple it was given
 * (lgr_conn's peer_*) and asks for its RMB's rkey on another link by it.
 *
 * A kernel peer tells the rkeys for a group's other links before the CLC
 * names the connection: in CONFIRM_RKEY for a new RMB, in ADD_LINK for
 * every RMB in use when a link is added; DELETE_RKEY drops one (and
 * Linux reuses an RMB, rkeys and all, for its next connection).  Our own
 * dialect tells a connection's RMB element in CONN_OPEN, CONN_ACCEPT or
 * CONN_RESUME (a row of one link, lgr_conn_peer_rmb), its rkeys on the
 * other links in CONFIRM_RKEY after it; the row goes with the last
 * connection keyed by it (rtoken_conn_gone, from lgr_conn_del).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lgr.h"
#include "llc_wire.h"

static bool
rtoken_is(const struct rtoken_on *e, uint8_t id, uint32_t rkey, uint64_t vaddr)
{
	return e->link_id == id && e->rkey == rkey &&
	       (vaddr == 0 || e->vaddr == 0 || e->vaddr == vaddr);
}

/* The row with (rkey, vaddr) on link id; NULL if none. */
static struct rtoken *
rtoken_row(const struct rtoken_table *t, uint8_t id, uint32_t rkey,
	   uint64_t vaddr)
{
	int i, k;

	for (i = 0; id != 0 && i < t->n; i++)
		for (k = 0; k < RTOKEN_LINKS; k++)
			if (rtoken_is(&t->v[i].on[k], id, rkey, vaddr))
				return &t->v[i];
	return NULL;
}

/*
 * Put (id, rkey, vaddr) in row r: over id's entry, else a free one, else
 * over the last (the oldest link's is the first).  An address not told
 * (0) leaves the one known.
 */
static void
rtoken_put(struct rtoken *r, uint8_t id, uint32_t rkey, uint64_t vaddr)
{
	struct rtoken_on *e = NULL;
	int k;

	for (k = 0; k < RTOKEN_LINKS && e == NULL; k++)
		if (r->on[k].link_id == id)
			e = &r->on[k];
	for (k = 0; k < RTOKEN_LINKS && e == NULL; k++)
		if (r->on[k].link_id == 0)
			e = &r->on[k];
	if (e == NULL)
		e = &r->on[RTOKEN_LINKS - 1];
	if (e->link_id != id || e->rkey != rkey)
		e->vaddr = 0;
	e->link_id = id;
	e->rkey = rkey;
	if (vaddr != 0)
		e->vaddr = vaddr;
}

/* The row with (rkey, vaddr) on link id, a new one if none; or NULL. */
static struct rtoken *
rtoken_row_new(struct rtoken_table *t, uint8_t id, uint32_t rkey,
	       uint64_t vaddr, int *rc)
{
	struct rtoken *r = rtoken_row(t, id, rkey, vaddr), *v;
	int cap;

	*rc = 0;
	if (r != NULL) {
		rtoken_put(r, id, rkey, vaddr);
		return r;
	}
	if (t->n == RTOKEN_MAX) {
		*rc = -ENOSPC;
		return NULL;
	}
	if (t->n == t->cap) {
		cap = t->cap == 0 ? 16 : 2 * t->cap;
		if (cap > RTOKEN_MAX)
			cap = RTOKEN_MAX;
		v = reallocarray(t->v, (size_t)cap, sizeof(*v));
		if (v == NULL) {
			*rc = -ENOMEM;
			return NULL;
		}
		t->v = v;
		t->cap = cap;
	}
	r = &t->v[t->n++];
	memset(r, 0, sizeof(*r));
	rtoken_put(r, id, rkey, vaddr);
	return r;
}

/*
 * The peer's RMB has rkey at vaddr on link id (0: the address is not
 * told): its row, a new one unless it has one.  0, -EINVAL (a link id of
 * 0), -ENOSPC with RTOKEN_MAX RMBs known (Linux's limit per group,
 * SMC_RMBS_PER_LGR_MAX), -ENOMEM.
 */
int
rtoken_add(struct rtoken_table *t, uint8_t id, uint32_t rkey, uint64_t vaddr)
{
	int rc;

	if (id == 0)
		return -EINVAL;
	(void)rtoken_row_new(t, id, rkey, vaddr, &rc);
	return rc;
}

/*
 * The peer's RMB with rkey at vaddr on link id (vaddr 0: not told, as
 * ADD_LINK does not repeat it) has rkey2 at vaddr2 on link id2.  0,
 * -EINVAL (a link id of 0, or both the same), or as rtoken_add.
 */
int
rtoken_set(struct rtoken_table *t, uint8_t id, uint32_t rkey, uint64_t vaddr,
	   uint8_t id2, uint32_t rkey2, uint64_t vaddr2)
{
	struct rtoken *r;
	int rc;

	if (id == 0 || id2 == 0 || id == id2)
		return -EINVAL;
	r = rtoken_row_new(t, id, rkey, vaddr, &rc);
	if (r != NULL)
		rtoken_put(r, id2, rkey2, vaddr2);
	return rc;
}

/*
 * The peer dropped its RMB with rkey at vaddr (0: any) on link id, or the
 * last connection that had it ended.  0 or -ENOENT.
 */
int
rtoken_del(struct rtoken_table *t, uint8_t id, uint32_t rkey, uint64_t vaddr)
{
	struct rtoken *r = rtoken_row(t, id, rkey, vaddr);

	if (r == NULL)
		return -ENOENT;
	*r = t->v[--t->n];
	return 0;
}

/*
 * The rkey and address on link want of the peer's RMB with rkey at vaddr
 * (0: any) on link id.  0 with *rkey_out and *vaddr_out set (the address
 * 0 where only the rkey was told), or -ENOENT if not told.
 */
int
rtoken_get(const struct rtoken_table *t, uint8_t id, uint32_t rkey,
	   uint64_t vaddr, uint8_t want, uint32_t *rkey_out,
	   uint64_t *vaddr_out)
{
	const struct rtoken *r = rtoken_row(t, id, rkey, vaddr);
	int k;

	for (k = 0; r != NULL && want != 0 && k < RTOKEN_LINKS; k++)
		if (r->on[k].link_id == want) {
			*rkey_out = r->on[k].rkey;
			*vaddr_out = r->on[k].vaddr;
			return 0;
		}
	return -ENOENT;
}

/*
 * A new link takes id: what the peer said of an earlier link of that id
 * goes (rows stay keyed by the links that carried them), and a row left
 * on no link with it.
 */
void
rtoken_drop_link(struct rtoken_table *t, uint8_t id)
{
	int i, k;

	bool left;

	for (i = 0; i < t->n; i++) {
		left = false;
		for (k = 0; k < RTOKEN_LINKS; k++) {
			if (t->v[i].on[k].link_id == id)
				memset(&t->v[i].on[k], 0,
				       sizeof(t->v[i].on[k]));
			left |= t->v[i].on[k].link_id != 0;
		}
		if (!left) /* on no link now: nobody can name it */
			t->v[i--] = t->v[--t->n];
	}
}

void
rtoken_free(struct rtoken_table *t)
{
	free(t->v);
	memset(t, 0, sizeof(*t));
}

/* ---- a connection's peer RMB element ---- */

/*
 * c's peer RMB element has rkey at vaddr on link, of c's group: the key
 * c asks by from now on (CONN_OPEN, CONN_ACCEPT, CONN_RESUME or the CLC,
 * then the link c moved to).  In our own dialect its row is made here; a
 * kernel peer's rows come only with its CONFIRM_RKEY or ADD_LINK, for
 * its DELETE_RKEY to drop (on a group of one link there are none: c asks
 * by the CLC's rkey there).  0, -ENOLINK, or as rtoken_add.
 */
int
lgr_conn_peer_rmb(struct lgr_conn *c, const struct lgr_link *link,
		  uint32_t rkey, uint64_t vaddr)
{
	struct lgr *lgr = c->lgr;
	int rc = 0;

	if (lgr == NULL || link == NULL || link->lgr != lgr || link->id == 0)
		return -ENOLINK;
	if (!lgr->smcr)
		rc = rtoken_add(&lgr->rtokens, link->id, rkey, vaddr);
	if (rc)
		return rc;
	c->peer_link = link->id;
	c->peer_rkey = rkey;
	c->peer_vaddr = vaddr;
	return 0;
}

/*
 * The rkey of c's peer RMB element on the link with link_id, at the same
 * address: 0 with *rkey set, -ENOENT if not told.
 */
int
lgr_conn_peer_rkey(const struct lgr_conn *c, uint8_t link_id, uint32_t *rkey)
{
	const struct lgr *lgr = c->lgr;
	uint64_t vaddr;

	if (lgr == NULL || c->peer_link == 0)
		return -ENOENT;
	if (rtoken_get(&lgr->rtokens, c->peer_link, c->peer_rkey, c->peer_vaddr,
		       link_id, rkey, &vaddr) == 0)
		return vaddr == 0 || vaddr == c->peer_vaddr ? 0 : -ENOENT;
	/* a kernel peer's on the link its CLC named: the CLC's rkey (no
	 * row; the other link's come with CONFIRM_RKEY or ADD_LINK) */
	if (lgr->smcr && link_id == c->peer_link) {
		*rkey = c->peer_rkey;
		return 0;
	}
	return -ENOENT;
}

/*
 * A new link of lgr takes id (rtoken_drop_link): a connection asked for
 * by its rkey on the old link of that id is asked for by one on another
 * link of its row from now on, or by none (no rkey of it is known).
 */
void
rtoken_link_new(struct lgr *lgr, uint8_t id)
{
	struct lgr_conn *c;
	struct rtoken *r;
	int k;

	TAILQ_FOREACH(c, &lgr->conns, entry) {
		if (c->peer_link != id)
			continue;
		r = rtoken_row(&lgr->rtokens, id, c->peer_rkey, c->peer_vaddr);
		c->peer_link = 0;
		for (k = 0; r != NULL && k < RTOKEN_LINKS; k++)
			if (r->on[k].link_id != 0 && r->on[k].link_id != id) {
				c->peer_link = r->on[k].link_id;
				c->peer_rkey = r->on[k].rkey;
				break;
			}
	}
	rtoken_drop_link(&lgr->rtokens, id);
}

/*
 * c leaves its group (lgr_conn_del): in our own dialect its peer RMB
 * element's row goes with the last connection keyed by it, so that the
 * table holds the group's connections and no more (a kernel peer drops
 * its own rows: DELETE_RKEY, after Linux's own rules).
 */
void
rtoken_conn_gone(struct lgr_conn *c)
{
	struct lgr *lgr = c->lgr;
	const struct lgr_conn *o;
	struct rtoken *r;
	int k;

	r = lgr != NULL && !lgr->smcr ?
		    rtoken_row(&lgr->rtokens, c->peer_link, c->peer_rkey,
			       c->peer_vaddr) :
		    NULL;
	if (r != NULL) {
		TAILQ_FOREACH(o, &lgr->conns, entry)
			for (k = 0; o != c && k < RTOKEN_LINKS; k++)
				if (o->peer_link != 0 &&
				    rtoken_is(&r->on[k], o->peer_link,
					      o->peer_rkey, o->peer_vaddr))
					return; /* o's too: it stays */
		*r = lgr->rtokens.v[--lgr->rtokens.n];
	}
}

/* ---- the LLC messages that tell them (llc.c, through lgr_llc_ops) ---- */

/*
 * CONFIRM_RKEY request on link: rt[0] names the peer's RMB by its rkey
 * and address there, the others tell it on other links.  A kernel
 * peer's comes before the CLC that names the connection (a new row);
 * ours after the open, per connection, on its link: one that names no
 * connection's RMB element is for one closed meanwhile, ignored.  0, or
 * -errno: -EPROTO for one of our own dialect that names other elements
 * (the group ends), else refused (a kernel peer hears RKEY_NEG).
 */
int
rtoken_confirm_rkey(struct lgr_link *link, const struct llc_info *m)
{
	const struct llc_confirm_rkey_info *c = &m->confirm_rkey;
	struct rtoken_table *t = &link->lgr->rtokens;
	int i, rc = 0;

	if (!link->lgr->smcr) {
		if (rtoken_row(t, link->id, c->rt[0].rkey, c->rt[0].vaddr) ==
		    NULL) {
			log_debug("lgr %u link %u: CONFIRM_RKEY for rkey 0x%x: "
				  "no such connection (closed)",
				  link->lgr->id, link->id, c->rt[0].rkey);
			return 0;
		}
		for (i = 1; i <= c->num_rkeys; i++)
			if (c->rt[i].link_id == 0 ||
			    c->rt[i].vaddr != c->rt[0].vaddr)
				return -EPROTO;
	}
	for (i = 1; i <= c->num_rkeys && rc == 0; i++)
		rc = rtoken_set(t, link->id, c->rt[0].rkey, c->rt[0].vaddr,
				c->rt[i].link_id, c->rt[i].rkey,
				c->rt[i].vaddr);
	return rc;
}

/* A kernel peer's DELETE_RKEY request on link: the rkeys there. */
void
rtoken_delete_rkey(struct lgr_link *link, const struct llc_info *m)
{
	const struct llc_delete_rkey_info *d = &m->delete_rkey;
	int i;

	for (i = 0; i < d->num_rkeys; i++)
		(void)rtoken_del(&link->lgr->rtokens, link->id, d->rkey[i], 0);
}

/*
 * A kernel peer's ADD_LINK (request or answer) for added, over via: the
 * rkeys of its RMBs there, each named by its rkey on via.
 */
void
rtoken_add_link_rkeys(struct lgr_link *via, struct lgr_link *added,
		      const struct llc_v2_info *v)
{
	struct lgr *lgr = via->lgr;
	int i, n = 0;

	for (i = 0; i < v->num_rkeys; i++)
		if (rtoken_set(&lgr->rtokens, via->id, v->rt[i].rkey, 0,
			       added->id, v->rt[i].rkey_new,
			       v->rt[i].vaddr_new) == 0)
			n++;
	log_debug("lgr %u link %u: the peer's rkeys for it: %d of %u", lgr->id,
		  added->id, n, v->num_rkeys);
}
