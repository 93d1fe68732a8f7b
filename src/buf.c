// SPDX-License-Identifier: BSD-2-Clause
/*
 * Registered buffers of the data path, one pool per worker (net/smc's
 * smc_buf_create and its per-size lists): the send rings the TCP side
 * reads into and the RMB elements the peer RDMA-writes into.
 *
 * Memory and registration are kept apart.  The pool owns the memory:
 * each element is its own allocation, sizes are powers of two from
 * 16 KiB (SMC-R's buffer classes), and elements given back go on a free
 * list per kind and size class and are handed out again, zeroed: the
 * whole element, unless its last user said how far it can have been
 * written from the start (buf_written; a connection knows it from its
 * cursors), so a short connection does not pay for clearing 128 KiB it
 * never touched.  An RMB element is handed out again preferably to a
 * connection with the same peer (its owner) as before; for another peer
 * it is zeroed whole (a peer could have written past its cursors).
 *
 * Registration belongs to the protection domain of the link group an
 * element serves (net/smc registers a group's buffers in the PD of each
 * of its links, smcr_link_reg_buf): buf_mr() registers an element in the
 * PD of a link of its connection's group when the connection first
 * needs it there, so an rkey a peer learns is good on that group's QPs
 * only, never on another peer's.  An RMB element is registered
 * LOCAL_WRITE | REMOTE_WRITE and nothing else, so that rkey also covers
 * exactly one connection's RMB; a send ring gets no remote access at
 * all.  When an RMB element is given back its MRs are deregistered: an
 * idle element is not remotely writable anywhere, and the next
 * connection to use it gets new keys, so a WRITE of the peer still in
 * flight for the old connection fails at the peer (a remote access
 * error) instead of landing in the next one's stream.  That costs one
 * registration per connection and RMB device, where net/smc keeps a
 * group's idle RMBs registered; a send ring, which no peer can reach,
 * keeps its MRs while idle and uses them again when its next user's
 * group has the same PD; the first MR its next user needs elsewhere
 * makes the old ones go, so an element is registered only where its
 * user needs it (at most BUF_MRS_MAX PDs).  Registration counts no
 * memory: all
 * elements together, in use or free, stay under the pool's byte limit;
 * when a new one would pass it, idle free elements of other classes are
 * released first, and if that is not enough buf_get() says -ENOBUFS (the
 * caller falls back to TCP).  The limit covers the links' rings too
 * (buf_pool_reserve: their owner registers them, the pool only counts
 * them), so one accounting holds all of a worker's registered memory.
 * Elements in use are never touched.  An MR is always deregistered
 * before its memory is freed.
 *
 * Single-threaded: a pool belongs to one worker's event loop.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "smcproxyd.h"

#define BUF_CLASSES 16 /* 16 KiB << 0 .. 16 KiB << 15 = 512 MiB */

TAILQ_HEAD(buf_list, buf);

struct buf_pool {
	const struct dev_ops *ops; /* a PD every element is registered in */
	struct dev *pd;		   /* when handed out (tests), or NULL */
	size_t limit;		   /* bytes, 0: none */
	struct stats *st;	   /* the owner's gauges, or NULL */
	struct buf_list free[2][BUF_CLASSES]; /* newest first */
	struct buf_list
		cooling; /* given back, still registered (buf_put_cooled) */
	uint64_t outstanding; /* elements handed out */
	uint64_t clock;	      /* orders buf_mr() uses, for eviction */
	bool dying;	      /* buf_pool_free() ran: free on the last put */
	struct buf_stats stats;
};

/* Whether size is a valid buffer size: a power of two, 16 KiB..512 MiB. */
bool
buf_size_ok(size_t size)
{
	return size >= BUF_SIZE_MIN && size <= BUF_SIZE_MAX &&
	       (size & (size - 1)) == 0;
}

static int
buf_class(size_t size)
{
	int c = 0;

	while (((size_t)BUF_SIZE_MIN << c) < size)
		c++;
	return c;
}

