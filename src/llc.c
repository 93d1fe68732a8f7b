// SPDX-License-Identifier: BSD-2-Clause
/*
 * LLC: the link-layer control of llc_wire.h.
 *
 * The codec (first half) builds and checks the 44-byte messages.  Pure
 * functions on byte buffers, no verbs: the receive completion handler
 * passes the bytes it got and acts on the llc_info.  Each type has one
 * parse function (wire to host, refusing what is not canonical: reserved
 * bytes, padding, flags the type does not carry) and one check function
 * on the host form that the encoder runs too, so a message decodes iff it
 * re-encodes to the same bytes.
 *
 * The protocol (second half) runs on the links of a link group (lgr.c),
 * as net/smc's smc_llc.c: CONFIRM_LINK proves a new link (the server
 * asks, the client answers over the link itself), ADD_LINK brings a
 * second link on another device (the server offers, the client accepts or
 * rejects with "no alternate path"), DELETE_LINK takes one link or the
 * whole group down with a reason, TEST_LINK probes a link that has been
 * silent for test_link_time.  Every message is decoded and checked
 * against the state it may arrive in; anything else ends the group and is
 * counted (llc_protocol_errors).  Messages that find no free TX slot wait
 * in a small per-link queue, parked for the next slot like any sender.
 */
#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "smcproxyd.h"
#include "lgr.h"
#include "wire.h"
#include "cdc_wire.h"
#include "llc_wire.h"

_Static_assert(LLC_V2_TX_MAX <= CDC_MSG_LEN + CDC_DATA_MAX,
	       "a long LLC message fits a TX slot");

#define LLC_FLAG_RKEY_FLAGS (LLC_FLAG_RKEY_NEG | LLC_FLAG_RKEY_RETRY)

/* An RMB element must not wrap the address space. */
static bool
llc_rmbe_ok(uint64_t vaddr, uint8_t rmbe_size)
{
	uint64_t bytes = clc_rmbe_bytes(rmbe_size);

	return bytes != 0 && vaddr <= UINT64_MAX - bytes;
}

/* Flags each type may carry, whatever else it requires. */
static uint8_t
llc_flags_allowed(uint8_t type)
{
	switch (type) {
	case LLC_CONFIRM_LINK:
		return LLC_FLAG_RESP | LLC_FLAG_NO_RMBE_EYEC;
	case LLC_ADD_LINK:
		return LLC_FLAG_RESP | LLC_FLAG_ADD_LINK_REJ;
	case LLC_DELETE_LINK:
		return LLC_FLAG_RESP | LLC_FLAG_DEL_LINK_ALL |
		       LLC_FLAG_DEL_LINK_ORDERLY;
	case LLC_CONFIRM_RKEY:
		return LLC_FLAG_RESP | LLC_FLAG_RKEY_NEG | LLC_FLAG_RKEY_RETRY;
	case LLC_DELETE_RKEY:
		return LLC_FLAG_RESP | LLC_FLAG_RKEY_NEG;
	case LLC_ADD_LINK_CONT:
	case LLC_TEST_LINK:
	case LLC_CONN_ACCEPT:
	case LLC_CONN_REJECT:
	case LLC_CONN_RESUME:
		return LLC_FLAG_RESP;
	case LLC_CONN_OPEN:
		return 0;
	case LLC_CONN_ORIGIN:
		return LLC_FLAG_ORIGIN_INET6;
	}
	return 0;
}

/* Combinations of allowed flags that still make no sense. */
static bool
llc_flags_ok(uint8_t type, uint8_t flags)
{
	bool resp = flags & LLC_FLAG_RESP;

	if (flags & ~llc_flags_allowed(type))
		return false;
	switch (type) {
	case LLC_CONFIRM_LINK:
		/* we never put an eyecatcher into an RMB element */
		return (flags & LLC_FLAG_NO_RMBE_EYEC) == LLC_FLAG_NO_RMBE_EYEC;
	case LLC_ADD_LINK:
		return resp || !(flags & LLC_FLAG_ADD_LINK_REJ);
	case LLC_CONFIRM_RKEY:
		if ((flags & LLC_FLAG_RKEY_RETRY) &&
		    !(flags & LLC_FLAG_RKEY_NEG))
			return false;
		return resp || !(flags & LLC_FLAG_RKEY_FLAGS);
	case LLC_DELETE_RKEY:
		return resp || !(flags & LLC_FLAG_RKEY_NEG);
	case LLC_CONN_ACCEPT:
	case LLC_CONN_REJECT:
		return resp;
	}
	return true;
}

static bool
llc_link_num_ok(uint8_t n)
{
	return n != 0;
}

static bool
llc_qpn_ok(uint32_t qpn)
{
	return qpn >= CLC_QPN_MIN && qpn <= 0xffffff;
}

static bool
llc_del_reason_ok(uint32_t reason, bool resp)
{
	switch (reason) {
	case LLC_DEL_LOST_PATH:
	case LLC_DEL_OP_INIT_TERM:
	case LLC_DEL_PROG_INIT_TERM:
	case LLC_DEL_PROT_VIOL:
	case LLC_DEL_NO_ASYM_NEEDED:
		return true;
	case 0:
	case LLC_DEL_NOLNK:
	case LLC_DEL_NOLGR:
		return resp;
	}
	return false;
}

/* Host-form checks shared by decoder and encoder. */
static bool
llc_info_ok(const struct llc_info *m)
{
	bool resp = m->flags & LLC_FLAG_RESP;
	unsigned int i, n;

	if (!llc_flags_ok(m->type, m->flags))
		return false;
	switch (m->type) {
	case LLC_CONFIRM_LINK: {
		const struct llc_confirm_link_info *c = &m->confirm_link;

		return !wire_all_zero(c->gid, sizeof(c->gid)) &&
		       llc_qpn_ok(c->qpn) && llc_link_num_ok(c->link_num) &&
		       c->max_links >= CLC_MAX_LINKS_MIN &&
		       c->max_links <= CLC_MAX_LINKS_MAX &&
		       c->max_conns >= CLC_MAX_CONNS_MIN;
	}
	case LLC_ADD_LINK: {
		const struct llc_add_link_info *a = &m->add_link;

		/* a reject echoes the request; only its reason matters */
		if (m->flags & LLC_FLAG_ADD_LINK_REJ)
			return a->rej_rsn >= 1 && a->rej_rsn <= 15 &&
			       a->qpn <= 0xffffff && a->psn <= 0xffffff &&
			       a->mtu <= 15;
		return a->rej_rsn == 0 &&
		       !wire_all_zero(a->gid, sizeof(a->gid)) &&
		       llc_qpn_ok(a->qpn) && llc_link_num_ok(a->link_num) &&
		       a->mtu >= CLC_MTU_MIN && a->mtu <= CLC_MTU_MAX &&
		       a->psn <= 0xffffff;
	}
	case LLC_ADD_LINK_CONT: {
		const struct llc_add_link_cont_info *a = &m->add_link_cont;

		if (!llc_link_num_ok(a->link_num))
			return false;
		n = a->num_rkeys < LLC_RKEYS_PER_CONT ? a->num_rkeys :
							LLC_RKEYS_PER_CONT;
		for (i = n; i < LLC_RKEYS_PER_CONT; i++)
			if (a->rt[i].rkey || a->rt[i].rkey_new ||
			    a->rt[i].vaddr_new)
				return false;
		return true;
	}
	case LLC_DELETE_LINK: {
		const struct llc_delete_link_info *d = &m->delete_link;

		if (!(m->flags & LLC_FLAG_DEL_LINK_ALL) &&
		    !llc_link_num_ok(d->link_num))
			return false;
		return llc_del_reason_ok(d->reason, resp);
	}
	case LLC_CONFIRM_RKEY: {
		const struct llc_confirm_rkey_info *c = &m->confirm_rkey;

		if (c->num_rkeys > LLC_RKEYS_PER_MSG - 1 || c->rt[0].link_id)
			return false;
		for (i = 1; i < LLC_RKEYS_PER_MSG; i++) {
			if (i <= c->num_rkeys && c->rt[i].link_id == 0)
				return false;
			if (i > c->num_rkeys &&
			    (c->rt[i].link_id || c->rt[i].rkey ||
			     c->rt[i].vaddr))
				return false;
		}
		return true;
	}
	case LLC_TEST_LINK:
		return true;
	case LLC_DELETE_RKEY: {
		const struct llc_delete_rkey_info *d = &m->delete_rkey;
		uint8_t used;

		if (d->num_rkeys < 1 || d->num_rkeys > LLC_DEL_RKEY_MAX)
			return false;
		used = (uint8_t)(0xff << (LLC_DEL_RKEY_MAX - d->num_rkeys));
		for (i = d->num_rkeys; i < LLC_DEL_RKEY_MAX; i++)
			if (d->rkey[i])
				return false;
		/* NEG iff some rkey failed, and only rkeys that were sent */
		return (d->err_mask & ~used) == 0 &&
		       !(m->flags & LLC_FLAG_RKEY_NEG) == !d->err_mask;
	}
	case LLC_CONN_OPEN: {
		const struct llc_conn_open_info *o = &m->conn_open;
		size_t len = strnlen(o->export, sizeof(o->export));

		return o->token != 0 &&
		       llc_rmbe_ok(o->rmb_vaddr, o->rmbe_size) &&
		       len <= LLC_EXPORT_MAX &&
		       conf_name_valid_len(o->export, len);
	}
	case LLC_CONN_ACCEPT: {
		const struct llc_conn_accept_info *a = &m->conn_accept;

		return a->opener_token != 0 && a->token != 0 &&
		       llc_rmbe_ok(a->rmb_vaddr, a->rmbe_size);
	}
	case LLC_CONN_REJECT:
		return m->conn_reject.opener_token != 0 &&
		       m->conn_reject.reason != 0;
	case LLC_CONN_RESUME:
		return m->conn_resume.token != 0 &&
		       !wire_all_zero(m->conn_resume.resume_id,
				      sizeof(m->conn_resume.resume_id));
	case LLC_CONN_ORIGIN: {
		const struct fb_origin *o = &m->conn_origin.origin;

		return m->conn_origin.token != 0 && fb_origin_valid(o) &&
		       (o->family == FB_ORIGIN_INET6) ==
			       !!(m->flags & LLC_FLAG_ORIGIN_INET6);
	}
	}
	return false;
}

