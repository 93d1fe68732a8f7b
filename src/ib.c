// SPDX-License-Identifier: BSD-2-Clause
/*
 * RDMA devices through libibverbs.  This is the only file that calls
 * rdma-core: its mixed return conventions (positive errno, -1 + errno,
 * NULL + errno) are turned into 0 / -errno here and logged once.  It owns
 * device discovery (smcproxyd --list-devices) and the choice of the GID
 * table entry that carries RoCE v2 traffic for a local IP address.
 */
#include <sys/socket.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "smcproxyd.h"

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
			log_warnx("%s: %s port %u gid %d: ibv_query_gid_ex: %s",
				  __func__, dev, port, i, strerror(ret));
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
		log_warnx("%s: %s port %u: ibv_query_port: %s", __func__, dev,
			  port, strerror(ret));
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
		log_warnx("%s: %s: ibv_open_device: %s", __func__, name,
			  strerror(-ret));
		return ret;
	}
	ret = ibv_query_device(ctx, &attr);
	if (ret != 0) {
		log_warnx("%s: %s: ibv_query_device: %s", __func__, name,
			  strerror(ret));
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
		log_warnx("%s: %s: not an IPv4 or IPv6 address", __func__,
			  local_ip);
		return -EINVAL;
	}
	errno = 0;
	list = ibv_get_device_list(&ndev);
	if (list == NULL && errno != ENOSYS) {
		ret = errno ? -errno : -ENODEV;
		log_warnx("%s: ibv_get_device_list: %s", __func__,
			  strerror(-ret));
		return ret;
	}
	if (list == NULL || ndev == 0) {
		log_warnx("%s: no RDMA devices found (is rdma_rxe or an RNIC "
			  "driver loaded?)",
			  __func__);
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
		log_warnx("%s: no port has a RoCE v2 GID for %s", __func__,
			  local_ip);
		ret = -ENOENT;
	}
out:
	if (list != NULL)
		ibv_free_device_list(list);
	return ret;
}
