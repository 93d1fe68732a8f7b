// SPDX-License-Identifier: BSD-2-Clause
/*
 * Standard CLC: the codec of smcr_clc_wire.h, the CLC v2 that Linux's SMC-R
 * speaks (DESIGN.md §10).  Pure functions on byte buffers, no I/O, like the
 * native codec in clc.c, whose frame (header, trailer, eyecatchers) and
 * decline codes it shares: a reader peeks 8 bytes, asks smcr_clc_hdr_check()
 * how long the message is, reads exactly that and hands it to the decoder
 * of the type it expects.
 *
 * Every decoder works in two steps: parse (wire to host, checking the
 * frame and that every count, offset and length adds up exactly as the
 * kernel computes it in smc_clc_msg_prop_valid and smc_clc_send_*), then
 * check (the values, on the host form).  The encoders run the same check
 * first and refuse with -EINVAL what a decoder would refuse, so what we
 * send always decodes.  Reserved bytes are sent as zero and not looked at,
 * as the kernel does: 6.1 and 6.12 differ in what is reserved.
 */
#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "wire.h"
#include "clc_wire.h"
#include "smcr_clc_wire.h"

#define SMCR_CLC_TRAIL_LEN sizeof(struct clc_trail)

static bool
smcr_clc_offers_r(uint8_t type)
{
	return type == SMCR_CLC_TYPE_R || type == SMCR_CLC_TYPE_B;
}

static bool
smcr_clc_offers_d(uint8_t type)
{
	return type == SMCR_CLC_TYPE_D || type == SMCR_CLC_TYPE_B;
}

/* The length bounds of each type and header version; false if unknown. */
static bool
smcr_clc_type_bounds(uint8_t type, uint8_t version, size_t *min, size_t *max)
{
	switch (type) {
	case CLC_PROPOSAL:
		*min = sizeof(struct smcr_clc_proposal_hdr) +
		       SMCR_CLC_TRAIL_LEN;
		*max = SMCR_CLC_PROPOSAL_MAX;
		return true;
	case CLC_ACCEPT:
		*min = SMCR_CLC_ACCEPT_LEN;
		*max = SMCR_CLC_ACCEPT_FC_LEN;
		return true;
	case CLC_CONFIRM:
		*min = SMCR_CLC_ACCEPT_LEN;
		*max = SMCR_CLC_CONFIRM_MAX;
		return true;
	case CLC_DECLINE:
		*min = *max = version == SMCR_CLC_VERSION_V1 ?
				      SMCR_CLC_DECLINE_V1_LEN :
				      sizeof(struct smcr_clc_decline);
		return true;
	}
	return false;
}

/*
 * Check the 8-byte header at the start of buf: an SMC-R or SMC-D
 * eyecatcher, version 2 (a DECLINE may be version 1), a known type and a
 * length that type can have.  Enough for a reader to know how many bytes
 * to read.  0 with *type and *length set, or -EPROTO with *decline set.
 */
int
smcr_clc_hdr_check(const void *buf, size_t len, uint8_t *type, uint16_t *length,
		   uint32_t *decline)
{
	const struct clc_hdr *h = buf;
	uint8_t version;
	size_t min, max, l;

	if (len < sizeof(*h) ||
	    clc_eyecatcher(h->eyecatcher) == CLC_EYEC_NONE ||
	    !smcr_clc_type_bounds(h->type, h->flags >> CLC_VERSION_SHIFT, &min,
				  &max)) {
		*decline = CLC_DECL_BADMSG;
		return -EPROTO;
	}
	version = h->flags >> CLC_VERSION_SHIFT;
	if (version != SMCR_CLC_VERSION &&
	    !(version == SMCR_CLC_VERSION_V1 && h->type == CLC_DECLINE)) {
		*decline = CLC_DECL_VERSMISMAT;
		return -EPROTO;
	}
	l = be16toh(h->length);
	if (l < min || l > max) {
		*decline = CLC_DECL_BADMSG;
		return -EPROTO;
	}
	*type = h->type;
	*length = (uint16_t)l;
	return 0;
}