/*
 * Wire to host for one type: false for a type we do not know.  Sets
 * *canonical to whether the reserved fields are zero (the native dialect
 * refuses them otherwise; the standard one skips them, as Linux does);
 * the values themselves are left to llc_info_ok().
 */
static bool
llc_parse(const uint8_t *buf, struct llc_info *m, bool *canonical)
{
	const struct llc_hdr *hd = (const struct llc_hdr *)buf;
	bool hd_ok = hd->type == LLC_ADD_LINK || hd->reserved == 0;
	unsigned int i;

	m->type = hd->type;
	m->flags = hd->flags;
	switch (hd->type) {
	case LLC_CONFIRM_LINK: {
		const struct llc_confirm_link *w = (const void *)buf;
		struct llc_confirm_link_info *c = &m->confirm_link;

		memcpy(c->mac, w->sender_mac, sizeof(c->mac));
		memcpy(c->gid, w->sender_gid, sizeof(c->gid));
		c->qpn = wire_get24(w->sender_qp_num);
		c->link_num = w->link_num;
		memcpy(c->link_uid, w->link_uid, sizeof(c->link_uid));
		c->max_links = w->max_links;
		c->max_conns = w->max_conns;
		*canonical = hd_ok &&
			     wire_all_zero(w->reserved, sizeof(w->reserved));
		return true;
	}
	case LLC_ADD_LINK: {
		const struct llc_add_link *w = (const void *)buf;
		struct llc_add_link_info *a = &m->add_link;

		memcpy(a->mac, w->sender_mac, sizeof(a->mac));
		memcpy(a->gid, w->sender_gid, sizeof(a->gid));
		a->qpn = wire_get24(w->sender_qp_num);
		a->link_num = w->link_num;
		a->mtu = w->mtu & 0x0f;
		a->psn = wire_get24(w->initial_psn);
		a->rej_rsn = hd->reserved & 0x0f;
		*canonical =
			hd_ok && (hd->reserved & 0xf0) == 0 &&
			(w->mtu & 0xf0) == 0 &&
			wire_all_zero(w->reserved2, sizeof(w->reserved2)) &&
			wire_all_zero(w->reserved, sizeof(w->reserved));
		return true;
	}
	case LLC_ADD_LINK_CONT: {
		const struct llc_add_link_cont *w = (const void *)buf;
		struct llc_add_link_cont_info *a = &m->add_link_cont;

		a->link_num = w->link_num;
		a->num_rkeys = w->num_rkeys;
		for (i = 0; i < LLC_RKEYS_PER_CONT; i++) {
			a->rt[i].rkey = be32toh(w->rt[i].rmb_key);
			a->rt[i].rkey_new = be32toh(w->rt[i].rmb_key_new);
			a->rt[i].vaddr_new = be64toh(w->rt[i].rmb_vaddr_new);
		}
		*canonical =
			hd_ok &&
			wire_all_zero(w->reserved2, sizeof(w->reserved2)) &&
			wire_all_zero(w->reserved, sizeof(w->reserved));
		return true;
	}
	case LLC_DELETE_LINK: {
		const struct llc_delete_link *w = (const void *)buf;

		m->delete_link.link_num = w->link_num;
		m->delete_link.reason = be32toh(w->reason);
		*canonical = hd_ok &&
			     wire_all_zero(w->reserved, sizeof(w->reserved));
		return true;
	}
	case LLC_CONFIRM_RKEY: {
		const struct llc_confirm_rkey *w = (const void *)buf;
		struct llc_confirm_rkey_info *c = &m->confirm_rkey;

		c->num_rkeys = w->rtoken[0].num_link;
		c->rt[0].link_id = 0;
		for (i = 0; i < LLC_RKEYS_PER_MSG; i++) {
			if (i > 0)
				c->rt[i].link_id = w->rtoken[i].num_link;
			c->rt[i].rkey = be32toh(w->rtoken[i].rmb_key);
			c->rt[i].vaddr = be64toh(w->rtoken[i].rmb_vaddr);
		}
		*canonical = hd_ok && w->reserved == 0;
		return true;
	}
	case LLC_TEST_LINK: {
		const struct llc_test_link *w = (const void *)buf;

		memcpy(m->test_link.user_data, w->user_data,
		       sizeof(w->user_data));
		*canonical = hd_ok &&
			     wire_all_zero(w->reserved, sizeof(w->reserved));
		return true;
	}
	case LLC_DELETE_RKEY: {
		const struct llc_delete_rkey *w = (const void *)buf;
		struct llc_delete_rkey_info *d = &m->delete_rkey;

		d->num_rkeys = w->num_rkeys;
		d->err_mask = w->err_mask;
		for (i = 0; i < LLC_DEL_RKEY_MAX; i++)
			d->rkey[i] = be32toh(w->rkey[i]);
		*canonical = hd_ok &&
			     wire_all_zero(w->reserved, sizeof(w->reserved)) &&
			     wire_all_zero(w->reserved2, sizeof(w->reserved2));
		return true;
	}
	case LLC_CONN_OPEN: {
		const struct llc_conn_open *w = (const void *)buf;
		struct llc_conn_open_info *o = &m->conn_open;
		size_t len = strnlen(w->export, sizeof(w->export));

		o->token = be32toh(w->token);
		o->rmb_rkey = be32toh(w->rmb_rkey);
		o->rmb_vaddr = be64toh(w->rmb_vaddr);
		o->rmbe_size = w->rmbe_size;
		memset(o->export, 0, sizeof(o->export));
		memcpy(o->export, w->export, len);
		*canonical =
			hd_ok && w->reserved == 0 &&
			wire_all_zero(w->export + len, sizeof(w->export) - len);
		return true;
	}
	case LLC_CONN_ACCEPT: {
		const struct llc_conn_accept *w = (const void *)buf;
		struct llc_conn_accept_info *a = &m->conn_accept;

		a->opener_token = be32toh(w->opener_token);
		a->token = be32toh(w->token);
		a->rmb_rkey = be32toh(w->rmb_rkey);
		a->rmb_vaddr = be64toh(w->rmb_vaddr);
		a->rmbe_size = w->rmbe_size;
		memcpy(a->resume_id, w->resume_id, sizeof(a->resume_id));
		*canonical = hd_ok &&
			     wire_all_zero(w->reserved, sizeof(w->reserved));
		return true;
	}
	case LLC_CONN_ORIGIN: {
		const struct llc_conn_origin *w = (const void *)buf;
		struct fb_origin *o = &m->conn_origin.origin;

		m->conn_origin.token = be32toh(w->token);
		memset(o, 0, sizeof(*o));
		o->family = hd->flags & LLC_FLAG_ORIGIN_INET6 ?
				    FB_ORIGIN_INET6 :
				    FB_ORIGIN_INET;
		o->src_port = w->src_port;
		o->dst_port = w->dst_port;
		memcpy(o->src, w->src, sizeof(o->src));
		memcpy(o->dst, w->dst, sizeof(o->dst));
		*canonical = hd_ok;
		return true;
	}
	case LLC_CONN_RESUME: {
		const struct llc_conn_resume *w = (const void *)buf;
		struct llc_conn_resume_info *r = &m->conn_resume;

		memcpy(r->resume_id, w->resume_id, sizeof(r->resume_id));
		r->token = be32toh(w->token);
		r->rmb_rkey = be32toh(w->rmb_rkey);
		r->rx_off = be64toh(w->rx_off);
		r->tx_fin = be64toh(w->tx_fin);
		*canonical = hd_ok && true;
		return true;
	}
	case LLC_CONN_REJECT: {
		const struct llc_conn_reject *w = (const void *)buf;

		m->conn_reject.opener_token = be32toh(w->opener_token);
		m->conn_reject.reason = be32toh(w->reason);
		*canonical = hd_ok &&
			     wire_all_zero(w->reserved, sizeof(w->reserved));
		return true;
	}
	}
	return false;
}

