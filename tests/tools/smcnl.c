// SPDX-License-Identifier: BSD-2-Clause
/*
 * smcnl: the kernel SMC module's generic netlink family (SMC_GEN_NETLINK),
 * for the tests that run Linux's own SMC-R as a peer or a baseline (issue
 * 31).  smc-tools is not packaged in Debian; this is the part of its
 * smcr(8) the tests need.
 *
 *   ueid add EID   the user EID that SMC-Rv2 needs: both hosts must share
 *                  one, or the server declines and the connection stays
 *                  TCP (rxe has RoCE v2 GIDs only, so v2 is all there is)
 *   ueid del EID, ueid flush, ueid list
 *   stats [NAME]   the SMC-R counters (SMC_NETLINK_GET_STATS) and the
 *                  fallback totals (SMC_NETLINK_GET_FBACK_STATS), one
 *                  "name value" line each; with NAME only its value.  A
 *                  test proves a connection ran over SMC-R, not TCP, by
 *                  clnt_v2_succ / srv_v2_succ rising.
 *   pnet add PNETID ETH IBDEV [PORT]
 *                  a pnet table entry (the SMC_PNETID family): network
 *                  device ETH and IBDEV's PORT (default 1) on PNETID
 *                  (one already there is no error).
 *                  Linux 6.1's SMC finds no RDMA device for a netdev
 *                  without one when the device driver has no get_netdev
 *                  (rxe in 6.1), and falls back to TCP; 6.12 asks the
 *                  RDMA core instead and needs none (tests/rxe/lib.sh,
 *                  ksmc_setup)
 *   links          the SMC-R link groups and their usable links
 *                  (SMC_NETLINK_GET_LINK_SMCR, which dumps each group
 *                  followed by its links), one line each:
 *                    lgr ID role ROLE type TYPE conns N pnetid P
 *                    link ID-OF-ITS-GROUP id N dev IBDEV port N
 *                         state STATE conns N
 *                  (TYPE: NONE, SINGLE, SYMMETRIC, ASYM_PEER,
 *                  ASYM_LOCAL; STATE: ACTIVATING, ACTIVE, ...); the
 *                  two-link lab's 315 counts links per RDMA device
 *
 * The kernel's EID format (net/smc/smc_clc.c): exactly 32 characters of
 * A-Z, 0-9, '.' and '-', the first a letter or digit, blank padded, sent
 * with a NUL (33 bytes).  Raw netlink, no libnl.
 */
#include <sys/socket.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/smc.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NL_BUF 32768
#define EID_LEN SMC_MAX_EID_LEN

struct nl {
	int fd;
	uint16_t family;
	uint32_t seq;
};

/* One counter of the SMC-R statistics: its name here, its attribute. */
struct counter {
	const char *name;
	int attr;
};

static const struct counter smcr_counters[] = {
	{"clnt_v1_succ", SMC_NLA_STATS_T_CLNT_V1_SUCC},
	{"clnt_v2_succ", SMC_NLA_STATS_T_CLNT_V2_SUCC},
	{"srv_v1_succ", SMC_NLA_STATS_T_SRV_V1_SUCC},
	{"srv_v2_succ", SMC_NLA_STATS_T_SRV_V2_SUCC},
	{"cork_cnt", SMC_NLA_STATS_T_CORK_CNT},
	{"ndly_cnt", SMC_NLA_STATS_T_NDLY_CNT},
	{"rx_bytes", SMC_NLA_STATS_T_RX_BYTES},
	{"tx_bytes", SMC_NLA_STATS_T_TX_BYTES},
	{"rx_cnt", SMC_NLA_STATS_T_RX_CNT},
	{"tx_cnt", SMC_NLA_STATS_T_TX_CNT},
};
#define NCOUNTERS (sizeof(smcr_counters) / sizeof(smcr_counters[0]))

