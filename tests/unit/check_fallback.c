// SPDX-License-Identifier: BSD-2-Clause
/* Fallback hello codec and the authentication primitives it uses. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "smcproxyd.h"
#include "fallback_wire.h"

static const uint8_t nonce[32] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};

START_TEST(hello_round_trip)
{
	uint8_t buf[FB_MSG_MAX];
	struct fb_hello_info hi;
	size_t len;

	len = fb_hello_encode(buf, nonce, FB_FLAG_AUTH, "a", "redis");
	ck_assert_uint_eq(len, sizeof(struct fb_hello) + 1 + 5);
	ck_assert_int_eq(fb_hello_decode(buf, len, &hi), 0);
	ck_assert_str_eq(hi.name, "a");
	ck_assert_str_eq(hi.export, "redis");
	ck_assert_int_eq(hi.flags, FB_FLAG_AUTH);
	ck_assert_mem_eq(hi.nonce, nonce, 32);
}
END_TEST

START_TEST(hello_longest_names)
{
	char name[64], export[64];
	uint8_t buf[FB_MSG_MAX];
	struct fb_hello_info hi;
	size_t len;

	memset(name, 'n', 63);
	name[63] = '\0';
	memset(export, 'e', 63);
	export[63] = '\0';
	len = fb_hello_encode(buf, nonce, 0, name, export);
	ck_assert_uint_eq(len, FB_HELLO_MAX - sizeof(struct fb_resume) -
				       sizeof(struct fb_origin));
	ck_assert_int_eq(fb_hello_decode(buf, len, &hi), 0);
	ck_assert_str_eq(hi.name, name);
	ck_assert_str_eq(hi.export, export);
}
END_TEST

/*
 * A HELLO that resumes a connection carries its resume id and counts
 * after the names (inside what the MACs cover); a reserved byte set, no
 * id, or a resume part that is missing or cut short are refused.  The
 * RESUMED answer round-trips.
 */
START_TEST(hello_resume_round_trip)
{
	uint8_t buf[FB_MSG_MAX], msg[sizeof(struct fb_resumed)];
	struct fb_hello_info in, hi;
	uint64_t rx, fin;
	size_t len;

	memset(&in, 0, sizeof(in));
	memset(in.resume_id, 0xab, sizeof(in.resume_id));
	in.rx_off = 0x0102030405060708ULL;
	in.tx_fin = 0x1112131415161718ULL;
	in.worker = 3;
	len = fb_hello_resume_encode(buf, nonce, FB_FLAG_AUTH, "a", "redis",
				     &in);
	ck_assert_uint_eq(len, sizeof(struct fb_hello) + 1 + 5 +
				       sizeof(struct fb_resume));
	ck_assert_int_eq(fb_hello_decode(buf, len, &hi), 0);
	ck_assert_int_eq(hi.flags, FB_FLAG_AUTH | FB_FLAG_RESUME);
	ck_assert_str_eq(hi.export, "redis");
	ck_assert_mem_eq(hi.resume_id, in.resume_id, sizeof(in.resume_id));
	ck_assert_uint_eq(hi.rx_off, in.rx_off);
	ck_assert_uint_eq(hi.tx_fin, in.tx_fin);
	ck_assert_uint_eq(hi.worker, 3);
	buf[len - 1] = 1; /* a reserved byte */
	ck_assert_int_eq(fb_hello_decode(buf, len, &hi), -EPROTO);
	memset(in.resume_id, 0, sizeof(in.resume_id));
	len = fb_hello_resume_encode(buf, nonce, 0, "a", "redis", &in);
	ck_assert_int_eq(fb_hello_decode(buf, len, &hi), -EPROTO);
	/* the flag without the part: the length does not add up */
	len = fb_hello_encode(buf, nonce, FB_FLAG_RESUME, "a", "redis");
	ck_assert_int_eq(fb_hello_decode(buf, len, &hi), -EPROTO);
	len = fb_resumed_encode(msg, 7, 9);
	ck_assert_uint_eq(len, sizeof(msg));
	ck_assert_int_eq(fb_resumed_decode(msg, len, &rx, &fin), 0);
	ck_assert_uint_eq(rx, 7);
	ck_assert_uint_eq(fin, 9);
	ck_assert_int_eq(fb_resumed_decode(msg, len - 1, &rx, &fin), -EPROTO);
}
END_TEST

/*
 * An open's HELLO names the client connection (FB_FLAG_ORIGIN, after the
 * names and any resume part): IPv4 and IPv6 ends come back as they went,
 * ends of two families are not put in one.
 */
