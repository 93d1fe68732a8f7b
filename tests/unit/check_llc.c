// SPDX-License-Identifier: BSD-2-Clause
/*
 * LLC codec: every type round trips at the offsets docs/protocol.md gives;
 * wrong lengths, unknown types, flags a type does not carry, reserved
 * bytes and out-of-range fields are all refused.  The SMC-R dialect
 * (llc_v2_*): what Linux 6.12 sent on a link (tests/fixtures/ksmc)
 * decodes to the values it carried and encodes back to the same bytes;
 * its long ADD_LINK and REQ_ADD_LINK, its host-endian lengths and its
 * quirks; and the two dialects never take each other's messages.
 */
#include <dirent.h>
#include <endian.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "wire.h"
#include "llc_wire.h"
#include "ksmc_fixture.h"

#ifndef TOP_SRCDIR
#define TOP_SRCDIR "."
#endif

static const uint8_t types[] = {
	LLC_CONFIRM_LINK, LLC_ADD_LINK,	   LLC_ADD_LINK_CONT, LLC_DELETE_LINK,
	LLC_CONFIRM_RKEY, LLC_TEST_LINK,   LLC_DELETE_RKEY,   LLC_CONN_OPEN,
	LLC_CONN_ACCEPT,  LLC_CONN_REJECT, LLC_CONN_RESUME,   LLC_CONN_ORIGIN,
};
#define NTYPES (sizeof(types) / sizeof(types[0]))

/* A valid request (or, for the CONN_ responses, response) of each type. */
static void
sample(uint8_t type, struct llc_info *m)
{
	int i;

	memset(m, 0, sizeof(*m));
	m->type = type;
	switch (type) {
	case LLC_CONFIRM_LINK:
		m->flags = LLC_FLAG_NO_RMBE_EYEC;
		for (i = 0; i < 6; i++)
			m->confirm_link.mac[i] = (uint8_t)(0x10 + i);
		for (i = 0; i < 16; i++)
			m->confirm_link.gid[i] = (uint8_t)(0x20 + i);
		m->confirm_link.qpn = 0x0a0b0c;
		m->confirm_link.link_num = 1;
		memcpy(m->confirm_link.link_uid, "\x41\x42\x43\x44", 4);
		m->confirm_link.max_links = 2;
		m->confirm_link.max_conns = 255;
		break;
	case LLC_ADD_LINK:
		for (i = 0; i < 6; i++)
			m->add_link.mac[i] = (uint8_t)(0x30 + i);
		for (i = 0; i < 16; i++)
			m->add_link.gid[i] = (uint8_t)(0x40 + i);
		m->add_link.qpn = 0x00beef;
		m->add_link.link_num = 2;
		m->add_link.mtu = 4;
		m->add_link.psn = 0x123456;
		break;
	case LLC_ADD_LINK_CONT:
		m->add_link_cont.link_num = 2;
		m->add_link_cont.num_rkeys = 5;
		for (i = 0; i < 2; i++) {
			m->add_link_cont.rt[i].rkey = 0x11110000u + (uint32_t)i;
			m->add_link_cont.rt[i].rkey_new =
				0x22220000u + (uint32_t)i;
			m->add_link_cont.rt[i].vaddr_new =
				0x3333000000000000ULL + (uint64_t)i;
		}
		break;
	case LLC_DELETE_LINK:
		m->delete_link.link_num = 1;
		m->delete_link.reason = LLC_DEL_LOST_PATH;
		break;
	case LLC_CONFIRM_RKEY:
		m->confirm_rkey.num_rkeys = 2;
		for (i = 0; i < 3; i++) {
			m->confirm_rkey.rt[i].link_id =
				(uint8_t)(i ? i + 1 : 0);
			m->confirm_rkey.rt[i].rkey = 0xa0000000u + (uint32_t)i;
			m->confirm_rkey.rt[i].vaddr =
				0xb000000000000000ULL + (uint64_t)i;
		}
		break;
	case LLC_TEST_LINK:
		for (i = 0; i < 16; i++)
			m->test_link.user_data[i] = (uint8_t)(0xf0 + i);
		break;
	case LLC_DELETE_RKEY:
		m->delete_rkey.num_rkeys = 3;
		for (i = 0; i < 3; i++)
			m->delete_rkey.rkey[i] = 0xc0000000u + (uint32_t)i;
		break;
	case LLC_CONN_OPEN:
		m->conn_open.token = 0x01000001;
		m->conn_open.rmb_rkey = 0x02000002;
		m->conn_open.rmb_vaddr = 0x0300000000000003ULL;
		m->conn_open.rmbe_size = 3;
		strcpy(m->conn_open.export, "redis");
		break;
	case LLC_CONN_ACCEPT:
		m->flags = LLC_FLAG_RESP;
		m->conn_accept.opener_token = 0x01000001;
		m->conn_accept.token = 0x04000004;
		m->conn_accept.rmb_rkey = 0x05000005;
		m->conn_accept.rmb_vaddr = 0x0600000000000006ULL;
		m->conn_accept.rmbe_size = 15;
		break;
	case LLC_CONN_REJECT:
		m->flags = LLC_FLAG_RESP;
		m->conn_reject.opener_token = 0x01000001;
		m->conn_reject.reason = 4;
		break;
	case LLC_CONN_RESUME:
		for (i = 0; i < LLC_RESUME_ID_LEN; i++)
			m->conn_resume.resume_id[i] = (uint8_t)(0xa0 + i);
		m->conn_resume.token = 0x07000007;
		m->conn_resume.rmb_rkey = 0x08000008;
		m->conn_resume.rx_off = 0x0900000000000009ULL;
		m->conn_resume.tx_fin = 0x0a0000000000000aULL;
		break;
	case LLC_CONN_ORIGIN: /* 127.0.0.5:40112 -> 127.0.0.1:6380 */
		m->conn_origin.token = 0x01000001;
		m->conn_origin.origin.family = FB_ORIGIN_INET;
		m->conn_origin.origin.src_port = htons(40112);
		m->conn_origin.origin.dst_port = htons(6380);
		memcpy(m->conn_origin.origin.src, "\x7f\0\0\x05", 4);
		memcpy(m->conn_origin.origin.dst, "\x7f\0\0\x01", 4);
		break;
	}
}

static void
encode_ok(const struct llc_info *m, uint8_t *buf)
{
	ck_assert_int_eq(llc_msg_encode(buf, LLC_MSG_LEN, m), LLC_MSG_LEN);
}

/* decode, then re-encode and compare: 0 or the decoder's error */
static int
decode_same(const uint8_t *buf)
{
	struct llc_info m;
	uint8_t re[LLC_MSG_LEN];
	int rc;

	rc = llc_msg_decode(buf, LLC_MSG_LEN, &m);
	if (rc)
		return rc;
	encode_ok(&m, re);
	ck_assert_mem_eq(re, buf, LLC_MSG_LEN);
	return 0;
}

