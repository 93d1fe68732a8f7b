/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What intercept.bpf.c and its users (the daemon's loader intercept.c,
 * the tests) share: the maps' keys and values.  Every address is 16
 * bytes, IPv4 as IPv4-mapped IPv6 (as struct addr_net), so that one
 * trie serves connect4 and connect6 and an IPv4 rule catches a dual-stack
 * socket's connect to ::ffff:a.b.c.d.  Ports are in host order.
 */
#ifndef SMCPROXYD_INTERCEPT_H
#define SMCPROXYD_INTERCEPT_H

#include <linux/types.h>

#define INTERCEPT_DST_MAX 256	  /* intercept = [...] entries of a rule */
#define INTERCEPT_ORIG_MAX 65536  /* connects not yet accepted */
#define INTERCEPT_CACHE_MAX 16384 /* destinations learned */

/* intercept_conf[0]: the daemon's switch and its own process. */
struct intercept_conf {
	__u32 on;    /* 0: every connect goes direct (fail open) */
	__u32 tgid;  /* the daemon: its connects are never taken */
	__u16 port4; /* its listener on 127.0.0.1; 0: none */
	__u16 port6; /* its listener on [::1]; 0: none */
	__u32 pad;
};

/* intercept_dst, an LPM trie: prefixlen = 32 + the address's bits */
struct intercept_dst_key {
	__u32 prefixlen;
	__u32 port; /* 0: any port */
	__u8 addr[16];
};

/* A destination: the original of a taken connect, a learned one. */
struct intercept_addr {
	__u8 addr[16];
	__u16 port;
	__u16 family; /* AF_INET, AF_INET6: as the program connected */
};

/* intercept_orig's key: the taken connect as the daemon accepts it. */
struct intercept_tuple {
	__u8 saddr[16]; /* the program's end */
	__u8 daddr[16]; /* our listener */
	__u16 sport;
	__u16 dport;
};

/* intercept_cache's value: what a destination spoke, until when. */
#define INTERCEPT_SMC 1 /* SMC-R: connects go through the daemon */
#define INTERCEPT_TCP 2 /* plain TCP: connects go direct */
struct intercept_seen {
	__u64 expires; /* CLOCK_MONOTONIC ns (bpf_ktime_get_ns) */
	__u32 how;     /* INTERCEPT_SMC, INTERCEPT_TCP */
	__u32 pad;
};

/* intercept_count, per CPU: what the program did with the connects. */
struct intercept_count {
	__u64 taken;	/* redirected to the daemon */
	__u64 bypassed; /* a destination learned as TCP: went direct */
	__u64 off;	/* matched while the switch was off: went direct */
};

#endif /* SMCPROXYD_INTERCEPT_H */