START_TEST(hello_origin_round_trip)
{
	static const char *ends[][2] = {
		{"127.0.0.5:40112", "127.0.0.1:6380"},
		{"[2001:db8::7]:65535", "[::1]:1"},
	};
	uint8_t buf[FB_MSG_MAX];
	struct fb_hello_info hi, in;
	struct fb_origin o;
	struct addr src, dst, got_src, got_dst;
	size_t len;

	for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++) {
		ck_assert_int_eq(addr_parse(ends[i][0], &src), 0);
		ck_assert_int_eq(addr_parse(ends[i][1], &dst), 0);
		ck_assert_int_eq(fb_origin_set(&o, &src, &dst), 0);
		len = fb_hello_encode(buf, nonce, FB_FLAG_AUTH, "a", "redis");
		len = fb_hello_origin_add(buf, len, &o);
		ck_assert_uint_eq(len, sizeof(struct fb_hello) + 1 + 5 +
					       sizeof(struct fb_origin));
		ck_assert_int_eq(fb_hello_decode(buf, len, &hi), 0);
		ck_assert_int_eq(hi.flags, FB_FLAG_AUTH | FB_FLAG_ORIGIN);
		ck_assert_str_eq(hi.export, "redis");
		fb_origin_get(&hi.origin, &got_src, &got_dst);
		ck_assert(addr_equal(&got_src, &src));
		ck_assert(addr_equal(&got_dst, &dst));
	}
	/* after a resume part */
	memset(&in, 0, sizeof(in));
	memset(in.resume_id, 0xab, sizeof(in.resume_id));
	in.rx_off = 5;
	len = fb_hello_resume_encode(buf, nonce, 0, "a", "redis", &in);
	len = fb_hello_origin_add(buf, len, &o);
	ck_assert_int_eq(fb_hello_decode(buf, len, &hi), 0);
	ck_assert_int_eq(hi.flags, FB_FLAG_RESUME | FB_FLAG_ORIGIN);
	ck_assert_uint_eq(hi.rx_off, 5);
	fb_origin_get(&hi.origin, &got_src, &got_dst);
	ck_assert(addr_equal(&got_src, &src));
	/* an IPv4 client of an IPv6 address: no origin */
	ck_assert_int_eq(addr_parse("127.0.0.5:1", &src), 0);
	ck_assert_int_eq(fb_origin_set(&o, &src, &dst), -EAFNOSUPPORT);
}
END_TEST

/* An origin part that fb_origin_set could not have made is refused. */
START_TEST(hello_origin_malformed)
{
	uint8_t good[FB_MSG_MAX], buf[FB_MSG_MAX];
	struct fb_hello_info hi;
	struct fb_origin o, *p;
	struct addr src, dst;
	size_t len, at;

	ck_assert_int_eq(addr_parse("10.1.2.3:4000", &src), 0);
	ck_assert_int_eq(addr_parse("10.1.2.4:80", &dst), 0);
	ck_assert_int_eq(fb_origin_set(&o, &src, &dst), 0);
	at = fb_hello_encode(good, nonce, 0, "a", "web");
	len = fb_hello_origin_add(good, at, &o);
	ck_assert_int_eq(fb_hello_decode(good, len, &hi), 0);
	p = (struct fb_origin *)(buf + at);

	memcpy(buf, good, len);
	p->family = 5;
	ck_assert_int_eq(fb_hello_decode(buf, len, &hi), -EPROTO);
	memcpy(buf, good, len);
	p->reserved[2] = 1;
	ck_assert_int_eq(fb_hello_decode(buf, len, &hi), -EPROTO);
	memcpy(buf, good, len);
	p->src_port = 0;
	ck_assert_int_eq(fb_hello_decode(buf, len, &hi), -EPROTO);
	memcpy(buf, good, len);
	p->dst_port = 0;
	ck_assert_int_eq(fb_hello_decode(buf, len, &hi), -EPROTO);
	memcpy(buf, good, len);
	p->dst[15] = 1; /* beyond an IPv4 address */
	ck_assert_int_eq(fb_hello_decode(buf, len, &hi), -EPROTO);
	/* the flag without the part, the part without the flag */
	memcpy(buf, good, len);
	((struct fb_hello *)buf)->hdr.length = htons((uint16_t)at);
	ck_assert_int_eq(fb_hello_decode(buf, at, &hi), -EPROTO);
	memcpy(buf, good, len);
	((struct fb_hello *)buf)->flags = 0;
	ck_assert_int_eq(fb_hello_decode(buf, len, &hi), -EPROTO);
	for (size_t cut = 0; cut < len; cut++)
		ck_assert_int_eq(fb_hello_decode(good, cut, &hi), -EPROTO);
}
END_TEST

