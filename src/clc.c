// SPDX-License-Identifier: BSD-2-Clause
/*
 * CLC codec: builds and checks the link-group handshake messages of
 * clc_wire.h.  Pure functions on byte buffers, no I/O: the control
 * connection code reads the 8-byte header, asks clc_hdr_check() how long
 * the message is, reads exactly that and hands it to the decoder of the
 * type it expects.  Each decoder checks every byte before anything is
 * used, so a decoded message re-encodes to the very same bytes; the
 * encoders refuse what the decoders would refuse.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "clc_wire.h"

static const struct {
	uint32_t code;
	const char *name;
} clc_decline_names[] = {
	{CLC_DECL_MEM, "MEM"},
	{CLC_DECL_TIMEOUT_CL, "TIMEOUT_CL"},
	{CLC_DECL_TIMEOUT_AL, "TIMEOUT_AL"},
	{CLC_DECL_CNFERR, "CNFERR"},
	{CLC_DECL_PEERNOSMC, "PEERNOSMC"},
	{CLC_DECL_IPSEC, "IPSEC"},
	{CLC_DECL_NOSMCDEV, "NOSMCDEV"},
	{CLC_DECL_NOSMCDDEV, "NOSMCDDEV"},
	{CLC_DECL_NOSMCRDEV, "NOSMCRDEV"},
	{CLC_DECL_NOISM2SUPP, "NOISM2SUPP"},
	{CLC_DECL_NOV2EXT, "NOV2EXT"},
	{CLC_DECL_NOV2DEXT, "NOV2DEXT"},
	{CLC_DECL_NOSEID, "NOSEID"},
	{CLC_DECL_NOSMCD2DEV, "NOSMCD2DEV"},
	{CLC_DECL_NOUEID, "NOUEID"},
	{CLC_DECL_RELEASEERR, "RELEASEERR"},
	{CLC_DECL_MAXCONNERR, "MAXCONNERR"},
	{CLC_DECL_MAXLINKERR, "MAXLINKERR"},
	{CLC_DECL_MODEUNSUPP, "MODEUNSUPP"},
	{CLC_DECL_RMBE_EC, "RMBE_EC"},
	{CLC_DECL_OPTUNSUPP, "OPTUNSUPP"},
	{CLC_DECL_DIFFPREFIX, "DIFFPREFIX"},
	{CLC_DECL_GETVLANERR, "GETVLANERR"},
	{CLC_DECL_ISMVLANERR, "ISMVLANERR"},
	{CLC_DECL_NOACTLINK, "NOACTLINK"},
	{CLC_DECL_NOSRVLINK, "NOSRVLINK"},
	{CLC_DECL_VERSMISMAT, "VERSMISMAT"},
	{CLC_DECL_MAX_DMB, "MAX_DMB"},
	{CLC_DECL_NOROUTE, "NOROUTE"},
	{CLC_DECL_NOINDIRECT, "NOINDIRECT"},
	{CLC_DECL_SYNCERR, "SYNCERR"},
	{CLC_DECL_PEERDECL, "PEERDECL"},
	{CLC_DECL_INTERR, "INTERR"},
	{CLC_DECL_ERR_RTOK, "ERR_RTOK"},
	{CLC_DECL_ERR_RDYLNK, "ERR_RDYLNK"},
	{CLC_DECL_ERR_REGBUF, "ERR_REGBUF"},
	{CLC_DECL_BADMSG, "BADMSG"},
	{CLC_DECL_AUTHFAIL, "AUTHFAIL"},
	{CLC_DECL_PEERUNKNOWN, "PEERUNKNOWN"},
};

/* The fixed length of each type; 0 for a type we do not know. */
static size_t
clc_type_length(uint8_t type)
{
	switch (type) {
	case CLC_PROPOSAL:
		return sizeof(struct clc_proposal);
	case CLC_ACCEPT:
		return sizeof(struct clc_accept);
	case CLC_CONFIRM:
		return sizeof(struct clc_confirm);
	case CLC_DECLINE:
		return sizeof(struct clc_decline);
	}
	return 0;
}

static void
clc_put24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

static uint32_t
clc_get24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static bool
clc_all_zero(const void *p, size_t len)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < len; i++)
		if (b[i] != 0)
			return false;
	return true;
}

static void
clc_hdr_fill(struct clc_hdr *h, enum clc_type type, bool first_contact)
{
	memcpy(h->eyecatcher, CLC_EYECATCHER, 4);
	h->type = (uint8_t)type;
	h->length = htobe16((uint16_t)clc_type_length((uint8_t)type));
	h->flags = CLC_VERSION << CLC_VERSION_SHIFT |
		   (first_contact ? CLC_FLAG_FIRST_CONTACT : 0);
}

