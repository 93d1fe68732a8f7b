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
 *              [-n BYTES] [-p] [-r] [-b IPV4] [-H SECONDS -k N]
 *
 *   -g  the IPv4 address in the RoCE v2 GID (default: our TCP address)
 *   -p  no option on the SYN (a client not under SMC)
 *   -r  send garbage where the PROPOSAL belongs
 *   -b  connect from this address (one host of several on one machine)
 *   -H  a flood of handshakes left pending (tests/rxe/375): -k
 *       connections, each sends its PROPOSAL and, when the server
 *       ACCEPTs, never CONFIRMs; all are held SECONDS, then closed
 *
 * Prints "echoed", "DECLINE NAME 0xCODE", "verified N bytes"; with -H
 * one line "held N: accepts A, declines D (NAME K ...), other O".  Exit
 * 0 when every byte came back (with -H: every connection got an answer),
 * 1 otherwise, 2 usage or setup.
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "clc_wire.h"
#include "smcr_clc_wire.h"
#include "smc_opt.h"
#include "smcopt_env.h"

/* A PROPOSAL as Linux 6.12 builds it, in buf: its length, or -1. */
static int
proposal(uint8_t *buf, size_t len, const char *eid, struct in_addr gid_ip,
	 const uint8_t *sysid)
{
	struct smcr_clc_proposal_info p;

	memset(&p, 0, sizeof(p));
	if (sysid != NULL)
		memcpy(p.system_id, sysid, sizeof(p.system_id));
	p.typev1 = SMCR_CLC_TYPE_N;
	p.typev2 = SMCR_CLC_TYPE_R;
	p.release = 1;
	p.max_conns = 255;
	p.max_links = 2;
	p.eid_cnt = 1;
	if (smcr_clc_eid_put(p.eid[0], eid) != 0)
		return -1;
	p.roce_gid[10] = p.roce_gid[11] = 0xff;
	memcpy(p.roce_gid + 12, &gid_ip, 4);
	return smcr_clc_proposal_encode(buf, len, &p);
}

/* Send a PROPOSAL and read the answer: 0 after a DECLINE, else -1. */
static int
clc(int fd, const char *eid, struct in_addr gid_ip, bool garbage)
{
	uint8_t buf[SMCR_CLC_MSG_MAX];
	struct smcr_clc_decline_info d;
	uint32_t code = 0;
	uint8_t type;
	int n, length;

	n = proposal(buf, sizeof(buf), eid, gid_ip, NULL);
	if (n < 0) {
		fprintf(stderr, "ksmcclient: no PROPOSAL with EID %s\n", eid);
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
	    smcr_clc_decline_decode(buf, (size_t)length, &d, &code) != 0) {
		printf("CLC type %u, not a good DECLINE\n", type);
		return -1;
	}
	printf("DECLINE %s 0x%08x v%u\n", clc_decline_name(d.diagnosis),
	       d.diagnosis, d.version);
	return 0;
}

#define FLOOD_MAX 1024

/*
 * -H: k connections from src (any if 0) to sin, all at once, each with
 * its PROPOSAL from a system id of its own (a host may send any): each
 * is a first contact, and an ACCEPT is left without its CONFIRM, so the
 * server holds a group set up for nobody until its CLC timeout.  Their
 * answers read, held hold seconds, closed.  0 when each got an answer.
 */