/* Everything "stats" prints, in its order. */
struct stats {
	uint64_t smcr[NCOUNTERS];
	uint64_t clnt_hs_err;
	uint64_t srv_hs_err;
	uint64_t fback_clnt;
	uint64_t fback_srv;
};

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list ap;

	fputs("smcnl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void __attribute__((noreturn)) usage(FILE *f, int status)
{
	fputs("usage: smcnl ueid add EID | ueid del EID | ueid flush | "
	      "ueid list\n"
	      "       smcnl stats [NAME]\n"
	      "       smcnl pnet add PNETID ETH IBDEV [PORT]\n"
	      "       smcnl links\n"
	      "       smcnl --help\n"
	      "\n"
	      "The Linux kernel's SMC generic netlink family "
	      "(SMC_GEN_NETLINK; modprobe smc).\n"
	      "  ueid add EID  add a user EID (SMC-Rv2 needs the same one "
	      "on both hosts):\n"
	      "                up to 32 of A-Z 0-9 . -, the first a letter "
	      "or digit; it is\n"
	      "                blank padded to 32 (an EID already there is "
	      "no error)\n"
	      "  ueid del EID  remove one; ueid flush: remove all; ueid "
	      "list: one a line\n"
	      "  stats         SMC-R counters and fallback totals, "
	      "\"name value\" a line:\n"
	      "                clnt_v2_succ, srv_v2_succ (connections that "
	      "ran over SMC-Rv2),\n"
	      "                clnt_v1_succ, srv_v1_succ, cork_cnt, ndly_cnt, "
	      "rx_bytes, tx_bytes,\n"
	      "                rx_cnt, tx_cnt, clnt_hs_err, srv_hs_err, "
	      "fback_clnt, fback_srv\n"
	      "  stats NAME    only that counter's value\n"
	      "  pnet add PNETID ETH IBDEV [PORT]\n"
	      "                put ETH and IBDEV's PORT (default 1) on PNETID "
	      "in the pnet\n"
	      "                table (SMC_PNETID family; 1 to 16 of A-Z "
	      "0-9)\n"
	      "  links         the SMC-R link groups and their links, a line "
	      "each:\n"
	      "                lgr ID role ROLE type TYPE conns N pnetid P\n"
	      "                link LGRID id N dev IBDEV port N state STATE "
	      "conns N\n"
	      "Adding and removing EIDs and pnet entries needs "
	      "CAP_NET_ADMIN; reading does\nnot.\n"
	      "exit: 0 done, 1 the kernel refused or the family is missing, "
	      "2 usage\n",
	      f);
	exit(status);
}

/* --- netlink --------------------------------------------------------- */

static struct nlattr *
nla_put(struct nlmsghdr *h, uint16_t type, const void *data, size_t len)
{
	struct nlattr *a =
		(struct nlattr *)((char *)h + NLMSG_ALIGN(h->nlmsg_len));

	a->nla_type = type;
	a->nla_len = (uint16_t)(NLA_HDRLEN + len);
	memcpy((char *)a + NLA_HDRLEN, data, len);
	h->nlmsg_len = NLMSG_ALIGN(h->nlmsg_len) + NLA_ALIGN(a->nla_len);
	return a;
}

/* Walk the attributes in [p, p + len): tb[type] = the attribute. */
static void
nla_parse(struct nlattr **tb, int max, const void *p, size_t len)
{
	const struct nlattr *a = p;

	memset(tb, 0, sizeof(*tb) * (size_t)(max + 1));
	while (len >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN &&
	       a->nla_len <= len) {
		int type = a->nla_type & NLA_TYPE_MASK;

		size_t step = (size_t)NLA_ALIGN(a->nla_len);

		if (type <= max)
			tb[type] = (struct nlattr *)a;
		len -= step < len ? step : len;
		a = (const struct nlattr *)((const char *)a + step);
	}
}

static void *
nla_data(const struct nlattr *a)
{
	return (char *)a + NLA_HDRLEN;
}

static size_t
nla_payload(const struct nlattr *a)
{
	return a->nla_len - NLA_HDRLEN;
}

static uint64_t
nla_u64(const struct nlattr *a)
{
	uint64_t v = 0;

	if (a != NULL && nla_payload(a) >= sizeof(v))
		memcpy(&v, nla_data(a), sizeof(v));
	return v;
}

/* Send one request: 0 or a negative errno. */
static int
nl_send(struct nl *nl, struct nlmsghdr *h)
{
	struct sockaddr_nl to = {.nl_family = AF_NETLINK};

	h->nlmsg_seq = ++nl->seq;
	if (sendto(nl->fd, h, h->nlmsg_len, 0, (struct sockaddr *)&to,
		   sizeof(to)) < 0)
		return -errno;
	return 0;
}

/*
 * Read the answers to the last request until its ACK, error or the end of
 * its dump; each data message goes to cb (may be NULL).  Returns 0 or the
 * kernel's negative errno.
 */
static int
nl_recv(struct nl *nl, void (*cb)(struct nlmsghdr *, void *), void *arg)
{
	static char buf[NL_BUF];
	struct nlmsghdr *h;
	ssize_t n;

	for (;;) {
		n = recv(nl->fd, buf, sizeof(buf), 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
		     h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_seq != nl->seq)
				continue;
			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			if (h->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(h);

				return e->error;
			}
			if (cb != NULL)
				cb(h, arg);
			if (!(h->nlmsg_flags & NLM_F_MULTI))
				return 0;
		}
	}
}

