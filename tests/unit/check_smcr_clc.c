// SPDX-License-Identifier: BSD-2-Clause
/*
 * Standard CLC codec: what Linux 6.12's SMC-R sent (tests/fixtures/ksmc,
 * a real exchange between two kernels) decodes to the values it carried
 * and encodes back to the very same bytes; the areas a kernel may add (v1
 * prefixes, SMC-Dv2, a second GID) land where the kernel's arithmetic puts
 * them; and every malformed message is refused with the decline reason the
 * kernel peer would be told.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "wire.h"
#include "clc_wire.h"
#include "smcr_clc_wire.h"
#include "ksmc_fixture.h"

#ifndef TOP_SRCDIR
#define TOP_SRCDIR "."
#endif

#define CK_REFUSED(rc, decl, want)                 \
	do {                                       \
		ck_assert_int_eq((rc), -EPROTO);   \
		ck_assert_uint_eq((decl), (want)); \
	} while (0)

/* the two hosts of the capture (tests/fixtures/ksmc/README) */
static const uint8_t gid_a[16] = {0, 0, 0,    0,    0,	0,  0, 0,
				  0, 0, 0xff, 0xff, 10, 99, 0, 1};
static const uint8_t gid_b[16] = {0, 0, 0,    0,    0,	0,  0, 0,
				  0, 0, 0xff, 0xff, 10, 99, 0, 2};
static const uint8_t sysid_a[8] = {0x5a, 0x65, 0x52, 0x54,
				   0x00, 0x99, 0x00, 0x01};
static const uint8_t sysid_b[8] = {0xaf, 0x6e, 0x52, 0x54,
				   0x00, 0x99, 0x00, 0x02};
static const uint8_t mac_a[6] = {0x52, 0x54, 0x00, 0x99, 0x00, 0x01};
static const uint8_t mac_b[6] = {0x52, 0x54, 0x00, 0x99, 0x00, 0x02};

static void
eid_is(const uint8_t eid[SMCR_CLC_EID_LEN], const char *s)
{
	uint8_t want[SMCR_CLC_EID_LEN];

	ck_assert_int_eq(smcr_clc_eid_put(want, s), 0);
	ck_assert_mem_eq(eid, want, SMCR_CLC_EID_LEN);
}

/* Fix the header length and trailer of a message edited to len bytes. */
static void
reframe(uint8_t *buf, size_t len)
{
	uint16_t l = htobe16((uint16_t)len);

	memcpy(buf + 5, &l, 2);
	memcpy(buf + len - 4, CLC_EYECATCHER, 4);
}

START_TEST(kernel_proposals)
{
	static const struct {
		const char *file;
		const char *eid;
	} props[] = {
		{"01-clc-c2s-proposal.bin", "SMCPROXYD-TEST-LAB"},
		{"19-clc-c2s-proposal.bin", "SMCPROXYD-TEST-LAB"},
		{"43-clc-c2s-proposal.bin", "SMCPROXYD-NOT-KNOWN"},
	};
	uint8_t wire[SMCR_CLC_MSG_MAX], again[SMCR_CLC_MSG_MAX];
	struct smcr_clc_proposal_info p;
	uint32_t decl = 0;
	uint16_t length;
	uint8_t type;
	size_t n;
	unsigned int i;

	for (i = 0; i < sizeof(props) / sizeof(props[0]); i++) {
		n = fixture(props[i].file, wire, sizeof(wire));
		ck_assert_uint_eq(n, 156);
		ck_assert_int_eq(
			smcr_clc_hdr_check(wire, 8, &type, &length, &decl), 0);
		ck_assert_uint_eq(type, CLC_PROPOSAL);
		ck_assert_uint_eq(length, n);
		ck_assert_int_eq(smcr_clc_proposal_decode(wire, n, &p, &decl),
				 0);
		/* SMC-Rv2 only: the v1 area is all zero, system id too */
		ck_assert(!p.smcd_eyecatcher);
		ck_assert_uint_eq(p.typev1, SMCR_CLC_TYPE_N);
		ck_assert_uint_eq(p.typev2, SMCR_CLC_TYPE_R);
		ck_assert(wire_all_zero(p.system_id, sizeof(p.system_id)));
		ck_assert(wire_all_zero(p.gid, sizeof(p.gid)));
		ck_assert_uint_eq(p.release, SMCR_CLC_RELEASE_1);
		ck_assert(!p.seid);
		ck_assert_mem_eq(p.roce_gid, gid_a, 16);
		ck_assert_uint_eq(p.max_conns, 255);
		ck_assert_uint_eq(p.max_links, 2);
		ck_assert_uint_eq(p.feature_mask, 1);
		ck_assert_uint_eq(p.eid_cnt, 1);
		eid_is(p.eid[0], props[i].eid);
		ck_assert_uint_eq(p.ism_gid_cnt, 0);
		memset(again, 0xee, sizeof(again));
		ck_assert_int_eq(
			smcr_clc_proposal_encode(again, sizeof(again), &p),
			(int)n);
		ck_assert_mem_eq(again, wire, n);
		ck_assert_int_eq(smcr_clc_proposal_encode(again, n - 1, &p),
				 -ENOSPC);
	}
}
END_TEST

