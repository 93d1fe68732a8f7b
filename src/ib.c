// SPDX-License-Identifier: BSD-2-Clause
/*
 * RDMA devices through libibverbs.  This is the only file that calls
 * rdma-core: its mixed return conventions (positive errno, -1 + errno,
 * NULL + errno) are turned into 0 / -errno here and logged once.  It owns
 * device discovery (smcproxyd --list-devices), the choice of the GID
 * table entry that carries RoCE v2 traffic for a local IP address, and
 * ib_dev_ops, the device ops table (dev.h) on verbs: one opened port per
 * worker, protection domains on it (one per link group: ib_pd_open),
 * RC QPs with their own send and receive CQ on one non-blocking
 * completion channel, and the device's async events, all as events in the
 * worker's event_base.
 */
#include <sys/ioctl.h>
#include <sys/queue.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <infiniband/verbs.h>

#include "dev.h"
#include "smcproxyd.h"

/* SMC's QP parameters (reference/smc-r.md section 6); timeout and the
 * retry counts come with the path (rdma.qp_timeout ...). */
#define IB_MIN_RNR_TIMER 5 /* 0.96 ms */
#define IB_HELD_MS 3000	   /* ib_qp_destroy: after the port came back */
/*
 * The GRH hop limit asked for.  Linux does not use it: on a RoCE port
 * ibv_modify_qp to RTR resolves the next hop's MAC through the IP route
 * to the destination GID, and the hop limit with it (ib_core's
 * ib_resolve_eth_dmac: the route's hoplimit metric, else
 * net.ipv4.ip_default_ttl / net.ipv6.conf.*.hop_limit), whatever this
 * says.  So one that crosses routers, should a kernel ever keep it.
 */
#define IB_HOP_LIMIT 64

/* ib_post_send()/ib_post_recv() convert a chain in batches of this. */
#define IB_POST_WRS 16
#define IB_POST_SGES 32
#define IB_POLL_BATCH 16

/*
 * One opened port.  A handle belongs to one worker: its QPs and its async
 * event live on that worker's event_base (the one the first QP names).
 * A protection domain of it (ib_pd_open) is an ib_dev too, with root,
 * pd, name, refs and closed set and the rest left to its root.
 */
struct ib_dev {
	struct ib_dev *root; /* the opened port; itself for that */
	int refs;	     /* QPs and MRs in pd made through this handle */
	bool closed;	     /* a PD handle's ib_pd_close ran */
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	char name[IBV_SYSFS_NAME_MAX];
	uint8_t port;
	int gid_index;
	union ibv_gid gid;
	uint8_t mac[6];
	enum ibv_mtu active_mtu;
	struct event_base *base;
	struct event *async_ev;
	LIST_HEAD(, ib_qp) qps;
	unsigned int ev_gen; /* ib_dev_event_all() round */
	/* what the GID was picked for, to pick it again after a port event */
	struct addr local;
	bool has_local;
	int want_gid;
	bool gid_stale;
	void (*port_cb)(struct dev *d, void *arg);
	void *port_arg;
	/* QPs destroyed while the port was down, kept (ib_qp_destroy) */
	bool port_down;
	LIST_HEAD(, ib_qp) held;
	struct event *held_ev;
};

/* What a QP logs once: the first failure of each kind. */
enum ib_err_kind {
	IB_ERR_POST_SEND,
	IB_ERR_POST_RECV,
	IB_ERR_POLL,
	IB_ERR_ARM,
	IB_ERR_CQ_EVENT,
};

struct ib_qp {
	struct ib_dev *dev;
	struct ib_dev *pd; /* the handle it was created through */
	LIST_ENTRY(ib_qp) entry;
	struct ibv_comp_channel *channel;
	struct event *comp_ev;
	struct ibv_cq *send_cq;
	struct ibv_cq *recv_cq;
	/* the receive CQ notified since it was last armed; the send CQ is
	 * armed (each ibv_req_notify_cq is a system call on rxe, and the send
	 * CQ is armed only while a completion there is awaited) */
	bool recv_fired, send_armed;
	struct ibv_qp *qp;
	struct dev_qp_cb cb;
	/* our own record: this rxe's ibv_query_qp says RESET for cur_qp_state */
	enum ibv_qp_state state;
	uint32_t psn;
	unsigned int logged; /* 1 << enum ib_err_kind */
	unsigned int ev_gen;
};

static const char *
ib_port_state_name(enum ibv_port_state state)
{
	switch (state) {
	case IBV_PORT_NOP:
		return "NOP";
	case IBV_PORT_DOWN:
		return "DOWN";
	case IBV_PORT_INIT:
		return "INIT";
	case IBV_PORT_ARMED:
		return "ARMED";
	case IBV_PORT_ACTIVE:
		return "ACTIVE";
	case IBV_PORT_ACTIVE_DEFER:
		return "ACTIVE_DEFER";
	}
	return "UNKNOWN";
}

static const char *
ib_link_layer_name(uint8_t link_layer)
{
	switch (link_layer) {
	case IBV_LINK_LAYER_INFINIBAND:
		return "InfiniBand";
	case IBV_LINK_LAYER_ETHERNET:
		return "Ethernet";
	}
	return "unspecified";
}

static const char *
ib_gid_type_name(enum ib_gid_type type)
{
	switch (type) {
	case IB_GID_TYPE_IB:
		return "IB";
	case IB_GID_TYPE_ROCE_V1:
		return "RoCE v1";
	case IB_GID_TYPE_ROCE_V2:
		return "RoCE v2";
	}
	return "unknown";
}

/* Bytes in an IBV_MTU_* value; 0 when it is none of them. */
static int
ib_mtu_bytes(enum ibv_mtu mtu)
{
	if (mtu < IBV_MTU_256 || mtu > IBV_MTU_4096)
		return 0;
	return 128 << mtu;
}

/*
 * Pick the GID table entry RoCE v2 traffic from the local address should
 * use: the RoCE v2 entry whose GID is that address (an IPv4 address as its
 * IPv4-mapped IPv6 form ::ffff:a.b.c.d).  RoCE v1 and IB entries never
 * match: a v1 GID with the same bytes exists for the same address but is
 * not routable.  Returns the entry's table index, -ENOENT when no entry
 * matches, -EAFNOSUPPORT for a local address that is not IPv4 or IPv6.
 */
int
ib_gid_pick(const struct ib_gid *gids, size_t ngids, const struct addr *local)
{
	uint8_t want[16];
	size_t i;

	if (local->ss.ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)&local->ss;

		memset(want, 0, 10);
		want[10] = 0xff;
		want[11] = 0xff;
		memcpy(want + 12, &sin->sin_addr, 4);
	} else if (local->ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const void *)&local->ss;

		memcpy(want, &sin6->sin6_addr, 16);
	} else {
		return -EAFNOSUPPORT;
	}
	for (i = 0; i < ngids; i++) {
		if (gids[i].type == IB_GID_TYPE_ROCE_V2 &&
		    memcmp(gids[i].raw, want, sizeof(want)) == 0)
			return (int)gids[i].index;
	}
	return -ENOENT;
}

/*
 * Read a port's valid GID entries into a new array (*out, *nout).  Empty
 * slots are skipped.  0 or -errno.
 */