static void
family_cb(struct nlmsghdr *h, void *arg)
{
	struct nlattr *tb[CTRL_ATTR_MAX + 1];
	struct genlmsghdr *g = NLMSG_DATA(h);

	nla_parse(tb, CTRL_ATTR_MAX, (char *)g + GENL_HDRLEN,
		  h->nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN);
	if (tb[CTRL_ATTR_FAMILY_ID] != NULL)
		memcpy(arg, nla_data(tb[CTRL_ATTR_FAMILY_ID]),
		       sizeof(uint16_t));
}

/* Start a generic netlink request of cmd in buf. */
static struct nlmsghdr *
genl_msg(char *buf, uint16_t family, uint8_t cmd, uint16_t flags)
{
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	struct genlmsghdr *g;

	memset(buf, 0, NLMSG_SPACE(GENL_HDRLEN));
	h->nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	h->nlmsg_type = family;
	h->nlmsg_flags = NLM_F_REQUEST | flags;
	g = NLMSG_DATA(h);
	g->cmd = cmd;
	g->version = SMC_GENL_FAMILY_VERSION;
	return h;
}

/* Open the socket and resolve family name: 0 or a negative errno. */
static int
nl_open(struct nl *nl, const char *name)
{
	char buf[256];
	struct nlmsghdr *h;
	int rc;

	nl->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (nl->fd < 0)
		return -errno;
	h = genl_msg(buf, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, NLM_F_ACK);
	((struct genlmsghdr *)NLMSG_DATA(h))->version = 1;
	nla_put(h, CTRL_ATTR_FAMILY_NAME, name, strlen(name) + 1);
	rc = nl_send(nl, h);
	if (rc == 0)
		rc = nl_recv(nl, family_cb, &nl->family);
	if (rc == 0 && nl->family == 0)
		rc = -ENOENT;
	return rc;
}

/* --- user EIDs ------------------------------------------------------- */

/*
 * eid (EID_LEN + 1 bytes) = s, blank padded, NUL terminated, if s is an
 * EID the kernel takes; else 0 with why.
 */
static bool
eid_make(char *eid, const char *s, const char **why)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > EID_LEN) {
		*why = "must have 1 to 32 characters";
		return false;
	}
	if (!((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= '0' && s[0] <= '9'))) {
		*why = "must begin with A-Z or 0-9";
		return false;
	}
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '-')) {
			*why = "may hold only A-Z, 0-9, '.' and '-' (upper "
			       "case)";
			return false;
		}
	}
	memset(eid, ' ', EID_LEN);
	memcpy(eid, s, n);
	eid[EID_LEN] = '\0';
	return true;
}