START_TEST(kernel_accepts_and_confirms)
{
	uint8_t wire[SMCR_CLC_MSG_MAX], again[SMCR_CLC_MSG_MAX];
	struct smcr_clc_accept_info a, c;
	uint32_t decl = 0;
	size_t n;

	/* first contact: the server's ACCEPT, the client's CONFIRM */
	n = fixture("02-clc-s2c-accept.bin", wire, sizeof(wire));
	ck_assert_uint_eq(n, 160);
	ck_assert_int_eq(smcr_clc_accept_decode(wire, n, &a, &decl), 0);
	ck_assert(a.first_contact);
	ck_assert_mem_eq(a.system_id, sysid_b, 8);
	ck_assert_mem_eq(a.gid, gid_b, 16);
	ck_assert_mem_eq(a.mac, mac_b, 6);
	ck_assert_uint_eq(a.qpn, 17);
	ck_assert_uint_eq(a.rmb_rkey, 0x3b7);
	ck_assert_uint_eq(a.rmbe_idx, 1);
	ck_assert_uint_eq(a.alert_token, 1);
	ck_assert_uint_eq(clc_rmbe_bytes(a.rmbe_size), 65536);
	ck_assert_uint_eq(a.mtu, 3); /* IBV_MTU_1024 */
	ck_assert_uint_eq(a.rmb_vaddr, 0xff11b53884b70000ULL);
	ck_assert_uint_eq(a.psn, 0x394c31);
	eid_is(a.eid, "SMCPROXYD-TEST-LAB");
	ck_assert(a.direct);
	ck_assert_uint_eq(a.os_type, SMCR_CLC_OS_LINUX);
	ck_assert_uint_eq(a.release, SMCR_CLC_RELEASE_1);
	ck_assert_mem_eq(a.hostname, "rxe-b                           ", 32);
	ck_assert_uint_eq(a.max_conns, 255);
	ck_assert_uint_eq(a.max_links, 2);
	ck_assert_uint_eq(a.feature_mask, 1);
	ck_assert_uint_eq(a.vendor_exp_options, 0);
	ck_assert_uint_eq(a.gid_cnt, 0);
	ck_assert_int_eq(smcr_clc_accept_encode(again, sizeof(again), &a),
			 (int)n);
	ck_assert_mem_eq(again, wire, n);

	n = fixture("03-clc-c2s-confirm.bin", wire, sizeof(wire));
	ck_assert_uint_eq(n, 180);
	ck_assert_int_eq(smcr_clc_confirm_decode(wire, n, &c, &decl), 0);
	ck_assert(c.first_contact);
	ck_assert_mem_eq(c.system_id, sysid_a, 8);
	ck_assert_mem_eq(c.gid, gid_a, 16);
	ck_assert_mem_eq(c.mac, mac_a, 6);
	ck_assert_uint_eq(c.qpn, 17);
	ck_assert_uint_eq(c.rmb_rkey, 0x356);
	ck_assert_uint_eq(c.alert_token, 1);
	ck_assert_uint_eq(c.rmb_vaddr, 0xff1333efc5460000ULL);
	ck_assert_uint_eq(c.psn, 0xc0338d);
	ck_assert_mem_eq(c.hostname, "rxe-a                           ", 32);
	ck_assert_uint_eq(c.gid_cnt, 1);
	ck_assert_mem_eq(c.gids[0], gid_a, 16);
	ck_assert_int_eq(smcr_clc_confirm_encode(again, sizeof(again), &c),
			 (int)n);
	ck_assert_mem_eq(again, wire, n);

	/* a connection joining the group: no first contact, 108 bytes */
	n = fixture("22-clc-s2c-accept.bin", wire, sizeof(wire));
	ck_assert_uint_eq(n, SMCR_CLC_ACCEPT_LEN);
	ck_assert_int_eq(smcr_clc_accept_decode(wire, n, &a, &decl), 0);
	ck_assert(!a.first_contact);
	ck_assert_uint_eq(a.qpn, 17);
	ck_assert_uint_eq(a.alert_token, 2);
	ck_assert_uint_eq(a.rmb_rkey, 0x3b7);
	ck_assert_uint_eq(a.os_type, 0);
	ck_assert_int_eq(smcr_clc_accept_encode(again, sizeof(again), &a),
			 (int)n);
	ck_assert_mem_eq(again, wire, n);
	n = fixture("25-clc-c2s-confirm.bin", wire, sizeof(wire));
	ck_assert_int_eq(smcr_clc_confirm_decode(wire, n, &c, &decl), 0);
	ck_assert(!c.first_contact);
	ck_assert_uint_eq(c.alert_token, 2);
	ck_assert_uint_eq(c.gid_cnt, 0);
	ck_assert_int_eq(smcr_clc_confirm_encode(again, sizeof(again), &c),
			 (int)n);
	ck_assert_mem_eq(again, wire, n);
	ck_assert_int_eq(smcr_clc_confirm_encode(again, n - 1, &c), -ENOSPC);
}
END_TEST