static int
ib_port_gids(struct ibv_context *ctx, const char *dev, uint8_t port,
	     int tbl_len, struct ib_gid **out, size_t *nout)
{
	static const uint8_t zero[16];
	struct ibv_gid_entry entry;
	struct ib_gid *gids = NULL;
	size_t n = 0;
	int i, ret;

	if (tbl_len > 0) {
		gids = calloc((size_t)tbl_len, sizeof(*gids));
		if (gids == NULL)
			return -ENOMEM;
	}
	for (i = 0; i < tbl_len; i++) {
		ret = ibv_query_gid_ex(ctx, port, (uint32_t)i, &entry, 0);
		if (ret == ENODATA)
			continue;
		if (ret != 0) {
			log_warnx("ib: %s port %u gid %d: ibv_query_gid_ex: %s",
				  dev, port, i, strerror(ret));
			free(gids);
			return -ret;
		}
		if (memcmp(entry.gid.raw, zero, sizeof(zero)) == 0)
			continue;
		memcpy(gids[n].raw, entry.gid.raw, sizeof(gids[n].raw));
		gids[n].index = entry.gid_index;
		switch (entry.gid_type) {
		case IBV_GID_TYPE_ROCE_V1:
			gids[n].type = IB_GID_TYPE_ROCE_V1;
			break;
		case IBV_GID_TYPE_ROCE_V2:
			gids[n].type = IB_GID_TYPE_ROCE_V2;
			break;
		default:
			gids[n].type = IB_GID_TYPE_IB;
			break;
		}
		gids[n].ifindex = entry.ndev_ifindex;
		n++;
	}
	*out = gids;
	*nout = n;
	return 0;
}

/*
 * One port: state, MTU, link layer, the GID table and, given a local
 * address, the entry ib_gid_pick() chooses.  Sets *picked when it chose
 * one.  0 or -errno.
 */
static int
ib_list_port(FILE *out, struct ibv_context *ctx, const char *dev, uint8_t port,
	     const char *local_ip, const struct addr *local, bool *picked)
{
	struct ibv_port_attr attr;
	struct ib_gid *gids = NULL;
	char text[INET6_ADDRSTRLEN], ifname[IF_NAMESIZE];
	size_t n = 0, i;
	int ret, idx;

	ret = ibv_query_port(ctx, port, &attr);
	if (ret != 0) {
		log_warnx("ib: %s port %u: ibv_query_port: %s", dev, port,
			  strerror(ret));
		return -ret;
	}
	fprintf(out, "  port %u: %s, active_mtu %d (max %d), link_layer %s\n",
		port, ib_port_state_name(attr.state),
		ib_mtu_bytes(attr.active_mtu), ib_mtu_bytes(attr.max_mtu),
		ib_link_layer_name(attr.link_layer));

	ret = ib_port_gids(ctx, dev, port, attr.gid_tbl_len, &gids, &n);
	if (ret < 0)
		return ret;
	for (i = 0; i < n; i++) {
		inet_ntop(AF_INET6, gids[i].raw, text, sizeof(text));
		if (gids[i].ifindex == 0 ||
		    if_indextoname(gids[i].ifindex, ifname) == NULL)
			snprintf(ifname, sizeof(ifname), "-");
		fprintf(out, "    gid %u: %s, %s, netdev %s\n", gids[i].index,
			text, ib_gid_type_name(gids[i].type), ifname);
	}
	if (n == 0)
		fprintf(out, "    no GIDs\n");

	if (local != NULL) {
		idx = ib_gid_pick(gids, n, local);
		if (idx >= 0) {
			fprintf(out, "    gid index for %s: %d\n", local_ip,
				idx);
			*picked = true;
		} else {
			fprintf(out, "    gid index for %s: none\n", local_ip);
		}
	}
	free(gids);
	return 0;
}

/* One device and its ports.  0 or -errno. */
static int
ib_list_device(FILE *out, struct ibv_device *device, const char *local_ip,
	       const struct addr *local, bool *picked)
{
	const char *name = ibv_get_device_name(device);
	struct ibv_context *ctx = NULL;
	struct ibv_device_attr attr;
	int ret, r;
	unsigned int port;

	ctx = ibv_open_device(device);
	if (ctx == NULL) {
		ret = errno ? -errno : -ENODEV;
		log_warnx("ib: %s: ibv_open_device: %s", name, strerror(-ret));
		return ret;
	}
	ret = ibv_query_device(ctx, &attr);
	if (ret != 0) {
		log_warnx("ib: %s: ibv_query_device: %s", name, strerror(ret));
		ret = -ret;
		goto out;
	}
	fprintf(out,
		"%s: %s, fw %s, %u port(s), max_qp %d, max_qp_wr %d, "
		"max_sge %d, max_cqe %d, max_mr_size %" PRIu64 "\n",
		name, ibv_node_type_str(device->node_type),
		attr.fw_ver[0] ? attr.fw_ver : "-", attr.phys_port_cnt,
		attr.max_qp, attr.max_qp_wr, attr.max_sge, attr.max_cqe,
		(uint64_t)attr.max_mr_size);
	for (port = 1; port <= attr.phys_port_cnt; port++) {
		r = ib_list_port(out, ctx, name, (uint8_t)port, local_ip, local,
				 picked);
		if (r < 0 && ret == 0)
			ret = r;
	}
out:
	ibv_close_device(ctx);
	return ret;
}

static int
ib_device_cmp(const void *a, const void *b)
{
	struct ibv_device *const *da = a;
	struct ibv_device *const *db = b;

	return strcmp(ibv_get_device_name(*da), ibv_get_device_name(*db));
}

/*
 * Print every RDMA device, sorted by name, with its ports and GID tables;
 * with local_ip, also the GID index each port would use for it.  Returns 0,
 * -ENODEV when there is no device, -ENOENT when no port has a RoCE v2 GID
 * for local_ip, -EINVAL for a local_ip that is no IP address, or the first
 * error met (the rest is still listed).
 */
int
ib_list_devices(FILE *out, const char *local_ip)
{
	struct ibv_device **list = NULL;
	struct addr local;
	bool picked = false;
	int ndev = 0, i, ret = 0, r;

	if (local_ip != NULL && addr_parse_host(local_ip, &local) < 0) {
		log_warnx("ib: %s: not an IPv4 or IPv6 address", local_ip);
		return -EINVAL;
	}
	errno = 0;
	list = ibv_get_device_list(&ndev);
	if (list == NULL && errno != ENOSYS) {
		ret = errno ? -errno : -ENODEV;
		log_warnx("ib: ibv_get_device_list: %s", strerror(-ret));
		return ret;
	}
	if (list == NULL || ndev == 0) {
		log_warnx("ib: no RDMA devices found (is rdma_rxe or an RNIC "
			  "driver loaded?)");
		ret = -ENODEV;
		goto out;
	}
	qsort(list, (size_t)ndev, sizeof(*list), ib_device_cmp);
	for (i = 0; i < ndev; i++) {
		r = ib_list_device(out, list[i], local_ip,
				   local_ip != NULL ? &local : NULL, &picked);
		if (r < 0 && ret == 0)
			ret = r;
	}
	if (ret == 0 && local_ip != NULL && !picked) {
		log_warnx("ib: no port has a RoCE v2 GID for %s", local_ip);
		ret = -ENOENT;
	}
out:
	if (list != NULL)
		ibv_free_device_list(list);
	return ret;
}

/**
 * ib_device_count() - How many RDMA devices this host has (rdma-core's
 * list; 0 when it has none or cannot tell), for show rules' readiness.
 */
int
ib_device_count(void)
{
	struct ibv_device **list;
	int ndev = 0;

	list = ibv_get_device_list(&ndev);
	if (list == NULL)
		return 0;
	ibv_free_device_list(list);
	return ndev;
}

/* The opened port of a handle (itself, or a PD's root). */
static struct ib_dev *
ib_dev_of(struct dev *d)
{
	return ((struct ib_dev *)d)->root;
}

/* The handle itself: its pd is the one to use. */
static struct ib_dev *
ib_pd_of(struct dev *d)
{
	return (struct ib_dev *)d;
}