/*
 * Check the 8-byte header at the start of buf: eyecatcher, version, a
 * known type and exactly that type's length.  Enough for a reader to know
 * how many bytes to read.  0 with *type and *length set, or -EPROTO with
 * *decline set (VERSMISMAT for another version, else BADMSG).
 */
int
clc_hdr_check(const void *buf, size_t len, uint8_t *type, uint16_t *length,
	      uint32_t *decline)
{
	const struct clc_hdr *h = buf;
	size_t want;

	if (len < sizeof(*h) || memcmp(h->eyecatcher, CLC_EYECATCHER, 4)) {
		*decline = CLC_DECL_BADMSG;
		return -EPROTO;
	}
	/* A newer peer may lay out everything else differently. */
	if (h->flags >> CLC_VERSION_SHIFT != CLC_VERSION) {
		*decline = CLC_DECL_VERSMISMAT;
		return -EPROTO;
	}
	want = clc_type_length(h->type);
	if (want == 0 || be16toh(h->length) != want ||
	    (h->flags & CLC_FLAGS_RESERVED)) {
		*decline = CLC_DECL_BADMSG;
		return -EPROTO;
	}
	*type = h->type;
	*length = (uint16_t)want;
	return 0;
}

/* Header of a whole message of the expected type, and its trailer. */
static int
clc_msg_check(const void *buf, size_t len, enum clc_type expect,
	      uint32_t *decline)
{
	const uint8_t *b = buf;
	uint16_t length;
	uint8_t type;
	int rc;

	rc = clc_hdr_check(buf, len, &type, &length, decline);
	if (rc)
		return rc;
	if (type != expect || len != length ||
	    memcmp(b + len - sizeof(struct clc_trail), CLC_EYECATCHER, 4)) {
		*decline = CLC_DECL_BADMSG;
		return -EPROTO;
	}
	return 0;
}

/*
 * Whether s[0..len) is a daemon or export name: 1..CLC_NAME_MAX of
 * [A-Za-z0-9._-], the same rule as the fallback hello.
 */
bool
clc_name_valid(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > CLC_NAME_MAX)
		return false;
	for (i = 0; i < len; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-'))
			return false;
	}
	return true;
}

/* Bytes of a compressed RMB element size (1 << (n + 14)); 0 if invalid. */
uint64_t
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
int
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

static uint32_t
clc_link_check(const struct clc_link_info *l)
{
	if (clc_all_zero(l->gid, sizeof(l->gid)) || l->qpn < CLC_QPN_MIN ||
	    l->qpn > 0xffffff || l->psn > 0xffffff || l->mtu < CLC_MTU_MIN ||
	    l->mtu > CLC_MTU_MAX)
		return CLC_DECL_BADMSG;
	return 0;
}

static uint32_t
clc_limits_check(uint8_t max_conns, uint8_t max_links)
{
	/* max_conns <= 255 by its type */
	if (max_conns < CLC_MAX_CONNS_MIN)
		return CLC_DECL_MAXCONNERR;
	if (max_links < CLC_MAX_LINKS_MIN || max_links > CLC_MAX_LINKS_MAX)
		return CLC_DECL_MAXLINKERR;
	return 0;
}

static void
clc_lcl_put(struct clc_lcl *w, const uint8_t system_id[8],
	    const struct clc_link_info *l)
{
	memcpy(w->system_id, system_id, sizeof(w->system_id));
	memcpy(w->gid, l->gid, sizeof(w->gid));
	memcpy(w->mac, l->mac, sizeof(w->mac));
	clc_put24(w->qpn, l->qpn);
	clc_put24(w->psn, l->psn);
}

static void
clc_lcl_get(const struct clc_lcl *w, uint8_t system_id[8],
	    struct clc_link_info *l)
{
	memcpy(system_id, w->system_id, sizeof(w->system_id));
	memcpy(l->gid, w->gid, sizeof(l->gid));
	memcpy(l->mac, w->mac, sizeof(l->mac));
	l->qpn = clc_get24(w->qpn);
	l->psn = clc_get24(w->psn);
}

static uint32_t
clc_proposal_check(const struct clc_proposal_info *p)
{
	uint32_t decl;
	size_t nl = strnlen(p->name, sizeof(p->name));

	if (nl == sizeof(p->name) || !clc_name_valid(p->name, nl))
		return CLC_DECL_BADMSG;
	decl = clc_link_check(&p->link);
	if (decl == 0)
		decl = clc_limits_check(p->max_conns, p->max_links);
	return decl;
}

/*
 * Build a PROPOSAL into buf (size bytes).  Its length, -ENOSPC if buf is
 * too small, -EINVAL if the decoder would refuse *in.
 */
