// SPDX-License-Identifier: BSD-2-Clause
/*
 * Registered buffers of the data path, one pool per worker and device
 * (net/smc's smc_buf_create and its per-size lists): the send rings the
 * TCP side reads into and the RMB elements the peer RDMA-writes into.
 *
 * Each element is its own allocation with its own MR on every device of
 * the pool (net/smc registers an RMB on each link of the group: a second
 * link on another device needs its own lkey and rkey for the same bytes).
 * A device added to the pool later (buf_pool_dev) gets every element
 * registered on it, in use or idle.  An RMB element is registered
 * LOCAL_WRITE | REMOTE_WRITE and nothing else, so the rkey a peer learns
 * covers exactly that connection's RMB and never a byte of another
 * connection's memory; a send ring gets no remote access at all.  Sizes
 * are powers of two from 16 KiB (SMC-R's buffer classes).
 *
 * Elements given back go on a free list per kind and size class and are
 * handed out again without re-registering, zeroed: the whole element,
 * unless its last user said how far it can have been written from the
 * start (buf_written; a connection knows it from its cursors), so a
 * short connection does not pay for clearing 128 KiB of buffers it
 * never touched.  An RMB element is handed out again only to a
 * connection with the same peer (its owner) as before: for another peer
 * it gets new keys first (deregistered and registered again), so an rkey
 * a peer once learned never reaches memory that serves another peer,
 * and it is zeroed whole (a peer could have written past its cursors).
 * Send rings have no remote access and are handed out to anyone.  All elements together, in
 * use or free, stay under the pool's byte limit: when a new one would
 * pass it, idle free elements of other classes are released first, and
 * if that is not enough buf_get() says -ENOBUFS (the caller falls back
 * to TCP).  Elements in use are never touched.  An MR is always
 * deregistered before its memory is freed.  The limit counts memory, not
 * MRs: an element registered on two devices counts once.
 *
 * Single-threaded: a pool belongs to one worker's event loop.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "smcproxyd.h"

#define BUF_CLASSES 16 /* 16 KiB << 0 .. 16 KiB << 15 = 512 MiB */