/* A QP or MR of PD handle h went: free h if it was closed and idle. */
static void
ib_pd_unref(struct ib_dev *h)
{
	int ret;

	if (--h->refs > 0 || !h->closed || h->root == h)
		return;
	if ((ret = ibv_dealloc_pd(h->pd)) != 0)
		log_warnx("ib: %s: ibv_dealloc_pd: %s", h->name, strerror(ret));
	free(h);
}

/* dev_ops.pd_open: a protection domain of its own on dev's port. */
static struct dev *
ib_pd_open(struct dev *dev)
{
	struct ib_dev *d = ib_dev_of(dev), *h;
	int ret;

	h = calloc(1, sizeof(*h));
	if (h == NULL)
		return NULL;
	h->root = d;
	snprintf(h->name, sizeof(h->name), "%s", d->name);
	h->pd = ibv_alloc_pd(d->ctx);
	if (h->pd == NULL) {
		ret = errno ? errno : ENOMEM;
		log_warnx("ib: %s: ibv_alloc_pd: %s", d->name, strerror(ret));
		free(h);
		errno = ret;
		return NULL;
	}
	return (struct dev *)h;
}

/* dev_ops.pd_close: the PD goes with its last QP and MR. */
static void
ib_pd_close(struct dev *dev)
{
	struct ib_dev *h = ib_pd_of(dev);

	if (h == NULL || h->root == h || h->closed)
		return;
	h->closed = true;
	h->refs++;
	ib_pd_unref(h);
}

/* dev_ops.pd_closed */
static bool
ib_pd_closed(struct dev *dev)
{
	struct ib_dev *h = ib_pd_of(dev);

	return h != NULL && h->root != h && h->closed;
}

static struct ib_qp *
ib_qp_of(struct dev_qp *qp)
{
	return (struct ib_qp *)qp;
}

static int
ib_set_nonblock(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

/* The netdev's MAC address (CLC and LLC carry it); zeros if unknown. */
static void
ib_netdev_mac(unsigned int ifindex, uint8_t mac[6])
{
	struct ifreq ifr;
	int fd;

	memset(mac, 0, 6);
	memset(&ifr, 0, sizeof(ifr));
	if (ifindex == 0 || if_indextoname(ifindex, ifr.ifr_name) == NULL)
		return;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) == 0)
		memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	close(fd);
}

/*
 * The GID entry of a port for our traffic: gid_index when it is >= 0, else
 * the RoCE v2 entry ib_gid_pick() finds for local.  0 or -errno.
 */
static int
ib_port_gid(struct ibv_context *ctx, const char *name, uint8_t port,
	    int tbl_len, const struct addr *local, int gid_index,
	    struct ibv_gid_entry *out)
{
	struct ib_gid *gids = NULL;
	size_t n = 0;
	int ret;

	if (gid_index < 0) {
		ret = ib_port_gids(ctx, name, port, tbl_len, &gids, &n);
		if (ret < 0)
			return ret;
		gid_index = ib_gid_pick(gids, n, local);
		free(gids);
		if (gid_index < 0)
			return gid_index;
	}
	ret = ibv_query_gid_ex(ctx, port, (uint32_t)gid_index, out, 0);
	if (ret == ENODATA)
		return -ENOENT;
	if (ret != 0) {
		log_warnx("ib: %s port %u gid %d: ibv_query_gid_ex: %s", name,
			  port, gid_index, strerror(ret));
		return -ret;
	}
	return 0;
}

/*
 * Open device on port (0: its first port that fits) for our traffic: an
 * ACTIVE Ethernet (RoCE) port with the wanted GID entry.  Fills *d.  0,
 * -ENETDOWN (no active port), -ENOENT (no such GID), or -errno.
 */
static int
ib_dev_try(struct ib_dev *d, struct ibv_device *device, int port,
	   const struct addr *local, int gid_index)
{
	const char *name = ibv_get_device_name(device);
	struct ibv_context *ctx = NULL;
	struct ibv_device_attr dattr;
	struct ibv_port_attr pattr;
	struct ibv_gid_entry gid;
	int ret, p, first, last;

	ctx = ibv_open_device(device);
	if (ctx == NULL) {
		ret = errno ? -errno : -ENODEV;
		log_warnx("ib: %s: ibv_open_device: %s", name, strerror(-ret));
		return ret;
	}
	ret = ibv_query_device(ctx, &dattr);
	if (ret != 0) {
		log_warnx("ib: %s: ibv_query_device: %s", name, strerror(ret));
		ret = -ret;
		goto out;
	}
	first = port > 0 ? port : 1;
	last = port > 0 ? port : dattr.phys_port_cnt;
	ret = port > dattr.phys_port_cnt ? -ENODEV : -ENETDOWN;
	for (p = first; p <= last && p <= dattr.phys_port_cnt; p++) {
		if (ibv_query_port(ctx, (uint8_t)p, &pattr) != 0 ||
		    pattr.state != IBV_PORT_ACTIVE)
			continue;
		if (pattr.link_layer != IBV_LINK_LAYER_ETHERNET) {
			log_debug("ib: %s port %d: not RoCE, skipped", name, p);
			continue;
		}
		ret = ib_port_gid(ctx, name, (uint8_t)p, pattr.gid_tbl_len,
				  local, gid_index, &gid);
		if (ret < 0)
			continue;
		d->pd = ibv_alloc_pd(ctx);
		if (d->pd == NULL) {
			ret = errno ? -errno : -ENOMEM;
			log_warnx("ib: %s: ibv_alloc_pd: %s", name,
				  strerror(-ret));
			goto out;
		}
		ret = ib_set_nonblock(ctx->async_fd);
		if (ret < 0) {
			ibv_dealloc_pd(d->pd);
			d->pd = NULL;
			goto out;
		}
		snprintf(d->name, sizeof(d->name), "%s", name);
		d->port = (uint8_t)p;
		d->gid_index = (int)gid.gid_index;
		memcpy(d->gid.raw, gid.gid.raw, sizeof(d->gid.raw));
		ib_netdev_mac(gid.ndev_ifindex, d->mac);
		d->active_mtu = pattr.active_mtu;
		d->ctx = ctx;
		ctx = NULL;
		ret = 0;
		break;
	}
out:
	if (ctx != NULL)
		ibv_close_device(ctx);
	return ret;
}

/*
 * Open an RDMA device port for link traffic from local_ip: device name
 * (NULL: the first, by name, that has what we need), port (0: its first
 * ACTIVE RoCE port), and the GID entry gid_index, or with -1 the RoCE v2
 * entry of local_ip (ib_gid_pick()).  The handle belongs to one worker.
 * NULL with errno set: ENODEV (no such device), ENETDOWN (no active RoCE
 * port), ENOENT (no GID for local_ip), EINVAL.
 */