START_TEST(kernel_decline)
{
	uint8_t wire[SMCR_CLC_MSG_MAX], again[SMCR_CLC_MSG_MAX];
	struct smcr_clc_decline_info d;
	uint32_t decl = 0;
	uint16_t length;
	uint8_t type;
	size_t n;

	n = fixture("44-clc-s2c-decline.bin", wire, sizeof(wire));
	ck_assert_uint_eq(n, 44);
	ck_assert_int_eq(smcr_clc_hdr_check(wire, n, &type, &length, &decl), 0);
	ck_assert_uint_eq(type, CLC_DECLINE);
	ck_assert_int_eq(smcr_clc_decline_decode(wire, n, &d, &decl), 0);
	ck_assert_uint_eq(d.version, SMCR_CLC_VERSION);
	ck_assert(!d.sync_err);
	ck_assert_mem_eq(d.system_id, sysid_b, 8);
	ck_assert_uint_eq(d.diagnosis, CLC_DECL_NOSMCDEV);
	ck_assert_str_eq(clc_decline_name(d.diagnosis), "NOSMCDEV");
	ck_assert_uint_eq(d.os_type, SMCR_CLC_OS_LINUX);
	ck_assert_int_eq(smcr_clc_decline_encode(again, sizeof(again), &d), 44);
	ck_assert_mem_eq(again, wire, n);

	/* the native decoder refuses it: version 2, and os_type */
	ck_assert_int_eq(clc_decline_decode(
				 wire, n, &(struct clc_decline_info){0}, &decl),
			 -EPROTO);
}
END_TEST

/* Every area a kernel may send, in the kernel's order and offsets. */
START_TEST(proposal_all_areas)
{
	uint8_t wire[SMCR_CLC_MSG_MAX];
	struct smcr_clc_proposal_info p, q;
	uint32_t decl = 0;
	uint16_t off;
	int n, i;

	memset(&p, 0, sizeof(p));
	p.typev1 = SMCR_CLC_TYPE_R;
	p.typev2 = SMCR_CLC_TYPE_B;
	memcpy(p.system_id, sysid_a, 8);
	memcpy(p.gid, gid_a, 16);
	memcpy(p.mac, mac_a, 6);
	p.ism_gid = 0x1122334455667788ULL;
	p.ism_chid = 0xabcd;
	p.outgoing_subnet = 0x0a630000;
	p.prefix_len = 24;
	p.ipv6_cnt = 2;
	p.ipv6[0].prefix[0] = 0xfd;
	p.ipv6[0].len = 64;
	p.ipv6[1].prefix[0] = 0xfe;
	p.ipv6[1].len = 48;
	p.release = 0;
	p.seid = true;
	memcpy(p.roce_gid, gid_a, 16);
	p.eid_cnt = 3;
	ck_assert_int_eq(smcr_clc_eid_put(p.eid[0], "A"), 0);
	ck_assert_int_eq(smcr_clc_eid_put(p.eid[1], "0.B-C"), 0);
	ck_assert_int_eq(
		smcr_clc_eid_put(p.eid[2], "ABCDEFGHIJKLMNOPQRSTUVWXYZ012345"),
		0);
	ck_assert_int_eq(smcr_clc_eid_put(p.system_eid, "IBM-SYSZ-ISMSEID"), 0);
	p.ism_gid_cnt = 2;
	p.ism[0].gid = 1;
	p.ism[0].chid = 2;
	p.ism[1].gid = 3;
	p.ism[1].chid = 4;

	n = smcr_clc_proposal_encode(wire, sizeof(wire), &p);
	ck_assert_int_eq(n, 80 + 8 + 2 * 17 + 40 + 3 * 32 + 48 + 2 * 10 + 4);
	ck_assert_uint_eq(wire[7], 0x2c); /* v2, typev2 B, typev1 R */
	ck_assert_uint_eq(wire[38] << 8 | wire[39], 40); /* iparea_offset */
	ck_assert_uint_eq(wire[87], 2);			 /* ipv6 count */
	ck_assert_uint_eq(wire[88], 0xfd);
	ck_assert_uint_eq(wire[105], 0xfe);
	/* v2 extension at 52 + v2_ext_offset, after the prefixes */
	off = (uint16_t)(wire[50] << 8 | wire[51]);
	ck_assert_uint_eq(52 + off, 122);
	ck_assert_uint_eq(wire[122], 3); /* eid_cnt */
	ck_assert_uint_eq(wire[123], 2); /* ism_gid_cnt */
	ck_assert_uint_eq(wire[125], SMCR_CLC_FLAG_SEID);
	ck_assert_mem_eq(wire + 130, gid_a, 16);
	ck_assert_mem_eq(wire + 162, "A ", 2);
	/* SMC-Dv2 extension after the EIDs */
	off = (uint16_t)(wire[128] << 8 | wire[129]);
	ck_assert_uint_eq(122 + 8 + off, 162 + 96);
	ck_assert_mem_eq(wire + 258, "IBM-SYSZ-ISMSEID", 16);
	ck_assert_mem_eq(wire + n - 4, CLC_EYECATCHER, 4);

	ck_assert_int_eq(smcr_clc_proposal_decode(wire, (size_t)n, &q, &decl),
			 0);
	ck_assert_mem_eq(&q, &p, sizeof(p));

	/* a second eid list of the maximum size, the "SMCD" frame */
	p.smcd_eyecatcher = true;
	p.eid_cnt = SMCR_CLC_EID_MAX;
	for (i = 0; i < SMCR_CLC_EID_MAX; i++)
		ck_assert_int_eq(smcr_clc_eid_put(p.eid[i], "X1"), 0);
	n = smcr_clc_proposal_encode(wire, sizeof(wire), &p);
	ck_assert_int_gt(n, 0);
	ck_assert_mem_eq(wire, CLC_EYECATCHER_SMCD, 4);
	ck_assert_int_eq(smcr_clc_proposal_decode(wire, (size_t)n, &q, &decl),
			 0);
	ck_assert_mem_eq(&q, &p, sizeof(p));
}
END_TEST