/* The 44 bytes of *in, checked by the caller, at buf (v1 header form). */
static void
llc_put(void *buf, const struct llc_info *in)
{
	uint8_t *b = buf;
	struct llc_hdr *hd = buf;
	unsigned int i;

	memset(b, 0, LLC_MSG_LEN);
	hd->type = in->type;
	hd->length = LLC_MSG_LEN;
	hd->flags = in->flags;
	switch (in->type) {
	case LLC_CONFIRM_LINK: {
		struct llc_confirm_link *w = buf;
		const struct llc_confirm_link_info *c = &in->confirm_link;

		memcpy(w->sender_mac, c->mac, sizeof(c->mac));
		memcpy(w->sender_gid, c->gid, sizeof(c->gid));
		wire_put24(w->sender_qp_num, c->qpn);
		w->link_num = c->link_num;
		memcpy(w->link_uid, c->link_uid, sizeof(c->link_uid));
		w->max_links = c->max_links;
		w->max_conns = c->max_conns;
		break;
	}
	case LLC_ADD_LINK: {
		struct llc_add_link *w = buf;
		const struct llc_add_link_info *a = &in->add_link;

		hd->reserved = a->rej_rsn;
		memcpy(w->sender_mac, a->mac, sizeof(a->mac));
		memcpy(w->sender_gid, a->gid, sizeof(a->gid));
		wire_put24(w->sender_qp_num, a->qpn);
		w->link_num = a->link_num;
		w->mtu = a->mtu;
		wire_put24(w->initial_psn, a->psn);
		break;
	}
	case LLC_ADD_LINK_CONT: {
		struct llc_add_link_cont *w = buf;
		const struct llc_add_link_cont_info *a = &in->add_link_cont;

		w->link_num = a->link_num;
		w->num_rkeys = a->num_rkeys;
		for (i = 0; i < LLC_RKEYS_PER_CONT; i++) {
			w->rt[i].rmb_key = htobe32(a->rt[i].rkey);
			w->rt[i].rmb_key_new = htobe32(a->rt[i].rkey_new);
			w->rt[i].rmb_vaddr_new = htobe64(a->rt[i].vaddr_new);
		}
		break;
	}
	case LLC_DELETE_LINK: {
		struct llc_delete_link *w = buf;

		w->link_num = in->delete_link.link_num;
		w->reason = htobe32(in->delete_link.reason);
		break;
	}
	case LLC_CONFIRM_RKEY: {
		struct llc_confirm_rkey *w = buf;
		const struct llc_confirm_rkey_info *c = &in->confirm_rkey;

		for (i = 0; i < LLC_RKEYS_PER_MSG; i++) {
			w->rtoken[i].num_link =
				i ? c->rt[i].link_id : c->num_rkeys;
			w->rtoken[i].rmb_key = htobe32(c->rt[i].rkey);
			w->rtoken[i].rmb_vaddr = htobe64(c->rt[i].vaddr);
		}
		break;
	}
	case LLC_TEST_LINK: {
		struct llc_test_link *w = buf;

		memcpy(w->user_data, in->test_link.user_data,
		       sizeof(w->user_data));
		break;
	}
	case LLC_DELETE_RKEY: {
		struct llc_delete_rkey *w = buf;
		const struct llc_delete_rkey_info *d = &in->delete_rkey;

		w->num_rkeys = d->num_rkeys;
		w->err_mask = d->err_mask;
		for (i = 0; i < LLC_DEL_RKEY_MAX; i++)
			w->rkey[i] = htobe32(d->rkey[i]);
		break;
	}
	case LLC_CONN_OPEN: {
		struct llc_conn_open *w = buf;
		const struct llc_conn_open_info *o = &in->conn_open;

		w->token = htobe32(o->token);
		w->rmb_rkey = htobe32(o->rmb_rkey);
		w->rmb_vaddr = htobe64(o->rmb_vaddr);
		w->rmbe_size = o->rmbe_size;
		memcpy(w->export, o->export, strlen(o->export));
		break;
	}
	case LLC_CONN_ACCEPT: {
		struct llc_conn_accept *w = buf;
		const struct llc_conn_accept_info *a = &in->conn_accept;

		w->opener_token = htobe32(a->opener_token);
		w->token = htobe32(a->token);
		w->rmb_rkey = htobe32(a->rmb_rkey);
		w->rmb_vaddr = htobe64(a->rmb_vaddr);
		w->rmbe_size = a->rmbe_size;
		memcpy(w->resume_id, a->resume_id, sizeof(w->resume_id));
		break;
	}
	case LLC_CONN_ORIGIN: {
		struct llc_conn_origin *w = buf;
		const struct fb_origin *o = &in->conn_origin.origin;

		w->token = htobe32(in->conn_origin.token);
		w->src_port = o->src_port;
		w->dst_port = o->dst_port;
		memcpy(w->src, o->src, sizeof(w->src));
		memcpy(w->dst, o->dst, sizeof(w->dst));
		break;
	}
	case LLC_CONN_RESUME: {
		struct llc_conn_resume *w = buf;
		const struct llc_conn_resume_info *r = &in->conn_resume;

		memcpy(w->resume_id, r->resume_id, sizeof(w->resume_id));
		w->token = htobe32(r->token);
		w->rmb_rkey = htobe32(r->rmb_rkey);
		w->rx_off = htobe64(r->rx_off);
		w->tx_fin = htobe64(r->tx_fin);
		break;
	}
	case LLC_CONN_REJECT: {
		struct llc_conn_reject *w = buf;

		w->opener_token = htobe32(in->conn_reject.opener_token);
		w->reason = htobe32(in->conn_reject.reason);
		break;
	}
	}
}

/*
 * Build the message *in into buf (size bytes, at least LLC_MSG_LEN).
 * LLC_MSG_LEN, -ENOSPC, or -EINVAL if the decoder would refuse *in.
 */
int
llc_msg_encode(void *buf, size_t size, const struct llc_info *in)
{
	if (size < LLC_MSG_LEN)
		return -ENOSPC;
	if (!llc_info_ok(in))
		return -EINVAL;
	llc_put(buf, in);
	return LLC_MSG_LEN;
}

/*
 * Decode and validate one received LLC message of len bytes: exactly
 * LLC_MSG_LEN, a known type, length 44, flags the type allows, reserved
 * bytes zero, every field in range.  0 or -EPROTO; *out untouched then.
 */
int
llc_msg_decode(const void *buf, size_t len, struct llc_info *out)
{
	const struct llc_hdr *hd = buf;
	struct llc_info m;
	bool canonical;

	if (len != LLC_MSG_LEN || hd->length != LLC_MSG_LEN)
		return -EPROTO;
	memset(&m, 0, sizeof(m));
	if (!llc_parse(buf, &m, &canonical) || !canonical || !llc_info_ok(&m))
		return -EPROTO;
	*out = m;
	return 0;
}

/* Types the SMC-R dialect carries in each header form (Linux's list). */
static bool
llc_v2_type_ok(uint8_t type, uint8_t form)
{
	switch (type) {
	case LLC_CONFIRM_LINK:
	case LLC_ADD_LINK:
	case LLC_DELETE_LINK:
	case LLC_CONFIRM_RKEY:
	case LLC_TEST_LINK:
	case LLC_DELETE_RKEY:
		return true;
	case LLC_ADD_LINK_CONT: /* v2 carries the rkeys in ADD_LINK */
		return form == 1;
	case LLC_REQ_ADD_LINK:
		return form == 2;
	}
	return false;
}

/*
 * An ADD_LINK request without a link: no QP, link number, MTU or PSN,
 * only the sender's GID and MAC.  Single-link SMC-R servers offer one
 * because the client waits for an offer after its first link; Linux
 * clients refuse it at once (qp_mtu 0; "net/smc: fix toleration of fake
 * add_link messages", 2020).
 */
static bool
llc_add_link_none(const struct llc_info *m)
{
	const struct llc_add_link_info *a = &m->add_link;

	return m->type == LLC_ADD_LINK && !(m->flags & LLC_FLAG_RESP) &&
	       a->qpn == 0 && a->link_num == 0 && a->mtu == 0 && a->psn == 0;
}

/* A v2-form ADD_LINK request or accepting response carries rkeys. */
static bool
llc_v2_has_ext(const struct llc_v2_info *v)
{
	return v->form == 2 && v->m.type == LLC_ADD_LINK &&
	       !(v->m.flags & LLC_FLAG_ADD_LINK_REJ) &&
	       !llc_add_link_none(&v->m);
}

/* The length of *v on the wire. */
static size_t
llc_v2_len(const struct llc_v2_info *v)
{
	if (v->m.type == LLC_REQ_ADD_LINK)
		return sizeof(struct llc_req_add_link) + v->gid_cnt * 16u;
	if (llc_v2_has_ext(v))
		return LLC_V2_ADD_LINK_LEN(v->num_rkeys);
	return LLC_MSG_LEN;
}

/*
 * Unused entries are not looked at in the SMC-R dialect (as reserved
 * bytes): clear them so that a decoded message re-encodes the same way.
 */