struct buf_pool {
	struct {
		const struct dev_ops *ops;
		struct dev *dev;
	} devs[BUF_DEVS_MAX];
	int ndevs;
	size_t limit; /* bytes, 0: none */
	struct stats *st; /* the owner's gauges, or NULL */
	struct buf *free[2][BUF_CLASSES];
	struct buf *used; /* handed out: registered on a new device too */
	uint64_t outstanding; /* elements handed out */
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
 * A pool of buffers holding at most limit bytes (0: no limit), registered
 * on dev (its device 0) unless dev is NULL: then on the devices given to
 * buf_pool_dev().  NULL with errno set.
 */
struct buf_pool *
buf_pool_new(const struct dev_ops *ops, struct dev *dev, size_t limit)
{
	struct buf_pool *p;

	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return NULL;
	p->limit = limit;
	if (dev != NULL) {
		p->devs[0].ops = ops;
		p->devs[0].dev = dev;
		p->ndevs = 1;
	}
	return p;
}

/*
 * Keep the rdma_buf_bytes and rdma_buf_bytes_used gauges of st (the
 * owning worker's) with the pool's, from now on.
 */
void
buf_pool_set_stats(struct buf_pool *p, struct stats *st)
{
	p->st = st;
	if (st != NULL) {
		STATS_ADD(st, rdma_buf_bytes, (int64_t)p->stats.bytes);
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

/* Register b on the pool's device i.  0 or the device's error. */
static int
buf_reg(struct buf_pool *p, struct buf *b, int i)
{
	/* a peer may write into an RMB element, and into nothing else */
	int access = b->kind == BUF_RMB ? DEV_ACCESS_LOCAL_WRITE |
						  DEV_ACCESS_REMOTE_WRITE :
					  0;
	int rc;

	rc = p->devs[i].ops->mr_reg(p->devs[i].dev, b->addr, b->size, access,
				    &b->mr[i]);
	if (rc) {
		memset(&b->mr[i], 0, sizeof(b->mr[i]));
		p->stats.reg_errors++;
	}
	return rc;
}

/* Deregister b everywhere, then free it. */
static void
buf_destroy(struct buf_pool *p, struct buf *b)
{
	int i;

	for (i = 0; i < p->ndevs; i++)
		if (b->mr[i].priv != NULL)
			p->devs[i].ops->mr_dereg(p->devs[i].dev, &b->mr[i]);
	if (b->registered) {
		p->stats.bytes -= b->size;
		if (p->st != NULL)
			STATS_ADD(p->st, rdma_buf_bytes, -(int64_t)b->size);
	}
	free(b->addr);
	free(b);
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
			while ((b = p->free[k][c]) != NULL) {
				p->free[k][c] = b->next;
				buf_destroy(p, b);
				p->stats.evicted++;
				if (p->stats.bytes + need <= p->limit)
					return true;
			}
		}
	}
	return false;
}

static int
buf_create(struct buf_pool *p, enum buf_kind kind, size_t size,
	   struct buf **out)
{
	struct buf *b;
	long pg = sysconf(_SC_PAGESIZE);
	int i, rc;

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
	b->size = size;
	for (i = 0; i < p->ndevs; i++) {
		rc = buf_reg(p, b, i);
		if (rc) {
			buf_destroy(p, b);
			return rc;
		}
	}
	b->registered = true;
	p->stats.bytes += size;
	if (p->st != NULL)
		STATS_ADD(p->st, rdma_buf_bytes, (int64_t)size);
	p->stats.alloc_cnt++;
	*out = b;
	return 0;
}

/* b goes on (or off) the pool's list of elements in use. */
static void
buf_used_add(struct buf_pool *p, struct buf *b)
{
	b->prev = NULL;
	b->next = p->used;
	if (p->used != NULL)
		p->used->prev = b;
	p->used = b;
	p->outstanding++;
	p->stats.bytes_used[b->kind] += b->size;
	if (p->st != NULL)
		STATS_ADD(p->st, rdma_buf_bytes_used, (int64_t)b->size);
}

static void
buf_used_del(struct buf_pool *p, struct buf *b)
{
	if (b->prev != NULL)
		b->prev->next = b->next;
	else
		p->used = b->next;
	if (b->next != NULL)
		b->next->prev = b->prev;
	b->next = b->prev = NULL;
	p->outstanding--;
	p->stats.bytes_used[b->kind] -= b->size;
	if (p->st != NULL)
		STATS_ADD(p->st, rdma_buf_bytes_used, -(int64_t)b->size);
}

/* New keys for b on every device: its old rkeys stop working.  0 or -errno. */
static int
buf_rekey(struct buf_pool *p, struct buf *b)
{
	int i, rc;

	for (i = 0; i < p->ndevs; i++) {
		if (b->mr[i].priv == NULL)
			continue;
		p->devs[i].ops->mr_dereg(p->devs[i].dev, &b->mr[i]);
		memset(&b->mr[i], 0, sizeof(b->mr[i]));
		rc = buf_reg(p, b, i);
		if (rc)
			return rc;
	}
	p->stats.rekeyed++;
	return 0;
}

static bool
buf_owned_by(const struct buf *b, const char *owner)
{
	return strcmp(b->owner, owner != NULL ? owner : "") == 0;
}

/*
 * An idle element of kind and class c for owner, off its free list: one
 * the owner had, else another one given new keys (RMB elements), else
 * NULL.
 */
static struct buf *
buf_take_idle(struct buf_pool *p, enum buf_kind kind, int c,
	      const char *owner)
{
	struct buf *b, **pp;

	for (pp = &p->free[kind][c]; (b = *pp) != NULL; pp = &b->next)
		if (kind == BUF_SNDBUF || buf_owned_by(b, owner))
			break;
	if (b == NULL && (b = p->free[kind][c]) != NULL) {
		pp = &p->free[kind][c];
		*pp = b->next;
		b->next = NULL;
		if (buf_rekey(p, b)) {
			buf_destroy(p, b);
			return NULL;
		}
		b->dirty = b->size;
		return b;
	}
	if (b != NULL) {
		*pp = b->next;
		b->next = NULL;
	}
	return b;
}

/*
 * Take a buffer of kind and size (buf_size_ok()) from p for a connection
 * with peer owner (NULL: none): a free one of that class (see the top of
 * the file for RMB elements), else a new one registered on every device
 * of the pool.  0 with *out set; -EINVAL for a bad size; -ENOBUFS when it
 * would pass the pool's byte limit; -ENOMEM or the device's error
 * otherwise.  A reused element comes zeroed (as far as its last user can
 * have written it), so it never shows an earlier connection's bytes.
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
	b->dirty = b->size;	/* until its user says otherwise */
	buf_used_add(p, b);
	*out = b;
	return 0;
}

