// SPDX-License-Identifier: BSD-2-Clause
/*
 * Transparent SMC-R (a rule's intercept and intercept_cgroup): the TCP
 * connects of a cgroup's programs to chosen destinations, taken to the
 * daemon's listener on loopback, as socket load balancers take a
 * service's connects.  One instance of this object per rule, attached
 * to the rule's cgroup through BPF links that only the daemon holds.
 *
 *   connect4/6    a connect to a destination of intercept_dst goes to
 *                 the daemon's listener instead, the original kept in
 *                 the socket's storage; not when the switch is off (the
 *                 daemon stopping: fail open), not the daemon's own
 *                 connects, not a destination intercept_cache has as
 *                 plain TCP until its entry expires
 *   sockops       as the SYN goes out the socket has its port: the
 *                 original is recorded under the connection's 4-tuple,
 *                 where the daemon finds it on accept (intercept_orig)
 *   getpeername4/6  the program sees its original peer, not ours
 *
 * Nothing here can refuse or hold a connect: a miss of any kind leaves
 * it as the program asked.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "intercept.h"

#define AF_INET 2
#define AF_INET6 10

/* one 4-byte load: the context refuses the 8-byte one clang would merge */
#define CTX_U32(f) (*(volatile __u32 *)&(f))

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct intercept_conf);
} intercept_conf SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, INTERCEPT_DST_MAX);
	__type(key, struct intercept_dst_key);
	__type(value, __u32);
} intercept_dst SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, INTERCEPT_CACHE_MAX);
	__type(key, struct intercept_addr);
	__type(value, struct intercept_seen);
} intercept_cache SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, INTERCEPT_ORIG_MAX);
	__type(key, struct intercept_tuple);
	__type(value, struct intercept_addr);
} intercept_orig SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct intercept_addr);
} intercept_sk SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct intercept_count);
} intercept_count SEC(".maps");

static __always_inline void
intercept_v4mapped(__u8 *b, __u32 ip4)
{
	__builtin_memset(b, 0, 10);
	b[10] = 0xff;
	b[11] = 0xff;
	__builtin_memcpy(b + 12, &ip4, 4);
}

static __always_inline int
intercept_is_v4mapped(const __u8 *b)
{
	__u32 w[3];

	__builtin_memcpy(w, b, 12);
	return w[0] == 0 && w[1] == 0 && w[2] == bpf_htonl(0xffff);
}

/* Whether b is 127.0.0.1 (mapped) or ::1, where the listeners are. */
static __always_inline int
intercept_is_listener(const __u8 *b)
{
	__u32 w[4];

	__builtin_memcpy(w, b, 16);
	return w[0] == 0 && w[1] == 0 &&
	       ((w[2] == bpf_htonl(0xffff) && w[3] == bpf_htonl(0x7f000001)) ||
		(w[2] == 0 && w[3] == bpf_htonl(1)));
}

/* Whether dst (port filled in) is one of ours: then, not cached TCP. */
static __always_inline int
intercept_wanted(const struct intercept_addr *dst, struct intercept_count *n)
{
	struct intercept_dst_key k = {};
	struct intercept_seen *seen;

	k.prefixlen = 32 + 128;
	k.port = dst->port;
	__builtin_memcpy(k.addr, dst->addr, 16);
	if (!bpf_map_lookup_elem(&intercept_dst, &k)) {
		k.port = 0;
		if (!bpf_map_lookup_elem(&intercept_dst, &k))
			return 0;
	}
	seen = bpf_map_lookup_elem(&intercept_cache, dst);
	if (seen && seen->how == INTERCEPT_TCP &&
	    seen->expires > bpf_ktime_get_ns()) {
		if (n)
			n->bypassed++;
		return 0;
	}
	return 1;
}

/*
 * The listener port the connect to dst goes to, with the original kept
 * in the socket's storage; 0 to leave the connect alone.
 */
static __always_inline __u16
intercept_take(struct bpf_sock_addr *ctx, struct intercept_addr *dst)
{
	struct intercept_count *n;
	struct intercept_conf *c;
	struct intercept_addr *kept;
	__u32 zero = 0;
	__u16 port;

	c = bpf_map_lookup_elem(&intercept_conf, &zero);
	n = bpf_map_lookup_elem(&intercept_count, &zero);
	if (!c || c->tgid == bpf_get_current_pid_tgid() >> 32)
		return 0;
	port = intercept_is_v4mapped(dst->addr) ? c->port4 : c->port6;
	/* the listener itself (a taken connect, through another instance) */
	if (!port || (dst->port == port && intercept_is_listener(dst->addr)) ||
	    !intercept_wanted(dst, n))
		return 0;
	if (!c->on) {
		if (n)
			n->off++;
		return 0;
	}
	if (!ctx->sk)
		return 0;
	kept = bpf_sk_storage_get(&intercept_sk, ctx->sk, 0,
				  BPF_SK_STORAGE_GET_F_CREATE);
	if (!kept)
		return 0;
	*kept = *dst;
	if (n)
		n->taken++;
	return port;
}