static void
llc_v2_unused_clear(struct llc_info *m)
{
	unsigned int i;

	switch (m->type) {
	case LLC_ADD_LINK_CONT:
		for (i = m->add_link_cont.num_rkeys; i < LLC_RKEYS_PER_CONT;
		     i++)
			memset(&m->add_link_cont.rt[i], 0,
			       sizeof(m->add_link_cont.rt[i]));
		break;
	case LLC_CONFIRM_RKEY:
		for (i = m->confirm_rkey.num_rkeys + 1u; i < LLC_RKEYS_PER_MSG;
		     i++)
			memset(&m->confirm_rkey.rt[i], 0,
			       sizeof(m->confirm_rkey.rt[i]));
		break;
	case LLC_DELETE_RKEY:
		for (i = m->delete_rkey.num_rkeys; i < LLC_DEL_RKEY_MAX; i++)
			m->delete_rkey.rkey[i] = 0;
		break;
	}
}

/*
 * Host-form checks of the SMC-R dialect, for decoder and encoder.
 * Where Linux differs from the native rules: CONFIRM_LINK's max_links and
 * max_conns are not judged (6.1 sends 3 and 0, 6.12 the negotiated ones);
 * a v2 ADD_LINK reject has no reason (its byte is the length's); a v2
 * DELETE_RKEY answer's err_mask counts the rkeys that failed.
 */
static bool
llc_v2_info_ok(const struct llc_v2_info *v)
{
	const struct llc_info *m = &v->m;
	bool resp = m->flags & LLC_FLAG_RESP;
	unsigned int i;

	if ((v->form != 1 && v->form != 2) || !llc_v2_type_ok(m->type, v->form))
		return false;
	/* what only some messages carry is zero in the others */
	if (!llc_v2_has_ext(v) &&
	    (v->direct || v->num_rkeys ||
	     !wire_all_zero(v->target_gid, sizeof(v->target_gid))))
		return false;
	if (v->num_rkeys > LLC_V2_RKEYS_MAX ||
	    !wire_all_zero(v->rt + v->num_rkeys,
			   (LLC_V2_RKEYS_MAX - v->num_rkeys) *
				   sizeof(v->rt[0])))
		return false;
	if (m->type != LLC_REQ_ADD_LINK && v->gid_cnt)
		return false;
	if (v->gid_cnt <= LLC_V2_GIDS_MAX &&
	    !wire_all_zero(v->gids + v->gid_cnt,
			   (LLC_V2_GIDS_MAX - v->gid_cnt) * sizeof(v->gids[0])))
		return false;
	switch (m->type) {
	case LLC_CONFIRM_LINK: {
		const struct llc_confirm_link_info *c = &m->confirm_link;

		return llc_flags_ok(m->type, m->flags) &&
		       !wire_all_zero(c->gid, sizeof(c->gid)) &&
		       llc_qpn_ok(c->qpn) && llc_link_num_ok(c->link_num);
	}
	case LLC_ADD_LINK: {
		const struct llc_add_link_info *a = &m->add_link;

		if (!llc_flags_ok(m->type, m->flags))
			return false;
		if (m->flags & LLC_FLAG_ADD_LINK_REJ)
			return v->form == 1 || a->rej_rsn == 0;
		if (llc_add_link_none(m))
			return !wire_all_zero(a->gid, sizeof(a->gid));
		return a->rej_rsn == 0 &&
		       !wire_all_zero(a->gid, sizeof(a->gid)) &&
		       llc_qpn_ok(a->qpn) && llc_link_num_ok(a->link_num) &&
		       a->mtu >= CLC_MTU_MIN && a->mtu <= CLC_MTU_MAX &&
		       a->psn <= 0xffffff;
	}
	case LLC_DELETE_RKEY: {
		const struct llc_delete_rkey_info *d = &m->delete_rkey;

		if (!llc_flags_ok(m->type, m->flags) || d->num_rkeys < 1 ||
		    d->num_rkeys > LLC_DEL_RKEY_MAX)
			return false;
		for (i = d->num_rkeys; i < LLC_DEL_RKEY_MAX; i++)
			if (d->rkey[i])
				return false;
		return d->err_mask <= (resp ? d->num_rkeys : 0) &&
		       !(m->flags & LLC_FLAG_RKEY_NEG) == !d->err_mask;
	}
	case LLC_REQ_ADD_LINK:
		if ((m->flags & ~LLC_FLAG_RESP) || v->gid_cnt < 1 ||
		    v->gid_cnt > LLC_V2_GIDS_MAX)
			return false;
		for (i = 0; i < v->gid_cnt; i++)
			if (wire_all_zero(v->gids[i], sizeof(v->gids[i])))
				return false;
		return true;
	}
	/* ADD_LINK_CONT, DELETE_LINK, CONFIRM_RKEY, TEST_LINK: as natively */
	return llc_info_ok(m);
}

/*
 * Build the standard-dialect message *in into buf (size bytes): its
 * length (44, or longer for a v2 ADD_LINK or REQ_ADD_LINK), -ENOSPC, or
 * -EINVAL if the decoder would refuse *in.
 */
int
llc_v2_encode(void *buf, size_t size, const struct llc_v2_info *in)
{
	size_t len = llc_v2_len(in);
	uint8_t *b = buf;
	unsigned int i;
	uint16_t l;

	if (!llc_v2_info_ok(in))
		return -EINVAL;
	if (size < len)
		return -ENOSPC;
	memset(b, 0, len);
	if (in->m.type == LLC_REQ_ADD_LINK) {
		struct llc_req_add_link *w = buf;

		w->hd.flags = in->m.flags;
		w->gid_cnt = in->gid_cnt;
		for (i = 0; i < in->gid_cnt; i++)
			memcpy(b + sizeof(*w) + i * 16u, in->gids[i], 16);
	} else {
		llc_put(buf, &in->m);
	}
	if (in->form == 2) {
		b[0] = (uint8_t)(LLC_V2_FORM | in->m.type);
		l = htole16((uint16_t)len);
		memcpy(b + offsetof(struct llc_v2_hdr, length), &l, sizeof(l));
	}
	if (llc_v2_has_ext(in)) {
		struct llc_add_link_v2_ext *x = (void *)(b + LLC_MSG_LEN);
		struct llc_rkey_triple *t = (void *)(x + 1);

		x->direct = in->direct ? 0x80 : 0;
		memcpy(x->client_target_gid, in->target_gid,
		       sizeof(x->client_target_gid));
		x->num_rkeys = htole16(in->num_rkeys);
		for (i = 0; i < in->num_rkeys; i++) {
			t[i].rmb_key = htobe32(in->rt[i].rkey);
			t[i].rmb_key_new = htobe32(in->rt[i].rkey_new);
			t[i].rmb_vaddr_new = htobe64(in->rt[i].vaddr_new);
		}
	}
	return (int)len;
}

/*
 * Decode and validate one standard-dialect message of len bytes (a
 * receive completion's byte count): a type Linux sends in that header
 * form, a length that is exactly len (44 in the v1 form), every field in
 * range; reserved bytes and unused entries are skipped.  0 or -EPROTO;
 * *out untouched then.
 */
int
llc_v2_decode(const void *buf, size_t len, struct llc_v2_info *out)
{
	const uint8_t *b = buf;
	uint8_t v1[LLC_MSG_LEN];
	struct llc_v2_info v;
	unsigned int i;
	bool canonical; /* not judged: Linux does not look either */
	uint16_t l;

	if (len < LLC_MSG_LEN || len > LLC_V2_MSG_MAX)
		return -EPROTO;
	memset(&v, 0, sizeof(v));
	v.m.type = b[0] & LLC_V2_TYPE_MASK;
	v.m.flags = b[3];
	switch (b[0] & ~LLC_V2_TYPE_MASK) {
	case 0:
		v.form = 1;
		if (len != LLC_MSG_LEN || b[1] != LLC_MSG_LEN)
			return -EPROTO;
		break;
	case LLC_V2_FORM:
		v.form = 2;
		memcpy(&l, b + offsetof(struct llc_v2_hdr, length), sizeof(l));
		/* Linux refuses an ADD_LINK by sending its first 44 bytes
		 * back with the reason's nibble in the length's high byte */
		if (le16toh(l) != len &&
		    !(len == LLC_MSG_LEN && b[1] == LLC_MSG_LEN &&
		      b[2] <= 0x0f && v.m.type == LLC_ADD_LINK &&
		      (v.m.flags & LLC_FLAG_ADD_LINK_REJ)))
			return -EPROTO;
		break;
	default:
		return -EPROTO;
	}
	if (!llc_v2_type_ok(v.m.type, v.form))
		return -EPROTO;
	if (v.m.type == LLC_REQ_ADD_LINK) {
		const struct llc_req_add_link *w = buf;

		v.gid_cnt = w->gid_cnt;
		if (v.gid_cnt > LLC_V2_GIDS_MAX ||
		    len != sizeof(*w) + v.gid_cnt * 16u)
			return -EPROTO;
		for (i = 0; i < v.gid_cnt; i++)
			memcpy(v.gids[i], b + sizeof(*w) + i * 16u, 16);
	} else {
		/* the 44 bytes as the v1 form has them, for llc_parse */
		memcpy(v1, b, sizeof(v1));
		v1[0] = v.m.type;
		if (v.form == 2) {
			v1[1] = LLC_MSG_LEN;
			v1[2] = 0;
		}
		if (!llc_parse(v1, &v.m, &canonical))
			return -EPROTO;
		llc_v2_unused_clear(&v.m);
		if (llc_v2_has_ext(&v)) {
			const struct llc_add_link_v2_ext *x =
				(const void *)(b + LLC_MSG_LEN);
			const struct llc_rkey_triple *t = (const void *)(x + 1);

			if (len < LLC_V2_ADD_LINK_LEN(0))
				return -EPROTO;
			v.direct = x->direct & 0x80;
			memcpy(v.target_gid, x->client_target_gid,
			       sizeof(v.target_gid));
			v.num_rkeys = le16toh(x->num_rkeys);
			if (v.num_rkeys > LLC_V2_RKEYS_MAX ||
			    len != LLC_V2_ADD_LINK_LEN(v.num_rkeys))
				return -EPROTO;
			for (i = 0; i < v.num_rkeys; i++) {
				v.rt[i].rkey = be32toh(t[i].rmb_key);
				v.rt[i].rkey_new = be32toh(t[i].rmb_key_new);
				v.rt[i].vaddr_new = be64toh(t[i].rmb_vaddr_new);
			}
		} else if (len != LLC_MSG_LEN) {
			return -EPROTO;
		}
	}
	if (!llc_v2_info_ok(&v))
		return -EPROTO;
	*out = v;
	return 0;
}