START_TEST(round_trip_every_type)
{
	uint8_t buf[LLC_MSG_LEN];
	struct llc_info in, out;
	size_t t;

	for (t = 0; t < NTYPES; t++) {
		sample(types[t], &in);
		encode_ok(&in, buf);
		ck_assert_uint_eq(buf[0], types[t]);
		ck_assert_uint_eq(buf[1], 44);
		memset(&out, 0xee, sizeof(out));
		ck_assert_int_eq(llc_msg_decode(buf, sizeof(buf), &out), 0);
		ck_assert_uint_eq(out.type, in.type);
		ck_assert_uint_eq(out.flags, in.flags);
		ck_assert_int_eq(decode_same(buf), 0);
		/* and the response of those that have one */
		if (types[t] >= LLC_CONN_OPEN)
			continue;
		in.flags |= LLC_FLAG_RESP;
		encode_ok(&in, buf);
		ck_assert_uint_eq(buf[3], in.flags);
		ck_assert_int_eq(llc_msg_decode(buf, sizeof(buf), &out), 0);
		ck_assert_uint_eq(out.flags, in.flags);
		ck_assert_int_eq(decode_same(buf), 0);
	}

	sample(LLC_CONFIRM_LINK, &in);
	encode_ok(&in, buf);
	ck_assert_int_eq(llc_msg_decode(buf, sizeof(buf), &out), 0);
	ck_assert_mem_eq(out.confirm_link.gid, in.confirm_link.gid, 16);
	ck_assert_uint_eq(out.confirm_link.qpn, 0x0a0b0c);
	ck_assert_uint_eq(out.confirm_link.max_conns, 255);

	sample(LLC_CONFIRM_RKEY, &in);
	encode_ok(&in, buf);
	ck_assert_int_eq(llc_msg_decode(buf, sizeof(buf), &out), 0);
	ck_assert_uint_eq(out.confirm_rkey.num_rkeys, 2);
	ck_assert_uint_eq(out.confirm_rkey.rt[2].link_id, 3);
	ck_assert(out.confirm_rkey.rt[2].vaddr == 0xb000000000000002ULL);

	sample(LLC_CONN_OPEN, &in);
	encode_ok(&in, buf);
	ck_assert_int_eq(llc_msg_decode(buf, sizeof(buf), &out), 0);
	ck_assert_uint_eq(out.conn_open.token, 0x01000001);
	ck_assert(out.conn_open.rmb_vaddr == 0x0300000000000003ULL);
	ck_assert_str_eq(out.conn_open.export, "redis");

	/* the longest export name fills the field without a NUL */
	strcpy(in.conn_open.export, "abcdefghij.klmnopq-rs_");
	ck_assert_uint_eq(strlen(in.conn_open.export), LLC_EXPORT_MAX);
	encode_ok(&in, buf);
	ck_assert_uint_ne(buf[43], 0);
	ck_assert_int_eq(llc_msg_decode(buf, sizeof(buf), &out), 0);
	ck_assert_str_eq(out.conn_open.export, in.conn_open.export);

	/* an ADD_LINK reject echoes the request with a reason */
	sample(LLC_ADD_LINK, &in);
	in.flags = LLC_FLAG_RESP | LLC_FLAG_ADD_LINK_REJ;
	in.add_link.rej_rsn = LLC_REJ_RSN_NO_ALT_PATH;
	encode_ok(&in, buf);
	ck_assert_uint_eq(buf[2], 0x01);
	ck_assert_int_eq(llc_msg_decode(buf, sizeof(buf), &out), 0);
	ck_assert_uint_eq(out.add_link.rej_rsn, LLC_REJ_RSN_NO_ALT_PATH);

	/* negative rkey responses */
	sample(LLC_DELETE_RKEY, &in);
	in.flags = LLC_FLAG_RESP | LLC_FLAG_RKEY_NEG;
	in.delete_rkey.err_mask = 0xa0; /* rkey[0] and rkey[2] failed */
	encode_ok(&in, buf);
	ck_assert_int_eq(decode_same(buf), 0);
	sample(LLC_CONFIRM_RKEY, &in);
	in.flags = LLC_FLAG_RESP | LLC_FLAG_RKEY_NEG | LLC_FLAG_RKEY_RETRY;
	encode_ok(&in, buf);
	ck_assert_int_eq(decode_same(buf), 0);
	/* DELETE_LINK "all" needs no link */
	sample(LLC_DELETE_LINK, &in);
	in.flags = LLC_FLAG_DEL_LINK_ALL | LLC_FLAG_DEL_LINK_ORDERLY;
	in.delete_link.link_num = 0;
	in.delete_link.reason = LLC_DEL_PROG_INIT_TERM;
	encode_ok(&in, buf);
	ck_assert_int_eq(decode_same(buf), 0);
}
END_TEST

/* The offsets docs/protocol.md promises. */
START_TEST(layout)
{
	uint8_t b[LLC_MSG_LEN];
	struct llc_info m;

	sample(LLC_CONFIRM_LINK, &m);
	encode_ok(&m, b);
	ck_assert_mem_eq(b, "\x01\x2c\x00\x03\x10", 5);
	ck_assert_uint_eq(b[10], 0x20); /* gid */
	ck_assert_mem_eq(b + 26, "\x0a\x0b\x0c\x01\x41\x42\x43\x44\x02\xff",
			 10);

	sample(LLC_ADD_LINK, &m);
	encode_ok(&m, b);
	ck_assert_mem_eq(b, "\x02\x2c\x00\x00\x30", 5);
	ck_assert_mem_eq(b + 10, "\x00\x00\x40", 3);
	ck_assert_mem_eq(b + 28, "\x00\xbe\xef\x02\x04\x12\x34\x56\x00", 9);

	sample(LLC_ADD_LINK_CONT, &m);
	encode_ok(&m, b);
	ck_assert_mem_eq(b, "\x03\x2c\x00\x00\x02\x05\x00\x00", 8);
	ck_assert_mem_eq(b + 8, "\x11\x11\x00\x00\x22\x22\x00\x00\x33\x33", 10);
	ck_assert_mem_eq(b + 24, "\x11\x11\x00\x01", 4);
	ck_assert_mem_eq(b + 32, "\x33\x33\0\0\0\0\0\x01\0\0\0\0", 12);

	sample(LLC_DELETE_LINK, &m);
	encode_ok(&m, b);
	ck_assert_mem_eq(b, "\x04\x2c\x00\x00\x01\x00\x01\x00\x00\x00", 10);

	sample(LLC_CONFIRM_RKEY, &m);
	encode_ok(&m, b);
	ck_assert_mem_eq(b, "\x06\x2c\x00\x00\x02\xa0\x00\x00\x00\xb0", 10);
	ck_assert_mem_eq(b + 17, "\x02\xa0\x00\x00\x01", 5);
	ck_assert_mem_eq(b + 30, "\x03\xa0\x00\x00\x02", 5);
	ck_assert_uint_eq(b[42], 0x02);
	ck_assert_uint_eq(b[43], 0x00);

	sample(LLC_TEST_LINK, &m);
	encode_ok(&m, b);
	ck_assert_mem_eq(b, "\x07\x2c\x00\x00\xf0", 5);
	ck_assert_uint_eq(b[19], 0xff);
	ck_assert_uint_eq(b[20], 0x00);

	sample(LLC_DELETE_RKEY, &m);
	encode_ok(&m, b);
	ck_assert_mem_eq(b, "\x09\x2c\x00\x00\x03\x00\x00\x00\xc0\0\0\0", 12);
	ck_assert_mem_eq(b + 16, "\xc0\0\0\x02\0\0\0\0", 8);

	sample(LLC_CONN_OPEN, &m);
	encode_ok(&m, b);
	ck_assert_mem_eq(b, "\x80\x2c\x00\x00\x01\x00\x00\x01\x02\x00\x00\x02",
			 12);
	ck_assert_mem_eq(b + 12, "\x03\0\0\0\0\0\0\x03\x03\x00redis\0", 16);
	ck_assert_uint_eq(b[43], 0);

	sample(LLC_CONN_ORIGIN, &m);
	encode_ok(&m, b);
	ck_assert_mem_eq(b, "\x84\x2c\x00\x00\x01\x00\x00\x01\x9c\xb0\x18\xec",
			 12);
	ck_assert_mem_eq(b + 12, "\x7f\0\0\x05", 4);
	ck_assert_mem_eq(b + 28, "\x7f\0\0\x01", 4);
	ck_assert_uint_eq(b[43], 0);

	sample(LLC_CONN_ACCEPT, &m);
	encode_ok(&m, b);
	ck_assert_mem_eq(b, "\x81\x2c\x00\x80\x01\x00\x00\x01\x04\x00\x00\x04",
			 12);
	ck_assert_mem_eq(b + 12, "\x05\0\0\x05\x06\0\0\0\0\0\0\x06\x0f\x00",
			 14);

	sample(LLC_CONN_REJECT, &m);
	encode_ok(&m, b);
	ck_assert_mem_eq(b, "\x82\x2c\x00\x80\x01\x00\x00\x01\0\0\0\x04\0", 13);
}
END_TEST