START_TEST(confirm_two_gids)
{
	uint8_t wire[SMCR_CLC_MSG_MAX];
	struct smcr_clc_accept_info c, d;
	uint32_t decl = 0;
	size_t n;

	n = fixture("03-clc-c2s-confirm.bin", wire, sizeof(wire));
	ck_assert_int_eq(smcr_clc_confirm_decode(wire, n, &c, &decl), 0);
	c.gid_cnt = 2;
	memcpy(c.gids[1], gid_b, 16);
	ck_assert_int_eq(smcr_clc_confirm_encode(wire, sizeof(wire), &c),
			 SMCR_CLC_CONFIRM_MAX);
	ck_assert_uint_eq(wire[156], 2);
	ck_assert_mem_eq(wire + 176, gid_b, 16);
	ck_assert_int_eq(
		smcr_clc_confirm_decode(wire, SMCR_CLC_CONFIRM_MAX, &d, &decl),
		0);
	ck_assert_mem_eq(&d, &c, sizeof(c));
	/* three GIDs is more than a kernel sends or takes */
	c.gid_cnt = 3;
	ck_assert_int_eq(smcr_clc_confirm_encode(wire, sizeof(wire), &c),
			 -EINVAL);
}
END_TEST

START_TEST(decline_v1)
{
	struct smcr_clc_decline_info d, e;
	uint8_t wire[64];
	uint32_t decl = 0;
	uint16_t length;
	uint8_t type;

	memset(&d, 0, sizeof(d));
	d.version = SMCR_CLC_VERSION_V1;
	d.sync_err = true;
	memcpy(d.system_id, sysid_a, 8);
	d.diagnosis = CLC_DECL_SYNCERR;
	ck_assert_int_eq(smcr_clc_decline_encode(wire, sizeof(wire), &d), 28);
	ck_assert_uint_eq(wire[7], 0x18);
	ck_assert_mem_eq(wire + 24, CLC_EYECATCHER, 4);
	ck_assert_int_eq(smcr_clc_hdr_check(wire, 8, &type, &length, &decl), 0);
	ck_assert_uint_eq(length, 28);
	ck_assert_int_eq(smcr_clc_decline_decode(wire, 28, &e, &decl), 0);
	ck_assert_mem_eq(&e, &d, sizeof(d));
	/* v1 has no room for more diagnoses */
	d.diagnosis_v2[0] = 1;
	ck_assert_int_eq(smcr_clc_decline_encode(wire, sizeof(wire), &d),
			 -EINVAL);
	d.diagnosis_v2[0] = 0;
	d.diagnosis = 0;
	ck_assert_int_eq(smcr_clc_decline_encode(wire, sizeof(wire), &d),
			 -EINVAL);
	d.diagnosis = CLC_DECL_SYNCERR;
	d.version = 3;
	ck_assert_int_eq(smcr_clc_decline_encode(wire, sizeof(wire), &d),
			 -EINVAL);
}
END_TEST

