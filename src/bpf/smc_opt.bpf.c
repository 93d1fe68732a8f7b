// SPDX-License-Identifier: BSD-2-Clause
/*
 * The SMC-R TCP option (kind 254, ExID E2D4C3D9) for the sockets
 * smcproxyd marks, as a BPF sock_ops program: Linux's SMC only goes on
 * with the standard handshake when its SYN carried the option and the
 * SYN-ACK echoed it (shared/reference/smc-interop.md §1.1, §2), and user
 * space has no other way to put an option into a SYN or SYN-ACK.
 *
 * It acts on marked sockets only (the program sees every TCP socket of
 * the cgroup it is attached to); the mark is a value in smc_opt_mark, the
 * socket's storage, that the daemon writes through the socket's fd:
 *
 *   SMC_OPT_LISTEN    before listen(): SYN-ACKs of this listener echo the
 *                     option when, and only when, the SYN carried it, and
 *                     never a syncookie's (Linux drops SMC under cookies
 *                     too); each echo is recorded in smc_opt_echoed under
 *                     the connection's 4-tuple, where the daemon learns
 *                     that it owes the client a CLC answer
 *   SMC_OPT_CONNECT   before connect(): the SYN carries the option; once
 *                     established the mark says whether the SYN-ACK
 *                     echoed it (SMC_OPT_ECHOED) or not (SMC_OPT_PLAIN)
 *
 * The header callbacks are switched on per socket and off again once the
 * handshake is over, so established connections never run them.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "smc_opt.h"

#define TCPHDR_SYN 0x02
#define TCPHDR_ACK 0x10

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u32);
} smc_opt_mark SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SMC_OPT_ECHOED_MAX);
	__type(key, struct smc_opt_tuple);
	__type(value, __u32);
} smc_opt_echoed SEC(".maps");

/*
 * The listeners this instance marked, by address and port: a SYN-ACK's
 * socket is a request socket, whose storage the program cannot read, so
 * the listener is known by where the SYN went.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SMC_OPT_LISTEN_MAX);
	__type(key, struct smc_opt_listen_key);
	__type(value, __u32);
} smc_opt_listen SEC(".maps");

static __always_inline void
smc_opt_cb(struct bpf_sock_ops *skops, int on)
{
	__u32 flags = skops->bpf_sock_ops_cb_flags;

	if (on)
		flags |= BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG;
	else
		flags &= ~BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG;
	bpf_sock_ops_cb_flags_set(skops, flags);
}

static __always_inline __u32 *
smc_opt_mark_of(struct bpf_sock_ops *skops)
{
	struct bpf_sock *sk = skops->sk;

	if (!sk)
		return 0;
	return bpf_sk_storage_get(&smc_opt_mark, sk, 0, 0);
}

/*
 * Whether this instance marked the socket whose header is written: our
 * SYN's socket, or the listener a SYN-ACK answers for.  The header
 * callbacks are switched on per socket, so every program attached along
 * the socket's cgroups runs them, among them the instances of other
 * daemons (and of tests) loaded from this same object, each with its own
 * maps: only the one that marked the socket writes the option and
 * records the echo.
 */
static __always_inline int
smc_opt_ours(struct bpf_sock_ops *skops)
{
	struct smc_opt_listen_key k = {};
	__u32 *mark;

	if (!(skops->skb_tcp_flags & TCPHDR_ACK)) {
		mark = smc_opt_mark_of(skops);
		return mark && *mark == SMC_OPT_CONNECT;
	}
	k.ip4 = skops->local_ip4;
	k.port = (__u16)skops->local_port;
	if (bpf_map_lookup_elem(&smc_opt_listen, &k))
		return 1;
	k.ip4 = 0; /* a listener on 0.0.0.0 */
	return bpf_map_lookup_elem(&smc_opt_listen, &k) != 0;
}

/* Whether the option is in the SYN (syn != 0) or in skb_data. */
static __always_inline int
smc_opt_found(struct bpf_sock_ops *skops, int syn)
{
	__u8 opt[SMC_OPT_LEN] = {SMC_OPT_KIND, SMC_OPT_LEN, 0xe2,
				 0xd4,	       0xc3,	    0xd9};

	return bpf_load_hdr_opt(skops, opt, sizeof(opt),
				syn ? BPF_LOAD_HDR_OPT_TCP_SYN : 0) > 0;
}