/*
 * A whole message of the expected type: header, exactly its length, and
 * the trailer with the header's eyecatcher.  0 with *eyec set, or -EPROTO.
 */
static int
smcr_clc_msg_check(const void *buf, size_t len, uint8_t expect,
		   enum clc_eyec *eyec, uint32_t *decline)
{
	const uint8_t *b = buf;
	uint16_t length;
	uint8_t type;
	int rc;

	rc = smcr_clc_hdr_check(buf, len, &type, &length, decline);
	if (rc)
		return rc;
	*eyec = clc_eyecatcher(b);
	if (type != expect || len != length ||
	    clc_eyecatcher(b + len - SMCR_CLC_TRAIL_LEN) != *eyec) {
		*decline = CLC_DECL_BADMSG;
		return -EPROTO;
	}
	return 0;
}

/* Negotiation limits of release 1 (smc_clc_srv_v2x_features_validate). */
static uint32_t
smcr_clc_limits_check(uint8_t release, uint8_t max_conns, uint8_t max_links)
{
	if (release < SMCR_CLC_RELEASE_1)
		return 0;
	if (max_conns < CLC_MAX_CONNS_MIN)
		return CLC_DECL_MAXCONNERR;
	if (max_links < CLC_MAX_LINKS_MIN || max_links > CLC_MAX_LINKS_MAX)
		return CLC_DECL_MAXLINKERR;
	return 0;
}

static uint32_t
smcr_clc_proposal_check(const struct smcr_clc_proposal_info *p)
{
	unsigned int i;

	if (p->typev1 > SMCR_CLC_TYPE_B || p->typev2 > SMCR_CLC_TYPE_B ||
	    (p->typev1 == SMCR_CLC_TYPE_N && p->typev2 == SMCR_CLC_TYPE_N))
		return CLC_DECL_BADMSG;
	if (p->typev1 != SMCR_CLC_TYPE_N &&
	    p->ipv6_cnt > SMCR_CLC_IPV6_PREFIX_MAX)
		return CLC_DECL_BADMSG;
	if (p->typev2 == SMCR_CLC_TYPE_N)
		return 0;
	if (p->release > 15 || p->eid_cnt > SMCR_CLC_EID_MAX ||
	    p->ism_gid_cnt >
		    (smcr_clc_offers_d(p->typev2) ? SMCR_CLC_ISM_GID_MAX : 0))
		return CLC_DECL_BADMSG;
	for (i = 0; i < p->eid_cnt; i++)
		if (!smcr_clc_eid_valid(p->eid[i]))
			return CLC_DECL_BADMSG;
	if (!smcr_clc_offers_r(p->typev2))
		return 0;
	/* SMC-Rv2 is scoped by EIDs: the kernel never proposes it without */
	if (p->eid_cnt == 0)
		return CLC_DECL_NOUEID;
	if (wire_all_zero(p->roce_gid, sizeof(p->roce_gid)))
		return CLC_DECL_BADMSG;
	return smcr_clc_limits_check(p->release, p->max_conns, p->max_links);
}

/* The byte length of the PROPOSAL *p encodes to. */
static size_t
smcr_clc_proposal_len(const struct smcr_clc_proposal_info *p)
{
	size_t len = sizeof(struct smcr_clc_proposal_hdr) + SMCR_CLC_TRAIL_LEN;

	if (p->typev1 != SMCR_CLC_TYPE_N)
		len += sizeof(struct smcr_clc_prefix_area) +
		       p->ipv6_cnt * sizeof(struct smcr_clc_ipv6_prefix);
	if (p->typev2 != SMCR_CLC_TYPE_N)
		len += sizeof(struct smcr_clc_v2_ext) +
		       p->eid_cnt * SMCR_CLC_EID_LEN;
	if (smcr_clc_offers_d(p->typev2))
		len += sizeof(struct smcr_clc_smcd_v2_ext) +
		       p->ism_gid_cnt * sizeof(struct smcr_clc_ism_gid_chid);
	return len;
}