/* "CONFIRM_LINK", ... for logs; "UNKNOWN" for other types. */
const char *
llc_type_name(uint8_t type)
{
	switch (type) {
	case LLC_CONFIRM_LINK:
		return "CONFIRM_LINK";
	case LLC_ADD_LINK:
		return "ADD_LINK";
	case LLC_ADD_LINK_CONT:
		return "ADD_LINK_CONT";
	case LLC_DELETE_LINK:
		return "DELETE_LINK";
	case LLC_REQ_ADD_LINK:
		return "REQ_ADD_LINK";
	case LLC_CONFIRM_RKEY:
		return "CONFIRM_RKEY";
	case LLC_TEST_LINK:
		return "TEST_LINK";
	case LLC_DELETE_RKEY:
		return "DELETE_RKEY";
	case LLC_CONN_OPEN:
		return "CONN_OPEN";
	case LLC_CONN_ACCEPT:
		return "CONN_ACCEPT";
	case LLC_CONN_REJECT:
		return "CONN_REJECT";
	case LLC_CONN_RESUME:
		return "CONN_RESUME";
	case LLC_CONN_ORIGIN:
		return "CONN_ORIGIN";
	}
	return "UNKNOWN";
}

/* "LOST_PATH", ... for a DELETE_LINK reason; "UNKNOWN" otherwise. */
const char *
llc_delete_reason_name(uint32_t reason)
{
	switch (reason) {
	case 0:
		return "NONE";
	case LLC_DEL_LOST_PATH:
		return "LOST_PATH";
	case LLC_DEL_OP_INIT_TERM:
		return "OP_INIT_TERM";
	case LLC_DEL_PROG_INIT_TERM:
		return "PROG_INIT_TERM";
	case LLC_DEL_PROT_VIOL:
		return "PROT_VIOL";
	case LLC_DEL_NO_ASYM_NEEDED:
		return "NO_ASYM_NEEDED";
	case LLC_DEL_NOLNK:
		return "NOLNK";
	case LLC_DEL_NOLGR:
		return "NOLGR";
	}
	return "UNKNOWN";
}

/* ---- the protocol on the links of a link group ---- */

/* The group above hears of link and its LLC through lgr.c's handlers. */
static const struct lgr_llc_ops *
llc_up(const struct lgr_link *link)
{
	return link->lgr->ctx->llc_ops;
}

_Static_assert(sizeof(((struct lgr_llc_qent *)NULL)->msg) == LLC_MSG_LEN,
	       "LLC queue entries hold one message");

static void llc_rx(struct wr_link *l, const void *msg, size_t len, void *arg);

static struct lgr_link *
llc_waiter_link(struct wr_waiter *w)
{
	return container_of(w, struct lgr_link, waiter);
}

/*
 * The one place an LLC message is put on the wire: take a TX slot of wr
 * (parking w for the next one when there is none), copy msg, post.  0,
 * -EBUSY (w parked), or -errno.
 */
static int
llc_post_msg(struct wr_link *wr, struct wr_waiter *w, const uint8_t *msg,
	     wr_tx_done_fn done, void *arg)
{
	struct wr_tx_slot *slot;
	int rc;

	rc = wr_tx_get(wr, &slot, w);
	if (rc)
		return rc;
	memcpy(wr_tx_buf(slot), msg, LLC_MSG_LEN);
	return wr_tx_post(wr, slot, NULL, 0, done, arg);
}

/*
 * A standard-dialect message longer than 44 bytes (a v2 ADD_LINK with
 * rkeys), len bytes of msg, in a TX slot of its own, now: Linux sends
 * those from one buffer per group, one at a time, and so its peer takes
 * them only in their flow.  0, -EBUSY (no slot free now), or -errno.
 */
static int
llc_post_long(struct lgr_link *link, const uint8_t *msg, size_t len)
{
	struct wr_tx_slot *slot;
	int rc;

	if (link->wr == NULL || wr_link_is_down(link->wr))
		return -ENOLINK;
	if (len > LLC_V2_TX_MAX)
		return -EMSGSIZE;
	rc = wr_tx_get(link->wr, &slot, NULL);
	if (rc)
		return rc;
	memcpy(wr_tx_buf(slot), msg, len);
	wr_tx_len(link->wr, slot, (uint32_t)len);
	return wr_tx_post(link->wr, slot, NULL, 0, NULL, NULL);
}

/* Take a TX slot and post msg.  0, -EBUSY (parked), or -errno. */
static int
llc_post(struct lgr_link *link, const uint8_t *msg, wr_tx_done_fn done,
	 void *arg)
{
	return llc_post_msg(link->wr, &link->waiter, msg, done, arg);
}

/* A TX slot freed up for the queued messages (or the link went). */
static void
llc_wake(struct wr_waiter *w, int status)
{
	struct lgr_link *link = llc_waiter_link(w);
	struct lgr_llc_qent *e;
	bool used = false;
	int rc;

	if (status < 0) {
		link->q_len = 0;
		return;
	}
	while (link->q_len > 0) {
		e = &link->q[link->q_head];
		rc = llc_post(link, e->msg, e->done, e->arg);
		used = true;
		if (rc == -EBUSY)
			return;
		link->q_head = (link->q_head + 1) % LGR_LLC_QUEUE;
		link->q_len--;
		if (rc) {
			link->q_len = 0;
			return;
		}
	}
	if (!used)
		wr_tx_wait_cancel(link->wr, w);
}

/* Receive LLC messages on link: every type but the CDC's. */
void
llc_link_init(struct lgr_link *link)
{
	int t;

	link->waiter.wake = llc_wake;
	for (t = 0; t < 256; t++)
		if (t != CDC_MSG_TYPE)
			wr_rx_register(link->wr, (uint8_t)t, llc_rx);
}

/* Forget what link has queued, before its wr_link goes. */
void
llc_link_release(struct lgr_link *link)
{
	if (link->wr != NULL)
		wr_tx_wait_cancel(link->wr, &link->waiter);
	link->q_len = 0;
}

/*
 * m as link's group speaks it: our own dialect's 44 bytes, or the
 * SMC-R dialect's v2 form (a kernel peer's group: version nibble,
 * host-endian length).  0 or -EINVAL.
 */
static int
llc_encode_for(const struct lgr_link *link, uint8_t msg[LLC_MSG_LEN],
	       const struct llc_info *m)
{
	struct llc_v2_info *v;
	int n;

	if (!link->lgr->smcr)
		return llc_msg_encode(msg, LLC_MSG_LEN, m) == LLC_MSG_LEN ?
			       0 :
			       -EINVAL;
	v = calloc(1, sizeof(*v));
	if (v == NULL)
		return -ENOMEM;
	v->form = 2;
	v->m = *m;
	n = llc_v2_encode(msg, LLC_MSG_LEN, v);
	free(v);
	return n == LLC_MSG_LEN ? 0 : -EINVAL;
}

/*
 * Send m on link, now or once a TX slot frees (in order); done(arg), if
 * given, runs when it completed.  0, -ENOLINK, -EINVAL (m would not
 * decode), -ENOBUFS (queue full), or -errno from the post.
 */
static int llc_send_msg(struct lgr_link *link, const uint8_t msg[LLC_MSG_LEN],
			wr_tx_done_fn done, void *arg);

int
llc_send(struct lgr_link *link, const struct llc_info *m, wr_tx_done_fn done,
	 void *arg)
{
	uint8_t msg[LLC_MSG_LEN];

	if (llc_encode_for(link, msg, m) != 0)
		return -EINVAL;
	return llc_send_msg(link, msg, done, arg);
}

/* llc_send() of a message already encoded. */
static int
llc_send_msg(struct lgr_link *link, const uint8_t msg[LLC_MSG_LEN],
	     wr_tx_done_fn done, void *arg)
{
	struct lgr_llc_qent *e;
	int rc;

	if (link->wr == NULL || wr_link_is_down(link->wr))
		return -ENOLINK;
	if (link->q_len == 0) {
		rc = llc_post(link, msg, done, arg);
		if (rc != -EBUSY)
			return rc;
	}
	if (link->q_len == LGR_LLC_QUEUE)
		return -ENOBUFS;
	e = &link->q[(link->q_head + link->q_len) % LGR_LLC_QUEUE];
	memcpy(e->msg, msg, sizeof(e->msg));
	e->done = done;
	e->arg = arg;
	link->q_len++;
	return 0;
}