START_TEST(eids)
{
	uint8_t e[SMCR_CLC_EID_LEN];

	ck_assert_int_eq(smcr_clc_eid_put(e, "SMCPROXYD-TEST-LAB"), 0);
	ck_assert_mem_eq(e, "SMCPROXYD-TEST-LAB              ", 32);
	ck_assert(smcr_clc_eid_valid(e));
	ck_assert_int_eq(smcr_clc_eid_put(e, "9.A"), 0);
	ck_assert_int_eq(smcr_clc_eid_put(e, ""), -EINVAL);
	ck_assert_int_eq(smcr_clc_eid_put(e, "lower"), -EINVAL);
	ck_assert_int_eq(smcr_clc_eid_put(e, "-LEAD"), -EINVAL);
	ck_assert_int_eq(smcr_clc_eid_put(e, ".LEAD"), -EINVAL);
	ck_assert_int_eq(smcr_clc_eid_put(e, "IN SIDE"), -EINVAL);
	ck_assert_int_eq(smcr_clc_eid_put(e, "UNDER_SCORE"), -EINVAL);
	ck_assert_int_eq(
		smcr_clc_eid_put(e, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456"),
		-EINVAL);
	memset(e, ' ', sizeof(e));
	ck_assert(!smcr_clc_eid_valid(e));
	memcpy(e, "AB\0", 3);
	ck_assert(!smcr_clc_eid_valid(e));
}
END_TEST

START_TEST(header_check)
{
	uint8_t wire[SMCR_CLC_MSG_MAX];
	uint32_t decl = 0;
	uint16_t length;
	uint8_t type;
	size_t n;

	n = fixture("01-clc-c2s-proposal.bin", wire, sizeof(wire));
	CK_REFUSED(smcr_clc_hdr_check(wire, 7, &type, &length, &decl), decl,
		   CLC_DECL_BADMSG);
	wire[0] ^= 1;
	CK_REFUSED(smcr_clc_hdr_check(wire, n, &type, &length, &decl), decl,
		   CLC_DECL_BADMSG);
	wire[0] ^= 1;
	/* version 1 (Linux before 5.11) or 3: not ours */
	wire[7] = 0x12;
	CK_REFUSED(smcr_clc_hdr_check(wire, n, &type, &length, &decl), decl,
		   CLC_DECL_VERSMISMAT);
	wire[7] = 0x32;
	CK_REFUSED(smcr_clc_hdr_check(wire, n, &type, &length, &decl), decl,
		   CLC_DECL_VERSMISMAT);
	wire[7] = 0x22;
	wire[4] = 5;
	CK_REFUSED(smcr_clc_hdr_check(wire, n, &type, &length, &decl), decl,
		   CLC_DECL_BADMSG);
	wire[4] = CLC_PROPOSAL;
	/* lengths no proposal can have */
	wire[5] = 0;
	wire[6] = 83;
	CK_REFUSED(smcr_clc_hdr_check(wire, n, &type, &length, &decl), decl,
		   CLC_DECL_BADMSG);
	wire[5] = (uint8_t)((SMCR_CLC_PROPOSAL_MAX + 1) >> 8);
	wire[6] = (uint8_t)(SMCR_CLC_PROPOSAL_MAX + 1);
	CK_REFUSED(smcr_clc_hdr_check(wire, n, &type, &length, &decl), decl,
		   CLC_DECL_BADMSG);
	/* a DECLINE is 28 bytes in version 1 and 44 in version 2 */
	n = fixture("44-clc-s2c-decline.bin", wire, sizeof(wire));
	wire[7] = 0x10;
	CK_REFUSED(smcr_clc_hdr_check(wire, n, &type, &length, &decl), decl,
		   CLC_DECL_BADMSG);
	/* an ACCEPT is 108 or 160 */
	n = fixture("02-clc-s2c-accept.bin", wire, sizeof(wire));
	wire[6] = 161;
	CK_REFUSED(smcr_clc_hdr_check(wire, n, &type, &length, &decl), decl,
		   CLC_DECL_BADMSG);
	wire[6] = 107;
	CK_REFUSED(smcr_clc_hdr_check(wire, n, &type, &length, &decl), decl,
		   CLC_DECL_BADMSG);
}
END_TEST

/* Every captured message, cut short or run long, and given to the wrong
 * decoder, is refused. */
START_TEST(truncated_and_wrong_decoder)
{
	static const char *const files[] = {
		"01-clc-c2s-proposal.bin", "02-clc-s2c-accept.bin",
		"03-clc-c2s-confirm.bin",  "22-clc-s2c-accept.bin",
		"25-clc-c2s-confirm.bin",  "44-clc-s2c-decline.bin",
	};
	uint8_t wire[SMCR_CLC_MSG_MAX + 1];
	struct smcr_clc_proposal_info p;
	struct smcr_clc_accept_info a;
	struct smcr_clc_decline_info d;
	uint32_t decl;
	size_t n, cut;
	unsigned int i;
	int ok;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		memset(wire, 0, sizeof(wire));
		n = fixture(files[i], wire, sizeof(wire));
		for (cut = 0; cut <= n + 1; cut++) {
			ok = (smcr_clc_proposal_decode(wire, cut, &p, &decl) ==
			      0) +
			     (smcr_clc_accept_decode(wire, cut, &a, &decl) ==
			      0) +
			     (smcr_clc_confirm_decode(wire, cut, &a, &decl) ==
			      0) +
			     (smcr_clc_decline_decode(wire, cut, &d, &decl) ==
			      0);
			ck_assert_msg(ok == (cut == n), "%s cut to %zu: %d",
				      files[i], cut, ok);
		}
	}
}
END_TEST