/* buf_get_for() with no owner. */
int
buf_get(struct buf_pool *p, enum buf_kind kind, size_t size, struct buf **out)
{
	return buf_get_for(p, kind, size, NULL, out);
}

/* Whether b has an MR on its pool's device i (b->mr[i] is valid). */
bool
buf_on(const struct buf *b, int i)
{
	return i >= 0 && i < BUF_DEVS_MAX && b->mr[i].priv != NULL;
}

/*
 * The index of dev among p's devices (b->mr[index]), added if new: then
 * every element of p, in use or idle, is registered on it.  An element
 * whose registration failed stays usable on the other devices (buf_on()
 * says which; counted in reg_errors); an idle one is released instead.
 * The index, or -ENOSPC when p has BUF_DEVS_MAX devices, -ESHUTDOWN
 * after buf_pool_free().
 */
int
buf_pool_dev(struct buf_pool *p, const struct dev_ops *ops, struct dev *dev)
{
	struct buf *b, **pp;
	int i, k, c;

	for (i = 0; i < p->ndevs; i++)
		if (p->devs[i].dev == dev)
			return i;
	if (p->dying)
		return -ESHUTDOWN;
	if (p->ndevs == BUF_DEVS_MAX)
		return -ENOSPC;
	i = p->ndevs++;
	p->devs[i].ops = ops;
	p->devs[i].dev = dev;
	for (b = p->used; b != NULL; b = b->next)
		(void)buf_reg(p, b, i);
	for (k = 0; k < 2; k++)
		for (c = 0; c < BUF_CLASSES; c++)
			for (pp = &p->free[k][c]; (b = *pp) != NULL;) {
				if (buf_reg(p, b, i) == 0) {
					pp = &b->next;
					continue;
				}
				*pp = b->next;
				buf_destroy(p, b);
			}
	return i;
}

/* Deregister and free every idle element. */
static void
buf_pool_drain(struct buf_pool *p)
{
	struct buf *b;
	int k, c;

	for (k = 0; k < 2; k++)
		for (c = 0; c < BUF_CLASSES; c++)
			while ((b = p->free[k][c]) != NULL) {
				p->free[k][c] = b->next;
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
 * Give a buffer back to its pool for reuse.  Only once nothing can
 * access it any more: no WRITE of ours reads a send ring still queued,
 * no peer can still write into an RMB element.  NULL is ignored.
 */
void
buf_put(struct buf *b)
{
	struct buf_pool *p;
	int c;

	if (b == NULL)
		return;
	p = b->pool;
	buf_used_del(p, b);
	if (p->dying) {
		buf_destroy(p, b);
		if (p->outstanding == 0)
			free(p);
		return;
	}
	c = buf_class(b->size);
	b->next = p->free[b->kind][c];
	p->free[b->kind][c] = b;
}

/*
 * Free the pool: its idle elements now (deregistered, then freed), those
 * still in use when they are put back.  The devices must outlive it.
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