struct dev *
ib_dev_open(const char *name, int port, const char *local_ip, int gid_index)
{
	struct ibv_device **list = NULL;
	struct ib_dev *d = NULL;
	struct addr local;
	int ndev = 0, i, ret;

	if ((gid_index < 0 && local_ip == NULL) || port < 0) {
		ret = -EINVAL;
		goto fail;
	}
	if (local_ip != NULL && addr_parse_host(local_ip, &local) < 0) {
		log_warnx("ib: %s: not an IPv4 or IPv6 address", local_ip);
		ret = -EINVAL;
		goto fail;
	}
	d = calloc(1, sizeof(*d));
	if (d == NULL) {
		ret = -ENOMEM;
		goto fail;
	}
	d->root = d;
	LIST_INIT(&d->qps);
	LIST_INIT(&d->held);
	errno = 0;
	list = ibv_get_device_list(&ndev);
	if (list == NULL && errno != ENOSYS) {
		ret = errno ? -errno : -ENODEV;
		log_warnx("ib: ibv_get_device_list: %s", strerror(-ret));
		goto fail;
	}
	ret = -ENODEV;
	if (list != NULL)
		qsort(list, (size_t)ndev, sizeof(*list), ib_device_cmp);
	for (i = 0; i < ndev; i++) {
		if (name != NULL &&
		    strcmp(name, ibv_get_device_name(list[i])) != 0)
			continue;
		ret = ib_dev_try(d, list[i], port,
				 local_ip != NULL ? &local : NULL, gid_index);
		if (ret == 0 || name != NULL)
			break;
	}
	if (ret < 0) {
		log_warnx("ib: %s port %d gid %d%s%s: %s",
			  name != NULL ? name : "any device", port, gid_index,
			  local_ip != NULL ? " for " : "",
			  local_ip != NULL ? local_ip : "", strerror(-ret));
		goto fail;
	}
	ibv_free_device_list(list);
	if (local_ip != NULL) {
		d->local = local;
		d->has_local = true;
	}
	d->want_gid = gid_index;
	log_info("ib: %s port %d gid %d, active_mtu %d", d->name, d->port,
		 d->gid_index, ib_mtu_bytes(d->active_mtu));
	return (struct dev *)d;
fail:
	if (list != NULL)
		ibv_free_device_list(list);
	free(d);
	errno = -ret;
	return NULL;
}

/* The device's name (rxe0), for log lines. */
const char *
ib_dev_name(const struct dev *d)
{
	return ((const struct ib_dev *)d)->root->name;
}

static int
ib_qp_err_once(struct ib_qp *q, enum ib_err_kind kind, const char *what,
	       int err)
{
	if (!(q->logged & (1u << kind))) {
		q->logged |= 1u << kind;
		log_warnx("ib: %s qp %u: %s: %s (further errors of this kind "
			  "are not logged)",
			  q->dev->name, q->qp != NULL ? q->qp->qp_num : 0, what,
			  strerror(err));
	}
	return -err;
}

static void
ib_qp_free(struct ib_qp *q)
{
	int ret;

	if (q->comp_ev != NULL)
		event_free(q->comp_ev);
	if (q->qp != NULL && (ret = ibv_destroy_qp(q->qp)) != 0)
		log_warnx("ib: %s qp %u: ibv_destroy_qp: %s", q->dev->name,
			  q->qp->qp_num, strerror(ret));
	if (q->send_cq != NULL && (ret = ibv_destroy_cq(q->send_cq)) != 0)
		log_warnx("ib: %s: ibv_destroy_cq: %s", q->dev->name,
			  strerror(ret));
	if (q->recv_cq != NULL && (ret = ibv_destroy_cq(q->recv_cq)) != 0)
		log_warnx("ib: %s: ibv_destroy_cq: %s", q->dev->name,
			  strerror(ret));
	if (q->channel != NULL &&
	    (ret = ibv_destroy_comp_channel(q->channel)) != 0)
		log_warnx("ib: %s: ibv_destroy_comp_channel: %s", q->dev->name,
			  strerror(ret));
	if (q->pd != NULL)
		ib_pd_unref(q->pd);
	free(q);
}

/*
 * Tell every QP of the device about ev.  A callback may destroy QPs
 * (its own or others), so each round starts from the list's head and
 * skips the QPs this round already told.
 */
static void
ib_dev_event_all(struct ib_dev *d, enum dev_event ev)
{
	unsigned int gen = ++d->ev_gen;
	struct ib_qp *q;

	for (;;) {
		for (q = LIST_FIRST(&d->qps); q != NULL;
		     q = LIST_NEXT(q, entry))
			if (q->ev_gen != gen)
				break;
		if (q == NULL)
			return;
		q->ev_gen = gen;
		if (q->cb.event != NULL)
			q->cb.event((struct dev_qp *)q, ev, q->cb.arg);
	}
}

/*
 * After a port event: the port's GID table may have been rebuilt (rxe
 * drops a netdev's GIDs when it goes down), so pick our GID again, and
 * the MTU.  0, or -errno (the old values stay).
 */
static int
ib_dev_refresh(struct ib_dev *d)
{
	struct ibv_port_attr pattr;
	struct ibv_gid_entry gid;
	int ret;

	if (!d->gid_stale)
		return 0;
	if (ibv_query_port(d->ctx, d->port, &pattr) != 0)
		return errno ? -errno : -EIO;
	if (pattr.state != IBV_PORT_ACTIVE)
		return -ENETDOWN;
	ret = ib_port_gid(d->ctx, d->name, d->port, pattr.gid_tbl_len,
			  d->has_local ? &d->local : NULL, d->want_gid, &gid);
	if (ret < 0)
		return ret;
	if ((int)gid.gid_index != d->gid_index)
		log_info("ib: %s port %u: gid index %d now %u", d->name,
			 d->port, d->gid_index, gid.gid_index);
	d->gid_index = (int)gid.gid_index;
	memcpy(d->gid.raw, gid.gid.raw, sizeof(d->gid.raw));
	ib_netdev_mac(gid.ndev_ifindex, d->mac);
	d->active_mtu = pattr.active_mtu;
	d->gid_stale = false;
	return 0;
}

static void
ib_port_watch(struct dev *dev, void (*cb)(struct dev *d, void *arg), void *arg)
{
	struct ib_dev *d = ib_dev_of(dev);

	d->port_cb = cb;
	d->port_arg = arg;
}

/* Free the QPs ib_qp_destroy kept. */
static void
ib_held_drain(struct ib_dev *d)
{
	struct ib_qp *q;

	while ((q = LIST_FIRST(&d->held)) != NULL) {
		LIST_REMOVE(q, entry);
		ib_qp_free(q);
	}
}

/* Timer: the kept QPs go, unless the port is down again. */
static void
ib_held_free(evutil_socket_t fd, short what, void *arg)
{
	struct ib_dev *d = arg;

	(void)fd;
	(void)what;
	if (!d->port_down)
		ib_held_drain(d);
}

/* The port is back: the QPs kept go IB_HELD_MS from now. */
static void
ib_held_later(struct ib_dev *d)
{
	struct timeval tv = {IB_HELD_MS / 1000, (IB_HELD_MS % 1000) * 1000};

	if (LIST_EMPTY(&d->held))
		return;
	if (d->held_ev == NULL &&
	    (d->held_ev = evtimer_new(d->base, ib_held_free, d)) == NULL) {
		ib_held_drain(d);
		return;
	}
	evtimer_add(d->held_ev, &tv);
}

static void
ib_async_cb(evutil_socket_t fd, short what, void *arg)
{
	struct ib_dev *d = arg;
	struct ibv_async_event ev;
	enum ibv_event_type type;
	struct ib_qp *q;
	int port;

	(void)fd;
	(void)what;
	while (ibv_get_async_event(d->ctx, &ev) == 0) {
		type = ev.event_type;
		q = NULL;
		port = 0;
		switch (type) {
		case IBV_EVENT_QP_FATAL:
		case IBV_EVENT_QP_REQ_ERR:
		case IBV_EVENT_QP_ACCESS_ERR:
			q = ev.element.qp->qp_context;
			break;
		case IBV_EVENT_CQ_ERR:
			q = ev.element.cq->cq_context;
			break;
		case IBV_EVENT_PORT_ERR:
		case IBV_EVENT_PORT_ACTIVE:
			port = ev.element.port_num;
			break;
		default:
			break;
		}
		/* before any callback: destroying a QP waits for its acks */
		ibv_ack_async_event(&ev);
		if (q != NULL) {
			log_warnx("ib: %s qp %u: %s", d->name, q->qp->qp_num,
				  ibv_event_type_str(type));
			if (q->cb.event != NULL)
				q->cb.event((struct dev_qp *)q, DEV_EV_QP_FATAL,
					    q->cb.arg);
		} else if (type == IBV_EVENT_PORT_ERR && port == d->port) {
			log_warnx("ib: %s port %d: %s", d->name, port,
				  ibv_event_type_str(type));
			d->gid_stale = true;
			d->port_down = true;
			ib_dev_event_all(d, DEV_EV_PORT_DOWN);
		} else if (type == IBV_EVENT_PORT_ACTIVE && port == d->port) {
			log_info("ib: %s port %d: %s", d->name, port,
				 ibv_event_type_str(type));
			d->gid_stale = true;
			d->port_down = false;
			ib_held_later(d);
			if (d->port_cb != NULL)
				d->port_cb((struct dev *)d, d->port_arg);
		} else if (type == IBV_EVENT_DEVICE_FATAL) {
			log_warnx("ib: %s: %s", d->name,
				  ibv_event_type_str(type));
			ib_dev_event_all(d, DEV_EV_DEVICE_REMOVED);
		} else {
			log_info("ib: %s port %d: %s", d->name,
				 port ? port : d->port,
				 ibv_event_type_str(type));
		}
	}
	if (errno != EAGAIN && errno != EWOULDBLOCK)
		log_warn("ib: %s: ibv_get_async_event", d->name);
}

