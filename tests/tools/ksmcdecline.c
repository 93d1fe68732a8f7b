// SPDX-License-Identifier: BSD-2-Clause
/*
 * ksmcdecline: the SMC-R dialect's first steps as a kernel SMC-R server
 * takes them, against a real kernel SMC-R client (the kernel SMC-R lane,
 * tests/rxe/320-ksmc-decline.sh) or against a target_smc rule of ours
 * (tests/system/195-target-smc.sh).  It loads the SMC-R TCP option's BPF
 * program into a cgroup of its own, listens on a marked socket, accepts
 * -N connections one after the other (1 by default) and says whether each
 * SYN-ACK echoed the option; if it did, it reads the client's CLC PROPOSAL
 * with the standard codec, prints it, and answers with a DECLINE (the
 * client goes on as TCP on the same connection) or, with -a, with the
 * bytes of FILE (a captured ACCEPT), or, with -j, with a join ACCEPT (no
 * first contact) naming the link group of system id SYSID whose link has
 * the GID and QP number given, for EID: a hostile server steering the
 * client's connection onto its group with another server (issue 43, M1;
 * tests/rxe/377-ksmc-steer.sh).  After an ACCEPT it reads and prints the
 * client's DECLINE.  Then it echoes every byte back until the client
 * closes.
 *
 *   ksmcdecline -l ADDR:PORT -o SMC_OPT_BPF_O [-d CODE] [-a FILE]
 *               [-j SYSID,GID,QPN,EID] [-N N]
 *
 * exit: 0 each connection answered and echoed, 1 something else
 * happened, 2 usage/setup
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clc_wire.h"
#include "smcr_clc_wire.h"
#include "smc_opt.h"
#include "smcopt_env.h"

static void
print_eid(const char *what, const uint8_t eid[SMCR_CLC_EID_LEN])
{
	int n = SMCR_CLC_EID_LEN;

	while (n > 0 && eid[n - 1] == ' ')
		n--;
	printf("%s %.*s\n", what, n, (const char *)eid);
}

/* Read and print the PROPOSAL; 0, or -1 after saying why. */
static int
proposal(int fd)
{
	uint8_t buf[SMCR_CLC_MSG_MAX];
	struct smcr_clc_proposal_info p;
	char gid[INET6_ADDRSTRLEN];
	uint32_t decl = 0;
	uint8_t type;
	int i, length;

	length = smcopt_clc_read(fd, buf, &type, &decl);
	if (length < 0 || type != CLC_PROPOSAL) {
		printf("no CLC PROPOSAL (decline reason %s)\n",
		       clc_decline_name(decl));
		return -1;
	}
	if (smcr_clc_proposal_decode(buf, (size_t)length, &p, &decl)) {
		printf("PROPOSAL of %d bytes refused: %s\n", length,
		       clc_decline_name(decl));
		return -1;
	}
	inet_ntop(AF_INET6, p.roce_gid, gid, sizeof(gid));
	printf("PROPOSAL %d bytes: v1 %d, v2 %d, release %u, RoCE GID %s, "
	       "max_conns %u, max_links %u, %u EID(s)\n",
	       length, p.typev1, p.typev2, p.release, gid, p.max_conns,
	       p.max_links, p.eid_cnt);
	for (i = 0; i < p.eid_cnt; i++)
		print_eid("EID", p.eid[i]);
	return 0;
}

/* After our ACCEPT: the client's DECLINE, printed; 0, or -1. */
static int
client_decline(int fd)
{
	uint8_t buf[SMCR_CLC_MSG_MAX];
	struct smcr_clc_decline_info d;
	uint32_t code = 0;
	uint8_t type;
	int length;

	length = smcopt_clc_read(fd, buf, &type, &code);
	if (length < 0 || type != CLC_DECLINE ||
	    smcr_clc_decline_decode(buf, (size_t)length, &d, &code)) {
		printf("no DECLINE after the ACCEPT\n");
		return -1;
	}
	printf("client DECLINE %s (0x%08x)%s\n", clc_decline_name(d.diagnosis),
	       d.diagnosis, d.sync_err ? " sync" : "");
	return 0;
}

/* Read a captured message at path into buf: its length, or -1. */
static int
load(const char *path, uint8_t *buf, size_t size)
{
	FILE *f = fopen(path, "rb");
	size_t n;

	if (f == NULL)
		return -1;
	n = fread(buf, 1, size, f);
	fclose(f);
	return n > 0 ? (int)n : -1;
}

/*
 * A join ACCEPT from spec "SYSID,GID,QPN,EID" (SYSID in 16 hex digits, as
 * smcproxyctl show lgrs prints peer_system_id; GID as show links prints
 * peer_gid) into buf: its length, or -1.  Its RMB element is made up: a
 * client that took the ACCEPT would write there on the named group.
 */
