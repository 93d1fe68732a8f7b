// SPDX-License-Identifier: BSD-2-Clause
/*
 * The PROXY protocol (haproxy's proxy-protocol.txt): the v2 header an
 * export sends its target, against the bytes section 2.2 lays out, and
 * the v1 and v2 headers a rule with accept_proxy reads, whole or in
 * parts, well formed or not.
 */
#include <errno.h>
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
	uint8_t buf[PROXY_V2_MAX];
	struct addr src, dst;

	ck_assert_int_eq(addr_parse("127.0.0.5:40112", &src), 0);
	ck_assert_int_eq(addr_parse("127.0.0.1:6380", &dst), 0);
	ck_assert_uint_eq(proxy_header_write(buf, &src, &dst), 28);
	ck_assert_mem_eq(buf, sig, sizeof(sig));
	ck_assert_mem_eq(buf + 12, want, sizeof(want));
}
END_TEST

START_TEST(proxy_v2_inet6)
{
	uint8_t buf[PROXY_V2_MAX], want[40];
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
	ck_assert_uint_eq(proxy_header_write(buf, &src, &dst), 52);
	ck_assert_mem_eq(buf, sig, sizeof(sig));
	ck_assert_mem_eq(buf + 12, want, sizeof(want));
}
END_TEST

/* No client known, or ends of two families: LOCAL, no addresses. */
START_TEST(proxy_v2_local)
{
	static const uint8_t want[] = {0x20, 0x00, 0x00, 0x00};
	uint8_t buf[PROXY_V2_MAX];
	struct addr src, dst;

	ck_assert_int_eq(addr_parse("127.0.0.1:6380", &dst), 0);
	ck_assert_uint_eq(proxy_header_write(buf, NULL, &dst), 16);
	ck_assert_mem_eq(buf, sig, sizeof(sig));
	ck_assert_mem_eq(buf + 12, want, sizeof(want));
	ck_assert_int_eq(addr_parse("[::1]:1", &src), 0);
	ck_assert_uint_eq(proxy_header_write(buf, &src, &dst), 16);
	ck_assert_mem_eq(buf + 12, want, sizeof(want));
}
END_TEST

/* read(buf, n): proxy_header_read of n bytes of buf, why kept */
static char why[96];

static int
rd(const void *buf, size_t n, struct proxy_header *h)
{
	why[0] = '\0';
	return proxy_header_read(buf, n, h, why, sizeof(why));
}

static void
assert_addr(const struct addr *a, const char *want)
{
	char buf[ADDR_STRLEN];

	ck_assert_str_eq(addr_str(a, buf, sizeof(buf)), want);
}

/* What we write, we read back, and a byte less is "not yet". */
START_TEST(read_v2_round_trip)
{
	static const char *const ends[][2] = {
		{"127.0.0.5:40112", "127.0.0.1:6380"},
		{"[2001:db8::7]:443", "[2001:db8::1]:8443"},
	};
	uint8_t buf[PROXY_V2_MAX + 4];
	struct proxy_header h;
	struct addr src, dst;
	size_t len, i, n;

	for (i = 0; i < 2; i++) {
		ck_assert_int_eq(addr_parse(ends[i][0], &src), 0);
		ck_assert_int_eq(addr_parse(ends[i][1], &dst), 0);
		len = proxy_header_write(buf, &src, &dst);
		memcpy(buf + len, "GET ", 4); /* the client's own bytes */
		for (n = 0; n < len; n++)
			ck_assert_msg(rd(buf, n, &h) == 0,
				      "%zu bytes of %zu: %s", n, len, why);
		ck_assert_int_eq(rd(buf, len + 4, &h), 1);
		ck_assert_uint_eq(h.len, len);
		ck_assert(!h.local);
		assert_addr(&h.src, ends[i][0]);
		assert_addr(&h.dst, ends[i][1]);
	}
	len = proxy_header_write(buf, NULL, &dst);
	ck_assert_int_eq(rd(buf, len, &h), 1);
	ck_assert(h.local);
	ck_assert_uint_eq(h.len, 16);
}
END_TEST

/* TLVs after the addresses (a balancer's unique id, say) are skipped. */
START_TEST(read_v2_tlvs)
{
	uint8_t buf[PROXY_HEADER_MAX + 1];
	struct proxy_header h;
	struct addr src, dst;
	size_t len;

	ck_assert_int_eq(addr_parse("192.0.2.7:1234", &src), 0);
	ck_assert_int_eq(addr_parse("192.0.2.1:80", &dst), 0);
	len = proxy_header_write(buf, &src, &dst);
	memset(buf + len, 0x05, 20); /* PP2_TYPE_UNIQUE_ID, 17 bytes */
	buf[len + 1] = 0;
	buf[len + 2] = 17;
	buf[15] = 12 + 20;
	ck_assert_int_eq(rd(buf, len + 20, &h), 1);
	ck_assert_uint_eq(h.len, len + 20);
	assert_addr(&h.src, "192.0.2.7:1234");
	/* longer than we take: refused, not waited for */
	buf[14] = (uint8_t)((PROXY_HEADER_MAX - 15) >> 8);
	buf[15] = (uint8_t)(PROXY_HEADER_MAX - 15);
	ck_assert_int_eq(rd(buf, 16, &h), -EPROTO);
	ck_assert_str_eq(why, "PROXY v2: header longer than we take");
}
END_TEST