static void
ib_comp_cb(evutil_socket_t fd, short what, void *arg)
{
	struct ib_qp *q = arg;
	struct ibv_cq *cq;
	void *ctx;
	bool any = false;

	(void)fd;
	(void)what;
	/*
	 * One event per call: the handler polls both CQs anyway, and a
	 * second event still queued (the other CQ's) keeps the channel
	 * readable, so the loop calls again at once.  Reading on until
	 * EAGAIN cost a system call per event that almost always failed.
	 */
	if (ibv_get_cq_event(q->channel, &cq, &ctx) == 0) {
		ibv_ack_cq_events(cq, 1);
		if (cq == q->send_cq)
			q->send_armed = false;
		else
			q->recv_fired = true;
		any = true;
	} else if (errno != EAGAIN && errno != EWOULDBLOCK) {
		ib_qp_err_once(q, IB_ERR_CQ_EVENT, "ibv_get_cq_event", errno);
	}
	/* last: the engine may destroy the QP from here */
	if (any && q->cb.completion != NULL)
		q->cb.completion((struct dev_qp *)q, q->cb.arg);
}

static uint32_t
ib_random_psn(void)
{
	uint32_t psn;
	struct timespec ts;

	if (getrandom(&psn, sizeof(psn), GRND_NONBLOCK) != sizeof(psn)) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		psn = (uint32_t)ts.tv_nsec ^ (uint32_t)getpid();
	}
	return psn & 0xffffff;
}

static int
ib_mr_reg(struct dev *dev, void *addr, size_t len, uint64_t iova, int access,
	  struct dev_mr *out)
{
	struct ib_dev *d = ib_pd_of(dev);
	struct ibv_mr *mr;
	int flags = 0, ret;

	if (d->closed ||
	    (access & ~(DEV_ACCESS_LOCAL_WRITE | DEV_ACCESS_REMOTE_WRITE)))
		return -EINVAL;
	if (access & DEV_ACCESS_LOCAL_WRITE)
		flags |= IBV_ACCESS_LOCAL_WRITE;
	if (access & DEV_ACCESS_REMOTE_WRITE)
		flags |= IBV_ACCESS_REMOTE_WRITE;
	if (iova == 0)
		iova = (uintptr_t)addr;
	mr = ibv_reg_mr_iova(d->pd, addr, len, iova, flags);
	if (mr == NULL) {
		ret = errno ? -errno : -ENOMEM;
		log_warnx("ib: %s: ibv_reg_mr of %zu bytes: %s%s", d->name, len,
			  strerror(-ret),
			  ret == -ENOMEM || ret == -EPERM ?
				  " (locked memory limit? see ulimit -l, "
				  "LimitMEMLOCK=)" :
				  "");
		return ret;
	}
	d->refs++;
	out->addr = addr;
	out->iova = iova;
	out->len = len;
	out->lkey = mr->lkey;
	out->rkey = mr->rkey;
	out->priv = mr;
	return 0;
}

static void
ib_mr_dereg(struct dev *dev, struct dev_mr *mr)
{
	int ret;

	if (mr->priv == NULL)
		return;
	ret = ibv_dereg_mr(mr->priv);
	if (ret != 0)
		log_warnx("ib: %s: ibv_dereg_mr: %s", ib_dev_of(dev)->name,
			  strerror(ret));
	mr->priv = NULL;
	ib_pd_unref(ib_pd_of(dev));
}

static const char *
ib_qp_state_name(enum ibv_qp_state state)
{
	switch (state) {
	case IBV_QPS_RESET:
		return "RESET";
	case IBV_QPS_INIT:
		return "INIT";
	case IBV_QPS_RTR:
		return "RTR";
	case IBV_QPS_RTS:
		return "RTS";
	case IBV_QPS_ERR:
		return "ERR";
	default:
		return "other";
	}
}

static int
ib_qp_modify(struct ib_qp *q, struct ibv_qp_attr *attr, int mask)
{
	int ret;

	ret = ibv_modify_qp(q->qp, attr, mask);
	if (ret != 0) {
		log_warnx("ib: %s qp %u: ibv_modify_qp to %s: %s", q->dev->name,
			  q->qp->qp_num, ib_qp_state_name(attr->qp_state),
			  strerror(ret));
		return -ret;
	}
	q->state = attr->qp_state;
	return 0;
}

/* RESET -> INIT: from here on receives may be posted. */
static int
ib_qp_to_init(struct ib_qp *q)
{
	struct ibv_qp_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_INIT;
	attr.pkey_index = 0;
	attr.port_num = q->dev->port;
	attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	return ib_qp_modify(q, &attr,
			    IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				    IBV_QP_ACCESS_FLAGS);
}

/* The device's async fd joins base with its first QP. */
static int
ib_async_start(struct ib_dev *d, struct event_base *base)
{
	if (d->base != NULL)
		return d->base == base ? 0 : -EINVAL;
	d->async_ev = event_new(base, d->ctx->async_fd, EV_READ | EV_PERSIST,
				ib_async_cb, d);
	if (d->async_ev == NULL || event_add(d->async_ev, NULL) < 0) {
		if (d->async_ev != NULL)
			event_free(d->async_ev);
		d->async_ev = NULL;
		return -ENOMEM;
	}
	d->base = base;
	return 0;
}

/*
 * The RC QP itself, asking for want's inline size first and less each
 * time the device refuses (rxe refuses 1024).  0 or -errno.
 */
static int
ib_qp_create_rc(struct ib_qp *q, const struct dev_qp_caps *want)
{
	struct ibv_qp_init_attr init;
	uint32_t inl = want->max_inline_data;

	for (;;) {
		memset(&init, 0, sizeof(init));
		init.qp_context = q;
		init.send_cq = q->send_cq;
		init.recv_cq = q->recv_cq;
		init.cap.max_send_wr = want->max_send_wr;
		init.cap.max_recv_wr = want->max_recv_wr;
		init.cap.max_send_sge = want->max_send_sge;
		init.cap.max_recv_sge = want->max_recv_sge;
		init.cap.max_inline_data = inl;
		init.qp_type = IBV_QPT_RC;
		init.sq_sig_all = 0;
		q->qp = ibv_create_qp(q->pd->pd, &init);
		if (q->qp != NULL)
			return 0;
		if (inl == 0)
			break;
		log_debug("ib: %s: max_inline_data %u refused (%s), asking %u",
			  q->dev->name, inl, strerror(errno), inl / 2);
		inl /= 2;
	}
	log_warnx("ib: %s: ibv_create_qp (send %u, recv %u, sge %u/%u): %s",
		  q->dev->name, want->max_send_wr, want->max_recv_wr,
		  want->max_send_sge, want->max_recv_sge, strerror(errno));
	return errno ? -errno : -ENOMEM;
}