static void
ueid_list_cb(struct nlmsghdr *h, void *arg)
{
	struct nlattr *tb[SMC_NLA_EID_TABLE_MAX + 1];
	struct genlmsghdr *g = NLMSG_DATA(h);
	const char *s;
	size_t n;

	nla_parse(tb, SMC_NLA_EID_TABLE_MAX, (char *)g + GENL_HDRLEN,
		  h->nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN);
	if (tb[SMC_NLA_EID_TABLE_ENTRY] == NULL)
		return;
	s = nla_data(tb[SMC_NLA_EID_TABLE_ENTRY]);
	n = strnlen(s, nla_payload(tb[SMC_NLA_EID_TABLE_ENTRY]));
	while (n > 0 && s[n - 1] == ' ')
		n--;
	printf("%.*s\n", (int)n, s);
}

/* ueid add|del|flush|list: 0 or a negative errno from the kernel. */
static int
ueid_cmd(struct nl *nl, const char *verb, const char *arg)
{
	char buf[256], eid[EID_LEN + 1];
	struct nlmsghdr *h;
	const char *why = NULL;
	int rc;

	if (strcmp(verb, "list") == 0) {
		h = genl_msg(buf, nl->family, SMC_NETLINK_DUMP_UEID,
			     NLM_F_DUMP);
		rc = nl_send(nl, h);
		return rc != 0 ? rc : nl_recv(nl, ueid_list_cb, NULL);
	}
	if (strcmp(verb, "flush") == 0) {
		h = genl_msg(buf, nl->family, SMC_NETLINK_FLUSH_UEID,
			     NLM_F_ACK);
		rc = nl_send(nl, h);
		return rc != 0 ? rc : nl_recv(nl, NULL, NULL);
	}
	if (!eid_make(eid, arg, &why))
		die("EID \"%s\" %s", arg, why);
	h = genl_msg(buf, nl->family,
		     strcmp(verb, "add") == 0 ? SMC_NETLINK_ADD_UEID :
						SMC_NETLINK_REMOVE_UEID,
		     NLM_F_ACK);
	nla_put(h, SMC_NLA_EID_TABLE_ENTRY, eid, sizeof(eid));
	rc = nl_send(nl, h);
	if (rc == 0)
		rc = nl_recv(nl, NULL, NULL);
	/* a second run of the same setup is no error */
	if (rc == -EEXIST && strcmp(verb, "add") == 0)
		rc = 0;
	return rc;
}

/* --- statistics ------------------------------------------------------ */

static void
stats_cb(struct nlmsghdr *h, void *arg)
{
	struct nlattr *tb[SMC_GEN_MAX + 1], *st[SMC_NLA_STATS_MAX + 1];
	struct nlattr *t[SMC_NLA_STATS_T_MAX + 1];
	struct genlmsghdr *g = NLMSG_DATA(h);
	struct stats *s = arg;
	size_t i;

	nla_parse(tb, SMC_GEN_MAX, (char *)g + GENL_HDRLEN,
		  h->nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN);
	if (tb[SMC_GEN_STATS] == NULL)
		return;
	nla_parse(st, SMC_NLA_STATS_MAX, nla_data(tb[SMC_GEN_STATS]),
		  nla_payload(tb[SMC_GEN_STATS]));
	s->clnt_hs_err = nla_u64(st[SMC_NLA_STATS_CLNT_HS_ERR_CNT]);
	s->srv_hs_err = nla_u64(st[SMC_NLA_STATS_SRV_HS_ERR_CNT]);
	if (st[SMC_NLA_STATS_SMCR_TECH] == NULL)
		return;
	nla_parse(t, SMC_NLA_STATS_T_MAX, nla_data(st[SMC_NLA_STATS_SMCR_TECH]),
		  nla_payload(st[SMC_NLA_STATS_SMCR_TECH]));
	for (i = 0; i < NCOUNTERS; i++)
		s->smcr[i] = nla_u64(t[smcr_counters[i].attr]);
}

/*
 * One message per fallback reason; each carries the side's totals too
 * (the kernel repeats them), so the largest seen is the total.
 */