/*
 * Build a PROPOSAL into buf (size bytes).  Its length, -ENOSPC if buf is
 * too small, -EINVAL if the decoder would refuse *in.
 */
int
smcr_clc_proposal_encode(void *buf, size_t size,
			 const struct smcr_clc_proposal_info *in)
{
	struct smcr_clc_proposal_hdr *w = buf;
	uint8_t *b = buf;
	size_t len, off, ext = 0;
	unsigned int i;

	if (smcr_clc_proposal_check(in))
		return -EINVAL;
	len = smcr_clc_proposal_len(in);
	if (size < len)
		return -ENOSPC;
	memset(b, 0, len);
	clc_frame_put(b, CLC_PROPOSAL, (uint16_t)len,
		      (uint8_t)(SMCR_CLC_VERSION << CLC_VERSION_SHIFT |
				in->typev2 << SMCR_CLC_TYPEV2_SHIFT |
				in->typev1),
		      in->smcd_eyecatcher ? CLC_EYEC_SMCD : CLC_EYEC_SMCR);
	memcpy(w->system_id, in->system_id, sizeof(w->system_id));
	memcpy(w->gid, in->gid, sizeof(w->gid));
	memcpy(w->mac, in->mac, sizeof(w->mac));
	w->ism_gid = htobe64(in->ism_gid);
	w->ism_chid = htobe16(in->ism_chid);
	memcpy(w->vendor_oui, in->vendor_oui, sizeof(w->vendor_oui));
	memcpy(w->vendor_exp_options, in->vendor_exp_options,
	       sizeof(w->vendor_exp_options));
	off = sizeof(*w);
	if (in->typev1 != SMCR_CLC_TYPE_N) {
		struct smcr_clc_prefix_area *pa = (void *)(b + off);

		w->iparea_offset = htobe16(SMCR_CLC_IPAREA_OFFSET);
		pa->outgoing_subnet = htobe32(in->outgoing_subnet);
		pa->prefix_len = in->prefix_len;
		pa->ipv6_cnt = in->ipv6_cnt;
		off += sizeof(*pa);
		for (i = 0; i < in->ipv6_cnt; i++) {
			struct smcr_clc_ipv6_prefix *p6 = (void *)(b + off);

			memcpy(p6->prefix, in->ipv6[i].prefix,
			       sizeof(p6->prefix));
			p6->len = in->ipv6[i].len;
			off += sizeof(*p6);
		}
	}
	if (in->typev2 != SMCR_CLC_TYPE_N) {
		struct smcr_clc_v2_ext *v2 = (void *)(b + off);

		ext = off;
		w->v2_ext_offset =
			htobe16((uint16_t)(off - SMCR_CLC_V2_EXT_BASE));
		v2->eid_cnt = in->eid_cnt;
		v2->ism_gid_cnt = in->ism_gid_cnt;
		v2->flag = (uint8_t)(in->release << SMCR_CLC_RELEASE_SHIFT |
				     (in->seid ? SMCR_CLC_FLAG_SEID : 0));
		memcpy(v2->roce_gid, in->roce_gid, sizeof(v2->roce_gid));
		v2->max_conns = in->max_conns;
		v2->max_links = in->max_links;
		v2->feature_mask = htobe16(in->feature_mask);
		off += sizeof(*v2);
		for (i = 0; i < in->eid_cnt; i++, off += SMCR_CLC_EID_LEN)
			memcpy(b + off, in->eid[i], SMCR_CLC_EID_LEN);
	}
	if (smcr_clc_offers_d(in->typev2)) {
		struct smcr_clc_v2_ext *v2 = (void *)(b + ext);
		struct smcr_clc_smcd_v2_ext *d = (void *)(b + off);

		v2->smcd_v2_ext_offset =
			htobe16((uint16_t)(off - ext - SMCR_CLC_SMCD_EXT_BASE));
		memcpy(d->system_eid, in->system_eid, sizeof(d->system_eid));
		off += sizeof(*d);
		for (i = 0; i < in->ism_gid_cnt; i++) {
			struct smcr_clc_ism_gid_chid *g = (void *)(b + off);

			g->gid = htobe64(in->ism[i].gid);
			g->chid = htobe16(in->ism[i].chid);
			off += sizeof(*g);
		}
	}
	return (int)len;
}