/* ---- messages that wait past the queue ---- */

/* A TX slot for a message waiting on its own (or its link went). */
static void
llc_pending_wake(struct wr_waiter *w, int status)
{
	struct llc_pending *p = container_of(w, struct llc_pending, waiter);
	int rc = status;

	if (rc == 0)
		rc = llc_post_msg(p->wr, &p->waiter, p->msg, NULL, NULL);
	if (rc == -EBUSY)
		return; /* parked again, in its turn */
	p->wr = NULL;
	if (p->sent != NULL)
		p->sent(p, rc);
	else {
		if (rc)
			log_debug("LLC message 0x%02x not sent: %s", p->msg[0],
				  strerror(-rc));
		free(p);
	}
}

/*
 * Send m on link like llc_send(); when its queue is full, m waits for a
 * TX slot in p, in its turn with other waiters, for as long as it takes
 * (a burst of connection opens must not give up).  sent(p, 0 or -errno)
 * then runs once it went out or could not; p stays the caller's.  0
 * when m went out or was queued (sent does not run), 1 when it waits in
 * p, -errno.
 */
int
llc_send_wait(struct lgr_link *link, const struct llc_info *m,
	      struct llc_pending *p,
	      void (*sent)(struct llc_pending *p, int status))
{
	int rc;

	rc = llc_send(link, m, NULL, NULL);
	if (rc != -ENOBUFS)
		return rc;
	if (llc_encode_for(link, p->msg, m) != 0)
		return -EINVAL;
	p->sent = sent;
	p->wr = link->wr;
	p->waiter.wake = llc_pending_wake;
	rc = llc_post_msg(p->wr, &p->waiter, p->msg, NULL, NULL);
	if (rc == -EBUSY)
		return 1;
	p->wr = NULL;
	return rc;
}

/*
 * Send m on link, waiting past the queue if need be, with nobody left to
 * tell: the message outlives its sender (a refusal for a connection that
 * is going).  The link going down frees it.  0 or -errno.
 */
int
llc_send_detached(struct lgr_link *link, const struct llc_info *m)
{
	struct llc_pending *p;
	int rc;

	rc = llc_send(link, m, NULL, NULL);
	if (rc != -ENOBUFS)
		return rc;
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return -ENOMEM;
	rc = llc_send_wait(link, m, p, NULL);
	if (rc == 1)
		return 0;
	free(p);
	return rc;
}

/* Is p waiting for a TX slot? */
bool
llc_pending_waits(const struct llc_pending *p)
{
	return p->wr != NULL;
}

/* p waits no more; its message is not sent. */
void
llc_pending_cancel(struct llc_pending *p)
{
	if (p->wr != NULL)
		wr_tx_wait_cancel(p->wr, &p->waiter);
	p->wr = NULL;
}

static void
llc_confirm_link_fill(const struct lgr_link *link, struct llc_info *m,
		      bool resp)
{
	const struct lgr *lgr = link->lgr;
	struct llc_confirm_link_info *c = &m->confirm_link;

	memset(m, 0, sizeof(*m));
	m->type = LLC_CONFIRM_LINK;
	m->flags = LLC_FLAG_NO_RMBE_EYEC | (resp ? LLC_FLAG_RESP : 0);
	memcpy(c->mac, link->local.mac, sizeof(c->mac));
	memcpy(c->gid, link->local.gid, sizeof(c->gid));
	c->qpn = link->local.qpn;
	c->link_num = link->id;
	memcpy(c->link_uid, lgr->uid, sizeof(c->link_uid));
	c->max_links = lgr->max_links;
	c->max_conns = lgr->max_conns;
}

/* Server: CONFIRM_LINK request over link itself. */
int
llc_confirm_link_send(struct lgr_link *link)
{
	struct llc_info m;

	llc_confirm_link_fill(link, &m, false);
	return llc_send(link, &m, NULL, NULL);
}

/*
 * A kernel peer's group: ADD_LINK for link over via, our request (server)
 * or our accepting answer (client), in v2 form with the rkeys of our RMBs
 * on link, as many as one TX slot takes (the rest follow in CONFIRM_RKEY
 * once link is up, session_rdma_conn_rkeys_announce).  0 or -errno.
 */
static int
llc_smcr_add_link_send(struct lgr_link *via, struct lgr_link *link, bool resp)
{
	const struct lgr_ctx *ctx = via->lgr->ctx;
	struct llc_v2_info *v = calloc(1, sizeof(*v));
	struct llc_add_link_info *a;
	uint8_t msg[LLC_V2_TX_MAX];
	int n;

	if (v == NULL)
		return -ENOMEM;
	v->form = 2;
	v->m.type = LLC_ADD_LINK;
	v->m.flags = resp ? LLC_FLAG_RESP : 0;
	a = &v->m.add_link;
	memcpy(a->mac, link->local.mac, sizeof(a->mac));
	memcpy(a->gid, link->local.gid, sizeof(a->gid));
	a->qpn = link->local.qpn;
	a->link_num = link->id;
	a->mtu = (uint8_t)link->local.mtu;
	if (resp && link->peer.mtu != 0 && link->peer.mtu < link->local.mtu)
		a->mtu = (uint8_t)link->peer.mtu;
	a->psn = link->local.psn;
	/* Linux: direct unless its route has a gateway; the target GID is
	 * the sender's own on the new link */
	v->direct = true;
	memcpy(v->target_gid, link->local.gid, sizeof(v->target_gid));
	/* the data path's RMBs (none in tests without one) */
	if (ctx->ops.rkeys != NULL)
		ctx->ops.rkeys(via, link, v, LLC_V2_TX_RKEYS, ctx->ops_arg);
	n = llc_v2_encode(msg, sizeof(msg), v);
	if (n > 0)
		n = llc_post_long(via, msg, (size_t)n);
	free(v);
	return n;
}

/* Server: offer link (its QP made, not connected) in ADD_LINK over via. */
int
llc_add_link_send(struct lgr_link *via, struct lgr_link *link)
{
	struct llc_add_link_info *a;
	struct llc_info m;

	if (via->lgr->smcr)
		return llc_smcr_add_link_send(via, link, false);
	memset(&m, 0, sizeof(m));
	m.type = LLC_ADD_LINK;
	a = &m.add_link;
	memcpy(a->mac, link->local.mac, sizeof(a->mac));
	memcpy(a->gid, link->local.gid, sizeof(a->gid));
	a->qpn = link->local.qpn;
	a->link_num = link->id;
	a->mtu = (uint8_t)link->local.mtu;
	a->psn = link->local.psn;
	return llc_send(via, &m, NULL, NULL);
}

/*
 * DELETE_LINK request over via: link link_num, or with all the whole
 * group, for reason (LLC_DEL_*); orderly when nothing failed.
 */
int
llc_delete_link_send(struct lgr_link *via, uint8_t link_num, uint32_t reason,
		     bool all, bool orderly, wr_tx_done_fn done, void *arg)
{
	struct llc_info m;

	memset(&m, 0, sizeof(m));
	m.type = LLC_DELETE_LINK;
	m.flags = (all ? LLC_FLAG_DEL_LINK_ALL : 0) |
		  (orderly ? LLC_FLAG_DEL_LINK_ORDERLY : 0);
	m.delete_link.link_num = link_num;
	m.delete_link.reason = reason;
	return llc_send(via, &m, done, arg);
}

/* TEST_LINK request on link; the answer is due within llc_wait_ms. */
int
llc_test_link_send(struct lgr_link *link)
{
	uint8_t rnd[AUTH_NONCE_LEN];
	struct llc_info m;

	auth_nonce(rnd);
	memcpy(link->test_data, rnd, sizeof(link->test_data));
	memset(&m, 0, sizeof(m));
	m.type = LLC_TEST_LINK;
	memcpy(m.test_link.user_data, link->test_data,
	       sizeof(m.test_link.user_data));
	link->test_pending = true;
	link->test_sent_us = now_us();
	link->test_deadline_ms = now_ms() + link->lgr->ctx->t.llc_wait_ms;
	link->test_sent++;
	return llc_send(link, &m, NULL, NULL);
}

static void
llc_dev_addr(struct dev_qp_addr *out, const uint8_t *gid, const uint8_t *mac,
	     uint32_t qpn, uint32_t psn, uint8_t mtu)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->gid, gid, sizeof(out->gid));
	memcpy(out->mac, mac, sizeof(out->mac));
	out->qpn = qpn;
	out->psn = psn;
	out->mtu = mtu;
}

static void
llc_violation(struct lgr_link *link, const struct llc_info *m, const char *why)
{
	char msg[128];

	snprintf(msg, sizeof(msg), "%s%s on link %u: %s",
		 llc_type_name(m->type),
		 m->flags & LLC_FLAG_RESP ? " response" : "", link->id, why);
	llc_up(link)->protocol_error(link->lgr, msg);
}