/*
 * dev_ops.qp_create: an RC QP in INIT (receives may be posted at once)
 * with a send and a receive CQ, both armed, on a completion channel of its
 * own in base.  *got: WR counts as asked (the CQs are sized for them),
 * SGEs and max_inline_data as ibv_query_qp reads them back.
 */
static struct dev_qp *
ib_qp_create(struct dev *dev, struct event_base *base,
	     const struct dev_qp_caps *want, struct dev_qp_caps *got,
	     const struct dev_qp_cb *cb)
{
	struct ib_dev *d = ib_dev_of(dev);
	struct ib_qp *q = NULL;
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	int ret;

	if (ib_pd_of(dev)->closed || base == NULL || cb == NULL ||
	    want->max_send_wr == 0 || want->max_recv_wr == 0 ||
	    want->max_send_wr > INT32_MAX || want->max_recv_wr > INT32_MAX) {
		ret = -EINVAL;
		goto fail;
	}
	ret = ib_async_start(d, base);
	if (ret < 0) {
		log_warnx("ib: %s: a device handle serves one event_base",
			  d->name);
		goto fail;
	}
	ret = ib_dev_refresh(d);
	if (ret < 0) {
		log_warnx("ib: %s port %u: no GID after the port event: %s",
			  d->name, d->port, strerror(-ret));
		goto fail;
	}
	q = calloc(1, sizeof(*q));
	if (q == NULL) {
		ret = -ENOMEM;
		goto fail;
	}
	q->dev = d;
	q->pd = ib_pd_of(dev);
	q->pd->refs++;
	q->cb = *cb;
	q->state = IBV_QPS_RESET;
	q->ev_gen = d->ev_gen;
	q->channel = ibv_create_comp_channel(d->ctx);
	if (q->channel == NULL) {
		ret = errno ? -errno : -ENOMEM;
		log_warnx("ib: %s: ibv_create_comp_channel: %s", d->name,
			  strerror(-ret));
		goto fail;
	}
	ret = ib_set_nonblock(q->channel->fd);
	if (ret < 0)
		goto fail;
	q->send_cq =
		ibv_create_cq(d->ctx, (int)want->max_send_wr, q, q->channel, 0);
	if (q->send_cq != NULL)
		q->recv_cq = ibv_create_cq(d->ctx, (int)want->max_recv_wr, q,
					   q->channel, 0);
	if (q->recv_cq == NULL) {
		ret = errno ? -errno : -ENOMEM;
		log_warnx("ib: %s: ibv_create_cq: %s", d->name, strerror(-ret));
		goto fail;
	}
	ret = ib_qp_create_rc(q, want);
	if (ret < 0)
		goto fail;
	ret = ibv_query_qp(q->qp, &attr, IBV_QP_CAP, &init);
	if (ret != 0) {
		log_warnx("ib: %s qp %u: ibv_query_qp: %s", d->name,
			  q->qp->qp_num, strerror(ret));
		ret = -ret;
		goto fail;
	}

	got->max_send_wr = want->max_send_wr;
	got->max_recv_wr = want->max_recv_wr;
	got->max_send_sge = init.cap.max_send_sge;
	got->max_recv_sge = init.cap.max_recv_sge;
	got->max_inline_data = init.cap.max_inline_data;
	ret = ib_qp_to_init(q);
	if (ret < 0)
		goto fail;
	if ((ret = ibv_req_notify_cq(q->send_cq, 0)) != 0 ||
	    (ret = ibv_req_notify_cq(q->recv_cq, 0)) != 0) {
		log_warnx("ib: %s: ibv_req_notify_cq: %s", d->name,
			  strerror(ret));
		ret = -ret;
		goto fail;
	}
	q->send_armed = true;
	q->comp_ev = event_new(base, q->channel->fd, EV_READ | EV_PERSIST,
			       ib_comp_cb, q);
	if (q->comp_ev == NULL || event_add(q->comp_ev, NULL) < 0) {
		ret = -ENOMEM;
		goto fail;
	}
	q->psn = ib_random_psn();
	LIST_INSERT_HEAD(&d->qps, q, entry);
	log_debug("ib: %s qp %u: send %u recv %u sge %u/%u inline %u (asked "
		  "%u)",
		  d->name, q->qp->qp_num, got->max_send_wr, got->max_recv_wr,
		  got->max_send_sge, got->max_recv_sge, got->max_inline_data,
		  want->max_inline_data);
	return (struct dev_qp *)q;
fail:
	if (q != NULL)
		ib_qp_free(q);
	errno = -ret;
	return NULL;
}

static int
ib_qp_addr(struct dev_qp *qp, struct dev_qp_addr *out)
{
	struct ib_qp *q = ib_qp_of(qp);

	memset(out, 0, sizeof(*out));
	memcpy(out->gid, q->dev->gid.raw, sizeof(out->gid));
	memcpy(out->mac, q->dev->mac, sizeof(out->mac));
	out->qpn = q->qp->qp_num;
	out->psn = q->psn;
	out->mtu = q->dev->active_mtu;
	return 0;
}

/*
 * The attributes of qp_connect's two steps from our port (its GID entry
 * gid_index, active MTU mtu, our send PSN psn) towards peer along path,
 * with SMC's parameters: path MTU the smaller of both ports', GRH with
 * our GID entry (the kernel resolves the next hop's MAC and the hop limit
 * through the route to the peer's GID), traffic class and service level,
 * min RNR timer 5, the path's timeout and retry counts, one outstanding
 * RDMA read/atomic each way.  0, or -EINVAL for what verbs cannot take.
 */
int
ib_qp_attrs(uint8_t port, int gid_index, int mtu, uint32_t psn,
	    const struct dev_qp_addr *peer, const struct dev_path *path,
	    struct ibv_qp_attr *rtr, struct ibv_qp_attr *rts)
{
	if (peer->mtu < IBV_MTU_256 || peer->mtu > IBV_MTU_4096 ||
	    peer->qpn > 0xffffff || peer->psn > 0xffffff || psn > 0xffffff ||
	    gid_index < 0 || gid_index > 255 || !dev_path_valid(path))
		return -EINVAL;

	memset(rtr, 0, sizeof(*rtr));
	rtr->qp_state = IBV_QPS_RTR;
	rtr->path_mtu = (enum ibv_mtu)(peer->mtu < mtu ? peer->mtu : mtu);
	rtr->dest_qp_num = peer->qpn;
	rtr->rq_psn = peer->psn;
	rtr->max_dest_rd_atomic = 1;
	rtr->min_rnr_timer = IB_MIN_RNR_TIMER;
	rtr->ah_attr.is_global = 1;
	memcpy(rtr->ah_attr.grh.dgid.raw, peer->gid, sizeof(peer->gid));
	rtr->ah_attr.grh.sgid_index = (uint8_t)gid_index;
	rtr->ah_attr.grh.hop_limit = IB_HOP_LIMIT;
	rtr->ah_attr.grh.traffic_class = path->traffic_class;
	rtr->ah_attr.sl = path->sl;
	rtr->ah_attr.port_num = port;

	memset(rts, 0, sizeof(*rts));
	rts->qp_state = IBV_QPS_RTS;
	rts->timeout = path->timeout;
	rts->retry_cnt = path->retry_cnt;
	rts->rnr_retry = path->rnr_retry;
	rts->sq_psn = psn;
	rts->max_rd_atomic = 1;
	return 0;
}

