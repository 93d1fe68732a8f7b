/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Wire format of standard CLC, version 2: the handshake Linux net/smc runs
 * on the TCP connection of every SMC-R connection (one per connection, not
 * per link group), which smcproxyd speaks to kernel peers (DESIGN.md §10).
 * The kernel is the specification: Linux 6.1 and 6.12 smc_clc.h and
 * smc_clc.c, as shared/reference/smc-interop.md §1.2 reads them, and the
 * byte captures of tests/fixtures/smcr.  docs/protocol.md, "Standard SMC-R
 * (kernel peers)", has the byte tables.  All integers are big endian.
 *
 * The frame is the native CLC's (clc_wire.h: struct clc_hdr, struct
 * clc_trail, the eyecatchers, the CLC_DECL_* codes); header byte 7 reads
 * differently:
 *
 *   version:4 | typev2:2 | typev1:2     (MSB first)
 *
 * typev1 and typev2 are what a PROPOSAL offers in each version (R, D,
 * both, or neither); in ACCEPT and CONFIRM typev1 is the mode (R) and
 * typev2's high bit the first-contact flag; in DECLINE that bit says
 * "sync error".  Unlike the native messages, PROPOSAL and CONFIRM have
 * variable lengths (EIDs, IPv6 prefixes, ISM GIDs, the client's GIDs).
 *
 * Decoders check the frame and every length and offset exactly (the
 * kernel's arithmetic, smc_clc_msg_prop_valid), refuse what the kernel
 * would not send, and skip reserved bytes as the kernel does, so a message
 * whose reserved bytes are zero re-encodes to the same bytes.  Each returns
 * 0, or -EPROTO after storing in *decline the CLC_DECL_* code for the
 * DECLINE to answer with:
 *
 *   another version                          CLC_DECL_VERSMISMAT
 *   a release-1 max_conns below 16           CLC_DECL_MAXCONNERR
 *   a release-1 max_links outside 1..2       CLC_DECL_MAXLINKERR
 *   a proposal without EIDs for SMC-Rv2      CLC_DECL_NOUEID
 *   anything else                            CLC_DECL_BADMSG
 *
 * On failure *out is left untouched.
 */
#ifndef SMCPROXYD_SMCR_CLC_WIRE_H
#define SMCPROXYD_SMCR_CLC_WIRE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "clc_wire.h"

#define SMCR_CLC_VERSION 2
#define SMCR_CLC_VERSION_V1 1 /* only in a DECLINE */

/* Header byte 7, as in Linux's smc_clc_msg_hdr. */
#define SMCR_CLC_TYPEV2_SHIFT 2
#define SMCR_CLC_TYPE_MASK 0x03
enum smcr_clc_smc_type {
	SMCR_CLC_TYPE_R = 0, /* SMC-R */
	SMCR_CLC_TYPE_D = 1, /* SMC-D */
	SMCR_CLC_TYPE_N = 2, /* neither */
	SMCR_CLC_TYPE_B = 3, /* both */
};

#define SMCR_CLC_EID_LEN 32	   /* blank-padded [A-Z0-9.-] */
#define SMCR_CLC_EID_MAX 8	   /* user EIDs in one proposal */
#define SMCR_CLC_IPV6_PREFIX_MAX 8 /* SMC_CLC_MAX_V6_PREFIX */
#define SMCR_CLC_ISM_GID_MAX 8	   /* SMCD_CLC_MAX_V2_GID_ENTRIES */
#define SMCR_CLC_GIDS_MAX 2 /* GID_LIST_SIZE: the client's GIDs in CONFIRM */
#define SMCR_CLC_HOSTNAME_LEN 32 /* blank-padded */
#define SMCR_CLC_RMBE_IDX_MIN 1	 /* Linux always sends 1 */

#define SMCR_CLC_OS_ZOS 1
#define SMCR_CLC_OS_LINUX 2
#define SMCR_CLC_OS_AIX 3

/* SMC-Rv2 releases: 0 (Linux 5.16-6.5), 1 ("v2.1", Linux 6.6 on). */
#define SMCR_CLC_RELEASE_1 1

/* v2 extension flag byte: release:4 | reserved:3 | seid:1 */
#define SMCR_CLC_FLAG_SEID 0x01
#define SMCR_CLC_RELEASE_SHIFT 4
/* first-contact extension byte 0: v2_direct:1 | reserved:7 */
#define SMCR_CLC_FCE_DIRECT 0x80
/* first-contact extension byte 1: os_type:4 | release:4 */
#define SMCR_CLC_FCE_OS_SHIFT 4

/* PROPOSAL: the fixed part, smc_clc_msg_proposal + smc_clc_msg_smcd. */
struct smcr_clc_proposal_hdr {
	struct clc_hdr hdr;
	uint8_t system_id[8];	/* v1 area, all zero without v1 */
	uint8_t gid[16];	/* v1 GID */
	uint8_t mac[6];		/* v1 MAC */
	uint16_t iparea_offset; /* 0 without v1, else 40: prefix at 80 */
	/* SMC-D area */
	uint64_t ism_gid;	/* v1 ISM GID */
	uint16_t ism_chid;	/* v1 ISM CHID */
	uint16_t v2_ext_offset; /* v2 extension at byte 52 + this */
	uint8_t vendor_oui[3];	/* 6.12; reserved before */
	uint8_t vendor_exp_options[5];
	uint8_t reserved[20];
} __attribute__((packed));
_Static_assert(sizeof(struct smcr_clc_proposal_hdr) == 80,
	       "proposal base size");
#define SMCR_CLC_V2_EXT_BASE 52	  /* v2_ext_offset counts from here */
#define SMCR_CLC_IPAREA_OFFSET 40 /* with v1: the SMC-D area's size */
_Static_assert(sizeof(struct smcr_clc_proposal_hdr) -
			       offsetof(struct smcr_clc_proposal_hdr,
					ism_gid) ==
		       SMCR_CLC_IPAREA_OFFSET,
	       "the v1 prefix area follows the SMC-D area");

/* v1 IP prefix area (only when v1 is offered), then the IPv6 prefixes. */
struct smcr_clc_prefix_area {
	uint32_t outgoing_subnet; /* IPv4 network */
	uint8_t prefix_len;
	uint8_t reserved[2];
	uint8_t ipv6_cnt; /* 0..8 */
} __attribute__((packed));
_Static_assert(sizeof(struct smcr_clc_prefix_area) == 8, "prefix area size");

struct smcr_clc_ipv6_prefix {
	uint8_t prefix[16];
	uint8_t len;
} __attribute__((packed));
_Static_assert(sizeof(struct smcr_clc_ipv6_prefix) == 17, "IPv6 prefix size");

/* v2 extension (when v2 is offered), then eid_cnt EIDs of 32 bytes. */
struct smcr_clc_v2_ext {
	uint8_t eid_cnt;     /* 1..8 for SMC-Rv2 */
	uint8_t ism_gid_cnt; /* SMC-Dv2 only */
	uint8_t reserved;
	uint8_t flag; /* release:4 | reserved:3 | seid:1 */
	uint8_t reserved2[2];
	uint16_t smcd_v2_ext_offset; /* from the byte after this field */
	uint8_t roce_gid[16];	     /* the client's RoCE v2 GID */
	uint8_t max_conns;	     /* release 1: per link group, 16..255 */
	uint8_t max_links;	     /* release 1: 1..2 */
	uint16_t feature_mask;	     /* release 1 */
	uint8_t reserved3[12];
} __attribute__((packed));
_Static_assert(sizeof(struct smcr_clc_v2_ext) == 40, "v2 extension size");
#define SMCR_CLC_SMCD_EXT_BASE 8 /* smcd_v2_ext_offset counts from here */

/* SMC-Dv2 extension (when v2 offers D), then ism_gid_cnt GID/CHIDs. */
struct smcr_clc_smcd_v2_ext {
	uint8_t system_eid[32];
	uint8_t reserved[16];
} __attribute__((packed));
_Static_assert(sizeof(struct smcr_clc_smcd_v2_ext) == 48, "SMC-Dv2 ext. size");

struct smcr_clc_ism_gid_chid {
	uint64_t gid;
	uint16_t chid;
} __attribute__((packed));
_Static_assert(sizeof(struct smcr_clc_ism_gid_chid) == 10, "ISM GID/CHID size");

/* ACCEPT and CONFIRM: smcr_clc_msg_accept_confirm with the v2 EID. */
struct smcr_clc_accept {
	struct clc_hdr hdr; /* first contact: typev2 bit 0b10 */
	uint8_t system_id[8];
	uint8_t gid[16]; /* the sender's RoCE v2 GID of the link */
	uint8_t mac[6];
	uint8_t qpn[3];
	uint32_t rmb_rkey;
	uint8_t rmbe_idx; /* RMB element, from 1 */
	uint32_t alert_token;
	uint8_t rmbe_mtu; /* rmbe_size:4 (compressed) | qp_mtu:4 */
	uint8_t reserved;
	uint64_t rmb_vaddr;
	uint8_t reserved2;
	uint8_t psn[3];
	uint8_t eid[32]; /* the negotiated EID */
	uint8_t reserved3[8];
} __attribute__((packed));
_Static_assert(sizeof(struct smcr_clc_accept) == 104, "ACCEPT fixed part size");

/* First-contact extension (smc_clc_first_contact_ext, 6.12's v2x form). */
struct smcr_clc_fce {
	uint8_t direct;	    /* v2_direct:1 | reserved:7 */
	uint8_t os_release; /* os_type:4 | release:4 */
	uint8_t reserved[2];
	uint8_t hostname[32];
	uint8_t max_conns; /* release 1; reserved in 6.1 */
	uint8_t max_links;
	uint16_t feature_mask;
	uint32_t vendor_exp_options;
	uint8_t reserved2[8];
} __attribute__((packed));
_Static_assert(sizeof(struct smcr_clc_fce) == 52, "first-contact ext. size");

/* CONFIRM with first contact: the client's GIDs follow the extension. */
struct smcr_clc_gid_ext {
	uint8_t gid_cnt; /* 1..2 */
	uint8_t reserved[3];
} __attribute__((packed));
_Static_assert(sizeof(struct smcr_clc_gid_ext) == 4, "GID list header size");

struct smcr_clc_decline {
	struct clc_hdr hdr; /* first contact bit: sync error */
	uint8_t system_id[8];
	uint32_t peer_diagnosis;
	uint8_t os_type; /* os_type:4 | reserved:4 */
	uint8_t reserved[3];
	uint32_t peer_diagnosis_v2[4]; /* v2 only */
	struct clc_trail trail;
} __attribute__((packed));
_Static_assert(sizeof(struct smcr_clc_decline) == 44, "DECLINE v2 size");
#define SMCR_CLC_DECLINE_V1_LEN 28

#define SMCR_CLC_ACCEPT_LEN \
	(sizeof(struct smcr_clc_accept) + sizeof(struct clc_trail))
#define SMCR_CLC_ACCEPT_FC_LEN \
	(SMCR_CLC_ACCEPT_LEN + sizeof(struct smcr_clc_fce))
#define SMCR_CLC_PROPOSAL_MAX                                             \
	(sizeof(struct smcr_clc_proposal_hdr) +                           \
	 sizeof(struct smcr_clc_prefix_area) +                            \
	 SMCR_CLC_IPV6_PREFIX_MAX * sizeof(struct smcr_clc_ipv6_prefix) + \
	 sizeof(struct smcr_clc_v2_ext) +                                 \
	 SMCR_CLC_EID_MAX * SMCR_CLC_EID_LEN +                            \
	 sizeof(struct smcr_clc_smcd_v2_ext) +                            \
	 SMCR_CLC_ISM_GID_MAX * sizeof(struct smcr_clc_ism_gid_chid) +    \
	 sizeof(struct clc_trail))
#define SMCR_CLC_CONFIRM_MAX                                        \
	(SMCR_CLC_ACCEPT_FC_LEN + sizeof(struct smcr_clc_gid_ext) + \
	 SMCR_CLC_GIDS_MAX * CLC_GID_LEN)
/* the longest message of any type: a reader's buffer */
#define SMCR_CLC_MSG_MAX SMCR_CLC_PROPOSAL_MAX
_Static_assert(SMCR_CLC_PROPOSAL_MAX == 652, "longest PROPOSAL");
_Static_assert(SMCR_CLC_CONFIRM_MAX == 196, "longest CONFIRM");

/* A PROPOSAL in host form. */
struct smcr_clc_proposal_info {
	bool smcd_eyecatcher; /* "SMCD" framing rather than "SMCR" */
	uint8_t typev1;	      /* enum smcr_clc_smc_type: offered in v1 */
	uint8_t typev2;	      /* offered in v2 */
	uint8_t system_id[8]; /* v1 area: zero without v1 (Linux) */
	uint8_t gid[16];
	uint8_t mac[6];
	uint64_t ism_gid;
	uint16_t ism_chid;
	uint8_t vendor_oui[3];
	uint8_t vendor_exp_options[5];
	/* v1 prefix area, iff typev1 != N */
	uint32_t outgoing_subnet;
	uint8_t prefix_len;
	uint8_t ipv6_cnt;
	struct {
		uint8_t prefix[16];
		uint8_t len;
	} ipv6[SMCR_CLC_IPV6_PREFIX_MAX];
	/* v2 extension, iff typev2 != N */
	uint8_t release;
	bool seid;
	uint8_t roce_gid[16];
	uint8_t max_conns;
	uint8_t max_links;
	uint16_t feature_mask;
	uint8_t eid_cnt;
	uint8_t eid[SMCR_CLC_EID_MAX][SMCR_CLC_EID_LEN];
	/* SMC-Dv2 extension, iff typev2 is D or B */
	uint8_t system_eid[SMCR_CLC_EID_LEN];
	uint8_t ism_gid_cnt;
	struct {
		uint64_t gid;
		uint16_t chid;
	} ism[SMCR_CLC_ISM_GID_MAX];
};

/* ACCEPT or CONFIRM in host form (SMC-R). */
struct smcr_clc_accept_info {
	bool first_contact;
	uint8_t system_id[8];
	uint8_t gid[16];
	uint8_t mac[6];
	uint32_t qpn;
	uint32_t rmb_rkey;
	uint8_t rmbe_idx;
	uint32_t alert_token;
	uint8_t rmbe_size; /* compressed, 0..15 */
	uint8_t mtu;	   /* enum ibv_mtu, 1..5 */
	uint64_t rmb_vaddr;
	uint32_t psn;
	uint8_t eid[SMCR_CLC_EID_LEN];
	/* first-contact extension, iff first_contact */
	bool direct;
	uint8_t os_type;
	uint8_t release;
	uint8_t hostname[SMCR_CLC_HOSTNAME_LEN];
	uint8_t max_conns;
	uint8_t max_links;
	uint16_t feature_mask;
	uint32_t vendor_exp_options;
	/* CONFIRM with first contact: the client's GIDs */
	uint8_t gid_cnt;
	uint8_t gids[SMCR_CLC_GIDS_MAX][CLC_GID_LEN];
};

struct smcr_clc_decline_info {
	bool smcd_eyecatcher;
	uint8_t version; /* 1 (28 bytes) or 2 (44 bytes) */
	bool sync_err;	 /* first-contact bit */
	uint8_t system_id[8];
	uint32_t diagnosis; /* CLC_DECL_*, non-zero */
	uint8_t os_type;
	uint32_t diagnosis_v2[4]; /* version 2 only */
};

/* smcr_clc.c: pure encoders/decoders, used by the fuzz target too */
int smcr_clc_hdr_check(const void *buf, size_t len, uint8_t *type,
		       uint16_t *length, uint32_t *decline);
int smcr_clc_proposal_encode(void *buf, size_t size,
			     const struct smcr_clc_proposal_info *in);
int smcr_clc_proposal_decode(const void *buf, size_t len,
			     struct smcr_clc_proposal_info *out,
			     uint32_t *decline);
int smcr_clc_accept_encode(void *buf, size_t size,
			   const struct smcr_clc_accept_info *in);
int smcr_clc_accept_decode(const void *buf, size_t len,
			   struct smcr_clc_accept_info *out, uint32_t *decline);
int smcr_clc_confirm_encode(void *buf, size_t size,
			    const struct smcr_clc_accept_info *in);
int smcr_clc_confirm_decode(const void *buf, size_t len,
			    struct smcr_clc_accept_info *out,
			    uint32_t *decline);
int smcr_clc_decline_encode(void *buf, size_t size,
			    const struct smcr_clc_decline_info *in);
int smcr_clc_decline_decode(const void *buf, size_t len,
			    struct smcr_clc_decline_info *out,
			    uint32_t *decline);

/*
 * An EID as the kernel takes it (smc_clc_ueid_valid): 1 to 32 characters
 * of [A-Z0-9.-], the first a letter or a digit, padded with blanks.
 * Inline, so that conf.c checks kernel_smc.ueids by the same rule without
 * linking the codec.
 */
static inline bool
smcr_clc_eid_valid(const uint8_t eid[SMCR_CLC_EID_LEN])
{
	size_t n = SMCR_CLC_EID_LEN, i;

	while (n > 0 && eid[n - 1] == ' ')
		n--;
	if (n == 0)
		return false;
	for (i = 0; i < n; i++) {
		uint8_t c = eid[i];
		bool alnum = (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');

		if (!alnum && (i == 0 || (c != '.' && c != '-')))
			return false;
	}
	return true;
}

/* The wire form of the EID string s (blank-padded): 0, or -EINVAL. */
static inline int
smcr_clc_eid_put(uint8_t eid[SMCR_CLC_EID_LEN], const char *s)
{
	uint8_t w[SMCR_CLC_EID_LEN];
	size_t n = strlen(s);

	if (n > SMCR_CLC_EID_LEN)
		return -EINVAL;
	memset(w, ' ', sizeof(w));
	memcpy(w, s, n);
	if (!smcr_clc_eid_valid(w))
		return -EINVAL;
	memcpy(eid, w, sizeof(w));
	return 0;
}

#endif /* SMCPROXYD_SMCR_CLC_WIRE_H */