/* Should this outgoing SYN or SYN-ACK carry the option? */
static __always_inline int
smc_opt_wanted(struct bpf_sock_ops *skops)
{
	__u32 f = skops->skb_tcp_flags;

	if (!(f & TCPHDR_SYN))
		return 0;
	if (!(f & TCPHDR_ACK))
		return 1; /* our SYN: only marked sockets got here */
	/* a SYN-ACK: args[0] is "want_cookie" */
	return !skops->args[0] && smc_opt_found(skops, 1);
}

/* The 4-tuple of the connection whose header is written. */
static __always_inline void
smc_opt_tuple_of(struct bpf_sock_ops *skops, struct smc_opt_tuple *t)
{
	t->local_ip4 = skops->local_ip4;
	t->remote_ip4 = skops->remote_ip4;
	t->local_port = (__u16)skops->local_port;
	t->remote_port = (__u16)bpf_ntohl(skops->remote_port);
}

SEC("sockops")
int
smc_opt(struct bpf_sock_ops *skops)
{
	__u8 opt[SMC_OPT_LEN] = {SMC_OPT_KIND, SMC_OPT_LEN, 0xe2,
				 0xd4,	       0xc3,	    0xd9};
	struct smc_opt_tuple t = {};
	__u32 *mark, one = 1;

	switch (skops->op) {
	case BPF_SOCK_OPS_TCP_LISTEN_CB:
		mark = smc_opt_mark_of(skops);
		if (mark && *mark == SMC_OPT_LISTEN) {
			struct smc_opt_listen_key k = {};

			k.ip4 = skops->local_ip4;
			k.port = (__u16)skops->local_port;
			bpf_map_update_elem(&smc_opt_listen, &k, &one, BPF_ANY);
			smc_opt_cb(skops, 1);
		}
		break;
	case BPF_SOCK_OPS_TCP_CONNECT_CB:
		mark = smc_opt_mark_of(skops);
		if (mark && *mark == SMC_OPT_CONNECT)
			smc_opt_cb(skops, 1);
		break;
	case BPF_SOCK_OPS_HDR_OPT_LEN_CB:
		if (!smc_opt_ours(skops))
			break;
		if (smc_opt_wanted(skops)) {
			bpf_reserve_hdr_opt(skops, SMC_OPT_LEN, 0);
		} else if ((skops->skb_tcp_flags & (TCPHDR_SYN | TCPHDR_ACK)) ==
			   (TCPHDR_SYN | TCPHDR_ACK)) {
			/*
			 * A SYN-ACK without the option: an echo an earlier
			 * SYN on this 4-tuple left (one never accepted, a
			 * spoofed one) is not this connection's, which
			 * would otherwise be taken for a kernel client's.
			 */
			smc_opt_tuple_of(skops, &t);
			bpf_map_delete_elem(&smc_opt_echoed, &t);
		}
		break;
	case BPF_SOCK_OPS_WRITE_HDR_OPT_CB:
		if (!smc_opt_ours(skops) || !smc_opt_wanted(skops) ||
		    bpf_store_hdr_opt(skops, opt, sizeof(opt), 0) != 0)
			break;
		if (skops->skb_tcp_flags & TCPHDR_ACK) {
			smc_opt_tuple_of(skops, &t);
			bpf_map_update_elem(&smc_opt_echoed, &t, &one, BPF_ANY);
		}
		break;
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
		mark = smc_opt_mark_of(skops);
		if (!mark || *mark != SMC_OPT_CONNECT)
			break;
		*mark = smc_opt_found(skops, 0) ? SMC_OPT_ECHOED :
						  SMC_OPT_PLAIN;
		smc_opt_cb(skops, 0);
		break;
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		/* a child inherits its listener's callbacks */
		if (skops->bpf_sock_ops_cb_flags &
		    BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG)
			smc_opt_cb(skops, 0);
		break;
	}
	return 1;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
