// SPDX-License-Identifier: BSD-2-Clause
/*
 * A kernel SMC-R peer's RMBs as its group knows them: each one's rkey and
 * address on every link of the group (Linux's rtokens, smc_rtoken_add and
 * smc_rtoken_set in net/smc/smc_core.c).  A kernel peer tells the rkeys
 * for a group's other links before the CLC names the connection: in
 * CONFIRM_RKEY for a new RMB (on a group of more than one link), in
 * ADD_LINK for every RMB in use when a link is added; DELETE_RKEY drops
 * one.  So they are kept per group, keyed by the rkey on the link that
 * carried them, and a connection asks for its RMB's rkey on another link
 * by the one the CLC gave it.  Our own dialect tells them per connection
 * (session_rdma_conn.c) and needs no table.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "smcproxyd.h"

/* The row with rkey on link id; NULL if none. */
static struct rtoken *
rtoken_row(const struct rtoken_table *t, uint8_t id, uint32_t rkey)
{
	int i, k;

	for (i = 0; i < t->n; i++)
		for (k = 0; k < RTOKEN_LINKS; k++)
			if (t->v[i].on[k].link_id == id &&
			    t->v[i].on[k].rkey == rkey)
				return &t->v[i];
	return NULL;
}

/*
 * Put (id, rkey, vaddr) in row r: over id's entry, else a free one, else
 * over the last (the oldest link's is the first).
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
	e->link_id = id;
	e->rkey = rkey;
	e->vaddr = vaddr;
}

/*
 * The peer's RMB with rkey on link id has rkey2 at vaddr2 on link id2
 * (its address on id is the CLC's or an earlier message's: ADD_LINK does
 * not repeat it).  0, -EINVAL (a link id of 0, or both the same), or
 * -ENOSPC with RTOKEN_MAX RMBs known (Linux's limit per group,
 * SMC_RMBS_PER_LGR_MAX), -ENOMEM.
 */
int
rtoken_set(struct rtoken_table *t, uint8_t id, uint32_t rkey, uint8_t id2,
	   uint32_t rkey2, uint64_t vaddr2)
{
	struct rtoken *r, *v;
	int cap;

	if (id == 0 || id2 == 0 || id == id2)
		return -EINVAL;
	r = rtoken_row(t, id, rkey);
	if (r == NULL) {
		if (t->n == RTOKEN_MAX)
			return -ENOSPC;
		if (t->n == t->cap) {
			cap = t->cap == 0 ? 16 : 2 * t->cap;
			if (cap > RTOKEN_MAX)
				cap = RTOKEN_MAX;
			v = reallocarray(t->v, (size_t)cap, sizeof(*v));
			if (v == NULL)
				return -ENOMEM;
			t->v = v;
			t->cap = cap;
		}
		r = &t->v[t->n++];
		memset(r, 0, sizeof(*r));
		r->on[0].link_id = id;
		r->on[0].rkey = rkey;
	}
	rtoken_put(r, id2, rkey2, vaddr2);
	return 0;
}

/* The peer dropped its RMB with rkey on link id.  0 or -ENOENT. */
int
rtoken_del(struct rtoken_table *t, uint8_t id, uint32_t rkey)
{
	struct rtoken *r = rtoken_row(t, id, rkey);

	if (r == NULL)
		return -ENOENT;
	*r = t->v[--t->n];
	return 0;
}

/*
 * The rkey and address on link want of the peer's RMB with rkey on link
 * id.  0 with *rkey_out and *vaddr_out set, or -ENOENT if not told.
 */
int
rtoken_get(const struct rtoken_table *t, uint8_t id, uint32_t rkey,
	   uint8_t want, uint32_t *rkey_out, uint64_t *vaddr_out)
{
	const struct rtoken *r = rtoken_row(t, id, rkey);
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
 * goes (rows stay keyed by the links that carried them).
 */
void
rtoken_drop_link(struct rtoken_table *t, uint8_t id)
{
	int i, k;

	for (i = 0; i < t->n; i++)
		for (k = 0; k < RTOKEN_LINKS; k++)
			if (t->v[i].on[k].link_id == id)
				memset(&t->v[i].on[k], 0,
				       sizeof(t->v[i].on[k]));
}

void
rtoken_free(struct rtoken_table *t)
{
	free(t->v);
	memset(t, 0, sizeof(*t));
}