static void
fback_cb(struct nlmsghdr *h, void *arg)
{
	struct nlattr *tb[SMC_GEN_MAX + 1];
	struct nlattr *f[SMC_NLA_FBACK_STATS_MAX + 1];
	struct genlmsghdr *g = NLMSG_DATA(h);
	struct stats *s = arg;
	uint64_t v;

	nla_parse(tb, SMC_GEN_MAX, (char *)g + GENL_HDRLEN,
		  h->nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN);
	if (tb[SMC_GEN_FBACK_STATS] == NULL)
		return;
	nla_parse(f, SMC_NLA_FBACK_STATS_MAX, nla_data(tb[SMC_GEN_FBACK_STATS]),
		  nla_payload(tb[SMC_GEN_FBACK_STATS]));
	v = nla_u64(f[SMC_NLA_FBACK_STATS_SRV_CNT]);
	if (v > s->fback_srv)
		s->fback_srv = v;
	v = nla_u64(f[SMC_NLA_FBACK_STATS_CLNT_CNT]);
	if (v > s->fback_clnt)
		s->fback_clnt = v;
}

static int
stats_cmd(struct nl *nl, const char *name)
{
	char buf[256];
	struct stats s;
	struct nlmsghdr *h;
	struct {
		const char *name;
		uint64_t v;
	} out[NCOUNTERS + 4];
	size_t i, n = 0;
	int rc;

	memset(&s, 0, sizeof(s));
	h = genl_msg(buf, nl->family, SMC_NETLINK_GET_STATS, NLM_F_DUMP);
	rc = nl_send(nl, h);
	if (rc == 0)
		rc = nl_recv(nl, stats_cb, &s);
	if (rc != 0)
		return rc;
	h = genl_msg(buf, nl->family, SMC_NETLINK_GET_FBACK_STATS, NLM_F_DUMP);
	rc = nl_send(nl, h);
	if (rc == 0)
		rc = nl_recv(nl, fback_cb, &s);
	if (rc != 0)
		return rc;
	for (i = 0; i < NCOUNTERS; i++) {
		out[n].name = smcr_counters[i].name;
		out[n++].v = s.smcr[i];
	}
	out[n].name = "clnt_hs_err";
	out[n++].v = s.clnt_hs_err;
	out[n].name = "srv_hs_err";
	out[n++].v = s.srv_hs_err;
	out[n].name = "fback_clnt";
	out[n++].v = s.fback_clnt;
	out[n].name = "fback_srv";
	out[n++].v = s.fback_srv;
	for (i = 0; i < n; i++) {
		if (name == NULL)
			printf("%s %" PRIu64 "\n", out[i].name, out[i].v);
		else if (strcmp(name, out[i].name) == 0) {
			printf("%" PRIu64 "\n", out[i].v);
			return 0;
		}
	}
	if (name != NULL)
		die("no counter named %s (smcnl --help lists them)", name);
	return 0;
}

/* --- link groups and links ----------------------------------------- */

static uint32_t
nla_u32(const struct nlattr *a)
{
	uint32_t v = 0;

	if (a != NULL && nla_payload(a) >= sizeof(v))
		memcpy(&v, nla_data(a), sizeof(v));
	return v;
}

static uint8_t
nla_u8(const struct nlattr *a)
{
	return a != NULL && nla_payload(a) >= 1 ? *(uint8_t *)nla_data(a) : 0;
}

/* A string attribute, printable ("-" when missing or empty). */
static const char *
nla_str(const struct nlattr *a, char *buf, size_t size)
{
	size_t n, i;

	if (a == NULL || nla_payload(a) == 0)
		return "-";
	n = nla_payload(a) < size - 1 ? nla_payload(a) : size - 1;
	memcpy(buf, nla_data(a), n);
	buf[n] = '\0';
	for (i = 0; buf[i] != '\0'; i++)
		if (buf[i] <= ' ' || buf[i] > '~')
			buf[i] = '_';
	return i == 0 ? "-" : buf;
}

/* net/smc/smc_core.h: enum smc_lgr_type and enum smc_link_state */
static const char *const lgr_types[] = {"NONE", "SINGLE", "SYMMETRIC",
					"ASYM_PEER", "ASYM_LOCAL"};