/*
 * A pool of buffers holding at most limit bytes (0: no limit).  With pd
 * (a device handle of ops), every element handed out is registered in
 * that protection domain first (b->mr[0] then; for pools serving one PD,
 * as in tests); without, elements are registered as buf_mr() asks.
 * NULL with errno set.
 */
struct buf_pool *
buf_pool_new(const struct dev_ops *ops, struct dev *pd, size_t limit)
{
	struct buf_pool *p;
	int k, c;

	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return NULL;
	for (k = 0; k < 2; k++)
		for (c = 0; c < BUF_CLASSES; c++)
			TAILQ_INIT(&p->free[k][c]);
	TAILQ_INIT(&p->cooling);
	p->limit = limit;
	if (pd != NULL) {
		p->ops = ops;
		p->pd = pd;
	}
	return p;
}

/*
 * Keep the rdma_buf_bytes, rdma_buf_bytes_used and rdma_ring_bytes
 * gauges of st (the owning worker's) with the pool's, from now on.
 */
void
buf_pool_set_stats(struct buf_pool *p, struct stats *st)
{
	p->st = st;
	if (st != NULL) {
		STATS_ADD(st, rdma_buf_bytes,
			  (int64_t)(p->stats.bytes - p->stats.bytes_rings));
		STATS_ADD(st, rdma_ring_bytes, (int64_t)p->stats.bytes_rings);
		STATS_ADD(st, rdma_buf_bytes_used,
			  (int64_t)(p->stats.bytes_used[0] +
				    p->stats.bytes_used[1]));
	}
}

/* The pool's counters and gauges. */
const struct buf_stats *
buf_pool_stats(const struct buf_pool *p)
{
	return &p->stats;
}

/* Deregister b's MR i. */
static void
buf_unreg(struct buf *b, int i)
{
	if (b->reg[i].pd == NULL)
		return;
	b->reg[i].ops->mr_dereg(b->reg[i].pd, &b->mr[i]);
	memset(&b->mr[i], 0, sizeof(b->mr[i]));
	memset(&b->reg[i], 0, sizeof(b->reg[i]));
	b->pool->stats.deregs++;
}

/* Deregister all of b's MRs. */
static void
buf_unreg_all(struct buf *b)
{
	int i;

	for (i = 0; i < BUF_MRS_MAX; i++)
		buf_unreg(b, i);
}

/*
 * b (in use) loses every MR it has: its connection moves to a new link
 * group, and the keys the old group's peer had go with the old group.
 */
void
buf_mr_drop(struct buf *b)
{
	buf_unreg_all(b);
}

/* Deregister b everywhere, then free it. */
static void
buf_destroy(struct buf_pool *p, struct buf *b)
{
	buf_unreg_all(b);
	if (b->registered) {
		p->stats.bytes -= b->size;
		if (p->st != NULL)
			STATS_ADD(p->st, rdma_buf_bytes, -(int64_t)b->size);
	}
	free(b->addr);
	free(b);
}

/*
 * The MR of b (in use) in protection domain pd, a device handle of ops:
 * registered there now if b has none in it (an RMB element LOCAL_WRITE |
 * REMOTE_WRITE, a send ring without remote access; MRs an earlier user
 * left go first).  NULL when that fails (counted in reg_errors) or b is
 * registered in BUF_MRS_MAX PDs already since it was handed out.
 */
const struct dev_mr *
buf_mr(struct buf *b, const struct dev_ops *ops, struct dev *pd)
{
	struct buf_pool *p = b->pool;
	/* a peer may write into an RMB element, and into nothing else */
	int access = b->kind == BUF_RMB ?
			     DEV_ACCESS_LOCAL_WRITE | DEV_ACCESS_REMOTE_WRITE :
			     0;
	int i, slot = -1;

	if (pd == NULL || ops == NULL)
		return NULL;
	for (i = 0; i < BUF_MRS_MAX; i++) {
		if (b->reg[i].pd == pd) {
			b->reg[i].used = ++p->clock;
			return &b->mr[i];
		}
	}
	/* MRs an earlier user left (a send ring's) go before a new one is
	 * made: an element is registered at most where its user needs it */
	for (i = 0; i < BUF_MRS_MAX; i++) {
		if (b->reg[i].pd != NULL && b->reg[i].used < b->since)
			buf_unreg(b, i);
		if (b->reg[i].pd == NULL && slot < 0)
			slot = i;
	}
	if (slot < 0)
		return NULL;
	if (ops->mr_reg(pd, b->addr, b->size, b->kind == BUF_RMB ? b->iova : 0,
			access, &b->mr[slot])) {
		memset(&b->mr[slot], 0, sizeof(b->mr[slot]));
		p->stats.reg_errors++;
		return NULL;
	}
	b->reg[slot].ops = ops;
	b->reg[slot].pd = pd;
	b->reg[slot].used = ++p->clock;
	p->stats.regs++;
	return &b->mr[slot];
}

