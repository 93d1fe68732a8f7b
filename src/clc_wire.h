/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Wire format of the CLC handshake: the messages two daemons exchange over
 * the TCP control connection to the peer port to set up a link group
 * (DESIGN.md §3), modelled on RFC 7609 and Linux net/smc/smc_clc.h.
 * docs/protocol.md describes them byte by byte.  All integers are big
 * endian; every message is framed by an 8-byte header and a 4-byte trailer
 * carrying the SMC-R eyecatcher, and has one fixed length per type.
 *
 *   PROPOSAL  client → server  our first link, limits, features, nonce
 *   ACCEPT    server → client  its first link and RMB, negotiated limits,
 *                              its nonce, MAC over the transcript
 *   CONFIRM   client → server  our first link and RMB, MAC
 *   DECLINE   either way       a CLC_DECL_* reason; fall back to TCP
 *
 * Decoders are pure functions on byte buffers (the fuzz targets call them)
 * and share one convention: they return 0, or -EPROTO after storing in
 * *decline the CLC_DECL_* code the caller sends back in its DECLINE:
 *
 *   another version in the header            CLC_DECL_VERSMISMAT
 *   max_conns outside 16..255                CLC_DECL_MAXCONNERR
 *   max_links outside 1..2                   CLC_DECL_MAXLINKERR
 *   anything else (eyecatcher, length, type,
 *   truncation, reserved bits, bad fields)   CLC_DECL_BADMSG
 *
 * On failure *out is left untouched; on success *decline is.
 */
#ifndef SMCPROXYD_CLC_WIRE_H
#define SMCPROXYD_CLC_WIRE_H

#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CLC_EYECATCHER "\xe2\xd4\xc3\xd9"      /* "SMCR" in EBCDIC */
#define CLC_EYECATCHER_SMCD "\xe2\xd4\xc3\xc4" /* "SMCD": kernel SMC-D */
#define CLC_VERSION 1

enum clc_type {
	CLC_PROPOSAL = 1,
	CLC_ACCEPT = 2,
	CLC_CONFIRM = 3,
	CLC_DECLINE = 4,
};

/* Header byte 7: version:4 | first_contact:1 | reserved:3 (MSB first). */
#define CLC_VERSION_SHIFT 4
/* ACCEPT/CONFIRM: a new link group; DECLINE: sync error, drop the LG */
#define CLC_FLAG_FIRST_CONTACT 0x08
#define CLC_FLAGS_RESERVED 0x07

#define CLC_NAME_MAX 63 /* daemon names, as CONF_NAME_MAX */
#define CLC_NONCE_LEN 32
#define CLC_MAC_LEN 32 /* HMAC-SHA-256 */
#define CLC_SYSTEM_ID_LEN 8
#define CLC_GID_LEN 16
#define CLC_MAC_ADDR_LEN 6

#define CLC_MAX_CONNS_MIN 16 /* SMC-R v2.1 negotiation range */
#define CLC_MAX_CONNS_MAX 255
#define CLC_MAX_LINKS_MIN 1
#define CLC_MAX_LINKS_MAX 2

#define CLC_MTU_MIN 1	     /* IBV_MTU_256 */
#define CLC_MTU_MAX 5	     /* IBV_MTU_4096 */
#define CLC_QPN_MIN 2	     /* QP 0 and 1 are the IB management QPs */
#define CLC_RMBE_SIZE_MAX 15 /* compressed: 1 << (15 + 14) = 512 MiB */

/* Capability/feature bits, negotiated as proposal ∩ server. */
#define CLC_FEAT_CONN_OPEN 0x00000001 /* connections opened in band (LLC) */
#define CLC_FEAT_INLINE 0x00000002    /* sender posts small sends inline */
#define CLC_FEAT_RESUME 0x00000004    /* connections move to a new group */
#define CLC_FEAT_CDC_DATA 0x00000008  /* a CDC carries a few bytes itself */
#define CLC_FEAT_ORIGIN 0x00000010    /* CONN_ORIGIN before CONN_OPEN */
#define CLC_FEAT_KNOWN                                            \
	(CLC_FEAT_CONN_OPEN | CLC_FEAT_INLINE | CLC_FEAT_RESUME | \
	 CLC_FEAT_CDC_DATA | CLC_FEAT_ORIGIN)

/*
 * Decline codes (peer_diagnosis), Linux smc_clc.h values, declared once:
 * X(name, code, description).  The 0x0a... range is smcproxyd's own:
 * reasons SMC has no code for.  The list gives the CLC_DECL_* constants,
 * their names (clc_decline_name) and a counter per code and direction
 * (stats.h); a code seen on the wire that is not listed counts as UNKNOWN.
 */