START_TEST(proposal_fields)
{
	uint8_t wire[SMCR_CLC_MSG_MAX], w[SMCR_CLC_MSG_MAX];
	struct smcr_clc_proposal_info p;
	uint32_t decl = 0;
	size_t n;

	n = fixture("01-clc-c2s-proposal.bin", wire, sizeof(wire));
#define EDIT(off, val)              \
	do {                        \
		memcpy(w, wire, n); \
		w[(off)] = (val);   \
	} while (0)
	/* offered neither in v1 nor in v2 */
	EDIT(7, 0x2a);
	CK_REFUSED(smcr_clc_proposal_decode(w, n, &p, &decl), decl,
		   CLC_DECL_BADMSG);
	/* an IP area offset without v1, a v2 extension not where it is */
	EDIT(39, 40);
	CK_REFUSED(smcr_clc_proposal_decode(w, n, &p, &decl), decl,
		   CLC_DECL_BADMSG);
	EDIT(51, 27);
	CK_REFUSED(smcr_clc_proposal_decode(w, n, &p, &decl), decl,
		   CLC_DECL_BADMSG);
	/* an SMC-Dv2 extension offset without SMC-D */
	EDIT(87, 32);
	CK_REFUSED(smcr_clc_proposal_decode(w, n, &p, &decl), decl,
		   CLC_DECL_BADMSG);
	/* more EIDs than the length holds, more than 8 */
	EDIT(80, 2);
	CK_REFUSED(smcr_clc_proposal_decode(w, n, &p, &decl), decl,
		   CLC_DECL_BADMSG);
	EDIT(80, 9);
	CK_REFUSED(smcr_clc_proposal_decode(w, n, &p, &decl), decl,
		   CLC_DECL_BADMSG);
	/* an EID a kernel would not take */
	EDIT(120, 'a');
	CK_REFUSED(smcr_clc_proposal_decode(w, n, &p, &decl), decl,
		   CLC_DECL_BADMSG);
	/* no RoCE v2 GID */
	memcpy(w, wire, n);
	memset(w + 88, 0, 16);
	CK_REFUSED(smcr_clc_proposal_decode(w, n, &p, &decl), decl,
		   CLC_DECL_BADMSG);
	/* release 1 limits; release 0 has none */
	EDIT(104, 15);
	CK_REFUSED(smcr_clc_proposal_decode(w, n, &p, &decl), decl,
		   CLC_DECL_MAXCONNERR);
	EDIT(105, 3);
	CK_REFUSED(smcr_clc_proposal_decode(w, n, &p, &decl), decl,
		   CLC_DECL_MAXLINKERR);
	EDIT(105, 0);
	CK_REFUSED(smcr_clc_proposal_decode(w, n, &p, &decl), decl,
		   CLC_DECL_MAXLINKERR);
	memcpy(w, wire, n);
	w[83] = 0x00; /* release 0, as Linux 6.1 */
	memset(w + 104, 0, 4);
	ck_assert_int_eq(smcr_clc_proposal_decode(w, n, &p, &decl), 0);
	ck_assert_uint_eq(p.release, 0);
	/* reserved bytes are the kernel's business, as it does */
	EDIT(110, 0x5a);
	ck_assert_int_eq(smcr_clc_proposal_decode(w, n, &p, &decl), 0);
	/* SMC-R without an EID: the kernel's own reason */
	memcpy(w, wire, n);
	w[80] = 0;
	memmove(w + 120, w + 152, 4);
	reframe(w, n - 32);
	CK_REFUSED(smcr_clc_proposal_decode(w, n - 32, &p, &decl), decl,
		   CLC_DECL_NOUEID);
	/* room for two EIDs, one counted: bytes no area accounts for */
	memcpy(w, wire, n);
	memcpy(w + 152, w + 120, 32);
	reframe(w, n + 32);
	CK_REFUSED(smcr_clc_proposal_decode(w, n + 32, &p, &decl), decl,
		   CLC_DECL_BADMSG);
	w[80] = 2;
	ck_assert_int_eq(smcr_clc_proposal_decode(w, n + 32, &p, &decl), 0);
	ck_assert_uint_eq(p.eid_cnt, 2);
	/* trailer: another eyecatcher, or SMCD against an SMCR header */
	memcpy(w, wire, n);
	w[n - 1] ^= 1;
	CK_REFUSED(smcr_clc_proposal_decode(w, n, &p, &decl), decl,
		   CLC_DECL_BADMSG);
	memcpy(w, wire, n);
	memcpy(w + n - 4, CLC_EYECATCHER_SMCD, 4);
	CK_REFUSED(smcr_clc_proposal_decode(w, n, &p, &decl), decl,
		   CLC_DECL_BADMSG);
	memcpy(w, CLC_EYECATCHER_SMCD, 4);
	ck_assert_int_eq(smcr_clc_proposal_decode(w, n, &p, &decl), 0);
	ck_assert(p.smcd_eyecatcher);
#undef EDIT
}
END_TEST

