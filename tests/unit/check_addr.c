// SPDX-License-Identifier: BSD-2-Clause
/*
 * Unit tests for addr.c: the "ip:port" forms a config may use, everything
 * it must refuse (host names, bad ports, unbracketed IPv6), and the
 * comparisons rules and peers are matched with.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "smcproxyd.h"

static const char *
roundtrip(const char *s, char *buf, size_t len)
{
	struct addr a;

	ck_assert_msg(addr_parse(s, &a) == 0, "refused %s", s);
	return addr_str(&a, buf, len);
}

START_TEST(test_ipv4)
{
	char buf[ADDR_STRLEN];
	struct addr a;
	const struct sockaddr_in *sin = (const void *)&a.ss;

	ck_assert_int_eq(addr_parse("192.0.2.1:7100", &a), 0);
	ck_assert_int_eq(a.ss.ss_family, AF_INET);
	ck_assert_uint_eq(a.len, sizeof(struct sockaddr_in));
	ck_assert_uint_eq(ntohs(sin->sin_port), 7100);
	ck_assert_uint_eq(ntohl(sin->sin_addr.s_addr), 0xc0000201);
	ck_assert_str_eq(roundtrip("127.0.0.1:1", buf, sizeof(buf)),
			 "127.0.0.1:1");
	ck_assert_str_eq(roundtrip("0.0.0.0:65535", buf, sizeof(buf)),
			 "0.0.0.0:65535");
}
END_TEST

START_TEST(test_ipv6)
{
	char buf[ADDR_STRLEN];
	struct addr a;
	const struct sockaddr_in6 *sin6 = (const void *)&a.ss;

	ck_assert_int_eq(addr_parse("[2001:db8::1]:443", &a), 0);
	ck_assert_int_eq(a.ss.ss_family, AF_INET6);
	ck_assert_uint_eq(a.len, sizeof(struct sockaddr_in6));
	ck_assert_uint_eq(ntohs(sin6->sin6_port), 443);
	ck_assert_str_eq(roundtrip("[::1]:7100", buf, sizeof(buf)),
			 "[::1]:7100");
	ck_assert_str_eq(roundtrip("[::]:80", buf, sizeof(buf)), "[::]:80");
	ck_assert_str_eq(roundtrip("[::ffff:10.0.0.1]:80", buf, sizeof(buf)),
			 "[::ffff:10.0.0.1]:80");
}
END_TEST

START_TEST(test_refused)
{
	static const char *const bad[] = {
		"",
		":80",
		"127.0.0.1",
		"127.0.0.1:",
		"127.0.0.1:0",
		"127.0.0.1:65536",
		"127.0.0.1:99999999999999999999",
		"127.0.0.1:-1",
		"127.0.0.1:+80",
		"127.0.0.1: 80",
		"127.0.0.1:80 ",
		"127.0.0.1:80x",
		"127.0.0.1:0x50",
		"localhost:80",
		"example.com:443",
		"256.0.0.1:80",
		"1.2.3:80",
		"::1:80",
		"2001:db8::1:443",
		"[::1]",
		"[::1]80",
		"[::1:80",
		"[]:80",
		"[127.0.0.1]:80x",
		"[fe80::1%eth0]:80",
	};
	struct addr a;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(addr_parse(bad[i], &a) < 0, "accepted \"%s\"",
			      bad[i]);
}
END_TEST

START_TEST(test_parse_host)
{
	char buf[ADDR_STRLEN];
	struct addr a;

	ck_assert_int_eq(addr_parse_host("10.1.2.3", &a), 0);
	ck_assert_str_eq(addr_str(&a, buf, sizeof(buf)), "10.1.2.3:0");
	ck_assert_int_eq(addr_parse_host("fd00::7", &a), 0);
	ck_assert_str_eq(addr_str(&a, buf, sizeof(buf)), "[fd00::7]:0");
	ck_assert_int_lt(addr_parse_host("10.1.2.3:80", &a), 0);
	ck_assert_int_lt(addr_parse_host("localhost", &a), 0);
}
END_TEST

START_TEST(test_compare)
{
	struct addr a, b;

	ck_assert_int_eq(addr_parse("10.0.0.1:80", &a), 0);
	ck_assert_int_eq(addr_parse("10.0.0.1:81", &b), 0);
	ck_assert(addr_same_host(&a, &b));
	ck_assert(!addr_equal(&a, &b));

	ck_assert_int_eq(addr_parse("10.0.0.1:80", &b), 0);
	ck_assert(addr_equal(&a, &b));

	/* a peer connecting over IPv6 with a mapped address is the same host */
	ck_assert_int_eq(addr_parse("[::ffff:10.0.0.1]:5000", &b), 0);
	ck_assert(addr_same_host(&a, &b));
	ck_assert(addr_same_host(&b, &a));

	ck_assert_int_eq(addr_parse("10.0.0.2:80", &b), 0);
	ck_assert(!addr_same_host(&a, &b));
	ck_assert(!addr_equal(&a, &b));

	ck_assert_int_eq(addr_parse("[::1]:80", &a), 0);
	ck_assert_int_eq(addr_parse("[::1]:80", &b), 0);
	ck_assert(addr_equal(&a, &b));
	ck_assert_int_eq(addr_parse("[::2]:80", &b), 0);
	ck_assert(!addr_same_host(&a, &b));
	ck_assert_int_eq(addr_parse("127.0.0.1:80", &b), 0);
	ck_assert(!addr_same_host(&a, &b));
}
END_TEST