/*
 * Decode and validate a whole PROPOSAL: every area where its offset says
 * and where the kernel puts it, nothing missing, nothing left over.
 * 0, or -EPROTO with *decline set (see smcr_clc_wire.h).
 */
int
smcr_clc_proposal_decode(const void *buf, size_t len,
			 struct smcr_clc_proposal_info *out, uint32_t *decline)
{
	const struct smcr_clc_proposal_hdr *w = buf;
	const uint8_t *b = buf;
	struct smcr_clc_proposal_info p;
	enum clc_eyec eyec;
	size_t off, ext = 0, end = len - SMCR_CLC_TRAIL_LEN;
	unsigned int i;
	uint32_t decl;
	int rc;

	rc = smcr_clc_msg_check(buf, len, CLC_PROPOSAL, &eyec, decline);
	if (rc)
		return rc;
	memset(&p, 0, sizeof(p));
	p.smcd_eyecatcher = eyec == CLC_EYEC_SMCD;
	p.typev1 = w->hdr.flags & SMCR_CLC_TYPE_MASK;
	p.typev2 = w->hdr.flags >> SMCR_CLC_TYPEV2_SHIFT & SMCR_CLC_TYPE_MASK;
	memcpy(p.system_id, w->system_id, sizeof(p.system_id));
	memcpy(p.gid, w->gid, sizeof(p.gid));
	memcpy(p.mac, w->mac, sizeof(p.mac));
	p.ism_gid = be64toh(w->ism_gid);
	p.ism_chid = be16toh(w->ism_chid);
	memcpy(p.vendor_oui, w->vendor_oui, sizeof(p.vendor_oui));
	memcpy(p.vendor_exp_options, w->vendor_exp_options,
	       sizeof(p.vendor_exp_options));
	off = sizeof(*w);
	/* the v1 prefix area follows the SMC-D area iff v1 is offered */
	if (be16toh(w->iparea_offset) !=
	    (p.typev1 == SMCR_CLC_TYPE_N ? 0 : SMCR_CLC_IPAREA_OFFSET))
		goto bad;
	if (p.typev1 != SMCR_CLC_TYPE_N) {
		const struct smcr_clc_prefix_area *pa = (const void *)(b + off);

		if (end - off < sizeof(*pa))
			goto bad;
		p.outgoing_subnet = be32toh(pa->outgoing_subnet);
		p.prefix_len = pa->prefix_len;
		p.ipv6_cnt = pa->ipv6_cnt;
		off += sizeof(*pa);
		if (p.ipv6_cnt > SMCR_CLC_IPV6_PREFIX_MAX ||
		    end - off <
			    p.ipv6_cnt * sizeof(struct smcr_clc_ipv6_prefix))
			goto bad;
		for (i = 0; i < p.ipv6_cnt; i++) {
			const struct smcr_clc_ipv6_prefix *p6 =
				(const void *)(b + off);

			memcpy(p.ipv6[i].prefix, p6->prefix,
			       sizeof(p6->prefix));
			p.ipv6[i].len = p6->len;
			off += sizeof(*p6);
		}
	}
	if (p.typev2 == SMCR_CLC_TYPE_N) {
		if (w->v2_ext_offset != 0)
			goto bad;
	} else {
		const struct smcr_clc_v2_ext *v2 = (const void *)(b + off);

		ext = off;
		if (SMCR_CLC_V2_EXT_BASE + (size_t)be16toh(w->v2_ext_offset) !=
			    off ||
		    end - off < sizeof(*v2))
			goto bad;
		p.eid_cnt = v2->eid_cnt;
		p.ism_gid_cnt = v2->ism_gid_cnt;
		p.release = v2->flag >> SMCR_CLC_RELEASE_SHIFT;
		p.seid = v2->flag & SMCR_CLC_FLAG_SEID;
		memcpy(p.roce_gid, v2->roce_gid, sizeof(p.roce_gid));
		p.max_conns = v2->max_conns;
		p.max_links = v2->max_links;
		p.feature_mask = be16toh(v2->feature_mask);
		off += sizeof(*v2);
		if (p.eid_cnt > SMCR_CLC_EID_MAX ||
		    end - off < (size_t)p.eid_cnt * SMCR_CLC_EID_LEN)
			goto bad;
		for (i = 0; i < p.eid_cnt; i++, off += SMCR_CLC_EID_LEN)
			memcpy(p.eid[i], b + off, SMCR_CLC_EID_LEN);
		if (!smcr_clc_offers_d(p.typev2) && v2->smcd_v2_ext_offset != 0)
			goto bad;
	}
	if (smcr_clc_offers_d(p.typev2)) {
		const struct smcr_clc_v2_ext *v2 = (const void *)(b + ext);
		const struct smcr_clc_smcd_v2_ext *d = (const void *)(b + off);

		if (ext + SMCR_CLC_SMCD_EXT_BASE +
				    be16toh(v2->smcd_v2_ext_offset) !=
			    off ||
		    end - off < sizeof(*d))
			goto bad;
		memcpy(p.system_eid, d->system_eid, sizeof(p.system_eid));
		off += sizeof(*d);
		if (p.ism_gid_cnt > SMCR_CLC_ISM_GID_MAX ||
		    end - off < p.ism_gid_cnt *
					sizeof(struct smcr_clc_ism_gid_chid))
			goto bad;
		for (i = 0; i < p.ism_gid_cnt; i++) {
			const struct smcr_clc_ism_gid_chid *g =
				(const void *)(b + off);

			p.ism[i].gid = be64toh(g->gid);
			p.ism[i].chid = be16toh(g->chid);
			off += sizeof(*g);
		}
	}
	if (off != end)
		goto bad;
	decl = smcr_clc_proposal_check(&p);
	if (decl) {
		*decline = decl;
		return -EPROTO;
	}
	*out = p;
	return 0;
bad:
	*decline = CLC_DECL_BADMSG;
	return -EPROTO;
}