START_TEST(accept_fields)
{
	uint8_t wire[SMCR_CLC_MSG_MAX], w[SMCR_CLC_MSG_MAX];
	struct smcr_clc_accept_info a;
	uint32_t decl = 0;
	size_t n;

	n = fixture("02-clc-s2c-accept.bin", wire, sizeof(wire));
#define EDIT(off, val)              \
	do {                        \
		memcpy(w, wire, n); \
		w[(off)] = (val);   \
	} while (0)
#define REFUSED(want) \
	CK_REFUSED(smcr_clc_accept_decode(w, n, &a, &decl), decl, (want))
	EDIT(7, 0x20); /* 160 bytes without first contact */
	REFUSED(CLC_DECL_BADMSG);
	EDIT(7, 0x29); /* SMC-D */
	REFUSED(CLC_DECL_BADMSG);
	EDIT(7, 0x2c); /* typev2's SMC-D bit */
	REFUSED(CLC_DECL_BADMSG);
	memcpy(w, wire, n);
	memcpy(w, CLC_EYECATCHER_SMCD, 4);
	memcpy(w + n - 4, CLC_EYECATCHER_SMCD, 4);
	REFUSED(CLC_DECL_BADMSG);
	memcpy(w, wire, n);
	memset(w + 16, 0, 16); /* no GID */
	REFUSED(CLC_DECL_BADMSG);
	EDIT(40, 1); /* QP 1 */
	w[38] = w[39] = 0;
	REFUSED(CLC_DECL_BADMSG);
	EDIT(45, 0); /* RMB element 0 */
	REFUSED(CLC_DECL_BADMSG);
	memcpy(w, wire, n);
	memset(w + 46, 0, 4); /* alert token 0 */
	REFUSED(CLC_DECL_BADMSG);
	EDIT(50, 0x20); /* MTU 0 */
	REFUSED(CLC_DECL_BADMSG);
	EDIT(50, 0x26); /* MTU 6 */
	REFUSED(CLC_DECL_BADMSG);
	memcpy(w, wire, n);
	memset(w + 52, 0xff, 8); /* the RMB wraps */
	REFUSED(CLC_DECL_BADMSG);
	EDIT(64, ' '); /* no EID */
	memset(w + 64, ' ', 32);
	REFUSED(CLC_DECL_BADMSG);
	EDIT(140, 15); /* release 1 limits */
	REFUSED(CLC_DECL_MAXCONNERR);
	EDIT(141, 3);
	REFUSED(CLC_DECL_MAXLINKERR);
	/* 6.1's first-contact extension: release 0, reserved limits */
	memcpy(w, wire, n);
	w[105] = 0x20;
	memset(w + 140, 0, 8);
	ck_assert_int_eq(smcr_clc_accept_decode(w, n, &a, &decl), 0);
	ck_assert_uint_eq(a.release, 0);
	/* an ACCEPT is no CONFIRM: no GID list after the extension */
	CK_REFUSED(smcr_clc_confirm_decode(wire, n, &a, &decl), decl,
		   CLC_DECL_BADMSG);
#undef REFUSED

	n = fixture("03-clc-c2s-confirm.bin", wire, sizeof(wire));
	EDIT(156, 0); /* no GID */
	CK_REFUSED(smcr_clc_confirm_decode(w, n, &a, &decl), decl,
		   CLC_DECL_BADMSG);
	EDIT(156, 2); /* more GIDs than the length holds */
	CK_REFUSED(smcr_clc_confirm_decode(w, n, &a, &decl), decl,
		   CLC_DECL_BADMSG);
	memcpy(w, wire, n);
	memset(w + 160, 0, 16);
	CK_REFUSED(smcr_clc_confirm_decode(w, n, &a, &decl), decl,
		   CLC_DECL_BADMSG);
#undef EDIT
}
END_TEST