#define CLC_DECLINES(X)                                              \
	X(MEM, 0x01010000, "insufficient memory resources")          \
	X(TIMEOUT_CL, 0x02010000, "timeout waiting for CONFIRM")     \
	X(TIMEOUT_AL, 0x02020000, "timeout waiting for ADD LINK")    \
	X(CNFERR, 0x03000000, "configuration error")                 \
	X(PEERNOSMC, 0x03010000, "peer did not indicate SMC")        \
	X(IPSEC, 0x03020000, "IPsec usage")                          \
	X(NOSMCDEV, 0x03030000, "no SMC device found (R or D)")      \
	X(NOSMCDDEV, 0x03030001, "no SMC-D device found")            \
	X(NOSMCRDEV, 0x03030002, "no SMC-R device found")            \
	X(NOISM2SUPP, 0x03030003, "hardware has no ISM-V2 support")  \
	X(NOV2EXT, 0x03030004, "peer sent no clc v2 extension")      \
	X(NOV2DEXT, 0x03030005, "peer sent no clc SMC-Dv2 ext.")     \
	X(NOSEID, 0x03030006, "peer sent no SEID")                   \
	X(NOSMCD2DEV, 0x03030007, "no SMC-Dv2 device found")         \
	X(NOUEID, 0x03030008, "peer sent no UEID")                   \
	X(RELEASEERR, 0x03030009, "release version negotiation")     \
	X(MAXCONNERR, 0x0303000a, "max connections negotiation")     \
	X(MAXLINKERR, 0x0303000b, "max links negotiation")           \
	X(MODEUNSUPP, 0x03040000, "smc modes do not match (R or D)") \
	X(RMBE_EC, 0x03050000, "peer has eyecatcher in RMBE")        \
	X(OPTUNSUPP, 0x03060000, "fastopen sockopt not supported")   \
	X(DIFFPREFIX, 0x03070000, "IP prefix / subnet mismatch")     \
	X(GETVLANERR, 0x03080000, "err to get vlan id of ip device") \
	X(ISMVLANERR, 0x03090000, "err to reg vlan id on ism dev")   \
	X(NOACTLINK, 0x030a0000, "no active smc-r link in lgr")      \
	X(NOSRVLINK, 0x030b0000, "SMC-R link from srv not found")    \
	X(VERSMISMAT, 0x030c0000, "SMC version mismatch")            \
	X(MAX_DMB, 0x030d0000, "SMC-D DMB limit exceeded")           \
	X(NOROUTE, 0x030e0000, "SMC-Rv2 conn. no route to peer")     \
	X(NOINDIRECT, 0x030f0000, "SMC-Rv2 conn. indirect mismatch") \
	X(SYNCERR, 0x04000000, "synchronization error")              \
	X(PEERDECL, 0x05000000, "peer declined during handshake")    \
	X(INTERR, 0x09990000, "internal error")                      \
	X(ERR_RTOK, 0x09990001, "rtoken handling failed")            \
	X(ERR_RDYLNK, 0x09990002, "ib ready link failed")            \
	X(ERR_REGBUF, 0x09990003, "reg rdma bufs failed")            \
	X(BADMSG, 0x0a000000, "malformed or unexpected CLC")         \
	X(AUTHFAIL, 0x0a010000, "peer authentication failed")        \
	X(PEERUNKNOWN, 0x0a020000, "daemon name not a configured peer")

enum clc_decl {
#define X(name, code, desc) CLC_DECL_##name = code,
	CLC_DECLINES(X)
#undef X
};

/* Each code's place in CLC_DECLINES; CLC_DECL_NCODES for any other. */
enum clc_decl_index {
#define X(name, code, desc) CLC_DECLI_##name,
	CLC_DECLINES(X)
#undef X
		CLC_DECL_NCODES
};

struct clc_hdr {
	uint8_t eyecatcher[4]; /* CLC_EYECATCHER */
	uint8_t type;	       /* enum clc_type */
	uint16_t length;       /* whole message, header and trailer included */
	uint8_t flags;	       /* version:4 | first_contact:1 | reserved:3 */
} __attribute__((packed));
_Static_assert(sizeof(struct clc_hdr) == 8, "CLC header is 8 bytes");

struct clc_trail {
	uint8_t eyecatcher[4]; /* CLC_EYECATCHER again */
} __attribute__((packed));
_Static_assert(sizeof(struct clc_trail) == 4, "CLC trailer is 4 bytes");

/* The sender's identity and first link endpoint (smc_clc_msg_local + QP). */
struct clc_lcl {
	uint8_t system_id[8]; /* random per daemon start, "id_for_peer" */
	uint8_t gid[16];      /* first link's GID, never all zero */
	uint8_t mac[6];	      /* its MAC (RoCE), zero on InfiniBand */
	uint8_t qpn[3];	      /* its QP number, >= 2 */
	uint8_t psn[3];	      /* its initial packet sequence number */
} __attribute__((packed));
_Static_assert(sizeof(struct clc_lcl) == 36, "CLC local part is 36 bytes");