static uint32_t
smcr_clc_accept_check(const struct smcr_clc_accept_info *a, bool confirm)
{
	uint64_t bytes = clc_rmbe_bytes(a->rmbe_size);
	unsigned int i;

	/* the RMB element (from rmbe_idx 1) must not wrap the address space */
	if (wire_all_zero(a->gid, sizeof(a->gid)) || a->qpn < CLC_QPN_MIN ||
	    a->qpn > 0xffffff || a->psn > 0xffffff || a->mtu < CLC_MTU_MIN ||
	    a->mtu > CLC_MTU_MAX || a->rmbe_idx < SMCR_CLC_RMBE_IDX_MIN ||
	    a->alert_token == 0 || bytes == 0 ||
	    a->rmb_vaddr > UINT64_MAX - bytes * a->rmbe_idx ||
	    !smcr_clc_eid_valid(a->eid))
		return CLC_DECL_BADMSG;
	if (!a->first_contact) {
		/* nothing of the first-contact extension is sent */
		if (a->direct || a->os_type || a->release ||
		    !wire_all_zero(a->hostname, sizeof(a->hostname)) ||
		    a->max_conns || a->max_links || a->feature_mask ||
		    a->vendor_exp_options || a->gid_cnt)
			return CLC_DECL_BADMSG;
		return 0;
	}
	if (a->os_type > 15 || a->release > 15)
		return CLC_DECL_BADMSG;
	if (confirm) {
		if (a->gid_cnt < 1 || a->gid_cnt > SMCR_CLC_GIDS_MAX)
			return CLC_DECL_BADMSG;
		for (i = 0; i < a->gid_cnt; i++)
			if (wire_all_zero(a->gids[i], CLC_GID_LEN))
				return CLC_DECL_BADMSG;
	} else if (a->gid_cnt) {
		return CLC_DECL_BADMSG;
	}
	return smcr_clc_limits_check(a->release, a->max_conns, a->max_links);
}