/* Every single-field corruption of a valid HELLO is refused. */
START_TEST(hello_malformed)
{
	uint8_t good[FB_MSG_MAX], buf[FB_MSG_MAX];
	struct fb_hello_info hi;
	struct fb_hello *h = (struct fb_hello *)buf;
	size_t len;

	len = fb_hello_encode(good, nonce, 0, "peer-a", "web");

	memcpy(buf, good, len);
	buf[0] ^= 0xff; /* eyecatcher */
	ck_assert_int_eq(fb_hello_decode(buf, len, &hi), -EPROTO);

	memcpy(buf, good, len);
	h->hdr.version = 2;
	ck_assert_int_eq(fb_hello_decode(buf, len, &hi), -EPROTO);

	memcpy(buf, good, len);
	h->hdr.type = 9;
	ck_assert_int_eq(fb_hello_decode(buf, len, &hi), -EPROTO);

	memcpy(buf, good, len);
	h->hdr.length = htons((uint16_t)(len + 1));
	ck_assert_int_eq(fb_hello_decode(buf, len, &hi), -EPROTO);

	memcpy(buf, good, len);
	h->name_len++; /* names no longer add up to the length */
	ck_assert_int_eq(fb_hello_decode(buf, len, &hi), -EPROTO);

	memcpy(buf, good, len);
	h->flags = 0x80;
	ck_assert_int_eq(fb_hello_decode(buf, len, &hi), -EPROTO);

	memcpy(buf, good, len);
	h->reserved = 1;
	ck_assert_int_eq(fb_hello_decode(buf, len, &hi), -EPROTO);

	memcpy(buf, good, len);
	buf[sizeof(*h)] = '/'; /* not a name character */
	ck_assert_int_eq(fb_hello_decode(buf, len, &hi), -EPROTO);

	memcpy(buf, good, len);
	h->name_len = 0;
	h->export_len = (uint8_t)(len - sizeof(*h));
	ck_assert_int_eq(fb_hello_decode(buf, len, &hi), -EPROTO);

	/* truncated anywhere */
	for (size_t cut = 0; cut < len; cut++)
		ck_assert_int_eq(fb_hello_decode(good, cut, &hi), -EPROTO);
	ck_assert_int_eq(fb_hello_decode(good, len, &hi), 0);
}
END_TEST

START_TEST(result_round_trip)
{
	uint8_t buf[sizeof(struct fb_result)];
	uint32_t code = 99;

	ck_assert_uint_eq(fb_result_encode(buf, 4), sizeof(buf));
	ck_assert_int_eq(fb_result_decode(buf, sizeof(buf), &code), 0);
	ck_assert_uint_eq(code, 4);
	buf[12] = 1; /* reserved */
	ck_assert_int_eq(fb_result_decode(buf, sizeof(buf), &code), -EPROTO);
	ck_assert_int_eq(fb_result_decode(buf, sizeof(buf) - 1, &code),
			 -EPROTO);
}
END_TEST

START_TEST(header_lengths_per_type)
{
	uint8_t buf[8] = {0xe2, 0xd4, 0xc3, 0xc6, 1, FB_PROOF, 0, 40};
	uint16_t length;
	uint8_t type;

	ck_assert_int_eq(fb_hdr_check(buf, 8, &type, &length), 0);
	ck_assert_uint_eq(length, 40);
	buf[7] = 41;
	ck_assert_int_eq(fb_hdr_check(buf, 8, &type, &length), -EPROTO);
	buf[5] = FB_CHALLENGE;
	buf[7] = 72;
	ck_assert_int_eq(fb_hdr_check(buf, 8, &type, &length), 0);
	buf[5] = FB_HELLO;
	buf[7] = 45; /* shorter than a HELLO with two 1-byte names */
	ck_assert_int_eq(fb_hdr_check(buf, 8, &type, &length), -EPROTO);
	buf[6] = 0xff; /* oversized */
	ck_assert_int_eq(fb_hdr_check(buf, 8, &type, &length), -EPROTO);
	ck_assert_int_eq(fb_hdr_check(buf, 7, &type, &length), -EPROTO);
}
END_TEST

START_TEST(mac_depends_on_everything)
{
	unsigned char key[32], k2[32], m1[32], m2[32];

	memset(key, 7, sizeof(key));
	memset(k2, 7, sizeof(k2));
	k2[31] = 8;
	auth_mac(key, 32, "s", "hello", 5, "nonce", 5, m1);
	auth_mac(key, 32, "s", "hello", 5, "nonce", 5, m2);
	ck_assert(auth_mac_equal(m1, m2));
	auth_mac(k2, 32, "s", "hello", 5, "nonce", 5, m2);
	ck_assert(!auth_mac_equal(m1, m2));
	auth_mac(key, 32, "c", "hello", 5, "nonce", 5, m2);
	ck_assert(!auth_mac_equal(m1, m2));
	auth_mac(key, 32, "s", "hellp", 5, "nonce", 5, m2);
	ck_assert(!auth_mac_equal(m1, m2));
	auth_mac(key, 32, "s", "hello", 5, "nonc", 4, m2);
	ck_assert(!auth_mac_equal(m1, m2));
}
END_TEST

