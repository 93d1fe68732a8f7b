// SPDX-License-Identifier: BSD-2-Clause
/*
 * Link groups (net/smc's smc_core.c): the RC links between this daemon and
 * one peer, the connections they carry, and what each peer is reached by.
 *
 * A daemon keeps its groups in an lgr_ctx, one per worker (DESIGN.md §5):
 * a group, its links and its connections live on one event_base.  The
 * client side creates a group on demand, when a rule needs to reach a
 * peer, and reuses it while it has room; the server side creates one for
 * each CLC handshake a peer opens on the peer port (clc.c).  Life of a
 * group:
 *
 *   CLC          PROPOSAL/ACCEPT/CONFIRM on the control connection; the
 *                first link's QP exists but is connected only once the
 *                peer's MAC has verified (docs/protocol.md)
 *   CONFIRMING   LLC CONFIRM_LINK over the first link (llc.c)
 *   ACTIVE       carries connections; the server adds a second link on
 *                another device when both sides have one (ADD_LINK);
 *                TEST_LINK keeps silent links honest
 *   TERMINATING  DELETE_LINK ALL sent; freed once it went out
 *
 * A link that fails hands its connections to the other active link
 * (lgr_conn.link_down) and is deleted at the peer; no link left ends the
 * group.  A failed handshake or a DECLINE puts the peer on the TCP
 * fallback for a back-off period (60 s, doubling up to 10 min); the
 * reason is kept per peer, process-wide, for `show peers`.
 *
 * Resources are never freed from inside a device or CLC callback: a
 * group or link that ends is marked, and freed from the group's tick once
 * the sends posted on it have had time to complete or flush (the data
 * path counts those completions, also of a link it failed over from);
 * whatever has still not completed then is completed with an error as
 * the link is freed (wr_link_free), so no connection waits for it.
 *
 * Beside this file: lgr_info.c below it (what the others may read of a
 * group and its links), and above it, never called from here,
 * lgr_smcr.c (a kernel peer's groups), lgr_check.c (smcproxyctl check)
 * and lgr_show.c (show lgrs / show links).
 */
#include <sys/socket.h>
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <jansson.h>

#include "smcproxyd.h"
#include "lgr.h"
#include "clc_wire.h"
#include "llc_wire.h"
#include "monitor.h"

#define LGR_CLC_WAIT_MS 6000	  /* CLC_WAIT_TIME */
#define LGR_LLC_WAIT_MS 2000	  /* SMC_LLC_WAIT_TIME */
#define LGR_BACKOFF_MS 60000	  /* first fallback period after a failure */
#define LGR_BACKOFF_MAX_MS 600000 /* the longest */
#define LGR_ADD_LINK_RETRY_MS 60000
#define LGR_CLIENT_IDLE_EXTRA_MS 10000 /* client lingers longer (smc-r §6) */
#define LGR_TICK_MAX_MS 500

static uint32_t lgr_ids;

static pthread_once_t lgr_system_id_once = PTHREAD_ONCE_INIT;
static uint8_t lgr_daemon_system_id[8];

static void lgr_tick_cb(evutil_socket_t fd, short what, void *arg);
static void lgr_link_fail(struct lgr_link *link, uint32_t reason, bool by_peer,
			  const char *why);
static bool lgr_add_link_start(struct lgr *lgr);
static const struct lgr_llc_ops lgr_llc_ops;
static const struct lgr_clc_ops lgr_clc_ops;
static void lgr_cdc_rx(struct wr_link *l, const void *msg, size_t len,
		       void *arg);

/* ---- peers (the registry is peer.c's) ---- */

/* An active group to the peer came (+1) or went (-1). */
static void
lgr_peer_count(const struct lgr_ctx *ctx, const char *name, int delta)
{
	peer_lgr_count(name, delta, ctx->t.backoff_ms);
}

/*
 * RDMA to the peer failed for reason: with backoff, the peer is on the
 * fallback for ctx's back-off period (peer_fallback()).  The period in ms.
 */
static uint64_t
lgr_peer_fallback(const struct lgr_ctx *ctx, const char *name, uint32_t reason,
		  bool by_peer, bool backoff)
{
	return peer_fallback(name, reason, by_peer,
			     backoff ? ctx->t.backoff_ms : 0,
			     ctx->t.backoff_max_ms);
}

/*
 * Whether RDMA to the peer is backed off.  Asked for each connection that
 * finds no group, so the answer is cached in the context while it holds:
 * a host without RDMA takes no lock per connection.
 */
static bool
lgr_peer_backed_off(struct lgr_ctx *ctx, const char *name)
{
	uint64_t now = now_ms(), until;
	unsigned int i,
		n = ctx->nbackoff < LGR_DEVS_MAX ? ctx->nbackoff : LGR_DEVS_MAX;

	for (i = 0; i < n; i++)
		if (strcmp(ctx->backoff[i].peer, name) == 0)
			break;
	if (i < n && now < ctx->backoff[i].until_ms)
		return true;
	until = peer_backoff_until(name);
	if (now >= until)
		return false;
	if (i == n)
		i = ctx->nbackoff++ % LGR_DEVS_MAX;
	snprintf(ctx->backoff[i].peer, sizeof(ctx->backoff[i].peer), "%s",
		 name);
	ctx->backoff[i].until_ms = until;
	return true;
}

/* ---- contexts ---- */

/*
 * A daemon's link groups on base: conf for the peers and the rdma
 * settings (held; NULL when lgr_worker_new sets a worker), st and al for
 * counters and the authentication rate limit, t for the protocol timers
 * (NULL or 0 fields: SMC's).  Devices are added with lgr_ctx_add_dev, or
 * opened on demand for a worker.  NULL on failure.
 */
struct lgr_ctx *
lgr_ctx_new(struct event_base *base, struct conf *conf, struct stats *st,
	    struct auth_limit *al, const struct lgr_timeouts *t)
{
	struct lgr_ctx *ctx;
	uint8_t rnd[AUTH_NONCE_LEN];

	ctx = calloc(1, sizeof(*ctx));
	if (ctx == NULL)
		return NULL;
	TAILQ_INIT(&ctx->lgrs);
	LIST_INIT(&ctx->clcs);
	ctx->base = base;
	ctx->llc_ops = &lgr_llc_ops;
	ctx->clc_ops = &lgr_clc_ops;
	ctx->conf = conf != NULL ? conf_hold(conf) : NULL;
	ctx->stats = st;
	ctx->auth = al;
	if (t != NULL)
		ctx->t = *t;
	if (ctx->t.clc_wait_ms == 0)
		ctx->t.clc_wait_ms = LGR_CLC_WAIT_MS;
	if (ctx->t.llc_wait_ms == 0)
		ctx->t.llc_wait_ms = LGR_LLC_WAIT_MS;
	if (ctx->t.backoff_ms == 0)
		ctx->t.backoff_ms = LGR_BACKOFF_MS;
	if (ctx->t.backoff_max_ms < ctx->t.backoff_ms)
		ctx->t.backoff_max_ms = ctx->t.backoff_ms > LGR_BACKOFF_MAX_MS ?
						ctx->t.backoff_ms :
						LGR_BACKOFF_MAX_MS;
	if (ctx->t.add_link_retry_ms == 0)
		ctx->t.add_link_retry_ms = LGR_ADD_LINK_RETRY_MS;
	auth_nonce(rnd);
	memcpy(ctx->system_id, rnd, sizeof(ctx->system_id));
	return ctx;
}

#define LGR_PORT_SETTLE_MS 1000 /* after a port came back, before ADD_LINK */

static int lgr_links_live(const struct lgr *lgr);

/*
 * A port of dev became active again: a server group short of links
 * offers one soon (the peer's port may need a moment too) rather than
 * after its retry period.
 */
static void
lgr_port_active(struct dev *dev, void *arg)
{
	struct lgr_ctx *ctx = arg;
	uint64_t at = now_ms() + LGR_PORT_SETTLE_MS;
	struct lgr *lgr;

	TAILQ_FOREACH(lgr, &ctx->lgrs, entry) {
		if (lgr->role != LGR_ROLE_SERVER ||
		    lgr->state != LGR_STATE_ACTIVE ||
		    lgr_links_live(lgr) >= lgr->max_links ||
		    lgr->next_add_ms <= at)
			continue;
		log_info("lgr %u: a port came back: adding a link in %u ms",
			 lgr->id, LGR_PORT_SETTLE_MS);
		lgr->next_add_ms = at;
	}
}

static void
lgr_dev_watch(struct lgr_ctx *ctx, const struct lgr_dev *d, bool on)
{
	if (d->ops->port_watch != NULL)
		d->ops->port_watch(d->dev, on ? lgr_port_active : NULL,
				   on ? ctx : NULL);
}

/*
 * Let ctx's links use dev (ops: its ops table), for any local address.
 * The caller keeps ownership.  0, or -ENOSPC.
 */
int
lgr_ctx_add_dev(struct lgr_ctx *ctx, const struct dev_ops *ops, struct dev *dev,
		const char *name)
{
	struct lgr_dev *d;

	if (ctx->ndevs == LGR_DEVS_MAX)
		return -ENOSPC;
	d = &ctx->devs[ctx->ndevs++];
	memset(d, 0, sizeof(*d));
	d->ops = ops;
	d->dev = dev;
	snprintf(d->name, sizeof(d->name), "%s", name);
	lgr_dev_watch(ctx, d, true);
	return 0;
}

/* The data path's handlers of ctx's groups (each may be NULL), with arg. */
void
lgr_ctx_set_ops(struct lgr_ctx *ctx, const struct lgr_data_ops *ops, void *arg)
{
	ctx->ops = *ops;
	ctx->ops_arg = arg;
}

