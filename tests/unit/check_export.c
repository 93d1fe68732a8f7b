// SPDX-License-Identifier: BSD-2-Clause
/*
 * The PROXY protocol v2 header an export sends its target, against the
 * bytes haproxy's proxy-protocol.txt (section 2.2) lays out.
 */
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "smcproxyd.h"

static const uint8_t sig[12] = {0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d,
				0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a};

START_TEST(proxy_v2_inet)
{
	static const uint8_t want[] = {
		0x21, 0x11, 0x00, 0x0c, /* v2 PROXY, TCP4, 12 bytes */
		127,  0,    0,	  5,	/* source */
		127,  0,    0,	  1,	/* destination */
		0x9c, 0xb0, 0x18, 0xec, /* ports 40112, 6380 */
	};
	uint8_t buf[EXPORT_PROXY_MAX];
	struct addr src, dst;

	ck_assert_int_eq(addr_parse("127.0.0.5:40112", &src), 0);
	ck_assert_int_eq(addr_parse("127.0.0.1:6380", &dst), 0);
	ck_assert_uint_eq(export_proxy_header(buf, &src, &dst), 28);
	ck_assert_mem_eq(buf, sig, sizeof(sig));
	ck_assert_mem_eq(buf + 12, want, sizeof(want));
}
END_TEST

START_TEST(proxy_v2_inet6)
{
	uint8_t buf[EXPORT_PROXY_MAX], want[40];
	struct addr src, dst;

	ck_assert_int_eq(addr_parse("[2001:db8::7]:443", &src), 0);
	ck_assert_int_eq(addr_parse("[::1]:8080", &dst), 0);
	memset(want, 0, sizeof(want));
	want[0] = 0x21; /* v2 PROXY */
	want[1] = 0x21; /* TCP6 */
	want[3] = 36;
	want[4] = 0x20;
	want[5] = 0x01;
	want[6] = 0x0d;
	want[7] = 0xb8;
	want[19] = 7;
	want[35] = 1;
	want[36] = 443 >> 8;
	want[37] = 443 & 0xff;
	want[38] = 8080 >> 8;
	want[39] = 8080 & 0xff;
	ck_assert_uint_eq(export_proxy_header(buf, &src, &dst), 52);
	ck_assert_mem_eq(buf, sig, sizeof(sig));
	ck_assert_mem_eq(buf + 12, want, sizeof(want));
}
END_TEST

/* No client known, or ends of two families: LOCAL, no addresses. */
START_TEST(proxy_v2_local)
{
	static const uint8_t want[] = {0x20, 0x00, 0x00, 0x00};
	uint8_t buf[EXPORT_PROXY_MAX];
	struct addr src, dst;

	ck_assert_int_eq(addr_parse("127.0.0.1:6380", &dst), 0);
	ck_assert_uint_eq(export_proxy_header(buf, NULL, &dst), 16);
	ck_assert_mem_eq(buf, sig, sizeof(sig));
	ck_assert_mem_eq(buf + 12, want, sizeof(want));
	ck_assert_int_eq(addr_parse("[::1]:1", &src), 0);
	ck_assert_uint_eq(export_proxy_header(buf, &src, &dst), 16);
	ck_assert_mem_eq(buf + 12, want, sizeof(want));
}
END_TEST

static Suite *
export_suite(void)
{
	Suite *s = suite_create("export");
	TCase *tc = tcase_create("proxy");

	tcase_add_test(tc, proxy_v2_inet);
	tcase_add_test(tc, proxy_v2_inet6);
	tcase_add_test(tc, proxy_v2_local);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(export_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