static void
llc_rx_confirm_link(struct lgr_link *link, const struct llc_info *m)
{
	const struct llc_confirm_link_info *c = &m->confirm_link;
	struct lgr *lgr = link->lgr;
	bool resp = m->flags & LLC_FLAG_RESP;
	bool first = lgr->state == LGR_STATE_CONFIRMING;
	struct llc_info r;

	if (link->wait !=
	    (resp ? LGR_WAIT_CONFIRM_RESP : LGR_WAIT_CONFIRM_REQ)) {
		llc_violation(link, m, "not expected now");
		return;
	}
	/* Linux's limits there are not the negotiated ones (6.1: 3 and 0) */
	if (memcmp(c->gid, link->peer.gid, sizeof(c->gid)) ||
	    c->qpn != link->peer.qpn ||
	    (!lgr->smcr && (c->max_links != lgr->max_links ||
			    c->max_conns != lgr->max_conns))) {
		llc_violation(link, m, "does not match the link or the group");
		return;
	}
	if (resp || !first) {
		/* a kernel peer answers with its own link_uid */
		if (c->link_num != link->id ||
		    (!lgr->smcr &&
		     memcmp(c->link_uid, lgr->uid, sizeof(lgr->uid)))) {
			llc_violation(link, m, "for another link");
			return;
		}
	} else {
		/* the client learns the ids from the server */
		link->id = c->link_num;
		memcpy(lgr->uid, c->link_uid, sizeof(lgr->uid));
	}
	if (!resp) {
		llc_confirm_link_fill(link, &r, true);
		if (llc_send(link, &r, NULL, NULL)) {
			llc_up(link)->link_fail(link, LLC_DEL_LOST_PATH, false,
						"cannot answer CONFIRM_LINK");
			return;
		}
	}
	llc_up(link)->link_confirmed(link);
}

static void llc_rx_smcr_add_link(struct lgr_link *link);

/*
 * ADD_LINK on link, m as decoded, v the whole message for a kernel
 * peer's group (its rkeys for the new link; NULL in our own dialect).
 */
static void
llc_rx_add_link(struct lgr_link *link, const struct llc_info *m,
		const struct llc_v2_info *v)
{
	const struct llc_add_link_info *a = &m->add_link;
	struct lgr *lgr = link->lgr;
	struct lgr_link *added;
	struct dev_qp_addr peer;
	struct llc_info r;

	if (link->state != LGR_LINK_ACTIVE || lgr->state != LGR_STATE_ACTIVE) {
		llc_violation(link, m, "not on an active link");
		return;
	}
	if (m->flags & LLC_FLAG_RESP) {
		if (lgr->role != LGR_ROLE_SERVER) {
			llc_violation(link, m, "we offered none");
			return;
		}
		added = lgr_link_find(lgr, a->link_num);
		if (added == NULL || added->wait != LGR_WAIT_ADD_RESP) {
			log_debug("lgr %u: late ADD_LINK answer for link %u",
				  lgr->id, a->link_num);
			return;
		}
		added->wait = LGR_WAIT_NONE;
		if (m->flags & LLC_FLAG_ADD_LINK_REJ) {
			llc_up(link)->link_add_rejected(added);
			return;
		}
		if (v != NULL)
			llc_up(link)->add_link_rkeys(link, added, v);
		llc_dev_addr(&peer, a->gid, a->mac, a->qpn, a->psn, a->mtu);
		llc_up(link)->link_add_answer(added, &peer);
		return;
	}
	if (lgr->role != LGR_ROLE_CLIENT) {
		llc_violation(link, m, "only the server adds links");
		return;
	}
	llc_dev_addr(&peer, a->gid, a->mac, a->qpn, a->psn, a->mtu);
	added = a->mtu != 0 ?
			llc_up(link)->link_add_peer(lgr, a->link_num, &peer) :
			NULL;
	if (v != NULL) {
		/* a kernel server's: the answer carries our rkeys */
		if (added == NULL) {
			llc_rx_smcr_add_link(link);
			return;
		}
		llc_up(link)->add_link_rkeys(link, added, v);
		if (llc_smcr_add_link_send(link, added, true) == 0)
			return;
		llc_up(link)->link_fail(added, LLC_DEL_LOST_PATH, true,
					"cannot answer ADD_LINK");
		llc_rx_smcr_add_link(link);
		return;
	}
	memset(&r, 0, sizeof(r));
	r.type = LLC_ADD_LINK;
	r.flags = LLC_FLAG_RESP;
	if (added == NULL) {
		/* a reject echoes the request with its reason */
		r.flags |= LLC_FLAG_ADD_LINK_REJ;
		r.add_link = *a;
		r.add_link.rej_rsn = LLC_REJ_RSN_NO_ALT_PATH;
		log_info("lgr %u: no alternate path for link %u: rejected",
			 lgr->id, a->link_num);
	} else {
		memcpy(r.add_link.mac, added->local.mac,
		       sizeof(r.add_link.mac));
		memcpy(r.add_link.gid, added->local.gid,
		       sizeof(r.add_link.gid));
		r.add_link.qpn = added->local.qpn;
		r.add_link.link_num = added->id;
		r.add_link.mtu = (uint8_t)added->local.mtu;
		r.add_link.psn = added->local.psn;
	}
	if (llc_send(link, &r, NULL, NULL)) {
		if (added != NULL)
			llc_up(link)->link_fail(added, LLC_DEL_LOST_PATH, true,
						"cannot answer ADD_LINK");
		llc_up(link)->link_fail(link, LLC_DEL_LOST_PATH, false,
					"cannot answer ADD_LINK");
	}
}

static void
llc_rx_delete_link(struct lgr_link *link, const struct llc_info *m)
{
	const struct llc_delete_link_info *d = &m->delete_link;
	struct lgr *lgr = link->lgr;
	struct lgr_link *target, *via;
	struct llc_info r;
	char why[80];

	if (m->flags & LLC_FLAG_RESP) {
		log_debug("lgr %u: peer answered DELETE_LINK %u: %s", lgr->id,
			  d->link_num, llc_delete_reason_name(d->reason));
		return;
	}
	if (lgr->state != LGR_STATE_ACTIVE) {
		llc_violation(link, m, "the group is not active");
		return;
	}
	if (m->flags & LLC_FLAG_DEL_LINK_ALL) {
		llc_up(link)->terminate(lgr, d->reason,
					m->flags & LLC_FLAG_DEL_LINK_ORDERLY,
					true);
		return;
	}
	memset(&r, 0, sizeof(r));
	r.type = LLC_DELETE_LINK;
	r.flags = LLC_FLAG_RESP;
	r.delete_link.link_num = d->link_num;
	target = lgr_link_find(lgr, d->link_num);
	if (target == NULL) {
		r.delete_link.reason = LLC_DEL_NOLNK;
		llc_send(link, &r, NULL, NULL);
		return;
	}
	snprintf(why, sizeof(why), "deleted by the peer (%s)",
		 llc_delete_reason_name(d->reason));
	llc_up(link)->link_fail(target, d->reason, true, why);
	if (lgr->state != LGR_STATE_ACTIVE)
		return;
	via = target != link ? link : NULL;
	if (via == NULL || via->state != LGR_LINK_ACTIVE)
		return;
	llc_send(via, &r, NULL, NULL);
}

static void
llc_rx_test_link(struct lgr_link *link, const struct llc_info *m)
{
	struct llc_info r;

	if (m->flags & LLC_FLAG_RESP) {
		if (link->test_pending &&
		    memcmp(m->test_link.user_data, link->test_data,
			   sizeof(link->test_data)) == 0) {
			link->test_pending = false;
			link->test_answered++;
			link->test_rtt_us = now_us() - link->test_sent_us;
			if (link->test_rtt_us == 0)
				link->test_rtt_us = 1;
		}
		return;
	}
	r = *m;
	r.flags = LLC_FLAG_RESP;
	if (llc_send(link, &r, NULL, NULL))
		llc_up(link)->link_fail(link, LLC_DEL_LOST_PATH, false,
					"cannot answer TEST_LINK");
}

/*
 * Answer a kernel peer's request m on link by sending it back as the
 * response, as Linux answers CONFIRM_RKEY, DELETE_RKEY (err_mask 0: no
 * rkey failed) and a REQ_ADD_LINK it does not act on.
 */
static void
llc_rx_smcr_echo(struct lgr_link *link, const struct llc_info *m)
{
	struct llc_info r = *m;

	r.flags |= LLC_FLAG_RESP;
	if (llc_send(link, &r, NULL, NULL))
		llc_up(link)->link_fail(link, LLC_DEL_LOST_PATH, false,
					"cannot answer an LLC request");
}

static void
llc_rx_smcr_req_add_link(struct lgr_link *link, struct llc_v2_info *v)
{
	uint8_t msg[LLC_MSG_LEN];

	/* Linux sends back the request's first 44 bytes: one GID */
	v->m.flags |= LLC_FLAG_RESP;
	if (v->gid_cnt > 1) {
		v->gid_cnt = 1;
		memset(v->gids + 1, 0, sizeof(v->gids) - sizeof(v->gids[0]));
	}
	if (llc_v2_encode(msg, sizeof(msg), v) != LLC_MSG_LEN ||
	    llc_send_msg(link, msg, NULL, NULL))
		llc_up(link)->link_fail(link, LLC_DEL_LOST_PATH, false,
					"cannot answer REQ_ADD_LINK");
}

