/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Wire format of the LLC messages: link-layer control sent as 44-byte RDMA
 * SENDs on a link of a link group (DESIGN.md §3), laid out as Linux
 * net/smc/smc_llc.c does for SMC-R v1, plus this project's in-band
 * connection setup (DESIGN.md §2): CONN_OPEN, CONN_ACCEPT, CONN_REJECT,
 * CONN_RESUME and CONN_ORIGIN.
 * docs/protocol.md has the byte tables.  All integers are big endian.
 *
 * Every message is exactly LLC_MSG_LEN bytes: a 4-byte header and a
 * 40-byte payload.  Reserved bytes and bits are sent as zero and refused
 * otherwise (both ends are smcproxyd; a new layout gets a new type).
 * llc_msg_decode() returns 0 or -EPROTO: a peer that sends anything
 * malformed gets its link group torn down (counted by the caller).
 */
#ifndef SMCPROXYD_LLC_WIRE_H
#define SMCPROXYD_LLC_WIRE_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "clc_wire.h"
#include "fallback_wire.h"
#include "wire.h"

#define LLC_MSG_LEN WIRE_MSG_LEN
#define LLC_DATA_LEN 40

enum llc_type {
	LLC_CONFIRM_LINK = 0x01,
	LLC_ADD_LINK = 0x02,
	LLC_ADD_LINK_CONT = 0x03,
	LLC_DELETE_LINK = 0x04,
	LLC_REQ_ADD_LINK = 0x05, /* SMC-R dialect, v2 form only */
	LLC_CONFIRM_RKEY = 0x06,
	LLC_TEST_LINK = 0x07,
	LLC_DELETE_RKEY = 0x09,
	/* smcproxyd's own; SMC uses neither 0x8x nor the CDC's 0xfe */
	LLC_CONN_OPEN = 0x80,
	LLC_CONN_ACCEPT = 0x81, /* always with LLC_FLAG_RESP */
	LLC_CONN_REJECT = 0x82, /* always with LLC_FLAG_RESP */
	LLC_CONN_RESUME = 0x83, /* request, and its answer with RESP */
	LLC_CONN_ORIGIN = 0x84, /* the client of the CONN_OPEN that follows */
};

/* Header flags; which are allowed depends on the type (llc.c). */
#define LLC_FLAG_RESP 0x80	       /* a response; else a request */
#define LLC_FLAG_NO_RMBE_EYEC 0x03     /* CONFIRM_LINK: always set */
#define LLC_FLAG_ADD_LINK_REJ 0x40     /* ADD_LINK response: rejected */
#define LLC_FLAG_DEL_LINK_ALL 0x40     /* DELETE_LINK: the whole LG */
#define LLC_FLAG_DEL_LINK_ORDERLY 0x20 /* DELETE_LINK: orderly */
#define LLC_FLAG_RKEY_NEG 0x20	       /* rkey response: failed */
#define LLC_FLAG_RKEY_RETRY 0x10       /* CONFIRM_RKEY neg. response: retry */
#define LLC_FLAG_ORIGIN_INET6 0x01     /* CONN_ORIGIN: IPv6 addresses */

#define LLC_REJ_RSN_NO_ALT_PATH 1 /* ADD_LINK reject reason */

/* DELETE_LINK reasons (smc_llc.h SMC_LLC_DEL_*). */
#define LLC_DEL_LOST_PATH 0x00010000
#define LLC_DEL_OP_INIT_TERM 0x00020000
#define LLC_DEL_PROG_INIT_TERM 0x00030000
#define LLC_DEL_PROT_VIOL 0x00040000
#define LLC_DEL_NO_ASYM_NEEDED 0x00050000
#define LLC_DEL_NOLNK 0x00100000 /* response: link unknown */
#define LLC_DEL_NOLGR 0x00200000 /* response: link group unknown */