static const char *const link_states[] = {"UNUSED", "INACTIVE", "ACTIVATING",
					  "ACTIVE"};

/* id's bytes in memory order, as hex, in buf (at least 9 bytes) */
static const char *
lgr_hex(uint32_t id, char *buf)
{
	unsigned char b[4];

	memcpy(b, &id, sizeof(b));
	snprintf(buf, 9, "%02x%02x%02x%02x", b[0], b[1], b[2], b[3]);
	return buf;
}

static void
links_cb(struct nlmsghdr *h, void *arg)
{
	struct nlattr *tb[SMC_GEN_MAX + 1];
	struct genlmsghdr *g = NLMSG_DATA(h);
	uint32_t *lgr_id = arg;
	char s[64];

	nla_parse(tb, SMC_GEN_MAX, (char *)g + GENL_HDRLEN,
		  h->nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN);
	if (tb[SMC_GEN_LGR_SMCR] != NULL) {
		struct nlattr *l[SMC_NLA_LGR_R_MAX + 1];
		uint8_t type;

		nla_parse(l, SMC_NLA_LGR_R_MAX, nla_data(tb[SMC_GEN_LGR_SMCR]),
			  nla_payload(tb[SMC_GEN_LGR_SMCR]));
		/* the kernel's four id bytes as a u32: printed in their
		 * order, as its log prints them ("SMC-R lg 00010000") */
		*lgr_id = nla_u32(l[SMC_NLA_LGR_R_ID]);
		type = nla_u8(l[SMC_NLA_LGR_R_TYPE]);
		printf("lgr %s role %s type ", lgr_hex(*lgr_id, s),
		       nla_u8(l[SMC_NLA_LGR_R_ROLE]) ? "server" : "client");
		if (type < sizeof(lgr_types) / sizeof(lgr_types[0]))
			printf("%s", lgr_types[type]);
		else
			printf("%u", type);
		printf(" conns %" PRIu32 " pnetid %s\n",
		       nla_u32(l[SMC_NLA_LGR_R_CONNS_NUM]),
		       nla_str(l[SMC_NLA_LGR_R_PNETID], s, sizeof(s)));
	}
	if (tb[SMC_GEN_LINK_SMCR] != NULL) {
		struct nlattr *k[SMC_NLA_LINK_MAX + 1];
		uint32_t state;

		nla_parse(k, SMC_NLA_LINK_MAX, nla_data(tb[SMC_GEN_LINK_SMCR]),
			  nla_payload(tb[SMC_GEN_LINK_SMCR]));
		state = nla_u32(k[SMC_NLA_LINK_STATE]);
		printf("link %s id %u dev ", lgr_hex(*lgr_id, s),
		       nla_u8(k[SMC_NLA_LINK_ID]));
		printf("%s port %u state ",
		       nla_str(k[SMC_NLA_LINK_IB_DEV], s, sizeof(s)),
		       nla_u8(k[SMC_NLA_LINK_IB_PORT]));
		if (state < sizeof(link_states) / sizeof(link_states[0]))
			printf("%s", link_states[state]);
		else
			printf("%" PRIu32, state);
		printf(" conns %" PRIu32 "\n",
		       nla_u32(k[SMC_NLA_LINK_CONN_CNT]));
	}
}

static int
links_cmd(struct nl *nl)
{
	char buf[256];
	struct nlmsghdr *h;
	uint32_t lgr_id = 0;
	int rc;

	h = genl_msg(buf, nl->family, SMC_NETLINK_GET_LINK_SMCR, NLM_F_DUMP);
	rc = nl_send(nl, h);
	if (rc == 0)
		rc = nl_recv(nl, links_cb, &lgr_id);
	return rc;
}

/* --- pnet table -------------------------------------------------------- */

