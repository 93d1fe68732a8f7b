// SPDX-License-Identifier: BSD-2-Clause
/*
 * ksmcclient: the first steps of a Linux kernel SMC-R client, for the
 * system tests of an export's smc_listen on a host whose kernel has no
 * SMC-R (tests/system/190-smc-listen.sh; the lane ksmc.rxe runs the real
 * kernel).  It loads the SMC-R option's BPF program into a cgroup of its
 * own, connects with the option on its SYN, and says whether the SYN-ACK
 * echoed it.  If it did, it sends a CLC PROPOSAL as Linux 6.12 builds it
 * (SMC-Rv2 only, the EID and RoCE v2 GID given) and reads the server's
 * answer; the kernel falls back to TCP on a DECLINE, and so does this.
 * Then it sends -n bytes of a pattern and checks that they come back (an
 * echo server behind the export), and closes.
 *
 *   ksmcclient -c ADDR:PORT -o SMC_OPT_BPF_O [-e EID] [-g IPV4]
 *              [-n BYTES] [-p] [-r]
 *
 *   -g  the IPv4 address in the RoCE v2 GID (default: our TCP address)
 *   -p  no option on the SYN (a client not under SMC)
 *   -r  send garbage where the PROPOSAL belongs
 *
 * Prints "echoed", "DECLINE NAME 0xCODE", "verified N bytes"; exit 0 when
 * every byte came back, 1 otherwise, 2 usage or setup.
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "clc_wire.h"
#include "sclc_wire.h"
#include "smc_opt.h"
#include "smcopt_env.h"

/* Send a PROPOSAL and read the answer: 0 after a DECLINE, else -1. */
static int
clc(int fd, const char *eid, struct in_addr gid_ip, bool garbage)
{
	uint8_t buf[SCLC_MSG_MAX];
	struct sclc_proposal_info p;
	struct sclc_decline_info d;
	uint32_t code = 0;
	uint8_t type;
	int n, length;

	memset(&p, 0, sizeof(p));
	p.typev1 = SCLC_TYPE_N;
	p.typev2 = SCLC_TYPE_R;
	p.release = 1;
	p.max_conns = 255;
	p.max_links = 2;
	p.eid_cnt = 1;
	if (sclc_eid_put(p.eid[0], eid) != 0) {
		fprintf(stderr, "ksmcclient: bad EID %s\n", eid);
		return -1;
	}
	p.roce_gid[10] = p.roce_gid[11] = 0xff;
	memcpy(p.roce_gid + 12, &gid_ip, 4);
	n = sclc_proposal_encode(buf, sizeof(buf), &p);
	if (n < 0) {
		fprintf(stderr, "ksmcclient: PROPOSAL does not encode\n");
		return -1;
	}
	if (garbage)
		memset(buf, 'G', (size_t)n);
	if (write(fd, buf, (size_t)n) != n)
		return -1;
	length = smcopt_clc_read(fd, buf, &type, &code);
	if (length < 0) {
		printf("no CLC answer\n");
		return -1;
	}
	if (type != CLC_DECLINE ||
	    sclc_decline_decode(buf, (size_t)length, &d, &code) != 0) {
		printf("CLC type %u, not a good DECLINE\n", type);
		return -1;
	}
	printf("DECLINE %s 0x%08x v%u\n", clc_decline_name(d.diagnosis),
	       d.diagnosis, d.version);
	return 0;
}

/* Send n bytes of a pattern, read them back: 0 when all verified. */
static int
exchange(int fd, size_t n)
{
	uint8_t out[4096], in[4096];
	size_t sent = 0, got = 0, i;
	ssize_t r;

	for (i = 0; i < sizeof(out); i++)
		out[i] = (uint8_t)(i * 7 + 3);
	while (got < n) {
		if (sent < n) {
			size_t at = sent % sizeof(out);
			size_t k = sizeof(out) - at;

			if (k > n - sent)
				k = n - sent;
			r = write(fd, out + at, k);
			if (r <= 0)
				return -1;
			sent += (size_t)r;
		}
		r = read(fd, in, sizeof(in) < n - got ? sizeof(in) : n - got);
		if (r <= 0)
			return -1;
		for (i = 0; i < (size_t)r; i++)
			if (in[i] != out[(got + i) % sizeof(out)])
				return -1;
		got += (size_t)r;
	}
	printf("verified %zu bytes\n", got);
	return 0;
}

int
main(int argc, char **argv)
{
	const char *to = NULL, *obj = NULL, *eid = "SMCPROXYD-LAB";
	const char *gid = NULL, *why;
	bool plain = false, garbage = false;
	struct sockaddr_in sin, me;
	socklen_t sl = sizeof(me);
	struct smcopt_env env;
	struct in_addr gid_ip;
	size_t bytes = 65536;
	__u32 mark = 0;
	int c, fd, rc = 1;

	while ((c = getopt(argc, argv, "c:o:e:g:n:pr")) != -1) {
		switch (c) {
		case 'c':
			to = optarg;
			break;
		case 'o':
			obj = optarg;
			break;
		case 'e':
			eid = optarg;
			break;
		case 'g':
			gid = optarg;
			break;
		case 'n':
			bytes = strtoul(optarg, NULL, 0);
			break;
		case 'p':
			plain = true;
			break;
		case 'r':
			garbage = true;
			break;
		default:
			return 2;
		}
	}
	if (to == NULL || obj == NULL || smcopt_addr4(to, &sin) != 0) {
		fputs("usage: ksmcclient -c ADDR:PORT -o SMC_OPT_BPF_O [-e "
		      "EID] "
		      "[-g IPV4] [-n BYTES] [-p] [-r]\n",
		      stderr);
		return 2;
	}
	why = smcopt_env_setup(&env, obj);
	if (why != NULL) {
		fprintf(stderr, "ksmcclient: %s\n", why);
		smcopt_env_teardown(&env);
		return 2;
	}
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || (!plain && smcopt_mark(&env, fd, SMC_OPT_CONNECT)) ||
	    connect(fd, (struct sockaddr *)&sin, sizeof(sin)) ||
	    getsockname(fd, (struct sockaddr *)&me, &sl)) {
		perror("ksmcclient: connect");
		goto out;
	}
	gid_ip = me.sin_addr;
	if (gid != NULL && inet_pton(AF_INET, gid, &gid_ip) != 1) {
		fprintf(stderr, "ksmcclient: bad GID address %s\n", gid);
		goto out;
	}
	(void)bpf_map_lookup_elem(env.mark_fd, &fd, &mark);
	if (mark == SMC_OPT_ECHOED) {
		printf("echoed\n");
		fflush(stdout);
		if (clc(fd, eid, gid_ip, garbage) != 0)
			goto out;
	} else {
		printf("not echoed\n");
	}
	fflush(stdout);
	rc = exchange(fd, bytes) == 0 ? 0 : 1;
	if (rc)
		printf("the bytes did not come back\n");
out:
	if (fd >= 0)
		close(fd);
	smcopt_env_teardown(&env);
	return rc;
}