SEC("cgroup/connect4")
int
intercept_connect4(struct bpf_sock_addr *ctx)
{
	struct intercept_addr dst = {};
	__u16 port;

	if (ctx->type != 1 /* SOCK_STREAM */)
		return 1;
	intercept_v4mapped(dst.addr, ctx->user_ip4);
	dst.port = bpf_ntohs((__u16)ctx->user_port);
	dst.family = AF_INET;
	port = intercept_take(ctx, &dst);
	if (port) {
		ctx->user_ip4 = bpf_htonl(0x7f000001);
		ctx->user_port = bpf_htons(port);
	}
	return 1;
}

SEC("cgroup/connect6")
int
intercept_connect6(struct bpf_sock_addr *ctx)
{
	struct intercept_addr dst = {};
	__u32 w[4];
	__u16 port;

	if (ctx->type != 1 /* SOCK_STREAM */)
		return 1;
	w[0] = CTX_U32(ctx->user_ip6[0]);
	w[1] = CTX_U32(ctx->user_ip6[1]);
	w[2] = CTX_U32(ctx->user_ip6[2]);
	w[3] = CTX_U32(ctx->user_ip6[3]);
	__builtin_memcpy(dst.addr, w, 16);
	dst.port = bpf_ntohs((__u16)ctx->user_port);
	dst.family = AF_INET6;
	port = intercept_take(ctx, &dst);
	if (!port)
		return 1;
	/* ::ffff:127.0.0.1 for a dual-stack socket's IPv4 destination */
	if (intercept_is_v4mapped(dst.addr)) {
		ctx->user_ip6[3] = bpf_htonl(0x7f000001);
	} else {
		ctx->user_ip6[0] = 0;
		ctx->user_ip6[1] = 0;
		ctx->user_ip6[2] = 0;
		ctx->user_ip6[3] = bpf_htonl(1);
	}
	ctx->user_port = bpf_htons(port);
	return 1;
}

SEC("sockops")
int
intercept_sockops(struct bpf_sock_ops *skops)
{
	struct intercept_tuple t = {};
	struct intercept_addr *kept;
	struct bpf_sock *sk = skops->sk;
	__u32 w[4];

	if (skops->op != BPF_SOCK_OPS_TCP_CONNECT_CB || !sk)
		return 1;
	kept = bpf_sk_storage_get(&intercept_sk, sk, 0, 0);
	if (!kept)
		return 1;
	if (skops->family == AF_INET) {
		intercept_v4mapped(t.saddr, skops->local_ip4);
		intercept_v4mapped(t.daddr, skops->remote_ip4);
	} else {
		w[0] = CTX_U32(skops->local_ip6[0]);
		w[1] = CTX_U32(skops->local_ip6[1]);
		w[2] = CTX_U32(skops->local_ip6[2]);
		w[3] = CTX_U32(skops->local_ip6[3]);
		__builtin_memcpy(t.saddr, w, 16);
		w[0] = CTX_U32(skops->remote_ip6[0]);
		w[1] = CTX_U32(skops->remote_ip6[1]);
		w[2] = CTX_U32(skops->remote_ip6[2]);
		w[3] = CTX_U32(skops->remote_ip6[3]);
		__builtin_memcpy(t.daddr, w, 16);
	}
	t.sport = (__u16)skops->local_port;
	t.dport = (__u16)bpf_ntohl(skops->remote_port);
	bpf_map_update_elem(&intercept_orig, &t, kept, BPF_ANY);
	return 1;
}

SEC("cgroup/getpeername4")
int
intercept_getpeername4(struct bpf_sock_addr *ctx)
{
	struct intercept_addr *kept;
	__u32 ip4;

	if (!ctx->sk)
		return 1;
	kept = bpf_sk_storage_get(&intercept_sk, ctx->sk, 0, 0);
	if (!kept)
		return 1;
	__builtin_memcpy(&ip4, kept->addr + 12, 4);
	ctx->user_ip4 = ip4;
	ctx->user_port = bpf_htons(kept->port);
	return 1;
}

SEC("cgroup/getpeername6")
int
intercept_getpeername6(struct bpf_sock_addr *ctx)
{
	struct intercept_addr *kept;
	__u32 w[4];

	if (!ctx->sk)
		return 1;
	kept = bpf_sk_storage_get(&intercept_sk, ctx->sk, 0, 0);
	if (!kept)
		return 1;
	__builtin_memcpy(w, kept->addr, 16);
	ctx->user_ip6[0] = w[0];
	ctx->user_ip6[1] = w[1];
	ctx->user_ip6[2] = w[2];
	ctx->user_ip6[3] = w[3];
	ctx->user_port = bpf_htons(kept->port);
	return 1;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