static int
smcr_clc_accept_put(void *buf, size_t size,
		    const struct smcr_clc_accept_info *in, uint8_t type)
{
	bool confirm = type == CLC_CONFIRM;
	struct smcr_clc_accept *w = buf;
	uint8_t *b = buf;
	size_t len = SMCR_CLC_ACCEPT_LEN;
	unsigned int i;

	if (smcr_clc_accept_check(in, confirm))
		return -EINVAL;
	if (in->first_contact)
		len = SMCR_CLC_ACCEPT_FC_LEN +
		      (confirm ? sizeof(struct smcr_clc_gid_ext) +
					 in->gid_cnt * CLC_GID_LEN :
				 0);
	if (size < len)
		return -ENOSPC;
	memset(b, 0, len);
	clc_frame_put(
		b, type, (uint16_t)len,
		(uint8_t)(SMCR_CLC_VERSION << CLC_VERSION_SHIFT |
			  (in->first_contact ? CLC_FLAG_FIRST_CONTACT : 0) |
			  SMCR_CLC_TYPE_R),
		CLC_EYEC_SMCR);
	memcpy(w->system_id, in->system_id, sizeof(w->system_id));
	memcpy(w->gid, in->gid, sizeof(w->gid));
	memcpy(w->mac, in->mac, sizeof(w->mac));
	wire_put24(w->qpn, in->qpn);
	w->rmb_rkey = htobe32(in->rmb_rkey);
	w->rmbe_idx = in->rmbe_idx;
	w->alert_token = htobe32(in->alert_token);
	w->rmbe_mtu = (uint8_t)(in->rmbe_size << 4 | in->mtu);
	w->rmb_vaddr = htobe64(in->rmb_vaddr);
	wire_put24(w->psn, in->psn);
	memcpy(w->eid, in->eid, sizeof(w->eid));
	if (in->first_contact) {
		struct smcr_clc_fce *f = (void *)(b + sizeof(*w));

		f->direct = in->direct ? SMCR_CLC_FCE_DIRECT : 0;
		f->os_release = (uint8_t)(in->os_type << SMCR_CLC_FCE_OS_SHIFT |
					  in->release);
		memcpy(f->hostname, in->hostname, sizeof(f->hostname));
		f->max_conns = in->max_conns;
		f->max_links = in->max_links;
		f->feature_mask = htobe16(in->feature_mask);
		f->vendor_exp_options = htobe32(in->vendor_exp_options);
		if (confirm) {
			struct smcr_clc_gid_ext *g = (void *)(f + 1);

			g->gid_cnt = in->gid_cnt;
			for (i = 0; i < in->gid_cnt; i++)
				memcpy((uint8_t *)(g + 1) + i * CLC_GID_LEN,
				       in->gids[i], CLC_GID_LEN);
		}
	}
	return (int)len;
}