/* Release idle elements (not of class keep) until need more bytes fit. */
static bool
buf_make_room(struct buf_pool *p, size_t need, int keep_kind, int keep)
{
	struct buf *b;
	int k, c;

	if (p->limit == 0 || p->stats.bytes + need <= p->limit)
		return true;
	/* the biggest idle elements first: fewest MRs to tear down */
	for (c = BUF_CLASSES - 1; c >= 0; c--) {
		for (k = 0; k < 2; k++) {
			if (k == keep_kind && c == keep)
				continue;
			while ((b = TAILQ_FIRST(&p->free[k][c])) != NULL) {
				TAILQ_REMOVE(&p->free[k][c], b, entry);
				buf_destroy(p, b);
				p->stats.evicted++;
				if (p->stats.bytes + need <= p->limit)
					return true;
			}
		}
	}
	return false;
}

/*
 * Reserve bytes of the pool's limit for memory registered elsewhere (a
 * link's rings, wr.c): counted with the elements, so that all of them
 * stay under the limit (idle elements are released to make room).  0, or
 * -ENOBUFS (counted in nobufs_cnt) when they do not fit.
 */
int
buf_pool_reserve(struct buf_pool *p, size_t bytes)
{
	if (p->dying)
		return -ESHUTDOWN;
	if (!buf_make_room(p, bytes, -1, -1)) {
		p->stats.nobufs_cnt++;
		return -ENOBUFS;
	}
	p->stats.bytes += bytes;
	p->stats.bytes_rings += bytes;
	if (p->st != NULL)
		STATS_ADD(p->st, rdma_ring_bytes, (int64_t)bytes);
	return 0;
}

/* Give back bytes that buf_pool_reserve() reserved. */
void
buf_pool_unreserve(struct buf_pool *p, size_t bytes)
{
	if (bytes > p->stats.bytes_rings)
		bytes = p->stats.bytes_rings;
	p->stats.bytes -= bytes;
	p->stats.bytes_rings -= bytes;
	if (p->st != NULL)
		STATS_ADD(p->st, rdma_ring_bytes, -(int64_t)bytes);
}

/*
 * A random IOVA for an RMB element at addr: below 2^47 as a user address
 * is, its offset in a 2 MiB page that of addr (so that an RNIC can map it
 * with the pages it would use for addr itself).  Peers see this address,
 * never where the element is in our heap (issue 43: a heap layout leak).
 */
static uint64_t
buf_iova_pick(const void *addr)
{
	const uint64_t page = (uint64_t)2 << 20;
	uint64_t r;

	arc4random_buf(&r, sizeof(r));
	r &= ((uint64_t)1 << 46) - 1;
	r = (r & ~(page - 1)) + page; /* never 0 */
	return r | ((uintptr_t)addr & (page - 1));
}

static int
buf_create(struct buf_pool *p, enum buf_kind kind, size_t size,
	   struct buf **out)
{
	struct buf *b;
	long pg = sysconf(_SC_PAGESIZE);