int
clc_proposal_encode(void *buf, size_t size, const struct clc_proposal_info *in)
{
	struct clc_proposal *w = buf;

	if (size < sizeof(*w))
		return -ENOSPC;
	if (clc_proposal_check(in))
		return -EINVAL;
	memset(w, 0, sizeof(*w));
	clc_hdr_fill(&w->hdr, CLC_PROPOSAL, false);
	clc_lcl_put(&w->lcl, in->system_id, &in->link);
	w->qp_mtu = in->link.mtu;
	w->max_conns = in->max_conns;
	w->max_links = in->max_links;
	w->features = htobe32(in->features);
	memcpy(w->nonce, in->nonce, sizeof(w->nonce));
	memcpy(w->name, in->name, strlen(in->name));
	memcpy(w->trail.eyecatcher, CLC_EYECATCHER, 4);
	return (int)sizeof(*w);
}

/*
 * Decode and validate a whole PROPOSAL.  Unknown feature bits are allowed
 * (the server answers with the intersection).  0, or -EPROTO with
 * *decline set (see clc_wire.h).
 */
int
clc_proposal_decode(const void *buf, size_t len, struct clc_proposal_info *out,
		    uint32_t *decline)
{
	const struct clc_proposal *w = buf;
	struct clc_proposal_info p;
	size_t nl;
	uint32_t decl;
	int rc;

	rc = clc_msg_check(buf, len, CLC_PROPOSAL, decline);
	if (rc)
		return rc;
	memset(&p, 0, sizeof(p));
	nl = strnlen(w->name, sizeof(w->name));
	if ((w->hdr.flags & CLC_FLAG_FIRST_CONTACT) || w->reserved != 0 ||
	    nl == sizeof(w->name) ||
	    !clc_all_zero(w->name + nl, sizeof(w->name) - nl)) {
		*decline = CLC_DECL_BADMSG;
		return -EPROTO;
	}
	clc_lcl_get(&w->lcl, p.system_id, &p.link);
	p.link.mtu = w->qp_mtu;
	p.max_conns = w->max_conns;
	p.max_links = w->max_links;
	p.features = be32toh(w->features);
	memcpy(p.nonce, w->nonce, sizeof(p.nonce));
	memcpy(p.name, w->name, nl);
	decl = clc_proposal_check(&p);
	if (decl) {
		*decline = decl;
		return -EPROTO;
	}
	*out = p;
	return 0;
}

static uint32_t
clc_accept_check(const struct clc_accept_info *a)
{
	uint64_t bytes = clc_rmbe_bytes(a->rmbe_size);
	uint32_t decl;

	decl = clc_link_check(&a->link);
	if (decl)
		return decl;
	decl = clc_limits_check(a->max_conns, a->max_links);
	if (decl)
		return decl;
	/* the region must not wrap the address space */
	if (bytes == 0 || a->alert_token == 0 ||
	    (a->features & ~(uint32_t)CLC_FEAT_KNOWN) ||
	    a->rmb_vaddr > UINT64_MAX - bytes)
		return CLC_DECL_BADMSG;
	return 0;
}

static void
clc_body_put(struct clc_acc_body *w, const struct clc_accept_info *in)
{
	clc_lcl_put(&w->lcl, in->system_id, &in->link);
	w->rmbe_mtu = (uint8_t)(in->rmbe_size << 4 | in->link.mtu);
	w->max_conns = in->max_conns;
	w->max_links = in->max_links;
	w->reserved = 0;
	w->features = htobe32(in->features);
	w->rmb_rkey = htobe32(in->rmb_rkey);
	w->alert_token = htobe32(in->alert_token);
	w->rmb_vaddr = htobe64(in->rmb_vaddr);
}

/* Parse and check the shared body; the caller has checked the frame. */
static uint32_t
clc_body_get(const struct clc_acc_body *w, const struct clc_hdr *h,
	     struct clc_accept_info *a)
{
	if (w->reserved != 0)
		return CLC_DECL_BADMSG;
	a->first_contact = (h->flags & CLC_FLAG_FIRST_CONTACT) != 0;
	clc_lcl_get(&w->lcl, a->system_id, &a->link);
	a->rmbe_size = w->rmbe_mtu >> 4;
	a->link.mtu = w->rmbe_mtu & 0x0f;
	a->max_conns = w->max_conns;
	a->max_links = w->max_links;
	a->features = be32toh(w->features);
	a->rmb_rkey = be32toh(w->rmb_rkey);
	a->alert_token = be32toh(w->alert_token);
	a->rmb_vaddr = be64toh(w->rmb_vaddr);
	return clc_accept_check(a);
}