static int
smcr_clc_accept_get(const void *buf, size_t len,
		    struct smcr_clc_accept_info *out, uint32_t *decline,
		    uint8_t type)
{
	bool confirm = type == CLC_CONFIRM;
	const struct smcr_clc_accept *w = buf;
	const uint8_t *b = buf;
	struct smcr_clc_accept_info a;
	enum clc_eyec eyec;
	unsigned int i;
	uint32_t decl;
	size_t want;
	int rc;

	rc = smcr_clc_msg_check(buf, len, type, &eyec, decline);
	if (rc)
		return rc;
	/* SMC-R only; typev2's low bit would be SMC-D's */
	if (eyec != CLC_EYEC_SMCR ||
	    (w->hdr.flags & SMCR_CLC_TYPE_MASK) != SMCR_CLC_TYPE_R ||
	    (w->hdr.flags & 1 << SMCR_CLC_TYPEV2_SHIFT))
		goto bad;
	memset(&a, 0, sizeof(a));
	a.first_contact = w->hdr.flags & CLC_FLAG_FIRST_CONTACT;
	memcpy(a.system_id, w->system_id, sizeof(a.system_id));
	memcpy(a.gid, w->gid, sizeof(a.gid));
	memcpy(a.mac, w->mac, sizeof(a.mac));
	a.qpn = wire_get24(w->qpn);
	a.rmb_rkey = be32toh(w->rmb_rkey);
	a.rmbe_idx = w->rmbe_idx;
	a.alert_token = be32toh(w->alert_token);
	a.rmbe_size = w->rmbe_mtu >> 4;
	a.mtu = w->rmbe_mtu & 0x0f;
	a.rmb_vaddr = be64toh(w->rmb_vaddr);
	a.psn = wire_get24(w->psn);
	memcpy(a.eid, w->eid, sizeof(a.eid));
	want = SMCR_CLC_ACCEPT_LEN;
	if (a.first_contact) {
		const struct smcr_clc_fce *f = (const void *)(b + sizeof(*w));

		want = SMCR_CLC_ACCEPT_FC_LEN;
		if (len < want)
			goto bad;
		a.direct = f->direct & SMCR_CLC_FCE_DIRECT;
		a.os_type = f->os_release >> SMCR_CLC_FCE_OS_SHIFT;
		a.release = f->os_release & 0x0f;
		memcpy(a.hostname, f->hostname, sizeof(a.hostname));
		a.max_conns = f->max_conns;
		a.max_links = f->max_links;
		a.feature_mask = be16toh(f->feature_mask);
		a.vendor_exp_options = be32toh(f->vendor_exp_options);
		if (confirm) {
			const struct smcr_clc_gid_ext *g =
				(const void *)(f + 1);

			want += sizeof(*g);
			if (len < want)
				goto bad;
			a.gid_cnt = g->gid_cnt;
			if (a.gid_cnt > SMCR_CLC_GIDS_MAX)
				goto bad;
			want += a.gid_cnt * CLC_GID_LEN;
			if (len < want)
				goto bad;
			for (i = 0; i < a.gid_cnt; i++)
				memcpy(a.gids[i],
				       (const uint8_t *)(g + 1) +
					       i * CLC_GID_LEN,
				       CLC_GID_LEN);
		}
	}
	if (len != want)
		goto bad;
	decl = smcr_clc_accept_check(&a, confirm);
	if (decl) {
		*decline = decl;
		return -EPROTO;
	}
	*out = a;
	return 0;
bad:
	*decline = CLC_DECL_BADMSG;
	return -EPROTO;
}

/* Build an ACCEPT into buf: its length, -ENOSPC or -EINVAL. */
int
smcr_clc_accept_encode(void *buf, size_t size,
		       const struct smcr_clc_accept_info *in)
{
	return smcr_clc_accept_put(buf, size, in, CLC_ACCEPT);
}

/* Decode and validate a whole ACCEPT.  0, or -EPROTO with *decline set. */
int
smcr_clc_accept_decode(const void *buf, size_t len,
		       struct smcr_clc_accept_info *out, uint32_t *decline)
{
	return smcr_clc_accept_get(buf, len, out, decline, CLC_ACCEPT);
}

/* Build a CONFIRM (first contact: with gid_cnt GIDs): length or -errno. */
int
smcr_clc_confirm_encode(void *buf, size_t size,
			const struct smcr_clc_accept_info *in)
{
	return smcr_clc_accept_put(buf, size, in, CLC_CONFIRM);
}