START_TEST(lengths_and_types)
{
	uint8_t buf[LLC_MSG_LEN + 4], bad[LLC_MSG_LEN];
	struct llc_info m;
	size_t t, cut;
	int v;

	for (t = 0; t < NTYPES; t++) {
		sample(types[t], &m);
		encode_ok(&m, buf);
		for (cut = 0; cut < LLC_MSG_LEN; cut++)
			ck_assert_int_eq(llc_msg_decode(buf, cut, &m), -EPROTO);
		memset(buf + LLC_MSG_LEN, 0, 4);
		ck_assert_int_eq(llc_msg_decode(buf, LLC_MSG_LEN + 1, &m),
				 -EPROTO);
		ck_assert_int_eq(llc_msg_decode(buf, LLC_MSG_LEN + 4, &m),
				 -EPROTO);
		for (v = 0; v < 256; v++) {
			memcpy(bad, buf, LLC_MSG_LEN);
			bad[1] = (uint8_t)v;
			ck_assert_int_eq(llc_msg_decode(bad, LLC_MSG_LEN, &m),
					 v == 44 ? 0 : -EPROTO);
		}
	}
	/* every other type byte, including SMC's unused and v2 types */
	sample(LLC_TEST_LINK, &m);
	encode_ok(&m, buf);
	memset(buf + 4, 0, LLC_DATA_LEN);
	for (v = 0; v < 256; v++) {
		bool known = false;

		for (t = 0; t < NTYPES; t++)
			known |= types[t] == v;
		if (known)
			continue;
		buf[0] = (uint8_t)v;
		ck_assert_int_eq(llc_msg_decode(buf, LLC_MSG_LEN, &m), -EPROTO);
	}
}
END_TEST

/* The flags each type may carry, written out independently of llc.c. */
static bool
flags_valid(uint8_t type, unsigned int f)
{
	switch (type) {
	case LLC_CONFIRM_LINK:
		return (f & 0x03) == 0x03 && (f & ~0x83u) == 0;
	case LLC_ADD_LINK: /* REJ needs a reason, the sample has none */
	case LLC_ADD_LINK_CONT:
	case LLC_TEST_LINK:
	case LLC_DELETE_RKEY: /* NEG needs an err_mask */
		return f == 0 || f == 0x80;
	case LLC_DELETE_LINK:
		return (f & ~0xe0u) == 0;
	case LLC_CONFIRM_RKEY:
		return f == 0 || f == 0x80 || f == 0xa0 || f == 0xb0;
	case LLC_CONN_OPEN:
		return f == 0;
	case LLC_CONN_ACCEPT:
	case LLC_CONN_REJECT:
		return f == 0x80;
	case LLC_CONN_RESUME:
		return f == 0 || f == 0x80;
	case LLC_CONN_ORIGIN: /* the IPv4 sample's bytes are an IPv6 too */
		return f == 0 || f == 0x01;
	}
	return false;
}

START_TEST(flags_per_type)
{
	uint8_t buf[LLC_MSG_LEN];
	struct llc_info m;
	unsigned int f;
	size_t t;
	int want;

	for (t = 0; t < NTYPES; t++) {
		sample(types[t], &m);
		encode_ok(&m, buf);
		for (f = 0; f < 256; f++) {
			buf[3] = (uint8_t)f;
			want = flags_valid(types[t], f) ? 0 : -EPROTO;
			ck_assert_msg(decode_same(buf) == want,
				      "type 0x%02x flags 0x%02x", types[t], f);
		}
	}
}
END_TEST

/* Reserved byte offsets per type, as docs/protocol.md lists them. */
static const struct {
	uint8_t type;
	uint8_t from, to; /* inclusive */
} reserved[] = {
	{LLC_CONFIRM_LINK, 2, 2},    {LLC_CONFIRM_LINK, 36, 43},
	{LLC_ADD_LINK, 10, 11},	     {LLC_ADD_LINK, 36, 43},
	{LLC_ADD_LINK_CONT, 2, 2},   {LLC_ADD_LINK_CONT, 6, 7},
	{LLC_ADD_LINK_CONT, 40, 43}, {LLC_DELETE_LINK, 2, 2},
	{LLC_DELETE_LINK, 9, 43},    {LLC_CONFIRM_RKEY, 2, 2},
	{LLC_CONFIRM_RKEY, 43, 43},  {LLC_TEST_LINK, 2, 2},
	{LLC_TEST_LINK, 20, 43},     {LLC_DELETE_RKEY, 2, 2},
	{LLC_DELETE_RKEY, 6, 7},     {LLC_DELETE_RKEY, 20, 43},
	{LLC_CONN_OPEN, 2, 2},	     {LLC_CONN_OPEN, 21, 21},
	{LLC_CONN_OPEN, 27, 43},     {LLC_CONN_ACCEPT, 2, 2},
	{LLC_CONN_ACCEPT, 25, 27},   {LLC_CONN_REJECT, 2, 2},
	{LLC_CONN_REJECT, 12, 43},   {LLC_CONN_RESUME, 2, 2},
	{LLC_CONN_ORIGIN, 2, 2},
};

START_TEST(reserved_bytes)
{
	uint8_t good[LLC_MSG_LEN], buf[LLC_MSG_LEN];
	struct llc_info m;
	size_t r, off;
	int bit;

	for (r = 0; r < sizeof(reserved) / sizeof(reserved[0]); r++) {
		sample(reserved[r].type, &m);
		encode_ok(&m, good);
		ck_assert_int_eq(decode_same(good), 0);
		for (off = reserved[r].from; off <= reserved[r].to; off++) {
			for (bit = 0; bit < 8; bit++) {
				memcpy(buf, good, sizeof(buf));
				buf[off] ^= (uint8_t)(1 << bit);
				ck_assert_msg(llc_msg_decode(buf, sizeof(buf),
							     &m) == -EPROTO,
					      "type 0x%02x byte %zu bit %d",
					      reserved[r].type, off, bit);
			}
		}
	}
	/* the high nibbles around ADD_LINK's rej_rsn and qp_mtu */
	sample(LLC_ADD_LINK, &m);
	encode_ok(&m, good);
	for (bit = 4; bit < 8; bit++) {
		memcpy(buf, good, sizeof(buf));
		buf[2] ^= (uint8_t)(1 << bit);
		ck_assert_int_eq(llc_msg_decode(buf, sizeof(buf), &m), -EPROTO);
		memcpy(buf, good, sizeof(buf));
		buf[32] ^= (uint8_t)(1 << bit);
		ck_assert_int_eq(llc_msg_decode(buf, sizeof(buf), &m), -EPROTO);
	}
}
END_TEST