/* ctx's groups, newest first: the one after prev (NULL: the first). */
struct lgr *
lgr_next(struct lgr_ctx *ctx, struct lgr *prev)
{
	return prev == NULL ? TAILQ_FIRST(&ctx->lgrs) : TAILQ_NEXT(prev, entry);
}

static void lgr_free(struct lgr *lgr);

/*
 * Free ctx: every link group ends at once (DELETE_LINK ALL is posted but
 * not waited for; the peer also sees the control connection close), then
 * the devices we opened are closed.  Not from a callback of ctx.
 */
void
lgr_ctx_free(struct lgr_ctx *ctx)
{
	struct lgr *lgr;
	int i;

	if (ctx == NULL)
		return;
	while ((lgr = TAILQ_FIRST(&ctx->lgrs)) != NULL) {
		if (lgr->state == LGR_STATE_ACTIVE)
			lgr_terminate(lgr, LLC_DEL_PROG_INIT_TERM, true, false);
		lgr_free(lgr);
	}
	while (!LIST_EMPTY(&ctx->clcs))
		clc_conn_free(LIST_FIRST(&ctx->clcs));
	for (i = 0; i < ctx->ndevs; i++)
		if (ctx->devs[i].owned)
			ib_dev_close(ctx->devs[i].dev);
		else
			lgr_dev_watch(ctx, &ctx->devs[i], false);
	if (ctx->conf != NULL)
		conf_drop(ctx->conf);
	free(ctx);
}

/* One system id for the daemon: every worker's groups show the same. */
static void
lgr_system_id_init(void)
{
	uint8_t rnd[AUTH_NONCE_LEN];

	auth_nonce(rnd);
	memcpy(lgr_daemon_system_id, rnd, sizeof(lgr_daemon_system_id));
}

/*
 * The link-group context of worker w (worker.c owns it: made before the
 * worker's loop runs, freed with lgr_ctx_free after it): the daemon's
 * system id, devices opened as peers need them.  NULL when out of
 * memory.
 */
struct lgr_ctx *
lgr_worker_new(struct worker *w)
{
	struct lgr_ctx *ctx;

	pthread_once(&lgr_system_id_once, lgr_system_id_init);
	ctx = lgr_ctx_new(worker_base(w), NULL, worker_stats(w), worker_auth(w),
			  NULL);
	if (ctx == NULL)
		return NULL;
	ctx->w = w;
	ctx->probe = true;
	memcpy(ctx->system_id, lgr_daemon_system_id, sizeof(ctx->system_id));
	return ctx;
}

static unsigned int
lgr_test_link_ms(const struct lgr_ctx *ctx)
{
	if (ctx->t.test_link_ms)
		return ctx->t.test_link_ms;
	return (unsigned int)lgr_ctx_conf(ctx)->rdma.test_link_time * 1000;
}

static uint64_t
lgr_idle_ms(const struct lgr *lgr)
{
	const struct lgr_ctx *ctx = lgr->ctx;
	uint64_t ms = ctx->t.idle_ms ?
			      ctx->t.idle_ms :
			      (uint64_t)lgr->conf->rdma.lgr_idle_timeout * 1000;

	/* the server lets go first, so a client never uses a dying group */
	if (lgr->role == LGR_ROLE_CLIENT && ms > 0)
		ms += ctx->t.idle_ms ? ctx->t.idle_ms / 10 :
				       LGR_CLIENT_IDLE_EXTRA_MS;
	return ms;
}

/* ---- devices ---- */

static bool
lgr_addr_loopback(const struct addr *a)
{
	if (a->ss.ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)&a->ss)
				      ->sin_addr.s_addr) >>
			24) == 127;
	if (a->ss.ss_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(
			&((const struct sockaddr_in6 *)&a->ss)->sin6_addr);
	return false;
}

/*
 * A device of ctx for traffic from local (NULL: any), named want ("":
 * any), that is not skip's device.  Devices added for tests serve any
 * address.
 */
static const struct lgr_dev *
lgr_dev_find(const struct lgr_ctx *ctx, const struct addr *local,
	     const char *want, const struct lgr_dev *skip)
{
	const struct lgr_dev *d;
	int i;

	for (i = 0; i < ctx->ndevs; i++) {
		d = &ctx->devs[i];
		if (skip != NULL && strcmp(d->name, skip->name) == 0)
			continue;
		if (want[0] != '\0' && strcmp(d->name, want) != 0)
			continue;
		if (local == NULL || d->local.len == 0 ||
		    addr_same_host(&d->local, local))
			return d;
	}
	return NULL;
}

/*
 * Open a device for local (a worker's context): want (a peer's device),
 * else one of rdma.devices, or any, with a RoCE GID for that address.
 * An address no device serves is not asked about again for the longest
 * back-off period.
 */
static const struct lgr_dev *
lgr_dev_open(struct lgr_ctx *ctx, const struct addr *local, const char *want)
{
	const struct conf *conf = lgr_ctx_conf(ctx);
	uint64_t now = now_ms();
	char ip[INET6_ADDRSTRLEN];
	struct lgr_dev *d;
	struct dev *dev = NULL;
	int i;

	if (!ctx->probe || ctx->ndevs == LGR_DEVS_MAX ||
	    lgr_addr_loopback(local) || !addr_host(local, ip, sizeof(ip)))
		return NULL;
	for (i = 0; i < ctx->ntried; i++)
		if (addr_same_host(&ctx->tried[i].local, local) &&
		    strcmp(ctx->tried[i].device, want) == 0 &&
		    now < ctx->tried[i].until_ms)
			return NULL;
	if (want[0] != '\0')
		dev = ib_dev_open(want, 0, ip, conf->rdma.gid_index);
	else if (conf->rdma.ndevices == 0)
		dev = ib_dev_open(NULL, 0, ip, conf->rdma.gid_index);
	for (i = 0; want[0] == '\0' && i < conf->rdma.ndevices && dev == NULL;
	     i++)
		dev = ib_dev_open(conf->rdma.devices[i], 0, ip,
				  conf->rdma.gid_index);
	if (dev == NULL) {
		for (i = 0; i < ctx->ntried; i++)
			if (addr_same_host(&ctx->tried[i].local, local) &&
			    strcmp(ctx->tried[i].device, want) == 0)
				break;
		if (i == ctx->ntried && ctx->ntried < LGR_DEVS_MAX)
			ctx->ntried++;
		if (i < ctx->ntried) {
			ctx->tried[i].local = *local;
			snprintf(ctx->tried[i].device,
				 sizeof(ctx->tried[i].device), "%s", want);
			ctx->tried[i].until_ms = now + ctx->t.backoff_max_ms;
		}
		return NULL;
	}
	d = &ctx->devs[ctx->ndevs++];
	memset(d, 0, sizeof(*d));
	d->ops = &ib_dev_ops;
	d->dev = dev;
	d->owned = true;
	d->local = *local;
	snprintf(d->name, sizeof(d->name), "%s", ib_dev_name(dev));
	lgr_dev_watch(ctx, d, true);
	return d;
}

/* The device for a group with peer from local: the peer's own, or any. */
const struct lgr_dev *
lgr_dev_for(struct lgr_ctx *ctx, const struct addr *local,
	    const struct conf_peer *peer)
{
	const struct lgr_dev *d;

	d = lgr_dev_find(ctx, local, peer->device, NULL);
	return d != NULL ? d : lgr_dev_open(ctx, local, peer->device);
}

/*
 * A device for a second link: another device than not's, through any
 * other local address of an interface that is up.
 */
const struct lgr_dev *
lgr_dev_alt(struct lgr_ctx *ctx, const struct lgr_dev *skip)
{
	const struct lgr_dev *d = lgr_dev_find(ctx, NULL, "", skip);
	struct ifaddrs *ifa, *all = NULL;
	struct addr a;

	if (d != NULL || !ctx->probe || getifaddrs(&all) == -1)
		return d;
	for (ifa = all; ifa != NULL && d == NULL; ifa = ifa->ifa_next) {
		if (ifa->ifa_addr == NULL || !(ifa->ifa_flags & IFF_UP) ||
		    (ifa->ifa_flags & IFF_LOOPBACK))
			continue;
		memset(&a, 0, sizeof(a));
		if (ifa->ifa_addr->sa_family == AF_INET)
			a.len = sizeof(struct sockaddr_in);
		else if (ifa->ifa_addr->sa_family == AF_INET6 &&
			 !IN6_IS_ADDR_LINKLOCAL(
				 &((struct sockaddr_in6 *)ifa->ifa_addr)
					  ->sin6_addr))
			a.len = sizeof(struct sockaddr_in6);
		else
			continue;
		memcpy(&a.ss, ifa->ifa_addr, a.len);
		if (skip->local.len && addr_same_host(&a, &skip->local))
			continue;
		d = lgr_dev_find(ctx, &a, "", NULL);
		if (d == NULL)
			d = lgr_dev_open(ctx, &a, "");
		if (d != NULL && strcmp(d->name, skip->name) == 0)
			d = NULL;
	}
	freeifaddrs(all);
	return d;
}