/* Decode and validate a whole CONFIRM.  0, or -EPROTO with *decline set. */
int
smcr_clc_confirm_decode(const void *buf, size_t len,
			struct smcr_clc_accept_info *out, uint32_t *decline)
{
	return smcr_clc_accept_get(buf, len, out, decline, CLC_CONFIRM);
}

static bool
smcr_clc_decline_ok(const struct smcr_clc_decline_info *d)
{
	if ((d->version != SMCR_CLC_VERSION &&
	     d->version != SMCR_CLC_VERSION_V1) ||
	    d->diagnosis == 0 || d->os_type > 15)
		return false;
	return d->version == SMCR_CLC_VERSION ||
	       wire_all_zero(d->diagnosis_v2, sizeof(d->diagnosis_v2));
}

/*
 * Build a DECLINE of in->version (2: 44 bytes, 1: 28) into buf: its
 * length, -ENOSPC, or -EINVAL (diagnosis 0, another version).
 */
int
smcr_clc_decline_encode(void *buf, size_t size,
			const struct smcr_clc_decline_info *in)
{
	struct smcr_clc_decline *w = buf;
	size_t len;
	unsigned int i;

	if (!smcr_clc_decline_ok(in))
		return -EINVAL;
	len = in->version == SMCR_CLC_VERSION ? sizeof(*w) :
						SMCR_CLC_DECLINE_V1_LEN;
	if (size < len)
		return -ENOSPC;
	memset(w, 0, len);
	clc_frame_put(w, CLC_DECLINE, (uint16_t)len,
		      (uint8_t)(in->version << CLC_VERSION_SHIFT |
				(in->sync_err ? CLC_FLAG_FIRST_CONTACT : 0)),
		      in->smcd_eyecatcher ? CLC_EYEC_SMCD : CLC_EYEC_SMCR);
	memcpy(w->system_id, in->system_id, sizeof(w->system_id));
	w->peer_diagnosis = htobe32(in->diagnosis);
	w->os_type = (uint8_t)(in->os_type << SMCR_CLC_FCE_OS_SHIFT);
	if (in->version == SMCR_CLC_VERSION)
		for (i = 0; i < 4; i++)
			w->peer_diagnosis_v2[i] = htobe32(in->diagnosis_v2[i]);
	return (int)len;
}

/*
 * Decode a whole DECLINE, version 1 or 2.  Any non-zero diagnosis is
 * taken (a newer peer may know more codes).  0, or -EPROTO with *decline
 * set: nobody answers a DECLINE, but the caller counts the reason.
 */
int
smcr_clc_decline_decode(const void *buf, size_t len,
			struct smcr_clc_decline_info *out, uint32_t *decline)
{
	const struct smcr_clc_decline *w = buf;
	struct smcr_clc_decline_info d;
	enum clc_eyec eyec;
	unsigned int i;
	int rc;

	rc = smcr_clc_msg_check(buf, len, CLC_DECLINE, &eyec, decline);
	if (rc)
		return rc;
	memset(&d, 0, sizeof(d));
	d.smcd_eyecatcher = eyec == CLC_EYEC_SMCD;
	d.version = w->hdr.flags >> CLC_VERSION_SHIFT;
	d.sync_err = w->hdr.flags & CLC_FLAG_FIRST_CONTACT;
	memcpy(d.system_id, w->system_id, sizeof(d.system_id));
	d.diagnosis = be32toh(w->peer_diagnosis);
	d.os_type = w->os_type >> SMCR_CLC_FCE_OS_SHIFT;
	if (d.version == SMCR_CLC_VERSION)
		for (i = 0; i < 4; i++)
			d.diagnosis_v2[i] = be32toh(w->peer_diagnosis_v2[i]);
	if ((w->hdr.flags & CLC_FLAGS_RESERVED) || !smcr_clc_decline_ok(&d)) {
		*decline = CLC_DECL_BADMSG;
		return -EPROTO;
	}
	*out = d;
	return 0;
}