static int
try(const struct llc_info *m)
{
	uint8_t buf[LLC_MSG_LEN];
	int rc = llc_msg_encode(buf, sizeof(buf), m);

	if (rc < 0)
		return rc;
	ck_assert_int_eq(decode_same(buf), 0);
	return 0;
}

START_TEST(link_fields)
{
	struct llc_info m;
	int v;

	for (v = 0; v < 256; v++) {
		sample(LLC_CONFIRM_LINK, &m);
		m.confirm_link.max_links = (uint8_t)v;
		ck_assert_int_eq(try(&m), v >= 1 && v <= 2 ? 0 : -EINVAL);
		sample(LLC_CONFIRM_LINK, &m);
		m.confirm_link.max_conns = (uint8_t)v;
		ck_assert_int_eq(try(&m), v >= 16 ? 0 : -EINVAL);
		sample(LLC_CONFIRM_LINK, &m);
		m.confirm_link.link_num = (uint8_t)v;
		ck_assert_int_eq(try(&m), v ? 0 : -EINVAL);
		sample(LLC_ADD_LINK, &m);
		m.add_link.mtu = (uint8_t)v;
		ck_assert_int_eq(try(&m), v >= 1 && v <= 5 ? 0 : -EINVAL);
		sample(LLC_ADD_LINK, &m);
		m.add_link.link_num = (uint8_t)v;
		ck_assert_int_eq(try(&m), v ? 0 : -EINVAL);
	}
	sample(LLC_CONFIRM_LINK, &m);
	m.confirm_link.qpn = 1;
	ck_assert_int_eq(try(&m), -EINVAL);
	m.confirm_link.qpn = 0x1000000;
	ck_assert_int_eq(try(&m), -EINVAL);
	sample(LLC_CONFIRM_LINK, &m);
	memset(m.confirm_link.gid, 0, 16);
	ck_assert_int_eq(try(&m), -EINVAL);
	sample(LLC_ADD_LINK, &m);
	m.add_link.qpn = 0;
	ck_assert_int_eq(try(&m), -EINVAL);
	sample(LLC_ADD_LINK, &m);
	m.add_link.psn = 0x1000000;
	ck_assert_int_eq(try(&m), -EINVAL);
	sample(LLC_ADD_LINK, &m);
	memset(m.add_link.gid, 0, 16);
	ck_assert_int_eq(try(&m), -EINVAL);

	/* reject reason: only with REJ, only in a response, never 0 */
	sample(LLC_ADD_LINK, &m);
	m.add_link.rej_rsn = 1;
	ck_assert_int_eq(try(&m), -EINVAL);
	m.flags = LLC_FLAG_ADD_LINK_REJ;
	ck_assert_int_eq(try(&m), -EINVAL);
	m.flags |= LLC_FLAG_RESP;
	ck_assert_int_eq(try(&m), 0);
	m.add_link.rej_rsn = 0;
	ck_assert_int_eq(try(&m), -EINVAL);
	m.add_link.rej_rsn = 16;
	ck_assert_int_eq(try(&m), -EINVAL);
	/* a reject's echoed fields are not judged */
	m.add_link.rej_rsn = 15;
	m.add_link.link_num = 0;
	m.add_link.mtu = 0;
	memset(m.add_link.gid, 0, 16);
	ck_assert_int_eq(try(&m), 0);

	/* DELETE_LINK: a link unless ALL; known reasons */
	sample(LLC_DELETE_LINK, &m);
	m.delete_link.link_num = 0;
	ck_assert_int_eq(try(&m), -EINVAL);
	m.flags = LLC_FLAG_DEL_LINK_ALL;
	ck_assert_int_eq(try(&m), 0);
	m.delete_link.reason = 0;
	ck_assert_int_eq(try(&m), -EINVAL);
	m.delete_link.reason = LLC_DEL_NOLNK;
	ck_assert_int_eq(try(&m), -EINVAL);
	m.flags |= LLC_FLAG_RESP;
	ck_assert_int_eq(try(&m), 0);
	m.delete_link.reason = 0;
	ck_assert_int_eq(try(&m), 0);
	m.delete_link.reason = 0x00060000;
	ck_assert_int_eq(try(&m), -EINVAL);
	m.delete_link.reason = LLC_DEL_LOST_PATH | 1;
	ck_assert_int_eq(try(&m), -EINVAL);
}
END_TEST

START_TEST(rkey_fields)
{
	struct llc_info m;
	int v;

	/* ADD_LINK_CONT: entries past num_rkeys are zero */
	for (v = 0; v < 3; v++) {
		sample(LLC_ADD_LINK_CONT, &m);
		m.add_link_cont.num_rkeys = (uint8_t)v;
		ck_assert_int_eq(try(&m), v == 2 ? 0 : -EINVAL);
		if (v < 2)
			memset(&m.add_link_cont.rt[v], 0,
			       sizeof(m.add_link_cont.rt[0]) * (size_t)(2 - v));
		ck_assert_int_eq(try(&m), 0);
	}
	sample(LLC_ADD_LINK_CONT, &m);
	m.add_link_cont.num_rkeys = 1;
	m.add_link_cont.rt[1].rkey = m.add_link_cont.rt[1].rkey_new = 0;
	ck_assert_int_eq(try(&m), -EINVAL); /* vaddr_new left over */
	m.add_link_cont.rt[1].vaddr_new = 0;
	ck_assert_int_eq(try(&m), 0);
	m.add_link_cont.link_num = 0;
	ck_assert_int_eq(try(&m), -EINVAL);

	/* CONFIRM_RKEY: 0..2 more links, each named, the rest zero */
	sample(LLC_CONFIRM_RKEY, &m);
	m.confirm_rkey.num_rkeys = 3;
	ck_assert_int_eq(try(&m), -EINVAL);
	sample(LLC_CONFIRM_RKEY, &m);
	m.confirm_rkey.rt[1].link_id = 0;
	ck_assert_int_eq(try(&m), -EINVAL);
	sample(LLC_CONFIRM_RKEY, &m);
	m.confirm_rkey.num_rkeys = 1;
	ck_assert_int_eq(try(&m), -EINVAL);
	memset(&m.confirm_rkey.rt[2], 0, sizeof(m.confirm_rkey.rt[2]));
	ck_assert_int_eq(try(&m), 0);
	m.confirm_rkey.num_rkeys = 0;
	m.confirm_rkey.rt[1].link_id = 0;
	ck_assert_int_eq(try(&m), -EINVAL); /* rkey of rt[1] left */
	memset(&m.confirm_rkey.rt[1], 0, sizeof(m.confirm_rkey.rt[1]));
	ck_assert_int_eq(try(&m), 0);

	/* DELETE_RKEY: 1..8 rkeys, NEG iff err_mask, err only for sent */
	for (v = 0; v < 10; v++) {
		sample(LLC_DELETE_RKEY, &m);
		memset(m.delete_rkey.rkey, 0, sizeof(m.delete_rkey.rkey));
		m.delete_rkey.num_rkeys = (uint8_t)v;
		ck_assert_int_eq(try(&m), v >= 1 && v <= 8 ? 0 : -EINVAL);
	}
	sample(LLC_DELETE_RKEY, &m);
	m.delete_rkey.num_rkeys = 2; /* rkey[2] left over */
	ck_assert_int_eq(try(&m), -EINVAL);
	sample(LLC_DELETE_RKEY, &m);
	m.flags = LLC_FLAG_RESP;
	m.delete_rkey.err_mask = 0x80;
	ck_assert_int_eq(try(&m), -EINVAL);
	m.flags |= LLC_FLAG_RKEY_NEG;
	ck_assert_int_eq(try(&m), 0);
	m.delete_rkey.err_mask = 0xe0;
	ck_assert_int_eq(try(&m), 0);
	m.delete_rkey.err_mask = 0x10; /* rkey[3] was never sent */
	ck_assert_int_eq(try(&m), -EINVAL);
	m.delete_rkey.err_mask = 0;
	ck_assert_int_eq(try(&m), -EINVAL);
}
END_TEST