/* pnet add PNETID ETH IBDEV PORT: 0 or a negative errno. */
static int
pnet_add(struct nl *nl, const char *pnetid, const char *eth, const char *ibdev,
	 uint8_t port)
{
	char buf[512];
	struct nlmsghdr *h;
	int rc;

	h = genl_msg(buf, nl->family, SMC_PNETID_ADD, NLM_F_ACK);
	((struct genlmsghdr *)NLMSG_DATA(h))->version =
		SMCR_GENL_FAMILY_VERSION;
	nla_put(h, SMC_PNETID_NAME, pnetid, strlen(pnetid) + 1);
	nla_put(h, SMC_PNETID_ETHNAME, eth, strlen(eth) + 1);
	nla_put(h, SMC_PNETID_IBNAME, ibdev, strlen(ibdev) + 1);
	nla_put(h, SMC_PNETID_IBPORT, &port, sizeof(port));
	rc = nl_send(nl, h);
	if (rc == 0)
		rc = nl_recv(nl, NULL, NULL);
	/* the device already on a pnetid (an earlier check's entry) */
	return rc == -EEXIST ? 0 : rc;
}

int
main(int argc, char **argv)
{
	struct nl nl = {.fd = -1};
	const char *what;
	int rc;

	if (argc >= 2 &&
	    (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0))
		usage(stdout, 0);
	if (argc >= 3 && strcmp(argv[1], "ueid") == 0 &&
	    (((strcmp(argv[2], "add") == 0 || strcmp(argv[2], "del") == 0) &&
	      argc == 4) ||
	     ((strcmp(argv[2], "flush") == 0 || strcmp(argv[2], "list") == 0) &&
	      argc == 3)))
		what = "ueid";
	else if (argc >= 2 && argc <= 3 && strcmp(argv[1], "stats") == 0)
		what = "stats";
	else if ((argc == 6 || argc == 7) && strcmp(argv[1], "pnet") == 0 &&
		 strcmp(argv[2], "add") == 0)
		what = "pnet";
	else if (argc == 2 && strcmp(argv[1], "links") == 0)
		what = "links";
	else
		usage(stderr, 2);
	if (strcmp(what, "pnet") == 0) {
		size_t i, n = strlen(argv[3]);
		long port = argc == 7 ? strtol(argv[6], NULL, 10) : 1;

		for (i = 0; i < n; i++)
			if (!((argv[3][i] >= 'A' && argv[3][i] <= 'Z') ||
			      (argv[3][i] >= '0' && argv[3][i] <= '9')))
				break;
		if (n == 0 || n > 16 || i < n)
			die("PNETID \"%s\" must be 1 to 16 of A-Z 0-9",
			    argv[3]);
		if (port < 1 || port > 2)
			die("PORT must be 1 or 2");
		rc = nl_open(&nl, SMCR_GENL_FAMILY_NAME);
		if (rc == -ENOENT)
			die("no generic netlink family %s: is the smc module "
			    "loaded (modprobe smc)?",
			    SMCR_GENL_FAMILY_NAME);
		if (rc == 0)
			rc = pnet_add(&nl, argv[3], argv[4], argv[5],
				      (uint8_t)port);
		close(nl.fd);
		if (rc != 0)
			die("pnet add %s %s %s: %s", argv[3], argv[4], argv[5],
			    strerror(-rc));
		return 0;
	}
	if (argc == 4) {
		char eid[EID_LEN + 1];
		const char *why;

		if (!eid_make(eid, argv[3], &why))
			die("EID \"%s\" %s", argv[3], why);
	}
	rc = nl_open(&nl, SMC_GENL_FAMILY_NAME);
	if (rc == -ENOENT)
		die("no generic netlink family %s: is the smc module loaded "
		    "(modprobe smc)?",
		    SMC_GENL_FAMILY_NAME);
	if (rc != 0)
		die("netlink: %s", strerror(-rc));
	if (strcmp(what, "ueid") == 0)
		rc = ueid_cmd(&nl, argv[2], argc == 4 ? argv[3] : NULL);
	else if (strcmp(what, "links") == 0)
		rc = links_cmd(&nl);
	else
		rc = stats_cmd(&nl, argc == 3 ? argv[2] : NULL);
	close(nl.fd);
	if (rc != 0)
		die("%s %s: %s", argv[1], argc >= 3 ? argv[2] : "",
		    strerror(-rc));
	return 0;
}