/* dev_ops.qp_connect: INIT -> RTR -> RTS (ib_qp_attrs). */
static int
ib_qp_connect(struct dev_qp *qp, const struct dev_qp_addr *peer,
	      const struct dev_path *path)
{
	struct ib_qp *q = ib_qp_of(qp);
	struct ibv_qp_attr rtr, rts;
	int ret;

	if (q->state != IBV_QPS_INIT)
		return -EINVAL;
	ret = ib_qp_attrs(q->dev->port, q->dev->gid_index,
			  (int)q->dev->active_mtu, q->psn, peer, path, &rtr,
			  &rts);
	if (ret < 0)
		return ret;
	ret = ib_qp_modify(q, &rtr,
			   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				   IBV_QP_MAX_DEST_RD_ATOMIC |
				   IBV_QP_MIN_RNR_TIMER);
	if (ret < 0)
		return ret;
	ret = ib_qp_modify(q, &rts,
			   IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				   IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				   IBV_QP_MAX_QP_RD_ATOMIC);
	if (ret < 0)
		return ret;
	log_debug("ib: %s qp %u -> qpn %u, mtu %d, tclass %u, sl %u",
		  q->dev->name, q->qp->qp_num, peer->qpn,
		  ib_mtu_bytes(rtr.path_mtu), path->traffic_class, path->sl);
	return 0;
}

static int
ib_qp_error(struct dev_qp *qp)
{
	struct ib_qp *q = ib_qp_of(qp);
	struct ibv_qp_attr attr;

	if (q->state == IBV_QPS_ERR)
		return 0;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_ERR;
	return ib_qp_modify(q, &attr, IBV_QP_STATE);
}

/*
 * Destroy qp; while its port is down, keep it in the error state instead,
 * until IB_HELD_MS after the port came back (ib_held_free).  rxe in the
 * 6.1 kernel (Debian 12) frees a destroyed QP whose packets still sit in
 * the send ring of a netdev that is down, and the ring's cleanup when the
 * netdev comes up crashes the kernel in rxe_skb_tx_dtor; later kernels
 * look the QP up by index instead.  A held QP tells nobody anything.
 */
static void
ib_qp_destroy(struct dev_qp *qp)
{
	struct ib_qp *q = ib_qp_of(qp);
	struct ib_dev *d = q->dev;

	LIST_REMOVE(q, entry);
	if (!d->port_down) {
		ib_qp_free(q);
		return;
	}
	(void)ib_qp_error(qp);
	if (q->comp_ev != NULL)
		event_free(q->comp_ev);
	q->comp_ev = NULL;
	memset(&q->cb, 0, sizeof(q->cb));
	LIST_INSERT_HEAD(&d->held, q, entry);
	log_info("ib: %s qp %u: destroyed once the port is back", d->name,
		 q->qp->qp_num);
}

/* A failed post: verbs' positive errno (or -1 and errno) as -errno. */
static int
ib_post_ret(struct ib_qp *q, enum ib_err_kind kind, const char *what, int ret)
{
	if (ret < 0)
		ret = errno ? errno : EIO;
	return ib_qp_err_once(q, kind, what, ret);
}

static void
ib_sges_copy(struct ibv_sge *to, const struct dev_sge *from, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		to[i].addr = from[i].addr;
		to[i].length = from[i].length;
		to[i].lkey = from[i].lkey;
	}
}

/*
 * dev_ops.post_send: the chain as ibv_send_wrs on the stack, in batches
 * of IB_POST_WRS WRs and IB_POST_SGES SGEs.  On failure the WRs before the
 * failed one may have been posted (as with verbs' bad_wr).
 */
static int
ib_post_send(struct dev_qp *qp, struct dev_send_wr *wr)
{
	struct ib_qp *q = ib_qp_of(qp);
	struct ibv_send_wr wrs[IB_POST_WRS], *bad = NULL, *w;
	struct ibv_sge sges[IB_POST_SGES];
	int n, nsge, ret;

	while (wr != NULL) {
		for (n = 0, nsge = 0; wr != NULL && n < IB_POST_WRS;
		     wr = wr->next, n++) {
			if (wr->num_sge < 0 || wr->num_sge > IB_POST_SGES)
				return -EINVAL;
			if (nsge + wr->num_sge > IB_POST_SGES)
				break;
			w = &wrs[n];
			memset(w, 0, sizeof(*w));
			w->wr_id = wr->wr_id;
			w->sg_list = &sges[nsge];
			w->num_sge = wr->num_sge;
			if (wr->opcode == DEV_WR_WRITE ||
			    wr->opcode == DEV_WR_WRITE_IMM) {
				w->opcode = wr->opcode == DEV_WR_WRITE ?
						    IBV_WR_RDMA_WRITE :
						    IBV_WR_RDMA_WRITE_WITH_IMM;
				w->wr.rdma.remote_addr = wr->remote_addr;
				w->wr.rdma.rkey = wr->rkey;
			} else {
				w->opcode = IBV_WR_SEND;
			}
			if (wr->flags & DEV_SEND_SIGNALED)
				w->send_flags |= IBV_SEND_SIGNALED;
			if (wr->flags & DEV_SEND_SOLICITED)
				w->send_flags |= IBV_SEND_SOLICITED;
			if (wr->flags & DEV_SEND_INLINE)
				w->send_flags |= IBV_SEND_INLINE;
			ib_sges_copy(&sges[nsge], wr->sg_list, wr->num_sge);
			nsge += wr->num_sge;
			if (n > 0)
				wrs[n - 1].next = w;
		}
		ret = ibv_post_send(q->qp, wrs, &bad);
		if (ret != 0)
			return ib_post_ret(q, IB_ERR_POST_SEND, "ibv_post_send",
					   ret);
	}
	return 0;
}

/* dev_ops.post_recv: as ib_post_send(). */
static int
ib_post_recv(struct dev_qp *qp, struct dev_recv_wr *wr)
{
	struct ib_qp *q = ib_qp_of(qp);
	struct ibv_recv_wr wrs[IB_POST_WRS], *bad = NULL, *w;
	struct ibv_sge sges[IB_POST_SGES];
	int n, nsge, ret;

	while (wr != NULL) {
		for (n = 0, nsge = 0; wr != NULL && n < IB_POST_WRS;
		     wr = wr->next, n++) {
			if (wr->num_sge < 0 || wr->num_sge > IB_POST_SGES)
				return -EINVAL;
			if (nsge + wr->num_sge > IB_POST_SGES)
				break;
			w = &wrs[n];
			memset(w, 0, sizeof(*w));
			w->wr_id = wr->wr_id;
			w->sg_list = &sges[nsge];
			w->num_sge = wr->num_sge;
			ib_sges_copy(&sges[nsge], wr->sg_list, wr->num_sge);
			nsge += wr->num_sge;
			if (n > 0)
				wrs[n - 1].next = w;
		}
		ret = ibv_post_recv(q->qp, wrs, &bad);
		if (ret != 0)
			return ib_post_ret(q, IB_ERR_POST_RECV, "ibv_post_recv",
					   ret);
	}
	return 0;
}

static enum dev_wc_status
ib_wc_status(enum ibv_wc_status status)
{
	switch (status) {
	case IBV_WC_SUCCESS:
		return DEV_WC_SUCCESS;
	case IBV_WC_WR_FLUSH_ERR:
		return DEV_WC_FLUSH_ERR;
	case IBV_WC_REM_ACCESS_ERR:
		return DEV_WC_REM_ACCESS_ERR;
	case IBV_WC_RETRY_EXC_ERR:
		return DEV_WC_RETRY_EXC_ERR;
	case IBV_WC_RNR_RETRY_EXC_ERR:
		return DEV_WC_RNR_RETRY_EXC_ERR;
	case IBV_WC_LOC_LEN_ERR:
	case IBV_WC_LOC_QP_OP_ERR:
	case IBV_WC_LOC_EEC_OP_ERR:
	case IBV_WC_LOC_PROT_ERR:
	case IBV_WC_LOC_ACCESS_ERR:
	case IBV_WC_LOC_RDD_VIOL_ERR:
	case IBV_WC_MW_BIND_ERR:
		return DEV_WC_LOC_ERR;
	default:
		return DEV_WC_GENERAL_ERR;
	}
}