/*
 * Server of a kernel peer's group, its first link just up: the ADD_LINK
 * without a link that a release 0 client waits for (llc_add_link_none),
 * in v2 form, 44 bytes.  Its refusal ends the client's wait at once.
 */
void
llc_add_link_none_send(struct lgr_link *link)
{
	struct llc_v2_info *v = calloc(1, sizeof(*v));
	uint8_t msg[LLC_MSG_LEN];

	if (v == NULL)
		return; /* the client goes on after its 3 s */
	v->form = 2;
	v->m.type = LLC_ADD_LINK;
	memcpy(v->m.add_link.mac, link->local.mac, sizeof(v->m.add_link.mac));
	memcpy(v->m.add_link.gid, link->local.gid, sizeof(v->m.add_link.gid));
	if (llc_v2_encode(msg, sizeof(msg), v) == LLC_MSG_LEN &&
	    llc_send_msg(link, msg, NULL, NULL) == 0) {
		link->lgr->smcr_offered = true;
		STATS_INC(link->lgr->ctx->stats, smc_add_link_none);
	}
	free(v);
}

/*
 * A kernel server's ADD_LINK we have no device for (or no room): refused
 * as a Linux client refuses one it has no alternate path for (a v2
 * reject carries no reason: that byte is the length's).  Linux before
 * 6.6 (release 0) always offers a second link after CONFIRM_LINK; its
 * flow then ends at once instead of after 2 s.
 */
static void
llc_rx_smcr_add_link(struct lgr_link *link)
{
	struct llc_v2_info *r = calloc(1, sizeof(*r));
	uint8_t msg[LLC_MSG_LEN];

	if (r == NULL) {
		llc_up(link)->link_fail(link, LLC_DEL_LOST_PATH, false,
					"cannot answer ADD_LINK");
		return;
	}
	r->form = 2;
	r->m.type = LLC_ADD_LINK;
	r->m.flags = LLC_FLAG_RESP | LLC_FLAG_ADD_LINK_REJ;
	if (llc_v2_encode(msg, sizeof(msg), r) != LLC_MSG_LEN ||
	    llc_send_msg(link, msg, NULL, NULL))
		llc_up(link)->link_fail(link, LLC_DEL_LOST_PATH, false,
					"cannot answer ADD_LINK");
	else
		STATS_INC(link->lgr->ctx->stats, smc_add_link_rejects);
	free(r);
}

/*
 * An LLC message on a link of a kernel peer's group: either header form,
 * Linux's rules (llc_v2_decode).  The link-level flows are ours as in
 * our own dialect; the rkeys of the peer's RMBs go to the group's table
 * (rtoken.c), their requests are answered here and their responses (to
 * nothing we ask) ignored.
 */
static void
llc_rx_smcr(struct lgr_link *link, const void *msg, size_t len)
{
	struct llc_v2_info *v = malloc(sizeof(*v));
	char why[64];

	if (v == NULL || llc_v2_decode(msg, len, v)) {
		free(v);
		snprintf(why, sizeof(why),
			 "malformed LLC message (type 0x%02x, %zu bytes) on "
			 "link %u",
			 len > 0 ? *(const uint8_t *)msg : 0, len, link->id);
		llc_up(link)->protocol_error(link->lgr, why);
		return;
	}
	link->act_ms = now_ms();
	switch (v->m.type) {
	case LLC_CONFIRM_LINK:
		llc_rx_confirm_link(link, &v->m);
		break;
	case LLC_DELETE_LINK:
		llc_rx_delete_link(link, &v->m);
		break;
	case LLC_TEST_LINK:
		llc_rx_test_link(link, &v->m);
		break;
	case LLC_CONFIRM_RKEY:
		/* the rkeys of its new RMB on the group's other links */
		if (v->m.flags & LLC_FLAG_RESP)
			break;
		if (llc_up(link)->confirm_rkey(link, &v->m))
			v->m.flags |= LLC_FLAG_RKEY_NEG;
		llc_rx_smcr_echo(link, &v->m);
		break;
	case LLC_DELETE_RKEY:
		if (v->m.flags & LLC_FLAG_RESP)
			break;
		llc_up(link)->delete_rkey(link, &v->m);
		llc_rx_smcr_echo(link, &v->m);
		break;
	case LLC_REQ_ADD_LINK:
		/* a kernel client asking for a link (a device of its came
		 * up): answered as Linux answers a request it does not act
		 * on (else the peer's flow waits, and its next CONFIRM_RKEY
		 * fails after 20 s).  A second link is ours to offer, once,
		 * when the group's first link is up (lgr_add_link_start) */
		if (!(v->m.flags & LLC_FLAG_RESP))
			llc_rx_smcr_req_add_link(link, v);
		break;
	case LLC_ADD_LINK:
		/* the refusal of our offer without a link; else as in our
		 * own dialect, with the rkeys in the message */
		if ((v->m.flags & LLC_FLAG_RESP) &&
		    (v->m.flags & LLC_FLAG_ADD_LINK_REJ) &&
		    link->lgr->smcr_offered)
			link->lgr->smcr_offered = false;
		else
			llc_rx_add_link(link, &v->m, v);
		break;
	default:
		llc_violation(link, &v->m, "not handled here");
		break;
	}
	free(v);
}

/*
 * Our own dialect's CONFIRM_RKEY on link: the rkeys of a connection's RMB
 * element on the group's other links, for the group's table (as a kernel
 * peer's, llc_rx_smcr).  Never answered: we ask for no answers.
 */
static void
llc_rx_confirm_rkey(struct lgr_link *link, const struct llc_info *m)
{
	char why[64];

	if (link->state != LGR_LINK_ACTIVE) {
		llc_violation(link, m, "not on an active link");
		return;
	}
	if ((m->flags & LLC_FLAG_RESP) ||
	    llc_up(link)->confirm_rkey(link, m) != -EPROTO)
		return;
	snprintf(why, sizeof(why),
		 "CONFIRM_RKEY on link %u: not for one RMB element", link->id);
	llc_up(link)->protocol_error(link->lgr, why);
}

/* An LLC message arrived on link (wr.c's receive handler). */
static void
llc_rx(struct wr_link *l, const void *msg, size_t len, void *arg)
{
	struct lgr_link *link = arg;
	struct lgr *lgr = link->lgr;
	struct lgr_ctx *ctx = lgr->ctx;
	struct llc_info m;
	char why[64];

	if (link->state == LGR_LINK_FREE || link->state == LGR_LINK_DOWN ||
	    lgr->state == LGR_STATE_TERMINATING)
		return;
	if (lgr->smcr) {
		llc_rx_smcr(link, msg, len);
		return;
	}
	if (llc_msg_decode(msg, len, &m)) {
		snprintf(why, sizeof(why),
			 "malformed LLC message (type 0x%02x, %zu bytes) on "
			 "link %u",
			 len > 0 ? *(const uint8_t *)msg : 0, len, link->id);
		llc_up(link)->protocol_error(lgr, why);
		return;
	}
	link->act_ms = now_ms();
	switch (m.type) {
	case LLC_CONFIRM_LINK:
		llc_rx_confirm_link(link, &m);
		return;
	case LLC_ADD_LINK:
		llc_rx_add_link(link, &m, NULL);
		return;
	case LLC_DELETE_LINK:
		llc_rx_delete_link(link, &m);
		return;
	case LLC_TEST_LINK:
		llc_rx_test_link(link, &m);
		return;
	case LLC_CONFIRM_RKEY:
		llc_rx_confirm_rkey(link, &m);
		return;
	}
	/* connections: the data path's business */
	if (ctx->ops.llc_rx != NULL && link->state == LGR_LINK_ACTIVE)
		ctx->ops.llc_rx(link, &m, ctx->ops_arg);
	else
		llc_violation(link, &m, "not handled here");
}

/*
 * Timers of link, from the group's tick: the LLC answer it waits for, and
 * TEST_LINK after test_link_time without a sign of life (completions),
 * whose answer is due within llc_wait_ms or the link is down.
 */
void
llc_link_tick(struct lgr_link *link, uint64_t now)
{
	const struct lgr_ctx *ctx = link->lgr->ctx;
	uint64_t c = wr_link_stats(link->wr)->completions, test_ms;
	char why[64];

	if (c != link->act_completions) {
		link->act_completions = c;
		link->act_ms = now;
	}
	if (link->wait != LGR_WAIT_NONE && now >= link->deadline_ms) {
		llc_up(link)->link_timeout(link);
		return;
	}
	if (link->state != LGR_LINK_ACTIVE)
		return;
	if (link->test_pending) {
		if (now >= link->test_deadline_ms) {
			snprintf(why, sizeof(why),
				 "no answer to TEST_LINK within %u ms",
				 ctx->t.llc_wait_ms);
			llc_up(link)->link_fail(link, LLC_DEL_LOST_PATH, false,
						why);
		}
		return;
	}
	test_ms =
		ctx->t.test_link_ms ?
			ctx->t.test_link_ms :
			(uint64_t)lgr_ctx_conf(ctx)->rdma.test_link_time * 1000;
	if (test_ms > 0 && now - link->act_ms >= test_ms &&
	    llc_test_link_send(link))
		llc_up(link)->link_fail(link, LLC_DEL_LOST_PATH, false,
					"cannot send TEST_LINK");
}