/* Build an ACCEPT into buf: its length, -ENOSPC or -EINVAL. */
int
clc_accept_encode(void *buf, size_t size, const struct clc_accept_info *in)
{
	struct clc_accept *w = buf;

	if (size < sizeof(*w))
		return -ENOSPC;
	if (clc_accept_check(in))
		return -EINVAL;
	memset(w, 0, sizeof(*w));
	clc_hdr_fill(&w->hdr, CLC_ACCEPT, in->first_contact);
	clc_body_put(&w->body, in);
	memcpy(w->nonce, in->nonce, sizeof(w->nonce));
	memcpy(w->mac, in->mac, sizeof(w->mac));
	memcpy(w->trail.eyecatcher, CLC_EYECATCHER, 4);
	return (int)sizeof(*w);
}

/* Decode and validate a whole ACCEPT.  0, or -EPROTO with *decline set. */
int
clc_accept_decode(const void *buf, size_t len, struct clc_accept_info *out,
		  uint32_t *decline)
{
	const struct clc_accept *w = buf;
	struct clc_accept_info a;
	uint32_t decl;
	int rc;

	rc = clc_msg_check(buf, len, CLC_ACCEPT, decline);
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	decl = clc_body_get(&w->body, &w->hdr, &a);
	if (decl) {
		*decline = decl;
		return -EPROTO;
	}
	memcpy(a.nonce, w->nonce, sizeof(a.nonce));
	memcpy(a.mac, w->mac, sizeof(a.mac));
	*out = a;
	return 0;
}

/* Build a CONFIRM into buf (in->nonce is not sent): length or -errno. */
int
clc_confirm_encode(void *buf, size_t size, const struct clc_accept_info *in)
{
	struct clc_confirm *w = buf;

	if (size < sizeof(*w))
		return -ENOSPC;
	if (clc_accept_check(in))
		return -EINVAL;
	memset(w, 0, sizeof(*w));
	clc_hdr_fill(&w->hdr, CLC_CONFIRM, in->first_contact);
	clc_body_put(&w->body, in);
	memcpy(w->mac, in->mac, sizeof(w->mac));
	memcpy(w->trail.eyecatcher, CLC_EYECATCHER, 4);
	return (int)sizeof(*w);
}

/*
 * Decode and validate a whole CONFIRM; out->nonce is zeroed.  0, or
 * -EPROTO with *decline set.
 */
int
clc_confirm_decode(const void *buf, size_t len, struct clc_accept_info *out,
		   uint32_t *decline)
{
	const struct clc_confirm *w = buf;
	struct clc_accept_info a;
	uint32_t decl;
	int rc;

	rc = clc_msg_check(buf, len, CLC_CONFIRM, decline);
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	decl = clc_body_get(&w->body, &w->hdr, &a);
	if (decl) {
		*decline = decl;
		return -EPROTO;
	}
	memcpy(a.mac, w->mac, sizeof(a.mac));
	*out = a;
	return 0;
}

/* Build a DECLINE into buf: its length, -ENOSPC, or -EINVAL for code 0. */
int
clc_decline_encode(void *buf, size_t size, const struct clc_decline_info *in)
{
	struct clc_decline *w = buf;

	if (size < sizeof(*w))
		return -ENOSPC;
	if (in->diagnosis == 0)
		return -EINVAL;
	memset(w, 0, sizeof(*w));
	clc_hdr_fill(&w->hdr, CLC_DECLINE, in->sync_err);
	memcpy(w->system_id, in->system_id, sizeof(w->system_id));
	w->peer_diagnosis = htobe32(in->diagnosis);
	memcpy(w->trail.eyecatcher, CLC_EYECATCHER, 4);
	return (int)sizeof(*w);
}

/*
 * Decode a whole DECLINE.  Any non-zero diagnosis is accepted (a newer
 * peer may know more codes).  0, or -EPROTO with *decline set: a caller
 * never answers a DECLINE, but counts the reason.
 */
int
clc_decline_decode(const void *buf, size_t len, struct clc_decline_info *out,
		   uint32_t *decline)
{
	const struct clc_decline *w = buf;
	int rc;

	rc = clc_msg_check(buf, len, CLC_DECLINE, decline);
	if (rc)
		return rc;
	if (w->peer_diagnosis == 0 ||
	    !clc_all_zero(w->reserved, sizeof(w->reserved))) {
		*decline = CLC_DECL_BADMSG;
		return -EPROTO;
	}
	out->sync_err = (w->hdr.flags & CLC_FLAG_FIRST_CONTACT) != 0;
	memcpy(out->system_id, w->system_id, sizeof(out->system_id));
	out->diagnosis = be32toh(w->peer_diagnosis);
	return 0;
}

/* "NOSMCRDEV" for CLC_DECL_NOSMCRDEV, ...; "UNKNOWN" for other codes. */
const char *
clc_decline_name(uint32_t code)
{
	size_t i;

	for (i = 0;
	     i < sizeof(clc_decline_names) / sizeof(clc_decline_names[0]); i++)
		if (clc_decline_names[i].code == code)
			return clc_decline_names[i].name;
	return "UNKNOWN";
}