START_TEST(conn_fields)
{
	struct llc_info m;
	uint8_t buf[LLC_MSG_LEN];
	struct llc_conn_open *w = (struct llc_conn_open *)buf;

	sample(LLC_CONN_OPEN, &m);
	m.conn_open.token = 0;
	ck_assert_int_eq(try(&m), -EINVAL);
	sample(LLC_CONN_OPEN, &m);
	m.conn_open.rmbe_size = 16;
	ck_assert_int_eq(try(&m), -EINVAL);
	m.conn_open.rmbe_size = 0;
	m.conn_open.rmb_vaddr = UINT64_MAX - 16384;
	ck_assert_int_eq(try(&m), 0);
	m.conn_open.rmb_vaddr++;
	ck_assert_int_eq(try(&m), -EINVAL);
	sample(LLC_CONN_OPEN, &m);
	m.conn_open.export[0] = '\0';
	ck_assert_int_eq(try(&m), -EINVAL);
	strcpy(m.conn_open.export, "a:b");
	ck_assert_int_eq(try(&m), -EINVAL);
	memset(m.conn_open.export, 'e', sizeof(m.conn_open.export));
	ck_assert_int_eq(try(&m), -EINVAL); /* 23 bytes: too long */

	/* on the wire: junk after the NUL, a bad character */
	sample(LLC_CONN_OPEN, &m);
	encode_ok(&m, buf);
	w->export[10] = 'x';
	ck_assert_int_eq(llc_msg_decode(buf, sizeof(buf), &m), -EPROTO);
	sample(LLC_CONN_OPEN, &m);
	encode_ok(&m, buf);
	w->export[2] = '\n';
	ck_assert_int_eq(llc_msg_decode(buf, sizeof(buf), &m), -EPROTO);
	memset(w->export, 0, sizeof(w->export));
	ck_assert_int_eq(llc_msg_decode(buf, sizeof(buf), &m), -EPROTO);

	sample(LLC_CONN_ACCEPT, &m);
	m.conn_accept.token = 0;
	ck_assert_int_eq(try(&m), -EINVAL);
	sample(LLC_CONN_ACCEPT, &m);
	m.conn_accept.opener_token = 0;
	ck_assert_int_eq(try(&m), -EINVAL);
	sample(LLC_CONN_ACCEPT, &m);
	m.conn_accept.rmb_vaddr = UINT64_MAX - (512ULL << 20) + 2;
	ck_assert_int_eq(try(&m), -EINVAL);
	sample(LLC_CONN_REJECT, &m);
	m.conn_reject.reason = 0;
	ck_assert_int_eq(try(&m), -EINVAL);
	sample(LLC_CONN_REJECT, &m);
	m.conn_reject.opener_token = 0;
	ck_assert_int_eq(try(&m), -EINVAL);
	sample(LLC_CONN_RESUME, &m);
	m.conn_resume.token = 0;
	ck_assert_int_eq(try(&m), -EINVAL);
	sample(LLC_CONN_RESUME, &m);
	memset(m.conn_resume.resume_id, 0, sizeof(m.conn_resume.resume_id));
	ck_assert_int_eq(try(&m), -EINVAL);
	sample(LLC_CONN_ORIGIN, &m);
	m.conn_origin.token = 0;
	ck_assert_int_eq(try(&m), -EINVAL);
	sample(LLC_CONN_ORIGIN, &m);
	m.conn_origin.origin.src_port = 0;
	ck_assert_int_eq(try(&m), -EINVAL);
	sample(LLC_CONN_ORIGIN, &m);
	m.conn_origin.origin.dst_port = 0;
	ck_assert_int_eq(try(&m), -EINVAL);
	sample(LLC_CONN_ORIGIN, &m);
	m.conn_origin.origin.dst[4] = 1; /* beyond an IPv4 address */
	ck_assert_int_eq(try(&m), -EINVAL);
	sample(LLC_CONN_ORIGIN, &m);
	m.flags = LLC_FLAG_ORIGIN_INET6; /* the flag says what family is */
	ck_assert_int_eq(try(&m), -EINVAL);
	m.conn_origin.origin.family = FB_ORIGIN_INET6;
	m.conn_origin.origin.dst[15] = 1;
	ck_assert_int_eq(try(&m), 0);
	/* on the wire: an IPv4 origin with a byte set past its address */
	sample(LLC_CONN_ORIGIN, &m);
	encode_ok(&m, buf);
	buf[43] = 1;
	ck_assert_int_eq(llc_msg_decode(buf, sizeof(buf), &m), -EPROTO);
}
END_TEST

START_TEST(encoder_refuses)
{
	uint8_t buf[LLC_MSG_LEN];
	struct llc_info m;

	sample(LLC_TEST_LINK, &m);
	ck_assert_int_eq(llc_msg_encode(buf, LLC_MSG_LEN - 1, &m), -ENOSPC);
	m.type = 0x05; /* REQ_ADD_LINK: v2 only */
	ck_assert_int_eq(llc_msg_encode(buf, sizeof(buf), &m), -EINVAL);
	m.type = 0xfe; /* a CDC is not an LLC message */
	ck_assert_int_eq(llc_msg_encode(buf, sizeof(buf), &m), -EINVAL);
	sample(LLC_TEST_LINK, &m);
	m.flags = 0x01;
	ck_assert_int_eq(llc_msg_encode(buf, sizeof(buf), &m), -EINVAL);
}
END_TEST

/* No bit is ignored: any one-bit change is refused or re-encodes as is. */
START_TEST(bit_flips_canonical)
{
	uint8_t good[LLC_MSG_LEN], buf[LLC_MSG_LEN];
	struct llc_info m;
	size_t t, bit;

	for (t = 0; t < NTYPES; t++) {
		sample(types[t], &m);
		encode_ok(&m, good);
		for (bit = 0; bit < LLC_MSG_LEN * 8; bit++) {
			memcpy(buf, good, sizeof(buf));
			buf[bit / 8] ^= (uint8_t)(0x80 >> bit % 8);
			decode_same(buf);
		}
	}
}
END_TEST

