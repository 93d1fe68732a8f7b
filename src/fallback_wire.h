/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Wire format of the fallback hello: the handshake at the start of a TCP
 * connection from a rule-side daemon to a peer's port that carries one
 * client connection.  docs/protocol.md describes it.  All integers are
 * big endian; every message starts with the 8-byte header below, modelled
 * on SMC's CLC header (EBCDIC eyecatcher, type, length of the whole
 * message).
 *
 *   HELLO      rule → export   nonce, flags, our name, export name
 *   CHALLENGE  export → rule   nonce, MAC(key, "s", HELLO, nonce)
 *   PROOF      rule → export   MAC(key, "c", HELLO, CHALLENGE)
 *   RESULT     export → rule   0 = relaying from here, else a reason
 *
 * An open's HELLO names the client connection it carries (fb_origin), for
 * an export that hands it to its target in a PROXY protocol header.
 *
 * Without a key on the export side, HELLO is answered by RESULT directly.
 */
#ifndef SMCPROXYD_FALLBACK_WIRE_H
#define SMCPROXYD_FALLBACK_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FB_EYECATCHER "\xe2\xd4\xc3\xc6" /* "SMCF" in EBCDIC */
#define FB_VERSION 1

enum fb_type {
	FB_HELLO = 1,
	FB_CHALLENGE = 2,
	FB_PROOF = 3,
	FB_RESULT = 4,
	FB_RESUMED = 5, /* after RESULT 0 to a resume: where both resume */
};

#define FB_FLAG_AUTH 0x01   /* the sender has a key for this peer */
#define FB_FLAG_RESUME 0x02 /* resume a connection: fb_resume follows */
#define FB_FLAG_ORIGIN 0x04 /* the client connection: fb_origin follows */

struct fb_hdr {
	uint8_t eyecatcher[4];
	uint8_t version;
	uint8_t type;
	uint16_t length; /* whole message, header included */
} __attribute__((packed));
_Static_assert(sizeof(struct fb_hdr) == 8, "fallback header is 8 bytes");

struct fb_hello {
	struct fb_hdr hdr;
	uint8_t nonce[32];
	uint8_t flags;
	uint8_t name_len;
	uint8_t export_len;
	uint8_t reserved;
	/* name_len bytes of our name, then export_len bytes of export */
} __attribute__((packed));
_Static_assert(sizeof(struct fb_hello) == 44, "hello is 44 bytes + names");

struct fb_challenge {
	struct fb_hdr hdr;
	uint8_t nonce[32];
	uint8_t mac[32];
} __attribute__((packed));
_Static_assert(sizeof(struct fb_challenge) == 72, "challenge is 72 bytes");

struct fb_proof {
	struct fb_hdr hdr;
	uint8_t mac[32];
} __attribute__((packed));
_Static_assert(sizeof(struct fb_proof) == 40, "proof is 40 bytes");

struct fb_result {
	struct fb_hdr hdr;
	uint32_t code; /* 0 = ok, else a close reason code (FB_RSN_*) */
	uint32_t reserved;
} __attribute__((packed));
_Static_assert(sizeof(struct fb_result) == 16, "result is 16 bytes");

/*
 * After the names of a HELLO with FB_FLAG_RESUME: the connection whose
 * link group ended, and the sender's counts (as in LLC CONN_RESUME).
 */
struct fb_resume {
	uint8_t resume_id[16];
	uint64_t rx_off; /* bytes the sender received */
	uint64_t tx_fin; /* bytes of its own known to be in the peer's RMB */
	uint8_t worker;	 /* the peer's worker that has it, + 1; 0: unknown */
	uint8_t reserved[7];
} __attribute__((packed));
_Static_assert(sizeof(struct fb_resume) == 40, "resume part is 40 bytes");

struct fb_resumed {
	struct fb_hdr hdr;
	uint64_t rx_off; /* where the export side's receiving resumes */
	uint64_t tx_fin; /* and its sending */
} __attribute__((packed));
_Static_assert(sizeof(struct fb_resumed) == 24, "resumed is 24 bytes");

/*
 * After the names (and the resume part) of a HELLO with FB_FLAG_ORIGIN:
 * the client connection the rule side accepted, from src to dst (the
 * address the client connected to).  An IPv4 address fills the first 4
 * bytes of its field, the rest zero; ports are not 0.
 */
#define FB_ORIGIN_INET 4
#define FB_ORIGIN_INET6 6
struct fb_origin {
	uint8_t family; /* FB_ORIGIN_INET or FB_ORIGIN_INET6 */
	uint8_t reserved[3];
	uint16_t src_port;
	uint16_t dst_port;
	uint8_t src[16];
	uint8_t dst[16];
} __attribute__((packed));
_Static_assert(sizeof(struct fb_origin) == 40, "origin part is 40 bytes");

#define FB_HELLO_MAX                                                   \
	(sizeof(struct fb_hello) + 2 * 63 + sizeof(struct fb_resume) + \
	 sizeof(struct fb_origin))
#define FB_MSG_MAX FB_HELLO_MAX

/* A decoded HELLO: names NUL-terminated. */
struct fb_hello_info {
	uint8_t nonce[32];
	uint8_t flags;
	char name[64];
	char export[64];
	/* with FB_FLAG_RESUME */
	uint8_t resume_id[16];
	uint64_t rx_off, tx_fin;
	uint8_t worker;
	/* with FB_FLAG_ORIGIN: as on the wire */
	struct fb_origin origin;
};

/* fallback.c: pure encoders/decoders, used by the fuzz targets too */
int fb_hdr_check(const void *buf, size_t len, uint8_t *type, uint16_t *length);
size_t fb_hello_encode(void *buf, const uint8_t nonce[32], uint8_t flags,
		       const char *name, const char *export);
size_t fb_hello_resume_encode(void *buf, const uint8_t nonce[32], uint8_t flags,
			      const char *name, const char *export,
			      const struct fb_hello_info *resume);
size_t fb_hello_origin_add(void *buf, size_t len,
			   const struct fb_origin *origin);
struct addr;
int fb_origin_set(struct fb_origin *o, const struct addr *src,
		  const struct addr *dst);
void fb_origin_get(const struct fb_origin *o, struct addr *src,
		   struct addr *dst);

/*
 * Whether o, as received, is one fb_origin_set could have made (the
 * fallback hello's, and LLC CONN_ORIGIN's).  Inline: the LLC codec checks
 * it by the same rule without linking the fallback.
 */
static inline bool
fb_origin_valid(const struct fb_origin *o)
{
	static const uint8_t zero[16];

	if (o->reserved[0] || o->reserved[1] || o->reserved[2] ||
	    o->src_port == 0 || o->dst_port == 0)
		return false;
	if (o->family == FB_ORIGIN_INET6)
		return true;
	return o->family == FB_ORIGIN_INET && !memcmp(o->src + 4, zero, 12) &&
	       !memcmp(o->dst + 4, zero, 12);
}
size_t fb_resumed_encode(void *buf, uint64_t rx_off, uint64_t tx_fin);
int fb_resumed_decode(const void *buf, size_t len, uint64_t *rx_off,
		      uint64_t *tx_fin);
int fb_hello_decode(const void *buf, size_t len, struct fb_hello_info *out);
size_t fb_result_encode(void *buf, uint32_t code);
int fb_result_decode(const void *buf, size_t len, uint32_t *code);
int fb_challenge_decode(const void *buf, size_t len, const uint8_t **nonce,
			const uint8_t **mac);
int fb_proof_decode(const void *buf, size_t len, const uint8_t **mac);

#endif /* SMCPROXYD_FALLBACK_WIRE_H */