static int
join_accept(const char *spec, uint8_t *buf, size_t size)
{
	struct smcr_clc_accept_info a;
	char sysid[17], gid[INET6_ADDRSTRLEN], eid[SMCR_CLC_EID_LEN + 1];
	unsigned int qpn, x, i;

	if (sscanf(spec, "%16[0-9a-f],%45[^,],%u,%32s", sysid, gid, &qpn,
		   eid) != 4 ||
	    strlen(sysid) != 16)
		return -1;
	memset(&a, 0, sizeof(a));
	for (i = 0; i < 8; i++) {
		if (sscanf(sysid + 2 * i, "%2x", &x) != 1)
			return -1;
		a.system_id[i] = (uint8_t)x;
	}
	if (inet_pton(AF_INET6, gid, a.gid) != 1 ||
	    smcr_clc_eid_put(a.eid, eid) != 0)
		return -1;
	a.qpn = qpn;
	a.rmb_rkey = 0x5eed;
	a.rmbe_idx = 1;
	a.alert_token = 1;
	a.rmbe_size = 1;
	a.mtu = 3; /* IBV_MTU_1024 */
	a.rmb_vaddr = 0x100000;
	a.psn = 1;
	return smcr_clc_accept_encode(buf, size, &a);
}

/* One connection on fd: 0 when answered and echoed, else 1. */
static int
serve(struct smcopt_env *env, int a, uint32_t code, const uint8_t *acc,
      int acc_len)
{
	struct smcr_clc_decline_info d;
	uint8_t buf[4096];
	size_t echoed = 0;
	int n;

	if (!smcopt_echoed(env, a)) {
		printf("the SYN-ACK did not echo the option\n");
		return 1;
	}
	printf("the SYN-ACK echoed the option\n");
	if (proposal(a))
		return 1;
	if (acc_len > 0) {
		if (write(a, acc, (size_t)acc_len) != acc_len)
			return 1;
		printf("ACCEPT of %d bytes sent\n", acc_len);
		fflush(stdout);
		if (client_decline(a))
			return 1;
	} else {
		memset(&d, 0, sizeof(d));
		d.version = SMCR_CLC_VERSION;
		d.diagnosis = code;
		d.os_type = SMCR_CLC_OS_LINUX;
		memcpy(d.system_id, "SMCPRXYD", 8);
		n = smcr_clc_decline_encode(buf, sizeof(buf), &d);
		if (n < 0 || write(a, buf, (size_t)n) != n) {
			perror("ksmcdecline: DECLINE");
			return 1;
		}
		printf("DECLINE %s (0x%08x) sent\n", clc_decline_name(code),
		       code);
	}
	fflush(stdout);
	while ((n = (int)read(a, buf, sizeof(buf))) > 0) {
		if (write(a, buf, (size_t)n) != n)
			break;
		echoed += (size_t)n;
	}
	printf("echoed %zu bytes as TCP\n", echoed);
	fflush(stdout);
	return echoed > 0 ? 0 : 1;
}

int
main(int argc, char **argv)
{
	const char *listen_at = NULL, *obj = NULL, *accept_file = NULL, *why;
	const char *join = NULL;
	uint32_t code = CLC_DECL_NOSMCRDEV;
	struct smcopt_env env;
	struct sockaddr_in sin;
	uint8_t acc[SMCR_CLC_MSG_MAX];
	int acc_len = 0, count = 1;
	int c, l, a, rc = 0;

	while ((c = getopt(argc, argv, "l:o:d:a:j:N:")) != -1) {
		switch (c) {
		case 'l':
			listen_at = optarg;
			break;
		case 'o':
			obj = optarg;
			break;
		case 'd':
			code = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'a':
			accept_file = optarg;
			break;
		case 'j':
			join = optarg;
			break;
		case 'N':
			count = atoi(optarg);
			break;
		default:
			return 2;
		}
	}
	if (!listen_at || !obj || smcopt_addr4(listen_at, &sin) != 0) {
		fputs("usage: ksmcdecline -l ADDR:PORT -o SMC_OPT_BPF_O "
		      "[-d CODE] [-a FILE] [-j SYSID,GID,QPN,EID] [-N N]\n",
		      stderr);
		return 2;
	}
	if (accept_file != NULL &&
	    (acc_len = load(accept_file, acc, sizeof(acc))) < 0) {
		fprintf(stderr, "ksmcdecline: cannot read %s\n", accept_file);
		return 2;
	}
	if (join != NULL &&
	    (acc_len = join_accept(join, acc, sizeof(acc))) < 0) {
		fprintf(stderr, "ksmcdecline: bad -j %s\n", join);
		return 2;
	}
	why = smcopt_env_setup(&env, obj);
	if (why) {
		fprintf(stderr, "ksmcdecline: %s\n", why);
		smcopt_env_teardown(&env);
		return 2;
	}
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 ||
	    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &(int){1}, sizeof(int)) ||
	    bind(l, (struct sockaddr *)&sin, sizeof(sin)) ||
	    smcopt_mark(&env, l, SMC_OPT_LISTEN) || listen(l, 4)) {
		perror("ksmcdecline: listen");
		smcopt_env_teardown(&env);
		return 2;
	}
	printf("listening on %s\n", listen_at);
	fflush(stdout);
	while (count-- > 0) {
		a = accept(l, NULL, NULL);
		if (a < 0) {
			rc = 1;
			break;
		}
		rc |= serve(&env, a, code, acc, acc_len);
		close(a);
		a = -1;
	}
	close(l);
	smcopt_env_teardown(&env);
	return rc;
}