	b = calloc(1, sizeof(*b));
	if (b == NULL)
		return -ENOMEM;
	if (posix_memalign(&b->addr, pg > 0 ? (size_t)pg : 4096, size)) {
		free(b);
		return -ENOMEM;
	}
	memset(b->addr, 0, size);
	b->pool = p;
	b->kind = kind;
	b->iova = kind == BUF_RMB ? buf_iova_pick(b->addr) : (uintptr_t)b->addr;
	b->size = size;
	b->registered = true;
	p->stats.bytes += size;
	if (p->st != NULL)
		STATS_ADD(p->st, rdma_buf_bytes, (int64_t)size);
	p->stats.alloc_cnt++;
	*out = b;
	return 0;
}

/* b is handed out (or given back): counted. */
static void
buf_used_add(struct buf_pool *p, struct buf *b)
{
	p->outstanding++;
	p->stats.bytes_used[b->kind] += b->size;
	if (p->st != NULL)
		STATS_ADD(p->st, rdma_buf_bytes_used, (int64_t)b->size);
}

static void
buf_used_del(struct buf_pool *p, struct buf *b)
{
	p->outstanding--;
	p->stats.bytes_used[b->kind] -= b->size;
	if (p->st != NULL)
		STATS_ADD(p->st, rdma_buf_bytes_used, -(int64_t)b->size);
}

static bool
buf_owned_by(const struct buf *b, const char *owner)
{
	return strcmp(b->owner, owner != NULL ? owner : "") == 0;
}

/*
 * An idle element of kind and class c for owner, off its free list: an
 * RMB element the owner had, else any (zeroed whole if it served
 * another peer), else NULL.
 */
static struct buf *
buf_take_idle(struct buf_pool *p, enum buf_kind kind, int c, const char *owner)
{
	struct buf *b;

	TAILQ_FOREACH(b, &p->free[kind][c], entry)
		if (kind == BUF_SNDBUF || buf_owned_by(b, owner))
			break;
	if (b == NULL) {
		b = TAILQ_FIRST(&p->free[kind][c]);
		if (b != NULL)
			b->dirty = b->size;
	}
	if (b != NULL)
		TAILQ_REMOVE(&p->free[kind][c], b, entry);
	return b;
}

/* An element given back: on its free list, or freed if the pool is dying. */
static void
buf_idle(struct buf_pool *p, struct buf *b)
{
	int c;

	if (b->kind == BUF_RMB)
		buf_unreg_all(b);
	if (p->dying) {
		buf_destroy(p, b);
		if (p->outstanding == 0 && TAILQ_EMPTY(&p->cooling))
			free(p);
		return;
	}
	c = buf_class(b->size);
	TAILQ_INSERT_HEAD(&p->free[b->kind][c], b, entry);
}

/*
 * No peer can write into b any more: every PD it is registered in (if
 * any) was closed, i.e. its link group went, with its QPs.
 */
static bool
buf_unreachable(const struct buf *b)
{
	int i;

	for (i = 0; i < BUF_MRS_MAX; i++)
		if (b->reg[i].pd != NULL &&
		    !b->reg[i].ops->pd_closed(b->reg[i].pd))
			return false;
	return true;
}

/*
 * Cooled elements whose time is up, or that no peer can reach any more
 * (their link groups went: WRITEs still in flight for them have nowhere
 * to land), go idle; all: every one.
 */
static void
buf_cool_reap(struct buf_pool *p, bool all)
{
	struct buf *b, *next;
	uint64_t now = all ? 0 : now_ms();

	TAILQ_FOREACH_SAFE(b, &p->cooling, entry, next) {
		if (!all && b->cool_until > now && !buf_unreachable(b))
			continue;
		TAILQ_REMOVE(&p->cooling, b, entry);
		if (all && p->dying)
			buf_destroy(p, b);
		else
			buf_idle(p, b);
	}
}

/*
 * Take a buffer of kind and size (buf_size_ok()) from p for a connection
 * with peer owner (NULL: none): a free one of that class (see the top of
 * the file), else a new one.  It has no MR in any PD yet unless the pool
 * has one (buf_pool_new) or it is a send ring that kept its MRs: buf_mr()
 * registers it where it is needed.  0 with *out set; -EINVAL for a bad
 * size; -ENOBUFS when it would pass the pool's byte limit; -ENOMEM or the
 * device's error otherwise.  A reused element comes zeroed (as far as
 * its last user can have written it), so it never shows an earlier
 * connection's bytes.
 */