struct clc_proposal {
	struct clc_hdr hdr; /* first-contact bit 0 */
	struct clc_lcl lcl;
	uint8_t qp_mtu;	   /* enum ibv_mtu, 1..5 */
	uint8_t max_conns; /* proposed connections per LG, 16..255 */
	uint8_t max_links; /* proposed links per LG, 1..2 */
	uint8_t worker;	   /* server worker asked for, + 1; 0: any */
	uint32_t features; /* CLC_FEAT_*; unknown bits allowed */
	uint8_t nonce[32]; /* client nonce for the MACs */
	char name[64];	   /* our daemon name, 1..63 of [A-Za-z0-9._-],
				 * NUL-padded to the end */
	struct clc_trail trail;
} __attribute__((packed));
_Static_assert(sizeof(struct clc_proposal) == 152, "PROPOSAL is 152 bytes");

/* The part ACCEPT and CONFIRM share (smcr_clc_msg_accept_confirm). */
struct clc_acc_body {
	struct clc_lcl lcl;
	uint8_t rmbe_mtu;     /* rmbe_size:4 (compressed) | qp_mtu:4 */
	uint8_t max_conns;    /* negotiated, 16..255 */
	uint8_t max_links;    /* negotiated, 1..2 */
	uint8_t worker;	      /* ACCEPT: the server's worker + 1; CONFIRM: 0 */
	uint32_t features;    /* negotiated CLC_FEAT_*, known bits only */
	uint32_t rmb_rkey;    /* rkey of the sender's RMB region */
	uint32_t alert_token; /* sender's link-group token, non-zero */
	uint64_t rmb_vaddr;   /* address of the sender's RMB region */
} __attribute__((packed));
_Static_assert(sizeof(struct clc_acc_body) == 60, "accept body is 60 bytes");

struct clc_accept {
	struct clc_hdr hdr; /* first-contact bit: a new link group */
	struct clc_acc_body body;
	uint8_t nonce[32]; /* server nonce */
	uint8_t mac[32];   /* server MAC over the transcript */
	struct clc_trail trail;
} __attribute__((packed));
_Static_assert(sizeof(struct clc_accept) == 136, "ACCEPT is 136 bytes");

struct clc_confirm {
	struct clc_hdr hdr; /* first-contact bit as in the ACCEPT */
	struct clc_acc_body body;
	uint8_t mac[32]; /* client MAC over the transcript */
	struct clc_trail trail;
} __attribute__((packed));
_Static_assert(sizeof(struct clc_confirm) == 104, "CONFIRM is 104 bytes");

struct clc_decline {
	struct clc_hdr hdr; /* first-contact bit: sync error, drop the LG */
	uint8_t system_id[8];
	uint32_t peer_diagnosis; /* CLC_DECL_*, non-zero */
	uint8_t reserved[4];	 /* 0 (Linux: os_type:4, reserved) */
	struct clc_trail trail;
} __attribute__((packed));
_Static_assert(sizeof(struct clc_decline) == 28, "DECLINE is 28 bytes");

#define CLC_MSG_MAX sizeof(struct clc_proposal)

/* A link endpoint in host form. */
struct clc_link_info {
	uint8_t gid[16];
	uint8_t mac[6];
	uint32_t qpn; /* 24 bits */
	uint32_t psn; /* 24 bits */
	uint8_t mtu;  /* enum ibv_mtu */
};

struct clc_proposal_info {
	uint8_t system_id[8];
	struct clc_link_info link;
	uint8_t max_conns;
	uint8_t max_links;
	uint8_t worker; /* server worker + 1 the group is for; 0: any */
	uint32_t features;
	uint8_t nonce[32];
	char name[CLC_NAME_MAX + 1];
};

/* ACCEPT and CONFIRM; nonce is ACCEPT only (CONFIRM ignores it). */
struct clc_accept_info {
	bool first_contact;
	uint8_t system_id[8];
	struct clc_link_info link;
	uint8_t rmbe_size; /* compressed, 0..15 */
	uint8_t max_conns;
	uint8_t max_links;
	uint8_t worker; /* ACCEPT: the server's worker + 1 */
	uint32_t features;
	uint32_t rmb_rkey;
	uint32_t alert_token;
	uint64_t rmb_vaddr;
	uint8_t nonce[32];
	uint8_t mac[32];
};

struct clc_decline_info {
	bool sync_err; /* first-contact bit */
	uint8_t system_id[8];
	uint32_t diagnosis;
};

/* Which eyecatcher 4 bytes are (clc_eyecatcher). */
enum clc_eyec {
	CLC_EYEC_NONE = -1,
	CLC_EYEC_SMCR = 0,
	CLC_EYEC_SMCD = 1, /* SMC-R dialect only */
};