START_TEST(decline_fields)
{
	uint8_t wire[SMCR_CLC_MSG_MAX], w[SMCR_CLC_MSG_MAX];
	struct smcr_clc_decline_info d;
	uint32_t decl = 0;
	size_t n;

	n = fixture("44-clc-s2c-decline.bin", wire, sizeof(wire));
	memcpy(w, wire, n);
	memset(w + 16, 0, 4);
	CK_REFUSED(smcr_clc_decline_decode(w, n, &d, &decl), decl,
		   CLC_DECL_BADMSG);
	memcpy(w, wire, n);
	w[7] |= 0x01;
	CK_REFUSED(smcr_clc_decline_decode(w, n, &d, &decl), decl,
		   CLC_DECL_BADMSG);
	/* a sync error; any os type; more diagnoses */
	memcpy(w, wire, n);
	w[7] |= CLC_FLAG_FIRST_CONTACT;
	w[20] = 0x10;
	w[27] = 0x42;
	ck_assert_int_eq(smcr_clc_decline_decode(w, n, &d, &decl), 0);
	ck_assert(d.sync_err);
	ck_assert_uint_eq(d.os_type, SMCR_CLC_OS_ZOS);
	ck_assert_uint_eq(d.diagnosis_v2[0], 0x42);
	/* an SMC-D peer's */
	memcpy(w, wire, n);
	memcpy(w, CLC_EYECATCHER_SMCD, 4);
	memcpy(w + n - 4, CLC_EYECATCHER_SMCD, 4);
	ck_assert_int_eq(smcr_clc_decline_decode(w, n, &d, &decl), 0);
	ck_assert(d.smcd_eyecatcher);
}
END_TEST

START_TEST(encoders_refuse)
{
	uint8_t wire[SMCR_CLC_MSG_MAX];
	struct smcr_clc_proposal_info p;
	struct smcr_clc_accept_info a;
	uint32_t decl = 0;
	size_t n;

	n = fixture("01-clc-c2s-proposal.bin", wire, sizeof(wire));
	ck_assert_int_eq(smcr_clc_proposal_decode(wire, n, &p, &decl), 0);
	p.eid_cnt = 0;
	ck_assert_int_eq(smcr_clc_proposal_encode(wire, sizeof(wire), &p),
			 -EINVAL);
	p.eid_cnt = 1;
	p.ism_gid_cnt = 1; /* without SMC-D */
	ck_assert_int_eq(smcr_clc_proposal_encode(wire, sizeof(wire), &p),
			 -EINVAL);
	p.ism_gid_cnt = 0;
	p.typev2 = 4;
	ck_assert_int_eq(smcr_clc_proposal_encode(wire, sizeof(wire), &p),
			 -EINVAL);

	n = fixture("22-clc-s2c-accept.bin", wire, sizeof(wire));
	ck_assert_int_eq(smcr_clc_accept_decode(wire, n, &a, &decl), 0);
	a.os_type =
		SMCR_CLC_OS_LINUX; /* no first-contact extension to carry it */
	ck_assert_int_eq(smcr_clc_accept_encode(wire, sizeof(wire), &a),
			 -EINVAL);
	a.os_type = 0;
	a.gid_cnt = 1;
	ck_assert_int_eq(smcr_clc_confirm_encode(wire, sizeof(wire), &a),
			 -EINVAL);
	a.gid_cnt = 0;
	a.rmbe_size = 16;
	ck_assert_int_eq(smcr_clc_accept_encode(wire, sizeof(wire), &a),
			 -EINVAL);
}
END_TEST

static Suite *
smcr_clc_suite(void)
{
	Suite *s = suite_create("smcr_clc");
	TCase *tc = tcase_create("kernel");

	tcase_add_test(tc, kernel_proposals);
	tcase_add_test(tc, kernel_accepts_and_confirms);
	tcase_add_test(tc, kernel_decline);
	suite_add_tcase(s, tc);
	tc = tcase_create("round_trip");
	tcase_add_test(tc, proposal_all_areas);
	tcase_add_test(tc, confirm_two_gids);
	tcase_add_test(tc, decline_v1);
	tcase_add_test(tc, eids);
	suite_add_tcase(s, tc);
	tc = tcase_create("malformed");
	tcase_add_test(tc, header_check);
	tcase_add_test(tc, truncated_and_wrong_decoder);
	tcase_add_test(tc, proposal_fields);
	tcase_add_test(tc, accept_fields);
	tcase_add_test(tc, decline_fields);
	tcase_add_test(tc, encoders_refuse);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(smcr_clc_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