static void
ib_wc_convert(struct ib_qp *q, const struct ibv_wc *in, struct dev_wc *out,
	      bool recv)
{
	out->wr_id = in->wr_id;
	out->status = ib_wc_status(in->status);
	out->byte_len = recv ? in->byte_len : 0;
	/* verbs defines the opcode of successful completions only; on the
	 * receive CQ a peer's WRITE with immediate completes too, and the
	 * engine must not take it for a message */
	if (recv && in->status != IBV_WC_SUCCESS)
		out->opcode = DEV_WC_RECV;
	else if (recv && in->opcode == IBV_WC_RECV)
		out->opcode = DEV_WC_RECV;
	else if (recv && in->opcode == IBV_WC_RECV_RDMA_WITH_IMM)
		out->opcode = DEV_WC_RECV_RDMA_WITH_IMM;
	else if (recv)
		out->opcode = DEV_WC_RECV_OTHER;
	else if (in->opcode == IBV_WC_RDMA_WRITE)
		out->opcode = DEV_WC_RDMA_WRITE;
	else
		out->opcode = DEV_WC_SEND;
	if (in->status != IBV_WC_SUCCESS && in->status != IBV_WC_WR_FLUSH_ERR)
		log_debug("ib: %s qp %u: %s completion 0x%" PRIx64 ": %s "
			  "(vendor error 0x%x)",
			  q->dev->name, q->qp->qp_num, recv ? "recv" : "send",
			  in->wr_id, ibv_wc_status_str(in->status),
			  in->vendor_err);
}

/* dev_ops.poll: the send CQ first, then the receive CQ. */
static int
ib_poll(struct dev_qp *qp, struct dev_wc *wc, int n)
{
	struct ib_qp *q = ib_qp_of(qp);
	struct ibv_cq *cqs[2] = {q->send_cq, q->recv_cq};
	struct ibv_wc iwc[IB_POLL_BATCH];
	int got = 0, c, i, r, want;

	for (c = 0; c < 2; c++) {
		while (got < n) {
			want = n - got < IB_POLL_BATCH ? n - got :
							 IB_POLL_BATCH;
			r = ibv_poll_cq(cqs[c], want, iwc);
			if (r < 0) {
				/* what was polled is returned; the error
				 * comes back with the next call */
				if (got > 0)
					return got;
				return ib_qp_err_once(q, IB_ERR_POLL,
						      "ibv_poll_cq",
						      r < -1 ? -r : EIO);
			}
			for (i = 0; i < r; i++)
				ib_wc_convert(q, &iwc[i], &wc[got++], c == 1);
			if (r < want)
				break;
		}
	}
	return got;
}

static int
ib_arm(struct dev_qp *qp, bool send)
{
	struct ib_qp *q = ib_qp_of(qp);
	int ret, armed = 0;

	if (send && !q->send_armed) {
		if ((ret = ibv_req_notify_cq(q->send_cq, 0)) != 0)
			return ib_post_ret(q, IB_ERR_ARM, "ibv_req_notify_cq",
					   ret);
		q->send_armed = true;
		armed = 1;
	}
	if (q->recv_fired) {
		if ((ret = ibv_req_notify_cq(q->recv_cq, 0)) != 0)
			return ib_post_ret(q, IB_ERR_ARM, "ibv_req_notify_cq",
					   ret);
		q->recv_fired = false;
		armed = 1;
	}
	return armed;
}

/*
 * Close a device handle; QPs still open are destroyed (and logged: they
 * should have been destroyed by their owner first).  Not from a callback.
 */
void
ib_dev_close(struct dev *dev)
{
	struct ib_dev *d;
	struct ib_qp *q;
	int ret;

	if (dev == NULL)
		return;
	d = ib_dev_of(dev);
	while ((q = LIST_FIRST(&d->qps)) != NULL) {
		log_warnx("ib: %s: qp %u still open", d->name, q->qp->qp_num);
		LIST_REMOVE(q, entry);
		ib_qp_free(q);
	}
	ib_held_drain(d);
	if (d->held_ev != NULL)
		event_free(d->held_ev);
	if (d->async_ev != NULL)
		event_free(d->async_ev);
	if ((ret = ibv_dealloc_pd(d->pd)) != 0)
		log_warnx("ib: %s: ibv_dealloc_pd: %s (memory regions still "
			  "registered?)",
			  d->name, strerror(ret));
	if (ibv_close_device(d->ctx) != 0)
		log_warn("ib: %s: ibv_close_device", d->name);
	free(d);
}

const struct dev_ops ib_dev_ops = {
	.name = "ib",
	.pd_open = ib_pd_open,
	.pd_close = ib_pd_close,
	.pd_closed = ib_pd_closed,
	.mr_reg = ib_mr_reg,
	.mr_dereg = ib_mr_dereg,
	.qp_create = ib_qp_create,
	.qp_addr = ib_qp_addr,
	.qp_connect = ib_qp_connect,
	.qp_error = ib_qp_error,
	.qp_destroy = ib_qp_destroy,
	.post_send = ib_post_send,
	.post_recv = ib_post_recv,
	.poll = ib_poll,
	.arm = ib_arm,
	.port_watch = ib_port_watch,
};

/* Whether this process may lock memory past RLIMIT_MEMLOCK (CAP_IPC_LOCK
 * in its effective set, /proc/self/status). */
static bool
ib_cap_ipc_lock(void)
{
	unsigned long long eff = 0;
	char line[256];
	bool found = false;
	FILE *f;

	f = fopen("/proc/self/status", "re");
	if (f == NULL)
		return geteuid() == 0;
	while (!found && fgets(line, sizeof(line), f) != NULL)
		found = sscanf(line, "CapEff: %llx", &eff) == 1;
	fclose(f);
	return found && (eff & (1ULL << 14)) != 0; /* CAP_IPC_LOCK */
}

/*
 * At start and at each reload, when peers are configured: what of this
 * host keeps link groups from working, said as a warning (the peers are
 * still reached, over the TCP fallback): no uverbs device to open (no
 * RDMA driver loaded, or a sandbox that hides /dev/infiniband), and a
 * locked-memory limit below rdma.max_buffer_memory for a process without
 * CAP_IPC_LOCK (registrations past it fail).
 */
void
ib_check_host(const struct conf *conf)
{
	unsigned long long want =
		(unsigned long long)conf->rdma.max_buffer_memory << 20;
	struct rlimit rl;
	glob_t g;

	if (conf->npeers == 0)
		return;
	if (glob("/dev/infiniband/uverbs*", 0, NULL, &g) == 0)
		globfree(&g);
	else
		log_warnx("no RDMA device can be opened (no "
			  "/dev/infiniband/uverbs*: no RDMA driver loaded, or "
			  "a sandbox hides them): every peer is reached over "
			  "the TCP fallback");
	if (!ib_cap_ipc_lock() && getrlimit(RLIMIT_MEMLOCK, &rl) == 0 &&
	    rl.rlim_cur != RLIM_INFINITY &&
	    (unsigned long long)rl.rlim_cur < want)
		log_warnx("locked memory limit %llu KiB is below "
			  "rdma.max_buffer_memory (%d MiB): buffers past it "
			  "cannot be registered and their connections go over "
			  "the TCP fallback; raise LimitMEMLOCK= (the shipped "
			  "unit sets infinity) or ulimit -l",
			  (unsigned long long)rl.rlim_cur >> 10,
			  conf->rdma.max_buffer_memory);
}