/*
 * The frame of a message of length bytes at buf, in either dialect: the
 * 8-byte header (eyecatcher, type, length, byte 7 = flags) and the
 * trailer's eyecatcher in its last 4 bytes.  The body is the caller's.
 * Inline, as the frame both dialects share: smcr_clc.c (the standard one's
 * codec) needs nothing of clc.c.
 */
static inline void
clc_frame_put(void *buf, uint8_t type, uint16_t length, uint8_t flags,
	      enum clc_eyec eyec)
{
	const char *e =
		eyec == CLC_EYEC_SMCD ? CLC_EYECATCHER_SMCD : CLC_EYECATCHER;
	struct clc_hdr *h = buf;
	uint8_t *b = buf;

	memcpy(h->eyecatcher, e, 4);
	h->type = type;
	h->length = htobe16(length);
	h->flags = flags;
	memcpy(b + length - sizeof(struct clc_trail), e, 4);
}

/* Which eyecatcher the 4 bytes at p are: SMCR, SMCD or none. */
static inline enum clc_eyec
clc_eyecatcher(const void *p)
{
	if (memcmp(p, CLC_EYECATCHER, 4) == 0)
		return CLC_EYEC_SMCR;
	if (memcmp(p, CLC_EYECATCHER_SMCD, 4) == 0)
		return CLC_EYEC_SMCD;
	return CLC_EYEC_NONE;
}

/* clc.c: pure encoders/decoders, used by the fuzz targets too */
int clc_hdr_check(const void *buf, size_t len, uint8_t *type, uint16_t *length,
		  uint32_t *decline);
int clc_proposal_encode(void *buf, size_t size,
			const struct clc_proposal_info *in);
int clc_proposal_decode(const void *buf, size_t len,
			struct clc_proposal_info *out, uint32_t *decline);
int clc_accept_encode(void *buf, size_t size, const struct clc_accept_info *in);
int clc_accept_decode(const void *buf, size_t len, struct clc_accept_info *out,
		      uint32_t *decline);
int clc_confirm_encode(void *buf, size_t size,
		       const struct clc_accept_info *in);
int clc_confirm_decode(const void *buf, size_t len, struct clc_accept_info *out,
		       uint32_t *decline);
int clc_decline_encode(void *buf, size_t size,
		       const struct clc_decline_info *in);
int clc_decline_decode(const void *buf, size_t len,
		       struct clc_decline_info *out, uint32_t *decline);

/*
 * The helpers below are the one home of what every layer names or sizes
 * the same way (the groups, LLC, the sessions, the control socket): pure
 * functions of the wire's values, here so that using them ties a file to
 * no module.
 */

/**
 * clc_decline_index() - The place of @code in CLC_DECLINES (its counters'
 * index), or CLC_DECL_NCODES for a code that is not listed.
 */
static inline enum clc_decl_index
clc_decline_index(uint32_t code)
{
	switch (code) {
#define X(name, value, desc)  \
	case CLC_DECL_##name: \
		return CLC_DECLI_##name;
		CLC_DECLINES(X)
#undef X
	}
	return CLC_DECL_NCODES;
}

/* "NOSMCRDEV" for CLC_DECL_NOSMCRDEV, ...; "UNKNOWN" for other codes. */
static inline const char *
clc_decline_name(uint32_t code)
{
	switch (code) {
#define X(name, value, desc)  \
	case CLC_DECL_##name: \
		return #name;
		CLC_DECLINES(X)
#undef X
	}
	return "UNKNOWN";
}

/* What code means, as smc_clc.h says; "unknown" for other codes. */
static inline const char *
clc_decline_desc(uint32_t code)
{
	switch (code) {
#define X(name, value, desc)  \
	case CLC_DECL_##name: \
		return desc;
		CLC_DECLINES(X)
#undef X
	}
	return "unknown";
}

/* Bytes of a compressed RMB element size (1 << (n + 14)); 0 if invalid. */
static inline uint64_t
clc_rmbe_bytes(uint8_t compressed)
{
	if (compressed > CLC_RMBE_SIZE_MAX)
		return 0;
	return (uint64_t)1 << (compressed + 14);
}

/*
 * The compressed size of the largest element that fits in bytes (capped
 * at CLC_RMBE_SIZE_MAX), or -EINVAL below 16 KiB.
 */
static inline int
clc_rmbe_compress(uint64_t bytes)
{
	int n = 0;

	if (bytes < clc_rmbe_bytes(0))
		return -EINVAL;
	while (n < CLC_RMBE_SIZE_MAX &&
	       clc_rmbe_bytes((uint8_t)(n + 1)) <= bytes)
		n++;
	return n;
}

#endif /* SMCPROXYD_CLC_WIRE_H */