START_TEST(read_v2_bad)
{
	uint8_t buf[PROXY_V2_MAX];
	struct proxy_header h;
	struct addr src, dst;
	size_t len;

	ck_assert_int_eq(addr_parse("192.0.2.7:1234", &src), 0);
	ck_assert_int_eq(addr_parse("192.0.2.1:80", &dst), 0);
	len = proxy_header_write(buf, &src, &dst);
	buf[12] = 0x11; /* version 1 in a v2 header */
	ck_assert_int_eq(rd(buf, len, &h), -EPROTO);
	ck_assert_str_eq(why, "PROXY v2: not version 2");
	buf[12] = 0x22; /* command 2 */
	ck_assert_int_eq(rd(buf, len, &h), -EPROTO);
	ck_assert_str_eq(why, "PROXY v2: unknown command");
	buf[12] = 0x21;
	buf[13] = 0x12; /* UDP over IPv4 */
	ck_assert_int_eq(rd(buf, len, &h), -EPROTO);
	ck_assert_str_eq(why, "PROXY v2: not TCP over IPv4 or IPv6");
	buf[13] = 0x21; /* IPv6 in 12 bytes */
	ck_assert_int_eq(rd(buf, len, &h), -EPROTO);
	ck_assert_str_eq(why, "PROXY v2: IPv6 addresses cut short");
	buf[13] = 0x11;
	buf[0] = 0x0c; /* not the signature */
	ck_assert_int_eq(rd(buf, len, &h), -EPROTO);
	ck_assert_str_eq(why, "no PROXY header");
}
END_TEST

START_TEST(read_v1)
{
	static const char tcp4[] =
		"PROXY TCP4 192.0.2.7 192.0.2.1 56324 443\r\n"
		"GET /";
	static const char tcp6[] =
		"PROXY TCP6 2001:db8::7 2001:db8::1 65535 1\r\n";
	static const char unknown[] = "PROXY UNKNOWN ffff:f::1 ::1 1 2\r\n";
	struct proxy_header h;
	size_t n, len = strlen(tcp4) - strlen("GET /");

	for (n = 0; n < len; n++)
		ck_assert_msg(rd(tcp4, n, &h) == 0, "%zu bytes: %s", n, why);
	ck_assert_int_eq(rd(tcp4, strlen(tcp4), &h), 1);
	ck_assert_uint_eq(h.len, len);
	assert_addr(&h.src, "192.0.2.7:56324");
	assert_addr(&h.dst, "192.0.2.1:443");
	ck_assert_int_eq(rd(tcp6, strlen(tcp6), &h), 1);
	assert_addr(&h.src, "[2001:db8::7]:65535");
	assert_addr(&h.dst, "[2001:db8::1]:1");
	ck_assert_int_eq(rd(unknown, strlen(unknown), &h), 1);
	ck_assert(h.local);
	ck_assert_uint_eq(h.len, strlen(unknown));
}
END_TEST

START_TEST(read_v1_bad)
{
	static const char *const bad[][2] = {
		{"PROXY TCP4 192.0.2.7 192.0.2.1 56324\r\n",
		 "PROXY v1: not PROXY TCP4|TCP6 SRC DST SPORT DPORT"},
		{"PROXY TCP4 192.0.2.7 192.0.2.1 1 2 3\r\n",
		 "PROXY v1: not PROXY TCP4|TCP6 SRC DST SPORT DPORT"},
		{"PROXY UDP4 192.0.2.7 192.0.2.1 1 2\r\n",
		 "PROXY v1: protocol not TCP4, TCP6 or UNKNOWN"},
		{"PROXY TCP4 2001:db8::7 192.0.2.1 1 2\r\n",
		 "PROXY v1: an address or port is not one"},
		{"PROXY TCP4 192.0.2.7 192.0.2.1 65536 2\r\n",
		 "PROXY v1: an address or port is not one"},
		{"PROXY TCP4 192.0.2.7 192.0.2.1 01 2\r\n",
		 "PROXY v1: an address or port is not one"},
		{"PROXY TCP4 192.0.2.7 192.0.2.1 -1 2\r\n",
		 "PROXY v1: an address or port is not one"},
		{"PROXY TCP4 192.0.2.7 192.0.2.1 1 2\rX",
		 "PROXY v1: CR without LF"},
		{"GET / HTTP/1.1\r\n", "no PROXY header"},
		{"PROXYTCP4\r\n", "no PROXY header"},
	};
	char line[PROXY_HEADER_MAX];
	struct proxy_header h;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(rd(bad[i][0], strlen(bad[i][0]), &h) == -EPROTO,
			      "taken: %s", bad[i][0]);
		ck_assert_str_eq(why, bad[i][1]);
	}
	/* no CRLF within the longest line there can be */
	memset(line, 'x', sizeof(line));
	memcpy(line, "PROXY ", 6);
	ck_assert_int_eq(rd(line, 106, &h), 0);
	ck_assert_int_eq(rd(line, 107, &h), -EPROTO);
	ck_assert_str_eq(why, "PROXY v1: no CRLF in 107 bytes");
}
END_TEST

static Suite *
proxy_suite(void)
{
	Suite *s = suite_create("proxy");
	TCase *tc = tcase_create("write");
	TCase *tr = tcase_create("read");

	tcase_add_test(tc, proxy_v2_inet);
	tcase_add_test(tc, proxy_v2_inet6);
	tcase_add_test(tc, proxy_v2_local);
	suite_add_tcase(s, tc);
	tcase_add_test(tr, read_v2_round_trip);
	tcase_add_test(tr, read_v2_tlvs);
	tcase_add_test(tr, read_v2_bad);
	tcase_add_test(tr, read_v1);
	tcase_add_test(tr, read_v1_bad);
	suite_add_tcase(s, tr);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(proxy_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