START_TEST(names)
{
	ck_assert_str_eq(llc_type_name(LLC_CONFIRM_LINK), "CONFIRM_LINK");
	ck_assert_str_eq(llc_type_name(LLC_DELETE_RKEY), "DELETE_RKEY");
	ck_assert_str_eq(llc_type_name(LLC_CONN_REJECT), "CONN_REJECT");
	ck_assert_str_eq(llc_type_name(LLC_CONN_RESUME), "CONN_RESUME");
	ck_assert_str_eq(llc_type_name(LLC_CONN_ORIGIN), "CONN_ORIGIN");
	ck_assert_str_eq(llc_type_name(LLC_REQ_ADD_LINK), "REQ_ADD_LINK");
	ck_assert_str_eq(llc_type_name(0x08), "UNKNOWN");
	ck_assert_str_eq(llc_delete_reason_name(LLC_DEL_LOST_PATH),
			 "LOST_PATH");
	ck_assert_str_eq(llc_delete_reason_name(LLC_DEL_NOLGR), "NOLGR");
	ck_assert_str_eq(llc_delete_reason_name(7), "UNKNOWN");
	ck_assert_uint_eq(LLC_DEL_PROT_VIOL, 0x00040000);
}
END_TEST

static const uint8_t gid_b[16] = {0, 0, 0,    0,    0,	0,  0, 0,
				  0, 0, 0xff, 0xff, 10, 99, 0, 2};

/* Every LLC message of the capture, whatever its type. */
START_TEST(kernel_every_message)
{
	static uint8_t wire[LLC_V2_MSG_MAX], again[LLC_V2_MSG_MAX];
	static struct llc_v2_info v;
	struct llc_info m;
	struct dirent *e;
	unsigned int n = 0;
	size_t len;
	DIR *d;

	d = opendir(TOP_SRCDIR "/tests/fixtures/ksmc");
	ck_assert(d != NULL);
	while ((e = readdir(d)) != NULL) {
		if (!strstr(e->d_name, "-llc-"))
			continue;
		len = fixture(e->d_name, wire, sizeof(wire));
		ck_assert_msg(llc_v2_decode(wire, len, &v) == 0, "%s refused",
			      e->d_name);
		ck_assert_uint_eq(v.form, 2);
		memset(again, 0xee, len);
		ck_assert_int_eq(llc_v2_encode(again, sizeof(again), &v),
				 (int)len);
		ck_assert_msg(memcmp(again, wire, len) == 0,
			      "%s re-encodes differently", e->d_name);
		/* the native dialect never takes a v2 message */
		ck_assert_int_eq(llc_msg_decode(wire, len, &m), -EPROTO);
		n++;
	}
	closedir(d);
	ck_assert_uint_ge(n, 20);
}
END_TEST

START_TEST(kernel_values)
{
	static uint8_t wire[LLC_V2_MSG_MAX];
	static struct llc_v2_info v;
	size_t len;

	len = fixture("04-llc-s2c-confirm-link.bin", wire, sizeof(wire));
	ck_assert_uint_eq(len, 44);
	ck_assert_uint_eq(wire[1] | wire[2] << 8, 44); /* little endian */
	ck_assert_int_eq(llc_v2_decode(wire, len, &v), 0);
	ck_assert_uint_eq(v.m.type, LLC_CONFIRM_LINK);
	ck_assert_uint_eq(v.m.flags, LLC_FLAG_NO_RMBE_EYEC);
	ck_assert_mem_eq(v.m.confirm_link.gid, gid_b, 16);
	ck_assert_uint_eq(v.m.confirm_link.qpn, 17);
	ck_assert_uint_eq(v.m.confirm_link.link_num, 1);
	ck_assert_mem_eq(v.m.confirm_link.link_uid, "\0\0\1\1", 4);
	ck_assert_uint_eq(v.m.confirm_link.max_links, 2);
	ck_assert_uint_eq(v.m.confirm_link.max_conns, 255);
	len = fixture("05-llc-c2s-confirm-link-resp.bin", wire, sizeof(wire));
	ck_assert_int_eq(llc_v2_decode(wire, len, &v), 0);
	ck_assert_uint_eq(v.m.flags, LLC_FLAG_RESP | LLC_FLAG_NO_RMBE_EYEC);

	/* the server's offer of a second link, with its one RMB's rkey */
	len = fixture("06-llc-s2c-add-link.bin", wire, sizeof(wire));
	ck_assert_uint_eq(len, LLC_V2_ADD_LINK_LEN(1));
	ck_assert_int_eq(llc_v2_decode(wire, len, &v), 0);
	ck_assert_uint_eq(v.m.type, LLC_ADD_LINK);
	ck_assert_uint_eq(v.m.flags, 0);
	ck_assert_mem_eq(v.m.add_link.gid, gid_b, 16);
	ck_assert_uint_eq(v.m.add_link.qpn, 18);
	ck_assert_uint_eq(v.m.add_link.link_num, 2);
	ck_assert_uint_eq(v.m.add_link.mtu, 3);
	ck_assert(v.direct);
	ck_assert_mem_eq(v.target_gid, gid_b, 16);
	ck_assert_uint_eq(v.num_rkeys, 1);
	ck_assert_uint_eq(v.rt[0].rkey, 0x3b7);
	ck_assert_uint_eq(v.rt[0].rkey_new, 0x5ae);
	ck_assert_uint_eq(v.rt[0].vaddr_new, 0xff11b53884b70000ULL);
	/* the client has no alternate path: a reject, and no reason left */
	len = fixture("07-llc-c2s-add-link-resp.bin", wire, sizeof(wire));
	ck_assert_int_eq(llc_v2_decode(wire, len, &v), 0);
	ck_assert_uint_eq(v.m.flags, LLC_FLAG_RESP | LLC_FLAG_ADD_LINK_REJ);
	ck_assert_uint_eq(v.m.add_link.rej_rsn, 0);
	ck_assert_uint_eq(v.num_rkeys, 0);

	/* CONFIRM_RKEY before a joining connection's ACCEPT, answered */
	len = fixture("20-llc-s2c-confirm-rkey.bin", wire, sizeof(wire));
	ck_assert_int_eq(llc_v2_decode(wire, len, &v), 0);
	ck_assert_uint_eq(v.m.type, LLC_CONFIRM_RKEY);
	ck_assert_uint_eq(v.m.confirm_rkey.num_rkeys, 0);
	ck_assert_uint_eq(v.m.confirm_rkey.rt[0].rkey, 0x3b7);
	ck_assert_uint_eq(v.m.confirm_rkey.rt[0].vaddr, 0xff11b53884b70000ULL);
	len = fixture("21-llc-c2s-confirm-rkey-resp.bin", wire, sizeof(wire));
	ck_assert_int_eq(llc_v2_decode(wire, len, &v), 0);
	ck_assert_uint_eq(v.m.flags, LLC_FLAG_RESP);

	/* DELETE_RKEY at a connection's close, answered */
	len = fixture("15-llc-c2s-delete-rkey.bin", wire, sizeof(wire));
	ck_assert_int_eq(llc_v2_decode(wire, len, &v), 0);
	ck_assert_uint_eq(v.m.type, LLC_DELETE_RKEY);
	ck_assert_uint_eq(v.m.delete_rkey.num_rkeys, 1);
	ck_assert_uint_eq(v.m.delete_rkey.rkey[0], 0x356);
	len = fixture("17-llc-c2s-delete-rkey-resp.bin", wire, sizeof(wire));
	ck_assert_int_eq(llc_v2_decode(wire, len, &v), 0);
	ck_assert_uint_eq(v.m.flags, LLC_FLAG_RESP);
	ck_assert_uint_eq(v.m.delete_rkey.err_mask, 0);

	len = fixture("37-llc-s2c-test-link.bin", wire, sizeof(wire));
	ck_assert_int_eq(llc_v2_decode(wire, len, &v), 0);
	ck_assert_uint_eq(v.m.type, LLC_TEST_LINK);
	ck_assert_uint_eq(v.m.flags, 0);
}
END_TEST