#define LLC_RKEYS_PER_CONT 2 /* rkey triples in one ADD_LINK_CONT */
#define LLC_RKEYS_PER_MSG 3  /* rtokens in one CONFIRM_RKEY */
#define LLC_DEL_RKEY_MAX 8   /* rkeys in one DELETE_RKEY */
/*
 * Export names in CONN_OPEN: 1..22 bytes, NUL-padded (no NUL when 22
 * long).  Config names may be up to 63: a longer export cannot be opened
 * over RDMA, and the config check is to refuse it for RDMA with a clear
 * error rather than let connections fall back silently.
 */
#define LLC_EXPORT_MAX 22

struct llc_hdr {
	uint8_t type;	  /* enum llc_type */
	uint8_t length;	  /* LLC_MSG_LEN */
	uint8_t reserved; /* reserved:4 | add_link_rej_rsn:4 */
	uint8_t flags;	  /* LLC_FLAG_* */
} __attribute__((packed));
_Static_assert(sizeof(struct llc_hdr) == 4, "LLC header is 4 bytes");

struct llc_confirm_link {
	struct llc_hdr hd; /* flags: NO_RMBE_EYEC, RESP */
	uint8_t sender_mac[6];
	uint8_t sender_gid[16];	  /* non-zero */
	uint8_t sender_qp_num[3]; /* >= 2 */
	uint8_t link_num;	  /* link id, 1..255 */
	uint8_t link_uid[4];	  /* link group id, opaque */
	uint8_t max_links;	  /* 1..2 */
	uint8_t max_conns;	  /* 16..255 */
	uint8_t reserved[8];
} __attribute__((packed));
_Static_assert(sizeof(struct llc_confirm_link) == 44, "CONFIRM_LINK size");

struct llc_add_link {
	struct llc_hdr hd; /* flags: RESP, ADD_LINK_REJ (responses) */
	uint8_t sender_mac[6];
	uint8_t reserved2[2];
	uint8_t sender_gid[16];	  /* non-zero unless rejected */
	uint8_t sender_qp_num[3]; /* >= 2 unless rejected */
	uint8_t link_num;	  /* 1..255 unless rejected */
	uint8_t mtu; /* reserved:4 | qp_mtu:4 (1..5 unless rejected) */
	uint8_t initial_psn[3];
	uint8_t reserved[8];
} __attribute__((packed));
_Static_assert(sizeof(struct llc_add_link) == 44, "ADD_LINK size");

struct llc_rkey_triple {
	uint32_t rmb_key;     /* rkey on the existing link */
	uint32_t rmb_key_new; /* rkey of the same RMB on the new link */
	uint64_t rmb_vaddr_new;
} __attribute__((packed));
_Static_assert(sizeof(struct llc_rkey_triple) == 16, "rkey triple size");

struct llc_add_link_cont {
	struct llc_hdr hd; /* flags: RESP */
	uint8_t link_num;  /* 1..255 */
	uint8_t num_rkeys; /* rkeys still to send, this one included */
	uint8_t reserved2[2];
	struct llc_rkey_triple rt[2]; /* min(num_rkeys, 2) used, rest 0 */
	uint8_t reserved[4];
} __attribute__((packed));
_Static_assert(sizeof(struct llc_add_link_cont) == 44, "ADD_LINK_CONT size");

struct llc_delete_link {
	struct llc_hdr hd; /* flags: RESP, DEL_LINK_ALL, DEL_LINK_ORDERLY */
	uint8_t link_num;  /* 1..255; any with DEL_LINK_ALL */
	uint32_t reason;   /* LLC_DEL_*; 0 only in a response */
	uint8_t reserved[35];
} __attribute__((packed));
_Static_assert(sizeof(struct llc_delete_link) == 44, "DELETE_LINK size");

struct llc_rtoken {
	uint8_t num_link; /* [0]: rtokens that follow; else link id */
	uint32_t rmb_key;
	uint64_t rmb_vaddr;
} __attribute__((packed));
_Static_assert(sizeof(struct llc_rtoken) == 13, "rtoken is 13 bytes");

struct llc_confirm_rkey {
	struct llc_hdr hd;	     /* flags: RESP, RKEY_NEG, RKEY_RETRY */
	struct llc_rtoken rtoken[3]; /* [0] for the link this is sent on */
	uint8_t reserved;
} __attribute__((packed));
_Static_assert(sizeof(struct llc_confirm_rkey) == 44, "CONFIRM_RKEY size");

