// SPDX-License-Identifier: BSD-2-Clause
/*
 * CLC codec: every message round trips at the offsets docs/protocol.md
 * gives, and every malformed input is refused with the decline reason the
 * peer will be told.  And the server's handshake slots: connections that
 * never send their PROPOSAL do not turn a real peer away.
 */
#include <sys/socket.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>
#include <event2/event.h>

#include "smcproxyd.h"
#include "clc_wire.h"

#define CK_REFUSED(rc, decl, want)                 \
	do {                                       \
		ck_assert_int_eq((rc), -EPROTO);   \
		ck_assert_uint_eq((decl), (want)); \
	} while (0)

static const uint8_t types[] = {CLC_PROPOSAL, CLC_ACCEPT, CLC_CONFIRM,
				CLC_DECLINE};

static void
prop_fill(struct clc_proposal_info *p)
{
	int i;

	memset(p, 0, sizeof(*p));
	for (i = 0; i < 8; i++)
		p->system_id[i] = (uint8_t)(0x10 + i);
	for (i = 0; i < 16; i++)
		p->link.gid[i] = (uint8_t)(0xa0 + i);
	for (i = 0; i < 6; i++)
		p->link.mac[i] = (uint8_t)(0x50 + i);
	p->link.qpn = 0x123456;
	p->link.psn = 0xabcdef;
	p->link.mtu = 5;
	p->max_conns = 200;
	p->max_links = 2;
	p->features = CLC_FEAT_CONN_OPEN | CLC_FEAT_INLINE;
	for (i = 0; i < 32; i++)
		p->nonce[i] = (uint8_t)(0xc0 + i);
	strcpy(p->name, "host-a.example_1");
}

static void
acc_fill(struct clc_accept_info *a)
{
	int i;

	memset(a, 0, sizeof(*a));
	a->first_contact = true;
	for (i = 0; i < 8; i++)
		a->system_id[i] = (uint8_t)(0x20 + i);
	for (i = 0; i < 16; i++)
		a->link.gid[i] = (uint8_t)(0xb0 + i);
	for (i = 0; i < 6; i++)
		a->link.mac[i] = (uint8_t)(0x60 + i);
	a->link.qpn = 0x000011;
	a->link.psn = 0x00fedc;
	a->link.mtu = 3;
	a->rmbe_size = 2;
	a->max_conns = 16;
	a->max_links = 1;
	a->features = CLC_FEAT_CONN_OPEN;
	a->rmb_rkey = 0x01020304;
	a->alert_token = 0x0a0b0c0d;
	a->rmb_vaddr = 0x1122334455667788ULL;
	for (i = 0; i < 32; i++) {
		a->nonce[i] = (uint8_t)(0xd0 + i);
		a->mac[i] = (uint8_t)(0x70 + i);
	}
}

