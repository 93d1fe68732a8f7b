// SPDX-License-Identifier: BSD-2-Clause
/*
 * What the rest of the daemon knows of a group and its links, which it
 * holds opaque (smcproxyd.h): reads of their fields.  Below lgr.c, and
 * calling nothing of it, so that llc.c, the data path and lgr.c itself
 * read them alike.
 */
#include <stdint.h>
#include <string.h>

#include "smcproxyd.h"
#include "lgr.h"
uint32_t
lgr_id(const struct lgr *lgr)
{
	return lgr->id;
}

enum lgr_role
lgr_role(const struct lgr *lgr)
{
	return lgr->role;
}

bool
lgr_is_active(const struct lgr *lgr)
{
	return lgr->state == LGR_STATE_ACTIVE;
}

/* Terminating: DELETE_LINK went, it is freed soon. */
bool
lgr_is_ending(const struct lgr *lgr)
{
	return lgr->state == LGR_STATE_TERMINATING;
}

const struct conf_peer *
lgr_peer(const struct lgr *lgr)
{
	return lgr->peer;
}

/* Whether the group negotiated feature (CLC_FEAT_*). */
bool
lgr_has_feature(const struct lgr *lgr, uint32_t feature)
{
	return (lgr->features & feature) != 0;
}

/* Whether the peer daemon of lgr is the instance with system id sysid. */
bool
lgr_peer_is(const struct lgr *lgr, const uint8_t sysid[8])
{
	return memcmp(lgr->peer_system_id, sysid,
		      sizeof(lgr->peer_system_id)) == 0;
}

/* The peer daemon's system id (8 bytes). */
const uint8_t *
lgr_peer_system_id(const struct lgr *lgr)
{
	return lgr->peer_system_id;
}

/* A client group whose setup failed: the peer port refused the connect. */
bool
lgr_refused(const struct lgr *lgr)
{
	return lgr->refused;
}

/*
 * It ended in a way its connections may resume from (not orderly, no
 * protocol violation: the peer daemon may still have them).
 */
bool
lgr_resumable(const struct lgr *lgr)
{
	return lgr->resumable;
}

/* The server's worker + 1 (0: unknown). */
uint8_t
lgr_peer_worker(const struct lgr *lgr)
{
	return lgr->peer_worker;
}

/* A client group: the peer port answered (whatever RDMA did after). */
bool
lgr_tcp_connected(const struct lgr *lgr)
{
	return lgr->tcp_connected;
}

struct lgr *
lgr_link_group(const struct lgr_link *link)
{
	return link->lgr;
}

/* The link's id on the wire (0 until known). */
uint8_t
lgr_link_id(const struct lgr_link *link)
{
	return link->id;
}

const char *
lgr_link_dev_name(const struct lgr_link *link)
{
	return link->dev->name;
}

bool
lgr_link_is_active(const struct lgr_link *link)
{
	return link->state == LGR_LINK_ACTIVE;
}

struct wr_link *
lgr_link_wr(const struct lgr_link *link)
{
	return link->wr;
}

/*
 * The MR of b in link's protection domain (its group's on its device),
 * registered there now if need be; NULL when it cannot be.
 */
const struct dev_mr *
lgr_link_mr(const struct lgr_link *link, struct buf *b)
{
	if (b == NULL || link->pd == NULL)
		return NULL;
	return buf_mr(b, link->dev->ops, link->pd);
}

/* Whether buffers can be registered for link (it has its PD). */
bool
lgr_link_has_pd(const struct lgr_link *link)
{
	return link->pd != NULL;
}

/*
 * The group's active links: the one after prev (NULL: the first), NULL
 * after the last.
 */
struct lgr_link *
lgr_link_next_active(struct lgr *lgr, const struct lgr_link *prev)
{
	int i = prev == NULL ? 0 : prev->slot + 1;

	for (; i < LGR_LINK_SLOTS; i++)
		if (lgr->link[i].state == LGR_LINK_ACTIVE)
			return &lgr->link[i];
	return NULL;
}

/* The group's connections: the one after prev (NULL: the first). */
struct lgr_conn *
lgr_conn_next(struct lgr *lgr, const struct lgr_conn *prev)
{
	return prev == NULL ? TAILQ_FIRST(&lgr->conns) :
			      TAILQ_NEXT(prev, entry);
}
