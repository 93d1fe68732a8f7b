// SPDX-License-Identifier: BSD-2-Clause
/*
 * ksmcdecline: the standard dialect's first steps against a real kernel
 * SMC-R client, for the kernel SMC-R lane (tests/rxe/320-ksmc-decline.sh).
 * It loads the SMC-R TCP option's BPF program into a cgroup of its own,
 * listens on a marked socket, accepts one connection and says whether
 * its SYN-ACK echoed the option; if it did, it reads the client's CLC
 * PROPOSAL with the standard codec, prints it, answers with a DECLINE
 * (the client goes on as TCP on the same connection) and then echoes
 * every byte back until the client closes.
 *
 *   ksmcdecline -l ADDR:PORT -o SMC_OPT_BPF_O [-d CODE]
 *
 * exit: 0 declined and echoed, 1 something else happened, 2 usage/setup
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
#include "sclc_wire.h"
#include "smc_opt.h"
#include "smcopt_env.h"

static int
read_full(int fd, uint8_t *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		n = read(fd, buf + got, len - got);
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return 0;
}

static void
print_eid(const char *what, const uint8_t eid[SCLC_EID_LEN])
{
	int n = SCLC_EID_LEN;

	while (n > 0 && eid[n - 1] == ' ')
		n--;
	printf("%s %.*s\n", what, n, (const char *)eid);
}

/* Read and print the PROPOSAL; 0, or -1 after saying why. */
static int
proposal(int fd)
{
	uint8_t buf[SCLC_MSG_MAX];
	struct sclc_proposal_info p;
	char gid[INET6_ADDRSTRLEN];
	uint32_t decl = 0;
	uint16_t length;
	uint8_t type;
	int i;

	if (read_full(fd, buf, sizeof(struct clc_hdr)) ||
	    sclc_hdr_check(buf, sizeof(struct clc_hdr), &type, &length,
			   &decl) ||
	    type != CLC_PROPOSAL) {
		printf("no CLC PROPOSAL (decline reason %s)\n",
		       clc_decline_name(decl));
		return -1;
	}
	if (read_full(fd, buf + sizeof(struct clc_hdr),
		      length - sizeof(struct clc_hdr)) ||
	    sclc_proposal_decode(buf, length, &p, &decl)) {
		printf("PROPOSAL of %u bytes refused: %s\n", length,
		       clc_decline_name(decl));
		return -1;
	}
	inet_ntop(AF_INET6, p.roce_gid, gid, sizeof(gid));
	printf("PROPOSAL %u bytes: v1 %d, v2 %d, release %u, RoCE GID %s, "
	       "max_conns %u, max_links %u, %u EID(s)\n",
	       length, p.typev1, p.typev2, p.release, gid, p.max_conns,
	       p.max_links, p.eid_cnt);
	for (i = 0; i < p.eid_cnt; i++)
		print_eid("EID", p.eid[i]);
	return 0;
}

int
main(int argc, char **argv)
{
	const char *listen_at = NULL, *obj = NULL, *why;
	uint32_t code = CLC_DECL_NOSMCRDEV;
	struct sclc_decline_info d;
	struct smcopt_env env;
	struct sockaddr_in sin;
	uint8_t buf[4096];
	size_t echoed = 0;
	char *colon;
	int c, l, a = -1, n, rc = 1;

	while ((c = getopt(argc, argv, "l:o:d:")) != -1) {
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
		default:
			return 2;
		}
	}
	if (!listen_at || !obj || !(colon = strrchr(listen_at, ':'))) {
		fputs("usage: ksmcdecline -l ADDR:PORT -o SMC_OPT_BPF_O "
		      "[-d CODE]\n",
		      stderr);
		return 2;
	}
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)atoi(colon + 1));
	*colon = '\0';
	if (inet_pton(AF_INET, listen_at, &sin.sin_addr) != 1) {
		fprintf(stderr, "ksmcdecline: bad address %s\n", listen_at);
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
	printf("listening on %s:%u\n", listen_at, ntohs(sin.sin_port));
	fflush(stdout);
	a = accept(l, NULL, NULL);
	if (a < 0)
		goto out;
	if (!smcopt_echoed(&env, a)) {
		printf("the SYN-ACK did not echo the option\n");
		goto out;
	}
	printf("the SYN-ACK echoed the option\n");
	if (proposal(a))
		goto out;
	memset(&d, 0, sizeof(d));
	d.version = SCLC_VERSION;
	d.diagnosis = code;
	d.os_type = SCLC_OS_LINUX;
	memcpy(d.system_id, "SMCPRXYD", 8);
	n = sclc_decline_encode(buf, sizeof(buf), &d);
	if (n < 0 || write(a, buf, (size_t)n) != n) {
		perror("ksmcdecline: DECLINE");
		goto out;
	}
	printf("DECLINE %s (0x%08x) sent\n", clc_decline_name(code), code);
	fflush(stdout);
	while ((n = (int)read(a, buf, sizeof(buf))) > 0) {
		if (write(a, buf, (size_t)n) != n)
			break;
		echoed += (size_t)n;
	}
	printf("echoed %zu bytes as TCP\n", echoed);
	rc = echoed > 0 ? 0 : 1;
out:
	if (a >= 0)
		close(a);
	close(l);
	smcopt_env_teardown(&env);
	return rc;
}