/* ADD_LINK with every rkey a link group can hold, and REQ_ADD_LINK. */
START_TEST(v2_long_messages)
{
	static uint8_t wire[LLC_V2_MSG_MAX + 16];
	static struct llc_v2_info v, w;
	unsigned int i;
	uint16_t l;
	int n;

	n = (int)fixture("06-llc-s2c-add-link.bin", wire, sizeof(wire));
	ck_assert_int_eq(llc_v2_decode(wire, (size_t)n, &v), 0);
	v.num_rkeys = LLC_V2_RKEYS_MAX;
	for (i = 0; i < LLC_V2_RKEYS_MAX; i++) {
		v.rt[i].rkey = i + 1;
		v.rt[i].rkey_new = 0x1000 + i;
		v.rt[i].vaddr_new = 0x7f0000000000ULL + i * 65536ULL;
	}
	n = llc_v2_encode(wire, sizeof(wire), &v);
	ck_assert_int_eq(n, 72 + 255 * 16);
	ck_assert_int_eq(n, LLC_V2_MSG_MAX);
	memcpy(&l, wire + 1, 2);
	ck_assert_uint_eq(le16toh(l), 4152);
	ck_assert_uint_eq(wire[70] | wire[71] << 8, 255);
	ck_assert_uint_eq(be32toh(*(uint32_t *)(wire + 72 + 254 * 16)), 255);
	ck_assert_int_eq(llc_v2_decode(wire, (size_t)n, &w), 0);
	ck_assert_mem_eq(&w, &v, sizeof(v));
	ck_assert_int_eq(llc_v2_encode(wire, (size_t)n - 1, &v), -ENOSPC);
	/* the count and the length must agree */
	wire[70] = 254;
	ck_assert_int_eq(llc_v2_decode(wire, (size_t)n, &w), -EPROTO);
	wire[70] = 255;
	wire[71] = 1; /* 511 */
	ck_assert_int_eq(llc_v2_decode(wire, (size_t)n, &w), -EPROTO);
	v.num_rkeys = LLC_V2_RKEYS_MAX + 1;
	ck_assert_int_eq(llc_v2_encode(wire, sizeof(wire), &v), -EINVAL);

	/* REQ_ADD_LINK: v2 only, 28 + 16 n bytes */
	memset(&v, 0, sizeof(v));
	v.form = 2;
	v.m.type = LLC_REQ_ADD_LINK;
	v.gid_cnt = 2;
	memcpy(v.gids[0], gid_b, 16);
	v.gids[1][15] = 9;
	n = llc_v2_encode(wire, sizeof(wire), &v);
	ck_assert_int_eq(n, 60);
	ck_assert_uint_eq(wire[0], 0x25);
	ck_assert_uint_eq(wire[1], 60);
	ck_assert_uint_eq(wire[2], 0);
	ck_assert_uint_eq(wire[24], 2);
	ck_assert_mem_eq(wire + 28, gid_b, 16);
	ck_assert_int_eq(llc_v2_decode(wire, (size_t)n, &w), 0);
	ck_assert_mem_eq(&w, &v, sizeof(v));
	/* its answer */
	v.m.flags = LLC_FLAG_RESP;
	v.gid_cnt = 1; /* a GID past the count would not be sent */
	ck_assert_int_eq(llc_v2_encode(wire, sizeof(wire), &v), -EINVAL);
	memset(v.gids[1], 0, 16);
	n = llc_v2_encode(wire, sizeof(wire), &v);
	ck_assert_int_eq(n, 44);
	ck_assert_int_eq(llc_v2_decode(wire, (size_t)n, &w), 0);
	ck_assert_mem_eq(&w, &v, sizeof(v));
	v.gid_cnt = 0;
	ck_assert_int_eq(llc_v2_encode(wire, sizeof(wire), &v), -EINVAL);
	v.gid_cnt = 3;
	ck_assert_int_eq(llc_v2_encode(wire, sizeof(wire), &v), -EINVAL);
	v.gid_cnt = 1;
	v.form = 1; /* no v1 REQ_ADD_LINK: Linux does not register 0x05 */
	ck_assert_int_eq(llc_v2_encode(wire, sizeof(wire), &v), -EINVAL);
	wire[0] = LLC_REQ_ADD_LINK;
	wire[1] = 44;
	ck_assert_int_eq(llc_v2_decode(wire, 44, &w), -EPROTO);
}
END_TEST

/*
 * The ADD_LINK without a link a single-link server offers (only GID and
 * MAC: 44 bytes in v2 form, no rkeys), and a Linux 6.1 client's refusal:
 * the offer's 44 bytes sent back with RESP | REJ and the reason's nibble
 * in byte 2, the v2 length's high byte.
 */
START_TEST(v2_add_link_none)
{
	static uint8_t wire[LLC_V2_MSG_MAX];
	static struct llc_v2_info v, w;
	int n;

	memset(&v, 0, sizeof(v));
	v.form = 2;
	v.m.type = LLC_ADD_LINK;
	memcpy(v.m.add_link.gid, gid_b, 16);
	v.m.add_link.mac[0] = 0x52;
	n = llc_v2_encode(wire, sizeof(wire), &v);
	ck_assert_int_eq(n, 44);
	ck_assert_uint_eq(wire[0], 0x22);
	ck_assert_uint_eq(wire[1], 44);
	ck_assert_uint_eq(wire[2], 0);
	ck_assert_uint_eq(wire[3], 0);
	ck_assert_int_eq(llc_v2_decode(wire, (size_t)n, &w), 0);
	ck_assert_mem_eq(&w, &v, sizeof(v));
	/* without a GID it is nothing (Linux takes an empty one for its
	 * own); with a QP but no MTU, a broken offer */
	memset(v.m.add_link.gid, 0, 16);
	ck_assert_int_eq(llc_v2_encode(wire, sizeof(wire), &v), -EINVAL);
	memcpy(v.m.add_link.gid, gid_b, 16);
	v.m.add_link.qpn = 17;
	ck_assert_int_eq(llc_v2_encode(wire, sizeof(wire), &v), -EINVAL);
	v.m.add_link.qpn = 0;
	/* not as an answer either */
	v.m.flags = LLC_FLAG_RESP;
	ck_assert_int_eq(llc_v2_encode(wire, sizeof(wire), &v), -EINVAL);
	v.m.flags = 0;

	/* Linux 6.1's refusal: byte 2 = 1 (NO_ALT_PATH), 44 bytes sent */
	n = llc_v2_encode(wire, sizeof(wire), &v);
	ck_assert_int_eq(n, 44);
	wire[2] = 0x01;
	wire[3] = LLC_FLAG_RESP | LLC_FLAG_ADD_LINK_REJ;
	ck_assert_int_eq(llc_v2_decode(wire, 44, &w), 0);
	ck_assert_uint_eq(w.m.type, LLC_ADD_LINK);
	ck_assert_uint_eq(w.m.flags, LLC_FLAG_RESP | LLC_FLAG_ADD_LINK_REJ);
	/* that reading is for a refusal of 44 bytes only */
	wire[3] = LLC_FLAG_RESP;
	ck_assert_int_eq(llc_v2_decode(wire, 44, &w), -EPROTO);
	wire[3] = LLC_FLAG_RESP | LLC_FLAG_ADD_LINK_REJ;
	wire[2] = 0x10;
	ck_assert_int_eq(llc_v2_decode(wire, 44, &w), -EPROTO);
	wire[2] = 0x01;
	wire[1] = 43;
	ck_assert_int_eq(llc_v2_decode(wire, 44, &w), -EPROTO);
}
END_TEST

