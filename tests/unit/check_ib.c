// SPDX-License-Identifier: BSD-2-Clause
/*
 * ib.c without hardware: which GID table entry carries RoCE v2 traffic for
 * a local address (tables are written the way rxe and mlx5 fill them: a
 * link-local GID, then each address twice (RoCE v1 and v2), with holes),
 * and the attributes ibv_modify_qp is given to connect a QP along a path.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <infiniband/verbs.h>

#include "smcproxyd.h"

static struct ib_gid
gid(uint32_t index, const char *ip6, enum ib_gid_type type)
{
	struct ib_gid g;

	memset(&g, 0, sizeof(g));
	g.index = index;
	g.type = type;
	ck_assert_int_eq(inet_pton(AF_INET6, ip6, g.raw), 1);
	return g;
}

static struct addr
local(const char *ip)
{
	struct addr a;

	ck_assert_int_eq(addr_parse_host(ip, &a), 0);
	return a;
}

START_TEST(ipv4_picks_roce_v2_mapped_entry)
{
	struct ib_gid t[] = {
		gid(0, "fe80::5054:ff:fe12:3456", IB_GID_TYPE_ROCE_V1),
		gid(1, "fe80::5054:ff:fe12:3456", IB_GID_TYPE_ROCE_V2),
		gid(2, "::ffff:10.77.0.1", IB_GID_TYPE_ROCE_V1),
		gid(3, "::ffff:10.77.0.1", IB_GID_TYPE_ROCE_V2),
	};
	struct addr a = local("10.77.0.1");

	ck_assert_int_eq(ib_gid_pick(t, 4, &a), 3);
}
END_TEST

START_TEST(rxe_table)
{
	/* What rxe0 shows in the VM: no RoCE v1 entries at all. */
	struct ib_gid t[] = {
		gid(0, "fe80::208b:2cff:fea6:c48", IB_GID_TYPE_ROCE_V2),
		gid(1, "::ffff:10.77.0.1", IB_GID_TYPE_ROCE_V2),
	};
	struct addr a = local("10.77.0.1");

	ck_assert_int_eq(ib_gid_pick(t, 2, &a), 1);
}
END_TEST

START_TEST(returns_table_index_not_position)
{
	/* Holes in the table: the answer is the entry's own index. */
	struct ib_gid t[] = {
		gid(0, "fe80::1", IB_GID_TYPE_ROCE_V2),
		gid(7, "::ffff:192.0.2.9", IB_GID_TYPE_ROCE_V2),
	};
	struct addr a = local("192.0.2.9");

	ck_assert_int_eq(ib_gid_pick(t, 2, &a), 7);
}
END_TEST

START_TEST(roce_v1_only_is_no_match)
{
	struct ib_gid t[] = {
		gid(0, "::ffff:10.77.0.1", IB_GID_TYPE_ROCE_V1),
		gid(1, "::ffff:10.77.0.1", IB_GID_TYPE_IB),
	};
	struct addr a = local("10.77.0.1");

	ck_assert_int_eq(ib_gid_pick(t, 2, &a), -ENOENT);
}
END_TEST

START_TEST(other_address_is_no_match)
{
	struct ib_gid t[] = {
		gid(0, "::ffff:10.77.0.1", IB_GID_TYPE_ROCE_V2),
		/* The old IPv4-compatible form ::a.b.c.d is not its GID. */
		gid(1, "::10.77.0.2", IB_GID_TYPE_ROCE_V2),
	};
	struct addr a = local("10.77.0.2");

	ck_assert_int_eq(ib_gid_pick(t, 2, &a), -ENOENT);
	ck_assert_int_eq(ib_gid_pick(t, 0, &a), -ENOENT);
}
END_TEST

START_TEST(ipv6_matches_itself)
{
	struct ib_gid t[] = {
		gid(0, "fe80::1", IB_GID_TYPE_ROCE_V2),
		gid(1, "2001:db8::5", IB_GID_TYPE_ROCE_V1),
		gid(2, "2001:db8::5", IB_GID_TYPE_ROCE_V2),
	};
	struct addr a = local("2001:db8::5");
	struct addr ll = local("fe80::1");

	ck_assert_int_eq(ib_gid_pick(t, 3, &a), 2);
	ck_assert_int_eq(ib_gid_pick(t, 3, &ll), 0);
}
END_TEST

START_TEST(unsupported_family)
{
	struct ib_gid t[] = {
		gid(0, "::ffff:10.77.0.1", IB_GID_TYPE_ROCE_V2),
	};
	struct addr a;

	memset(&a, 0, sizeof(a));
	a.ss.ss_family = AF_UNIX;
	ck_assert_int_eq(ib_gid_pick(t, 1, &a), -EAFNOSUPPORT);
}
END_TEST

START_TEST(list_rejects_bad_local_address)
{
	FILE *out = tmpfile();

	ck_assert_ptr_nonnull(out);
	ck_assert_int_eq(ib_list_devices(out, "10.77.0"), -EINVAL);
	ck_assert_int_eq(ib_list_devices(out, "rxe0"), -EINVAL);
	fclose(out);
}
END_TEST

/* A peer in another subnet: ::ffff:10.99.0.3, qpn 0x1234, psn 0xabcde. */
static struct dev_qp_addr
far_peer(int mtu)
{
	struct dev_qp_addr p;

	memset(&p, 0, sizeof(p));
	ck_assert_int_eq(inet_pton(AF_INET6, "::ffff:10.99.0.3", p.gid), 1);
	p.qpn = 0x1234;
	p.psn = 0xabcde;
	p.mtu = mtu;
	return p;
}