static void
decl_fill(struct clc_decline_info *d)
{
	memset(d, 0, sizeof(*d));
	memcpy(d->system_id, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
	d->diagnosis = CLC_DECL_NOSMCRDEV;
}

/* A valid message of each type, as the encoders build it. */
static size_t
good_msg(uint8_t type, uint8_t *buf)
{
	struct clc_proposal_info p;
	struct clc_accept_info a;
	struct clc_decline_info d;
	int len = -1;

	switch (type) {
	case CLC_PROPOSAL:
		prop_fill(&p);
		len = clc_proposal_encode(buf, CLC_MSG_MAX, &p);
		break;
	case CLC_ACCEPT:
		acc_fill(&a);
		len = clc_accept_encode(buf, CLC_MSG_MAX, &a);
		break;
	case CLC_CONFIRM:
		acc_fill(&a);
		len = clc_confirm_encode(buf, CLC_MSG_MAX, &a);
		break;
	case CLC_DECLINE:
		decl_fill(&d);
		len = clc_decline_encode(buf, CLC_MSG_MAX, &d);
		break;
	}
	ck_assert_int_gt(len, 0);
	return (size_t)len;
}

/* Decode with the decoder for type, then re-encode into out. */
static int
decode_as(uint8_t type, const uint8_t *buf, size_t len, uint32_t *decl,
	  uint8_t *out)
{
	struct clc_proposal_info p;
	struct clc_accept_info a;
	struct clc_decline_info d;
	int rc = -1;

	switch (type) {
	case CLC_PROPOSAL:
		rc = clc_proposal_decode(buf, len, &p, decl);
		if (rc == 0 && out)
			rc = clc_proposal_encode(out, CLC_MSG_MAX, &p) > 0 ? 0 :
									     -1;
		break;
	case CLC_ACCEPT:
		rc = clc_accept_decode(buf, len, &a, decl);
		if (rc == 0 && out)
			rc = clc_accept_encode(out, CLC_MSG_MAX, &a) > 0 ? 0 :
									   -1;
		break;
	case CLC_CONFIRM:
		rc = clc_confirm_decode(buf, len, &a, decl);
		if (rc == 0 && out)
			rc = clc_confirm_encode(out, CLC_MSG_MAX, &a) > 0 ? 0 :
									    -1;
		break;
	case CLC_DECLINE:
		rc = clc_decline_decode(buf, len, &d, decl);
		if (rc == 0 && out)
			rc = clc_decline_encode(out, CLC_MSG_MAX, &d) > 0 ? 0 :
									    -1;
		break;
	}
	return rc;
}

START_TEST(proposal_round_trip)
{
	uint8_t buf[CLC_MSG_MAX];
	struct clc_proposal_info in, out;
	uint32_t decl = 0;

	prop_fill(&in);
	ck_assert_int_eq(clc_proposal_encode(buf, sizeof(buf), &in), 152);
	memset(&out, 0xee, sizeof(out));
	ck_assert_int_eq(clc_proposal_decode(buf, 152, &out, &decl), 0);
	ck_assert_uint_eq(decl, 0);
	ck_assert_mem_eq(out.system_id, in.system_id, 8);
	ck_assert_mem_eq(out.link.gid, in.link.gid, 16);
	ck_assert_mem_eq(out.link.mac, in.link.mac, 6);
	ck_assert_uint_eq(out.link.qpn, 0x123456);
	ck_assert_uint_eq(out.link.psn, 0xabcdef);
	ck_assert_uint_eq(out.link.mtu, 5);
	ck_assert_uint_eq(out.max_conns, 200);
	ck_assert_uint_eq(out.max_links, 2);
	ck_assert_uint_eq(out.features, CLC_FEAT_CONN_OPEN | CLC_FEAT_INLINE);
	ck_assert_mem_eq(out.nonce, in.nonce, 32);
	ck_assert_str_eq(out.name, "host-a.example_1");

	/* the widest values */
	in.link.qpn = 0xffffff;
	in.link.psn = 0;
	in.link.mtu = 1;
	in.max_conns = 255;
	in.max_links = 1;
	in.features = 0xffffffff; /* unknown bits are proposed, not refused */
	memset(in.name, 'z', CLC_NAME_MAX);
	in.name[CLC_NAME_MAX] = '\0';
	ck_assert_int_eq(clc_proposal_encode(buf, sizeof(buf), &in), 152);
	ck_assert_int_eq(clc_proposal_decode(buf, 152, &out, &decl), 0);
	ck_assert_uint_eq(out.link.qpn, 0xffffff);
	ck_assert_uint_eq(out.features, 0xffffffff);
	ck_assert_str_eq(out.name, in.name);
}
END_TEST

/* The offsets docs/protocol.md promises. */
START_TEST(proposal_layout)
{
	uint8_t buf[CLC_MSG_MAX];
	size_t len = good_msg(CLC_PROPOSAL, buf);

	ck_assert_uint_eq(len, 152);
	ck_assert_mem_eq(buf, "\xe2\xd4\xc3\xd9\x01\x00\x98\x10", 8);
	ck_assert_uint_eq(buf[8], 0x10);  /* system id */
	ck_assert_uint_eq(buf[16], 0xa0); /* gid */
	ck_assert_uint_eq(buf[32], 0x50); /* mac */
	ck_assert_mem_eq(buf + 38, "\x12\x34\x56", 3);
	ck_assert_mem_eq(buf + 41, "\xab\xcd\xef", 3);
	ck_assert_uint_eq(buf[44], 5);
	ck_assert_uint_eq(buf[45], 200);
	ck_assert_uint_eq(buf[46], 2);
	ck_assert_uint_eq(buf[47], 0);
	ck_assert_mem_eq(buf + 48, "\x00\x00\x00\x03", 4);
	ck_assert_uint_eq(buf[52], 0xc0); /* nonce */
	ck_assert_mem_eq(buf + 84, "host-a.example_1\0", 17);
	ck_assert_uint_eq(buf[147], 0);
	ck_assert_mem_eq(buf + 148, CLC_EYECATCHER, 4);
}
END_TEST

START_TEST(accept_confirm_round_trip)
{
	uint8_t buf[CLC_MSG_MAX];
	struct clc_accept_info in, out;
	uint32_t decl = 0;
	int fc;

	for (fc = 0; fc < 2; fc++) {
		acc_fill(&in);
		in.first_contact = fc;
		ck_assert_int_eq(clc_accept_encode(buf, sizeof(buf), &in), 136);
		ck_assert_int_eq(clc_accept_decode(buf, 136, &out, &decl), 0);
		ck_assert_int_eq(out.first_contact, fc);
		ck_assert_mem_eq(out.system_id, in.system_id, 8);
		ck_assert_mem_eq(out.link.gid, in.link.gid, 16);
		ck_assert_mem_eq(out.link.mac, in.link.mac, 6);
		ck_assert_uint_eq(out.link.qpn, 0x11);
		ck_assert_uint_eq(out.link.psn, 0xfedc);
		ck_assert_uint_eq(out.link.mtu, 3);
		ck_assert_uint_eq(out.rmbe_size, 2);
		ck_assert_uint_eq(out.max_conns, 16);
		ck_assert_uint_eq(out.max_links, 1);
		ck_assert_uint_eq(out.features, CLC_FEAT_CONN_OPEN);
		ck_assert_uint_eq(out.rmb_rkey, 0x01020304);
		ck_assert_uint_eq(out.alert_token, 0x0a0b0c0d);
		ck_assert(out.rmb_vaddr == 0x1122334455667788ULL);
		ck_assert_mem_eq(out.nonce, in.nonce, 32);
		ck_assert_mem_eq(out.mac, in.mac, 32);

		ck_assert_int_eq(clc_confirm_encode(buf, sizeof(buf), &in),
				 104);
		memset(&out, 0xee, sizeof(out));
		ck_assert_int_eq(clc_confirm_decode(buf, 104, &out, &decl), 0);
		ck_assert_int_eq(out.first_contact, fc);
		ck_assert_uint_eq(out.alert_token, 0x0a0b0c0d);
		ck_assert(out.rmb_vaddr == 0x1122334455667788ULL);
		ck_assert_mem_eq(out.mac, in.mac, 32);
		for (int i = 0; i < 32; i++) /* CONFIRM carries no nonce */
			ck_assert_uint_eq(out.nonce[i], 0);
	}
	ck_assert_uint_eq(decl, 0);
}
END_TEST

START_TEST(accept_confirm_layout)
{
	uint8_t buf[CLC_MSG_MAX];

	ck_assert_uint_eq(good_msg(CLC_ACCEPT, buf), 136);
	ck_assert_mem_eq(buf, "\xe2\xd4\xc3\xd9\x02\x00\x88\x18", 8);
	ck_assert_uint_eq(buf[8], 0x20);
	ck_assert_uint_eq(buf[16], 0xb0);
	ck_assert_uint_eq(buf[32], 0x60);
	ck_assert_mem_eq(buf + 38, "\x00\x00\x11\x00\xfe\xdc", 6);
	ck_assert_uint_eq(buf[44], 0x23); /* rmbe_size 2, mtu 3 */
	ck_assert_mem_eq(buf + 45, "\x10\x01\x00", 3);
	ck_assert_mem_eq(buf + 48, "\x00\x00\x00\x01", 4);
	ck_assert_mem_eq(buf + 52, "\x01\x02\x03\x04\x0a\x0b\x0c\x0d", 8);
	ck_assert_mem_eq(buf + 60, "\x11\x22\x33\x44\x55\x66\x77\x88", 8);
	ck_assert_uint_eq(buf[68], 0xd0);  /* nonce */
	ck_assert_uint_eq(buf[100], 0x70); /* mac */
	ck_assert_mem_eq(buf + 132, CLC_EYECATCHER, 4);

	ck_assert_uint_eq(good_msg(CLC_CONFIRM, buf), 104);
	ck_assert_mem_eq(buf, "\xe2\xd4\xc3\xd9\x03\x00\x68\x18", 8);
	ck_assert_uint_eq(buf[44], 0x23);
	ck_assert_uint_eq(buf[68], 0x70); /* mac */
	ck_assert_mem_eq(buf + 100, CLC_EYECATCHER, 4);
}
END_TEST

START_TEST(decline_round_trip)
{
	uint8_t buf[CLC_MSG_MAX];
	struct clc_decline_info in, out;
	uint32_t decl = 0;

	decl_fill(&in);
	ck_assert_int_eq(clc_decline_encode(buf, sizeof(buf), &in), 28);
	ck_assert_mem_eq(buf, "\xe2\xd4\xc3\xd9\x04\x00\x1c\x10", 8);
	ck_assert_mem_eq(buf + 8, in.system_id, 8);
	ck_assert_mem_eq(buf + 16, "\x03\x03\x00\x02\0\0\0\0", 8);
	ck_assert_mem_eq(buf + 24, CLC_EYECATCHER, 4);
	ck_assert_int_eq(clc_decline_decode(buf, 28, &out, &decl), 0);
	ck_assert(!out.sync_err);
	ck_assert_uint_eq(out.diagnosis, CLC_DECL_NOSMCRDEV);
	ck_assert_mem_eq(out.system_id, in.system_id, 8);

	in.sync_err = true;
	in.diagnosis = CLC_DECL_SYNCERR;
	ck_assert_int_eq(clc_decline_encode(buf, sizeof(buf), &in), 28);
	ck_assert_uint_eq(buf[7], 0x18);
	ck_assert_int_eq(clc_decline_decode(buf, 28, &out, &decl), 0);
	ck_assert(out.sync_err);
	ck_assert_uint_eq(out.diagnosis, CLC_DECL_SYNCERR);

	/* a code we do not know is still a decline */
	in.diagnosis = 0x77777777;
	ck_assert_int_eq(clc_decline_encode(buf, sizeof(buf), &in), 28);
	ck_assert_int_eq(clc_decline_decode(buf, 28, &out, &decl), 0);
	ck_assert_uint_eq(out.diagnosis, 0x77777777);
	ck_assert_uint_eq(decl, 0);
}
END_TEST

START_TEST(header_check)
{
	static const uint8_t other_eyec[][4] = {
		{0xe2, 0xd4, 0xc3, 0xc4}, /* SMC-D */
		{0xe2, 0xd4, 0xc3, 0xc6}, /* our fallback hello */
	};
	static const size_t lens[] = {0, 152, 136, 104, 28};
	uint8_t buf[CLC_MSG_MAX], h[8];
	uint16_t length;
	uint8_t type;
	uint32_t decl;
	size_t i, t;

	for (t = 0; t < sizeof(types); t++) {
		good_msg(types[t], buf);
		ck_assert_int_eq(clc_hdr_check(buf, 8, &type, &length, &decl),
				 0);
		ck_assert_uint_eq(type, types[t]);
		ck_assert_uint_eq(length, lens[types[t]]);

		/* every byte of the eyecatcher matters */
		for (i = 0; i < 4; i++) {
			memcpy(h, buf, 8);
			h[i] ^= 0x01;
			CK_REFUSED(clc_hdr_check(h, 8, &type, &length, &decl),
				   decl, CLC_DECL_BADMSG);
		}
		for (i = 0; i < 2; i++) {
			memcpy(h, buf, 8);
			memcpy(h, other_eyec[i], 4);
			CK_REFUSED(clc_hdr_check(h, 8, &type, &length, &decl),
				   decl, CLC_DECL_BADMSG);
		}
		/* another version, whatever else the header says */
		for (i = 0; i < 16; i++) {
			memcpy(h, buf, 8);
			h[7] = (uint8_t)(i << 4 | (h[7] & 0x0f));
			if (i == CLC_VERSION) {
				ck_assert_int_eq(clc_hdr_check(h, 8, &type,
							       &length, &decl),
						 0);
				continue;
			}
			CK_REFUSED(clc_hdr_check(h, 8, &type, &length, &decl),
				   decl, CLC_DECL_VERSMISMAT);
			h[4] = 0x33;
			h[6] ^= 0x40;
			CK_REFUSED(clc_hdr_check(h, 8, &type, &length, &decl),
				   decl, CLC_DECL_VERSMISMAT);
		}
		/* reserved bits of byte 7 */
		for (i = 0; i < 3; i++) {
			memcpy(h, buf, 8);
			h[7] |= (uint8_t)(1 << i);
			CK_REFUSED(clc_hdr_check(h, 8, &type, &length, &decl),
				   decl, CLC_DECL_BADMSG);
		}
		/* length: one short, one long, absurd */
		memcpy(h, buf, 8);
		h[6]--;
		CK_REFUSED(clc_hdr_check(h, 8, &type, &length, &decl), decl,
			   CLC_DECL_BADMSG);
		h[6] += 2;
		CK_REFUSED(clc_hdr_check(h, 8, &type, &length, &decl), decl,
			   CLC_DECL_BADMSG);
		h[5] = 0xff;
		h[6] = 0xff;
		CK_REFUSED(clc_hdr_check(h, 8, &type, &length, &decl), decl,
			   CLC_DECL_BADMSG);
		h[5] = h[6] = 0;
		CK_REFUSED(clc_hdr_check(h, 8, &type, &length, &decl), decl,
			   CLC_DECL_BADMSG);
		/* a short peek */
		for (i = 0; i < 8; i++)
			CK_REFUSED(clc_hdr_check(buf, i, &type, &length, &decl),
				   decl, CLC_DECL_BADMSG);
	}
	/* unknown types, even with a plausible length */
	good_msg(CLC_DECLINE, buf);
	for (i = 0; i < 256; i++) {
		if (i >= CLC_PROPOSAL && i <= CLC_DECLINE)
			continue;
		buf[4] = (uint8_t)i;
		CK_REFUSED(clc_hdr_check(buf, 8, &type, &length, &decl), decl,
			   CLC_DECL_BADMSG);
	}
}
END_TEST

/* A read cut short anywhere, a byte too many, a broken trailer. */
START_TEST(truncated_long_trailer)
{
	uint8_t buf[CLC_MSG_MAX + 1], bad[CLC_MSG_MAX + 1];
	uint32_t decl;
	size_t len, cut, t;

	for (t = 0; t < sizeof(types); t++) {
		len = good_msg(types[t], buf);
		decl = 0;
		ck_assert_int_eq(decode_as(types[t], buf, len, &decl, NULL), 0);
		for (cut = 0; cut < len; cut++) {
			decl = 0;
			CK_REFUSED(decode_as(types[t], buf, cut, &decl, NULL),
				   decl, CLC_DECL_BADMSG);
		}
		buf[len] = 0;
		CK_REFUSED(decode_as(types[t], buf, len + 1, &decl, NULL), decl,
			   CLC_DECL_BADMSG);
		/* the header agreeing with the longer buffer does not help */
		memcpy(bad, buf, len + 1);
		bad[6]++;
		CK_REFUSED(decode_as(types[t], bad, len + 1, &decl, NULL), decl,
			   CLC_DECL_BADMSG);
		for (cut = len - 4; cut < len; cut++) {
			memcpy(bad, buf, len);
			bad[cut] ^= 0x80;
			CK_REFUSED(decode_as(types[t], bad, len, &decl, NULL),
				   decl, CLC_DECL_BADMSG);
		}
	}
}
END_TEST

/* Each decoder takes only its own type. */
START_TEST(wrong_decoder)
{
	uint8_t buf[CLC_MSG_MAX];
	uint32_t decl;
	size_t len, t, u;

	for (t = 0; t < sizeof(types); t++) {
		len = good_msg(types[t], buf);
		for (u = 0; u < sizeof(types); u++) {
			if (u == t)
				continue;
			CK_REFUSED(decode_as(types[u], buf, len, &decl, NULL),
				   decl, CLC_DECL_BADMSG);
		}
	}
}
END_TEST

static int
prop_with(struct clc_proposal_info *p, uint32_t *decl)
{
	uint8_t buf[CLC_MSG_MAX];
	struct clc_proposal_info tmp, out;
	struct clc_proposal *w = (struct clc_proposal *)buf;

	/* encode a valid one, then put the value in by hand */
	prop_fill(&tmp);
	ck_assert_int_eq(clc_proposal_encode(buf, sizeof(buf), &tmp), 152);
	w->lcl.qpn[0] = (uint8_t)(p->link.qpn >> 16);
	w->lcl.qpn[1] = (uint8_t)(p->link.qpn >> 8);
	w->lcl.qpn[2] = (uint8_t)p->link.qpn;
	memcpy(w->lcl.gid, p->link.gid, 16);
	w->qp_mtu = p->link.mtu;
	w->max_conns = p->max_conns;
	w->max_links = p->max_links;
	memcpy(w->name, p->name, sizeof(w->name));
	return clc_proposal_decode(buf, sizeof(*w), &out, decl);
}

START_TEST(proposal_fields)
{
	struct clc_proposal_info p;
	uint8_t buf[CLC_MSG_MAX];
	struct clc_proposal *w = (struct clc_proposal *)buf;
	uint32_t decl;
	int v;

	for (v = 0; v < 256; v++) {
		prop_fill(&p);
		p.max_conns = (uint8_t)v;
		if (v < 16)
			CK_REFUSED(prop_with(&p, &decl), decl,
				   CLC_DECL_MAXCONNERR);
		else
			ck_assert_int_eq(prop_with(&p, &decl), 0);
		prop_fill(&p);
		p.max_links = (uint8_t)v;
		if (v < 1 || v > 2)
			CK_REFUSED(prop_with(&p, &decl), decl,
				   CLC_DECL_MAXLINKERR);
		else
			ck_assert_int_eq(prop_with(&p, &decl), 0);
		prop_fill(&p);
		p.link.mtu = (uint8_t)v;
		if (v < 1 || v > 5)
			CK_REFUSED(prop_with(&p, &decl), decl, CLC_DECL_BADMSG);
		else
			ck_assert_int_eq(prop_with(&p, &decl), 0);
	}
	prop_fill(&p);
	p.link.qpn = 1;
	CK_REFUSED(prop_with(&p, &decl), decl, CLC_DECL_BADMSG);
	p.link.qpn = 0;
	CK_REFUSED(prop_with(&p, &decl), decl, CLC_DECL_BADMSG);
	p.link.qpn = 2;
	ck_assert_int_eq(prop_with(&p, &decl), 0);
	memset(p.link.gid, 0, 16);
	CK_REFUSED(prop_with(&p, &decl), decl, CLC_DECL_BADMSG);

	/* names: empty, bad characters, junk after the NUL, no NUL */
	prop_fill(&p);
	memset(p.name, 0, sizeof(p.name));
	CK_REFUSED(prop_with(&p, &decl), decl, CLC_DECL_BADMSG);
	strcpy(p.name, "a/b");
	CK_REFUSED(prop_with(&p, &decl), decl, CLC_DECL_BADMSG);
	strcpy(p.name, "a b");
	CK_REFUSED(prop_with(&p, &decl), decl, CLC_DECL_BADMSG);
	strcpy(p.name, "caf\xc3\xa9");
	CK_REFUSED(prop_with(&p, &decl), decl, CLC_DECL_BADMSG);
	strcpy(p.name, "ok");
	p.name[40] = 'x';
	CK_REFUSED(prop_with(&p, &decl), decl, CLC_DECL_BADMSG);
	memset(p.name, 'n', sizeof(p.name));
	CK_REFUSED(prop_with(&p, &decl), decl, CLC_DECL_BADMSG);
	p.name[63] = '\0';
	ck_assert_int_eq(prop_with(&p, &decl), 0);

	/* the worker asked for is carried as it is; first-contact bit: not
	 * in a PROPOSAL */
	good_msg(CLC_PROPOSAL, buf);
	w->worker = 7;
	ck_assert_int_eq(clc_proposal_decode(buf, 152, &p, &decl), 0);
	ck_assert_uint_eq(p.worker, 7);
	good_msg(CLC_PROPOSAL, buf);
	w->hdr.flags |= CLC_FLAG_FIRST_CONTACT;
	CK_REFUSED(clc_proposal_decode(buf, 152, &p, &decl), decl,
		   CLC_DECL_BADMSG);
}
END_TEST

START_TEST(accept_fields)
{
	uint8_t good[CLC_MSG_MAX], buf[CLC_MSG_MAX];
	struct clc_accept *w = (struct clc_accept *)buf;
	struct clc_confirm *c = (struct clc_confirm *)buf;
	struct clc_accept_info a;
	uint32_t decl;
	int v;

	good_msg(CLC_ACCEPT, good);
	for (v = 0; v < 256; v++) {
		memcpy(buf, good, 136);
		w->body.max_conns = (uint8_t)v;
		if (v < 16)
			CK_REFUSED(clc_accept_decode(buf, 136, &a, &decl), decl,
				   CLC_DECL_MAXCONNERR);
		else
			ck_assert_int_eq(clc_accept_decode(buf, 136, &a, &decl),
					 0);
		memcpy(buf, good, 136);
		w->body.max_links = (uint8_t)v;
		if (v < 1 || v > 2)
			CK_REFUSED(clc_accept_decode(buf, 136, &a, &decl), decl,
				   CLC_DECL_MAXLINKERR);
		else
			ck_assert_int_eq(clc_accept_decode(buf, 136, &a, &decl),
					 0);
		/* rmbe_size: any nibble; qp_mtu: 1..5 */
		memcpy(buf, good, 136);
		w->body.rmbe_mtu = (uint8_t)v;
		if ((v & 0x0f) < 1 || (v & 0x0f) > 5)
			CK_REFUSED(clc_accept_decode(buf, 136, &a, &decl), decl,
				   CLC_DECL_BADMSG);
		else
			ck_assert_int_eq(clc_accept_decode(buf, 136, &a, &decl),
					 0);
	}
	/* alert token 0 is reserved */
	memcpy(buf, good, 136);
	w->body.alert_token = 0;
	CK_REFUSED(clc_accept_decode(buf, 136, &a, &decl), decl,
		   CLC_DECL_BADMSG);
	/* only features both sides know are ever negotiated */
	memcpy(buf, good, 136);
	w->body.features = htobe32(0x80000000);
	CK_REFUSED(clc_accept_decode(buf, 136, &a, &decl), decl,
		   CLC_DECL_BADMSG);
	memcpy(buf, good, 136);
	w->body.worker = 0x03; /* the server's worker + 1 */
	ck_assert_int_eq(clc_accept_decode(buf, 136, &a, &decl), 0);
	ck_assert_uint_eq(a.worker, 3);
	/* the RMB region must not wrap around the address space */
	memcpy(buf, good, 136);
	w->body.rmbe_mtu = 0x05; /* 16 KiB */
	w->body.rmb_vaddr = htobe64(UINT64_MAX - 16384);
	ck_assert_int_eq(clc_accept_decode(buf, 136, &a, &decl), 0);
	w->body.rmb_vaddr = htobe64(UINT64_MAX - 16383);
	CK_REFUSED(clc_accept_decode(buf, 136, &a, &decl), decl,
		   CLC_DECL_BADMSG);
	memcpy(buf, good, 136);
	w->body.lcl.qpn[2] = 1;
	w->body.lcl.qpn[0] = w->body.lcl.qpn[1] = 0;
	CK_REFUSED(clc_accept_decode(buf, 136, &a, &decl), decl,
		   CLC_DECL_BADMSG);
	memcpy(buf, good, 136);
	memset(w->body.lcl.gid, 0, 16);
	CK_REFUSED(clc_accept_decode(buf, 136, &a, &decl), decl,
		   CLC_DECL_BADMSG);

	/* the same rules for CONFIRM */
	good_msg(CLC_CONFIRM, buf);
	c->body.max_conns = 15;
	CK_REFUSED(clc_confirm_decode(buf, 104, &a, &decl), decl,
		   CLC_DECL_MAXCONNERR);
	good_msg(CLC_CONFIRM, buf);
	c->body.max_links = 0;
	CK_REFUSED(clc_confirm_decode(buf, 104, &a, &decl), decl,
		   CLC_DECL_MAXLINKERR);
	good_msg(CLC_CONFIRM, buf);
	c->body.alert_token = 0;
	CK_REFUSED(clc_confirm_decode(buf, 104, &a, &decl), decl,
		   CLC_DECL_BADMSG);
}
END_TEST

START_TEST(decline_fields)
{
	uint8_t buf[CLC_MSG_MAX];
	struct clc_decline *w = (struct clc_decline *)buf;
	struct clc_decline_info d;
	uint32_t decl;
	int i;

	good_msg(CLC_DECLINE, buf);
	w->peer_diagnosis = 0;
	CK_REFUSED(clc_decline_decode(buf, 28, &d, &decl), decl,
		   CLC_DECL_BADMSG);
	for (i = 0; i < 4; i++) {
		good_msg(CLC_DECLINE, buf);
		w->reserved[i] = 0x10;
		CK_REFUSED(clc_decline_decode(buf, 28, &d, &decl), decl,
			   CLC_DECL_BADMSG);
	}
}
END_TEST

START_TEST(encoders_refuse)
{
	uint8_t buf[CLC_MSG_MAX];
	struct clc_proposal_info p;
	struct clc_accept_info a;
	struct clc_decline_info d;

	prop_fill(&p);
	ck_assert_int_eq(clc_proposal_encode(buf, 151, &p), -ENOSPC);
	p.link.qpn = 0x1000000;
	ck_assert_int_eq(clc_proposal_encode(buf, sizeof(buf), &p), -EINVAL);
	prop_fill(&p);
	p.link.psn = 0x1000000;
	ck_assert_int_eq(clc_proposal_encode(buf, sizeof(buf), &p), -EINVAL);
	prop_fill(&p);
	memset(p.name, 'x', sizeof(p.name)); /* no NUL */
	ck_assert_int_eq(clc_proposal_encode(buf, sizeof(buf), &p), -EINVAL);
	prop_fill(&p);
	p.max_conns = 15;
	ck_assert_int_eq(clc_proposal_encode(buf, sizeof(buf), &p), -EINVAL);

	acc_fill(&a);
	ck_assert_int_eq(clc_accept_encode(buf, 135, &a), -ENOSPC);
	ck_assert_int_eq(clc_confirm_encode(buf, 103, &a), -ENOSPC);
	a.rmbe_size = 16;
	ck_assert_int_eq(clc_accept_encode(buf, sizeof(buf), &a), -EINVAL);
	acc_fill(&a);
	a.link.mtu = 0x15; /* would alias rmbe_size */
	ck_assert_int_eq(clc_accept_encode(buf, sizeof(buf), &a), -EINVAL);
	acc_fill(&a);
	a.alert_token = 0;
	ck_assert_int_eq(clc_confirm_encode(buf, sizeof(buf), &a), -EINVAL);
	acc_fill(&a);
	a.features = 0x100;
	ck_assert_int_eq(clc_accept_encode(buf, sizeof(buf), &a), -EINVAL);

	decl_fill(&d);
	ck_assert_int_eq(clc_decline_encode(buf, 27, &d), -ENOSPC);
	d.diagnosis = 0;
	ck_assert_int_eq(clc_decline_encode(buf, sizeof(buf), &d), -EINVAL);
}
END_TEST

/*
 * No bit is ignored: flipping any one bit of a valid message gives a
 * message that is refused or that re-encodes to exactly those bytes.
 */
START_TEST(bit_flips_canonical)
{
	uint8_t good[CLC_MSG_MAX], buf[CLC_MSG_MAX], re[CLC_MSG_MAX];
	uint32_t decl;
	size_t len, bit, t;
	int refused;

	for (t = 0; t < sizeof(types); t++) {
		len = good_msg(types[t], good);
		refused = 0;
		for (bit = 0; bit < len * 8; bit++) {
			memcpy(buf, good, len);
			buf[bit / 8] ^= (uint8_t)(0x80 >> bit % 8);
			if (decode_as(types[t], buf, len, &decl, re)) {
				refused++;
				continue;
			}
			ck_assert_mem_eq(re, buf, len);
		}
		ck_assert_int_gt(refused, 64); /* framing alone is 96 bits */
	}
}
END_TEST

START_TEST(decline_names)
{
	static const struct {
		uint32_t code;
		const char *name;
	} all[] = {
		{0x01010000, "MEM"},	     {0x02010000, "TIMEOUT_CL"},
		{0x02020000, "TIMEOUT_AL"},  {0x03000000, "CNFERR"},
		{0x03010000, "PEERNOSMC"},   {0x03020000, "IPSEC"},
		{0x03030000, "NOSMCDEV"},    {0x03030001, "NOSMCDDEV"},
		{0x03030002, "NOSMCRDEV"},   {0x03030003, "NOISM2SUPP"},
		{0x03030004, "NOV2EXT"},     {0x03030005, "NOV2DEXT"},
		{0x03030006, "NOSEID"},	     {0x03030007, "NOSMCD2DEV"},
		{0x03030008, "NOUEID"},	     {0x03030009, "RELEASEERR"},
		{0x0303000a, "MAXCONNERR"},  {0x0303000b, "MAXLINKERR"},
		{0x03040000, "MODEUNSUPP"},  {0x03050000, "RMBE_EC"},
		{0x03060000, "OPTUNSUPP"},   {0x03070000, "DIFFPREFIX"},
		{0x03080000, "GETVLANERR"},  {0x03090000, "ISMVLANERR"},
		{0x030a0000, "NOACTLINK"},   {0x030b0000, "NOSRVLINK"},
		{0x030c0000, "VERSMISMAT"},  {0x030d0000, "MAX_DMB"},
		{0x030e0000, "NOROUTE"},     {0x030f0000, "NOINDIRECT"},
		{0x04000000, "SYNCERR"},     {0x05000000, "PEERDECL"},
		{0x09990000, "INTERR"},	     {0x09990001, "ERR_RTOK"},
		{0x09990002, "ERR_RDYLNK"},  {0x09990003, "ERR_REGBUF"},
		{0x0a000000, "BADMSG"},	     {0x0a010000, "AUTHFAIL"},
		{0x0a020000, "PEERUNKNOWN"},
	};
	size_t i;

	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		ck_assert_str_eq(clc_decline_name(all[i].code), all[i].name);
	ck_assert_uint_eq(CLC_DECL_NOSMCRDEV, 0x03030002);
	ck_assert_uint_eq(CLC_DECL_VERSMISMAT, 0x030c0000);
	ck_assert_str_eq(clc_decline_name(0), "UNKNOWN");
	ck_assert_str_eq(clc_decline_name(0x03030010), "UNKNOWN");
}
END_TEST

START_TEST(rmbe_sizes)
{
	ck_assert(clc_rmbe_bytes(0) == 16384);
	ck_assert(clc_rmbe_bytes(2) == 65536);
	ck_assert(clc_rmbe_bytes(15) == 512ULL << 20);
	ck_assert(clc_rmbe_bytes(16) == 0);
	ck_assert_int_eq(clc_rmbe_compress(0), -EINVAL);
	ck_assert_int_eq(clc_rmbe_compress(16383), -EINVAL);
	ck_assert_int_eq(clc_rmbe_compress(16384), 0);
	ck_assert_int_eq(clc_rmbe_compress(32767), 0);
	ck_assert_int_eq(clc_rmbe_compress(32768), 1);
	ck_assert_int_eq(clc_rmbe_compress(1 << 20), 6);
	ck_assert_int_eq(clc_rmbe_compress(1ULL << 40), 15);
}
END_TEST

/*
 * 70 connections that sent only a PROPOSAL's header (more than the 64
 * groups a server sets up at once) hold no handshake slot: a real
 * PROPOSAL after them is served (here: declined NOSMCRDEV, there is no
 * device), not declined MEM as if the server were out of resources.
 */
START_TEST(idle_headers_hold_no_slot)
{
	struct clc_proposal_info p;
	struct clc_decline_info d;
	struct event_base *base = event_base_new();
	struct stats st;
	struct auth_limit al;
	struct lgr_ctx *ctx;
	struct conf *conf;
	uint8_t msg[CLC_MSG_MAX], ans[sizeof(struct clc_decline)];
	int idle[70][2], sv[2], i, len;
	size_t got = 0;
	uint32_t decl;
	ssize_t n;

	ck_assert_ptr_nonnull(base);
	memset(&st, 0, sizeof(st));
	auth_limit_init(&al);
	conf = conf_load_string("smcproxyd: { name = \"b\"; workers = 1; };\n"
				"peers = ( { name = \"host-a.example_1\";"
				" address = \"127.0.0.1:1\";"
				" insecure = true; any_source = true; } );\n",
				"b.conf", stderr);
	ck_assert_ptr_nonnull(conf);
	conf_hold(conf);
	ctx = lgr_ctx_new(base, conf, &st, &al, NULL);
	ck_assert_ptr_nonnull(ctx);
	prop_fill(&p);
	len = clc_proposal_encode(msg, sizeof(msg), &p);
	ck_assert_int_gt(len, 8);
	for (i = 0; i < 70; i++) {
		ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, idle[i]),
				 0);
		ck_assert_int_eq(clc_serve(ctx, idle[i][1], NULL, msg, 8), 0);
	}
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_int_eq(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
	ck_assert_int_eq(clc_serve(ctx, sv[1], NULL, msg, 8), 0);
	ck_assert_int_eq(send(sv[0], msg + 8, (size_t)len - 8, 0), len - 8);
	for (i = 0; i < 1000 && got < sizeof(ans); i++) {
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		n = recv(sv[0], ans + got, sizeof(ans) - got, 0);
		if (n > 0)
			got += (size_t)n;
		else
			usleep(1000);
	}
	ck_assert_uint_eq(got, sizeof(ans));
	ck_assert_int_eq(clc_decline_decode(ans, got, &d, &decl), 0);
	ck_assert_uint_eq(d.diagnosis, CLC_DECL_NOSMCRDEV);
	lgr_ctx_free(ctx);
	for (i = 0; i < 70; i++)
		close(idle[i][0]);
	close(sv[0]);
	conf_drop(conf);
	event_base_free(base);
}
END_TEST

static Suite *
clc_suite(void)
{
	Suite *s = suite_create("clc");
	TCase *tc = tcase_create("round_trip");

	tcase_add_test(tc, proposal_round_trip);
	tcase_add_test(tc, proposal_layout);
	tcase_add_test(tc, accept_confirm_round_trip);
	tcase_add_test(tc, accept_confirm_layout);
	tcase_add_test(tc, decline_round_trip);
	tcase_add_test(tc, decline_names);
	tcase_add_test(tc, rmbe_sizes);
	suite_add_tcase(s, tc);
	tc = tcase_create("malformed");
	tcase_add_test(tc, header_check);
	tcase_add_test(tc, truncated_long_trailer);
	tcase_add_test(tc, wrong_decoder);
	tcase_add_test(tc, proposal_fields);
	tcase_add_test(tc, accept_fields);
	tcase_add_test(tc, decline_fields);
	tcase_add_test(tc, encoders_refuse);
	tcase_add_test(tc, bit_flips_canonical);
	suite_add_tcase(s, tc);
	tc = tcase_create("serve");
	tcase_add_test(tc, idle_headers_hold_no_slot);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(clc_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