static bool
in_net(const char *net, const char *a)
{
	struct addr_net n;
	struct addr x;

	ck_assert_msg(addr_net_parse(net, &n) == 0, "refused %s", net);
	ck_assert_msg(addr_parse(a, &x) == 0, "refused %s", a);
	return addr_net_match(&n, &x);
}

START_TEST(test_net)
{
	static const char *const bad[] = {
		"",
		"/24",
		"10.0.0.0/33",
		"10.0.0.0/",
		"10.0.0.0/-1",
		"10.0.0.0/2x",
		"10.0.0.7/24",
		"fd00::1/64",
		"fd00::/129",
		"10.0.0.0:80",
		"localhost",
		"10.0.0.0/ 8",
	};
	struct addr_net n;
	size_t i;

	ck_assert(in_net("10.77.0.0/24", "10.77.0.2:5000"));
	ck_assert(!in_net("10.77.0.0/24", "10.77.1.2:5000"));
	ck_assert(in_net("10.77.0.2", "10.77.0.2:1"));
	ck_assert(!in_net("10.77.0.2", "10.77.0.3:1"));
	ck_assert(in_net("0.0.0.0/0", "192.0.2.1:1"));
	ck_assert(!in_net("0.0.0.0/0", "[2001:db8::1]:1"));
	ck_assert(in_net("10.77.0.0/23", "10.77.1.255:1"));
	ck_assert(!in_net("10.77.0.0/23", "10.77.2.0:1"));
	/* a client seen on an IPv6 socket as IPv4-mapped is its IPv4 */
	ck_assert(in_net("10.77.0.0/24", "[::ffff:10.77.0.9]:1"));
	ck_assert(in_net("2001:db8::/32", "[2001:db8:1::5]:1"));
	ck_assert(!in_net("2001:db8::/33", "[2001:db8:8000::5]:1"));
	ck_assert(in_net("::/0", "[fd00::1]:1"));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(addr_net_parse(bad[i], &n) < 0, "accepted \"%s\"",
			      bad[i]);
}
END_TEST

static Suite *
addr_suite(void)
{
	Suite *s = suite_create("addr");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, test_ipv4);
	tcase_add_test(tc, test_ipv6);
	tcase_add_test(tc, test_refused);
	tcase_add_test(tc, test_parse_host);
	tcase_add_test(tc, test_compare);
	tcase_add_test(tc, test_net);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(addr_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