struct llc_test_link {
	struct llc_hdr hd;     /* flags: RESP */
	uint8_t user_data[16]; /* echoed in the response */
	uint8_t reserved[24];
} __attribute__((packed));
_Static_assert(sizeof(struct llc_test_link) == 44, "TEST_LINK size");

struct llc_delete_rkey {
	struct llc_hdr hd; /* flags: RESP, RKEY_NEG (iff err_mask) */
	uint8_t num_rkeys; /* 1..8 */
	uint8_t err_mask;  /* response: bit 7 - i = rkey[i] failed */
	uint8_t reserved[2];
	uint32_t rkey[8]; /* num_rkeys used, rest 0 */
	uint8_t reserved2[4];
} __attribute__((packed));
_Static_assert(sizeof(struct llc_delete_rkey) == 44, "DELETE_RKEY size");

struct llc_conn_open {
	struct llc_hdr hd; /* flags: none */
	uint32_t token;	   /* opener's alert token, non-zero */
	uint32_t rmb_rkey; /* opener's RMB element */
	uint64_t rmb_vaddr;
	uint8_t rmbe_size; /* compressed, 0..15: 1 << (n + 14) bytes */
	uint8_t reserved;
	char export[22]; /* 1..22 of [A-Za-z0-9._-], NUL-padded */
} __attribute__((packed));
_Static_assert(sizeof(struct llc_conn_open) == 44, "CONN_OPEN size");

struct llc_conn_accept {
	struct llc_hdr hd;     /* flags: RESP */
	uint32_t opener_token; /* from the CONN_OPEN */
	uint32_t token;	       /* acceptor's alert token, non-zero */
	uint32_t rmb_rkey;     /* acceptor's RMB element */
	uint64_t rmb_vaddr;
	uint8_t rmbe_size; /* compressed, 0..15 */
	uint8_t reserved[3];
	uint8_t resume_id[16]; /* random; all zero: not resumable */
} __attribute__((packed));
_Static_assert(sizeof(struct llc_conn_accept) == 44, "CONN_ACCEPT size");

/*
 * A connection whose link group ended moves to a new group of the same
 * two daemons: the opener asks (no RESP), the acceptor answers (RESP),
 * or refuses with CONN_REJECT (opener_token = the asker's token).  The
 * RMB elements stay where they were (vaddr and size as at the open);
 * rkey is the sender's element's on the link this goes on.  Offsets
 * count bytes of each direction since the open.
 */
#define LLC_RESUME_ID_LEN 16
struct llc_conn_resume {
	struct llc_hdr hd;     /* flags: RESP in the answer */
	uint8_t resume_id[16]; /* from the CONN_ACCEPT */
	uint32_t token;	       /* sender's alert token, non-zero */
	uint32_t rmb_rkey;     /* sender's RMB element, on this link */
	uint64_t rx_off;       /* bytes the sender received */
	uint64_t tx_fin;       /* bytes of the sender's known to be in the
				* receiver's RMB element */
} __attribute__((packed));
_Static_assert(sizeof(struct llc_conn_resume) == 44, "CONN_RESUME size");

/*
 * With CLC_FEAT_ORIGIN, right before a CONN_OPEN on the same link: the
 * client connection it carries, from src to dst (the address the client
 * connected to), for an export's PROXY protocol header.  Laid out as the
 * fallback hello's origin part (fallback_wire.h) but for the family,
 * which is LLC_FLAG_ORIGIN_INET6 (else IPv4: the first 4 bytes of each
 * address, the rest zero).  Ports are not 0.
 */
struct llc_conn_origin {
	struct llc_hdr hd; /* flags: ORIGIN_INET6 */
	uint32_t token;	   /* the opener's, as in its CONN_OPEN */
	uint16_t src_port;
	uint16_t dst_port;
	uint8_t src[16];
	uint8_t dst[16];
} __attribute__((packed));
_Static_assert(sizeof(struct llc_conn_origin) == 44, "CONN_ORIGIN size");