/* The local address the kernel would send to peer from (no packet sent). */
static int
lgr_local_addr(const struct addr *peer, struct addr *out)
{
	socklen_t len = sizeof(out->ss);
	int fd, rc = 0;

	fd = socket(peer->ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return -errno;
	if (connect(fd, (const struct sockaddr *)&peer->ss, peer->len) == -1 ||
	    getsockname(fd, (struct sockaddr *)&out->ss, &len) == -1)
		rc = -errno;
	else
		out->len = len;
	close(fd);
	return rc;
}

/* ---- links ---- */

/* How long a link that went down keeps its QP: flushes come back. */
static uint64_t
lgr_flush_ms(const struct lgr_ctx *ctx)
{
	return ctx->t.llc_wait_ms / 2;
}

/* wr.c says the link failed (completion error, async event, ...). */
static void
lgr_wr_down(struct wr_link *l, void *arg)
{
	struct lgr_link *link = arg;

	if (wr_link_stats(l)->rx_bad_opcode > 0) {
		STATS_INC(link->lgr->ctx->stats, llc_protocol_errors);
		lgr_link_fail(link, LLC_DEL_PROT_VIOL, false,
			      "protocol violation: a receive completed by "
			      "no SEND");
		return;
	}
	lgr_link_fail(link, LLC_DEL_LOST_PATH, false, "device fault");
}

static struct lgr_link *
lgr_link_slot(struct lgr *lgr)
{
	int i;

	for (i = 0; i < LGR_LINK_SLOTS; i++)
		if (lgr->link[i].state == LGR_LINK_FREE)
			return &lgr->link[i];
	return NULL;
}

/*
 * The group's protection domain on dev, opened with its first link
 * there: its QPs and the buffers registered for its connections (buf_mr)
 * live in it, so no other peer's QP reaches them.  NULL on failure.
 */
static struct dev *
lgr_pd(struct lgr *lgr, const struct lgr_dev *dev)
{
	int i = (int)(dev - lgr->ctx->devs);

	if (i < 0 || i >= LGR_DEVS_MAX)
		return NULL;
	if (lgr->pd[i] == NULL) {
		lgr->pd[i] = dev->ops->pd_open(dev->dev);
		if (lgr->pd[i] == NULL)
			log_warn("lgr %u: %s: no protection domain", lgr->id,
				 dev->name);
	}
	return lgr->pd[i];
}

/*
 * A new link's QP on dev (INIT, receives posted), named in logs as link
 * id (the id it is expected to get).  NULL on failure.
 */
struct lgr_link *
lgr_link_open(struct lgr *lgr, const struct lgr_dev *dev, uint8_t id)
{
	const struct conf_rdma *r = &lgr->conf->rdma;
	struct wr_link_cb cb = {lgr_wr_down, NULL};
	struct wr_params p;
	struct lgr_link *link = lgr_link_slot(lgr);
	int rc;

	if (link == NULL)
		return NULL;
	memset(link, 0, sizeof(*link));
	link->lgr = lgr;
	link->slot = (int)(link - lgr->link);
	link->dev = dev;
	link->pd = lgr_pd(lgr, dev);
	if (link->pd == NULL)
		return NULL;
	cb.arg = link;
	memset(&p, 0, sizeof(p));
	snprintf(p.name, sizeof(p.name), "lgr %u link %u", lgr->id, id);
	p.max_send_wr = (uint32_t)r->max_send_wr;
	p.max_recv_wr = (uint32_t)r->max_recv_wr;
	p.inline_enabled = r->inline_enabled;
	p.inline_size = (uint32_t)r->inline_size;
	p.slot_wait = r->slot_wait == CONF_SLOT_WAIT_ALL ? WR_WAIT_ALL :
							   WR_WAIT_EXCLUSIVE;
	p.reap_lazily = r->lazy_completions;
	p.cdc_data = r->cdc_data;
	if (lgr->smcr)
		p.rx_msg_max = LLC_V2_MSG_MAX;
	link->wr = wr_link_new(dev->ops, link->pd, lgr->ctx->base, &p, &cb);
	if (link->wr == NULL) {
		log_warn("lgr %u: %s: cannot create a link", lgr->id,
			 dev->name);
		return NULL;
	}
	rc = dev->ops->qp_addr(wr_link_qp(link->wr), &link->local);
	if (rc) {
		errno = -rc;
		log_warn("lgr %u: %s: QP address", lgr->id, dev->name);
		wr_link_free(link->wr);
		link->wr = NULL;
		return NULL;
	}
	/* its rings count in the worker's registered memory (and in a
	 * kernel host's share of it) as the connections' buffers do */
	if (lgr->ctx->ops.link_mem != NULL) {
		link->mem = wr_link_mem(link->wr);
		if (lgr->ctx->ops.link_mem(lgr, link->mem, true,
					   lgr->ctx->ops_arg) != 0) {
			log_warnx("lgr %u: %s: no registered memory for a "
				  "link's rings (%zu bytes): refused",
				  lgr->id, dev->name, link->mem);
			wr_link_free(link->wr);
			link->wr = NULL;
			link->mem = 0;
			errno = ENOBUFS;
			return NULL;
		}
	}
	link->state = LGR_LINK_INIT;
	llc_link_init(link);
	wr_rx_register(link->wr, CDC_MSG_TYPE, lgr_cdc_rx);
	return link;
}

/* Back to a free slot: the QP goes, its memory is deregistered. */
static void
lgr_link_release(struct lgr_link *link)
{
	if (link->state == LGR_LINK_FREE)
		return;
	llc_link_release(link);
	wr_link_free(link->wr);
	if (link->mem > 0 && link->lgr->ctx->ops.link_mem != NULL)
		link->lgr->ctx->ops.link_mem(link->lgr, link->mem, false,
					     link->lgr->ctx->ops_arg);
	memset(link, 0, sizeof(*link));
}

/* The path the group's QPs take to its peer (its route keys). */
static void
lgr_path(const struct lgr *lgr, struct dev_path *path)
{
	const struct conf_route *r = &lgr->peer->route;

	memset(path, 0, sizeof(*path));
	path->traffic_class = (uint8_t)(r->dscp << 2);
	path->sl = (uint8_t)r->priority;
	path->timeout = (uint8_t)r->qp_timeout;
	path->retry_cnt = (uint8_t)r->retry_count;
	path->rnr_retry = (uint8_t)r->rnr_retry;
}

/* Connect the link's QP (RTR, RTS) to the peer's.  0 or -errno. */
static int
lgr_link_connect(struct lgr_link *link, const struct dev_qp_addr *peer)
{
	struct dev_qp_addr p = *peer;
	struct dev_path path;

	if (p.mtu > link->local.mtu)
		p.mtu = link->local.mtu;
	link->peer = *peer;
	lgr_path(link->lgr, &path);
	wr_link_cdc_data(link->wr, link->lgr->features & CLC_FEAT_CDC_DATA);
	return wr_link_connect(link->wr, &p, &path);
}

/* The link with wire id, in any state but free/down; NULL if none. */
struct lgr_link *
lgr_link_by_id(struct lgr *lgr, uint8_t id)
{
	return lgr_link_find(lgr, id);
}

static struct lgr_link *
lgr_link_active(struct lgr *lgr, const struct lgr_link *skip)
{
	int i;

	for (i = 0; i < LGR_LINK_SLOTS; i++)
		if (&lgr->link[i] != skip &&
		    lgr->link[i].state == LGR_LINK_ACTIVE)
			return &lgr->link[i];
	return NULL;
}

/* Active links of the group. */
int
lgr_links_active(const struct lgr *lgr)
{
	int i, n = 0;

	for (i = 0; i < LGR_LINK_SLOTS; i++)
		n += lgr->link[i].state == LGR_LINK_ACTIVE;
	return n;
}

/* Links that exist or are being added (not down). */
static int
lgr_links_live(const struct lgr *lgr)
{
	int i, n = 0;

	for (i = 0; i < LGR_LINK_SLOTS; i++)
		n += lgr->link[i].state != LGR_LINK_FREE &&
		     lgr->link[i].state != LGR_LINK_DOWN;
	return n;
}

static uint8_t
lgr_link_id_new(struct lgr *lgr)
{
	uint8_t id;
	int tries;

	for (tries = 0; tries < 255; tries++) {
		id = lgr->next_link_id++;
		if (lgr->next_link_id == 0)
			lgr->next_link_id = 1;
		if (id != 0 && lgr_link_by_id(lgr, id) == NULL)
			return id;
	}
	return 0;
}

/* ---- groups ---- */

struct lgr *
lgr_new(struct lgr_ctx *ctx, enum lgr_role role, struct conf *conf,
	const struct conf_peer *peer)
{
	struct timeval tv;
	struct lgr *lgr;
	uint8_t rnd[AUTH_NONCE_LEN];
	unsigned int tick;
	int i;

	lgr = calloc(1, sizeof(*lgr));
	if (lgr == NULL)
		return NULL;
	lgr->ctx = ctx;
	lgr->id = __atomic_add_fetch(&lgr_ids, 1, __ATOMIC_RELAXED);
	lgr->role = role;
	lgr->state = LGR_STATE_CLC;
	lgr->conf = conf_hold(conf);
	lgr->peer = peer;
	lgr->next_link_id = 1;
	lgr->created_ms = now_ms();
	TAILQ_INIT(&lgr->conns);
	for (i = 0; i < LGR_TOKEN_BUCKETS; i++)
		LIST_INIT(&lgr->by_token[i]);
	do {
		auth_nonce(rnd);
		memcpy(&lgr->token, rnd, sizeof(lgr->token));
	} while (lgr->token == 0);
	memcpy(lgr->uid, rnd + 4, sizeof(lgr->uid));
	lgr->tick = event_new(ctx->base, -1, EV_PERSIST, lgr_tick_cb, lgr);
	if (lgr->tick == NULL) {
		conf_drop(lgr->conf);
		free(lgr);
		return NULL;
	}
	/* fine enough for every bound the group keeps */
	tick = ctx->t.llc_wait_ms / 4;
	if (lgr_test_link_ms(ctx) > 0 && lgr_test_link_ms(ctx) / 4 < tick)
		tick = lgr_test_link_ms(ctx) / 4;
	if (ctx->t.idle_ms && ctx->t.idle_ms / 4 < tick)
		tick = ctx->t.idle_ms / 4;
	if (tick > LGR_TICK_MAX_MS)
		tick = LGR_TICK_MAX_MS;
	if (tick < 1)
		tick = 1;
	tv.tv_sec = tick / 1000;
	tv.tv_usec = (tick % 1000) * 1000;
	event_add(lgr->tick, &tv);
	TAILQ_INSERT_HEAD(&ctx->lgrs, lgr, entry);
	return lgr;
}

/*
 * A server group for peer may be set up (+1: true, counted) unless it
 * has max_lgrs already; -1: one went.  Bounds what an authenticated peer
 * can make us hold (QPs, CQs, buffers, lingering idle groups).
 */
static bool
lgr_peer_server(const struct conf_peer *peer, const char *name, int delta)
{
	return peer_server_lgrs(name, peer->max_lgrs, delta);
}

static void
lgr_free(struct lgr *lgr)
{
	struct lgr_ctx *ctx = lgr->ctx;
	int i;

	if (lgr->counted_server)
		lgr_peer_server(lgr->peer, lgr->peer->name, -1);
	for (i = 0; i < LGR_LINK_SLOTS; i++)
		lgr_link_release(&lgr->link[i]);
	/* each goes once the buffers still registered in it are given back */
	for (i = 0; i < LGR_DEVS_MAX; i++)
		if (lgr->pd[i] != NULL)
			ctx->devs[i].ops->pd_close(lgr->pd[i]);
	if (lgr->clc != NULL)
		clc_conn_free(lgr->clc);
	rtoken_free(&lgr->rtokens);
	event_free(lgr->tick);
	TAILQ_REMOVE(&ctx->lgrs, lgr, entry);
	conf_drop(lgr->conf);
	free(lgr);
}

/*
 * The group is done with: it goes once what was posted on its links has
 * completed or flushed.  Links still up are failed first when
 * connections were on them, so their sends flush at once.
 */
void
lgr_dead(struct lgr *lgr)
{
	int i;

	if (lgr->dead_ms != 0)
		return;
	lgr->state = LGR_STATE_TERMINATING;
	lgr->term_deadline_ms = 0;
	lgr->dead_ms = now_ms();
	for (i = 0; i < LGR_LINK_SLOTS && lgr->term_conns > 0; i++)
		if (lgr->link[i].wr != NULL &&
		    !wr_link_is_down(lgr->link[i].wr))
			wr_link_down(lgr->link[i].wr, "its link group ended");
}

static void lgr_conns_move(struct lgr *lgr, struct lgr_link *from,
			   struct lgr_link *to);

/*
 * The handshake failed (CLC, or CONFIRM_LINK of the first link) with
 * code; by_peer when the peer said so.  With decline, tell the peer.  The
 * client falls back to TCP for the back-off period, and the data path
 * hears of it (connections waiting for this group take the fallback now);
 * of a kernel peer's group too (connections waiting for it go on now).
 */
void
lgr_fail(struct lgr *lgr, uint32_t code, bool by_peer, bool decline)
{
	uint64_t period;

	if (lgr->state == LGR_STATE_TERMINATING)
		return;
	if (decline && lgr->clc != NULL)
		clc_decline_send(lgr->clc, code);
	if (lgr->role == LGR_ROLE_CLIENT) {
		STATS_INC(lgr_stats(lgr), clnt_hshake_err_cnt);
		period = lgr_peer_fallback(lgr->ctx, lgr->peer->name, code,
					   by_peer, !lgr->for_resume);
		log_warnx("lgr %u: peer %s: link group setup failed: %s %s "
			  "(0x%08x); TCP fallback for %llu s",
			  lgr->id, lgr->peer->name,
			  by_peer ? "peer declined," : "declined,",
			  clc_decline_name(code), code,
			  (unsigned long long)(period / 1000));
	} else {
		STATS_INC(lgr_stats(lgr), srv_hshake_err_cnt);
		lgr_peer_fallback(lgr->ctx, lgr->peer->name, code, by_peer,
				  false);
		log_warnx("lgr %u: peer %s: link group setup failed: %s %s "
			  "(0x%08x)",
			  lgr->id, lgr->peer->name,
			  by_peer ? "peer declined," : "declined,",
			  clc_decline_name(code), code);
	}
	lgr_dead(lgr);
	/* a standard group has its first connection from the start */
	if (lgr->nconns > 0)
		lgr_conns_move(lgr, NULL, NULL);
	if ((lgr->role == LGR_ROLE_CLIENT || lgr->smcr) &&
	    lgr->ctx->ops.setup_failed != NULL)
		lgr->ctx->ops.setup_failed(lgr, lgr->ctx->ops_arg);
}

/*
 * A new client-side group to peer (looked up by name in ctx's config),
 * its first link on the device for the address peer is reached from, and
 * the CLC handshake on fd (a connected stream socket, taken over) or,
 * with -1, on a new TCP connection to the peer's port.  NULL when it could
 * not start: the peer is then on the fallback (NOSMCRDEV without a
 * device).
 */
struct lgr *
lgr_client_new(struct lgr_ctx *ctx, const struct conf_peer *peer, int fd)
{
	return lgr_client_new_on(ctx, peer, fd, 0, false);
}

/*
 * lgr_client_new() asking the server for the group to be on its worker
 * (worker + 1, as its ACCEPT said; 0: any): where the connections of a
 * group that ended are, to resume there.  With resume, a failure does
 * not put the peer on the fallback's back-off: those tries go on every
 * second while an outage lasts, and new connections are to find RDMA as
 * soon as it is back.  A check (lgr_check.c) asks with resume for
 * the same reason: it is to see, not to change, what connections take.
 */
struct lgr *
lgr_client_new_on(struct lgr_ctx *ctx, const struct conf_peer *peer, int fd,
		  uint8_t worker, bool resume)
{
	struct conf *conf = lgr_ctx_conf(ctx);
	const struct lgr_dev *dev;
	struct lgr_link *link;
	const char *name;
	struct addr local;
	char ip[INET6_ADDRSTRLEN];
	socklen_t len = sizeof(local.ss);
	struct lgr *lgr;
	uint64_t period;
	uint32_t code;

	/* the group holds conf: its peer must be that config's */
	name = peer->name;
	peer = conf_peer_find(conf, name);
	if (peer == NULL) {
		log_debug("peer %s: no longer configured: no link group", name);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	memset(&local, 0, sizeof(local));
	if (peer->source.len != 0)
		local = peer->source;
	else if (fd >= 0 ? getsockname(fd, (struct sockaddr *)&local.ss, &len) :
			   lgr_local_addr(&peer->addr, &local))
		memset(&local, 0, sizeof(local));
	else if (fd >= 0)
		local.len = len;
	dev = lgr_dev_for(ctx, &local, peer);
	if (dev == NULL) {
		period = lgr_peer_fallback(ctx, peer->name, CLC_DECL_NOSMCRDEV,
					   false, !resume);
		log_info("peer %s: no RDMA device for %s: TCP fallback "
			 "(NOSMCRDEV) for %llu s",
			 peer->name,
			 addr_host(&local, ip, sizeof(ip)) ? ip :
							     "this address",
			 (unsigned long long)(period / 1000));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	lgr = lgr_new(ctx, LGR_ROLE_CLIENT, conf, peer);
	if (lgr == NULL) {
		if (fd >= 0)
			close(fd);
		lgr_peer_fallback(ctx, peer->name, CLC_DECL_MEM, false, true);
		return NULL;
	}
	lgr->want_worker = worker;
	lgr->for_resume = resume;
	/* the server names the first link 1 */
	link = lgr_link_open(lgr, dev, 1);
	if (link == NULL) {
		/* no memory for its rings: the peer's no-buffers backoff */
		code = errno == ENOBUFS ? CLC_DECL_MEM : CLC_DECL_ERR_RDYLNK;
		if (fd >= 0)
			close(fd);
		lgr_fail(lgr, code, false, false);
		return NULL;
	}
	log_info("lgr %u: peer %s: setting up a link group (%s, qpn %u)",
		 lgr->id, peer->name, dev->name, link->local.qpn);
	/* it takes fd, and fails the group itself when it cannot start */
	clc_client_start(lgr, fd);
	return lgr;
}

/*
 * A client group to peer on the peer's worker with CLC number worker (a
 * group lands on any worker unless it asks): an active one with room for
 * one more connection, or NULL with *coming set if one for that worker is
 * being set up.
 */
struct lgr *
lgr_client_on(struct lgr_ctx *ctx, const struct conf_peer *peer, uint8_t worker,
	      bool *coming)
{
	struct lgr *lgr;

	*coming = false;
	TAILQ_FOREACH(lgr, &ctx->lgrs, entry) {
		if (lgr->role != LGR_ROLE_CLIENT ||
		    strcmp(lgr->peer->name, peer->name) != 0)
			continue;
		if (lgr->state == LGR_STATE_CLC ||
		    lgr->state == LGR_STATE_CONFIRMING) {
			*coming |= lgr->want_worker == worker;
			continue;
		}
		if (lgr->state == LGR_STATE_ACTIVE &&
		    lgr->peer_worker == worker &&
		    lgr->nconns < lgr->max_conns && lgr_links_active(lgr) > 0)
			return lgr;
	}
	return NULL;
}

/*
 * An active client-side group to peer with room for one more
 * connection, or NULL (then use the fallback).  Without one, a new group
 * is set up in the background unless one is on its way or the peer is
 * backed off; and the next one already once every group has less than a
 * quarter of its room left, so that a burst of connections finds it
 * ready rather than falling back while it is set up.
 */
struct lgr *
lgr_get(struct lgr_ctx *ctx, const struct conf_peer *peer)
{
	struct lgr *lgr, *found = NULL;
	bool pending = false, roomy = false;

	if (ctx == NULL)
		return NULL;
	TAILQ_FOREACH(lgr, &ctx->lgrs, entry) {
		if (lgr->role != LGR_ROLE_CLIENT ||
		    strcmp(lgr->peer->name, peer->name) != 0)
			continue;
		if (lgr->state == LGR_STATE_ACTIVE &&
		    lgr->nconns < lgr->max_conns && lgr_links_active(lgr) > 0) {
			if (found == NULL)
				found = lgr;
			if ((lgr->max_conns - lgr->nconns) * 4 > lgr->max_conns)
				roomy = true;
		}
		if (lgr->state == LGR_STATE_CLC ||
		    lgr->state == LGR_STATE_CONFIRMING)
			pending = true;
	}
	if (found != NULL && (roomy || pending))
		return found;
	if (pending) {
		log_debug("peer %s: link group on its way", peer->name);
		return NULL;
	}
	if (lgr_peer_backed_off(ctx, peer->name)) {
		log_debug("peer %s: RDMA backed off", peer->name);
		return found;
	}
	if (found != NULL)
		log_info("peer %s: lgr %u is three quarters full: setting up "
			 "the next group",
			 peer->name, found->id);
	lgr_client_new(ctx, peer, -1);
	return found;
}

/* Whether a client-side group to peer is being set up (CLC, CONFIRM_LINK). */
bool
lgr_on_its_way(const struct lgr_ctx *ctx, const struct conf_peer *peer)
{
	const struct lgr *lgr;

	if (ctx == NULL)
		return false;
	TAILQ_FOREACH(lgr, &ctx->lgrs, entry)
		if (lgr->role == LGR_ROLE_CLIENT &&
		    (lgr->state == LGR_STATE_CLC ||
		     lgr->state == LGR_STATE_CONFIRMING) &&
		    strcmp(lgr->peer->name, peer->name) == 0)
			return true;
	return false;
}

/*
 * A rule is about to reach peer: make sure a link group to it exists or
 * is on its way (while the data path is not there yet, connections still
 * take the fallback; the group is set up eagerly and stays).
 */
void
lgr_want(struct lgr_ctx *ctx, const struct conf_peer *peer)
{
	lgr_get(ctx, peer);
}

/* ---- the CLC's steps (clc.c reports ours; lgr_smcr.c a kernel peer's) ---- */

/*
 * A new server-side group for the peer whose PROPOSAL p arrived on a
 * control connection from local: negotiated limits, the first link's QP
 * on the device for local, not connected.  NULL with *decline set.
 */
static struct lgr *
lgr_server_new(struct lgr_ctx *ctx, const struct conf_peer *peer,
	       const struct clc_proposal_info *p, const struct addr *local,
	       uint32_t *decline)
{
	struct conf *conf = lgr_ctx_conf(ctx);
	const struct lgr_dev *dev;
	struct lgr *lgr;
	uint32_t ours = CLC_FEAT_CONN_OPEN | CLC_FEAT_RESUME | CLC_FEAT_ORIGIN;

	dev = lgr_dev_for(ctx, peer->source.len != 0 ? &peer->source : local,
			  peer);
	if (dev == NULL) {
		lgr_peer_fallback(ctx, peer->name, CLC_DECL_NOSMCRDEV, false,
				  false);
		*decline = CLC_DECL_NOSMCRDEV;
		return NULL;
	}
	/*
	 * max_lgrs is charged once the peer authenticated (lgr_clc_peer):
	 * a stranger that only proposes under its name must not use up
	 * what the peer may hold.  Groups still in CLC are bounded by the
	 * strangers' budget and CLC_PENDING_MAX instead.
	 */
	lgr = lgr_new(ctx, LGR_ROLE_SERVER, conf, peer);
	if (lgr == NULL) {
		*decline = CLC_DECL_MEM;
		return NULL;
	}
	lgr->max_conns = p->max_conns < conf->rdma.max_conns_per_lgr ?
				 p->max_conns :
				 (uint8_t)conf->rdma.max_conns_per_lgr;
	lgr->max_links = p->max_links < conf->rdma.max_links ?
				 p->max_links :
				 (uint8_t)conf->rdma.max_links;
	if (conf->rdma.inline_enabled)
		ours |= CLC_FEAT_INLINE;
	if (conf->rdma.cdc_data)
		ours |= CLC_FEAT_CDC_DATA;
	lgr->features = p->features & ours;
	memcpy(lgr->peer_system_id, p->system_id, sizeof(lgr->peer_system_id));
	if (lgr_link_open(lgr, dev, lgr->next_link_id) == NULL) {
		*decline =
			errno == ENOBUFS ? CLC_DECL_MEM : CLC_DECL_ERR_RDYLNK;
		lgr_dead(lgr);
		return NULL;
	}
	return lgr;
}

/*
 * Our side of ACCEPT or CONFIRM: first link, RMB element size, limits,
 * token.  No RMB region is announced over CLC: rmb_rkey and rmb_vaddr
 * are 0 (docs/protocol.md, "Authentication of link groups").
 */
static void
lgr_clc_body(const struct lgr *lgr, struct clc_accept_info *out)
{
	const struct lgr_link *link = &lgr->link[0];
	int rmbe = clc_rmbe_compress((uint64_t)lgr->conf->rdma.rmb);

	memset(out, 0, sizeof(*out));
	out->first_contact = true;
	memcpy(out->system_id, lgr->ctx->system_id, sizeof(out->system_id));
	memcpy(out->link.gid, link->local.gid, sizeof(out->link.gid));
	memcpy(out->link.mac, link->local.mac, sizeof(out->link.mac));
	out->link.qpn = link->local.qpn;
	out->link.psn = link->local.psn;
	out->link.mtu = (uint8_t)link->local.mtu;
	out->rmbe_size = rmbe < 0 ? 0 : (uint8_t)rmbe;
	out->max_conns = lgr->max_conns;
	out->max_links = lgr->max_links;
	out->features = lgr->features;
	out->alert_token = lgr->token;
	if (lgr->role == LGR_ROLE_SERVER && lgr->ctx->w != NULL)
		out->worker = (uint8_t)(worker_id(lgr->ctx->w) + 1);
}

/*
 * The peer's ACCEPT (client) or CONFIRM (server) has verified: keep what
 * it says and connect the first link's QP to the peer's.  A server's
 * group counts towards the peer's max_lgrs from here.  0, or the
 * CLC_DECL_* code to decline with.
 */
uint32_t
lgr_clc_peer(struct lgr *lgr, const struct clc_accept_info *in)
{
	struct lgr_link *link = &lgr->link[0];
	struct dev_qp_addr peer;

	if (link->state != LGR_LINK_INIT)
		return CLC_DECL_ERR_RDYLNK; /* its device failed meanwhile */
	if (lgr->role == LGR_ROLE_SERVER && !lgr->counted_server) {
		if (!lgr_peer_server(lgr->peer, lgr->peer->name, 1)) {
			STATS_INC(lgr->ctx->stats, peer_lgr_limit);
			log_warnx("lgr %u: peer %s has %d link groups with us "
				  "(max_lgrs): declined",
				  lgr->id, lgr->peer->name,
				  lgr->peer->max_lgrs);
			return CLC_DECL_MEM;
		}
		lgr->counted_server = true;
	}
	memcpy(lgr->peer_system_id, in->system_id, sizeof(in->system_id));
	lgr->peer_token = in->alert_token;
	lgr->peer_rmbe_size = in->rmbe_size;
	if (lgr->role == LGR_ROLE_CLIENT) {
		lgr->max_conns = in->max_conns;
		lgr->max_links = in->max_links;
		lgr->features = in->features;
		lgr->peer_worker = in->worker;
	}
	memset(&peer, 0, sizeof(peer));
	memcpy(peer.gid, in->link.gid, sizeof(peer.gid));
	memcpy(peer.mac, in->link.mac, sizeof(peer.mac));
	peer.qpn = in->link.qpn;
	peer.psn = in->link.psn;
	peer.mtu = in->link.mtu;
	if (lgr_link_connect(link, &peer))
		return CLC_DECL_ERR_RDYLNK;
	return 0;
}

/*
 * The CLC messages are through: the first link proves itself with
 * CONFIRM_LINK, which the server sends and the client awaits.
 */
void
lgr_clc_done(struct lgr *lgr)
{
	struct lgr_link *link = &lgr->link[0];
	uint64_t now = now_ms();

	lgr->state = LGR_STATE_CONFIRMING;
	link->state = LGR_LINK_CONFIRMING;
	link->act_ms = now;
	if (lgr->role == LGR_ROLE_CLIENT) {
		link->wait = LGR_WAIT_CONFIRM_REQ;
		link->deadline_ms = now + 2 * (uint64_t)lgr->ctx->t.llc_wait_ms;
		return;
	}
	link->id = lgr_link_id_new(lgr);
	link->wait = LGR_WAIT_CONFIRM_RESP;
	link->deadline_ms = now + lgr->ctx->t.llc_wait_ms;
	if (llc_confirm_link_send(link))
		lgr_fail(lgr, CLC_DECL_ERR_RDYLNK, false, true);
}

/*
 * The control connection ended (code 0), the peer declined (code, by_peer)
 * or sent something we refused (code): before the group is active this
 * fails the handshake; after, it ends the group.  A client's group the
 * server declines was never active there: the server got no answer to its
 * CONFIRM_LINK (a path that works one way only: a route whose hop limit
 * dies at a router, a firewall).  The setup failed: the peer goes on the
 * fallback's back-off, as for any decline, and the group ends.
 */
static void
lgr_clc_end(struct lgr *lgr, uint32_t code, bool by_peer)
{
	uint64_t period;

	switch (lgr->state) {
	case LGR_STATE_CLC:
	case LGR_STATE_CONFIRMING:
		lgr_fail(lgr, code ? code : CLC_DECL_PEERDECL, by_peer, false);
		break;
	case LGR_STATE_ACTIVE:
		if (lgr->role == LGR_ROLE_CLIENT && by_peer && code != 0) {
			STATS_INC(lgr_stats(lgr), clnt_hshake_err_cnt);
			period =
				lgr_peer_fallback(lgr->ctx, lgr->peer->name,
						  code, true, !lgr->for_resume);
			log_warnx("lgr %u: peer %s: link group setup failed: "
				  "peer declined, %s (0x%08x) after our "
				  "CONFIRM_LINK response; TCP fallback for "
				  "%llu s",
				  lgr->id, lgr->peer->name,
				  clc_decline_name(code), code,
				  (unsigned long long)(period / 1000));
			lgr_terminate(lgr, LLC_DEL_LOST_PATH, false, false);
			break;
		}
		log_warnx("lgr %u: peer %s: control connection %s", lgr->id,
			  lgr->peer->name, code ? "broke" : "closed");
		lgr_terminate(lgr, LLC_DEL_LOST_PATH, false, false);
		break;
	case LGR_STATE_TERMINATING:
		break;
	}
}

/* clc.c's only way up to the group (lgr_ctx_new sets ctx->clc_ops). */
static const struct lgr_clc_ops lgr_clc_ops = {
	.server_new = lgr_server_new,
	.body = lgr_clc_body,
	.peer = lgr_clc_peer,
	.done = lgr_clc_done,
	.end = lgr_clc_end,
};

/* ---- connections ---- */

/* The link with the fewest connections, for load balance. */
static struct lgr_link *
lgr_link_least(struct lgr *lgr)
{
	struct lgr_link *best = NULL;
	int i;

	for (i = 0; i < LGR_LINK_SLOTS; i++)
		if (lgr->link[i].state == LGR_LINK_ACTIVE &&
		    (best == NULL || lgr->link[i].conns < best->conns))
			best = &lgr->link[i];
	return best;
}

static struct lgr_conn_bucket *
lgr_token_bucket(struct lgr *lgr, uint32_t token)
{
	return &lgr->by_token[token % LGR_TOKEN_BUCKETS];
}

/* A token for a new connection of ctx: never 0, never handed out twice. */
static uint32_t
lgr_token_new(struct lgr_ctx *ctx)
{
	if (++ctx->last_token == 0)
		++ctx->last_token;
	return ctx->last_token;
}

/* The connection of lgr with our token, accepted or not; NULL if none. */
struct lgr_conn *
lgr_conn_find(const struct lgr *lgr, uint32_t token)
{
	struct lgr_conn *c;

	LIST_FOREACH(c, &lgr->by_token[token % LGR_TOKEN_BUCKETS], hash)
		if (c->token == token)
			return c;
	return NULL;
}

static void
lgr_conn_unlink(struct lgr_conn *c)
{
	struct lgr *lgr = c->lgr;

	TAILQ_REMOVE(&lgr->conns, c, entry);
	LIST_REMOVE(c, hash);
	if (c->link != NULL)
		c->link->conns--;
	c->link = NULL;
	c->lgr = NULL;
	c->peer_link = 0; /* its key, in lgr->rtokens */
	if (--lgr->nconns == 0)
		lgr->idle_since_ms = now_ms();
}

/*
 * Put connection c (link_down and arg set) on lgr, on its least used
 * active link, with a new token (c->token) unless it has one (resumed
 * from another group of the context).  0, -ENOSPC when the group is
 * full, -ENOLINK when it has no active link.
 */
int
lgr_conn_add(struct lgr *lgr, struct lgr_conn *c)
{
	return lgr_conn_add_on(lgr, c, NULL);
}

/* c on link of lgr, with a new token unless it has one. */
static void
lgr_conn_put(struct lgr *lgr, struct lgr_conn *c, struct lgr_link *link)
{
	c->lgr = lgr;
	c->link = link;
	if (c->token == 0)
		c->token = lgr_token_new(lgr->ctx);
	link->conns++;
	TAILQ_INSERT_HEAD(&lgr->conns, c, entry);
	LIST_INSERT_HEAD(lgr_token_bucket(lgr, c->token), c, hash);
	lgr->nconns++;
}

/*
 * lgr_conn_add() on link, which must be an active link of lgr (the one
 * the peer opened the connection on: the rkey it sent is for that
 * link's device), or NULL for the least used.  -ENOLINK when link is
 * not active.
 */
int
lgr_conn_add_on(struct lgr *lgr, struct lgr_conn *c, struct lgr_link *link)
{
	if (lgr->state != LGR_STATE_ACTIVE)
		return -ENOLINK;
	if (lgr->nconns >= lgr->max_conns)
		return -ENOSPC;
	if (link == NULL)
		link = lgr_link_least(lgr);
	if (link == NULL || link->lgr != lgr || link->state != LGR_LINK_ACTIVE)
		return -ENOLINK;
	lgr_conn_put(lgr, c, link);
	return 0;
}

/*
 * SMC-R dialect: c is the connection whose CLC sets up lgr (its token
 * and RMB go out in our ACCEPT): on the first link while the group is
 * still in its handshake.  0 or -EINVAL.
 */
int
lgr_conn_add_first(struct lgr *lgr, struct lgr_conn *c)
{
	struct lgr_link *link = &lgr->link[0];

	if (!lgr->smcr || lgr->state != LGR_STATE_CLC || lgr->nconns != 0 ||
	    link->state != LGR_LINK_INIT)
		return -EINVAL;
	lgr_conn_put(lgr, c, link);
	return 0;
}

/*
 * Take connection c off its group (no callback runs), and its peer RMB
 * element's rkeys off the group's table (rtoken_conn_gone).
 */
void
lgr_conn_del(struct lgr_conn *c)
{
	if (c->lgr == NULL)
		return;
	rtoken_conn_gone(c);
	lgr_conn_unlink(c);
}

/* Every connection on from moves to to (NULL: the group is gone). */
static void
lgr_conns_move(struct lgr *lgr, struct lgr_link *from, struct lgr_link *to)
{
	struct lgr_conn *c, *next;

	TAILQ_FOREACH_SAFE(c, &lgr->conns, entry, next) {
		if (from != NULL && c->link != from)
			continue;
		if (to == NULL) {
			lgr_conn_unlink(c);
			c->ended = lgr;
		} else {
			c->link->conns--;
			c->link = to;
			to->conns++;
		}
		if (c->link_down != NULL)
			c->link_down(c, to); /* may free c */
	}
}

/* ---- CDCs: the peer's messages for our connections ---- */

/*
 * Before a failover validation CDC on link: every CDC the peer saw
 * complete on another link (the one it failed over from) is in that
 * link's completion queue, maybe not yet handled.  Handle those first,
 * or the validation finds a CDC missing that did arrive.
 */
static void
lgr_cdc_drain_others(struct lgr_link *link, const void *msg, size_t len)
{
	const struct cdc_msg *c = msg;
	struct lgr *lgr = link->lgr;
	int i;

	if (len < sizeof(*c) || !(c->prod_flags & CDC_PF_FAILOVER_VALIDATION))
		return;
	for (i = 0; i < LGR_LINK_SLOTS; i++)
		if (&lgr->link[i] != link && lgr->link[i].wr != NULL &&
		    lgr->link[i].state != LGR_LINK_FREE)
			wr_link_poll(lgr->link[i].wr);
}

/*
 * wr.c's handler for CDC_MSG_TYPE on every link: the CDC goes to the
 * connection its token names.  A CDC that arrived whole is good even if
 * its link has failed since: the peer saw it complete and counts on it.
 * One we cannot take ends the group.
 */
static void
lgr_cdc_rx(struct wr_link *l, const void *msg, size_t len, void *arg)
{
	struct lgr_link *link = arg;
	struct lgr *lgr = link->lgr;
	struct lgr_conn *c;
	struct cdc_info m;
	const char *why;
	uint32_t token = 0;
	char buf[80];

	if (link->state == LGR_LINK_FREE || lgr->state == LGR_STATE_TERMINATING)
		return;
	link->act_ms = now_ms();
	lgr_cdc_drain_others(link, msg, len);
	if (lgr->state == LGR_STATE_TERMINATING)
		return;
	if (cdc_msg_check(msg, len,
			  lgr->features & CLC_FEAT_CDC_DATA ? CDC_DATA_MAX : 0,
			  &m, &why) == 0) {
		token = m.token;
		c = lgr_conn_find(lgr, token);
		/* a kernel peer's, before its relay starts: kept for it */
		if (c != NULL && c->rc == NULL && lgr->smcr &&
		    len == CDC_MSG_LEN &&
		    (c->early_len == 0 ||
		     cdc_seq_newer(m.seqno,
				   be16toh(((const struct cdc_msg *)c->early)
						   ->seqno)))) {
			memcpy(c->early, msg, CDC_MSG_LEN);
			c->early_len = CDC_MSG_LEN;
			return;
		}
		/* before its relay starts, or crossing our close (tokens
		 * are never handed out twice) */
		if (c != NULL ? c->rc == NULL : token <= lgr->ctx->last_token)
			return;
		why = "CDC for an unknown token";
		if (c != NULL &&
		    rx_cdc_recv(c->rc, &m, (const uint8_t *)msg + CDC_MSG_LEN,
				&why) == 0)
			return;
	}
	snprintf(buf, sizeof(buf), "%s (token %u, link %u)",
		 why != NULL ? why : "bad CDC", token, link->id);
	lgr_protocol_error(lgr, buf);
}

/*
 * c's relay has started (c->rc set): the CDC a kernel peer sent before
 * it, if any, is taken now, as it would have been on arrival.
 */
void
lgr_conn_replay(struct lgr_conn *c)
{
	struct cdc_info m;
	const char *why = NULL;
	char buf[80];
	size_t len = c->early_len;

	c->early_len = 0;
	if (len == 0 || c->rc == NULL || c->lgr == NULL)
		return;
	if (cdc_msg_check(c->early, len, 0, &m, &why) == 0 &&
	    rx_cdc_recv(c->rc, &m, c->early + CDC_MSG_LEN, &why) == 0)
		return;
	snprintf(buf, sizeof(buf), "%s (token %u)",
		 why != NULL ? why : "bad CDC", c->token);
	lgr_protocol_error(c->lgr, buf);
}

/* ---- what llc.c reports ---- */

/* CONFIRM_LINK went through on link: it is active. */
static void
lgr_link_confirmed(struct lgr_link *link)
{
	struct lgr *lgr = link->lgr;
	struct log_where w = {lgr->peer->name, NULL, lgr->id, link->id};
	char gid[INET6_ADDRSTRLEN], msg[256];
	uint64_t now = now_ms();

	link->state = LGR_LINK_ACTIVE;
	link->wait = LGR_WAIT_NONE;
	link->up_ms = link->act_ms = now;
	STATS_INC(lgr_stats(lgr), link_up);
	inet_ntop(AF_INET6, link->peer.gid, gid, sizeof(gid));
	snprintf(msg, sizeof(msg),
		 "lgr %u link %u: up (CONFIRM_LINK): %s qpn %u, peer %s "
		 "qpn %u",
		 lgr->id, link->id, link->dev->name, link->local.qpn, gid,
		 link->peer.qpn);
	log_event(LOG_EV_LINK_UP, LOG_LEVEL_INFO, &w, "%s", msg);
	monitor_event(MONITOR_LINK_UP, &w, "%s", msg);
	if (lgr->state != LGR_STATE_CONFIRMING) {
		if (lgr->ctx->ops.link_up != NULL)
			lgr->ctx->ops.link_up(link, lgr->ctx->ops_arg);
		return;
	}
	lgr->state = LGR_STATE_ACTIVE;
	lgr->active_ms = lgr->idle_since_ms = now;
	lgr->next_add_ms = now;
	lgr->counted_up = true;
	STATS_INC(lgr_stats(lgr), lgr_created);
	lgr_peer_count(lgr->ctx, lgr->peer->name, 1);
	snprintf(msg, sizeof(msg),
		 "lgr %u: peer %s: link group active as %s (max_conns %u, "
		 "max_links %u)",
		 lgr->id, lgr->peer->name,
		 lgr->role == LGR_ROLE_CLIENT ? "client" : "server",
		 lgr->max_conns, lgr->max_links);
	log_info("%s", msg);
	w.link = -1;
	monitor_event(MONITOR_LGR_UP, &w, "%s", msg);
	/* a kernel client waits 2 + 1 s for a second link's offer after
	 * its first (release 1 only when it negotiated max_links 2): the
	 * second link, or, with no device for it, an offer without a link,
	 * refused at once, as single-link SMC-R servers make it */
	if (lgr->smcr && lgr->role == LGR_ROLE_SERVER &&
	    (lgr->max_links < 2 || !lgr_add_link_start(lgr)) &&
	    lgr->smcr_release == 0)
		llc_add_link_none_send(link);
	if (lgr->ctx->ops.link_up != NULL)
		lgr->ctx->ops.link_up(link, lgr->ctx->ops_arg);
}

/*
 * Link went down: reason is the DELETE_LINK reason, by_peer when the
 * peer deleted it (then we do not tell it).  Its connections move to the
 * other active link; with none left the group ends.
 */
static void
lgr_link_fail(struct lgr_link *link, uint32_t reason, bool by_peer,
	      const char *why)
{
	struct lgr *lgr = link->lgr;
	enum lgr_link_state was = link->state;
	struct log_where w = {lgr->peer->name, NULL, lgr->id, link->id};
	struct lgr_link *other;
	char msg[512];

	if (was == LGR_LINK_FREE || was == LGR_LINK_DOWN)
		return;
	link->state = LGR_LINK_DOWN;
	link->wait = LGR_WAIT_NONE;
	link->down_ms = now_ms();
	if (!wr_link_is_down(link->wr))
		wr_link_down(link->wr, why);
	if (lgr->state == LGR_STATE_TERMINATING)
		return;
	snprintf(msg, sizeof(msg), "lgr %u link %u (%s): down: %s", lgr->id,
		 link->id, link->dev->name, why);
	log_event(LOG_EV_LINK_DOWN, LOG_LEVEL_WARN, &w, "%s", msg);
	monitor_event(MONITOR_LINK_DOWN, &w, "%s", msg);
	if (lgr->state == LGR_STATE_CLC)
		return; /* the CLC step that caused it declines */
	if (lgr->state == LGR_STATE_CONFIRMING) {
		lgr_fail(lgr, CLC_DECL_ERR_RDYLNK, false, true);
		return;
	}
	if (was == LGR_LINK_ACTIVE)
		STATS_INC(lgr_stats(lgr), link_down);
	other = lgr_link_active(lgr, link);
	if (other == NULL) {
		lgr_terminate(lgr, reason, false, by_peer);
		return;
	}
	if (lgr->role == LGR_ROLE_SERVER)
		lgr->next_add_ms = now_ms() + lgr->ctx->t.add_link_retry_ms;
	if (was == LGR_LINK_ACTIVE) {
		log_info("lgr %u: %d connections move to link %u", lgr->id,
			 link->conns, other->id);
		lgr_conns_move(lgr, link, other);
	}
	if (!by_peer && link->id != 0 && lgr->state == LGR_STATE_ACTIVE)
		llc_delete_link_send(other, link->id, reason, false, false,
				     NULL, NULL);
}

/* The LLC step link waited for did not come in time. */
static void
lgr_link_timeout(struct lgr_link *link)
{
	struct lgr *lgr = link->lgr;

	if (lgr->state == LGR_STATE_CONFIRMING) {
		log_warnx("lgr %u link %u: no CONFIRM_LINK %s in time", lgr->id,
			  link->id,
			  link->wait == LGR_WAIT_CONFIRM_REQ ? "request" :
							       "response");
		lgr_fail(lgr, CLC_DECL_TIMEOUT_CL, false, true);
		return;
	}
	lgr_link_fail(link, LLC_DEL_LOST_PATH, false,
		      link->wait == LGR_WAIT_ADD_RESP ?
			      "no ADD_LINK response in time" :
			      "no CONFIRM_LINK in time");
}

/*
 * The peer broke the protocol (a malformed or unexpected message): the
 * whole group ends, counted.
 */
void
lgr_protocol_error(struct lgr *lgr, const char *why)
{
	if (lgr->state == LGR_STATE_TERMINATING)
		return;
	STATS_INC(lgr_stats(lgr), llc_protocol_errors);
	log_warnx("lgr %u: peer %s: protocol error: %s", lgr->id,
		  lgr->peer->name, why);
	if (lgr->state != LGR_STATE_ACTIVE) {
		lgr_fail(lgr, CLC_DECL_BADMSG, false, true);
		return;
	}
	lgr_terminate(lgr, LLC_DEL_PROT_VIOL, false, false);
}

/* DELETE_LINK ALL went out (or failed): the group can go. */
static void
lgr_term_sent(struct wr_link *l, struct wr_tx_slot *slot, int status, void *arg)
{
	struct lgr *lgr = arg;

	lgr_dead(lgr);
}

/*
 * End the group: connections are told (link_down(c, NULL)), the peer is
 * sent DELETE_LINK ALL with reason unless by_peer (it deleted it), and
 * the group is freed once that went out or llc_wait_ms passed.
 */
void
lgr_terminate(struct lgr *lgr, uint32_t reason, bool orderly, bool by_peer)
{
	struct lgr_link *via;
	char msg[256];
	int i;

	if (lgr->state == LGR_STATE_TERMINATING)
		return;
	if (lgr->state != LGR_STATE_ACTIVE) {
		lgr_fail(lgr, CLC_DECL_INTERR, false, true);
		return;
	}
	snprintf(msg, sizeof(msg),
		 "lgr %u: peer %s: link group ends: %s%s, %d connections",
		 lgr->id, lgr->peer->name, llc_delete_reason_name(reason),
		 by_peer ? " (by the peer)" : "", lgr->nconns);
	log_info("%s", msg);
	monitor_event(MONITOR_LGR_DOWN,
		      &(struct log_where){lgr->peer->name, NULL, lgr->id, -1},
		      "%s", msg);
	lgr->state = LGR_STATE_TERMINATING;
	lgr->term_reason = reason;
	lgr->term_conns = lgr->nconns;
	lgr->resumable = !orderly && reason != LLC_DEL_PROT_VIOL;
	lgr_conns_move(lgr, NULL, NULL);
	for (i = 0; i < LGR_LINK_SLOTS; i++)
		if (lgr->link[i].state == LGR_LINK_ACTIVE)
			STATS_INC(lgr_stats(lgr), link_down);
	STATS_INC(lgr_stats(lgr), lgr_terminated);
	if (lgr->counted_up) {
		lgr->counted_up = false;
		lgr_peer_count(lgr->ctx, lgr->peer->name, -1);
	}
	via = lgr_link_active(lgr, NULL);
	lgr->term_deadline_ms = now_ms() + lgr->ctx->t.llc_wait_ms;
	if (by_peer || via == NULL ||
	    llc_delete_link_send(via, via->id, reason, true, orderly,
				 lgr_term_sent, lgr))
		lgr_dead(lgr);
}

/*
 * Whether gid may be the kernel peer's end of another link of lgr: its
 * first link's GID (the peer's one device), an address of the host the
 * group was made with, or one kernel_smc.allow lists (a second device of
 * an allowed host, smcproxyd.conf(5)).  Any other would aim our QP, and
 * the connections failing over to it, at a host nobody vouched for: the
 * ADD_LINK's GID comes from an unauthenticated peer.
 */
static bool
lgr_smcr_gid_bound(const struct lgr *lgr, const uint8_t gid[16])
{
	struct addr a;

	if (memcmp(gid, lgr->smcr_gid, sizeof(lgr->smcr_gid)) == 0)
		return true;
	addr_of_gid(gid, &a);
	return addr_same_host(&a, &lgr->smcr_host) ||
	       conf_smcr_allows(&lgr_ctx_conf(lgr->ctx)->smcr, &a);
}

/*
 * Whether a kernel peer's ADD_LINK (request or answer) names a GID bound
 * to nothing (lgr_smcr_gid_bound): then the link is refused, counted and
 * logged.  Our own dialect's peers are authenticated: never refused.
 */
static bool
lgr_link_gid_refused(struct lgr *lgr, const struct dev_qp_addr *peer)
{
	char host[INET6_ADDRSTRLEN];
	struct addr a;

	if (!lgr->smcr || lgr_smcr_gid_bound(lgr, peer->gid))
		return false;
	addr_of_gid(peer->gid, &a);
	addr_host(&a, host, sizeof(host));
	log_warnx_rl("kernel SMC-R second link refused", host,
		     "lgr %u: kernel SMC-R peer's second link to %s refused: "
		     "not the group's host, not in kernel_smc.allow",
		     lgr->id, host);
	STATS_INC(lgr_stats(lgr), smc_add_link_gid_refused);
	return true;
}

/*
 * Client: the server's ADD_LINK asks for link link_num to its new QP
 * peer.  The new link on another device, connected, awaiting its
 * CONFIRM_LINK; NULL when we have no alternate path (reject).
 */
static struct lgr_link *
lgr_link_add_peer(struct lgr *lgr, uint8_t link_num,
		  const struct dev_qp_addr *peer)
{
	struct lgr_link *base = lgr_link_active(lgr, NULL), *link;
	const struct lgr_dev *dev;
	uint64_t now = now_ms();

	if (base == NULL || lgr->max_links < 2 ||
	    lgr_links_live(lgr) >= lgr->max_links ||
	    lgr_link_by_id(lgr, link_num) != NULL ||
	    lgr_link_gid_refused(lgr, peer))
		return NULL;
	dev = lgr_dev_alt(lgr->ctx, base->dev);
	if (dev == NULL)
		return NULL;
	link = lgr_link_open(lgr, dev, link_num);
	if (link == NULL)
		return NULL;
	if (lgr_link_connect(link, peer)) {
		/* no id yet: the peer is told by the reject, not DELETE_LINK */
		link->state = LGR_LINK_DOWN;
		link->down_ms = now;
		return NULL;
	}
	link->id = link_num;
	rtoken_link_new(lgr, link_num);
	link->state = LGR_LINK_CONFIRMING;
	link->wait = LGR_WAIT_CONFIRM_REQ;
	link->act_ms = now;
	link->deadline_ms = now + 2 * (uint64_t)lgr->ctx->t.llc_wait_ms;
	log_info("lgr %u link %u: adding on %s (qpn %u) for peer qpn %u",
		 lgr->id, link->id, dev->name, link->local.qpn, peer->qpn);
	return link;
}

/*
 * Server: the client answered our ADD_LINK for link with its QP peer:
 * connect and confirm the link over itself.  0 or -errno (link down).
 */
static int
lgr_link_add_answer(struct lgr_link *link, const struct dev_qp_addr *peer)
{
	struct lgr *lgr = link->lgr;
	uint64_t now = now_ms();
	int rc;

	if (lgr_link_gid_refused(lgr, peer)) {
		/* offered no more in this group: it would name the same */
		lgr->max_links = 1;
		lgr_link_fail(link, LLC_DEL_LOST_PATH, false,
			      "the peer's GID is bound to nothing");
		return -EPERM;
	}
	rc = lgr_link_connect(link, peer);
	if (rc == 0) {
		link->state = LGR_LINK_CONFIRMING;
		link->wait = LGR_WAIT_CONFIRM_RESP;
		link->act_ms = now;
		link->deadline_ms = now + lgr->ctx->t.llc_wait_ms;
		rc = llc_confirm_link_send(link);
	}
	if (rc)
		lgr_link_fail(link, LLC_DEL_LOST_PATH, false,
			      "cannot connect the added link");
	return rc;
}

/* Server: the client has no alternate path for link; try again later. */
static void
lgr_link_add_rejected(struct lgr_link *link)
{
	struct lgr *lgr = link->lgr;

	log_info("lgr %u: peer %s has no alternate path for a second link",
		 lgr->id, lgr->peer->name);
	link->state = LGR_LINK_DOWN;
	link->wait = LGR_WAIT_NONE;
	link->down_ms = now_ms();
	lgr->next_add_ms = link->down_ms + lgr->ctx->t.add_link_retry_ms;
}

/* llc.c's only way up to the group (lgr_ctx_new sets ctx->llc_ops). */
static const struct lgr_llc_ops lgr_llc_ops = {
	.link_confirmed = lgr_link_confirmed,
	.link_fail = lgr_link_fail,
	.link_timeout = lgr_link_timeout,
	.link_add_peer = lgr_link_add_peer,
	.link_add_answer = lgr_link_add_answer,
	.link_add_rejected = lgr_link_add_rejected,
	.confirm_rkey = rtoken_confirm_rkey,
	.delete_rkey = rtoken_delete_rkey,
	.add_link_rkeys = rtoken_add_link_rkeys,
	.protocol_error = lgr_protocol_error,
	.terminate = lgr_terminate,
};

/*
 * Server: a second link on another device, if both sides may have one.
 * Whether its ADD_LINK went out.
 */
static bool
lgr_add_link_start(struct lgr *lgr)
{
	struct lgr_link *via = lgr_link_active(lgr, NULL), *link;
	const struct lgr_dev *dev;
	uint64_t now = now_ms();
	uint8_t id;

	lgr->next_add_ms = now + lgr->ctx->t.add_link_retry_ms;
	if (via == NULL)
		return false;
	dev = lgr_dev_alt(lgr->ctx, via->dev);
	if (dev == NULL)
		return false;
	id = lgr_link_id_new(lgr);
	link = id != 0 ? lgr_link_open(lgr, dev, id) : NULL;
	if (link == NULL)
		return false;
	link->id = id;
	rtoken_link_new(lgr, id);
	link->state = LGR_LINK_ADDING;
	link->wait = LGR_WAIT_ADD_RESP;
	link->act_ms = now;
	link->deadline_ms = now + lgr->ctx->t.llc_wait_ms;
	log_info("lgr %u link %u: adding on %s (qpn %u)", lgr->id, link->id,
		 dev->name, link->local.qpn);
	if (llc_add_link_send(via, link)) {
		lgr_link_fail(link, LLC_DEL_LOST_PATH, true,
			      "cannot send ADD_LINK");
		return false;
	}
	return true;
}

static void
lgr_tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct lgr *lgr = arg;
	uint64_t now = now_ms(), idle;
	int i;

	if (lgr->state == LGR_STATE_TERMINATING) {
		if (lgr->dead_ms == 0 && now >= lgr->term_deadline_ms)
			lgr_dead(lgr);
		else if (lgr->dead_ms != 0 &&
			 now >= lgr->dead_ms + lgr_flush_ms(lgr->ctx))
			lgr_free(lgr);
		return;
	}
	for (i = 0; i < LGR_LINK_SLOTS; i++)
		if (lgr->link[i].state == LGR_LINK_DOWN &&
		    now >= lgr->link[i].down_ms + lgr_flush_ms(lgr->ctx))
			lgr_link_release(&lgr->link[i]);
	for (i = 0; i < LGR_LINK_SLOTS && lgr->state != LGR_STATE_TERMINATING;
	     i++)
		if (lgr->link[i].state != LGR_LINK_FREE &&
		    lgr->link[i].state != LGR_LINK_DOWN)
			llc_link_tick(&lgr->link[i], now);
	if (lgr->state != LGR_STATE_ACTIVE)
		return;
	idle = lgr_idle_ms(lgr);
	if (lgr->nconns == 0 && now - lgr->idle_since_ms >= idle) {
		log_info("lgr %u: peer %s: idle for %llu s", lgr->id,
			 lgr->peer->name, (unsigned long long)(idle / 1000));
		lgr_terminate(lgr, LLC_DEL_PROG_INIT_TERM, true, false);
		return;
	}
	if (lgr->role == LGR_ROLE_SERVER && now >= lgr->next_add_ms &&
	    lgr_links_live(lgr) < lgr->max_links)
		lgr_add_link_start(lgr);
}