START_TEST(nonces_differ)
{
	unsigned char a[AUTH_NONCE_LEN], b[AUTH_NONCE_LEN];

	auth_nonce(a);
	auth_nonce(b);
	ck_assert(memcmp(a, b, sizeof(a)) != 0);
}
END_TEST

START_TEST(rate_limit_per_source)
{
	struct auth_limit al;
	struct addr bad, good;
	uint64_t t = 1000000;
	int i;

	auth_limit_init(&al);
	ck_assert_int_eq(addr_parse("192.0.2.9:1", &bad), 0);
	ck_assert_int_eq(addr_parse("192.0.2.10:1", &good), 0);
	for (i = 0; i < 10; i++) {
		ck_assert(!auth_rate_limited(&al, &bad, t));
		auth_failed(&al, &bad, t);
	}
	ck_assert(auth_rate_limited(&al, &bad, t));
	ck_assert(!auth_rate_limited(&al, &good, t));
	/* one token back after a second */
	ck_assert(!auth_rate_limited(&al, &bad, t + 1000));
	auth_failed(&al, &bad, t + 1000);
	ck_assert(auth_rate_limited(&al, &bad, t + 1000));
}
END_TEST

/*
 * A flood of new addresses, each failing once, does not make the table
 * forget a host that is limited now (before, 64 of them did: the table
 * evicted in turn): they evict only each other.  A full table of limited
 * hosts keeps them all.
 */
START_TEST(rate_limit_survives_address_flood)
{
	struct auth_limit al;
	struct addr bad, other;
	uint64_t t = 1000000;
	char buf[32];
	int i;

	auth_limit_init(&al);
	ck_assert_int_eq(addr_parse("192.0.2.9:1", &bad), 0);
	for (i = 0; i < 10; i++)
		auth_failed(&al, &bad, t);
	ck_assert(auth_rate_limited(&al, &bad, t));
	for (i = 0; i < 20 * AUTH_LIMIT_SLOTS; i++) {
		snprintf(buf, sizeof(buf), "10.%d.%d.%d:1", i >> 16 & 255,
			 i >> 8 & 255, i & 255);
		ck_assert_int_eq(addr_parse(buf, &other), 0);
		auth_failed(&al, &other, t);
	}
	ck_assert(auth_rate_limited(&al, &bad, t));
	/* the last of the flood is remembered, not yet limited */
	ck_assert(!auth_rate_limited(&al, &other, t));

	/* every slot limited: a newcomer's failure is not recorded */
	for (i = 0; i < AUTH_LIMIT_SLOTS - 1; i++) {
		snprintf(buf, sizeof(buf), "10.200.%d.%d:1", i >> 8 & 255,
			 i & 255);
		ck_assert_int_eq(addr_parse(buf, &other), 0);
		while (!auth_rate_limited(&al, &other, t))
			auth_failed(&al, &other, t);
	}
	ck_assert_int_eq(addr_parse("198.51.100.1:1", &other), 0);
	for (i = 0; i < 20; i++)
		auth_failed(&al, &other, t);
	ck_assert(!auth_rate_limited(&al, &other, t));
	ck_assert(auth_rate_limited(&al, &bad, t));
	/* once tokens come back (10 s), the slots are anyone's again */
	for (i = 0; i < 10; i++)
		auth_failed(&al, &other, t + 10000);
	ck_assert(auth_rate_limited(&al, &other, t + 10000));
	auth_limit_destroy(&al);
}
END_TEST

static Suite *
fallback_suite(void)
{
	Suite *s = suite_create("fallback");
	TCase *tc = tcase_create("codec");

	tcase_add_test(tc, hello_round_trip);
	tcase_add_test(tc, hello_longest_names);
	tcase_add_test(tc, hello_malformed);
	tcase_add_test(tc, hello_resume_round_trip);
	tcase_add_test(tc, hello_origin_round_trip);
	tcase_add_test(tc, hello_origin_malformed);
	tcase_add_test(tc, result_round_trip);
	tcase_add_test(tc, header_lengths_per_type);
	suite_add_tcase(s, tc);
	tc = tcase_create("auth");
	tcase_add_test(tc, mac_depends_on_everything);
	tcase_add_test(tc, nonces_differ);
	tcase_add_test(tc, rate_limit_per_source);
	tcase_add_test(tc, rate_limit_survives_address_flood);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(fallback_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