struct llc_conn_reject {
	struct llc_hdr hd;     /* flags: RESP */
	uint32_t opener_token; /* from the CONN_OPEN */
	uint32_t reason;       /* non-zero: a fallback RESULT code */
	uint8_t reserved[32];
} __attribute__((packed));
_Static_assert(sizeof(struct llc_conn_reject) == 44, "CONN_REJECT size");

/* Decoded messages: one host-order struct per type. */
struct llc_confirm_link_info {
	uint8_t mac[6];
	uint8_t gid[16];
	uint32_t qpn;
	uint8_t link_num;
	uint8_t link_uid[4];
	uint8_t max_links;
	uint8_t max_conns;
};

struct llc_add_link_info {
	uint8_t mac[6];
	uint8_t gid[16];
	uint32_t qpn;
	uint8_t link_num;
	uint8_t mtu;
	uint32_t psn;
	uint8_t rej_rsn; /* with LLC_FLAG_ADD_LINK_REJ: 1..15, else 0 */
};

struct llc_add_link_cont_info {
	uint8_t link_num;
	uint8_t num_rkeys;
	struct {
		uint32_t rkey;
		uint32_t rkey_new;
		uint64_t vaddr_new;
	} rt[LLC_RKEYS_PER_CONT];
};

struct llc_delete_link_info {
	uint8_t link_num;
	uint32_t reason;
};

struct llc_confirm_rkey_info {
	uint8_t num_rkeys; /* rtokens for other links, 0..2 */
	struct {
		uint8_t link_id; /* [0]: 0 (the link it arrived on) */
		uint32_t rkey;
		uint64_t vaddr;
	} rt[LLC_RKEYS_PER_MSG];
};

struct llc_test_link_info {
	uint8_t user_data[16];
};

struct llc_delete_rkey_info {
	uint8_t num_rkeys;
	uint8_t err_mask;
	uint32_t rkey[LLC_DEL_RKEY_MAX];
};

struct llc_conn_open_info {
	uint32_t token;
	uint32_t rmb_rkey;
	uint64_t rmb_vaddr;
	uint8_t rmbe_size;
	char export[LLC_EXPORT_MAX + 1];
};

struct llc_conn_accept_info {
	uint32_t opener_token;
	uint32_t token;
	uint32_t rmb_rkey;
	uint64_t rmb_vaddr;
	uint8_t rmbe_size;
	uint8_t resume_id[LLC_RESUME_ID_LEN];
};

struct llc_conn_resume_info {
	uint8_t resume_id[LLC_RESUME_ID_LEN];
	uint32_t token;
	uint32_t rmb_rkey;
	uint64_t rx_off;
	uint64_t tx_fin;
};

struct llc_conn_reject_info {
	uint32_t opener_token;
	uint32_t reason;
};

/* The family is the message's flag; ports in network order, as on the wire. */
struct llc_conn_origin_info {
	uint32_t token;
	struct fb_origin origin;
};

struct llc_info {
	uint8_t type;  /* enum llc_type */
	uint8_t flags; /* LLC_FLAG_* */
	union {
		struct llc_confirm_link_info confirm_link;
		struct llc_add_link_info add_link;
		struct llc_add_link_cont_info add_link_cont;
		struct llc_delete_link_info delete_link;
		struct llc_confirm_rkey_info confirm_rkey;
		struct llc_test_link_info test_link;
		struct llc_delete_rkey_info delete_rkey;
		struct llc_conn_open_info conn_open;
		struct llc_conn_accept_info conn_accept;
		struct llc_conn_reject_info conn_reject;
		struct llc_conn_resume_info conn_resume;
		struct llc_conn_origin_info conn_origin;
	};
};

