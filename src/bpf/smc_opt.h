/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What smc_opt.bpf.c and its users (the daemon's loader, the tests) share:
 * the option, the mark values of smc_opt_mark, the key of smc_opt_echoed.
 */
#ifndef SMCPROXYD_SMC_OPT_H
#define SMCPROXYD_SMC_OPT_H

#include <linux/types.h>

#define SMC_OPT_KIND 254 /* TCPOPT_EXP */
#define SMC_OPT_LEN 6	 /* kind, length, ExID E2 D4 C3 D9 */
#define SMC_OPT_ECHOED_MAX 65536
#define SMC_OPT_LISTEN_MAX 1024

/* Values of smc_opt_mark, a socket's storage. */
#define SMC_OPT_LISTEN 1  /* a listener: echo the option */
#define SMC_OPT_CONNECT 2 /* a connecting socket: send the option */
#define SMC_OPT_ECHOED 3  /* was CONNECT: the SYN-ACK echoed it */
#define SMC_OPT_PLAIN 4	  /* was CONNECT: the SYN-ACK did not */

/* Key of smc_opt_echoed: addresses in network order, ports host order. */
struct smc_opt_tuple {
	__u32 local_ip4;
	__u32 remote_ip4;
	__u16 local_port;
	__u16 remote_port;
};

/* Key of smc_opt_listen: a marked listener's address (network order,
 * 0 for 0.0.0.0) and port (host order). */
struct smc_opt_listen_key {
	__u32 ip4;
	__u16 port;
	__u16 pad;
};

#endif /* SMCPROXYD_SMC_OPT_H */