START_TEST(v2_header_and_quirks)
{
	static uint8_t wire[LLC_V2_MSG_MAX], w[LLC_V2_MSG_MAX];
	static struct llc_v2_info v;
	struct llc_info m;
	size_t len;

	len = fixture("37-llc-s2c-test-link.bin", wire, sizeof(wire));
#define EDIT(off, val)                \
	do {                          \
		memcpy(w, wire, len); \
		w[(off)] = (val);     \
	} while (0)
	/* the length is the message's, little endian: 44 big endian is not */
	EDIT(1, 0);
	w[2] = 44;
	ck_assert_int_eq(llc_v2_decode(w, len, &v), -EPROTO);
	EDIT(1, 45);
	ck_assert_int_eq(llc_v2_decode(w, len, &v), -EPROTO);
	ck_assert_int_eq(llc_v2_decode(wire, len - 1, &v), -EPROTO);
	/* another version nibble: smcproxyd's own types are not standard */
	EDIT(0, 0x37);
	ck_assert_int_eq(llc_v2_decode(w, len, &v), -EPROTO);
	EDIT(0, LLC_CONN_OPEN);
	ck_assert_int_eq(llc_v2_decode(w, len, &v), -EPROTO);
	/* unknown types; ADD_LINK_CONT only in the v1 form */
	EDIT(0, 0x28);
	ck_assert_int_eq(llc_v2_decode(w, len, &v), -EPROTO);
	EDIT(0, 0x23);
	ck_assert_int_eq(llc_v2_decode(w, len, &v), -EPROTO);
	/* a v1-form message on a v2 group is taken, as Linux takes it */
	EDIT(0, LLC_TEST_LINK);
	w[1] = 44;
	w[2] = 0;
	ck_assert_int_eq(llc_v2_decode(w, len, &v), 0);
	ck_assert_uint_eq(v.form, 1);
	ck_assert_uint_eq(v.m.type, LLC_TEST_LINK);
	ck_assert_int_eq(llc_msg_decode(w, len, &m), 0);
	/* reserved bytes are not judged (the native dialect refuses them) */
	EDIT(30, 0x5a);
	ck_assert_int_eq(llc_v2_decode(w, len, &v), 0);
	w[0] = LLC_TEST_LINK;
	w[1] = 44;
	w[2] = 0;
	ck_assert_int_eq(llc_msg_decode(w, len, &m), -EPROTO);
	/* flags the type does not carry still are */
	EDIT(3, LLC_FLAG_RKEY_NEG);
	ck_assert_int_eq(llc_v2_decode(w, len, &v), -EPROTO);

	/* Linux 6.1's CONFIRM_LINK: max_links 3, max_conns reserved */
	len = fixture("04-llc-s2c-confirm-link.bin", wire, sizeof(wire));
	EDIT(34, 3);
	w[35] = 0;
	ck_assert_int_eq(llc_v2_decode(w, len, &v), 0);
	ck_assert_uint_eq(v.m.confirm_link.max_links, 3);
	EDIT(3, 0); /* without NO_RMBE_EYEC */
	ck_assert_int_eq(llc_v2_decode(w, len, &v), -EPROTO);
	EDIT(28, 1); /* QP 1 */
	w[27] = w[26] = 0;
	ck_assert_int_eq(llc_v2_decode(w, len, &v), -EPROTO);

	/* an ADD_LINK offer with MTU 0; a reject that still carries rkeys */
	len = fixture("06-llc-s2c-add-link.bin", wire, sizeof(wire));
	EDIT(32, 0);
	ck_assert_int_eq(llc_v2_decode(w, len, &v), -EPROTO);
	EDIT(3, LLC_FLAG_RESP | LLC_FLAG_ADD_LINK_REJ);
	ck_assert_int_eq(llc_v2_decode(w, len, &v), -EPROTO);
	ck_assert_int_eq(llc_v2_decode(wire, 44, &v), -EPROTO);
	/* the v1 form's reject keeps its reason */
	len = fixture("07-llc-c2s-add-link-resp.bin", wire, sizeof(wire));
	EDIT(0, LLC_ADD_LINK);
	w[1] = 44;
	w[2] = LLC_REJ_RSN_NO_ALT_PATH;
	ck_assert_int_eq(llc_v2_decode(w, len, &v), 0);
	ck_assert_uint_eq(v.m.add_link.rej_rsn, LLC_REJ_RSN_NO_ALT_PATH);

	/* DELETE_RKEY's answer counts the rkeys that failed */
	len = fixture("17-llc-c2s-delete-rkey-resp.bin", wire, sizeof(wire));
	EDIT(5, 1);
	w[3] |= LLC_FLAG_RKEY_NEG;
	ck_assert_int_eq(llc_v2_decode(w, len, &v), 0);
	ck_assert_uint_eq(v.m.delete_rkey.err_mask, 1);
	w[5] = 2; /* more than were asked for */
	ck_assert_int_eq(llc_v2_decode(w, len, &v), -EPROTO);
	EDIT(5, 1); /* failed, but not said so */
	ck_assert_int_eq(llc_v2_decode(w, len, &v), -EPROTO);
	len = fixture("15-llc-c2s-delete-rkey.bin", wire, sizeof(wire));
	EDIT(4, 0);
	ck_assert_int_eq(llc_v2_decode(w, len, &v), -EPROTO);
	EDIT(4, 9);
	ck_assert_int_eq(llc_v2_decode(w, len, &v), -EPROTO);
	/* unused rkey slots are not judged either */
	EDIT(15, 0x77);
	ck_assert_int_eq(llc_v2_decode(w, len, &v), 0);
	ck_assert_uint_eq(v.m.delete_rkey.rkey[1], 0);
#undef EDIT
}
END_TEST

static Suite *
llc_suite(void)
{
	Suite *s = suite_create("llc");
	TCase *tc = tcase_create("round_trip");

	tcase_add_test(tc, round_trip_every_type);
	tcase_add_test(tc, layout);
	tcase_add_test(tc, names);
	suite_add_tcase(s, tc);
	tc = tcase_create("standard");
	tcase_add_test(tc, kernel_every_message);
	tcase_add_test(tc, kernel_values);
	tcase_add_test(tc, v2_long_messages);
	tcase_add_test(tc, v2_add_link_none);
	tcase_add_test(tc, v2_header_and_quirks);
	suite_add_tcase(s, tc);
	tc = tcase_create("malformed");
	tcase_add_test(tc, lengths_and_types);
	tcase_add_test(tc, flags_per_type);
	tcase_add_test(tc, reserved_bytes);
	tcase_add_test(tc, link_fields);
	tcase_add_test(tc, rkey_fields);
	tcase_add_test(tc, conn_fields);
	tcase_add_test(tc, encoder_refuses);
	tcase_add_test(tc, bit_flips_canonical);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(llc_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