int
buf_get_for(struct buf_pool *p, enum buf_kind kind, size_t size,
	    const char *owner, struct buf **out)
{
	struct buf *b;
	int c, rc;

	if (!buf_size_ok(size) || (kind != BUF_SNDBUF && kind != BUF_RMB))
		return -EINVAL;
	if (p->dying)
		return -ESHUTDOWN;
	buf_cool_reap(p, false);
	c = buf_class(size);
	b = buf_take_idle(p, kind, c, owner);
	if (b != NULL) {
		memset(b->addr, 0, b->dirty);
		p->stats.reuse_cnt++;
	} else {
		if (!buf_make_room(p, size, kind, c)) {
			p->stats.nobufs_cnt++;
			return -ENOBUFS;
		}
		rc = buf_create(p, kind, size, &b);
		if (rc)
			return rc;
	}
	snprintf(b->owner, sizeof(b->owner), "%s", owner != NULL ? owner : "");
	b->dirty = b->size; /* until its user says otherwise */
	b->since = ++p->clock;
	buf_used_add(p, b);
	if (p->pd != NULL && buf_mr(b, p->ops, p->pd) == NULL) {
		buf_put(b);
		return -EIO;
	}
	*out = b;
	return 0;
}

/* buf_get_for() with no owner. */
int
buf_get(struct buf_pool *p, enum buf_kind kind, size_t size, struct buf **out)
{
	return buf_get_for(p, kind, size, NULL, out);
}

/* Deregister and free every idle element. */
static void
buf_pool_drain(struct buf_pool *p)
{
	struct buf *b;
	int k, c;

	buf_cool_reap(p, true);
	for (k = 0; k < 2; k++)
		for (c = 0; c < BUF_CLASSES; c++)
			while ((b = TAILQ_FIRST(&p->free[k][c])) != NULL) {
				TAILQ_REMOVE(&p->free[k][c], b, entry);
				buf_destroy(p, b);
			}
}

/*
 * The user of b (in use) says that nothing beyond its first n bytes can
 * have been written since it got b: only those are zeroed before b is
 * handed out again.  Without this call the whole element is.
 */
void
buf_written(struct buf *b, size_t n)
{
	if (b != NULL)
		b->dirty = n < b->size ? n : b->size;
}

/*
 * Give a buffer back to its pool for reuse.  Only once nothing of ours
 * can access it any more: no WRITE of ours reads a send ring still
 * queued.  An RMB element's MRs go now, so a peer can write into it no
 * more: call this only when the peer has stopped writing (it said it was
 * done, closed or aborted), else buf_put_cooled().  NULL is ignored.
 */
void
buf_put(struct buf *b)
{
	if (b == NULL)
		return;
	buf_used_del(b->pool, b);
	buf_idle(b->pool, b);
}

/*
 * Give back an RMB element whose peer may still have WRITEs for it in
 * flight (we aborted; it has not answered): it stays registered, read by
 * nobody, until until_ms (now_ms), so those WRITEs land harmlessly
 * instead of failing at the peer and taking its link, and every other
 * connection on it, down; then its MRs go and it is reused, zeroed
 * whole.  A send ring goes back at once (buf_put).  NULL is ignored.
 */
void
buf_put_cooled(struct buf *b, uint64_t until_ms)
{
	struct buf_pool *p;

	if (b == NULL)
		return;
	p = b->pool;
	if (b->kind != BUF_RMB || p->dying) {
		buf_put(b);
		return;
	}
	buf_used_del(p, b);
	b->dirty = b->size;
	b->cool_until = until_ms;
	TAILQ_INSERT_HEAD(&p->cooling, b, entry);
}

/*
 * Free the pool: its idle elements now (deregistered, then freed), those
 * still in use when they are put back.  The PDs they are registered in
 * must outlive it.
 */
void
buf_pool_free(struct buf_pool *p)
{
	if (p == NULL)
		return;
	buf_pool_drain(p);
	if (p->outstanding > 0)
		p->dying = true;
	else
		free(p);
}