/*
 * The SMC-R dialect: LLC as Linux speaks it on SMC-Rv2 link groups
 * (docs/protocol.md, "Standard SMC-R (kernel peers)").  Byte 0 carries a
 * version nibble (0x2_: v2 form; 0x0_: a v1-form message, which Linux
 * also takes on v2 groups), and a v2 form's bytes 1-2 are its length as a
 * u16 in the sender's host order: little endian from x86 Linux, and so
 * from us.  ADD_LINK requests and accepting responses carry their rkeys
 * in an extension (72 + 16 n bytes); REQ_ADD_LINK is v2 only (28 + 16 n);
 * everything else is 44 bytes with the v1 layouts above.  Reserved bytes
 * are sent as zero and, as Linux does, not looked at.
 */
#define LLC_V2_FORM 0x20 /* byte 0: llc_version:4 | llc_type:4 */
#define LLC_V2_TYPE_MASK 0x0f
#define LLC_V2_RKEYS_MAX 255 /* rkey triples in one ADD_LINK */
#define LLC_V2_GIDS_MAX 2    /* GIDs in one REQ_ADD_LINK (GID_LIST_SIZE) */

struct llc_v2_hdr {
	uint8_t type;	 /* LLC_V2_FORM | enum llc_type */
	uint16_t length; /* whole message, host order (little endian) */
	uint8_t flags;
} __attribute__((packed));
_Static_assert(sizeof(struct llc_v2_hdr) == 4, "LLC v2 header is 4 bytes");

/* After a v2 ADD_LINK's 44 bytes, then num_rkeys llc_rkey_triples. */
struct llc_add_link_v2_ext {
	uint8_t direct; /* v2_direct:1 | reserved:7 */
	uint8_t reserved;
	uint8_t client_target_gid[16];
	uint8_t reserved2[8];
	uint16_t num_rkeys; /* host order (little endian), 0..255 */
} __attribute__((packed));
_Static_assert(sizeof(struct llc_add_link_v2_ext) == 28, "ADD_LINK ext. size");
#define LLC_V2_ADD_LINK_LEN(n)                              \
	(LLC_MSG_LEN + sizeof(struct llc_add_link_v2_ext) + \
	 (n) * sizeof(struct llc_rkey_triple))
#define LLC_V2_MSG_MAX LLC_V2_ADD_LINK_LEN(LLC_V2_RKEYS_MAX)
/* the longest we send: what one TX slot takes (CDC_MSG_LEN + CDC_DATA_MAX,
 * wr.c), 62 rkeys; Linux sends up to LLC_V2_MSG_MAX */
#define LLC_V2_TX_RKEYS 62
#define LLC_V2_TX_MAX LLC_V2_ADD_LINK_LEN(LLC_V2_TX_RKEYS)

/* REQ_ADD_LINK: then gid_cnt GIDs of 16 bytes. */
struct llc_req_add_link {
	struct llc_v2_hdr hd; /* flags: RESP */
	uint8_t reserved[20];
	uint8_t gid_cnt; /* 1..2 */
	uint8_t reserved2[3];
} __attribute__((packed));
_Static_assert(sizeof(struct llc_req_add_link) == 28, "REQ_ADD_LINK size");

/* A standard-dialect message in host form. */
struct llc_v2_info {
	uint8_t form; /* 2: v2 header; 1: v1 header (the kernel takes both) */
	struct llc_info m; /* m.type without the version nibble */
	/* ADD_LINK in v2 form, request or accepting response */
	bool direct;
	uint8_t target_gid[16];
	uint16_t num_rkeys;
	struct {
		uint32_t rkey;
		uint32_t rkey_new;
		uint64_t vaddr_new;
	} rt[LLC_V2_RKEYS_MAX];
	/* REQ_ADD_LINK */
	uint8_t gid_cnt;
	uint8_t gids[LLC_V2_GIDS_MAX][16];
};

/* llc.c: pure encoder/decoder, used by the fuzz targets too */
int llc_msg_encode(void *buf, size_t size, const struct llc_info *in);
int llc_msg_decode(const void *buf, size_t len, struct llc_info *out);
int llc_v2_encode(void *buf, size_t size, const struct llc_v2_info *in);
int llc_v2_decode(const void *buf, size_t len, struct llc_v2_info *out);
const char *llc_type_name(uint8_t type);
const char *llc_delete_reason_name(uint32_t reason);

#endif /* SMCPROXYD_LLC_WIRE_H */