START_TEST(qp_attrs_carry_the_path)
{
	struct dev_path path = {.traffic_class = 26 << 2,
				.sl = 3,
				.timeout = 18,
				.retry_cnt = 5,
				.rnr_retry = 6};
	struct dev_qp_addr peer = far_peer(IBV_MTU_4096);
	struct ibv_qp_attr rtr, rts;

	ck_assert_int_eq(ib_qp_attrs(1, 3, IBV_MTU_1024, 0x777, &peer, &path,
				     &rtr, &rts),
			 0);
	ck_assert_int_eq(rtr.qp_state, IBV_QPS_RTR);
	ck_assert_int_eq(rtr.path_mtu, IBV_MTU_1024);
	ck_assert_uint_eq(rtr.dest_qp_num, 0x1234);
	ck_assert_uint_eq(rtr.rq_psn, 0xabcde);
	/* routed: a GRH from our GID entry to the peer's GID */
	ck_assert_int_eq(rtr.ah_attr.is_global, 1);
	ck_assert_int_eq(rtr.ah_attr.port_num, 1);
	ck_assert_int_eq(rtr.ah_attr.grh.sgid_index, 3);
	ck_assert_mem_eq(rtr.ah_attr.grh.dgid.raw, peer.gid, 16);
	ck_assert_int_eq(rtr.ah_attr.grh.traffic_class, 104);
	ck_assert_int_eq(rtr.ah_attr.sl, 3);
	/* not 1, should a kernel keep what we ask (Linux takes the route's) */
	ck_assert_int_ge(rtr.ah_attr.grh.hop_limit, 64);
	ck_assert_int_eq(rts.qp_state, IBV_QPS_RTS);
	ck_assert_int_eq(rts.timeout, 18);
	ck_assert_int_eq(rts.retry_cnt, 5);
	ck_assert_int_eq(rts.rnr_retry, 6);
	ck_assert_uint_eq(rts.sq_psn, 0x777);

	/* the smaller MTU wins either way */
	peer = far_peer(IBV_MTU_512);
	ck_assert_int_eq(ib_qp_attrs(1, 3, IBV_MTU_1024, 0x777, &peer, &path,
				     &rtr, &rts),
			 0);
	ck_assert_int_eq(rtr.path_mtu, IBV_MTU_512);
}
END_TEST

START_TEST(qp_attrs_refuse_what_verbs_cannot_carry)
{
	static const struct dev_path ok = DEV_PATH_SMC;
	struct dev_qp_addr peer = far_peer(IBV_MTU_1024);
	struct ibv_qp_attr rtr, rts;
	struct dev_path bad;

	ck_assert_int_eq(
		ib_qp_attrs(1, 0, IBV_MTU_1024, 1, &peer, &ok, &rtr, &rts), 0);
	ck_assert_int_eq(rts.timeout, 15);
	ck_assert_int_eq(rts.retry_cnt, 7);
	ck_assert_int_eq(rts.rnr_retry, 7);
	ck_assert_int_eq(rtr.ah_attr.grh.traffic_class, 0);
	bad = ok;
	bad.sl = 8;
	ck_assert_int_eq(
		ib_qp_attrs(1, 0, IBV_MTU_1024, 1, &peer, &bad, &rtr, &rts),
		-EINVAL);
	bad = ok;
	bad.timeout = 32;
	ck_assert_int_eq(
		ib_qp_attrs(1, 0, IBV_MTU_1024, 1, &peer, &bad, &rtr, &rts),
		-EINVAL);
	bad = ok;
	bad.retry_cnt = 8;
	ck_assert_int_eq(
		ib_qp_attrs(1, 0, IBV_MTU_1024, 1, &peer, &bad, &rtr, &rts),
		-EINVAL);
	bad = ok;
	bad.rnr_retry = 8;
	ck_assert_int_eq(
		ib_qp_attrs(1, 0, IBV_MTU_1024, 1, &peer, &bad, &rtr, &rts),
		-EINVAL);
	ck_assert_int_eq(
		ib_qp_attrs(1, -1, IBV_MTU_1024, 1, &peer, &ok, &rtr, &rts),
		-EINVAL);
	peer.qpn = 0x1000000;
	ck_assert_int_eq(
		ib_qp_attrs(1, 0, IBV_MTU_1024, 1, &peer, &ok, &rtr, &rts),
		-EINVAL);
}
END_TEST

static Suite *
ib_suite(void)
{
	Suite *s = suite_create("ib");
	TCase *tc = tcase_create("gid_pick");

	tcase_add_test(tc, ipv4_picks_roce_v2_mapped_entry);
	tcase_add_test(tc, rxe_table);
	tcase_add_test(tc, returns_table_index_not_position);
	tcase_add_test(tc, roce_v1_only_is_no_match);
	tcase_add_test(tc, other_address_is_no_match);
	tcase_add_test(tc, ipv6_matches_itself);
	tcase_add_test(tc, unsupported_family);
	suite_add_tcase(s, tc);
	tc = tcase_create("qp_attrs");
	tcase_add_test(tc, qp_attrs_carry_the_path);
	tcase_add_test(tc, qp_attrs_refuse_what_verbs_cannot_carry);
	suite_add_tcase(s, tc);
	tc = tcase_create("list");
	tcase_add_test(tc, list_rejects_bad_local_address);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(ib_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
