// SPDX-License-Identifier: BSD-2-Clause
/*
 * LLC codec: builds and checks the 44-byte link-layer control messages of
 * llc_wire.h.  Pure functions on byte buffers, no verbs: the receive
 * completion handler passes the bytes it got and acts on the llc_info.
 * Each type has one parse function (wire to host, refusing what is not
 * canonical: reserved bytes, padding, flags the type does not carry) and
 * one check function on the host form that the encoder runs too, so a
 * message decodes iff it re-encodes to the same bytes.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "llc_wire.h"

#define LLC_FLAG_RKEY_FLAGS (LLC_FLAG_RKEY_NEG | LLC_FLAG_RKEY_RETRY)

static void
llc_put24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

static uint32_t
llc_get24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static bool
llc_all_zero(const void *p, size_t len)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < len; i++)
		if (b[i] != 0)
			return false;
	return true;
}

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
		return LLC_FLAG_RESP;
	case LLC_CONN_OPEN:
		return 0;
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

		return !llc_all_zero(c->gid, sizeof(c->gid)) &&
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
		       !llc_all_zero(a->gid, sizeof(a->gid)) &&
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
		       len <= LLC_EXPORT_MAX && clc_name_valid(o->export, len);
	}
	case LLC_CONN_ACCEPT: {
		const struct llc_conn_accept_info *a = &m->conn_accept;

		return a->opener_token != 0 && a->token != 0 &&
		       llc_rmbe_ok(a->rmb_vaddr, a->rmbe_size);
	}
	case LLC_CONN_REJECT:
		return m->conn_reject.opener_token != 0 &&
		       m->conn_reject.reason != 0;
	}
	return false;
}

/*
 * Wire to host for one type, refusing non-zero reserved fields and
 * unused entries; the values themselves are left to llc_info_ok().
 */
static bool
llc_parse(const uint8_t *buf, struct llc_info *m)
{
	const struct llc_hdr *hd = (const struct llc_hdr *)buf;
	unsigned int i;

	m->type = hd->type;
	m->flags = hd->flags;
	if (hd->type != LLC_ADD_LINK && hd->reserved != 0)
		return false;
	switch (hd->type) {
	case LLC_CONFIRM_LINK: {
		const struct llc_confirm_link *w = (const void *)buf;
		struct llc_confirm_link_info *c = &m->confirm_link;

		memcpy(c->mac, w->sender_mac, sizeof(c->mac));
		memcpy(c->gid, w->sender_gid, sizeof(c->gid));
		c->qpn = llc_get24(w->sender_qp_num);
		c->link_num = w->link_num;
		memcpy(c->link_uid, w->link_uid, sizeof(c->link_uid));
		c->max_links = w->max_links;
		c->max_conns = w->max_conns;
		return llc_all_zero(w->reserved, sizeof(w->reserved));
	}
	case LLC_ADD_LINK: {
		const struct llc_add_link *w = (const void *)buf;
		struct llc_add_link_info *a = &m->add_link;

		memcpy(a->mac, w->sender_mac, sizeof(a->mac));
		memcpy(a->gid, w->sender_gid, sizeof(a->gid));
		a->qpn = llc_get24(w->sender_qp_num);
		a->link_num = w->link_num;
		a->mtu = w->mtu & 0x0f;
		a->psn = llc_get24(w->initial_psn);
		a->rej_rsn = hd->reserved & 0x0f;
		return (hd->reserved & 0xf0) == 0 && (w->mtu & 0xf0) == 0 &&
		       llc_all_zero(w->reserved2, sizeof(w->reserved2)) &&
		       llc_all_zero(w->reserved, sizeof(w->reserved));
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
		return llc_all_zero(w->reserved2, sizeof(w->reserved2)) &&
		       llc_all_zero(w->reserved, sizeof(w->reserved));
	}
	case LLC_DELETE_LINK: {
		const struct llc_delete_link *w = (const void *)buf;

		m->delete_link.link_num = w->link_num;
		m->delete_link.reason = be32toh(w->reason);
		return llc_all_zero(w->reserved, sizeof(w->reserved));
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
		return w->reserved == 0;
	}
	case LLC_TEST_LINK: {
		const struct llc_test_link *w = (const void *)buf;

		memcpy(m->test_link.user_data, w->user_data,
		       sizeof(w->user_data));
		return llc_all_zero(w->reserved, sizeof(w->reserved));
	}
	case LLC_DELETE_RKEY: {
		const struct llc_delete_rkey *w = (const void *)buf;
		struct llc_delete_rkey_info *d = &m->delete_rkey;

		d->num_rkeys = w->num_rkeys;
		d->err_mask = w->err_mask;
		for (i = 0; i < LLC_DEL_RKEY_MAX; i++)
			d->rkey[i] = be32toh(w->rkey[i]);
		return llc_all_zero(w->reserved, sizeof(w->reserved)) &&
		       llc_all_zero(w->reserved2, sizeof(w->reserved2));
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
		return w->reserved == 0 &&
		       llc_all_zero(w->export + len, sizeof(w->export) - len);
	}
	case LLC_CONN_ACCEPT: {
		const struct llc_conn_accept *w = (const void *)buf;
		struct llc_conn_accept_info *a = &m->conn_accept;

		a->opener_token = be32toh(w->opener_token);
		a->token = be32toh(w->token);
		a->rmb_rkey = be32toh(w->rmb_rkey);
		a->rmb_vaddr = be64toh(w->rmb_vaddr);
		a->rmbe_size = w->rmbe_size;
		return llc_all_zero(w->reserved, sizeof(w->reserved));
	}
	case LLC_CONN_REJECT: {
		const struct llc_conn_reject *w = (const void *)buf;

		m->conn_reject.opener_token = be32toh(w->opener_token);
		m->conn_reject.reason = be32toh(w->reason);
		return llc_all_zero(w->reserved, sizeof(w->reserved));
	}
	}
	return false;
}

/*
 * Build the message *in into buf (size bytes, at least LLC_MSG_LEN).
 * LLC_MSG_LEN, -ENOSPC, or -EINVAL if the decoder would refuse *in.
 */
int
llc_msg_encode(void *buf, size_t size, const struct llc_info *in)
{
	uint8_t *b = buf;
	struct llc_hdr *hd = buf;
	unsigned int i;

	if (size < LLC_MSG_LEN)
		return -ENOSPC;
	if (!llc_info_ok(in))
		return -EINVAL;
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
		llc_put24(w->sender_qp_num, c->qpn);
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
		llc_put24(w->sender_qp_num, a->qpn);
		w->link_num = a->link_num;
		w->mtu = a->mtu;
		llc_put24(w->initial_psn, a->psn);
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
		break;
	}
	case LLC_CONN_REJECT: {
		struct llc_conn_reject *w = buf;

		w->opener_token = htobe32(in->conn_reject.opener_token);
		w->reason = htobe32(in->conn_reject.reason);
		break;
	}
	}
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

	if (len != LLC_MSG_LEN || hd->length != LLC_MSG_LEN)
		return -EPROTO;
	memset(&m, 0, sizeof(m));
	if (!llc_parse(buf, &m) || !llc_info_ok(&m))
		return -EPROTO;
	*out = m;
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