static int
flood(struct smcopt_env *env, const struct sockaddr_in *sin, struct in_addr src,
      const char *eid, int k, int hold)
{
	static int fds[FLOOD_MAX];
	struct timeval tv = {.tv_sec = 15};
	uint8_t buf[SMCR_CLC_MSG_MAX], sysid[8];
	struct sockaddr_in me = {.sin_family = AF_INET, .sin_addr = src};
	struct smcr_clc_decline_info d;
	int n, i, length, accepts = 0, declines = 0, other = 0;
	unsigned int by[8] = {0};
	uint32_t names[8] = {0}, code;
	uint8_t type;
	__u32 mark;
	size_t j;

	for (i = 0; i < k; i++) {
		fds[i] = socket(AF_INET, SOCK_STREAM, 0);
		mark = 0;
		if (fds[i] < 0 || smcopt_mark(env, fds[i], SMC_OPT_CONNECT) ||
		    (src.s_addr != 0 &&
		     bind(fds[i], (struct sockaddr *)&me, sizeof(me))) ||
		    connect(fds[i], (const struct sockaddr *)sin,
			    sizeof(*sin)) ||
		    setsockopt(fds[i], SOL_SOCKET, SO_RCVTIMEO, &tv,
			       sizeof(tv))) {
			perror("ksmcclient: connect");
			return -1;
		}
		(void)bpf_map_lookup_elem(env->mark_fd, &fds[i], &mark);
		for (j = 0; j < sizeof(sysid); j++)
			sysid[j] = (uint8_t)random();
		n = proposal(buf, sizeof(buf), eid,
			     src.s_addr ? src : sin->sin_addr, sysid);
		if (mark != SMC_OPT_ECHOED || n < 0 ||
		    write(fds[i], buf, (size_t)n) != n) {
			close(fds[i]);
			fds[i] = -1;
		}
	}
	for (i = 0; i < k; i++) {
		length = fds[i] < 0 ?
				 -1 :
				 smcopt_clc_read(fds[i], buf, &type, &code);
		if (length >= 0 && type == CLC_ACCEPT) {
			accepts++;
			continue;
		}
		if (length < 0 || type != CLC_DECLINE ||
		    smcr_clc_decline_decode(buf, (size_t)length, &d, &code)) {
			other++;
			continue;
		}
		declines++;
		for (j = 0; j < 8 && names[j] && names[j] != d.diagnosis; j++)
			;
		if (j < 8) {
			names[j] = d.diagnosis;
			by[j]++;
		}
	}
	printf("held %d: accepts %d, declines %d (", k, accepts, declines);
	for (j = 0; j < 8 && names[j]; j++)
		printf("%s%s %u", j ? " " : "", clc_decline_name(names[j]),
		       by[j]);
	printf("), other %d\n", other);
	fflush(stdout);
	(void)poll(NULL, 0, hold * 1000);
	for (i = 0; i < k; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return other == 0 ? 0 : -1;
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
	const char *gid = NULL, *bind_to = NULL, *why;
	bool plain = false, garbage = false;
	struct sockaddr_in sin, me;
	socklen_t sl = sizeof(me);
	struct smcopt_env env;
	struct in_addr gid_ip;
	struct in_addr src = {0};
	size_t bytes = 65536;
	__u32 mark = 0;
	int c, fd = -1, rc = 1, hold = -1, k = 1;

	while ((c = getopt(argc, argv, "c:o:e:g:n:prb:H:k:")) != -1) {
		switch (c) {
		case 'b':
			bind_to = optarg;
			break;
		case 'H':
			hold = atoi(optarg);
			break;
		case 'k':
			k = atoi(optarg);
			break;
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
	if (to == NULL || obj == NULL || smcopt_addr4(to, &sin) != 0 ||
	    (bind_to != NULL && inet_pton(AF_INET, bind_to, &src) != 1) ||
	    k < 1 || k > FLOOD_MAX) {
		fputs("usage: ksmcclient -c ADDR:PORT -o SMC_OPT_BPF_O [-e "
		      "EID] "
		      "[-g IPV4] [-n BYTES] [-p] [-r] [-b IPV4] [-H SECONDS "
		      "-k N]\n",
		      stderr);
		return 2;
	}
	why = smcopt_env_setup(&env, obj);
	if (why != NULL) {
		fprintf(stderr, "ksmcclient: %s\n", why);
		smcopt_env_teardown(&env);
		return 2;
	}
	if (hold >= 0) {
		srandom((unsigned int)getpid() ^ (unsigned int)time(NULL));
		rc = flood(&env, &sin, src, eid, k, hold) == 0 ? 0 : 1;
		goto out;
	}
	me.sin_family = AF_INET;
	me.sin_port = 0;
	me.sin_addr = src;
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || (!plain && smcopt_mark(&env, fd, SMC_OPT_CONNECT)) ||
	    (bind_to != NULL && bind(fd, (struct sockaddr *)&me, sizeof(me))) ||
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
